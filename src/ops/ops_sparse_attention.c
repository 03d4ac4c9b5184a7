/* Block-sparse flash attention: the flash kernel of ops_attention.c, but a
 * block of query rows visits only the key blocks its tf_sparse_layout lists
 * (window, global, random), with the same online softmax over them. Within a
 * visited tile the token rule (sparse.h) and the key padding hide keys. Time
 * O(T k b D) for k visited blocks of b keys per query block; memory: the
 * output, each row's log-sum-exp, K^T and V^T by tiles, and the backward's
 * per-thread P and dP of one query block (b x k b each). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernels.h"
#include "sparse.h"
#ifdef _OPENMP
#include <omp.h>
#endif

#define MB TF_SPARSE_MAX_BLOCK

typedef struct {
    int64_t B, H, T, D, Dv; /* T: the keys, positions 0 .. T-1 */
    int64_t Tq, o;          /* the queries are positions o .. T-1, o = T - Tq (a cache's new positions) */
    float scale;
    tf_sparse_pattern pat; /* global positions copied into the arena */
    uint8_t *is_global;    /* (T) */
    tf_sparse_layout lay;  /* its arrays in the arena */
    int64_t st[3][2];      /* q, k, v: element strides of the batch and head dims (rows contiguous) */
    int threads;           /* backward scratch: one (2, b, max_visit b) block per thread */
} sp_params;

/* One query block qb, positions [i0, i1) (query rows [i0 - o, i1 - o)), of one (batch, head). */
typedef struct {
    const sp_params *p;
    const tf_kernels *kern;
    const uint8_t *pad;     /* this batch row's padding (T), or NULL */
    int64_t bh, qb, i0, i1;
    int64_t row;            /* qb's row of the layout: h * n_qblocks + qb with a table per head, else qb */
    const float *q, *k, *v; /* this (b,h)'s Q (Tq,D), K (T,D), V (T,Dv) */
    const float *kt, *vt;   /* K^T, V^T by key blocks (tf_tiles_t) */
} sp_block;

static int64_t at(const sp_params *p, int i, int64_t bh) {
    return bh / p->H * p->st[i][0] + bh % p->H * p->st[i][1];
}

static sp_block block_of(const tf_node *n, const tf_kernels *kern, int64_t bh, int64_t qb) {
    const sp_params *p = n->params;
    int64_t b = p->pat.block, i0 = qb * b > p->o ? qb * b : p->o;
    sp_block k = {p, kern, n->n_in > 3 ? tf_u8(n->in[3]) + bh / p->H * p->T : NULL, bh, qb, i0,
                  qb * b + b < p->T ? qb * b + b : p->T, (p->lay.n_heads > 1 ? bh % p->H * p->lay.n_qblocks : 0) + qb,
                  tf_f32(n->in[0]) + at(p, 0, bh), tf_f32(n->in[1]) + at(p, 1, bh),
                  tf_f32(n->in[2]) + at(p, 2, bh), n->saved[1] + bh * p->D * p->T,
                  n->saved[1] + p->B * p->H * p->D * p->T + bh * p->Dv * p->T};
    return k;
}

/* S (rows, w) = scale * Q_rows K_tile^T for visited tile t (keys [j0, j0+w)),
 * -inf where the pattern or the padding hides the key. */
static void tile_scores(float *S, const sp_block *k, int64_t t, int64_t j0, int64_t w) {
    const sp_params *p = k->p;
    int64_t rows = k->i1 - k->i0;
    int rnd = p->lay.random[t];
    k->kern->tile_gemm(S, w, k->q + (k->i0 - p->o) * p->D, p->D, 1, k->kt + j0 * p->D, w, rows, w, p->D, 0.0f);
    for (int64_t r = 0; r < rows; r++)
        for (int64_t c = 0; c < w; c++) {
            int seen = p->pat.itc ? !(k->pad && k->pad[k->i0 + r])  // itc: whole blocks; a padded query sees nothing
                                  : tf_sparse_sees(&p->pat, p->is_global, k->i0 + r, j0 + c, rnd);
            seen = seen && !(k->pad && k->pad[j0 + c]);
            S[r * w + c] = seen ? S[r * w + c] * p->scale : -INFINITY;
        }
}

static int64_t tile_width(const sp_params *p, int64_t j0) {
    return p->T - j0 < p->pat.block ? p->T - j0 : p->pat.block;
}

static void forward_block(const sp_block *k, float *o, float *lse) {  // o: (rows,Dv), lse: (rows)
    const sp_params *p = k->p;
    int64_t rows = k->i1 - k->i0;
    float S[MB * MB], m[MB];
    double l[MB];
    memset(o, 0, (size_t)(rows * p->Dv) * sizeof *o);
    for (int64_t r = 0; r < rows; r++) m[r] = -INFINITY, l[r] = 0.0;
    for (int64_t t = p->lay.off[k->row]; t < p->lay.off[k->row + 1]; t++) {
        int64_t j0 = (int64_t)p->lay.kblock[t] * p->pat.block, w = tile_width(p, j0);
        tile_scores(S, k, t, j0, w);
        tf_flash_tile_rows(k->kern, S, rows, w, m, l, o, p->Dv, p->Dv);
        k->kern->tile_gemm(o, p->Dv, S, w, 1, k->v + j0 * p->Dv, p->Dv, rows, p->Dv, w, 1.0f);  // o += P V_tile
    }
    tf_flash_finish(o, p->Dv, lse, m, l, rows, p->Dv);
}

/* The first query block holding a query: a cache's new positions start at o. */
static int64_t first_qblock(const sp_params *p) { return p->o / p->pat.block; }

static void forward_task(const tf_node *n, const tf_kernels *kern, int64_t task) {
    const sp_params *p = n->params;
    int64_t nq = p->lay.n_qblocks - first_qblock(p), bh = task / nq;
    sp_block k = block_of(n, kern, bh, first_qblock(p) + task % nq);
    int64_t row = bh * p->Tq + k.i0 - p->o;
    forward_block(&k, tf_f32(n->out) + row * p->Dv, n->saved[0] + row);
}

void tf_op_sparse_attention_forward(tf_node *n) {
    const sp_params *p = n->params;
    const tf_kernels *kern = tf_kern();
    int64_t tasks = p->B * p->H * (p->lay.n_qblocks - first_qblock(p));
    int big = p->lay.off[p->lay.n_qblocks] * p->pat.block * p->pat.block * p->D * p->B * p->H >= (1 << 18);
    TF_PARALLEL_FOR(big && p->B * p->H > 1, bh, p->B * p->H,  // K^T: (B,H, key blocks of (D,w))
                    tf_tiles_t(kern, n->saved[1] + bh * p->D * p->T, tf_f32(n->in[1]) + at(p, 1, bh), p->D, p->T, p->D,
                               p->pat.block));
    if (big && tasks > 1 && tf_threads_free() > 1) {
#pragma omp parallel for schedule(dynamic)
        for (int64_t t = 0; t < tasks; t++) forward_task(n, kern, t);
    } else {
        for (int64_t t = 0; t < tasks; t++) forward_task(n, kern, t);
    }
}

/* One query block of the backward, dS = P (dP - delta), delta = rowsum(P dP)
 * in double (as tf_sdpa's backward): the first sweep forms each visited
 * tile's P and dP = dO V_tile^T into scratch, the second the gradients. */
static void backward_block(const tf_node *n, const sp_block *k, const float *lse, float *scratch) {
    const sp_params *p = k->p;
    tf_tensor *Q = n->in[0], *K = n->in[1], *V = n->in[2];
    int64_t rows = k->i1 - k->i0, b = p->pat.block, t0 = p->lay.off[k->row], t1 = p->lay.off[k->row + 1];
    const float *go = n->out->grad + (k->bh * p->Tq + k->i0 - p->o) * p->Dv;  // (rows,Dv)
    float *Pall = scratch, *dPall = scratch + b * b * p->lay.max_visit;  // tile t at (t - t0) rows b: (rows, w)
    double delta[MB] = {0};
    for (int64_t t = t0; t < t1; t++) {
        int64_t j0 = (int64_t)p->lay.kblock[t] * b, w = tile_width(p, j0);
        float *P = Pall + (t - t0) * rows * b, *dP = dPall + (t - t0) * rows * b;
        tile_scores(P, k, t, j0, w);
        for (int64_t r = 0; r < rows; r++) {
            if (lse[r] == -INFINITY) memset(P + r * w, 0, (size_t)w * sizeof *P);
            else k->kern->exp_shift(P + r * w, P + r * w, lse[r], w);
        }
        k->kern->tile_gemm(dP, w, go, p->Dv, 1, k->vt + j0 * p->Dv, w, rows, w, p->Dv, 0.0f);  // dO V_tile^T
        for (int64_t r = 0; r < rows; r++) delta[r] += k->kern->dot_f64(P + r * w, dP + r * w, w);
    }
    for (int64_t t = t0; t < t1; t++) {
        int64_t j0 = (int64_t)p->lay.kblock[t] * b, w = tile_width(p, j0);
        float *P = Pall + (t - t0) * rows * b, *dP = dPall + (t - t0) * rows * b;
        if (V->grad)  // dV_tile += P^T dO
            k->kern->tile_gemm(V->grad + at(p, 2, k->bh) + j0 * p->Dv, p->Dv, P, 1, w, go, p->Dv, w, p->Dv, rows, 1.0f);
        for (int64_t r = 0; r < rows; r++)  // dP becomes scale * dS
            k->kern->softmax_ds(dP + r * w, P + r * w, delta[r], p->scale, w);
        if (Q->grad)  // dQ += scale dS K_tile
            k->kern->tile_gemm(Q->grad + at(p, 0, k->bh) + (k->i0 - p->o) * p->D, p->D, dP, w, 1, k->k + j0 * p->D, p->D, rows,
                               p->D, w, 1.0f);
        if (K->grad)  // dK_tile += scale dS^T Q
            k->kern->tile_gemm(K->grad + at(p, 1, k->bh) + j0 * p->D, p->D, dP, 1, w, k->q + (k->i0 - p->o) * p->D, p->D, w,
                               p->D, rows, 1.0f);
    }
}

void tf_op_sparse_attention_backward(tf_node *n) {
    const sp_params *p = n->params;
    const tf_kernels *kern = tf_kern();
    /* (batch, head) pairs in parallel: their dq, dk, dv rows are disjoint; the
     * query blocks of one pair run in order (they add into the same dK, dV). */
#ifdef _OPENMP
    int nt = omp_get_max_threads() < p->threads ? omp_get_max_threads() : p->threads;
#endif
    float *scratch0 = n->saved[1] + p->B * p->H * (p->D + p->Dv) * p->T;
    int64_t per_thread = 2 * p->pat.block * p->pat.block * p->lay.max_visit;
#pragma omp parallel for schedule(dynamic) num_threads(nt) if (tf_threads_free() > 1 && p->B * p->H > 1 && p->T * p->D > 4096)
    for (int64_t bh = 0; bh < p->B * p->H; bh++) {
        int tid = 0;
#ifdef _OPENMP
        tid = omp_get_thread_num();
#endif
        sp_block k0 = block_of(n, kern, bh, 0);
        tf_tiles_t(kern, (float *)k0.vt, k0.v, p->Dv, p->T, p->Dv, p->pat.block);  // V^T: (Dv, T) of this (b,h)
        for (int64_t qb = first_qblock(p); qb < p->lay.n_qblocks; qb++) {
            sp_block k = block_of(n, kern, bh, qb);
            backward_block(n, &k, n->saved[0] + bh * p->Tq + k.i0 - p->o, scratch0 + tid * per_thread);
        }
    }
}

/* The pattern, its global positions and its layout, copied into the arena. */
static int plan(tf_ctx *ctx, sp_params *p, const tf_sparse_pattern *pat) {
    tf_sparse_layout l;
    if (tf_sparse_layout_new(&l, pat, p->T)) return -1;
    int64_t nt = l.off[l.n_heads * l.n_qblocks], rows = l.n_heads * l.n_qblocks;
    if (l.n_heads > 1 && l.n_heads != p->H) {
        tf_sparse_layout_free(&l);
        return tf_set_error("sparse attention: a random block table of %lld heads for %lld heads", (long long)l.n_heads,
                            (long long)p->H);
    }
    if (pat->itc && p->Tq != p->T) {
        tf_sparse_layout_free(&l);
        return tf_set_error("sparse attention: Hugging Face's BigBird layout has no cache (queries %lld of %lld "
                            "positions)", (long long)p->Tq, (long long)p->T);
    }
    p->pat = *pat;
    p->pat.itc_random = NULL; /* the layout holds the table's blocks */
    int *g = tf_ctx_alloc(ctx, (size_t)(pat->n_global + 1) * sizeof *g);
    p->is_global = tf_ctx_alloc(ctx, (size_t)p->T);
    p->lay = l;
    p->lay.off = tf_ctx_alloc(ctx, (size_t)(rows + 1) * sizeof *l.off);
    p->lay.kblock = tf_ctx_alloc(ctx, (size_t)(nt + 1) * sizeof *l.kblock);
    p->lay.random = tf_ctx_alloc(ctx, (size_t)(nt + 1));
    int ok = g && p->is_global && p->lay.off && p->lay.kblock && p->lay.random;
    if (ok) {
        if (pat->n_global) memcpy(g, pat->global, (size_t)pat->n_global * sizeof *g);
        p->pat.global = g;
        tf_sparse_globals(p->is_global, pat, p->T);
        memcpy(p->lay.off, l.off, (size_t)(rows + 1) * sizeof *l.off);
        memcpy(p->lay.kblock, l.kblock, (size_t)nt * sizeof *l.kblock);
        memcpy(p->lay.random, l.random, (size_t)nt);
    }
    tf_sparse_layout_free(&l);
    return ok ? 0 : -1;
}

tf_tensor *tf_sparse_attention(tf_ctx *ctx, tf_tensor *q, tf_tensor *k, tf_tensor *v, tf_tensor *pad,
                               const tf_sparse_pattern *pattern, float scale) {
    if (!q || !k || !v) return NULL;
    char a[64], b[64], c[64];
    if (q->ndim != 4 || k->ndim != 4 || v->ndim != 4 || q->dtype != TF_DTYPE_F32 || k->dtype != TF_DTYPE_F32 ||
        v->dtype != TF_DTYPE_F32 || q->shape[0] != k->shape[0] || k->shape[0] != v->shape[0] ||
        q->shape[1] != k->shape[1] || k->shape[1] != v->shape[1] || q->shape[3] != k->shape[3] ||
        q->shape[2] > k->shape[2] || k->shape[2] != v->shape[2])
        return tf_set_error("sparse attention: q %s, k %s, v %s are not (B,H,Tq,D), (B,H,T,D), (B,H,T,Dv) with "
                            "Tq <= T (self-attention; queries the last Tq positions)", tf_shape_str(q, a, sizeof a), tf_shape_str(k, b, sizeof b),
                            tf_shape_str(v, c, sizeof c)), NULL;
    if (pad && (pad->dtype != TF_DTYPE_U8 || pad->ndim != 2 || pad->shape[0] != q->shape[0] ||
                pad->shape[1] != k->shape[2]))
        return tf_set_error("sparse attention: key padding %s must be U8 (%lld,%lld)", tf_shape_str(pad, a, sizeof a),
                            (long long)q->shape[0], (long long)k->shape[2]), NULL;
    sp_params *p = tf_ctx_alloc(ctx, sizeof *p);
    if (!p) return NULL;
    p->B = q->shape[0], p->H = q->shape[1], p->T = k->shape[2], p->D = q->shape[3], p->Dv = v->shape[3];
    p->Tq = q->shape[2], p->o = p->T - p->Tq;
    p->scale = scale;
    if (plan(ctx, p, pattern)) return NULL;
    tf_tensor *in[4] = {tf_attn_rows(ctx, q), tf_attn_rows(ctx, k), tf_attn_rows(ctx, v), pad ? tf_contiguous(ctx, pad) : NULL};
    for (int i = 0; i < 3; i++)
        if (in[i]) p->st[i][0] = in[i]->stride[0], p->st[i][1] = in[i]->stride[1];
    int64_t oshape[4] = {p->B, p->H, p->Tq, p->Dv};
    tf_node *n = tf_node_new(ctx, TF_OP_SPARSE_ATTENTION, pad ? 4 : 3, in, TF_DTYPE_F32, 4, oshape, p);
    p->threads = 1;
#ifdef _OPENMP
    p->threads = omp_get_max_threads();
#endif
    /* saved[1]: K^T and V^T by key blocks (B,H,D+Dv,T), then the backward's
     * per-thread P and dP of one query block (threads, 2, b, b * max_visit) */
    int64_t scratch = n && n->out->grad ? (int64_t)p->threads * 2 * p->pat.block * p->pat.block * p->lay.max_visit : 0;
    if (!n || !(n->saved[0] = tf_ctx_scratch(ctx, p->B * p->H * p->Tq)) ||  // lse: (B,H,Tq)
        !(n->saved[1] = tf_ctx_scratch(ctx, p->B * p->H * (p->D + p->Dv) * p->T + scratch)))
        return NULL;
    return tf_node_run(ctx, n);
}
