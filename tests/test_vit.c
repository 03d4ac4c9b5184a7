/* ViT against PyTorch and Hugging Face transformers (tests/ref/gen_vit_fixtures.py):
 * the patch-embedding op against Conv2d(stride=P) with its gradients; every
 * model case of tests/fixtures_vit through `tformer hf-run` (ViTModel,
 * ViTForImageClassification) to 1e-5; a perturbed weight fails the
 * comparison; tformer's folders round-trip (and, with TFORMER_EXPORT_DIR,
 * are written for transformers to load: make vit-conformance). */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "test.h"

#define TOL 1e-5
#define VIT_DIR "tests/fixtures_vit"

/* ---------------------------------------------------------------- the patch embedding */

/* Output to 1e-5 absolute, gradients to 1e-5 relative L2 error. */
TEST(vit_patch_embed_matches_pytorch) {
    static const char *const CASES[] = {"patch_embed_rgb_9x11_p4", "patch_embed_grey_28_p7", "patch_embed_p1"};
    double worst = 0;
    for (int i = 0; i < 3; i++) {
        char dir[256];
        snprintf(dir, sizeof dir, "%s/%s", VIT_DIR, CASES[i]);
        double e = test_patch_case(dir);
        CHECKF(e >= 0 && e <= TOL, "%s: error %g (%s)", CASES[i], e, tf_error());
        if (e > worst) worst = e;
    }
    printf("    3 Conv2d(stride=P) cases, worst error %.2e\n", worst);
}

/* ---------------------------------------------------------------- hf-run against transformers */

TEST(vit_hf_run_matches_transformers) {
    const char *dir = test_fixture_dir_or(VIT_DIR);
    int cases;
    double worst;
    int failed = test_hf_run_dir(dir, TOL, NULL, NULL, &cases, &worst);
    printf("    %d ViT cases, %d failed, worst max |diff| %.2e\n", cases, failed, worst);
    CHECKF(cases > 0 && failed == 0, "%d of %d cases failed (%s)", failed, cases, dir);
}

/* ---------------------------------------------------------------- scratch folders */

#define CLS_CASE VIT_DIR "/cls_grey28_p4_labels"
#define BODY_CASE VIT_DIR "/model_rgb13_p4_leftover"

/* The comparison notices a changed weight: one element of each of these
 * tensors moved by 1e-3 fails the tolerance (an unchanged copy passes). */
TEST(vit_perturbed_weight_fails_the_comparison) {
    static const test_weight W[] = {
        {"vit.embeddings.patch_embeddings.projection.weight", 5}, {"vit.embeddings.patch_embeddings.projection.bias", 5},
        {"vit.embeddings.cls_token", 5}, {"vit.embeddings.position_embeddings", 5},
        {"vit.encoder.layer.1.attention.attention.key.weight", 5}, {"vit.encoder.layer.0.output.dense.bias", 5},
        {"vit.encoder.layer.1.layernorm_after.weight", 5}, {"vit.layernorm.bias", 5}, {"classifier.weight", 5}};
    const int n = (int)(sizeof W / sizeof *W);
    double same, least;
    int missed = test_hf_perturbed(CLS_CASE, W, n, TOL, &same, &least);
    printf("    unchanged copy %.2e; one element + 1e-3 of each of %d tensors: %.2e or more\n", same, n, least);
    CHECK(same >= 0 && same <= TOL);
    CHECKF(missed == 0, "%d perturbed tensors went unnoticed", missed);
}

/* ---------------------------------------------------------------- tformer's folders */

/* Configurations tformer writes: grey and RGB, odd patches, with and without
 * the head, the pooler, q/k/v biases, each activation. */
static tf_vit_config export_config(int k) {
    tf_vit_config c = tf_vit_config_default();
    c.image_size = k % 2 ? 12 : 28, c.patch_size = k % 2 ? 3 : 7, c.channels = k % 2 ? 3 : 1;
    c.d_model = 12, c.n_head = k % 3 + 1, c.n_layer = 1 + k % 2, c.d_ff = 20, c.n_labels = 4 + k;
    c.head = k % 2 ? TF_VIT_BODY : TF_VIT_IMAGE_CLS, c.pooler = k == 1, c.qkv_bias = k != 2;
    c.activation = (tf_activation)(k % 4), c.norm_eps = k ? 1e-6f : 1e-12f;
    return c;
}

/* A tformer model saved and loaded again gives the same outputs (and the
 * same labels); with TFORMER_EXPORT_DIR the folders and inputs are left
 * there for transformers (tests/ref/gen_vit_fixtures.py --expected-for). */
TEST(vit_folders_round_trip) {
    const char *export = getenv("TFORMER_EXPORT_DIR");
    char tmp[] = "/tmp/tformer_vitx_XXXXXX", dir[1200], in[1300], out_a[1300], out_b[1300];
    CHECK(mkdtemp(tmp) != NULL);
    for (int k = 0; k < 4; k++) {
        tf_vit_config c = export_config(k);
        tf_vit *m = tf_vit_new(&c, 7 + (uint64_t)k);
        CHECK(m != NULL);
        test_randomize_params(m->params, 100 * (uint64_t)k);
        const char *names[12] = {"t-shirt", "trouser", "pullover", "dress", "coat", "sandal", "shirt", "sneaker"};
        if (c.head == TF_VIT_IMAGE_CLS) CHECK(tf_vit_set_labels(m, names, c.n_labels) == 0);
        snprintf(dir, sizeof dir, "%s/vit_export_%d", export ? export : tmp, k);
        snprintf(in, sizeof in, "%s/input.safetensors", dir);
        snprintf(out_a, sizeof out_a, "%s/a.safetensors", tmp);
        snprintf(out_b, sizeof out_b, "%s/b.safetensors", tmp);
        CHECK(tf_vit_save_hf(m, dir) == 0 && test_write_image_input(in, 3, c.channels, c.image_size, c.n_labels, c.head == TF_VIT_IMAGE_CLS) == 0);
        tf_vit *back = tf_vit_load(dir);
        CHECK(back != NULL && back->cfg.pooler == c.pooler && back->cfg.qkv_bias == c.qkv_bias);
        char b1[32], b2[32];
        if (c.head == TF_VIT_IMAGE_CLS) CHECK(!strcmp(tf_vit_label(back, 3, b1, sizeof b1), tf_vit_label(m, 3, b2, sizeof b2)));
        tf_vit_free(back);
        CHECK(tf_hf_run(dir, in, out_a, NULL) == 0);
        /* the same model through the library directly */
        tf_ctx *ctx = tf_ctx_new(1);
        tf_st_file *f = tf_st_open(in);
        tf_tensor *x = f ? tf_st_to_tensor(f, tf_st_find(f, "pixel_values"), tf_ctx_arena(ctx)) : NULL;
        tf_vit_outputs o;
        CHECK(x && tf_vit_run(ctx, m, &(tf_vit_inputs){.pixel_values = x}, &o) == 0);
        tf_st_writer *w = tf_st_writer_new();
        CHECK(w && tf_st_writer_add(w, o.logits ? "logits" : "last_hidden_state", o.logits ? o.logits : o.last_hidden_state) == 0);
        if (o.pooler_output) CHECK(tf_st_writer_add(w, "pooler_output", o.pooler_output) == 0);
        CHECK(tf_st_writer_save(w, out_b) == 0);
        tf_st_writer_free(w), tf_st_close(f), tf_ctx_free(ctx), tf_vit_free(m);
        tf_st_file *a = tf_st_open(out_a);
        tf_arena *ar = tf_arena_new(0);
        const tf_st_entry *e = a ? tf_st_find(a, c.head == TF_VIT_IMAGE_CLS ? "logits" : "last_hidden_state") : NULL;
        tf_tensor *got = e ? tf_st_to_tensor(a, e, ar) : NULL;
        tf_st_file *bf = tf_st_open(out_b);
        tf_tensor *want = bf ? tf_st_to_tensor(bf, tf_st_entry_at(bf, 0), ar) : NULL;
        int equal = got && want && tf_numel(got) == tf_numel(want) &&
                    !memcmp(got->data, want->data, (size_t)tf_numel(got) * sizeof(float));
        if (c.head == TF_VIT_IMAGE_CLS) equal = equal && tf_st_find(a, "loss") != NULL;
        tf_st_close(a), tf_st_close(bf), tf_arena_free(ar);
        CHECKF(equal, "case %d: the loaded folder's outputs differ from the model's", k);
    }
    test_rm_rf(tmp);
}

/* ---------------------------------------------------------------- bad folders and inputs */

#define PIX(c, h, w) {"pixel_values", TF_ST_F32, 4, {2, c, h, w}, 0.5f}
static const test_bad_case BAD[] = {
    {"RGB to a grey model", NULL, NULL, NULL, NULL, {PIX(3, 28, 28)}, {"pixel_values (2,3,28,28)", "(B,1,28,28)"}},
    {"another image size", NULL, NULL, NULL, NULL, {PIX(1, 27, 27)}, {"(2,1,27,27)", "image_size"}},
    {"integer pixels", NULL, NULL, NULL, NULL, {{"pixel_values", TF_ST_I64, 4, {2, 1, 28, 28}, 1}},
     {"'pixel_values' is I64", "F32, F16 or BF16"}},
    {"label 10 of 10", NULL, NULL, NULL, NULL, {PIX(1, 28, 28), {"labels", TF_ST_I64, 1, {2}, 10}},
     {"'labels' holds 10 at [0]", "num_labels"}},
    {"labels of another batch", NULL, NULL, NULL, NULL, {PIX(1, 28, 28), {"labels", TF_ST_I64, 1, {3}, 1}},
     {"'labels' has shape (3)", "B = 2"}},
    {"masked patches", NULL, NULL, NULL, NULL, {PIX(1, 28, 28), {"bool_masked_pos", TF_ST_BOOL, 2, {2, 49}, 0}},
     {"'bool_masked_pos'", "not supported by hf-run"}},
    {"labels to ViTModel", BODY_CASE, NULL, NULL, NULL, {PIX(3, 13, 13), {"labels", TF_ST_I64, 1, {2}, 1}},
     {"'labels' is not an argument of ViTModel.forward()", NULL}},
    {"unknown activation", NULL, "\"gelu_new\"", "\"gelu_fast\"", NULL, {PIX(1, 28, 28)}, {"config.json", "hidden_act"}},
    {"regression", NULL, "\"image_size\"", "\"problem_type\": \"regression\", \"image_size\"", NULL, {PIX(1, 28, 28)},
     {"config.json", "problem_type regression is not implemented"}},
    {"patch larger than the image", NULL, "\"patch_size\": 4", "\"patch_size\": 29", NULL, {PIX(1, 28, 28)},
     {"config.json", "patch_size 29 is larger than image_size 28"}},
    {"image_size a list", NULL, "\"image_size\": 28", "\"image_size\": [28, 28]", NULL, {PIX(1, 28, 28)},
     {"config.json", "image_size"}},
    {"missing tensor", NULL, NULL, NULL, "classifier.bias", {PIX(1, 28, 28)}, {"model.safetensors", "'classifier.bias'"}},
    {"pooler_act relu", NULL, "\"image_size\"", "\"pooler_act\": \"relu\", \"image_size\"", NULL,
     {PIX(1, 28, 28)}, {"config.json", "pooler_act"}},
    /* transformers reads num_labels 1 as regression (mean squared error), which tformer does not compute */
    {"num_labels 1", NULL, "\"image_size\"", "\"num_labels\": 1, \"image_size\"", NULL,
     {PIX(1, 28, 28), {"labels", TF_ST_I64, 1, {2}, 0}}, {"config.json", "num_labels 1 without problem_type"}},
};

TEST(vit_hf_run_bad_input_is_a_clear_error) {
    const size_t n = sizeof BAD / sizeof BAD[0];
    int bad = test_hf_run_bad_cases(BAD, n, CLS_CASE, "VIT_VERBOSE");
    CHECKF(bad == 0, "%d of %zu bad inputs were not a clear error", bad, n);
}

/* ---------------------------------------------------------------- gradients against PyTorch */

/* The loss's gradient with respect to the pixels and every parameter of a
 * fixture's ViTForImageClassification (backward through the patch embedding,
 * the class token's broadcast and concatenation, the positions, the blocks,
 * the final LayerNorm and the classifier) against transformers' in float64:
 * relative L2 error per tensor. */
/* ||a - b|| and ||b|| in double. */

static double gradient_case(const char *dir, int *n_tensors) {
    tf_vit *m = tf_vit_load(dir);
    double e = m ? test_gradient_case(dir, m, m->params, test_vit_loss, n_tensors) : -1;
    tf_vit_free(m);
    return e;
}

TEST(vit_gradients_match_pytorch) {
    static const char *const CASES[] = {VIT_DIR "/cls_grey28_p4_labels", VIT_DIR "/cls_grey12_p7_one_patch"};
    double worst = 0;
    int n = 0;
    for (int i = 0; i < 2; i++) {
        double e = gradient_case(CASES[i], &n);
        CHECKF(e >= 0 && e <= 1e-4, "%s: relative gradient error %g (%s)", CASES[i], e, tf_error());
        if (e > worst) worst = e;
    }
    printf("    pixels and every parameter (%d tensors in the last case): worst relative error %.2e\n", n, worst);
}

/* ---------------------------------------------------------------- attention maps */

/* Worst |diff| of one case's attentions (output_attentions), rollout and
 * last-layer heads against transformers' (attentions.safetensors); -1 when
 * the run fails or a shape differs. */
static double attention_case(const char *dir) {
    char p[1300];
    snprintf(p, sizeof p, "%s/attentions.safetensors", dir);
    tf_st_file *ref = tf_st_open(p);
    snprintf(p, sizeof p, "%s/input.safetensors", dir);
    tf_st_file *in = tf_st_open(p);
    tf_vit *m = ref && in ? tf_vit_load(dir) : NULL;
    tf_ctx *ctx = tf_ctx_new(1);
    tf_arena *a = tf_arena_new(0);
    tf_vit_outputs o;
    tf_vit_inputs x = {.pixel_values = in ? test_st_tensor(in, "pixel_values", a) : NULL, .output_attentions = 1};
    double worst = m && !tf_vit_run(ctx, m, &x, &o) && o.attentions ? 0 : -1;
    for (int l = 0; worst >= 0 && l < m->cfg.n_layer; l++) {
        snprintf(p, sizeof p, "attentions.%d", l);
        tf_tensor *want = test_st_tensor(ref, p, a);
        double d = want && tf_numel(want) == tf_numel(o.attentions[l])
                       ? test_max_abs_diff(tf_f32(o.attentions[l]), tf_f32(want), tf_numel(want))
                       : -1;
        worst = d < 0 || !(d <= worst) ? d : worst;
    }
    tf_tensor *roll = worst >= 0 ? test_st_tensor(ref, "rollout", a) : NULL, *heads = test_st_tensor(ref, "heads", a);
    int64_t B = roll ? roll->shape[0] : 0, N = roll ? roll->shape[1] : 0, H = heads ? heads->shape[1] : 0;
    float *r = malloc((size_t)(N + H * N + 1) * sizeof *r);
    for (int64_t b = 0; roll && heads && r && worst >= 0 && b < B; b++) {
        if (tf_vit_attention_rollout(m, &o, b, r, r + N)) worst = -1;
        double d1 = test_max_abs_diff(r, tf_f32(roll) + b * N, N);
        double d2 = test_max_abs_diff(r + N, tf_f32(heads) + b * H * N, H * N);
        if (worst >= 0 && !(d1 <= worst)) worst = d1;
        if (worst >= 0 && !(d2 <= worst)) worst = d2;
    }
    if (!roll || !heads || !r) worst = -1;
    free(r);
    tf_arena_free(a), tf_ctx_free(ctx), tf_vit_free(m), tf_st_close(in), tf_st_close(ref);
    return worst;
}

/* Each layer's attention probabilities, the rollout and the last layer's
 * heads against transformers' output_attentions (and a float64 rollout from
 * them); a rollout of one image asked beyond the batch is an error. */
TEST(vit_attentions_and_rollout_match_transformers) {
    static const char *const CASES[] = {VIT_DIR "/model_grey28_p7", VIT_DIR "/cls_rgb12_p3_noqkvbias",
                                        VIT_DIR "/cls_grey12_p7_one_patch"};
    double worst = 0;
    for (int i = 0; i < 3; i++) {
        double d = attention_case(CASES[i]);
        CHECKF(d >= 0 && d <= TOL, "%s: max |diff| %g (%s)", CASES[i], d, tf_error());
        if (d > worst) worst = d;
    }
    printf("    3 cases: attentions, rollout and heads, worst max |diff| %.2e\n", worst);
    tf_vit *m = tf_vit_load(CLS_CASE);
    float r[64];
    CHECK(m && tf_vit_attention_rollout(m, NULL, 0, r, NULL) == -1 && strstr(tf_error(), "output_attentions"));
    tf_vit_free(m);
}

/* ---------------------------------------------------------------- predictions, with the mirror images */

/* One image's class probabilities p (L), from the model's forward on x (C,S,S), mirrored when flip. */
static int image_probs(const tf_vit *m, const float *x, int flip, double *p) {
    const tf_vit_config *c = &m->cfg;
    int S = c->image_size, L = c->n_labels;
    tf_ctx *ctx = tf_ctx_new(0);
    tf_ctx_set_grad(ctx, 0);
    tf_tensor *px = tf_tensor_new(ctx, TF_DTYPE_F32, 4, (int64_t[]){1, c->channels, S, S}, 0);
    for (int64_t r = 0; r < (int64_t)c->channels * S; r++)
        for (int j = 0; j < S; j++) tf_f32(px)[r * S + j] = x[r * S + (flip ? S - 1 - j : j)];
    tf_vit_outputs o;
    int rc = tf_vit_run(ctx, m, &(tf_vit_inputs){.pixel_values = px}, &o);
    double hi = -1e300, sum = 0;
    for (int k = 0; !rc && k < L; k++) hi = fmax(hi, tf_f32(o.logits)[k]);
    for (int k = 0; !rc && k < L; k++) sum += p[k] = exp(tf_f32(o.logits)[k] - hi);
    for (int k = 0; !rc && k < L; k++) p[k] /= sum;
    tf_ctx_free(ctx);
    return rc;
}

/* tf_vit_predict with hflip against the forward run image by image, each
 * image and its mirror's probabilities averaged here: labels, the winning
 * probability and the loss (batches of 2 over 5 images); without hflip the
 * single view's, and the two differ (a model that sees left from right). */
TEST(vit_predict_hflip_averages_the_mirror_images) {
    tf_vit_config c = export_config(0);
    tf_vit *m = tf_vit_new(&c, 11);
    CHECK(m != NULL);
    test_randomize_params(m->params, 5);
    enum { N = 5 };
    int S = c.image_size, L = c.n_labels;
    float *x = malloc((size_t)N * S * S * sizeof *x);
    int32_t labels[N] = {0, 1, 2, 3, 1}, pred[N], pred1[N];
    float prob[N], prob1[N];
    uint64_t s = 99;
    for (int64_t i = 0; i < (int64_t)N * S * S; i++) s = s * 6364136223846793005ULL + 1, x[i] = (float)(s >> 40) / 16777216.0f;
    double loss, loss1, want_loss = 0, moved = 0;
    int64_t correct, correct1;
    CHECK(tf_vit_predict(m, x, N, 2, 1, labels, pred, prob, &loss, &correct) == 0);
    CHECK(tf_vit_predict(m, x, N, 2, 0, labels, pred1, prob1, &loss1, &correct1) == 0);
    for (int i = 0; i < N; i++) {
        double a[16], b[16];
        CHECK(image_probs(m, x + (int64_t)i * S * S, 0, a) == 0 && image_probs(m, x + (int64_t)i * S * S, 1, b) == 0);
        int best = 0, best1 = 0;
        for (int k = 0; k < L; k++) {
            best = (a[k] + b[k]) > (a[best] + b[best]) ? k : best;
            best1 = a[k] > a[best1] ? k : best1;
        }
        CHECKF(pred[i] == best && fabs(prob[i] - (a[best] + b[best]) / 2) < 1e-5,
               "image %d: label %d prob %.6f, want %d %.6f", i, pred[i], prob[i], best, (a[best] + b[best]) / 2);
        CHECKF(pred1[i] == best1 && fabs(prob1[i] - a[best1]) < 1e-5, "image %d without hflip", i);
        want_loss -= log((a[labels[i]] + b[labels[i]]) / 2) / N;
        moved = fmax(moved, fabs(prob[i] - prob1[i]));
    }
    CHECKF(fabs(loss - want_loss) < 1e-5, "loss %.7f, want %.7f", loss, want_loss);
    CHECKF(moved > 1e-3, "the mirror images changed no probability (%.2e): the test would not see hflip ignored", moved);
    free(x), tf_vit_free(m);
}
