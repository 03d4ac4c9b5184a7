/* The bf16 product on AMX (Sapphire Rapids and later): TDPBF16PS multiplies a
 * tile of 16 rows x 16 bf16 pairs of A by a tile of 16 pairs x 16 columns of B
 * and adds both products of each pair to a 16 x 16 tile of float sums. The
 * packed layouts of bf16.h are already AMX's: A's rows of pairs are an A tile
 * (rows lda pairs apart), a strip's 16 pair rows of 16 columns are a B tile
 * (rows 32 pairs apart). One call of the kernel covers 32 rows x 32 columns:
 * four C tiles, two of A, two of B, the eight tile registers.
 *
 * The sums are the instruction's own (float, DAZ / FTZ): within a float sum's
 * error bound of the reference's, and not any plain-C order bit for bit (on an
 * Emerald Rapids Xeon 48% of the outputs equalled Intel's pseudo-code order:
 * tests/test_bf16_amx.c). Each output is still one task's, summed in k order,
 * so the bits do not depend on the thread count. The rounding of the factors
 * is AVX512-BF16's (every AMX-BF16 CPU has it): only the tile differs. */
#define _GNU_SOURCE /* syscall(): Linux asks a process to request the tile state */
#include "bf16.h"

#if defined(__x86_64__) && defined(__GNUC__) && defined(__linux__)
#include <cpuid.h>
#include <immintrin.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#define KA __attribute__((target("amx-tile,amx-bf16")))
enum { MR = 32, PAIRS = 16 }; /* a call's rows; a tile's pairs (64 bytes a row) */

/* Palette 1, tiles 0-7 of 16 rows x 64 bytes. A constant in memory, not one
 * built on the stack: GCC 12's _tile_loadconfig tells the compiler that it reads
 * 8 bytes of its operand, so the stores of the other 56 were dropped as dead
 * (LDTILECFG then read stack garbage and faulted). */
static const tf_amx_tile_config CONFIG = {
    .palette = 1,
    .colsb = {64, 64, 64, 64, 64, 64, 64, 64},
    .rows = {16, 16, 16, 16, 16, 16, 16, 16},
};

/* Once per task (tf_bf16_kernels' begin): a thread's configuration lasts
 * until something releases or replaces it, which tformer cannot see. */
KA static void configure(void) { _tile_loadconfig(&CONFIG); }

/* Tiles 0-3: C (rows 0-15 | 16-31) x (columns 0-15 | 16-31); 4, 5: A's halves; 6, 7: B's. */
KA static inline void step(const uint32_t *a, int64_t lda, const uint32_t *b) {
    _tile_loadd(4, a, lda * 4);
    _tile_loadd(5, a + 16 * lda, lda * 4);
    _tile_loadd(6, b, TF_BF16_NR * 4);
    _tile_loadd(7, b + 16, TF_BF16_NR * 4);
    _tile_dpbf16ps(0, 4, 6);
    _tile_dpbf16ps(1, 4, 7);
    _tile_dpbf16ps(2, 5, 6);
    _tile_dpbf16ps(3, 5, 7);
}

/* C (mr,nr) += A's rows times the strip's pairs [p0,p1): whole 32 x 32 blocks
 * read and write C in place; an edge (fewer rows or columns) goes through a
 * zero-padded copy, and so do pairs past the last whole 16 or rows past mr. */
KA static void tile_amx(float *C, int64_t ldc, const uint32_t *ap, int64_t lda, const uint32_t *bp, int64_t p0,
                        int64_t p1, int mr, int nr) {
    float cb[MR * TF_BF16_NR];        // (32,32) C's edge block, zero-padded
    uint32_t ab[MR * PAIRS];          // (32,16) A's pairs, zero-padded
    uint32_t bb[PAIRS * TF_BF16_NR];  // (16,32) the strip's pairs, zero-padded
    int whole = mr == MR && nr == TF_BF16_NR;
    float *c = C;
    int64_t ldcc = ldc;
    if (!whole) {
        memset(cb, 0, sizeof cb);
        for (int i = 0; i < mr; i++) memcpy(cb + i * TF_BF16_NR, C + i * ldc, (size_t)nr * sizeof *C);
        c = cb, ldcc = TF_BF16_NR;
    }
    _tile_loadd(0, c, ldcc * 4);
    _tile_loadd(1, c + 16, ldcc * 4);
    _tile_loadd(2, c + 16 * ldcc, ldcc * 4);
    _tile_loadd(3, c + 16 * ldcc + 16, ldcc * 4);
    int64_t p = p0;
    if (mr == MR)
        for (; p + PAIRS <= p1; p += PAIRS) step(ap + p, lda, bp + p * TF_BF16_NR);
    for (; p < p1; p += PAIRS) { /* the last pairs, or fewer rows than 32 */
        int n = (int)(p1 - p < PAIRS ? p1 - p : PAIRS);
        memset(ab, 0, sizeof ab);
        memset(bb, 0, sizeof bb);
        for (int i = 0; i < mr; i++) memcpy(ab + i * PAIRS, ap + i * lda + p, (size_t)n * sizeof *ab);
        memcpy(bb, bp + p * TF_BF16_NR, (size_t)n * TF_BF16_NR * sizeof *bb);
        step(ab, PAIRS, bb);
    }
    _tile_stored(0, c, ldcc * 4);
    _tile_stored(1, c + 16, ldcc * 4);
    _tile_stored(2, c + 16 * ldcc, ldcc * 4);
    _tile_stored(3, c + 16 * ldcc + 16, ldcc * 4);
    if (!whole)
        for (int i = 0; i < mr; i++) memcpy(C + i * ldc, cb + i * TF_BF16_NR, (size_t)nr * sizeof *C);
}

static tf_bf16_kernels AMX;
static const tf_bf16_kernels *amx;
static pthread_once_t amx_once = PTHREAD_ONCE_INIT;

/* The OS saving the tile state (OSXSAVE, XCR0 bits 17, 18), and Linux's
 * permission for this process (ARCH_REQ_XCOMP_PERM for XTILEDATA), which it
 * refuses on kernels before 5.16. Asked once; the int8 tiles ask it too. */
static int permitted;
static pthread_once_t permit_once = PTHREAD_ONCE_INIT;

static void permit(void) {
    unsigned a, b, c, d;
    if (!__get_cpuid_count(1, 0, &a, &b, &c, &d) || !(c & (1u << 27))) return; /* OSXSAVE */
    unsigned lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    if ((lo & (3u << 17)) != (3u << 17)) return;
    permitted = syscall(SYS_arch_prctl, 0x1023 /* ARCH_REQ_XCOMP_PERM */, 18 /* XFEATURE_XTILEDATA */) == 0;
}

int tf_amx_permitted(void) {
    pthread_once(&permit_once, permit);
    return permitted;
}

/* CPUID.(7,0):EDX bits 22 (AMX-BF16) and 24 (AMX-TILE), and the tile state. */
static int amx_usable(void) {
    unsigned a, b, c, d;
    if (!__get_cpuid_count(7, 0, &a, &b, &c, &d) || !(d & (1u << 22)) || !(d & (1u << 24))) return 0;
    return tf_amx_permitted();
}

static void amx_init(void) {
    const tf_bf16_kernels *v = tf_bf16_avx512();
    if (!v || !amx_usable()) return;
    AMX = *v;
    AMX.name = "amx-bf16";
    AMX.tile = tile_amx;
    AMX.mr = MR;
    AMX.begin = configure;
    amx = &AMX;
}

const tf_bf16_kernels *tf_bf16_amx(void) {
    pthread_once(&amx_once, amx_init);
    return amx;
}

#else
const tf_bf16_kernels *tf_bf16_amx(void) { return NULL; }
int tf_amx_permitted(void) { return 0; }
#endif
