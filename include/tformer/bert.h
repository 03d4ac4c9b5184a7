/* tformer: BERT: the bidirectional encoder, its pre-training heads (masked
 * language modelling, next-sentence prediction) and its fine-tuning heads
 * (sequence classification, token classification, question answering), laid
 * out as Hugging Face's BertModel / BertFor* with their parameter names. */
#ifndef TFORMER_BERT_H
#define TFORMER_BERT_H

#include "config.h"
#include "heads.h"
#include "nn.h"
#include "safetensors.h"
#include "tokenizer.h"
#include "data.h"
#include "task.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Which head sits on the encoder: Hugging Face's architectures. */
typedef enum {
    TF_BERT_BODY,        /* BertModel: last_hidden_state, pooler_output */
    TF_BERT_PRETRAINING, /* BertForPreTraining: masked LM + next-sentence prediction */
    TF_BERT_MLM,         /* BertForMaskedLM */
    TF_BERT_SEQ_CLS,     /* BertForSequenceClassification: [CLS] -> pooler -> n_labels */
    TF_BERT_TOKEN_CLS,   /* BertForTokenClassification: every token -> n_labels */
    TF_BERT_QA           /* BertForQuestionAnswering: span start / end logits */
} tf_bert_head;

/* The sequence classifier's loss (Hugging Face's problem_type). */
typedef enum {
    TF_BERT_SINGLE_LABEL, /* cross-entropy over n_labels, integer labels */
    TF_BERT_REGRESSION    /* n_labels 1: mean squared error, float labels */
} tf_bert_problem;

typedef struct {
    int vocab_size, context, type_vocab_size; /* context: max_position_embeddings */
    int n_layer, n_head, d_model, d_ff;
    tf_activation activation;                 /* BERT: TF_ACT_GELU (erf) */
    float norm_eps;                           /* 1e-12 */
    float dropout, attn_dropout;              /* hidden_dropout_prob, attention_probs_dropout_prob */
    float classifier_dropout;                 /* < 0: the hidden dropout (Hugging Face's null) */
    tf_bert_head head;
    int n_labels;                             /* classification heads (QA: 2, fixed) */
    tf_bert_problem problem;
    int pooler;                               /* BertModel and the [CLS] heads have one */
    /* Two settings outside Hugging Face's BERT, for encoders trained here
     * (docs/long-sequences.md: the Long Range Arena re-runs' classifier):
     * pre-LN blocks with a final LayerNorm ("encoder.LayerNorm"), and the
     * pooler on the tokens' mean or the last token instead of [CLS]
     * (TF_POOL_CLS, TF_POOL_MEAN or TF_POOL_LAST). A folder saved with
     * either (or with an attention kind other than full) has model_type
     * "tformer-bert" in config.json, which transformers refuses rather than
     * run the weights as BERT's. */
    int norm_first;
    tf_pooling pooling;
    int tied;                                 /* MLM decoder = word embeddings (tie_word_embeddings) */
    int learned_positions;                    /* 1: BERT's position table; 0: none (rotary positions alone,
                                               * as RoFormer; "tformer-bert") */
    float init_std;                           /* initializer_range */
    tf_attention_options attention;           /* full, local, dilated, bigbird or nystrom */
    /* Hugging Face's BigBirdModel with attention_type "block_sparse" (read from
     * config.json only; docs/long-sequences.md): blocks of bigbird_block, the
     * first and last global, a window of 3 blocks and bigbird_random random
     * blocks (tf_bert_inputs' rand_attn, or none: Hugging Face's eval mode).
     * Sequences of at most (5 + 2 bigbird_random) bigbird_block tokens run as
     * full attention, longer ones are padded to a multiple of the block with
     * pad_token_id, as Hugging Face does. */
    int bigbird_sparse, bigbird_block, bigbird_random, pad_token_id;
    /* Hugging Face's RoBERTa (read from config.json: the Roberta* classes;
     * docs/bert.md): BERT's body under "roberta.", with
     *   positions, when position_ids are not given, counted over the tokens
     *     that are not pad_token_id from pad_token_id + 1 (padding tokens get
     *     pad_token_id itself), so the table has max_position_embeddings rows
     *     and a sequence at most max_position_embeddings - pad_token_id - 1
     *     tokens; the word and position rows pad_token_id take no gradient
     *     (nn.Embedding's padding_idx);
     *   the MLM head "lm_head.dense" + erf GELU (whatever hidden_act says) +
     *     "lm_head.layer_norm" + the decoder + "lm_head.bias";
     *   the sequence classifier out_proj(tanh(dense(x[:, 0]))) ("classifier.dense",
     *     "classifier.out_proj", dropout before each), no pooler;
     *   no pre-training head. Post-LN, full attention and learned positions only. */
    int roberta;
    /* Hugging Face's DistilBERT (read from config.json: the DistilBert* classes
     * or model_type distilbert, with its own keys dim, n_layers, n_heads,
     * hidden_dim, activation, dropout, attention_dropout, seq_classif_dropout,
     * qa_dropout; docs/bert.md): BERT's block under DistilBERT's names
     * ("distilbert." before the body with a head, "transformer.layer.N.",
     * q_lin / k_lin / v_lin / out_lin, sa_layer_norm, ffn.lin1 / lin2,
     * output_layer_norm), with
     *   no token type table (token_type_ids refused), positions 0..T-1, the
     *     word row pad_token_id without gradient (-1: none; padding_idx), every
     *     LayerNorm eps 1e-12, no dropout on the attention's output (on its
     *     weights and the feed-forward's output only);
     *   the MLM head "vocab_transform" + activation (the body's) +
     *     "vocab_layer_norm" + "vocab_projector" (tied or not, with its bias);
     *   the sequence classifier classifier(dropout(relu(pre_classifier(x[:, 0]))))
     *     (classifier_dropout: seq_classif_dropout), no pooler; the token
     *     classifier's dropout is `dropout`; qa_dropout before qa_outputs;
     *   no pre-training head. Post-LN, full attention, a position table.
     * distilbert_sinusoidal: config.json's sinusoidal_pos_embds; the stored
     * position table is used as transformers does (4.x leaves it random and
     * frozen, 5.x fills it with the sinusoid and trains it), so a model with it
     * runs (hf-run, embed, fill-mask, predict) but is not trained. */
    int distilbert, distilbert_sinusoidal;
    float qa_dropout;
} tf_bert_config;

/* BERT-base's shape scaled to the given sizes: erf GELU, eps 1e-12, 2 token
 * types, d_ff 4 d_model, dropout 0.1, tied, pooler, init 0.02. */
TF_API tf_bert_config tf_bert_config_default(int vocab_size, int context, int n_layer, int n_head, int d_model);
/* 0, or -1 with a message naming the field. */
TF_API int tf_bert_config_check(const tf_bert_config *c);
/* The field table of the model (training flags, checkpoint signature). */
TF_API extern const tf_field_table tf_bert_config_table;
/* "BertModel", "BertForPreTraining", ... and back (-1 when unknown). */
TF_API const char *tf_bert_head_name(tf_bert_head h);
/* The Hugging Face class of c's head: tf_bert_head_name's, or RoBERTa's
 * ("RobertaForMaskedLM", ...) with c->roberta, DistilBERT's
 * ("DistilBertForMaskedLM", ...) with c->distilbert. */
TF_API const char *tf_bert_class_name(const tf_bert_config *c);
TF_API int tf_bert_head_from_name(const char *name);

typedef struct {
    tf_tensor *word, *position, *token_type; /* (V,C), (P,C), (TV,C); DistilBERT: no token_type */
    tf_layer_norm norm;                      /* embeddings.LayerNorm */
} tf_bert_embeddings;

typedef struct {
    tf_bert_config cfg;
    tf_block_config block; /* post-LN, separate q/k/v, biases: derived from cfg */
    tf_params *params;     /* every tensor, by Hugging Face name ("bert." prefix with a head) */
    tf_bert_embeddings emb;
    tf_block *layer;       /* n_layer blocks */
    tf_layer_norm final_norm; /* with cfg.norm_first */
    tf_pooler pooler;      /* with cfg.pooler */
    tf_mlm_head mlm;       /* PRETRAINING, MLM */
    tf_classifier nsp;     /* PRETRAINING: cls.seq_relationship */
    tf_classifier cls;     /* SEQ_CLS, TOKEN_CLS: classifier (RoBERTa's SEQ_CLS: classifier.out_proj) */
    tf_linear cls_dense;   /* RoBERTa's SEQ_CLS: classifier.dense (d_model,d_model), tanh after it;
                            * DistilBERT's: pre_classifier, ReLU after it */
    tf_span_head span;     /* QA: qa_outputs */
    char **labels;         /* n_labels names (config.json's id2label), or NULL */
} tf_bert;

/* A model initialised as Hugging Face does (N(0, init_std^2), biases 0,
 * LayerNorms 1), or with its tensors left for loading when seed == 0. */
TF_API tf_bert *tf_bert_new(const tf_bert_config *cfg, uint64_t seed);
/* The longest sequence: max_position_embeddings (RoBERTa: less pad_token_id + 1). */
TF_API int tf_bert_max_tokens(const tf_bert_config *c);
TF_API void tf_bert_free(tf_bert *m);

/* Name the classification labels (copied); n must be cfg.n_labels. */
TF_API int tf_bert_set_labels(tf_bert *m, const char *const *names, int n);
/* Label i's name, or Hugging Face's default "LABEL_<i>" written into buf. */
TF_API const char *tf_bert_label(const tf_bert *m, int i, char *buf, size_t n);

/* The inputs of one forward pass, named as BertFor*.forward()'s arguments;
 * every one but input_ids may be NULL. */
typedef struct {
    tf_tensor *input_ids;       /* (B,T) I32 */
    tf_tensor *attention_mask;  /* (B,T) I32 or U8, 1 = token, 0 = padding (hidden as a key) */
    tf_tensor *token_type_ids;  /* (B,T) I32; NULL: all 0 (sentence A); DistilBERT: must be NULL */
    tf_tensor *position_ids;    /* (B,T) I32; NULL: 0..T-1 (RoBERTa: from input_ids, see tf_bert_config) */
    tf_tensor *labels;          /* MLM, token classification: (B,T) I32, -100 ignored;
                                 * sequence classification: (B) I32 or, for regression, (B) F32 */
    tf_tensor *next_sentence_label;            /* (B) I32: 0 = B follows A, 1 = random */
    tf_tensor *start_positions, *end_positions; /* (B) I32, clamped to [0,T] (T: ignored) */
    tf_tensor *rand_attn;       /* block-sparse BigBird: (n_layer, n_head, T'/block - 2, bigbird_random) I32, the
                                 * random key blocks Hugging Face draws in training mode (T' = T padded to a multiple of
                                 * the block); NULL: all block 0 (its eval mode) */
    int loss_only; /* MLM with labels: the decoder runs on the labelled positions only (logits (N,V)) */
    int output_attentions; /* fill outputs.attentions (the scores are then materialised, not fused; not with
                            * block-sparse BigBird's lengths) */
} tf_bert_inputs;

/* Its outputs, by Hugging Face's field names; NULL when not computed. */
typedef struct {
    tf_tensor *last_hidden_state;       /* (B,T,C) */
    tf_tensor *pooler_output;           /* (B,C) */
    tf_tensor *logits;                  /* MLM (B,T,V) (prediction_logits); classification (B,L) / (B,T,L) */
    tf_tensor *seq_relationship_logits; /* (B,2) */
    tf_tensor *start_logits, *end_logits; /* (B,T) */
    tf_tensor *loss;                    /* scalar, with labels: Hugging Face's loss for the head */
    tf_tensor **attentions;             /* with output_attentions: n_layer tensors (B,H,T,T), each layer's
                                         * attention probabilities (Hugging Face's attentions) */
} tf_bert_outputs;

/* One forward pass; 0, or -1 with a message. */
TF_API int tf_bert_run(tf_ctx *ctx, const tf_bert *m, const tf_bert_inputs *in, tf_bert_outputs *out);

/* ---------------------------------------------------------------- sentence embeddings */

typedef struct {
    tf_pooling pooling; /* sentence-transformers' pooling_mode_*: mean, cls or max over the tokens */
    int normalize;      /* L2-normalise each embedding */
    int max_len;        /* ids per text, [CLS] and [SEP] included (max_seq_length); 0: the model's context */
    int batch;          /* texts per forward pass (0: 32); similar lengths are batched together */
} tf_embed_opts;
/* A sentence-transformers folder's settings: max_seq_length
 * (sentence_bert_config.json), the pooling (the Pooling module's
 * config.json, found through modules.json), normalize when modules.json has
 * a Normalize module. Files that are absent leave the defaults: mean
 * pooling, no normalisation, the model's context, batches of 32. */
TF_API int tf_embed_opts_load(const char *dir, tf_embed_opts *o);
/* Embeddings (n, d_model) of n texts (lens NULL: NUL-terminated), each
 * stripped of whitespace at both ends (Python's str.strip()) and encoded as
 * [CLS] text [SEP] (RoBERTa: <s> text </s>) truncated to max_len, as
 * sentence-transformers' encode(). */
TF_API int tf_bert_embed(const tf_bert *m, tf_tokenizer *tok, const char *const *texts, const size_t *lens, int n,
                         const tf_embed_opts *o, float *out);

/* Hugging Face folders: config.json + model.safetensors. */
typedef struct {
    int head;          /* a tf_bert_head, or -1: the folder's architectures[0] */
    int n_labels;      /* a new classification head's labels (0: config.json's num_labels) */
    uint64_t seed;     /* initialise the head's tensors the folder lacks (a body fine-tuned);
                        * 0: a missing tensor is an error */
} tf_bert_load_opts;
TF_API tf_bert *tf_bert_load(const char *dir, const tf_bert_load_opts *opts);
/* Writes config.json and model.safetensors into dir (created if missing). */
TF_API int tf_bert_save(const tf_bert *m, const char *dir);

/* ---------------------------------------------------------------- BERT pre-training */

/* Masked LM + next-sentence prediction (tf_nsp_loader_new) on a
 * BertForPreTraining; its rows flat beside the trainer's, like tf_lm_config. */
typedef struct {
    tf_bert_config model;   /* vocab_size 0: the tokenizer's size; head and pooler are set */
    float val_fraction;     /* documents held out */
    float mask_prob;        /* 0.15 */
} tf_bert_pretrain_config;
TF_API tf_bert_pretrain_config tf_bert_pretrain_config_default(void);
TF_API extern const tf_field_table tf_bert_pretrain_config_table;
/* The task over text files (documents separated by blank lines, a sentence a
 * line); tokenizer: a WordPiece folder or vocab.txt, copied into run_dir
 * (unless resuming). Validation metrics: mlm_accuracy, nsp_accuracy. */
TF_API tf_task *tf_bert_pretrain_task_new(const tf_bert_pretrain_config *c, const char *const *data, int n_data,
                                          const char *tokenizer, const char *run_dir, int resume, uint64_t seed);
TF_API const tf_bert *tf_bert_pretrain_task_model(const tf_task *t);

/* ---------------------------------------------------------------- ListOps (docs/long-sequences.md) */

/* A BERT encoder (BertForSequenceClassification, 10 classes, its attention
 * kind from model.attention) classifying ListOps expressions generated from
 * listops_seed (tf_listops_loader_new); every batch is model.context long, or
 * with bucket > 0 as long as its longest row rounded up to a multiple of it.
 * Self-pretraining (objective TF_LISTOPS_MLM): BertForMaskedLM on the same
 * expressions, a share mask_prob of their tokens masked; a classifier whose
 * init names such a run folder starts from its weights (the encoder: the
 * pooler and classifier are new). With sep, every expression is followed by
 * [SEP] and the vocabulary is TF_LISTOPS_SEP + 1 tokens; with drop_end, the
 * "]" tokens are left out (LRA's inputs). */
typedef enum { TF_LISTOPS_CLASSIFY, TF_LISTOPS_MLM } tf_listops_objective;
typedef struct {
    tf_bert_config model;  /* vocab, head, labels and pooler are set by the task */
    int min_len, max_len, max_depth, max_args;
    int n_train, n_valid;
    uint64_t listops_seed;
    int bucket;            /* 0, or length bucketing (tf_listops_loader_new) */
    int sep;               /* [SEP] after each expression (tf_listops_opts.sep); the vocabulary then has it */
    int drop_end;          /* the "]" tokens left out, as LRA's input pipeline does (tf_listops_opts.drop_end) */
    tf_listops_objective objective;
    float mask_prob;       /* TF_LISTOPS_MLM: the share of an expression's tokens masked */
    char init[1024];       /* "", or a TF_LISTOPS_MLM run folder whose weights start a classifier */
} tf_listops_task_config;
TF_API tf_listops_task_config tf_listops_task_config_default(void);
TF_API extern const tf_field_table tf_listops_task_config_table;
/* Validation metric: accuracy. The run folder (and best/) holds the model as
 * a Hugging Face folder and these settings as TF_LISTOPS_SETTINGS. */
TF_API tf_task *tf_listops_task_new(const tf_listops_task_config *c, const char *run_dir, uint64_t seed);
/* The expressions a task config describes (its generator's and the batches' settings). */
TF_API tf_listops_opts tf_listops_task_opts(const tf_listops_task_config *c);
#define TF_LISTOPS_SETTINGS "listops.json"
/* A run folder's settings (DIR/listops.json); -1 with a message naming the
 * file when it is missing or wrong. */
TF_API int tf_listops_settings_load(const char *dir, tf_listops_task_config *c);
/* Accuracy of a ListOps classifier on examples first..first+n-1 of subset (2:
 * the test set, drawn apart from training and validation; tf_listops_example), in
 * batches of `batch` padded to the model's context (bucket 0) or to their
 * longest row rounded up to a multiple of bucket: the correct answers in
 * *hits; when not NULL, the logits (n,10) and counts by (true, predicted)
 * answer in confusion[10*10]. o->sep must be the model's own (its vocabulary
 * has [SEP] or not). 0, or -1 with a message. */
TF_API int tf_listops_score(const tf_bert *m, const tf_listops_opts *o, int subset, int64_t first, int64_t n,
                            int batch, int bucket, float *logits, int64_t *hits, int64_t *confusion);


/* ---------------------------------------------------------------- BERT fine-tuning (docs/bert.md) */

/* The fine-tuning task's settings (its field table: --task, --max-len, ...). */
typedef struct {
    tf_finetune_kind task; /* classify, pairs, tag, span */
    int max_len;           /* ids per example, [CLS]/[SEP] included; 0: the model's context */
    int max_answer;        /* span: the longest answer predicted, in pieces */
} tf_finetune_config;
TF_API tf_finetune_config tf_finetune_config_default(void);
TF_API extern const tf_field_table tf_finetune_config_table;

/* Fine-tune the pre-trained BERT folder model_dir (its tokenizer, a
 * WordPiece vocab.txt, is copied into run_dir) under the task's head:
 * BertForSequenceClassification (classify, pairs; labels = the sorted labels
 * of the training file, saved as id2label), BertForTokenClassification
 * (tag), BertForQuestionAnswering (span); the head initialised from seed.
 * The loss is Hugging Face's for the head; validation metrics: accuracy
 * (classify, pairs), token_accuracy (tag: first pieces), exact_match (span). */
TF_API tf_task *tf_finetune_task_new(const tf_finetune_config *c, const char *model_dir, const char *train,
                                     const char *valid, const char *run_dir, int resume, uint64_t seed);
TF_API const tf_bert *tf_finetune_task_model(const tf_task *t);
/* The encoded validation set (for tf_finetune_predict / tf_finetune_score) and the training set. */
TF_API const tf_finetune_data *tf_finetune_task_data(const tf_task *t, tf_subset subset);

/* One prediction. */
typedef struct {
    int label;        /* classify, pairs: the likeliest label */
    float prob;       /* its softmax probability */
    int *tags;        /* tag: n_tags = the sentence's words; -1 for a word cut away */
    int n_tags;
    int start, end;   /* span: the best span's pieces (start <= end < start + max_answer, in the context) */
    size_t answer_off, answer_len; /* span: its bytes in the context (0, 0 when none) */
} tf_finetune_prediction;

/* The model on examples first .. first+rows-1 of d (tf_finetune_batch: padded to the longest; DistilBERT
 * without token types) into out, in ctx: what predictions and text classification read. */
TF_API int tf_bert_finetune_forward(tf_ctx *ctx, const tf_bert *m, const tf_finetune_data *d, int first, int rows,
                                    tf_bert_outputs *out);
/* Predictions for every example of d (n = d->n), `batch` at a time, in order. */
TF_API int tf_finetune_predict(const tf_bert *m, const tf_finetune_data *d, int batch, int max_answer,
                               tf_finetune_prediction *out);
TF_API void tf_finetune_predictions_free(tf_finetune_prediction *p, int n);

/* Scores of predictions against a labelled set. */
typedef struct {
    tf_finetune_kind kind;
    int n_labels;
    int64_t *confusion;            /* (n_labels, n_labels): [gold][predicted]; tag: words (first pieces) */
    double *precision, *recall, *f1; /* (n_labels) each */
    int64_t *support;              /* (n_labels): gold count */
    double accuracy;               /* classify, pairs: examples; tag: token (word) accuracy */
    double macro_f1;               /* the mean F1 over labels with support or predictions */
    double exact_match, span_f1;   /* span: start and end both right; F1 of the pieces' overlap */
    int64_t n, lost;               /* examples (tag: words) scored; tag: words cut away (counted wrong) */
} tf_finetune_metrics;
TF_API int tf_finetune_score(const tf_finetune_data *gold, const tf_finetune_prediction *p, int n_labels,
                             tf_finetune_metrics *out);
TF_API void tf_finetune_metrics_free(tf_finetune_metrics *m);
/* metrics.json: the task, counts, the metrics, per label precision / recall / F1 / support, the confusion matrix. */
TF_API int tf_finetune_metrics_save(const tf_finetune_metrics *m, const char *const *labels, const char *path);

#ifdef __cplusplus
}
#endif
#endif /* TFORMER_BERT_H */
