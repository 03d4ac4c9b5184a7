/* What the tests of tformer serve share (serve_case.h). */
#include <curl/curl.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "serve_case.h"
#include "test.h"

/* tformer serve ARGS --port 0 in a child; the port from its "listening on" line (30 s at most). */
int server_start(server *sv, const char *args) {
    int fds[2];
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "exec %s serve --port 0 --threads 1 %s", test_tformer_bin(), args);
    if (pipe(fds)) return -1;
    sv->pid = fork();
    if (sv->pid < 0) return -1;
    if (!sv->pid) {
        int null = open("/dev/null", O_WRONLY);
        dup2(fds[1], 2), dup2(null, 1), close(fds[0]), close(fds[1]), close(null);
        prctl(PR_SET_PDEATHSIG, SIGTERM); /* a failed check returns early: the server goes with the tests */
        execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
        _exit(127);
    }
    close(fds[1]);
    sv->err_fd = fds[0], sv->port = 0;
    char log[8192] = "";
    size_t n = 0;
    for (int waited = 0; waited < 300 && !sv->port; waited++) {
        struct pollfd p = {fds[0], POLLIN, 0};
        if (poll(&p, 1, 100) <= 0) continue;
        ssize_t k = read(fds[0], log + n, sizeof log - 1 - n);
        if (k <= 0) break;
        n += (size_t)k, log[n] = 0;
        const char *at = strstr(log, "listening on http://127.0.0.1:");
        if (at) sv->port = atoi(at + strlen("listening on http://127.0.0.1:"));
    }
    if (!sv->port) fprintf(stderr, "server did not start: %s\n", log), kill(sv->pid, SIGKILL), waitpid(sv->pid, NULL, 0);
    return sv->port ? 0 : -1;
}

/* SIGTERM; the exit status (128 + signal when killed). */
int server_stop(server *sv) {
    int st;
    kill(sv->pid, SIGTERM);
    waitpid(sv->pid, &st, 0);
    close(sv->err_fd);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

typedef struct {
    char *p;
    size_t n;
} buf;

static size_t on_data(char *d, size_t size, size_t k, void *user) {
    buf *b = user;
    size_t n = size * k;
    char *p = realloc(b->p, b->n + n + 1);
    if (!p) return 0;
    memcpy(p + b->n, d, n), b->p = p, b->n += n, p[b->n] = 0;
    return n;
}

/* METHOD path with body (NULL: GET) and key (NULL: none); the status, the reply in *out (malloc'd). */
long http(const server *sv, const char *path, const char *body, size_t len, const char *key, char **out) {
    CURL *c = curl_easy_init();
    char url[256], auth[256];
    buf b = {calloc(1, 1), 0};
    struct curl_slist *h = curl_slist_append(NULL, "Content-Type: application/json");
    snprintf(url, sizeof url, "http://127.0.0.1:%d%s", sv->port, path);
    if (key) snprintf(auth, sizeof auth, "Authorization: Bearer %s", key), h = curl_slist_append(h, auth);
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_data);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &b);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, 20L);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    if (body) curl_easy_setopt(c, CURLOPT_POSTFIELDS, body), curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE, (long)len);
    long status = 0;
    if (curl_easy_perform(c) == CURLE_OK) curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
    curl_slist_free_all(h);
    curl_easy_cleanup(c);
    *out = b.p;
    return status;
}

long post(const server *sv, const char *path, const char *body, const char *key, char **out) {
    return http(sv, path, body, strlen(body), key, out);
}

/* The reply is OpenAI's error shape. */
int is_error(const char *reply) {
    cJSON *o = cJSON_Parse(reply), *e = cJSON_GetObjectItem(o, "error");
    int ok = cJSON_IsString(cJSON_GetObjectItem(e, "message")) && cJSON_IsString(cJSON_GetObjectItem(e, "type")) &&
             cJSON_GetObjectItem(e, "param") && cJSON_GetObjectItem(e, "code");
    cJSON_Delete(o);
    return ok;
}

/* The text of the events of a stream (each "data: {...}"'s choices[0].text), and whether it ended with [DONE]. */
int stream_text(const char *reply, char *text, size_t n, int *events) {
    size_t len = 0;
    int done = 0;
    *events = 0, text[0] = 0;
    for (const char *p = strstr(reply, "data: "); p; p = strstr(p + 1, "data: ")) {
        if (!strncmp(p, "data: [DONE]", 12)) done = 1;
        const char *end = strstr(p, "\n\n");
        char *one = end ? strndup(p + 6, (size_t)(end - p - 6)) : NULL;
        cJSON *o = one && !done ? cJSON_Parse(one) : NULL;
        const cJSON *t = cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(o, "choices"), 0), "text");
        if (cJSON_IsString(t) && len + strlen(t->valuestring) < n)
            strcpy(text + len, t->valuestring), len += strlen(t->valuestring), ++*events;
        cJSON_Delete(o), free(one);
    }
    return done;
}

/* A GPT trained here into dir and the CLI's continuation of "ab" with flags into text (its prompt
 * and newline taken off); 0 or -1. */
int gpt_and_cli_text(char *dir, size_t n_dir, const char *flags, char *text, size_t n) {
    char cmd[512], out[4096];
    if (!*dir) {
        snprintf(dir, n_dir, "/tmp/tformer_serve_gpt_%d", (int)getpid());
        snprintf(cmd, sizeof cmd, "train --data tests/data/unicode_stress.txt --tokenizer char --out %s --steps 6 "
                 "--layers 1 --heads 2 --width 16 --context 16 --batch 4 --eval-every 3 --eval-batches 2 --overwrite", dir);
        if (test_run_cli("", cmd, out, sizeof out)) return fprintf(stderr, "%s\n", out), -1;
    }
    snprintf(cmd, sizeof cmd, "generate --model %s --prompt ab %s", dir, flags);
    if (test_run_cli("", cmd, out, sizeof out) || strncmp(out, "ab", 2) || strlen(out) < 3) return -1;
    size_t k = strlen(out) - 3; /* without "ab" and the newline */
    if (k >= n) return -1;
    memcpy(text, out + 2, k), text[k] = 0;
    return 0;
}


void *serve_call_thread(void *arg) {
    serve_call *c = arg;
    c->status = post(c->sv, c->path, c->body ? c->body : c->text, c->key, &c->reply);
    return NULL;
}

int gpt_serve(server *sv, char *dir, size_t n_dir, const char *cli_flags, char *cli, size_t n_cli, const char *server_flags) {
    char args[512];
    if (gpt_and_cli_text(dir, n_dir, cli_flags, cli, n_cli)) return -1;
    snprintf(args, sizeof args, "--model gpt=%s %s", dir, server_flags);
    return server_start(sv, args);
}
