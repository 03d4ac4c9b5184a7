/* The AVX2 + FMA kernels: kern_simd.h over 8-lane vectors. */
#include "kernels.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#include <math.h>
#include <string.h>

#define KT static inline __attribute__((target("avx2,fma")))
#define V __m256
#define VW 8
/* lanes [0, n) on: a window into eight -1s followed by eight 0s */
static const int32_t tail_bits[16] = {-1, -1, -1, -1, -1, -1, -1, -1, 0, 0, 0, 0, 0, 0, 0, 0};
KT __m256i tail_mask(int64_t n) { return _mm256_loadu_si256((const __m256i *)(tail_bits + 8 - n)); }
KT V v_ld(const float *p) { return _mm256_loadu_ps(p); }
KT void v_st(float *p, V v) { _mm256_storeu_ps(p, v); }
KT V v_ldt(const float *p, int64_t n, float fill) {
    __m256i m = tail_mask(n);
    return _mm256_blendv_ps(_mm256_set1_ps(fill), _mm256_maskload_ps(p, m), _mm256_castsi256_ps(m));
}
KT void v_stt(float *p, V v, int64_t n) { _mm256_maskstore_ps(p, tail_mask(n), v); }
KT V v_set(float x) { return _mm256_set1_ps(x); }
KT V v_add(V a, V b) { return _mm256_add_ps(a, b); }
KT V v_sub(V a, V b) { return _mm256_sub_ps(a, b); }
KT V v_mul(V a, V b) { return _mm256_mul_ps(a, b); }
KT V v_div(V a, V b) { return _mm256_div_ps(a, b); }
KT V v_max(V a, V b) { return _mm256_max_ps(a, b); }
KT V v_min(V a, V b) { return _mm256_min_ps(a, b); }
KT V v_fma(V a, V b, V c) { return _mm256_fmadd_ps(a, b, c); }
KT V v_sqrt(V a) { return _mm256_sqrt_ps(a); }
KT float v_hsum(V a) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(a), _mm256_extractf128_ps(a, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    return _mm_cvtss_f32(_mm_add_ss(s, _mm_shuffle_ps(s, s, 1)));
}
/* s[0..3] = the sums of a0..a3 (one transposing reduction for all four) */
KT void v_hsum4(float *s, V a0, V a1, V a2, V a3) {
    V t = _mm256_hadd_ps(_mm256_hadd_ps(a0, a1), _mm256_hadd_ps(a2, a3));
    _mm_storeu_ps(s, _mm_add_ps(_mm256_castps256_ps128(t), _mm256_extractf128_ps(t, 1)));
}
KT float v_hmax(V a) {
    __m128 s = _mm_max_ps(_mm256_castps256_ps128(a), _mm256_extractf128_ps(a, 1));
    s = _mm_max_ps(s, _mm_movehl_ps(s, s));
    return _mm_cvtss_f32(_mm_max_ss(s, _mm_shuffle_ps(s, s, 1)));
}
KT V v_round(V a) { return _mm256_round_ps(a, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
KT V v_pow2i(V t) {
    __m256i e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(t), _mm256_set1_epi32(127)), 23);
    return _mm256_castsi256_ps(e);
}
KT V v_zero_below(V r, V x, V lo) { return _mm256_andnot_ps(_mm256_cmp_ps(x, lo, _CMP_LT_OQ), r); }
KT V v_pick_small(V x, V lim, V p, V q) {
    V ax = _mm256_andnot_ps(_mm256_set1_ps(-0.0f), x);
    return _mm256_blendv_ps(q, p, _mm256_cmp_ps(ax, lim, _CMP_LT_OQ));
}

#define VD __m256d
#define VDW 4
KT VD vd_ldf(const float *p) { return _mm256_cvtps_pd(_mm_loadu_ps(p)); }
KT VD vd_set(double x) { return _mm256_set1_pd(x); }
KT VD vd_fma(VD a, VD b, VD c) { return _mm256_fmadd_pd(a, b, c); }
KT void vd_st(double *p, VD v) { _mm256_storeu_pd(p, v); }
KT VD vd_ld(const double *p) { return _mm256_loadu_pd(p); }
KT VD vd_max(VD a, VD b) { return _mm256_max_pd(a, b); }
KT VD vd_sub(VD a, VD b) { return _mm256_sub_pd(a, b); }
KT VD vd_add(VD a, VD b) { return _mm256_add_pd(a, b); }
KT VD vd_mul(VD a, VD b) { return _mm256_mul_pd(a, b); }
KT double vd_hmax(VD a) {
    __m128d m = _mm_max_pd(_mm256_castpd256_pd128(a), _mm256_extractf128_pd(a, 1));
    return _mm_cvtsd_f64(_mm_max_sd(m, _mm_unpackhi_pd(m, m)));
}
KT V v_cvt2d(VD lo, VD hi) { return _mm256_set_m128(_mm256_cvtpd_ps(hi), _mm256_cvtpd_ps(lo)); }

#define KNV 2 /* vectors per register block row */
#define KR 4  /* rows per register block */
#include "kern_simd.h"

/* Eight rows of eight floats at a (lda apart) become eight columns at t (ldt
 * apart): pairs interleaved, then quads, then the 128-bit halves swapped. */
__attribute__((target("avx2"))) static void t8x8(float *t, int64_t ldt, const float *a, int64_t lda) {
    __m256 r[8], u[8], s[8];
    for (int i = 0; i < 8; i++) r[i] = _mm256_loadu_ps(a + i * lda);
    for (int i = 0; i < 8; i += 2) u[i] = _mm256_unpacklo_ps(r[i], r[i + 1]), u[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);
    for (int i = 0; i < 8; i += 4) {
        s[i] = _mm256_shuffle_ps(u[i], u[i + 2], _MM_SHUFFLE(1, 0, 1, 0));
        s[i + 1] = _mm256_shuffle_ps(u[i], u[i + 2], _MM_SHUFFLE(3, 2, 3, 2));
        s[i + 2] = _mm256_shuffle_ps(u[i + 1], u[i + 3], _MM_SHUFFLE(1, 0, 1, 0));
        s[i + 3] = _mm256_shuffle_ps(u[i + 1], u[i + 3], _MM_SHUFFLE(3, 2, 3, 2));
    }
    for (int i = 0; i < 4; i++) {
        _mm256_storeu_ps(t + i * ldt, _mm256_permute2f128_ps(s[i], s[i + 4], 0x20));
        _mm256_storeu_ps(t + (i + 4) * ldt, _mm256_permute2f128_ps(s[i], s[i + 4], 0x31));
    }
}

__attribute__((target("avx2"))) void tf_transpose_avx2(float *t, int64_t ldt, const float *a, int64_t lda, int64_t rows,
                                                      int64_t cols) {
    int64_t r8 = rows / 8 * 8, c8 = cols / 8 * 8;
    for (int64_t r = 0; r < r8; r += 8)
        for (int64_t c = 0; c < c8; c += 8) t8x8(t + c * ldt + r, ldt, a + r * lda + c, lda);
    for (int64_t r = 0; r < rows; r++) /* the edges: columns past c8 of every row, rows past r8 */
        for (int64_t c = r < r8 ? c8 : 0; c < cols; c++) t[c * ldt + r] = a[r * lda + c];
}

static const tf_kernels avx2 = {"avx2", k_gelu_tanh, k_gelu_tanh_grad, k_gelu_erf, k_gelu_erf_grad, k_softmax, row_exp, k_softmax_lse,
                                k_layernorm, k_layernorm_grad, k_adamw, k_acc, k_axpy_rows, k_tile_gemm, k_dot_rows, k_gemv_f64, k_exp_shift_f64,
                                k_tanh, k_dot_f64, k_softmax_ds, tf_transpose_avx2, k_axpy_rows_m,
                                k_dot_rows_m, tf_dropout_scalar, k_pv_heads, k_block_max};
const tf_kernels *tf_kern_avx2_table(void) { return &avx2; }
#else
const tf_kernels *tf_kern_avx2_table(void) { return NULL; }
#endif
