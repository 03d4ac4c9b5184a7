/* Int8 weights for inference (tf_params_quantize): a weight's int8 copy, built
 * the first time a dense product reads it without gradients, and the product
 * of a float input with it.
 *
 * The scheme (LLM.int8()'s "vector-wise" absmax quantisation, without its
 * outlier split): the copy holds the product's N rows of K values, row n as
 * q[n,k] = round(w[n,k] / sw[n]) with sw[n] = max_k |w[n,k]| / 127; each call
 * quantises the input's rows the same way, xq[m,k] = round(x[m,k] / sx[m]),
 * stored plus 128 as unsigned bytes (VNNI multiplies unsigned by signed
 * bytes), so that
 *     y[m,n] += sx[m] sw[n] (sum_k (xq[m,k] + 128) q[n,k] - 128 sum_k q[n,k]),
 * an integer sum that is exact (K <= 65536 keeps it within int32). Rounding is
 * to nearest, ties to even; rows are padded with zero weights to a multiple of
 * 64 bytes. A row holding a NaN or an infinity gives NaN outputs. */
#ifndef TF_QUANT_H
#define TF_QUANT_H

#include "tformer/core.h"

enum { TF_QUANT_PAD = 64, TF_QUANT_MAX_K = 65536 };

typedef struct tf_quant tf_quant;

/* y (M,N), rows ldy apart, += the product of xq (M,Kp) with scales sx (M)
 * and the copy's rows q (N,Kp), scales sw (N) and row sums wsum (N). */
typedef void (*tf_q8_gemm_fn)(float *y, int64_t ldy, const uint8_t *xq, const float *sx, int64_t M, const int8_t *q,
                              const float *sw, const int32_t *wsum, int64_t N, int64_t Kp);

/* One output: the integer sum scaled. Separate statements: no compiler may
 * fuse them into an FMA in one build and not in another, so every kernel
 * gives the same float. */
static inline float tf_q8_value(int32_t acc, int32_t wsum, float sx, float sw) {
    float s = sx * sw;
    float d = (float)(acc - 128 * wsum);
    float v = s * d;
    return v;
}

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
} tf_q8_kernels;

/* The reference kernels (any CPU), the AVX-512 VNNI ones and the AVX2 ones
 * (the reference's quantisation, vpmaddwd products: kern_q8_avx2.c) (NULL
 * when not built or not supported here), and the ones in use: VNNI where the
 * float kernels are avx512, else AVX2 where they are avx2 or avx512, else the
 * reference (TFORMER_ISA=portable). Every one gives the reference's bits. */
const tf_q8_kernels *tf_q8_ref(void);
const tf_q8_kernels *tf_q8_vnni(void);
const tf_q8_kernels *tf_q8_avx2(void);
tf_q8_gemm_fn tf_q8_avx2_gemm(void); /* kern_q8_avx2.c: NULL without AVX2 */
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

/* xq (M,Kp), sx (M): the rows of x (M,K) quantised; padding bytes 128 (zero). */
void tf_quant_rows(uint8_t *xq, float *sx, const float *x, int64_t M, int64_t K, int64_t Kp);

/* y (M,N) += x (M,K) times rows row0..row0+N of q transposed, through the
 * scratch xq (M,Kp) and sx (M): the dense op's product with int8 weights
 * (a float copy: the tile kernel over its columns; xq, sx unused). */
void tf_quant_gemm(float *y, const float *x, int64_t M, int64_t K, const tf_quant *q, int64_t row0, int64_t N,
                   uint8_t *xq, float *sx);

#endif
