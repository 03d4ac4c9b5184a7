/* The bf16 product on AVX512-BF16: vdpbf16ps multiplies 16 pairs of bf16 by
 * 16 pairs and adds both products to 16 float sums per instruction. A tile of
 * 12 rows by 32 columns keeps 24 sums in registers; each pair step loads two
 * vectors of the strip and broadcasts one pair of each row. The rounding is
 * vcvtne2ps2bf16's (nearest even, the reference's bits: bf16.h). */
#include "bf16.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

#define KB static inline __attribute__((target("avx512f,avx512bw,avx512bf16"), always_inline))

/* Rows mr (a constant after inlining: the sums stay in registers). */
KB void tile_rows(float *C, int64_t ldc, const uint32_t *ap, int64_t lda, const uint32_t *bp, int64_t p0,
                  int64_t p1, const int mr, __mmask16 m0, __mmask16 m1) {
    __m512 c0[TF_BF16_MR], c1[TF_BF16_MR];
    for (int i = 0; i < mr; i++) { /* the next tile's rows of C (the driver's next), while this one runs */
        _mm_prefetch((const char *)(C + (mr + i) * ldc), _MM_HINT_T0);
        _mm_prefetch((const char *)(C + (mr + i) * ldc + 16), _MM_HINT_T0);
    }
    for (int i = 0; i < mr; i++) {
        c0[i] = _mm512_maskz_loadu_ps(m0, C + i * ldc);
        c1[i] = _mm512_maskz_loadu_ps(m1, C + i * ldc + 16);
    }
    for (int64_t p = p0; p < p1; p++) {
        __m512bh b0 = (__m512bh)_mm512_loadu_si512((const void *)(bp + p * TF_BF16_NR));
        __m512bh b1 = (__m512bh)_mm512_loadu_si512((const void *)(bp + p * TF_BF16_NR + 16));
        for (int i = 0; i < mr; i++) {
            __m512bh a = (__m512bh)_mm512_set1_epi32((int)ap[i * lda + p]);
            c0[i] = _mm512_dpbf16_ps(c0[i], a, b0);
            c1[i] = _mm512_dpbf16_ps(c1[i], a, b1);
        }
    }
    for (int i = 0; i < mr; i++) {
        _mm512_mask_storeu_ps(C + i * ldc, m0, c0[i]);
        _mm512_mask_storeu_ps(C + i * ldc + 16, m1, c1[i]);
    }
}

__attribute__((target("avx512f,avx512bw,avx512bf16"))) static void
tile_avx512(float *C, int64_t ldc, const uint32_t *ap, int64_t lda, const uint32_t *bp, int64_t p0, int64_t p1,
            int mr, int nr) {
    __mmask16 m0 = nr >= 16 ? 0xffff : (__mmask16)((1u << nr) - 1);
    __mmask16 m1 = nr >= 32 ? 0xffff : nr > 16 ? (__mmask16)((1u << (nr - 16)) - 1) : 0;
    switch (mr) {
    case 1: tile_rows(C, ldc, ap, lda, bp, p0, p1, 1, m0, m1); break;
    case 2: tile_rows(C, ldc, ap, lda, bp, p0, p1, 2, m0, m1); break;
    case 3: tile_rows(C, ldc, ap, lda, bp, p0, p1, 3, m0, m1); break;
    case 4: tile_rows(C, ldc, ap, lda, bp, p0, p1, 4, m0, m1); break;
    case 5: tile_rows(C, ldc, ap, lda, bp, p0, p1, 5, m0, m1); break;
    case 6: tile_rows(C, ldc, ap, lda, bp, p0, p1, 6, m0, m1); break;
    case 7: tile_rows(C, ldc, ap, lda, bp, p0, p1, 7, m0, m1); break;
    case 8: tile_rows(C, ldc, ap, lda, bp, p0, p1, 8, m0, m1); break;
    case 9: tile_rows(C, ldc, ap, lda, bp, p0, p1, 9, m0, m1); break;
    case 10: tile_rows(C, ldc, ap, lda, bp, p0, p1, 10, m0, m1); break;
    case 11: tile_rows(C, ldc, ap, lda, bp, p0, p1, 11, m0, m1); break;
    default: tile_rows(C, ldc, ap, lda, bp, p0, p1, TF_BF16_MR, m0, m1); break;
    }
}

__attribute__((target("avx512f,avx512bw,avx512bf16"))) static void round_row_avx512(uint16_t *dst, const float *x,
                                                                                     int64_t n) {
    int64_t i = 0;
    for (; i + 32 <= n; i += 32) {
        __m512bh h = _mm512_cvtne2ps_pbh(_mm512_loadu_ps(x + i + 16), _mm512_loadu_ps(x + i));
        _mm512_storeu_si512((void *)(dst + i), (__m512i)h);
    }
    for (; i < n; i++) dst[i] = tf_bf16_round(x[i]);
}

__attribute__((target("avx512f,avx512bw,avx512bf16"))) static void
pair_rows_avx512(uint32_t *dst, const float *lo, const float *hi, int64_t n) {
    int64_t j = 0;
    for (; j + 16 <= n; j += 16) {
        __m512i l = _mm512_cvtepu16_epi32((__m256i)_mm512_cvtneps_pbh(_mm512_loadu_ps(lo + j)));
        __m512i h = hi ? _mm512_cvtepu16_epi32((__m256i)_mm512_cvtneps_pbh(_mm512_loadu_ps(hi + j)))
                       : _mm512_setzero_si512();
        _mm512_storeu_si512((void *)(dst + j), _mm512_or_si512(l, _mm512_slli_epi32(h, 16)));
    }
    for (; j < n; j++) dst[j] = tf_bf16_pair(lo[j], hi ? hi[j] : 0.0f);
}

static const tf_bf16_kernels AVX512 = {"avx512-bf16", tile_avx512, round_row_avx512, pair_rows_avx512, TF_BF16_MR, NULL};

const tf_bf16_kernels *tf_bf16_avx512(void) {
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
        __builtin_cpu_supports("avx512bf16"))
        return &AVX512;
    return NULL;
}

#else
const tf_bf16_kernels *tf_bf16_avx512(void) { return NULL; }
#endif
