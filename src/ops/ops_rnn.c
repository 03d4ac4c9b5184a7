/* Recurrent cells as fused ops: PyTorch's GRUCell and LSTMCell, the same
 * equations and weight layout (weight_ih (G*H,I), weight_hh (G*H,H), bias_ih,
 * bias_hh (G*H); gates r,z,n for the GRU (G = 3), i,f,g,o for the LSTM (G = 4)):
 *
 *   GRU   r = s(W_ir x + b_ir + W_hr h + b_hr)     z = s(W_iz x + b_iz + W_hz h + b_hz)
 *         n = tanh(W_in x + b_in + r * (W_hn h + b_hn))      h' = (1 - z) n + z h
 *   LSTM  i, f, o = s(W_i* x + b_i* + W_h* h + b_h*)  g = tanh(same)
 *         c' = f c + i g      h' = o tanh(c')
 *
 * The products go through tf_gemm_acc; the gates are element-wise per row.
 * An optional pad mask U8 (B) (nonzero: this row's step is padding) makes a
 * row keep its state: h' = h (and c' = c), which is what a packed sequence
 * gives a row past its length. The LSTM's output is (2,B,H): h' then c', so
 * both halves are contiguous views (tf_lstm_cell_h / _c). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "kernels.h"
#include "ops_internal.h"

typedef struct {
    int64_t B, I, H;
    float *dg_i, *dg_h; /* (B,G*H) each: pre-activation gradients (backward scratch; dg_h GRU only) */
} tf_rnn_params;

/* The inputs in their fixed slots; absent biases and mask are NULL. */
enum { RNN_X, RNN_H, RNN_C, RNN_WIH, RNN_WHH, RNN_BIH, RNN_BHH, RNN_PAD, RNN_NIN };

static inline float sigm(float v) { return 1.0f / (1.0f + expf(-v)); }
static const float *fdata(const tf_tensor *t) { return t ? tf_f32(t) : NULL; }

/* dst (B,N) = a + b per row (each bias (N) may be NULL). */
static void fill_bias(float *dst, const float *a, const float *b, int64_t B, int64_t N) {
    for (int64_t j = 0; j < N; j++) dst[j] = (a ? a[j] : 0.0f) + (b ? b[j] : 0.0f);
    for (int64_t r = 1; r < B; r++) memcpy(dst + r * N, dst, (size_t)N * sizeof *dst);
}

/* Weight and bias gradients of one input product: dW (G*H,K) += dg^T in, db += colsum(dg). */
static void rnn_weight_grads(tf_node *n, int w, int b, const float *dg, const tf_tensor *in, int64_t K) {
    const tf_rnn_params *p = n->params;
    int64_t GH = n->in[w]->shape[0];
    if (n->in[w]->grad) tf_gemm_acc(n->in[w]->grad, dg, tf_f32(in), GH, K, p->B, 1, 0, TF_GEMM_AUTO);
    if (n->in[b] && n->in[b]->grad) tf_col_sums(n->in[b]->grad, dg, p->B, GH);
}

/* ---------------------------------------------------------------- GRU */

/* One row: gi (3H) becomes the activated gates r, z, n; gh (3H) keeps W_h h + b_h.
 * In passes through the kernel set's tanh (sigmoid(a) = (1 + tanh(a/2)) / 2):
 * libm's scalar tanhf and expf were a tenth of a GRU translation model's step. */
static void gru_row(const tf_kernels *k, float *out, float *gi, const float *gh, const float *h, int pad, int64_t H) {
    for (int64_t j = 0; j < 2 * H; j++) gi[j] = 0.5f * (gi[j] + gh[j]);
    k->tanh(gi, gi, 2 * H);
    for (int64_t j = 0; j < 2 * H; j++) gi[j] = 0.5f + 0.5f * gi[j];  // r, z
    for (int64_t j = 0; j < H; j++) gi[2 * H + j] += gi[j] * gh[2 * H + j];
    k->tanh(gi + 2 * H, gi + 2 * H, H);                                // n
    for (int64_t j = 0; j < H; j++) {
        float z = gi[H + j], nn = gi[2 * H + j];
        out[j] = pad ? h[j] : (1.0f - z) * nn + z * h[j];
    }
}

void tf_op_gru_cell_forward(tf_node *n) {
    const tf_rnn_params *p = n->params;
    int64_t B = p->B, I = p->I, H = p->H, G = 3 * H;
    const float *h = tf_f32(n->in[RNN_H]);                           // (B,H)
    const uint8_t *pad = n->in[RNN_PAD] ? tf_u8(n->in[RNN_PAD]) : NULL; // (B)
    float *gi = n->saved[0], *gh = n->saved[1], *out = tf_f32(n->out);  // (B,3H), (B,3H), (B,H)
    fill_bias(gi, fdata(n->in[RNN_BIH]), NULL, B, G);
    fill_bias(gh, fdata(n->in[RNN_BHH]), NULL, B, G);
    tf_gemm_acc(gi, tf_f32(n->in[RNN_X]), tf_f32(n->in[RNN_WIH]), B, G, I, 0, 1, TF_GEMM_AUTO);  // x W_ih^T
    tf_gemm_acc(gh, h, tf_f32(n->in[RNN_WHH]), B, G, H, 0, 1, TF_GEMM_AUTO);                     // h W_hh^T
    const tf_kernels *k = tf_kern();
    TF_PARALLEL_FOR(B * H > 16384, b, B,
                    gru_row(k, out + b * H, gi + b * G, gh + b * G, h + b * H, pad && pad[b], H));
}

/* One row of the backward: dgi, dgh (3H) from the output gradient g (H); dh += g z. */
static void gru_row_grad(float *dgi, float *dgh, float *dh, const float *g, const float *gates, const float *gh,
                         const float *h, int pad, int64_t H) {
    for (int64_t j = 0; j < H; j++) {
        if (pad) {
            dgi[j] = dgi[H + j] = dgi[2 * H + j] = dgh[j] = dgh[H + j] = dgh[2 * H + j] = 0.0f;
            if (dh) dh[j] += g[j];
            continue;
        }
        float r = gates[j], z = gates[H + j], nn = gates[2 * H + j];
        float dn = g[j] * (1.0f - z) * (1.0f - nn * nn);  // through tanh
        float dz = g[j] * (h[j] - nn) * z * (1.0f - z);
        float dr = dn * gh[2 * H + j] * r * (1.0f - r);
        dgi[j] = dgh[j] = dr, dgi[H + j] = dgh[H + j] = dz;
        dgi[2 * H + j] = dn, dgh[2 * H + j] = dn * r;
        if (dh) dh[j] += g[j] * z;
    }
}

void tf_op_gru_cell_backward(tf_node *n) {
    const tf_rnn_params *p = n->params;
    int64_t B = p->B, I = p->I, H = p->H, G = 3 * H;
    tf_tensor *X = n->in[RNN_X], *Hs = n->in[RNN_H];
    const uint8_t *pad = n->in[RNN_PAD] ? tf_u8(n->in[RNN_PAD]) : NULL; // (B)
    const float *g = n->out->grad, *h = tf_f32(Hs);                     // (B,H) each
    float *dgi = p->dg_i, *dgh = p->dg_h;                               // (B,3H) each
    TF_PARALLEL_FOR(B * H > 16384, b, B,
                    gru_row_grad(dgi + b * G, dgh + b * G, Hs->grad ? Hs->grad + b * H : NULL, g + b * H,
                                 n->saved[0] + b * G, n->saved[1] + b * G, h + b * H, pad && pad[b], H));
    if (X->grad) tf_gemm_acc(X->grad, dgi, tf_f32(n->in[RNN_WIH]), B, I, G, 0, 0, TF_GEMM_AUTO);  // dgi W_ih
    if (Hs->grad) tf_gemm_acc(Hs->grad, dgh, tf_f32(n->in[RNN_WHH]), B, H, G, 0, 0, TF_GEMM_AUTO); // dgh W_hh
    rnn_weight_grads(n, RNN_WIH, RNN_BIH, dgi, X, I);
    rnn_weight_grads(n, RNN_WHH, RNN_BHH, dgh, Hs, H);
}

/* ---------------------------------------------------------------- LSTM */

/* One row: ga (4H) becomes the activated gates i, f, g, o; tc (H) = tanh(c'). */
static void lstm_row(float *ho, float *co, float *ga, float *tc, const float *h, const float *c, int pad,
                     int64_t H) {
    for (int64_t j = 0; j < H; j++) {
        float i = sigm(ga[j]), f = sigm(ga[H + j]), gg = tanhf(ga[2 * H + j]), o = sigm(ga[3 * H + j]);
        ga[j] = i, ga[H + j] = f, ga[2 * H + j] = gg, ga[3 * H + j] = o;
        float cn = f * c[j] + i * gg;
        tc[j] = tanhf(cn);
        ho[j] = pad ? h[j] : o * tc[j];
        co[j] = pad ? c[j] : cn;
    }
}

void tf_op_lstm_cell_forward(tf_node *n) {
    const tf_rnn_params *p = n->params;
    int64_t B = p->B, I = p->I, H = p->H, G = 4 * H;
    const float *h = tf_f32(n->in[RNN_H]), *c = tf_f32(n->in[RNN_C]); // (B,H) each
    const uint8_t *pad = n->in[RNN_PAD] ? tf_u8(n->in[RNN_PAD]) : NULL; // (B)
    float *ga = n->saved[0], *tc = n->saved[1], *out = tf_f32(n->out);  // (B,4H), (B,H), (2,B,H)
    fill_bias(ga, fdata(n->in[RNN_BIH]), fdata(n->in[RNN_BHH]), B, G);
    tf_gemm_acc(ga, tf_f32(n->in[RNN_X]), tf_f32(n->in[RNN_WIH]), B, G, I, 0, 1, TF_GEMM_AUTO);  // + x W_ih^T
    tf_gemm_acc(ga, h, tf_f32(n->in[RNN_WHH]), B, G, H, 0, 1, TF_GEMM_AUTO);                     // + h W_hh^T
    TF_PARALLEL_FOR(B * H > 16384, b, B,
                    lstm_row(out + b * H, out + (B + b) * H, ga + b * G, tc + b * H, h + b * H, c + b * H,
                             pad && pad[b], H));
}

/* One row of the backward: dg (4H) from gh, gc (H), the gradients of h' and c'. */
static void lstm_row_grad(float *dg, float *dh, float *dc, const float *gh, const float *gc, const float *ga,
                          const float *tc, const float *c, int pad, int64_t H) {
    for (int64_t j = 0; j < H; j++) {
        if (pad) {
            dg[j] = dg[H + j] = dg[2 * H + j] = dg[3 * H + j] = 0.0f;
            if (dh) dh[j] += gh[j];
            if (dc) dc[j] += gc[j];
            continue;
        }
        float i = ga[j], f = ga[H + j], gg = ga[2 * H + j], o = ga[3 * H + j];
        float dcn = gc[j] + gh[j] * o * (1.0f - tc[j] * tc[j]);  // c' reaches h' through tanh
        dg[j] = dcn * gg * i * (1.0f - i);
        dg[H + j] = dcn * c[j] * f * (1.0f - f);
        dg[2 * H + j] = dcn * i * (1.0f - gg * gg);
        dg[3 * H + j] = gh[j] * tc[j] * o * (1.0f - o);
        if (dc) dc[j] += dcn * f;
    }
}

void tf_op_lstm_cell_backward(tf_node *n) {
    const tf_rnn_params *p = n->params;
    int64_t B = p->B, I = p->I, H = p->H, G = 4 * H;
    tf_tensor *X = n->in[RNN_X], *Hs = n->in[RNN_H], *Cs = n->in[RNN_C];
    const uint8_t *pad = n->in[RNN_PAD] ? tf_u8(n->in[RNN_PAD]) : NULL; // (B)
    const float *g = n->out->grad;                                      // (2,B,H)
    float *dg = p->dg_i;                                                // (B,4H)
    TF_PARALLEL_FOR(B * H > 16384, b, B,
                    lstm_row_grad(dg + b * G, Hs->grad ? Hs->grad + b * H : NULL,
                                  Cs->grad ? Cs->grad + b * H : NULL, g + b * H, g + (B + b) * H,
                                  n->saved[0] + b * G, n->saved[1] + b * H, tf_f32(Cs) + b * H,
                                  pad && pad[b], H));
    if (X->grad) tf_gemm_acc(X->grad, dg, tf_f32(n->in[RNN_WIH]), B, I, G, 0, 0, TF_GEMM_AUTO);  // dg W_ih
    if (Hs->grad) tf_gemm_acc(Hs->grad, dg, tf_f32(n->in[RNN_WHH]), B, H, G, 0, 0, TF_GEMM_AUTO); // dg W_hh
    rnn_weight_grads(n, RNN_WIH, RNN_BIH, dg, X, I);
    rnn_weight_grads(n, RNN_WHH, RNN_BHH, dg, Hs, H);
}

/* ---------------------------------------------------------------- constructors */

static int is_f32(const tf_tensor *t, int ndim, int64_t d0, int64_t d1) {
    return t->dtype == TF_DTYPE_F32 && t->ndim == ndim && t->shape[0] == d0 && (ndim == 1 || t->shape[1] == d1);
}

/* Shapes of a cell's inputs (in[] in the RNN_* slots); an error naming the cell. */
static int rnn_check(const char *who, tf_tensor **in, int64_t G) {
    char s[64], e[64];
    const tf_tensor *x = in[RNN_X], *h = in[RNN_H];
    if (x->dtype != TF_DTYPE_F32 || x->ndim != 2 || h->dtype != TF_DTYPE_F32 || h->ndim != 2 ||
        h->shape[0] != x->shape[0] || h->shape[1] < 1)
        return tf_set_error("%s: input %s and state %s must be F32 (B,I) and (B,H)", who, tf_shape_str(x, s, sizeof s),
                            tf_shape_str(h, e, sizeof e));
    int64_t B = x->shape[0], I = x->shape[1], H = h->shape[1];
    if (in[RNN_C] && !is_f32(in[RNN_C], 2, B, H))
        return tf_set_error("%s: cell state %s must be F32 (%lld,%lld)", who, tf_shape_str(in[RNN_C], s, sizeof s),
                            (long long)B, (long long)H);
    static const char *const names[4] = {"weight_ih", "weight_hh", "bias_ih", "bias_hh"};
    for (int k = 0; k < 4; k++) {
        const tf_tensor *t = in[RNN_WIH + k];
        int64_t cols = k == 0 ? I : H;
        if (!t || is_f32(t, k < 2 ? 2 : 1, G * H, cols)) continue;
        if (k < 2) snprintf(e, sizeof e, "(%lld,%lld)", (long long)(G * H), (long long)cols);
        else snprintf(e, sizeof e, "(%lld)", (long long)(G * H));
        return tf_set_error("%s: %s %s must be F32 %s", who, names[k], tf_shape_str(t, s, sizeof s), e);
    }
    const tf_tensor *pad = in[RNN_PAD];
    if (pad && (pad->dtype != TF_DTYPE_U8 || pad->ndim != 1 || pad->shape[0] != B))
        return tf_set_error("%s: pad mask %s must be U8 (%lld)", who, tf_shape_str(pad, s, sizeof s), (long long)B);
    return 0;
}

/* Validate, record and run a cell of G gates; out_ndim 2: (B,H), 3: (2,B,H). */
static tf_tensor *rnn_cell_new(tf_ctx *ctx, tf_op op, const char *who, tf_tensor **raw, int64_t G) {
    if (!raw[RNN_X] || !raw[RNN_H] || !raw[RNN_WIH] || !raw[RNN_WHH] || (op == TF_OP_LSTM_CELL && !raw[RNN_C]))
        return NULL;
    if (rnn_check(who, raw, G)) return NULL;
    tf_tensor *in[RNN_NIN], *nn_in[RNN_NIN];
    for (int k = 0; k < RNN_NIN; k++) {
        in[k] = raw[k] ? tf_contiguous(ctx, raw[k]) : NULL;
        if (raw[k] && !in[k]) return NULL;
        nn_in[k] = in[k] ? in[k] : in[RNN_X]; /* tf_node_new rejects NULL: patched below */
    }
    tf_rnn_params *p = tf_ctx_alloc(ctx, sizeof *p);
    if (!p) return NULL;
    p->B = in[RNN_X]->shape[0], p->I = in[RNN_X]->shape[1], p->H = in[RNN_H]->shape[1];
    size_t bg, bh;
    if (!tf_mul_size((size_t)p->B, (size_t)(G * p->H), &bg) || !tf_mul_size((size_t)p->B, 2 * (size_t)p->H, &bh) ||
        bg > INT64_MAX / 2)
        return tf_set_error("%s: batch %lld by %lld gates overflows", who, (long long)p->B,
                            (long long)(G * p->H)), NULL;
    int lstm = op == TF_OP_LSTM_CELL;
    int64_t shape[3] = {2, p->B, p->H};
    tf_node *n = tf_node_new(ctx, op, RNN_NIN, nn_in, TF_DTYPE_F32, lstm ? 3 : 2, lstm ? shape : shape + 1, p);
    if (!n) return NULL;
    for (int k = 0; k < RNN_NIN; k++) n->in[k] = in[k];
    /* GRU: x W_ih^T + b_ih then gates, h W_hh^T + b_hh; LSTM: gates, tanh(c'): each written whole */
    n->saved[0] = tf_ctx_scratch(ctx, (int64_t)bg);
    n->saved[1] = tf_ctx_scratch(ctx, lstm ? p->B * p->H : (int64_t)bg);
    if (!n->saved[0] || !n->saved[1]) return NULL;
    if (n->out->grad && (!(p->dg_i = tf_ctx_scratch(ctx, (int64_t)bg)) ||
                         (!lstm && !(p->dg_h = tf_ctx_scratch(ctx, (int64_t)bg)))))
        return NULL;
    return tf_node_run(ctx, n);
}

tf_tensor *tf_gru_cell_masked(tf_ctx *ctx, tf_tensor *x, tf_tensor *h, tf_tensor *w_ih, tf_tensor *w_hh,
                              tf_tensor *b_ih, tf_tensor *b_hh, tf_tensor *pad) {
    tf_tensor *in[RNN_NIN] = {x, h, NULL, w_ih, w_hh, b_ih, b_hh, pad};
    return rnn_cell_new(ctx, TF_OP_GRU_CELL, "gru_cell", in, 3);
}

tf_tensor *tf_gru_cell(tf_ctx *ctx, tf_tensor *x, tf_tensor *h, tf_tensor *w_ih, tf_tensor *w_hh, tf_tensor *b_ih,
                       tf_tensor *b_hh) {
    return tf_gru_cell_masked(ctx, x, h, w_ih, w_hh, b_ih, b_hh, NULL);
}

tf_tensor *tf_lstm_cell_masked(tf_ctx *ctx, tf_tensor *x, tf_tensor *h, tf_tensor *c, tf_tensor *w_ih,
                               tf_tensor *w_hh, tf_tensor *b_ih, tf_tensor *b_hh, tf_tensor *pad) {
    tf_tensor *in[RNN_NIN] = {x, h, c, w_ih, w_hh, b_ih, b_hh, pad};
    return rnn_cell_new(ctx, TF_OP_LSTM_CELL, "lstm_cell", in, 4);
}

tf_tensor *tf_lstm_cell(tf_ctx *ctx, tf_tensor *x, tf_tensor *h, tf_tensor *c, tf_tensor *w_ih, tf_tensor *w_hh,
                        tf_tensor *b_ih, tf_tensor *b_hh) {
    return tf_lstm_cell_masked(ctx, x, h, c, w_ih, w_hh, b_ih, b_hh, NULL);
}

/* Half k (0: h', 1: c') of an LSTM cell's (2,B,H) output as a (B,H) view. */
static tf_tensor *lstm_half(tf_ctx *ctx, tf_tensor *hc, int k) {
    if (!hc) return NULL;
    if (hc->ndim != 3 || hc->shape[0] != 2)
        return tf_set_error("lstm_cell: output must be (2,B,H), not %d-d", hc->ndim), NULL;
    return tf_reshape(ctx, tf_narrow(ctx, hc, 0, k, 1), 2, hc->shape + 1);
}

tf_tensor *tf_lstm_cell_h(tf_ctx *ctx, tf_tensor *hc) { return lstm_half(ctx, hc, 0); }
tf_tensor *tf_lstm_cell_c(tf_ctx *ctx, tf_tensor *hc) { return lstm_half(ctx, hc, 1); }
