/* The fused dense layer: out = act(x W^T + b). The bias is the product's
 * starting value (no separate pass), the activation runs on the product in
 * place of its own op, and the backward turns the output gradient into the
 * pre-activation gradient once for the three products it feeds. */
#include <string.h>

#include "kernels.h"
#include "ops_internal.h"
#include "quant.h"

typedef struct {
    int64_t M, N, K; /* x (M,K), w (N,K) or (K,N) when w_in_out, out (M,N) */
    int w_in_out;
    int act;         /* tf_activation or TF_ACT_NONE */
    int kernel;      /* TF_GEMM_AUTO, or TF_GEMM_BF16 (the context's precision when recorded, or w's mark) */
    const tf_quant *q; /* int8 or transposed float copy of w (no gradients tracked), or NULL */
    int64_t q_row0;    /* the copy's row of w's first */
    uint8_t *xq;       // (M,Kp) x quantised, with q
    float *sx;         // (M,Kp/32) its block scales
    const float *zeros; // (N) zeros: the bias a packed product without one reads, so y needs no zeroing pass
} tf_dense_params;

void tf_op_dense_forward(tf_node *n) {
    const tf_dense_params *p = n->params;
    const float *x = tf_f32(n->in[0]), *w = tf_f32(n->in[1]), *b = n->in[2] ? tf_f32(n->in[2]) : NULL;
    float *out = tf_f32(n->out), *pre = p->act == TF_ACT_NONE ? out : n->saved[0];  // (M,N) each
    /* the product reads it (zeros when there is none: 0 + v, the bits of a zeroed y + v): no pass */
    const float *in_place = p->q && tf_quant_takes_bias(p->q) ? (b ? b : p->zeros) : NULL;
    if (b && !in_place) {
        TF_PARALLEL_FOR(p->M * p->N > 16384, r, p->M, memcpy(pre + r * p->N, b, (size_t)p->N * sizeof *b));
    } else if (!b && !in_place) {
        memset(pre, 0, (size_t)(p->M * p->N) * sizeof *pre);
    }
    if (p->q) tf_quant_gemm(pre, in_place, x, p->M, p->K, p->q, p->q_row0, p->N, p->xq, p->sx);
    else tf_gemm_acc(pre, x, w, p->M, p->N, p->K, 0, !p->w_in_out, p->kernel);
    if (p->act != TF_ACT_NONE) tf_act_forward(out, pre, p->M * p->N, p->act);
}

void tf_op_dense_backward(tf_node *n) {
    const tf_dense_params *p = n->params;
    tf_tensor *X = n->in[0], *W = n->in[1], *B = n->in[2];
    const float *g = n->out->grad, *dpre = g;  // (M,N)
    if (p->act != TF_ACT_NONE) {
        tf_act_backward(n->saved[1], g, n->saved[0], p->M * p->N, p->act, 0);
        dpre = n->saved[1];
    }
    int64_t M = p->M, N = p->N, K = p->K;
    if (X->grad) tf_gemm_acc(X->grad, dpre, tf_f32(W), M, K, N, 0, p->w_in_out, p->kernel);  // dx = dpre op(W)^T
    if (W->grad && p->w_in_out) tf_gemm_acc(W->grad, tf_f32(X), dpre, K, N, M, 1, 0, p->kernel); // x^T dpre
    else if (W->grad) tf_gemm_acc(W->grad, dpre, tf_f32(X), N, K, M, 1, 0, p->kernel);            // dpre^T x
    if (B && B->grad) tf_col_sums(B->grad, dpre, p->M, p->N);
}

/* Products that track no gradient read w's int8 or float copy when it has
 * one (tf_params_quantize); -1 only when the scratch cannot be had. */
static int use_quant(tf_ctx *ctx, tf_dense_params *p, const tf_tensor *w) {
    /* a float copy serves the vector kernels, in some products (quant.h): built only for those */
    if (tf_quant_is_f32(w->quant) && (p->w_in_out || p->kernel != TF_GEMM_AUTO ||
                                      tf_kern() == tf_kern_get(TF_ISA_PORTABLE) || !tf_quant_f32_serves(w, p->M)))
        return 0;
    if (!p->M || !(p->q = tf_quant_for(w, p->w_in_out, &p->q_row0)) || tf_quant_is_f32(p->q)) return 0;
    int64_t Kp = tf_quant_padded_k(p->q);
    p->xq = tf_ctx_alloc(ctx, (size_t)(p->M * Kp));
    p->sx = tf_ctx_alloc(ctx, (size_t)(p->M * (Kp / TF_QUANT_BLOCK)) * sizeof *p->sx);
    if (tf_quant_takes_bias(p->q) && !(p->zeros = tf_ctx_alloc(ctx, (size_t)p->N * sizeof *p->zeros))) return -1;
    return p->xq && p->sx ? 0 : -1;
}

tf_tensor *tf_dense(tf_ctx *ctx, tf_tensor *x, tf_tensor *w, int w_in_out, tf_tensor *b, int act) {
    if (!x || !w) return NULL;
    char sx[64], sw[64];
    int io = w_in_out != 0;
    int64_t K = x->ndim ? x->shape[x->ndim - 1] : 0, N = w->ndim == 2 ? w->shape[io ? 1 : 0] : -1;
    if (x->dtype != TF_DTYPE_F32 || w->dtype != TF_DTYPE_F32 || x->ndim < 1 || w->ndim != 2 || w->shape[io ? 0 : 1] != K)
        return tf_set_error("dense: input %s and weight %s %s do not match", tf_shape_str(x, sx, sizeof sx),
                            tf_shape_str(w, sw, sizeof sw), io ? "(in,out)" : "(out,in)"), NULL;
    if (b && (b->dtype != TF_DTYPE_F32 || b->ndim != 1 || b->shape[0] != N))
        return tf_set_error("dense: bias %s must be F32 of shape (%lld)", tf_shape_str(b, sx, sizeof sx),
                            (long long)N), NULL;
    if (act < TF_ACT_RELU || act > TF_ACT_NONE) return tf_set_error("dense: unknown activation %d", act), NULL;
    tf_dense_params *p = tf_ctx_alloc(ctx, sizeof *p);
    if (!p) return NULL;
    p->K = K, p->N = N, p->M = K ? tf_numel(x) / K : 0, p->act = act, p->w_in_out = io;
    p->kernel = tf_ctx_gemm_kernel(ctx);
    int64_t shape[TF_MAX_DIMS];
    memcpy(shape, x->shape, sizeof shape);
    shape[x->ndim - 1] = p->N;
    tf_tensor *in[3] = {tf_contiguous(ctx, x), tf_contiguous(ctx, w), b ? tf_contiguous(ctx, b) : NULL};
    if (!in[0] || !in[1] || (b && !in[2])) return NULL;
    /* tf_node_new rejects NULL inputs: pass x for an absent bias and patch it */
    tf_tensor *nn_in[3] = {in[0], in[1], in[2] ? in[2] : in[0]};
    tf_node *n = tf_node_new(ctx, TF_OP_DENSE, 3, nn_in, TF_DTYPE_F32, x->ndim, shape, p);
    if (!n) return NULL;
    n->in[2] = in[2];
    if (act != TF_ACT_NONE) {
        /* pre-activation and its gradient: each written whole before it is read */
        if (!(n->saved[0] = tf_ctx_scratch(ctx, p->M * p->N))) return NULL;
        if (n->out->grad && !(n->saved[1] = tf_ctx_scratch(ctx, p->M * p->N))) return NULL;
    }
    if (!n->out->grad && tf_quant_is_bf16(in[1]->quant)) p->kernel = TF_GEMM_BF16; /* tf_params_set_precision */
    else if (!n->out->grad && in[1]->quant && use_quant(ctx, p, in[1])) return NULL;
    return tf_node_run(ctx, n);
}
