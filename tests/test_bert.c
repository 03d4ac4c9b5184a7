/* BERT beyond the Hugging Face fixtures (tests/test_hf_run.c): saving and
 * loading folders, a body loaded under a new head, the gathered MLM loss
 * against the full one (values and gradients), and bad folders and inputs. */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "test.h"

#define B 2
#define T 6

static tf_bert_config small(tf_bert_head head) {
    tf_bert_config c = tf_bert_config_default(19, 8, 2, 2, 8);
    c.d_ff = 12, c.head = head, c.n_labels = 3, c.dropout = c.attn_dropout = 0;
    c.pooler = head == TF_BERT_BODY || head == TF_BERT_PRETRAINING || head == TF_BERT_SEQ_CLS;
    return c;
}

static tf_tensor *ids_tensor(tf_ctx *ctx, int32_t mod, int32_t shift) {
    tf_tensor *t = tf_tensor_new(ctx, TF_DTYPE_I32, 2, (int64_t[]){B, T}, 0);
    for (int i = 0; t && i < B * T; i++) tf_i32(t)[i] = (i * 7 + shift) % mod;
    return t;
}

static void remove_folder(const char *dir) {
    char p[512];
    static const char *const names[] = {"config.json", "model.safetensors"};
    for (int i = 0; i < 2; i++) snprintf(p, sizeof p, "%s/%s", dir, names[i]), unlink(p);
    rmdir(dir);
}

/* Every head: saved, loaded back, the same outputs to the bit. */
TEST(bert_save_load_every_head) {
    char dir[] = "/tmp/tformer_bert_XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    for (int h = TF_BERT_BODY; h <= TF_BERT_QA; h++) {
        tf_bert_config c = small((tf_bert_head)h);
        tf_bert *m = tf_bert_new(&c, 5);
        CHECK(m && tf_bert_save(m, dir) == 0);
        tf_bert *r = tf_bert_load(dir, NULL);
        CHECKF(r != NULL, "%s: %s", tf_bert_head_name((tf_bert_head)h), tf_error());
        int classes = h == TF_BERT_SEQ_CLS || h == TF_BERT_TOKEN_CLS;
        CHECK(r->cfg.head == c.head && (!classes || r->cfg.n_labels == c.n_labels) && r->cfg.pooler == c.pooler);
        tf_ctx *ctx = tf_ctx_new(1);
        tf_bert_inputs in = {.input_ids = ids_tensor(ctx, 19, 1)};
        tf_bert_outputs a, b;
        CHECK(tf_bert_run(ctx, m, &in, &a) == 0 && tf_bert_run(ctx, r, &in, &b) == 0);
        tf_tensor *x = a.logits ? a.logits : a.start_logits ? a.start_logits : a.last_hidden_state;
        tf_tensor *y = b.logits ? b.logits : b.start_logits ? b.start_logits : b.last_hidden_state;
        CHECK(tf_numel(x) == tf_numel(y) && !memcmp(x->data, y->data, (size_t)tf_numel(x) * 4));
        tf_ctx_free(ctx);
        tf_bert_free(m);
        tf_bert_free(r);
    }
    remove_folder(dir);
}

/* A pre-trained body under a classification head: the body's tensors as
 * saved, the head's initialised; label names through config.json. */
TEST(bert_body_under_new_head) {
    char dir[] = "/tmp/tformer_bert_XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    tf_bert_config c = small(TF_BERT_MLM);
    tf_bert *m = tf_bert_new(&c, 9);
    CHECK(m && tf_bert_save(m, dir) == 0);
    tf_bert_load_opts o = {TF_BERT_SEQ_CLS, 4, 3};
    tf_bert *r = tf_bert_load(dir, &o);
    CHECK(r && r->cfg.head == TF_BERT_SEQ_CLS && r->cfg.n_labels == 4 && r->cfg.pooler);
    tf_tensor *w0 = tf_params_get(m->params, "bert.encoder.layer.1.output.dense.weight");
    tf_tensor *w1 = tf_params_get(r->params, "bert.encoder.layer.1.output.dense.weight");
    CHECK(w0 && w1 && !memcmp(w0->data, w1->data, (size_t)tf_numel(w0) * 4));
    CHECK(tf_params_get(r->params, "classifier.weight") != NULL);
    const char *names[] = {"sport", "food", "law", "love"};
    CHECK(tf_bert_set_labels(r, names, 4) == 0 && tf_bert_save(r, dir) == 0);
    tf_bert *s = tf_bert_load(dir, NULL);
    char buf[32];
    CHECK(s && !strcmp(tf_bert_label(s, 2, buf, sizeof buf), "law"));
    /* the folder's own head: its unexpected tensors are errors, a missing one too */
    tf_bert_load_opts strict = {TF_BERT_SEQ_CLS, 4, 0};
    tf_bert_free(tf_bert_load(dir, &strict)); /* own head: fine */
    tf_bert_free(m);
    tf_bert_free(r);
    tf_bert_free(s);
    remove_folder(dir);
}

/* loss_only gathers the labelled rows: the same loss and gradients as the
 * decoder on every position. */
TEST(bert_mlm_gathered_loss) {
    tf_bert_config c = small(TF_BERT_MLM);
    tf_bert *m = tf_bert_new(&c, 4);
    CHECK(m);
    float loss[2];
    float *grad[2];
    tf_tensor *w = tf_params_get(m->params, "bert.encoder.layer.0.attention.self.query.weight");
    for (int k = 0; k < 2; k++) {
        tf_ctx *ctx = tf_ctx_new(1);
        tf_tensor *labels = ids_tensor(ctx, 19, 3);
        for (int i = 0; i < B * T; i++)
            if (i % 3) tf_i32(labels)[i] = -100;
        tf_bert_inputs in = {.input_ids = ids_tensor(ctx, 19, 1), .labels = labels, .loss_only = k};
        tf_bert_outputs out;
        tf_params_zero_grad(m->params);
        CHECK(tf_bert_run(ctx, m, &in, &out) == 0 && tf_backward(ctx, out.loss, NULL) == 0);
        CHECK(k == 0 || (out.logits->ndim == 2 && out.logits->shape[0] == B * T / 3));
        loss[k] = tf_f32(out.loss)[0];
        grad[k] = malloc((size_t)tf_numel(w) * 4);
        memcpy(grad[k], w->grad, (size_t)tf_numel(w) * 4);
        tf_ctx_free(ctx);
    }
    CHECKF(fabsf(loss[0] - loss[1]) <= 1e-6f * fabsf(loss[0]), "loss %g vs %g", loss[0], loss[1]);
    double err = test_rel_err(grad[1], grad[0], (long)tf_numel(w));
    free(grad[0]);
    free(grad[1]);
    CHECKF(err < 1e-5, "gradient relative error %g", err);
    tf_bert_free(m);
}

/* A pre-LN sequence classifier pooling by p, every parameter drawn at random
 * (LayerNorms not at 1 / 0: every path matters), run on two rows, the second
 * 4 tokens and 2 padding. */
static tf_bert *pooling_run(tf_ctx *ctx, tf_pooling p, uint64_t seed, tf_bert_inputs *in, tf_bert_outputs *out) {
    tf_bert_config c = small(TF_BERT_SEQ_CLS);
    c.norm_first = 1, c.pooling = p;
    tf_bert *m = tf_bert_new(&c, 7);
    for (int i = 0; m && i < tf_params_count(m->params); i++)
        tf_tensor_fill_normal(tf_params_tensor(m->params, i), seed + (uint64_t)i, 0.3f);
    tf_tensor *mask = tf_tensor_new(ctx, TF_DTYPE_I32, 2, (int64_t[]){B, T}, 0);
    for (int i = 0; i < B * T; i++) tf_i32(mask)[i] = i < T + 4;
    *in = (tf_bert_inputs){.input_ids = ids_tensor(ctx, 19, 1), .attention_mask = mask};
    if (m && tf_bert_run(ctx, m, in, out)) tf_bert_free(m), m = NULL;
    return m;
}

/* The padded row pools as the row cut short (the same logits), and the
 * folder says model_type "tformer-bert" and tformer_pooling name, and loads
 * back to the same settings and bits. */
static void check_cut_row_and_folder(tf_ctx *ctx, const tf_bert *m, const tf_bert_inputs *in,
                                     const tf_bert_outputs *out, const char *name) {
    tf_tensor *cut = tf_tensor_new(ctx, TF_DTYPE_I32, 2, (int64_t[]){1, 4}, 0);
    for (int t = 0; t < 4; t++) tf_i32(cut)[t] = tf_i32(in->input_ids)[T + t];
    tf_bert_inputs in1 = {.input_ids = cut};
    tf_bert_outputs one;
    CHECK(tf_bert_run(ctx, m, &in1, &one) == 0);
    double err = test_rel_err(tf_f32(one.logits), tf_f32(out->logits) + 3, 3);
    CHECKF(err < 1e-6, "padded row vs cut row: relative error %g", err);
    char dir[] = "/tmp/tformer_bert_XXXXXX", path[600], want[64];
    CHECK(mkdtemp(dir) != NULL && tf_bert_save(m, dir) == 0);
    snprintf(path, sizeof path, "%s/config.json", dir);
    snprintf(want, sizeof want, "\"tformer_pooling\":\t\"%s\"", name);
    size_t len;
    char *text = test_slurp(path, &len);
    int marked = text && strstr(text, "\"tformer-bert\"") && strstr(text, want) && strstr(text, "\"tformer_norm_first\":\ttrue");
    free(text);
    tf_bert *r = marked ? tf_bert_load(dir, NULL) : NULL;
    tf_bert_outputs back;
    int same = r && r->cfg.norm_first && r->cfg.pooling == m->cfg.pooling && tf_bert_run(ctx, r, in, &back) == 0 &&
               !memcmp(back.logits->data, out->logits->data, 2 * 3 * 4);
    tf_bert_free(r);
    remove_folder(dir);
    CHECKF(marked && same, "%s", !marked ? "config.json lacks the settings" : r ? "settings or logits lost" : tf_error());
}

/* Frees m; its configuration with pooling p is refused, naming it. */
static void free_and_refuse(tf_bert *m, tf_pooling p, const char *needle) {
    tf_bert_config c = m->cfg;
    tf_bert_free(m);
    c.pooling = p;
    CHECK(tf_bert_config_check(&c) == -1 && strstr(tf_error(), needle));
}

/* Pre-LN blocks with a final LayerNorm and the pooler on the tokens' mean
 * (LRA's classifier; not Hugging Face's BERT): the pooled vector equals
 * tanh(dense(mean)) computed here in double from last_hidden_state over the
 * unpadded tokens; then check_cut_row_and_folder. */
TEST(bert_pre_ln_mean_pooling) {
    tf_ctx *ctx = tf_ctx_new(1);
    tf_bert_inputs in;
    tf_bert_outputs out;
    tf_bert *m = pooling_run(ctx, TF_POOL_MEAN, 40, &in, &out);
    CHECK(m && m->block.norm_first && tf_params_get(m->params, "bert.encoder.LayerNorm.weight"));
    const float *h = tf_f32(out.last_hidden_state), *W = tf_f32(m->pooler.dense.weight), *bias = tf_f32(m->pooler.dense.bias);
    double worst = 0;
    for (int b = 0; b < B; b++) {
        int n = b ? 4 : T;
        for (int o = 0; o < 8; o++) {
            double z = bias[o];
            for (int k = 0; k < 8; k++) {
                double mean = 0;
                for (int t = 0; t < n; t++) mean += h[(b * T + t) * 8 + k];
                z += W[o * 8 + k] * mean / n;
            }
            worst = fmax(worst, fabs(tanh(z) - tf_f32(out.pooler_output)[b * 8 + o]));
        }
    }
    CHECKF(worst < 1e-6, "pooler_output off by %g", worst);
    check_cut_row_and_folder(ctx, m, &in, &out, "mean");
    tf_ctx_free(ctx);
    free_and_refuse(m, TF_POOL_MAX, "pooling max");
}

/* The pooler on the last token before the padding (GPT2ForSequenceClassification's
 * rule): the pooled vector equals tanh(dense(h[b, n_b - 1])) computed here in
 * double from last_hidden_state (and not the first token's); then
 * check_cut_row_and_folder (a padded row pools as the row cut short, not as
 * its last padding position); the poolings the pooler lacks are refused. */
TEST(bert_last_pooling) {
    tf_ctx *ctx = tf_ctx_new(1);
    tf_bert_inputs in;
    tf_bert_outputs out;
    tf_bert *m = pooling_run(ctx, TF_POOL_LAST, 60, &in, &out);
    CHECK(m != NULL);
    const float *h = tf_f32(out.last_hidden_state), *W = tf_f32(m->pooler.dense.weight), *bias = tf_f32(m->pooler.dense.bias);
    double worst = 0, first = 0;
    for (int b = 0; b < B; b++) {
        int end = (b ? 4 : T) - 1;
        for (int o = 0; o < 8; o++) {
            double z = bias[o], z0 = bias[o];
            for (int k = 0; k < 8; k++) z += W[o * 8 + k] * h[(b * T + end) * 8 + k], z0 += W[o * 8 + k] * h[(b * T) * 8 + k];
            worst = fmax(worst, fabs(tanh(z) - tf_f32(out.pooler_output)[b * 8 + o]));
            first = fmax(first, fabs(tanh(z0) - tf_f32(out.pooler_output)[b * 8 + o]));
        }
    }
    CHECKF(worst < 1e-6 && first > 1e-3, "pooler_output off by %g (the first token's: %g)", worst, first);
    check_cut_row_and_folder(ctx, m, &in, &out, "last");
    tf_ctx_free(ctx);
    free_and_refuse(m, TF_POOL_SEQ, "pooling seq");
}

static void expect_load_error(const char *dir, const char *config, const char *needle) {
    char p[512];
    snprintf(p, sizeof p, "%s/config.json", dir);
    if (test_write_text(p, config)) {
        test_fail(__FILE__, __LINE__, "cannot write %s", p);
        return;
    }
    tf_bert *m = tf_bert_load(dir, NULL);
    if (m || !strstr(tf_error(), needle))
        test_fail(__FILE__, __LINE__, "expected an error with '%s', got %s", needle, m ? "a model" : tf_error());
    tf_bert_free(m);
}

TEST(bert_bad_folders) {
    char dir[] = "/tmp/tformer_bert_XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    tf_bert_config c = small(TF_BERT_BODY);
    tf_bert *m = tf_bert_new(&c, 2);
    CHECK(m && tf_bert_save(m, dir) == 0);
    tf_bert_free(m);
    /* layers, heads, hidden size, then extra keys */
    const char *base = "{\"architectures\":[\"BertModel\"],\"vocab_size\":19,\"max_position_embeddings\":8,"
                       "\"num_hidden_layers\":%d,\"num_attention_heads\":%d,\"hidden_size\":%d,\"intermediate_size\":12%s}";
    static const struct {
        int layers, heads, hidden;
        const char *extra, *needle;
    } cases[] = {
        {2, 2, 8, ",\"position_embedding_type\":\"relative_key\"", "position_embedding_type"},
        {2, 2, 8, ",\"is_decoder\":true", "is_decoder"},
        {2, 2, 8, ",\"hidden_act\":\"swish\"", "hidden_act"},
        {2, 3, 8, "", "multiple"},
        {2, 2, 10, "", "wrong shape"},
        {1, 2, 8, "", "unexpected tensor 'encoder.layer.1."},
        {3, 2, 8, "", "missing tensor 'encoder.layer.2."},
        {2, 2, 8, ",\"num_hidden_layers\":2", "\"num_hidden_layers\" appears twice"},
        {2, 2, 8, ",\"tformer_pooling\":\"max\"", "\"tformer_pooling\" must be \"cls\", \"mean\" or \"last\""},
        {2, 2, 8, ",\"tformer_norm_first\":1", "\"tformer_norm_first\" must be true or false"},
        {2, 2, 8, ",\"tformer_norm_first\":true", "missing tensor 'encoder.LayerNorm.weight'"},
    };
    char cfg[1024];
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        snprintf(cfg, sizeof cfg, base, cases[i].layers, cases[i].heads, cases[i].hidden, cases[i].extra);
        expect_load_error(dir, cfg, cases[i].needle);
    }
    expect_load_error(dir, "{\"architectures\":[\"BertForMultipleChoice\"],\"vocab_size\":19}", "BertForMultipleChoice");
    remove_folder(dir);
}

TEST(bert_bad_inputs) {
    tf_bert_config c = small(TF_BERT_TOKEN_CLS);
    tf_bert *m = tf_bert_new(&c, 2);
    tf_ctx *ctx = tf_ctx_new(1);
    CHECK(m && ctx);
    tf_bert_outputs out;
    tf_bert_inputs in = {.input_ids = ids_tensor(ctx, 25, 0)};
    CHECK(tf_bert_run(ctx, m, &in, &out) == -1 && strstr(tf_error(), "below vocab_size"));
    in.input_ids = ids_tensor(ctx, 19, 0);
    in.token_type_ids = ids_tensor(ctx, 3, 0);
    CHECK(tf_bert_run(ctx, m, &in, &out) == -1 && strstr(tf_error(), "type_vocab_size"));
    in.token_type_ids = NULL;
    in.labels = ids_tensor(ctx, 5, 0); /* 3 labels */
    CHECK(tf_bert_run(ctx, m, &in, &out) == -1 && strstr(tf_error(), "labels holds"));
    tf_tensor *long_ids = tf_tensor_new(ctx, TF_DTYPE_I32, 2, (int64_t[]){1, 9}, 1);
    tf_bert_inputs in2 = {.input_ids = long_ids};
    CHECK(tf_bert_run(ctx, m, &in2, &out) == -1 && strstr(tf_error(), "max_position_embeddings 8"));
    tf_ctx_free(ctx);
    tf_bert_free(m);
}

/* ---------------------------------------------------------------- folders for transformers */

static tf_tensor *labels_for(tf_ctx *ctx, tf_bert_head h, const char **name, tf_tensor **second) {
    *second = NULL;
    if (h == TF_BERT_SEQ_CLS) {
        *name = "labels";
        tf_tensor *y = tf_tensor_new(ctx, TF_DTYPE_I32, 1, (int64_t[]){B}, 0);
        tf_i32(y)[0] = 2, tf_i32(y)[1] = 0;
        return y;
    }
    if (h == TF_BERT_QA) {
        *name = "start_positions";
        tf_tensor *s = tf_tensor_new(ctx, TF_DTYPE_I32, 1, (int64_t[]){B}, 0);
        *second = tf_tensor_new(ctx, TF_DTYPE_I32, 1, (int64_t[]){B}, 0);
        tf_i32(s)[0] = 1, tf_i32(s)[1] = 4, tf_i32(*second)[0] = 3, tf_i32(*second)[1] = 5;
        return s;
    }
    *name = "labels";
    tf_tensor *y = ids_tensor(ctx, h == TF_BERT_TOKEN_CLS ? 3 : 19, 2);
    for (int i = 0; i < B * T; i += 2) tf_i32(y)[i] = -100;
    return y;
}

/* Every head saved by tformer with random weights (N(0,0.3): every path
 * matters) and an input file; `make hf-conformance` has transformers load each
 * folder (from_pretrained) and write expected.safetensors, then runs them
 * through hf-run: transformers reads what tformer writes. Without
 * TFORMER_EXPORT_DIR it only checks that the files are written. */
TEST(bert_export_for_transformers) {
    const char *keep = getenv("TFORMER_EXPORT_DIR");
    char root[512] = "/tmp/tformer_bexp_XXXXXX", dir[600], path[700];
    if (keep) snprintf(root, sizeof root, "%s", keep);
    CHECK(keep || mkdtemp(root));
    for (int h = TF_BERT_BODY; h <= TF_BERT_QA; h++) {
        tf_bert_config c = small((tf_bert_head)h);
        c.tied = h != TF_BERT_MLM; /* one untied decoder */
        tf_bert *m = tf_bert_new(&c, 11 + (uint64_t)h);
        CHECK(m);
        for (int i = 0; i < tf_params_count(m->params); i++)
            tf_tensor_fill_normal(tf_params_tensor(m->params, i), 100 + (uint64_t)i, 0.3f);
        snprintf(dir, sizeof dir, "%s/export_%s", root, tf_bert_head_name((tf_bert_head)h));
        mkdir(dir, 0755);
        CHECK(tf_bert_save(m, dir) == 0);
        tf_ctx *ctx = tf_ctx_new(1);
        tf_tensor *mask = tf_tensor_new(ctx, TF_DTYPE_I32, 2, (int64_t[]){B, T}, 0);
        for (int i = 0; i < B * T; i++) tf_i32(mask)[i] = i < T + 4; /* the second row padded after 4 tokens */
        const char *ln = NULL;
        tf_tensor *second, *labels = h == TF_BERT_BODY ? NULL : labels_for(ctx, (tf_bert_head)h, &ln, &second);
        tf_st_writer *w = tf_st_writer_new();
        CHECK(w && tf_st_writer_add(w, "input_ids", ids_tensor(ctx, 19, 1)) == 0);
        CHECK(tf_st_writer_add(w, "attention_mask", mask) == 0);
        CHECK(tf_st_writer_add(w, "token_type_ids", ids_tensor(ctx, 2, 0)) == 0);
        if (labels) CHECK(tf_st_writer_add(w, ln, labels) == 0);
        if (h == TF_BERT_QA) CHECK(tf_st_writer_add(w, "end_positions", second) == 0);
        if (h == TF_BERT_PRETRAINING) {
            tf_tensor *nsp = tf_tensor_new(ctx, TF_DTYPE_I32, 1, (int64_t[]){B}, 0);
            tf_i32(nsp)[0] = 1;
            CHECK(tf_st_writer_add(w, "next_sentence_label", nsp) == 0);
        }
        snprintf(path, sizeof path, "%s/input.safetensors", dir);
        CHECK(tf_st_writer_save(w, path) == 0);
        tf_st_writer_free(w);
        tf_ctx_free(ctx);
        tf_bert_free(m);
        if (!keep) {
            snprintf(path, sizeof path, "rm -r %s", dir);
            CHECK(system(path) == 0);
        }
    }
    if (!keep) rmdir(root);
}

/* ---------------------------------------------------------------- fill-mask and embed through the CLI */

/* A tiny BertForMaskedLM folder with a 19-token WordPiece vocabulary. */
static int tiny_mlm_folder(char *dir) {
    char p[600];
    if (!mkdtemp(dir)) return -1;
    tf_bert_config c = small(TF_BERT_MLM);
    tf_bert *m = tf_bert_new(&c, 21);
    for (int i = 0; m && i < tf_params_count(m->params); i++)
        tf_tensor_fill_normal(tf_params_tensor(m->params, i), 300 + (uint64_t)i, 0.5f);
    int rc = !m || tf_bert_save(m, dir);
    tf_bert_free(m);
    snprintf(p, sizeof p, "%s/vocab.txt", dir);
    return rc || test_write_text(p, "[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\nthe\ncat\nsat\non\nmat\na\ndog\nran\n.\n,\nbig\nred\n##s\nhat\n");
}

TEST(bert_fill_mask_cli_gives_the_softmax_top_k) {
    char dir[] = "/tmp/tformer_fm_XXXXXX", cmd[900], out[4096], err[512];
    CHECK(tiny_mlm_folder(dir) == 0);
    snprintf(cmd, sizeof cmd, "%s fill-mask --model %s --text 'the cat [MASK] on the mat' --top-k 3 --threads 1",
             test_tformer_bin(), dir);
    FILE *p = popen(cmd, "r");
    size_t k = p ? fread(out, 1, sizeof out - 1, p) : 0;
    out[k] = 0;
    CHECK(p && pclose(p) == 0);
    /* in-process: [CLS] the cat [MASK] on the mat [SEP] = 2 5 6 4 8 5 9 3, the mask at 3 */
    tf_bert *m = tf_bert_load(dir, NULL);
    tf_ctx *ctx = tf_ctx_new(1);
    tf_tensor *ids = tf_tensor_new(ctx, TF_DTYPE_I32, 2, (int64_t[]){1, 8}, 0);
    const int32_t x[8] = {2, 5, 6, 4, 8, 5, 9, 3};
    memcpy(ids->data, x, sizeof x);
    tf_bert_outputs o;
    CHECK(m && tf_bert_run(ctx, m, &(tf_bert_inputs){.input_ids = ids}, &o) == 0);
    const float *row = tf_f32(o.logits) + 3 * 19;
    double mx = -1e30, sum = 0, prob[19];
    for (int v = 0; v < 19; v++) mx = row[v] > mx ? row[v] : mx;
    for (int v = 0; v < 19; v++) sum += prob[v] = exp(row[v] - mx);
    const char *line = strstr(out, "[MASK] at position 3:\n");
    CHECKF(line != NULL, "output:\n%s", out);
    line = strchr(line, '\n') + 1;
    double last = 2;
    for (int j = 0; j < 3; j++) {
        double pr;
        int id;
        char tok[32];
        CHECKF(sscanf(line, " %lf %31s (id %d)", &pr, tok, &id) == 3, "line: %s", line);
        CHECK(id >= 0 && id < 19 && pr <= last);
        CHECKF(fabs(pr - prob[id] / sum) < 2e-6, "token %d: printed %.6f, softmax %.6f", id, pr, prob[id] / sum);
        for (int v = 0; v < 19; v++) CHECK(prob[v] / sum <= pr + 1e-6 || v == id || j > 0);
        last = pr;
        line = strchr(line, '\n') + 1;
    }
    tf_ctx_free(ctx);
    tf_bert_free(m);
    /* a folder without an MLM head, a text without [MASK]: clear errors */
    snprintf(cmd, sizeof cmd, "%s fill-mask --model %s --text 'the cat sat' 2>/tmp/tformer_fm_err >/dev/null", test_tformer_bin(), dir);
    CHECK(system(cmd) != 0);
    FILE *f = fopen("/tmp/tformer_fm_err", "r");
    k = f ? fread(err, 1, sizeof err - 1, f) : 0;
    err[k] = 0;
    if (f) fclose(f);
    CHECKF(strstr(err, "holds no mask token ([MASK], id") != NULL, "stderr: %s", err);
    snprintf(cmd, sizeof cmd, "rm -r %s /tmp/tformer_fm_err", dir);
    CHECK(system(cmd) == 0);
}

TEST(bert_embed_cli_equals_the_library) {
    char dir[] = "/tmp/tformer_fm_XXXXXX", cmd[900], out[16384];
    CHECK(tiny_mlm_folder(dir) == 0);
    snprintf(cmd, sizeof cmd, "printf 'the cat sat on the mat.\\na big red dog ran\\n' | %s embed --model %s --normalize",
             test_tformer_bin(), dir);
    FILE *p = popen(cmd, "r");
    size_t k = p ? fread(out, 1, sizeof out - 1, p) : 0;
    out[k] = 0;
    CHECK(p && pclose(p) == 0);
    tf_bert *m = tf_bert_load(dir, &(tf_bert_load_opts){TF_BERT_BODY, 0, 1});
    tf_tokenizer *tok = tf_tokenizer_load(dir);
    const char *texts[] = {"the cat sat on the mat.", "a big red dog ran"};
    tf_embed_opts o = {TF_POOL_MEAN, 1, 0, 32};
    float e[16];
    CHECK(m && tok && tf_bert_embed(m, tok, texts, NULL, 2, &o, e) == 0);
    char *s = out;
    for (int i = 0; i < 16; i++) {
        float v = strtof(s, &s);
        CHECKF(fabsf(v - e[i]) < 1e-6f, "value %d: printed %g, library %g", i, v, e[i]);
    }
    double norm = 0;
    for (int i = 0; i < 8; i++) norm += (double)e[i] * e[i];
    CHECK(fabs(norm - 1) < 1e-5);
    tf_tokenizer_free(tok);
    tf_bert_free(m);
    snprintf(cmd, sizeof cmd, "rm -r %s", dir);
    CHECK(system(cmd) == 0);
}

/* Whole batches go to the threads: the same bits on 1 and 2 threads and
 * whichever thread ran a batch; one batch of everything agrees too (rows of
 * other lengths only add masked padding). */
TEST(bert_embed_threads_and_batches_agree) {
    char dir[] = "/tmp/tformer_fm_XXXXXX", cmd[600];
    CHECK(tiny_mlm_folder(dir) == 0);
    tf_bert *m = tf_bert_load(dir, &(tf_bert_load_opts){TF_BERT_BODY, 0, 1});
    tf_tokenizer *tok = tf_tokenizer_load(dir);
    static const char *words[] = {"the", "cat", "sat", "on", "mat", "a", "big", "red", "dog", "ran"};
    enum { N = 37, C = 8 };
    char buf[N][128];
    const char *texts[N];
    for (int i = 0; i < N; i++) {
        buf[i][0] = 0;
        for (int w = 0; w < 1 + (i * 7) % 13; w++) strcat(strcat(buf[i], words[(i + 3 * w) % 10]), " ");
        texts[i] = buf[i];
    }
    static float e1[N * C], e2[N * C], all[N * C];
    tf_embed_opts o = {TF_POOL_MEAN, 1, 0, 4};
    CHECK(m && tok);
    tf_set_threads(1);
    CHECK(tf_bert_embed(m, tok, texts, NULL, N, &o, e1) == 0);
    tf_set_threads(2);
    CHECK(tf_bert_embed(m, tok, texts, NULL, N, &o, e2) == 0);
    o.batch = N;
    CHECK(tf_bert_embed(m, tok, texts, NULL, N, &o, all) == 0);
    tf_set_threads(0);
    CHECK(memcmp(e1, e2, sizeof e1) == 0);
    for (int i = 0; i < N * C; i++) CHECKF(fabsf(e1[i] - all[i]) < 1e-5f, "value %d: %g batched by 4, %g in one", i, e1[i], all[i]);
    tf_tokenizer_free(tok);
    tf_bert_free(m);
    snprintf(cmd, sizeof cmd, "rm -r %s", dir);
    CHECK(system(cmd) == 0);
}

/* Hostile input to the new verbs: a clear message and exit status, no crash. */
TEST(bert_cli_hostile_input) {
    char dir[] = "/tmp/tformer_fm_XXXXXX", cmd[900];
    CHECK(tiny_mlm_folder(dir) == 0);
    static const struct {
        const char *args;
        int status;
    } CASES[] = {
        {"fill-mask --model /nonexistent/bert --text '[MASK]'", 1},
        {"fill-mask --model %s/config.json --text '[MASK]'", 1},          /* a file, not a folder */
        {"fill-mask --model %s --text '[MASK]' --top-k abc", 2},
        {"fill-mask --model %s --text '[MASK]' --top-k 0", 2},
        {"fill-mask --model %s --text '[MASK]' --top-k 1e9", 2},
        {"fill-mask --model %s", 2},                                       /* no --text */
        {"embed --model /nonexistent/bert < /dev/null", 1},
        {"embed --model %s --pooling nan < /dev/null", 2},
        {"embed --model %s --batch -3 < /dev/null", 2},
        {"embed --model %s/vocab.txt < /dev/null", 1},
        {"embed --model %s --batch 0 < /dev/null", 2},            /* was taken as the default */
        {"embed --model %s --max-length 100000 < /dev/null", 1},  /* was cut to the context */
        {"predict --model %s --batch 0 < /dev/null", 2},
        {"predict --model %s --max-len 100000 < /dev/null", 1},
        {"train --arch listops --out %s/run --pooling nan", 2},
        {"train --arch listops --out %s/run --pooling max", 1}, /* a choice the pooler does not have */
        {"train --arch listops --out %s/run --context 2048 --pooling seq", 1}, /* ViT's, not the pooler's */
        {"train --arch listops --out %s/run --norm-first 1e9", 2},
        {"train --arch listops --out %s/run --norm rms", 2},    /* GPT's table's, not listops's */
    };
    for (size_t i = 0; i < sizeof CASES / sizeof CASES[0]; i++) {
        char args[400];
        snprintf(args, sizeof args, CASES[i].args, dir);
        snprintf(cmd, sizeof cmd, "%s %s >/dev/null 2>/tmp/tformer_hostile_err", test_tformer_bin(), args);
        int st = system(cmd);
        size_t n;
        char *err = test_slurp("/tmp/tformer_hostile_err", &n);
        CHECKF(WIFEXITED(st) && WEXITSTATUS(st) == CASES[i].status && err && strstr(err, "tformer "),
               "%s: status %d, stderr %s", args, WIFEXITED(st) ? WEXITSTATUS(st) : -1, err ? err : "");
        free(err);
    }
    char run[300];
    snprintf(run, sizeof run, "%s/run", dir); /* refused settings (--pooling max) leave no run folder */
    CHECKF(access(run, F_OK) != 0, "%s exists after refused runs", run);
    snprintf(cmd, sizeof cmd, "rm -r %s /tmp/tformer_hostile_err", dir);
    CHECK(system(cmd) == 0);
}
