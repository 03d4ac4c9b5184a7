/* The int8 product of quant.h's block scheme on AMX (AMX-INT8: Sapphire
 * Rapids and later). TDPBUSD multiplies a tile of 16 input rows x 32 unsigned
 * bytes (one block of each row) by a tile of 8 rows x 16 columns of 4 signed
 * bytes (the same block of 16 weight rows, VNNI's layout) into 16 x 16 int32
 * sums: each output's block sum, exact, in one instruction. The tile starts
 * from -128 x the weight block's byte sums (so it holds sum (u - 128) q, the
 * reference's d), is stored, and each output then takes tf_q8_block's float
 * steps lane by lane, block after block: the reference's bits.
 *
 * The copy's rows are (N,Kp); a call packs its N rows (64 at most, quant.c's
 * tasks) into B tiles once, then sweeps its input rows 16 at a time, the
 * last M % 16 zero-padded. Under 4 rows (a decoding step) the VNNI kernel,
 * which gives the same bits, runs instead. tests/test_quant.c:
 * quant_amx_kernel_equals_reference. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "quant.h"

#if defined(__x86_64__) && defined(__GNUC__) && defined(__linux__)
#include <cpuid.h>
#include <immintrin.h>

#include "../core/core_internal.h" /* tf_buf_take */
#include "bf16.h"                  /* tf_amx_permitted */

#define KT __attribute__((target("amx-tile,amx-int8,avx512f,avx512bw,avx512vnni")))

enum { ROWS = 16, TILE_B = 8 * 64 }; /* input rows a tile; bytes of a block's B tile */

/* Tiles 0, 1: C (16 x 16 int32); 2, 3: A (16 rows of a block's 32 bytes);
 * 4, 5: B (8 rows of 16 x 4 bytes). A constant in memory: kern_bf16_amx.c
 * says why. */
static const tf_amx_tile_config CONFIG = {
    .palette = 1,
    .colsb = {64, 64, 32, 32, 64, 64},
    .rows = {16, 16, 16, 16, 8, 8},
};

/* The call's weight rows q (N,Kp) in groups of 16 (rows past N: zero bytes,
 * scale 0): group g's block b is B tile bp[(g nb + b) TILE_B], its row r the
 * 4 bytes q[16g + n, 32b + 4r ..] of n = 0..15; corr[(g nb + b) 16 + n] =
 * -128 x the block's bytes of row 16g + n; swp alike its scale. */
KT static void pack(int8_t *bp, int32_t *corr, float *swp, const int8_t *q, const float *sw, int64_t N, int64_t Kp) {
    int64_t nb = Kp / TF_QUANT_BLOCK;
    const __m512i lane = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    const __m512i ones = _mm512_set1_epi8(1);
    for (int64_t g = 0; g * ROWS < N; g++) {
        int nr = N - g * ROWS < ROWS ? (int)(N - g * ROWS) : ROWS;
        __mmask16 live = (__mmask16)((1u << nr) - 1u);
        __m512i rowq = _mm512_mullo_epi32(lane, _mm512_set1_epi32((int)Kp)); /* bytes: Kp <= 65536 */
        __m512i rows = _mm512_mullo_epi32(lane, _mm512_set1_epi32((int)nb));  /* floats */
        const int8_t *qg = q + g * ROWS * Kp;
        for (int64_t b = 0; b < nb; b++) {
            int64_t t = g * nb + b;
            __m512i sum = _mm512_setzero_si512();
            for (int r = 0; r < 8; r++) {
                __m512i v = _mm512_mask_i32gather_epi32(_mm512_setzero_si512(), live, rowq,
                                                        qg + b * TF_QUANT_BLOCK + 4 * r, 1);
                _mm512_store_si512((void *)(bp + t * TILE_B + r * 64), v);
                sum = _mm512_dpbusd_epi32(sum, ones, v); /* each lane's 4 bytes, summed */
            }
            _mm512_store_si512((void *)(corr + t * ROWS), _mm512_sub_epi32(_mm512_setzero_si512(),
                                                                           _mm512_slli_epi32(sum, 7)));
            _mm512_store_ps(swp + t * ROWS, _mm512_mask_i32gather_ps(_mm512_setzero_ps(), live, rows,
                                                                     sw + g * ROWS * nb + b, 4));
        }
    }
}

/* y (mr, nr) += 16 input rows (xq, Kp apart; scales sx, nb apart; the first
 * mr real) x one packed group (the first nr <= 16 columns real), CHUNK
 * blocks at a time (their sums d (CHUNK,16,16) stay in L1). First the
 * chunk's 16 x 16 block sums, two blocks a round in tiles 0 and 1, each from
 * its correction row (a stride of 0 repeats it over the 16 rows): the tile
 * unit runs on without waiting for float work. Then the float steps, block
 * after block, 4 rows at a time (4 chains of sums: the adds' latency), the
 * rows' running sums kept in acc (16,16) between chunks. */
enum { CHUNK = 8 };
KT static void tile16(float *y, int64_t ldy, const uint8_t *xq, const float *sx, const int8_t *bp,
                      const int32_t *corr, const float *swp, int64_t Kp, int32_t *d, int mr, int nr) {
    int64_t nb = Kp / TF_QUANT_BLOCK;
    float acc[ROWS * ROWS] __attribute__((aligned(64)));
    for (int i = 0; i < ROWS; i++) _mm512_store_ps(acc + i * ROWS, _mm512_setzero_ps());
    for (int64_t c = 0; c < nb; c += CHUNK) {
        int64_t ce = c + CHUNK < nb ? c + CHUNK : nb;
        for (int64_t b = c; b < ce; b += 2) { /* nb and CHUNK are even: Kp is a multiple of 64 */
            _tile_loadd(0, corr + b * ROWS, 0);
            _tile_loadd(1, corr + (b + 1) * ROWS, 0);
            _tile_loadd(2, xq + b * TF_QUANT_BLOCK, Kp);
            _tile_loadd(3, xq + (b + 1) * TF_QUANT_BLOCK, Kp);
            _tile_loadd(4, bp + b * TILE_B, 64);
            _tile_loadd(5, bp + (b + 1) * TILE_B, 64);
            _tile_dpbusd(0, 2, 4);
            _tile_dpbusd(1, 3, 5);
            _tile_stored(0, d + (b - c) * ROWS * ROWS, 64);
            _tile_stored(1, d + (b + 1 - c) * ROWS * ROWS, 64);
        }
        for (int i0 = 0; i0 < ROWS; i0 += 4) { /* rows past mr (16 are there) computed, not stored */
            __m512 a[4];
            for (int i = 0; i < 4; i++) a[i] = _mm512_load_ps(acc + (i0 + i) * ROWS);
            for (int64_t b = c; b < ce; b++) {
                __m512 sw = _mm512_load_ps(swp + b * ROWS);
                for (int i = 0; i < 4; i++)
                    a[i] = tf_q8_block16(a[i], _mm512_load_si512((const void *)(d + ((b - c) * ROWS + i0 + i) * ROWS)),
                                  _mm512_set1_ps(sx[(i0 + i) * nb + b]), sw);
            }
            for (int i = 0; i < 4; i++) _mm512_store_ps(acc + (i0 + i) * ROWS, a[i]);
        }
    }
    __mmask16 m = (__mmask16)((1u << nr) - 1u);
    for (int i = 0; i < mr; i++) {
        float *yi = y + i * ldy;
        _mm512_mask_storeu_ps(yi, m, _mm512_add_ps(_mm512_maskz_loadu_ps(m, yi), _mm512_load_ps(acc + i * ROWS)));
    }
}

static tf_q8_gemm_fn vnni; /* under 4 rows, and a call whose packing finds no memory */

/* The last M % 16 input rows, zero-padded to 16 (xp (16,Kp), sp (16,nb)):
 * the padding's sums are computed and dropped. */
static void pad_rows(uint8_t *xp, float *sp, const uint8_t *xq, const float *sx, int mr, int64_t Kp) {
    int64_t nb = Kp / TF_QUANT_BLOCK;
    memset(xp, 0, (size_t)(ROWS * Kp));
    memset(sp, 0, (size_t)(ROWS * nb) * sizeof *sp);
    memcpy(xp, xq, (size_t)(mr * Kp));
    memcpy(sp, sx, (size_t)(mr * nb) * sizeof *sp);
}

KT static void gemm_amx(float *y, int64_t ldy, const uint8_t *xq, const float *sx, int64_t M, const int8_t *q,
                        const float *sw, int64_t N, int64_t Kp) {
    int64_t nb = Kp / TF_QUANT_BLOCK, groups = (N + ROWS - 1) / ROWS, M16 = M / ROWS * ROWS;
    int mt = (int)(M - M16);
    /* per block of a group: its B tile, correction row and scales; the padded rows */
    size_t tiles = (size_t)(groups * nb), packed = tiles * (TILE_B + 2 * ROWS * 4); /* N <= 64, nb <= 2048 */
    size_t padded = mt ? (size_t)(ROWS * Kp) + (size_t)(ROWS * nb) * sizeof(float) : 0;
    size_t sums = (size_t)(CHUNK * ROWS * ROWS) * sizeof(int32_t); /* a chunk's block sums */
    /* under 4 rows (a decoding step's 1) the packing costs more than the tiles
     * save: 38.6M weights, 1 row, 9.9 ms against VNNI's 3.0; 4 rows 8.6 against 12.2 */
    /* the buffer pool's (tf_buf_take): a fresh buffer over malloc's mmap threshold
     * each call cost a page fault and a zeroed page per 4 KiB */
    size_t room = 0;
    int8_t *bp = M >= 4 ? tf_buf_take(packed + padded + sums, &room) : NULL;
    if (!bp) {
        vnni(y, ldy, xq, sx, M, q, sw, N, Kp);
        return;
    }
    int32_t *corr = (int32_t *)(bp + tiles * TILE_B);
    float *swp = (float *)(corr + tiles * ROWS);
    uint8_t *xp = (uint8_t *)bp + packed;
    float *sp = (float *)(xp + ROWS * Kp);
    int32_t *d = (int32_t *)((int8_t *)bp + packed + padded);
    pack(bp, corr, swp, q, sw, N, Kp);
    if (mt) pad_rows(xp, sp, xq + M16 * Kp, sx + M16 * nb, mt, Kp);
    _tile_loadconfig(&CONFIG); /* this thread's tiles: another kernel may have set its own */
    for (int64_t g = 0; g < groups; g++) {
        int nr = N - g * ROWS < ROWS ? (int)(N - g * ROWS) : ROWS;
        const int8_t *bg = bp + g * nb * TILE_B;
        const int32_t *cg = corr + g * nb * ROWS;
        const float *sg = swp + g * nb * ROWS;
        for (int64_t m = 0; m < M16; m += ROWS)
            tile16(y + m * ldy + g * ROWS, ldy, xq + m * Kp, sx + m * nb, bg, cg, sg, Kp, d, ROWS, nr);
        if (mt) tile16(y + M16 * ldy + g * ROWS, ldy, xp, sp, bg, cg, sg, Kp, d, mt, nr);
    }
    tf_buf_give(bp, room);
}

static tf_q8_gemm_fn amx;
static pthread_once_t amx_once = PTHREAD_ONCE_INIT;

/* CPUID.(7,0):EDX bits 24 (AMX-TILE) and 25 (AMX-INT8), the VNNI kernel for
 * the rows past the tiles, and the tile state granted (tf_amx_permitted);
 * TFORMER_AMX=0 leaves the tiles unused (as for bf16: bf16.c). */
static void amx_init(void) {
    const char *env = getenv("TFORMER_AMX");
    if (env && env[0] == '0' && !env[1]) return;
    unsigned a, b, c, d;
    if (!__get_cpuid_count(7, 0, &a, &b, &c, &d) || !(d & (1u << 24)) || !(d & (1u << 25))) return;
    if (!(vnni = tf_q8_vnni_gemm()) || !tf_amx_permitted()) return;
    amx = gemm_amx;
}

tf_q8_gemm_fn tf_q8_amx_gemm(void) {
    pthread_once(&amx_once, amx_init);
    return amx;
}

#else
tf_q8_gemm_fn tf_q8_amx_gemm(void) { return NULL; }
#endif
