/* Private to the library: the ops layer's (src/ops) declarations -- reductions
 * and products the layers above share, the matrix-product kernels, and each op's
 * forward and backward for the op table. */
#ifndef TF_OPS_INTERNAL_H
#define TF_OPS_INTERNAL_H

#include <math.h>

#include "../core/core_internal.h"
#include "tformer/ops.h"

/* Everything here is hidden from the shared library: it is built with
 * -fvisibility=hidden and exports only what include/tformer/ marks TF_API. */

/* The largest of x (n), NaN left out (-inf for none): 16 running maxima, one
 * per lane, so that the compiler keeps them in a vector register (a single
 * running max is a chain it cannot reorder); the same on every machine. */
static inline float tf_max_f32(const float *x, int64_t n) {
    float m[16] = {-INFINITY, -INFINITY, -INFINITY, -INFINITY, -INFINITY, -INFINITY, -INFINITY, -INFINITY,
                   -INFINITY, -INFINITY, -INFINITY, -INFINITY, -INFINITY, -INFINITY, -INFINITY, -INFINITY};
    int64_t i = 0;
    for (; i + 16 <= n; i += 16)
        for (int j = 0; j < 16; j++) m[j] = x[i + j] > m[j] ? x[i + j] : m[j];
    for (; i < n; i++) m[0] = x[i] > m[0] ? x[i] : m[0];
    for (int j = 1; j < 16; j++) m[0] = m[j] > m[0] ? m[j] : m[0];
    return m[0];
}
/* bm[k] = tf_max_f32 of block k of x (n, blocks of bs) through the vector kernels; returns
 * the largest (up to the sign of a zero). */
float tf_block_max_f32(float *bm, const float *x, int64_t n, int64_t bs);
/* log(sum(exp(x))) of x (n) through the vector kernels (scratch: n floats). */
float tf_log_sum_exp(float *scratch, const float *x, int64_t n);
/* The same when x's largest value mx (tf_max_f32's) is known. */
float tf_log_sum_exp_at(float *scratch, const float *x, int64_t n, float mx);

/* Dot product with 8 fixed partial sums: the compiler vectorises it (no
 * reassociation is needed, the order is written out), and the result is the
 * same on every machine and thread count. */
static inline float tf_dot(const float *a, const float *b, int64_t n) {
    float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    int64_t c = 0;
    for (; c + 8 <= n; c += 8)
        for (int l = 0; l < 8; l++) acc[l] += a[c + l] * b[c + l];
    float s = ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
    for (; c < n; c++) s += a[c] * b[c];
    return s;
}

/* cblas_sgemm's signature (row/column order and transposes as CBLAS's enum
 * values); NULL when no BLAS could be loaded (src/ops/blas.c). */
typedef void (*tf_sgemm_fn)(int order, int ta, int tb, int M, int N, int K, float alpha, const float *A, int lda,
                            const float *B, int ldb, float beta, float *C, int ldc);
tf_sgemm_fn tf_blas_sgemm(void);

/* C (M,N) += op(A) op(B) with A stored (M,K) or (K,M) when ta, B (K,N) or
 * (N,K) when tb. AUTO sends large products to the BLAS when built with one;
 * BF16 rounds both factors to bf16 where the CPU can (src/ops/bf16.h), else AUTO. */
/* ROWS sums each row of A as the one-row product of that row alone sums it (tf_gemm_acc). */
enum { TF_GEMM_AUTO, TF_GEMM_PORTABLE, TF_GEMM_BLAS, TF_GEMM_BF16, TF_GEMM_ROWS };
void tf_gemm_acc(float *C, const float *A, const float *B, int64_t M, int64_t N, int64_t K, int ta, int tb,
                 int kernel);
/* The kernel a product recorded now uses: BF16 under TF_PRECISION_BF16, else ROWS under
 * row_products, else AUTO. */
static inline int tf_ctx_gemm_kernel(const tf_ctx *ctx) {
    return ctx->precision == TF_PRECISION_BF16 ? TF_GEMM_BF16 : ctx->row_products ? TF_GEMM_ROWS : TF_GEMM_AUTO;
}

/* Per-op forward/backward, defined next to each op's constructor. */
#define TF_OP_FUNCS(name)                                  \
    void tf_op_##name##_forward(tf_node *n);    \
    void tf_op_##name##_backward(tf_node *n);
TF_OP_FUNCS(copy)
TF_OP_FUNCS(matmul)
TF_OP_FUNCS(add)
TF_OP_FUNCS(mul)
TF_OP_FUNCS(scale)
TF_OP_FUNCS(bias_add)
TF_OP_FUNCS(softmax)
TF_OP_FUNCS(layernorm)
TF_OP_FUNCS(relu)
TF_OP_FUNCS(gelu)
TF_OP_FUNCS(dropout)
TF_OP_FUNCS(embedding)
TF_OP_FUNCS(concat)
TF_OP_FUNCS(sum)
TF_OP_FUNCS(cross_entropy)
TF_OP_FUNCS(sdpa)
TF_OP_FUNCS(dense)
TF_OP_FUNCS(tanh)
TF_OP_FUNCS(gru_cell)
TF_OP_FUNCS(lstm_cell)
TF_OP_FUNCS(patch_embed)
TF_OP_FUNCS(max)
TF_OP_FUNCS(reciprocal)
TF_OP_FUNCS(depthwise_conv)
TF_OP_FUNCS(soft_cross_entropy)
TF_OP_FUNCS(rmsnorm)
TF_OP_FUNCS(sparse_attention)
TF_OP_FUNCS(conv2d)
TF_OP_FUNCS(rope)
#undef TF_OP_FUNCS

#endif
