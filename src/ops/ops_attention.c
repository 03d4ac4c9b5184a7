/* Fused scaled dot-product attention: softmax(scale * Q K^T + mask) V, in the
 * flash-attention manner. Blocks of bq query rows visit the keys in tiles of
 * bk with an online softmax (running max and sum per row); each tile's scores
 * Q K^T and its contribution P V are small matrix products (tile_gemm of
 * kernels.h, register-blocked AVX2 / AVX-512: as fast as OpenBLAS's AVX-512
 * small-matrix kernels here, 1.7x its Haswell ones, and no BLAS needed). No
 * Tq x Tk matrix is stored: the forward keeps the output, each row's
 * log-sum-exp and K^T by tiles; the backward recomputes the tiles. Memory
 * grows linearly with the sequence; tiles past the causal limit are skipped. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernels.h"
#include "tformer/ops.h"
#ifdef _OPENMP
#include <omp.h>
#endif

#define BQ 64 /* query rows per block, at most */
#define BK 64 /* keys per tile, at most */
#define HG 8  /* heads of a decoding step's row together, at most (forward_step_heads) */
/* Sequences of up to this many take blocks and tiles of 32: a causal product
 * then skips 3/8 of a 64-long sequence's work rather than none (fused
 * attention forward + backward, D 32 or 64, one thread: 9-25% faster at 64-256;
 * at 512-2048 the 64s are 2-5% faster) */
#define SMALL_T 256
#define TRANSPOSE_MIN_ROWS 2 /* one query row without a backward (a decoding step): no K^T */

typedef struct {
    int64_t B, H, Tq, Tk, D, Dv;
    float scale;
    int causal;
    tf_dtype mask_dtype;
    int64_t ms[4]; /* mask strides broadcast to (B,H,Tq,Tk) */
    int64_t st[3][2]; /* q, k, v: element strides of the batch and head dims */
    int64_t ld[3];    /* q, k, v: their rows' stride (each row contiguous): D for (B,H,T,D) tensors,
                       * 3E for heads viewed in a fused projection's (B,T,3E) output */
    int64_t os[3];    /* the output's strides of batch, head and row: (B,H,Tq,Dv), or (B,Tq,H,Dv) heads-last
                       * (rows H Dv apart, as the output projection reads them) */
    int threads;   /* backward scratch: one (2, BQ, Tk) block per thread */
    int64_t bq, bk; /* query rows per block, keys per tile (K^T and V^T tiles are bk wide) */
    int transposed; /* K^T tiles in saved[1]; 0: a decoding step's one row scores by dot products */
} tf_sdpa_params;

/* One block of query rows [i0, i1) of one (batch, head). */
typedef struct {
    const tf_sdpa_params *p;
    const tf_kernels *kern; /* looked up once per op, not per tile */
    const tf_tensor *mask;
    int64_t bh, i0, i1;
    const float *q, *k, *v; /* this (b,h)'s Q (Tq,D), K (Tk,D), V (Tk,Dv) */
    const float *kt, *vt;   /* K^T and V^T by key tiles (tf_tiles_t): B operands of Q K^T and dO V^T */
} sdpa_block;

/* Offset of (batch, head) bh in q (i = 0), k (1) or v (2): a KV cache's
 * views are (B,H,T,D) with a row stride of D but a head stride of its capacity. */
static int64_t at(const tf_sdpa_params *p, int i, int64_t bh) {
    return bh / p->H * p->st[i][0] + bh % p->H * p->st[i][1];
}

/* Offset of query row i of (batch, head) bh in the output (and its gradient). */
static int64_t out_at(const tf_sdpa_params *p, int64_t bh, int64_t i) {
    return bh / p->H * p->os[0] + bh % p->H * p->os[1] + i * p->os[2];
}

void tf_tiles_t(const tf_kernels *kern, float *t, const float *a, int64_t lda, int64_t T, int64_t D, int64_t bk) {
    for (int64_t j0 = 0; j0 < T; j0 += bk) {
        int64_t w = T - j0 < bk ? T - j0 : bk;
        kern->transpose(t + j0 * D, w, a + j0 * lda, lda, w, D);  // (D, w) at t + j0 D
    }
}

/* The keys query row i can see: [0, end); *last is the last one (causal). */
static int64_t visible_end(const tf_sdpa_params *p, int64_t i, int64_t *last) {
    *last = i + p->Tk - p->Tq;
    if (!p->causal) return p->Tk;
    return *last + 1 < 0 ? 0 : *last + 1 < p->Tk ? *last + 1 : p->Tk;
}

/* The width of key tile j0 as tf_tiles_t stored it: its K^T and V^T rows are
 * this far apart even when a block reads fewer of its keys (a causal block
 * whose last visible key falls inside the sequence's last, partial tile) */
static int64_t stored_width(const tf_sdpa_params *p, int64_t j0) { return p->Tk - j0 < p->bk ? p->Tk - j0 : p->bk; }

/* S (rows, w) = scale * Q_rows K_[j0,j0+w)^T + mask, -inf where excluded. */
static void block_scores(float *S, const sdpa_block *k, int64_t j0, int64_t w) {
    const tf_sdpa_params *p = k->p;
    int64_t rows = k->i1 - k->i0, b = k->bh / p->H, h = k->bh % p->H;
    if (k->kt)
        k->kern->tile_gemm(S, w, k->q + k->i0 * p->ld[0], p->ld[0], 1, k->kt + j0 * p->D, stored_width(p, j0), rows, w,
                           p->D, 0.0f);
    else /* a decoding step's row: its scores as dot products with the keys' rows */
        for (int64_t r = 0; r < rows; r++)
            k->kern->dot_rows(S + r * w, k->k + j0 * p->ld[1], p->ld[1], k->q + (k->i0 + r) * p->ld[0], w, p->D, 0.0f);
    for (int64_t r = 0; r < rows; r++) {
        int64_t i = k->i0 + r, last, moff = b * p->ms[0] + h * p->ms[1] + i * p->ms[2], ms = p->ms[3];
        visible_end(p, i, &last);
        /* keys [j0, j0 + vis) are visible to this row; the rest of the tile is causally hidden */
        int64_t vis = !p->causal ? w : last < j0 ? 0 : last - j0 + 1 < w ? last - j0 + 1 : w;
        float *s = S + r * w, sc = p->scale;
        for (int64_t c = 0; c < vis; c++) s[c] *= sc;
        for (int64_t c = vis; c < w; c++) s[c] = -INFINITY;
        if (k->mask && p->mask_dtype == TF_DTYPE_F32) {
            const float *m = tf_f32(k->mask) + moff + j0 * ms;
            for (int64_t c = 0; c < vis; c++) s[c] += m[c * ms];
        } else if (k->mask) {
            const uint8_t *m = tf_u8(k->mask) + moff + j0 * ms;
            for (int64_t c = 0; c < vis; c++) s[c] = m[c * ms] ? -INFINITY : s[c];
        }
    }
}

/* Keys [0, end) that some row of the block can see. */
static int64_t block_end(const sdpa_block *k) {
    int64_t last;
    return visible_end(k->p, k->i1 - 1, &last);
}

void tf_flash_tile_rows(const tf_kernels *kern, float *S, int64_t rows, int64_t w, float *m, double *l, float *o,
                        int64_t ldo, int64_t Dv) {
    for (int64_t r = 0; r < rows; r++) {
        float *s = S + r * w, tm = -INFINITY;
        for (int64_t c = 0; c < w; c++) tm = s[c] > tm ? s[c] : tm;
        if (tm == -INFINITY) { /* nothing visible in this tile */
            memset(s, 0, (size_t)w * sizeof *s);
            continue;
        }
        if (tm > m[r]) { /* a new running max: rescale what was summed so far */
            float f = m[r] == -INFINITY ? 0.0f : expf(m[r] - tm);
            l[r] *= f;
            for (int64_t c = 0; c < Dv; c++) o[r * ldo + c] *= f;
            m[r] = tm;
        }
        l[r] += kern->exp_shift(s, s, m[r], w);
    }
}

void tf_flash_finish(float *o, int64_t ldo, float *lse, const float *m, const double *l, int64_t rows, int64_t Dv) {
    for (int64_t r = 0; r < rows; r++) {
        if (l[r] == 0.0) { /* every key excluded: zeros, as in tf_softmax */
            lse[r] = -INFINITY;
            continue;
        }
        float inv = (float)(1.0 / l[r]);
        for (int64_t c = 0; c < Dv; c++) o[r * ldo + c] *= inv;
        lse[r] = m[r] + (float)log(l[r]);
    }
}

/* Writes every element of its rows of o (the op is TF_OP_W: its output is not zero-filled first). */
static void forward_block(const sdpa_block *k, float *o, float *lse) {  // o: (rows,Dv) rows os[2] apart, lse: (rows)
    const tf_sdpa_params *p = k->p;
    const tf_kernels *kern = k->kern;
    int64_t rows = k->i1 - k->i0, end = block_end(k);
    float S[BQ * BK], m[BQ];
    double l[BQ];
    for (int64_t r = 0; r < rows; r++) {
        memset(o + r * p->os[2], 0, (size_t)p->Dv * sizeof *o);
        m[r] = -INFINITY, l[r] = 0.0;
    }
    for (int64_t j0 = 0; j0 < end; j0 += p->bk) {
        int64_t w = end - j0 < p->bk ? end - j0 : p->bk;
        block_scores(S, k, j0, w);
        tf_flash_tile_rows(kern, S, rows, w, m, l, o, p->os[2], p->Dv);
        kern->tile_gemm(o, p->os[2], S, w, 1, k->v + j0 * p->ld[2], p->ld[2], rows, p->Dv, w, 1.0f);  // o += P V_tile
    }
    tf_flash_finish(o, p->os[2], lse, m, l, rows, p->Dv);
}

/* A decoding step's row (Tq 1, scores by dot products) of batch b, heads [h0, h0 + nh)
 * (nh <= HG) together: per head forward_block's operations in its order, the heads' P V
 * products in one kernel call (kern->pv_heads, each head's bits), whose chains interleave. */
static void forward_step_heads(const tf_node *n, const tf_kernels *kern, int64_t b, int64_t h0, int64_t nh) {
    const tf_sdpa_params *p = n->params;
    const tf_tensor *mask = n->n_in > 3 ? n->in[3] : NULL;
    sdpa_block k[HG];
    float S[HG][BK], m[HG], *o[HG];  // S: (heads, w) one key tile's scores per head
    double l[HG];
    for (int64_t h = 0; h < nh; h++) {
        int64_t bh = b * p->H + h0 + h;
        k[h] = (sdpa_block){p, kern, mask, bh, 0, 1, tf_f32(n->in[0]) + at(p, 0, bh), tf_f32(n->in[1]) + at(p, 1, bh),
                            tf_f32(n->in[2]) + at(p, 2, bh), NULL, NULL};
        o[h] = tf_f32(n->out) + out_at(p, bh, 0);
        memset(o[h], 0, (size_t)p->Dv * sizeof *o[h]);
        m[h] = -INFINITY, l[h] = 0.0;
    }
    int64_t end = block_end(&k[0]); /* every head of the row sees the same keys */
    for (int64_t j0 = 0; j0 < end; j0 += p->bk) {
        int64_t w = end - j0 < p->bk ? end - j0 : p->bk;
        for (int64_t h = 0; h < nh; h++) {
            block_scores(S[h], &k[h], j0, w);
            tf_flash_tile_rows(kern, S[h], 1, w, &m[h], &l[h], o[h], p->os[2], p->Dv);
        }
        kern->pv_heads(o[0], p->os[1], S[0], BK, k[0].v + j0 * p->ld[2], p->st[2][1], p->ld[2], nh, p->Dv, w); // o_h += P_h V_h
    }
    for (int64_t h = 0; h < nh; h++)
        tf_flash_finish(o[h], p->os[2], n->saved[0] + (b * p->H + h0 + h) * p->Tq, &m[h], &l[h], 1, p->Dv);
}

/* Batch row t / ng's heads by groups of HG (group t % ng) of a decoding step. */
static void forward_step_task(const tf_node *n, const tf_kernels *kern, int64_t t, int64_t ng) {
    const tf_sdpa_params *p = n->params;
    int64_t h0 = t % ng * HG;
    forward_step_heads(n, kern, t / ng, h0, p->H - h0 < HG ? p->H - h0 : HG);
}

/* Task t of the forward: query block t % nb of (batch, head) t / nb; kt:
 * the keys transposed by tiles, or NULL (scores by dot products). */
static void forward_task(const tf_node *n, const tf_kernels *kern, int64_t t, int64_t nb, const float *kt) {
    const tf_sdpa_params *p = n->params;
    int64_t bh = t / nb, i0 = t % nb * p->bq;
    const float *kk = tf_f32(n->in[1]);
    sdpa_block k = {p, kern, n->n_in > 3 ? n->in[3] : NULL, bh, i0, i0 + p->bq < p->Tq ? i0 + p->bq : p->Tq,
                    tf_f32(n->in[0]) + at(p, 0, bh), kk + at(p, 1, bh), tf_f32(n->in[2]) + at(p, 2, bh),
                    kt ? kt + bh * p->D * p->Tk : NULL, NULL};
    forward_block(&k, tf_f32(n->out) + out_at(p, bh, i0), n->saved[0] + bh * p->Tq + i0);
}

void tf_op_sdpa_forward(tf_node *n) {
    const tf_sdpa_params *p = n->params;
    float *kt = p->transposed ? n->saved[1] : NULL;  // out: (B,H,Tq,Dv), lse: (B,H,Tq)
    const float *kk = tf_f32(n->in[1]);
    const tf_kernels *kern = tf_kern();
    int64_t nb = (p->Tq + p->bq - 1) / p->bq;
    /* Threads pay off from ~256K multiply-adds: a decoding step below that
     * runs without a parallel region (a fork-join per op costs microseconds,
     * and on a busy machine a descheduled thread stalls the whole region). */
    int big = p->Tq * p->Tk * p->D > 4096 && p->B * p->H * p->Tq * p->Tk * p->D >= (1 << 18);
    if (kt) /* NULL: a decoding step's scores by dot products (tf_sdpa) */
        TF_PARALLEL_FOR(big && p->B * p->H > 1, bh, p->B * p->H,  // kt: (B,H, key tiles of (D,w))
                        tf_tiles_t(kern, kt + bh * p->D * p->Tk, kk + at(p, 1, bh), p->ld[1], p->Tk, p->D, p->bk));
    if (!kt && p->Tq == 1 && kern->pv_heads) { /* a decoding step: (batch, group of heads) per iteration */
        int64_t ng = (p->H + HG - 1) / HG;
        if (big && p->B * ng > 1 && tf_threads_free() > 1) {
#pragma omp parallel for schedule(dynamic)
            for (int64_t t = 0; t < p->B * ng; t++) forward_step_task(n, kern, t, ng);
        } else {
            for (int64_t t = 0; t < p->B * ng; t++) forward_step_task(n, kern, t, ng);
        }
        return;
    }
    /* (batch, head, query block) per iteration: every output row is written by one thread */
    if (big && p->B * p->H * nb > 1 && tf_threads_free() > 1) {
#pragma omp parallel for schedule(dynamic)
        for (int64_t t = 0; t < p->B * p->H * nb; t++) forward_task(n, kern, t, nb, kt);
    } else {
        for (int64_t t = 0; t < p->B * p->H * nb; t++) forward_task(n, kern, t, nb, kt);
    }
}

/* P (rows, w) = e^(S - lse) of a recomputed tile, and dP = dO V_tile^T. */
static void backward_tile(float *P, float *dP, const sdpa_block *k, const float *go, const float *lse, int64_t j0,
                          int64_t w) {
    const tf_sdpa_params *p = k->p;
    const tf_kernels *kern = k->kern;
    int64_t rows = k->i1 - k->i0;
    block_scores(P, k, j0, w);
    for (int64_t r = 0; r < rows; r++) {
        if (lse[r] == -INFINITY) memset(P + r * w, 0, (size_t)w * sizeof *P);
        else kern->exp_shift(P + r * w, P + r * w, lse[r], w);
    }
    kern->tile_gemm(dP, w, go, p->os[2], 1, k->vt + j0 * p->Dv, stored_width(p, j0), rows, w, p->Dv, 0.0f);  // dO V_tile^T
}

/* One query block of the backward pass, dS = P (dP - delta) with delta =
 * rowsum(P * dP). The first sweep forms every key tile's P and dP into the
 * thread's scratch (BQ x Tk each: linear in the sequence) and sums delta in
 * double, which keeps each row's dS summing to zero; the second forms dS and
 * the gradients from the stored tiles. (Flash-attention's shortcut
 * delta = rowsum(dO * O) reads the float-rounded O: on small dS it lost up to
 * 1e-4 of relative accuracy in LayerNorm and mask gradients downstream.) */
static void backward_block(const tf_node *n, const sdpa_block *k, const float *lse, double *gmask, float *scratch) {
    const tf_sdpa_params *p = k->p;
    tf_tensor *Q = n->in[0], *K = n->in[1], *V = n->in[2];
    int64_t rows = k->i1 - k->i0, end = block_end(k), b = k->bh / p->H, h = k->bh % p->H;
    const float *go = n->out->grad + out_at(p, k->bh, k->i0);  // (rows,Dv), rows os[2] apart
    const tf_kernels *kern = k->kern;
    float *Pall = scratch, *dPall = scratch + BQ * p->Tk;  // key tile j0 at j0 * rows: (rows, w)
    double delta[BQ] = {0};
    for (int64_t j0 = 0; j0 < end; j0 += p->bk) {
        int64_t w = end - j0 < p->bk ? end - j0 : p->bk;
        float *P = Pall + j0 * rows, *dP = dPall + j0 * rows;
        backward_tile(P, dP, k, go, lse, j0, w);
        for (int64_t r = 0; r < rows; r++) delta[r] += kern->dot_f64(P + r * w, dP + r * w, w);
    }
    for (int64_t j0 = 0; j0 < end; j0 += p->bk) {
        int64_t w = end - j0 < p->bk ? end - j0 : p->bk;
        float *P = Pall + j0 * rows, *dP = dPall + j0 * rows;
        if (V->grad)  // dV_tile += P^T dO
            kern->tile_gemm(V->grad + at(p, 2, k->bh) + j0 * p->ld[2], p->ld[2], P, 1, w, go, p->os[2], w, p->Dv, rows,
                            1.0f);
        for (int64_t r = 0; r < rows; r++) {  // dP becomes scale * dS
            int64_t moff = b * p->ms[0] + h * p->ms[1] + (k->i0 + r) * p->ms[2];
            if (!gmask) {
                kern->softmax_ds(dP + r * w, P + r * w, delta[r], p->scale, w);
                continue;
            }
            for (int64_t c = 0; c < w; c++) {  /* a float mask's gradient takes each dS in double */
                double ds = (double)P[r * w + c] * ((double)dP[r * w + c] - delta[r]);
                if (P[r * w + c] != 0.0f) gmask[moff + (j0 + c) * p->ms[3]] += ds;
                dP[r * w + c] = p->scale * (float)ds;
            }
        }
        if (Q->grad)  // dQ += scale dS K_tile
            kern->tile_gemm(Q->grad + at(p, 0, k->bh) + k->i0 * p->ld[0], p->ld[0], dP, w, 1, k->k + j0 * p->ld[1],
                            p->ld[1], rows, p->D, w, 1.0f);
        if (K->grad)  // dK_tile += scale dS^T Q
            kern->tile_gemm(K->grad + at(p, 1, k->bh) + j0 * p->ld[1], p->ld[1], dP, 1, w, k->q + k->i0 * p->ld[0],
                            p->ld[0], w, p->D, rows, 1.0f);
    }
}

void tf_op_sdpa_backward(tf_node *n) {
    const tf_sdpa_params *p = n->params;
    tf_tensor *M = n->n_in > 3 ? n->in[3] : NULL;
    float *gm = M && M->dtype == TF_DTYPE_F32 ? M->grad : NULL;
    const tf_kernels *kern = tf_kern();
    /* A mask gradient sums dS over the broadcast dims (heads, batch): in double,
     * over the mask's storage extent, in order on one thread, then added once. */
    int64_t extent = 1;
    for (int d = 0; gm && d < M->ndim; d++) extent += (M->shape[d] - 1) * M->stride[d];
    double *gacc = gm ? calloc((size_t)extent, sizeof *gacc) : NULL;
    if (gm && !gacc) return; /* out of memory: the mask gradient is skipped (inputs' still run) */
    /* (batch, head) pairs in parallel: their dq, dk, dv rows are disjoint; the
     * query blocks of one pair run in order (they add into the same dK, dV).
     * At most the threads the scratch was planned for (tf_set_threads may
     * have raised the count since the forward). */
#ifdef _OPENMP
    int nt = omp_get_max_threads() < p->threads ? omp_get_max_threads() : p->threads;
#endif
    float *scratch0 = n->saved[1] + p->B * p->H * (p->D + p->Dv) * p->Tk;
#pragma omp parallel for schedule(dynamic) num_threads(nt) if (tf_threads_free() > 1 && (!gm && p->B * p->H > 1 && p->Tq * p->Tk * p->D > 4096))
    for (int64_t bh = 0; bh < p->B * p->H; bh++) {
        int tid = 0;
#ifdef _OPENMP
        tid = omp_get_thread_num();
#endif
        float *scratch = scratch0 + (int64_t)tid * 2 * BQ * p->Tk;  // (2, BQ, Tk) of this thread
        const float *v = tf_f32(n->in[2]) + at(p, 2, bh);
        float *vt = n->saved[1] + p->B * p->H * p->D * p->Tk + bh * p->Dv * p->Tk;  // (Dv,Tk) of this (b,h)
        tf_tiles_t(kern, vt, v, p->ld[2], p->Tk, p->Dv, p->bk);
        for (int64_t i0 = 0; i0 < p->Tq; i0 += p->bq) {
            sdpa_block k = {p, kern, M, bh, i0, i0 + p->bq < p->Tq ? i0 + p->bq : p->Tq, tf_f32(n->in[0]) + at(p, 0, bh),
                            tf_f32(n->in[1]) + at(p, 1, bh), v, n->saved[1] + bh * p->D * p->Tk, vt};
            backward_block(n, &k, n->saved[0] + bh * p->Tq + i0, gacc, scratch);
        }
    }
    for (int64_t o = 0; gacc && o < extent; o++) gm[o] += (float)gacc[o];
    free(gacc);
}

tf_tensor *tf_attn_rows(tf_ctx *ctx, tf_tensor *x) {
    int rows = x->stride[3] == 1 && (x->stride[2] == x->shape[3] || x->shape[2] == 1);
    return rows ? x : tf_contiguous(ctx, x);
}

/* x with each row contiguous, rows at any stride: the heads of a fused
 * projection are read where they lie (copying q, k, v and their gradients
 * cost 6-9% of a small GPT's step). */
static tf_tensor *strided_rows(tf_ctx *ctx, tf_tensor *x) {
    return x->stride[3] == 1 || x->shape[3] == 1 ? x : tf_contiguous(ctx, x);
}

static tf_tensor *sdpa(tf_ctx *ctx, tf_tensor *q, tf_tensor *k, tf_tensor *v, tf_tensor *mask, int causal,
                       float scale, int heads_last) {
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
    /* one query row (a decoding step) keeps 64-key tiles: fewer online-softmax rescales */
    p->bq = p->bk = p->Tq >= 2 && p->Tq <= SMALL_T && p->Tk <= SMALL_T ? 32 : 64;
    int64_t hs = heads_last ? p->Dv : p->Tq * p->Dv, rs = heads_last ? p->H * p->Dv : p->Dv;
    memcpy(p->os, (int64_t[]){p->H * p->Tq * p->Dv, hs, rs}, sizeof p->os);
    int64_t full[4] = {p->B, p->H, p->Tq, p->Tk};
    if (mask) {
        if (mask->dtype == TF_DTYPE_I32 || tf_bcast_strides(mask, 4, full, p->ms))
            return tf_set_error("sdpa: mask %s does not broadcast to (B,H,Tq,Tk) = (%lld,%lld,%lld,%lld)",
                                tf_shape_str(mask, a, sizeof a), (long long)p->B, (long long)p->H,
                                (long long)p->Tq, (long long)p->Tk), NULL;
        p->mask_dtype = mask->dtype;
    }
    tf_tensor *in[4] = {strided_rows(ctx, q), strided_rows(ctx, k), strided_rows(ctx, v), mask};
    for (int i = 0; i < 3; i++)
        if (in[i]) {
            p->st[i][0] = in[i]->stride[0], p->st[i][1] = in[i]->stride[1];
            p->ld[i] = in[i]->shape[2] == 1 ? in[i]->shape[3] : in[i]->stride[2];
        }
    int64_t oshape[4] = {p->B, heads_last ? p->Tq : p->H, heads_last ? p->H : p->Tq, p->Dv};
    tf_node *n = tf_node_new(ctx, TF_OP_SDPA, mask ? 4 : 3, in, TF_DTYPE_F32, 4, oshape, p);
    p->threads = 1;
#ifdef _OPENMP
    p->threads = omp_get_max_threads();
#endif
    /* saved[1]: K^T and V^T by key tiles (B,H,D+Dv,Tk), then the backward's
     * per-thread P and dP of one query block (threads,2,BQ,Tk) when gradients flow */
    int64_t scratch = n && n->out->grad ? (int64_t)p->threads * 2 * BQ * p->Tk : 0;
    /* One query row and no backward (a decoding step over its cache): no
     * K^T, the scores are dot products with the keys' rows. Transposing every
     * key each step cost more than the scores (GPT-2-124M at 256 cached
     * tokens: 2.4M copies a token, 8% of an int8 step). */
    p->transposed = n && (p->Tq >= TRANSPOSE_MIN_ROWS || n->out->grad);
    int64_t kt = p->transposed ? p->B * p->H * (p->D + p->Dv) * p->Tk : 0;
    /* both written whole before they are read (forward: lse and K^T; backward: V^T, P, dP) */
    if (!n || !(n->saved[0] = tf_ctx_scratch(ctx, p->B * p->H * p->Tq)) ||  // lse: (B,H,Tq)
        !(n->saved[1] = tf_ctx_scratch(ctx, kt + scratch)))
        return NULL;
    return tf_node_run(ctx, n);
}

tf_tensor *tf_sdpa(tf_ctx *ctx, tf_tensor *q, tf_tensor *k, tf_tensor *v, tf_tensor *mask, int causal, float scale) {
    return sdpa(ctx, q, k, v, mask, causal, scale, 0);
}

tf_tensor *tf_sdpa_heads_last(tf_ctx *ctx, tf_tensor *q, tf_tensor *k, tf_tensor *v, tf_tensor *mask, int causal,
                              float scale) {
    return sdpa(ctx, q, k, v, mask, causal, scale, 1);
}
