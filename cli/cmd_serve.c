/* tformer serve: models behind an OpenAI-compatible HTTP API (docs/serve.md). The server is
 * cli/serve_*.c; this file reads the flags, loads the models and waits for SIGINT or SIGTERM,
 * after which the requests in flight finish and the command exits 0. */
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "serve.h"

enum { MODEL, HOST, PORT, API_KEY, THREADS, PARALLEL, MAX_BATCH, BATCH_WINDOW, MAX_BODY, MAX_TOKENS, MAX_INPUTS, MAX_INPUT, MAX_N, TIMEOUT,
       HEADER_TIMEOUT, MAX_CONNECTIONS, MAX_ROWS, MAX_QUEUE };
const cli_flag cmd_serve_flags[] = {
    [MODEL] = {"model", CLI_LIST, "NAME=DIR...", NULL,
               "the models served, each NAME=DIR (its id NAME) or DIR (its id the folder's name); the flag may repeat"},
    [HOST] = {"host", CLI_STRING, "ADDR", "127.0.0.1", "the address to listen on (0.0.0.0: every interface)"},
    [PORT] = {"port", CLI_INT, "N", "8080", "the port; 0: any free one (printed)"},
    [API_KEY] = {"api-key", CLI_STRING, "KEY", "",
                 "ask every request but /health for 'Authorization: Bearer KEY' (default: $TFORMER_API_KEY, else none)"},
    [THREADS] = CLI_THREADS_ROW,
    [PARALLEL] = {"parallel", CLI_INT, "N", "2", "model calls computed at once; other requests wait their turn"},
    [MAX_BATCH] = {"max-batch", CLI_INT, "N", "1",
                   "concurrent embedding requests of a model coalesced into one call (1: none; above 1 a text's "
                   "vector may differ from its vector alone in the last bits: docs/serve.md)"},
    [BATCH_WINDOW] = {"batch-window", CLI_INT, "MICROSECONDS", "2000", "how long a batch waits for more requests"},
    [MAX_BODY] = {"max-body", CLI_INT, "BYTES", "1048576", "the largest request body (413 past it)"},
    [MAX_TOKENS] = {"max-tokens", CLI_INT, "N", "512", "the largest max_tokens a completion may ask"},
    [MAX_INPUTS] = {"max-inputs", CLI_INT, "N", "256", "texts (or prompts) per request"},
    [MAX_INPUT] = {"max-input", CLI_INT, "BYTES", "65536", "bytes of one text or prompt"},
    [MAX_N] = {"max-n", CLI_INT, "N", "8", "completions per prompt (n)"},
    [TIMEOUT] = {"timeout", CLI_INT, "SECONDS", "30",
                 "time to send a request (408 past it), and the silence allowed while a request is under way"},
    [HEADER_TIMEOUT] = {"header-timeout", CLI_INT, "SECONDS", "10",
                        "silence allowed before a request's header is complete, on a new connection or a kept-alive "
                        "one (then it is closed; at most --timeout)"},
    [MAX_CONNECTIONS] = {"max-connections", CLI_INT, "N", "256",
                         "connections open at once; one arriving when all are open closes the one idle longest and "
                         "takes its place (no per-address cap: local and proxied clients share one address; docs/serve.md)"},
    [MAX_ROWS] = {"max-rows", CLI_INT, "N", "32",
                  "completions of a model stepped together (continuous batching; each one's answer is its answer alone)"},
    [MAX_QUEUE] = {"max-queue", CLI_INT, "N", "256", "completions of a model waiting for a row (503 past it)"},
    CLI_END,
};

/* "NAME=DIR" or "DIR" -> the model's id (malloc'd) and folder. */
static char *model_id(const char *spec, const char **dir) {
    const char *eq = strchr(spec, '=');
    if (eq) return *dir = eq + 1, strndup(spec, (size_t)(eq - spec));
    size_t n = strlen(spec);
    while (n > 1 && spec[n - 1] == '/') n--;
    const char *base = spec + n;
    while (base > spec && base[-1] != '/') base--;
    return *dir = spec, strndup(base, (size_t)(spec + n - base));
}

static serve_model *load_models(const cli_args *a, int *n) {
    const cli_verb *v = a->verb;
    const cli_val *mv = &a->v[MODEL];
    serve_model *ms = calloc((size_t)mv->n, sizeof *ms);
    if (!ms) cli_die(v, "out of memory");
    for (int i = 0; i < mv->n; i++) {
        const char *dir;
        if (!(ms[i].name = model_id(mv->list[i], &dir))) cli_die(v, "out of memory");
        if (!*ms[i].name || !*dir) cli_usage_error(a, "--model expects NAME=DIR or DIR, got '%s'", mv->list[i]);
        for (int j = 0; j < i; j++)
            if (!strcmp(ms[j].name, ms[i].name)) cli_usage_error(a, "two models named '%s': give NAME=DIR", ms[i].name);
        if (!(ms[i].m = tf_model_load(dir, NULL))) cli_die(v, tf_error());
        /* a translator prepares the weights once, before threads share the model */
        if (tf_model_caps(ms[i].m) & TF_CAP_TRANSLATE && tf_model_translator(ms[i].m, NULL, NULL, NULL))
            cli_die(v, tf_error());
        char caps[256];
        fprintf(stderr, "tformer serve: model '%s' (%s): %s\n", ms[i].name, tf_model_family(ms[i].m)->name,
                tf_caps_list(tf_model_caps(ms[i].m), caps, sizeof caps));
    }
    *n = mv->n;
    return ms;
}

/* An integer flag in [lo,hi], else a usage error naming it. */
static long long ranged(const cli_args *a, int k, long long lo, long long hi) {
    long long x = a->v[k].i;
    if (x < lo || x > hi) cli_usage_error(a, "--%s expects an integer in [%lld,%lld], got %lld", cmd_serve_flags[k].name, lo, hi, x);
    return x;
}

int cmd_serve(const cli_args *a) {
    const cli_verb *v = a->verb;
    tf_set_threads(cli_threads(&a->v[THREADS]));
    const char *key = a->v[API_KEY].text ? a->v[API_KEY].text : getenv("TFORMER_API_KEY");
    serve_opts o = {a->v[HOST].text, (int)ranged(a, PORT, 0, 65535), key && *key ? key : NULL,
                    (int)ranged(a, PARALLEL, 1, 1024), (int)ranged(a, MAX_BATCH, 1, 1024),
                    (int)ranged(a, BATCH_WINDOW, 0, 999999), (size_t)ranged(a, MAX_BODY, 64, 1LL << 30),
                    (int)ranged(a, MAX_TOKENS, 1, 1 << 20), (int)ranged(a, MAX_INPUTS, 1, 1 << 16),
                    (size_t)ranged(a, MAX_INPUT, 1, 1LL << 30), (int)ranged(a, MAX_N, 1, 128),
                    (int)ranged(a, TIMEOUT, 1, 3600), (int)ranged(a, HEADER_TIMEOUT, 1, 3600),
                    (int)ranged(a, MAX_CONNECTIONS, 1, 1 << 16),
                    (int)ranged(a, MAX_ROWS, 1, 4096), (int)ranged(a, MAX_QUEUE, 1, 1 << 20)};
    cli_say_plain(v, 1, "%d model%s (--model); %s port %d (--host, --port%s); %d model calls at once (--parallel), "
                  "embedding batches of up to %d (--max-batch), %d completions stepped together (--max-rows); %s",
                  a->v[MODEL].n, a->v[MODEL].n == 1 ? "" : "s", o.host, o.port,
                  a->v[HOST].given || a->v[PORT].given ? "" : ": the defaults", o.parallel, o.max_batch, o.max_rows,
                  !o.api_key ? "no API key (--api-key, $TFORMER_API_KEY)" : a->v[API_KEY].text
                  ? "API key asked (--api-key)" : "API key asked ($TFORMER_API_KEY)");
    int n;
    serve_model *ms = load_models(a, &n);
    /* The signals are taken by sigwait here: every thread the server starts inherits them blocked. */
    sigset_t sigs;
    sigemptyset(&sigs);
    sigaddset(&sigs, SIGINT), sigaddset(&sigs, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &sigs, NULL);
    signal(SIGPIPE, SIG_IGN);
    char err[512];
    serve *s = serve_start(&o, ms, n, err, sizeof err);
    if (!s) cli_die(v, err);
    fprintf(stderr, "tformer serve: listening on http://%s%s%s:%d/v1 (%d model%s%s)\n", strchr(o.host, ':') ? "[" : "",
            o.host, strchr(o.host, ':') ? "]" : "", serve_port(s), n, n == 1 ? "" : "s", o.api_key ? ", API key asked" : "");
    int sig = 0;
    sigwait(&sigs, &sig);
    serve_quiesce(s); /* before the line below, which tells a watcher the server no longer takes requests */
    fprintf(stderr, "tformer serve: %s: finishing the requests in flight\n", sig == SIGINT ? "SIGINT" : "SIGTERM");
    serve_stop(s);
    for (int i = 0; i < n; i++) tf_model_free(ms[i].m), free(ms[i].name);
    free(ms);
    fprintf(stderr, "tformer serve: stopped\n");
    return 0;
}
