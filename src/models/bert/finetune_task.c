/* BERT fine-tuning: a pre-trained folder under a new head (sequence
 * classification, token classification, question answering), examples
 * read and encoded by src/data/finetune*.c, Hugging Face's loss for the
 * head, validation accuracy / token accuracy / exact match; saved as a
 * Hugging Face folder with its tokenizer, the label names (id2label) and
 * finetune.json (this task's settings, which `tformer predict` reads). */
#include <stdlib.h>
#include <string.h>

#include "../../task/task_internal.h"
#include "../family.h"
#include "tformer/bert.h"

static const char *const KINDS[] = {"classify", "pairs", "tag", "span", NULL};
static const tf_field FT_ROWS[] = {
    TF_FIELD_ROW(tf_finetune_config, task, TF_FIELD_ENUM, "task", "classify", NULL, KINDS,
                 "classify (label<TAB>text), pairs (label<TAB>a<TAB>b), tag (CoNLL token<TAB>tag), span (JSON lines)",
                 0, NULL),
    TF_FIELD_ROW(tf_finetune_config, max_len, TF_FIELD_INT, "max_len", "0", "[0,inf)", NULL,
                 "ids per example with [CLS]/[SEP]; longer ones are cut (0: the model's context)", 0, NULL),
    TF_FIELD_ROW(tf_finetune_config, max_answer, TF_FIELD_INT, "max_answer", "30", "[1,inf)", NULL,
                 "span: the longest answer predicted, in word pieces", 0, NULL),
};
const tf_field_table tf_finetune_config_table = {"fine-tuning", FT_ROWS, (int)(sizeof FT_ROWS / sizeof FT_ROWS[0])};

TF_FIELDS_DEFAULT_FN(tf_finetune_config, tf_finetune_config_default, tf_finetune_config_table)

typedef struct {
    tf_text_task text; /* base, tokenizer, loader, run folder; context: max_len */
    tf_finetune_config cfg;
    tf_bert *m;
    tf_finetune_data train, valid;
    int max_len;
} ft_task;

/* ---------------------------------------------------------------- the task's table */

/* Accuracy of the argmax over the last dimension where labels (any shape) are not -100. */
static void count_accuracy(const tf_tensor *logits, const tf_tensor *labels, tf_metrics *m) {
    int64_t L = logits->shape[logits->ndim - 1];
    for (int64_t i = 0; i < tf_numel(labels); i++) {
        int32_t y = tf_i32(labels)[i];
        if (y != -100) m->sum[0] += tf_task_argmax(tf_f32(logits) + i * L, L) == y, m->count[0] += 1;
    }
}

static void count_spans(const tf_bert_outputs *o, const tf_tensor *s, const tf_tensor *e, tf_metrics *m) {
    int64_t B = o->start_logits->shape[0], T = o->start_logits->shape[1];
    for (int64_t b = 0; b < B; b++) {
        int hit = tf_task_argmax(tf_f32(o->start_logits) + b * T, T) == tf_i32(s)[b] &&
                  tf_task_argmax(tf_f32(o->end_logits) + b * T, T) == tf_i32(e)[b];
        m->sum[0] += hit, m->count[0] += 1;
    }
}

static tf_tensor *ft_loss(tf_task *t, tf_ctx *ctx, const tf_batch *b, tf_metrics *m) {
    const tf_bert *model = ((ft_task *)t)->m;
    tf_bert_inputs in = {
        .input_ids = tf_batch_get(b, "input_ids"),
        .attention_mask = tf_batch_get(b, "attention_mask"),
        /* DistilBERT has no token types (its tokenizer gives none) */
        .token_type_ids = model->cfg.distilbert ? NULL : tf_batch_get(b, "token_type_ids"),
        .labels = tf_batch_get(b, "labels"),
        .start_positions = tf_batch_get(b, "start_positions"),
        .end_positions = tf_batch_get(b, "end_positions"),
    };
    tf_bert_outputs out;
    if (tf_bert_run(ctx, model, &in, &out)) return NULL;
    if (m && in.labels) count_accuracy(out.logits, in.labels, m);
    if (m && in.start_positions) count_spans(&out, in.start_positions, in.end_positions, m);
    return out.loss;
}

static int ft_save(tf_task *t, const char *dir) {
    ft_task *f = (ft_task *)t;
    char path[4096];
    if (tf_path_join(path, sizeof path, dir, "finetune.json")) return -1;
    tf_finetune_config c = f->cfg;
    c.max_len = f->max_len;
    tf_fields fs = {&tf_finetune_config_table, &c};
    return tf_bert_save(f->m, dir) || tf_fields_save(&fs, 1, path) ? -1 : 0;
}

static void ft_free(tf_task *t) {
    ft_task *f = (ft_task *)t;
    tf_bert_free(f->m);
    tf_finetune_data_free(&f->train), tf_finetune_data_free(&f->valid);
    tf_text_task_free(t);
}

static const tf_task_vt FT_TASK = TF_TEXT_TASK_VT(ft_loss, ft_save, ft_free);

/* ---------------------------------------------------------------- construction */

static const tf_bert_head HEADS[] = {TF_BERT_SEQ_CLS, TF_BERT_SEQ_CLS, TF_BERT_TOKEN_CLS, TF_BERT_QA};

/* The model under the task's head, with the label names; max_len fitted to its context. */
static int load_model(ft_task *f, const char *model_dir, char **labels, int n_labels, uint64_t seed) {
    tf_bert_load_opts o = {(int)HEADS[f->cfg.task], f->cfg.task == TF_FINETUNE_SPAN ? 0 : n_labels, seed ? seed : 1};
    if (!(f->m = tf_bert_load(model_dir, &o))) return -1;
    if (f->m->cfg.distilbert_sinusoidal) /* transformers 4.x freezes the table, 5.x trains it: no one answer */
        return tf_set_error("%s: DistilBERT with sinusoidal_pos_embds true is not fine-tuned (transformers 4.x keeps "
                            "the position table fixed, 5.x trains it); hf-run, embed, fill-mask and predict run it",
                            model_dir);
    if (labels && tf_bert_set_labels(f->m, (const char *const *)labels, n_labels)) return -1;
    int ctx = tf_bert_max_tokens(&f->m->cfg);
    if (f->cfg.max_len > ctx)
        return tf_set_error("max_len %d exceeds the model's context (max_position_embeddings) %d", f->cfg.max_len, ctx);
    f->max_len = f->cfg.max_len ? f->cfg.max_len : ctx;
    tf_text_task_set_model(&f->text, f->m->params, &tf_bert_config_table, &f->m->cfg, f->max_len);
    if (tf_tokenizer_vocab_size(f->text.tok) > f->m->cfg.vocab_size)
        return tf_set_error("%s: the tokenizer has %d tokens, the model only %d", model_dir,
                            tf_tokenizer_vocab_size(f->text.tok), f->m->cfg.vocab_size);
    return 0;
}

/* Both files read, the labels of the training file, the model, both sets encoded. */
static int load_all(ft_task *f, const char *model_dir, const char *train, const char *valid, uint64_t seed) {
    tf_finetune_set ts = {0}, vs = {0};
    char **labels = NULL;
    int n_labels = 0, span = f->cfg.task == TF_FINETUNE_SPAN;
    int rc = tf_finetune_read(f->cfg.task, train, 1, &ts) || tf_finetune_read(f->cfg.task, valid, 1, &vs);
    if (!rc && !span) rc = tf_finetune_labels(&ts, &labels, &n_labels);
    if (!rc && !span && n_labels < 2)
        rc = tf_set_error("%s: %d distinct label(s); classification needs at least 2", train, n_labels);
    if (!rc && !span) rc = tf_finetune_check_labels(&vs, valid, labels, n_labels);
    if (!rc) rc = load_model(f, model_dir, labels, n_labels, seed);
    char msg[1024];
    if (!rc && tf_finetune_encode(f->text.tok, &ts, labels, n_labels, f->max_len, &f->train))
        snprintf(msg, sizeof msg, "%s", tf_error()), rc = tf_set_error("%s: %s", train, msg);
    if (!rc && tf_finetune_encode(f->text.tok, &vs, labels, n_labels, f->max_len, &f->valid))
        snprintf(msg, sizeof msg, "%s", tf_error()), rc = tf_set_error("%s: %s", valid, msg);
    if (!rc && !(f->text.loader = tf_finetune_loader_new(&f->train, &f->valid, seed))) rc = -1;
    tf_finetune_labels_free(labels, n_labels);
    tf_finetune_set_free(&ts), tf_finetune_set_free(&vs);
    return rc ? -1 : 0;
}

extern const tf_family tf_family_bert; /* bert_family.c */

/* A folder of a family the BERT loader does not read (config.json's model_type in the registry) is refused
 * first, by what it is: its tokenizer files would be refused otherwise, before its kind is said. */
static int check_family(const char *model_dir) {
    char path[4200], types[256];
    if (tf_path_join(path, sizeof path, model_dir, "config.json")) return -1;
    cJSON *root = tf_json_read(path); /* none, or unreadable: the loader says what is wrong */
    const cJSON *mt = cJSON_GetObjectItemCaseSensitive(root, "model_type");
    const tf_family *f = cJSON_IsString(mt) ? tf_family_of_type(mt->valuestring) : NULL;
    const tf_family *bert = &tf_family_bert;
    int rc = 0;
    if (f && f->load != bert->load) {
        size_t n = 0;
        types[0] = 0;
        for (int k = 0; bert->model_types[k] && n < sizeof types; k++)
            n += (size_t)snprintf(types + n, sizeof types - n, "%s%s", k ? ", " : "", bert->model_types[k]);
        rc = tf_set_error("%s is a \"%s\" model (the %s family%s%s%s), not a BERT: finetune needs a BERT-family "
                          "folder (model_type %s)", model_dir, mt->valuestring, f->name, f->verbs ? ": tformer " : "",
                          f->verbs ? f->verbs : "", f->verbs ? " runs it" : "", types);
    }
    cJSON_Delete(root);
    return rc;
}

tf_task *tf_finetune_task_new(const tf_finetune_config *c, const char *model_dir, const char *train,
                              const char *valid, const char *run_dir, int resume, uint64_t seed) {
    tf_fields cf = {&tf_finetune_config_table, (void *)c};
    if (!model_dir || !train || !valid || !run_dir)
        return tf_set_error("finetune: a model folder, training and validation files and a run folder are needed"), NULL;
    if (tf_fields_check(&cf, 1) || check_family(model_dir)) return NULL;
    ft_task *f = tf_text_task_alloc(sizeof *f, &FT_TASK, 2, run_dir); /* its data: the two files */
    if (!f) return NULL;
    tf_task *base = &f->text.base;
    f->cfg = *c;
    base->config = (tf_fields){&tf_finetune_config_table, &f->cfg};
    base->n_metrics = 1;
    base->metric_names[0] = c->task == TF_FINETUNE_TAG ? "token_accuracy"
                            : c->task == TF_FINETUNE_SPAN ? "exact_match" : "accuracy";
    int vocab = 0; /* the model's is checked against it when it is loaded */
    int rc = tf_text_task_tokenizer(&f->text, model_dir, NULL, 0, resume, &vocab);
    int pieces = !rc && tf_tokenizer_kind_of(f->text.tok) == TF_TOKENIZER_WORDPIECE;
    int classes = c->task == TF_FINETUNE_CLASSIFY || c->task == TF_FINETUNE_PAIRS;
    tf_tokenizer_kind kind = rc ? TF_TOKENIZER_CHAR : tf_tokenizer_kind_of(f->text.tok);
    if (!rc && !pieces && !(classes && (kind == TF_TOKENIZER_BYTE_BPE || kind == TF_TOKENIZER_SPM)))
        rc = tf_set_error("%s: fine-tuning needs a BERT WordPiece tokenizer (vocab.txt), or for classify and pairs "
                          "RoBERTa's byte-level BPE or XLM-RoBERTa's Unigram tokenizer.json", model_dir);
    if (rc || load_all(f, model_dir, train, valid, seed)) {
        ft_free(base);
        return NULL;
    }
    return base;
}

const tf_bert *tf_finetune_task_model(const tf_task *t) { return ((const ft_task *)t)->m; }

const tf_finetune_data *tf_finetune_task_data(const tf_task *t, tf_subset subset) {
    const ft_task *f = (const ft_task *)t;
    return subset == TF_SUBSET_VAL ? &f->valid : &f->train;
}
