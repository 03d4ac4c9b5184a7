/* ImageGPT through `tformer hf-run` against Hugging Face transformers: every
 * case of tests/fixtures_imagegpt_hf (tests/ref/gen_imagegpt_hf_fixtures.py:
 * ImageGPTModel and ImageGPTForCausalImageModeling, random weights) to 1e-5;
 * the comparison notices LayerNorm in place of ImageGPT's RMS norm, another
 * activation and a moved weight; bad inputs are clear errors; tformer's
 * ImageGPT-layout folders load again with the same outputs (and, with
 * TFORMER_EXPORT_DIR, in transformers: make imagegpt-conformance). */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "test.h"

#define TOL 1e-5
#define IGPT_DIR "tests/fixtures_imagegpt_hf"
#define CAUSAL_CASE IGPT_DIR "/causal_k16_labels"
#define BODY_CASE IGPT_DIR "/model_k32_posids"

TEST(imagegpt_hf_run_matches_transformers) {
    const char *dir = test_fixture_dir_or(IGPT_DIR);
    int cases;
    double worst;
    int failed = test_hf_run_dir(dir, TOL, NULL, NULL, &cases, &worst);
    printf("    %d ImageGPT cases, %d failed, worst max |diff| %.2e\n", cases, failed, worst);
    CHECKF(cases > 0 && failed == 0, "%d of %d cases failed (%s)", failed, cases, dir);
}

/* Max |logits - expected| of the causal case's model as loaded, after
 * `change` (0 none, 1 LayerNorm for the RMS norms, 2 tanh GELU for quick_gelu). */
static double causal_diff(int change) {
    tf_gpt *m = tf_gpt_load(CAUSAL_CASE);
    tf_st_file *in = tf_st_open(CAUSAL_CASE "/input.safetensors"), *exp = tf_st_open(CAUSAL_CASE "/expected.safetensors");
    tf_ctx *ctx = tf_ctx_new(1);
    double d = -1;
    if (m && in && exp && ctx) {
        for (int i = 0; change == 1 && i < m->cfg.n_layer; i++) m->h[i].norm_attn.rms = m->h[i].norm_ff.rms = 0;
        if (change == 1) m->ln_f.rms = 0;
        if (change == 2) m->block.activation = TF_ACT_GELU_TANH;
        tf_ctx_set_grad(ctx, 0);
        tf_tensor *ids = test_st_tensor(in, "input_ids", tf_ctx_arena(ctx));
        tf_tensor *want = test_st_tensor(exp, "logits", tf_ctx_arena(ctx));
        tf_gpt_outputs o;
        if (ids && want && !tf_gpt_run(ctx, m, &(tf_gpt_inputs){.input_ids = ids}, &o) &&
            tf_numel(o.logits) == tf_numel(want))
            d = test_max_abs_diff(tf_f32(o.logits), tf_f32(want), tf_numel(want));
    }
    tf_ctx_free(ctx), tf_st_close(in), tf_st_close(exp), tf_gpt_free(m);
    return d;
}

TEST(imagegpt_hf_norm_and_activation_matter) {
    double same = causal_diff(0), layer = causal_diff(1), act = causal_diff(2);
    printf("    as loaded %.2e; LayerNorm for the RMS norm %.2e; tanh GELU for quick_gelu %.2e\n", same, layer, act);
    CHECK(same >= 0 && same <= TOL);
    CHECKF(layer > 100 * TOL && act > 100 * TOL, "a swapped norm (%.3g) or activation (%.3g) went unnoticed", layer, act);
}

TEST(imagegpt_hf_perturbed_weight_fails_the_comparison) {
    static const test_weight W[] = {
        {"transformer.h.0.ln_1.weight", 3}, {"transformer.h.1.ln_2.weight", 5}, {"transformer.ln_f.weight", 7},
        {"transformer.h.1.mlp.c_fc.weight", 9}, {"lm_head.weight", 11}, {"transformer.wte.weight", 16 * 12 + 2}};
    const int n = (int)(sizeof W / sizeof *W);
    double same, least;
    int missed = test_hf_perturbed(CAUSAL_CASE, W, n, TOL, &same, &least);
    printf("    unchanged copy %.2e; one element + 1e-3 of each of %d tensors: %.2e or more\n", same, n, least);
    CHECK(same >= 0 && same <= TOL);
    CHECKF(missed == 0, "%d perturbed tensors went unnoticed", missed);
}

#define IDS(v) {"input_ids", TF_ST_I64, 2, {2, 8}, v}
static const test_bad_case BAD[] = {
    {"label = the start token", NULL, NULL, NULL, NULL, {IDS(3), {"labels", TF_ST_I64, 2, {2, 8}, 16}},
     {"'labels' holds 16", "vocab_size - 1"}},
    {"id past the vocabulary", NULL, NULL, NULL, NULL, {IDS(17)}, {"'input_ids' holds 17", "vocab_size"}},
    {"pixel_values (deprecated)", NULL, NULL, NULL, NULL, {{"pixel_values", TF_ST_I64, 2, {2, 8}, 1}},
     {"'pixel_values'", "not supported by hf-run"}},
    {"tied head", NULL, "\"tie_word_embeddings\": false", "\"tie_word_embeddings\": true", NULL, {IDS(3)},
     {"config.json", "tie_word_embeddings"}},
    {"missing head", NULL, NULL, NULL, "lm_head.weight", {IDS(3)}, {"model.safetensors", "'lm_head.weight'"}},
    {"labels to ImageGPTModel", BODY_CASE, NULL, NULL, NULL, {IDS(3), {"labels", TF_ST_I64, 2, {2, 8}, 1}},
     {"'labels' is not an argument of ImageGPTModel.forward()", NULL}},
};

TEST(imagegpt_hf_run_bad_input_is_a_clear_error) {
    int bad = test_hf_run_bad_cases(BAD, sizeof BAD / sizeof *BAD, CAUSAL_CASE, "TFORMER_VERBOSE");
    CHECKF(bad == 0, "%d bad inputs were not clear errors", bad);
    /* ImageGPTModel has no head to tie: tie_word_embeddings true changes nothing there */
    char tmp[] = "/tmp/tformer_igptb_XXXXXX", out[64];
    CHECK(mkdtemp(tmp) != NULL);
    snprintf(out, sizeof out, "%s/out.safetensors", tmp);
    CHECK(test_copy_case(BODY_CASE, tmp, "\"tie_word_embeddings\": false", "\"tie_word_embeddings\": true", NULL, 0, 0,
                         NULL) == 0);
    double d = test_hf_run_case(tmp, BODY_CASE, out, NULL);
    test_rm_rf(tmp);
    CHECKF(d >= 0 && d <= TOL, "ImageGPTModel with tie_word_embeddings true: %.3g", d);
}

/* tformer's ImageGPT layout (RMS norms, quick_gelu, untied head without the
 * start token's logit): saved, run through hf-run, the same logits as the
 * model in memory; the folder says ImageGPTForCausalImageModeling. */
TEST(imagegpt_hf_folder_round_trip) {
    const char *export = getenv("TFORMER_EXPORT_DIR");
    char tmp[] = "/tmp/tformer_igptx_XXXXXX", dir[1200], in[1300], out[1300];
    CHECK(mkdtemp(tmp) != NULL);
    tf_gpt_config c = tf_gpt_config_default(17, 16, 2, 2, 8);
    c.norm = TF_NORM_RMS, c.predict_last = 0, c.tied = 0, c.activation = TF_ACT_QUICK_GELU;
    tf_gpt *m = tf_gpt_new(&c, 5);
    CHECK(m != NULL);
    for (int i = 0; i < tf_params_count(m->params); i++) { /* larger than GPT-2's init: every path matters */
        tf_tensor *p = tf_params_tensor(m->params, i);
        for (int64_t k = 0; k < tf_numel(p); k++) tf_f32(p)[k] = (p->ndim == 1 ? 1.0f : 0.0f) + 0.3f * sinf(0.7f * (float)(k + 13 * i));
    }
    snprintf(dir, sizeof dir, "%s/imagegpt_export", export ? export : tmp);
    snprintf(in, sizeof in, "%s/input.safetensors", dir);
    snprintf(out, sizeof out, "%s/out.safetensors", tmp);
    CHECK(tf_gpt_save(m, dir) == 0);
    test_input x[2] = {{"input_ids", TF_ST_I64, 2, {2, 16}, 16}};
    CHECK(test_write_inputs(x, 2, in) == 0);
    size_t n;
    char path[1300];
    snprintf(path, sizeof path, "%s/config.json", dir);
    char *cfg = test_slurp(path, &n);
    CHECK(cfg && strstr(cfg, "ImageGPTForCausalImageModeling") && strstr(cfg, "\"quick_gelu\""));
    free(cfg);
    CHECK(tf_hf_run(dir, in, out, NULL) == 0);
    tf_ctx *ctx = tf_ctx_new(1);
    tf_st_file *f = tf_st_open(in), *o = tf_st_open(out);
    tf_tensor *ids = f ? test_st_tensor(f, "input_ids", tf_ctx_arena(ctx)) : NULL;
    tf_tensor *got = o ? test_st_tensor(o, "logits", tf_ctx_arena(ctx)) : NULL;
    tf_gpt_outputs r;
    CHECK(ids && got && tf_gpt_run(ctx, m, &(tf_gpt_inputs){.input_ids = ids}, &r) == 0);
    CHECK(got->ndim == 3 && got->shape[2] == 16 && tf_numel(got) == tf_numel(r.logits));
    CHECKF(!memcmp(got->data, r.logits->data, (size_t)tf_numel(got) * sizeof(float)),
           "the loaded folder's logits differ from the model's");
    tf_st_close(f), tf_st_close(o), tf_ctx_free(ctx);
    /* a mixture neither GPT-2 nor ImageGPT computes is refused */
    m->cfg.predict_last = 1;
    snprintf(path, sizeof path, "%s/mixed", tmp);
    CHECK(tf_gpt_save(m, path) != 0 && strstr(tf_error(), "neither GPT-2's layout nor ImageGPT's"));
    tf_gpt_free(m);
    test_rm_rf(tmp);
}
