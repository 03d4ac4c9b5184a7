/* Nyström attention as Hugging Face's NystromformerSelfAttention computes it
 * (transformers 4.x, modeling_nystromformer.py), composed of the op table's
 * ops so that autodiff gives the backward:
 *
 *   q, k = q / D^(1/4), k / D^(1/4)                          (B,H,T,D)
 *   L == 0 or T == L:  out = softmax(q k^T + mask) v          exact
 *   else:  q~, k~ = means of L segments of T/L rows          (B,H,L,D)
 *          K1 = softmax(q k~^T)                               (B,H,T,L)
 *          K2 = softmax(q~ k~^T)                              (B,H,L,L)
 *          K3 = softmax(q~ k^T + mask)                        (B,H,L,T)
 *          out = (K1 pinv(K2)) (K3 v)
 *   conv:  out += depthwise_conv(v, w)                        w (H,1,K,1)
 *
 * pinv is the iterative Moore-Penrose inverse of Razavi et al. as Hugging
 * Face runs it: Z0 = K2^T / m, m the largest column sum of K2 over the whole
 * batch and every head (one number: a row's answer depends on its batch),
 * then 6 times Z <- Z/4 (13 I - K2 Z (15 I - K2 Z (7 I - K2 Z))).
 *
 * The key padding mask acts only where transformers adds it: on K3 and in
 * the exact branch. Padded positions still enter the landmarks' means, K1's
 * queries and the convolution, as in transformers. */
#include <math.h>

#include "nn_internal.h"

#define PINV_STEPS 6

/* c I (L,L), a constant. */
static tf_tensor *scaled_identity(tf_ctx *ctx, int64_t L, float c) {
    tf_tensor *t = tf_tensor_new(ctx, TF_DTYPE_F32, 2, (int64_t[]){L, L}, 0);
    for (int64_t i = 0; t && i < L; i++) tf_f32(t)[i * L + i] = c;
    return t;
}

/* c I - x, x (...,L,L) */
static tf_tensor *minus_from(tf_ctx *ctx, tf_tensor *identity, tf_tensor *x) {
    return tf_add(ctx, identity, tf_scale(ctx, x, -1.0f));
}

/* Hugging Face's iterative_inv(K) of K (B,H,L,L), init_option "original". */
static tf_tensor *pinv(tf_ctx *ctx, tf_tensor *k) {
    int64_t L = k->shape[3];
    tf_tensor *i7 = scaled_identity(ctx, L, 7.0f), *i13 = scaled_identity(ctx, L, 13.0f);
    tf_tensor *i15 = scaled_identity(ctx, L, 15.0f);
    tf_tensor *m = tf_max(ctx, tf_sum(ctx, k, 2, 0), TF_DIM_ALL, 1);              // (1,1,1): max column sum
    tf_tensor *z = tf_mul(ctx, tf_transpose(ctx, k, 2, 3), tf_reciprocal(ctx, m));  // z: (B,H,L,L)
    for (int i = 0; i < PINV_STEPS; i++) {
        tf_tensor *kz = tf_matmul(ctx, k, z, 0, 0);
        tf_tensor *t = minus_from(ctx, i7, kz);
        t = minus_from(ctx, i15, tf_matmul(ctx, kz, t, 0, 0));
        t = minus_from(ctx, i13, tf_matmul(ctx, kz, t, 0, 0));
        z = tf_matmul(ctx, tf_scale(ctx, z, 0.25f), t, 0, 0);
    }
    return z;
}

/* x (B,H,T,D) -> the means of L consecutive segments (B,H,L,D). */
static tf_tensor *segment_means(tf_ctx *ctx, tf_tensor *x, int64_t L) {
    if (!x) return NULL;
    int64_t B = x->shape[0], H = x->shape[1], T = x->shape[2], D = x->shape[3];
    return tf_mean(ctx, tf_reshape(ctx, x, 5, (int64_t[]){B, H, L, T / L, D}), 3, 0);
}

/* The key padding mask as (B,1,1,T) for the scores, or NULL. */
static int padding_bias(tf_ctx *ctx, const tf_attn_mask *mask, int64_t B, int64_t T, tf_tensor **bias) {
    *bias = NULL;
    if (!mask) return 0;
    if (mask->mask || mask->causal)
        return tf_set_error("attention: Nystrom attention takes a key padding mask only (no attn_mask, not causal)");
    tf_tensor *t = mask->key_padding_mask;
    if (!t) return 0;
    char s[64];
    if (t->ndim != 2 || t->shape[0] != B || t->shape[1] != T || (t->dtype != TF_DTYPE_U8 && t->dtype != TF_DTYPE_F32))
        return tf_set_error("attention: key_padding_mask %s should be U8 or F32 (%lld,%lld)",
                            tf_shape_str(t, s, sizeof s), (long long)B, (long long)T);
    *bias = tf_reshape(ctx, t, 4, (int64_t[]){B, 1, 1, T});
    return *bias ? 0 : -1;
}

/* (K1 pinv(K2)) (K3 v): the landmarks' approximation of softmax(q k^T + mask) v. */
static tf_tensor *approximate(tf_ctx *ctx, tf_tensor *q, tf_tensor *k, tf_tensor *v, tf_tensor *bias, int64_t L) {
    tf_tensor *ql = segment_means(ctx, q, L), *kl = segment_means(ctx, k, L);  // (B,H,L,D) each
    tf_tensor *k1 = tf_softmax(ctx, tf_matmul(ctx, q, kl, 0, 1), NULL);        // (B,H,T,L)
    tf_tensor *k2 = tf_softmax(ctx, tf_matmul(ctx, ql, kl, 0, 1), NULL);       // (B,H,L,L)
    tf_tensor *k3 = tf_softmax(ctx, tf_matmul(ctx, ql, k, 0, 1), bias);        // (B,H,L,T)
    tf_tensor *probs = tf_matmul(ctx, k1, k2 ? pinv(ctx, k2) : NULL, 0, 0);   // (B,H,T,L)
    return tf_matmul(ctx, probs, tf_matmul(ctx, k3, v, 0, 0), 0, 0);         // (B,H,T,D)
}

tf_tensor *tf_nystrom_attend(tf_ctx *ctx, const tf_mha *m, tf_tensor *const qkv[3], const tf_attn_mask *mask) {
    int64_t B = qkv[0]->shape[0], H = qkv[0]->shape[1], T = qkv[0]->shape[2], D = qkv[0]->shape[3];
    int64_t L = m->cfg.landmarks, K = m->cfg.conv_kernel;
    tf_tensor *bias;
    if (m->rel_bias) return tf_set_error("attention: Nystrom attention has no relative positions"), NULL;
    if (L < 0 || (L > 0 && T != L && T % L))
        return tf_set_error("attention: Nystrom attention over %lld positions needs a multiple of its %lld landmarks "
                            "(pad the sequence and mask the padding)", (long long)T, (long long)L), NULL;
    if (K > 0 && (!m->conv_weight || K % 2 == 0))
        return tf_set_error("attention: Nystrom conv_kernel %lld needs an odd kernel and its conv weight", (long long)K),
               NULL;
    if (padding_bias(ctx, mask, B, T, &bias)) return NULL;
    float s = (float)(1.0 / sqrt(sqrt((double)D)));
    tf_tensor *q = tf_scale(ctx, qkv[0], s), *k = tf_scale(ctx, qkv[1], s), *v = qkv[2];
    if (!q || !k) return NULL;
    tf_tensor *out = L == 0 || T == L ? tf_sdpa(ctx, q, k, v, bias, 0, 1.0f) : approximate(ctx, q, k, v, bias, L);
    if (K > 0) out = tf_add(ctx, out, tf_depthwise_conv(ctx, v, tf_reshape(ctx, m->conv_weight, 2, (int64_t[]){H, K})));
    return out;
}
