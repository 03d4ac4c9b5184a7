/* tformer serve over loopback: the server started as a child process on a free port of
 * 127.0.0.1, talked to with libcurl. Embeddings equal `tformer embed`'s, greedy completions
 * `tformer generate`'s (streamed pieces add up to the same text), every error status, and the
 * server still answers after bad requests; SIGTERM finishes in-flight requests and exits 0. */
#include <arpa/inet.h>
#include <curl/curl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <fcntl.h>
#include <sys/prctl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "serve_case.h"
#include "test.h"

/* ---------------------------------------------------------------- embeddings */

static int b64_value(char c) {
    const char *A = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    const char *p = c ? strchr(A, c) : NULL;
    return p ? (int)(p - A) : -1;
}

/* base64 -> floats (little-endian); how many. */
static int b64_floats(const char *s, float *out, int max) {
    unsigned char bytes[4096];
    size_t n = 0;
    for (; s[0] && s[1] && s[2] && s[3] && n + 3 <= sizeof bytes; s += 4) {
        int a = b64_value(s[0]), b = b64_value(s[1]), c = b64_value(s[2]), d = b64_value(s[3]);
        unsigned v = (unsigned)a << 18 | (unsigned)b << 12 | (unsigned)(c < 0 ? 0 : c) << 6 | (unsigned)(d < 0 ? 0 : d);
        bytes[n++] = (unsigned char)(v >> 16);
        if (c >= 0) bytes[n++] = (unsigned char)(v >> 8);
        if (d >= 0) bytes[n++] = (unsigned char)v;
    }
    int k = (int)(n / 4) < max ? (int)(n / 4) : max;
    memcpy(out, bytes, (size_t)k * 4);
    return k;
}

TEST(serve_embeddings_equal_the_cli) {
    server sv;
    CHECK(!server_start(&sv, "--model st=" ST_DIR));
    char *r, out[1 << 16];
    CHECK(http(&sv, "/v1/models", NULL, 0, NULL, &r) == 200 && strstr(r, "\"id\":\"st\"") && strstr(r, "\"embed\""));
    free(r);
    long st = post(&sv, "/v1/embeddings", "{\"model\":\"st\",\"input\":[\"The cat sat on the mat.\",\"A dog ran.\"]}", NULL, &r);
    CHECKF(st == 200, "%ld %s", st, r);
    CHECK(test_run_cli("", "embed --model " ST_DIR " < tests/data/serve_sentences.txt", out, sizeof out) == 0);
    cJSON *o = cJSON_Parse(r), *data = cJSON_GetObjectItem(o, "data");
    free(r);
    CHECK(cJSON_GetArraySize(data) == 2 && cJSON_GetObjectItem(cJSON_GetObjectItem(o, "usage"), "prompt_tokens")->valueint > 0);
    char *p = out;
    float vals[2][256];
    int d = 0;
    for (int i = 0; i < 2; i++) {
        const cJSON *v, *e = cJSON_GetObjectItem(cJSON_GetArrayItem(data, i), "embedding");
        d = 0;
        cJSON_ArrayForEach(v, e) {
            double cli = strtod(p, &p);
            CHECKF(fabs(v->valuedouble - cli) <= 1e-6 * fmax(1, fabs(cli)), "row %d col %d: %g vs the CLI's %g", i, d,
                   v->valuedouble, cli);
            vals[i][d++] = (float)v->valuedouble;
        }
        CHECK(d > 0 && d <= 256);
    }
    cJSON_Delete(o);
    /* base64: the same floats, bit for bit */
    CHECK(post(&sv, "/v1/embeddings", "{\"model\":\"st\",\"input\":\"A dog ran.\",\"encoding_format\":\"base64\"}", NULL,
               &r) == 200);
    o = cJSON_Parse(r);
    free(r);
    float b[256];
    const cJSON *e = cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(o, "data"), 0), "embedding");
    CHECK(cJSON_IsString(e) && b64_floats(e->valuestring, b, 256) == d && !memcmp(b, vals[1], (size_t)d * sizeof *b));
    cJSON_Delete(o);
    CHECK(server_stop(&sv) == 0);
}

/* Every bad request gets its status in OpenAI's shape; the server answers /health after each. */
TEST(serve_refuses_bad_requests_and_stays_up) {
    server sv;
    CHECK(!server_start(&sv, "--model st=" ST_DIR " --max-body 4096 --max-inputs 4"));
    static const struct {
        const char *path, *body;
        long status;
        const char *says;
    } bad[] = {
        {"/v1/embeddings", "{\"model\":\"st\",\"input\":", 400, "not valid JSON"},
        {"/v1/embeddings", "[1,2]", 400, "JSON object"},
        {"/v1/embeddings", "{\"model\":\"st\",\"input\":12}", 400, "must be a string or a list"},
        {"/v1/embeddings", "{\"model\":\"st\",\"input\":[\"a\",\"b\",\"c\",\"d\",\"e\"]}", 400, "1 to 4"},
        {"/v1/embeddings", "{\"model\":\"st\",\"input\":\"a\",\"encoding_format\":\"hex\"}", 400, "float or base64"},
        {"/v1/embeddings", "{\"model\":\"st\",\"input\":\"\xff\xfe\"}", 400, "UTF-8"},
        {"/v1/embeddings", "{\"model\":\"nope\",\"input\":\"a\"}", 404, "no model named 'nope'"},
        {"/v1/embeddings", "{\"input\":\"a\"}", 400, "must be a string: one of"},
        {"/v1/completions", "{\"model\":\"st\",\"prompt\":\"a\"}", 422, "cannot generate"},
        {"/v1/fill-mask", "{\"model\":\"st\",\"input\":\"a <mask>\"}", 422, "cannot fill-mask"},
        {"/v1/nothing", "{}", 404, "no endpoint"},
        {"/health", "{}", 405, "expects GET"},
    };
    char *r;
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        long st = post(&sv, bad[i].path, bad[i].body, NULL, &r);
        CHECKF(st == bad[i].status && is_error(r) && strstr(r, bad[i].says), "%s %s: %ld %s", bad[i].path, bad[i].body,
               st, r);
        free(r);
        CHECK(http(&sv, "/health", NULL, 0, NULL, &r) == 200);
        free(r);
    }
    size_t big = 1 << 20;
    char *huge = malloc(big + 1);
    CHECK(huge);
    memset(huge, 'a', big), huge[big] = 0;
    long st = post(&sv, "/v1/embeddings", huge, NULL, &r);
    free(huge);
    CHECKF(st == 413 && is_error(r), "%ld %s", st, r);
    free(r);
    CHECK(http(&sv, "/health", NULL, 0, NULL, &r) == 200);
    free(r);
    CHECK(http(&sv, "/metrics", NULL, 0, NULL, &r) == 200 && strstr(r, "tformer_errors_total{endpoint=\"embeddings\"} 9") &&
          strstr(r, "tformer_request_duration_seconds_bucket{endpoint=\"health\",le=\"+Inf\"}"));
    free(r);
    CHECK(server_stop(&sv) == 0);
}

/* A connection to the server (-1 on failure). */
static int connect_to(const server *sv) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {0};
    a.sin_family = AF_INET, a.sin_port = htons((uint16_t)sv->port), a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof a)) close(fd), fd = -1;
    return fd;
}

/* 64 idle connections and one that sends half a request: the server answers others meanwhile,
 * and closes the slow one after --timeout. */
TEST(serve_survives_idle_and_slow_clients) {
    server sv;
    CHECK(!server_start(&sv, "--model st=" ST_DIR " --timeout 1 --max-connections 128"));
    enum { IDLE = 64 };
    int fds[IDLE], slow = connect_to(&sv);
    for (int i = 0; i < IDLE; i++) fds[i] = connect_to(&sv);
    const char *half = "POST /v1/embeddings HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{\"model\":";
    CHECK(slow >= 0 && write(slow, half, strlen(half)) == (ssize_t)strlen(half));
    char *r;
    CHECK(http(&sv, "/health", NULL, 0, NULL, &r) == 200);
    free(r);
    struct pollfd p = {slow, POLLIN, 0};
    char got[512];
    CHECKF(poll(&p, 1, 5000) == 1 && read(slow, got, sizeof got) >= 0, "the slow client was not let go");
    int opened = 0;
    for (int i = 0; i < IDLE; i++) opened += fds[i] >= 0, close(fds[i]);
    CHECK(opened == IDLE);
    close(slow);
    CHECK(http(&sv, "/health", NULL, 0, NULL, &r) == 200);
    free(r);
    CHECK(server_stop(&sv) == 0);
}

/* ---------------------------------------------------------------- completions */

static size_t hang_up(char *d, size_t size, size_t k, void *user) {
    (void)d, (void)size, (void)k, (void)user;
    return 0; /* libcurl aborts the transfer */
}

/* A 512-token stream dropped at its first bytes: 0 when libcurl saw the abort. */
static int stream_and_hang_up(const server *sv) {
    CURL *c = curl_easy_init();
    char url[256];
    struct curl_slist *h = curl_slist_append(NULL, "Authorization: Bearer k3y");
    snprintf(url, sizeof url, "http://127.0.0.1:%d/v1/completions", sv->port);
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, "{\"model\":\"gpt\",\"prompt\":\"ab\",\"max_tokens\":512,\"stream\":true}");
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, hang_up);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, 20L);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    CURLcode rc = curl_easy_perform(c);
    curl_slist_free_all(h);
    curl_easy_cleanup(c);
    return rc == CURLE_WRITE_ERROR ? 0 : -1;
}


/* POST body to /v1/completions: 0 when choices[0].text is want. */
static int completion_is(const server *sv, const char *body, const char *want) {
    char *r;
    long st = post(sv, "/v1/completions", body, "k3y", &r);
    cJSON *o = cJSON_Parse(r);
    const cJSON *t = cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(o, "choices"), 0), "text");
    int ok = st == 200 && cJSON_IsString(t) && !strcmp(t->valuestring, want);
    if (!ok) fprintf(stderr, "%ld %s vs the CLI's '%s'\n", st, r, want);
    cJSON_Delete(o), free(r);
    return ok ? 0 : -1;
}

static server g_gpt; /* the server of the completion tests */

static int gpt_server(const char *dir) {
    char cmd[512];
    snprintf(cmd, sizeof cmd, "--model gpt=%s --api-key k3y --model st=" ST_DIR, dir);
    return server_start(&g_gpt, cmd);
}

/* Greedy and seeded completions equal the CLI's; a stream's pieces add up to the same text. */
TEST(serve_completions_equal_the_cli) {
    char dir[64] = "", cli[1024], sampled[1024], text[1024], *r;
    CHECK(!gpt_and_cli_text(dir, sizeof dir, "--max-tokens 10 --temperature 0", cli, sizeof cli));
    CHECK(!gpt_and_cli_text(dir, sizeof dir, "--max-tokens 12 --temperature 0.9 --seed 7", sampled, sizeof sampled));
    CHECK(!gpt_server(dir));
    const char *greedy = "{\"model\":\"gpt\",\"prompt\":\"ab\",\"max_tokens\":10,\"temperature\":0}";
    CHECK(post(&g_gpt, "/v1/completions", greedy, NULL, &r) == 401 && is_error(r));
    free(r);
    CHECK(post(&g_gpt, "/v1/completions", greedy, "wrong", &r) == 401);
    free(r);
    CHECK(http(&g_gpt, "/health", NULL, 0, NULL, &r) == 200);
    free(r);
    CHECK(!completion_is(&g_gpt, greedy, cli));
    CHECK(!completion_is(&g_gpt, "{\"model\":\"gpt\",\"prompt\":\"ab\",\"max_tokens\":12,\"temperature\":0.9,\"seed\":7}",
                         sampled));
    long st = post(&g_gpt, "/v1/completions",
                   "{\"model\":\"gpt\",\"prompt\":\"ab\",\"max_tokens\":10,\"temperature\":0,\"stream\":true}", "k3y", &r);
    int events;
    CHECKF(st == 200 && stream_text(r, text, sizeof text, &events) && !strcmp(text, cli) && events >= 2, "%ld %s", st, r);
    free(r);
    /* a client that goes away after the first event: the server carries on */
    CHECK(stream_and_hang_up(&g_gpt) == 0);
    CHECK(http(&g_gpt, "/health", NULL, 0, NULL, &r) == 200);
    free(r);
    CHECK(server_stop(&g_gpt) == 0);
    test_rm_rf(dir);
}

/* Bad completions get their 400 or 422; 8 clients at once each get the greedy text; SIGTERM with
 * requests in flight lets them finish and exits 0. */
TEST(serve_completions_refuse_share_and_shut_down) {
    char dir[64] = "", cli[1024], *r;
    CHECK(!gpt_and_cli_text(dir, sizeof dir, "--max-tokens 10 --temperature 0", cli, sizeof cli));
    CHECK(!gpt_server(dir));
    static const struct {
        const char *body;
        long status;
        const char *says;
    } bad[] = {
        {"{\"model\":\"gpt\",\"prompt\":\"ab\",\"max_tokens\":-1}", 400, "max_tokens"},
        {"{\"model\":\"gpt\",\"prompt\":\"ab\",\"max_tokens\":\"5\"}", 400, "max_tokens"},
        {"{\"model\":\"gpt\",\"prompt\":\"ab\",\"max_tokens\":100000000}", 400, "max_tokens"},
        {"{\"model\":\"gpt\",\"prompt\":\"ab\",\"temperature\":NaN}", 400, "JSON"},
        {"{\"model\":\"gpt\",\"prompt\":\"ab\",\"temperature\":3}", 400, "temperature"},
        {"{\"model\":\"gpt\",\"prompt\":7}", 400, "prompt"},
        {"{\"model\":\"st\",\"prompt\":\"ab\"}", 422, "cannot generate; it can:"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        long st = post(&g_gpt, "/v1/completions", bad[i].body, "k3y", &r);
        CHECKF(st == bad[i].status && is_error(r) && strstr(r, bad[i].says), "%s: %ld %s", bad[i].body, st, r);
        free(r);
    }
    CHECK(post(&g_gpt, "/v1/embeddings", "{\"model\":\"gpt\",\"input\":\"ab\"}", "k3y", &r) == 422 &&
          strstr(r, "cannot embed"));
    free(r);
    enum { N = 8 };
    serve_call calls[N];
    pthread_t th[N];
    const char *greedy = "{\"model\":\"gpt\",\"prompt\":\"ab\",\"max_tokens\":10,\"temperature\":0}";
    for (int i = 0; i < N; i++) calls[i] = (serve_call){.sv = &g_gpt, .path = "/v1/completions", .key = "k3y", .body = greedy},
        pthread_create(&th[i], NULL, serve_call_thread, &calls[i]);
    for (int i = 0; i < N; i++) pthread_join(th[i], NULL);
    int same = 0;
    for (int i = 0; i < N; i++) same += calls[i].status == 200 && strstr(calls[i].reply, cli), free(calls[i].reply);
    CHECKF(same == N, "%d of %d clients got the greedy text", same, N);
    const char *slow = "{\"model\":\"gpt\",\"prompt\":\"ab\",\"max_tokens\":512,\"temperature\":0}";
    for (int i = 0; i < N; i++) calls[i] = (serve_call){.sv = &g_gpt, .path = "/v1/completions", .key = "k3y", .body = slow},
        pthread_create(&th[i], NULL, serve_call_thread, &calls[i]);
    nanosleep(&(struct timespec){0, 100000000}, NULL); /* the requests are in flight */
    int rc = server_stop(&g_gpt), done = 0;
    for (int i = 0; i < N; i++) pthread_join(th[i], NULL);
    for (int i = 0; i < N; i++) done += calls[i].status == 200, free(calls[i].reply);
    CHECKF(rc == 0 && done == N, "exit %d; %d of %d in-flight requests finished", rc, done, N);
    test_rm_rf(dir);
}

/* /v1/fill-mask: transformers' pipeline's choices (the fixture's answers.json), as tformer fill-mask. */
TEST(serve_fills_masks_as_the_pipeline) {
    server sv;
    CHECK(!server_start(&sv, "--model mlm=tests/fixtures_distilbert_st/tiny_distilbert_mlm"));
    char *r;
    long st = post(&sv, "/v1/fill-mask", "{\"model\":\"mlm\",\"input\":\"the cat [MASK] on the mat.\",\"top_k\":3}", NULL, &r);
    cJSON *o = cJSON_Parse(r), *ref = test_read_json("tests/fixtures_distilbert_st/tiny_distilbert_mlm/answers.json");
    const cJSON *c = cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(o, "data"), 0), "candidates"), *e;
    CHECKF(st == 200 && cJSON_GetArraySize(c) == 3 && ref, "%ld %s", st, r);
    free(r);
    int i = 0;
    cJSON_ArrayForEach(e, cJSON_GetObjectItem(ref, "top")) {
        const cJSON *got = cJSON_GetArrayItem(c, i++);
        CHECK(cJSON_GetObjectItem(got, "token_id")->valueint == cJSON_GetObjectItem(e, "token")->valueint);
        CHECK(fabs(cJSON_GetObjectItem(got, "score")->valuedouble - cJSON_GetObjectItem(e, "score")->valuedouble) < 1e-5);
    }
    cJSON_Delete(o), cJSON_Delete(ref);
    CHECK(post(&sv, "/v1/fill-mask", "{\"model\":\"mlm\",\"input\":\"no mask here\"}", NULL, &r) == 400 && is_error(r) &&
          strstr(r, "no mask token"));
    free(r);
    CHECK(server_stop(&sv) == 0);
}

int test_marian_spm_folder(char *dir); /* tests/test_marian_spm.c */

/* /v1/translations on a Marian folder (source.spm / target.spm): tformer translate's lines. */
TEST(serve_translates_as_the_cli) {
    char dir[] = "/tmp/tformer_serve_tr_XXXXXX", out[8192], cmd[512];
    static const char *const MODEL_FILE[] = {"model.safetensors"};
    CHECK(!test_marian_spm_folder(dir) && !test_marian_generate_config("tests/fixtures_marian_spm", dir, NULL) &&
          !test_copy_files("tests/fixtures_marian_spm", dir, MODEL_FILE, 1));
    snprintf(cmd, sizeof cmd, "translate --model %s < tests/data/serve_sentences.txt", dir);
    CHECKF(test_run_cli("", cmd, out, sizeof out) == 0, "%s", out);
    server sv;
    snprintf(cmd, sizeof cmd, "--model mt=%s", dir);
    CHECK(!server_start(&sv, cmd));
    char *r;
    long st = post(&sv, "/v1/translations", "{\"model\":\"mt\",\"input\":[\"The cat sat on the mat.\",\"A dog ran.\"]}",
                   NULL, &r);
    cJSON *o = cJSON_Parse(r), *e;
    CHECKF(st == 200 && cJSON_GetArraySize(cJSON_GetObjectItem(o, "data")) == 2, "%ld %s", st, r);
    free(r);
    char *line = out;
    cJSON_ArrayForEach(e, cJSON_GetObjectItem(o, "data")) {
        const char *t = cJSON_GetObjectItem(e, "text")->valuestring;
        char *nl = strchr(line, '\n');
        CHECKF(nl && (size_t)(nl - line) == strlen(t) && !strncmp(line, t, strlen(t)), "'%s' vs the CLI's '%.*s'", t,
               nl ? (int)(nl - line) : 0, line);
        line = nl + 1;
    }
    cJSON_Delete(o);
    CHECK(server_stop(&sv) == 0);
    test_rm_rf(dir);
}


/* The embedding's floats of a reply (base64), how many. */
static int reply_floats(const char *reply, float *out, int max) {
    cJSON *o = cJSON_Parse(reply), *e;
    int n = 0;
    cJSON_ArrayForEach(e, cJSON_GetObjectItem(o, "data")) {
        const cJSON *v = cJSON_GetObjectItem(e, "embedding");
        if (cJSON_IsString(v)) n += b64_floats(v->valuestring, out + n, max - n);
    }
    cJSON_Delete(o);
    return n;
}

/* 16 embedding requests at once, coalesced into batches: each answer equal to the request's answer
 * alone within 1e-6 (the batch pads the texts to its longest), in fewer calls than requests. */
TEST(serve_batches_embeddings) {
    server sv;
    CHECK(!server_start(&sv, "--model st=" ST_DIR " --max-batch 16 --batch-window 20000"));
    enum { N = 16 };
    static const char *const WORDS[] = {"cat", "dog", "a much longer sentence with many words in it", "x"};
    serve_call calls[N];
    pthread_t th[N];
    for (int i = 0; i < N; i++) {
        calls[i] = (serve_call){.sv = &sv, .path = "/v1/embeddings"};
        snprintf(calls[i].text, sizeof calls[i].text, "{\"model\":\"st\",\"input\":[\"%s %d\"%s],\"encoding_format\":\"base64\"}",
                 WORDS[i % 4], i, i % 3 ? "" : ",\"and a second text\"");
        pthread_create(&th[i], NULL, serve_call_thread, &calls[i]);
    }
    for (int i = 0; i < N; i++) pthread_join(th[i], NULL);
    int close_enough = 0;
    for (int i = 0; i < N; i++) {
        char *alone;
        float a[512], b[512];
        long st = post(&sv, "/v1/embeddings", calls[i].text, NULL, &alone);
        int na = reply_floats(alone, a, 512), nb = calls[i].status == 200 ? reply_floats(calls[i].reply, b, 512) : -1;
        double worst = 0;
        for (int k = 0; k < na && na == nb; k++) worst = fmax(worst, fabs(a[k] - b[k]));
        close_enough += st == 200 && na > 0 && na == nb && worst < 1e-6;
        free(alone), free(calls[i].reply);
    }
    CHECKF(close_enough == N, "%d of %d batched answers are the answer alone", close_enough, N);
    char *r;
    CHECK(http(&sv, "/metrics", NULL, 0, NULL, &r) == 200);
    const char *batches = strstr(r, "\ntformer_embedding_batches_total ");
    CHECKF(batches && atoi(batches + 34) < 2 * N, "%s", r); /* the 16 at once took fewer calls than requests */
    free(r);
    CHECK(server_stop(&sv) == 0);
}
