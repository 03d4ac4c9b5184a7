/* The int8 product on AVX-512 VNNI (vpdpbusd: 64 unsigned-by-signed byte
 * products summed in fours into 16 int32 lanes per instruction). Tiles of 4
 * input rows by 4 weight rows keep 16 accumulators in registers; a lone
 * input row (a decoding step) takes 1 by 8 tiles. The integer sums equal the
 * reference kernel's exactly, and the float epilogue is the same function.
 * The quantisation divides and rounds 16 lanes at once: IEEE division and
 * round-to-nearest-even, the reference's values bit for bit. */
#include <float.h>

#include "quant.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

#define KQ static inline __attribute__((target("avx512f,avx512bw,avx512vnni")))
#define DP(c, a, b) c = _mm512_dpbusd_epi32(c, a, b)
#define LD(p) _mm512_loadu_si512((const void *)(p))

/* The first n rows of a tile of the copy (nr <= n of them real): a partial
 * tile repeats its last row (the results are dropped). */
KQ void tile_rows(const int8_t **w, int n, const int8_t *q, int64_t Kp, int64_t nr) {
    for (int j = 0; j < n; j++) w[j] = q + (j < nr ? j : nr - 1) * Kp;
}

KQ void store(float *y, int64_t ldy, int i, const __m512i *c, const float *sx, const float *sw, const int32_t *wsum,
              int64_t nr) {
    for (int j = 0; j < nr; j++) {
        float v = tf_q8_value(_mm512_reduce_add_epi32(c[j]), wsum[j], sx[i], sw[j]);
        y[i * ldy + j] += v;
    }
}

/* y (4, nr) += a 4 x 4 tile over the whole depth. */
KQ void tile4(float *y, int64_t ldy, const uint8_t *xq, const float *sx, const int8_t *q, const float *sw,
              const int32_t *wsum, int64_t nr, int64_t Kp) {
    const int8_t *w[4];
    tile_rows(w, 4, q, Kp, nr);
    __m512i c0[4], c1[4], c2[4], c3[4];
    for (int j = 0; j < 4; j++) c0[j] = c1[j] = c2[j] = c3[j] = _mm512_setzero_si512();
    for (int64_t k = 0; k < Kp; k += 64) {
        __m512i b0 = LD(w[0] + k), b1 = LD(w[1] + k), b2 = LD(w[2] + k), b3 = LD(w[3] + k);
        __m512i a = LD(xq + k);
        DP(c0[0], a, b0), DP(c0[1], a, b1), DP(c0[2], a, b2), DP(c0[3], a, b3);
        a = LD(xq + Kp + k);
        DP(c1[0], a, b0), DP(c1[1], a, b1), DP(c1[2], a, b2), DP(c1[3], a, b3);
        a = LD(xq + 2 * Kp + k);
        DP(c2[0], a, b0), DP(c2[1], a, b1), DP(c2[2], a, b2), DP(c2[3], a, b3);
        a = LD(xq + 3 * Kp + k);
        DP(c3[0], a, b0), DP(c3[1], a, b1), DP(c3[2], a, b2), DP(c3[3], a, b3);
    }
    store(y, ldy, 0, c0, sx, sw, wsum, nr);
    store(y, ldy, 1, c1, sx, sw, wsum, nr);
    store(y, ldy, 2, c2, sx, sw, wsum, nr);
    store(y, ldy, 3, c3, sx, sw, wsum, nr);
}

/* The 16 lanes of each of c[0..7] summed: lane j of the result is c[j]'s
 * total. Halves added, then pairwise horizontal adds: 15 instructions where
 * eight full reductions take about 80 (integers: any order, the same sums). */
KQ __m256i sum8(const __m512i *c) {
    __m256i r[8];
    for (int j = 0; j < 8; j++) r[j] = _mm256_add_epi32(_mm512_castsi512_si256(c[j]), _mm512_extracti64x4_epi64(c[j], 1));
    __m256i h0 = _mm256_hadd_epi32(_mm256_hadd_epi32(r[0], r[1]), _mm256_hadd_epi32(r[2], r[3])); /* per 128 bits: 0..3 */
    __m256i h1 = _mm256_hadd_epi32(_mm256_hadd_epi32(r[4], r[5]), _mm256_hadd_epi32(r[6], r[7])); /* 4..7 */
    return _mm256_add_epi32(_mm256_permute2x128_si256(h0, h1, 0x20), _mm256_permute2x128_si256(h0, h1, 0x31));
}

/* y (1, nr) += a 1 x 8 tile (nr <= 8): one input row (a decoding step)
 * against 8 weight rows, a partial tile repeating its last row. */
KQ void tile1x8(float *y, const uint8_t *xq, const float *sx, const int8_t *q, const float *sw, const int32_t *wsum,
                int64_t nr, int64_t Kp) {
    const int8_t *w[8];
    tile_rows(w, 8, q, Kp, nr);
    __m512i c[8];
    for (int j = 0; j < 8; j++) c[j] = _mm512_setzero_si512();
    /* the next tile's 8 rows asked for while this one's are read: the
     * hardware's prefetchers do not follow 8 rows read side by side that far
     * (one thread, GPT-2-124M int8: 196 -> 227 tokens/s; two tiles ahead 220,
     * 2 KB ahead within the rows 180). A prefetch past the copy's end is a no-op. */
    const char *next = (const char *)(q + 8 * Kp);
    for (int64_t k = 0; k < Kp; k += 64) {
        for (int j = 0; j < 8; j++) _mm_prefetch(next + j * Kp + k, _MM_HINT_T0);
        __m512i a = LD(xq + k);
        DP(c[0], a, LD(w[0] + k)), DP(c[1], a, LD(w[1] + k)), DP(c[2], a, LD(w[2] + k)), DP(c[3], a, LD(w[3] + k));
        DP(c[4], a, LD(w[4] + k)), DP(c[5], a, LD(w[5] + k)), DP(c[6], a, LD(w[6] + k)), DP(c[7], a, LD(w[7] + k));
    }
    int32_t acc[8];
    _mm256_storeu_si256((__m256i *)acc, sum8(c));
    for (int j = 0; j < nr; j++) y[j] += tf_q8_value(acc[j], wsum[j], sx[0], sw[j]);
}

__attribute__((target("avx512f,avx512bw,avx512vnni"))) static void gemm_vnni(
    float *y, int64_t ldy, const uint8_t *xq, const float *sx, int64_t M, const int8_t *q, const float *sw,
    const int32_t *wsum, int64_t N, int64_t Kp) {
    int64_t M4 = M / 4 * 4;
    for (int64_t n0 = 0; n0 < N && M4; n0 += 4) {
        int64_t nr = N - n0 < 4 ? N - n0 : 4;
        for (int64_t m = 0; m < M4; m += 4)
            tile4(y + m * ldy + n0, ldy, xq + m * Kp, sx + m, q + n0 * Kp, sw + n0, wsum + n0, nr, Kp);
    }
    for (int64_t m = M4; m < M; m++) /* the rows past the 4-row tiles, a decoding step's one */
        for (int64_t n0 = 0; n0 < N; n0 += 8)
            tile1x8(y + m * ldy + n0, xq + m * Kp, sx + m, q + n0 * Kp, sw + n0, wsum + n0, N - n0 < 8 ? N - n0 : 8, Kp);
}

/* ---------------------------------------------------------------- quantisation */

#define KF static inline __attribute__((target("avx512f,avx512bw,avx512vl")))
#define TARGET __attribute__((target("avx512f,avx512bw,avx512vl")))

/* 16 values: round(x / s) clamped to [-127, 127] as int32 lanes (nearest, ties to even, as nearbyintf). */
KF __m512i q16(__m512 x, __m512 s) {
    __m512 r = _mm512_roundscale_ps(_mm512_div_ps(x, s), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    r = _mm512_min_ps(_mm512_max_ps(r, _mm512_set1_ps(-127.0f)), _mm512_set1_ps(127.0f));
    return _mm512_cvtps_epi32(r);
}

KF __mmask16 mask_of(int64_t n) { return n >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << n) - 1u); }

TARGET static float amax_avx512(const float *x, int64_t n, int *bad) {
    __m512 m = _mm512_setzero_ps(), big = _mm512_set1_ps(FLT_MAX);
    __mmask16 nonfinite = 0;
    for (int64_t k = 0; k < n; k += 16) {
        __m512 a = _mm512_abs_ps(_mm512_maskz_loadu_ps(mask_of(n - k), x + k));
        __mmask16 nf = _mm512_cmp_ps_mask(a, big, _CMP_NLE_UQ); /* > FLT_MAX or NaN: left out, as the reference does */
        nonfinite |= nf;
        m = _mm512_mask_max_ps(m, (__mmask16)~nf, m, a);
    }
    if (nonfinite) *bad = 1;
    return _mm512_reduce_max_ps(m);
}

TARGET static void quant_avx512(int8_t *q, const float *x, int64_t n, float s, int offset) {
    __m512 vs = _mm512_set1_ps(s);
    __m512i off = _mm512_set1_epi32(offset);
    for (int64_t k = 0; k < n; k += 16) {
        __mmask16 m = mask_of(n - k);
        __m512i v = _mm512_add_epi32(q16(_mm512_maskz_loadu_ps(m, x + k), vs), off);
        _mm_mask_storeu_epi8(q + k, m, _mm512_cvtepi32_epi8(v)); /* the low byte: offset modulo 256 */
    }
}

TARGET static void amax_cols_avx512(float *amax, int *bad, const float *w, int64_t ldw, int64_t K, int nb) {
    __mmask16 m = mask_of(nb), nonfinite = 0;
    __m512 mx = _mm512_setzero_ps(), big = _mm512_set1_ps(FLT_MAX);
    for (int64_t k = 0; k < K; k++) {
        __m512 a = _mm512_abs_ps(_mm512_maskz_loadu_ps(m, w + k * ldw));
        __mmask16 nf = _mm512_cmp_ps_mask(a, big, _CMP_NLE_UQ);
        nonfinite |= nf;
        mx = _mm512_mask_max_ps(mx, (__mmask16)~nf, mx, a);
    }
    float t[16];
    _mm512_storeu_ps(t, mx);
    for (int j = 0; j < nb; j++) amax[j] = t[j], bad[j] = (nonfinite >> j) & 1;
}

TARGET static void quant_cols_avx512(int8_t *q, int64_t Kp, const float *w, int64_t ldw, int64_t K, const float *s,
                                     int nb) {
    __mmask16 m = mask_of(nb);
    __m512 vs = _mm512_maskz_loadu_ps(m, s);
    __mmask16 live = m & _mm512_cmp_ps_mask(vs, _mm512_setzero_ps(), _CMP_GT_OQ); /* s > 0 */
    vs = _mm512_mask_blend_ps(live, _mm512_set1_ps(1.0f), vs);                     /* no 0/0 in dead lanes */
    int8_t t[16];
    for (int64_t k = 0; k < K; k++) {
        __m512i v = _mm512_maskz_mov_epi32(live, q16(_mm512_maskz_loadu_ps(m, w + k * ldw), vs));
        _mm_storeu_si128((__m128i *)t, _mm512_cvtepi32_epi8(v));
        for (int j = 0; j < nb; j++) q[j * Kp + k] = t[j];
    }
}

static const tf_q8_kernels VNNI = {"avx512-vnni", gemm_vnni, amax_avx512, quant_avx512, amax_cols_avx512,
                                   quant_cols_avx512};

const tf_q8_kernels *tf_q8_vnni(void) {
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
        __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512vnni"))
        return &VNNI;
    return NULL;
}

#else
const tf_q8_kernels *tf_q8_vnni(void) { return NULL; }
#endif
