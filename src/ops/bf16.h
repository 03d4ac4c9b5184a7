/* Matrix products in bfloat16 (tf_ctx_set_precision, `train --precision bf16`):
 * both factors rounded to bf16 (round to nearest even), products and sums in
 * float, the result added to a float C. The master weights, their gradients,
 * the optimizer and every other op stay float.
 *
 * The arithmetic is AVX512-BF16's vdpbf16ps, lane by lane: C's value is the
 * starting sum, and each pair of k steps adds a[k+1] b[k+1], then a[k] b[k]
 * (each product is exact in float; each sum rounds to nearest even); inputs
 * and sums that would be subnormal are zero (the instruction's DAZ / FTZ).
 * The reference kernel does exactly that in C, so the AVX-512 kernel gives its
 * bits, and neither depends on the thread count. AMX's tiles (kern_bf16_amx.c)
 * sum in their own order: within a float sum's error bound of those bits, and
 * the same on any thread count.
 *
 * Packed layouts (K2 = ceil(K/2) pairs, an odd K padded with a zero):
 *   A: row m's pairs, ap[m*K2 + p] = bf16(a[m][2p]) | bf16(a[m][2p+1]) << 16
 *   B: strips of TF_BF16_NR columns, bp[(s*K2 + p)*NR + j] the same pair of
 *      b[2p][s*NR+j], b[2p+1][s*NR+j] (columns past N zero). */
#ifndef TF_BF16_H
#define TF_BF16_H

#include <stdint.h>
#include <string.h>


enum { TF_BF16_NR = 32, TF_BF16_MR = 12 };

/* bf16 bits of x rounded to nearest even; NaN stays NaN (quiet), subnormals 0. */
static inline uint16_t tf_bf16_round(float x) {
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    if ((u & 0x7f800000u) == 0) return (uint16_t)((u >> 16) & 0x8000u);       /* zero, subnormal */
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40u); /* NaN */
    return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

static inline float tf_bf16_float(uint16_t h) {
    uint32_t u = (uint32_t)h << 16;
    float x;
    memcpy(&x, &u, sizeof x);
    return x;
}

/* A packed pair: bf16(lo) in the low half, bf16(hi) in the high one. */
static inline uint32_t tf_bf16_pair(float lo, float hi) {
    return tf_bf16_round(lo) | (uint32_t)tf_bf16_round(hi) << 16;
}

typedef struct {
    const char *name;
    /* C (mr,nr), rows ldc apart, += A's rows (mr <= MR, pairs lda apart) times
     * one strip's pairs [p0, p1) (nr <= NR columns of it kept) */
    void (*tile)(float *C, int64_t ldc, const uint32_t *ap, int64_t lda, const uint32_t *bp, int64_t p0, int64_t p1,
                 int mr, int nr);
    /* dst (n) = bf16 bits of x (n) */
    void (*round_row)(uint16_t *dst, const float *x, int64_t n);
    /* dst (n) = pairs bf16(lo[j]) | bf16(hi[j]) << 16 (hi NULL: zeros) */
    void (*pair_rows)(uint32_t *dst, const float *lo, const float *hi, int64_t n);
    int mr; /* the rows a tile call takes at most (TF_BF16_MR; AMX's 32) */
    /* NULL, or called on the calling thread before its tile calls of a task
     * (AMX: loads the tile configuration, which other code on the thread may
     * have released or changed since) */
    void (*begin)(void);
} tf_bf16_kernels;

/* The reference (any CPU), the AVX512-BF16 kernels and the AMX ones (NULL when
 * not built or not supported here: AMX also needs Linux 5.16+ to grant the
 * tile state), and the ones products use: AMX, else AVX512-BF16 (TFORMER_AMX=0:
 * never AMX), else NULL (the products then stay float). */
const tf_bf16_kernels *tf_bf16_ref(void);
const tf_bf16_kernels *tf_bf16_avx512(void);
const tf_bf16_kernels *tf_bf16_amx(void);
/* Whether this process may use AMX tiles (the OS saves them and Linux granted
 * them; asked once): kern_bf16_amx.c, for the bf16 and the int8 tiles. */
int tf_amx_permitted(void);
/* LDTILECFG's 64 bytes (the bf16 and the int8 tiles each keep theirs as a
 * constant in memory: kern_bf16_amx.c says why). */
typedef struct {
    uint8_t palette, start_row, reserved[14];
    uint16_t colsb[16];
    uint8_t rows[16];
} tf_amx_tile_config;
const tf_bf16_kernels *tf_bf16_best(void);

/* C (M,N) += bf16(op(A)) bf16(op(B)) with the kernels k (tf_gemm_acc's
 * operands: A (M,K) or (K,M) when ta, B (K,N) or (N,K) when tb); -1 when
 * its scratch cannot be had (C unchanged). */
int tf_gemm_bf16_with(const tf_bf16_kernels *k, float *C, const float *A, const float *B, int64_t M, int64_t N,
                      int64_t K, int ta, int tb);

#endif
