/* Swin against Hugging Face transformers (tests/ref/gen_swin_fixtures.py):
 * every case of tests/fixtures_swin through `tformer hf-run` (SwinModel,
 * SwinForImageClassification) to 1e-5; a perturbed weight, a wrong shift
 * and a transposed relative-position index fail the comparison; the loss's
 * gradients against PyTorch's; tformer's folders round-trip (and, with
 * TFORMER_EXPORT_DIR, are written for transformers to load: make
 * swin-conformance); bad configurations and inputs are clear errors. */
#include <stdlib.h>
#include <string.h>

#include "test.h"

#define TOL 1e-5
#define SWIN_DIR "tests/fixtures_swin"
#define CLS_CASE SWIN_DIR "/cls_grey28_p2_w7_labels"

TEST(swin_hf_run_matches_transformers) {
    const char *dir = test_fixture_dir_or(SWIN_DIR);
    int cases;
    double worst;
    int failed = test_hf_run_dir(dir, TOL, NULL, NULL, &cases, &worst);
    printf("    %d Swin cases, %d failed, worst max |diff| %.2e\n", cases, failed, worst);
    CHECKF(cases > 0 && failed == 0, "%d of %d cases failed (%s)", failed, cases, dir);
}

/* One element of each of these tensors moved by 1e-3 fails the tolerance.
 * (A single entry of a bias table moves these saturated softmaxes by about
 * 1e-6: swin_shift_and_bias_index_matter checks the tables as a whole.) */
TEST(swin_perturbed_weight_fails_the_comparison) {
    static const test_weight W[] = {
        {"swin.embeddings.patch_embeddings.projection.weight", 3}, {"swin.embeddings.norm.bias", 1},
        {"swin.encoder.layers.0.blocks.0.attention.self.value.weight", 5},
        {"swin.encoder.layers.0.downsample.reduction.weight", 9}, {"swin.encoder.layers.0.downsample.norm.weight", 2},
        {"swin.encoder.layers.1.blocks.1.output.dense.bias", 1}, {"swin.layernorm.weight", 3}, {"classifier.bias", 1}};
    const int n = (int)(sizeof W / sizeof *W);
    double same, least;
    int missed = test_hf_perturbed(CLS_CASE, W, n, TOL, &same, &least);
    printf("    unchanged copy %.2e; one element + 1e-3 of each of %d tensors: %.2e or more\n", same, n, least);
    CHECK(same >= 0 && same <= TOL);
    CHECKF(missed == 0, "%d perturbed tensors went unnoticed", missed);
}

/* ---------------------------------------------------------------- the geometry matters */

/* max |diff| of case dir's logits / last_hidden_state against expected, after edit(m). */
static double edited_case(const char *dir, void (*edit)(tf_swin *m)) {
    char p[1300];
    snprintf(p, sizeof p, "%s/input.safetensors", dir);
    tf_st_file *in = tf_st_open(p);
    snprintf(p, sizeof p, "%s/expected.safetensors", dir);
    tf_st_file *ex = tf_st_open(p);
    tf_swin *m = in && ex ? tf_swin_load(dir) : NULL;
    tf_ctx *ctx = tf_ctx_new(0);
    tf_arena *a = tf_arena_new(0);
    double d = -1;
    if (m) {
        edit(m);
        tf_swin_outputs o;
        tf_swin_inputs x = {.pixel_values = test_st_tensor(in, "pixel_values", a)};
        int cls = m->cfg.head == TF_SWIN_IMAGE_CLS;
        tf_tensor *want = test_st_tensor(ex, cls ? "logits" : "last_hidden_state", a);
        if (want && !tf_swin_run(ctx, m, &x, &o)) {
            tf_tensor *got = cls ? o.logits : o.last_hidden_state;
            d = tf_numel(got) == tf_numel(want) ? test_max_abs_diff(tf_f32(got), tf_f32(want), tf_numel(want)) : -1;
        }
    }
    tf_arena_free(a), tf_ctx_free(ctx), tf_swin_free(m), tf_st_close(in), tf_st_close(ex);
    return d;
}

static void unchanged(tf_swin *m) { (void)m; }
static void no_shift(tf_swin *m) { m->stage[0].shift = 0; }
static void shift_one_less(tf_swin *m) { m->stage[0].shift -= 1; }
/* Every table read as if the index swapped dy and dx: the (2w-1)x(2w-1) grid of rows transposed. */
static void transposed_index(tf_swin *m) {
    for (int s = 0; s < m->n_stage; s++) {
        const tf_swin_stage *st = &m->stage[s];
        int64_t k = 2 * st->window - 1, H = st->n_head;
        for (int j = 0; j < st->depth; j++) {
            float *t = tf_f32(st->rel_table[j]);
            for (int64_t y = 0; y < k; y++)
                for (int64_t x = y + 1; x < k; x++)
                    for (int64_t h = 0; h < H; h++) {
                        float v = t[(y * k + x) * H + h];
                        t[(y * k + x) * H + h] = t[(x * k + y) * H + h], t[(x * k + y) * H + h] = v;
                    }
        }
    }
}

TEST(swin_shift_and_bias_index_matter) {
    double same = edited_case(CLS_CASE, unchanged), a = edited_case(CLS_CASE, no_shift);
    double b = edited_case(CLS_CASE, shift_one_less), c = edited_case(CLS_CASE, transposed_index);
    printf("    as loaded %.2e; unshifted %.2e; shift 2 instead of 3 %.2e; bias index dy<->dx %.2e\n", same, a, b, c);
    CHECK(same >= 0 && same <= TOL);
    CHECK(a > 100 * TOL && b > 100 * TOL && c > 100 * TOL);
}

/* ---------------------------------------------------------------- gradients against PyTorch */

static tf_tensor *swin_loss(tf_ctx *ctx, const void *model, tf_tensor *pixels, tf_tensor *labels) {
    tf_swin_outputs o;
    return tf_swin_run(ctx, model, &(tf_swin_inputs){.pixel_values = pixels, .labels = labels}, &o) ? NULL : o.loss;
}

/* The loss's gradient with respect to the pixels and every parameter (the
 * padding, the windows, shifts and masks, the bias tables, patch merging)
 * against transformers' in float64: relative L2 error per tensor. */
TEST(swin_gradients_match_pytorch) {
    static const char *const CASES[] = {CLS_CASE, SWIN_DIR "/cls_rgb15_p2_w3_pad", SWIN_DIR "/cls_grey32_p2_w4_3stages"};
    double worst = 0;
    int n = 0;
    for (int i = 0; i < 3; i++) {
        tf_swin *m = tf_swin_load(CASES[i]);
        double e = m ? test_gradient_case(CASES[i], m, m->params, swin_loss, &n) : -1;
        tf_swin_free(m);
        CHECKF(e >= 0 && e <= 1e-4, "%s: relative gradient error %g (%s)", CASES[i], e, tf_error());
        if (e > worst) worst = e;
    }
    printf("    3 cases, pixels and every parameter (%d tensors in the last): worst relative error %.2e\n", n, worst);
}

/* ---------------------------------------------------------------- tformer's folders */

/* Configurations tformer writes: grey and RGB, padding, clamped and shifted windows, both heads. */
static tf_swin_config export_config(int k) {
    tf_swin_config c = tf_swin_config_default();
    c.image_size = k % 2 ? 15 : 28, c.patch_size = k % 2 ? 2 : 4, c.channels = k % 2 ? 3 : 1;
    c.d_model = 6, c.window = k % 2 ? 3 : 4, c.mlp_ratio = 2.0f, c.n_labels = 3 + k;
    snprintf(c.depths, sizeof c.depths, "%s", k % 2 ? "2,1" : "2,2");
    snprintf(c.heads, sizeof c.heads, "%s", k % 2 ? "3,3" : "2,4");
    c.head = k % 2 ? TF_SWIN_BODY : TF_SWIN_IMAGE_CLS, c.qkv_bias = k != 2;
    c.activation = (tf_activation)(k % 4), c.norm_eps = k ? 1e-6f : 1e-5f;
    return c;
}

/* max |diff| of hf-run on dir against the library's own outputs of m (the same file layout). */
static double folder_vs_model(const tf_swin *m, const char *dir, const char *in, const char *tmp) {
    char out[1300];
    snprintf(out, sizeof out, "%s/a.safetensors", tmp);
    if (tf_hf_run(dir, in, out, NULL)) return -1;
    tf_ctx *ctx = tf_ctx_new(0);
    tf_arena *ar = tf_arena_new(0);
    tf_st_file *f = tf_st_open(in), *a = tf_st_open(out);
    tf_swin_outputs o;
    tf_swin_inputs x = {.pixel_values = f ? test_st_tensor(f, "pixel_values", ar) : NULL};
    double d = -1;
    int cls = m->cfg.head == TF_SWIN_IMAGE_CLS;
    tf_tensor *got = a ? test_st_tensor(a, cls ? "logits" : "last_hidden_state", ar) : NULL;
    if (got && x.pixel_values && !tf_swin_run(ctx, m, &x, &o)) {
        tf_tensor *want = cls ? o.logits : o.last_hidden_state;
        d = tf_numel(got) == tf_numel(want) ? test_max_abs_diff(tf_f32(got), tf_f32(want), tf_numel(want)) : -1;
        if (cls && !tf_st_find(a, "loss")) d = -1;
    }
    tf_st_close(f), tf_st_close(a), tf_arena_free(ar), tf_ctx_free(ctx);
    return d;
}

/* A tformer model saved and loaded again gives the same outputs and labels;
 * with TFORMER_EXPORT_DIR the folders and inputs are left there for
 * transformers (tests/ref/gen_swin_fixtures.py --expected-for). */
TEST(swin_folders_round_trip) {
    const char *export = getenv("TFORMER_EXPORT_DIR");
    char tmp[] = "/tmp/tformer_swinx_XXXXXX", dir[1200], in[1300];
    CHECK(mkdtemp(tmp) != NULL);
    for (int k = 0; k < 4; k++) {
        tf_swin_config c = export_config(k);
        tf_swin *m = tf_swin_new(&c, 7 + (uint64_t)k);
        CHECK(m != NULL);
        test_randomize_params(m->params, 100 * (uint64_t)k);
        const char *names[8] = {"t-shirt", "trouser", "pullover", "dress", "coat", "sandal", "shirt", "sneaker"};
        if (c.head == TF_SWIN_IMAGE_CLS) CHECK(tf_swin_set_labels(m, names, c.n_labels) == 0);
        snprintf(dir, sizeof dir, "%s/swin_export_%d", export ? export : tmp, k);
        snprintf(in, sizeof in, "%s/input.safetensors", dir);
        CHECK(tf_swin_save(m, dir) == 0 &&
              test_write_image_input(in, 2, c.channels, c.image_size, c.n_labels, c.head == TF_SWIN_IMAGE_CLS) == 0);
        tf_swin *back = tf_swin_load(dir);
        char b1[32], b2[32];
        CHECK(back != NULL && !strcmp(back->cfg.depths, c.depths) && !strcmp(back->cfg.heads, c.heads) &&
              back->cfg.qkv_bias == c.qkv_bias && !strcmp(tf_swin_label(back, 2, b1, sizeof b1), tf_swin_label(m, 2, b2, sizeof b2)));
        tf_swin_free(back);
        double d = folder_vs_model(m, dir, in, tmp);
        CHECKF(d == 0, "case %d: the loaded folder's outputs differ from the model's (%g)", k, d);
        tf_swin_free(m);
    }
    test_rm_rf(tmp);
}

/* ---------------------------------------------------------------- bad configurations and inputs */

TEST(swin_bad_config_is_a_clear_error) {
    static const struct {
        const char *depths, *heads;
        int image, patch, d_model;
        const char *expect;
    } BAD[] = {
        {"2,x", "2,4", 28, 2, 8, "depths \"2,x\""},         {"2,2", "2", 28, 2, 8, "heads \"2\" 1"},
        {"2,2,", "2,4", 28, 2, 8, "trailing comma"},         {"", "2", 28, 2, 8, "depths: empty"},
        {"2,2", "3,3", 28, 2, 8, "stage 0: width 8"},        {"2", "2", 3, 4, 8, "patch_size 4 is larger than image_size 3"},
        {"1,1,1,1,1,1,1,1,1", "1,1,1,1,1,1,1,1,1", 28, 2, 8, "at most 8 stages"},
    };
    for (size_t i = 0; i < sizeof BAD / sizeof *BAD; i++) {
        tf_swin_config c = tf_swin_config_default();
        snprintf(c.depths, sizeof c.depths, "%s", BAD[i].depths), snprintf(c.heads, sizeof c.heads, "%s", BAD[i].heads);
        c.image_size = BAD[i].image, c.patch_size = BAD[i].patch, c.d_model = BAD[i].d_model;
        tf_swin *m = tf_swin_new(&c, 1);
        CHECKF(!m && strstr(tf_error(), BAD[i].expect), "case %zu: %s", i, m ? "accepted" : tf_error());
        tf_swin_free(m);
    }
}

#define PIX(c, h, w) {"pixel_values", TF_ST_F32, 4, {2, c, h, w}, 0.5f}
static const test_bad_case BAD[] = {
    {"RGB to a grey model", NULL, NULL, NULL, NULL, {PIX(3, 28, 28)}, {"pixel_values (2,3,28,28)", "(B,1,28,28)"}},
    {"another image size", NULL, NULL, NULL, NULL, {PIX(1, 27, 27)}, {"(2,1,27,27)", "image_size"}},
    {"label 10 of 10", NULL, NULL, NULL, NULL, {PIX(1, 28, 28), {"labels", TF_ST_I64, 1, {2}, 10}},
     {"'labels' holds 10 at [0]", "num_labels"}},
    {"masked patches", NULL, NULL, NULL, NULL, {PIX(1, 28, 28), {"bool_masked_pos", TF_ST_BOOL, 2, {2, 196}, 0}},
     {"'bool_masked_pos'", "not supported by hf-run"}},
    {"depths not a list", NULL, "\"depths\": [", "\"depths\": 2, \"x\": [", NULL, {PIX(1, 28, 28)},
     {"config.json", "\"depths\" must be an array"}},
    {"fewer heads than stages", NULL, "\"num_heads\": [", "\"num_heads\": [2], \"x\": [", NULL, {PIX(1, 28, 28)},
     {"config.json", "heads \"2\" 1"}},
    {"absolute positions", NULL, "\"use_absolute_embeddings\": false", "\"use_absolute_embeddings\": true", NULL,
     {PIX(1, 28, 28)}, {"config.json", "use_absolute_embeddings"}},
    {"bias table of another window", NULL, "\"window_size\": 7", "\"window_size\": 6", NULL, {PIX(1, 28, 28)},
     {"model.safetensors", "relative_position_bias_table"}},
    /* transformers reads num_labels 1 as regression (mean squared error), which tformer does not compute */
    {"num_labels 1", NULL, "\"image_size\"", "\"num_labels\": 1, \"image_size\"", NULL,
     {PIX(1, 28, 28), {"labels", TF_ST_I64, 1, {2}, 0}}, {"config.json", "num_labels 1 without problem_type"}},
};

TEST(swin_hf_run_bad_input_is_a_clear_error) {
    const size_t n = sizeof BAD / sizeof BAD[0];
    int bad = test_hf_run_bad_cases(BAD, n, CLS_CASE, "SWIN_VERBOSE");
    CHECKF(bad == 0, "%d of %zu bad inputs were not a clear error", bad, n);
}

/* transformers reads the stored relative_position_index: a folder whose index
 * is not the standard one is refused (an unchanged copy loads). */
TEST(swin_changed_relative_position_index_is_refused) {
    char tmp[] = "/tmp/tformer_swini_XXXXXX";
    const char *name = "swin.encoder.layers.0.blocks.1.attention.self.relative_position_index";
    CHECK(mkdtemp(tmp) != NULL);
    CHECK(test_copy_case(CLS_CASE, tmp, NULL, NULL, NULL, 0, 0, NULL) == 0);
    tf_swin *m = tf_swin_load(tmp);
    CHECKF(m != NULL, "%s", tf_error());
    tf_swin_free(m);
    CHECK(test_copy_case(CLS_CASE, tmp, NULL, NULL, name, 5, 1.0f, NULL) == 0);
    m = tf_swin_load(tmp);
    CHECKF(!m && strstr(tf_error(), "is not the relative position index of a 7x7 window") && strstr(tf_error(), name),
           "%s", m ? "loaded" : tf_error());
    tf_swin_free(m);
    test_rm_rf(tmp);
}
