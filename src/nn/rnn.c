/* The RNN baseline's layers: a GRU or LSTM over a sequence, running the
 * fused cell op (src/ops/ops_rnn.c) step by step; a bidirectional encoder
 * h_j = [->h_j; <-h_j]; and Bahdanau's additive attention
 *
 *   e_ij = v_a^T tanh(W_a s_{i-1} + U_a h_j),  alpha_ij = softmax_j(e_ij),  c_i = sum_j alpha_ij h_j.
 *
 * Padding follows PyTorch's pack_padded_sequence: a padded step leaves its
 * row's state unchanged (so the reverse direction starts at each row's own
 * last real token and h_n is the state there) and outputs zeros. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "../core/core_internal.h"
#include "nn_internal.h"
#include "tformer/heads.h"

/* ---------------------------------------------------------------- registration */

static int rnn_name(char *out, size_t n, const char *prefix, const char *what, const char *suffix) {
    if ((size_t)snprintf(out, n, "%s%s%s", prefix, what, suffix) >= n)
        return tf_set_error("rnn %.64s...: parameter name longer than %zu bytes", prefix, n - 1);
    return 0;
}

int tf_rnn_register(tf_params *ps, const char *prefix, const char *suffix, tf_rnn *r, tf_rnn_kind kind,
                    int64_t input_size, int64_t hidden_size, int bias, int reverse) {
    if (!ps || !prefix || !suffix || !r) return tf_set_error("rnn: registry, prefix, suffix and layer are required");
    if (kind != TF_RNN_GRU && kind != TF_RNN_LSTM) return tf_set_error("rnn %s: unknown cell kind %d", prefix, kind);
    if (input_size <= 0 || hidden_size <= 0 || hidden_size > INT64_MAX / 4 / hidden_size ||
        input_size > INT64_MAX / 4 / hidden_size)
        return tf_set_error("rnn %s: sizes input %lld, hidden %lld must be positive and small enough", prefix,
                            (long long)input_size, (long long)hidden_size);
    memset(r, 0, sizeof *r);
    r->kind = kind, r->input_size = input_size, r->hidden_size = hidden_size, r->reverse = reverse != 0;
    int64_t GH = (kind == TF_RNN_GRU ? 3 : 4) * hidden_size;
    /* PyTorch draws every tensor from U(-k, k), k = 1/sqrt(H): the same variance */
    float std = tf_fan_in_std(hidden_size);
    char n[4][512];
    static const char *const what[4] = {"weight_ih", "weight_hh", "bias_ih", "bias_hh"};
    for (int k = 0; k < 4; k++)
        if (rnn_name(n[k], sizeof n[k], prefix, what[k], suffix)) return -1;
    if (tf_params_add(ps, n[0], &r->weight_ih, 2, (int64_t[]){GH, input_size}, std) ||  // (G*H,I)
        tf_params_add(ps, n[1], &r->weight_hh, 2, (int64_t[]){GH, hidden_size}, std))  // (G*H,H)
        return -1;
    if (!bias) return 0;
    return tf_params_add(ps, n[2], &r->bias_ih, 1, (int64_t[]){GH}, std) ||  // (G*H)
           tf_params_add(ps, n[3], &r->bias_hh, 1, (int64_t[]){GH}, std) ? -1 : 0;
}

int tf_birnn_register(tf_params *ps, const char *prefix, int layer, tf_birnn *b, tf_rnn_kind kind,
                      int64_t input_size, int64_t hidden_size, int bias) {
    if (!b) return tf_set_error("birnn: layer is required");
    char fwd[32], bwd[40];
    snprintf(fwd, sizeof fwd, "_l%d", layer);
    snprintf(bwd, sizeof bwd, "%s_reverse", fwd);
    return tf_rnn_register(ps, prefix, fwd, &b->fwd, kind, input_size, hidden_size, bias, 0) ||
           tf_rnn_register(ps, prefix, bwd, &b->bwd, kind, input_size, hidden_size, bias, 1) ? -1 : 0;
}

/* ---------------------------------------------------------------- one direction */

/* Each row's length from a pad mask (B,T) U8 (nonzero = padding, trailing
 * only), or T for every row without one; NULL and an error otherwise. */
static int64_t *row_lengths(tf_ctx *ctx, const tf_tensor *pad, int64_t B, int64_t T, const char *who) {
    char s[64];
    if (pad && (pad->dtype != TF_DTYPE_U8 || pad->ndim != 2 || pad->shape[0] != B || pad->shape[1] != T))
        return tf_set_error("%s: pad mask %s must be U8 (%lld,%lld)", who, tf_shape_str(pad, s, sizeof s),
                            (long long)B, (long long)T), NULL;
    size_t bytes;
    int64_t *len = tf_mul_size((size_t)B, sizeof *len, &bytes) ? tf_ctx_alloc(ctx, bytes) : NULL;
    if (!len) return tf_set_error("%s: %lld rows do not fit", who, (long long)B), NULL;
    for (int64_t b = 0; b < B; b++) {
        len[b] = T;
        for (int64_t t = 0; pad && t < T; t++) {
            int p = pad->data && ((const uint8_t *)pad->data)[b * pad->stride[0] + t * pad->stride[1]];
            if (p && len[b] == T) len[b] = t;
            else if (!p && len[b] < T)
                return tf_set_error("%s: row %lld has a real token at %lld after padding (padding must be trailing)",
                                    who, (long long)b, (long long)t), NULL;
        }
    }
    return len;
}

/* The pad mask U8 (B) of step t, or NULL when no row pads there. */
static tf_tensor *step_pad(tf_ctx *ctx, const int64_t *len, int64_t B, int64_t t, tf_tensor **out) {
    int any = 0;
    for (int64_t b = 0; b < B; b++) any |= t >= len[b];
    *out = NULL;
    if (!any) return NULL;
    tf_tensor *p = tf_tensor_new(ctx, TF_DTYPE_U8, 1, &B, 0);  // (B)
    if (p)
        for (int64_t b = 0; b < B; b++) tf_u8(p)[b] = t >= len[b];
    return *out = p;
}

/* The starting state: the caller's, or zeros (B,H). */
static tf_tensor *state0(tf_ctx *ctx, tf_tensor *given, int64_t B, int64_t H) {
    return given ? given : tf_tensor_new(ctx, TF_DTYPE_F32, 2, (int64_t[]){B, H}, 0);  // (B,H)
}

/* Zeros where pad is set: y (B,T,H) * keep (B,T,1). */
static tf_tensor *zero_padding(tf_ctx *ctx, tf_tensor *y, const int64_t *len, int64_t B, int64_t T) {
    int any = 0;
    for (int64_t b = 0; b < B; b++) any |= len[b] < T;
    if (!any || !y) return y;
    tf_tensor *keep = tf_tensor_new(ctx, TF_DTYPE_F32, 3, (int64_t[]){B, T, 1}, 0);  // (B,T,1)
    if (!keep) return NULL;
    for (int64_t b = 0; b < B; b++)
        for (int64_t t = 0; t < len[b]; t++) tf_f32(keep)[b * T + t] = 1.0f;
    return tf_mul(ctx, y, keep);
}

static int rnn_check(const tf_rnn *r, const tf_tensor *x) {
    char s[64];
    if (!r || !r->weight_ih || !r->weight_hh) return tf_set_error("rnn: the layer is not registered and allocated");
    if (x->dtype != TF_DTYPE_F32 || x->ndim != 3 || x->shape[2] != r->input_size || x->shape[1] < 1)
        return tf_set_error("rnn: input %s must be F32 (B,T,I=%lld) with T >= 1", tf_shape_str(x, s, sizeof s),
                            (long long)r->input_size);
    return 0;
}

float tf_fan_in_std(int64_t in) { return (float)(1.0 / sqrt(3.0 * (double)in)); }

int tf_rnn_cell_step(tf_ctx *ctx, const tf_rnn *r, tf_tensor *x, tf_tensor *pad, tf_rnn_state *st) {
    if (r->kind == TF_RNN_GRU) {
        st->h = tf_gru_cell_masked(ctx, x, st->h, r->weight_ih, r->weight_hh, r->bias_ih, r->bias_hh, pad);  // (B,H)
    } else {
        tf_tensor *hc = tf_lstm_cell_masked(ctx, x, st->h, st->c, r->weight_ih, r->weight_hh, r->bias_ih,
                                            r->bias_hh, pad);  // (2,B,H)
        st->h = tf_lstm_cell_h(ctx, hc), st->c = tf_lstm_cell_c(ctx, hc);
    }
    return st->h ? 0 : -1;
}

/* One step at position t: the new state in st, the output (B,1,H) returned. */
static tf_tensor *rnn_step(tf_ctx *ctx, const tf_rnn *r, tf_tensor *xs, int64_t t, tf_tensor *pad, tf_rnn_state *st) {
    int64_t B = xs->shape[1], I = xs->shape[2], H = r->hidden_size;
    tf_tensor *xt = tf_reshape(ctx, tf_narrow(ctx, xs, 0, t, 1), 2, (int64_t[]){B, I});  // (B,I)
    tf_rnn_cell_step(ctx, r, xt, pad, st);
    return tf_reshape(ctx, st->h, 3, (int64_t[]){B, 1, H});  // (B,1,H)
}

tf_tensor *tf_rnn_forward(tf_ctx *ctx, const tf_rnn *r, tf_tensor *x, tf_tensor *pad, const tf_rnn_state *init,
                          tf_rnn_state *final) {
    if (!x) return NULL;
    if (rnn_check(r, x)) return NULL;
    int64_t B = x->shape[0], T = x->shape[1], H = r->hidden_size;
    if (T > INT32_MAX) return tf_set_error("rnn: %lld steps are too many", (long long)T), NULL;
    int64_t *len = row_lengths(ctx, pad, B, T, "rnn");
    tf_tensor **outs = len ? tf_ctx_alloc(ctx, (size_t)T * sizeof *outs) : NULL;  // T of (B,1,H)
    if (!outs) return NULL;
    tf_tensor *xs = tf_contiguous(ctx, tf_transpose(ctx, x, 0, 1));  // (T,B,I)
    tf_rnn_state st = {state0(ctx, init ? init->h : NULL, B, H), NULL};
    if (r->kind == TF_RNN_LSTM) st.c = state0(ctx, init ? init->c : NULL, B, H);
    for (int64_t s = 0; s < T; s++) {
        int64_t t = r->reverse ? T - 1 - s : s;
        tf_tensor *pt;
        step_pad(ctx, len, B, t, &pt);
        if (!xs || !(outs[t] = rnn_step(ctx, r, xs, t, pt, &st))) return NULL;
    }
    tf_tensor *y = zero_padding(ctx, tf_concat(ctx, (int)T, outs, 1), len, B, T);  // (B,T,H)
    if (y && final) *final = st;
    return y;
}

tf_tensor *tf_birnn_forward(tf_ctx *ctx, const tf_birnn *b, tf_tensor *x, tf_tensor *pad, tf_rnn_state final[2]) {
    if (!x) return NULL;
    if (!b) return tf_set_error("birnn: layer is required"), NULL;
    tf_tensor *y[2] = {tf_rnn_forward(ctx, &b->fwd, x, pad, NULL, final ? &final[0] : NULL),
                       tf_rnn_forward(ctx, &b->bwd, x, pad, NULL, final ? &final[1] : NULL)};
    if (!y[0] || !y[1]) return NULL;
    return tf_concat(ctx, 2, y, -1);  // (B,T,2H) = [->h_j; <-h_j]
}

/* ---------------------------------------------------------------- Bahdanau attention */

int tf_additive_attn_register(tf_params *ps, const char *prefix, tf_additive_attn *a, int64_t dec_size,
                              int64_t enc_size, int64_t attn_size, int bias, float init_std) {
    if (!ps || !prefix || !a) return tf_set_error("additive attention: registry, prefix and module are required");
    char n[3][512];
    static const char *const what[3] = {"W_a", "U_a", "v_a"};
    for (int k = 0; k < 3; k++)
        if (rnn_name(n[k], sizeof n[k], prefix, what[k], "")) return -1;
    memset(a, 0, sizeof *a);
    a->dec_size = dec_size, a->enc_size = enc_size, a->attn_size = attn_size;
    return tf_linear_register(ps, n[0], &a->W_a, dec_size, attn_size, bias, init_std) ||  // (A,Hd)
           tf_linear_register(ps, n[1], &a->U_a, enc_size, attn_size, bias, init_std) ||  // (A,He)
           tf_linear_register(ps, n[2], &a->v_a, attn_size, 1, 0, init_std) ? -1 : 0;     // (1,A)
}

static int attn_check(const tf_additive_attn *a, const tf_tensor *h) {
    char s[64];
    if (!a || !a->W_a.weight || !a->U_a.weight || !a->v_a.weight)
        return tf_set_error("additive attention: the module is not registered and allocated");
    if (h->dtype != TF_DTYPE_F32 || h->ndim != 3 || h->shape[2] != a->enc_size)
        return tf_set_error("additive attention: encoder outputs %s must be F32 (B,S,He=%lld)",
                            tf_shape_str(h, s, sizeof s), (long long)a->enc_size);
    return 0;
}

tf_tensor *tf_additive_attn_keys(tf_ctx *ctx, const tf_additive_attn *a, tf_tensor *h) {
    if (!h) return NULL;
    if (attn_check(a, h)) return NULL;
    return tf_linear_forward(ctx, &a->U_a, h);  // (B,S,A) = U_a h_j (+ b)
}

tf_tensor *tf_additive_attn_forward(tf_ctx *ctx, const tf_additive_attn *a, tf_tensor *s, tf_tensor *h,
                                    tf_tensor *keys, tf_tensor *pad, tf_tensor **alpha) {
    if (!s || !h) return NULL;
    if (attn_check(a, h)) return NULL;
    char sh[64];
    int64_t B = h->shape[0], S = h->shape[1], A = a->attn_size;
    if (s->dtype != TF_DTYPE_F32 || s->ndim != 2 || s->shape[0] != B || s->shape[1] != a->dec_size)
        return tf_set_error("additive attention: decoder state %s must be F32 (%lld,%lld)",
                            tf_shape_str(s, sh, sizeof sh), (long long)B, (long long)a->dec_size), NULL;
    if (pad && (pad->dtype != TF_DTYPE_U8 || pad->ndim != 2 || pad->shape[0] != B || pad->shape[1] != S))
        return tf_set_error("additive attention: pad mask %s must be U8 (%lld,%lld)",
                            tf_shape_str(pad, sh, sizeof sh), (long long)B, (long long)S), NULL;
    if (!keys) keys = tf_additive_attn_keys(ctx, a, h);  // (B,S,A)
    if (keys && (keys->ndim != 3 || keys->shape[0] != B || keys->shape[1] != S || keys->shape[2] != A))
        return tf_set_error("additive attention: keys %s must be (%lld,%lld,%lld)", tf_shape_str(keys, sh, sizeof sh),
                            (long long)B, (long long)S, (long long)A), NULL;
    tf_tensor *q = tf_reshape(ctx, tf_linear_forward(ctx, &a->W_a, s), 3, (int64_t[]){B, 1, A});  // (B,1,A)
    tf_tensor *e = tf_linear_forward(ctx, &a->v_a, tf_tanh(ctx, tf_add(ctx, keys, q)));            // (B,S,1)
    tf_tensor *w = tf_softmax(ctx, tf_reshape(ctx, e, 2, (int64_t[]){B, S}), pad);                 // (B,S)
    tf_tensor *c = tf_matmul(ctx, tf_reshape(ctx, w, 3, (int64_t[]){B, 1, S}), h, 0, 0);           // (B,1,He)
    c = tf_reshape(ctx, c, 2, (int64_t[]){B, a->enc_size});                                         // (B,He)
    if (c && alpha) *alpha = w;
    return c;
}
