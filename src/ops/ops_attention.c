/* Fused scaled dot-product attention: softmax(scale * Q K^T + mask) V, in the
 * flash-attention manner: for each query row the keys are visited in tiles
 * with an online softmax (running max and sum), so no Tq x Tk matrix is ever
 * stored; the forward keeps only the output and each row's log-sum-exp, and
 * the backward recomputes the probabilities tile by tile into a row of Tk
 * floats. Memory grows linearly with the sequence; tiles past the causal
 * limit are skipped. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../core/internal.h"

#define TILE 64

typedef struct {
    int64_t B, H, Tq, Tk, D, Dv;
    float scale;
    int causal;
    tf_dtype mask_dtype;
    int64_t ms[4]; /* mask strides broadcast to (B,H,Tq,Tk) */
} tf_sdpa_params;

/* Scores of query qi against keys [j0, j1) into s; returns their max. */
static float tile_scores(float *s, const tf_sdpa_params *p, const float *qi, const float *k, const tf_tensor *mask,
                         int64_t moff, int64_t j0, int64_t j1, int64_t last) {
    float mx = -INFINITY;
    for (int64_t j = j0; j < j1; j++) {
        float z;
        if (p->causal && j > last) {
            z = -INFINITY;
        } else {
            z = tf_dot(qi, k + j * p->D, p->D) * p->scale;
            if (mask && p->mask_dtype == TF_DTYPE_F32) z += tf_f32(mask)[moff + j * p->ms[3]];
            else if (mask && tf_u8(mask)[moff + j * p->ms[3]]) z = -INFINITY;
        }
        s[j - j0] = z;
        if (z > mx) mx = z;
    }
    return mx;
}

/* The keys a query row can see: [0, end). */
static int64_t visible_end(const tf_sdpa_params *p, int64_t i, int64_t *last) {
    *last = i + p->Tk - p->Tq;
    if (!p->causal) return p->Tk;
    return *last + 1 < 0 ? 0 : *last + 1 < p->Tk ? *last + 1 : p->Tk;
}

/* One query row: out row o (Dv) and its log-sum-exp (-inf when every key is excluded). */
static float forward_row(float *o, const tf_sdpa_params *p, const float *qi, const float *kb, const float *vb,
                         const tf_tensor *mask, int64_t moff, int64_t i) {
    float s[TILE], m = -INFINITY;
    double l = 0.0;
    int64_t last, end = visible_end(p, i, &last);
    memset(o, 0, (size_t)p->Dv * sizeof *o);
    for (int64_t j0 = 0; j0 < end; j0 += TILE) {
        int64_t j1 = j0 + TILE < end ? j0 + TILE : end;
        float tm = tile_scores(s, p, qi, kb, mask, moff, j0, j1, last);
        if (tm == -INFINITY) continue;
        if (tm > m) { /* a new running max: rescale what was summed so far */
            float r = m == -INFINITY ? 0.0f : expf(m - tm);
            l *= r;
            for (int64_t c = 0; c < p->Dv; c++) o[c] *= r;
            m = tm;
        }
        for (int64_t j = j0; j < j1; j++) {
            float e = expf(s[j - j0] - m);
            l += e;
            const float *vj = vb + j * p->Dv;
            for (int64_t c = 0; c < p->Dv; c++) o[c] += e * vj[c];
        }
    }
    if (l == 0.0) return -INFINITY; /* every key excluded: zeros, as in tf_softmax */
    float inv = (float)(1.0 / l);
    for (int64_t c = 0; c < p->Dv; c++) o[c] *= inv;
    return m + (float)log(l);
}

void tf_op_sdpa_forward(tf_node *n) {
    const tf_sdpa_params *p = n->params;
    const tf_tensor *mask = n->n_in > 3 ? n->in[3] : NULL;
    const float *q = tf_f32(n->in[0]), *k = tf_f32(n->in[1]), *v = tf_f32(n->in[2]);
    float *out = tf_f32(n->out), *lse = n->saved[0];  // out: (B,H,Tq,Dv), lse: (B,H,Tq)
    /* one (batch, head) per iteration: every output row is written by one thread */
#pragma omp parallel for schedule(static) if (p->B * p->H > 1 && p->Tq * p->Tk * p->D > 4096)
    for (int64_t bh = 0; bh < p->B * p->H; bh++) {
        int64_t b = bh / p->H, h = bh % p->H;
        const float *kb = k + bh * p->Tk * p->D, *vb = v + bh * p->Tk * p->Dv;
        for (int64_t i = 0; i < p->Tq; i++) {
            int64_t row = bh * p->Tq + i, moff = b * p->ms[0] + h * p->ms[1] + i * p->ms[2];
            lse[row] = forward_row(out + row * p->Dv, p, q + row * p->D, kb, vb, mask, moff, i);
        }
    }
}

/* One query row of the backward pass. The row's probabilities and dP are
 * recomputed tile by tile into a scratch of Tk floats each (linear memory);
 * their dot product, in double, keeps the row's dS summing to zero —
 * rowsum(dO * O), flash-attention's shortcut, lost digits when dS is small
 * (mask gradients, summed over heads and batch, showed 7e-4 errors). */
static void backward_row(const tf_node *n, int64_t bh, int64_t i, float lse, double *gmask, float *pr, float *dpr) {
    const tf_sdpa_params *p = n->params;
    tf_tensor *Q = n->in[0], *K = n->in[1], *V = n->in[2];
    const tf_tensor *mask = n->n_in > 3 ? n->in[3] : NULL;
    int64_t row = bh * p->Tq + i, b = bh / p->H, h = bh % p->H, last, end = visible_end(p, i, &last);
    int64_t moff = b * p->ms[0] + h * p->ms[1] + i * p->ms[2];
    const float *qi = tf_f32(Q) + row * p->D, *kb = tf_f32(K) + bh * p->Tk * p->D;
    const float *vb = tf_f32(V) + bh * p->Tk * p->Dv, *go = n->out->grad + row * p->Dv;
    double delta = 0.0;
    for (int64_t j0 = 0; j0 < end; j0 += TILE) {
        int64_t j1 = j0 + TILE < end ? j0 + TILE : end;
        tile_scores(pr + j0, p, qi, kb, mask, moff, j0, j1, last);
        for (int64_t j = j0; j < j1; j++) {
            pr[j] = expf(pr[j] - lse);
            dpr[j] = pr[j] != 0.0f ? tf_dot(go, vb + j * p->Dv, p->Dv) : 0.0f;
            delta += (double)pr[j] * dpr[j];
        }
    }
    for (int64_t j = 0; j < end; j++) {
        float pj = pr[j];
        if (pj == 0.0f) continue;
        const float *kj = kb + j * p->D;
        if (V->grad) {
            float *gv = V->grad + (bh * p->Tk + j) * p->Dv;
            for (int64_t c = 0; c < p->Dv; c++) gv[c] += pj * go[c];
        }
        double dsd = (double)pj * ((double)dpr[j] - delta);
        float ds = (float)dsd;
        if (gmask) gmask[moff + j * p->ms[3]] += dsd;
        if (Q->grad) {
            float *gq = Q->grad + row * p->D;
            for (int64_t c = 0; c < p->D; c++) gq[c] += p->scale * ds * kj[c];
        }
        if (K->grad) {
            float *gk = K->grad + (bh * p->Tk + j) * p->D;
            for (int64_t c = 0; c < p->D; c++) gk[c] += p->scale * ds * qi[c];
        }
    }
}

void tf_op_sdpa_backward(tf_node *n) {
    const tf_sdpa_params *p = n->params;
    tf_tensor *M = n->n_in > 3 ? n->in[3] : NULL;
    float *gm = M && M->dtype == TF_DTYPE_F32 ? M->grad : NULL;
    const float *lse = n->saved[0];
    /* A mask gradient sums dS over the broadcast dims (heads, batch): in double,
     * over the mask's storage extent, in order on one thread, then added once. */
    int64_t extent = 1;
    for (int d = 0; gm && d < M->ndim; d++) extent += (M->shape[d] - 1) * M->stride[d];
    double *gacc = gm ? calloc((size_t)extent, sizeof *gacc) : NULL;
    if (gm && !gacc) return; /* out of memory: the mask gradient is skipped (inputs' still run) */
    /* (batch, head) pairs in parallel: their dq, dk, dv rows are disjoint. */
#pragma omp parallel for schedule(static) if (!gm && p->B * p->H > 1 && p->Tq * p->Tk * p->D > 4096)
    for (int64_t bh = 0; bh < p->B * p->H; bh++) {
        float *pr = n->saved[1] + bh * 2 * p->Tk, *dpr = pr + p->Tk;  // (Tk) each, this (b,h)'s rows
        for (int64_t i = 0; i < p->Tq; i++)
            if (lse[bh * p->Tq + i] != -INFINITY) backward_row(n, bh, i, lse[bh * p->Tq + i], gacc, pr, dpr);
    }
    for (int64_t o = 0; gacc && o < extent; o++) gm[o] += (float)gacc[o];
    free(gacc);
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
    if (!n || !(n->saved[0] = tf_ctx_floats(ctx, p->B * p->H * p->Tq)) ||    // lse: (B,H,Tq)
        !(n->saved[1] = tf_ctx_floats(ctx, p->B * p->H * 2 * (p->Tk > 0 ? p->Tk : 1))))  // row scratch
        return NULL;
    return tf_node_run(ctx, n);
}
