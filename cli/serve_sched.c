/* Continuous batching of completions: a thread per model steps every running completion of the
 * model together (tf_model_completions_step, one call a step), lets the waiting ones join between
 * two steps (at most --max-rows running), and drops each one when it ends, fails or its client
 * goes. The library gives each completion what it gives it alone (tf_model_completion_new), so a
 * request's answer does not depend on what else runs with it. At most --max-queue completions
 * wait; past that a request is refused (503) rather than held. */
#include <stdlib.h>
#include <string.h>

#include "serve.h"

struct serve_sched {
    serve *s;
    const tf_model *m;
    pthread_t thread;
    int started, quit;
    pthread_mutex_t mu;
    pthread_cond_t wake, done;
    serve_job *head, *tail; /* waiting, oldest first */
    int waiting;
    serve_job **run;        /* (max_rows) running: touched by the scheduler's thread only */
    tf_completion **live;   /* (max_rows) scratch: those a step takes */
    serve_job **took;       /* (max_rows) scratch: their jobs */
    int n_run;
};

/* The gauges: completions waiting, and running. */
static void gauges(serve *s, int waiting, int running) {
    pthread_mutex_lock(&s->metrics.mu);
    s->metrics.queued += waiting, s->metrics.stepping += running;
    pthread_mutex_unlock(&s->metrics.mu);
}

static void fail(serve_job *j) {
    j->failed = 1;
    snprintf(j->err, sizeof j->err, "%s", tf_error());
}

/* One step of the running completions; a failed one leaves, the others step on. */
static void step(serve_sched *q) {
    int k = 0, bad = 0;
    for (int i = 0; i < q->n_run; i++) {
        serve_job *j = q->run[i];
        if (j->cancel) tf_completion_end(j->c);
        if (!j->failed && !tf_completion_done(j->c)) q->live[k] = j->c, q->took[k++] = j;
    }
    if (!k) return;
    serve_metrics_step(&q->s->metrics, k);
    serve_compute_begin(q->s);
    for (int at = 0; at < k;) {
        int rc = tf_model_completions_step(q->live + at, k - at, &bad);
        int end = rc ? at + bad : k; /* those before a failed one took the step */
        for (int i = at; i < end; i++) {
            serve_job *j = q->took[i];
            if (j->top_logprobs >= 0 && serve_logprobs_add(q->m, j)) tf_set_error("out of memory"), fail(j);
            if (j->on_step) j->on_step(j);
        }
        if (!rc) break;
        fail(q->took[end]);
        at = end + 1;
    }
    serve_compute_end(q->s);
}

/* Done ones out of the running (their waiters told); waiting ones in, up to --max-rows. */
static void admit(serve_sched *q) {
    int kept = 0, ended = 0, joined = 0;
    for (int i = 0; i < q->n_run; i++) {
        serve_job *j = q->run[i];
        if (j->failed || tf_completion_done(j->c)) j->done = 1, ended = 1;
        else q->run[kept++] = j;
    }
    int left = q->n_run - kept;
    q->n_run = kept;
    while (q->head && q->n_run < q->s->o.max_rows) {
        serve_job *j = q->head;
        if (!(q->head = j->next)) q->tail = NULL;
        j->next = NULL, q->waiting--;
        q->run[q->n_run++] = j, joined++;
    }
    if (left || joined) gauges(q->s, -joined, joined - left);
    if (ended) pthread_cond_broadcast(&q->done);
}

static void *scheduler(void *arg) {
    serve_sched *q = arg;
    pthread_mutex_lock(&q->mu);
    for (;;) {
        admit(q);
        while (!q->quit && !q->head && !q->n_run) pthread_cond_wait(&q->wake, &q->mu);
        if (!q->head && !q->n_run) break; /* quit, nothing left */
        admit(q);
        pthread_mutex_unlock(&q->mu);
        step(q);
        pthread_mutex_lock(&q->mu);
    }
    pthread_mutex_unlock(&q->mu);
    return NULL;
}

serve_sched *serve_scheds_new(serve *s) {
    serve_sched *q = calloc((size_t)s->n_models, sizeof *q);
    for (int i = 0; q && i < s->n_models; i++) {
        q[i].s = s, q[i].m = s->models[i].m;
        pthread_mutex_init(&q[i].mu, NULL), pthread_cond_init(&q[i].wake, NULL), pthread_cond_init(&q[i].done, NULL);
        if (!(tf_model_caps(q[i].m) & TF_CAP_GENERATE)) continue;
        size_t rows = (size_t)s->o.max_rows;
        q[i].run = malloc(rows * sizeof *q[i].run), q[i].live = malloc(rows * sizeof *q[i].live);
        q[i].took = malloc(rows * sizeof *q[i].took);
        if (q[i].run && q[i].live && q[i].took && !pthread_create(&q[i].thread, NULL, scheduler, &q[i]))
            q[i].started = 1;
        else {
            s->scheds = q;
            serve_scheds_free(s);
            return NULL;
        }
    }
    return q;
}

void serve_scheds_free(serve *s) {
    serve_sched *q = s->scheds;
    for (int i = 0; q && i < s->n_models; i++) {
        if (q[i].started) {
            pthread_mutex_lock(&q[i].mu);
            q[i].quit = 1;
            pthread_cond_signal(&q[i].wake);
            pthread_mutex_unlock(&q[i].mu);
            pthread_join(q[i].thread, NULL);
        }
        pthread_mutex_destroy(&q[i].mu), pthread_cond_destroy(&q[i].wake), pthread_cond_destroy(&q[i].done);
        free(q[i].run), free(q[i].live), free(q[i].took);
    }
    free(q);
    s->scheds = NULL;
}

int serve_gen_submit(serve *s, const serve_model *sm, serve_job *const *jobs, int n) {
    serve_sched *q = &s->scheds[sm - s->models];
    pthread_mutex_lock(&q->mu);
    int room = q->started && !q->quit && n <= s->o.max_queue - q->waiting;
    for (int i = 0; room && i < n; i++) {
        jobs[i]->next = NULL, jobs[i]->done = 0;
        if (q->tail) q->tail->next = jobs[i];
        else q->head = jobs[i];
        q->tail = jobs[i], q->waiting++;
    }
    if (room) pthread_cond_signal(&q->wake);
    pthread_mutex_unlock(&q->mu);
    if (room) gauges(s, n, 0);
    return room ? 0 : -1;
}

void serve_gen_wait(serve *s, const serve_model *sm, serve_job *const *jobs, int n) {
    serve_sched *q = &s->scheds[sm - s->models];
    pthread_mutex_lock(&q->mu);
    for (int i = 0; i < n; i++)
        while (!jobs[i]->done) pthread_cond_wait(&q->done, &q->mu);
    pthread_mutex_unlock(&q->mu);
}
