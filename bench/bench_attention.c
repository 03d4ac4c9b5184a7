/* Fused attention forward + backward of tformer: median seconds of R runs and
 * the process' peak resident memory.  bench_attention B H D N RUNS CAUSAL
 * prints "seconds peak_kib". */
#include <stdio.h>
#include <stdlib.h>

#include "bench_util.h"
#include "tformer.h"

int main(int argc, char **argv) {
    if (argc < 7) return fprintf(stderr, "usage: bench_attention B H D N RUNS CAUSAL\n"), 2;
    int64_t B = atoll(argv[1]), H = atoll(argv[2]), D = atoll(argv[3]), N = atoll(argv[4]);
    int runs = atoi(argv[5]), causal = atoi(argv[6]);
    const char *threads = getenv("TFORMER_THREADS");
    tf_set_threads(threads ? atoi(threads) : 0);
    double t[16];
    tf_ctx *ctx = tf_ctx_new(1);
    for (int r = 0; r < runs && r < 16; r++) {
        tf_ctx_reset(ctx);
        int64_t sh[4] = {B, H, N, D};
        tf_tensor *q = tf_tensor_new(ctx, TF_DTYPE_F32, 4, sh, 1), *k = tf_tensor_new(ctx, TF_DTYPE_F32, 4, sh, 1);
        tf_tensor *v = tf_tensor_new(ctx, TF_DTYPE_F32, 4, sh, 1), *g = tf_tensor_new(ctx, TF_DTYPE_F32, 4, sh, 0);
        if (!q || !k || !v || !g) return fprintf(stderr, "%s\n", tf_error()), 1;
        tf_tensor_fill_normal(q, 1, 1.0f), tf_tensor_fill_normal(k, 2, 1.0f), tf_tensor_fill_normal(v, 3, 1.0f);
        tf_tensor_fill_normal(g, 4, 1.0f);
        double t0 = bench_now();
        tf_tensor *y = tf_sdpa(ctx, q, k, v, NULL, causal, 0.125f);
        if (!y || tf_backward(ctx, y, g)) return fprintf(stderr, "%s\n", tf_error()), 1;
        t[r] = bench_now() - t0;
    }
    double median = bench_median(t, runs);
    printf("%.6f %ld\n", median, bench_peak_kib());
    tf_ctx_free(ctx);
    return 0;
}
