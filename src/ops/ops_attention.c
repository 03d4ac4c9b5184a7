/* Fused scaled dot-product attention: softmax(scale * Q K^T + mask) V.
 * This is the plain version that keeps the probabilities P for backward. */
#include <math.h>
#include <string.h>

#include "../core/internal.h"

typedef struct {
    int64_t B, H, Tq, Tk, D, Dv;
    float scale;
    int causal;
    tf_dtype mask_dtype;
    int64_t ms[4]; /* mask strides broadcast to (B,H,Tq,Tk) */
} tf_sdpa_params;

/* Scores of query row i into s (Tk), masked; returns the row max. */
static float sdpa_scores(float *s, const tf_sdpa_params *p, const float *qi, const float *k,
                         const tf_tensor *mask, int64_t moff, int64_t i) {
    float mx = -INFINITY;
    int64_t last = i + p->Tk - p->Tq; /* causal: keys j <= last are visible */
    for (int64_t j = 0; j < p->Tk; j++) {
        float z;
        if (p->causal && j > last) {
            z = -INFINITY;
        } else {
            const float *kj = k + j * p->D;
            float d = 0.0f;
            for (int64_t c = 0; c < p->D; c++) d += qi[c] * kj[c];
            z = d * p->scale;
            if (mask && p->mask_dtype == TF_DTYPE_F32) z += tf_f32(mask)[moff + j * p->ms[3]];
            else if (mask && tf_u8(mask)[moff + j * p->ms[3]]) z = -INFINITY;
        }
        s[j] = z;
        if (z > mx) mx = z;
    }
    return mx;
}

void tf_op_sdpa_forward(tf_node *n) {
    const tf_sdpa_params *p = n->params;
    const tf_tensor *mask = n->n_in > 3 ? n->in[3] : NULL;
    const float *q = tf_f32(n->in[0]), *k = tf_f32(n->in[1]), *v = tf_f32(n->in[2]);
    float *out = tf_f32(n->out), *P = n->saved[0];  // out: (B,H,Tq,Dv), P: (B,H,Tq,Tk)
    /* one (batch, head) per iteration: every output row is written by one thread */
#pragma omp parallel for schedule(static) if (p->B * p->H > 1 && p->Tq * p->Tk * p->D > 4096)
    for (int64_t bh = 0; bh < p->B * p->H; bh++) {
        int64_t b = bh / p->H, h = bh % p->H;
        const float *kb = k + bh * p->Tk * p->D, *vb = v + bh * p->Tk * p->Dv;
        for (int64_t i = 0; i < p->Tq; i++) {
            float *s = P + (bh * p->Tq + i) * p->Tk, *o = out + (bh * p->Tq + i) * p->Dv;
            int64_t moff = b * p->ms[0] + h * p->ms[1] + i * p->ms[2];
            float mx = sdpa_scores(s, p, q + (bh * p->Tq + i) * p->D, kb, mask, moff, i);
            memset(o, 0, (size_t)p->Dv * sizeof *o);
            if (mx == -INFINITY) { /* every key excluded: zeros, as in tf_softmax */
                memset(s, 0, (size_t)p->Tk * sizeof *s);
                continue;
            }
            double sum = 0.0;
            for (int64_t j = 0; j < p->Tk; j++) sum += (s[j] = expf(s[j] - mx));
            float inv = (float)(1.0 / sum);
            for (int64_t j = 0; j < p->Tk; j++) {
                float pj = (s[j] *= inv);
                const float *vj = vb + j * p->Dv;
                for (int64_t c = 0; c < p->Dv; c++) o[c] += pj * vj[c];
            }
        }
    }
}

void tf_op_sdpa_backward(tf_node *n) {
    const tf_sdpa_params *p = n->params;
    tf_tensor *Q = n->in[0], *K = n->in[1], *V = n->in[2], *M = n->n_in > 3 ? n->in[3] : NULL;
    float *gm = M && M->dtype == TF_DTYPE_F32 ? M->grad : NULL;
    const float *q = tf_f32(Q), *k = tf_f32(K), *v = tf_f32(V), *P = n->saved[0];
    const float *gout = n->out->grad;
    /* (batch, head) pairs in parallel: their dq, dk, dv rows are disjoint; a mask
     * gradient sums over broadcast dims, so then the loop runs in order on one thread. */
#pragma omp parallel for schedule(static) if (!gm && p->B * p->H > 1 && p->Tq * p->Tk * p->D > 4096)
    for (int64_t bh = 0; bh < p->B * p->H; bh++) {
        int64_t b = bh / p->H, h = bh % p->H;
        float *dS = n->saved[1] + bh * p->Tk;  // dS: (Tk) scratch of this (b,h)
        const float *kb = k + bh * p->Tk * p->D, *vb = v + bh * p->Tk * p->Dv;
        for (int64_t i = 0; i < p->Tq; i++) {
            const float *Pi = P + (bh * p->Tq + i) * p->Tk, *go = gout + (bh * p->Tq + i) * p->Dv;
            const float *qi = q + (bh * p->Tq + i) * p->D;
            double dot = 0.0;
            for (int64_t j = 0; j < p->Tk; j++) {
                const float *vj = vb + j * p->Dv;
                float dp = 0.0f;
                for (int64_t c = 0; c < p->Dv; c++) dp += go[c] * vj[c];
                dS[j] = dp;
                dot += (double)Pi[j] * dp;
                if (V->grad) {
                    float *gv = V->grad + (bh * p->Tk + j) * p->Dv;
                    for (int64_t c = 0; c < p->Dv; c++) gv[c] += Pi[j] * go[c];
                }
            }
            int64_t moff = b * p->ms[0] + h * p->ms[1] + i * p->ms[2];
            for (int64_t j = 0; j < p->Tk; j++) {
                float ds = Pi[j] * (dS[j] - (float)dot);
                if (ds == 0.0f) continue;
                if (gm) gm[moff + j * p->ms[3]] += ds;
                const float *kj = kb + j * p->D;
                if (Q->grad) {
                    float *gq = Q->grad + (bh * p->Tq + i) * p->D;
                    for (int64_t c = 0; c < p->D; c++) gq[c] += p->scale * ds * kj[c];
                }
                if (K->grad) {
                    float *gk = K->grad + (bh * p->Tk + j) * p->D;
                    for (int64_t c = 0; c < p->D; c++) gk[c] += p->scale * ds * qi[c];
                }
            }
        }
    }
}

tf_tensor *tf_sdpa(tf_ctx *ctx, tf_tensor *q, tf_tensor *k, tf_tensor *v, tf_tensor *mask,
                   int causal, float scale) {
    if (!q || !k || !v) return NULL;
    char a[64], b[64], c[64];
    if (q->ndim != 4 || k->ndim != 4 || v->ndim != 4 || q->dtype != TF_DTYPE_F32 ||
        k->dtype != TF_DTYPE_F32 || v->dtype != TF_DTYPE_F32 || q->shape[0] != k->shape[0] ||
        k->shape[0] != v->shape[0] || q->shape[1] != k->shape[1] || k->shape[1] != v->shape[1] ||
        q->shape[3] != k->shape[3] || k->shape[2] != v->shape[2])
        return tf_set_error("sdpa: q %s, k %s, v %s are not (B,H,Tq,D), (B,H,Tk,D), (B,H,Tk,Dv)",
                            tf_shape_str(q, a, sizeof a), tf_shape_str(k, b, sizeof b),
                            tf_shape_str(v, c, sizeof c)), NULL;
    tf_sdpa_params *p = tf_ctx_alloc(ctx, sizeof *p);
    if (!p) return NULL;
    p->B = q->shape[0];
    p->H = q->shape[1];
    p->Tq = q->shape[2];
    p->Tk = k->shape[2];
    p->D = q->shape[3];
    p->Dv = v->shape[3];
    p->scale = scale;
    p->causal = causal != 0;
    int64_t full[4] = {p->B, p->H, p->Tq, p->Tk};
    if (mask) {
        if (mask->dtype == TF_DTYPE_I32 || tf_bcast_strides(mask, 4, full, p->ms))
            return tf_set_error("sdpa: mask %s does not broadcast to (B,H,Tq,Tk) = (%lld,%lld,%lld,%lld)",
                                tf_shape_str(mask, a, sizeof a), (long long)p->B, (long long)p->H,
                                (long long)p->Tq, (long long)p->Tk), NULL;
        p->mask_dtype = mask->dtype;
    }
    tf_tensor *in[4] = {tf_contiguous(ctx, q), tf_contiguous(ctx, k), tf_contiguous(ctx, v), mask};
    int64_t oshape[4] = {p->B, p->H, p->Tq, p->Dv};
    tf_node *n = tf_node_new(ctx, TF_OP_SDPA, mask ? 4 : 3, in, TF_DTYPE_F32, 4, oshape, p);
    if (!n || !(n->saved[0] = tf_ctx_floats(ctx, p->B * p->H * p->Tq * p->Tk)) ||
        !(n->saved[1] = tf_ctx_floats(ctx, p->B * p->H * (p->Tk > 0 ? p->Tk : 1))))
        return NULL;
    return tf_node_run(ctx, n);
}
