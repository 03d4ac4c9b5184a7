/* bf16 matrix products: packing into pairs and strips, the reference tile
 * kernel, and the driver that shares tiles among the threads (bf16.h). */
#include <pthread.h>
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bf16.h"
#include "kernels.h"

/* A tile sums over at most 2,048 pairs before C goes back to memory: its
 * block of the strip (256 KB) stays in L2; shorter blocks reload C more often
 * (measured: 128 pairs cost 4-12% on GPT-2-sized products). A task's rows are
 * a multiple of both kernels' tile rows (12, AMX's 32). */
enum { ROWS_PER_TASK = 192, PAIRS_PER_BLOCK = 2048 };

/* vdpbf16ps's sum: subnormal results are zero (FTZ) */
static float ftz(float x) { return fabsf(x) < FLT_MIN ? copysignf(0.0f, x) : x; }

static void tile_ref(float *C, int64_t ldc, const uint32_t *ap, int64_t lda, const uint32_t *bp, int64_t p0,
                     int64_t p1, int mr, int nr) {
    for (int i = 0; i < mr; i++)
        for (int j = 0; j < nr; j++) {
            float acc = C[i * ldc + j];
            for (int64_t p = p0; p < p1; p++) {
                uint32_t a = ap[i * lda + p], b = bp[p * TF_BF16_NR + j];
                float hi = tf_bf16_float((uint16_t)(a >> 16)) * tf_bf16_float((uint16_t)(b >> 16));
                acc = ftz(acc + hi);
                float lo = tf_bf16_float((uint16_t)a) * tf_bf16_float((uint16_t)b);
                acc = ftz(acc + lo);
            }
            C[i * ldc + j] = acc;
        }
}

static void round_row_ref(uint16_t *dst, const float *x, int64_t n) {
    for (int64_t i = 0; i < n; i++) dst[i] = tf_bf16_round(x[i]);
}

static void pair_rows_ref(uint32_t *dst, const float *lo, const float *hi, int64_t n) {
    for (int64_t j = 0; j < n; j++) dst[j] = tf_bf16_pair(lo[j], hi ? hi[j] : 0.0f);
}

static const tf_bf16_kernels REF = {"portable", tile_ref, round_row_ref, pair_rows_ref, TF_BF16_MR, NULL};
const tf_bf16_kernels *tf_bf16_ref(void) { return &REF; }

static const tf_bf16_kernels *best;
static pthread_once_t once = PTHREAD_ONCE_INIT;
/* Only where the float kernels are AVX-512 too: TFORMER_ISA=portable|avx2 keeps products float;
 * AMX where it is usable, unless TFORMER_AMX=0. */
static void choose(void) {
    if (strcmp(tf_kern()->name, "avx512") != 0) return;
    const char *amx = getenv("TFORMER_AMX");
    best = amx && strcmp(amx, "0") == 0 ? NULL : tf_bf16_amx();
    if (!best) best = tf_bf16_avx512();
}
const tf_bf16_kernels *tf_bf16_best(void) {
    pthread_once(&once, choose);
    return best;
}

/* ap (M,K2) = op(A)'s rows in pairs; A (M,K), or (K,M) when ta. */
static void pack_a(const tf_bf16_kernels *k, uint32_t *ap, const float *A, int64_t M, int64_t K, int64_t K2, int ta) {
    if (!ta) {
        TF_PARALLEL_FOR(M * K > 65536, m, M, {
            uint16_t *row = (uint16_t *)(ap + m * K2);
            k->round_row(row, A + m * K, K);
            if (K & 1) row[K] = 0;
        });
        return;
    }
    /* op(A)[m][k] = A[k*M + m]: a block of 64 rows pairs 64 contiguous floats of two A rows */
    int64_t blocks = (M + 63) / 64;
    TF_PARALLEL_FOR(M * K > 65536, b, blocks, {
        int64_t m0 = b * 64, n = M - m0 < 64 ? M - m0 : 64;
        uint32_t t[64];
        for (int64_t p = 0; p < K2; p++) {
            const float *r0 = A + 2 * p * M + m0;
            k->pair_rows(t, r0, 2 * p + 1 < K ? r0 + M : NULL, n);
            for (int64_t i = 0; i < n; i++) ap[(m0 + i) * K2 + p] = t[i];
        }
    });
}

/* bp: op(B)'s strips of pairs; B (K,N), or (N,K) when tb (through t, K2 pairs of scratch). */
static void pack_strip(const tf_bf16_kernels *k, uint32_t *strip, uint32_t *t, const float *B, int64_t N, int64_t K,
                       int64_t K2, int tb, int64_t n0) {
    int64_t nr = N - n0 < TF_BF16_NR ? N - n0 : TF_BF16_NR;
    if (nr < TF_BF16_NR) memset(strip, 0, (size_t)(K2 * TF_BF16_NR) * sizeof *strip);
    for (int64_t j = 0; j < nr && tb; j++) { /* op(B)'s column n0+j is B's row: contiguous */
        uint16_t *h = (uint16_t *)t;
        k->round_row(h, B + (n0 + j) * K, K);
        if (K & 1) h[K] = 0;
        for (int64_t p = 0; p < K2; p++) strip[p * TF_BF16_NR + j] = t[p];
    }
    for (int64_t p = 0; p < K2 && !tb; p++) {
        const float *r0 = B + 2 * p * N + n0;
        k->pair_rows(strip + p * TF_BF16_NR, r0, 2 * p + 1 < K ? r0 + N : NULL, nr);
    }
}

/* Scratch kept per thread and grown as needed: a product's packed factors
 * (each call packs afresh; freed with the thread), and a column's pairs. */
static _Thread_local struct {
    uint32_t *p;
    size_t n;
} scratch[3];

static uint32_t *scratch_get(int i, int64_t n) {
    size_t bytes;
    if (n < 0 || !tf_mul_size((size_t)n, sizeof(uint32_t), &bytes)) return NULL;
    if ((size_t)n > scratch[i].n) {
        free(scratch[i].p);
        scratch[i].p = malloc(bytes ? bytes : 1);
        scratch[i].n = scratch[i].p ? (size_t)n : 0;
    }
    return scratch[i].p;
}

/* Every strip of B, in parallel; -1 when a thread's column scratch cannot be had. */
static int pack_b(const tf_bf16_kernels *k, uint32_t *bp, const float *B, int64_t N, int64_t K, int64_t K2, int tb) {
    int64_t S = (N + TF_BF16_NR - 1) / TF_BF16_NR;
    int bad = 0;
#pragma omp parallel for schedule(static) reduction(| : bad) if (tf_threads_free() > 1 && N * K > 65536)
    for (int64_t s = 0; s < S; s++) {
        uint32_t *t = scratch_get(2, K2);
        if (!t) bad = 1;
        else pack_strip(k, bp + s * K2 * TF_BF16_NR, t, B, N, K, K2, tb, s * TF_BF16_NR);
    }
    return bad ? -1 : 0;
}

int tf_gemm_bf16_with(const tf_bf16_kernels *k, float *C, const float *A, const float *B, int64_t M, int64_t N,
                      int64_t K, int ta, int tb) {
    if (M <= 0 || N <= 0 || K <= 0) return 0;
    int64_t K2 = (K + 1) / 2, S = (N + TF_BF16_NR - 1) / TF_BF16_NR;
    size_t na, nb;
    if (!tf_mul_size((size_t)M, (size_t)K2, &na) || !tf_mul_size((size_t)S * TF_BF16_NR, (size_t)K2, &nb)) return -1;
    uint32_t *ap = scratch_get(0, (int64_t)na), *bp = scratch_get(1, (int64_t)nb);
    if (!ap || !bp) return -1;
    pack_a(k, ap, A, M, K, K2, ta);
    if (pack_b(k, bp, B, N, K, K2, tb)) return -1;
    /* tasks: a block of rows times a strip; each output is one task's, summed in k order */
    int64_t R = (M + ROWS_PER_TASK - 1) / ROWS_PER_TASK, tasks = R * S;
#pragma omp parallel for schedule(dynamic) if (tf_threads_free() > 1 && tasks > 1 && M * N * K >= 32768)
    for (int64_t t = 0; t < tasks; t++) {
        int64_t s = t / R, r0 = t % R * ROWS_PER_TASK, r1 = r0 + ROWS_PER_TASK < M ? r0 + ROWS_PER_TASK : M;
        int64_t n0 = s * TF_BF16_NR;
        int nr = (int)(N - n0 < TF_BF16_NR ? N - n0 : TF_BF16_NR);
        const uint32_t *strip = bp + s * K2 * TF_BF16_NR;
        if (k->begin) k->begin();
        for (int64_t p0 = 0; p0 < K2; p0 += PAIRS_PER_BLOCK) {
            int64_t p1 = p0 + PAIRS_PER_BLOCK < K2 ? p0 + PAIRS_PER_BLOCK : K2;
            for (int64_t r = r0; r < r1; r += k->mr) {
                int mr = (int)(r1 - r < k->mr ? r1 - r : k->mr);
                k->tile(C + r * N + n0, N, ap + r * K2, K2, strip, p0, p1, mr, nr);
            }
        }
    }
    return 0;
}

const char *tf_bf16_info(void) {
    return tf_bf16_best() ? tf_bf16_best()->name : "float (no AVX512-BF16 here, or TFORMER_ISA below avx512)";
}
