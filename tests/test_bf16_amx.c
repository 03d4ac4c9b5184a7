/* The AMX bf16 kernel (src/ops/kern_bf16_amx.c) where the CPU has AMX-BF16:
 * every tile edge (rows past 32, columns past a strip, pairs past 16, odd K,
 * two blocks of pairs) and operand layout against the reference in plain C
 * (tf_bf16_ref, vdpbf16ps's order) within a float sum's error bound, and the
 * same bits on 1 and 2 threads. The bits are not a plain-C order's: on an
 * Emerald Rapids Xeon (2026-11-28) 48% of the outputs equalled Intel's
 * pseudo-code order for TDPBF16PS (each pair's even product added first, each
 * sum rounded), so the hardware sums differently; the test prints that share.
 * Elsewhere it says so and checks nothing: no other machine runs the tiles. */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/core_internal.h"
#include "ops/bf16.h"
#include "test.h"

static float ftz(float x) { return fabsf(x) < FLT_MIN ? copysignf(0.0f, x) : x; }

/* tf_bf16_ref's tile with TDPBF16PS's order: a[2p] b[2p] first, then a[2p+1] b[2p+1] */
static void tile_even_first(float *C, int64_t ldc, const uint32_t *ap, int64_t lda, const uint32_t *bp, int64_t p0,
                            int64_t p1, int mr, int nr) {
    for (int i = 0; i < mr; i++)
        for (int j = 0; j < nr; j++) {
            float acc = C[i * ldc + j];
            for (int64_t p = p0; p < p1; p++) {
                uint32_t a = ap[i * lda + p], b = bp[p * TF_BF16_NR + j];
                acc = ftz(acc + tf_bf16_float((uint16_t)a) * tf_bf16_float((uint16_t)b));
                acc = ftz(acc + tf_bf16_float((uint16_t)(a >> 16)) * tf_bf16_float((uint16_t)(b >> 16)));
            }
            C[i * ldc + j] = acc;
        }
}

static void fill(float *v, int64_t n, uint64_t seed, float scale) {
    for (int64_t i = 0; i < n; i++) v[i] = (tf_hash_uniform(seed, (uint64_t)i) * 2.0f - 1.0f) * scale;
}

static float bf(float x) { return tf_bf16_float(tf_bf16_round(x)); }

/* got against want (another order of the same sums): |diff| within (2K+2) 2^-23
 * of |C0| + sum |a b| (factors rounded to bf16); infinities and NaN alike */
static int within_bound(const float *got, const float *want, const float *c0, const float *A, const float *B,
                        int64_t M, int64_t N, int64_t K, int ta, int tb) {
    for (int64_t m = 0; m < M; m++)
        for (int64_t n = 0; n < N; n++) {
            float g = got[m * N + n], w = want[m * N + n];
            if (!isfinite(w) || !isfinite(g)) {
                if (isnan(w) != isnan(g) || (!isnan(w) && g != w)) return 0;
                continue;
            }
            double s = fabs(c0[m * N + n]);
            for (int64_t k = 0; k < K; k++)
                s += fabs((double)bf(ta ? A[k * M + m] : A[m * K + k]) * bf(tb ? B[n * K + k] : B[k * N + n]));
            if (fabs((double)g - w) > (double)(2 * K + 2) * 0x1p-23 * s) return 0;
        }
    return 1;
}

static const int64_t SHAPES[][3] = {{1, 1, 1},    {1, 33, 7},    {5, 31, 2},     {32, 32, 32},   {32, 64, 64},
                                    {33, 65, 65}, {64, 32, 129}, {97, 70, 513},  {200, 96, 48},  {31, 33, 4099},
                                    {192, 96, 768}, {385, 40, 96}};

/* c[0] tf_bf16_ref, c[1] the even-first reference, c[2] AMX on 2 threads, c[3] on 1 */
static void products(float *c[4], const tf_bf16_kernels *amx, const float *A, const float *B, const float *c0,
                     int64_t M, int64_t N, int64_t K, int ta, int tb) {
    tf_bf16_kernels even = *tf_bf16_ref();
    even.tile = tile_even_first;
    const tf_bf16_kernels *ks[4] = {tf_bf16_ref(), &even, amx, amx};
    for (int i = 0; i < 4; i++) {
        memcpy(c[i], c0, sizeof(float) * M * N);
        if (i == 3) tf_set_threads(1);
        CHECK(!tf_gemm_bf16_with(ks[i], c[i], A, B, M, N, K, ta, tb));
        tf_set_threads(0);
    }
}

TEST(bf16_amx_within_bound_of_reference) {
    const tf_bf16_kernels *amx = tf_bf16_amx();
    if (!amx) {
        printf("  (no AMX-BF16 on this CPU, or the kernel refused the tile state: nothing to check here)\n");
        return;
    }
    int64_t equal = 0, total = 0;
    for (size_t s = 0; s < sizeof SHAPES / sizeof *SHAPES; s++)
        for (int tr = 0; tr < 4; tr++) {
            int64_t M = SHAPES[s][0], N = SHAPES[s][1], K = SHAPES[s][2];
            int ta = tr & 1, tb = tr >> 1;
            float *A = malloc(sizeof(float) * M * K), *B = malloc(sizeof(float) * K * N);
            float *c0 = malloc(sizeof(float) * M * N), *c[4];
            fill(A, M * K, 100 + s, 3.0f), fill(B, K * N, 200 + s, 0.5f), fill(c0, M * N, 300 + s, 10.0f);
            if (s == 3) A[0] = 1e30f, A[1] = -1e-39f, B[0] = 3.0e38f; /* overflow to inf, a subnormal factor */
            for (int i = 0; i < 4; i++) c[i] = malloc(sizeof(float) * M * N);
            products(c, amx, A, B, c0, M, N, K, ta, tb);
            for (int64_t i = 0; i < M * N; i++) equal += !memcmp(c[1] + i, c[2] + i, sizeof(float));
            total += M * N;
            int ok = within_bound(c[2], c[0], c0, A, B, M, N, K, ta, tb) && !memcmp(c[2], c[3], sizeof(float) * M * N);
            free(A), free(B), free(c0);
            for (int i = 0; i < 4; i++) free(c[i]);
            CHECKF(ok, "AMX at M %lld N %lld K %lld ta %d tb %d: outside the bound, or 1 and 2 threads differ",
                   (long long)M, (long long)N, (long long)K, ta, tb);
        }
    printf("  %lld of %lld outputs equal to the pseudo-code's order bit for bit\n", (long long)equal, (long long)total);
}
