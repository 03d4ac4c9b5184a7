/* Where a ViT looks: attention rollout (Abnar & Zuidema, "Quantifying
 * Attention Flow in Transformers", 2020) and the last layer's heads, from
 * the self-attention probabilities tf_vit_run returns with output_attentions. */
#include <stdlib.h>
#include <string.h>

#include "tformer/vit.h"

/* Ã = (mean over heads of A + I) / 2, rows renormalised: the residual
 * connection carries half of each token's own state. a: (H,T,T) of image b. */
static void fused(double *out, const float *a, int64_t H, int64_t T) {  // out: (T,T)
    for (int64_t i = 0; i < T * T; i++) out[i] = 0;
    for (int64_t h = 0; h < H; h++)
        for (int64_t i = 0; i < T * T; i++) out[i] += a[h * T * T + i] / (double)H;
    for (int64_t i = 0; i < T; i++) {
        double sum = 0;
        out[i * T + i] += 1.0;
        for (int64_t j = 0; j < T; j++) sum += out[i * T + j];
        for (int64_t j = 0; j < T; j++) out[i * T + j] /= sum; /* the halving, and any rounding */
    }
}

/* What the classifier reads as weights over the T tokens of image b: the class
 * token (1, 0, ...), or the pooling's weights over the patches. */
static int readout(const tf_vit *m, const tf_vit_outputs *out, int64_t b, int64_t T, double *w) {  // w: (T)
    for (int64_t i = 0; i < T; i++) w[i] = m->cfg.pooling == TF_POOL_CLS ? i == 0 : 0.0;
    if (m->cfg.pooling == TF_POOL_MEAN)
        for (int64_t i = 1; i < T; i++) w[i] = 1.0 / (double)(T - 1);
    if (m->cfg.pooling != TF_POOL_SEQ) return 0;
    const tf_tensor *p = out->pool_weights;
    if (!p || p->ndim != 2 || p->shape[0] <= b || p->shape[1] != T - 1)
        return tf_set_error("vit: attention rollout of a seq-pooling model needs the pool_weights of output_attentions");
    for (int64_t i = 1; i < T; i++) w[i] = tf_f32(p)[b * (T - 1) + i - 1];
    return 0;
}

int tf_vit_attention_rollout(const tf_vit *m, const tf_vit_outputs *out, int64_t b, float *rollout, float *heads) {
    int L = m->cfg.n_layer;
    tf_tensor *const *attentions = out ? out->attentions : NULL;
    const tf_tensor *a0 = attentions ? attentions[0] : NULL;
    if (!a0 || a0->ndim != 4 || b < 0 || b >= a0->shape[0])
        return tf_set_error("vit: attention rollout needs the attentions of output_attentions (image %lld)",
                            (long long)b);
    int64_t H = a0->shape[1], T = a0->shape[2], N = T - 1;
    double *r = malloc((size_t)(T * T) * sizeof *r), *f = malloc((size_t)(T * T) * sizeof *f);
    double *next = malloc((size_t)(T * T) * sizeof *next), *w = malloc((size_t)T * sizeof *w);
    if (!r || !f || !next || !w) return free(r), free(f), free(next), free(w), tf_set_error("vit: out of memory");
    if (readout(m, out, b, T, w)) return free(r), free(f), free(next), free(w), -1;
    for (int64_t i = 0; i < T * T; i++) r[i] = i % (T + 1) == 0; /* R = I */
    for (int l = 0; l < L; l++) { /* R = Ã_l R */
        fused(f, tf_f32(attentions[l]) + b * H * T * T, H, T);
        for (int64_t i = 0; i < T; i++)
            for (int64_t j = 0; j < T; j++) {
                double s = 0;
                for (int64_t k = 0; k < T; k++) s += f[i * T + k] * r[k * T + j];
                next[i * T + j] = s;
            }
        memcpy(r, next, (size_t)(T * T) * sizeof *r);
    }
    for (int64_t j = 0; j < N; j++) { /* the row read (w R), over the patches */
        double s = 0;
        for (int64_t i = 0; i < T; i++) s += w[i] * r[i * T + 1 + j];
        rollout[j] = (float)s;
    }
    const float *last = tf_f32(attentions[L - 1]) + b * H * T * T;  // (H,T,T)
    for (int64_t h = 0; heads && h < H; h++)
        for (int64_t j = 0; j < N; j++) {
            double s = 0;
            for (int64_t i = 0; i < T; i++) s += w[i] * last[h * T * T + i * T + 1 + j];
            heads[h * N + j] = (float)s;
        }
    free(r), free(f), free(next), free(w);
    return 0;
}
