/* Text classification through the model handle (tf_model_classify_texts): texts or text pairs
 * encoded, cut and batched exactly as `tformer predict --task classify|pairs` does (the folder's
 * finetune.json's max_len, tf_finetune_encode, tf_finetune_forward of 16), so the logits are the
 * ones the CLI's probabilities come from; and the forward of a fine-tuning batch both use. */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "../../util/util.h"
#include "bert_internal.h"

enum { CLASSIFY_BATCH = 16 }; /* tformer predict's --batch default */

/* The task of a folder without finetune.json: its head's. */
static tf_finetune_kind head_task(const tf_bert *m) {
    return m->cfg.head == TF_BERT_TOKEN_CLS ? TF_FINETUNE_TAG : m->cfg.head == TF_BERT_QA ? TF_FINETUNE_SPAN
                                                                                         : TF_FINETUNE_CLASSIFY;
}

int tf_bert_predict_opts(const tf_bert *m, const char *dir, int max_len, tf_predict_opts *o, const char **from) {
    tf_finetune_config c = tf_finetune_config_default();
    char path[4096];
    struct stat st;
    if (tf_path_join(path, sizeof path, dir, "finetune.json")) return -1;
    tf_fields f = {&tf_finetune_config_table, &c};
    int have = !stat(path, &st);
    if (have && tf_fields_load(&f, 1, path, 1)) return -1;
    if (!have) c.task = head_task(m);
    if (max_len > 0) c.max_len = max_len;
    int most = tf_bert_max_tokens(&m->cfg);
    *o = (tf_predict_opts){.task = c.task, .max_len = !c.max_len || c.max_len > most ? most : c.max_len,
                           .max_answer = c.max_answer, .batch = CLASSIFY_BATCH};
    *from = have ? "finetune.json" : "the model's head";
    return 0;
}

int tf_bert_predict(const tf_bert *m, tf_tokenizer *tok, const tf_finetune_set *s, const tf_predict_opts *o,
                    tf_finetune_prediction *p, int *n_truncated) {
    tf_finetune_data d;
    if (tf_finetune_encode(tok, s, NULL, 0, o->max_len, &d)) return -1;
    int rc = tf_finetune_predict(m, &d, o->batch, o->max_answer, p);
    *n_truncated = d.n_truncated;
    tf_finetune_data_free(&d);
    return rc;
}

int tf_bert_finetune_forward(tf_ctx *ctx, const tf_bert *m, const tf_finetune_data *d, int first, int rows,
                             tf_bert_outputs *out) {
    tf_batch b = {0};
    if (tf_finetune_batch(d, ctx, first, rows, &b)) return -1;
    tf_bert_inputs in = {.input_ids = tf_batch_get(&b, "input_ids"), .attention_mask = tf_batch_get(&b, "attention_mask"),
                         .token_type_ids = m->cfg.distilbert ? NULL : tf_batch_get(&b, "token_type_ids")};
    return tf_bert_run(ctx, m, &in, out);
}

/* Rows first .. first+rows-1 of d through the model: their logits into out (rows, L). */
static int classify_rows(const tf_bert *m, const tf_finetune_data *d, tf_ctx *ctx, int first, int rows, float *out) {
    tf_bert_outputs o;
    if (tf_bert_finetune_forward(ctx, m, d, first, rows, &o)) return -1;
    if (o.logits->ndim != 2 || o.logits->shape[1] != m->cfg.n_labels)
        return tf_set_error("classify: the model's logits are not (rows, %d)", m->cfg.n_labels);
    memcpy(out, tf_f32(o.logits), (size_t)rows * (size_t)m->cfg.n_labels * sizeof *out);
    return 0;
}

int tf_bert_classify_texts(const tf_bert *m, tf_tokenizer *tok, const char *dir, const char *const *a,
                           const char *const *b, int n, float *logits) {
    if (m->cfg.head != TF_BERT_SEQ_CLS)
        return tf_set_error("classify: texts need a %s, the model is a %s", tf_bert_head_name(TF_BERT_SEQ_CLS),
                            tf_bert_head_name(m->cfg.head));
    tf_predict_opts o;
    const char *from;
    if (tf_bert_predict_opts(m, dir, 0, &o, &from)) return -1;
    int max_len = o.max_len;
    if (n == 0) return 0;
    tf_finetune_set s = {b ? TF_FINETUNE_PAIRS : TF_FINETUNE_CLASSIFY, 0, calloc((size_t)n, sizeof *s.ex), n};
    if (!s.ex) return tf_set_error("classify: out of memory");
    for (int i = 0; i < n; i++) { /* borrowed: s is not freed with tf_finetune_set_free */
        if (!a[i] || (b && !b[i])) return free(s.ex), tf_set_error("classify: text %d is NULL", i);
        s.ex[i].a = (char *)a[i], s.ex[i].b = b ? (char *)b[i] : NULL, s.ex[i].line = i + 1;
    }
    tf_finetune_data d;
    int rc = tf_finetune_encode(tok, &s, NULL, 0, max_len, &d);
    free(s.ex);
    if (rc) return -1;
    tf_ctx *ctx = tf_ctx_new(0);
    if (!ctx) return tf_finetune_data_free(&d), -1;
    tf_ctx_set_grad(ctx, 0);
    for (int first = 0; !rc && first < n; first += CLASSIFY_BATCH) {
        tf_ctx_reset(ctx);
        int rows = n - first < CLASSIFY_BATCH ? n - first : CLASSIFY_BATCH;
        rc = classify_rows(m, &d, ctx, first, rows, logits + (size_t)first * (size_t)m->cfg.n_labels);
    }
    tf_ctx_free(ctx), tf_finetune_data_free(&d);
    return rc;
}
