/* The parameter registry: named slots that modules register, filled by
 * initialisation or from a safetensors file. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../ops/quant.h"
#include "../util/util.h"
#include "nn_internal.h"

typedef struct {
    char *name;
    tf_tensor **slot;
    int ndim;
    int64_t shape[TF_MAX_DIMS];
    float init;
    int filled;      /* tf_params_add_filled: every element `init`, whatever its sign */
    tf_quant *quant; /* the int8, float or bf16 copy of *slot (tf_params_quantize), or NULL */
} tf_param_entry;

struct tf_params {
    tf_param_entry *e;
    int n, cap;
    tf_strmap index; /* name -> entry */
    tf_arena *arena; /* the tensors' storage */
    tf_st_file *file; /* the mapped weights some tensors read (tf_params_keep_file), or NULL */
    tf_precision precision; /* of inference (tf_params_set_precision) */
};

tf_params *tf_params_new(void) {
    tf_params *ps = calloc(1, sizeof *ps);
    if (ps && (!(ps->arena = tf_arena_new(0)) || tf_strmap_init(&ps->index, 64))) {
        tf_arena_free(ps->arena);
        free(ps);
        return NULL;
    }
    return ps;
}

void tf_params_free(tf_params *ps) {
    if (!ps) return;
    for (int i = 0; i < ps->n; i++) free(ps->e[i].name), tf_quant_free(ps->e[i].quant);
    free(ps->e);
    tf_strmap_free(&ps->index);
    tf_arena_free(ps->arena);
    tf_st_close(ps->file);
    free(ps);
}

int tf_params_add(tf_params *ps, const char *name, tf_tensor **slot, int ndim,
                  const int64_t *shape, float init) {
    if (ndim < 0 || ndim > TF_MAX_DIMS) return tf_set_error("params: %s has %d dims", name, ndim);
    if (tf_strmap_get(&ps->index, name, strlen(name)) >= 0) return tf_set_error("params: %s registered twice", name);
    if (ps->n == ps->cap) {
        int cap = ps->cap ? 2 * ps->cap : 32;
        tf_param_entry *e = realloc(ps->e, (size_t)cap * sizeof *e);
        if (!e) return tf_set_error("params: out of memory");
        ps->e = e;
        ps->cap = cap;
    }
    tf_param_entry *e = &ps->e[ps->n];
    size_t len = strlen(name) + 1;
    if (!(e->name = malloc(len))) return tf_set_error("params: out of memory");
    memcpy(e->name, name, len);
    e->slot = slot;
    e->ndim = ndim;
    memcpy(e->shape, shape, (size_t)ndim * sizeof *shape);
    e->init = init, e->filled = 0, e->quant = NULL;
    if (tf_strmap_put(&ps->index, name, len - 1, ps->n)) return free(e->name), -1;
    *slot = NULL;
    ps->n++;
    return 0;
}

int tf_params_add_filled(tf_params *ps, const char *name, tf_tensor **slot, int ndim, const int64_t *shape,
                         float value) {
    if (tf_params_add(ps, name, slot, ndim, shape, value)) return -1;
    ps->e[ps->n - 1].filled = 1;
    return 0;
}

int tf_params_add_view(tf_params *dst, const char *prefix, const tf_params *src) {
    for (int i = 0; i < src->n; i++) {
        const tf_param_entry *e = &src->e[i];
        char name[512];
        if ((size_t)snprintf(name, sizeof name, "%s%s", prefix, e->name) >= sizeof name)
            return tf_set_error("params: %s%s: name too long", prefix, e->name);
        tf_tensor *held = *e->slot; /* tf_params_add clears the slot */
        if (tf_params_add(dst, name, e->slot, e->ndim, e->shape, e->init)) return -1;
        *e->slot = held, dst->e[dst->n - 1].filled = e->filled;
    }
    return 0;
}

int tf_params_count(const tf_params *ps) { return ps->n; }
const char *tf_params_name(const tf_params *ps, int i) { return ps->e[i].name; }
tf_tensor *tf_params_tensor(const tf_params *ps, int i) { return *ps->e[i].slot; }

tf_tensor *tf_params_get(const tf_params *ps, const char *name) {
    int32_t i = tf_strmap_get(&ps->index, name, strlen(name));
    return i >= 0 ? *ps->e[i].slot : NULL;
}

static int entry_alloc(tf_params *ps, tf_param_entry *e) {
    *e->slot = tf_tensor_alloc(ps->arena, TF_DTYPE_F32, e->ndim, e->shape, 1);
    if (*e->slot) return 0;
    char why[512]; /* tf_error's buffer is the one written: copy the cause first */
    snprintf(why, sizeof why, "%s", tf_error());
    return tf_set_error("params: cannot allocate %s: %s", e->name, why);
}

tf_tensor *tf_params_set_data(tf_params *ps, int i, float *data) {
    tf_param_entry *e = &ps->e[i];
    if (!data) return *e->slot = tf_tensor_alloc(ps->arena, TF_DTYPE_F32, e->ndim, e->shape, 0);
    tf_tensor *t = tf_arena_alloc(ps->arena, sizeof *t);
    if (!t) return NULL;
    t->dtype = TF_DTYPE_F32, t->ndim = e->ndim, t->data = data;
    int64_t stride = 1;
    for (int d = e->ndim - 1; d >= 0; d--) t->shape[d] = e->shape[d], t->stride[d] = stride, stride *= e->shape[d];
    return *e->slot = t;
}

int tf_params_shape(const tf_params *ps, int i, int64_t *shape) {
    memcpy(shape, ps->e[i].shape, (size_t)ps->e[i].ndim * sizeof *shape);
    return ps->e[i].ndim;
}

void tf_params_keep_file(tf_params *ps, tf_st_file *f) {
    if (ps->file && ps->file != f) tf_st_close(ps->file);
    ps->file = f;
}

int tf_params_alloc(tf_params *ps) {
    for (int i = 0; i < ps->n; i++)
        if (entry_alloc(ps, &ps->e[i])) return -1;
    return 0;
}

int tf_params_init(tf_params *ps, uint64_t seed) {
    for (int i = 0; i < ps->n; i++) {
        tf_param_entry *e = &ps->e[i];
        if (entry_alloc(ps, e)) return -1;
        if (e->filled) {
            for (int64_t j = 0; j < tf_numel(*e->slot); j++) tf_f32(*e->slot)[j] = e->init;
        } else if (e->init > 0) {
            tf_tensor_fill_normal(*e->slot, seed * 1000003u + (uint64_t)i, e->init);
        } else if (e->init < 0) {
            for (int64_t j = 0; j < tf_numel(*e->slot); j++) tf_f32(*e->slot)[j] = 1.0f;
        }
    }
    return 0;
}

void tf_params_zero_grad(tf_params *ps) {
    for (int i = 0; i < ps->n; i++) tf_tensor_zero_grad(*ps->e[i].slot);
}

/* Whether x (n) holds a value that is not finite (exponent bits all ones: inf, NaN): the bits
 * tested without a branch, so the loop is vectorised, in chunks on the free threads. */
static int any_not_finite(const float *x, int64_t n) {
    enum { CHUNK = 1 << 16 };
    int64_t chunks = (n + CHUNK - 1) / CHUNK, bad = 0;
#pragma omp parallel for reduction(+ : bad) schedule(static) if (chunks > 1 && tf_threads_free() > 1)
    for (int64_t c = 0; c < chunks; c++) {
        uint32_t any = 0;
        for (int64_t j = c * CHUNK; j < n && j < (c + 1) * CHUNK; j++) {
            uint32_t u;
            memcpy(&u, x + j, sizeof u);
            any |= (uint32_t)((u & 0x7f800000u) == 0x7f800000u);
        }
        bad += any;
    }
    return bad > 0;
}

int tf_params_check_finite(const tf_params *ps, const char **name) {
    if (name) *name = NULL;
    for (int i = 0; i < ps->n; i++) {
        const tf_tensor *t = *ps->e[i].slot;
        if (!t || t->dtype != TF_DTYPE_F32) continue;
        const float *x = tf_f32(t);
        int64_t n = tf_numel(t), bad = 0, first = -1;
        if (!any_not_finite(x, n)) continue;
        for (int64_t j = 0; j < n; j++) /* where, and how many: only for the error */
            if (!isfinite(x[j])) bad++, first = first < 0 ? j : first;
        if (name) *name = ps->e[i].name;
        return tf_set_error("tensor '%s' holds %s at element %lld (%lld of %lld values not finite)", ps->e[i].name,
                            isnan(x[first]) ? "NaN" : x[first] > 0 ? "inf" : "-inf", (long long)first, (long long)bad,
                            (long long)n);
    }
    return 0;
}

int tf_params_quantize(tf_params *ps, tf_quant_kind kind) {
    if (!ps) return tf_set_error("quantize: no parameters");
    if (kind != TF_QUANT_NONE && kind != TF_QUANT_INT8 && kind != TF_QUANT_F32 && kind != TF_QUANT_BF16)
        return tf_set_error("quantize: unknown kind %d", (int)kind);
    ps->precision = kind == TF_QUANT_INT8 ? TF_PRECISION_INT8 : kind == TF_QUANT_BF16 ? TF_PRECISION_BF16 : TF_PRECISION_F32;
    for (int i = 0; i < ps->n; i++) {
        tf_param_entry *e = &ps->e[i];
        tf_tensor *t = *e->slot;
        if (t && t->quant == e->quant) t->quant = NULL;
        tf_quant_free(e->quant);
        e->quant = NULL;
        /* every matrix: only those a dense product reads are ever built */
        if (kind == TF_QUANT_NONE || !t || t->dtype != TF_DTYPE_F32 || t->ndim != 2) continue;
        int copy = kind == TF_QUANT_F32 ? TF_QUANT_COPY_F32 : kind == TF_QUANT_BF16 ? TF_QUANT_COPY_BF16 : TF_QUANT_COPY_INT8;
        if (!(e->quant = tf_quant_new(t, copy))) return tf_set_error("quantize: out of memory");
        t->quant = e->quant;
    }
    return 0;
}

int tf_params_set_precision(tf_params *ps, tf_precision precision) {
    if (!ps) return tf_set_error("precision: no parameters");
    switch (precision) {
    case TF_PRECISION_F32: return ps->precision == TF_PRECISION_F32 ? 0 : tf_params_quantize(ps, TF_QUANT_NONE);
    case TF_PRECISION_BF16: return tf_params_quantize(ps, TF_QUANT_BF16);
    case TF_PRECISION_INT8: return tf_params_quantize(ps, TF_QUANT_INT8);
    }
    return tf_set_error("precision: unknown value %d", (int)precision);
}

tf_precision tf_params_precision(const tf_params *ps) { return ps ? ps->precision : TF_PRECISION_F32; }

size_t tf_params_quant_bytes(const tf_params *ps) {
    size_t n = 0;
    for (int i = 0; ps && i < ps->n; i++) n += tf_quant_bytes(ps->e[i].quant);
    return n;
}

int tf_params_load(tf_params *ps, const tf_st_file *f, int strict) {
    for (int i = 0; i < ps->n; i++) {
        tf_param_entry *e = &ps->e[i];
        const tf_st_entry *se = tf_st_find(f, e->name);
        if (!se) return tf_set_error("weights: missing tensor '%s'", e->name);
        int same = se->ndim == e->ndim;
        for (int d = 0; same && d < e->ndim; d++) same = se->shape[d] == e->shape[d];
        if (!same) {
            tf_tensor want = {.ndim = e->ndim};
            tf_tensor got = {.ndim = se->ndim};
            memcpy(want.shape, e->shape, sizeof want.shape);
            memcpy(got.shape, se->shape, sizeof got.shape);
            char a[96], b[96];
            return tf_set_error("weights: tensor '%s' has the wrong shape %s, expected %s", e->name,
                                tf_shape_str(&got, a, sizeof a), tf_shape_str(&want, b, sizeof b));
        }
        if (entry_alloc(ps, e) || tf_st_read_f32(f, se, *e->slot)) return -1;
    }
    if (strict)
        for (int i = 0; i < tf_st_count(f); i++) {
            const char *name = tf_st_entry_at(f, i)->name;
            if (!tf_params_get(ps, name))
                return tf_set_error("weights: unexpected tensor '%s'", name);
        }
    return 0;
}

int tf_params_save(const tf_params *ps, const char *path) {
    tf_st_writer *w = tf_st_writer_new();
    if (!w) return tf_set_error("params: out of memory");
    int rc = 0;
    for (int i = 0; i < ps->n && !rc; i++)
        if (*ps->e[i].slot) rc = tf_st_writer_add(w, ps->e[i].name, *ps->e[i].slot);
    if (!rc) rc = tf_st_writer_save(w, path);
    tf_st_writer_free(w);
    return rc;
}
