/* ViT against PyTorch and Hugging Face transformers (tests/ref/gen_vit_fixtures.py):
 * the patch-embedding op against Conv2d(stride=P) with its gradients; every
 * model case of tests/fixtures_vit through `tformer hf-run` (ViTModel,
 * ViTForImageClassification) to 1e-5; a perturbed weight fails the
 * comparison; tformer's folders round-trip (and, with TFORMER_EXPORT_DIR,
 * are written for transformers to load: make vit-conformance). */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "test.h"

#define TOL 1e-5
#define VIT_DIR "tests/fixtures_vit"

static tf_tensor *load(const tf_st_file *f, const char *name, tf_arena *a) {
    const tf_st_entry *e = tf_st_find(f, name);
    return e ? tf_st_to_tensor(f, e, a) : NULL;
}

static double max_abs_diff(const float *a, const float *b, int64_t n) {
    double worst = 0;
    for (int64_t i = 0; i < n; i++) {
        double d = fabs((double)a[i] - b[i]);
        if (!(d <= worst)) worst = d;
    }
    return worst;
}

/* ---------------------------------------------------------------- the patch embedding */

static double patch_case(const char *dir) {
    char p[1200];
    snprintf(p, sizeof p, "%s/case.safetensors", dir);
    tf_st_file *f = tf_st_open(p);
    tf_arena *a = tf_arena_new(0);
    tf_ctx *ctx = tf_ctx_new(1);
    double worst = -1;
    tf_tensor *x = f ? load(f, "x", a) : NULL, *w = f ? load(f, "weight", a) : NULL, *b = f ? load(f, "bias", a) : NULL;
    tf_tensor *r = f ? load(f, "r", a) : NULL, *want = f ? load(f, "out", a) : NULL;
    if (x && w && b && r && want) {
        /* leaves of the context that track gradients, holding the file's values */
        tf_tensor *lx = tf_tensor_new(ctx, TF_DTYPE_F32, 4, x->shape, 1), *lw = tf_tensor_new(ctx, TF_DTYPE_F32, 4, w->shape, 1);
        tf_tensor *lb = tf_tensor_new(ctx, TF_DTYPE_F32, 1, b->shape, 1);
        memcpy(lx->data, x->data, (size_t)tf_numel(x) * 4), memcpy(lw->data, w->data, (size_t)tf_numel(w) * 4);
        memcpy(lb->data, b->data, (size_t)tf_numel(b) * 4);
        tf_tensor *y = tf_patch_embed(ctx, lx, lw, lb);
        if (y && tf_numel(y) == tf_numel(want) && tf_backward(ctx, y, r) == 0) {
            worst = max_abs_diff(tf_f32(y), tf_f32(want), tf_numel(y));
            const char *names[3] = {"grad_x", "grad_weight", "grad_bias"};
            tf_tensor *leaves[3] = {lx, lw, lb};
            for (int i = 0; i < 3; i++) {
                tf_tensor *g = load(f, names[i], a);
                double e = g ? test_rel_err(leaves[i]->grad, tf_f32(g), (long)tf_numel(g)) : INFINITY;
                if (!(e <= worst)) worst = e;
            }
        }
    }
    tf_ctx_free(ctx);
    tf_arena_free(a);
    tf_st_close(f);
    return worst;
}

/* Output to 1e-5 absolute, gradients to 1e-5 relative L2 error. */
TEST(vit_patch_embed_matches_pytorch) {
    static const char *const CASES[] = {"patch_embed_rgb_9x11_p4", "patch_embed_grey_28_p7", "patch_embed_p1"};
    double worst = 0;
    for (int i = 0; i < 3; i++) {
        char dir[256];
        snprintf(dir, sizeof dir, "%s/%s", VIT_DIR, CASES[i]);
        double e = patch_case(dir);
        CHECKF(e >= 0 && e <= TOL, "%s: error %g (%s)", CASES[i], e, tf_error());
        if (e > worst) worst = e;
    }
    printf("    3 Conv2d(stride=P) cases, worst error %.2e\n", worst);
}
