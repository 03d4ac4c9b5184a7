/* Sparse attention kinds in the one block: multi-head attention with a
 * pattern equals masked dense attention, GPT and BERT with a pattern that
 * hides nothing equal their full attention, knobs and refusals, and
 * tformer train --attention smoke runs. */
#include <stdlib.h>
#include <string.h>

#include "test.h"

/* Output and every parameter's and the input's gradient of one mha, sparse or masked dense. */
static int mha_run(int sparse, const tf_sparse_pattern *p, int64_t T, float **out, long *n) {
    enum { B = 2, E = 8, H = 2 };
    tf_params *ps = tf_params_new();
    tf_mha m;
    tf_mha_config cfg = tf_mha_config_default(E, H);
    cfg.sparse = sparse, cfg.pattern = *p;
    if (tf_mha_register(ps, "", &m, &cfg) || tf_params_init(ps, 9)) return tf_params_free(ps), -1;
    tf_ctx *c = tf_ctx_new(1);
    tf_tensor *x = tf_tensor_new(c, TF_DTYPE_F32, 3, (int64_t[]){B, T, E}, 1);
    tf_tensor_fill_normal(x, 4, 1.0f);
    tf_tensor *pad = tf_tensor_new(c, TF_DTYPE_U8, 2, (int64_t[]){B, T}, 0), *mask = NULL;
    for (int64_t j = T - 3; j < T; j++) tf_u8(pad)[T + j] = 1;
    if (!sparse) {
        mask = tf_tensor_new(c, TF_DTYPE_U8, 2, (int64_t[]){T, T}, 0);
        tf_sparse_mask(p, T, tf_u8(mask));
    }
    tf_attn_mask am = {mask, pad, 0};
    tf_tensor *y = tf_mha_forward(c, &m, x, x, x, &am, NULL);
    tf_tensor *R = y ? tf_tensor_new(c, TF_DTYPE_F32, 3, y->shape, 0) : NULL;
    if (R) tf_tensor_fill_normal(R, 5, 1.0f);
    int rc = !y || tf_backward(c, y, R) ? -1 : 0;
    *n = 0;
    for (int i = 0; !rc && i <= tf_params_count(ps) + 1; i++) {
        const tf_tensor *t = i == 0 ? y : i == 1 ? x : tf_params_tensor(ps, i - 2);
        const float *src = i == 0 ? tf_f32(y) : t->grad;
        memcpy(*out + *n, src, (size_t)tf_numel(t) * sizeof(float));
        *n += (long)tf_numel(t);
    }
    tf_ctx_free(c);
    tf_params_free(ps);
    return rc;
}

TEST(sparse_mha_matches_masked_dense) {
    int g[] = {6};
    tf_sparse_pattern pats[] = {
        {.block = 4, .causal = 1, .window = 3, .dilation = 1},
        {.block = 4, .window = 2, .dilation = 2, .global_first = 1},
        {.block = 4, .window = 1, .dilation = 1, .global = g, .n_global = 1, .global_first = 2, .random = 1, .seed = 5},
    };
    float *a = malloc((1 << 16) * sizeof(float)), *b = malloc((1 << 16) * sizeof(float));
    for (size_t i = 0; i < sizeof pats / sizeof *pats; i++) {
        long na, nb;
        CHECK(mha_run(1, &pats[i], 19, &a, &na) == 0 && mha_run(0, &pats[i], 19, &b, &nb) == 0 && na == nb);
        double e = test_rel_err(a, b, na);
        CHECKF(e <= 1e-6, "pattern %zu: relative error %g", i, e);
    }
    free(a), free(b);
}

/* GPT's logits and loss gradient with a causal pattern that hides nothing equal full attention's. */
TEST(sparse_gpt_wide_window_equals_full) {
    tf_gpt_config cfg = tf_gpt_config_default(17, 24, 2, 2, 16);
    tf_gpt *full = tf_gpt_new(&cfg, 7);
    cfg.attention.kind = TF_ATTENTION_BIGBIRD, cfg.attention.window = 23, cfg.attention.block_size = 8;
    cfg.attention.global_tokens = 1;
    tf_gpt *sp = tf_gpt_new(&cfg, 7);
    CHECK(full && sp && sp->block.self_attn.kind == TF_ATTN_SPARSE && sp->block.self_attn.sparse.causal);
    float *res[2][2];
    tf_gpt *ms[2] = {full, sp};
    for (int k = 0; k < 2; k++) {
        tf_ctx *c = tf_ctx_new(1);
        tf_tensor *ids = tf_tensor_new(c, TF_DTYPE_I32, 2, (int64_t[]){2, 21}, 0);
        tf_tensor *tg = tf_tensor_new(c, TF_DTYPE_I32, 2, (int64_t[]){2, 21}, 0);
        for (int i = 0; i < 42; i++) tf_i32(ids)[i] = (i * 7 + 3) % 17, tf_i32(tg)[i] = (i * 5 + 1) % 17;
        tf_tensor *logits, *loss = tf_gpt_forward(c, ms[k], ids, tg, &logits);
        CHECK(loss && tf_backward(c, loss, NULL) == 0);
        tf_tensor *w = tf_params_get(ms[k]->params, "transformer.h.0.attn.c_attn.weight");
        res[k][0] = malloc((size_t)tf_numel(logits) * 4), res[k][1] = malloc((size_t)tf_numel(w) * 4);
        memcpy(res[k][0], tf_f32(logits), (size_t)tf_numel(logits) * 4);
        memcpy(res[k][1], w->grad, (size_t)tf_numel(w) * 4);
        tf_ctx_free(c);
    }
    double e0 = test_rel_err(res[1][0], res[0][0], 2 * 21 * 17), e1 = test_rel_err(res[1][1], res[0][1], 16 * 48);
    CHECKF(e0 <= 1e-6 && e1 <= 1e-6, "logits %g, c_attn gradient %g", e0, e1);
    for (int k = 0; k < 2; k++) free(res[k][0]), free(res[k][1]);
    tf_gpt_free(full), tf_gpt_free(sp);
}

/* Incremental decoding through the KV cache (5 positions, then one at a
 * time) gives the full pass's logits, with a causal BigBird pattern that hides keys. */
TEST(sparse_gpt_cache_equals_full_pass) {
    tf_gpt_config cfg = tf_gpt_config_default(17, 24, 2, 2, 16);
    cfg.attention.kind = TF_ATTENTION_BIGBIRD, cfg.attention.window = 2, cfg.attention.block_size = 4;
    cfg.attention.global_tokens = 1, cfg.attention.random_blocks = 1, cfg.attention.pattern_seed = 3;
    tf_gpt *m = tf_gpt_new(&cfg, 7);
    CHECK(m);
    enum { T = 19 };
    int32_t ids[T];
    for (int i = 0; i < T; i++) ids[i] = (i * 7 + 3) % 17;
    tf_ctx *c = tf_ctx_new(1);
    tf_tensor *all = tf_tensor_new(c, TF_DTYPE_I32, 2, (int64_t[]){1, T}, 0);
    memcpy(tf_i32(all), ids, sizeof ids);
    tf_gpt_inputs in = {.input_ids = all};
    tf_gpt_outputs full = {0};
    CHECK(tf_gpt_run(c, m, &in, &full) == 0);
    tf_kv_cache *cache = tf_gpt_cache_new(m, 1, T);
    double worst = 0;
    for (int t0 = 0; t0 < T;) {
        int n = t0 == 0 ? 5 : 1;
        tf_ctx *s = tf_ctx_new(1);
        tf_tensor *x = tf_tensor_new(s, TF_DTYPE_I32, 2, (int64_t[]){1, n}, 0);
        memcpy(tf_i32(x), ids + t0, (size_t)n * sizeof *ids);
        tf_gpt_inputs step = {.input_ids = x, .cache = cache};
        tf_gpt_outputs out = {0};
        CHECK(tf_gpt_run(s, m, &step, &out) == 0);
        double e = test_rel_err(tf_f32(out.logits), tf_f32(full.logits) + t0 * 17, n * 17);
        worst = e > worst ? e : worst;
        tf_ctx_free(s);
        t0 += n;
    }
    CHECKF(worst <= 1e-6, "cached logits: relative error %g", worst);
    tf_kv_cache_free(cache);
    tf_ctx_free(c);
    tf_gpt_free(m);
}

/* The same with padding (an attention_mask over the cached and the new
 * positions, row 1 left-padded with a hole): the key padding is checked
 * against the keys, not the new queries (a step of 5 positions after 7 was
 * refused as "(2,12) should be (2,5)"). */
TEST(sparse_gpt_cache_with_padding_equals_full_pass) {
    tf_gpt_config cfg = tf_gpt_config_default(17, 24, 2, 2, 16);
    cfg.attention.kind = TF_ATTENTION_LOCAL, cfg.attention.window = 5, cfg.attention.block_size = 4;
    tf_gpt *m = tf_gpt_new(&cfg, 7);
    CHECK(m);
    enum { B = 2, T = 19 };
    int32_t ids[B * T];
    uint8_t am[B * T];
    for (int i = 0; i < B * T; i++) ids[i] = (i * 7 + 3) % 17, am[i] = !(i >= T && (i - T < 3 || i - T == 9));
    tf_ctx *c = tf_ctx_new(1);
    tf_tensor *all = tf_tensor_new(c, TF_DTYPE_I32, 2, (int64_t[]){B, T}, 0);
    tf_tensor *mask = tf_tensor_new(c, TF_DTYPE_U8, 2, (int64_t[]){B, T}, 0);
    memcpy(tf_i32(all), ids, sizeof ids), memcpy(tf_u8(mask), am, sizeof am);
    tf_gpt_inputs in = {.input_ids = all, .attention_mask = mask};
    tf_gpt_outputs full = {0};
    CHECK(tf_gpt_run(c, m, &in, &full) == 0);
    tf_kv_cache *cache = tf_gpt_cache_new(m, B, T);
    double worst = 0;
    for (int t0 = 0, k = 0; t0 < T; k++) {
        int n = k == 0 ? 7 : k == 1 ? 5 : 1;
        tf_ctx *s = tf_ctx_new(1);
        tf_tensor *x = tf_tensor_new(s, TF_DTYPE_I32, 2, (int64_t[]){B, n}, 0);
        tf_tensor *mk = tf_tensor_new(s, TF_DTYPE_U8, 2, (int64_t[]){B, t0 + n}, 0);
        for (int b = 0; b < B; b++) {
            memcpy(tf_i32(x) + b * n, ids + b * T + t0, (size_t)n * sizeof *ids);
            memcpy(tf_u8(mk) + b * (t0 + n), am + b * T, (size_t)(t0 + n));
        }
        tf_gpt_inputs step = {.input_ids = x, .attention_mask = mk, .cache = cache};
        tf_gpt_outputs out = {0};
        CHECK(tf_gpt_run(s, m, &step, &out) == 0);
        for (int b = 0; b < B; b++)
            for (int t = 0; t < n; t++) {
                if (!am[b * T + t0 + t]) continue; /* a padded query: not compared */
                double e = test_rel_err(tf_f32(out.logits) + (b * n + t) * 17, tf_f32(full.logits) + (b * T + t0 + t) * 17, 17);
                worst = e > worst ? e : worst;
            }
        tf_ctx_free(s);
        t0 += n;
    }
    CHECKF(worst <= 1e-6, "cached logits: relative error %g", worst);
    tf_kv_cache_free(cache);
    tf_ctx_free(c);
    tf_gpt_free(m);
}

/* BERT with padding: a pattern that hides nothing equals full attention. */
TEST(sparse_bert_wide_window_equals_full) {
    tf_bert_config cfg = tf_bert_config_default(23, 32, 2, 2, 16);
    cfg.head = TF_BERT_BODY, cfg.dropout = cfg.attn_dropout = 0.0f;
    tf_bert *full = tf_bert_new(&cfg, 3);
    cfg.attention.kind = TF_ATTENTION_LOCAL, cfg.attention.window = 20, cfg.attention.block_size = 4;
    tf_bert *sp = tf_bert_new(&cfg, 3);
    CHECK(full && sp && sp->block.self_attn.kind == TF_ATTN_SPARSE && !sp->block.self_attn.sparse.causal);
    float *h[2];
    tf_bert *ms[2] = {full, sp};
    for (int k = 0; k < 2; k++) {
        tf_ctx *c = tf_ctx_new(1);
        tf_tensor *ids = tf_tensor_new(c, TF_DTYPE_I32, 2, (int64_t[]){2, 13}, 0);
        tf_tensor *am = tf_tensor_new(c, TF_DTYPE_I32, 2, (int64_t[]){2, 13}, 0);
        for (int i = 0; i < 26; i++) tf_i32(ids)[i] = (i * 7 + 3) % 23, tf_i32(am)[i] = i < 22;
        tf_bert_inputs in = {.input_ids = ids, .attention_mask = am};
        tf_bert_outputs out = {0};
        CHECK(tf_bert_run(c, ms[k], &in, &out) == 0);
        h[k] = malloc(26 * 16 * 4);
        memcpy(h[k], tf_f32(out.last_hidden_state), 26 * 16 * 4);
        tf_ctx_free(c);
    }
    double e = test_rel_err(h[1], h[0], 26 * 16);
    free(h[0]), free(h[1]);
    CHECKF(e <= 1e-6, "last_hidden_state %g", e);
    tf_bert_free(full), tf_bert_free(sp);
}

TEST(sparse_attention_options_refuse_unused_knobs) {
    tf_gpt_config cfg = tf_gpt_config_default(17, 24, 1, 2, 16);
    cfg.attention.kind = TF_ATTENTION_LOCAL, cfg.attention.dilation = 3;
    CHECK(tf_gpt_config_check(&cfg) == -1 && strstr(tf_error(), "attention local does not use dilation (set to 3)"));
    cfg.attention.kind = TF_ATTENTION_NYSTROM, cfg.attention.dilation = 2;
    CHECK(tf_gpt_config_check(&cfg) == -1 && strstr(tf_error(), "not causal"));
    cfg.attention.kind = TF_ATTENTION_DILATED, cfg.attention.dilation = 3;
    CHECK(tf_gpt_config_check(&cfg) == 0);
    tf_block_config b = tf_block_config_default(16, 2);
    b.self_attn.kind = TF_ATTN_SPARSE, b.self_attn.sparse = (tf_sparse_pattern){.block = 4, .window = 1, .dilation = 1};
    b.attn_dropout = 0.1f;
    CHECK(tf_block_config_check(&b) == -1 && strstr(tf_error(), "no dropout on the attention weights"));
}

/* tformer train --attention: a few steps of GPT (local) and BERT (bigbird);
 * the run folder's config.json keeps the kind, and generate reads it back. */
TEST(sparse_train_smoke) {
    char dir[] = "/tmp/tformer_sparse_XXXXXX", args[1024], out[8192];
    CHECK(mkdtemp(dir));
    const char *data = "../shared/data/tinyshakespeare/input.txt";
    snprintf(args, sizeof args, "train --arch gpt --data %s --out %s/gpt --steps 3 --batch 2 --context 32 --n-layer 1 "
             "--d-model 16 --n-head 2 --attention local --window 4 --block-size 8 --eval-every 3 --threads 1", data, dir);
    int rc = test_run_cli("", args, out, sizeof out);
    CHECKF(rc == 0, "gpt: %s", out);
    snprintf(args, sizeof args, "%s/gpt/config.json", dir);
    size_t len;
    char *cfg = test_slurp(args, &len);
    CHECKF(cfg && strstr(cfg, "\"tformer_attention\":\t\"local\"") && strstr(cfg, "\"tformer_window\":\t4"), "%s", cfg);
    free(cfg);
    snprintf(args, sizeof args, "generate --model %s/gpt --prompt ab --max-tokens 2", dir);
    rc = test_run_cli("", args, out, sizeof out);
    CHECKF(rc == 0 && !strncmp(out, "ab", 2), "generate: %d %s", rc, out);
    /* the kind is a recorded setting: resuming with another is a change to allow */
    snprintf(args, sizeof args, "train --arch gpt --data %s --out %s/gpt --steps 3 --batch 2 --context 32 --n-layer 1 "
             "--d-model 16 --n-head 2 --attention full --eval-every 3 --threads 1 --resume",
             data, dir);
    rc = test_run_cli("", args, out, sizeof out);
    CHECKF(rc != 0 && strstr(out, "attention \"local\" -> \"full\""), "resume: %d %s", rc, out);
    snprintf(args, sizeof args, "train --arch bert --data %s --tokenizer ../shared/data/bert/bert-base-uncased-vocab.txt "
             "--out %s/bert --steps 3 --batch 2 --context 32 --n-layer 1 --d-model 16 --n-head 2 --attention bigbird "
             "--window 2 --block-size 4 --global-tokens 1 --random-blocks 1 --eval-every 3 --threads 1", data, dir);
    rc = test_run_cli("", args, out, sizeof out);
    CHECKF(rc == 0, "bert: %s", out);
    test_rm_rf(dir);
}

/* hf-run BigBirdModel: original_full is BERT's arithmetic (tests/fixtures_hf/v4_bigbird_*
 * in hf_fixtures; block_sparse in test_bigbird.c); what tformer does not implement is refused by name; the
 * comparison notices a moved pooler weight (BigBird's pooler is one nn.Linear). */
#define BIGBIRD_CASE "tests/fixtures_hf/v4_bigbird_full_rightpad_types"
#define IDS5 {{"input_ids", TF_ST_I64, 2, {2, 5}, 1}}
TEST(sparse_bigbird_hf_run_refusals_and_perturbation) {
    static const test_bad_case bad[] = {
        {"another attention type", NULL, "\"original_full\"", "\"sliding\"", NULL, IDS5,
         {"config.json", "\"attention_type\" must be \"original_full\" or \"block_sparse\""}},
        {"rescaled embeddings", NULL, "\"rescale_embeddings\": false", "\"rescale_embeddings\": true", NULL, IDS5,
         {"config.json", "\"rescale_embeddings\" must be false"}},
        {"no bias", NULL, "\"use_bias\": true", "\"use_bias\": false", NULL, IDS5, {"config.json", "\"use_bias\""}},
        {"no pooler weight", NULL, NULL, NULL, "pooler.weight", IDS5, {"model.safetensors", "unexpected tensor 'pooler.bias'"}},
    };
    int n = test_hf_run_bad_cases(bad, sizeof bad / sizeof *bad, BIGBIRD_CASE, "HF_VERBOSE");
    CHECKF(n == 0, "%d of the BigBird refusals were not a clear error", n);
    static const test_weight w[] = {{"pooler.weight", 5}, {"encoder.layer.1.output.dense.bias", 3}};
    double same, least;
    int still = test_hf_perturbed(BIGBIRD_CASE, w, 2, 1e-5, &same, &least);
    CHECKF(still == 0 && same <= 1e-5, "unchanged copy %g, %d moved weights still pass (least %g)", same, still, least);
}
