/* Padded source batches of the translation decoders (source_batch.h). */
#include <string.h>

#include "../core/core_internal.h"
#include "source_batch.h"
#include "tformer/generate.h"

int tf_source_batch_check(const int *n_src, int n, int context, int *S) {
    if (n < 1) return tf_set_error("translate: a batch of %d sources", n);
    *S = 0;
    for (int r = 0; r < n; r++) {
        if (n_src[r] < 1 || n_src[r] > context)
            return tf_set_error("translate: a source of %d tokens (1 to the context of %d)", n_src[r], context);
        *S = n_src[r] > *S ? n_src[r] : *S;
    }
    return 0;
}

/* Contexts of batches decoded before, kept for the next: a translation
 * decodes batch after batch of much the same sizes, and a new context's
 * memory costs a page fault per 4 KiB touched (a fifth of greedy decoding's
 * time before this pool) and its release a TLB flush. A few are kept (their
 * arenas hold one block each, the last batch's size); the rest are freed. */
enum { POOL = 6 };
static tf_ctx *g_pool[POOL];
static int g_pooled;

static tf_ctx *ctx_take(void) {
    tf_ctx *c = NULL;
#pragma omp critical(tf_source_batch_pool)
    if (g_pooled > 0) c = g_pool[--g_pooled];
    if (c) { /* as tf_ctx_new(0) leaves one, its arena's block kept */
        tf_ctx_reset(c);
        tf_ctx_set_grad(c, 1), tf_ctx_set_training(c, 0), tf_ctx_set_seed(c, 0), tf_ctx_set_precision(c, TF_PRECISION_F32);
        return c;
    }
    return tf_ctx_new(0);
}

static void ctx_give(tf_ctx *c) {
    if (!c) return;
#pragma omp critical(tf_source_batch_pool)
    if (g_pooled < POOL) g_pool[g_pooled++] = c, c = NULL;
    tf_ctx_free(c);
}

void tf_translate_trim(void) {
    tf_ctx *drop[POOL];
    int n = 0;
#pragma omp critical(tf_source_batch_pool)
    while (g_pooled > 0) drop[n++] = g_pool[--g_pooled];
    for (int i = 0; i < n; i++) tf_ctx_free(drop[i]);
    tf_buf_trim();
    tf_arena_trim();
}

int tf_source_batch_init(tf_source_batch *b, const int32_t *const *src, const int *n_src, int R, int S) {
    b->mem_ctx[0] = ctx_take(), b->mem_ctx[1] = ctx_take(), b->step_ctx = ctx_take();
    if (!b->mem_ctx[0] || !b->mem_ctx[1] || !b->step_ctx) return tf_set_error("decoder: out of memory");
    for (int i = 0; i < 2; i++) tf_ctx_set_grad(b->mem_ctx[i], 0);
    tf_ctx_set_grad(b->step_ctx, 0);
    tf_ctx *ctx = b->mem_ctx[0];
    int padded = 0;
    for (int r = 0; r < R; r++) padded |= n_src[r] != S;
    if (!(b->src_ids = tf_tensor_new(ctx, TF_DTYPE_I32, 2, (int64_t[]){R, S}, 0)) ||
        (padded && !(b->src_mask = tf_tensor_new(ctx, TF_DTYPE_I32, 2, (int64_t[]){R, S}, 0))))
        return -1;
    for (int r = 0; r < R; r++) { /* zero-filled: padding is id 0, masked */
        memcpy(tf_i32(b->src_ids) + (size_t)r * (size_t)S, src[r], (size_t)n_src[r] * sizeof **src);
        for (int s = 0; padded && s < n_src[r]; s++) tf_i32(b->src_mask)[(size_t)r * (size_t)S + (size_t)s] = 1;
    }
    return 0;
}

tf_tensor *tf_source_batch_keep(tf_source_batch *b, const tf_tensor *t) {
    if (!t) return NULL;
    if (!tf_is_contiguous(t)) return tf_set_error("decoder: an encoder output is not contiguous"), NULL;
    tf_tensor *k = tf_tensor_new(b->mem_ctx[b->cur], t->dtype, t->ndim, t->shape, 0);
    if (k) memcpy(k->data, t->data, (size_t)tf_numel(t) * tf_dtype_size(t->dtype));
    return k;
}

void tf_source_batch_last(float *logits, float *y, int64_t R, int n, int64_t V) {
    for (int64_t r = 0; r < R; r++) /* in place: row r's source lies at or after row r (n >= 1) */
        if (logits) memcpy(logits + r * V, y + (r * n + n - 1) * V, (size_t)V * sizeof *y);
        else if (n > 1) memmove(y + r * V, y + (r * n + n - 1) * V, (size_t)V * sizeof *y);
}

/* Given back in the reverse order of ctx_take's, so that the next batch's
 * contexts take the same roles (the pool is a stack): the step context,
 * which grows to the encoder's and a step's tensors, stays the step's. */
void tf_source_batch_free(tf_source_batch *b) {
    ctx_give(b->step_ctx), ctx_give(b->mem_ctx[1]), ctx_give(b->mem_ctx[0]);
    memset(b, 0, sizeof *b);
}
