/* DistilBERT (the BERT family with tf_bert_config.distilbert) against Hugging
 * Face transformers (tests/ref/gen_distilbert_fixtures.py, 4.x and 5.x): every
 * case of tests/fixtures_distilbert through `tformer hf-run` to 1e-5 relative
 * L2 error per field (the BERT and RoBERTa cases' tolerance); the loss's
 * gradients with respect to every parameter against PyTorch's float64
 * autograd; a moved weight fails, and so do the two LayerNorms of a block
 * swapped; refused settings and bad inputs are clear errors; tformer's own
 * DistilBERT folders round trip (and, in `make distilbert-conformance`, load
 * in transformers); `tformer embed` against sentence-transformers, fill-mask
 * against transformers' pipeline, finetune / predict. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "test.h"
#include "models/bert/bert_internal.h"

#define TOL 1e-5      /* relative L2 error of each output field, as tests/test_hf_run.c */
#define GRAD_TOL 1e-4 /* relative L2 error of each parameter's gradient, as the RoBERTa cases */
#define DB_DIR "tests/fixtures_distilbert"
#define BODY_CASE DB_DIR "/v4_body_rightpad"
#define MLM_CASE DB_DIR "/v4_mlm_tied_relu_labels_grad"
#define SEQ_CASE DB_DIR "/v4_seqcls_3labels_grad"

TEST(distilbert_hf_run_matches_transformers) {
    const char *dir = test_fixture_dir_or(DB_DIR);
    int cases, failed = test_hf_run_family(dir, "DistilBERT", TOL, 1, NULL, NULL, &cases);
    CHECKF(cases >= (strcmp(dir, DB_DIR) ? 1 : 13) && failed == 0, "%d of %d cases failed", failed, cases);
}

/* ---------------------------------------------------------------- gradients against PyTorch */

/* Backward through the whole model and DistilBERT's heads: the MLM head (relu
 * from config.activation, the projector tied to the word table), the
 * classifier's pre_classifier + ReLU + classifier (4.x, and 5.x with
 * pad_token_id null), the token classifier; pad_token_id among the attended
 * tokens, whose word row takes no gradient (nn.Embedding's padding_idx). */
TEST(distilbert_gradients_match_pytorch) {
    static const char *const CASES[] = {MLM_CASE, SEQ_CASE, DB_DIR "/v4_tokcls_pad_inside_grad",
                                        DB_DIR "/v5_seqcls_leftpad_padnull_grad"};
    int bad = test_gradient_cases(CASES, 4, GRAD_TOL, test_bert_gradient_case);
    CHECKF(bad == 0, "%d of 4 cases' gradients differ", bad);
}

/* ---------------------------------------------------------------- moved and swapped weights */

/* The comparison notices a moved weight of each kind DistilBERT names its own
 * way (its MLM head, its classifier, every role of a block, the position
 * table). The heads' elements are of units the ReLU lets through on these
 * inputs (most of the relu MLM head's are dead; a key's bias changes no score). */
TEST(distilbert_perturbed_weight_fails_the_comparison) {
    static const test_weight MLM[] = {
        {"vocab_transform.weight", 3 * 8 + 5}, {"vocab_transform.bias", 3}, {"vocab_layer_norm.weight", 3},
        {"vocab_layer_norm.bias", 2}, {"vocab_projector.bias", 7}, {"distilbert.embeddings.position_embeddings.weight", 9},
        {"distilbert.embeddings.LayerNorm.bias", 1}, {"distilbert.transformer.layer.0.attention.q_lin.weight", 21},
        {"distilbert.transformer.layer.0.attention.k_lin.weight", 10}, {"distilbert.transformer.layer.1.attention.v_lin.weight", 6},
        {"distilbert.transformer.layer.1.attention.out_lin.bias", 2}, {"distilbert.transformer.layer.0.sa_layer_norm.weight", 4},
        {"distilbert.transformer.layer.1.ffn.lin1.weight", 11}, {"distilbert.transformer.layer.0.ffn.lin2.bias", 0},
        {"distilbert.transformer.layer.1.output_layer_norm.bias", 5}};
    static const test_weight SEQ[] = {{"pre_classifier.weight", 2 * 12 + 5}, {"pre_classifier.bias", 3},
                                      {"classifier.weight", 9}, {"classifier.bias", 1}};
    const int n_mlm = (int)(sizeof MLM / sizeof MLM[0]);
    double same[2], least[2];
    int missed = test_hf_perturbed(MLM_CASE, MLM, n_mlm, TOL, &same[0], &least[0]) +
                 test_hf_perturbed(SEQ_CASE, SEQ, 4, TOL, &same[1], &least[1]);
    printf("    unchanged copies %.2e, %.2e; one element + 1e-3 of each of %d tensors: %.2e or more\n", same[0], same[1],
           n_mlm + 4, least[0] < least[1] ? least[0] : least[1]);
    CHECK(same[0] >= 0 && same[0] <= TOL && same[1] >= 0 && same[1] <= TOL);
    CHECKF(missed == 0, "%d perturbed tensors went unnoticed", missed);
}

/* BODY_CASE with sa_layer_norm and output_layer_norm of layer 0 exchanged in
 * the file: the outputs must no longer be transformers'. */
TEST(distilbert_swapped_norms_fail_the_comparison) {
    char tmp[] = "/tmp/tformer_dbsw_XXXXXX", path[600], out[600];
    CHECK(mkdtemp(tmp) != NULL);
    CHECK(test_copy_case(BODY_CASE, tmp, NULL, NULL, NULL, 0, 0, NULL) == 0);
    snprintf(path, sizeof path, "%s/model.safetensors", tmp);
    tf_st_file *f = tf_st_open(BODY_CASE "/model.safetensors");
    tf_arena *a = tf_arena_new(0);
    tf_st_writer *w = f ? tf_st_writer_new() : NULL;
    int rc = !w;
    for (int i = 0; !rc && i < tf_st_count(f); i++) {
        const char *name = tf_st_entry_at(f, i)->name, *p = strstr(name, "layer.0.sa_layer_norm.");
        const char *q = strstr(name, "layer.0.output_layer_norm.");
        char other[300];
        if (p) snprintf(other, sizeof other, "transformer.layer.0.output_layer_norm.%s", p + 22);
        if (q) snprintf(other, sizeof other, "transformer.layer.0.sa_layer_norm.%s", q + 26);
        tf_tensor *t = test_st_tensor(f, (p || q) ? other : name, a);
        rc = !t || tf_st_writer_add(w, name, t);
    }
    rc = rc || tf_st_writer_save(w, path);
    tf_st_writer_free(w);
    tf_st_close(f);
    tf_arena_free(a);
    snprintf(out, sizeof out, "%s/out.safetensors", tmp);
    double rel = -1, d = rc ? -1 : test_hf_run_case(tmp, BODY_CASE, out, &rel);
    test_rm_rf(tmp);
    printf("    layer 0's norms swapped: relative error %.2e\n", rel);
    CHECKF(d >= 0 && rel > 100 * TOL, "swapped norms pass the comparison: relative error %g", rel);
}

/* ---------------------------------------------------------------- refused and bad */

#define IDS(b, t, v) {"input_ids", TF_ST_I64, 2, {b, t}, v}
static const test_bad_case BAD[] = {
    {"token types", BODY_CASE, NULL, NULL, NULL, {IDS(2, 5, 3), {"token_type_ids", TF_ST_I64, 2, {2, 5}, 0}},
     {"'token_type_ids' is not an argument of DistilBertModel.forward()", NULL}},
    {"a head mask", BODY_CASE, NULL, NULL, NULL, {IDS(2, 5, 3), {"head_mask", TF_ST_F32, 1, {3}, 1}},
     {"head_mask", NULL}},
    {"multiple choice", NULL, "\"DistilBertForSequenceClassification\"", "\"DistilBertForMultipleChoice\"", NULL,
     {IDS(2, 5, 3)}, {"\"DistilBertForMultipleChoice\" is not supported by hf-run", NULL}},
    {"an activation tformer lacks", NULL, "\"activation\": \"gelu\"", "\"activation\": \"silu\"", NULL,
     {IDS(2, 5, 3)}, {"config.json", "activation"}},
    {"multi-label", NULL, "\"activation\"", "\"problem_type\": \"multi_label_classification\", \"activation\"", NULL,
     {IDS(2, 5, 3)}, {"config.json", "multi_label_classification is not implemented"}},
    {"pad_token_id past the vocabulary", NULL, "\"pad_token_id\": 0", "\"pad_token_id\": 25", NULL, {IDS(2, 5, 3)},
     {"config.json", "\"pad_token_id\" must be null or an id below vocab_size 25"}},
    {"a question answerer of 3 labels", DB_DIR "/v4_qa_clamped", "\"activation\"", "\"num_labels\": 3, \"activation\"",
     NULL, {IDS(2, 5, 3)}, {"config.json", "DistilBertForQuestionAnswering needs num_labels 2 (got 3)"}},
    {"more tokens than positions", NULL, NULL, NULL, NULL, {IDS(1, 14, 3)},
     {"14 tokens exceed max_position_embeddings 13", NULL}},
    {"a position past the table", DB_DIR "/v5_body_rightpad_posids", NULL, NULL, NULL,
     {IDS(2, 5, 3), {"position_ids", TF_ST_I64, 2, {2, 5}, 14}}, {"position_ids", "max_position_embeddings"}},
    {"a class past num_labels", NULL, NULL, NULL, NULL, {IDS(2, 5, 3), {"labels", TF_ST_I64, 1, {2}, 3}},
     {"labels holds 3", "[0,3)"}},
    {"pre_classifier missing", NULL, NULL, NULL, "pre_classifier.weight", {IDS(2, 5, 3)},
     {"missing tensor 'pre_classifier.weight'", NULL}},
    {"the MLM head's transform missing", MLM_CASE, NULL, NULL, "vocab_transform.weight", {IDS(2, 5, 3)},
     {"missing tensor 'vocab_transform.weight'", NULL}},
    {"a next-sentence label", NULL, NULL, NULL, NULL, {IDS(2, 5, 3), {"next_sentence_label", TF_ST_I64, 1, {2}, 0}},
     {"'next_sentence_label' is not an argument of DistilBertForSequenceClassification.forward()", NULL}},
};
#undef IDS

/* The table; a class tformer lacks, refused by the BERT family itself too;
 * token types handed to the library. */
TEST(distilbert_hf_run_bad_input_is_a_clear_error) {
    const size_t n = sizeof BAD / sizeof BAD[0];
    int bad = test_bert_bad_cases(BAD, n, SEQ_CASE, "DB_VERBOSE", "\"DistilBertForSequenceClassification\"",
                                  "\"DistilBertForMultipleChoice\"",
                                  "\"DistilBertForMultipleChoice\": tformer reads DistilBertModel");
    CHECKF(bad == 0, "%d of %zu bad inputs were not a clear error", bad, n + 1);
    /* token_type_ids handed to the library directly */
    tf_bert *m = tf_bert_load(BODY_CASE, NULL);
    tf_ctx *ctx = tf_ctx_new(1);
    CHECKF(m && ctx, "%s", tf_error());
    tf_tensor *ids = tf_tensor_new(ctx, TF_DTYPE_I32, 2, (int64_t[]){1, 4}, 1);
    tf_bert_outputs o;
    int rc = tf_bert_run(ctx, m, &(tf_bert_inputs){.input_ids = ids, .token_type_ids = ids}, &o);
    CHECKF(rc != 0 && strstr(tf_error(), "DistilBERT has no token types"), "%s", rc ? tf_error() : "ran");
    tf_ctx_free(ctx);
    tf_bert_free(m);
}

/* The config keys DistilBERT ignores are ignored: a layer_norm_eps of 1e-3
 * (the 4.x sinusoidal case's config.json has one, and passes above) leaves
 * every eps 1e-12; BERT's key names are not read (hidden_size is dim's
 * alias, as DistilBertConfig's attribute_map). */
TEST(distilbert_reads_its_own_config_keys) {
    tf_bert *m = tf_bert_load(DB_DIR "/v4_body_leftpad_pad3_sinusoidal", NULL);
    CHECKF(m, "%s", tf_error());
    CHECK(m->cfg.distilbert && m->cfg.distilbert_sinusoidal && m->cfg.norm_eps == 1e-12f && m->cfg.pad_token_id == 3);
    CHECK(m->emb.token_type == NULL && m->cfg.d_model == 10 && m->cfg.d_ff == 14 && m->cfg.n_layer == 2);
    tf_bert_free(m);
    char dir[] = "/tmp/tformer_dbkeys_XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    CHECK(test_copy_case(BODY_CASE, dir, "\"dim\"", "\"hidden_size\"", NULL, 0, 0, NULL) == 0);
    m = tf_bert_load(dir, NULL);
    CHECKF(m && m->cfg.d_model == 12, "%s", m ? "d_model" : tf_error());
    tf_bert_free(m);
    test_rm_rf(dir);
}

/* The start logits of the QA case, in training mode when train (dropout on). */
static int qa_logits(const tf_bert *m, int train, float *out, int64_t *n) {
    tf_st_file *f = tf_st_open(DB_DIR "/v4_qa_clamped/input.safetensors");
    tf_arena *a = tf_arena_new(0);
    tf_ctx *ctx = tf_ctx_new(1);
    tf_ctx_set_training(ctx, train);
    tf_ctx_set_grad(ctx, 0);
    tf_bert_inputs in = {.input_ids = f ? test_st_tensor(f, "input_ids", a) : NULL,
                         .attention_mask = f ? test_st_tensor(f, "attention_mask", a) : NULL};
    tf_bert_outputs o;
    int rc = !in.input_ids || tf_bert_run(ctx, m, &in, &o);
    if (!rc) *n = tf_numel(o.start_logits), memcpy(out, o.start_logits->data, (size_t)*n * sizeof *out);
    tf_ctx_free(ctx);
    tf_arena_free(a);
    tf_st_close(f);
    return rc ? -1 : 0;
}

/* Dropout where DistilBERT has it: seq_classif_dropout and qa_dropout read
 * into the heads, the attention's output undropped (BERT drops it), and
 * qa_dropout before qa_outputs (the QA case's dropout 0 and qa_dropout 0.5:
 * training mode changes the logits; with qa_dropout 0 it does not). */
TEST(distilbert_dropouts_where_transformers_has_them) {
    char dir[] = "/tmp/tformer_dbdrop_XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    CHECK(test_copy_case(DB_DIR "/v4_qa_clamped", dir, "\"qa_dropout\": 0.0", "\"qa_dropout\": 0.5", NULL, 0, 0,
                         NULL) == 0);
    tf_bert *drop = tf_bert_load(dir, NULL), *none = tf_bert_load(DB_DIR "/v4_qa_clamped", NULL);
    test_rm_rf(dir);
    CHECKF(drop && none, "%s", tf_error());
    CHECK(drop->cfg.qa_dropout == 0.5f && drop->cfg.distilbert && none->cfg.qa_dropout == 0.0f);
    float e[64], t[64], n0[64], n1[64];
    int64_t n = 0;
    CHECK(qa_logits(drop, 0, e, &n) == 0 && qa_logits(drop, 1, t, &n) == 0 && qa_logits(none, 0, n0, &n) == 0 &&
          qa_logits(none, 1, n1, &n) == 0 && n <= 64);
    CHECK(memcmp(e, n0, (size_t)n * 4) == 0 && memcmp(n0, n1, (size_t)n * 4) == 0);
    CHECKF(memcmp(e, t, (size_t)n * 4) != 0, "qa_dropout 0.5 changed nothing in training mode");
    tf_bert_free(drop), tf_bert_free(none);
    tf_bert *seq = tf_bert_load(SEQ_CASE, NULL), *tok = tf_bert_load(DB_DIR "/v4_tokcls_pad_inside_grad", NULL);
    CHECKF(seq && tok && seq->cls.dropout == 0.0f && tok->cls.dropout == tok->cfg.dropout, "%s", tf_error());
    tf_bert_free(seq), tf_bert_free(tok);
}

/* The encoder's output of v4_body_rightpad's ids in training mode (seed 7, dropout 0.5 on each
 * sub-layer's output): tformer's forward (rule 0), the composition DistilBERT's TransformerBlock
 * is (rule 1: the attention's output undropped), or BERT's block (rule 2). */
static int encode_with(const tf_bert *m, int rule, float *out, size_t cap, int64_t *n) {
    tf_st_file *f = tf_st_open(DB_DIR "/v4_body_rightpad/input.safetensors");
    tf_arena *a = tf_arena_new(0);
    tf_ctx *ctx = tf_ctx_new(7);
    tf_ctx_set_training(ctx, 1), tf_ctx_set_grad(ctx, 0);
    tf_bert_inputs in = {.input_ids = f ? test_st_tensor(f, "input_ids", a) : NULL};
    tf_tensor *x = !in.input_ids ? NULL : rule == 0 ? tf_bert_encode(ctx, m, &in) : tf_bert_embed_inputs(ctx, m, &in);
    for (int i = 0; x && rule && i < m->cfg.n_layer; i++)
        x = rule == 2 ? tf_block_forward(ctx, &m->layer[i], &m->block, x, NULL)
                      : tf_block_sublayer(ctx, &m->layer[i], &m->block, TF_SUBLAYER_FF,
                                          tf_block_sublayer(ctx, &m->layer[i], &m->block, TF_SUBLAYER_SELF, x, NULL, 0),
                                          NULL, m->block.dropout);
    int rc = x && (size_t)tf_numel(x) <= cap ? 0 : -1;
    if (!rc) *n = tf_numel(x), memcpy(out, x->data, (size_t)*n * sizeof *out);
    tf_ctx_free(ctx), tf_arena_free(a), tf_st_close(f);
    return rc;
}

/* DistilBERT's rule as its own composition of the block's sub-layers: no dropout on the
 * attention's output, the feed-forward's kept (BERT drops both). */
TEST(distilbert_layer_leaves_the_attention_output_undropped) {
    tf_bert *m = tf_bert_load(DB_DIR "/v4_body_rightpad", NULL);
    CHECKF(m && m->cfg.distilbert, "%s", tf_error());
    m->block.dropout = 0.5f, m->block.attn_dropout = 0.0f;
    static float run[1 << 14], mine[1 << 14], bert[1 << 14];
    int64_t n = 0, n1 = 0, n2 = 0;
    CHECK(!encode_with(m, 0, run, 1 << 14, &n) && !encode_with(m, 1, mine, 1 << 14, &n1) &&
          !encode_with(m, 2, bert, 1 << 14, &n2) && n == n1 && n == n2 && n > 0);
    CHECKF(!memcmp(run, mine, (size_t)n * sizeof *run), "the forward is not DistilBERT's composition");
    CHECKF(memcmp(run, bert, (size_t)n * sizeof *run), "the forward drops the attention's output (BERT's rule)");
    tf_bert_free(m);
}

/* ---------------------------------------------------------------- tformer's DistilBERT folders */

/* Every DistilBERT head tformer has, with random weights (N(0,0.3)), saved as
 * a DistilBERT folder (model_type "distilbert", the DistilBert* class, its
 * keys and names) and read back to the same outputs and loss, bit for bit;
 * `make distilbert-conformance` keeps the folders and inputs
 * (TFORMER_EXPORT_DIR) and has transformers load them and compute their
 * outputs, compared through hf-run. */
static void db_configure(tf_bert_config *c, int k) {
    c->distilbert = 1, c->pad_token_id = 0, c->pooler = 0, c->tied = c->head != TF_BERT_MLM;
    c->activation = k % 2 ? TF_ACT_RELU : TF_ACT_GELU, c->classifier_dropout = 0.2f;
}

/* config.json: model_type distilbert, the class, DistilBertConfig's keys and
 * none of BERT's; the tensors under "distilbert." (the body's at the top), a
 * block's by DistilBERT's names, the MLM's projector. */
static int db_check_files(const char *dir, const char *text, const tf_bert_config *c, int k) {
    char want[96], path[700];
    snprintf(want, sizeof want, "\"%s\"", tf_bert_class_name(c));
    int marked = strstr(text, "\"model_type\":\t\"distilbert\"") && strstr(text, want) && strstr(text, "\"dim\":\t8") &&
                 strstr(text, "\"hidden_dim\":\t12") && strstr(text, "\"n_layers\":\t2") &&
                 strstr(text, "\"seq_classif_dropout\":\t0.2") && !strstr(text, "hidden_size");
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    tf_st_file *f = tf_st_open(path);
    const char *word = k ? "distilbert.embeddings.word_embeddings.weight" : "embeddings.word_embeddings.weight";
    const char *layer = k ? "distilbert.transformer.layer.1.ffn.lin2.weight" : "transformer.layer.1.ffn.lin2.weight";
    int named = f && tf_st_find(f, word) && tf_st_find(f, layer) && (k != 1 || tf_st_find(f, "vocab_projector.weight"));
    tf_st_close(f);
    return marked && named ? 0 : -1;
}

static int db_check_back(const tf_bert *r, const tf_bert_config *c) {
    return r->cfg.distilbert && r->cfg.head == c->head && !r->cfg.pooler ? 0 : -1;
}

TEST(distilbert_export_for_transformers) {
    /* ids 1 .. 18: pad_token_id 0 only where padded */
    static const test_bert_export X = {"distilbert", db_configure, db_check_files, db_check_back, 18, 1};
    int bad = test_bert_export_heads(&X);
    CHECKF(bad == 0, "%d of 5 DistilBERT folders are not DistilBERT's or do not read back", bad);
}

/* ---------------------------------------------------------------- embed, fill-mask */

#include <cjson/cJSON.h>

#define ST_DIR "tests/fixtures_distilbert_st/tiny_distilbert_st"
#define MLM_DIR "tests/fixtures_distilbert_st/tiny_distilbert_mlm"

/* The tokenizer (tokenizer.json, and vocab.txt alone) gives transformers'
 * ids; `tformer embed` on a DistilBERT sentence-transformers folder (mean
 * pooling, no Normalize, max_seq_length 16 under 20 positions: the long text
 * is cut) matches SentenceTransformer.encode() in float64, library and CLI. */
TEST(distilbert_embed_matches_sentence_transformers) {
    /* and vocab.txt alone (tokenizer_config.json's do_lower_case) */
    char vdir[] = "/tmp/tformer_dbvocab_XXXXXX";
    CHECK(mkdtemp(vdir) != NULL);
    static const char *const FILES[] = {"vocab.txt", "tokenizer_config.json", "special_tokens_map.json"};
    CHECK(test_copy_files(ST_DIR, vdir, FILES, 3) == 0);
    int n = 0, bad = test_folder_texts_differ(ST_DIR, ST_DIR, 16, 0, "tokenizer.json", &n);
    int vbad = test_folder_texts_differ(vdir, ST_DIR, 16, 0, "vocab.txt", &n);
    test_rm_rf(vdir);
    CHECKF(bad >= 0 && vbad >= 0, "%s", tf_error());
    bad += vbad;
    test_embed_result r;
    CHECK(test_st_embed(ST_DIR, &r) == 0);
    CHECK(r.opts.pooling == TF_POOL_MEAN && !r.opts.normalize && r.opts.max_len == 16 && r.cfg.distilbert);
    printf("    %d texts, %d encodings differ; max |diff| %.2e, relative L2 error %.2e; the CLI's numbers %.1e from "
           "the library's\n", r.n, bad, r.max_diff, r.rel, r.cli);
    CHECKF(bad == 0, "%d encodings differ from transformers'", bad);
    CHECKF(r.max_diff <= 1e-5 && r.rel <= TOL, "embeddings: max |diff| %g, relative error %g", r.max_diff, r.rel);
    CHECKF(r.cli_rc == 0 && r.cli < 1e-6, "embed CLI: status %d, off by %g\n%s", r.cli_rc, r.cli, r.cli_out);
}

/* `tformer fill-mask` on a DistilBertForMaskedLM folder: transformers'
 * fill-mask pipeline's top 3 (ids and probabilities, float64). */
TEST(distilbert_fill_mask_matches_the_pipeline) {
    cJSON *root = test_read_json(MLM_DIR "/answers.json");
    CHECK(root != NULL);
    char cmd[700], out[4096];
    snprintf(cmd, sizeof cmd, "fill-mask --model %s --text '%s' --top-k 3 --threads 1", MLM_DIR,
             cJSON_GetObjectItem(root, "text")->valuestring);
    int rc = test_run_cli("", cmd, out, sizeof out);
    double worst = 0;
    int i = 0, ok = rc == 0;
    const char *s = strchr(out, '\n');
    const cJSON *e;
    cJSON_ArrayForEach(e, cJSON_GetObjectItem(root, "top")) {
        char *end;
        double p = s ? strtod(s + 1, &end) : -1;
        const char *id = s ? strstr(s, "(id ") : NULL;
        ok = ok && id && atoi(id + 4) == cJSON_GetObjectItem(e, "token")->valueint;
        worst = fmax(worst, fabs(p - cJSON_GetObjectItem(e, "score")->valuedouble));
        s = id ? strchr(id, '\n') : NULL;
        i++;
    }
    cJSON_Delete(root);
    printf("    top %d as the pipeline's, probabilities %.1e apart (printed to 6 places)\n", i, worst);
    CHECKF(ok && i == 3 && worst <= 1e-6, "status %d, probabilities %g apart\n%s", rc, worst, out);
}

/* ---------------------------------------------------------------- fine-tuning */

static const char *const DB_WORDS[] = {"paris", "berlin"}, *const DB_ANIMALS[] = {"cat", "dog", "children", "people"};

/* A DistilBertModel of tf_bert_new's initialisation with the fixture's tokenizer files. */
static int db_tiny_folder(char *dir) {
    tf_bert_config c = tf_bert_config_default(217, 20, 2, 2, 16);
    c.d_ff = 32, c.head = TF_BERT_BODY, c.type_vocab_size = 1, c.distilbert = 1, c.pad_token_id = 0, c.pooler = 0;
    static const char *const FILES[] = {"vocab.txt", "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"};
    return test_bert_folder(dir, &c, 21, ST_DIR, FILES, 4);
}

/* `tformer finetune --task classify` puts DistilBERT's classifier
 * (pre_classifier + ReLU + classifier, no pooler) on a DistilBertModel
 * folder, learns a one-word rule, writes a DistilBertForSequenceClassification
 * folder that `tformer predict` reads; pairs (no token types: DistilBERT has
 * none), tag (WordPiece pieces) and span run too (a DistilBertForQuestionAnswering
 * folder); a sinusoidal table is refused. */
TEST(distilbert_finetune_and_predict) {
    char run[] = "/tmp/tformer_dbft_XXXXXX", train[] = "/tmp/tformer_dbft_XXXXXX", valid[] = "/tmp/tformer_dbft_XXXXXX";
    char model[] = "/tmp/tformer_dbftm_XXXXXX", args[2048], path[600];
    static char out[16384];
    CHECK(db_tiny_folder(model) == 0 && mkdtemp(run) && !test_temp_file(train) && !test_temp_file(valid));
    test_finetune_spec s = {model, 80, "\"DistilBertForSequenceClassification\"", "\"model_type\":\t\"distilbert\"",
                            "paris dog the mat\nberlin cat the mat\n", DB_WORDS, DB_ANIMALS};
    CHECKF(test_finetune_classify(&s, run, out, sizeof out) == 0, "classify, predict or pairs failed\n%s", out);
    snprintf(path, sizeof path, "%s/c/model.safetensors", run);
    tf_st_file *f = tf_st_open(path);
    CHECKF(f && tf_st_find(f, "pre_classifier.weight") && tf_st_find(f, "classifier.weight") &&
           tf_st_find(f, "distilbert.transformer.layer.0.attention.q_lin.weight"), "%s lacks DistilBERT's names", path);
    tf_st_close(f);
    int rc;
    size_t n;
    char *cfg;
    CHECK(test_write_text(train, "the\tO\ncat\tB\nsat\tO\n\n") == 0 && test_write_text(valid, "the\tO\ncat\tB\n\n") == 0);
    snprintf(args, sizeof args, "finetune --model %s --task tag --train %s --valid %s --out %s/t --steps 2 --threads 1 "
             "2>&1", model, train, valid, run);
    rc = test_run_cli("", args, out, sizeof out);
    CHECKF(rc == 0 && strstr(out, "valid:"), "tag: status %d\n%s", rc, out);
    static const char SPAN[] = "{\"context\": \"paris is the capital of france\", \"question\": \"what is the capital\", "
                               "\"answer_start\": 0, \"answer\": \"paris\"}\n";
    CHECK(test_write_text(train, SPAN) == 0 && test_write_text(valid, SPAN) == 0);
    snprintf(args, sizeof args, "finetune --model %s --task span --train %s --valid %s --out %s/q --steps 2 "
             "--threads 1 2>&1", model, train, valid, run);
    rc = test_run_cli("", args, out, sizeof out);
    CHECKF(rc == 0 && strstr(out, "valid:"), "span: status %d\n%s", rc, out);
    snprintf(path, sizeof path, "%s/q/config.json", run);
    cfg = test_slurp(path, &n);
    CHECKF(cfg && strstr(cfg, "\"DistilBertForQuestionAnswering\""), "%s", cfg ? cfg : path);
    free(cfg);
    CHECK(test_sentiment_file(train, 20, 5, 0, DB_WORDS, DB_ANIMALS) == 0 &&
          test_sentiment_file(valid, 4, 6, 0, DB_WORDS, DB_ANIMALS) == 0);
    snprintf(path, sizeof path, "%s/config.json", model); /* the same folder with sinusoidal_pos_embds */
    cfg = test_slurp(path, &n);
    char *sin = cfg ? test_replaced(cfg, "\"sinusoidal_pos_embds\":\tfalse", "\"sinusoidal_pos_embds\": true") : NULL;
    CHECKF(sin && test_write_text(path, sin) == 0, "%s", cfg ? cfg : path);
    free(cfg), free(sin);
    snprintf(args, sizeof args, "finetune --model %s --train %s --valid %s --out %s/s --steps 2 --threads 1 2>&1",
             model, train, valid, run);
    rc = test_run_cli("", args, out, sizeof out);
    CHECKF(rc != 0 && strstr(out, "sinusoidal_pos_embds true is not fine-tuned"), "sinusoidal: status %d\n%s", rc, out);
    test_rm_rf(run), test_rm_rf(model), unlink(train), unlink(valid);
}
