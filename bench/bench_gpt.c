/* GPT throughput of tformer: training steps (forward, backward, AdamW) on
 * random batches, and greedy generation. Prints "train_tokens_per_s" or
 * "generate_tokens_per_s" as a number on stdout (median of runs).
 *   bench_gpt train    LAYERS HEADS WIDTH CONTEXT BATCH VOCAB STEPS
 *   bench_gpt generate LAYERS HEADS WIDTH CONTEXT VOCAB NEW_TOKENS
 *   bench_gpt info     the BLAS and row kernels in use
 * TFORMER_QUANTIZE=int8: generation on int8 weights (tf_params_quantize).
 * TFORMER_PRECISION=bf16: training steps with bf16 matrix products. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_util.h"
#include "tformer.h"

static double train(tf_gpt *m, int B, int T, int V, int steps) {
    tf_optim *o = tf_adamw_new(m->params, (tf_adamw_config){0.9f, 0.99f, 1e-8f, 0.1f});
    tf_ctx *ctx = tf_ctx_new(1);
    tf_ctx_set_training(ctx, 1);
    const char *p = getenv("TFORMER_PRECISION");
    if (p && !strcmp(p, "bf16")) tf_ctx_set_precision(ctx, TF_PRECISION_BF16);
    double times[64];
    int n = steps < 64 ? steps : 64;
    for (int s = -3; s < n; s++) { /* three warm-up steps */
        tf_ctx_reset(ctx);
        int64_t sh[2] = {B, T};
        tf_tensor *x = tf_tensor_new(ctx, TF_DTYPE_I32, 2, sh, 0), *y = tf_tensor_new(ctx, TF_DTYPE_I32, 2, sh, 0);
        for (int i = 0; i < B * T; i++) tf_i32(x)[i] = (i * 31 + (s + 3) * 7 + 1) % V, tf_i32(y)[i] = (i * 17 + s + 3) % V;
        double t0 = bench_now();
        tf_params_zero_grad(m->params);
        tf_tensor *loss = tf_gpt_forward(ctx, m, x, y, NULL);
        tf_backward(ctx, loss, NULL);
        tf_clip_grad_norm(m->params, 1.0);
        tf_optim_step(o, 1e-3f);
        if (s >= 0) times[s] = bench_now() - t0;
    }
    double median = bench_median(times, n);
    tf_ctx_free(ctx);
    tf_optim_free(o);
    return (double)B * T / median;
}

static double generate(tf_gpt *m, int V, int new_tokens) {
    tf_generate_opts o = tf_generate_opts_default();
    o.max_tokens = new_tokens, o.temperature = 0;
    int32_t prompt[1] = {1 % V};
    double times[5];
    for (int r = 0; r < 5; r++) {
        tf_ids out = {0};
        double t0 = bench_now();
        tf_gpt_generate(m, prompt, 1, &o, NULL, NULL, &out, NULL);
        times[r] = bench_now() - t0;
        tf_ids_free(&out);
    }
    return new_tokens / bench_median(times, 5);
}

int main(int argc, char **argv) {
    if (argc == 2 && !strcmp(argv[1], "info")) /* what runs the products (TFORMER_BLAS, OPENBLAS_CORETYPE) */
        return printf("%s; kernels %s\n", tf_blas_info(), tf_kernels_info()), 0;
    if (argc < 8) {
        fprintf(stderr, "usage: bench_gpt train L H C T B V STEPS | generate L H C T V NEW | info\n");
        return 2;
    }
    const char *threads = getenv("TFORMER_THREADS");
    tf_set_threads(threads ? atoi(threads) : 0);
    int L = atoi(argv[2]), H = atoi(argv[3]), C = atoi(argv[4]), T = atoi(argv[5]);
    int is_train = !strcmp(argv[1], "train");
    int V = atoi(argv[is_train ? 7 : 6]);
    tf_gpt_config c = tf_gpt_config_default(V, T, L, H, C);
    tf_gpt *m = tf_gpt_new(&c, 1);
    if (!m) return fprintf(stderr, "%s\n", tf_error()), 1;
    const char *q = getenv("TFORMER_QUANTIZE");
    if (q && !strcmp(q, "int8") && tf_params_quantize(m->params, TF_QUANT_INT8))
        return fprintf(stderr, "%s\n", tf_error()), 1;
    printf("%.1f\n", is_train ? train(m, atoi(argv[6]), T, V, atoi(argv[8])) : generate(m, V, atoi(argv[7])));
    tf_gpt_free(m);
    return 0;
}
