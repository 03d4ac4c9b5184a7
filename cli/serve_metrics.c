/* The counters of tformer serve, in Prometheus' text format (GET /metrics). */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "serve.h"

static const char *const EP_NAMES[EP_COUNT] = {"health", "metrics", "models", "embeddings", "completions",
                                               "translations", "fill-mask", "classifications", "captions", "attention", "page", "other"};
/* Latency buckets' upper bounds, seconds. */
static const double BUCKETS[SERVE_N_BUCKETS] = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10};

void serve_metrics_init(serve_metrics *s) {
    memset(s, 0, sizeof *s);
    pthread_mutex_init(&s->mu, NULL);
}

static const char *const PATHS[EP_COUNT] = {"/health", "/metrics", "/v1/models", "/v1/embeddings",
                                            "/v1/completions", "/v1/translations", "/v1/fill-mask",
                                            "/v1/classifications", "/v1/captions", "/v1/attention", "/", "other"};

const char *serve_endpoint_name(serve_endpoint ep) { return PATHS[ep]; }

serve_endpoint serve_endpoint_of(const char *url) {
    for (int i = 0; i < EP_OTHER; i++)
        if (!strcmp(url, PATHS[i])) return (serve_endpoint)i;
    return EP_OTHER;
}

void serve_metrics_request(serve_metrics *s, serve_endpoint ep, int status, double seconds) {
    pthread_mutex_lock(&s->mu);
    s->requests[ep]++;
    if (status >= 400) s->errors[ep]++;
    if (status >= 100 && status < 600) s->by_status[status / 100]++;
    int b = 0;
    while (b < SERVE_N_BUCKETS && seconds > BUCKETS[b]) b++;
    s->latency[ep][b]++;
    s->latency_sum[ep] += seconds;
    pthread_mutex_unlock(&s->mu);
}

void serve_metrics_tokens(serve_metrics *s, uint64_t prompt, uint64_t completion, uint64_t texts) {
    pthread_mutex_lock(&s->mu);
    s->prompt_tokens += prompt, s->completion_tokens += completion, s->embedded_texts += texts;
    pthread_mutex_unlock(&s->mu);
}

void serve_metrics_batch(serve_metrics *s, int requests) {
    pthread_mutex_lock(&s->mu);
    s->batches++, s->batched_requests += (uint64_t)requests;
    pthread_mutex_unlock(&s->mu);
}

void serve_metrics_step(serve_metrics *s, int rows) {
    int b = 0; /* 1, 2, 3-4, 5-8, ..., 65+ */
    while (b < 7 && rows > (1 << b)) b++;
    pthread_mutex_lock(&s->mu);
    s->steps++, s->step_rows += (uint64_t)rows, s->step_sizes[b]++;
    pthread_mutex_unlock(&s->mu);
}

typedef struct {
    char *buf;
    size_t len, cap;
    int failed;
} text;

static void put(text *t, const char *fmt, ...) {
    va_list ap;
    for (;;) {
        va_start(ap, fmt);
        int k = t->failed ? 0 : vsnprintf(t->buf + t->len, t->cap - t->len, fmt, ap);
        va_end(ap);
        if (t->failed || k < 0) {
            t->failed = 1;
            return;
        }
        if ((size_t)k < t->cap - t->len) {
            t->len += (size_t)k;
            return;
        }
        size_t cap = t->cap * 2 + (size_t)k;
        char *b = realloc(t->buf, cap);
        if (!b) {
            t->failed = 1;
            return;
        }
        t->buf = b, t->cap = cap;
    }
}

static void histograms(text *t, const serve_metrics *s) {
    put(t, "# HELP tformer_request_duration_seconds Time from a request's arrival to the end of its reply (a "
           "stream: its last event).\n# TYPE tformer_request_duration_seconds histogram\n");
    for (int e = 0; e < EP_COUNT; e++) {
        uint64_t cum = 0;
        for (int b = 0; b < SERVE_N_BUCKETS; b++) {
            cum += s->latency[e][b];
            put(t, "tformer_request_duration_seconds_bucket{endpoint=\"%s\",le=\"%g\"} %llu\n", EP_NAMES[e], BUCKETS[b],
                (unsigned long long)cum);
        }
        cum += s->latency[e][SERVE_N_BUCKETS];
        put(t, "tformer_request_duration_seconds_bucket{endpoint=\"%s\",le=\"+Inf\"} %llu\n", EP_NAMES[e],
            (unsigned long long)cum);
        put(t, "tformer_request_duration_seconds_sum{endpoint=\"%s\"} %.6f\n", EP_NAMES[e], s->latency_sum[e]);
        put(t, "tformer_request_duration_seconds_count{endpoint=\"%s\"} %llu\n", EP_NAMES[e], (unsigned long long)cum);
    }
}

/* Completion steps as a histogram of the completions each stepped (the batch sizes). */
static void steps(text *t, const serve_metrics *s) {
    put(t, "# HELP tformer_completion_step_rows Completions stepped together by each step of the decoder "
           "(continuous batching).\n# TYPE tformer_completion_step_rows histogram\n");
    uint64_t cum = 0;
    for (int b = 0; b < 7; b++)
        cum += s->step_sizes[b], put(t, "tformer_completion_step_rows_bucket{le=\"%d\"} %llu\n", 1 << b, (unsigned long long)cum);
    cum += s->step_sizes[7];
    put(t, "tformer_completion_step_rows_bucket{le=\"+Inf\"} %llu\ntformer_completion_step_rows_sum %llu\n"
           "tformer_completion_step_rows_count %llu\n", (unsigned long long)cum, (unsigned long long)s->step_rows,
        (unsigned long long)s->steps);
    put(t, "# HELP tformer_completions_queued Completions waiting for a row (at most --max-queue).\n"
           "# TYPE tformer_completions_queued gauge\ntformer_completions_queued %d\n"
           "# HELP tformer_completions_running Completions being stepped (at most --max-rows a model).\n"
           "# TYPE tformer_completions_running gauge\ntformer_completions_running %d\n", s->queued, s->stepping);
}

char *serve_metrics_text(serve_metrics *s) {
    text t = {malloc(4096), 0, 4096, 0};
    if (!t.buf) return NULL;
    pthread_mutex_lock(&s->mu);
    put(&t, "# HELP tformer_requests_total Requests answered, by endpoint.\n# TYPE tformer_requests_total counter\n");
    for (int e = 0; e < EP_COUNT; e++)
        put(&t, "tformer_requests_total{endpoint=\"%s\"} %llu\n", EP_NAMES[e], (unsigned long long)s->requests[e]);
    put(&t, "# HELP tformer_errors_total Requests answered with a 4xx or 5xx status, by endpoint.\n"
            "# TYPE tformer_errors_total counter\n");
    for (int e = 0; e < EP_COUNT; e++)
        put(&t, "tformer_errors_total{endpoint=\"%s\"} %llu\n", EP_NAMES[e], (unsigned long long)s->errors[e]);
    put(&t, "# HELP tformer_responses_total Replies by status class.\n# TYPE tformer_responses_total counter\n");
    for (int c = 2; c < 6; c++) put(&t, "tformer_responses_total{code=\"%dxx\"} %llu\n", c, (unsigned long long)s->by_status[c]);
    histograms(&t, s);
    put(&t, "# HELP tformer_prompt_tokens_total Prompt tokens of completions.\n# TYPE tformer_prompt_tokens_total counter\n"
            "tformer_prompt_tokens_total %llu\n", (unsigned long long)s->prompt_tokens);
    put(&t, "# HELP tformer_completion_tokens_total Tokens generated.\n# TYPE tformer_completion_tokens_total counter\n"
            "tformer_completion_tokens_total %llu\n", (unsigned long long)s->completion_tokens);
    put(&t, "# HELP tformer_embedded_texts_total Texts embedded.\n# TYPE tformer_embedded_texts_total counter\n"
            "tformer_embedded_texts_total %llu\n", (unsigned long long)s->embedded_texts);
    put(&t, "# HELP tformer_embedding_batches_total Embedding calls (each answers one or more requests).\n"
            "# TYPE tformer_embedding_batches_total counter\ntformer_embedding_batches_total %llu\n"
            "# HELP tformer_embedding_batched_requests_total Embedding requests answered by those calls "
            "(over batches: the mean batch size).\n# TYPE tformer_embedding_batched_requests_total counter\n"
            "tformer_embedding_batched_requests_total %llu\n", (unsigned long long)s->batches,
            (unsigned long long)s->batched_requests);
    put(&t, "# HELP tformer_requests_in_flight Requests being received, computed or sent.\n"
            "# TYPE tformer_requests_in_flight gauge\ntformer_requests_in_flight %d\n", s->in_flight);
    put(&t, "# HELP tformer_model_calls_running Model calls computing now (at most --parallel).\n"
            "# TYPE tformer_model_calls_running gauge\ntformer_model_calls_running %d\n", s->computing);
    put(&t, "# HELP tformer_connections_open Connections open (--max-connections, and one over while admitted).\n"
            "# TYPE tformer_connections_open gauge\ntformer_connections_open %d\n"
            "# HELP tformer_connections_idle Open connections with no request under way.\n"
            "# TYPE tformer_connections_idle gauge\ntformer_connections_idle %d\n"
            "# HELP tformer_connections_evicted_total Idle connections closed to free a slot for a new one.\n"
            "# TYPE tformer_connections_evicted_total counter\ntformer_connections_evicted_total %llu\n",
        s->conns_open, s->conns_idle, (unsigned long long)s->conns_evicted);
    steps(&t, s);
    pthread_mutex_unlock(&s->mu);
    if (t.failed) return free(t.buf), NULL;
    return t.buf;
}
