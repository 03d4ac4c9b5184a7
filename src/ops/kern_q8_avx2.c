/* The int8 product on AVX2 (quant.h's block scheme; also the one in use on
 * AVX-512 CPUs). Each 16 bytes of an input row (unsigned, u = xq + 128)
 * widened to 16-bit lanes less 128 (xq itself) and of a weight row (signed)
 * widened too; vpmaddwd multiplies them and adds pairs into 8 int32 lanes.
 * Every product and sum is exact (|d| <= 32 * 128 * 127), so each block's
 * integer sum equals the reference kernel's. A tile of 8 outputs (2 input
 * rows by 4 weight rows, or 1 by 8 for a last odd row: a decoding step)
 * takes its 8 block sums into the 8 lanes of one vector (sum8), then does the
 * reference's float steps (tf_q8_block: scale product, conversion, product,
 * sum) lane by lane, block after block: the same bits. (vpmaddubsw would take
 * the bytes as they are, but its 16-bit pair sums saturate.) A partial tile
 * repeats its last weight row; the results are dropped. */
#include "quant.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

#define KA static inline __attribute__((target("avx2")))

KA __m256i ld_u8(const uint8_t *p) { /* 16 bytes u, as u - 128 */
    return _mm256_sub_epi16(_mm256_cvtepu8_epi16(_mm_loadu_si128((const __m128i *)p)), _mm256_set1_epi16(128));
}
KA __m256i ld_s8(const int8_t *p) { return _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)p)); }

/* The block's 32 products of a (lo, hi) and b (its 32 bytes), in 8 lanes. */
KA __m256i dot32(__m256i alo, __m256i ahi, const int8_t *b) {
    return _mm256_add_epi32(_mm256_madd_epi16(alo, ld_s8(b)), _mm256_madd_epi16(ahi, ld_s8(b + 16)));
}

/* Lane j of the result: the sum of c[j]'s 8 lanes (integers: any order gives
 * the same sums). Pairwise adds within each 128-bit half, then the halves. */
KA __m256i sum8(const __m256i *c) {
    __m256i h0 = _mm256_hadd_epi32(_mm256_hadd_epi32(c[0], c[1]), _mm256_hadd_epi32(c[2], c[3]));
    __m256i h1 = _mm256_hadd_epi32(_mm256_hadd_epi32(c[4], c[5]), _mm256_hadd_epi32(c[6], c[7]));
    return _mm256_add_epi32(_mm256_permute2x128_si256(h0, h1, 0x20), _mm256_permute2x128_si256(h0, h1, 0x31));
}

/* acc + (sx sw) d, lane by lane: tf_q8_block's operations in its order. */
KA __m256 step(__m256 acc, __m256i d, __m256 sx, __m256 sw) {
    __m256 s = _mm256_mul_ps(sx, sw);
    __m256 f = _mm256_cvtepi32_ps(d);
    __m256 v = _mm256_mul_ps(s, f);
    return _mm256_add_ps(acc, v);
}

/* The first n rows of a tile of the copy and of its scales (nr <= n real). */
KA void rows_of(const int8_t **w, const float **s, int n, const int8_t *q, const float *sw, int64_t Kp, int64_t nb,
                int64_t nr) {
    for (int j = 0; j < n; j++) w[j] = q + (j < nr ? j : nr - 1) * Kp, s[j] = sw + (j < nr ? j : nr - 1) * nb;
}

/* y (2, nr) += 2 input rows x 4 weight rows (nr <= 4); lane i*4 + j is (i, j). */
KA void tile2x4(float *y, int64_t ldy, const uint8_t *xq, const float *sx, const int8_t *q, const float *sw,
                int64_t nr, int64_t Kp) {
    int64_t nb = Kp / TF_QUANT_BLOCK;
    const int8_t *w[4];
    const float *s[4];
    rows_of(w, s, 4, q, sw, Kp, nb, nr);
    __m256 acc = _mm256_setzero_ps();
    for (int64_t b = 0; b < nb; b++) {
        int64_t k = b * TF_QUANT_BLOCK;
        __m256i a0 = ld_u8(xq + k), a0h = ld_u8(xq + k + 16), a1 = ld_u8(xq + Kp + k), a1h = ld_u8(xq + Kp + k + 16);
        __m256i c[8];
        for (int j = 0; j < 4; j++) c[j] = dot32(a0, a0h, w[j] + k), c[4 + j] = dot32(a1, a1h, w[j] + k);
        __m256 vx = _mm256_insertf128_ps(_mm256_castps128_ps256(_mm_set1_ps(sx[b])), _mm_set1_ps(sx[nb + b]), 1);
        __m128 s4 = _mm_setr_ps(s[0][b], s[1][b], s[2][b], s[3][b]);
        __m256 vw = _mm256_insertf128_ps(_mm256_castps128_ps256(s4), s4, 1);
        acc = step(acc, sum8(c), vx, vw);
    }
    float r[8];
    _mm256_storeu_ps(r, acc);
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < nr; j++) y[i * ldy + j] += r[i * 4 + j];
}

/* y (1, nr) += 1 input row x 8 weight rows (nr <= 8); lane j is weight row j. */
KA void tile1x8(float *y, const uint8_t *xq, const float *sx, const int8_t *q, const float *sw, int64_t nr,
                int64_t Kp) {
    int64_t nb = Kp / TF_QUANT_BLOCK;
    const int8_t *w[8];
    const float *s[8];
    rows_of(w, s, 8, q, sw, Kp, nb, nr);
    __m256 acc = _mm256_setzero_ps();
    for (int64_t b = 0; b < nb; b++) {
        int64_t k = b * TF_QUANT_BLOCK;
        __m256i a = ld_u8(xq + k), ah = ld_u8(xq + k + 16);
        __m256i c[8];
        for (int j = 0; j < 8; j++) c[j] = dot32(a, ah, w[j] + k);
        __m256 vw = _mm256_setr_ps(s[0][b], s[1][b], s[2][b], s[3][b], s[4][b], s[5][b], s[6][b], s[7][b]);
        acc = step(acc, sum8(c), _mm256_set1_ps(sx[b]), vw);
    }
    float r[8];
    _mm256_storeu_ps(r, acc);
    for (int j = 0; j < nr; j++) y[j] += r[j];
}

__attribute__((target("avx2"))) static void gemm_avx2(float *y, int64_t ldy, const uint8_t *xq, const float *sx,
                                                      int64_t M, const int8_t *q, const float *sw, int64_t N,
                                                      int64_t Kp) {
    int64_t nb = Kp / TF_QUANT_BLOCK, M2 = M / 2 * 2;
    for (int64_t n0 = 0; n0 < N && M2; n0 += 4)
        for (int64_t m = 0; m < M2; m += 2)
            tile2x4(y + m * ldy + n0, ldy, xq + m * Kp, sx + m * nb, q + n0 * Kp, sw + n0 * nb,
                    N - n0 < 4 ? N - n0 : 4, Kp);
    if (M2 < M) /* the last odd row, a decoding step's one */
        for (int64_t n0 = 0; n0 < N; n0 += 8)
            tile1x8(y + M2 * ldy + n0, xq + M2 * Kp, sx + M2 * nb, q + n0 * Kp, sw + n0 * nb, N - n0 < 8 ? N - n0 : 8,
                    Kp);
}

tf_q8_gemm_fn tf_q8_avx2_gemm(void) {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") ? gemm_avx2 : NULL;
}

#else
tf_q8_gemm_fn tf_q8_avx2_gemm(void) { return NULL; }
#endif
