/* The int8 kernels on AVX-512: the quantisation (16 values a division:
 * IEEE division and round-to-nearest-even, the reference's values bit for
 * bit) and a VNNI product of the block scheme (vpdpbusd, tiles of 4 x 4;
 * the AVX2 product on AVX-512 CPUs without VNNI and for the rows past the
 * tiles). Both equal the reference bit for bit (tests/test_quant.c:
 * quant_vnni_kernel_equals_reference, quant_avx512_quantisation_equals_
 * reference; first run on an AMD EPYC with AVX-512 VNNI, 2026-12-03). */
#include <float.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>

#include "quant.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

#define KQ static inline __attribute__((target("avx2,avx512f,avx512bw,avx512vnni")))

/* Lane j of the result: the sum of c[j]'s 8 lanes (kern_q8_avx2.c's sum8). */
KQ __m256i sum8(const __m256i *c) {
    __m256i h0 = _mm256_hadd_epi32(_mm256_hadd_epi32(c[0], c[1]), _mm256_hadd_epi32(c[2], c[3]));
    __m256i h1 = _mm256_hadd_epi32(_mm256_hadd_epi32(c[4], c[5]), _mm256_hadd_epi32(c[6], c[7]));
    return _mm256_add_epi32(_mm256_permute2x128_si256(h0, h1, 0x20), _mm256_permute2x128_si256(h0, h1, 0x31));
}

/* Lane l of the result: the sum of the 8 lanes of half h (0: lanes 0-7, 1:
 * 8-15) of c[l]; the block sums of 16 outputs. */
KQ __m512i sum16(const __m512i *c, int h) {
    __m256i p[16];
    for (int l = 0; l < 16; l++) p[l] = h ? _mm512_extracti64x4_epi64(c[l], 1) : _mm512_castsi512_si256(c[l]);
    return _mm512_inserti64x4(_mm512_castsi256_si512(sum8(p)), sum8(p + 8), 1);
}

/* y (4, nr) += 4 input rows x 4 weight rows (nr <= 4; a partial tile repeats
 * its last row), lane i*4 + j the output (i, j). Per 64 bytes (two blocks):
 * vpdpbusd of the unsigned bytes u with the weight's, from a start of
 * -128 * (the weight's 4-byte sums), leaves sum (u - 128) q of each 4 bytes
 * (exact: every term and sum is within int32), lanes 0-7 block 2t, 8-15
 * block 2t+1; then each block's float step as the reference's. */
KQ void vnni_tile(float *y, int64_t ldy, const uint8_t *xq, const float *sx, const int8_t *q, const float *sw,
                  int64_t nr, int64_t Kp) {
    int64_t nb = Kp / TF_QUANT_BLOCK;
    const int8_t *w[4];
    const float *s[4];
    for (int j = 0; j < 4; j++) w[j] = q + (j < nr ? j : nr - 1) * Kp, s[j] = sw + (j < nr ? j : nr - 1) * nb;
    const __m512i idx = _mm512_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3);
    __m512 acc = _mm512_setzero_ps();
    for (int64_t k = 0, b = 0; k < Kp; k += 64, b += 2) {
        __m512i c[16];
        for (int j = 0; j < 4; j++) {
            __m512i wj = _mm512_loadu_si512((const void *)(w[j] + k));
            __m512i z = _mm512_sub_epi32(_mm512_setzero_si512(),
                                         _mm512_dpbusd_epi32(_mm512_setzero_si512(), _mm512_set1_epi8((char)0x80), wj));
            for (int i = 0; i < 4; i++)
                c[i * 4 + j] = _mm512_dpbusd_epi32(z, _mm512_loadu_si512((const void *)(xq + i * Kp + k)), wj);
        }
        for (int h = 0; h < 2; h++) {
            __m512 vx = _mm512_permutexvar_ps(idx, _mm512_castps128_ps512(_mm_setr_ps(
                                                      sx[b + h], sx[nb + b + h], sx[2 * nb + b + h], sx[3 * nb + b + h])));
            __m512 vw = _mm512_broadcast_f32x4(_mm_setr_ps(s[0][b + h], s[1][b + h], s[2][b + h], s[3][b + h]));
            acc = tf_q8_block16(acc, sum16(c, h), vx, vw);
        }
    }
    float r[16];
    _mm512_storeu_ps(r, acc);
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < nr; j++) y[i * ldy + j] += r[i * 4 + j];
}

/* Tiles of 4 x 4; the rows past them through the AVX2 kernel (the same bits). */
__attribute__((target("avx2,avx512f,avx512bw,avx512vnni"))) static void gemm_vnni(
    float *y, int64_t ldy, const uint8_t *xq, const float *sx, int64_t M, const int8_t *q, const float *sw, int64_t N,
    int64_t Kp) {
    int64_t nb = Kp / TF_QUANT_BLOCK, M4 = M / 4 * 4;
    for (int64_t n0 = 0; n0 < N && M4; n0 += 4)
        for (int64_t m = 0; m < M4; m += 4)
            vnni_tile(y + m * ldy + n0, ldy, xq + m * Kp, sx + m * nb, q + n0 * Kp, sw + n0 * nb,
                      N - n0 < 4 ? N - n0 : 4, Kp);
    if (M4 < M) tf_q8_avx2_gemm()(y + M4 * ldy, ldy, xq + M4 * Kp, sx + M4 * nb, M - M4, q, sw, N, Kp);
}

tf_q8_gemm_fn tf_q8_vnni_gemm(void) {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("avx512f") &&
                   __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vnni")
               ? gemm_vnni
               : NULL;
}

/* ---------------------------------------------------------------- packed copies */

/* Lanes j of y's row from column c (of ncol) = (b's column c + j, or y's
 * own when b is NULL) + v's: whole, masked at the right edge, or lane by lane
 * where the panel starts before column 0 (a view whose first row is not a
 * panel's). */
KQ void add_row(float *yr, const float *b, int64_t c, int64_t ncol, __m512 v) {
    const float *from = b ? b : yr;
    if (c >= 0 && c + 16 <= ncol) {
        _mm512_storeu_ps(yr + c, _mm512_add_ps(_mm512_loadu_ps(from + c), v));
    } else if (c >= 0) {
        __mmask16 m = (__mmask16)((1u << (ncol - c)) - 1u);
        _mm512_mask_storeu_ps(yr + c, m, _mm512_add_ps(_mm512_maskz_loadu_ps(m, from + c), v));
    } else {
        float t[16];
        _mm512_storeu_ps(t, v);
        for (int l = 0; l < 16; l++)
            if (c + l >= 0 && c + l < ncol) yr[c + l] = from[c + l] + t[l];
    }
}

/* y (MR rows, ldy apart; panel p's 16 rows from column c) = (bias, or y) + MR input rows
 * times NP panels (MR <= 4 with NP <= 2, or MR 1 with NP <= 4; constants where inlined). Per block:
 * the int32 sums start at -128 (the block's byte sum) (u = xq + 128), take 8
 * vpdpbusd of 4 broadcast input bytes by 64 weight bytes, and end exact;
 * then each lane's float step (tf_q8_block16), block after block. */
static inline __attribute__((always_inline, target("avx2,avx512f,avx512bw,avx512vnni"))) void
packed_tile(float *y, int64_t ldy, const float *bias, int64_t c, int64_t ncol, const uint8_t *xq, const float *sx, int64_t Kp,
            const tf_q8_packed *p, int64_t panel, int split, const int MR, const int NP) {
    int64_t nb = Kp / TF_QUANT_BLOCK;
    const int8_t *w = p->w + panel * nb * 512;
    const float *s = p->s + panel * nb * 16;
    const int16_t *sum = p->sum + panel * nb * 16;
    __m512 acc[4][4];
    for (int i = 0; i < MR; i++)
        for (int j = 0; j < NP; j++) {
            acc[i][j] = _mm512_setzero_ps();
            /* the lines this tile stores, asked for now: a wide output (a vocabulary's logits,
             * rows 32 KB apart) missed the cache on every store, a fifth of this kernel's time;
             * both lines where the 16 lanes straddle two (rows of 8,003 logits: 1.6x the time
             * without the second). split: the call's rows are not all 64-byte aligned (one
             * flag a call: a test a tile mispredicts on rows that alternate) */
            int64_t c0 = c + j * 16;
            if (c0 >= 0 && c0 < ncol) __builtin_prefetch(y + i * ldy + c0, 1, 3);
            if (split && c0 + 15 >= 0 && c0 + 15 < ncol) __builtin_prefetch(y + i * ldy + c0 + 15, 1, 3);
        }
    for (int64_t b = 0; b < nb; b++) {
        __m512i d[4][4];
        for (int j = 0; j < NP; j++) {
            if (MR == 1) { /* no start: the sign rule below */
                d[0][j] = _mm512_setzero_si512();
                continue;
            }
            __m256i s16 = _mm256_loadu_si256((const __m256i *)(sum + j * nb * 16 + b * 16));
            __m512i z = _mm512_sub_epi32(_mm512_setzero_si512(), _mm512_slli_epi32(_mm512_cvtepi16_epi32(s16), 7));
            for (int i = 0; i < MR; i++) d[i][j] = z;
        }
        for (int g = 0; g < 8; g++) {
            __m512i wv[4];
            for (int j = 0; j < NP; j++) wv[j] = _mm512_load_si512((const void *)(w + j * nb * 512 + b * 512 + g * 64));
            for (int i = 0; i < MR; i++) {
                int32_t x4;
                memcpy(&x4, xq + i * Kp + b * TF_QUANT_BLOCK + g * 4, 4);
                __m512i xb = _mm512_set1_epi32(x4);
                if (MR == 1) { /* |x| times the weight with x's sign: the same exact sums, no block sums read */
                    __m512i xs = _mm512_xor_si512(xb, _mm512_set1_epi8((char)0x80)); /* u - 128 = x, as int8 */
                    __mmask64 neg = _mm512_movepi8_mask(xs);
                    __m512i ax = _mm512_abs_epi8(xs);
                    for (int j = 0; j < NP; j++)
                        d[0][j] = _mm512_dpbusd_epi32(d[0][j], ax, _mm512_mask_sub_epi8(wv[j], neg, _mm512_setzero_si512(), wv[j]));
                    continue;
                }
                for (int j = 0; j < NP; j++) d[i][j] = _mm512_dpbusd_epi32(d[i][j], xb, wv[j]);
            }
        }
        for (int j = 0; j < NP; j++) {
            __m512 vw = _mm512_loadu_ps(s + j * nb * 16 + b * 16);
            for (int i = 0; i < MR; i++) acc[i][j] = tf_q8_block16(acc[i][j], d[i][j], _mm512_set1_ps(sx[i * nb + b]), vw);
        }
    }
    for (int i = 0; i < MR; i++)
        for (int j = 0; j < NP; j++) add_row(y + i * ldy, bias, c + j * 16, ncol, acc[i][j]);
}

/* Panels by pairs (the last alone), each against the input rows by 4 (the
 * last 1-3 in a smaller tile): a pair's 2 x 16 rows stay in L1 while the
 * input rows pass. */
__attribute__((target("avx2,avx512f,avx512bw,avx512vnni"))) static void gemm_packed(
    float *y, int64_t ldy, const float *bias, const uint8_t *xq, const float *sx, int64_t M, const tf_q8_packed *p,
    int64_t r0, int64_t r1) {
    int64_t Kp = p->Kp, nb = Kp / TF_QUANT_BLOCK, ncol = r1 - r0, last = (r1 - 1) / 16;
    int split = (((uintptr_t)y & 63) | (uintptr_t)(ldy & 15) | (uintptr_t)(r0 & 15)) != 0;
    if (M == 1) { /* one row (a decoding step): four panels a tile, whose four weight streams
                   * read memory 1.15x as fast as two (bench_matmul infer-int8 1 768 50257) */
        for (int64_t panel = r0 / 16; panel <= last; panel += 4) {
            int64_t c = panel * 16 - r0, left = last - panel + 1;
            if (left >= 4) packed_tile(y, ldy, bias, c, ncol, xq, sx, Kp, p, panel, split, 1, 4);
            else if (left == 3) packed_tile(y, ldy, bias, c, ncol, xq, sx, Kp, p, panel, split, 1, 3);
            else if (left == 2) packed_tile(y, ldy, bias, c, ncol, xq, sx, Kp, p, panel, split, 1, 2);
            else packed_tile(y, ldy, bias, c, ncol, xq, sx, Kp, p, panel, split, 1, 1);
        }
        return;
    }
    for (int64_t panel = r0 / 16; panel <= last; panel += 2) {
        int two = panel < last;
        int64_t c = panel * 16 - r0;
        for (int64_t m = 0; m < M; m += 4) {
            int64_t mr = M - m < 4 ? M - m : 4;
            float *ym = y + m * ldy;
            const uint8_t *xm = xq + m * Kp;
            const float *sm = sx + m * nb;
#define TILE(MR, NP) packed_tile(ym, ldy, bias, c, ncol, xm, sm, Kp, p, panel, split, MR, NP) /* constants: unrolled */
            switch (mr * 2 + two) {
            case 2: TILE(1, 1); break;
            case 3: TILE(1, 2); break;
            case 4: TILE(2, 1); break;
            case 5: TILE(2, 2); break;
            case 6: TILE(3, 1); break;
            case 7: TILE(3, 2); break;
            case 8: TILE(4, 1); break;
            default: TILE(4, 2); break;
            }
#undef TILE
        }
    }
}

tf_q8_packed_fn tf_q8_vnni_packed(void) { return tf_q8_vnni_gemm() ? gemm_packed : NULL; }

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

/* An input row x (K) as xq (nb blocks of 32 bytes u = q + 128) and sx (nb):
 * quant.c's quant_row with offset 128 in one pass, a block in two vectors
 * (amax over the finite values, s = amax / 127 or NaN, q = round(x / s)
 * clamped when s > 0, else all 128); lanes past K load as 0, which gives the
 * padding byte 128, and a block past K has scale 0. */
TARGET static void quant_row_u8_avx512(uint8_t *xq, float *sx, const float *x, int64_t K, int64_t nb) {
    const __m512 big = _mm512_set1_ps(FLT_MAX);
    const __m512i off = _mm512_set1_epi32(128);
    for (int64_t b = 0; b < nb; b++) {
        int64_t k = b * TF_QUANT_BLOCK, len = K - k;
        uint8_t *u = xq + k;
        float s = 0.0f;
        if (len > 0) {
            __m512 x0 = _mm512_maskz_loadu_ps(mask_of(len), x + k);
            __m512 x1 = _mm512_maskz_loadu_ps(len > 16 ? mask_of(len - 16) : 0, x + k + 16);
            __m512 a0 = _mm512_abs_ps(x0), a1 = _mm512_abs_ps(x1);
            __mmask16 n0 = _mm512_cmp_ps_mask(a0, big, _CMP_NLE_UQ), n1 = _mm512_cmp_ps_mask(a1, big, _CMP_NLE_UQ);
            float amax = _mm512_reduce_max_ps(
                _mm512_max_ps(_mm512_maskz_mov_ps((__mmask16)~n0, a0), _mm512_maskz_mov_ps((__mmask16)~n1, a1)));
            s = n0 | n1 ? NAN : amax / 127.0f;
            if (s > 0.0f) {
                __m512 vs = _mm512_set1_ps(s);
                _mm_storeu_si128((__m128i *)u, _mm512_cvtepi32_epi8(_mm512_add_epi32(q16(x0, vs), off)));
                _mm_storeu_si128((__m128i *)(u + 16), _mm512_cvtepi32_epi8(_mm512_add_epi32(q16(x1, vs), off)));
            }
        }
        sx[b] = s;
        if (!(s > 0.0f)) memset(u, 128, TF_QUANT_BLOCK);
    }
}

static tf_q8_kernels avx512 = {"avx512", NULL, amax_avx512, quant_avx512, amax_cols_avx512, quant_cols_avx512, NULL,
                               quant_row_u8_avx512};
static pthread_once_t avx512_once = PTHREAD_ONCE_INIT;

static void avx512_init(void) {
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl"))
        avx512.gemm = tf_q8_amx_gemm()    ? tf_q8_amx_gemm()
                      : tf_q8_vnni_gemm() ? tf_q8_vnni_gemm()
                                          : tf_q8_avx2_gemm();
    /* without AMX, the VNNI product on packed copies (2.x the row kernel's
     * speed: docs/performance.md); AMX reads rows */
    if (avx512.gemm && !tf_q8_amx_gemm()) avx512.packed = tf_q8_vnni_packed();
}

const tf_q8_kernels *tf_q8_avx512(void) {
    pthread_once(&avx512_once, avx512_init);
    return avx512.gemm ? &avx512 : NULL;
}

#else
const tf_q8_kernels *tf_q8_avx512(void) { return NULL; }
tf_q8_gemm_fn tf_q8_vnni_gemm(void) { return NULL; }
tf_q8_packed_fn tf_q8_vnni_packed(void) { return NULL; }
#endif
