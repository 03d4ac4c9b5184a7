/* Element-wise ops: copy, add, mul (broadcasting), scale, bias add, relu, gelu, tanh, reciprocal, dropout;
 * drop path (a mul by per-sample constants). */
#include <math.h>
#include <string.h>

#include "kernels.h"
#include "ops_internal.h"

/* Offsets of a strided tensor walked in row-major order of `shape`: calls
 * body(i, off) for every element i of a contiguous tensor of that shape. */
typedef struct {
    int ndim;
    int64_t shape[TF_MAX_DIMS];
    int64_t sa[TF_MAX_DIMS], sb[TF_MAX_DIMS]; /* strides of the two inputs */
} tf_bcast;

/* Shape with at least one dim so that 0-d tensors walk as (1). */
static void bcast_shape1(tf_bcast *p) {
    if (p->ndim == 0) {
        p->ndim = 1;
        p->shape[0] = 1;
        p->sa[0] = p->sb[0] = 0;
    }
}

/* ---------------------------------------------------------------- copy */

/* Offset in x of the start of output row r (rows: every dim but the last). */
static int64_t copy_row_offset(const tf_bcast *p, int64_t r) {
    int64_t off = 0;
    for (int d = p->ndim - 2; d >= 0; d--) off += r % p->shape[d] * p->sa[d], r /= p->shape[d];
    return off;
}

void tf_op_copy_forward(tf_node *n) {
    const tf_bcast *p = n->params;
    float *out = tf_f32(n->out);  // out: contiguous, x's shape
    const float *in = tf_f32(n->in[0]);
    int64_t W = p->shape[p->ndim - 1], ws = p->sa[p->ndim - 1], rows = W ? tf_numel(n->out) / W : 0;
#pragma omp parallel for schedule(static) if (tf_threads_free() > 1 && (rows * W > 16384))
    for (int64_t r = 0; r < rows; r++) {
        const float *src = in + copy_row_offset(p, r);
        for (int64_t j = 0; j < W; j++) out[r * W + j] = src[j * ws];
    }
}

void tf_op_copy_backward(tf_node *n) {
    tf_tensor *x = n->in[0];
    const tf_bcast *p = n->params;
    if (!x->grad) return;
    const float *g = n->out->grad;
    int64_t W = p->shape[p->ndim - 1], ws = p->sa[p->ndim - 1], rows = W ? tf_numel(n->out) / W : 0;
    /* rows write disjoint elements of x's gradient unless a stride is 0 (a broadcast view) */
    int disjoint = 1;
    for (int d = 0; d < p->ndim; d++) disjoint &= p->shape[d] <= 1 || p->sa[d] != 0;
#pragma omp parallel for schedule(static) if (tf_threads_free() > 1 && (disjoint && rows * W > 16384))
    for (int64_t r = 0; r < rows; r++) {
        float *dst = x->grad + copy_row_offset(p, r);
        for (int64_t j = 0; j < W; j++) dst[j * ws] += g[r * W + j];
    }
}

tf_tensor *tf_contiguous(tf_ctx *ctx, tf_tensor *x) {
    if (!x || tf_is_contiguous(x)) return x;
    if (x->dtype != TF_DTYPE_F32) {
        /* masks and ids: a plain copy, no gradient */
        tf_tensor *o = tf_tensor_new(ctx, x->dtype, x->ndim, x->shape, 0);
        if (!o) return NULL;
        int64_t idx[TF_MAX_DIMS] = {0}, n = tf_numel(x), es = (int64_t)tf_dtype_size(x->dtype);
        for (int64_t i = 0; i < n; i++) {
            int64_t off = 0, r = i;
            for (int d = x->ndim - 1; d >= 0; d--) {
                idx[d] = r % x->shape[d];
                r /= x->shape[d];
                off += idx[d] * x->stride[d];
            }
            memcpy((char *)o->data + i * es, (char *)x->data + off * es, (size_t)es);
        }
        return o;
    }
    tf_bcast *p = tf_ctx_alloc(ctx, sizeof *p);
    if (!p) return NULL;
    p->ndim = x->ndim;
    memcpy(p->shape, x->shape, sizeof p->shape);
    memcpy(p->sa, x->stride, sizeof p->sa);
    bcast_shape1(p);
    return tf_node_run(ctx, tf_node_new(ctx, TF_OP_COPY, 1, &x, TF_DTYPE_F32, x->ndim, x->shape, p));
}

/* ---------------------------------------------------------------- add, mul */

static void binary_forward(tf_node *n, int is_mul) {
    const tf_bcast *p = n->params;
    const float *a = tf_f32(n->in[0]), *b = tf_f32(n->in[1]);
    float *out = tf_f32(n->out);  // out: broadcast shape, contiguous
    int64_t idx[TF_MAX_DIMS] = {0}, W = p->shape[p->ndim - 1], i = 0;
    int64_t la = p->sa[p->ndim - 1], lb = p->sb[p->ndim - 1];
    if (tf_numel(n->out) == 0) return;
    do {
        int64_t oa = 0, ob = 0;
        for (int d = 0; d < p->ndim - 1; d++) oa += idx[d] * p->sa[d], ob += idx[d] * p->sb[d];
        if (is_mul && la == 1 && lb == 0) { /* (B,H,T,D) * (1,H,1,1): a vector loop */
            const float bv = b[ob];
            for (int64_t j = 0; j < W; j++) out[i + j] = a[oa + j] * bv;
            i += W;
        } else if (is_mul)
            for (int64_t j = 0; j < W; j++) out[i++] = a[oa + j * la] * b[ob + j * lb];
        else
            for (int64_t j = 0; j < W; j++) out[i++] = a[oa + j * la] + b[ob + j * lb];
    } while (tf_index_next(idx, p->ndim, p->shape));
}

/* One row of a * b where b is one value along the row (a per-head or
 * per-channel scale): ga += g b, and gb gets the row's dot product g . a
 * (summed in tf_dot's fixed order, then added once: a running sum in memory
 * would wait on its own store every element). */
static void mul_row_backward(float *ga, float *gb, const float *g, const float *a, float bv, int64_t W) {
    if (ga)
        for (int64_t j = 0; j < W; j++) ga[j] += g[j] * bv;
    if (gb) *gb += tf_dot(g, a, W);
}

static void binary_backward(tf_node *n, int is_mul) {
    const tf_bcast *p = n->params;
    tf_tensor *A = n->in[0], *B = n->in[1];
    const float *a = tf_f32(A), *b = tf_f32(B), *g = n->out->grad;
    int64_t idx[TF_MAX_DIMS] = {0}, W = p->shape[p->ndim - 1], i = 0;
    int64_t la = p->sa[p->ndim - 1], lb = p->sb[p->ndim - 1];
    if (tf_numel(n->out) == 0) return;
    do {
        int64_t oa = 0, ob = 0;
        for (int d = 0; d < p->ndim - 1; d++) oa += idx[d] * p->sa[d], ob += idx[d] * p->sb[d];
        if (is_mul && la == 1 && lb == 0) { /* b constant along the row: a dot product */
            mul_row_backward(A->grad ? A->grad + oa : NULL, B->grad ? B->grad + ob : NULL, g + i, a + oa, b[ob], W);
            i += W;
            continue;
        }
        for (int64_t j = 0; j < W; j++, i++) {
            int64_t ia = oa + j * la, ib = ob + j * lb;
            if (A->grad) A->grad[ia] += is_mul ? g[i] * b[ib] : g[i];
            if (B->grad) B->grad[ib] += is_mul ? g[i] * a[ia] : g[i];
        }
    } while (tf_index_next(idx, p->ndim, p->shape));
}

/* Both inputs contiguous in the output's own shape (residual connections):
 * vector kernels over chunks. (Broadcast-compatible with the output's size
 * means the same shape; strided views take the general path.) */
static int same_shape(const tf_node *n) {
    for (int i = 0; i < 2; i++)
        if (tf_numel(n->in[i]) != tf_numel(n->out) || !tf_is_contiguous(n->in[i])) return 0;
    return 1;
}

void tf_op_add_forward(tf_node *n) {
    if (!same_shape(n)) {
        binary_forward(n, 0);
        return;
    }
    const tf_kernels *k = tf_kern();
    const float *a = tf_f32(n->in[0]), *b = tf_f32(n->in[1]);
    float *out = tf_f32(n->out);
    TF_FOR_CHUNKS(tf_numel(n->out), i0, len, (memcpy(out + i0, a + i0, (size_t)len * sizeof *out), k->acc(out + i0, b + i0, len)));
}

void tf_op_add_backward(tf_node *n) {
    if (!same_shape(n)) {
        binary_backward(n, 0);
        return;
    }
    const tf_kernels *k = tf_kern();
    float *ga = n->in[0]->grad, *gb = n->in[1]->grad;
    const float *g = n->out->grad;
    TF_FOR_CHUNKS(tf_numel(n->out), i0, len, (ga ? k->acc(ga + i0, g + i0, len) : (void)0, gb ? k->acc(gb + i0, g + i0, len) : (void)0));
}
void tf_op_mul_forward(tf_node *n) { binary_forward(n, 1); }
void tf_op_mul_backward(tf_node *n) { binary_backward(n, 1); }

static tf_tensor *binary(tf_ctx *ctx, tf_op op, tf_tensor *a, tf_tensor *b) {
    if (!a || !b) return NULL;
    const char *name = tf_op_name(op);
    if (a->dtype != TF_DTYPE_F32 || b->dtype != TF_DTYPE_F32)
        return tf_set_error("%s: inputs must be F32", name), NULL;
    tf_bcast *p = tf_ctx_alloc(ctx, sizeof *p);
    if (!p) return NULL;
    p->ndim = a->ndim > b->ndim ? a->ndim : b->ndim;
    for (int d = 0; d < p->ndim; d++) {
        int ia = d - (p->ndim - a->ndim), ib = d - (p->ndim - b->ndim);
        int64_t sa = ia >= 0 ? a->shape[ia] : 1, sb = ib >= 0 ? b->shape[ib] : 1;
        if (sa != sb && sa != 1 && sb != 1) {
            char x[64], y[64];
            tf_set_error("%s: shapes %s and %s do not broadcast", name, tf_shape_str(a, x, sizeof x),
                         tf_shape_str(b, y, sizeof y));
            return NULL;
        }
        p->shape[d] = sa == 1 ? sb : sa;
    }
    tf_bcast_strides(a, p->ndim, p->shape, p->sa);
    tf_bcast_strides(b, p->ndim, p->shape, p->sb);
    int ndim = p->ndim;
    int64_t shape[TF_MAX_DIMS];
    memcpy(shape, p->shape, sizeof shape);
    bcast_shape1(p);
    tf_tensor *in[2] = {a, b};
    return tf_node_run(ctx, tf_node_new(ctx, op, 2, in, TF_DTYPE_F32, ndim, shape, p));
}

tf_tensor *tf_add(tf_ctx *ctx, tf_tensor *a, tf_tensor *b) { return binary(ctx, TF_OP_ADD, a, b); }
tf_tensor *tf_mul(tf_ctx *ctx, tf_tensor *a, tf_tensor *b) { return binary(ctx, TF_OP_MUL, a, b); }

/* ---------------------------------------------------------------- unary ops */

typedef struct {
    float s;            /* scale; dropout probability */
    tf_gelu_kind gelu;
    uint64_t seed;      /* dropout */
} tf_unary_params;

/* A contiguous F32 input and a same-shaped output. */
static tf_node *unary_node(tf_ctx *ctx, tf_op op, tf_tensor *x, tf_unary_params *p) {
    if (!x) return NULL;
    if (x->dtype != TF_DTYPE_F32) return tf_set_error("%s: input must be F32", tf_op_name(op)), NULL;
    x = tf_contiguous(ctx, x);
    if (!x) return NULL;
    return tf_node_new(ctx, op, 1, &x, TF_DTYPE_F32, x->ndim, x->shape, p);
}

void tf_op_scale_forward(tf_node *n) {
    const tf_unary_params *p = n->params;
    const float *x = tf_f32(n->in[0]);
    float *y = tf_f32(n->out);
    #pragma omp parallel for schedule(static) if (tf_threads_free() > 1 && (tf_numel(n->out) > 16384))
    for (int64_t i = 0; i < tf_numel(n->out); i++) y[i] = x[i] * p->s;
}

void tf_op_scale_backward(tf_node *n) {
    const tf_unary_params *p = n->params;
    float *gx = n->in[0]->grad;
    const float *g = n->out->grad;
    if (gx)
        #pragma omp parallel for schedule(static) if (tf_threads_free() > 1 && (tf_numel(n->out) > 16384))
        for (int64_t i = 0; i < tf_numel(n->out); i++) gx[i] += g[i] * p->s;
}

tf_tensor *tf_scale(tf_ctx *ctx, tf_tensor *x, float s) {
    tf_unary_params *p = tf_ctx_alloc(ctx, sizeof *p);
    if (!p) return NULL;
    p->s = s;
    return tf_node_run(ctx, unary_node(ctx, TF_OP_SCALE, x, p));
}

void tf_op_relu_forward(tf_node *n) {
    const float *x = tf_f32(n->in[0]);
    float *y = tf_f32(n->out);
    #pragma omp parallel for schedule(static) if (tf_threads_free() > 1 && (tf_numel(n->out) > 16384))
    for (int64_t i = 0; i < tf_numel(n->out); i++) y[i] = x[i] > 0 ? x[i] : 0;
}

void tf_op_relu_backward(tf_node *n) {
    const float *x = tf_f32(n->in[0]), *g = n->out->grad;
    float *gx = n->in[0]->grad;
    if (gx)
        #pragma omp parallel for schedule(static) if (tf_threads_free() > 1 && (tf_numel(n->out) > 16384))
        for (int64_t i = 0; i < tf_numel(n->out); i++) gx[i] += x[i] > 0 ? g[i] : 0;
}

tf_tensor *tf_relu(tf_ctx *ctx, tf_tensor *x) {
    return tf_node_run(ctx, unary_node(ctx, TF_OP_RELU, x, NULL));
}


/* out = act(pre): GELU (either form) through the kernel set in chunks of
 * TF_CHUNK (results independent of the split and the thread count); SiLU
 * and ReLU element by element. */
void tf_act_forward(float *out, const float *pre, int64_t n, int act) {
    const tf_kernels *k = tf_kern();
    if (act == TF_ACT_GELU_TANH) {
        TF_FOR_CHUNKS(n, i0, len, k->gelu_tanh(out + i0, pre + i0, len));
    } else if (act == TF_ACT_GELU) {
        TF_FOR_CHUNKS(n, i0, len, k->gelu_erf(out + i0, pre + i0, len));
    } else if (act == TF_ACT_SILU || act == TF_ACT_QUICK_GELU) { /* x sigmoid(a x): silu a = 1, quick_gelu 1.702 */
        float a = act == TF_ACT_SILU ? 1.0f : 1.702f;
        TF_PARALLEL_FOR(n > 16384, i, n, out[i] = pre[i] / (1.0f + expf(-a * pre[i])));
    } else {
        TF_PARALLEL_FOR(n > 16384, i, n, out[i] = pre[i] > 0 ? pre[i] : 0.0f);
    }
}

void tf_act_backward(float *dx, const float *g, const float *pre, int64_t n, int act, int acc) {
    const tf_kernels *k = tf_kern();
    if (act == TF_ACT_GELU_TANH) {
        TF_FOR_CHUNKS(n, i0, len, k->gelu_tanh_grad(dx + i0, g + i0, pre + i0, len, acc));
    } else if (act == TF_ACT_GELU) {
        TF_FOR_CHUNKS(n, i0, len, k->gelu_erf_grad(dx + i0, g + i0, pre + i0, len, acc));
    } else if (act == TF_ACT_SILU || act == TF_ACT_QUICK_GELU) { /* (x s)' = s (1 + a x (1 - s)), s = sigmoid(a x) */
        float a = act == TF_ACT_SILU ? 1.0f : 1.702f;
#pragma omp parallel for schedule(static) if (tf_threads_free() > 1 && (n > 16384))
        for (int64_t i = 0; i < n; i++) {
            float s = 1.0f / (1.0f + expf(-a * pre[i])), d = g[i] * s * (1.0f + a * pre[i] * (1.0f - s));
            dx[i] = acc ? dx[i] + d : d;
        }
    } else {
#pragma omp parallel for schedule(static) if (tf_threads_free() > 1 && (n > 16384))
        for (int64_t i = 0; i < n; i++) {
            float d = pre[i] > 0 ? g[i] : 0.0f;
            dx[i] = acc ? dx[i] + d : d;
        }
    }
}

static int gelu_act(const tf_node *n) {
    return ((const tf_unary_params *)n->params)->gelu == TF_GELU_TANH ? TF_ACT_GELU_TANH : TF_ACT_GELU;
}

void tf_op_gelu_forward(tf_node *n) {
    tf_act_forward(tf_f32(n->out), tf_f32(n->in[0]), tf_numel(n->out), gelu_act(n));
}

void tf_op_gelu_backward(tf_node *n) {
    if (n->in[0]->grad)
        tf_act_backward(n->in[0]->grad, n->out->grad, tf_f32(n->in[0]), tf_numel(n->out), gelu_act(n), 1);
}

tf_tensor *tf_gelu(tf_ctx *ctx, tf_tensor *x, tf_gelu_kind kind) {
    tf_unary_params *p = tf_ctx_alloc(ctx, sizeof *p);
    if (!p) return NULL;
    p->gelu = kind;
    return tf_node_run(ctx, unary_node(ctx, TF_OP_GELU, x, p));
}

/* tanh(x) through the kernel set (additive attention's tanh over (B,S,A)
 * every decoder step: libm's tanhf was a third of an RNN's training step);
 * the backward reads the output: d tanh = 1 - tanh^2 (as PyTorch's). */
void tf_op_tanh_forward(tf_node *n) {
    const float *x = tf_f32(n->in[0]);
    float *y = tf_f32(n->out);  // y: x's shape, contiguous
    const tf_kernels *k = tf_kern();
    TF_FOR_CHUNKS(tf_numel(n->out), i0, len, k->tanh(y + i0, x + i0, len));
}

void tf_op_tanh_backward(tf_node *n) {
    const float *y = tf_f32(n->out), *g = n->out->grad;
    float *gx = n->in[0]->grad;
    if (gx)
        #pragma omp parallel for schedule(static) if (tf_threads_free() > 1 && (tf_numel(n->out) > 16384))
        for (int64_t i = 0; i < tf_numel(n->out); i++) gx[i] += g[i] * (1.0f - y[i] * y[i]);
}

tf_tensor *tf_tanh(tf_ctx *ctx, tf_tensor *x) {
    return tf_node_run(ctx, unary_node(ctx, TF_OP_TANH, x, NULL));
}

/* 1/x; the backward reads the output: d(1/x) = -1/x^2 = -y^2. */
void tf_op_reciprocal_forward(tf_node *n) {
    const float *x = tf_f32(n->in[0]);
    float *y = tf_f32(n->out);
    for (int64_t i = 0; i < tf_numel(n->out); i++) y[i] = 1.0f / x[i];
}

void tf_op_reciprocal_backward(tf_node *n) {
    const float *y = tf_f32(n->out), *g = n->out->grad;
    float *gx = n->in[0]->grad;
    for (int64_t i = 0; gx && i < tf_numel(n->out); i++) gx[i] -= g[i] * y[i] * y[i];
}

tf_tensor *tf_reciprocal(tf_ctx *ctx, tf_tensor *x) {
    return tf_node_run(ctx, unary_node(ctx, TF_OP_RECIPROCAL, x, NULL));
}

/* Dropout keeps element i when hash(seed, i) >= p and scales it by 1/(1-p):
 * the mask depends only on the node's seed, never on threads or replay. The
 * kernel runs over fixed chunks, recomputing the mask in the backward. */
static void dropout_run(float *y, const float *x, int64_t N, const tf_unary_params *p, int acc) {
    const tf_kernels *k = tf_kern();
    const float keep = 1.0f / (1.0f - p->s);
    TF_FOR_CHUNKS(N, i0, len, k->dropout(y + i0, x + i0, len, p->seed, (uint64_t)i0, p->s, keep, acc));
}

void tf_op_dropout_forward(tf_node *n) {
    dropout_run(tf_f32(n->out), tf_f32(n->in[0]), tf_numel(n->out), n->params, 0);
}

void tf_op_dropout_backward(tf_node *n) {
    if (n->in[0]->grad) dropout_run(n->in[0]->grad, n->out->grad, tf_numel(n->out), n->params, 1);
}

tf_tensor *tf_dropout(tf_ctx *ctx, tf_tensor *x, float p) {
    if (!x) return NULL;
    if (!(p >= 0.0f && p < 1.0f)) return tf_set_error("dropout: p = %g outside [0,1)", p), NULL;
    if (!ctx->training || p == 0.0f) return x;
    tf_unary_params *pp = tf_ctx_alloc(ctx, sizeof *pp);
    if (!pp) return NULL;
    pp->s = p;
    pp->seed = tf_splitmix64(&ctx->rng);
    return tf_node_run(ctx, unary_node(ctx, TF_OP_DROPOUT, x, pp));
}

/* Stochastic depth: x times a constant (B,1,...,1) of 0 (dropped sample)
 * or 1/(1-p), sample b dropped when hash(seed, b) < p; the product is the
 * broadcasting mul op, whose backward scales the gradient the same way. */
tf_tensor *tf_drop_path(tf_ctx *ctx, tf_tensor *x, float p) {
    if (!x) return NULL;
    if (!(p >= 0.0f && p < 1.0f)) return tf_set_error("drop_path: p = %g outside [0,1)", p), NULL;
    if (!ctx->training || p == 0.0f || x->ndim < 1) return x;
    int64_t shape[TF_MAX_DIMS];
    for (int d = 0; d < x->ndim; d++) shape[d] = d ? 1 : x->shape[0];
    tf_tensor *keep = tf_tensor_new(ctx, TF_DTYPE_F32, x->ndim, shape, 0);  // keep: (B,1,...,1)
    if (!keep) return NULL;
    uint64_t seed = tf_splitmix64(&ctx->rng);
    for (int64_t b = 0; b < x->shape[0]; b++)
        tf_f32(keep)[b] = tf_hash_uniform(seed, (uint64_t)b) >= p ? 1.0f / (1.0f - p) : 0.0f;
    return tf_mul(ctx, x, keep);
}

/* ---------------------------------------------------------------- bias add */

void tf_op_bias_add_forward(tf_node *n) {
    const float *x = tf_f32(n->in[0]), *b = tf_f32(n->in[1]);
    float *y = tf_f32(n->out);  // y: (R,N) = x (R,N) + b (N)
    int64_t N = n->in[1]->shape[0], R = N ? tf_numel(n->out) / N : 0;
#pragma omp parallel for schedule(static) if (tf_threads_free() > 1 && (R * N > 16384))
    for (int64_t r = 0; r < R; r++)
        for (int64_t j = 0; j < N; j++) y[r * N + j] = x[r * N + j] + b[j];
}

void tf_op_bias_add_backward(tf_node *n) {
    tf_tensor *X = n->in[0], *B = n->in[1];
    const float *g = n->out->grad;
    int64_t N = B->shape[0], R = N ? tf_numel(n->out) / N : 0;
    if (X->grad)
#pragma omp parallel for schedule(static) if (tf_threads_free() > 1 && (R * N > 16384))
        for (int64_t r = 0; r < R; r++)
            for (int64_t j = 0; j < N; j++) X->grad[r * N + j] += g[r * N + j];
    if (B->grad) tf_col_sums(B->grad, g, R, N);
}

tf_tensor *tf_bias_add(tf_ctx *ctx, tf_tensor *x, tf_tensor *bias) {
    if (!x || !bias) return NULL;
    if (x->dtype != TF_DTYPE_F32 || bias->dtype != TF_DTYPE_F32 || bias->ndim != 1 ||
        x->ndim < 1 || x->shape[x->ndim - 1] != bias->shape[0]) {
        char a[64], b[64];
        tf_set_error("bias_add: bias %s does not match the last dim of %s",
                     tf_shape_str(bias, b, sizeof b), tf_shape_str(x, a, sizeof a));
        return NULL;
    }
    tf_tensor *in[2] = {tf_contiguous(ctx, x), tf_contiguous(ctx, bias)};
    if (!in[0] || !in[1]) return NULL;
    return tf_node_run(ctx, tf_node_new(ctx, TF_OP_BIAS_ADD, 2, in, TF_DTYPE_F32, x->ndim, x->shape, NULL));
}

float tf_block_max_f32(float *bm, const float *x, int64_t n, int64_t bs) { return tf_kern()->block_max(bm, x, n, bs); }

float tf_log_sum_exp_at(float *scratch, const float *x, int64_t n, float mx) {
    if (mx == -INFINITY) return mx;
    return mx + logf(tf_kern()->exp_shift(scratch, x, mx, n));
}

float tf_log_sum_exp(float *scratch, const float *x, int64_t n) { return tf_log_sum_exp_at(scratch, x, n, tf_max_f32(x, n)); }
