/* AdamW, the learning-rate schedule and gradient clipping. Every reduction
 * runs in a fixed order in double, so an update never depends on threads. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../ops/kernels.h"

struct tf_adamw {
    tf_params *ps;
    tf_adamw_config cfg;
    tf_arena *arena;
    float **m, **v; /* per parameter, same size */
    int n;
    int64_t t;
};

tf_adamw *tf_adamw_new(tf_params *ps, tf_adamw_config cfg) {
    tf_adamw *o = calloc(1, sizeof *o);
    int n = tf_params_count(ps);
    if (!o || !(o->arena = tf_arena_new(0)) || !(o->m = calloc((size_t)n + 1, sizeof *o->m)) ||
        !(o->v = calloc((size_t)n + 1, sizeof *o->v))) {
        tf_adamw_free(o);
        return tf_set_error("adamw: out of memory"), NULL;
    }
    o->ps = ps, o->cfg = cfg, o->n = n;
    for (int i = 0; i < n; i++) {
        int64_t k = tf_numel(tf_params_tensor(ps, i));
        size_t bytes = (size_t)k * sizeof(float);
        if (!(o->m[i] = tf_arena_alloc(o->arena, bytes)) || !(o->v[i] = tf_arena_alloc(o->arena, bytes))) {
            tf_adamw_free(o);
            return NULL;
        }
    }
    return o;
}

void tf_adamw_free(tf_adamw *o) {
    if (!o) return;
    tf_arena_free(o->arena);
    free(o->m), free(o->v), free(o);
}

int64_t tf_adamw_steps(const tf_adamw *o) { return o->t; }

void tf_adamw_step(tf_adamw *o, float lr) {
    o->t++;
    const tf_adamw_config *c = &o->cfg;
    double bc1 = 1.0 - pow(c->beta1, (double)o->t), bc2 = 1.0 - pow(c->beta2, (double)o->t);
    const tf_kernels *k = tf_kern();
    for (int i = 0; i < o->n; i++) {
        tf_tensor *p = tf_params_tensor(o->ps, i);
        float *w = tf_f32(p), *g = p->grad, *m = o->m[i], *v = o->v[i];
        /* weight decay on matrices only (not biases, LayerNorm or other vectors) */
        tf_adamw_coef co = {c->beta1, c->beta2, (float)(1.0 / bc1), (float)(1.0 / bc2), lr, c->eps,
                            p->ndim >= 2 ? lr * c->weight_decay : 0.0f};
        TF_FOR_CHUNKS(tf_numel(p), i0, len, k->adamw(w + i0, g + i0, m + i0, v + i0, len, &co));
    }
}

int tf_adamw_save(const tf_adamw *o, tf_st_writer *w) {
    char name[300];
    for (int i = 0; i < o->n; i++) {
        tf_tensor t = *tf_params_tensor(o->ps, i);
        for (int k = 0; k < 2; k++) {
            snprintf(name, sizeof name, "adam.%c.%s", k ? 'v' : 'm', tf_params_name(o->ps, i));
            t.data = k ? o->v[i] : o->m[i];
            if (tf_st_writer_add(w, name, &t)) return -1;
        }
    }
    return 0;
}

int tf_adamw_load(tf_adamw *o, const tf_st_file *f, int64_t steps) {
    char name[300];
    for (int i = 0; i < o->n; i++) {
        tf_tensor t = *tf_params_tensor(o->ps, i);
        for (int k = 0; k < 2; k++) {
            snprintf(name, sizeof name, "adam.%c.%s", k ? 'v' : 'm', tf_params_name(o->ps, i));
            const tf_st_entry *e = tf_st_find(f, name);
            t.data = k ? o->v[i] : o->m[i];
            t.grad = NULL;
            if (!e) return tf_set_error("checkpoint: missing optimizer state '%s'", name);
            if (tf_st_read_f32(f, e, &t)) return -1;
        }
    }
    o->t = steps;
    return 0;
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

/* Sum of squares of x (n) in double, over at most 1024 fixed chunks summed
 * in parallel and then in order: the same on any thread count. */
static double sum_squares(const float *x, int64_t n) {
    enum { MAX_CHUNKS = 1024 };
    int64_t size = n / MAX_CHUNKS + 1 > 65536 ? n / MAX_CHUNKS + 1 : 65536, chunks = (n + size - 1) / size;
    double part[MAX_CHUNKS];
#pragma omp parallel for schedule(static) if (chunks > 1)
    for (int64_t c = 0; c < chunks; c++) {
        double s = 0.0;
        for (int64_t k = c * size; k < n && k < (c + 1) * size; k++) s += (double)x[k] * x[k];
        part[c] = s;
    }
    double ss = 0.0;
    for (int64_t c = 0; c < chunks; c++) ss += part[c];
    return ss;
}

double tf_clip_grad_norm(tf_params *ps, double max_norm) {
    double ss = 0.0;
    for (int i = 0; i < tf_params_count(ps); i++) {
        tf_tensor *p = tf_params_tensor(ps, i);
        ss += sum_squares(p->grad, tf_numel(p));
    }
    double norm = sqrt(ss);
    if (max_norm > 0 && norm > max_norm) {
        float s = (float)(max_norm / (norm + 1e-6));
        for (int i = 0; i < tf_params_count(ps); i++) {
            tf_tensor *p = tf_params_tensor(ps, i);
            float *g = p->grad;
#pragma omp parallel for schedule(static) if (tf_numel(p) > 65536)
            for (int64_t k = 0; k < tf_numel(p); k++) g[k] *= s;
        }
    }
    return norm;
}
