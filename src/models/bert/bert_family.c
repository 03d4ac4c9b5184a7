/* The BERT family's registry rows (tformer/model.h): BERT and the classes
 * that are options or name maps of its code (RoBERTa, DistilBERT, XLM-R),
 * the ListOps classifier (a BERT encoder on generated expressions), and the
 * Hugging Face families that run through hf-run only (RoFormer, BigBird). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../../core/core_internal.h"
#include "../family.h"
#include "../../util/util.h"
#include "../hf_run.h"
#include "bert_internal.h"

/* ---------------------------------------------------------------- hf-run: forward()'s arguments */

/* BertModel / BertFor*.forward() (transformers 4.x and 5.x): hf_in_text; RobertaModel / RobertaFor*
 * take the same. Their heads add hf_head_* lists; BertForPreTraining its two labels. */
static const hf_input BERT_PRE_HEAD[] = {
    {"labels", HF_IN_LABELS, "B,T", 0}, {"next_sentence_label", HF_IN_IDS, "B", 0}, {NULL, 0, NULL, 0},
};
/* BigBirdModel: rand_attn is tformer's, not forward()'s: block_sparse's random
 * key blocks per layer (docs/long-sequences.md); absent, transformers' eval mode. */
static const hf_input BIGBIRD_EXTRA[] = {{"rand_attn", HF_IN_IDS, "L,H,N,R", 0}, {NULL, 0, NULL, 0}};
static const char *const BERT_REFUSED[] = {
    "head_mask", "inputs_embeds", "encoder_hidden_states", "encoder_attention_mask", "past_key_values",
    "use_cache", "output_attentions", "output_hidden_states", "return_dict", NULL,
};
static const char *const OUT_BERT_BODY[] = {"last_hidden_state", "pooler_output", NULL};

/* DistilBertModel / DistilBertFor*.forward(): no token_type_ids; position_ids
 * is 5.x's (4.x's forward() has none and counts 0..T-1, as hf-run does
 * without it); head_mask is 4.x's. */
static const hf_input DISTIL_INPUTS[] = {
    {"input_ids", HF_IN_IDS, "B,T", 1}, {"attention_mask", HF_IN_MASK, "B,T", 0},
    {"position_ids", HF_IN_IDS, "B,T", 0}, {NULL, 0, NULL, 0},
};
static const char *const DISTIL_REFUSED[] = {
    "head_mask", "inputs_embeds", "output_attentions", "output_hidden_states", "return_dict", NULL,
};

/* RoFormerModel / RoFormerFor*.forward() (transformers 4.x): BERT's inputs but
 * position_ids (its positions are the rotation's, 0..T-1). */
static const hf_input ROFORMER_INPUTS[] = {
    {"input_ids", HF_IN_IDS, "B,T", 1}, {"attention_mask", HF_IN_MASK, "B,T", 0},
    {"token_type_ids", HF_IN_IDS, "B,T", 0}, {NULL, 0, NULL, 0},
};
static const char *const OUT_BERT_PRE[] = {"prediction_logits", "seq_relationship_logits", "loss", NULL};
static const char *const OUT_BERT_QA[] = {"start_logits", "end_logits", "loss", NULL};

static const hf_arch BERT_ARCHS[] = {
    {"BertModel", hf_in_text, BERT_REFUSED, OUT_BERT_BODY, NULL},
    {"BertForPreTraining", hf_in_text, BERT_REFUSED, OUT_BERT_PRE, BERT_PRE_HEAD},
    {"BertForMaskedLM", hf_in_text, BERT_REFUSED, hf_out_lm, hf_head_token_labels},
    {"BertForSequenceClassification", hf_in_text, BERT_REFUSED, hf_out_lm, hf_head_targets},
    {"BertForTokenClassification", hf_in_text, BERT_REFUSED, hf_out_lm, hf_head_token_labels},
    {"BertForQuestionAnswering", hf_in_text, BERT_REFUSED, OUT_BERT_QA, hf_head_spans},
    {"RobertaModel", hf_in_text, BERT_REFUSED, OUT_BERT_BODY, NULL}, /* BERT, positions from the ids */
    {"RobertaForMaskedLM", hf_in_text, BERT_REFUSED, hf_out_lm, hf_head_token_labels},
    {"RobertaForSequenceClassification", hf_in_text, BERT_REFUSED, hf_out_lm, hf_head_targets},
    {"RobertaForTokenClassification", hf_in_text, BERT_REFUSED, hf_out_lm, hf_head_token_labels},
    {"RobertaForQuestionAnswering", hf_in_text, BERT_REFUSED, OUT_BERT_QA, hf_head_spans},
    {"DistilBertModel", DISTIL_INPUTS, DISTIL_REFUSED, hf_out_body, NULL}, /* BERT's block, no token types */
    {"DistilBertForMaskedLM", DISTIL_INPUTS, DISTIL_REFUSED, hf_out_lm, hf_head_token_labels},
    {"DistilBertForSequenceClassification", DISTIL_INPUTS, DISTIL_REFUSED, hf_out_lm, hf_head_targets},
    {"DistilBertForTokenClassification", DISTIL_INPUTS, DISTIL_REFUSED, hf_out_lm, hf_head_token_labels},
    {"DistilBertForQuestionAnswering", DISTIL_INPUTS, DISTIL_REFUSED, OUT_BERT_QA, hf_head_spans},
    {"XLMRobertaModel", hf_in_text, BERT_REFUSED, OUT_BERT_BODY, NULL}, /* RoBERTa's arithmetic, "roberta." */
    {"XLMRobertaForMaskedLM", hf_in_text, BERT_REFUSED, hf_out_lm, hf_head_token_labels},
    {"XLMRobertaForSequenceClassification", hf_in_text, BERT_REFUSED, hf_out_lm, hf_head_targets},
    {"XLMRobertaForTokenClassification", hf_in_text, BERT_REFUSED, hf_out_lm, hf_head_token_labels},
    {"XLMRobertaForQuestionAnswering", hf_in_text, BERT_REFUSED, OUT_BERT_QA, hf_head_spans},
    {NULL, NULL, NULL, NULL, NULL},
};

static const hf_arch ROFORMER_ARCHS[] = {
    {"RoFormerModel", ROFORMER_INPUTS, BERT_REFUSED, hf_out_body, NULL}, /* BERT, rotary, no position table */
    {"RoFormerForMaskedLM", ROFORMER_INPUTS, BERT_REFUSED, hf_out_lm, hf_head_token_labels},
    {"RoFormerForTokenClassification", ROFORMER_INPUTS, BERT_REFUSED, hf_out_lm, hf_head_token_labels},
    {"RoFormerForQuestionAnswering", ROFORMER_INPUTS, BERT_REFUSED, OUT_BERT_QA, hf_head_spans},
    {NULL, NULL, NULL, NULL, NULL},
};

static const hf_arch BIGBIRD_ARCHS[] = {
    {"BigBirdModel", hf_in_text, BERT_REFUSED, OUT_BERT_BODY, BIGBIRD_EXTRA}, /* original_full or block_sparse */
    {NULL, NULL, NULL, NULL, NULL},
};

/* ---------------------------------------------------------------- loading and running */

static void *bert_load(const char *dir, const char *architecture) {
    (void)architecture; /* config.json's architectures[0] picks the head */
    return tf_bert_load(dir, NULL);
}

static void bert_free(void *model) { tf_bert_free(model); }

/* PyTorch's mean over no labels is 0/0: every label ignored gives NaN. */
static int all_ignored(const tf_tensor *t, int32_t ignore) {
    if (!t || t->dtype != TF_DTYPE_I32) return 0;
    for (int64_t i = 0; i < tf_numel(t); i++)
        if (tf_i32(t)[i] != ignore) return 0;
    return 1;
}

/* Positions outside [0,T) are clamped to T and ignored (Hugging Face). */
static int all_outside(const tf_tensor *t, int64_t T) {
    for (int64_t i = 0; t && i < tf_numel(t); i++)
        if (tf_i32(t)[i] >= 0 && tf_i32(t)[i] < T) return 0;
    return t != NULL;
}

static int no_labels(const hf_job *job, const tf_bert *m, int64_t T) {
    if (m->cfg.head == TF_BERT_QA)
        return all_outside(hf_get(&job->in, "start_positions"), T) || all_outside(hf_get(&job->in, "end_positions"), T);
    return all_ignored(hf_get(&job->in, "labels"), -100);
}

static int bert_run(hf_job *job) {
    const tf_bert *m = job->model;
    tf_tensor *ids = hf_get(&job->in, "input_ids");
    tf_bert_inputs in = {
        .input_ids = ids,
        .attention_mask = hf_get(&job->in, "attention_mask"),
        .token_type_ids = hf_get(&job->in, "token_type_ids"),
        .position_ids = hf_get(&job->in, "position_ids"),
        .labels = hf_get(&job->in, "labels"),
        .next_sentence_label = hf_get(&job->in, "next_sentence_label"),
        .start_positions = hf_get(&job->in, "start_positions"),
        .end_positions = hf_get(&job->in, "end_positions"),
        .rand_attn = hf_get(&job->in, "rand_attn"),
    };
    tf_bert_outputs out;
    if (tf_bert_run(job->ctx, m, &in, &out)) return hf_input_error(job);
    if (out.loss && no_labels(job, m, ids->shape[1])) tf_f32(out.loss)[0] = NAN;
    int pre = m->cfg.head == TF_BERT_PRETRAINING;
    return hf_put(&job->out, "last_hidden_state", out.last_hidden_state) ||
           hf_put(&job->out, "pooler_output", out.pooler_output) ||
           hf_put(&job->out, pre ? "prediction_logits" : "logits", out.logits) ||
           hf_put(&job->out, "seq_relationship_logits", out.seq_relationship_logits) ||
           hf_put(&job->out, "start_logits", out.start_logits) || hf_put(&job->out, "end_logits", out.end_logits) ||
           hf_put(&job->out, "loss", out.loss);
}

/* ---------------------------------------------------------------- capabilities */

/* Every head embeds (the body's states); fill-mask needs a masked LM, classify a sequence classifier. */
static unsigned bert_caps(const void *model) {
    const tf_bert *m = model;
    unsigned caps = TF_CAP_RUN | TF_CAP_EMBED;
    if (m->cfg.head == TF_BERT_MLM || m->cfg.head == TF_BERT_PRETRAINING) caps |= TF_CAP_FILL_MASK;
    if (m->cfg.head == TF_BERT_SEQ_CLS) caps |= TF_CAP_CLASSIFY_TEXT;
    if (m->cfg.head == TF_BERT_TOKEN_CLS) caps |= TF_CAP_TAG;
    if (m->cfg.head == TF_BERT_QA) caps |= TF_CAP_ANSWER;
    return caps;
}

static int bert_embed(const void *model, tf_tokenizer *tok, const char *const *texts, int n, const tf_embed_opts *o,
                      float *out) {
    return tf_bert_embed(model, tok, texts, NULL, n, o, out);
}

static int bert_embed_dim(const void *model) { return ((const tf_bert *)model)->cfg.d_model; }

static int bert_context(const void *model) { return ((const tf_bert *)model)->cfg.context; }

/* [CLS] text [SEP] cut to o's max_len (the context at most) -> the final hidden states (n, d_model). */
static int bert_embed_tokens(const void *model, tf_tokenizer *tok, const char *text, size_t len, const tf_embed_opts *o,
                             float **out, int *n_tokens) {
    const tf_bert *m = model;
    int most = tf_bert_max_tokens(&m->cfg);
    size_t max_len = o->max_len > 0 && o->max_len < most ? (size_t)o->max_len : (size_t)most;
    tf_ids ids = {0}, types = {0};
    tf_ctx *ctx = tf_ctx_new(0);
    int rc = ctx ? tf_tokenizer_encode_pair(tok, text, len, NULL, 0, max_len, &ids, &types)
                 : tf_set_error("embed: out of memory");
    tf_tensor *x = rc ? NULL : tf_tensor_new(ctx, TF_DTYPE_I32, 2, (int64_t[]){1, (int64_t)ids.n}, 0);  // (1,T)
    tf_bert_outputs res;
    if (x) {
        tf_ctx_set_grad(ctx, 0);
        memcpy(x->data, ids.v, ids.n * sizeof *ids.v);
        rc = tf_bert_run(ctx, m, &(tf_bert_inputs){.input_ids = x}, &res);
    }
    size_t bytes = ids.n * (size_t)m->cfg.d_model * sizeof(float);
    if (!rc && x && !(*out = malloc(bytes ? bytes : 1))) rc = tf_set_error("embed: out of memory");
    if (!rc && x) memcpy(*out, res.last_hidden_state->data, bytes), *n_tokens = (int)ids.n;  // (T,d_model)
    tf_ids_free(&ids), tf_ids_free(&types), tf_ctx_free(ctx);
    return !rc && x ? 0 : -1;
}

/* text -> [CLS] text [SEP] cut to the model's length with [SEP] kept (as the fill-mask pipeline
 * cuts), and the masked LM's logits at each id. */
static int bert_mask_logits(const void *model, tf_tokenizer *tok, const char *text, tf_ids *ids, float **logits,
                            int *vocab) {
    const tf_bert *m = model;
    tf_ids types = {0};
    *logits = NULL, *vocab = m->cfg.vocab_size;
    int bad = tf_tokenizer_encode_pair(tok, text, strlen(text), NULL, 0, 0, ids, &types);
    tf_ids_free(&types);
    if (bad) return -1;
    size_t most = (size_t)tf_bert_max_tokens(&m->cfg);
    if (ids->n > most) ids->v[most - 1] = ids->v[ids->n - 1], ids->n = most;
    size_t cells = ids->n * (size_t)*vocab;
    tf_ctx *ctx = tf_ctx_new(0);
    if (!ctx || !(*logits = malloc(cells * sizeof **logits))) return tf_ctx_free(ctx), tf_set_error("out of memory");
    tf_ctx_set_grad(ctx, 0);
    tf_tensor *x = tf_tensor_new(ctx, TF_DTYPE_I32, 2, (int64_t[]){1, (int64_t)ids->n}, 0);
    tf_bert_outputs out;
    int rc = x ? 0 : -1;
    if (x) memcpy(x->data, ids->v, ids->n * sizeof *ids->v);
    if (!rc) rc = tf_bert_run(ctx, m, &(tf_bert_inputs){.input_ids = x}, &out);
    if (!rc) memcpy(*logits, tf_f32(out.logits), cells * sizeof **logits);
    tf_ctx_free(ctx);
    if (rc) free(*logits), *logits = NULL;
    return rc;
}

/* ids (n, their first ones cut to the model's length with the last kept: [SEP]) and types (or NULL)
 * as a (1,n) forward with attentions when asked; 0 or -1. */
static int run_ids(tf_ctx *ctx, const tf_bert *m, const int32_t *ids, const int32_t *types, int n, int attentions,
                   tf_bert_outputs *out) {
    tf_tensor *x = tf_tensor_new(ctx, TF_DTYPE_I32, 2, (int64_t[]){1, n}, 0);
    tf_tensor *t = types && !m->cfg.distilbert ? tf_tensor_new(ctx, TF_DTYPE_I32, 2, (int64_t[]){1, n}, 0) : NULL;
    if (!x || (types && !m->cfg.distilbert && !t)) return -1;
    memcpy(x->data, ids, (size_t)n * sizeof *ids);
    if (t) memcpy(t->data, types, (size_t)n * sizeof *types);
    tf_ctx_set_grad(ctx, 0);
    return tf_bert_run(ctx, m, &(tf_bert_inputs){.input_ids = x, .token_type_ids = t, .output_attentions = attentions}, out);
}

TF_FAMILY_SAVE_PARAMS(bert, tf_bert)

static int bert_classify(const void *model, tf_tokenizer *tok, const char *dir, const char *const *a,
                         const char *const *b, int n, float *logits) {
    return tf_bert_classify_texts(model, tok, dir, a, b, n, logits);
}

static int bert_n_labels(const void *model) {
    const tf_bert *m = model;
    return m->cfg.head == TF_BERT_SEQ_CLS || m->cfg.head == TF_BERT_TOKEN_CLS ? m->cfg.n_labels : 0;
}

static int bert_predict_opts(const void *model, const char *dir, int max_len, tf_predict_opts *o, const char **from) {
    return tf_bert_predict_opts(model, dir, max_len, o, from);
}

static int bert_predict(const void *model, tf_tokenizer *tok, const tf_finetune_set *s, const tf_predict_opts *o,
                        tf_finetune_prediction *p, int *n_truncated) {
    return tf_bert_predict(model, tok, s, o, p, n_truncated);
}

static int bert_test(const void *model, const char *dir, int64_t n, int batch, tf_test_result *r) {
    return tf_bert_listops_test(model, dir, n, batch, r);
}

static const char *bert_label(const void *model, int i, char *buf, size_t n) { return tf_bert_label(model, i, buf, n); }

/* The ids (their first ones, to the model's length) through the encoder: each layer's and head's
 * attention probabilities (the text as the tokenizer encodes it, special tokens its own). */
static int bert_text_attention(const void *model, const int32_t *ids, int n, tf_text_attention *a) {
    const tf_bert *m = model;
    const tf_bert_config *c = &m->cfg;
    n = n < tf_bert_max_tokens(c) ? n : tf_bert_max_tokens(c);
    size_t per = (size_t)c->n_head * (size_t)n * (size_t)n, total;
    if (!tf_mul_size(per, (size_t)c->n_layer, &total) || !tf_mul_size(total, sizeof(float), &total))
        return tf_set_error("attention: %d ids are too many", n);
    tf_ctx *ctx = tf_ctx_new(0);
    a->ids = malloc((size_t)n * sizeof *a->ids), a->probs = malloc(total);
    tf_bert_outputs out;
    int rc = ctx && a->ids && a->probs ? run_ids(ctx, m, ids, NULL, n, 1, &out) : tf_set_error("attention: out of memory");
    if (!rc) memcpy(a->ids, ids, (size_t)n * sizeof *ids);
    for (int l = 0; !rc && l < c->n_layer; l++) {
        if (!out.attentions[l] || tf_numel(out.attentions[l]) != (int64_t)per)
            rc = tf_set_error("attention: layer %d's attention was not kept", l);
        else
            memcpy(a->probs + (size_t)l * per, tf_f32(tf_contiguous(ctx, out.attentions[l])), per * sizeof(float));
    }
    a->n_layer = c->n_layer, a->n_head = c->n_head, a->n = n;
    tf_ctx_free(ctx);
    return rc;
}



/* ---------------------------------------------------------------- the rows */

static const char *const BERT_TYPES[] = {"bert", "tformer-bert", "roberta", "distilbert", "xlm-roberta", NULL};
static const char *const ROFORMER_TYPES[] = {"roformer", NULL};
static const char *const BIGBIRD_TYPES[] = {"big_bird", NULL};

static void bert_defaults(void *cfg, tf_train_config *train) {
    (void)train;
    *(tf_bert_pretrain_config *)cfg = tf_bert_pretrain_config_default();
}

static const char *bert_check(const void *cfg, const tf_task_args *a, char *buf, size_t n) {
    (void)buf, (void)n;
    if (((const tf_bert_pretrain_config *)cfg)->model.head != TF_BERT_PRETRAINING)
        return "--head: pre-training trains BertForPreTraining (fine-tune other heads with tformer finetune)";
    return NULL;
}

static tf_task *bert_task(const void *cfg, const tf_task_args *a) {
    return tf_bert_pretrain_task_new(cfg, a->data, a->n_data, a->tokenizer, a->run_dir, a->resume, a->seed);
}

/* The model half of the BERT, RoFormer and BigBird rows: their folders are one model (tf_bert). */
#define BERT_MODEL_CALLS \
    .load = bert_load, .free = bert_free, .config_table = &tf_bert_config_table, .save = bert_save, .run = bert_run

const tf_family tf_family_bert = {
    .name = "bert", .summary = "masked LM + NSP",
    .model_types = BERT_TYPES, .verbs = "embed, fill-mask or predict",
    .caps = TF_CAP_RUN | TF_CAP_EMBED | TF_CAP_FILL_MASK | TF_CAP_CLASSIFY_TEXT | TF_CAP_TAG | TF_CAP_ANSWER,
    BERT_MODEL_CALLS, .model_caps = bert_caps, .params = bert_params, .archs = BERT_ARCHS,
    .input = TF_TRAIN_TEXT, .task_table = &tf_bert_pretrain_config_table, .task_size = sizeof(tf_bert_pretrain_config),
    .task_defaults = bert_defaults, .task_check = bert_check, .task_new = bert_task,
    .embed = bert_embed, .embed_dim = bert_embed_dim, .mask_logits = bert_mask_logits,
    .embed_tokens = bert_embed_tokens, .context = bert_context,
    .classify_texts = bert_classify, .n_labels = bert_n_labels, .label = bert_label,
    .predict_opts = bert_predict_opts, .predict = bert_predict, .test = bert_test,
    .text_attention = bert_text_attention,
};

/* The context holds the default expressions (up to listops_max_len 2000 tokens, [CLS] first): BERT's own
 * 128 refused to train with ListOps' other defaults (LRA's ListOps is 2,000 tokens long). */
static void listops_defaults(void *cfg, tf_train_config *train) {
    (void)train;
    tf_listops_task_config *c = cfg;
    *c = tf_listops_task_config_default();
    c->model.context = 2048;
}

static const char *listops_check(const void *cfg, const tf_task_args *a, char *buf, size_t n) {
    (void)cfg, (void)buf, (void)n;
    if (a->n_data || a->tokenizer)
        return "--arch listops generates its data (--listops-seed ...): no --data or --tokenizer";
    return NULL;
}

static tf_task *listops_task(const void *cfg, const tf_task_args *a) {
    return tf_listops_task_new(cfg, a->run_dir, a->seed);
}

const tf_family tf_family_listops = {
    .name = "listops", .summary = "a BERT encoder classifying generated ListOps expressions",
    .input = TF_TRAIN_GENERATED, .task_table = &tf_listops_task_config_table,
    .task_size = sizeof(tf_listops_task_config),
    .task_defaults = listops_defaults, .task_check = listops_check, .task_new = listops_task,
};

const tf_family tf_family_roformer = {
    .name = "roformer", .summary = "RoFormer: BERT with rotary positions (hf-run)",
    .model_types = ROFORMER_TYPES, .verbs = "hf-run", .caps = TF_CAP_RUN, BERT_MODEL_CALLS, .archs = ROFORMER_ARCHS,
};

const tf_family tf_family_bigbird = {
    .name = "bigbird", .summary = "BigBird: BERT with block-sparse attention (hf-run)",
    .model_types = BIGBIRD_TYPES, .verbs = "hf-run", .caps = TF_CAP_RUN, BERT_MODEL_CALLS, .archs = BIGBIRD_ARCHS,
};
