/* ViT's pooling (tests/ref/gen_vit_stem_fixtures.py, the pool_* cases): the
 * classifier reading the patch tokens' mean or their sequence pooling
 * (Hassani et al. 2021) instead of the class token, against PyTorch's
 * ViTForImageClassification with the same head (outputs in
 * test_vit_stem.c's hf-run test; here the gradients); a perturbed score
 * weight fails; tformer's folder round-trips and Hugging Face's export
 * refuses; bad settings are clear errors; the attention rollout reads the
 * pooled tokens. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "test.h"

#define TOL 1e-5
#define POOL_DIR "tests/fixtures_vit_stem"
#define SEQ_CASE POOL_DIR "/pool_seq_grey28_p4_stem"

/* The loss's gradient for the pixels and every parameter, pooling.score's included. */
TEST(vit_pool_gradients_match_pytorch) {
    static const char *const CASES[] = {SEQ_CASE, POOL_DIR "/pool_mean_rgb12_p3_patch", POOL_DIR "/pool_seq_rgb13_p4_patch"};
    double worst = 0;
    int n = 0;
    for (int i = 0; i < 3; i++) {
        tf_vit *m = tf_vit_load(CASES[i]);
        CHECKF(m && m->cfg.pooling == (i == 1 ? TF_POOL_MEAN : TF_POOL_SEQ), "%s: %s", CASES[i], tf_error());
        double e = m ? test_gradient_case(CASES[i], m, m->params, test_vit_loss, &n) : -1;
        tf_vit_free(m);
        CHECKF(e >= 0 && e <= 1e-4, "%s: relative gradient error %g (%s)", CASES[i], e, tf_error());
        if (e > worst) worst = e;
    }
    printf("    3 pooled ViTs (seq with the conv stem, mean, seq): pixels and every parameter, worst relative "
           "error %.2e\n", worst);
}

TEST(vit_pool_perturbed_score_fails_the_comparison) {
    static const test_weight W[] = {{"pooling.score.weight", 3}, {"pooling.score.weight", 11}};
    double same, least;
    int missed = test_hf_perturbed(SEQ_CASE, W, 2, TOL, &same, &least);
    printf("    unchanged copy %.2e; one element of pooling.score + 1e-3 (2 tries): %.2e or more\n", same, least);
    CHECK(same >= 0 && same <= TOL);
    CHECKF(missed == 0, "%d perturbed scores went unnoticed", missed);
}

/* tf_vit_save writes tformer's folder (a patch stem too), which loads back to
 * the same logits; Hugging Face's export refuses; the signature tells the poolings apart. */
TEST(vit_pool_folder_round_trips_and_hf_export_refuses) {
    char tmp[] = "/tmp/tformer_vitpool_XXXXXX", dir[256];
    CHECK(mkdtemp(tmp) != NULL);
    tf_vit_config c = tf_vit_config_default();
    c.image_size = 12, c.patch_size = 4, c.channels = 3, c.d_model = 12, c.n_head = 2, c.n_layer = 1, c.n_labels = 3;
    c.pooling = TF_POOL_SEQ;
    tf_vit *m = tf_vit_new(&c, 5);
    CHECK(m != NULL && m->pool.score.weight != NULL);
    test_randomize_params(m->params, 9);
    snprintf(dir, sizeof dir, "%s/hf", tmp);
    CHECK(tf_vit_save_hf(m, dir) == -1);
    CHECKF(strstr(tf_error(), "seq pooling") && strstr(tf_error(), "no Hugging Face form"), "%s", tf_error());
    CHECK(access(dir, F_OK) != 0);
    tf_vit *back = NULL;
    CHECKF(test_vit_folder_matches(m, tmp, &back) == 0, "%s", tf_error());
    CHECK(back && back->cfg.pooling == TF_POOL_SEQ && back->cfg.stem == TF_VIT_STEM_PATCH);
    char s1[1024], s2[1024];
    tf_vit_config p = c;
    p.pooling = TF_POOL_CLS;
    CHECK(tf_fields_signature(&(tf_fields){&tf_vit_config_table, &c}, 1, s1, sizeof s1) == 0 &&
          tf_fields_signature(&(tf_fields){&tf_vit_config_table, &p}, 1, s2, sizeof s2) == 0);
    CHECKF(strstr(s1, "pooling=seq") && !strstr(s2, "pooling"), "%s | %s", s1, s2);
    tf_vit_free(back), tf_vit_free(m);
    test_rm_rf(tmp);
}

TEST(vit_pool_bad_settings_are_clear_errors) {
    tf_vit_config c = tf_vit_config_default();
    c.pooling = TF_POOL_MAX;
    tf_vit *m = tf_vit_new(&c, 1);
    CHECKF(!m && strstr(tf_error(), "pooling max"), "%s", tf_error());
    tf_vit_free(m);
    c.pooling = TF_POOL_MEAN, c.head = TF_VIT_BODY;
    m = tf_vit_new(&c, 1);
    CHECKF(!m && strstr(tf_error(), "pooling mean: only ViTForImageClassification"), "%s", tf_error());
    tf_vit_free(m);
    static const test_bad_case FOLDERS[] = {
        {"score missing", NULL, NULL, NULL, "pooling.score.weight", {{"pixel_values", TF_ST_F32, 4, {2, 1, 28, 28}, 0.5f}},
         {"model.safetensors", "pooling.score.weight"}},
        {"unknown pooling", NULL, "\"seq\"", "\"attention\"", NULL, {{"pixel_values", TF_ST_F32, 4, {2, 1, 28, 28}, 0.5f}},
         {"config.json", "pooling"}},
    };
    const size_t n = sizeof FOLDERS / sizeof FOLDERS[0];
    int bad = test_hf_run_bad_cases(FOLDERS, n, SEQ_CASE, "VIT_VERBOSE");
    CHECKF(bad == 0, "%d of %zu bad folders were not a clear error", bad, n);
}

/* One layer: R = Ã (mean over heads of A, + I, rows renormalised) and the row
 * the classifier reads is w Ã with w its weights over the tokens (the
 * pooling's over the patches); each head's map is w A_h. Checked against that
 * computed here from the attentions, for mean and seq pooling. */
TEST(vit_pool_rollout_reads_the_pooled_tokens) {
    double worst = 0;
    for (int kind = 0; kind < 2; kind++) {
        tf_vit_config c = tf_vit_config_default();
        c.image_size = 12, c.patch_size = 4, c.d_model = 12, c.n_head = 3, c.n_layer = 1, c.n_labels = 3;
        c.pooling = kind ? TF_POOL_SEQ : TF_POOL_MEAN;
        tf_vit *m = tf_vit_new(&c, 3);
        CHECK(m != NULL);
        test_randomize_params(m->params, 4 + kind);
        tf_ctx *ctx = tf_ctx_new(1);
        tf_tensor *x = tf_tensor_new(ctx, TF_DTYPE_F32, 4, (int64_t[]){2, 1, 12, 12}, 0);
        for (int64_t i = 0; x && i < tf_numel(x); i++) tf_f32(x)[i] = (float)((i * 37) % 101) / 101.0f;
        tf_vit_outputs o;
        CHECK(x && tf_vit_run(ctx, m, &(tf_vit_inputs){.pixel_values = x, .output_attentions = 1}, &o) == 0);
        CHECK(kind == 0 || (o.pool_weights && o.pool_weights->shape[1] == 9));
        enum { N = 9, T = 10, H = 3 };
        float roll[N], heads[H * N];
        CHECK(tf_vit_attention_rollout(m, &o, 1, roll, heads) == 0);
        const float *A = tf_f32(o.attentions[0]) + (int64_t)H * T * T; /* image 1 */
        double w[T] = {0};
        for (int i = 1; i < T; i++) w[i] = kind ? tf_f32(o.pool_weights)[N + i - 1] : 1.0 / N;
        for (int j = 0; j < N; j++) {
            double r = 0, hj[H] = {0};
            for (int i = 0; i < T; i++) {
                double row[T], sum = 0;
                for (int k = 0; k < T; k++) {
                    row[k] = (k == i);
                    for (int h = 0; h < H; h++) row[k] += A[(h * T + i) * T + k] / H;
                    sum += row[k];
                }
                r += w[i] * row[1 + j] / sum;
                for (int h = 0; h < H; h++) hj[h] += w[i] * A[(h * T + i) * T + 1 + j];
            }
            worst = fmax(worst, fabs(r - roll[j]));
            for (int h = 0; h < H; h++) worst = fmax(worst, fabs(hj[h] - heads[h * N + j]));
        }
        tf_ctx_free(ctx), tf_vit_free(m);
    }
    printf("    mean and seq pooling, one layer: rollout and head maps against w A, worst %.2e\n", worst);
    CHECKF(worst < 1e-6, "worst %g", worst);
}
