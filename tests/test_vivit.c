/* ViViT against PyTorch and Hugging Face transformers
 * (tests/ref/gen_vivit_fixtures.py): the tubelet embedding against Conv3d
 * with its gradients; every model case of tests/fixtures_vivit through
 * `tformer hf-run` to 1e-5 (Model 1: VivitModel / VivitForVideoClassification;
 * Models 2 and 3: assembled from transformers' Vivit modules; Model 4:
 * tests/ref/vivit_model4.py, plain PyTorch from the paper); a perturbed
 * weight of each model kind fails the comparison, and so does Model 4 with
 * its spatial and temporal heads swapped; bad folders and inputs are clear
 * errors; tformer's folders round-trip. */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "test.h"

#define TOL 1e-5
#define VIVIT_DIR "tests/fixtures_vivit"

TEST(vivit_tubelet_embed_matches_pytorch) {
    static const char *const CASES[] = {"tubelet_rgb_5x9x11_t2x4x3", "tubelet_grey_frames_8x8_p4"};
    double worst = 0;
    for (int i = 0; i < 2; i++) {
        char dir[256];
        snprintf(dir, sizeof dir, "%s/%s", VIVIT_DIR, CASES[i]);
        double e = test_patch_case(dir);
        CHECKF(e >= 0 && e <= TOL, "%s: error %g (%s)", CASES[i], e, tf_error());
        if (e > worst) worst = e;
    }
    printf("    2 Conv3d(stride=kernel) cases, worst error %.2e\n", worst);
}

/* Counts the cases of each model kind. */
static void count_kind(const char *path, void *arg) {
    tf_vivit *m = tf_vivit_load(path);
    if (m) ((int *)arg)[m->cfg.model_kind]++;
    tf_vivit_free(m);
}

TEST(vivit_hf_run_matches_transformers) {
    int cases, kinds[5] = {0};
    double worst;
    const char *dir = test_fixture_dir_or(VIVIT_DIR);
    int failed = test_hf_run_dir(dir, TOL, count_kind, kinds, &cases, &worst);
    printf("    %d ViViT cases (Model 1: %d, 2: %d, 3: %d, 4: %d), %d failed, worst max |diff| %.2e\n", cases,
           kinds[1], kinds[2], kinds[3], kinds[4], failed, worst);
    CHECKF(cases > 0 && failed == 0, "%d of %d cases failed (%s)", failed, cases, dir);
}

/* One element of each tensor moved by 1e-3 fails the tolerance (an unchanged copy passes). */
typedef struct {
    const char *dir;
    test_weight w[6];
} perturb_case;

static const perturb_case PERTURB[] = {
    {VIVIT_DIR "/m1_cls_rgb12_t3x4x3_labels",
     {{"vivit.embeddings.patch_embeddings.projection.weight", 3}, {"vivit.embeddings.cls_token", 3},
      {"vivit.embeddings.position_embeddings", 3}, {"vivit.encoder.layer.1.attention.attention.key.weight", 3},
      {"vivit.layernorm.bias", 3}, {"classifier.weight", 3}}},
    {VIVIT_DIR "/m2_cls_grey12_t2p4_labels",
     {{"vivit.embeddings.position_embeddings", 3}, {"vivit.encoder.layer.0.output.dense.bias", 3},
      {"vivit.layernorm.weight", 3}, {"vivit.temporal_embeddings.cls_token", 3},
      {"vivit.temporal_encoder.layer.1.attention.attention.value.weight", 3}, {"vivit.temporal_layernorm.bias", 3}}},
    {VIVIT_DIR "/m3_cls_grey12_t2p4",
     {{"vivit.embeddings.patch_embeddings.projection.bias", 3}, {"vivit.embeddings.position_embeddings", 3},
      {"vivit.encoder.layer.0.temporal_attention.attention.value.weight", 3},
      {"vivit.encoder.layer.1.temporal_attention.output.dense.weight", 3},
      {"vivit.encoder.layer.1.layernorm_temporal.weight", 3}, {"vivit.encoder.layer.0.intermediate.dense.weight", 3}}},
    {VIVIT_DIR "/m4_cls_grey12_t2p4_labels",
     {{"vivit.embeddings.position_embeddings", 3}, {"vivit.encoder.layer.0.attention.attention.query.weight", 3},
      {"vivit.encoder.layer.1.attention.attention.value.weight", 200}, {"vivit.encoder.layer.1.attention.output.dense.weight", 3},
      {"vivit.layernorm.weight", 3}, {"classifier.bias", 1}}},
};

TEST(vivit_perturbed_weight_fails_the_comparison) {
    int missed = 0, tried = 0;
    double least = INFINITY, same_worst = 0;
    for (size_t c = 0; c < sizeof PERTURB / sizeof *PERTURB; c++, tried += 6) {
        double same, low;
        missed += test_hf_perturbed(PERTURB[c].dir, PERTURB[c].w, 6, TOL, &same, &low);
        CHECKF(same >= 0 && same <= TOL, "%s: unchanged copy %g", PERTURB[c].dir, same);
        if (same > same_worst) same_worst = same;
        if (low < least) least = low;
    }
    printf("    unchanged copies %.2e; one element + 1e-3 of each of %d tensors (Models 1-4): %.2e or more\n",
           same_worst, tried, least);
    CHECKF(missed == 0, "%d perturbed tensors went unnoticed", missed);
}

/* Rows [r0,r0+n) and [r1,r1+n) of the (rows,cols) t exchanged (cols 1: a vector), or columns with by_col. */
static void swap_halves(tf_tensor *t, int by_col) {
    int64_t rows = t->shape[0], cols = t->ndim > 1 ? t->shape[1] : 1, half = (by_col ? cols : rows) / 2;
    float *x = tf_f32(t);
    for (int64_t r = 0; r < rows; r++)
        for (int64_t c = 0; c < cols; c++) {
            int64_t i = by_col ? c : r, j = by_col ? c + half : r + half;
            if (i >= half) continue;
            float *a = &x[by_col ? r * cols + i : i * cols + c], *b = &x[by_col ? r * cols + j : j * cols + c];
            float s = *a;
            *a = *b, *b = s;
        }
}

/* Model 4's max |diff| from the reference's outputs through hf-run, its
 * folder saved to tmp with the spatial and temporal heads exchanged or not
 * (the two halves of the q, k, v rows and of the output projection's
 * columns: the same heads, the other key sets). */
static double model4_error(const char *tmp, int swapped) {
    const char *dir = VIVIT_DIR "/m4_cls_grey12_t2p4_labels";
    char out[600];
    snprintf(out, sizeof out, "%s/out.safetensors", tmp);
    tf_vivit *m = tf_vivit_load(dir);
    for (int l = 0; m && swapped && l < m->cfg.n_layer; l++) {
        const tf_mha *at = &m->enc.layer[l].self_attn;
        tf_tensor *rows[] = {at->q_proj_weight, at->q_proj_bias, at->k_proj_weight, at->k_proj_bias, at->v_proj_weight,
                             at->v_proj_bias};
        for (int i = 0; i < 6; i++)
            if (rows[i]) swap_halves(rows[i], 0);
        swap_halves(at->out_proj.weight, 1);
    }
    double e = m && !tf_vivit_save(m, tmp) ? test_hf_run_case(tmp, dir, out, NULL) : -1;
    tf_vivit_free(m);
    return e;
}

TEST(vivit_model4_swapped_heads_fail_the_comparison) {
    char tmp[] = "/tmp/tformer_vivm4_XXXXXX";
    CHECK(mkdtemp(tmp) != NULL);
    double same = model4_error(tmp, 0), swapped = model4_error(tmp, 1);
    test_rm_rf(tmp);
    printf("    Model 4 saved and run: max |diff| %.2e; spatial and temporal heads swapped: %.2e\n", same, swapped);
    CHECKF(same >= 0 && same <= TOL, "Model 4: %g (%s)", same, tf_error());
    CHECKF(swapped > 100 * TOL, "Model 4 with its heads swapped still passes: %g", swapped);
}

/* ---------------------------------------------------------------- bad input */

#define M1 VIVIT_DIR "/m1_cls_rgb12_t3x4x3_labels"
#define M3 VIVIT_DIR "/m3_cls_grey12_t2p4"
#define CLIP(t, c, s) {"pixel_values", TF_ST_F32, 5, {2, t, c, s, s}, 0.5f}
static const test_bad_case BAD[] = {
    {"too few frames", M1, NULL, NULL, NULL, {CLIP(5, 3, 12)}, {"pixel_values (2,5,3,12,12)", "(B,6,3,12,12)"}},
    {"an image, not a clip", M1, NULL, NULL, NULL, {{"pixel_values", TF_ST_F32, 4, {2, 3, 12, 12}, 0.5f}},
     {"'pixel_values'", "B,T,C,H,W"}},
    {"grey frames to an RGB model", M1, NULL, NULL, NULL, {CLIP(6, 1, 12)}, {"(2,6,1,12,12)", "num_channels"}},
    {"another frame size", M3, NULL, NULL, NULL, {CLIP(6, 1, 13)}, {"(2,6,1,13,13)", "image_size"}},
    {"label 5 of 5", M1, NULL, NULL, NULL, {CLIP(6, 3, 12), {"labels", TF_ST_I64, 1, {2}, 5}},
     {"'labels' holds 5 at [0]", "num_labels"}},
    {"head_mask", M1, NULL, NULL, NULL, {CLIP(6, 3, 12), {"head_mask", TF_ST_F32, 1, {3}, 1}},
     {"'head_mask'", "not supported by hf-run"}},
    {"tubelet_size of two", M1, "\"tubelet_size\": [", "\"tubelet_size\": [12, ", NULL, {CLIP(6, 3, 12)},
     {"config.json", "tubelet_size"}},
    {"tubelet longer than the clip", M1, "\"num_frames\": 6", "\"num_frames\": 2", NULL, {CLIP(2, 3, 12)},
     {"config.json", "tubelet_t 3 is more than num_frames 2"}},
    {"unknown model_type", M3, "\"tformer-vivit\"", "\"vivid\"", NULL, {CLIP(6, 1, 12)},
     {"config.json", "model_type"}},
    {"model_kind 5", M3, "\"model_kind\": 3", "\"model_kind\": 5", NULL, {CLIP(6, 1, 12)},
     {"config.json", "model_kind"}},
    {"Model 4 with 3 heads", M3, "\"model_kind\": 3", "\"model_kind\": 4", NULL, {CLIP(6, 1, 12)},
     {"config.json", "n_head 3: Model 4"}},
    {"missing tensor", M3, NULL, NULL, "vivit.encoder.layer.1.layernorm_temporal.bias", {CLIP(6, 1, 12)},
     {"model.safetensors", "layernorm_temporal.bias"}},
    {"Model 3 saved as Model 1", M3, "\"model_kind\": 3", "\"model_kind\": 1", NULL, {CLIP(6, 1, 12)},
     {"model.safetensors", "missing tensor 'vivit.embeddings.cls_token'"}},
    /* 5.x's VivitPooler reads pooler_act and pooler_output_size; tformer's is tanh over hidden_size */
    {"pooler_act relu", VIVIT_DIR "/m1_model_grey16_t2p4", "\"image_size\"",
     "\"pooler_act\": \"relu\", \"image_size\"", NULL, {CLIP(4, 1, 16)}, {"config.json", "\"pooler_act\" must be \"tanh\""}},
    {"pooler_output_size", VIVIT_DIR "/m1_model_grey16_t2p4", "\"image_size\"",
     "\"pooler_output_size\": 7, \"image_size\"", NULL, {CLIP(4, 1, 16)}, {"config.json", "pooler_output_size"}},
    /* transformers 4.x reads num_labels 1 as regression (mean squared error) whatever problem_type says */
    {"num_labels 1", M1, "\"image_size\"", "\"num_labels\": 1, \"image_size\"", NULL,
     {CLIP(6, 3, 12), {"labels", TF_ST_I64, 1, {2}, 0}}, {"config.json", "num_labels 1: transformers computes a regression"}},
    {"num_labels 1, single label", M1, "\"image_size\"",
     "\"num_labels\": 1, \"problem_type\": \"single_label_classification\", \"image_size\"", NULL,
     {CLIP(6, 3, 12), {"labels", TF_ST_I64, 1, {2}, 0}}, {"config.json", "regression loss"}},
};

TEST(vivit_hf_run_bad_input_is_a_clear_error) {
    int bad = test_hf_run_bad_cases(BAD, sizeof BAD / sizeof BAD[0], M1, "VIVIT_VERBOSE");
    CHECKF(bad == 0, "%d of %zu bad inputs were not a clear error", bad, sizeof BAD / sizeof BAD[0]);
}

/* ---------------------------------------------------------------- tformer's folders */

/* Logits of m on a fixed clip batch into out (B*n_labels). */
static int logits_of(const tf_vivit *m, int B, float *out) {
    const tf_vivit_config *c = &m->cfg;
    int64_t per = (int64_t)c->num_frames * c->channels * c->image_size * c->image_size;
    float *x = malloc((size_t)(B * per) * sizeof *x);
    int32_t *pred = malloc((size_t)B * sizeof *pred);
    tf_ctx *ctx = tf_ctx_new(0);
    int rc = x && pred && ctx ? 0 : -1;
    for (int64_t i = 0; !rc && i < B * per; i++) x[i] = (float)((i * 7919) % 1000) / 1000.0f;
    tf_tensor *px = rc ? NULL : tf_tensor_new(ctx, TF_DTYPE_F32, 5,
                                              (int64_t[]){B, c->num_frames, c->channels, c->image_size, c->image_size}, 0);
    tf_vivit_outputs o;
    if (px) memcpy(px->data, x, (size_t)(B * per) * sizeof *x);
    rc = rc || !px || tf_vivit_run(ctx, m, &(tf_vivit_inputs){.pixel_values = px}, &o) ? -1 : 0;
    if (!rc) memcpy(out, o.logits->data, (size_t)tf_numel(o.logits) * sizeof *out);
    tf_ctx_free(ctx);
    free(x), free(pred);
    return rc;
}

/* Each model kind and embedding saved and loaded gives the same logits and labels. */
TEST(vivit_folders_round_trip) {
    char tmp[] = "/tmp/tformer_vivitf_XXXXXX";
    CHECK(mkdtemp(tmp) != NULL);
    const char *names[3] = {"left", "right", "up"};
    for (int k = 0; k < 8; k++) {
        tf_vivit_config c = tf_vivit_config_default();
        c.image_size = 8, c.num_frames = 4, c.tubelet_h = c.tubelet_w = 4, c.d_model = 8, c.n_head = 2, c.n_layer = 1;
        c.n_labels = 3, c.model_kind = 1 + k % 4, c.embedding = k < 4 ? TF_VIVIT_TUBELET : TF_VIVIT_FRAME;
        tf_vivit *m = tf_vivit_new(&c, 42 + (uint64_t)k);
        CHECK(m && tf_vivit_set_labels(m, names, 3) == 0 && tf_vivit_save(m, tmp) == 0);
        tf_vivit *back = tf_vivit_load(tmp);
        CHECKF(back != NULL, "kind %d: %s", c.model_kind, tf_error());
        float a[6], b[6];
        char buf[32];
        CHECK(logits_of(m, 2, a) == 0 && logits_of(back, 2, b) == 0);
        CHECKF(test_max_abs_diff(a, b, 6) == 0, "model %d: logits differ after a round trip", c.model_kind);
        CHECK(back->cfg.model_kind == c.model_kind && !strcmp(tf_vivit_label(back, 2, buf, sizeof buf), "up"));
        tf_vivit_free(m);
        tf_vivit_free(back);
    }
    test_rm_rf(tmp);
}

/* ---------------------------------------------------------------- gradients against PyTorch */

static tf_tensor *vivit_loss(tf_ctx *ctx, const void *model, tf_tensor *pixels, tf_tensor *labels) {
    tf_vivit_outputs o;
    return tf_vivit_run(ctx, model, &(tf_vivit_inputs){pixels, labels, 0}, &o) ? NULL : o.loss;
}

/* The loss's gradient with respect to the pixels and every parameter of each
 * model kind (backward through the tubelet embedding, the factorised blocks'
 * regrouping, Model 2's class-token gather, Model 3's mean) against PyTorch's. */
TEST(vivit_gradients_match_pytorch) {
    static const char *const CASES[] = {VIVIT_DIR "/m1_cls_rgb12_t3x4x3_labels", VIVIT_DIR "/m2_cls_grey12_t2p4_labels",
                                        VIVIT_DIR "/m3_cls_grey12_t2p4", VIVIT_DIR "/m4_cls_grey12_t2p4_labels"};
    double worst = 0;
    int n[4] = {0};
    for (int i = 0; i < 4; i++) {
        tf_vivit *m = tf_vivit_load(CASES[i]);
        double e = m ? test_gradient_case(CASES[i], m, m->params, vivit_loss, &n[i]) : -1;
        tf_vivit_free(m);
        CHECKF(e >= 0 && e <= 1e-4, "%s: relative gradient error %g (%s)", CASES[i], e, tf_error());
        if (e > worst) worst = e;
    }
    printf("    pixels and every parameter (Models 1-4: %d, %d, %d, %d tensors): worst relative error %.2e\n", n[0],
           n[1], n[2], n[3], worst);
}
