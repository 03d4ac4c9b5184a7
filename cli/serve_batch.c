/* Concurrent embedding requests for one model coalesced into one library call: the first request
 * to find no batch being made leads one: it waits a short window for others, takes up to
 * --max-batch requests off the model's queue, embeds their texts at once and hands each its rows.
 * The library pads a call's texts to its longest, so a text's vector in a batch may differ from
 * its vector alone in the last bits (tested: within 1e-6): batching is asked for (--max-batch > 1),
 * never the default. A failed batch is redone one request at a time, so that one bad request fails
 * alone. */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "serve.h"

typedef struct embed_job {
    const char *const *texts;
    int n;
    float *out; /* (n, d), malloc'd: the request's */
    int rc, done;
    char err[768];
    struct embed_job *next;
} embed_job;

struct serve_queue {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    embed_job *head;
    int leading; /* a request is making a batch */
};

serve_queue *serve_queues_new(int n) {
    serve_queue *q = calloc((size_t)n, sizeof *q);
    for (int i = 0; q && i < n; i++) pthread_mutex_init(&q[i].mu, NULL), pthread_cond_init(&q[i].cv, NULL);
    return q;
}

void serve_queues_free(serve_queue *q, int n) {
    for (int i = 0; q && i < n; i++) pthread_mutex_destroy(&q[i].mu), pthread_cond_destroy(&q[i].cv);
    free(q);
}

static void fail(embed_job *j) {
    j->rc = -1;
    snprintf(j->err, sizeof j->err, "%s", tf_error());
}

/* The jobs' texts in one call; each job's rows copied out. On failure each job alone. */
static void run_batch(serve *s, const tf_model *m, embed_job **jobs, int k) {
    size_t total = 0, d = (size_t)tf_model_embed_dim(m);
    for (int i = 0; i < k; i++) total += (size_t)jobs[i]->n;
    const char **texts = k > 1 ? malloc(total * sizeof *texts) : NULL;
    float *e = NULL;
    int rc = -1;
    if (texts) {
        for (int i = 0, at = 0; i < k; at += jobs[i]->n, i++) memcpy(texts + at, jobs[i]->texts, (size_t)jobs[i]->n * sizeof *texts);
        rc = tf_model_embed(m, texts, (int)total, NULL, &e);
    }
    for (size_t i = 0, at = 0; !rc && i < (size_t)k; at += (size_t)jobs[i]->n, i++) {
        size_t bytes = (size_t)jobs[i]->n * d * sizeof *e;
        if (!(jobs[i]->out = malloc(bytes ? bytes : 1))) rc = tf_set_error("embed: out of memory");
        else memcpy(jobs[i]->out, e + at * d, bytes);
    }
    for (int i = 0; rc && i < k; i++) { /* one at a time: a bad request fails alone */
        free(jobs[i]->out), jobs[i]->out = NULL;
        if (tf_model_embed(m, jobs[i]->texts, jobs[i]->n, NULL, &jobs[i]->out)) fail(jobs[i]);
    }
    serve_metrics_batch(&s->metrics, k);
    free(e);
    free(texts);
}

/* Lead one batch: the window, up to max_batch jobs off the queue, the call. */
static void lead(serve *s, serve_queue *q, const tf_model *m) {
    if (s->o.max_batch > 1) nanosleep(&(struct timespec){0, (long)s->o.batch_window_us * 1000}, NULL);
    embed_job *jobs[1024];
    int k = 0;
    pthread_mutex_lock(&q->mu);
    while (q->head && k < s->o.max_batch && k < 1024) jobs[k++] = q->head, q->head = q->head->next;
    pthread_mutex_unlock(&q->mu);
    serve_compute_begin(s);
    run_batch(s, m, jobs, k);
    serve_compute_end(s);
    pthread_mutex_lock(&q->mu);
    for (int i = 0; i < k; i++) jobs[i]->done = 1;
    q->leading = 0;
    pthread_cond_broadcast(&q->cv);
    pthread_mutex_unlock(&q->mu);
}

int serve_embed(serve *s, const serve_model *sm, const char *const *texts, int n, float **out, char *err, size_t n_err) {
    serve_queue *q = &s->queues[sm - s->models];
    embed_job j = {texts, n, NULL, 0, 0, "", NULL};
    pthread_mutex_lock(&q->mu);
    embed_job **at = &q->head;
    while (*at) at = &(*at)->next;
    *at = &j;
    while (!j.done) {
        if (q->leading) {
            pthread_cond_wait(&q->cv, &q->mu);
            continue;
        }
        q->leading = 1;
        pthread_mutex_unlock(&q->mu);
        lead(s, q, sm->m);
        pthread_mutex_lock(&q->mu);
    }
    pthread_mutex_unlock(&q->mu);
    if (j.rc) snprintf(err, n_err, "%s", j.err);
    *out = j.out;
    return j.rc;
}
