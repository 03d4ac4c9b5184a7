/* Locality self-attention (Lee et al. 2021; tf_mha_config's lsa, the ViT's
 * `lsa`): the ViTs of tests/ref/gen_vit_stem_fixtures.py's lsa_* cases
 * (transformers' ViT with each ViTSelfAttention replaced by LSA: scores times
 * a per-head temperature, the diagonal -inf) — outputs in test_vit_stem.c's
 * hf-run test, here the gradients, temperatures included; a perturbed
 * temperature fails; the fused and spelled-out attention agree; tformer's
 * folder round-trips and Hugging Face's export refuses; bad settings are
 * clear errors. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "test.h"

#define TOL 1e-5
#define LSA_CASE "tests/fixtures_vit_stem/lsa_cls_grey28_p4_stem"

TEST(vit_lsa_gradients_match_pytorch) {
    tf_vit *m = tf_vit_load(LSA_CASE);
    CHECKF(m && m->cfg.lsa && m->layer[1].self_attn.temperature, "%s: %s", LSA_CASE, tf_error());
    int n = 0;
    double e = test_gradient_case(LSA_CASE, m, m->params, test_vit_loss, &n);
    tf_vit_free(m);
    printf("    pixels and every parameter (%d tensors, the temperatures among them): relative error %.2e\n", n, e);
    CHECKF(e >= 0 && e <= 1e-4, "relative gradient error %g (%s)", e, tf_error());
}

TEST(vit_lsa_perturbed_temperature_fails_the_comparison) {
    static const test_weight W[] = {{"vit.encoder.layer.0.attention.attention.temperature", 1},
                                    {"vit.encoder.layer.1.attention.attention.temperature", 0}};
    double same, least;
    int missed = test_hf_perturbed(LSA_CASE, W, 2, TOL, &same, &least);
    printf("    unchanged copy %.2e; one temperature + 1e-3 (2 tries): %.2e or more\n", same, least);
    CHECK(same >= 0 && same <= TOL);
    CHECKF(missed == 0, "%d perturbed temperatures went unnoticed", missed);
}

/* The fused kernel (a boolean mask) and the spelled-out softmax (asked for the
 * weights) give the same output; no weight falls on a token's own key. */
TEST(vit_lsa_fused_and_spelled_out_agree) {
    tf_params *ps = tf_params_new();
    tf_mha m;
    tf_mha_config cfg = tf_mha_config_default(8, 2);
    cfg.lsa = 1;
    CHECK(tf_mha_register(ps, "", &m, &cfg) == 0 && tf_params_init(ps, 3) == 0 && m.temperature);
    tf_f32(m.temperature)[0] = 1.7f, tf_f32(m.temperature)[1] = 0.6f;
    tf_ctx *c = tf_ctx_new(0);
    tf_tensor *x = tf_tensor_new(c, TF_DTYPE_F32, 3, (int64_t[]){2, 5, 8}, 0), *w = NULL;
    for (int i = 0; i < 80; i++) tf_f32(x)[i] = sinf(0.7f * (float)i);
    tf_tensor *a = tf_mha_forward(c, &m, x, x, x, NULL, NULL), *b = tf_mha_forward(c, &m, x, x, x, NULL, &w);
    CHECKF(a && b && w, "%s", tf_error());
    double diff = 0, own = 0;
    for (int i = 0; i < 80; i++) diff = fmax(diff, fabs(tf_f32(a)[i] - tf_f32(b)[i]));
    for (int r = 0; r < 2; r++)
        for (int i = 0; i < 5; i++) own = fmax(own, tf_f32(w)[(r * 5 + i) * 5 + i]);
    printf("    fused against spelled out: max |diff| %.2e; largest weight on a token's own key %g\n", diff, own);
    CHECK(diff <= 1e-6 && own == 0.0);
    tf_ctx_free(c), tf_params_free(ps);
}

TEST(vit_lsa_folder_round_trips_and_hf_export_refuses) {
    char tmp[] = "/tmp/tformer_vitlsa_XXXXXX", dir[256];
    CHECK(mkdtemp(tmp) != NULL);
    tf_vit_config c = tf_vit_config_default();
    c.image_size = 12, c.patch_size = 4, c.channels = 1, c.d_model = 12, c.n_head = 3, c.n_layer = 2, c.n_labels = 3;
    c.lsa = 1;
    tf_vit *m = tf_vit_new(&c, 5);
    CHECK(m && m->layer[0].self_attn.temperature && tf_f32(m->layer[0].self_attn.temperature)[2] == 1.0f);
    test_randomize_params(m->params, 9);
    snprintf(dir, sizeof dir, "%s/hf", tmp);
    CHECK(tf_vit_save_hf(m, dir) == -1);
    CHECKF(strstr(tf_error(), "locality self-attention") && strstr(tf_error(), "no Hugging Face form"), "%s", tf_error());
    CHECK(access(dir, F_OK) != 0);
    tf_vit *back = NULL;
    CHECKF(test_vit_folder_matches(m, tmp, &back) == 0, "%s", tf_error());
    CHECK(back && back->cfg.lsa);
    /* an lsa checkpoint does not fit a model without, and the signature without lsa is the one before it existed */
    char s1[1024], s2[1024];
    tf_vit_config p = c;
    p.lsa = 0;
    CHECK(tf_fields_signature(&(tf_fields){&tf_vit_config_table, &c}, 1, s1, sizeof s1) == 0 &&
          tf_fields_signature(&(tf_fields){&tf_vit_config_table, &p}, 1, s2, sizeof s2) == 0);
    CHECKF(strstr(s1, "lsa=true") && !strstr(s2, "lsa"), "%s | %s", s1, s2);
    tf_vit_free(back), tf_vit_free(m);
    test_rm_rf(tmp);
}

TEST(vit_lsa_bad_settings_are_clear_errors) {
    tf_params *ps = tf_params_new();
    tf_mha m;
    tf_mha_config cfg = tf_mha_config_default(8, 2);
    cfg.lsa = 1, cfg.nystrom = 1;
    CHECK(tf_mha_register(ps, "", &m, &cfg) == -1 && strstr(tf_error(), "lsa"));
    cfg.nystrom = 0;
    CHECK(tf_mha_register(ps, "", &m, &cfg) == 0 && tf_params_init(ps, 3) == 0);
    tf_ctx *c = tf_ctx_new(0);
    tf_tensor *x = tf_tensor_new(c, TF_DTYPE_F32, 3, (int64_t[]){1, 1, 8}, 0);
    tf_attn_mask causal = {NULL, NULL, 1};
    CHECK(!tf_mha_forward(c, &m, x, x, x, NULL, NULL) && strstr(tf_error(), "1 key(s) leave a query none"));
    CHECK(!tf_mha_forward(c, &m, x, x, x, &causal, NULL) && strstr(tf_error(), "not with causal masking"));
    tf_block_config b = tf_block_config_default(8, 2);
    b.self_attn.lsa = 1, b.self_attn.kind = TF_ATTN_CAUSAL;
    CHECK(tf_block_config_check(&b) == -1 && strstr(tf_error(), "needs full self-attention"));
    tf_ctx_free(c), tf_params_free(ps);
}
