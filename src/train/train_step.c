/* A training step and an evaluation, over one process or several.
 *
 * A step is `accum` micro-batches of batch / accum sequences (accum counts
 * every process's: processes x --accum). Micro-batch m of step s is drawn
 * with key s * 1024 + m, its dropout seeded from that key, whoever computes
 * it; process r computes m = r, r + N, r + 2N, ... (N processes). Each
 * micro-batch's gradient starts from zero, and the step's gradient is their
 * sum in the order m = 0, 1, 2, ... (tf_dist_sum: every element added in
 * that order whatever N is), the step's loss the mean of theirs in the same
 * order. So N processes with --accum A give the bits of one process with
 * --accum N x A. Validation batches are dealt out the same way and their
 * losses and metrics summed in batch order. With ZeRO-1 (zero.c) a rank
 * keeps its part of the sum alone, clips and updates that part, and the
 * weights are gathered: the same bits again. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../core/core_internal.h"
#include "tformer/dist.h"
#include "trainer_internal.h"

/* ---------------------------------------------------------------- the split */

int tf_trainer_split(tf_trainer *t, const tf_train_config *cfg) {
    int N = tf_dist_size();
    t->rank = tf_dist_rank(), t->ranks = N, t->writer = t->rank == 0;
    t->cfg = *cfg;
    if (cfg->accum > 1024 / N)
        return tf_set_error("train: %d process%s x accum %d micro-batches per step: at most 1024 micro-batches a step",
                            N, N > 1 ? "es" : "", cfg->accum);
    t->cfg.accum = cfg->accum * N;
    int G = t->cfg.accum;
    if (!t->task->token_batches && cfg->batch % G) {
        if (N > 1)
            return tf_set_error(
                "--batch %d (the global batch: sequences per step over every process) does not "
                "split into %d processes x --accum %d = %d micro-batches of equal size: give a multiple "
                "of %d",
                cfg->batch, N, cfg->accum, G, G);
        return tf_set_error("--batch %d (sequences per step) does not split into --accum %d micro-batches of "
                            "equal size: give a multiple of %d",
                            cfg->batch, G, G);
    }
    t->rows = t->task->token_batches ? cfg->batch : cfg->batch / G;
    int per_eval = (cfg->eval_batches + N - 1) / N;
    size_t n = 0;
    for (int i = 0; i < tf_params_count(t->ps); i++) n += (size_t)tf_numel(tf_params_tensor(t->ps, i));
    /* ZeRO-1 with one process has nothing to shard: the same run; the one process's settings have zero 0 */
    t->cfg.zero = 0;
    if (cfg->zero && N > 1 && !(t->zero = tf_zero_new(t->ps, t->rank, N))) return -1;
    t->sum_n = n;
    if (G > 1 && !(t->sum = tf_dist_sum_new(n, t->zero ? tf_zero_parts(t->zero) : NULL))) return -1;
    t->losses = malloc((size_t)cfg->accum * sizeof *t->losses);
    t->all_losses = malloc((size_t)G * sizeof *t->all_losses);
    t->eval_mine = malloc((size_t)per_eval * sizeof *t->eval_mine);
    t->eval_all = malloc((size_t)per_eval * (size_t)N * sizeof *t->eval_all);
    if (!t->losses || !t->all_losses || !t->eval_mine || !t->eval_all) return tf_set_error("train: out of memory");
    return 0;
}

void tf_trainer_split_free(tf_trainer *t) {
    tf_dist_sum_free(t->sum);
    tf_zero_free(t->zero);
    free(t->losses), free(t->all_losses), free(t->eval_mine), free(t->eval_all);
}

/* ---------------------------------------------------------------- micro-batches */

/* Forward (and backward, scaled) of the batch drawn for key k. */
static int micro_step(tf_trainer *t, tf_subset subset, uint64_t k, int train, float grad_scale, double *loss,
                      tf_metrics *m) {
    tf_ctx *ctx = t->ctx;
    tf_ctx_reset(ctx);
    tf_ctx_set_training(ctx, train);
    tf_ctx_set_grad(ctx, train);
    tf_ctx_set_seed(ctx, tf_key(t->cfg.seed, k, 0xD0, 1));
    tf_batch b;
    memset(&b, 0, sizeof b);
    if (t->task->vt->batch(t->task, ctx, subset, k, t->rows, &b)) return -1;
    tf_tensor *l = t->task->vt->loss(t->task, ctx, &b, m);
    if (!l) return -1;
    if (train) {
        tf_tensor *g = tf_tensor_new(ctx, TF_DTYPE_F32, 0, NULL, 0);
        if (!g) return -1;
        tf_f32(g)[0] = grad_scale;
        if (tf_backward(ctx, l, g)) return -1;
    }
    *loss = tf_f32(l)[0];
    return 0;
}

/* Elements [lo, lo + len) of the parameters flattened in order -- their
 * gradients, or with data their values -- into flat (out), or from it. */
static void flat_copy(tf_params *ps, float *flat, size_t lo, size_t len, int data, int out) {
    size_t off = 0; /* parameter i's first element */
    for (int i = 0; i < tf_params_count(ps) && len; i++) {
        tf_tensor *p = tf_params_tensor(ps, i);
        size_t n = (size_t)tf_numel(p);
        if (off + n > lo) {
            size_t first = lo - off, k = n - first < len ? n - first : len;
            float *x = (data ? tf_f32(p) : p->grad) + first;
            memcpy(out ? flat : x, out ? x : flat, k * sizeof *flat);
            flat += k, lo += k, len -= k;
        }
        off += n;
    }
}

/* ---------------------------------------------------------------- a step */

/* This rank's micro-batches, each gradient added onto the step's sum; the
 * parameters' gradients end as the sum, every rank's micro-batch losses in t->all_losses. */
static int step_gradient(tf_trainer *t, int64_t step) {
    int G = t->cfg.accum, per = G / t->ranks;
    for (int a = 0; a < per; a++) {
        double l = 0;
        tf_params_zero_grad(t->ps);
        int rc = micro_step(t, TF_SUBSET_TRAIN, (uint64_t)step * 1024 + (uint64_t)(a * t->ranks + t->rank), 1,
                            1.0f / (float)G, &l, NULL);
        if (tf_dist_agree(rc)) return -1;
        t->losses[a] = (float)l; /* a float's value: exact */
        if (G == 1) break;       /* the gradients are the step's */
        flat_copy(t->ps, tf_dist_sum_input(t->sum), 0, t->sum_n, 0, 1);
        tf_dist_sum_add(t->sum, a == 0);
    }
    size_t lo, len;
    const float *part = G > 1 && t->zero ? tf_dist_sum_part(t->sum, &lo, &len) : NULL;
    if (part) /* ZeRO: this rank's part of the sum alone */
        flat_copy(t->ps, (float *)part, lo, len, 0, 0);
    else if (G > 1)
        flat_copy(t->ps, (float *)tf_dist_sum_result(t->sum), 0, t->sum_n, 0, 0);
    return tf_dist_allgather(t->losses, (size_t)per * sizeof *t->losses, t->all_losses);
}

int tf_trainer_step(tf_trainer *t, int64_t step, tf_train_report *rep) {
    const tf_train_config *c = &t->cfg;
    if (step_gradient(t, step)) return -1;
    int per = c->accum / t->ranks;
    double loss = 0;
    for (int m = 0; m < c->accum; m++) /* rank m % N computed micro-batch m as its (m / N)-th */
        loss += (double)t->all_losses[(m % t->ranks) * per + m / t->ranks] / c->accum;
    float scale = 1.0f; /* the clip's factor, folded into the optimizer's step (one pass over the gradients less) */
    if (t->zero ? tf_zero_clip(t->zero, t->ps, c->grad_clip, &rep->grad_norm, &scale)
                : ((rep->grad_norm = tf_grad_norm(t->ps)), scale = tf_clip_factor(rep->grad_norm, c->grad_clip), 0))
        return -1;
    rep->lr = tf_lr_schedule(c->schedule, step, c->warmup, c->steps, c->lr, c->min_lr);
    rep->loss = (float)loss;
    if (!isfinite(loss) || !isfinite(rep->grad_norm)) /* before the update: the weights stay finite */
        return tf_set_error("train: diverged at step %lld: loss %g, gradient norm %g (lr %g); the last checkpoint "
                            "is intact — lower lr or lengthen the warmup",
                            (long long)step + 1, loss, rep->grad_norm, rep->lr);
    tf_optim_step_scaled(t->opt, rep->lr, scale);
    if (t->zero) { /* every rank's updated part of the weights to every rank */
        size_t lo, len;
        float *part = tf_dist_sum_part(t->sum, &lo, &len);
        flat_copy(t->ps, part, lo, len, 1, 1);
        flat_copy(t->ps, (float *)tf_dist_sum_result(t->sum), 0, t->sum_n, 1, 0);
    }
    return t->task->vt->after_step ? t->task->vt->after_step(t->task, step + 1) : 0; /* an EMA of the weights */
}

/* ---------------------------------------------------------------- evaluation */

int tf_trainer_evaluate(tf_trainer *t, double *loss, tf_metrics *m) {
    int E = t->cfg.eval_batches, N = t->ranks, per = (E + N - 1) / N, rc = 0;
    for (int k = 0; k < per && !rc; k++) { /* batch i = k * N + rank */
        tf_eval_row *r = &t->eval_mine[k];
        memset(r, 0, sizeof *r);
        int i = k * N + t->rank;
        tf_metrics bm;
        memset(&bm, 0, sizeof bm);
        if (i >= E) continue;
        rc = micro_step(t, TF_SUBSET_VAL, (uint64_t)i, 0, 0, &r->loss, &bm);
        memcpy(r->sum, bm.sum, sizeof r->sum), memcpy(r->count, bm.count, sizeof r->count);
    }
    if (tf_dist_agree(rc) || tf_dist_allgather(t->eval_mine, (size_t)per * sizeof *t->eval_mine, t->eval_all))
        return -1;
    double sum = 0;
    memset(m, 0, sizeof *m);
    for (int i = 0; i < E; i++) {
        const tf_eval_row *r = &t->eval_all[(size_t)(i % N) * (size_t)per + (size_t)(i / N)];
        sum += r->loss;
        for (int j = 0; j < TF_METRICS_MAX; j++) m->sum[j] += r->sum[j], m->count[j] += r->count[j];
    }
    *loss = sum / E;
    return 0;
}

/* ---------------------------------------------------------------- the start-up line */

static void fmt_bytes(double b, char *out, size_t cap) {
    static const char *const UNIT[] = {"B", "kB", "MB", "GB", "TB"};
    int u = 0;
    for (; b >= 1000 && u < 4; u++) b /= 1000;
    snprintf(out, cap, "%.3g %s", b, UNIT[u]);
}

int tf_trainer_describe(const tf_trainer *t, int zero_asked, char *out, size_t cap) {
    int N = t->ranks, G = t->cfg.accum, A = G / N;
    double P = (double)t->sum_n, most = 0, state_lo = 8 * P, state_hi = 0;
    char recv[32], lo[32], hi[32], whole[32];
    fmt_bytes(8 * P, whole, sizeof whole);
    if (N == 1) {
        if (zero_asked)
            snprintf(out, cap, "--zero 1 with one process: nothing to shard (it holds the whole AdamW state, %s; the "
                     "run is the one without --zero)", whole);
        return zero_asked != 0;
    }
    int units = 0; /* ZeRO: the norm's chunk sums, 8 bytes each, gathered to every rank */
    for (int r = 0; t->zero && r < N; r++) units += tf_zero_units(t->zero, r);
    for (int r = 0; r < N; r++) { /* what rank r receives: its part from every other rank each round, then the rest */
        size_t even = t->sum_n / (size_t)N + ((size_t)r < t->sum_n % (size_t)N);
        double c = (double)(t->zero ? tf_zero_parts(t->zero)[r] : even);
        double got = 4 * ((double)A * (N - 1) * c + (P - c));
        if (t->zero) got += 8.0 * (units - tf_zero_units(t->zero, r));
        most = got > most ? got : most;
        state_lo = 8 * c < state_lo ? 8 * c : state_lo, state_hi = 8 * c > state_hi ? 8 * c : state_hi;
    }
    fmt_bytes(most, recv, sizeof recv), fmt_bytes(state_lo, lo, sizeof lo), fmt_bytes(state_hi, hi, sizeof hi);
    int n = snprintf(out, cap,
                     "%d processes x --accum %d = %d micro-batches a step; %.0f parameters: each process receives at "
                     "most %s a step (%d reduce-scatter%s of the gradient, an all-gather of the %s); ",
                     N, A, G, P, recv, A, A > 1 ? "s" : "", t->zero ? "weights" : "gradient");
    if (n < 0 || (size_t)n >= cap) return 1;
    if (t->zero)
        snprintf(out + n, cap - (size_t)n, "ZeRO-1: AdamW state %s to %s a process (%s whole)", lo, hi, whole);
    else
        snprintf(out + n, cap - (size_t)n, "AdamW state %s a process (each holds it whole; --zero 1 shards it)", whole);
    return 1;
}
