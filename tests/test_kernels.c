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
