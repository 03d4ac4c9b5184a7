/* A completion as server-sent events: the model's scheduler steps it with the others
 * (serve_sched.c) and each step's new text goes as a "data: {chunk}" event into a buffer that
 * libmicrohttpd's reader drains on the connection's own thread; a thread waits for its end, then
 * the last chunk carries finish_reason, then "data: [DONE]". A client that goes away ends the
 * completion at the next step. */
#include <microhttpd.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "serve.h"

typedef struct {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    char *buf;
    size_t len, cap, sent; /* bytes written, room, bytes handed to the connection */
    int done, failed_alloc;
    atomic_int cancel; /* the client went away */
    pthread_t thread;
    serve *s;
    const serve_model *sm;
    serve_job job;       /* job.c: the completion */
    char id[48];
    long long created;
    uint64_t pieces;
} sse;

/* Append bytes (under the lock); the buffer shrinks as the connection drains it. */
static void push(sse *e, const char *p, size_t n) {
    pthread_mutex_lock(&e->mu);
    if (e->sent) { /* drop what is sent */
        memmove(e->buf, e->buf + e->sent, e->len - e->sent);
        e->len -= e->sent, e->sent = 0;
    }
    if (n > e->cap - e->len) {
        size_t cap = e->cap ? e->cap : 1024;
        while (cap - e->len < n && cap < SIZE_MAX / 2) cap *= 2;
        char *b = cap - e->len >= n ? realloc(e->buf, cap) : NULL;
        if (!b) e->failed_alloc = 1;
        else e->buf = b, e->cap = cap;
    }
    if (!e->failed_alloc) memcpy(e->buf + e->len, p, n), e->len += n;
    pthread_cond_signal(&e->cv);
    pthread_mutex_unlock(&e->mu);
}

/* One event: "data: " the object's JSON (consumed), a blank line. */
static void event(sse *e, cJSON *o) {
    char *t = o ? cJSON_PrintUnformatted(o) : NULL;
    cJSON_Delete(o);
    if (!t) {
        e->failed_alloc = 1;
        return;
    }
    push(e, "data: ", 6), push(e, t, strlen(t)), push(e, "\n\n", 2);
    free(t);
}

/* A chunk of text; the logprobs kept since the last chunk go with it (taken). */
static cJSON *chunk(sse *e, const char *text, size_t len, const char *finish) {
    cJSON *o = cJSON_CreateObject(), *choices = cJSON_AddArrayToObject(o, "choices"), *c = cJSON_CreateObject();
    char *t = malloc(len + 1);
    if (!choices || !c || !t) return cJSON_Delete(o), cJSON_Delete(c), free(t), NULL;
    memcpy(t, text, len), t[len] = 0;
    cJSON_AddStringToObject(o, "id", e->id);
    cJSON_AddStringToObject(o, "object", "text_completion");
    cJSON_AddNumberToObject(o, "created", (double)e->created);
    cJSON_AddStringToObject(o, "model", e->sm->name);
    cJSON_AddStringToObject(c, "text", t);
    free(t);
    cJSON_AddNumberToObject(c, "index", 0);
    if (e->job.logprobs) cJSON_AddItemToObject(c, "logprobs", e->job.logprobs), e->job.logprobs = NULL;
    else cJSON_AddNullToObject(c, "logprobs");
    if (finish) cJSON_AddStringToObject(c, "finish_reason", finish);
    else cJSON_AddNullToObject(c, "finish_reason");
    cJSON_AddItemToArray(choices, c);
    return o;
}

/* After each step (the scheduler's thread): its new text as an event. */
static void on_step(serve_job *j) {
    sse *e = j->user;
    size_t len, added;
    const char *text = tf_completion_text(j->c, &len, &added);
    if (added) e->pieces++, event(e, chunk(e, text + len - added, added, NULL));
    if (e->cancel || e->failed_alloc) j->cancel = 1;
}

/* The completion's end awaited (it was queued by serve_stream_start), then the last events. */
static void *generate(void *arg) {
    sse *e = arg;
    serve_job *j = &e->job;
    serve_gen_wait(e->s, e->sm, &j, 1);
    if (j->failed) { /* the stream has begun (status 200): the error goes as an event in OpenAI's shape */
        serve_reply r = {0};
        serve_msg_error(&r, 400, e->sm->m, "model_error", j->err);
        if (r.body) push(e, "data: ", 6), push(e, r.body, strlen(r.body)), push(e, "\n\n", 2);
        free(r.body);
    } else {
        int prompt_tokens, k = tf_completion_tokens(j->c, &prompt_tokens);
        serve_metrics_tokens(&e->s->metrics, (uint64_t)prompt_tokens, (uint64_t)k, 0);
        event(e, chunk(e, "", 0, tf_completion_finish(j->c)));
    }
    push(e, "data: [DONE]\n\n", 14);
    pthread_mutex_lock(&e->mu);
    e->done = 1;
    pthread_cond_signal(&e->cv);
    pthread_mutex_unlock(&e->mu);
    return NULL;
}

/* libmicrohttpd asks for the next bytes: wait for them (the connection has its own thread). */
static ssize_t reader(void *cls, uint64_t pos, char *buf, size_t max) {
    sse *e = cls;
    (void)pos;
    pthread_mutex_lock(&e->mu);
    while (e->sent == e->len && !e->done) pthread_cond_wait(&e->cv, &e->mu);
    size_t n = e->len - e->sent;
    if (n > max) n = max;
    memcpy(buf, e->buf + e->sent, n);
    e->sent += n;
    int end = n == 0 && e->done;
    pthread_mutex_unlock(&e->mu);
    return end ? (e->failed_alloc ? MHD_CONTENT_READER_END_WITH_ERROR : MHD_CONTENT_READER_END_OF_STREAM) : (ssize_t)n;
}

static void release(void *cls) {
    sse *e = cls;
    e->job.cancel = 1;
    e->cancel = 1; /* a client gone: the completion ends at the next step */
    pthread_join(e->thread, NULL);
    pthread_mutex_destroy(&e->mu);
    pthread_cond_destroy(&e->cv);
    tf_completion_free(e->job.c), cJSON_Delete(e->job.logprobs);
    free(e->buf), free(e);
}

int serve_stream_start(serve *s, const serve_model *sm, tf_completion *c, int top_logprobs, serve_reply *r) {
    static atomic_uint_fast64_t ids;
    sse *e = calloc(1, sizeof *e);
    if (!e) return tf_completion_free(c), serve_error(r, 500, NULL, NULL, "out of memory"), -1;
    e->s = s, e->sm = sm, e->created = (long long)time(NULL);
    e->job = (serve_job){.c = c, .on_step = on_step, .user = e, .top_logprobs = top_logprobs};
    snprintf(e->id, sizeof e->id, "cmpl-s%llu", (unsigned long long)atomic_fetch_add(&ids, 1));
    pthread_mutex_init(&e->mu, NULL);
    pthread_cond_init(&e->cv, NULL);
    serve_job *j = &e->job;
    int queued = !serve_gen_submit(s, sm, &j, 1); /* before the status is sent: a full queue is a 503 */
    if (!queued || pthread_create(&e->thread, NULL, generate, e)) {
        if (queued) { /* the scheduler lets it go */
            j->cancel = 1;
            serve_gen_wait(s, sm, &j, 1);
        }
        pthread_mutex_destroy(&e->mu), pthread_cond_destroy(&e->cv);
        tf_completion_free(c), cJSON_Delete(j->logprobs), free(e->buf), free(e);
        return queued ? serve_error(r, 500, NULL, NULL, "cannot start a thread")
                      : serve_error(r, 503, NULL, "queue_full", "the queue of completions is full (--max-queue %d): "
                                    "try again later", s->o.max_queue), -1;
    }
    struct MHD_Response *resp = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 4096, reader, e, release);
    if (!resp) return release(e), serve_error(r, 500, NULL, NULL, "out of memory"), -1;
    MHD_add_response_header(resp, "Content-Type", "text/event-stream");
    MHD_add_response_header(resp, "Cache-Control", "no-cache");
    r->stream = resp, r->status = 200;
    return 0;
}
