/* Language-model windows: rows of `context` tokens from a token stream and
 * the tokens one position later (or, for a labelled stream, each token's
 * class), at positions hashed from (seed, key, row, split); the stream's
 * tail is the validation part. */
#include <stdlib.h>
#include <string.h>

#include "../core/core_internal.h"
#include "tformer/data.h"

typedef struct {
    tf_loader base;
    int32_t *ids;
    int32_t *labels; /* (n): each token's class (a labelled stream), or NULL */
    int64_t n, n_train;
    int context;
    uint64_t seed;
} lm_loader;

static int lm_next(tf_loader *l, tf_ctx *ctx, tf_subset split, uint64_t key, int rows, tf_batch *out) {
    lm_loader *m = (lm_loader *)l;
    int64_t T = m->context, val = split == TF_SUBSET_VAL;
    int64_t base = val ? m->n_train : 0, len = val ? m->n - m->n_train : m->n_train;
    tf_tensor *x = tf_tensor_new(ctx, TF_DTYPE_I32, 2, (int64_t[]){rows, T}, 0);  // x: (rows,T)
    tf_tensor *y = tf_tensor_new(ctx, TF_DTYPE_I32, 2, (int64_t[]){rows, T}, 0);  // y: (rows,T)
    if (!x || !y) return -1;
    for (int64_t b = 0; b < rows; b++) {
        int64_t off = base + (int64_t)(tf_key(m->seed, key, (uint64_t)b, (uint64_t)val) % (uint64_t)(len - T - 1));
        memcpy(tf_i32(x) + b * T, m->ids + off, (size_t)T * sizeof(int32_t));
        memcpy(tf_i32(y) + b * T, m->labels ? m->labels + off : m->ids + off + 1, (size_t)T * sizeof(int32_t));
    }
    return tf_batch_set(out, "input_ids", x) || tf_batch_set(out, m->labels ? "labels" : "targets", y) ? -1 : 0;
}

static void lm_free(tf_loader *l) {
    lm_loader *m = (lm_loader *)l;
    free(m->ids), free(m->labels), free(m);
}

static const tf_loader_vt LM_LOADER = {lm_next, lm_free};

static tf_loader *loader_new(const int32_t *ids, const int32_t *labels, int64_t n, float val_fraction, int context,
                             uint64_t seed, int32_t *take) {
    int64_t T = context, n_val = (int64_t)((double)n * val_fraction);
    if (!(val_fraction > 0.0f && val_fraction < 1.0f) || context < 1)
        return free(take), tf_set_error("data: val_fraction %g must lie in (0,1) and context %d be positive", val_fraction,
                            context), NULL;
    if (n - n_val < T + 2 || n_val < T + 2)
        return free(take), tf_set_error("data: %lld tokens are too few: with val_fraction %g and context %lld, at least %lld are needed",
                            (long long)n, val_fraction, (long long)T,
                            (long long)((T + 2) / (val_fraction < 0.5f ? val_fraction : 0.5f)) + 1), NULL;
    lm_loader *m = calloc(1, sizeof *m);
    size_t bytes;
    if (!m || !tf_mul_size((size_t)n, sizeof *ids, &bytes) || !(m->ids = take ? take : malloc(bytes))) {
        free(m), free(take);
        return tf_set_error("data: out of memory for %lld tokens", (long long)n), NULL;
    }
    if (!take) memcpy(m->ids, ids, bytes);
    if (labels && !(m->labels = malloc(bytes))) {
        free(m->ids), free(m);
        return tf_set_error("data: out of memory for %lld tokens", (long long)n), NULL;
    }
    if (labels) memcpy(m->labels, labels, bytes);
    *m = (lm_loader){{&LM_LOADER}, m->ids, m->labels, n, n - n_val, context, seed};
    return &m->base;
}

tf_loader *tf_lm_loader_new(const int32_t *ids, int64_t n, float val_fraction, int context, uint64_t seed) {
    return loader_new(ids, NULL, n, val_fraction, context, seed, NULL);
}

tf_loader *tf_lm_loader_take(int32_t *ids, int64_t n, float val_fraction, int context, uint64_t seed) {
    return loader_new(ids, NULL, n, val_fraction, context, seed, ids);
}

tf_loader *tf_stream_loader_new(const int32_t *ids, const int32_t *labels, int64_t n, float val_fraction, int context,
                                uint64_t seed) {
    return loader_new(ids, labels, n, val_fraction, context, seed, NULL);
}
