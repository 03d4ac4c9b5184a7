/* Row and element kernels with one portable C version (the reference, always
 * built and tested) and AVX2 / AVX-512 versions chosen at run time by CPU
 * detection. A variant may differ from the reference only by float
 * reassociation and by its exp (a polynomial within 2 ulp of expf) or tanh
 * (Cephes' tanhf polynomial, then the exp); each works
 * on whole rows, so results do not depend on the thread count. */
#ifndef TF_KERNELS_H
#define TF_KERNELS_H

#include "../core/core_internal.h"

#define TF_SQRT1_2 0.70710678118654752440
#define TF_SQRT2_PI 0.79788456080286535588 /* sqrt(2/pi) */
#define TF_INV_SQRT_2PI 0.39894228040143267794

/* The exact GELU's normal tail Phi(-t) = erfc(t/sqrt2)/2 (t >= 0) as
 * e^(-t^2/2) P(t)/Q(t): a degree 4/5 rational fit on [0, 13.5] (iteratively
 * reweighted least squares on 3000 Chebyshev nodes against mpmath), relative
 * error 5e-9 in double. t^2/2 is split exactly (an FMA) before the exp. */
#define TF_PHI_P0 0.5f
#define TF_PHI_P1 4.361519217e-01f
#define TF_PHI_P2 1.816500872e-01f
#define TF_PHI_P3 4.009950906e-02f
#define TF_PHI_P4 4.037217237e-03f
#define TF_PHI_Q1 1.670188785e+00f
#define TF_PHI_Q2 1.195913792e+00f
#define TF_PHI_Q3 4.652864635e-01f
#define TF_PHI_Q4 1.005217656e-01f
#define TF_PHI_Q5 1.011966355e-02f
#define TF_PHI_TMAX 15.0f /* e^(-t^2/2) is 0 in float (with subnormals) beyond 14.4 */

typedef enum { TF_ISA_PORTABLE, TF_ISA_AVX2, TF_ISA_AVX512, TF_ISA_COUNT } tf_isa;

/* AdamW's per-step constants: m, v moments; w -= decay*w + lr*mh/(sqrt(vh)+eps). g is read as
 * g * grad_scale (the gradient clip's factor, 1: none): the bits of scaling g first, without its pass. */
typedef struct {
    float beta1, beta2, inv_bc1, inv_bc2, lr, eps, decay, grad_scale;
} tf_adamw_coef;

typedef struct {
    const char *name;
    /* y (n) = gelu(x), tanh form; y may be x */
    void (*gelu_tanh)(float *y, const float *x, int64_t n);
    /* dx (n) = dy * gelu'(x), or += when acc */
    void (*gelu_tanh_grad)(float *dx, const float *dy, const float *x, int64_t n, int acc);
    /* y (n) = gelu(x) = x Phi(x), exact (erf) form, within 8 ulp; y may be x */
    void (*gelu_erf)(float *y, const float *x, int64_t n);
    /* dx (n) = dy * (Phi(x) + x phi(x)), or += when acc */
    void (*gelu_erf_grad)(float *dx, const float *dy, const float *x, int64_t n, int acc);
    /* y (n) = softmax(x); -inf entries give 0, an all -inf row gives zeros; y may be x */
    void (*softmax)(float *y, const float *x, int64_t n);
    /* y (n) = e^(x - shift) (0 where x is -inf); returns the sum; y may be x */
    float (*exp_shift)(float *y, const float *x, float shift, int64_t n);
    /* prob (n) = softmax(x); returns log-sum-exp(x) and *sum_x = sum of x */
    float (*softmax_lse)(float *prob, const float *x, int64_t n, double *sum_x);
    /* y (n) = (x - mean) * rstd * w + b (w, b may be NULL); writes *mean, *rstd */
    void (*layernorm)(float *y, float *mean, float *rstd, const float *x, const float *w, const float *b,
                      int64_t n, float eps);
    /* dx (n) += LayerNorm's input gradient for output gradient g */
    void (*layernorm_grad)(float *dx, const float *g, const float *x, const float *w, float mean, float rstd,
                           int64_t n);
    /* one AdamW update of n parameters */
    void (*adamw)(float *w, const float *g, float *m, float *v, int64_t n, const tf_adamw_coef *c);
    /* y (n) += x */
    void (*acc)(float *y, const float *x, int64_t n);
    /* y (n) += a (k) B (k,n), rows ldb apart, each y summed over the rows in
     * order: a matrix-vector product with (in,out) weights (decoding) */
    void (*axpy_rows)(float *y, const float *a, const float *B, int64_t ldb, int64_t k, int64_t n);
    /* C (m,n) = A B + beta C (beta 0 or 1), A (m,k) stored at A[r*rs + kk*cs]
     * (rs = k, cs = 1: row-major; rs = 1, cs = m: A^T of a (k,m) matrix), B
     * (k,n) with rows ldb apart, C with rows ldc apart: the small tiles of
     * attention, and products of a few rows with (in,out) weights (no packing) */
    void (*tile_gemm)(float *C, int64_t ldc, const float *A, int64_t rs, int64_t cs, const float *B, int64_t ldb,
                      int64_t m, int64_t n, int64_t k, float beta);
    /* y (rows) = B x + beta y (beta 0 or 1), B (rows,k) with rows ldb apart:
     * a matrix-vector product with (out,in) weights (a decoding step) */
    void (*dot_rows)(float *y, const float *B, int64_t ldb, const float *x, int64_t rows, int64_t k, float beta);
    /* y (n) = x (k) B (k,n) in double, B in float (rows ldb apart; each sum
     * over k in order): one query's attention scores against keys kept
     * transposed, when scores of thousands must keep more digits than a
     * float's; returns the largest y (NaN entries left out, -inf for n = 0) */
    double (*gemv_f64)(double *y, const double *x, const float *B, int64_t ldb, int64_t k, int64_t n);
    /* y (n) = e^(float)(x - shift) (the differences in double, rounded once);
     * returns the sum: the softmax numerators of gemv_f64's scores */
    float (*exp_shift_f64)(float *y, const double *x, double shift, int64_t n);
    /* y (n) = tanh(x), within 1.4 ulp of tanh (measured 1.33 on every 64th float below 32); y may be x */
    void (*tanh)(float *y, const float *x, int64_t n);
    /* the sum of a[i] b[i] (n) in double, each product exact: a softmax
     * backward's row sum delta = sum P dP (attention's backward) */
    double (*dot_f64)(const float *a, const float *b, int64_t n);
    /* dp (n) = scale * (float)(p (dp - delta)) with the difference and product
     * in double: the softmax backward's dS, written over dP (the same bits as
     * the scalar expression on every variant) */
    void (*softmax_ds)(float *dp, const float *p, double delta, float scale, int64_t n);
    /* t (cols, rows) = a (rows, cols)^T, rows ldt and lda apart: attention's K^T and V^T tiles */
    void (*transpose)(float *t, int64_t ldt, const float *a, int64_t lda, int64_t rows, int64_t cols);
    /* Y (m,n) += A (m,k) B (k,n), rows ldy, lda, ldb apart, each row's bits
     * those of axpy_rows on it alone: a batch of decoding steps (serve) */
    void (*axpy_rows_m)(float *Y, int64_t ldy, const float *A, int64_t lda, int64_t m, const float *B, int64_t ldb,
                        int64_t k, int64_t n);
    /* Y (m,rows) += X (m,k) B^T, B (rows,k) with rows ldb apart, each row of Y
     * the bits of dot_rows (beta 1) on it alone: the same with (out,in) weights */
    void (*dot_rows_m)(float *Y, int64_t ldy, const float *B, int64_t ldb, const float *X, int64_t ldx, int64_t m,
                       int64_t rows, int64_t k);
    /* dropout: element j is kept when tf_hash_uniform(seed, i0 + j) >= p (the mask is
     * recomputed from the seed, never stored); y (n) = x * keep where kept and 0
     * elsewhere, or with acc y += x * keep where kept and untouched elsewhere */
    void (*dropout)(float *y, const float *x, int64_t n, uint64_t seed, uint64_t i0, float p, float keep, int acc);
    /* C_h (1,n) += A_h (1,k) B_h (k,n) for h < nh (A_h at A + h sa, B_h at B + h sb
     * with rows ldb apart, C_h at C + h sc), each head the bits of tile_gemm (m 1, beta 1) on it:
     * a decoding step's P V over the heads together. NULL (portable): tile_gemm per head. */
    void (*pv_heads)(float *C, int64_t sc, const float *A, int64_t sa, const float *B, int64_t sb, int64_t ldb,
                     int64_t nh, int64_t n, int64_t k);
    /* bm[k] = the largest of block k of x (n, blocks of bs), NaN left out, -inf for none (tf_max_f32's
     * values, up to the sign of a zero); returns the largest of all */
    float (*block_max)(float *bm, const float *x, int64_t n, int64_t bs);
} tf_kernels;
/* the portable dropout, which the AVX2 table shares (64-bit products have no AVX2 instruction) */
void tf_dropout_scalar(float *y, const float *x, int64_t n, uint64_t seed, uint64_t i0, float p, float keep, int acc);

#if defined(__x86_64__) && defined(__GNUC__)
/* transpose by 8x8 blocks in AVX registers: both x86 tables' (kern_avx2.c) */
void tf_transpose_avx2(float *t, int64_t ldt, const float *a, int64_t lda, int64_t rows, int64_t cols);
#endif

/* t = a (T, D), rows lda apart, transposed tile by tile: key tile j0 (width w <= bk) becomes
 * a contiguous (D, w) block at t + j0 * D, so a tile product Q K_tile^T reads
 * it densely (rows of a whole (D, T) matrix, T apart, fall into the same
 * cache sets). Attention's kernels (ops_attention.c, ops_sparse_attention.c). */
void tf_tiles_t(const tf_kernels *kern, float *t, const float *a, int64_t lda, int64_t T, int64_t D, int64_t bk);
/* Flash attention's online softmax over one key tile of a block of query rows:
 * S (rows, w) scores (-inf hidden) become e^(S - m) in place, with each row's
 * running max m and sum l (double) updated and its output row o (Dv; rows ldo apart) rescaled
 * when the max grows; a row with nothing visible in the tile gets zeros. */
void tf_flash_tile_rows(const tf_kernels *kern, float *S, int64_t rows, int64_t w, float *m, double *l, float *o,
                        int64_t ldo, int64_t Dv);
/* The end of the rows: o /= l, lse = m + log l; a row that saw no key: zeros, lse -inf. */
void tf_flash_finish(float *o, int64_t ldo, float *lse, const float *m, const double *l, int64_t rows, int64_t Dv);
/* x (B,H,T,D) itself when each (batch, head) holds its rows one after another
 * (a KV cache's view), else a contiguous copy: the sparse kernel reads rows D apart
 * (the dense one takes any row stride). */
tf_tensor *tf_attn_rows(tf_ctx *ctx, tf_tensor *x);

/* Products C += A B of fewer rows than this (a decoding step's, a batch of
 * beams) with B (K,N) go through tile_gemm rather than the BLAS, which
 * repacks B at every call; from 96 rows on, only when B is under 2 MB (the
 * tile kernel reads B's column panels once per product, but with a larger B
 * the BLAS's packed panels win: bench_matmul infer, 96-160 rows of a
 * 128x8003 head at 0.85-0.95x the bare sgemm, where 8-64 rows and any
 * 128-768 layer run at 1.0-3.7x). */
enum { TF_TILE_MAX_M = 192 };
static inline int tf_tile_rows(int64_t M, int64_t N, int64_t K) {
    return M < TF_TILE_MAX_M && (M < 96 || N * K < ((int64_t)1 << 19));
}
/* C (M,N) += A (M,K) B (K,N), B's rows ldb apart, through tile_gemm: the
 * kernel reads B where it lies (a BLAS repacks all of it on every call);
 * columns go to the threads in panels of 64. */
void tf_tile_acc(float *C, const float *A, const float *B, int64_t ldb, int64_t M, int64_t N, int64_t K);

/* The kernels in use: TFORMER_ISA=portable|avx2|avx512 when set (and the CPU
 * has it), else the widest the CPU has. */
const tf_kernels *tf_kern(void);
/* One variant, or NULL when not built or not supported by this CPU (tests). */
const tf_kernels *tf_kern_get(tf_isa isa);

/* Run BODY over [0, n) in chunks of 4096 (i0, len), in parallel when there
 * are several; element-wise kernels give the same result however split. */
#define TF_CHUNK 4096
#define TF_FOR_CHUNKS(n, i0, len, BODY)                                                  \
    do {                                                                                 \
        int64_t n_ = (n), chunks_ = (n_ + TF_CHUNK - 1) / TF_CHUNK;                      \
        TF_PARALLEL_FOR(chunks_ > 4, c_, chunks_, int64_t i0 = c_ * TF_CHUNK;           \
                        int64_t len = n_ - i0 < TF_CHUNK ? n_ - i0 : TF_CHUNK; BODY);     \
    } while (0)

/* out (N) += column sums of g (R,N): blocks of columns in parallel, each
 * column summing its rows in order (the same on any thread count). */
void tf_col_sums(float *out, const float *g, int64_t R, int64_t N);

/* The product of an unfolded convolution (src/ops/ops_patch.c): rows (M,N) =
 * bias (N, or NULL: 0) + cols (M,K) w^T, w (N,K); back, from g (M,N): dw +=
 * g^T cols, db += column sums of g, dcols = g w (each skipped when NULL). */
void tf_unfolded_forward(float *rows, const float *cols, const float *w, const float *bias, int64_t M, int64_t N,
                         int64_t K);
void tf_unfolded_backward(const float *g, const float *cols, const float *w, float *dw, float *db, float *dcols,
                          int64_t M, int64_t N, int64_t K);

/* out (n) = act(pre) and dx (n) = g * act'(pre) (+= when acc), for a
 * tf_activation other than TF_ACT_NONE: the GELU op and the dense op. */
void tf_act_forward(float *out, const float *pre, int64_t n, int act);
void tf_act_backward(float *dx, const float *g, const float *pre, int64_t n, int act, int acc);

#endif
