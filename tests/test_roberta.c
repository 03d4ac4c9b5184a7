/* RoBERTa (the BERT family with tf_bert_config.roberta) against Hugging Face
 * transformers (tests/ref/gen_roberta_fixtures.py, 4.x and 5.x): every case of
 * tests/fixtures_roberta through `tformer hf-run` to 1e-5 relative L2 error
 * per field (the BERT cases' tolerance); the loss's gradients with respect to
 * every parameter against PyTorch's float64 autograd; RoBERTa's positions
 * given by hand as position_ids agree and BERT's 0..T-1 fail; a moved weight
 * fails, a position row RoBERTa never reads does not; refused settings and bad
 * inputs are clear errors; tformer's own RoBERTa folders round trip (and, in
 * `make roberta-conformance`, load in transformers). */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "test.h"

#define TOL 1e-5      /* relative L2 error of each output field, as tests/test_hf_run.c */
#define GRAD_TOL 1e-4 /* relative L2 error of each parameter's gradient, as the Nystromformer cases */
#define RB_DIR "tests/fixtures_roberta"
#define BODY_CASE RB_DIR "/v4_body_rightpad_pooler"
#define MLM_CASE RB_DIR "/v4_mlm_tied_relu_labels_grad"
#define SEQ_CASE RB_DIR "/v4_seqcls_3labels_grad"

TEST(roberta_hf_run_matches_transformers) {
    const char *dir = test_fixture_dir_or(RB_DIR);
    int cases, failed = test_hf_run_family(dir, "RoBERTa", TOL, 1, NULL, NULL, &cases);
    CHECKF(cases >= (strcmp(dir, RB_DIR) ? 1 : 12) && failed == 0, "%d of %d cases failed", failed, cases);
}

/* ---------------------------------------------------------------- gradients against PyTorch */

/* Backward through the whole model and RoBERTa's heads: the MLM head (erf
 * GELU under a relu body, the decoder tied to the word table), the
 * classifier's dense + tanh + out_proj, the token classifier on rows with
 * pad_token_id among the attended tokens (whose word and position rows take no
 * gradient, nn.Embedding's padding_idx). */
TEST(roberta_gradients_match_pytorch) {
    static const char *const CASES[] = {MLM_CASE, SEQ_CASE, RB_DIR "/v4_tokcls_pad_inside_grad"};
    int bad = test_gradient_cases(CASES, 3, GRAD_TOL, test_bert_gradient_case);
    CHECKF(bad == 0, "%d of 3 cases' gradients differ", bad);
}

/* XLM-RoBERTa (tests/fixtures_xlmr, TF_XLMR=1 tests/ref/gen_roberta_fixtures.py:
 * 5 cases from transformers 4.36, 3 from 5.24): XLMRobertaModel and
 * XLMRobertaFor* through hf-run, model_type "xlm-roberta", weights under
 * "roberta."; the loss's gradients in the two *_grad cases. */
#define XR_DIR "tests/fixtures_xlmr"

typedef struct {
    int grads, n_tensors;
    double worst; /* the gradients' worst relative error; infinite when one did not run */
} xr_grads;

static void xr_gradient(const char *path, void *arg) {
    xr_grads *g = arg;
    if (!strstr(path, "_grad")) return;
    double e = test_bert_gradient_case(path, &g->n_tensors);
    if (!(e >= 0 && e <= GRAD_TOL)) fprintf(stderr, "    %s: relative gradient error %g (%s)\n", path, e, tf_error());
    g->worst = e >= 0 ? fmax(g->worst, e) : INFINITY, g->grads++;
}

TEST(xlmr_hf_run_matches_transformers) {
    xr_grads g = {0, 0, 0};
    int cases, failed = test_hf_run_family(XR_DIR, "XLM-RoBERTa", TOL, 1, xr_gradient, &g, &cases);
    printf("    the loss's gradients in %d cases: worst relative error %.2e\n", g.grads, g.worst);
    CHECKF(cases == 8, "%d cases in " XR_DIR, cases);
    CHECKF(g.worst <= GRAD_TOL, "relative gradient error %g", g.worst);
    CHECKF(failed == 0, "%d of %d cases failed", failed, cases);
}

/* ---------------------------------------------------------------- positions */

/* BODY_CASE's inputs with position_ids: RoBERTa's (computed here from the ids:
 * pad + 1 + the count of non-padding tokens, pad at padding) or BERT's 0..T-1.
 * The relative error of hf-run's outputs against transformers' (without
 * position_ids), or -1. */
static double with_positions(int roberta, const char *tmp) {
    char in[600], out[600];
    snprintf(in, sizeof in, "%s/in.safetensors", tmp);
    snprintf(out, sizeof out, "%s/out.safetensors", tmp);
    tf_st_file *f = tf_st_open(BODY_CASE "/input.safetensors");
    tf_arena *a = tf_arena_new(0);
    tf_tensor *ids = f ? test_st_tensor(f, "input_ids", a) : NULL, *mask = f ? test_st_tensor(f, "attention_mask", a) : NULL;
    tf_tensor *pos = ids ? tf_tensor_alloc(a, TF_DTYPE_I32, 2, ids->shape, 0) : NULL;
    const int32_t pad = 1; /* the case's pad_token_id */
    for (int64_t b = 0; pos && b < ids->shape[0]; b++)
        for (int64_t t = 0, n = 0, T = ids->shape[1]; t < T; t++) {
            int real = tf_i32(ids)[b * T + t] != pad;
            n += real;
            tf_i32(pos)[b * T + t] = (int32_t)(roberta ? (real ? pad + n : pad) : t);
        }
    tf_st_writer *w = pos && mask ? tf_st_writer_new() : NULL;
    int rc = !w || tf_st_writer_add(w, "input_ids", ids) || tf_st_writer_add(w, "attention_mask", mask) ||
             tf_st_writer_add(w, "position_ids", pos) || tf_st_writer_save(w, in);
    tf_st_writer_free(w);
    tf_arena_free(a);
    tf_st_close(f);
    double rel = -1;
    if (!rc && !tf_hf_run(BODY_CASE, in, out, NULL) && test_compare_outputs(BODY_CASE "/expected.safetensors", out, &rel) < 0)
        rel = -1;
    return rel;
}

/* Without position_ids RoBERTa makes them from input_ids: the same positions
 * given by hand agree with transformers; BERT's 0..T-1 do not (the comparison
 * notices positions that start at 0 instead of pad_token_id + 1). */
TEST(roberta_positions_from_the_ids) {
    char tmp[] = "/tmp/tformer_rbpos_XXXXXX";
    CHECK(mkdtemp(tmp) != NULL);
    double ours = with_positions(1, tmp), bert = with_positions(0, tmp);
    test_rm_rf(tmp);
    printf("    RoBERTa's positions given: %.2e; BERT's 0..T-1: %.2e\n", ours, bert);
    CHECKF(ours >= 0 && ours <= TOL, "RoBERTa's positions given by hand: relative error %g", ours);
    CHECKF(bert > 100 * TOL, "BERT's positions pass the comparison: relative error %g", bert);
}

/* The comparison notices a moved weight of each kind RoBERTa adds (its MLM
 * head, its classifier, the position row of its first token, pad_token_id + 1),
 * and a position row that RoBERTa never reads (row 0, below pad_token_id 1)
 * changes nothing. */
TEST(roberta_perturbed_weight_fails_the_comparison) {
    static const test_weight MLM[] = {{"lm_head.dense.weight", 5}, {"lm_head.layer_norm.weight", 3},
                                      {"lm_head.bias", 7}, {"roberta.embeddings.position_embeddings.weight", 2 * 8 + 1},
                                      {"roberta.embeddings.token_type_embeddings.weight", 2}};
    static const test_weight SEQ[] = {{"classifier.dense.weight", 13}, {"classifier.dense.bias", 4},
                                      {"classifier.out_proj.weight", 9}, {"classifier.out_proj.bias", 1}};
    double same[2], least[2], unused;
    int missed = test_hf_perturbed(MLM_CASE, MLM, 5, TOL, &same[0], &least[0]) +
                 test_hf_perturbed(SEQ_CASE, SEQ, 4, TOL, &same[1], &least[1]);
    char tmp[] = "/tmp/tformer_rbp_XXXXXX", out[64];
    CHECK(mkdtemp(tmp) != NULL);
    snprintf(out, sizeof out, "%s/out.safetensors", tmp);
    CHECK(test_copy_case(MLM_CASE, tmp, NULL, NULL, "roberta.embeddings.position_embeddings.weight", 3, 1e-3f, NULL) == 0);
    unused = test_hf_run_case(tmp, MLM_CASE, out, NULL);
    test_rm_rf(tmp);
    printf("    unchanged copies %.2e, %.2e; one element + 1e-3 of each of 9 tensors: %.2e or more; position row 0: %.2e\n",
           same[0], same[1], least[0] < least[1] ? least[0] : least[1], unused);
    CHECK(same[0] >= 0 && same[0] <= TOL && same[1] >= 0 && same[1] <= TOL);
    CHECKF(missed == 0, "%d perturbed tensors went unnoticed", missed);
    CHECKF(unused == same[0], "position row 0 changed the outputs (max |diff| %g, unchanged %g)", unused, same[0]);
}

/* ---------------------------------------------------------------- refused and bad */

#define IDS(b, t, v) {"input_ids", TF_ST_I64, 2, {b, t}, v}
static const test_bad_case BAD[] = {
    {"a decoder", NULL, "\"hidden_act\"", "\"is_decoder\": true, \"hidden_act\"", NULL, {IDS(2, 5, 3)},
     {"config.json", "\"is_decoder\" must be false"}},
    {"cross-attention", NULL, "\"hidden_act\"", "\"add_cross_attention\": true, \"hidden_act\"", NULL, {IDS(2, 5, 3)},
     {"config.json", "\"add_cross_attention\" must be false"}},
    {"relative positions", NULL, "\"absolute\"", "\"relative_key_query\"", NULL, {IDS(2, 5, 3)},
     {"config.json", "\"position_embedding_type\" must be \"absolute\""}},
    {"multi-label", NULL, "\"hidden_act\"", "\"problem_type\": \"multi_label_classification\", \"hidden_act\"", NULL,
     {IDS(2, 5, 3)}, {"config.json", "multi_label_classification is not implemented"}},
    {"the causal LM", NULL, "\"RobertaForSequenceClassification\"", "\"RobertaForCausalLM\"", NULL, {IDS(2, 5, 3)},
     {"\"RobertaForCausalLM\" is not supported by hf-run", NULL}},
    {"multiple choice", NULL, "\"RobertaForSequenceClassification\"", "\"RobertaForMultipleChoice\"", NULL,
     {IDS(2, 5, 3)}, {"\"RobertaForMultipleChoice\" is not supported by hf-run", NULL}},
    {"pad_token_id past the vocabulary", NULL, "\"pad_token_id\": 1", "\"pad_token_id\": 25", NULL, {IDS(2, 5, 3)},
     {"config.json", "\"pad_token_id\" must be an id below vocab_size 25"}},
    {"pad_token_id null", NULL, "\"pad_token_id\": 1", "\"pad_token_id\": null", NULL, {IDS(2, 5, 3)},
     {"config.json", "\"pad_token_id\" must be an id"}},
    {"a table too short for its first position", NULL, "\"max_position_embeddings\": 13",
     "\"max_position_embeddings\": 2", NULL, {IDS(1, 2, 3)}, {"config.json", "leaves no position"}},
    {"more tokens than positions", NULL, NULL, NULL, NULL, {IDS(1, 12, 3)},
     {"12 tokens exceed 11, max_position_embeddings 13 - pad_token_id 1 - 1", NULL}},
    {"a token type past type_vocab_size 1", NULL, NULL, NULL, NULL,
     {IDS(2, 5, 3), {"token_type_ids", TF_ST_I64, 2, {2, 5}, 1}}, {"token_type_ids", "type_vocab_size"}},
    {"a position past the table", NULL, NULL, NULL, NULL, {IDS(2, 5, 3), {"position_ids", TF_ST_I64, 2, {2, 5}, 13}},
     {"position_ids", "max_position_embeddings"}},
    {"a class past num_labels", NULL, NULL, NULL, NULL, {IDS(2, 5, 3), {"labels", TF_ST_I64, 1, {2}, 3}},
     {"labels holds 3", "[0,3)"}},
    {"the classifier's dense missing", NULL, NULL, NULL, "classifier.dense.weight", {IDS(2, 5, 3)},
     {"missing tensor 'classifier.dense.weight'", NULL}},
    {"the MLM head's dense missing", MLM_CASE, NULL, NULL, "lm_head.dense.weight", {IDS(2, 5, 3)},
     {"missing tensor 'lm_head.dense.weight'", NULL}},
    {"a pooler in a classifier's folder", SEQ_CASE, NULL, NULL, NULL, {IDS(2, 5, 3), {"next_sentence_label", TF_ST_I64, 1, {2}, 0}},
     {"'next_sentence_label' is not an argument of RobertaForSequenceClassification.forward()", NULL}},
};
#undef IDS

/* The table; and a class tformer lacks, refused by the BERT family itself too. */
TEST(roberta_hf_run_bad_input_is_a_clear_error) {
    const size_t n = sizeof BAD / sizeof BAD[0];
    int bad = test_bert_bad_cases(BAD, n, SEQ_CASE, "RB_VERBOSE", "\"RobertaForSequenceClassification\"",
                                  "\"RobertaForCausalLM\"", "\"RobertaForCausalLM\": tformer reads RobertaModel");
    CHECKF(bad == 0, "%d of %zu bad inputs were not a clear error", bad, n + 1);
}

/* ---------------------------------------------------------------- tformer's RoBERTa folders */

/* Every RoBERTa head tformer has, with random weights (N(0,0.3)), saved as a
 * RoBERTa folder (model_type "roberta", the Roberta* class, "roberta." names,
 * pad_token_id) and read back to the same outputs and loss, bit for bit;
 * `make roberta-conformance` keeps the folders and inputs (TFORMER_EXPORT_DIR)
 * and has transformers load them and compute their outputs, compared through
 * hf-run. */
static void rb_configure(tf_bert_config *c, int k) {
    (void)k;
    c->roberta = 1, c->pad_token_id = 1, c->pooler = c->head == TF_BERT_BODY, c->tied = c->head != TF_BERT_MLM;
    c->activation = TF_ACT_RELU; /* the MLM head's GELU is RoBERTa's whatever the body's is */
}

/* config.json: model_type roberta, the class, pad_token_id; the tensors under
 * "roberta." (the body's at the top), the MLM's decoder bias written. */
static int rb_check_files(const char *dir, const char *text, const tf_bert_config *c, int k) {
    char want[96], path[700];
    snprintf(want, sizeof want, "\"%s\"", tf_bert_class_name(c));
    int marked =
        strstr(text, "\"model_type\":\t\"roberta\"") && strstr(text, want) && strstr(text, "\"pad_token_id\":\t1");
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    tf_st_file *f = tf_st_open(path);
    const char *word = k ? "roberta.embeddings.word_embeddings.weight" : "embeddings.word_embeddings.weight";
    int named = f && tf_st_find(f, word) && (k != 1 || tf_st_find(f, "lm_head.decoder.bias"));
    tf_st_close(f);
    return marked && named ? 0 : -1;
}

static int rb_check_back(const tf_bert *r, const tf_bert_config *c) {
    return r->cfg.roberta && r->cfg.head == c->head && r->cfg.pooler == c->pooler ? 0 : -1;
}

TEST(roberta_export_for_transformers) {
    /* ids 2 .. 18: pad_token_id 1 only where padded */
    static const test_bert_export X = {"roberta", rb_configure, rb_check_files, rb_check_back, 17, 2};
    int bad = test_bert_export_heads(&X);
    CHECKF(bad == 0, "%d of 5 RoBERTa folders are not RoBERTa's or do not read back", bad);
}

/* ---------------------------------------------------------------- sentence embeddings */

#include <cjson/cJSON.h>

#define ST_DIR "tests/fixtures_roberta_st/tiny_roberta_st"

/* A RoBERTa tokenizer.json (byte-level BPE, RobertaProcessing) encodes as
 * transformers' RobertaTokenizerFast, id for id: texts as <s> text </s> cut
 * to 16 ids (spaces leading, trailing and repeated, tabs, accents, CJK,
 * emoji, words never seen, <mask> with its lstrip, an empty text), pairs as
 * <s> a </s></s> b </s>, a pair cut longest first to 10; token types all 0. */
TEST(roberta_tokenizer_json_matches_transformers) {
    tf_tokenizer *tok = tf_tokenizer_load(ST_DIR);
    cJSON *root = test_read_json(ST_DIR "/answers.json");
    CHECKF(tok && root, "%s", tok ? "answers.json" : tf_error());
    int n = 0, bad = test_texts_differ(tok, root, 16, 1, "tokenizer.json", &n);
    CHECK(bad >= 0);
    const cJSON *e;
    cJSON_ArrayForEach(e, cJSON_GetObjectItem(root, "pairs")) {
        const char *a = cJSON_GetObjectItem(e, "a")->valuestring, *b = cJSON_GetObjectItem(e, "b")->valuestring;
        const cJSON *max = cJSON_GetObjectItem(e, "max_len");
        tf_ids ids = {0}, types = {0};
        CHECK(tf_tokenizer_encode_pair(tok, a, strlen(a), b, strlen(b), max ? (size_t)max->valueint : 0, &ids, &types) == 0);
        bad += test_ids_differ(cJSON_GetObjectItem(e, "ids"), &ids, "tokenizer.json", a);
        for (size_t i = 0; i < types.n; i++) bad += types.v[i] != 0;
        tf_ids_free(&ids), tf_ids_free(&types), n++;
    }
    cJSON_Delete(root);
    tf_tokenizer_free(tok);
    printf("    %d texts and pairs, %d differ from transformers\n", n, bad);
    CHECKF(n == 15 && bad == 0, "%d of %d encodings differ", bad, n);
}

/* `tformer embed` on a RoBERTa sentence-transformers folder (mean pooling,
 * Normalize, max_seq_length 16: the long text is cut) against
 * SentenceTransformer.encode() in float64, through the library and the CLI. */
TEST(roberta_embed_matches_sentence_transformers) {
    test_embed_result r;
    CHECK(test_st_embed(ST_DIR, &r) == 0);
    CHECK(r.opts.pooling == TF_POOL_MEAN && r.opts.normalize && r.opts.max_len == 16 && r.cfg.roberta);
    printf("    %d texts: max |diff| %.2e, relative L2 error %.2e; the CLI's numbers %.1e from the library's\n", r.n,
           r.max_diff, r.rel, r.cli);
    CHECKF(r.max_diff <= 1e-5 && r.rel <= TOL, "embeddings: max |diff| %g, relative error %g", r.max_diff, r.rel);
    CHECKF(r.cli_rc == 0 && r.cli < 1e-6, "embed CLI: status %d, off by %g\n%s", r.cli_rc, r.cli, r.cli_out);
}

#define XR_ST_DIR "tests/fixtures_xlmr_st/tiny_xlmr_st"

/* `tformer embed` on an XLM-RoBERTa sentence-transformers folder
 * (tests/ref/gen_xlmr_embed_fixture.py: an XLMRobertaModel, mean pooling, no
 * Normalize, max_seq_length 16; the Unigram tokenizer.json of
 * tests/fixtures_unigram/xlmr_tiny): the 11 texts' ids as
 * XLMRobertaTokenizerFast gives them (Metaspace's prefix, the charsmap,
 * repeated spaces, <mask> with its lstrip, unknown pieces, an empty text, a
 * text cut to 16), and their embeddings as SentenceTransformer.encode() in
 * float64 (texts stripped first: spaces and U+3000, which the charsmap would
 * make a piece, at both ends), through the library and the CLI. */
TEST(xlmr_embed_matches_sentence_transformers) {
    int n = 0, bad = test_folder_texts_differ(XR_ST_DIR, XR_ST_DIR, 16, 1, "tokenizer.json", &n);
    CHECKF(bad >= 0, "%s", tf_error());
    test_embed_result r;
    CHECK(test_st_embed(XR_ST_DIR, &r) == 0);
    CHECK(r.opts.pooling == TF_POOL_MEAN && !r.opts.normalize && r.opts.max_len == 16 && r.cfg.roberta);
    printf("    %d texts, %d encodings differ; max |diff| %.2e, relative L2 error %.2e; the CLI's numbers %.1e from "
           "the library's\n", r.n, bad, r.max_diff, r.rel, r.cli);
    CHECKF(n == 11 && bad == 0, "%d of %d encodings differ from XLMRobertaTokenizerFast's", bad, n);
    CHECKF(r.max_diff <= 1e-5 && r.rel <= TOL, "embeddings: max |diff| %g, relative error %g", r.max_diff, r.rel);
    CHECKF(r.cli_rc == 0 && r.cli < 1e-6, "embed CLI: status %d, off by %g\n%s", r.cli_rc, r.cli, r.cli_out);
}

/* ---------------------------------------------------------------- fine-tuning */

/* A RobertaModel of tf_bert_new's initialisation (N(0, 0.02): the fixture's
 * N(0, 0.3) weights saturate and learn slowly) with the fixture's tokenizer files. */
static int rb_tiny_folder(char *dir) {
    tf_bert_config c = tf_bert_config_default(320, 18, 2, 2, 16);
    c.d_ff = 32, c.head = TF_BERT_BODY, c.type_vocab_size = 1, c.roberta = 1, c.pad_token_id = 1, c.pooler = 1;
    static const char *const FILES[] = {"tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"};
    return test_bert_folder(dir, &c, 21, ST_DIR, FILES, 3);
}

/* `tformer finetune --task classify` puts RoBERTa's classifier (dense + tanh +
 * out_proj, no pooler) on a RobertaModel folder with a byte-level BPE
 * tokenizer.json, learns a one-word rule, writes a RobertaForSequenceClassification
 * folder that hf-run and `tformer predict` read; pairs run too; tag and span
 * (words onto WordPiece pieces) are refused naming the task. */
TEST(roberta_finetune_and_predict) {
    static const char *const WORDS[] = {"good", "bad"}, *const ANIMALS[] = {"cat", "dog", "fox", "children"};
    char run[] = "/tmp/tformer_rbft_XXXXXX", train[] = "/tmp/tformer_rbft_XXXXXX", valid[] = "/tmp/tformer_rbft_XXXXXX";
    char model[] = "/tmp/tformer_rbftm_XXXXXX", args[2048], path[600];
    static char out[16384];
    CHECK(rb_tiny_folder(model) == 0 && mkdtemp(run) && !test_temp_file(train) && !test_temp_file(valid));
    test_finetune_spec s = {model, 40, "\"RobertaForSequenceClassification\"", "\"model_type\":\t\"roberta\"",
                            "good fox the mat\nbad cat the mat\n", WORDS, ANIMALS};
    CHECKF(test_finetune_classify(&s, run, out, sizeof out) == 0, "classify, predict or pairs failed\n%s", out);
    snprintf(path, sizeof path, "%s/c/model.safetensors", run);
    tf_st_file *f = tf_st_open(path);
    CHECKF(f && tf_st_find(f, "classifier.dense.weight") && tf_st_find(f, "classifier.out_proj.weight") &&
           !tf_st_find(f, "roberta.pooler.dense.weight"), "%s lacks RoBERTa's classifier", path);
    tf_st_close(f);
    CHECK(test_write_text(train, "the\tO\ncat\tB\n\n") == 0 && test_write_text(valid, "the\tO\ncat\tB\n\n") == 0);
    snprintf(args, sizeof args, "finetune --model %s --task tag --train %s --valid %s --out %s/t --steps 2 --threads 1",
             model, train, valid, run);
    int rc = test_run_cli("", args, out, sizeof out);
    CHECKF(rc != 0 && strstr(out, "or for classify and pairs RoBERTa's byte-level BPE"), "tag: status %d\n%s", rc, out);
    test_rm_rf(run), test_rm_rf(model), unlink(train), unlink(valid);
}
