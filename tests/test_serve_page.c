/* tformer serve's page at / in a real browser (headless Chromium, Debian's `chromium`; skipped
 * without it): the page's address asks it to complete a prompt (streamed) and draw the attention
 * of a layer and head; the DOM it leaves holds the CLI's greedy text and a heatmap whose cells are
 * /v1/attention's numbers. The page needs no key; the API behind it does. */
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "serve_case.h"
#include "test.h"

/* Headless Chromium driven through the DevTools protocol on a pipe (--remote-debugging-pipe: the
 * browser reads commands on its fd 3 and writes replies on its fd 4, each message ended by a NUL).
 * The test waits on the page's own signal (document.body.dataset.done) with a bounded wall-clock
 * deadline, not on --virtual-time-budget: that budget runs on while a fetch waits for the server's
 * reply, so on busy cores --dump-dom could print the page before its completion had arrived. */
typedef struct {
    int to, from, id;
    pid_t pid;
    char buf[1 << 16];
    size_t n;
    char *msg; /* one message being gathered, malloc'd */
    size_t len;
} browser;

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* The next message (malloc'd), NULL when the pipe closed or the deadline passed. */
static char *cdp_read(browser *b, double deadline) {
    for (;;) {
        char *nul = memchr(b->buf, 0, b->n);
        size_t take = nul ? (size_t)(nul - b->buf) : b->n;
        char *m = realloc(b->msg, b->len + take + 1);
        if (!m) return NULL;
        memcpy(m + b->len, b->buf, take), b->msg = m, b->len += take, m[b->len] = 0;
        size_t used = nul ? take + 1 : take;
        memmove(b->buf, b->buf + used, b->n - used), b->n -= used;
        if (nul) {
            b->msg = NULL, b->len = 0;
            return m;
        }
        int left = (int)((deadline - now_s()) * 1000);
        struct pollfd pf = {b->from, POLLIN, 0};
        if (left <= 0 || poll(&pf, 1, left) <= 0) return NULL;
        ssize_t k = read(b->from, b->buf, sizeof b->buf);
        if (k <= 0) return NULL;
        b->n = (size_t)k;
    }
}

/* method(params) in session (NULL: the browser's); its "result" (cJSON, the caller's), NULL on an error. */
static cJSON *cdp_call(browser *b, const char *method, cJSON *params, const char *session, double deadline) {
    cJSON *o = cJSON_CreateObject();
    int id = ++b->id;
    cJSON_AddNumberToObject(o, "id", id), cJSON_AddStringToObject(o, "method", method);
    cJSON_AddItemToObject(o, "params", params ? params : cJSON_CreateObject());
    if (session) cJSON_AddStringToObject(o, "sessionId", session);
    char *text = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    size_t len = text ? strlen(text) + 1 : 0, at = 0; /* the NUL ends the message */
    for (ssize_t k; at < len && (k = write(b->to, text + at, len - at)) > 0;) at += (size_t)k;
    free(text);
    if (!len || at < len) return NULL;
    for (char *m; (m = cdp_read(b, deadline));) {
        cJSON *r = cJSON_Parse(m), *rid = cJSON_GetObjectItem(r, "id");
        free(m);
        if (cJSON_IsNumber(rid) && rid->valueint == id) {
            cJSON *res = cJSON_DetachItemFromObject(r, "result");
            cJSON_Delete(r);
            return res;
        }
        cJSON_Delete(r); /* an event, or another reply */
    }
    return NULL;
}

/* The value of expression in the page, as a string (malloc'd), NULL when it is not a string. */
static char *page_eval(browser *b, const char *session, const char *expression, double deadline) {
    cJSON *p = cJSON_CreateObject();
    cJSON_AddStringToObject(p, "expression", expression), cJSON_AddBoolToObject(p, "returnByValue", 1);
    cJSON *r = cdp_call(b, "Runtime.evaluate", p, session, deadline);
    cJSON *v = cJSON_GetObjectItem(cJSON_GetObjectItem(r, "result"), "value");
    char *s = cJSON_IsString(v) ? strdup(v->valuestring) : NULL;
    cJSON_Delete(r);
    return s;
}

/* url in headless Chromium until the page sets data-done on its body (120 s at most), then its DOM
 * (malloc'd; "" when the browser failed or the page never finished); NULL without Chromium. */
static char *dump_dom(const char *url) {
    const char *bin = getenv("TFORMER_CHROMIUM") ? getenv("TFORMER_CHROMIUM") : "chromium";
    char cmd[512];
    snprintf(cmd, sizeof cmd, "command -v %s >/dev/null 2>&1", bin);
    if (system(cmd) != 0) return NULL;
    int to[2], from[2];
    if (pipe(to) || pipe(from)) return strdup("");
    browser *b = calloc(1, sizeof *b);
    b->pid = fork();
    if (b->pid == 0) {
        int null = open("/dev/null", O_RDWR);
        dup2(null, 0), dup2(null, 1), dup2(null, 2), dup2(to[0], 3), dup2(from[1], 4);
        execlp(bin, bin, "--headless", "--no-sandbox", "--disable-gpu", "--remote-debugging-pipe", "about:blank",
               (char *)NULL);
        _exit(127);
    }
    close(to[0]), close(from[1]), b->to = to[1], b->from = from[0];
    void (*old)(int) = signal(SIGPIPE, SIG_IGN);
    double deadline = now_s() + 120;
    char *dom = NULL, *session = NULL;
    cJSON *p = cJSON_CreateObject();
    cJSON_AddStringToObject(p, "url", url);
    cJSON *r = cdp_call(b, "Target.createTarget", p, NULL, deadline), *t = cJSON_GetObjectItem(r, "targetId");
    if (cJSON_IsString(t)) {
        p = cJSON_CreateObject();
        cJSON_AddStringToObject(p, "targetId", t->valuestring), cJSON_AddBoolToObject(p, "flatten", 1);
        cJSON *a = cdp_call(b, "Target.attachToTarget", p, NULL, deadline), *s = cJSON_GetObjectItem(a, "sessionId");
        session = cJSON_IsString(s) ? strdup(s->valuestring) : NULL;
        cJSON_Delete(a);
    }
    cJSON_Delete(r);
    for (char *done = NULL; session && now_s() < deadline; free(done)) {
        done = page_eval(b, session, "document.body && document.body.dataset.done || ''", deadline);
        if (done && !strcmp(done, "1")) {
            free(done);
            dom = page_eval(b, session, "document.documentElement.outerHTML", deadline);
            break;
        }
        nanosleep(&(struct timespec){0, 100000000}, NULL);
    }
    cJSON_Delete(cdp_call(b, "Browser.close", NULL, NULL, now_s() + 10));
    close(b->to), close(b->from), signal(SIGPIPE, old);
    int st;
    for (int i = 0; i < 100 && waitpid(b->pid, &st, WNOHANG) == 0; i++)
        nanosleep(&(struct timespec){0, 100000000}, NULL);
    if (waitpid(b->pid, &st, WNOHANG) == 0) kill(b->pid, SIGKILL), waitpid(b->pid, &st, 0);
    free(session), free(b->msg), free(b);
    return dom ? dom : strdup("");
}

/* The text of the element with id="id" (up to the next tag), malloc'd. */
static char *text_of(const char *dom, const char *id) {
    char key[64];
    snprintf(key, sizeof key, "id=\"%s\"", id);
    const char *at = strstr(dom, key), *gt = at ? strchr(at, '>') : NULL, *lt = gt ? strchr(gt, '<') : NULL;
    return lt ? strndup(gt + 1, (size_t)(lt - gt - 1)) : NULL;
}

TEST(serve_page_completes_and_draws_attention_in_chromium) {
    char dir[64] = "", cli[1024], url[512], *r;
    server sv;
    CHECK(!gpt_serve(&sv, dir, sizeof dir, "--max-tokens 8 --temperature 0", cli, sizeof cli,
                     "--model st=" ST_DIR " --model vit=tests/fixtures_vit/cls_grey28_p4_labels --api-key pg-k3y"));
    CHECK(http(&sv, "/", NULL, 0, NULL, &r) == 200 && strstr(r, "<html") && strstr(r, "/v1/attention"));
    free(r);
    CHECK(http(&sv, "/v1/models", NULL, 0, NULL, &r) == 401);
    free(r);
    /* /v1/attention's bad requests: 400 (a head past the model's, no tokens, past 256 tokens), 422 */
    char many[400] = "{\"model\":\"gpt\",\"input\":\"";
    memset(many + strlen(many), 'a', 300), strcat(many, "\"}");
    const struct {
        const char *body;
        long status;
        const char *says;
    } bad[] = {{"{\"model\":\"gpt\",\"input\":\"ab\",\"head\":2}", 400, "head"},
               {"{\"model\":\"gpt\",\"input\":\"ab\",\"layer\":-1}", 400, "layer"},
               {"{\"model\":\"gpt\",\"input\":\"\"}", 400, "0 tokens"},
               {"{\"model\":\"gpt\",\"input\":7}", 400, "input"},
               {many, 400, "300 tokens"},
               {"{\"model\":\"vit\",\"input\":\"ab\"}", 422, "model_cannot"}};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        long st = post(&sv, "/v1/attention", bad[i].body, "pg-k3y", &r);
        CHECKF(st == bad[i].status && is_error(r) && strstr(r, bad[i].says), "%.60s: %ld %s", bad[i].body, st, r);
        free(r);
    }
    snprintf(url, sizeof url, "http://127.0.0.1:%d/#key=pg-k3y&model=gpt&input=ab&run=complete,attention&max_tokens=8"
             "&temperature=0&layer=0&head=1", sv.port);
    char *dom = dump_dom(url);
    if (!dom) {
        printf("    skipped: no chromium (apt-get install chromium)\n");
        server_stop(&sv), test_rm_rf(dir);
        return;
    }
    CHECKF(*dom, "Chromium: no page with data-done=\"1\" within 120 s (or the browser failed)");
    char *out = text_of(dom, "out"), *err = text_of(dom, "err");
    CHECKF(strstr(dom, "data-done=\"1\"") && out && !strcmp(out, cli) && err && !*err, "out '%s' (the CLI's '%s'), err '%s'",
           out ? out : "-", cli, err ? err : "-");
    CHECK(post(&sv, "/v1/attention", "{\"model\":\"gpt\",\"input\":\"ab\",\"layer\":0,\"head\":1}", "pg-k3y", &r) == 200);
    cJSON *o = cJSON_Parse(r), *map = cJSON_GetObjectItem(o, "attention");
    CHECKF(strstr(dom, "id=\"att\" data-layer=\"0\" data-head=\"1\" data-n=\"2\""), "no 2x2 heatmap of layer 0, head 1");
    const char *cell = strstr(dom, "<tbody>");
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 2; j++) {
            cell = cell ? strstr(cell, "data-v=\"") : NULL;
            CHECK(cell);
            cell += 8;
            double want = cJSON_GetArrayItem(cJSON_GetArrayItem(map, i), j)->valuedouble;
            CHECKF(atof(cell) == want, "cell (%d,%d): %g on the page, %g from /v1/attention", i, j, atof(cell), want);
        }
    printf("    Chromium: the page streamed '%s' and drew layer 0, head 1 over 2 tokens\n", out);
    cJSON_Delete(o), free(r), free(out), free(err), free(dom);
    CHECK(server_stop(&sv) == 0);
    test_rm_rf(dir);
}
