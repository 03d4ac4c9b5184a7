/* Steps per second of a continual encoder: step mode (tf_continual_step) against
 * recomputing the regular network on each window (tf_continual_forward).
 * bench_continual D H F L N STEPS [step|window] prints "step_per_s window_per_s"
 * (each mode at least STEPS times and at least MIN_S seconds)
 * (0 for the mode left out: profile or count instructions of one mode alone). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_util.h"
#include "tformer.h"

#define MIN_S 1.0 /* seconds each mode runs at least */

int main(int argc, char **argv) {
    if (argc < 7) return fprintf(stderr, "usage: bench_continual D H F L N STEPS [step|window]\n"), 2;
    tf_continual_config c;
    tf_fields f = {tf_continual_config_fields(), &c};
    if (tf_fields_defaults(&f, 1)) return fprintf(stderr, "%s\n", tf_error()), 1;
    c.d_model = atoi(argv[1]), c.n_head = atoi(argv[2]), c.d_ff = atoi(argv[3]), c.n_layer = atoi(argv[4]);
    c.window = c.pos_len = atoi(argv[5]);
    int steps = atoi(argv[6]), E = c.d_model, n = c.window;
    const char *mode = argc > 7 ? argv[7] : "both";
    int do_step = strcmp(mode, "window") != 0, do_window = strcmp(mode, "step") != 0;
    const char *threads = getenv("TFORMER_THREADS");
    tf_set_threads(threads ? atoi(threads) : 1);
    tf_continual e;
    tf_params *ps = tf_params_new();
    if (tf_continual_register(ps, "", &e, &c) || tf_params_init(ps, 1)) return fprintf(stderr, "%s\n", tf_error()), 1;
    tf_ctx *ctx = tf_ctx_new(1);
    tf_ctx_set_grad(ctx, 0);
    tf_continual_state *s = tf_continual_state_new(&e, 1);
    float *xs = malloc((size_t)(n + steps) * E * sizeof *xs);
    if (!s || !xs) return fprintf(stderr, "%s\n", tf_error()), 1;
    for (long i = 0; i < (long)(n + steps) * E; i++) xs[i] = (float)((i * 2654435761u % 1000) / 500.0 - 1.0);
    double t0 = 0.0, step_rate = 0.0, window_rate = 0.0;
    /* each mode runs STEPS times and on (cycling through the inputs) until MIN_S
     * seconds have passed: a fast mode's rate is not its start-up */
    long done = 0;
    for (long t = 0; do_step && (t < n + steps || bench_now() - t0 < MIN_S); t++, tf_ctx_reset(ctx)) {
        if (t == n - 1) t0 = bench_now(); /* the first n-1 steps fill the window, untimed */
        tf_tensor *x = tf_tensor_new(ctx, TF_DTYPE_F32, 2, (int64_t[]){1, E}, 0), *out;
        for (int i = 0; i < E; i++) tf_f32(x)[i] = xs[(size_t)(t % (n + steps)) * E + i];
        if (tf_continual_step(ctx, s, x, &out) < 0) return fprintf(stderr, "%s\n", tf_error()), 1;
        done += t >= n - 1;
    }
    if (do_step) step_rate = done / (bench_now() - t0);
    t0 = bench_now(), done = 0;
    for (long t = 0; do_window && (t < steps || bench_now() - t0 < MIN_S); t++, tf_ctx_reset(ctx), done++) {
        tf_tensor *w = tf_tensor_new(ctx, TF_DTYPE_F32, 3, (int64_t[]){1, n, E}, 0);
        for (int i = 0; i < n * E; i++) tf_f32(w)[i] = xs[(size_t)(t % steps) * E + i];
        if (!tf_continual_forward(ctx, &e, w, t)) return fprintf(stderr, "%s\n", tf_error()), 1;
    }
    if (do_window) window_rate = done / (bench_now() - t0);
    printf("%.3f %.3f\n", step_rate, window_rate);
    tf_continual_state_free(s), tf_ctx_free(ctx), free(xs), tf_continual_free(&e), tf_params_free(ps);
    return 0;
}
