/* The int8 product on AVX2 (quant.h's scheme, for CPUs without AVX-512
 * VNNI): each 16 bytes of an input row (unsigned) and of a weight row
 * (signed) widened to 16-bit lanes, vpmaddwd multiplying them and adding
 * pairs into 8 int32 lanes. Every product and pair sum is exact (at most
 * 2 * 255 * 127), so the integer sums equal the reference kernel's, and the
 * float epilogue is the same function: the same bits. (vpmaddubsw would take
 * the bytes as they are, but its 16-bit pair sums saturate.) Tiles of 2
 * input rows by 4 weight rows keep 8 accumulators in registers; a last odd
 * input row takes 1 by 4 tiles, a partial tile repeats its last weight row. */
#include "quant.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

#define KA static inline __attribute__((target("avx2")))

KA __m256i ld_u8(const uint8_t *p) { return _mm256_cvtepu8_epi16(_mm_loadu_si128((const __m128i *)p)); }
KA __m256i ld_s8(const int8_t *p) { return _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)p)); }
KA __m256i madd(__m256i c, __m256i a, __m256i b) { return _mm256_add_epi32(c, _mm256_madd_epi16(a, b)); }

/* The 8 lanes of c summed (integers: any order gives the same sum). */
KA int32_t hsum(__m256i c) {
    __m128i s = _mm_add_epi32(_mm256_castsi256_si128(c), _mm256_extracti128_si256(c, 1));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4E));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xB1));
    return _mm_cvtsi128_si32(s);
}

KA void rows_of(const int8_t **w, const int8_t *q, int64_t Kp, int64_t nr) {
    for (int j = 0; j < 4; j++) w[j] = q + (j < nr ? j : nr - 1) * Kp;
}

/* y (rows, nr) += a rows x 4 tile (rows 1 or 2) over the whole depth. */
KA void tile(float *y, int64_t ldy, const uint8_t *xq, const float *sx, int rows, const int8_t *q, const float *sw,
             const int32_t *wsum, int64_t nr, int64_t Kp) {
    const int8_t *w[4];
    rows_of(w, q, Kp, nr);
    const uint8_t *x1 = xq + (rows > 1 ? Kp : 0);
    __m256i c0[4], c1[4];
    for (int j = 0; j < 4; j++) c0[j] = c1[j] = _mm256_setzero_si256();
    for (int64_t k = 0; k < Kp; k += 16) {
        __m256i a0 = ld_u8(xq + k), a1 = ld_u8(x1 + k);
        for (int j = 0; j < 4; j++) {
            __m256i b = ld_s8(w[j] + k);
            c0[j] = madd(c0[j], a0, b), c1[j] = madd(c1[j], a1, b);
        }
    }
    for (int i = 0; i < rows; i++)
        for (int j = 0; j < nr; j++) {
            float v = tf_q8_value(hsum(i ? c1[j] : c0[j]), wsum[j], sx[i], sw[j]);
            y[i * ldy + j] += v;
        }
}

__attribute__((target("avx2"))) static void gemm_avx2(float *y, int64_t ldy, const uint8_t *xq, const float *sx,
                                                      int64_t M, const int8_t *q, const float *sw,
                                                      const int32_t *wsum, int64_t N, int64_t Kp) {
    for (int64_t n0 = 0; n0 < N; n0 += 4) {
        int64_t nr = N - n0 < 4 ? N - n0 : 4;
        for (int64_t m = 0; m < M; m += 2)
            tile(y + m * ldy + n0, ldy, xq + m * Kp, sx + m, M - m < 2 ? 1 : 2, q + n0 * Kp, sw + n0, wsum + n0, nr,
                 Kp);
    }
}

tf_q8_gemm_fn tf_q8_avx2_gemm(void) {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") ? gemm_avx2 : NULL;
}

#else
tf_q8_gemm_fn tf_q8_avx2_gemm(void) { return NULL; }
#endif
