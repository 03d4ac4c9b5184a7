/* AdamW and SGD, the learning-rate schedule and gradient clipping. Every
 * reduction runs in a fixed order in double, so an update never depends on
 * threads. One optimizer object holds either's state: AdamW's two moments or
 * SGD's momentum buffer (in m), elementwise over a shard [lo, hi). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../ops/kernels.h"
#include "tformer/dist.h"
#include "tformer/schedule.h"
#include "train_internal.h"

struct tf_optim {
    tf_params *ps;
    tf_adamw_config cfg;
    int sgd;           /* SGD (sgd_cfg, momentum buffer in m) instead of AdamW */
    tf_sgd_config sgd_cfg;
    int n_state;       /* state arrays: AdamW 2 (m, v), SGD 1 (its buffer) or 0 (no momentum) */
    float *m, *v;  /* the moments of elements [lo, hi) of the parameters flattened in order */
    float *whole;  /* a shard's writer at a save (tf_optim_gather): every rank's m, then every rank's v */
    int64_t *off;  /* parameter i is elements [off[i], off[i + 1]) of the flattened vector */
    int64_t lo, hi;
    int n;
    int64_t t;
};

/* The object for n_state state arrays over elements [lo, hi). */
static tf_optim *optim_new(tf_params *ps, int n_state, int64_t lo, int64_t hi) {
    tf_optim *o = calloc(1, sizeof *o);
    int n = tf_params_count(ps);
    if (!o || !(o->off = calloc((size_t)n + 1, sizeof *o->off))) {
        tf_optim_free(o);
        return tf_set_error("optimizer: out of memory"), NULL;
    }
    o->ps = ps, o->n = n, o->n_state = n_state;
    for (int i = 0; i < n; i++) o->off[i + 1] = o->off[i] + tf_numel(tf_params_tensor(ps, i));
    o->lo = lo < 0 ? 0 : lo, o->hi = hi < 0 || hi > o->off[n] ? o->off[n] : hi;
    size_t len = o->hi > o->lo ? (size_t)(o->hi - o->lo) : 1;
    if ((n_state > 0 && !(o->m = calloc(len, sizeof *o->m))) || (n_state > 1 && !(o->v = calloc(len, sizeof *o->v)))) {
        tf_optim_free(o);
        return tf_set_error("optimizer: out of memory for the state of %zu parameters", len), NULL;
    }
    return o;
}

tf_optim *tf_adamw_new_shard(tf_params *ps, tf_adamw_config cfg, int64_t lo, int64_t hi) {
    tf_optim *o = optim_new(ps, 2, lo, hi);
    if (o) o->cfg = cfg;
    return o;
}

tf_optim *tf_adamw_new(tf_params *ps, tf_adamw_config cfg) { return tf_adamw_new_shard(ps, cfg, 0, -1); }

tf_optim *tf_sgd_new_shard(tf_params *ps, tf_sgd_config cfg, int64_t lo, int64_t hi) {
    if (!(cfg.momentum >= 0.0f) || !(cfg.weight_decay >= 0.0f) || (cfg.nesterov && cfg.momentum <= 0.0f))
        return tf_set_error("sgd: momentum %g and weight_decay %g must be >= 0, nesterov needs momentum > 0",
                            cfg.momentum, cfg.weight_decay), NULL;
    tf_optim *o = optim_new(ps, cfg.momentum > 0.0f, lo, hi);
    if (o) o->sgd = 1, o->sgd_cfg = cfg;
    return o;
}

tf_optim *tf_sgd_new(tf_params *ps, tf_sgd_config cfg) { return tf_sgd_new_shard(ps, cfg, 0, -1); }

void tf_optim_free(tf_optim *o) {
    if (!o) return;
    free(o->m), free(o->v), free(o->whole), free(o->off), free(o);
}

int64_t tf_optim_steps(const tf_optim *o) { return o->t; }

int64_t tf_optim_state_bytes(const tf_optim *o) { return o->n_state * (o->hi - o->lo) * (int64_t)sizeof(float); }

/* The part of parameter i inside [lo, hi): its first element (in the parameter) and length; 0 when none. */
static int64_t overlap(const tf_optim *o, int i, int64_t *first) {
    int64_t a = o->off[i] > o->lo ? o->off[i] : o->lo, b = o->off[i + 1] < o->hi ? o->off[i + 1] : o->hi;
    *first = a - o->off[i];
    return b > a ? b - a : 0;
}

/* torch.optim.SGD's update of n elements in float, in its order of operations
 * (dampening 0): d = g + wd w; b = d (first step) or momentum b + d; d = b or
 * d + momentum b (nesterov); w -= lr d. */
static void sgd_update(float *w, const float *g, float gs, float *b, int64_t n, const tf_sgd_config *c, float wd,
                       float lr, int first) {
    for (int64_t k = 0; k < n; k++) {
        float gk = g[k] * gs; /* the clip's factor (1: none), as though g were scaled first */
        float d = wd != 0.0f ? gk + wd * w[k] : gk;
        if (b) {
            b[k] = first ? d : c->momentum * b[k] + d;
            d = c->nesterov ? d + c->momentum * b[k] : b[k];
        }
        w[k] -= lr * d;
    }
}

static void sgd_step(tf_optim *o, float lr, float gs) {
    for (int i = 0; i < o->n; i++) {
        tf_tensor *p = tf_params_tensor(o->ps, i);
        int64_t first, len = overlap(o, i, &first);
        if (!len) continue;
        float *w = tf_f32(p) + first, *g = p->grad + first;
        float *b = o->m ? o->m + (o->off[i] + first - o->lo) : NULL;
        float wd = p->ndim >= 2 ? o->sgd_cfg.weight_decay : 0.0f; /* matrices only, as AdamW */
        TF_FOR_CHUNKS(len, i0, n, sgd_update(w + i0, g + i0, gs, b ? b + i0 : NULL, n, &o->sgd_cfg, wd, lr, o->t == 1));
    }
}

void tf_optim_step(tf_optim *o, float lr) { tf_optim_step_scaled(o, lr, 1.0f); }

void tf_optim_step_scaled(tf_optim *o, float lr, float grad_scale) {
    o->t++;
    if (o->sgd) {
        sgd_step(o, lr, grad_scale);
        return;
    }
    const tf_adamw_config *c = &o->cfg;
    double bc1 = 1.0 - pow(c->beta1, (double)o->t), bc2 = 1.0 - pow(c->beta2, (double)o->t);
    const tf_kernels *k = tf_kern();
    for (int i = 0; i < o->n; i++) { /* elementwise: a shard's elements get the bits of the whole update */
        tf_tensor *p = tf_params_tensor(o->ps, i);
        int64_t first, len = overlap(o, i, &first);
        if (!len) continue;
        float *w = tf_f32(p) + first, *g = p->grad + first;
        float *m = o->m + (o->off[i] + first - o->lo), *v = o->v + (o->off[i] + first - o->lo);
        /* weight decay on matrices only (not biases, LayerNorm or other vectors) */
        tf_adamw_coef co = {c->beta1, c->beta2, (float)(1.0 / bc1), (float)(1.0 / bc2), lr, c->eps,
                            p->ndim >= 2 ? lr * c->weight_decay : 0.0f, grad_scale};
        TF_FOR_CHUNKS(len, i0, n, k->adamw(w + i0, g + i0, m + i0, v + i0, n, &co));
    }
}

int tf_optim_gather(tf_optim *o, const size_t *parts) {
    size_t total = (size_t)o->off[o->n];
    int rc = 0;
    free(o->whole), o->whole = NULL;
    if (tf_dist_rank() == 0 && !(o->whole = malloc(((size_t)o->n_state * total + 1) * sizeof *o->whole)))
        rc = tf_set_error("optimizer: out of memory gathering the state of %zu parameters", total);
    if (tf_dist_agree(rc)) return -1;
    float *mine[2] = {o->m, o->v};
    for (int k = 0; k < o->n_state; k++)
        if (tf_dist_gatherv(mine[k], o->whole ? o->whole + k * total : NULL, parts, sizeof(float), 0)) return -1;
    return 0;
}

void tf_optim_release(tf_optim *o) { free(o->whole), o->whole = NULL; }

/* State array k's name for parameter i in checkpoints. */
static void state_name(const tf_optim *o, int k, int i, char *name, size_t n) {
    snprintf(name, n, "%s%s", o->sgd ? "sgd.momentum." : k ? "adam.v." : "adam.m.", tf_params_name(o->ps, i));
}

int tf_optim_save(const tf_optim *o, tf_st_writer *w) {
    char name[300];
    int whole = o->lo == 0 && o->hi == o->off[o->n];
    if (!whole && !o->whole) return tf_set_error("optimizer: this process holds a shard of the state: gather it first");
    const float *m = whole ? o->m : o->whole, *v = whole ? o->v : o->whole + o->off[o->n];
    for (int i = 0; i < o->n; i++) {
        tf_tensor t = *tf_params_tensor(o->ps, i);
        for (int k = 0; k < o->n_state; k++) {
            state_name(o, k, i, name, sizeof name);
            t.data = (float *)(k ? v : m) + o->off[i];
            if (tf_st_writer_add(w, name, &t)) return -1;
        }
    }
    return 0;
}

/* Parameter i's moment k (0: m, 1: v) from the checkpoint: the part in [lo, hi). */
static int load_moment(tf_optim *o, const tf_st_file *f, int i, int k, float *scratch) {
    char name[300];
    state_name(o, k, i, name, sizeof name);
    const tf_st_entry *e = tf_st_find(f, name);
    if (!e) return tf_set_error("checkpoint: missing optimizer state '%s'", name);
    int64_t first, len = overlap(o, i, &first);
    float *dst = (k ? o->v : o->m) + (o->off[i] + first - o->lo);
    tf_tensor t = *tf_params_tensor(o->ps, i);
    t.grad = NULL, t.data = len == tf_numel(&t) ? dst : scratch; /* a part: read whole, keep the part */
    if (tf_st_read_f32(f, e, &t)) return -1;
    if (t.data == scratch && len) memcpy(dst, scratch + first, (size_t)len * sizeof *dst);
    return 0;
}

int tf_optim_load(tf_optim *o, const tf_st_file *f, int64_t steps) {
    int64_t most = 0;
    for (int i = 0; i < o->n; i++) most = o->off[i + 1] - o->off[i] > most ? o->off[i + 1] - o->off[i] : most;
    float *scratch = malloc((size_t)(most ? most : 1) * sizeof *scratch);
    int rc = scratch ? 0 : tf_set_error("optimizer: out of memory");
    for (int i = 0; !rc && i < o->n; i++)
        for (int k = 0; !rc && k < o->n_state; k++) rc = load_moment(o, f, i, k, scratch);
    free(scratch);
    if (!rc) o->t = steps;
    return rc ? -1 : 0;
}

float tf_lr_schedule(tf_schedule kind, int64_t step, int64_t warmup, int64_t max_steps, float lr, float min_lr) {
    if (step < warmup) return lr * (float)(step + 1) / (float)warmup;
    if (kind == TF_SCHEDULE_CONSTANT) return lr;
    /* lr * sqrt(w) * min(s^-0.5, s * w^-1.5) at s = step + 1 > w: the second term ended with the warmup */
    if (kind == TF_SCHEDULE_INVERSE_SQRT)
        return (float)((double)lr * sqrt((double)(warmup > 0 ? warmup : 1) / (double)(step + 1)));
    if (step >= max_steps) return min_lr;
    double ratio = (double)(step - warmup) / (double)(max_steps - warmup > 0 ? max_steps - warmup : 1);
    return min_lr + (float)(0.5 * (1.0 + cos(3.14159265358979323846 * ratio))) * (lr - min_lr);
}

int64_t tf_norm_chunk(int64_t n) { return n / TF_NORM_CHUNKS + 1 > 65536 ? n / TF_NORM_CHUNKS + 1 : 65536; }

/* Sixteen running sums, element k into sum k mod 16, added in order at the end:
 * a fixed order (the same on every thread count and rank), and independent
 * chains the compiler turns into vector adds (one chain was bound by the add's
 * latency: 4% of a GPT-2 training step). */
double tf_squares(const float *x, int64_t n) {
    double acc[16] = {0};
    int64_t k = 0;
    for (; k + 16 <= n; k += 16)
        for (int j = 0; j < 16; j++) acc[j] += (double)x[k + j] * x[k + j];
    for (int j = 0; k < n; k++, j++) acc[j] += (double)x[k] * x[k];
    double s = 0.0;
    for (int j = 0; j < 16; j++) s += acc[j];
    return s;
}

void tf_grad_scale(float *g, int64_t n, float s) {
#pragma omp parallel for schedule(static) if (n > 65536)
    for (int64_t k = 0; k < n; k++) g[k] *= s;
}

/* Sum of squares of x (n) in double, over at most TF_NORM_CHUNKS fixed
 * chunks summed in parallel and then in order: the same on any thread count. */
static double sum_squares(const float *x, int64_t n) {
    int64_t size = tf_norm_chunk(n), chunks = (n + size - 1) / size;
    double part[TF_NORM_CHUNKS];
#pragma omp parallel for schedule(static) if (chunks > 1)
    for (int64_t c = 0; c < chunks; c++) part[c] = tf_squares(x + c * size, (c + 1) * size < n ? size : n - c * size);
    double ss = 0.0;
    for (int64_t c = 0; c < chunks; c++) ss += part[c];
    return ss;
}

float tf_clip_factor(double norm, double max_norm) {
    double s = max_norm / (norm + 1e-6);
    return max_norm > 0 && s < 1.0 ? (float)s : 1.0f;
}

double tf_grad_norm(const tf_params *ps) {
    double ss = 0.0;
    for (int i = 0; i < tf_params_count(ps); i++) {
        const tf_tensor *p = tf_params_tensor(ps, i);
        ss += sum_squares(p->grad, tf_numel(p));
    }
    return sqrt(ss);
}

double tf_clip_grad_norm(tf_params *ps, double max_norm) {
    double norm = tf_grad_norm(ps);
    float s = tf_clip_factor(norm, max_norm);
    if (s < 1.0f) {
        for (int i = 0; i < tf_params_count(ps); i++) {
            tf_tensor *p = tf_params_tensor(ps, i);
            tf_grad_scale(p->grad, tf_numel(p), s);
        }
    }
    return norm;
}
