/* BERT pre-training: masked language modelling + next-sentence prediction
 * on sentence pairs from text files (tf_nsp_loader_new), the loss of
 * BertForPreTraining (MLM cross-entropy on the masked tokens + NSP
 * cross-entropy), validation MLM and NSP accuracy; saved as a Hugging Face
 * BertForPreTraining folder with its WordPiece tokenizer. */
#include <stdlib.h>
#include <string.h>

#include "../../task/task_internal.h"
#include "tformer/bert.h"

static const tf_field PRE_ROWS[] = {
    TF_FIELD_ROW(tf_bert_pretrain_config, val_fraction, TF_FIELD_FLOAT, "val_fraction", "0.1", "(0,1)", NULL,
                 "documents held out for validation", 0, NULL),
    TF_FIELD_ROW(tf_bert_pretrain_config, mask_prob, TF_FIELD_FLOAT, "mask_prob", "0.15", "(0,1)", NULL,
                 "tokens chosen for masked LM (80% [MASK], 10% random, 10% kept)", 0, NULL),
    TF_FIELD_SUB(tf_bert_pretrain_config, model, tf_bert_config_table),
};
const tf_field_table tf_bert_pretrain_config_table = {"BERT pre-training", PRE_ROWS,
                                                      (int)(sizeof PRE_ROWS / sizeof PRE_ROWS[0])};

TF_FIELDS_DEFAULT_FN(tf_bert_pretrain_config, tf_bert_pretrain_config_default, tf_bert_pretrain_config_table)

typedef struct {
    tf_text_task text; /* base, tokenizer, loader, run folder */
    tf_bert_pretrain_config cfg;
    tf_bert *m;
} bert_task;

/* Masked-token accuracy (logits (N,V) of the labelled rows in order) and NSP accuracy. */
static void count_metrics(const tf_bert_outputs *out, const tf_tensor *labels, const tf_tensor *nsp, tf_metrics *m) {
    int64_t V = out->logits->shape[1], k = 0;
    for (int64_t i = 0; i < tf_numel(labels); i++) {
        int32_t y = tf_i32(labels)[i];
        if (y == -100) continue;
        m->sum[0] += tf_task_argmax(tf_f32(out->logits) + k++ * V, V) == y, m->count[0] += 1;
    }
    for (int64_t b = 0; b < tf_numel(nsp); b++) {
        int64_t best = tf_task_argmax(tf_f32(out->seq_relationship_logits) + 2 * b, 2);
        m->sum[1] += best == tf_i32(nsp)[b], m->count[1] += 1;
    }
}

static tf_tensor *bt_loss(tf_task *t, tf_ctx *ctx, const tf_batch *b, tf_metrics *m) {
    tf_bert_inputs in = {
        .input_ids = tf_batch_get(b, "input_ids"), .attention_mask = tf_batch_get(b, "attention_mask"),
        .token_type_ids = tf_batch_get(b, "token_type_ids"), .labels = tf_batch_get(b, "labels"),
        .next_sentence_label = tf_batch_get(b, "next_sentence_label"), .loss_only = 1,
    };
    tf_bert_outputs out;
    if (tf_bert_run(ctx, ((bert_task *)t)->m, &in, &out)) return NULL;
    if (m) count_metrics(&out, in.labels, in.next_sentence_label, m);
    return out.loss;
}

static int bt_save(tf_task *t, const char *dir) { return tf_bert_save(((bert_task *)t)->m, dir); }
static void bt_free(tf_task *t) {
    tf_bert_free(((bert_task *)t)->m);
    tf_text_task_free(t);
}

static const tf_task_vt BERT_TASK = TF_TEXT_TASK_VT(bt_loss, bt_save, bt_free);

/* The run folder's WordPiece tokenizer, the pairs loader, the model's vocabulary size. */
static int load_data(bert_task *l, const char *const *data, int n_data, const char *tokenizer, int resume,
                     uint64_t seed) {
    tf_bert_config *model = &l->cfg.model;
    if (!tokenizer || !strcmp(tokenizer, "char"))
        return tf_set_error("BERT needs a WordPiece tokenizer with [CLS], [SEP], [MASK] and [PAD]: --tokenizer "
                            "a vocab.txt (../shared/data/bert/bert-base-uncased-vocab.txt) or a folder "
                            "(tformer tokenizer-train --type wordpiece)");
    if (tf_text_task_tokenizer(&l->text, tokenizer, data, n_data, resume, &model->vocab_size)) return -1;
    int vocab = model->vocab_size;
    model->head = TF_BERT_PRETRAINING, model->pooler = 1;
    tf_nsp_opts o = {model->context, l->cfg.mask_prob, l->cfg.val_fraction, tf_tokenizer_special_id(l->text.tok, "cls"),
                     tf_tokenizer_special_id(l->text.tok, "sep"), tf_tokenizer_special_id(l->text.tok, "mask"),
                     tf_tokenizer_special_id(l->text.tok, "pad"), vocab};
    if (tf_bert_config_check(model)) return -1;
    return (l->text.loader = tf_nsp_loader_new(l->text.tok, data, n_data, &o, seed)) ? 0 : -1;
}

tf_task *tf_bert_pretrain_task_new(const tf_bert_pretrain_config *c, const char *const *data, int n_data,
                                   const char *tokenizer, const char *run_dir, int resume, uint64_t seed) {
    bert_task *l = tf_text_task_alloc(sizeof *l, &BERT_TASK, n_data, run_dir);
    if (!l) return NULL;
    l->cfg = *c;
    l->text.base.config = (tf_fields){&tf_bert_pretrain_config_table, &l->cfg};
    l->text.base.n_metrics = 2;
    l->text.base.metric_names[0] = "mlm_accuracy", l->text.base.metric_names[1] = "nsp_accuracy";
    if (load_data(l, data, n_data, tokenizer, resume, seed) || !(l->m = tf_bert_new(&l->cfg.model, seed ? seed : 1))) {
        bt_free(&l->text.base);
        return NULL;
    }
    tf_text_task_set_model(&l->text, l->m->params, &tf_bert_config_table, &l->m->cfg, l->cfg.model.context);
    return &l->text.base;
}

const tf_bert *tf_bert_pretrain_task_model(const tf_task *t) { return ((const bert_task *)t)->m; }
