/* The BERT configuration: one field table drives its defaults, checks, the
 * training flags and the checkpoint signature; the head names are Hugging
 * Face's architectures. */
#include <string.h>

#include "bert_internal.h"

static const char *const ACTIVATIONS[] = {"relu", "gelu", "gelu_tanh|gelu_new", NULL};
static const char *const HEADS[] = {"BertModel", "BertForPreTraining", "BertForMaskedLM",
                                    "BertForSequenceClassification", "BertForTokenClassification",
                                    "BertForQuestionAnswering", NULL};
/* RoBERTa's classes for the same heads (no pre-training head: NULL). */
static const char *const ROBERTA_HEADS[] = {"RobertaModel", NULL, "RobertaForMaskedLM",
                                            "RobertaForSequenceClassification", "RobertaForTokenClassification",
                                            "RobertaForQuestionAnswering"};
/* DistilBERT's (no pre-training head either). */
static const char *const DISTIL_HEADS[] = {"DistilBertModel", NULL, "DistilBertForMaskedLM",
                                           "DistilBertForSequenceClassification", "DistilBertForTokenClassification",
                                           "DistilBertForQuestionAnswering"};
static const char *const POOLINGS[] = {"mean", "cls", "max", "seq", "last", NULL}; /* tf_pooling's order */
static const char *const PROBLEMS[] = {"single_label_classification", "regression", NULL};
_Static_assert(sizeof(tf_bert_head) == sizeof(int) && sizeof(tf_bert_problem) == sizeof(int) &&
                   sizeof(tf_pooling) == sizeof(int), "enum rows store an int");

#define SIG TF_FIELD_SIGNATURE
#define SIG_NEW (TF_FIELD_SIGNATURE | TF_FIELD_SIG_NEW) /* checkpoints from before the row keep their signature */
#define R(m, type, def, range, choices, help, flags, alias) \
    TF_FIELD_ROW(tf_bert_config, m, type, #m, def, range, choices, help, flags, alias)
static const tf_field ROWS[] = {
    R(vocab_size, TF_FIELD_INT, "0", "[0,inf)", NULL, "tokens (training: 0 or the tokenizer's size)", SIG, NULL),
    R(context, TF_FIELD_INT, "128", "[1,inf)", NULL, "the longest sequence (max_position_embeddings)", SIG, NULL),
    R(type_vocab_size, TF_FIELD_INT, "2", "[1,inf)", NULL, "segment (token type) embeddings", SIG, NULL),
    R(n_layer, TF_FIELD_INT, "4", "[1,10000]", NULL, "Transformer blocks", SIG, "layers"),
    R(n_head, TF_FIELD_INT, "4", "[1,inf)", NULL, "attention heads", SIG, "heads"),
    R(d_model, TF_FIELD_INT, "256", "[1,inf)", NULL, "width, a multiple of n_head", SIG, "hidden_size|width"),
    R(d_ff, TF_FIELD_INT, "0", "[0,inf)", NULL, "feed-forward width; 0: 4 * d_model", SIG, "intermediate_size"),
    R(activation, TF_FIELD_ENUM, "gelu", NULL, ACTIVATIONS, "the feed-forward activation (BERT: erf gelu)", SIG, NULL),
    R(norm_eps, TF_FIELD_FLOAT, "1e-12", "(0,inf)", NULL, "LayerNorm epsilon", SIG, "layer_norm_eps"),
    R(dropout, TF_FIELD_FLOAT, "0.1", "[0,1)", NULL, "dropout on embeddings and sub-layer outputs", 0, NULL),
    R(attn_dropout, TF_FIELD_FLOAT, "0.1", "[0,1)", NULL, "dropout on the attention weights", 0, NULL),
    R(classifier_dropout, TF_FIELD_FLOAT, "-1", "[-1,1)", NULL, "dropout before a classifier; -1: --dropout", 0, NULL),
    R(head, TF_FIELD_ENUM, "BertForPreTraining", NULL, HEADS, "the head (Hugging Face's architecture)", SIG, NULL),
    R(n_labels, TF_FIELD_INT, "2", "[1,100000]", NULL, "labels of a classification head", SIG, "num_labels"),
    R(problem, TF_FIELD_ENUM, "single_label_classification", NULL, PROBLEMS,
      "sequence classification loss: cross-entropy, or regression (n_labels 1, mean squared error)", SIG, NULL),
    R(pooler, TF_FIELD_BOOL, "true", NULL, NULL, "the tanh pooler over [CLS]", SIG, NULL),
    R(norm_first, TF_FIELD_BOOL, "false", NULL, NULL,
      "pre-LN blocks and a final LayerNorm (not Hugging Face's BERT); false: post-LN (BERT)", SIG, NULL),
    R(pooling, TF_FIELD_ENUM, "cls", NULL, POOLINGS,
      "what the pooler reads: the [CLS] token (BERT), the tokens' mean (padding left out) or the last token "
      "before the padding (GPT2ForSequenceClassification's rule)", SIG, NULL),
    R(tied, TF_FIELD_BOOL, "true", NULL, NULL, "masked-LM decoder = word embeddings", SIG, NULL),
    R(learned_positions, TF_FIELD_BOOL, "true", NULL, NULL,
      "a learned position table added to the embeddings (BERT); false: none, the order from --rope alone "
      "(RoFormer's embeddings)", SIG_NEW, NULL),
    R(init_std, TF_FIELD_FLOAT, "0.02", "(0,inf)", NULL, "std of the initial weights (initializer_range)", 0, NULL),
    TF_FIELD_SUB(tf_bert_config, attention, tf_attention_table),
};
#undef R

const tf_field_table tf_bert_config_table = {"BERT model", ROWS, (int)(sizeof ROWS / sizeof ROWS[0])};

tf_bert_config tf_bert_config_default(int vocab_size, int context, int n_layer, int n_head, int d_model) {
    tf_bert_config c = {0};
    tf_fields f = {&tf_bert_config_table, &c};
    tf_fields_defaults(&f, 1); /* cannot fail: tests/test_config.c parses every table's defaults */
    c.vocab_size = vocab_size, c.context = context, c.n_layer = n_layer, c.n_head = n_head, c.d_model = d_model;
    return c;
}

/* What RoBERTa and DistilBERT share: Hugging Face's arithmetic only (a
 * folder written from the model says the family): no pre-training head,
 * post-LN, full attention, a position table, the first token pooled. */
static int variant_check(const tf_bert_config *c, const char *family, const char *shape) {
    if (c->head == TF_BERT_PRETRAINING)
        return tf_set_error("%s has no pre-training head (BertForPreTraining's NSP)", family);
    if (c->norm_first || c->pooling != TF_POOL_CLS || !c->learned_positions || c->bigbird_sparse ||
        c->attention.kind != TF_ATTENTION_FULL || c->attention.rope != TF_ROPE_NONE || c->attention.ssmax > 0.0f)
        return tf_set_error("%s is post-LN with full attention%s", family, shape);
    return 0;
}

static int roberta_check(const tf_bert_config *c) {
    if (c->head == TF_BERT_SEQ_CLS && c->pooler)
        return tf_set_error("RobertaForSequenceClassification has no pooler (its classifier reads the first token)");
    if (variant_check(c, "RoBERTa", ", learned positions and the pooler on the first token")) return -1;
    if (c->pad_token_id < 0 || c->pad_token_id >= c->vocab_size)
        return tf_set_error("RoBERTa's pad_token_id %d must be below vocab_size %d", c->pad_token_id, c->vocab_size);
    if (c->context < c->pad_token_id + 2)
        return tf_set_error("RoBERTa's max_position_embeddings %d leaves no position: positions start at pad_token_id "
                            "+ 1 = %d", c->context, c->pad_token_id + 1);
    tf_block_config b = tf_block_config_default(c->d_model, c->n_head);
    return tf_block_config_check(&b);
}

static int distil_check(const tf_bert_config *c) {
    if (c->roberta) return tf_set_error("a model is RoBERTa or DistilBERT, not both");
    if (c->pooler) return tf_set_error("DistilBERT has no pooler (its sequence classifier reads the first token)");
    if (variant_check(c, "DistilBERT", " and a position table")) return -1;
    if (c->norm_eps != 1e-12f) return tf_set_error("DistilBERT's LayerNorms have eps 1e-12 (got %g)", c->norm_eps);
    if (c->pad_token_id < -1 || c->pad_token_id >= c->vocab_size)
        return tf_set_error("DistilBERT's pad_token_id %d must be below vocab_size %d (or -1: none)", c->pad_token_id,
                            c->vocab_size);
    if (!(c->qa_dropout >= 0.0f && c->qa_dropout < 1.0f))
        return tf_set_error("DistilBERT's qa_dropout %g must lie in [0,1)", c->qa_dropout);
    tf_block_config b = tf_block_config_default(c->d_model, c->n_head);
    return tf_block_config_check(&b);
}

int tf_bert_config_check(const tf_bert_config *c) {
    tf_fields f = {&tf_bert_config_table, (void *)c};
    if (tf_fields_check(&f, 1)) return -1;
    if (c->vocab_size < 1) return tf_set_error("vocab_size 0: the model needs its vocabulary's size");
    if (c->d_model % c->n_head) return tf_set_error("d_model %d is not a multiple of n_head %d", c->d_model, c->n_head);
    if (c->head == TF_BERT_SEQ_CLS && c->problem == TF_BERT_REGRESSION && c->n_labels != 1)
        return tf_set_error("problem regression needs n_labels 1 (got %d)", c->n_labels);
    if (c->distilbert) return distil_check(c);
    if (c->roberta) return roberta_check(c);
    if ((c->head == TF_BERT_SEQ_CLS || c->head == TF_BERT_PRETRAINING) && !c->pooler)
        return tf_set_error("head %s reads the pooler: pooler must be true", HEADS[c->head]);
    if (c->pooling == TF_POOL_MAX || c->pooling == TF_POOL_SEQ)
        return tf_set_error("pooling %s: the pooler reads cls, mean or last", c->pooling == TF_POOL_MAX ? "max" : "seq");
    if (c->bigbird_sparse && (c->norm_first || c->pooling != TF_POOL_CLS))
        return tf_set_error("a block_sparse BigBird is Hugging Face's: post-LN, the pooler on [CLS]");
    if (!c->learned_positions && c->attention.rope == TF_ROPE_NONE)
        return tf_set_error("learned_positions false needs rotary positions (--rope halves or interleaved): an "
                            "encoder with neither cannot tell the order of its tokens");
    if (!c->learned_positions && c->bigbird_sparse)
        return tf_set_error("a block_sparse BigBird is Hugging Face's: learned positions");
    tf_block_config b = tf_block_config_default(c->d_model, c->n_head);
    return tf_attention_apply(&c->attention, &b) || tf_block_config_check(&b) ? -1 : 0;
}

const char *tf_bert_head_name(tf_bert_head h) {
    return h >= TF_BERT_BODY && h <= TF_BERT_QA ? HEADS[h] : "unknown";
}

const char *tf_bert_class_name(const tf_bert_config *c) {
    const char *const *names = c->distilbert ? DISTIL_HEADS : c->roberta ? ROBERTA_HEADS : HEADS;
    return c->head >= TF_BERT_BODY && c->head <= TF_BERT_QA && names[c->head] ? names[c->head] : "unknown";
}

static int head_in(const char *const *names, const char *name) {
    for (int i = 0; name && i <= TF_BERT_QA; i++)
        if (names[i] && !strcmp(names[i], name)) return i;
    return -1;
}

int tf_bert_roberta_head_from_name(const char *name) { return head_in(ROBERTA_HEADS, name); }

int tf_bert_distil_head_from_name(const char *name) { return head_in(DISTIL_HEADS, name); }

int tf_bert_head_from_name(const char *name) {
    for (int i = 0; name && HEADS[i]; i++)
        if (!strcmp(HEADS[i], name)) return i;
    return -1;
}
