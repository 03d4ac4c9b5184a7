/* Int8 weight copies and the product with them (the scheme: quant.h). */
#define _DEFAULT_SOURCE /* MADV_HUGEPAGE */
#include <float.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "kernels.h"
#include "ops_internal.h"
#include "quant.h"

enum { EMPTY, BUILDING, READY, FAILED };

struct tf_quant {
    atomic_int state;
    const void *src;    /* the float data the copy was made from */
    int64_t rows, cols; /* the float weight's shape as stored */
    int in_out;         /* made for a (in,out) weight: its rows are src's columns */
    int64_t N, K, Kp;   /* N rows of K values, padded to Kp bytes */
    int64_t nb;         /* blocks a row: Kp / TF_QUANT_BLOCK */
    int8_t *q;          // (N,Kp)
    float *scale;       // (N,nb) each block's
    int f32;            /* TF_QUANT_COPY_F32: no int8 rows, but t */
    int bf16;           /* TF_QUANT_COPY_BF16: no copy at all, a mark */
    float *t;           // (K,N) an (out,in) weight transposed, for the tile kernel
    tf_q8_packed_fn packed; /* non-NULL: q, scale and sum hold the packed copy (tf_q8_packed) */
    int16_t *sum;       // (N16/16, nb, 16) packed: each block's byte sum
};

tf_quant *tf_quant_new(const tf_tensor *w, int kind) {
    tf_quant *q = calloc(1, sizeof *q);
    if (!q) return NULL;
    atomic_init(&q->state, EMPTY);
    q->src = w->data, q->rows = w->shape[0], q->cols = w->shape[1];
    q->f32 = kind == TF_QUANT_COPY_F32, q->bf16 = kind == TF_QUANT_COPY_BF16;
    return q;
}

void tf_quant_free(tf_quant *q) {
    if (!q) return;
    free(q->q);
    free(q->scale);
    free(q->t);
    free(q->sum);
    free(q);
}

size_t tf_quant_bytes(const tf_quant *q) {
    if (!q || atomic_load(&q->state) != READY) return 0;
    if (q->f32) return (size_t)q->N * (size_t)q->K * sizeof *q->t;
    if (q->packed) { /* rows to a multiple of 16, with a byte sum beside each scale */
        size_t n = (size_t)tf_q8_packed_rows(q->N);
        return n * (size_t)q->Kp + n * (size_t)q->nb * (sizeof *q->scale + sizeof *q->sum);
    }
    return (size_t)q->N * (size_t)q->Kp + (size_t)q->N * (size_t)q->nb * sizeof *q->scale;
}

int64_t tf_quant_padded_k(const tf_quant *q) { return q->Kp; }

/* ---------------------------------------------------------------- reference kernels */

/* round(v / s) in [-127, 127], ties to even (s > 0, v finite). */
static int quant1(float v, float s) {
    float r = nearbyintf(v / s);
    return r > 127.0f ? 127 : r < -127.0f ? -127 : (int)r;
}

static float ref_amax(const float *x, int64_t n, int *bad) {
    float amax = 0.0f;
    for (int64_t k = 0; k < n; k++) {
        float a = fabsf(x[k]);
        if (!(a <= FLT_MAX)) *bad = 1;
        else if (a > amax) amax = a;
    }
    return amax;
}

static void ref_quant(int8_t *q, const float *x, int64_t n, float s, int offset) {
    for (int64_t k = 0; k < n; k++) q[k] = (int8_t)(uint8_t)((quant1(x[k], s) + offset) & 255);
}

static void ref_amax_cols(float *amax, int *bad, const float *w, int64_t ldw, int64_t K, int nb) {
    for (int j = 0; j < nb; j++) amax[j] = 0.0f, bad[j] = 0;
    for (int64_t k = 0; k < K; k++)
        for (int j = 0; j < nb; j++) {
            float a = fabsf(w[k * ldw + j]);
            if (!(a <= FLT_MAX)) bad[j] = 1;
            else if (a > amax[j]) amax[j] = a;
        }
}

static void ref_quant_cols(int8_t *q, int64_t Kp, const float *w, int64_t ldw, int64_t K, const float *s, int nb) {
    for (int64_t k = 0; k < K; k++)
        for (int j = 0; j < nb; j++) q[j * Kp + k] = (int8_t)(s[j] > 0.0f ? quant1(w[k * ldw + j], s[j]) : 0);
}

static void gemm_ref(float *y, int64_t ldy, const uint8_t *xq, const float *sx, int64_t M, const int8_t *q,
                     const float *sw, int64_t N, int64_t Kp) {
    int64_t nb = Kp / TF_QUANT_BLOCK;
    for (int64_t m = 0; m < M; m++)
        for (int64_t n = 0; n < N; n++) {
            float acc = 0.0f;
            for (int64_t b = 0; b < nb; b++) {
                const uint8_t *u = xq + m * Kp + b * TF_QUANT_BLOCK;
                const int8_t *w = q + n * Kp + b * TF_QUANT_BLOCK;
                int32_t d = 0;
                for (int k = 0; k < TF_QUANT_BLOCK; k++) d += ((int32_t)u[k] - 128) * (int32_t)w[k];
                acc = tf_q8_block(acc, d, sx[m * nb + b], sw[n * nb + b]);
            }
            y[m * ldy + n] += acc;
        }
}

static const tf_q8_kernels REF = {"portable", gemm_ref, ref_amax, ref_quant, ref_amax_cols, ref_quant_cols, NULL, NULL};

const tf_q8_kernels *tf_q8_ref(void) { return &REF; }

static tf_q8_kernels avx2 = {"avx2", NULL, ref_amax, ref_quant, ref_amax_cols, ref_quant_cols, NULL, NULL};
static pthread_once_t avx2_once = PTHREAD_ONCE_INIT;

static void avx2_init(void) { avx2.gemm = tf_q8_avx2_gemm(); }

const tf_q8_kernels *tf_q8_avx2(void) {
    pthread_once(&avx2_once, avx2_init);
    return avx2.gemm ? &avx2 : NULL;
}

static const tf_q8_kernels *best;
static pthread_once_t best_once = PTHREAD_ONCE_INIT;

/* The set of the float kernels' ISA: on avx512 the AVX-512 quantisation and
 * the VNNI product (1.3-1.4x the AVX2 product on MiniLM, docs/performance.md),
 * on avx2 the AVX2 one, else the reference; all give the reference's bits. */
static void choose(void) {
    const char *isa = tf_kern()->name;
    int simd = strcmp(isa, "avx512") == 0 || strcmp(isa, "avx2") == 0;
    best = simd && tf_q8_avx2() ? tf_q8_avx2() : &REF;
    if (strcmp(isa, "avx512") == 0 && tf_q8_avx512()) best = tf_q8_avx512();
}

const tf_q8_kernels *tf_q8_best(void) {
    pthread_once(&best_once, choose);
    return best;
}

/* ---------------------------------------------------------------- packing */

int64_t tf_q8_packed_rows(int64_t N) { return (N + 15) / 16 * 16; }

/* quant.h's layout; any CPU (a permutation, once a copy). */
/* Panel p of the packed copy (tf_q8_pack). */
static void pack_panel(int8_t *w, float *s, int16_t *sum, const int8_t *q, const float *sw, int64_t N, int64_t Kp,
                       int64_t p) {
    int64_t nb = Kp / TF_QUANT_BLOCK;
    for (int64_t b = 0; b < nb; b++) {
        int8_t *wb = w + (p * nb + b) * 512;
        for (int j = 0; j < 16; j++) {
            int64_t n = p * 16 + j;
            static const int8_t zero[TF_QUANT_BLOCK];
            const int8_t *r = n < N ? q + n * Kp + b * TF_QUANT_BLOCK : zero;
            int total = 0;
            for (int k = 0; k < TF_QUANT_BLOCK; k++) total += r[k];
            for (int g = 0; g < TF_QUANT_BLOCK / 4; g++) memcpy(wb + g * 64 + j * 4, r + g * 4, 4); /* 4 bytes a group */
            s[(p * nb + b) * 16 + j] = n < N ? sw[n * nb + b] : 0.0f;
            sum[(p * nb + b) * 16 + j] = (int16_t)total; /* |total| <= 32 * 127 */
        }
    }
}

/* Panels on the free threads: each writes its own bytes (GPT-2-124M's copies packed on one
 * thread were a quarter of `generate --precision int8`'s start). */
void tf_q8_pack(int8_t *w, float *s, int16_t *sum, const int8_t *q, const float *sw, int64_t N, int64_t Kp) {
    int64_t panels = tf_q8_packed_rows(N) / 16;
    TF_PARALLEL_FOR(panels * Kp >= (1 << 16), p, panels, pack_panel(w, s, sum, q, sw, N, Kp, p));
}

/* ---------------------------------------------------------------- copies */

/* The scale of values whose largest magnitude is amax: NaN when one was not finite. */
static float scale_of(float amax, int bad) { return bad ? NAN : amax / 127.0f; }

/* The values of block b of a row of K: min(32, K - 32 b), 0 past K. */
static int block_len(int64_t K, int64_t b) {
    int64_t n = K - b * TF_QUANT_BLOCK;
    return n <= 0 ? 0 : n < TF_QUANT_BLOCK ? (int)n : TF_QUANT_BLOCK;
}

/* Columns n0..n0+nc (nc <= 16) of a (K,N) weight, each a row of the copy,
 * block by block: read in rows of nc contiguous floats (a column at a time
 * would miss the cache on every value). A block past K keeps scale 0 and
 * zero bytes. */
static void build_cols(tf_quant *q, const tf_q8_kernels *kq, const float *w, int64_t n0, int nc) {
    float amax[16], s[16];
    int bad[16];
    for (int64_t b = 0; b < q->nb; b++) {
        int len = block_len(q->K, b);
        const float *wb = w + b * TF_QUANT_BLOCK * q->N + n0;
        if (len) kq->amax_cols(amax, bad, wb, q->N, len, nc);
        for (int j = 0; j < nc; j++) s[j] = len ? scale_of(amax[j], bad[j]) : 0.0f;
        for (int j = 0; j < nc; j++) q->scale[(n0 + j) * q->nb + b] = s[j];
        if (len) kq->quant_cols(q->q + n0 * q->Kp + b * TF_QUANT_BLOCK, q->Kp, wb, q->N, len, s, nc);
    }
}

/* q (K) = x (K) quantised, plus offset; all offset (zero) when its scale,
 * returned, is 0 or NaN. */
static float quant_span(const tf_q8_kernels *kq, int8_t *q, const float *x, int64_t K, int offset) {
    int bad = 0;
    float amax = kq->amax(x, K, &bad);
    float s = scale_of(amax, bad);
    if (s > 0.0f) kq->quant(q, x, K, s, offset);
    else memset(q, offset, (size_t)K);
    return s;
}

/* q (nb blocks of 32) and s (nb) = row x (K) quantised block by block, plus
 * offset: a weight's rows (offset 0) and an input's (128); the bytes past K
 * are offset (zero), a block past K has scale 0. */
static void quant_row(const tf_q8_kernels *kq, int8_t *q, float *s, const float *x, int64_t K, int64_t nb,
                      int offset) {
    for (int64_t b = 0; b < nb; b++) {
        int len = block_len(K, b);
        int8_t *qb = q + b * TF_QUANT_BLOCK;
        s[b] = len ? quant_span(kq, qb, x + b * TF_QUANT_BLOCK, len, offset) : 0.0f;
        memset(qb + len, offset, (size_t)(TF_QUANT_BLOCK - len));
    }
}

/* A copy's bytes: those of 2 MiB and more on 2 MiB boundaries, with 2 MiB
 * pages asked for (as the arena's big blocks: decoding streams every copy
 * once a token; a hint, nothing changes when refused). */
static void *copy_alloc(size_t bytes) {
    enum { HUGE_PAGE = 1 << 21 };
    if (bytes < HUGE_PAGE) return aligned_alloc(TF_QUANT_PAD, bytes);
    size_t n = bytes / HUGE_PAGE * HUGE_PAGE + (bytes % HUGE_PAGE ? HUGE_PAGE : 0); /* a multiple of the alignment */
    void *p = n >= bytes ? aligned_alloc(HUGE_PAGE, n) : NULL;
    if (p) (void)madvise(p, n, MADV_HUGEPAGE);
    return p;
}

/* The float copy: t (K,N) = w^T, 16 columns of w a task (w's rows read whole). */
static int build_f32(tf_quant *q) {
    size_t bytes;
    if (!tf_mul_size((size_t)q->N * (size_t)q->K, sizeof *q->t, &bytes) ||
        !(q->t = copy_alloc((bytes + TF_QUANT_PAD - 1) / TF_QUANT_PAD * TF_QUANT_PAD)))
        return -1;
    const float *w = q->src;
    float *t = q->t;
    int64_t N = q->N, K = q->K, blocks = (N + 15) / 16;
    TF_PARALLEL_FOR(N * K > 65536, b, blocks, for (int64_t n = b * 16; n < N && n < b * 16 + 16; n++)
                        for (int64_t k = 0; k < K; k++) t[k * N + n] = w[n * K + k]);
    return 0;
}

/* The rows q, scale (built) replaced by their packed copy (tf_q8_packed) for f. */
static int pack_copy(tf_quant *q, tf_q8_packed_fn f) {
    size_t n = (size_t)tf_q8_packed_rows(q->N), bytes, blocks;
    if (!tf_mul_size(n, (size_t)q->Kp, &bytes) || !tf_mul_size(n, (size_t)q->nb, &blocks)) return -1;
    int8_t *w = copy_alloc(bytes);
    float *s = malloc(blocks * sizeof *s);
    int16_t *sum = malloc(blocks * sizeof *sum);
    if (!w || !s || !sum) {
        free(w), free(s), free(sum);
        return -1;
    }
    tf_q8_pack(w, s, sum, q->q, q->scale, q->N, q->Kp);
    free(q->q), free(q->scale);
    q->q = w, q->scale = s, q->sum = sum, q->packed = f;
    return 0;
}

static int build(tf_quant *q, int in_out) {
    q->in_out = in_out;
    q->N = in_out ? q->cols : q->rows, q->K = in_out ? q->rows : q->cols;
    if (q->f32) return in_out ? -1 : build_f32(q); /* (in,out) is the kernel's layout already */
    if (q->K > TF_QUANT_MAX_K) return -1;
    q->Kp = (q->K + TF_QUANT_PAD - 1) / TF_QUANT_PAD * TF_QUANT_PAD;
    q->nb = q->Kp / TF_QUANT_BLOCK;
    size_t bytes, sbytes;
    if (!tf_mul_size((size_t)q->N, (size_t)q->Kp, &bytes) ||
        !tf_mul_size((size_t)q->N * (size_t)q->nb, sizeof *q->scale, &sbytes))
        return -1;
    q->q = copy_alloc(bytes); /* Kp is a multiple of 64: so is bytes */
    q->scale = malloc(sbytes);
    if (!q->q || !q->scale) return -1;
    memset(q->q, 0, bytes);
    const float *w = q->src;
    const tf_q8_kernels *kq = tf_q8_best();
    if (in_out) {
        int64_t blocks = (q->N + 15) / 16;
        TF_PARALLEL_FOR(q->N * q->K > 65536, b, blocks,
                        build_cols(q, kq, w, b * 16, q->N - b * 16 < 16 ? (int)(q->N - b * 16) : 16));
    } else {
        TF_PARALLEL_FOR(q->N * q->K > 65536, n, q->N,
                        quant_row(kq, q->q + n * q->Kp, q->scale + n * q->nb, w + n * q->K, q->K, q->nb, 0));
    }
    return kq->packed ? pack_copy(q, kq->packed) : 0;
}

/* Build once: the first caller builds, any other waits for it (a few ms). */
static int ready(tf_quant *q, int in_out) {
    int st = atomic_load_explicit(&q->state, memory_order_acquire);
    if (st == EMPTY) {
        int expect = EMPTY;
        if (atomic_compare_exchange_strong(&q->state, &expect, BUILDING)) {
            st = build(q, in_out) ? FAILED : READY;
            atomic_store_explicit(&q->state, st, memory_order_release);
        }
    }
    while ((st = atomic_load_explicit(&q->state, memory_order_acquire)) == BUILDING) sched_yield();
    return st == READY;
}

const tf_quant *tf_quant_for(const tf_tensor *w, int in_out, int64_t *row0) {
    tf_quant *q = w ? w->quant : NULL;
    if (!q || q->bf16 || w->dtype != TF_DTYPE_F32 || w->ndim != 2 || !tf_is_contiguous(w)) return NULL;
    const float *src = q->src, *d = tf_f32(w);
    if (d < src || d >= src + q->rows * q->cols || w->shape[1] != q->cols) return NULL;
    int64_t off = d - src;
    if (off % q->cols) return NULL;
    *row0 = off / q->cols;
    /* (in,out): the whole weight only; (out,in): any block of its rows */
    if (in_out ? *row0 != 0 || w->shape[0] != q->rows : *row0 + w->shape[0] > q->rows) return NULL;
    if (!ready(q, in_out) || q->in_out != in_out) return NULL;
    return q;
}

void tf_quant_rows_with(const tf_q8_kernels *kq, uint8_t *xq, float *sx, const float *x, int64_t M, int64_t K,
                        int64_t Kp) {
    int64_t nb = Kp / TF_QUANT_BLOCK;
    /* rows on the free threads (each row its own: the same bytes; serial, a twentieth of beam
     * search's step waited on one thread before the product's parallel region) */
    TF_PARALLEL_FOR(M > 1 && M * K >= (1 << 14), m, M,
                    if (kq->quant_row_u8) kq->quant_row_u8(xq + m * Kp, sx + m * nb, x + m * K, K, nb);
                    else quant_row(kq, (int8_t *)(xq + m * Kp), sx + m * nb, x + m * K, K, nb, 128));
}

void tf_quant_rows(uint8_t *xq, float *sx, const float *x, int64_t M, int64_t K, int64_t Kp) {
    tf_quant_rows_with(tf_q8_best(), xq, sx, x, M, K, Kp);
}


int tf_quant_is_f32(const tf_quant *q) { return q && q->f32; }
int tf_quant_takes_bias(const tf_quant *q) { return q && q->packed; }
int tf_quant_is_bf16(const tf_quant *q) { return q && q->bf16; }

int tf_quant_f32_serves(const tf_tensor *w, int64_t M) {
    const tf_quant *q = w->quant;
    if (!tf_quant_is_f32(q) || w->ndim != 2) return 0;
    return tf_tile_rows(M, w->shape[0], w->shape[1]) ||
           (w->data == q->src && w->shape[0] == q->rows && w->shape[1] == q->cols); /* the whole weight */
}

void tf_quant_gemm(float *y, const float *bias, const float *x, int64_t M, int64_t K, const tf_quant *q, int64_t row0,
                   int64_t N, uint8_t *xq, float *sx) {
    enum { COLS = 64 }; /* output columns (rows of the copy) per task */
    int64_t Kp = q->Kp, tasks = (N + COLS - 1) / COLS;
    if (q->packed) { /* the bias read in place of y: no pass to set y first */
        tf_quant_rows(xq, sx, x, M, K, Kp);
        tf_q8_packed p = {q->q, q->scale, q->sum, q->N, Kp};
        tf_q8_packed_fn f = q->packed;
        TF_PARALLEL_FOR(M * N * Kp > (1 << 17) && tasks > 1, t, tasks, int64_t n0 = t * COLS;
                        int64_t nn = N - n0 < COLS ? N - n0 : COLS;
                        f(y + n0, N, bias ? bias + n0 : NULL, xq, sx, M, &p, row0 + n0, row0 + n0 + nn));
        return;
    }
    if (q->f32 && !tf_tile_rows(M, N, K)) { /* the whole copy (tf_quant_f32_serves): the BLAS, nothing transposed */
        tf_gemm_acc(y, x, q->t, M, N, K, 0, 0, TF_GEMM_AUTO);
        return;
    }
    if (q->f32) { /* columns row0.. of t */
        tf_tile_acc(y, x, q->t + row0, q->N, M, N, K);
        return;
    }
    tf_quant_rows(xq, sx, x, M, K, Kp);
    tf_q8_gemm_fn f = tf_q8_best()->gemm;
    const int8_t *w = q->q + row0 * Kp;
    const float *sw = q->scale + row0 * q->nb;
    TF_PARALLEL_FOR(M * N * Kp > (1 << 17) && tasks > 1, t, tasks, int64_t n0 = t * COLS;
                    int64_t nn = N - n0 < COLS ? N - n0 : COLS;
                    f(y + n0, N, xq, sx, M, w + n0 * Kp, sw + n0 * q->nb, nn, Kp));
}
