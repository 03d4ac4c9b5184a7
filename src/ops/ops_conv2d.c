/* A 2-D convolution (PyTorch's conv2d, one group) as im2col + one matrix
 * product: each output position m = (b, oy, ox) becomes row m of cols
 * (M, C*K*K) (zeros where the window crosses the padding), one product with
 * the weight viewed as (O, C*K*K) gives rows (M, O), moved to the (B,O,H',W')
 * layout. The backward brings the gradient back to rows, multiplies back
 * (dw += g^T cols, dcols = g w) and adds each window into the input (col2im:
 * windows overlap when stride < K, so a plane is done by one thread).
 *
 *   y[b,o,oy,ox] = bias[o] + sum_{c,ky,kx} w[o,c,ky,kx] x[b,c,oy*s-p+ky,ox*s-p+kx]
 */
#include <string.h>

#include "kernels.h"
#include "tformer/ops.h"

typedef struct {
    int64_t B, C, H, W;   /* x (B,C,H,W) */
    int64_t O, K;         /* w (O,C,K,K) */
    int64_t stride, pad;
    int64_t Ho, Wo;       /* y (B,O,Ho,Wo) */
} tf_conv2d_params;

static int64_t rows_of(const tf_conv2d_params *p) { return p->B * p->Ho * p->Wo; }
static int64_t cols_of(const tf_conv2d_params *p) { return p->C * p->K * p->K; }

/* Row m = (b, oy, ox) of cols (C*K*K) from x. */
static void im2col_row(const tf_conv2d_params *p, int64_t m, const float *x, float *cols) {
    int64_t L = p->Ho * p->Wo, b = m / L, oy = m % L / p->Wo, ox = m % p->Wo, K = p->K;
    float *row = cols + m * cols_of(p);
    for (int64_t c = 0; c < p->C; c++)
        for (int64_t ky = 0; ky < K; ky++) {
            int64_t iy = oy * p->stride - p->pad + ky;
            const float *xr = x + ((b * p->C + c) * p->H + iy) * p->W;  // row iy of plane (b,c)
            float *r = row + (c * K + ky) * K;
            for (int64_t kx = 0; kx < K; kx++) {
                int64_t ix = ox * p->stride - p->pad + kx;
                r[kx] = iy >= 0 && iy < p->H && ix >= 0 && ix < p->W ? xr[ix] : 0.0f;
            }
        }
}

/* Plane (b,c) of dx += every window's entries of dcols (M, C*K*K) that read it. */
static void col2im_plane(const tf_conv2d_params *p, int64_t bc, const float *dcols, float *dx) {
    int64_t b = bc / p->C, c = bc % p->C, K = p->K, CKK = cols_of(p);
    float *plane = dx + bc * p->H * p->W;  // (H,W)
    for (int64_t oy = 0; oy < p->Ho; oy++)
        for (int64_t ox = 0; ox < p->Wo; ox++) {
            const float *r = dcols + ((b * p->Ho + oy) * p->Wo + ox) * CKK + c * K * K;  // (K,K)
            for (int64_t ky = 0; ky < K; ky++) {
                int64_t iy = oy * p->stride - p->pad + ky;
                if (iy < 0 || iy >= p->H) continue;
                for (int64_t kx = 0; kx < K; kx++) {
                    int64_t ix = ox * p->stride - p->pad + kx;
                    if (ix >= 0 && ix < p->W) plane[iy * p->W + ix] += r[ky * K + kx];
                }
            }
        }
}

/* rows (M,O) <-> y (B,O,L), L = Ho*Wo: image b's rows transposed (back: y to rows). */
static void rows_to_planes(const tf_conv2d_params *p, int64_t b, float *rows, float *y, int back) {
    int64_t L = p->Ho * p->Wo, O = p->O;
    for (int64_t o = 0; o < O; o++)
        for (int64_t l = 0; l < L; l++) {
            float *r = rows + (b * L + l) * O + o, *v = y + (b * O + o) * L + l;
            if (back) *r = *v;
            else *v = *r;
        }
}

void tf_op_conv2d_forward(tf_node *n) {
    const tf_conv2d_params *p = n->params;
    int64_t M = rows_of(p), CKK = cols_of(p);
    float *cols = n->saved[0], *rows = cols + M * CKK;  // cols (M,CKK), then rows (M,O)
    const float *x = tf_f32(n->in[0]);
    TF_PARALLEL_FOR(M * CKK > 16384, m, M, im2col_row(p, m, x, cols));
    tf_unfolded_forward(rows, cols, tf_f32(n->in[1]), n->in[2] ? tf_f32(n->in[2]) : NULL, M, p->O, CKK);
    TF_PARALLEL_FOR(M * p->O > 16384, b, p->B, rows_to_planes(p, b, rows, tf_f32(n->out), 0));
}

void tf_op_conv2d_backward(tf_node *n) {
    const tf_conv2d_params *p = n->params;
    tf_tensor *X = n->in[0], *Wt = n->in[1], *Bt = n->in[2];
    int64_t M = rows_of(p), CKK = cols_of(p);
    float *cols = n->saved[0], *g = cols + M * CKK;  // the forward's rows (M,O) now hold the gradient
    float *dcols = X->grad ? n->saved[1] : NULL;     // (M,CKK)
    TF_PARALLEL_FOR(M * p->O > 16384, b, p->B, rows_to_planes(p, b, g, n->out->grad, 1));
    tf_unfolded_backward(g, cols, tf_f32(Wt), Wt->grad, Bt ? Bt->grad : NULL, dcols, M, p->O, CKK);
    if (dcols) TF_PARALLEL_FOR(M * CKK > 16384, bc, p->B * p->C, col2im_plane(p, bc, dcols, X->grad));
}

static int check_args(const tf_tensor *x, const tf_tensor *w, const tf_tensor *b, int stride, int pad,
                      tf_conv2d_params *p) {
    char sx[64], sw[64];
    if (x->dtype != TF_DTYPE_F32 || w->dtype != TF_DTYPE_F32 || x->ndim != 4 || w->ndim != 4 ||
        w->shape[1] != x->shape[1] || w->shape[2] != w->shape[3] || w->shape[2] < 1)
        return tf_set_error("conv2d: input %s must be F32 (B,C,H,W) and weight %s F32 (O,C,K,K) of the same C",
                            tf_shape_str(x, sx, sizeof sx), tf_shape_str(w, sw, sizeof sw));
    if (stride < 1 || pad < 0) return tf_set_error("conv2d: stride %d must be >= 1 and padding %d >= 0", stride, pad);
    int64_t K = w->shape[2], H = x->shape[2], W = x->shape[3];
    if (H + 2 * (int64_t)pad < K || W + 2 * (int64_t)pad < K)
        return tf_set_error("conv2d: input %s with padding %d is smaller than the %lldx%lld kernel",
                            tf_shape_str(x, sx, sizeof sx), pad, (long long)K, (long long)K);
    if (b && (b->dtype != TF_DTYPE_F32 || b->ndim != 1 || b->shape[0] != w->shape[0]))
        return tf_set_error("conv2d: bias %s must be F32 of shape (%lld)", tf_shape_str(b, sx, sizeof sx),
                            (long long)w->shape[0]);
    *p = (tf_conv2d_params){x->shape[0], x->shape[1], H, W, w->shape[0], K, stride, pad,
                            (H + 2 * pad - K) / stride + 1, (W + 2 * pad - K) / stride + 1};
    return 0;
}

tf_tensor *tf_conv2d(tf_ctx *ctx, tf_tensor *x, tf_tensor *w, tf_tensor *b, int stride, int padding) {
    if (!x || !w) return NULL;
    tf_conv2d_params *p = tf_ctx_alloc(ctx, sizeof *p);
    if (!p || check_args(x, w, b, stride, padding, p)) return NULL;
    size_t M, MK, MO, all;
    if (!tf_mul_size((size_t)p->B, (size_t)(p->Ho * p->Wo), &M) || !tf_mul_size(M, (size_t)cols_of(p), &MK) ||
        !tf_mul_size(M, (size_t)p->O, &MO) || (all = MK + MO) < MK)
        return tf_set_error("conv2d: %lld inputs of %lldx%lld outputs are too many", (long long)p->B,
                            (long long)p->Ho, (long long)p->Wo), NULL;
    tf_tensor *in[3] = {tf_contiguous(ctx, x), tf_contiguous(ctx, w), b ? tf_contiguous(ctx, b) : NULL};
    if (!in[0] || !in[1] || (b && !in[2])) return NULL;
    tf_tensor *nn_in[3] = {in[0], in[1], in[2] ? in[2] : in[0]}; /* tf_node_new rejects NULL: patched below */
    tf_node *n = tf_node_new(ctx, TF_OP_CONV2D, 3, nn_in, TF_DTYPE_F32, 4, (int64_t[]){p->B, p->O, p->Ho, p->Wo}, p);
    if (!n) return NULL;
    n->in[2] = in[2];
    /* the windows and the product's rows (every element written by the forward); with a gradient, the windows' */
    if (!(n->saved[0] = tf_ctx_scratch(ctx, (int64_t)all))) return NULL;
    if (n->out->grad && in[0]->grad && !(n->saved[1] = tf_ctx_scratch(ctx, (int64_t)MK))) return NULL;
    return tf_node_run(ctx, n);
}
