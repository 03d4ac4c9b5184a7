/* Rotary position embeddings: tf_rope against transformers' own functions
 * (tests/ref/gen_rope_fixtures.py: LLaMA's rotate_half pairs, RoFormer's
 * interleaved pairs), outputs and gradients; the other pairing or a position
 * off by one fails; the scores of rotated q and k depend on the offset m - n
 * only; a block with rotary positions gives through a KV cache what its full
 * pass gives; a BERT with rotary positions and no position table round-trips
 * its folder; bad settings are errors that name them. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "test.h"

#define ROPE_DIR "tests/fixtures_rope"
#define TOL 1e-5

/* One case: the largest of the output's max |diff| and the gradient's relative
 * error; other_pairing or shift change what is computed (the check must fail). */
static double rope_case(const char *name, int other_pairing, int shift) {
    char p[512];
    snprintf(p, sizeof p, "%s/%s/case.safetensors", ROPE_DIR, name);
    tf_st_file *f = tf_st_open(p);
    tf_arena *a = tf_arena_new(0);
    tf_ctx *ctx = tf_ctx_new(1);
    double worst = -1;
    tf_tensor *x = f ? test_st_tensor(f, "x", a) : NULL, *r = f ? test_st_tensor(f, "r", a) : NULL;
    tf_tensor *want = f ? test_st_tensor(f, "out", a) : NULL, *gx = f ? test_st_tensor(f, "grad_x", a) : NULL;
    tf_tensor *spec = f ? test_st_tensor(f, "spec", a) : NULL;  // (3): start, base, kind
    if (x && r && want && gx && spec && tf_numel(spec) == 3) {
        tf_tensor *leaf = tf_tensor_new(ctx, TF_DTYPE_F32, x->ndim, x->shape, 1);
        memcpy(leaf->data, x->data, (size_t)tf_numel(x) * sizeof(float));
        int kind = (int)tf_f32(spec)[2];
        if (other_pairing) kind = kind == TF_ROPE_HALVES ? TF_ROPE_INTERLEAVED : TF_ROPE_HALVES;
        tf_tensor *y = tf_rope(ctx, leaf, (int64_t)tf_f32(spec)[0] + shift, tf_f32(spec)[1], (tf_rope_kind)kind);
        if (y && tf_backward(ctx, y, r) == 0) {
            worst = test_max_abs_diff(tf_f32(y), tf_f32(want), tf_numel(y));
            double e = test_rel_err(leaf->grad, tf_f32(gx), (long)tf_numel(gx));
            if (!(e <= worst)) worst = e;
        }
    }
    tf_ctx_free(ctx);
    tf_arena_free(a);
    tf_st_close(f);
    return worst;
}

TEST(rope_matches_transformers) {
    static const char *const CASES[] = {"halves_llama", "halves_llama_start13_base500", "interleaved_roformer",
                                        "interleaved_roformer_start6"};
    double worst = 0;
    for (int i = 0; i < 4; i++) {
        double e = rope_case(CASES[i], 0, 0), paired = rope_case(CASES[i], 1, 0), moved = rope_case(CASES[i], 0, 1);
        CHECKF(e >= 0 && e <= TOL, "%s: error %g (%s)", CASES[i], e, tf_error());
        CHECKF(paired > 100 * TOL && moved > 100 * TOL, "%s: the other pairing (%g) or a position off by one (%g) "
               "passes", CASES[i], paired, moved);
        if (e > worst) worst = e;
    }
    printf("    4 cases (LLaMA's halves, RoFormer's interleaved pairs; starts 0-13, bases 500 and 10000), worst "
           "error %.2e\n", worst);
}

/* s (T,T) = rope(q, start) rope(k, start)^T for q, k (1,1,T,D). */
static tf_tensor *scores(tf_ctx *ctx, tf_tensor *q, tf_tensor *k, int64_t start, tf_rope_kind kind) {
    return tf_matmul(ctx, tf_rope(ctx, q, start, 10000.0f, kind), tf_rope(ctx, k, start, 10000.0f, kind), 0, 1);
}

TEST(rope_scores_depend_on_the_offset_only) {
    tf_ctx *ctx = tf_ctx_new(1);
    tf_tensor *q = tf_tensor_new(ctx, TF_DTYPE_F32, 4, (int64_t[]){1, 1, 6, 8}, 0);
    tf_tensor *k = tf_tensor_new(ctx, TF_DTYPE_F32, 4, (int64_t[]){1, 1, 6, 8}, 0);
    tf_tensor_fill_normal(q, 1, 1.0f), tf_tensor_fill_normal(k, 2, 1.0f);
    for (int kind = TF_ROPE_HALVES; kind <= TF_ROPE_INTERLEAVED; kind++) {
        tf_tensor *s0 = scores(ctx, q, k, 0, (tf_rope_kind)kind), *s9 = scores(ctx, q, k, 9, (tf_rope_kind)kind);
        tf_tensor *plain = tf_matmul(ctx, q, k, 0, 1);
        CHECK(s0 && s9 && plain);
        double same = test_max_abs_diff(tf_f32(s0), tf_f32(s9), 36), moved = test_max_abs_diff(tf_f32(s0), tf_f32(plain), 36);
        CHECKF(same < 1e-5 && moved > 1e-2, "kind %d: shifted by 9 %g (want ~0), against no rotation %g", kind, same,
               moved);
        /* the diagonal (offset 0) is q . k unturned */
        for (int t = 0; t < 6; t++) CHECK(fabs(tf_f32(s0)[t * 7] - tf_f32(plain)[t * 7]) < 1e-5);
    }
    tf_ctx_free(ctx);
}

/* Two causal pre-LN blocks (d_model 12, 3 heads of 4) with rotary positions:
 * the full pass on x (2,8,12) differs from the same weights' without them, and
 * the positions fed in pieces (3, 1, 4) through a KV cache give the full pass. */
TEST(rope_block_cache_equals_full_pass) {
    for (int kind = TF_ROPE_HALVES; kind <= TF_ROPE_INTERLEAVED; kind++) {
        tf_block_config c = tf_block_config_default(12, 3);
        c.d_ff = 20, c.norm_first = 1, c.activation = TF_ACT_GELU, c.self_attn.kind = TF_ATTN_CAUSAL, c.self_attn.rope = (tf_rope_kind)kind;
        tf_params *ps = tf_params_new();
        tf_block bl[2];
        CHECK(test_two_blocks_new(ps, bl, &c) == 0);
        tf_ctx *ctx = tf_ctx_new(0);
        tf_tensor *x = tf_tensor_new(ctx, TF_DTYPE_F32, 3, (int64_t[]){2, 8, 12}, 0);
        tf_tensor_fill_normal(x, 5, 1.0f);
        tf_tensor *full = test_two_blocks(ctx, bl, &c, x, NULL);
        tf_block_config none = c;
        none.self_attn.rope = TF_ROPE_NONE;
        for (int l = 0; l < 2; l++) bl[l].self_attn.cfg.rope = TF_ROPE_NONE;
        tf_tensor *plain = test_two_blocks(ctx, bl, &none, x, NULL);
        for (int l = 0; l < 2; l++) bl[l].self_attn.cfg.rope = (tf_rope_kind)kind;
        CHECK(full && plain && test_max_abs_diff(tf_f32(full), tf_f32(plain), tf_numel(full)) > 1e-3);
        double worst = test_two_blocks_cached(ctx, bl, &c, x, full);
        CHECKF(worst >= 0 && worst < 2e-6, "kind %d: the cached pass differs from the full pass by %g (%s)", kind, worst,
               tf_error());
        tf_ctx_free(ctx);
        tf_params_free(ps);
    }
}

TEST(rope_bad_settings_are_errors) {
    tf_ctx *ctx = tf_ctx_new(1);
    tf_tensor *odd = tf_tensor_new(ctx, TF_DTYPE_F32, 2, (int64_t[]){3, 5}, 0);
    tf_tensor *even = tf_tensor_new(ctx, TF_DTYPE_F32, 2, (int64_t[]){3, 4}, 0);
    CHECK(!tf_rope(ctx, odd, 0, 10000.0f, TF_ROPE_HALVES) && strstr(tf_error(), "D even"));
    CHECK(!tf_rope(ctx, even, 0, 10000.0f, (tf_rope_kind)7) && strstr(tf_error(), "pairing 7"));
    CHECK(!tf_rope(ctx, even, 0, 1.0f, TF_ROPE_HALVES) && strstr(tf_error(), "base 1"));
    CHECK(!tf_rope(ctx, even, -1, 10000.0f, TF_ROPE_HALVES) && strstr(tf_error(), "start -1"));
    tf_block_config c = tf_block_config_default(12, 4); /* heads of 3 */
    c.self_attn.rope = TF_ROPE_HALVES;
    CHECK(tf_block_config_check(&c) != 0 && strstr(tf_error(), "head dim 3 is odd"));
    c = tf_block_config_default(12, 2), c.self_attn.rope = TF_ROPE_INTERLEAVED, c.self_attn.rope_base = -5.0f;
    CHECK(tf_block_config_check(&c) != 0 && strstr(tf_error(), "base -5"));
    c.self_attn.rope_base = 0.0f; /* the default base, 10000 */
    CHECK(tf_block_config_check(&c) == 0);
    /* cross-attention with rotary positions */
    tf_mha_config mc = tf_mha_config_default(8, 2);
    mc.rope = TF_ROPE_HALVES;
    tf_params *ps = tf_params_new();
    tf_mha m;
    CHECK(tf_mha_register(ps, "a.", &m, &mc) == 0 && tf_params_init(ps, 1) == 0);
    tf_tensor *q = tf_tensor_new(ctx, TF_DTYPE_F32, 3, (int64_t[]){1, 3, 8}, 0);
    tf_tensor *mem = tf_tensor_new(ctx, TF_DTYPE_F32, 3, (int64_t[]){1, 4, 8}, 0);
    CHECK(tf_mha_forward(ctx, &m, q, q, q, NULL, NULL) != NULL);
    CHECK(!tf_mha_forward(ctx, &m, q, mem, mem, NULL, NULL) && strstr(tf_error(), "self-attention"));
    tf_params_free(ps);
    tf_ctx_free(ctx);
}

/* A BERT with rotary positions and no position table (RoFormer's embeddings):
 * no position tensor, the order of the tokens still matters, the folder is
 * tformer's and reads back to the same logits; position_ids and a model
 * with neither kind of position are refused. */
TEST(rope_bert_without_a_position_table) {
    tf_bert_config c = tf_bert_config_default(19, 8, 2, 2, 8);
    c.d_ff = 12, c.head = TF_BERT_SEQ_CLS, c.n_labels = 3, c.dropout = c.attn_dropout = 0, c.pooler = 1;
    c.learned_positions = 0, c.attention.rope = TF_ROPE_INTERLEAVED;
    CHECKF(tf_bert_config_check(&c) == 0, "%s", tf_error());
    tf_bert *m = tf_bert_new(&c, 7);
    CHECK(m && !tf_params_get(m->params, "bert.embeddings.position_embeddings.weight") &&
          tf_params_get(m->params, "bert.embeddings.word_embeddings.weight"));
    tf_ctx *ctx = tf_ctx_new(1);
    tf_tensor *ids = tf_tensor_new(ctx, TF_DTYPE_I32, 2, (int64_t[]){2, 6}, 0);
    for (int i = 0; i < 12; i++) tf_i32(ids)[i] = (i * 7 + 1) % 19;
    for (int t = 0; t < 6; t++) tf_i32(ids)[6 + t] = tf_i32(ids)[5 - t]; /* row 1: row 0 reversed */
    tf_bert_inputs in = {.input_ids = ids};
    tf_bert_outputs out;
    CHECK(tf_bert_run(ctx, m, &in, &out) == 0);
    CHECKF(test_max_abs_diff(tf_f32(out.logits), tf_f32(out.logits) + 3, 3) > 1e-4,
           "a sequence and its reverse give the same logits: the rotary positions did nothing");
    char dir[] = "/tmp/tformer_rope_XXXXXX", path[600];
    CHECK(mkdtemp(dir) != NULL && tf_bert_save(m, dir) == 0);
    snprintf(path, sizeof path, "%s/config.json", dir);
    size_t len;
    char *text = test_slurp(path, &len);
    CHECK(text && strstr(text, "\"tformer-bert\"") && strstr(text, "\"tformer_learned_positions\":\tfalse") &&
          strstr(text, "\"tformer_rope\":\t\"interleaved\""));
    free(text);
    tf_bert *r = tf_bert_load(dir, NULL);
    tf_bert_outputs back;
    CHECKF(r && !r->cfg.learned_positions && r->cfg.attention.rope == TF_ROPE_INTERLEAVED, "%s",
           r ? "settings lost" : tf_error());
    CHECK(r && tf_bert_run(ctx, r, &in, &back) == 0 && !memcmp(back.logits->data, out.logits->data, 2 * 3 * 4));
    tf_bert_free(r);
    snprintf(path, sizeof path, "%s/config.json", dir), unlink(path);
    snprintf(path, sizeof path, "%s/model.safetensors", dir), unlink(path);
    rmdir(dir);
    tf_tensor *pos = tf_tensor_new(ctx, TF_DTYPE_I32, 2, (int64_t[]){2, 6}, 1);
    tf_bert_inputs with_pos = {.input_ids = ids, .position_ids = pos};
    CHECK(tf_bert_run(ctx, m, &with_pos, &out) != 0 && strstr(tf_error(), "no position table"));
    c.attention.rope = TF_ROPE_NONE;
    CHECK(tf_bert_config_check(&c) != 0 && strstr(tf_error(), "needs rotary positions"));
    tf_ctx_free(ctx);
    tf_bert_free(m);
}

/* ---------------------------------------------------------------- RoFormer through hf-run */

#define ROFORMER_DIR "tests/fixtures_roformer"
#define ROFORMER_BODY ROFORMER_DIR "/model_d4_T7"
#define ROFORMER_MLM ROFORMER_DIR "/mlm_d4_T10_labels"

/* The BERT family with interleaved rotary positions and no position table is
 * RoFormer: every case of tests/fixtures_roformer (tests/ref/gen_roformer_fixtures.py:
 * transformers' RoFormerModel and its masked-LM, token and span heads) through hf-run. */
TEST(rope_roformer_hf_run_matches_transformers) {
    int cases = 0;
    double worst = 0;
    const char *dir = test_fixture_dir_or(ROFORMER_DIR);
    int failed = test_hf_run_dir(dir, TOL, NULL, NULL, &cases, &worst);
    printf("    %d RoFormer cases, %d failed, worst max |diff| %.2e\n", cases, failed, worst);
    /* the committed seven, or the folders of --fixtures (hf-conformance: four written by tformer) */
    CHECKF(cases >= (strcmp(dir, ROFORMER_DIR) ? 1 : 7) && failed == 0, "%d of %d cases failed", failed, cases);
}

/* A moved weight fails the comparison (the rotation runs on q and k of every layer: a
 * query or key weight of either layer is noticed), and so does rotating the other pairs. */
TEST(rope_roformer_perturbed_weight_fails_the_comparison) {
    static const test_weight W[] = {
        {"encoder.layer.0.attention.self.query.weight", 5}, {"encoder.layer.1.attention.self.key.weight", 9},
        {"encoder.layer.0.attention.self.value.bias", 2},   {"embeddings.word_embeddings.weight", 12 * 8 + 1}, /* token 12: in both rows */
        {"embeddings.token_type_embeddings.weight", 3},     {"encoder.layer.1.output.LayerNorm.weight", 4},
    };
    const int n = (int)(sizeof W / sizeof *W);
    double same, least;
    int missed = test_hf_perturbed(ROFORMER_BODY, W, n, TOL, &same, &least);
    printf("    unchanged copy %.2e; one element + 1e-3 of each of %d tensors: %.2e or more\n", same, n, least);
    CHECK(same >= 0 && same <= TOL);
    CHECKF(missed == 0, "%d perturbed tensors went unnoticed", missed);
}

/* RoFormer settings tformer does not implement, its classes with other heads, an
 * argument its forward() lacks and a sinusoid table that is not RoFormer's: errors. */
#define IDS(b, t, v) {"input_ids", TF_ST_I64, 2, {b, t}, v}
static const test_bad_case ROFORMER_BAD[] = {
    {"v turned too", NULL, "\"rotary_value\": false", "\"rotary_value\": true", NULL, {IDS(2, 7, 1)},
     {"config.json", "\"rotary_value\" must be false"}},
    {"a projection after the embeddings", NULL, "\"embedding_size\": 8", "\"embedding_size\": 4", NULL,
     {IDS(2, 7, 1)}, {"config.json", "\"embedding_size\" must be null or hidden_size 8"}},
    {"another head", NULL, "\"RoFormerModel\"", "\"RoFormerForSequenceClassification\"", NULL, {IDS(2, 7, 1)},
     {"RoFormerForSequenceClassification", "is not supported by hf-run"}},
    {"position ids", NULL, NULL, NULL, NULL, {IDS(2, 7, 1), {"position_ids", TF_ST_I64, 2, {2, 7}, 0}},
     {"'position_ids' is not an argument of RoFormerModel.forward()", NULL}},
    {"a length past the table", NULL, NULL, NULL, NULL, {IDS(1, 17, 1)}, {"17", "max_position_embeddings 16"}},
};
#undef IDS

TEST(rope_roformer_bad_input_is_a_clear_error) {
    const size_t n = sizeof ROFORMER_BAD / sizeof ROFORMER_BAD[0];
    int bad = test_hf_run_bad_cases(ROFORMER_BAD, n, ROFORMER_BODY, "ROPE_VERBOSE");
    CHECKF(bad == 0, "%d of %zu bad inputs were not a clear error", bad, n);
    char dir[] = "/tmp/tformer_roformer_XXXXXX", args[1024], out[4096];
    CHECK(mkdtemp(dir) != NULL);
    const char *src = test_fixture_dir_or(ROFORMER_MLM);
    CHECK(test_copy_case(src, dir, NULL, NULL, "roformer.encoder.embed_positions.weight", 2 * 4 + 1, 1e-3f, NULL) == 0);
    snprintf(args, sizeof args, "hf-run --model %s --input %s/input.safetensors --output %s/o.safetensors", dir, src,
             dir);
    int rc = test_run_cli("", args, out, sizeof out);
    CHECKF(rc != 0 && strstr(out, "is not RoFormer's sinusoid table (row 2, column 1"), "rc %d\n%s", rc, out);
    /* RoFormer's own heads, refused by the BERT family itself (hf-run refuses them first) */
    CHECK(test_copy_config(src, dir, "\"RoFormerForMaskedLM\"", "\"RoFormerForCausalLM\"") == 0);
    tf_bert *m = tf_bert_load(dir, NULL);
    CHECKF(!m && strstr(tf_error(), "\"RoFormerForCausalLM\": tformer reads RoFormerModel"), "%s",
           m ? "loaded" : tf_error());
    test_rm_rf(dir);
}

/* ---------------------------------------------------------------- RoFormer written */

static tf_tensor *int_tensor(tf_ctx *ctx, int64_t B, int64_t T, int mod, int add) {
    tf_tensor *t = tf_tensor_new(ctx, TF_DTYPE_I32, T ? 2 : 1, T ? (int64_t[]){B, T} : (int64_t[]){B}, 0);
    for (int64_t i = 0; t && i < tf_numel(t); i++) tf_i32(t)[i] = (int32_t)((i * 7 + add) % mod);
    return t;
}

/* A model with exactly RoFormer's arithmetic (interleaved rotary positions,
 * no position table, post-LN, no pooler) is written as RoFormer: each of the
 * four classes with random weights reads back to the same outputs (bits), the
 * folder holds RoFormer's names and its sinusoid table; `make hf-conformance`
 * keeps the folders (TFORMER_EXPORT_DIR) and has transformers load them and
 * compute their outputs, compared through hf-run. A pooler keeps tformer's folder. */
TEST(rope_roformer_export_for_transformers) {
    static const tf_bert_head HEADS[] = {TF_BERT_BODY, TF_BERT_MLM, TF_BERT_TOKEN_CLS, TF_BERT_QA};
    const char *keep = getenv("TFORMER_EXPORT_DIR");
    char root[512] = "/tmp/tformer_roexp_XXXXXX", dir[600], path[700];
    if (keep) snprintf(root, sizeof root, "%s", keep);
    CHECK(keep || mkdtemp(root));
    const int64_t B = 2, T = 6;
    for (int k = 0; k < 4; k++) {
        tf_bert_config c = tf_bert_config_default(19, 8, 2, 2, 8);
        c.d_ff = 12, c.head = HEADS[k], c.n_labels = 3, c.dropout = c.attn_dropout = 0, c.pooler = 0;
        c.learned_positions = 0, c.attention.rope = TF_ROPE_INTERLEAVED, c.tied = HEADS[k] != TF_BERT_MLM;
        tf_bert *m = tf_bert_new(&c, 11 + (uint64_t)k);
        CHECKF(m, "%s", tf_error());
        for (int i = 0; i < tf_params_count(m->params); i++)
            tf_tensor_fill_normal(tf_params_tensor(m->params, i), 100 + (uint64_t)i, 0.3f);
        snprintf(dir, sizeof dir, "%s/roformer_%s", root, tf_bert_head_name(HEADS[k]));
        CHECKF(tf_bert_save(m, dir) == 0, "%s", tf_error());
        snprintf(path, sizeof path, "%s/config.json", dir);
        size_t len;
        char *text = test_slurp(path, &len);
        CHECKF(text && strstr(text, "\"model_type\":\t\"roformer\"") && strstr(text, "\"RoFormer"), "%s", text ? text : "");
        free(text);
        snprintf(path, sizeof path, "%s/model.safetensors", dir);
        tf_st_file *f = tf_st_open(path);
        const char *table = k ? "roformer.encoder.embed_positions.weight" : "encoder.embed_positions.weight";
        CHECKF(f && tf_st_find(f, table) && !tf_st_find(f, "bert.embeddings.word_embeddings.weight"), "%s", path);
        tf_st_close(f);
        tf_ctx *ctx = tf_ctx_new(1);
        tf_tensor *mask = int_tensor(ctx, B, T, 2, 0);
        for (int i = 0; i < B * T; i++) tf_i32(mask)[i] = i < T + 4; /* the second row padded after 4 tokens */
        tf_bert_inputs in = {.input_ids = int_tensor(ctx, B, T, 19, 1), .attention_mask = mask,
                             .token_type_ids = int_tensor(ctx, B, T, 2, 0)};
        if (HEADS[k] == TF_BERT_MLM || HEADS[k] == TF_BERT_TOKEN_CLS)
            in.labels = int_tensor(ctx, B, T, HEADS[k] == TF_BERT_MLM ? 19 : 3, 2);
        if (HEADS[k] == TF_BERT_QA) in.start_positions = int_tensor(ctx, B, 0, T, 1), in.end_positions = int_tensor(ctx, B, 0, T, 4);
        tf_bert *r = tf_bert_load(dir, NULL);
        tf_bert_outputs a, b;
        CHECKF(r && tf_bert_run(ctx, m, &in, &a) == 0 && tf_bert_run(ctx, r, &in, &b) == 0, "%s", tf_error());
        tf_tensor *x = k == 0 ? a.last_hidden_state : k == 3 ? a.start_logits : a.logits;
        tf_tensor *y = k == 0 ? b.last_hidden_state : k == 3 ? b.start_logits : b.logits;
        CHECKF(r->cfg.attention.rope == TF_ROPE_INTERLEAVED && !memcmp(x->data, y->data, (size_t)tf_numel(x) * 4),
               "%s: the folder read back gives other outputs", dir);
        tf_st_writer *w = tf_st_writer_new();
        CHECK(w && !tf_st_writer_add(w, "input_ids", in.input_ids) && !tf_st_writer_add(w, "attention_mask", mask) &&
              !tf_st_writer_add(w, "token_type_ids", in.token_type_ids));
        if (in.labels) CHECK(!tf_st_writer_add(w, "labels", in.labels));
        if (in.start_positions)
            CHECK(!tf_st_writer_add(w, "start_positions", in.start_positions) &&
                  !tf_st_writer_add(w, "end_positions", in.end_positions));
        snprintf(path, sizeof path, "%s/input.safetensors", dir);
        CHECK(tf_st_writer_save(w, path) == 0);
        tf_st_writer_free(w);
        tf_bert_free(r), tf_bert_free(m), tf_ctx_free(ctx);
        if (!keep) test_rm_rf(dir);
    }
    /* the same body with a pooler: RoFormerModel has none, so the folder stays tformer's */
    tf_bert_config c = tf_bert_config_default(19, 8, 2, 2, 8);
    c.d_ff = 12, c.learned_positions = 0, c.attention.rope = TF_ROPE_INTERLEAVED, c.pooler = 1;
    tf_bert *m = tf_bert_new(&c, 3);
    snprintf(dir, sizeof dir, "%s/pooled", root);
    CHECK(m && tf_bert_save(m, dir) == 0);
    snprintf(path, sizeof path, "%s/config.json", dir);
    size_t len;
    char *text = test_slurp(path, &len);
    CHECKF(text && strstr(text, "\"tformer-bert\""), "%s", text ? text : "");
    free(text), tf_bert_free(m);
    test_rm_rf(dir);
    if (!keep) rmdir(root);
}
