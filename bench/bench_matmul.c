/* Matrix-heavy layers against the bare BLAS, and this CPU's peak.
 *   bench_matmul peak                 FMA-bound loop on every thread: GFLOP/s
 *   bench_matmul sgemm M K N          bare sgemm (the BLAS's own threads) of a
 *                                     linear layer's three products: GFLOP/s
 *   bench_matmul linear M K N         tformer's Linear forward+backward: GFLOP/s
 *   bench_matmul peak-bf16            vdpbf16ps-bound loop (AVX512-BF16): GFLOP/s
 *   bench_matmul peak-amx             tdpbf16ps-bound loop (AMX-BF16 tiles): GFLOP/s
 *   bench_matmul linear-bf16 M K N    the same Linear with bf16 products (AMX where
 *                                     the CPU has it; TFORMER_AMX=0: vdpbf16ps)
 *   bench_matmul peak-vnni            vpdpbusd-bound loop (AVX512-VNNI): int8 giga-ops/s
 *                                     (2 a byte multiply-add, as GFLOP/s counts)
 *   bench_matmul infer-int8 M K N     the same products on int8 copies (--precision
 *                                     int8, the inputs' quantisation included): G-ops/s
 *   bench_matmul infer M K N          inference products Y = X W^T of a Linear (a
 *                                     decoding step's few rows): the bare sgemm, then
 *                                     tformer's dense with TF_QUANT_F32 copies (the
 *                                     tile kernel): "sgemm G tformer G" in GFLOP/s
 * bench_matmul times the OpenBLAS that tformer loaded (the same library and
 * kernels); bench_sgemm_blis is linked against BLIS (sgemm only), so both
 * BLAS are timed the same way. */
#define _DEFAULT_SOURCE /* syscall(): Linux grants the AMX tile state on request */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <dlfcn.h>
#ifdef _OPENMP
#include <omp.h>
#endif
#include <immintrin.h>

#include "bench_util.h"
#ifdef BENCH_BLIS
#include <cblas.h>
static void blas_setup(int nt) { (void)nt; } /* Debian's serial BLIS */
#else
#include "tformer.h"
enum { CblasRowMajor = 101, CblasNoTrans = 111, CblasTrans = 112 };
static void (*cblas_sgemm)(int, int, int, int, int, int, float, const float *, int, const float *, int, float, float *,
                           int);
/* The very library tformer loaded, on nt threads of its own. */
static void blas_setup(int nt) {
    fprintf(stderr, "BLAS: %s\n", tf_blas_info());
    void *h = dlopen("libopenblas.so.0", RTLD_NOW | RTLD_NOLOAD);
    void (*set_threads)(int) = NULL;
    if (h) *(void **)&set_threads = dlsym(h, "openblas_set_num_threads");
    *(void **)&cblas_sgemm = h ? dlsym(h, "cblas_sgemm") : NULL;
    if (!cblas_sgemm || !set_threads) fprintf(stderr, "bench_matmul: tformer loaded no OpenBLAS\n"), exit(1);
    set_threads(nt);
}
#endif

static int threads(void) {
    const char *t = getenv("TFORMER_THREADS");
    int n = t ? atoi(t) : 0;
#ifdef _OPENMP
    if (n <= 0) n = omp_get_num_procs();
#else
    n = 1;
#endif
    return n;
}

/* 16 independent accumulators keep both FMA pipes busy: the CPU's peak. */
__attribute__((target("avx512f"))) static double fma_loop_512(long iters) {
    __m512 acc[16], m = _mm512_set1_ps(0.999f), a = _mm512_set1_ps(1e-3f);
    for (int i = 0; i < 16; i++) acc[i] = _mm512_set1_ps((float)i);
    for (long it = 0; it < iters; it++)
        for (int i = 0; i < 16; i++) acc[i] = _mm512_fmadd_ps(acc[i], m, a);
    float s[16];
    for (int i = 1; i < 16; i++) acc[0] = _mm512_add_ps(acc[0], acc[i]);
    _mm512_storeu_ps(s, acc[0]);
    return s[0] + (double)iters * 16 * 16 * 2; /* the sum keeps the loop alive */
}

__attribute__((target("avx2,fma"))) static double fma_loop_256(long iters) {
    __m256 acc[12], m = _mm256_set1_ps(0.999f), a = _mm256_set1_ps(1e-3f);
    for (int i = 0; i < 12; i++) acc[i] = _mm256_set1_ps((float)i);
    for (long it = 0; it < iters; it++)
        for (int i = 0; i < 12; i++) acc[i] = _mm256_fmadd_ps(acc[i], m, a);
    float s[8];
    for (int i = 1; i < 12; i++) acc[0] = _mm256_add_ps(acc[0], acc[i]);
    _mm256_storeu_ps(s, acc[0]);
    return s[0] + (double)iters * 12 * 8 * 2;
}

/* The same with vdpbf16ps: 16 lanes x 2 products x 2 flops an instruction. */
__attribute__((target("avx512f,avx512bf16"))) static double dpbf16_loop(long iters) {
    __m512 acc[16];
    __m512bh m = (__m512bh)_mm512_set1_epi32(0x3f803f80), a = (__m512bh)_mm512_set1_epi32(0x3a833a83);
    for (int i = 0; i < 16; i++) acc[i] = _mm512_set1_ps((float)i);
    for (long it = 0; it < iters; it++)
        for (int i = 0; i < 16; i++) acc[i] = _mm512_dpbf16_ps(acc[i], m, a);
    float s[16];
    for (int i = 1; i < 16; i++) acc[0] = _mm512_add_ps(acc[0], acc[i]);
    _mm512_storeu_ps(s, acc[0]);
    return s[0] + (double)iters * 16 * 16 * 4;
}

/* The same with vpdpbusd: 16 lanes x 4 byte products x 2 ops an instruction
 * (the int8 products' bound, in giga-ops: 2 per multiply-add as GFLOP/s). */
__attribute__((target("avx512f,avx512vnni"))) static double dpbusd_loop(long iters) {
    __m512i acc[16], m = _mm512_set1_epi8(3), a = _mm512_set1_epi8(-5);
    for (int i = 0; i < 16; i++) acc[i] = _mm512_set1_epi32(i);
    for (long it = 0; it < iters; it++)
        for (int i = 0; i < 16; i++) acc[i] = _mm512_dpbusd_epi32(acc[i], m, a);
    for (int i = 1; i < 16; i++) acc[0] = _mm512_add_epi32(acc[0], acc[i]);
    int s[16];
    _mm512_storeu_si512((void *)s, acc[0]);
    return (double)s[0] * 1e-30 + (double)iters * 16 * 16 * 4 * 2; /* the sum keeps the loop alive */
}

#if defined(__linux__) && defined(__x86_64__)
#include <sys/syscall.h>
#include <unistd.h>
/* The same with tdpbf16ps: four 16 x 16 float tiles, each += a 16 x 32 bf16
 * tile times a 32 x 16 one (16 x 16 x 32 x 2 flops an instruction). */
__attribute__((target("amx-tile,amx-bf16"))) static double amx_loop(long iters) {
    struct {
        unsigned char palette, start, reserved[14];
        unsigned short colsb[16];
        unsigned char rows[16];
    } cfg = {1, 0, {0}, {64, 64, 64, 64, 64, 64}, {16, 16, 16, 16, 16, 16}};
    static _Thread_local float c[16 * 16];
    static _Thread_local unsigned ab[16 * 16];
    for (int i = 0; i < 256; i++) ab[i] = 0x3a833a83u;
    _tile_loadconfig(&cfg);
    _tile_zero(0);
    _tile_zero(1);
    _tile_zero(2);
    _tile_zero(3);
    _tile_loadd(4, ab, 64);
    _tile_loadd(5, ab, 64);
    for (long it = 0; it < iters; it++) {
        _tile_dpbf16ps(0, 4, 5);
        _tile_dpbf16ps(1, 4, 5);
        _tile_dpbf16ps(2, 4, 5);
        _tile_dpbf16ps(3, 4, 5);
    }
    _tile_stored(0, c, 64);
    _tile_release();
    return c[0] * 0 + (double)iters * 4 * 16 * 16 * 32 * 2;
}
static int amx_granted(void) { return syscall(SYS_arch_prctl, 0x1023, 18) == 0; }
#else
static double amx_loop(long iters) { return 0 * iters; }
static int amx_granted(void) { return 0; }
#endif

/* loop: 0 FMA, 1 vdpbf16ps, 2 AMX-BF16 tiles, 3 vpdpbusd. */
static double peak(int nt, int loop) {
    int wide = __builtin_cpu_supports("avx512f");
    long iters = 20000000;
    double best = 0;
    for (int r = 0; r < 3; r++) {
        double t0 = bench_now(), flops = 0;
#pragma omp parallel for num_threads(nt) reduction(+ : flops)
        for (int t = 0; t < nt; t++)
            flops += loop == 3 ? dpbusd_loop(iters)
                     : loop == 2 ? amx_loop(iters / 8)
                     : loop      ? dpbf16_loop(iters)
                     : wide      ? fma_loop_512(iters)
                               : fma_loop_256(iters);
        double g = flops / (bench_now() - t0) / 1e9;
        if (g > best) best = g;
    }
    return best;
}

static float *randn(size_t n, unsigned seed) {
    float *p = malloc(n * sizeof *p);
    for (size_t i = 0; i < n; i++) seed = seed * 1664525u + 1013904223u, p[i] = (float)(seed >> 8) / 16777216.0f - 0.5f;
    return p;
}

/* Y (M,N) = X (M,K) W^T; dX (M,K) = dY W; dW (N,K) = dY^T X: 6 M K N flops. */
static double sgemm_linear(int M, int K, int N, int nt) {
    blas_setup(nt);
    float *X = randn((size_t)M * K, 1), *W = randn((size_t)N * K, 2), *dY = randn((size_t)M * N, 3);
    float *Y = calloc((size_t)M * N, 4), *dX = calloc((size_t)M * K, 4), *dW = calloc((size_t)N * K, 4);
    double t[9];
    for (int r = 0; r < 9; r++) {
        double t0 = bench_now();
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, M, N, K, 1, X, K, W, K, 0, Y, N);
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, M, K, N, 1, dY, N, W, K, 1, dX, K);
        cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, N, K, M, 1, dY, N, X, K, 1, dW, K);
        t[r] = bench_now() - t0;
    }
    free(X), free(W), free(dY), free(Y), free(dX), free(dW);
    return 6.0 * M * K * N / bench_median(t, 9) / 1e9;
}

#ifndef BENCH_BLIS
static double tformer_linear(int M, int K, int N, int nt, int bf16) {
    tf_set_threads(nt);
    tf_params *ps = tf_params_new();
    tf_linear lin;
    int64_t sw[2] = {N, K}, sb[1] = {N};
    if (tf_params_add(ps, "fc.weight", &lin.weight, 2, sw, 0.02f) || tf_params_add(ps, "fc.bias", &lin.bias, 1, sb, 0.02f) ||
        tf_params_init(ps, 1))
        return fprintf(stderr, "%s\n", tf_error()), 0;
    tf_ctx *ctx = tf_ctx_new(1);
    if (bf16) tf_ctx_set_precision(ctx, TF_PRECISION_BF16);
    double t[9];
    for (int r = 0; r < 9; r++) {
        tf_ctx_reset(ctx);
        int64_t sx[2] = {M, K}, sy[2] = {M, N};
        tf_tensor *x = tf_tensor_new(ctx, TF_DTYPE_F32, 2, sx, 1), *g = tf_tensor_new(ctx, TF_DTYPE_F32, 2, sy, 0);
        tf_tensor_fill_normal(x, 1, 1.0f), tf_tensor_fill_normal(g, 2, 1.0f);
        tf_params_zero_grad(ps);
        double t0 = bench_now();
        tf_tensor *y = tf_linear_forward(ctx, &lin, x);
        if (!y || tf_backward(ctx, y, g)) return fprintf(stderr, "%s\n", tf_error()), 0;
        t[r] = bench_now() - t0;
    }
    tf_ctx_free(ctx);
    tf_params_free(ps);
    return 6.0 * M * K * N / bench_median(t, 9) / 1e9;
}

/* Y (M,N) = X (M,K) W^T without gradients, 2 M K N flops, 20 products a
 * timing, on copies of kind (TF_QUANT_F32: the tile kernel; TF_QUANT_INT8:
 * the int8 product, its inputs' quantisation included). */
static double tformer_infer(int M, int K, int N, int nt, tf_quant_kind kind) {
    tf_set_threads(nt);
    tf_params *ps = tf_params_new();
    tf_linear lin;
    int64_t sw[2] = {N, K}, sb[1] = {N};
    if (tf_params_add(ps, "fc.weight", &lin.weight, 2, sw, 0.02f) || tf_params_add(ps, "fc.bias", &lin.bias, 1, sb, 0.02f) ||
        tf_params_init(ps, 1) || tf_params_quantize(ps, kind))
        return fprintf(stderr, "%s\n", tf_error()), 0;
    tf_ctx *ctx = tf_ctx_new(1);
    tf_ctx_set_grad(ctx, 0);
    double t[9];
    for (int r = 0; r < 9; r++) {
        tf_ctx_reset(ctx);
        int64_t sx[2] = {M, K};
        tf_tensor *x = tf_tensor_new(ctx, TF_DTYPE_F32, 2, sx, 0);
        tf_tensor_fill_normal(x, 1, 1.0f);
        double t0 = bench_now();
        for (int i = 0; i < 20; i++)
            if (!tf_linear_forward(ctx, &lin, x)) return fprintf(stderr, "%s\n", tf_error()), 0;
        t[r] = (bench_now() - t0) / 20;
    }
    tf_ctx_free(ctx);
    tf_params_free(ps);
    return 2.0 * M * K * N / bench_median(t, 9) / 1e9;
}

static double sgemm_infer(int M, int K, int N, int nt) {
    blas_setup(nt);
    float *X = randn((size_t)M * K, 1), *W = randn((size_t)N * K, 2), *Y = calloc((size_t)M * N, 4);
    double t[9];
    for (int r = 0; r < 9; r++) {
        double t0 = bench_now();
        for (int i = 0; i < 20; i++) cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, M, N, K, 1, X, K, W, K, 0, Y, N);
        t[r] = (bench_now() - t0) / 20;
    }
    free(X), free(W), free(Y);
    return 2.0 * M * K * N / bench_median(t, 9) / 1e9;
}
#endif

int main(int argc, char **argv) {
    int nt = threads();
    if (argc >= 2 && !strcmp(argv[1], "peak")) return printf("%.1f\n", peak(nt, 0)), 0;
    if (argc >= 2 && !strcmp(argv[1], "peak-bf16")) {
        if (!__builtin_cpu_supports("avx512bf16")) return fprintf(stderr, "bench_matmul: no AVX512-BF16 here\n"), 1;
        return printf("%.1f\n", peak(nt, 1)), 0;
    }
    if (argc >= 2 && !strcmp(argv[1], "peak-vnni")) {
        if (!__builtin_cpu_supports("avx512vnni")) return fprintf(stderr, "bench_matmul: no AVX512-VNNI here\n"), 1;
        return printf("%.1f\n", peak(nt, 3)), 0;
    }
    if (argc >= 2 && !strcmp(argv[1], "peak-amx")) {
        if (!__builtin_cpu_supports("avx512f") || !amx_granted())
            return fprintf(stderr, "bench_matmul: no AMX-BF16 tiles granted here\n"), 1;
        return printf("%.1f\n", peak(nt, 2)), 0;
    }
    if (argc < 5)
        return fprintf(stderr, "usage: bench_matmul peak | peak-bf16 | peak-vnni | peak-amx | sgemm M K N | linear M K N | "
                               "linear-bf16 M K N | infer M K N | infer-int8 M K N\n"), 2;
    int M = atoi(argv[2]), K = atoi(argv[3]), N = atoi(argv[4]);
    if (!strcmp(argv[1], "sgemm")) return printf("%.1f\n", sgemm_linear(M, K, N, nt)), 0;
#ifndef BENCH_BLIS
    if (!strcmp(argv[1], "linear")) return printf("%.1f\n", tformer_linear(M, K, N, nt, 0)), 0;
    if (!strcmp(argv[1], "linear-bf16")) return printf("%.1f\n", tformer_linear(M, K, N, nt, 1)), 0;
    if (!strcmp(argv[1], "infer")) {
        double b = sgemm_infer(M, K, N, nt);
        return printf("sgemm %.1f tformer %.1f\n", b, tformer_infer(M, K, N, nt, TF_QUANT_F32)), 0;
    }
    if (!strcmp(argv[1], "infer-int8")) return printf("%.1f\n", tformer_infer(M, K, N, nt, TF_QUANT_INT8)), 0;
#endif
    return fprintf(stderr, "bench_matmul: unknown mode '%s'\n", argv[1]), 2;
}
