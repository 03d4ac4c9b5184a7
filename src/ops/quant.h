/* Int8 weights for inference (tf_params_quantize): a weight's int8 copy, built
 * the first time a dense product reads it without gradients, and the product
 * of a float input with it.
 *
 * The scheme: absmax quantisation in blocks of TF_QUANT_BLOCK (32) values
 * along the depth, on both sides. The copy holds the product's N rows of K
 * values, block b of row n as q[n,k] = round(w[n,k] / sw[n,b]) with
 * sw[n,b] = max over the block of |w| / 127; each call quantises the input's
 * rows the same way, xq[m,k] = round(x[m,k] / sx[m,b]), stored as the
 * unsigned byte u = xq + 128 (the layout VNNI's unsigned-by-signed products
 * want), so that
 *     y[m,n] += sum over b, in order, of (sx[m,b] sw[n,b]) d[b],
 *     d[b] = sum over the block's k of (u[m,k] - 128) q[n,k],
 * each block's integer sum exact (|d| <= 32 * 128 * 127 < 2^24: exact as a
 * float too) and the float sum taken block by block from 0 (tf_q8_block),
 * then added to y once: every kernel gives the same bits. One scale per
 * token (the scheme before) let a few large channels of a LayerNorm's output
 * take the token's 127 steps (docs/precision.md, "What limits int8").
 * Rounding is to nearest, ties to even; rows are padded with zero weights to
 * a multiple of 64 bytes (a block past K has scale 0). A block holding a NaN
 * or an infinity gives NaN outputs. */
#ifndef TF_QUANT_H
#define TF_QUANT_H

#include "tformer/core.h"

enum { TF_QUANT_PAD = 64, TF_QUANT_BLOCK = 32, TF_QUANT_MAX_K = 65536 };

typedef struct tf_quant tf_quant;

/* y (M,N), rows ldy apart, += the product of xq (M,Kp) with block scales
 * sx (M,Kp/32) and the copy's rows q (N,Kp), block scales sw (N,Kp/32). */
typedef void (*tf_q8_gemm_fn)(float *y, int64_t ldy, const uint8_t *xq, const float *sx, int64_t M, const int8_t *q,
                              const float *sw, int64_t N, int64_t Kp);

/* One block's step of an output's float sum: acc + (sx sw) d. Separate
 * statements: no compiler may fuse them into an FMA in one build and not in
 * another (the vector kernels do the same three operations lane by lane). */
static inline float tf_q8_block(float acc, int32_t d, float sx, float sw) {
    float s = sx * sw;
    float f = (float)d;
    float v = s * f;
    float r = acc + v;
    return r;
}

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
/* tf_q8_block on 16 lanes, its operations in its order: the AVX-512 kernels'
 * (VNNI and AMX) float step. */
static inline __attribute__((target("avx512f"))) __m512 tf_q8_block16(__m512 acc, __m512i d, __m512 sx, __m512 sw) {
    __m512 s = _mm512_mul_ps(sx, sw);
    __m512 f = _mm512_cvtepi32_ps(d);
    __m512 v = _mm512_mul_ps(s, f);
    return _mm512_add_ps(acc, v);
}
#endif

/* The VNNI product on a copy packed for it (kern_q8_avx512.c), in use where
 * the VNNI product is (no AMX): the copy's rows in panels of 16, block b of
 * panel p (rows 16p..16p+15) stored as
 *     w[(p nb + b) 512 + g 64 + 4 j + t] = q[16p + j, 32b + 4g + t]
 *         (g < 8 groups of 4 bytes, j < 16 rows, t < 4),
 *     s[(p nb + b) 16 + j]   = sw[16p + j, b]       (the block's scale),
 *     sum[(p nb + b) 16 + j] = the block's 32 bytes of row 16p + j, summed,
 * rows past N zero with scale 0: one vpdpbusd of 4 input bytes, broadcast,
 * with 64 bytes gives 16 rows' sums at once, with no horizontal sum. The
 * products are quant.h's, block by block in order: the reference's bits. */
typedef struct {
    const int8_t *w;   // (N16/16, nb, 8, 16, 4)
    const float *s;    // (N16/16, nb, 16)
    const int16_t *sum; // (N16/16, nb, 16)
    int64_t N, Kp;     /* rows (before the padding to 16) and bytes a row */
} tf_q8_packed;
/* p's buffers (rows N rounded up to 16: tf_q8_packed_rows) from rows q (N,Kp)
 * with block scales sw (N,Kp/32). */
void tf_q8_pack(int8_t *w, float *s, int16_t *sum, const int8_t *q, const float *sw, int64_t N, int64_t Kp);
int64_t tf_q8_packed_rows(int64_t N); /* N rounded up to 16 */
/* y (M, r1-r0), rows ldy apart, = bias (r1-r0) + (or, bias NULL, y +=) xq
 * (M,Kp) with scales sx (M,Kp/32) times the packed rows r0..r1 of p (0 <= r0
 * < r1 <= p->N): a dense layer's bias read in place of y's rows (the same
 * bits as y = bias first, then y +=). */
typedef void (*tf_q8_packed_fn)(float *y, int64_t ldy, const float *bias, const uint8_t *xq, const float *sx,
                                int64_t M, const tf_q8_packed *p, int64_t r0, int64_t r1);
/* NULL without AVX-512 VNNI. */
tf_q8_packed_fn tf_q8_vnni_packed(void);

/* The kernels: the product, and the quantisation of rows and of column
 * blocks ((in,out) weights), each bit for bit the reference's (IEEE division,
 * rounding to nearest even). */
typedef struct {
    const char *name;
    tf_q8_gemm_fn gemm;
    /* max |x| of x (n); *bad = 1 when one is not finite */
    float (*amax)(const float *x, int64_t n, int *bad);
    /* q (n) = round(x / s) clamped to [-127, 127], plus offset (0, or 128 for
     * unsigned bytes) modulo 256; s > 0 */
    void (*quant)(int8_t *q, const float *x, int64_t n, float s, int offset);
    /* columns j < nb <= 16 of w (K rows, ldw apart): amax[j] and bad[j] */
    void (*amax_cols)(float *amax, int *bad, const float *w, int64_t ldw, int64_t K, int nb);
    /* q[j*Kp + k] = round(w[k*ldw + j] / s[j]) clamped, or 0 where !(s[j] > 0) */
    void (*quant_cols)(int8_t *q, int64_t Kp, const float *w, int64_t ldw, int64_t K, const float *s, int nb);
    /* the product on packed copies (tf_q8_packed, below) where it is the one
     * in use; NULL: copies stay in rows and gemm is in use */
    tf_q8_packed_fn packed;
    /* an input row x (K) as xq (nb blocks of 32 unsigned bytes) and sx (nb), in
     * one pass: tf_quant_rows' row; NULL: amax and quant a block at a time */
    void (*quant_row_u8)(uint8_t *xq, float *sx, const float *x, int64_t K, int64_t nb);
} tf_q8_kernels;

/* The reference kernels (any CPU); the AVX2 ones (the reference's
 * quantisation, vpmaddwd products: kern_q8_avx2.c); the AVX-512 ones (their
 * own quantisation, 16 values a division, and the VNNI product where the CPU
 * has AVX-512 VNNI, else the AVX2 one: kern_q8_avx512.c); NULL when not
 * built or not supported here. In use: the AVX-512 ones where the float
 * kernels are avx512, the AVX2 ones where they are avx2, else the reference
 * (TFORMER_ISA=portable). Every one gives the reference's bits. */
const tf_q8_kernels *tf_q8_ref(void);
const tf_q8_kernels *tf_q8_avx512(void);
const tf_q8_kernels *tf_q8_avx2(void);
tf_q8_gemm_fn tf_q8_avx2_gemm(void); /* kern_q8_avx2.c: NULL without AVX2 */
/* kern_q8_avx512.c's VNNI product of the block scheme (the AVX-512 set's
 * where the CPU has VNNI; tests/test_quant.c checks it against the
 * reference); NULL without AVX-512 VNNI. */
tf_q8_gemm_fn tf_q8_vnni_gemm(void);
/* kern_q8_amx.c's AMX-INT8 product of the block scheme (tiles of 16 input
 * rows; the rows past them through the VNNI kernel); NULL without AMX-INT8,
 * AVX-512 VNNI or the OS's leave to use the tiles. */
tf_q8_gemm_fn tf_q8_amx_gemm(void);
const tf_q8_kernels *tf_q8_best(void);

/* A weight's copy, empty until first used (tf_quant_for builds it): int8,
 * or with f32 (TF_QUANT_F32) an (out,in) weight's float values transposed,
 * (in,out), which the tile kernel reads in place for products of a few rows
 * (tf_tile_rows; a BLAS repacks the weight on every call). */
enum { TF_QUANT_COPY_INT8, TF_QUANT_COPY_F32, TF_QUANT_COPY_BF16 };
/* kind TF_QUANT_COPY_*: BF16 holds no copy, it marks w for bf16 products (the
 * dense op's kernel TF_GEMM_BF16 when it tracks no gradient: bf16.h). */
tf_quant *tf_quant_new(const tf_tensor *w, int kind);
int tf_quant_is_f32(const tf_quant *q);  /* NULL: 0 */
int tf_quant_is_bf16(const tf_quant *q); /* NULL: 0 */
/* Whether w's float copy serves a product of M rows with w (an (out,in)
 * weight or a view of some of its rows): a few rows (tf_tile_rows), or the
 * whole weight (more rows: the BLAS reads the copy untransposed, which it
 * packs faster than w^T). 0 without a float copy. */
int tf_quant_f32_serves(const tf_tensor *w, int64_t M);
void tf_quant_free(tf_quant *q);
size_t tf_quant_bytes(const tf_quant *q);

/* The copy that w (a dense weight, (out,in) or (in,out) when in_out) can use,
 * building it on first use; *row0 is the first of its rows w covers (a view
 * of a block of rows). NULL: use the float weight (no copy, another layout,
 * a view it does not cover, K over TF_QUANT_MAX_K, or out of memory). */
const tf_quant *tf_quant_for(const tf_tensor *w, int in_out, int64_t *row0);
int64_t tf_quant_padded_k(const tf_quant *q);

/* xq (M,Kp), sx (M,Kp/32): the rows of x (M,K) quantised in blocks; padding
 * bytes 128 (zero), a block past K scale 0. */
void tf_quant_rows(uint8_t *xq, float *sx, const float *x, int64_t M, int64_t K, int64_t Kp);
/* The same with the kernels kq (tests compare sets). */
void tf_quant_rows_with(const tf_q8_kernels *kq, uint8_t *xq, float *sx, const float *x, int64_t M, int64_t K,
                        int64_t Kp);

/* Whether tf_quant_gemm reads a bias in place of y's values (packed copies):
 * then y needs no pass that sets it first. */
int tf_quant_takes_bias(const tf_quant *q);

/* y (M,N) = bias (N) + (or, bias NULL, y +=) x (M,K) times rows
 * row0..row0+N of q transposed, through the scratch xq (M,Kp) and sx
 * (M,Kp/32): the dense op's product with int8 weights (a float copy: the
 * tile kernel over its columns; xq, sx unused). bias: NULL unless
 * tf_quant_takes_bias(q). */
void tf_quant_gemm(float *y, const float *bias, const float *x, int64_t M, int64_t K, const tf_quant *q, int64_t row0,
                   int64_t N, uint8_t *xq, float *sx);

#endif
