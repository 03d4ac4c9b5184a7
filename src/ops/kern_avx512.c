/* The AVX-512 kernels: kern_simd.h over 16-lane vectors. */
#include "kernels.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#include <math.h>
#include <string.h>

#define KT static inline __attribute__((target("avx512f,avx512dq,avx512vl,avx2,fma")))
#define V __m512
#define VW 16
KT __mmask16 tail_mask(int64_t n) { return (__mmask16)((1u << n) - 1u); }
KT V v_ld(const float *p) { return _mm512_loadu_ps(p); }
KT void v_st(float *p, V v) { _mm512_storeu_ps(p, v); }
KT V v_ldt(const float *p, int64_t n, float fill) { return _mm512_mask_loadu_ps(_mm512_set1_ps(fill), tail_mask(n), p); }
KT void v_stt(float *p, V v, int64_t n) { _mm512_mask_storeu_ps(p, tail_mask(n), v); }
KT V v_set(float x) { return _mm512_set1_ps(x); }
KT V v_add(V a, V b) { return _mm512_add_ps(a, b); }
KT V v_sub(V a, V b) { return _mm512_sub_ps(a, b); }
KT V v_mul(V a, V b) { return _mm512_mul_ps(a, b); }
KT V v_div(V a, V b) { return _mm512_div_ps(a, b); }
KT V v_max(V a, V b) { return _mm512_max_ps(a, b); }
KT V v_min(V a, V b) { return _mm512_min_ps(a, b); }
KT V v_fma(V a, V b, V c) { return _mm512_fmadd_ps(a, b, c); }
KT V v_sqrt(V a) { return _mm512_sqrt_ps(a); }
KT float v_hsum(V a) { return _mm512_reduce_add_ps(a); }
/* s[0..3] = the sums of a0..a3: halves added, then one transposing reduction */
KT __m256 half_sum(V a) { return _mm256_add_ps(_mm512_castps512_ps256(a), _mm512_extractf32x8_ps(a, 1)); }
KT void v_hsum4(float *s, V a0, V a1, V a2, V a3) {
    __m256 t = _mm256_hadd_ps(_mm256_hadd_ps(half_sum(a0), half_sum(a1)), _mm256_hadd_ps(half_sum(a2), half_sum(a3)));
    _mm_storeu_ps(s, _mm_add_ps(_mm256_castps256_ps128(t), _mm256_extractf128_ps(t, 1)));
}
KT float v_hmax(V a) { return _mm512_reduce_max_ps(a); }
KT V v_round(V a) { return _mm512_roundscale_ps(a, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
KT V v_pow2i(V t) {
    __m512i e = _mm512_slli_epi32(_mm512_add_epi32(_mm512_cvtps_epi32(t), _mm512_set1_epi32(127)), 23);
    return _mm512_castsi512_ps(e);
}
KT V v_zero_below(V r, V x, V lo) { return _mm512_maskz_mov_ps(~_mm512_cmp_ps_mask(x, lo, _CMP_LT_OQ), r); }
KT V v_pick_small(V x, V lim, V p, V q) { return _mm512_mask_blend_ps(_mm512_cmp_ps_mask(_mm512_abs_ps(x), lim, _CMP_LT_OQ), q, p); }

#define VD __m512d
#define VDW 8
KT VD vd_ldf(const float *p) { return _mm512_cvtps_pd(_mm256_loadu_ps(p)); }
KT VD vd_set(double x) { return _mm512_set1_pd(x); }
KT VD vd_fma(VD a, VD b, VD c) { return _mm512_fmadd_pd(a, b, c); }
KT void vd_st(double *p, VD v) { _mm512_storeu_pd(p, v); }
KT VD vd_ld(const double *p) { return _mm512_loadu_pd(p); }
KT VD vd_max(VD a, VD b) { return _mm512_max_pd(a, b); }
KT VD vd_sub(VD a, VD b) { return _mm512_sub_pd(a, b); }
KT VD vd_add(VD a, VD b) { return _mm512_add_pd(a, b); }
KT VD vd_mul(VD a, VD b) { return _mm512_mul_pd(a, b); }
KT double vd_hmax(VD a) { return _mm512_reduce_max_pd(a); }
KT V v_cvt2d(VD lo, VD hi) { return _mm512_insertf32x8(_mm512_castps256_ps512(_mm512_cvtpd_ps(lo)), _mm512_cvtpd_ps(hi), 1); }

#define KNV 4 /* vectors per register block row */
#define KR 8  /* rows per register block */
#include "kern_simd.h"

/* tf_hash_uniform's 24 bits for 8 indices: splitmix64 of seed ^ i * C in 64-bit lanes (AVX512DQ's vpmullq) */
KT __m512i hash24(__m512i i, __m512i seed) {
    const __m512i c = _mm512_set1_epi64((long long)0xD1B54A32D192ED03ull);
    const __m512i gold = _mm512_set1_epi64((long long)0x9E3779B97F4A7C15ull);
    const __m512i m1 = _mm512_set1_epi64((long long)0xBF58476D1CE4E5B9ull);
    const __m512i m2 = _mm512_set1_epi64((long long)0x94D049BB133111EBull);
    __m512i z = _mm512_add_epi64(_mm512_xor_si512(seed, _mm512_mullo_epi64(i, c)), gold);
    z = _mm512_mullo_epi64(_mm512_xor_si512(z, _mm512_srli_epi64(z, 30)), m1);
    z = _mm512_mullo_epi64(_mm512_xor_si512(z, _mm512_srli_epi64(z, 27)), m2);
    return _mm512_srli_epi64(_mm512_xor_si512(z, _mm512_srli_epi64(z, 31)), 40);
}

/* The portable loop's mask: u = k 2^-24 >= p exactly when the integer k >= ceil(p 2^24) (both exact in float). */
KT void k_dropout(float *y, const float *x, int64_t n, uint64_t seed, uint64_t i0, float p, float keep, int acc) {
    const __m512i thr = _mm512_set1_epi64((long long)ceilf(p * 16777216.0f)), sd = _mm512_set1_epi64((long long)seed);
    const __m512i lane = _mm512_set_epi64(7, 6, 5, 4, 3, 2, 1, 0), eight = _mm512_set1_epi64(8);
    const V kv = v_set(keep);
    for (int64_t j = 0; j < n; j += 16) {
        __m512i i = _mm512_add_epi64(_mm512_set1_epi64((long long)(i0 + (uint64_t)j)), lane);
        unsigned lo = _mm512_cmpge_epu64_mask(hash24(i, sd), thr);
        unsigned hi = _mm512_cmpge_epu64_mask(hash24(_mm512_add_epi64(i, eight), sd), thr);
        __mmask16 m = (__mmask16)(lo | hi << 8), t = n - j >= 16 ? (__mmask16)0xFFFF : tail_mask(n - j);
        V xv = _mm512_maskz_loadu_ps(t, x + j);
        if (acc) {
            V yv = _mm512_maskz_loadu_ps(t, y + j);
            _mm512_mask_storeu_ps(y + j, t, _mm512_mask_add_ps(yv, m, yv, _mm512_mul_ps(xv, kv)));
        } else
            _mm512_mask_storeu_ps(y + j, t, _mm512_maskz_mul_ps(m, xv, kv));
    }
}

static const tf_kernels avx512 = {"avx512", k_gelu_tanh, k_gelu_tanh_grad, k_gelu_erf, k_gelu_erf_grad, k_softmax, row_exp, k_softmax_lse,
                                  k_layernorm, k_layernorm_grad, k_adamw, k_acc, k_axpy_rows, k_tile_gemm, k_dot_rows, k_gemv_f64, k_exp_shift_f64,
                                  k_tanh, k_dot_f64, k_softmax_ds, tf_transpose_avx2, k_axpy_rows_m,
                                k_dot_rows_m, k_dropout, k_pv_heads, k_block_max};
const tf_kernels *tf_kern_avx512_table(void) { return &avx512; }
#else
const tf_kernels *tf_kern_avx512_table(void) { return NULL; }
#endif
