/* Batches of token images for ImageGPT on the shared trainer: the decoder
 * reads the start token and the pixels before each position, and predicts
 * every pixel in raster order. */
#include <stdlib.h>
#include <string.h>

#include "../core/core_internal.h"
#include "tformer/images.h"

typedef struct {
    tf_loader base;
    int32_t *train, *valid; /* (n_train,T), (n_valid,T) */
    int64_t n_train, n_valid;
    int T;
    int32_t sos;
    uint64_t seed;
} tokens_loader;

/* Row b: input = sos then img[0..T-1), targets = img (or -1 for no image). */
static void put_row(const int32_t *img, int32_t sos, int64_t T, int32_t *x, int32_t *y) {
    x[0] = sos;
    for (int64_t t = 0; t < T; t++) {
        if (t + 1 < T) x[t + 1] = img ? img[t] : sos;
        y[t] = img ? img[t] : -1;
    }
}

static int tokens_next(tf_loader *l, tf_ctx *ctx, tf_subset split, uint64_t key, int rows, tf_batch *out) {
    tokens_loader *m = (tokens_loader *)l;
    int64_t T = m->T, val = split == TF_SUBSET_VAL;
    if (val && !m->n_valid) return tf_set_error("data: no validation images");
    tf_tensor *x = tf_tensor_new(ctx, TF_DTYPE_I32, 2, (int64_t[]){rows, T}, 0);  // x: (rows,T)
    tf_tensor *y = tf_tensor_new(ctx, TF_DTYPE_I32, 2, (int64_t[]){rows, T}, 0);  // y: (rows,T)
    if (!x || !y) return -1;
    for (int64_t b = 0; b < rows; b++) {
        const int32_t *img;
        if (val) { /* in order; past the end: ignored rows */
            int64_t i = (int64_t)key * rows + b;
            img = i < m->n_valid ? m->valid + i * T : NULL;
        } else {
            img = m->train + (int64_t)(tf_key(m->seed, key, (uint64_t)b, 0) % (uint64_t)m->n_train) * T;
        }
        put_row(img, m->sos, T, tf_i32(x) + b * T, tf_i32(y) + b * T);
    }
    return tf_batch_set(out, "input_ids", x) || tf_batch_set(out, "targets", y) ? -1 : 0;
}

static void tokens_free(tf_loader *l) {
    tokens_loader *m = (tokens_loader *)l;
    free(m->train), free(m->valid), free(m);
}

static const tf_loader_vt TOKENS_LOADER = {tokens_next, tokens_free};

static int32_t *copy_ids(const int32_t *src, int64_t n, int T) {
    size_t bytes;
    if (!n) return NULL;
    int32_t *p = tf_mul_size((size_t)n * sizeof *src, (size_t)T, &bytes) ? malloc(bytes) : NULL;
    if (p) memcpy(p, src, bytes);
    return p;
}

tf_loader *tf_image_tokens_loader_new(const int32_t *train, int64_t n_train, const int32_t *valid, int64_t n_valid,
                                      int pixels, int32_t sos, uint64_t seed) {
    if (n_train < 1 || pixels < 1 || n_valid < 0)
        return tf_set_error("data: %lld training images of %d pixels: nothing to train on", (long long)n_train, pixels),
               NULL;
    tokens_loader *m = calloc(1, sizeof *m);
    if (!m) return tf_set_error("data: out of memory"), NULL;
    *m = (tokens_loader){{&TOKENS_LOADER}, copy_ids(train, n_train, pixels), copy_ids(valid, n_valid, pixels),
                         n_train, n_valid, pixels, sos, seed};
    if (!m->train || (n_valid && !m->valid)) {
        tokens_free(&m->base);
        return tf_set_error("data: out of memory for %lld token images", (long long)(n_train + n_valid)), NULL;
    }
    return &m->base;
}
