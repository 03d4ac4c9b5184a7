/* Memory of GPT training and the time to save it, as tformer train does it:
 * steps of forward, backward, clipping and AdamW on random batches, then
 * checkpoint.safetensors (weights + AdamW state) and the Hugging Face folder
 * (config.json + model.safetensors). Prints "key value" lines:
 *   params              parameter count P
 *   activations_bytes   the step context's arena after a step (activations,
 *                       their gradients and the tape's tensors)
 *   hwm_*_bytes         peak RSS (VmHWM) after the model, the first step, the
 *                       last step and the saves
 *   save_*_s            seconds to write each file (fsync included)
 *   [TFORMER_THREADS=N] bench_memory LAYERS HEADS WIDTH CONTEXT BATCH VOCAB STEPS OUT_DIR */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_util.h"
#include "tformer.h"

/* A /proc/self/status field in bytes ("VmHWM", "VmRSS"), or -1. */
static long long status_bytes(const char *field) {
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long long kb = -1;
    size_t n = strlen(field);
    while (f && fgets(line, sizeof line, f))
        if (!strncmp(line, field, n) && line[n] == ':') kb = atoll(line + n + 1);
    if (f) fclose(f);
    return kb < 0 ? -1 : kb * 1024;
}

/* One training step as the trainer takes it (accumulation 1). */
static int step(tf_ctx *ctx, tf_gpt *m, tf_optim *o, int B, int T, int V, int s) {
    tf_params_zero_grad(m->params);
    tf_ctx_reset(ctx);
    tf_ctx_set_training(ctx, 1);
    int64_t sh[2] = {B, T}; /* (B,T) ids and next ids */
    tf_tensor *x = tf_tensor_new(ctx, TF_DTYPE_I32, 2, sh, 0), *y = tf_tensor_new(ctx, TF_DTYPE_I32, 2, sh, 0);
    if (!x || !y) return -1;
    for (int i = 0; i < B * T; i++) tf_i32(x)[i] = (i * 31 + s * 7 + 1) % V, tf_i32(y)[i] = (i * 17 + s) % V;
    tf_tensor *loss = tf_gpt_forward(ctx, m, x, y, NULL);
    if (!loss || tf_backward(ctx, loss, NULL)) return -1;
    tf_clip_grad_norm(m->params, 1.0);
    tf_optim_step(o, 1e-4f);
    return 0;
}

/* checkpoint.safetensors as the trainer writes it (less its metadata). */
static int save_checkpoint(const tf_gpt *m, const tf_optim *o, const char *path) {
    tf_st_writer *w = tf_st_writer_new();
    int rc = w ? tf_st_writer_set_metadata(w, "tformer_step", "10") : -1;
    for (int i = 0; !rc && i < tf_params_count(m->params); i++)
        rc = tf_st_writer_add(w, tf_params_name(m->params, i), tf_params_tensor(m->params, i));
    rc = rc || tf_optim_save(o, w) || tf_st_writer_save(w, path);
    tf_st_writer_free(w);
    return rc;
}

int main(int argc, char **argv) {
    if (argc != 9) {
        fprintf(stderr, "usage: bench_memory LAYERS HEADS WIDTH CONTEXT BATCH VOCAB STEPS OUT_DIR\n");
        return 2;
    }
    int L = atoi(argv[1]), H = atoi(argv[2]), C = atoi(argv[3]), T = atoi(argv[4]), B = atoi(argv[5]);
    int V = atoi(argv[6]), steps = atoi(argv[7]);
    const char *dir = argv[8], *threads = getenv("TFORMER_THREADS");
    tf_set_threads(threads ? atoi(threads) : 0);
    tf_gpt_config c = tf_gpt_config_default(V, T, L, H, C);
    tf_gpt *m = tf_gpt_new(&c, 1);
    tf_optim *o = m ? tf_adamw_new(m->params, (tf_adamw_config){0.9f, 0.99f, 1e-8f, 0.1f}) : NULL;
    tf_ctx *ctx = tf_ctx_new(1);
    if (!m || !o || !ctx) return fprintf(stderr, "bench_memory: %s\n", tf_error()), 1;
    long long P = 0;
    for (int i = 0; i < tf_params_count(m->params); i++) P += tf_numel(tf_params_tensor(m->params, i));
    printf("params %lld\nhwm_model_bytes %lld\n", P, status_bytes("VmHWM"));
    for (int s = 0; s < steps; s++) {
        if (step(ctx, m, o, B, T, V, s)) return fprintf(stderr, "bench_memory: step %d: %s\n", s, tf_error()), 1;
        if (s == 0) printf("hwm_first_step_bytes %lld\n", status_bytes("VmHWM"));
    }
    printf("activations_bytes %zu\nhwm_steps_bytes %lld\n", tf_arena_reserved(tf_ctx_arena(ctx), NULL),
           status_bytes("VmHWM"));
    char path[4096];
    snprintf(path, sizeof path, "%s/checkpoint.safetensors", dir);
    double t0 = bench_now();
    if (save_checkpoint(m, o, path)) return fprintf(stderr, "bench_memory: %s\n", tf_error()), 1;
    double t1 = bench_now();
    printf("save_checkpoint_s %.3f\nhwm_checkpoint_bytes %lld\n", t1 - t0, status_bytes("VmHWM"));
    if (tf_gpt_save(m, dir)) return fprintf(stderr, "bench_memory: %s\n", tf_error()), 1;
    printf("save_model_s %.3f\nhwm_model_saved_bytes %lld\n", bench_now() - t1, status_bytes("VmHWM"));
    tf_ctx_free(ctx);
    tf_optim_free(o);
    tf_gpt_free(m);
    return 0;
}
