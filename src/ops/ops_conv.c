/* A depthwise convolution along the sequence: each channel c of x (B,C,T,D)
 * convolved over T with its own K taps w[c] (K odd, zero padding (K-1)/2 at
 * both ends), the same taps for every column d. Nyströmformer adds it to the
 * attention's output as a skip on V (PyTorch's Conv2d((K,1), groups=C)).
 *
 *   y[b,c,t,d]   = sum_j w[c,j] x[b,c,t+j-P,d]            P = (K-1)/2
 *   dx[b,c,s,d] += sum_j w[c,j] g[b,c,s-j+P,d]
 *   dw[c,j]     += sum_{b,t,d} g[b,c,t,d] x[b,c,t+j-P,d]  (in double)
 */
#include <string.h>

#include "ops_internal.h"

typedef struct {
    int64_t B, C, T, D, K;
} tf_conv_params;

/* Plane (b,c) of y (T,D) from the same plane of x. */
static void conv_plane(const tf_conv_params *p, const float *x, const float *w, float *y) {
    int64_t P = (p->K - 1) / 2, D = p->D;
    memset(y, 0, (size_t)(p->T * D) * sizeof *y);
    for (int64_t t = 0; t < p->T; t++)
        for (int64_t j = 0; j < p->K; j++) {
            int64_t s = t + j - P;
            if (s < 0 || s >= p->T) continue;
            const float *xs = x + s * D;
            float *yt = y + t * D, wj = w[j];
            for (int64_t d = 0; d < D; d++) yt[d] += wj * xs[d];
        }
}

void tf_op_depthwise_conv_forward(tf_node *n) {
    const tf_conv_params *p = n->params;
    const float *x = tf_f32(n->in[0]), *w = tf_f32(n->in[1]);
    float *y = tf_f32(n->out);
    int64_t plane = p->T * p->D;
    TF_PARALLEL_FOR(p->B * p->C * plane * p->K > 65536, bc, p->B * p->C,
                    conv_plane(p, x + bc * plane, w + (bc % p->C) * p->K, y + bc * plane));
}

/* dx of plane (b,c): the taps run the other way. */
static void conv_plane_dx(const tf_conv_params *p, const float *g, const float *w, float *dx) {
    int64_t P = (p->K - 1) / 2, D = p->D;
    for (int64_t t = 0; t < p->T; t++)
        for (int64_t j = 0; j < p->K; j++) {
            int64_t s = t + j - P;
            if (s < 0 || s >= p->T) continue;
            const float *gt = g + t * D;
            float *dxs = dx + s * D, wj = w[j];
            for (int64_t d = 0; d < D; d++) dxs[d] += wj * gt[d];
        }
}

/* dw of channel c: every batch row's plane, summed in double. */
static void conv_channel_dw(const tf_conv_params *p, const float *x, const float *g, int64_t c, float *dw) {
    int64_t P = (p->K - 1) / 2, D = p->D, plane = p->T * D;
    for (int64_t j = 0; j < p->K; j++) {
        double acc = 0.0;
        for (int64_t b = 0; b < p->B; b++) {
            const float *xb = x + (b * p->C + c) * plane, *gb = g + (b * p->C + c) * plane;
            for (int64_t t = 0; t < p->T; t++) {
                int64_t s = t + j - P;
                if (s >= 0 && s < p->T) acc += (double)tf_dot(gb + t * D, xb + s * D, D);
            }
        }
        dw[c * p->K + j] += (float)acc;
    }
}

void tf_op_depthwise_conv_backward(tf_node *n) {
    const tf_conv_params *p = n->params;
    tf_tensor *X = n->in[0], *W = n->in[1];
    const float *g = n->out->grad;
    int64_t plane = p->T * p->D, work = p->B * p->C * plane * p->K;
    if (X->grad)
        TF_PARALLEL_FOR(work > 65536, bc, p->B * p->C,
                        conv_plane_dx(p, g + bc * plane, tf_f32(W) + (bc % p->C) * p->K, X->grad + bc * plane));
    if (W->grad) TF_PARALLEL_FOR(work > 65536, c, p->C, conv_channel_dw(p, tf_f32(X), g, c, W->grad));
}

tf_tensor *tf_depthwise_conv(tf_ctx *ctx, tf_tensor *x, tf_tensor *w) {
    if (!x || !w) return NULL;
    char sx[64], sw[64];
    if (x->dtype != TF_DTYPE_F32 || w->dtype != TF_DTYPE_F32 || x->ndim != 4 || w->ndim != 2 ||
        w->shape[0] != x->shape[1] || w->shape[1] < 1 || w->shape[1] % 2 == 0)
        return tf_set_error("depthwise_conv: input %s must be F32 (B,C,T,D) and weight %s F32 (C,K) of the same C, "
                            "K odd", tf_shape_str(x, sx, sizeof sx), tf_shape_str(w, sw, sizeof sw)), NULL;
    tf_conv_params *p = tf_ctx_alloc(ctx, sizeof *p);
    if (!p) return NULL;
    *p = (tf_conv_params){x->shape[0], x->shape[1], x->shape[2], x->shape[3], w->shape[1]};
    tf_tensor *in[2] = {tf_contiguous(ctx, x), tf_contiguous(ctx, w)};
    if (!in[0] || !in[1]) return NULL;
    return tf_node_run(ctx, tf_node_new(ctx, TF_OP_DEPTHWISE_CONV, 2, in, TF_DTYPE_F32, 4, x->shape, p));
}
