/* What the tests of the BERT family's Hugging Face variants share
 * (test_roberta.c, test_distilbert.c): the loss's gradients on a case,
 * tformer's own folders read back bit for bit, the classes the family lacks,
 * the fine-tuning data and folders. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "test.h"

/* ---------------------------------------------------------------- gradients */

static tf_tensor *bert_loss(tf_ctx *ctx, const void *m, const tf_st_file *in, tf_arena *a) {
    tf_bert_inputs x = {.input_ids = test_st_tensor(in, "input_ids", a),
                        .attention_mask = test_st_tensor(in, "attention_mask", a),
                        .token_type_ids = test_st_tensor(in, "token_type_ids", a),
                        .position_ids = test_st_tensor(in, "position_ids", a),
                        .labels = test_st_tensor(in, "labels", a)};
    tf_bert_outputs o;
    return tf_bert_run(ctx, m, &x, &o) ? NULL : o.loss;
}

double test_bert_gradient_case(const char *dir, int *n_tensors) {
    tf_bert *m = tf_bert_load(dir, NULL);
    double e = m ? test_text_gradient_case(dir, m, m->params, bert_loss, n_tensors) : -1;
    tf_bert_free(m);
    return e;
}

int test_bert_bad_cases(const test_bad_case *cases, size_t n, const char *model, const char *verbose_env,
                        const char *cls, const char *lacking, const char *expect) {
    return test_hf_run_bad_cases(cases, n, model, verbose_env) + (test_bert_refuses(model, cls, lacking, expect) != 0);
}

int test_bert_refuses(const char *case_dir, const char *from, const char *to, const char *expect) {
    char dir[] = "/tmp/tformer_bertbad_XXXXXX";
    if (!mkdtemp(dir)) return -1;
    int rc = test_copy_case(case_dir, dir, from, to, NULL, 0, 0, NULL);
    tf_bert *m = rc ? NULL : tf_bert_load(dir, NULL);
    test_rm_rf(dir);
    if (rc || m || !strstr(tf_error(), expect)) fprintf(stderr, "    %s: %s\n", to, m ? "loaded" : tf_error());
    rc = rc || m || !strstr(tf_error(), expect) ? -1 : 0;
    tf_bert_free(m);
    return rc;
}

/* ---------------------------------------------------------------- tformer's folders */

#define EX_B 2
#define EX_T 6

static tf_tensor *ints(tf_ctx *ctx, int ndim, int mod, int add) {
    tf_tensor *t = tf_tensor_new(ctx, TF_DTYPE_I32, ndim, (int64_t[]){EX_B, EX_T}, 0);
    for (int64_t i = 0; t && i < tf_numel(t); i++) tf_i32(t)[i] = (int32_t)((i * 7 + add) % mod);
    return t;
}

/* (EX_B, EX_T) ids (i * 7 + 1) % ids_mod + ids_add, the second row padded
 * after 4 tokens (pad there, attention_mask 0), labels for the head. */
static int bert_inputs(tf_ctx *ctx, tf_bert_head h, int ids_mod, int ids_add, int32_t pad, tf_bert_inputs *in) {
    tf_tensor *ids = ints(ctx, 2, ids_mod, 1), *mask = ints(ctx, 2, 1, 0);
    if (!ids || !mask) return -1;
    for (int i = 0; i < EX_B * EX_T; i++) {
        tf_i32(ids)[i] += ids_add;
        tf_i32(mask)[i] = i < EX_T + 4;
        if (!tf_i32(mask)[i]) tf_i32(ids)[i] = pad;
    }
    *in = (tf_bert_inputs){.input_ids = ids, .attention_mask = mask};
    if (h == TF_BERT_MLM || h == TF_BERT_TOKEN_CLS) {
        in->labels = ints(ctx, 2, h == TF_BERT_MLM ? 19 : 3, 2);
        for (int i = 0; in->labels && i < EX_B * EX_T; i += 2) tf_i32(in->labels)[i] = -100;
    } else if (h == TF_BERT_SEQ_CLS) {
        in->labels = ints(ctx, 1, 3, 1);
    } else if (h == TF_BERT_QA) {
        in->start_positions = ints(ctx, 1, 5, 1), in->end_positions = ints(ctx, 1, 6, 3);
    }
    return 0;
}

static int save_inputs(const tf_bert_inputs *in, const char *path) {
    tf_st_writer *w = tf_st_writer_new();
    const char *names[] = {"input_ids", "attention_mask", "labels", "start_positions", "end_positions"};
    tf_tensor *ts[] = {in->input_ids, in->attention_mask, in->labels, in->start_positions, in->end_positions};
    int rc = !w;
    for (int i = 0; !rc && i < 5; i++) rc = ts[i] && tf_st_writer_add(w, names[i], ts[i]);
    rc = rc || tf_st_writer_save(w, path);
    tf_st_writer_free(w);
    return rc ? -1 : 0;
}

/* The first output of the head (logits, start logits or the hidden states). */
static const tf_tensor *first_output(const tf_bert_outputs *o) {
    return o->logits ? o->logits : o->start_logits ? o->start_logits : o->last_hidden_state;
}

tf_bert *test_bert_random(const tf_bert_config *c, uint64_t seed) {
    tf_bert *m = tf_bert_new(c, seed);
    for (int i = 0; m && i < tf_params_count(m->params); i++)
        tf_tensor_fill_normal(tf_params_tensor(m->params, i), 200 + (uint64_t)i, 0.3f);
    return m;
}

int test_bert_same_outputs(const tf_bert *m, const tf_bert *r, int ids_mod, int ids_add, const char *save) {
    tf_ctx *ctx = tf_ctx_new(1);
    tf_bert_inputs in;
    tf_bert_outputs a, b;
    int rc = !ctx || bert_inputs(ctx, m->cfg.head, ids_mod, ids_add, m->cfg.pad_token_id, &in) ||
             tf_bert_run(ctx, m, &in, &a) || tf_bert_run(ctx, r, &in, &b);
    const tf_tensor *x = rc ? NULL : first_output(&a), *y = rc ? NULL : first_output(&b);
    if (!rc && (tf_numel(x) != tf_numel(y) || memcmp(x->data, y->data, (size_t)tf_numel(x) * 4)))
        rc = fprintf(stderr, "    the outputs read back differ\n") > 0;
    if (!rc && (!a.loss != (m->cfg.head == TF_BERT_BODY) || (a.loss && tf_f32(a.loss)[0] != tf_f32(b.loss)[0])))
        rc = fprintf(stderr, "    the loss read back differs\n") > 0;
    rc = rc || (save && save_inputs(&in, save));
    tf_ctx_free(ctx);
    return rc ? -1 : 0;
}

/* ---------------------------------------------------------------- fine-tuning */

int test_sentiment_file(const char *path, int n, uint64_t seed, int pairs, const char *const words[2],
                        const char *const animals[4]) {
    FILE *f = fopen(path, "w");
    if (!f) return -1;
    for (int i = 0; i < n; i++) {
        seed = seed * 6364136223846793005ull + 1442695040888963407ull;
        int pos = (seed >> 33) & 1, k = (int)(seed >> 40) % 4;
        fprintf(f, "%s\t%s %s%sthe mat\n", pos ? "pos" : "neg", words[!pos], animals[k], pairs ? "\t" : " ");
    }
    return fclose(f);
}

int test_bert_folder(char *dir, const tf_bert_config *c, uint64_t seed, const char *tok_dir, const char *const *files,
                     int n) {
    if (!mkdtemp(dir)) return -1;
    tf_bert *m = tf_bert_new(c, seed);
    int rc = !m || tf_bert_save(m, dir);
    tf_bert_free(m);
    return rc || test_copy_files(tok_dir, dir, files, n) ? -1 : 0;
}

int test_finetune_classify(const test_finetune_spec *s, const char *run, char *out, size_t n) {
    char train[] = "/tmp/tformer_ftc_XXXXXX", valid[] = "/tmp/tformer_ftc_XXXXXX", args[2048], path[600];
    out[0] = 0;
    int rc = test_temp_file(train) || test_temp_file(valid) ||
             test_sentiment_file(train, 200, 1, 0, s->words, s->animals) ||
             test_sentiment_file(valid, 40, 2, 0, s->words, s->animals);
    snprintf(args, sizeof args,
             "finetune --model %s --train %s --valid %s --out %s/c --steps %d --batch 16 --lr 5e-3 "
             "--min-lr 1e-4 --warmup 3 --eval-every %d --threads 1 2>&1",
             s->model, train, valid, run, s->steps, s->steps);
    rc = rc || test_run_cli("", args, out, n);
    const char *acc = strstr(out, "valid: accuracy");
    printf("    classify: %s", acc ? acc : out);
    if (rc || !acc || !(strtod(acc + 16, NULL) > 0.9)) return fprintf(stderr, "classify: status %d\n%s", rc, out), -1;
    snprintf(path, sizeof path, "%s/c/config.json", run);
    size_t len;
    char *cfg = test_slurp(path, &len);
    int named = cfg && strstr(cfg, s->cls) && strstr(cfg, s->type);
    free(cfg);
    if (!named) return fprintf(stderr, "%s is not a %s folder\n", path, s->cls), -1;
    rc = test_write_text(train, s->lines);
    snprintf(args, sizeof args, "predict --model %s/c --threads 1 < %s", run, train);
    rc = rc || test_run_cli("", args, out, n);
    printf("    predict: %s", out);
    if (rc || strncmp(out, "pos\t", 4) || !strstr(out, "\nneg\t"))
        return fprintf(stderr, "predict: status %d\n%s", rc, out), -1;
    rc = test_sentiment_file(train, 40, 3, 1, s->words, s->animals) ||
         test_sentiment_file(valid, 8, 4, 1, s->words, s->animals);
    snprintf(args, sizeof args, "finetune --model %s --task pairs --train %s --valid %s --out %s/p --steps 2 --batch 8 "
             "--threads 1 2>&1", s->model, train, valid, run);
    rc = rc || test_run_cli("", args, out, n);
    unlink(train), unlink(valid);
    if (rc || !strstr(out, "valid: accuracy")) return fprintf(stderr, "pairs: status %d\n%s", rc, out), -1;
    return 0;
}

/* One head's folder: saved, its config.json and tensors as the family
 * wants, read back to the same outputs. 0 or -1 (said on stderr). */
static int export_head(const test_bert_export *x, tf_bert_config *c, int k, const char *root, int keep) {
    char dir[600], path[700];
    tf_bert *m = test_bert_random(c, 11 + (uint64_t)k), *r = NULL;
    snprintf(dir, sizeof dir, "%s/%s_%s", root, x->family, tf_bert_class_name(c));
    int rc = !m || tf_bert_save(m, dir);
    snprintf(path, sizeof path, "%s/config.json", dir);
    size_t len;
    char *text = rc ? NULL : test_slurp(path, &len);
    if (!rc && (!text || x->check_files(dir, text, c, k))) rc = fprintf(stderr, "    %s\n", text ? text : path) > 0;
    free(text);
    if (!rc && (!(r = tf_bert_load(dir, NULL)) || x->check_back(r, c)))
        rc = fprintf(stderr, "    %s read back: %s\n", dir, r ? "settings differ" : tf_error()) > 0;
    snprintf(path, sizeof path, "%s/input.safetensors", dir);
    rc = rc || test_bert_same_outputs(m, r, x->ids_mod, x->ids_add, keep ? path : NULL);
    if (rc) fprintf(stderr, "    %s: %s\n", dir, tf_error());
    tf_bert_free(r);
    tf_bert_free(m);
    if (!keep) test_rm_rf(dir);
    return rc ? -1 : 0;
}

int test_bert_export_heads(const test_bert_export *x) {
    static const tf_bert_head HEADS[] = {TF_BERT_BODY, TF_BERT_MLM, TF_BERT_SEQ_CLS, TF_BERT_TOKEN_CLS, TF_BERT_QA};
    const char *keep = getenv("TFORMER_EXPORT_DIR");
    char root[512] = "/tmp/tformer_bertexp_XXXXXX";
    if (keep) snprintf(root, sizeof root, "%s", keep);
    if (!keep && !mkdtemp(root)) return -1;
    int bad = 0;
    for (int k = 0; k < 5; k++) {
        tf_bert_config c = tf_bert_config_default(19, 9, 2, 2, 8);
        c.d_ff = 12, c.head = HEADS[k], c.n_labels = 3, c.dropout = c.attn_dropout = 0, c.type_vocab_size = 1;
        x->configure(&c, k);
        bad += export_head(x, &c, k, root, keep != NULL) != 0;
    }
    if (!keep) rmdir(root);
    return bad;
}
