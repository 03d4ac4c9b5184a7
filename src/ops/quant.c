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
    int8_t *q;          // (N,Kp)
    float *scale;       // (N)
    int32_t *sum;       // (N) sum of each row's q
    int f32;            /* TF_QUANT_COPY_F32: no int8 rows, but t */
    int bf16;           /* TF_QUANT_COPY_BF16: no copy at all, a mark */
    float *t;           // (K,N) an (out,in) weight transposed, for the tile kernel
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
    free(q->sum);
    free(q->t);
    free(q);
}

size_t tf_quant_bytes(const tf_quant *q) {
    if (!q || atomic_load(&q->state) != READY) return 0;
    if (q->f32) return (size_t)q->N * (size_t)q->K * sizeof *q->t;
    return (size_t)q->N * (size_t)q->Kp + (size_t)q->N * (sizeof *q->scale + sizeof *q->sum);
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
                     const float *sw, const int32_t *wsum, int64_t N, int64_t Kp) {
    for (int64_t m = 0; m < M; m++)
        for (int64_t n = 0; n < N; n++) {
            const uint8_t *a = xq + m * Kp;
            const int8_t *b = q + n * Kp;
            int32_t acc = 0;
            for (int64_t k = 0; k < Kp; k++) acc += (int32_t)a[k] * (int32_t)b[k];
            float v = tf_q8_value(acc, wsum[n], sx[m], sw[n]);
            y[m * ldy + n] += v;
        }
}

static const tf_q8_kernels REF = {"portable", gemm_ref, ref_amax, ref_quant, ref_amax_cols, ref_quant_cols};

const tf_q8_kernels *tf_q8_ref(void) { return &REF; }

static tf_q8_kernels avx2 = {"avx2", NULL, ref_amax, ref_quant, ref_amax_cols, ref_quant_cols};
static pthread_once_t avx2_once = PTHREAD_ONCE_INIT;

static void avx2_init(void) { avx2.gemm = tf_q8_avx2_gemm(); }

const tf_q8_kernels *tf_q8_avx2(void) {
    pthread_once(&avx2_once, avx2_init);
    return avx2.gemm ? &avx2 : NULL;
}

static const tf_q8_kernels *best;
static pthread_once_t best_once = PTHREAD_ONCE_INIT;

static void choose(void) {
    const char *isa = tf_kern()->name;
    int wide = strcmp(isa, "avx512") == 0, simd = wide || strcmp(isa, "avx2") == 0;
    best = wide && tf_q8_vnni() ? tf_q8_vnni() : simd && tf_q8_avx2() ? tf_q8_avx2() : &REF;
}

const tf_q8_kernels *tf_q8_best(void) {
    pthread_once(&best_once, choose);
    return best;
}

/* ---------------------------------------------------------------- copies */

/* The scale of values whose largest magnitude is amax: NaN when one was not finite. */
static float scale_of(float amax, int bad) { return bad ? NAN : amax / 127.0f; }

/* Columns n0..n0+nb (nb <= 16) of a (K,N) weight, each a row of the copy:
 * read in rows of nb contiguous floats (a column at a time would miss the
 * cache on every value). */
static void build_cols(tf_quant *q, const tf_q8_kernels *kq, const float *w, int64_t n0, int nb) {
    float amax[16];
    int bad[16];
    kq->amax_cols(amax, bad, w + n0, q->N, q->K, nb);
    for (int j = 0; j < nb; j++) q->scale[n0 + j] = scale_of(amax[j], bad[j]);
    kq->quant_cols(q->q + n0 * q->Kp, q->Kp, w + n0, q->N, q->K, q->scale + n0, nb);
}

/* q (K) = row x (K) quantised, plus offset; all offset (zero) when its scale,
 * returned, is 0 or NaN. A weight's rows (offset 0) and an input's (128). */
static float quant_row(const tf_q8_kernels *kq, int8_t *q, const float *x, int64_t K, int offset) {
    int bad = 0;
    float amax = kq->amax(x, K, &bad);
    float s = scale_of(amax, bad);
    if (s > 0.0f) kq->quant(q, x, K, s, offset);
    else memset(q, offset, (size_t)K);
    return s;
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

static int build(tf_quant *q, int in_out) {
    q->in_out = in_out;
    q->N = in_out ? q->cols : q->rows, q->K = in_out ? q->rows : q->cols;
    if (q->f32) return in_out ? -1 : build_f32(q); /* (in,out) is the kernel's layout already */
    if (q->K > TF_QUANT_MAX_K) return -1;
    q->Kp = (q->K + TF_QUANT_PAD - 1) / TF_QUANT_PAD * TF_QUANT_PAD;
    size_t bytes;
    if (!tf_mul_size((size_t)q->N, (size_t)q->Kp, &bytes)) return -1;
    q->q = copy_alloc(bytes); /* Kp is a multiple of 64: so is bytes */
    q->scale = malloc((size_t)q->N * sizeof *q->scale);
    q->sum = malloc((size_t)q->N * sizeof *q->sum);
    if (!q->q || !q->scale || !q->sum) return -1;
    memset(q->q, 0, bytes);
    const float *w = q->src;
    const tf_q8_kernels *kq = tf_q8_best();
    if (in_out) {
        int64_t blocks = (q->N + 15) / 16;
        TF_PARALLEL_FOR(q->N * q->K > 65536, b, blocks,
                        build_cols(q, kq, w, b * 16, q->N - b * 16 < 16 ? (int)(q->N - b * 16) : 16));
    } else {
        TF_PARALLEL_FOR(q->N * q->K > 65536, n, q->N,
                        q->scale[n] = quant_row(kq, q->q + n * q->Kp, w + n * q->K, q->K, 0));
    }
    for (int64_t n = 0; n < q->N; n++) {
        int32_t s = 0;
        for (int64_t k = 0; k < q->K; k++) s += q->q[n * q->Kp + k];
        q->sum[n] = s;
    }
    return 0;
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

void tf_quant_rows(uint8_t *xq, float *sx, const float *x, int64_t M, int64_t K, int64_t Kp) {
    const tf_q8_kernels *kq = tf_q8_best();
    for (int64_t m = 0; m < M; m++) {
        sx[m] = quant_row(kq, (int8_t *)(xq + m * Kp), x + m * K, K, 128);
        memset(xq + m * Kp + K, 128, (size_t)(Kp - K));
    }
}


int tf_quant_is_f32(const tf_quant *q) { return q && q->f32; }
int tf_quant_is_bf16(const tf_quant *q) { return q && q->bf16; }

int tf_quant_f32_serves(const tf_tensor *w, int64_t M) {
    const tf_quant *q = w->quant;
    if (!tf_quant_is_f32(q) || w->ndim != 2) return 0;
    return tf_tile_rows(M, w->shape[0], w->shape[1]) ||
           (w->data == q->src && w->shape[0] == q->rows && w->shape[1] == q->cols); /* the whole weight */
}

void tf_quant_gemm(float *y, const float *x, int64_t M, int64_t K, const tf_quant *q, int64_t row0, int64_t N,
                   uint8_t *xq, float *sx) {
    if (q->f32 && !tf_tile_rows(M, N, K)) { /* the whole copy (tf_quant_f32_serves): the BLAS, nothing transposed */
        tf_gemm_acc(y, x, q->t, M, N, K, 0, 0, TF_GEMM_AUTO);
        return;
    }
    if (q->f32) { /* columns row0.. of t */
        tf_tile_acc(y, x, q->t + row0, q->N, M, N, K);
        return;
    }
    enum { COLS = 64 }; /* output columns (rows of the copy) per task */
    int64_t Kp = q->Kp, tasks = (N + COLS - 1) / COLS;
    tf_quant_rows(xq, sx, x, M, K, Kp);
    tf_q8_gemm_fn f = tf_q8_best()->gemm;
    const int8_t *w = q->q + row0 * Kp;
    const float *sw = q->scale + row0;
    const int32_t *ws = q->sum + row0;
    TF_PARALLEL_FOR(M * N * Kp > (1 << 17) && tasks > 1, t, tasks, int64_t n0 = t * COLS;
                    int64_t nn = N - n0 < COLS ? N - n0 : COLS;
                    f(y + n0, N, xq, sx, M, w + n0 * Kp, sw + n0, ws + n0, nn, Kp));
}
