/* tformer serve's continuous batching of completions (serve_sched.c): 64 clients at once, each
 * with its own prompt, settings and seed, get what each gets alone, bit for bit, while the steps
 * carry several completions each; logprobs, several stop strings, a full queue (503) and a
 * client that leaves mid-stream (its completion ends at the next step). */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "serve_case.h"
#include "test.h"

/* A completion request on its own thread, without a key. */
static serve_call completion_call(const server *sv, const char *body) {
    return (serve_call){.sv = sv, .path = "/v1/completions", .body = body};
}

/* Request i of the mix: greedy and sampled, windows slid past the context of 16, stop lists, n = 2,
 * two prompts. */
static void request(int i, char *body, size_t n) {
    static const char *const PROMPTS[] = {"ab", "x", "hello", "the ", "a", "zz"};
    const char *p = PROMPTS[i % 6];
    switch (i % 4) {
    case 0: snprintf(body, n, "{\"model\":\"gpt\",\"prompt\":\"%s\",\"max_tokens\":%d,\"temperature\":0}", p, i ? 5 + i % 30 : 33);
        break;
    case 1:
        snprintf(body, n, "{\"model\":\"gpt\",\"prompt\":\"%s\",\"max_tokens\":%d,\"temperature\":0.9,\"top_k\":%d,\"seed\":%d}",
                 p, 10 + i % 25, i % 7, i);
        break;
    case 2:
        snprintf(body, n, "{\"model\":\"gpt\",\"prompt\":[\"%s\",\"b\"],\"max_tokens\":20,\"top_p\":0.8,\"seed\":%d,"
                 "\"stop\":[\"e\",\"o \"],\"n\":2}", p, i);
        break;
    default:
        snprintf(body, n, "{\"model\":\"gpt\",\"prompt\":\"%s\",\"max_tokens\":12,\"temperature\":1.3,\"seed\":%d,"
                 "\"logprobs\":2}", p, i);
    }
}

/* The reply without its "id" and "created" (which differ from one request to the next). */
static char *answer(const char *reply) {
    cJSON *o = cJSON_Parse(reply);
    if (!o) return NULL;
    cJSON_DeleteItemFromObject(o, "id"), cJSON_DeleteItemFromObject(o, "created");
    char *t = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    return t;
}

/* A metric's value in /metrics' text, or -1. */
static double metric(const server *sv, const char *name) {
    char *r, key[128];
    double v = -1;
    if (http(sv, "/metrics", NULL, 0, NULL, &r) == 200) {
        snprintf(key, sizeof key, "\n%s ", name);
        const char *at = strstr(r, key);
        if (at) v = atof(at + strlen(key));
    }
    free(r);
    return v;
}

TEST(serve_batches_completions_as_alone) {
    char dir[64] = "", cli[1024];
    server sv;
    CHECK(!gpt_serve(&sv, dir, sizeof dir, "--max-tokens 33 --temperature 0", cli, sizeof cli, "--max-rows 16"));
    enum { N = 64 };
    static serve_call calls[N];
    char *alone[N];
    for (int i = 0; i < N; i++) { /* each alone first, one at a time */
        calls[i] = completion_call(&sv, NULL);
        request(i, calls[i].text, sizeof calls[i].text);
        serve_call_thread(&calls[i]);
        CHECKF(calls[i].status == 200, "%s: %ld %s", calls[i].text, calls[i].status, calls[i].reply);
        alone[i] = answer(calls[i].reply);
        free(calls[i].reply);
    }
    CHECKF(strstr(alone[0], "\"text\":") && strstr(alone[0], cli), "greedy: %s, the CLI's '%s'", alone[0], cli);
    double steps0 = metric(&sv, "tformer_completion_step_rows_count"), rows0 = metric(&sv, "tformer_completion_step_rows_sum");
    CHECKF(steps0 > 0 && rows0 < 2 * steps0, "alone: %g rows in %g steps", rows0, steps0); /* n = 2, two prompts: 4 */
    pthread_t th[N];
    for (int i = 0; i < N; i++) pthread_create(&th[i], NULL, serve_call_thread, &calls[i]);
    for (int i = 0; i < N; i++) pthread_join(th[i], NULL);
    int same = 0;
    for (int i = 0; i < N; i++) {
        char *a = calls[i].status == 200 ? answer(calls[i].reply) : NULL;
        if (a && !strcmp(a, alone[i])) same++;
        else fprintf(stderr, "    %s\n      together: %s\n      alone:    %s\n", calls[i].text, a ? a : calls[i].reply, alone[i]);
        free(a), free(alone[i]), free(calls[i].reply);
    }
    double steps = metric(&sv, "tformer_completion_step_rows_count") - steps0;
    double rows = metric(&sv, "tformer_completion_step_rows_sum") - rows0;
    printf("    64 clients at once: %d answers equal their answers alone; %g completions in %g steps (%.1f a step)\n",
           same, rows, steps, steps > 0 ? rows / steps : 0);
    CHECKF(same == N, "%d of %d answers differ from their answers alone", N - same, N);
    CHECKF(rows > 2 * steps, "the steps carried %g completions each: not batched", rows / steps);
    CHECK(metric(&sv, "tformer_completions_running") == 0 && metric(&sv, "tformer_completions_queued") == 0);
    CHECK(server_stop(&sv) == 0);
    test_rm_rf(dir);
}

/* logprobs: a token each with its log-probability and the likeliest alternatives (greedy: the first
 * of them); the tokens spell the text. Several stop strings cut at the first. Bad values: 400. */
TEST(serve_completions_logprobs_and_stops) {
    char dir[64] = "", cli[1024], *r;
    server sv;
    CHECK(!gpt_serve(&sv, dir, sizeof dir, "--max-tokens 12 --temperature 0", cli, sizeof cli, ""));
    CHECK(post(&sv, "/v1/completions", "{\"model\":\"gpt\",\"prompt\":\"ab\",\"max_tokens\":12,\"temperature\":0,"
               "\"logprobs\":3}", NULL, &r) == 200);
    cJSON *o = cJSON_Parse(r), *ch = cJSON_GetArrayItem(cJSON_GetObjectItem(o, "choices"), 0);
    cJSON *lp = cJSON_GetObjectItem(ch, "logprobs"), *toks = cJSON_GetObjectItem(lp, "tokens");
    cJSON *tlp = cJSON_GetObjectItem(lp, "token_logprobs"), *top = cJSON_GetObjectItem(lp, "top_logprobs");
    cJSON *off = cJSON_GetObjectItem(lp, "text_offset");
    int n = cJSON_GetArraySize(toks);
    CHECKF(n == 12 && cJSON_GetArraySize(tlp) == n && cJSON_GetArraySize(top) == n && cJSON_GetArraySize(off) == n &&
           (int)cJSON_GetObjectItem(cJSON_GetObjectItem(o, "usage"), "completion_tokens")->valuedouble == n, "%s", r);
    char spelled[1024] = "";
    for (int i = 0; i < n; i++) {
        const cJSON *alt = cJSON_GetArrayItem(top, i), *best = alt ? alt->child : NULL;
        double v = cJSON_GetArrayItem(tlp, i)->valuedouble;
        CHECKF(cJSON_GetArraySize(alt) >= 1 && cJSON_GetArraySize(alt) <= 3 && best && v <= 0 &&
               !strcmp(best->string, cJSON_GetArrayItem(toks, i)->valuestring) && best->valuedouble == v,
               "token %d: %g, the likeliest %s %g", i, v, best ? best->string : "-", best ? best->valuedouble : 0);
        for (const cJSON *a = alt->child; a; a = a->next) CHECK(a->valuedouble <= best->valuedouble);
        size_t chars = 0; /* text_offset: characters, as Python counts them */
        for (const char *q = spelled; *q; q++) chars += (*q & 0xC0) != 0x80;
        CHECK((size_t)cJSON_GetArrayItem(off, i)->valuedouble == chars);
        strncat(spelled, cJSON_GetArrayItem(toks, i)->valuestring, sizeof spelled - strlen(spelled) - 1);
    }
    CHECKF(!strcmp(spelled, cli) && !strcmp(cJSON_GetObjectItem(ch, "text")->valuestring, cli), "%s vs '%s'", spelled, cli);
    cJSON_Delete(o), free(r);
    /* stop strings: the text ends before the first that occurs */
    char sampled[1024];
    CHECK(!gpt_and_cli_text(dir, sizeof dir, "--max-tokens 12 --temperature 0.9 --seed 7", sampled, sizeof sampled));
    char stops[2][8] = {"", ""};
    const char *p = sampled;
    for (int k = 0; k < 2 && *p; k++) { /* the text's 3rd and 5th characters (whole UTF-8 sequences) */
        for (int skip = 0; skip < 2 && *p; skip++)
            for (p++; (*p & 0xC0) == 0x80; p++) {
            }
        const char *e = *p ? p + 1 : p;
        while ((*e & 0xC0) == 0x80) e++;
        snprintf(stops[k], sizeof stops[k], "%.*s", (int)(e - p), p);
    }
    cJSON *req = cJSON_CreateObject(), *list = cJSON_AddArrayToObject(req, "stop");
    cJSON_AddStringToObject(req, "model", "gpt"), cJSON_AddStringToObject(req, "prompt", "ab");
    cJSON_AddNumberToObject(req, "max_tokens", 12), cJSON_AddNumberToObject(req, "temperature", 0.9);
    cJSON_AddNumberToObject(req, "seed", 7);
    cJSON_AddItemToArray(list, cJSON_CreateString("\xc2\xa7never")); /* one that never occurs */
    for (int k = 0; k < 2; k++) cJSON_AddItemToArray(list, cJSON_CreateString(stops[k]));
    char *body = cJSON_PrintUnformatted(req);
    size_t cut = strlen(sampled);
    for (int k = 0; k < 2; k++) {
        const char *hit = *stops[k] ? strstr(sampled, stops[k]) : NULL;
        if (hit && (size_t)(hit - sampled) < cut) cut = (size_t)(hit - sampled);
    }
    CHECK(post(&sv, "/v1/completions", body, NULL, &r) == 200);
    o = cJSON_Parse(r);
    ch = cJSON_GetArrayItem(cJSON_GetObjectItem(o, "choices"), 0);
    const cJSON *t = cJSON_GetObjectItem(ch, "text");
    CHECKF(cJSON_IsString(t) && strlen(t->valuestring) == cut && !strncmp(t->valuestring, sampled, cut) && cut < strlen(sampled)
           && !strcmp(cJSON_GetObjectItem(ch, "finish_reason")->valuestring, "stop"),
           "%s: %s; alone, without stops, '%s'", body, r, sampled);
    cJSON_Delete(o), cJSON_Delete(req), free(r), free(body);
    static const char *const BAD[] = {
        "{\"model\":\"gpt\",\"prompt\":\"ab\",\"logprobs\":6}",
        "{\"model\":\"gpt\",\"prompt\":\"ab\",\"logprobs\":\"2\"}",
        "{\"model\":\"gpt\",\"prompt\":\"ab\",\"logprobs\":-1}",
        "{\"model\":\"gpt\",\"prompt\":\"ab\",\"stop\":[\"a\",\"b\",\"c\",\"d\",\"e\"]}",
        "{\"model\":\"gpt\",\"prompt\":\"ab\",\"stop\":[\"a\",7]}",
        "{\"model\":\"gpt\",\"prompt\":\"ab\",\"stop\":7}",
        "{\"model\":\"gpt\",\"prompt\":\"abcdefghijklmnopqrstuvwxyz\"}", /* past the context of 16 */
    };
    for (size_t i = 0; i < sizeof BAD / sizeof *BAD; i++) {
        long st = post(&sv, "/v1/completions", BAD[i], NULL, &r);
        CHECKF(st == 400 && is_error(r), "%s: %ld %s", BAD[i], st, r);
        free(r);
    }
    CHECK(http(&sv, "/health", NULL, 0, NULL, &r) == 200);
    free(r);
    CHECK(server_stop(&sv) == 0);
    test_rm_rf(dir);
}

/* A stream asked for a million tokens over a raw socket; 0 once its first event arrived. */
static int open_stream(const server *sv, int *fd) {
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)sv->port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    const char *body = "{\"model\":\"gpt\",\"prompt\":\"ab\",\"max_tokens\":1000000,\"stream\":true}";
    char req[512], got[256];
    snprintf(req, sizeof req, "POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
             "Content-Length: %zu\r\n\r\n%s", strlen(body), body);
    if ((*fd = socket(AF_INET, SOCK_STREAM, 0)) < 0 || connect(*fd, (struct sockaddr *)&a, sizeof a) ||
        write(*fd, req, strlen(req)) != (ssize_t)strlen(req))
        return -1;
    size_t n = 0;
    while (n < sizeof got - 1) { /* the headers, then the first event */
        ssize_t k = read(*fd, got + n, sizeof got - 1 - n);
        if (k <= 0) return -1;
        n += (size_t)k, got[n] = 0;
        if (strstr(got, "data: ")) return 0;
    }
    return 0;
}

/* Until the metric reads want (60 s at most); 0 when it did. */
static int wait_metric(const server *sv, const char *name, double want) {
    for (int i = 0; i < 600; i++) {
        if (metric(sv, name) == want) return 0;
        nanosleep(&(struct timespec){0, 100000000}, NULL);
    }
    return -1;
}

/* --max-rows 1 --max-queue 1: one completion runs, one waits, the next is refused (503); the
 * client of the running one leaves mid-stream and its completion ends at the next step (far
 * short of its million tokens), after which the waiting one runs. */
TEST(serve_completions_queue_and_client_gone) {
    char dir[64] = "", cli[1024], *r;
    server sv;
    CHECK(!gpt_serve(&sv, dir, sizeof dir, "--max-tokens 5 --temperature 0", cli, sizeof cli,
                     "--max-rows 1 --max-queue 1 --max-tokens 1000000"));
    int fd = -1;
    CHECK(!open_stream(&sv, &fd));
    CHECK(!wait_metric(&sv, "tformer_completions_running", 1));
    serve_call waiting = completion_call(&sv, "{\"model\":\"gpt\",\"prompt\":\"ab\",\"max_tokens\":5,\"temperature\":0}");
    pthread_t th;
    pthread_create(&th, NULL, serve_call_thread, &waiting);
    CHECK(!wait_metric(&sv, "tformer_completions_queued", 1));
    long st = post(&sv, "/v1/completions", waiting.body, NULL, &r);
    CHECKF(st == 503 && is_error(r) && strstr(r, "queue_full"), "%ld %s", st, r);
    free(r);
    st = post(&sv, "/v1/completions", "{\"model\":\"gpt\",\"prompt\":\"ab\",\"stream\":true}", NULL, &r);
    CHECKF(st == 503 && is_error(r) && strstr(r, "queue_full"), "a stream: %ld %s", st, r); /* before it begins */
    free(r);
    close(fd); /* the stream's client goes */
    pthread_join(th, NULL);
    CHECKF(waiting.status == 200 && strstr(waiting.reply, cli), "%ld %s", waiting.status, waiting.reply);
    free(waiting.reply);
    CHECK(!wait_metric(&sv, "tformer_completions_running", 0) && metric(&sv, "tformer_completions_queued") == 0);
    double tokens = metric(&sv, "tformer_completion_tokens_total");
    printf("    the stream whose client left ended after %g of its 1000000 tokens\n", tokens - 5);
    CHECKF(tokens > 5 && tokens < 1000000, "%g tokens", tokens);
    CHECK(http(&sv, "/health", NULL, 0, NULL, &r) == 200);
    free(r);
    CHECK(server_stop(&sv) == 0);
    test_rm_rf(dir);
}

/* A raw request on an open (keep-alive) connection fd; 0 when its reply holds want (10 s at most). */
static int raw_reply_has(int fd, const char *path, const char *want, char *got, size_t n) {
    char req[256];
    snprintf(req, sizeof req, "GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", path);
    if (write(fd, req, strlen(req)) != (ssize_t)strlen(req)) return -1;
    size_t at = 0;
    got[0] = 0;
    for (int i = 0; i < 100 && !strstr(got, want) && at < n - 1; i++) {
        struct pollfd p = {fd, POLLIN, 0};
        ssize_t k = poll(&p, 1, 100) == 1 ? read(fd, got + at, n - 1 - at) : 0;
        if (k < 0 || (k == 0 && p.revents)) break;
        at += (size_t)k, got[at] = 0;
    }
    return strstr(got, want) ? 0 : -1;
}

/* SIGINT with a stream in flight: the server stops listening, answers a request on a connection
 * it had already opened with a 503 (shutting_down), lets the stream run until its client leaves,
 * then exits 0. */
TEST(serve_shutdown_refuses_new_requests_with_503) {
    char dir[64] = "", cli[1024], got[2048];
    server sv;
    CHECK(!gpt_serve(&sv, dir, sizeof dir, "--max-tokens 5 --temperature 0", cli, sizeof cli, "--max-tokens 1000000"));
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)sv.port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    int kept = socket(AF_INET, SOCK_STREAM, 0), fd = -1;
    CHECK(kept >= 0 && !connect(kept, (struct sockaddr *)&a, sizeof a));
    CHECKF(!raw_reply_has(kept, "/health", "\"ok\"", got, sizeof got), "before: %s", got);
    CHECK(!open_stream(&sv, &fd));
    kill(sv.pid, SIGINT);
    char log[1024] = "";
    size_t n = 0;
    for (int i = 0; i < 100 && !strstr(log, "finishing the requests in flight") && n < sizeof log - 1; i++) {
        struct pollfd p = {sv.err_fd, POLLIN, 0};
        ssize_t k = poll(&p, 1, 100) == 1 ? read(sv.err_fd, log + n, sizeof log - 1 - n) : 0;
        n += k > 0 ? (size_t)k : 0, log[n] = 0;
    }
    CHECKF(strstr(log, "SIGINT: finishing the requests in flight"), "the server's log: %s", log);
    CHECKF(!raw_reply_has(kept, "/health", "shutting_down", got, sizeof got) && strstr(got, "HTTP/1.1 503") &&
               strstr(got, "\"error\""),
           "a request while shutting down: %s", got);
    int late = socket(AF_INET, SOCK_STREAM, 0);
    CHECKF(late >= 0 && connect(late, (struct sockaddr *)&a, sizeof a) != 0,
           "a new connection was taken while shutting down");
    close(late), close(kept);
    int alive = kill(sv.pid, 0) == 0; /* the stream is still in flight */
    close(fd);                        /* its client goes: the server has nothing left */
    int st;
    waitpid(sv.pid, &st, 0);
    close(sv.err_fd);
    CHECKF(alive && WIFEXITED(st) && WEXITSTATUS(st) == 0, "alive %d while the stream ran; status %d", alive, st);
    test_rm_rf(dir);
}
