/* Kernel variants against the portable reference kernel, on odd sizes. */
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#include "test.h"

TEST(kernel_gemm_variants_match_portable) {
    static const int64_t sizes[][3] = {{1, 1, 1}, {3, 5, 7}, {33, 65, 17}, {97, 129, 255}, {200, 3, 301}};
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++)
        for (int ta = 0; ta < 2; ta++)
            for (int tb = 0; tb < 2; tb++) {
                int64_t M = sizes[s][0], N = sizes[s][1], K = sizes[s][2];
                tf_arena *a = tf_arena_new(0);
                tf_tensor *A = tf_tensor_alloc(a, TF_DTYPE_F32, 1, (int64_t[]){M * K}, 0);
                tf_tensor *B = tf_tensor_alloc(a, TF_DTYPE_F32, 1, (int64_t[]){K * N}, 0);
                tf_tensor *C0 = tf_tensor_alloc(a, TF_DTYPE_F32, 1, (int64_t[]){M * N}, 0);
                tf_tensor *C1 = tf_tensor_alloc(a, TF_DTYPE_F32, 1, (int64_t[]){M * N}, 0);
                tf_tensor_fill_normal(A, 1 + (uint64_t)s, 1.0f);
                tf_tensor_fill_normal(B, 2 + (uint64_t)s, 1.0f);
                tf_tensor_fill_normal(C0, 3, 1.0f); /* accumulation into existing values */
                memcpy(tf_f32(C1), tf_f32(C0), (size_t)(M * N) * sizeof(float));
                tf_gemm_acc(tf_f32(C0), tf_f32(A), tf_f32(B), M, N, K, ta, tb, TF_GEMM_PORTABLE);
                tf_gemm_acc(tf_f32(C1), tf_f32(A), tf_f32(B), M, N, K, ta, tb, TF_GEMM_BLAS);
                double err = test_rel_err(tf_f32(C1), tf_f32(C0), (long)(M * N));
                tf_arena_free(a);
                CHECKF(err < 1e-6, "gemm %lldx%lldx%lld ta=%d tb=%d: relative error %g", (long long)M,
                       (long long)N, (long long)K, ta, tb, err);
            }
}

/* Loss and every gradient of one GPT step (sizes above every threading threshold). */
static int gpt_step(tf_gpt *m, int threads, float *loss) {
    tf_set_threads(threads);
    tf_ctx *ctx = tf_ctx_new(3);
    tf_ctx_set_training(ctx, 1);
    int64_t sh[2] = {8, 64};
    tf_tensor *x = tf_tensor_new(ctx, TF_DTYPE_I32, 2, sh, 0), *y = tf_tensor_new(ctx, TF_DTYPE_I32, 2, sh, 0);
    for (int i = 0; i < 8 * 64; i++) tf_i32(x)[i] = (i * 13 + 5) % 65, tf_i32(y)[i] = (i * 7 + 1) % 65;
    tf_params_zero_grad(m->params);
    tf_tensor *l = tf_gpt_forward(ctx, m, x, y, NULL);
    int rc = !l || tf_backward(ctx, l, NULL);
    if (!rc) *loss = tf_f32(l)[0];
    tf_ctx_free(ctx);
    tf_set_threads(0);
    return rc;
}

TEST(kernel_results_do_not_depend_on_threads) {
    tf_gpt_config c = tf_gpt_config_default(65, 64, 2, 4, 128);
    c.dropout = 0.1f;
    tf_gpt *m = tf_gpt_new(&c, 11);
    CHECK(m != NULL);
    int n = tf_params_count(m->params);
    float **g1 = calloc((size_t)n, sizeof *g1), l1, l2;
    CHECK(gpt_step(m, 1, &l1) == 0);
    for (int i = 0; i < n; i++) {
        tf_tensor *p = tf_params_tensor(m->params, i);
        g1[i] = malloc((size_t)tf_numel(p) * sizeof(float));
        memcpy(g1[i], p->grad, (size_t)tf_numel(p) * sizeof(float));
    }
    CHECK(gpt_step(m, 2, &l2) == 0);
    CHECKF(l1 == l2, "loss %.9g on one thread, %.9g on two", l1, l2);
    for (int i = 0; i < n; i++) {
        tf_tensor *p = tf_params_tensor(m->params, i);
        CHECKF(!memcmp(g1[i], p->grad, (size_t)tf_numel(p) * sizeof(float)), "gradient of %s differs on two threads",
               tf_params_name(m->params, i));
        free(g1[i]);
    }
    free(g1);
    tf_gpt_free(m);
}
