/* Attention forward + backward of one kind at one length: median seconds of
 * RUNS runs and the process' peak resident memory (VmHWM).
 *   bench_attention_kinds KIND MODE N [RUNS]
 * KIND full | local | bigbird | nystrom; MODE op (q, k, v (1,8,N,64) through
 * the attention alone: tf_sdpa, tf_sparse_attention; Nystrom through its
 * multi-head attention layer, projections included, as the library has no
 * Nystrom op of its own) or layer (one pre-LN encoder block, d_model 512,
 * 8 heads, d_ff 2048, x (1,N,512)). Patterns: local window 64 (two-sided),
 * BigBird window 64 + 2 global tokens + 3 random blocks, blocks of 64;
 * Nystrom 64 landmarks (N a multiple of 64). Prints "seconds peak_kib". */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_util.h"
#include "tformer.h"

enum { H = 8, D = 64, E = H * D };

static tf_block_config config(const char *kind) {
    tf_block_config c = tf_block_config_default(E, H);
    c.norm_first = 1;
    tf_sparse_pattern p = {.block = 64, .window = 64, .dilation = 1};
    if (!strcmp(kind, "bigbird")) p.global_first = 2, p.random = 3, p.seed = 1;
    if (!strcmp(kind, "local") || !strcmp(kind, "bigbird")) c.self_attn.kind = TF_ATTN_SPARSE, c.self_attn.sparse = p;
    if (!strcmp(kind, "nystrom")) c.self_attn.kind = TF_ATTN_NYSTROM, c.self_attn.landmarks = 64;
    return c;
}

static const tf_block_name NAMES[] = {
    {TF_BP_QKV_W, "qkv.weight"}, {TF_BP_QKV_B, "qkv.bias"}, {TF_BP_OUT_W, "out.weight"}, {TF_BP_OUT_B, "out.bias"},
    {TF_BP_NORM_ATTN_W, "ln1.weight"}, {TF_BP_NORM_ATTN_B, "ln1.bias"}, {TF_BP_FF_IN_W, "ff1.weight"},
    {TF_BP_FF_IN_B, "ff1.bias"}, {TF_BP_FF_OUT_W, "ff2.weight"}, {TF_BP_FF_OUT_B, "ff2.bias"},
    {TF_BP_NORM_FF_W, "ln2.weight"}, {TF_BP_NORM_FF_B, "ln2.bias"}};

/* One forward + backward; the output, or NULL. */
static tf_tensor *step(tf_ctx *ctx, const char *kind, int layer, const tf_block *b, const tf_block_config *c,
                       int64_t N) {
    if (layer || !strcmp(kind, "nystrom")) {
        tf_tensor *x = tf_tensor_new(ctx, TF_DTYPE_F32, 3, (int64_t[]){1, N, E}, 1);
        if (!x) return NULL;
        tf_tensor_fill_normal(x, 1, 1.0f);
        return layer ? tf_block_forward(ctx, b, c, x, NULL) : tf_mha_forward(ctx, &b->self_attn, x, x, x, NULL, NULL);
    }
    int64_t sh[4] = {1, H, N, D};
    tf_tensor *q = tf_tensor_new(ctx, TF_DTYPE_F32, 4, sh, 1), *k = tf_tensor_new(ctx, TF_DTYPE_F32, 4, sh, 1);
    tf_tensor *v = tf_tensor_new(ctx, TF_DTYPE_F32, 4, sh, 1);
    if (!q || !k || !v) return NULL;
    tf_tensor_fill_normal(q, 1, 1.0f), tf_tensor_fill_normal(k, 2, 1.0f), tf_tensor_fill_normal(v, 3, 1.0f);
    if (!strcmp(kind, "full")) return tf_sdpa(ctx, q, k, v, NULL, 0, 0.125f);
    return tf_sparse_attention(ctx, q, k, v, NULL, &c->self_attn.sparse, 0.125f);
}

int main(int argc, char **argv) {
    if (argc < 4) return fprintf(stderr, "usage: bench_attention_kinds full|local|bigbird|nystrom op|layer N [RUNS]\n"), 2;
    const char *kind = argv[1];
    int layer = !strcmp(argv[2], "layer"), runs = argc > 4 ? atoi(argv[4]) : 3;
    int64_t N = atoll(argv[3]);
    runs = runs < 1 ? 1 : runs > 16 ? 16 : runs;
    const char *threads = getenv("TFORMER_THREADS");
    tf_set_threads(threads ? atoi(threads) : 0);
    tf_block_config c = config(kind);
    tf_params *ps = tf_params_new();
    tf_block b;
    tf_block_names names = {NAMES, (int)(sizeof NAMES / sizeof *NAMES)};
    if (tf_block_register(ps, "", &b, &c, &names, (tf_block_init){0.02f, 0.02f, 0}) || tf_params_init(ps, 1))
        return fprintf(stderr, "%s\n", tf_error()), 1;
    double t[16];
    tf_ctx *ctx = tf_ctx_new(1);
    for (int r = 0; r < runs; r++) {
        tf_ctx_reset(ctx);
        double t0 = bench_now();
        tf_tensor *y = step(ctx, kind, layer, &b, &c, N);
        if (!y || tf_backward(ctx, y, NULL)) return fprintf(stderr, "%s\n", tf_error()), 1;
        t[r] = bench_now() - t0;
    }
    printf("%.6f %ld\n", bench_median(t, runs), bench_peak_kib());
    tf_ctx_free(ctx);
    tf_params_free(ps);
    return 0;
}
