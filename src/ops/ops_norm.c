/* Row-wise ops over the last dim: masked softmax, layernorm, cross-entropy
 * against class ids and against soft targets. */
#include <math.h>
#include <string.h>

#include "kernels.h"
#include "tformer/ops.h"

/* ---------------------------------------------------------------- softmax */

typedef struct {
    int ndim;                      /* of x */
    int64_t shape[TF_MAX_DIMS];
    int64_t mstride[TF_MAX_DIMS];  /* mask strides broadcast to x's shape */
    tf_dtype mask_dtype;           /* valid when n_in == 2 */
} tf_softmax_params;

/* Offset of the mask at the start of row r (idx is the row's multi-index). */
static int64_t row_mask_offset(const tf_softmax_params *p, const int64_t *idx) {
    int64_t off = 0;
    for (int d = 0; d < p->ndim - 1; d++) off += idx[d] * p->mstride[d];
    return off;
}

/* y (W) = softmax(x + mask) of one row; an all-excluded row gives zeros. */
static void softmax_row(const tf_kernels *k, float *y, const float *x, const void *mask, tf_dtype mdt, int64_t ms,
                        int64_t W) {
    if (!mask) {
        k->softmax(y, x, W);
        return;
    }
    for (int64_t j = 0; j < W; j++) {
        float z = x[j];
        if (mdt == TF_DTYPE_F32) z += ((const float *)mask)[j * ms];
        else if (((const uint8_t *)mask)[j * ms]) z = -INFINITY;
        y[j] = z;
    }
    k->softmax(y, y, W);
}

void tf_op_softmax_forward(tf_node *n) {
    const tf_softmax_params *p = n->params;
    const tf_tensor *m = n->n_in > 1 ? n->in[1] : NULL;
    int64_t W = p->shape[p->ndim - 1], idx[TF_MAX_DIMS] = {0}, r = 0;
    const float *x = tf_f32(n->in[0]);
    float *y = tf_f32(n->out);  // y: x's shape, rows of W
    if (tf_numel(n->out) == 0) return;
    const tf_kernels *k = tf_kern();
    do {
        const void *mrow = m ? (const char *)m->data + row_mask_offset(p, idx) *
                                                           (int64_t)tf_dtype_size(p->mask_dtype)
                             : NULL;
        softmax_row(k, y + r * W, x + r * W, mrow, p->mask_dtype, p->mstride[p->ndim - 1], W);
        r++;
    } while (tf_index_next(idx, p->ndim, p->shape));
}

void tf_op_softmax_backward(tf_node *n) {
    const tf_softmax_params *p = n->params;
    tf_tensor *X = n->in[0], *M = n->n_in > 1 ? n->in[1] : NULL;
    float *gm = M && M->dtype == TF_DTYPE_F32 ? M->grad : NULL;
    int64_t W = p->shape[p->ndim - 1], ms = p->mstride[p->ndim - 1], idx[TF_MAX_DIMS] = {0}, r = 0;
    const float *y = tf_f32(n->out), *g = n->out->grad;
    if (tf_numel(n->out) == 0) return;
    do {
        const float *yr = y + r * W, *gr = g + r * W;
        double dot = 0.0;
        for (int64_t j = 0; j < W; j++) dot += (double)yr[j] * gr[j];
        int64_t mo = row_mask_offset(p, idx);
        for (int64_t j = 0; j < W; j++) {
            float dz = yr[j] * (gr[j] - (float)dot);
            if (X->grad) X->grad[r * W + j] += dz;
            if (gm) gm[mo + j * ms] += dz;
        }
        r++;
    } while (tf_index_next(idx, p->ndim, p->shape));
}

tf_tensor *tf_softmax(tf_ctx *ctx, tf_tensor *x, tf_tensor *mask) {
    if (!x) return NULL;
    if (x->dtype != TF_DTYPE_F32 || x->ndim < 1)
        return tf_set_error("softmax: input must be F32 with at least one dim"), NULL;
    tf_softmax_params *p = tf_ctx_alloc(ctx, sizeof *p);
    if (!p) return NULL;
    p->ndim = x->ndim;
    memcpy(p->shape, x->shape, sizeof p->shape);
    if (mask) {
        char a[64], b[64];
        if (mask->dtype == TF_DTYPE_I32 || tf_bcast_strides(mask, x->ndim, x->shape, p->mstride))
            return tf_set_error("softmax: mask %s does not broadcast to %s (or is not F32/U8)",
                                tf_shape_str(mask, a, sizeof a), tf_shape_str(x, b, sizeof b)), NULL;
        p->mask_dtype = mask->dtype;
    }
    tf_tensor *in[2] = {tf_contiguous(ctx, x), mask};
    return tf_node_run(ctx, tf_node_new(ctx, TF_OP_SOFTMAX, mask ? 2 : 1, in, TF_DTYPE_F32,
                                        x->ndim, x->shape, p));
}

/* ---------------------------------------------------------------- layernorm */

typedef struct {
    float eps;
    int64_t rows, C;
} tf_layernorm_params;

void tf_op_layernorm_forward(tf_node *n) {
    const tf_layernorm_params *p = n->params;
    const float *x = tf_f32(n->in[0]);  // x: (rows, C)
    const float *w = n->in[1] ? tf_f32(n->in[1]) : NULL, *b = n->in[2] ? tf_f32(n->in[2]) : NULL;
    float *y = tf_f32(n->out), *mean = n->saved[0], *rstd = n->saved[1];  // (rows) each
    const tf_kernels *k = tf_kern();
    TF_PARALLEL_FOR(p->rows * p->C > 16384, r, p->rows,
                    k->layernorm(y + r * p->C, mean + r, rstd + r, x + r * p->C, w, b, p->C, p->eps));
}

/* dw (C) += sum over rows of g * xhat, db (C) += sum of g: blocks of columns
 * in parallel, each column summing its rows in order. */
static void layernorm_param_grads(float *dw, float *db, const float *g, const float *x, const float *mean,
                                  const float *rstd, int64_t rows, int64_t C) {
    enum { CB = 64 };
    int64_t blocks = (C + CB - 1) / CB;
#pragma omp parallel for schedule(static) if (tf_threads_free() > 1 && (rows * C > 16384 && blocks > 1))
    for (int64_t bk = 0; bk < blocks; bk++) {
        int64_t j0 = bk * CB, wd = C - j0 < CB ? C - j0 : CB;
        float sw[CB] = {0}, sb[CB] = {0};
        for (int64_t r = 0; r < rows; r++) {
            const float *gr = g + r * C + j0, *xr = x + r * C + j0;
            for (int64_t j = 0; j < wd; j++) sw[j] += gr[j] * (xr[j] - mean[r]) * rstd[r], sb[j] += gr[j];
        }
        for (int64_t j = 0; j < wd; j++) {
            if (dw) dw[j0 + j] += sw[j];
            if (db) db[j0 + j] += sb[j];
        }
    }
}

void tf_op_layernorm_backward(tf_node *n) {
    const tf_layernorm_params *p = n->params;
    tf_tensor *X = n->in[0], *Wt = n->in[1], *Bt = n->in[2];
    const float *x = tf_f32(X), *w = Wt ? tf_f32(Wt) : NULL, *g = n->out->grad;
    const float *mean = n->saved[0], *rstd = n->saved[1];
    float *dw = Wt ? Wt->grad : NULL, *db = Bt ? Bt->grad : NULL;
    if (dw || db) layernorm_param_grads(dw, db, g, x, mean, rstd, p->rows, p->C);
    if (!X->grad) return;
    const tf_kernels *k = tf_kern();
#pragma omp parallel for schedule(static) if (tf_threads_free() > 1 && (p->rows * p->C > 16384))
    for (int64_t r = 0; r < p->rows; r++)
        k->layernorm_grad(X->grad + r * p->C, g + r * p->C, x + r * p->C, w, mean[r], rstd[r], p->C);
}

tf_tensor *tf_layernorm(tf_ctx *ctx, tf_tensor *x, tf_tensor *w, tf_tensor *b, float eps) {
    if (!x) return NULL;
    if (x->dtype != TF_DTYPE_F32 || x->ndim < 1)
        return tf_set_error("layernorm: input must be F32 with at least one dim"), NULL;
    int64_t C = x->shape[x->ndim - 1];
    const tf_tensor *wb[2] = {w, b};
    for (int i = 0; i < 2; i++)
        if (wb[i] && (wb[i]->dtype != TF_DTYPE_F32 || wb[i]->ndim != 1 || wb[i]->shape[0] != C))
            return tf_set_error("layernorm: %s must be F32 of shape (%lld)", i ? "bias" : "weight",
                                (long long)C), NULL;
    if (!(eps >= 0.0f)) return tf_set_error("layernorm: eps = %g must be >= 0", eps), NULL;
    tf_layernorm_params *p = tf_ctx_alloc(ctx, sizeof *p);
    if (!p) return NULL;
    p->eps = eps;
    p->C = C;
    p->rows = C ? tf_numel(x) / C : 0;
    tf_tensor *in[3] = {tf_contiguous(ctx, x), w ? tf_contiguous(ctx, w) : NULL,
                        b ? tf_contiguous(ctx, b) : NULL};
    if (!in[0] || (w && !in[1]) || (b && !in[2])) return NULL;
    /* tf_node_new rejects NULL inputs, so pass x three times and patch the absent ones. */
    tf_tensor *nn_in[3] = {in[0], in[1] ? in[1] : in[0], in[2] ? in[2] : in[0]};
    tf_node *n = tf_node_new(ctx, TF_OP_LAYERNORM, 3, nn_in, TF_DTYPE_F32, x->ndim, x->shape, p);
    if (!n) return NULL;
    n->in[1] = in[1];
    n->in[2] = in[2];
    if (!(n->saved[0] = tf_ctx_floats(ctx, p->rows)) || !(n->saved[1] = tf_ctx_floats(ctx, p->rows)))
        return NULL;
    return tf_node_run(ctx, n);
}

/* ---------------------------------------------------------------- rmsnorm */

/* y = x / sqrt(mean(x^2) + eps) * w over the last dim: no centring, no bias
 * (ImageGPT's "LayerNorm"). The statistics in double, as LayerNorm's; the
 * parameter gradient is LayerNorm's with the mean held at zero. */
void tf_op_rmsnorm_forward(tf_node *n) {
    const tf_layernorm_params *p = n->params;
    const float *x = tf_f32(n->in[0]), *w = n->in[1] ? tf_f32(n->in[1]) : NULL;  // x: (rows,C), w: (C)
    float *y = tf_f32(n->out), *rstd = n->saved[1];                               // y: (rows,C), rstd: (rows)
#pragma omp parallel for schedule(static) if (tf_threads_free() > 1 && (p->rows * p->C > 16384))
    for (int64_t r = 0; r < p->rows; r++) {
        const float *xr = x + r * p->C;
        double ss = 0.0;
        for (int64_t j = 0; j < p->C; j++) ss += (double)xr[j] * xr[j];
        double rs = 1.0 / sqrt(ss / (double)p->C + p->eps);
        rstd[r] = (float)rs;
        for (int64_t j = 0; j < p->C; j++) y[r * p->C + j] = (float)(xr[j] * rs) * (w ? w[j] : 1.0f);
    }
}

/* dx = rstd (dxh - xh mean(dxh xh)), dxh = g w, xh = x rstd: LayerNorm's without the mean(dxh) term. */
void tf_op_rmsnorm_backward(tf_node *n) {
    const tf_layernorm_params *p = n->params;
    tf_tensor *X = n->in[0], *Wt = n->in[1];
    const float *x = tf_f32(X), *w = Wt ? tf_f32(Wt) : NULL, *g = n->out->grad, *rstd = n->saved[1];
    if (Wt && Wt->grad) layernorm_param_grads(Wt->grad, NULL, g, x, n->saved[0], rstd, p->rows, p->C);
    if (!X->grad) return;
#pragma omp parallel for schedule(static) if (tf_threads_free() > 1 && (p->rows * p->C > 16384))
    for (int64_t r = 0; r < p->rows; r++) {
        const float *xr = x + r * p->C, *gr = g + r * p->C;
        double m2 = 0.0;
        for (int64_t j = 0; j < p->C; j++) m2 += (double)gr[j] * (w ? w[j] : 1.0f) * xr[j] * rstd[r];
        float c = (float)(m2 / (double)p->C);
        for (int64_t j = 0; j < p->C; j++)
            X->grad[r * p->C + j] += rstd[r] * (gr[j] * (w ? w[j] : 1.0f) - xr[j] * rstd[r] * c);
    }
}

tf_tensor *tf_rmsnorm(tf_ctx *ctx, tf_tensor *x, tf_tensor *w, float eps) {
    if (!x) return NULL;
    if (x->dtype != TF_DTYPE_F32 || x->ndim < 1) return tf_set_error("rmsnorm: input must be F32 with at least one dim"), NULL;
    int64_t C = x->shape[x->ndim - 1];
    if (w && (w->dtype != TF_DTYPE_F32 || w->ndim != 1 || w->shape[0] != C))
        return tf_set_error("rmsnorm: weight must be F32 of shape (%lld)", (long long)C), NULL;
    if (!(eps >= 0.0f)) return tf_set_error("rmsnorm: eps = %g must be >= 0", eps), NULL;
    tf_layernorm_params *p = tf_ctx_alloc(ctx, sizeof *p);
    if (!p) return NULL;
    p->eps = eps, p->C = C, p->rows = C ? tf_numel(x) / C : 0;
    tf_tensor *in[2] = {tf_contiguous(ctx, x), w ? tf_contiguous(ctx, w) : NULL};
    if (!in[0] || (w && !in[1])) return NULL;
    tf_tensor *nn_in[2] = {in[0], in[1] ? in[1] : in[0]}; /* tf_node_new rejects NULL inputs: patched below */
    tf_node *n = tf_node_new(ctx, TF_OP_RMSNORM, 2, nn_in, TF_DTYPE_F32, x->ndim, x->shape, p);
    if (!n) return NULL;
    n->in[1] = in[1];
    /* saved[0]: zeros, the "mean" layernorm_param_grads subtracts; saved[1]: rstd (rows) */
    if (!(n->saved[0] = tf_ctx_floats(ctx, p->rows)) || !(n->saved[1] = tf_ctx_floats(ctx, p->rows))) return NULL;
    memset(n->saved[0], 0, (size_t)p->rows * sizeof(float));
    return tf_node_run(ctx, n);
}

/* ---------------------------------------------------------------- cross-entropy */

typedef struct {
    int64_t rows, C;
    int ignore_index;
    float smoothing;
    int64_t n_valid;
} tf_ce_params;

void tf_op_cross_entropy_forward(tf_node *n) {
    tf_ce_params *p = n->params;
    const float *x = tf_f32(n->in[0]); // logits: (rows, C)
    const int32_t *t = tf_i32(n->in[1]); // targets: (rows)
    float *prob = n->saved[0], *row_loss = n->saved[1]; // prob: (rows, C), row_loss: (rows)
    const tf_kernels *k = tf_kern();
#pragma omp parallel for schedule(static) if (tf_threads_free() > 1 && (p->rows * p->C > 16384))
    for (int64_t r = 0; r < p->rows; r++) {
        if (t[r] == p->ignore_index) continue;
        const float *xr = x + r * p->C;
        double sum_x;
        float lse = k->softmax_lse(prob + r * p->C, xr, p->C, &sum_x);
        /* label smoothing's term: the mean over classes of -log p = lse - mean(x) */
        double nll = (double)lse - xr[t[r]], smooth = (double)lse - sum_x / (double)p->C;
        row_loss[r] = (float)((1.0 - p->smoothing) * nll + p->smoothing * smooth);
    }
    double loss = 0.0; /* summed in row order: the same on any thread count */
    p->n_valid = 0;
    for (int64_t r = 0; r < p->rows; r++)
        if (t[r] != p->ignore_index) loss += row_loss[r], p->n_valid++;
    tf_f32(n->out)[0] = p->n_valid ? (float)(loss / (double)p->n_valid) : 0.0f;
}

void tf_op_cross_entropy_backward(tf_node *n) {
    const tf_ce_params *p = n->params;
    tf_tensor *X = n->in[0];
    const int32_t *t = tf_i32(n->in[1]);
    const float *prob = n->saved[0];
    if (!X->grad || !p->n_valid) return;
    float g = n->out->grad[0] / (float)p->n_valid, eps_c = p->smoothing / (float)p->C;
#pragma omp parallel for schedule(static) if (tf_threads_free() > 1 && (p->rows * p->C > 16384))
    for (int64_t r = 0; r < p->rows; r++) {
        if (t[r] == p->ignore_index) continue;
        for (int64_t j = 0; j < p->C; j++) {
            float target = eps_c + (j == t[r] ? 1.0f - p->smoothing : 0.0f);
            X->grad[r * p->C + j] += g * (prob[r * p->C + j] - target);
        }
    }
}

tf_tensor *tf_cross_entropy(tf_ctx *ctx, tf_tensor *logits, tf_tensor *targets, int ignore_index,
                            float label_smoothing) {
    if (!logits || !targets) return NULL;
    char a[64], b[64];
    int64_t C = logits->ndim ? logits->shape[logits->ndim - 1] : 0;
    if (logits->dtype != TF_DTYPE_F32 || targets->dtype != TF_DTYPE_I32 || C == 0 ||
        targets->ndim != logits->ndim - 1 ||
        memcmp(targets->shape, logits->shape, (size_t)targets->ndim * sizeof(int64_t)))
        return tf_set_error("cross_entropy: logits %s (F32) and targets %s (I32) do not match",
                            tf_shape_str(logits, a, sizeof a), tf_shape_str(targets, b, sizeof b)), NULL;
    if (!(label_smoothing >= 0.0f && label_smoothing <= 1.0f))
        return tf_set_error("cross_entropy: label_smoothing %g outside [0,1]", label_smoothing), NULL;
    tf_ce_params *p = tf_ctx_alloc(ctx, sizeof *p);
    tf_tensor *in[2] = {tf_contiguous(ctx, logits), tf_contiguous(ctx, targets)};
    if (!p || !in[0] || !in[1]) return NULL;
    p->C = C;
    p->rows = tf_numel(logits) / C;
    p->ignore_index = ignore_index;
    p->smoothing = label_smoothing;
    for (int64_t r = 0; r < p->rows; r++) {
        int32_t t = tf_i32(in[1])[r];
        if (t != ignore_index && (t < 0 || t >= C))
            return tf_set_error("cross_entropy: target %d at position %lld outside [0,%lld)", t,
                                (long long)r, (long long)C), NULL;
    }
    tf_node *n = tf_node_new(ctx, TF_OP_CROSS_ENTROPY, 2, in, TF_DTYPE_F32, 0, NULL, p);
    if (!n || !(n->saved[0] = tf_ctx_floats(ctx, p->rows * C)) || !(n->saved[1] = tf_ctx_floats(ctx, p->rows)))
        return NULL;
    return tf_node_run(ctx, n);
}

/* ---------------------------------------------------------------- soft-target cross-entropy */

typedef struct {
    int64_t rows, C;
} tf_soft_ce_params;

/* Row r: -sum_c t_c log p_c = lse * sum_c t_c - sum_c t_c x_c, summed in double. */
void tf_op_soft_cross_entropy_forward(tf_node *n) {
    const tf_soft_ce_params *p = n->params;
    const float *x = tf_f32(n->in[0]), *t = tf_f32(n->in[1]); // logits, targets: (rows, C)
    float *prob = n->saved[0], *row_loss = n->saved[1];        // prob: (rows, C), row_loss: (rows)
    const tf_kernels *k = tf_kern();
#pragma omp parallel for schedule(static) if (tf_threads_free() > 1 && (p->rows * p->C > 16384))
    for (int64_t r = 0; r < p->rows; r++) {
        const float *xr = x + r * p->C, *tr = t + r * p->C;
        double sum_x, mass = 0.0, dot = 0.0;
        float lse = k->softmax_lse(prob + r * p->C, xr, p->C, &sum_x);
        for (int64_t c = 0; c < p->C; c++) mass += tr[c], dot += (double)tr[c] * xr[c];
        row_loss[r] = (float)((double)lse * mass - dot);
    }
    double loss = 0.0; /* summed in row order: the same on any thread count */
    for (int64_t r = 0; r < p->rows; r++) loss += row_loss[r];
    tf_f32(n->out)[0] = p->rows ? (float)(loss / (double)p->rows) : 0.0f;
}

/* d/dx_c = (p_c sum_j t_j - t_c) / rows */
void tf_op_soft_cross_entropy_backward(tf_node *n) {
    const tf_soft_ce_params *p = n->params;
    tf_tensor *X = n->in[0];
    const float *t = tf_f32(n->in[1]), *prob = n->saved[0];
    if (!X->grad || !p->rows) return;
    float g = n->out->grad[0] / (float)p->rows;
#pragma omp parallel for schedule(static) if (tf_threads_free() > 1 && (p->rows * p->C > 16384))
    for (int64_t r = 0; r < p->rows; r++) {
        const float *tr = t + r * p->C, *pr = prob + r * p->C;
        double mass = 0.0;
        for (int64_t c = 0; c < p->C; c++) mass += tr[c];
        for (int64_t c = 0; c < p->C; c++) X->grad[r * p->C + c] += g * (pr[c] * (float)mass - tr[c]);
    }
}

tf_tensor *tf_soft_cross_entropy(tf_ctx *ctx, tf_tensor *logits, tf_tensor *targets) {
    if (!logits || !targets) return NULL;
    char a[64], b[64];
    int64_t C = logits->ndim ? logits->shape[logits->ndim - 1] : 0;
    if (logits->dtype != TF_DTYPE_F32 || targets->dtype != TF_DTYPE_F32 || C == 0 || targets->ndim != logits->ndim ||
        memcmp(targets->shape, logits->shape, (size_t)logits->ndim * sizeof(int64_t)))
        return tf_set_error("soft_cross_entropy: logits %s and targets %s must be F32 of one shape",
                            tf_shape_str(logits, a, sizeof a), tf_shape_str(targets, b, sizeof b)), NULL;
    if (targets->grad) return tf_set_error("soft_cross_entropy: the targets are constants (no gradient)"), NULL;
    tf_soft_ce_params *p = tf_ctx_alloc(ctx, sizeof *p);
    tf_tensor *in[2] = {tf_contiguous(ctx, logits), tf_contiguous(ctx, targets)};
    if (!p || !in[0] || !in[1]) return NULL;
    p->C = C, p->rows = tf_numel(logits) / C;
    tf_node *n = tf_node_new(ctx, TF_OP_SOFT_CROSS_ENTROPY, 2, in, TF_DTYPE_F32, 0, NULL, p);
    if (!n || !(n->saved[0] = tf_ctx_floats(ctx, p->rows * C)) || !(n->saved[1] = tf_ctx_floats(ctx, p->rows)))
        return NULL;
    return tf_node_run(ctx, n);
}
