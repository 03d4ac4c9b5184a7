/* Scalable-Softmax (Nakanishi 2025; tf_mha_config's ssmax, the attention
 * options' `ssmax`): each head's scores times s[h] ln n, n the keys a query
 * sees. Against PyTorch (tests/ref/gen_ssmax_fixtures.py: padded rows,
 * causal masking, lsa), outputs and the gradients of x, every weight and s,
 * through the fused kernel and the spelled-out softmax; a moved s fails; a
 * padded row gives what it gives alone; a causal block gives through a KV
 * cache what its full pass gives; a BERT folder round-trips as tformer's;
 * bad settings are clear errors (the flag's: tests/test_reliability.c). */
#include <stdlib.h>
#include <string.h>

#include "nn/nn_internal.h"
#include "test.h"

#define SSMAX_DIR "tests/fixtures_ssmax"
#define TOL 1e-5

static const char *const WEIGHTS[] = {"in_proj_weight", "in_proj_bias", "out_proj.weight", "out_proj.bias",
                                      "ssmax_scale", "temperature"};

/* s[h]'s gradient sums d scores * scores / s over (b, i, j), terms that cancel
 * (a softmax's gradient sums to 0 over the keys): its rounding scales with the
 * terms' sizes, not with the sum, so its error is max_h |got - want| over the
 * sum of the terms' sizes (the generator's float64 size_grad_ssmax_scale, H). */
static double s_grad_err(const float *got, const tf_tensor *want, const tf_tensor *size) {
    if (!size || tf_numel(size) != tf_numel(want)) return INFINITY;
    double e = 0;
    for (int64_t h = 0; h < tf_numel(want); h++)
        e = fmax(e, fabs((double)got[h] - tf_f32(want)[h]) / fmax((double)tf_f32(size)[h], 1e-30));
    return e;
}

/* One case through tf_mha: the largest of the output's max |diff| and the
 * gradients' relative errors; spelled_out asks for the weights (the unfused
 * softmax); bump is added to head 0's s after loading (the check must fail). */
static double ssmax_case(const char *dir, const char *name, int spelled_out, float bump) {
    char p[600];
    snprintf(p, sizeof p, "%s/%s/case.safetensors", dir, name);
    tf_st_file *f = tf_st_open(p);
    tf_arena *a = tf_arena_new(0);
    tf_ctx *ctx = tf_ctx_new(1);
    tf_params *ps = tf_params_new();
    double worst = -1;
    tf_tensor *x = f ? test_st_tensor(f, "x", a) : NULL, *r = f ? test_st_tensor(f, "r", a) : NULL;
    tf_tensor *want = f ? test_st_tensor(f, "out", a) : NULL, *pad = f ? test_st_tensor(f, "padding", a) : NULL;
    tf_tensor *spec = f ? test_st_tensor(f, "spec", a) : NULL;  // (3): n_head, causal, lsa
    if (!x || !r || !want || !pad || !spec || tf_numel(spec) != 3) goto done;
    int64_t B = x->shape[0], T = x->shape[1], E = x->shape[2];
    tf_mha m;
    tf_mha_config cfg = tf_mha_config_default((int)E, (int)tf_f32(spec)[0]);
    cfg.ssmax = 1.0f, cfg.lsa = tf_f32(spec)[2] != 0.0f;
    if (tf_mha_register(ps, "", &m, &cfg) || tf_params_init(ps, 1)) goto done;
    for (int i = 0; i < 6; i++) {
        tf_tensor *dst = tf_params_get(ps, WEIGHTS[i]), *src = test_st_tensor(f, WEIGHTS[i], a);
        if (!dst != !src || (dst && tf_numel(dst) != tf_numel(src))) goto done;
        if (dst) memcpy(dst->data, src->data, (size_t)tf_numel(dst) * sizeof(float));
    }
    tf_f32(m.ssmax_scale)[0] += bump;
    tf_tensor *leaf = tf_tensor_new(ctx, TF_DTYPE_F32, 3, x->shape, 1), *w = NULL;
    memcpy(leaf->data, x->data, (size_t)(B * T * E) * sizeof(float));
    tf_attn_mask mask = {.key_padding_mask = pad, .causal = tf_f32(spec)[1] != 0.0f};
    tf_tensor *y = tf_mha_forward(ctx, &m, leaf, leaf, leaf, &mask, spelled_out ? &w : NULL);
    if (!y || tf_backward(ctx, y, r)) goto done;
    worst = test_max_abs_diff(tf_f32(y), tf_f32(want), tf_numel(y));
    tf_tensor *gx = test_st_tensor(f, "grad_x", a);
    double e = gx ? test_rel_err(leaf->grad, tf_f32(gx), (long)tf_numel(gx)) : INFINITY;
    if (!(e <= worst)) worst = e;
    for (int i = 0; i < 6; i++) {
        char g[64];
        snprintf(g, sizeof g, "grad_%s", WEIGHTS[i]);
        tf_tensor *t = tf_params_get(ps, WEIGHTS[i]), *want_g = test_st_tensor(f, g, a);
        if (!t) continue;
        e = want_g ? test_rel_err(t->grad, tf_f32(want_g), (long)tf_numel(want_g)) : INFINITY;
        if (want_g && t == m.ssmax_scale) e = s_grad_err(t->grad, want_g, test_st_tensor(f, "size_grad_ssmax_scale", a));
        if (!(e <= worst)) worst = e;
    }
done:
    tf_params_free(ps);
    tf_ctx_free(ctx);
    tf_arena_free(a);
    tf_st_close(f);
    return worst;
}

TEST(ssmax_attention_matches_pytorch) {
    const char *dir = test_fixture_dir_or(SSMAX_DIR);
    char *names[64];
    int n = test_dir_entries(dir, names, 64);
    CHECKF(n >= (strcmp(dir, SSMAX_DIR) ? 1 : 4), "%s: %d cases", dir, n);
    double worst = 0;
    for (int i = 0; i < n; i++) {
        double fused = ssmax_case(dir, names[i], 0, 0.0f), spelled = ssmax_case(dir, names[i], 1, 0.0f);
        double moved = ssmax_case(dir, names[i], 0, 1e-3f);
        CHECKF(fused >= 0 && fused <= TOL && spelled >= 0 && spelled <= TOL, "%s: fused %g, spelled out %g (%s)",
               names[i], fused, spelled, tf_error());
        CHECKF(moved > TOL, "%s: head 0's s + 1e-3 passes (%g)", names[i], moved);
        worst = fmax(worst, fmax(fused, spelled));
    }
    printf("    %d cases (padded rows, causal, lsa; fused and spelled out): worst error %.2e, output and the "
           "gradients of x, the weights and s\n", n, worst);
    for (int i = 0; i < n; i++) free(names[i]);
}

/* Two causal pre-LN blocks with ssmax: s starts at the setting, the full pass
 * differs from the same weights' with s = 0 off, and the positions fed in
 * pieces (3, 1, 4) through a KV cache give the full pass (n grows with the
 * cache). */
TEST(ssmax_block_cache_equals_full_pass) {
    tf_block_config c = tf_block_config_default(12, 3);
    c.d_ff = 20, c.norm_first = 1, c.activation = TF_ACT_GELU, c.self_attn.kind = TF_ATTN_CAUSAL, c.self_attn.ssmax = 0.7f;
    tf_params *ps = tf_params_new();
    tf_block bl[2];
    CHECK(test_two_blocks_new(ps, bl, &c) == 0 && bl[1].self_attn.ssmax_scale &&
          tf_numel(bl[1].self_attn.ssmax_scale) == 3);
    CHECK(tf_f32(bl[0].self_attn.ssmax_scale)[0] == 0.7f && tf_f32(bl[1].self_attn.ssmax_scale)[2] == 0.7f);
    tf_f32(bl[1].self_attn.ssmax_scale)[1] = 1.3f;
    tf_ctx *ctx = tf_ctx_new(0);
    tf_tensor *x = tf_tensor_new(ctx, TF_DTYPE_F32, 3, (int64_t[]){2, 8, 12}, 0);
    tf_tensor_fill_normal(x, 5, 1.0f);
    tf_tensor *full = test_two_blocks(ctx, bl, &c, x, NULL);
    tf_tensor *saved[2] = {bl[0].self_attn.ssmax_scale, bl[1].self_attn.ssmax_scale};
    bl[0].self_attn.ssmax_scale = bl[1].self_attn.ssmax_scale = NULL;
    tf_tensor *plain = test_two_blocks(ctx, bl, &c, x, NULL);
    bl[0].self_attn.ssmax_scale = saved[0], bl[1].self_attn.ssmax_scale = saved[1];
    CHECK(full && plain && test_max_abs_diff(tf_f32(full), tf_f32(plain), tf_numel(full)) > 1e-3);
    double worst = test_two_blocks_cached(ctx, bl, &c, x, full);
    printf("    cached in pieces 3, 1, 4 against the full pass: %.2e\n", worst);
    CHECKF(worst >= 0 && worst < 2e-6, "the cached pass differs from the full pass by %g (%s)", worst, tf_error());
    tf_ctx_free(ctx);
    tf_params_free(ps);
}

/* A sequence classifier with ssmax (pre-LN, rotary positions, ListOps' kind
 * of model): row 1 padded from 5 to 9 tokens gives the logits it gives alone
 * (n counts the keys the padding leaves); with every s set to 1 / ln 9 an
 * unpadded row of 9 gives what the same weights give without ssmax. */
static tf_bert *ssmax_bert(float s) {
    tf_bert_config c = tf_bert_config_default(19, 16, 2, 2, 8);
    c.d_ff = 12, c.head = TF_BERT_SEQ_CLS, c.n_labels = 3, c.dropout = c.attn_dropout = 0, c.pooler = 1;
    c.norm_first = 1, c.learned_positions = 0, c.attention.rope = TF_ROPE_INTERLEAVED, c.attention.ssmax = s;
    if (tf_bert_config_check(&c)) return NULL;
    tf_bert *m = tf_bert_new(&c, 7);
    if (m) test_randomize_params(m->params, 11);
    return m;
}

static tf_tensor *logits(tf_ctx *ctx, const tf_bert *m, const int *ids, int B, int T, const int *lengths) {
    tf_tensor *t = tf_tensor_new(ctx, TF_DTYPE_I32, 2, (int64_t[]){B, T}, 0);
    tf_tensor *mask = tf_tensor_new(ctx, TF_DTYPE_I32, 2, (int64_t[]){B, T}, 0);
    for (int i = 0; i < B * T; i++) tf_i32(t)[i] = ids[i], tf_i32(mask)[i] = i % T < lengths[i / T];
    tf_bert_inputs in = {.input_ids = t, .attention_mask = mask};
    tf_bert_outputs out;
    return tf_bert_run(ctx, m, &in, &out) ? NULL : out.logits;
}

TEST(ssmax_bert_padding_changes_nothing) {
    tf_bert *m = ssmax_bert(0.45f), *plain = ssmax_bert(0.0f);
    CHECKF(m && plain, "%s", tf_error());
    CHECK(tf_params_get(m->params, "bert.encoder.layer.1.attention.self.ssmax_scale") &&
          !tf_params_get(plain->params, "bert.encoder.layer.1.attention.self.ssmax_scale"));
    tf_ctx *ctx = tf_ctx_new(0);
    static const int batch[18] = {1, 5, 9, 3, 7, 2, 4, 8, 6,   /* row 0: 9 tokens */
                                  1, 3, 3, 9, 12, 0, 0, 0, 0}; /* row 1: 5 tokens, then padding */
    int lens[2] = {9, 5}, alone_len[1] = {5};
    tf_tensor *both = logits(ctx, m, batch, 2, 9, lens), *alone = logits(ctx, m, batch + 9, 1, 5, alone_len);
    CHECKF(both && alone, "%s", tf_error());
    double d = test_max_abs_diff(tf_f32(both) + 3, tf_f32(alone), 3);
    /* s ln n = 1 for the unpadded row of 9: plain softmax attention */
    for (int l = 0; l < 2; l++)
        for (int h = 0; h < 2; h++) tf_f32(m->layer[l].self_attn.ssmax_scale)[h] = (float)(1.0 / log(9.0));
    for (int i = 0; i < tf_params_count(plain->params); i++) {
        tf_tensor *t = tf_params_tensor(plain->params, i);
        tf_tensor *u = tf_params_get(m->params, tf_params_name(plain->params, i));
        CHECK(u && tf_numel(u) == tf_numel(t));
        memcpy(t->data, u->data, (size_t)tf_numel(t) * sizeof(float));
    }
    int nine[1] = {9};
    tf_tensor *a = logits(ctx, m, batch, 1, 9, nine), *b = logits(ctx, plain, batch, 1, 9, nine);
    tf_tensor *c = logits(ctx, m, batch + 9, 1, 5, alone_len), *e = logits(ctx, plain, batch + 9, 1, 5, alone_len);
    CHECK(a && b && c && e);
    double same = test_max_abs_diff(tf_f32(a), tf_f32(b), 3), shorter = test_max_abs_diff(tf_f32(c), tf_f32(e), 3);
    printf("    padded against alone %.2e; s = 1/ln 9: 9 tokens against softmax %.2e, 5 tokens %.2e (differ)\n", d,
           same, shorter);
    CHECK(d < 1e-5 && same < 1e-5 && shorter > 1e-4);
    tf_ctx_free(ctx);
    tf_bert_free(m), tf_bert_free(plain);
}

/* The folder is tformer's (transformers has no s) and reads back to the same
 * logits; the signature names ssmax only when it is set. */
TEST(ssmax_bert_folder_round_trips) {
    tf_bert *m = ssmax_bert(0.3f);
    CHECKF(m, "%s", tf_error());
    tf_ctx *ctx = tf_ctx_new(0);
    static const int ids[7] = {1, 4, 4, 9, 2, 7, 3};
    int len[1] = {7};
    tf_tensor *want = logits(ctx, m, ids, 1, 7, len);
    char dir[] = "/tmp/tformer_ssmax_XXXXXX", path[600];
    CHECK(want && mkdtemp(dir) != NULL && tf_bert_save(m, dir) == 0);
    snprintf(path, sizeof path, "%s/config.json", dir);
    size_t n;
    char *text = test_slurp(path, &n);
    CHECKF(text && strstr(text, "\"tformer-bert\"") && strstr(text, "\"tformer_ssmax\":\t0.3"), "%s", text);
    free(text);
    tf_bert *back = tf_bert_load(dir, NULL);
    CHECKF(back && back->cfg.attention.ssmax == 0.3f, "%s", back ? "ssmax lost" : tf_error());
    tf_tensor *got = logits(ctx, back, ids, 1, 7, len);
    CHECK(got && !memcmp(got->data, want->data, 3 * sizeof(float)));
    char s1[2048], s2[2048];
    tf_bert_config plain = m->cfg;
    plain.attention.ssmax = 0.0f;
    CHECK(tf_fields_signature(&(tf_fields){&tf_bert_config_table, &m->cfg}, 1, s1, sizeof s1) == 0 &&
          tf_fields_signature(&(tf_fields){&tf_bert_config_table, &plain}, 1, s2, sizeof s2) == 0);
    CHECKF(strstr(s1, "ssmax=0.3") && !strstr(s2, "ssmax"), "%s | %s", s1, s2);
    tf_bert_free(back), tf_bert_free(m);
    tf_ctx_free(ctx);
    test_rm_rf(dir);
}

TEST(ssmax_bad_settings_are_clear_errors) {
    tf_params *ps = tf_params_new();
    tf_mha m;
    tf_mha_config cfg = tf_mha_config_default(8, 2);
    cfg.ssmax = -0.5f;
    CHECK(tf_mha_register(ps, "", &m, &cfg) == -1 && strstr(tf_error(), "ssmax -0.5"));
    cfg.ssmax = NAN;
    CHECK(tf_mha_register(ps, "", &m, &cfg) == -1 && strstr(tf_error(), "ssmax nan"));
    cfg.ssmax = 0.5f, cfg.nystrom = 1;
    CHECK(tf_mha_register(ps, "", &m, &cfg) == -1 && strstr(tf_error(), "Scalable-Softmax"));
    cfg.nystrom = 0;
    CHECK(tf_mha_register(ps, "", &m, &cfg) == 0 && tf_params_init(ps, 3) == 0);
    tf_ctx *c = tf_ctx_new(0);
    tf_tensor *x = tf_tensor_new(c, TF_DTYPE_F32, 3, (int64_t[]){1, 3, 8}, 0);
    tf_tensor *am = tf_tensor_new(c, TF_DTYPE_U8, 2, (int64_t[]){3, 3}, 0);
    tf_attn_mask with_mask = {.mask = am};
    CHECK(!tf_mha_forward(c, &m, x, x, x, &with_mask, NULL) && strstr(tf_error(), "not with an attn_mask"));
    tf_window_attn w = {.height = 1, .width = 3, .window = 1};
    CHECK(!tf_window_attend(c, &m, x, &w, NULL) && strstr(tf_error(), "no Scalable-Softmax"));
    tf_ctx_free(c);
    tf_params_free(ps);
    tf_block_config b = tf_block_config_default(8, 2);
    b.self_attn.ssmax = 0.5f, b.self_attn.kind = TF_ATTN_NYSTROM;
    CHECK(tf_block_config_check(&b) == -1 && strstr(tf_error(), "full or causal"));
    tf_attention_options o = {.kind = TF_ATTENTION_BIGBIRD, .window = 16, .dilation = 2, .random_blocks = 3,
                              .block_size = 16, .landmarks = 64, .rope_base = 10000.0f, .ssmax = 0.5f};
    b = tf_block_config_default(8, 2);
    CHECK(tf_attention_apply(&o, &b) == -1 && strstr(tf_error(), "attention bigbird: ssmax"));
    /* the flag's garbage, negative, NaN and inf values: test_reliability.c's flag table */
}
