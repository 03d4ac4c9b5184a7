/* tformer serve: an OpenAI-compatible HTTP server over the model handle (tformer/model.h).
 * serve_http.c: the daemon (libmicrohttpd, a thread per connection), limits, the API key,
 * dispatch and shutdown; serve_api.c: the JSON endpoints; serve_stream.c: completions as
 * server-sent events; serve_metrics.c: the counters /metrics shows. docs/serve.md. */
#ifndef TF_CLI_SERVE_H
#define TF_CLI_SERVE_H

#include <pthread.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "tformer.h"

enum { SERVE_MAX_LOGPROBS = 5 };    /* the likeliest alternatives a token's logprobs may list (OpenAI's bound) */
enum { SERVE_MAX_ATTENTION = 256 }; /* tokens of /v1/attention's text */

typedef struct {
    const char *host;   /* the address bound: 127.0.0.1 unless told otherwise */
    int port;           /* 0: any free port (serve_port says which) */
    const char *api_key; /* NULL: no key asked */
    int parallel;       /* model calls computed at once (requests wait their turn) */
    int max_batch;      /* embedding requests coalesced into one call */
    int batch_window_us; /* how long a batch waits for more requests */
    size_t max_body;    /* bytes of a request's body (413 past it) */
    int max_tokens;     /* new tokens a completion may ask */
    int max_inputs;     /* texts per request */
    size_t max_input;   /* bytes of one text */
    int max_n;          /* completions per request (n) */
    int timeout;        /* seconds to send a request and to answer it (MHD's timeout of a connection with a request under way) */
    int header_timeout; /* seconds a connection with no request under way may stay silent (at most timeout) */
    int max_connections; /* open at once; a newcomer past them closes the connection idle longest */
    int max_rows;       /* completions stepped together (continuous batching) */
    int max_queue;      /* completions waiting for a row (503 past it) */
} serve_opts;

typedef struct {
    char *name; /* the model's id */
    tf_model *m;
} serve_model;

/* ---------------------------------------------------------------- metrics (serve_metrics.c) */

enum { SERVE_N_BUCKETS = 12 };
typedef enum { EP_HEALTH, EP_METRICS, EP_MODELS, EP_EMBEDDINGS, EP_COMPLETIONS, EP_TRANSLATIONS, EP_FILL_MASK,
               EP_CLASSIFICATIONS, EP_CAPTIONS, EP_ATTENTION, EP_PAGE, EP_OTHER, EP_COUNT } serve_endpoint;
typedef struct {
    pthread_mutex_t mu;
    uint64_t requests[EP_COUNT], errors[EP_COUNT];
    uint64_t by_status[6]; /* 2xx .. 5xx by hundreds, index status / 100 */
    uint64_t latency[EP_COUNT][SERVE_N_BUCKETS + 1];
    double latency_sum[EP_COUNT];
    uint64_t prompt_tokens, completion_tokens, embedded_texts;
    uint64_t batches, batched_requests; /* embedding calls, and the requests they answered */
    uint64_t steps, step_rows;          /* completion steps, and the completions they stepped */
    uint64_t step_sizes[8];             /* steps by completions stepped: 1, 2, 3-4, 5-8, ... 65+ */
    int in_flight, computing, queued, stepping; /* queued: completions waiting; stepping: being stepped */
    int conns_open, conns_idle;         /* connections open, and those with no request under way */
    uint64_t conns_evicted;             /* idle connections closed to free a slot (--max-connections) */
} serve_metrics;

void serve_metrics_init(serve_metrics *s);
void serve_metrics_request(serve_metrics *s, serve_endpoint ep, int status, double seconds);
void serve_metrics_batch(serve_metrics *s, int requests);
void serve_metrics_tokens(serve_metrics *s, uint64_t prompt, uint64_t completion, uint64_t texts);
/* One completion step of rows completions. */
void serve_metrics_step(serve_metrics *s, int rows);
/* The Prometheus text (malloc'd), or NULL. */
char *serve_metrics_text(serve_metrics *s);
serve_endpoint serve_endpoint_of(const char *url);
/* The endpoint's path ("/v1/embeddings"). */
const char *serve_endpoint_name(serve_endpoint ep);

/* ---------------------------------------------------------------- the server */

typedef struct serve_queue serve_queue; /* a model's embedding requests waiting for a batch (serve_batch.c) */
typedef struct serve_sched serve_sched; /* a model's completions stepped together (serve_sched.c) */
typedef struct serve_conn serve_conn;   /* an open connection (serve_http.c) */

typedef struct serve {
    serve_opts o;
    serve_model *models;
    int n_models;
    sem_t compute;           /* parallel model calls at once */
    serve_queue *queues;     /* one per model */
    serve_sched *scheds;     /* one per model */
    atomic_int stopping;     /* a signal came: 503 to new requests */
    int listen_fd;           /* MHD_quiesce_daemon's socket (MHD_INVALID_SOCKET: none) */
    serve_metrics metrics;   /* its mutex also guards the idle list */
    serve_conn *idle_head, *idle_tail; /* connections with no request under way, the longest idle first */
    int conns_closing;       /* of those open, the ones closed for a newcomer, not yet gone */
    pthread_t reaper;        /* closes an idle connection once one may go, while more than --max-connections are open */
    pthread_cond_t reaper_cv;
    int reaper_stop;
    struct MHD_Daemon *d;
    long long created;       /* the server's start (Unix seconds): /v1/models' created */
} serve;

/* A reply: a JSON body (malloc'd) and its status, or a prepared streaming response. */
typedef struct {
    int status;
    char *body;
    const char *type;    /* content type; NULL: application/json */
    void *stream;        /* a struct MHD_Response * (serve_stream.c) */
} serve_reply;

/* Start listening; NULL with the reason in err. */
serve *serve_start(const serve_opts *o, serve_model *models, int n_models, char *err, size_t n_err);
int serve_port(const serve *s);
/* Stop taking requests: new connections are refused and a request on an open one gets a 503
 * (shutting_down) from the moment this returns. Those in flight go on. */
void serve_quiesce(serve *s);
/* serve_quiesce, finish the requests in flight, stop. */
void serve_stop(serve *s);

/* OpenAI's error shape into r: {"error": {"message", "type", "param", "code"}}; param, code may be NULL. */
int serve_error(serve_reply *r, int status, const char *param, const char *code, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 5, 6)))
#endif
    ;
/* r's body from a JSON object (consumed); 0 (serve_error and serve_lib_error: -1). */
int serve_json(serve_reply *r, int status, cJSON *obj);
/* The library's error (tf_error()) as status, the model's folder taken off its front. */
int serve_lib_error(serve_reply *r, int status, const tf_model *m, const char *code);
/* 1 when s[0..n) is valid UTF-8. */
int serve_utf8_ok(const char *s, size_t n);
/* The model named by the request's "model" (404 / 400 into r when none), needing cap (422; 0: any). */
const serve_model *serve_find_model(serve *s, const cJSON *req, unsigned cap, serve_reply *r);
/* A text field's check: a string, valid UTF-8, within max_input; 0, or -1 with a 400 in r. */
int serve_check_text(serve *s, const cJSON *v, const char *param, serve_reply *r);
void serve_compute_begin(serve *s);
void serve_compute_end(serve *s);

/* ---------------------------------------------------------------- endpoints (serve_api.c) */

int serve_api(serve *s, serve_endpoint ep, const char *method, const char *body, size_t len, serve_reply *r);
int serve_api_completions(serve *s, const cJSON *req, serve_reply *r); /* serve_complete.c */
int serve_api_classifications(serve *s, const cJSON *req, serve_reply *r); /* serve_images.c */
int serve_api_captions(serve *s, const cJSON *req, serve_reply *r);        /* serve_images.c */
int serve_api_attention(serve *s, const cJSON *req, serve_reply *r);       /* serve_attention.c */
/* GET /: the page (serve_page.c). */
int serve_page(serve_reply *r);

/* ---------------------------------------------------------------- batching (serve_batch.c) */

serve_queue *serve_queues_new(int n);
void serve_queues_free(serve_queue *q, int n);
/* tf_model_embed of the texts, in a batch with the model's other waiting requests; -1 with the
 * library's message in err. *out: (n, dim) floats, malloc'd. */
int serve_embed(serve *s, const serve_model *sm, const char *const *texts, int n, float **out, char *err, size_t n_err);
/* serve_error with msg, the model's folder taken off its front. */
int serve_msg_error(serve_reply *r, int status, const tf_model *m, const char *code, const char *msg);

/* ---------------------------------------------------------------- continuous batching (serve_sched.c) */

/* A completion handed to its model's scheduler: a thread that steps every running completion of
 * the model together (tf_model_completions_step), lets waiting ones join between steps (at most
 * --max-rows at once) and lets each leave when it ends or its client goes. */
typedef struct serve_job serve_job;
struct serve_job {
    tf_completion *c;                     /* the caller's; stepped by the scheduler until done */
    void (*on_step)(serve_job *j);        /* NULL, or called on the scheduler's thread after each step j took */
    void *user;
    int top_logprobs;                     /* -1: no logprobs kept; else the alternatives kept per token */
    cJSON *logprobs;                      /* OpenAI's logprobs object, kept as the steps go (top_logprobs >= 0) */
    size_t offset;                        /* the next token's text_offset in characters (the echoed prompt's first) */
    atomic_int cancel;                    /* the client went away: ended at the next step */
    int done, failed;
    char err[768];                        /* failed: the library's message */
    serve_job *next;
};
serve_sched *serve_scheds_new(serve *s);
/* Stop the schedulers (after the requests in flight are answered). */
void serve_scheds_free(serve *s);
/* Queue n jobs of model sm at once; -1 (nothing queued) when the queue has no room for them. */
int serve_gen_submit(serve *s, const serve_model *sm, serve_job *const *jobs, int n);
/* Until every one of the n jobs is done. */
void serve_gen_wait(serve *s, const serve_model *sm, serve_job *const *jobs, int n);

/* ---------------------------------------------------------------- streaming (serve_stream.c) */

/* A completion streamed as server-sent events: r->stream gets the response (the model's scheduler
 * steps it; a thread waits for its end); c is taken (freed with the stream). */
int serve_stream_start(serve *s, const serve_model *sm, tf_completion *c, int top_logprobs, serve_reply *r);
/* OpenAI's logprobs of the job's last step appended to j->logprobs (tokens, token_logprobs,
 * top_logprobs, text_offset); 0, or -1 out of memory. */
int serve_logprobs_add(const tf_model *m, serve_job *j);

#endif
