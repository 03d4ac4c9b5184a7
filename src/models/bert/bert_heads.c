/* BERT's heads on the encoder's output, and the loss each BertFor* class
 * computes from its labels (Hugging Face's definitions):
 *   pre-training       CE(MLM logits, labels; -100 ignored) + CE(NSP logits, next_sentence_label)
 *   masked LM          CE(logits, labels; -100 ignored)
 *   sequence classes   CE(logits, labels), or MSE for regression (n_labels 1); RoBERTa's
 *                      classifier reads the first token through dense + tanh, not the pooler;
 *                      DistilBERT's through pre_classifier + ReLU
 *   token classes      CE(logits, labels; -100 ignored)
 *   question answering (CE(start, s) + CE(end, e)) / 2, positions clamped to [0,T], T ignored */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "bert_internal.h"

#define IGNORE (-100)
#define NO_IGNORE INT32_MIN

static int check_labels(const tf_tensor *t, const char *name, int ndim, const int64_t *shape, tf_dtype dtype) {
    char s[64];
    int ok = t->dtype == dtype && t->ndim == ndim && tf_is_contiguous(t);
    for (int d = 0; ok && d < ndim; d++) ok = t->shape[d] == shape[d];
    if (!ok)
        return tf_set_error("bert: %s %s must be %s %s", name, tf_shape_str(t, s, sizeof s),
                            dtype == TF_DTYPE_F32 ? "F32" : "I32", ndim == 1 ? "(B)" : "(B,T)");
    return 0;
}

static int check_classes(const tf_tensor *t, const char *name, int64_t n, int32_t ignore) {
    for (int64_t i = 0; i < tf_numel(t); i++) {
        int32_t v = tf_i32(t)[i];
        if (v != ignore && (v < 0 || v >= n))
            return tf_set_error("bert: %s holds %d at %lld; must be in [0,%lld)%s", name, (int)v, (long long)i,
                                (long long)n, ignore == IGNORE ? " or -100 (ignored)" : "");
    }
    return 0;
}

/* Labels (B,T), -100 ignored: the flat indices of the labelled positions (N)
 * and their labels (N). */
static int labelled(tf_ctx *ctx, const tf_tensor *labels, tf_tensor **idx, tf_tensor **targets) {
    int64_t n = 0, BT = tf_numel(labels);
    for (int64_t i = 0; i < BT; i++) n += tf_i32(labels)[i] != IGNORE;
    int64_t N = n ? n : 1; /* none labelled: one ignored row, a NaN loss as PyTorch's mean over nothing */
    *idx = tf_tensor_new(ctx, TF_DTYPE_I32, 1, &N, 1);
    *targets = tf_tensor_new(ctx, TF_DTYPE_I32, 1, &N, 0);
    if (!*idx || !*targets) return -1;
    tf_i32(*targets)[0] = IGNORE;
    for (int64_t i = 0, k = 0; i < BT; i++)
        if (tf_i32(labels)[i] != IGNORE) tf_i32(*idx)[k] = (int32_t)i, tf_i32(*targets)[k++] = tf_i32(labels)[i];
    return 0;
}

/* MLM logits and loss: every position, or (loss_only) the labelled ones gathered (N,V). */
static int mlm(tf_ctx *ctx, const tf_bert *m, const tf_bert_inputs *in, tf_bert_outputs *out) {
    tf_tensor *h = out->last_hidden_state, *labels = in->labels;  // h: (B,T,C)
    int64_t B = h->shape[0], T = h->shape[1], C = h->shape[2], V = m->cfg.vocab_size;
    if (labels && (check_labels(labels, "labels", 2, (int64_t[]){B, T}, TF_DTYPE_I32) ||
                   check_classes(labels, "labels", V, IGNORE)))
        return -1;
    if (labels && in->loss_only) {
        tf_tensor *idx, *targets;
        if (labelled(ctx, labels, &idx, &targets)) return -1;
        tf_tensor *rows = tf_embedding(ctx, tf_reshape(ctx, h, 2, (int64_t[]){B * T, C}), idx);  // (N,C)
        out->logits = tf_mlm_head_forward(ctx, &m->mlm, rows);                                 // (N,V)
        out->loss = tf_cross_entropy(ctx, out->logits, targets, IGNORE, 0.0f);
        return out->loss ? 0 : -1;
    }
    out->logits = tf_mlm_head_forward(ctx, &m->mlm, h);  // (B,T,V)
    if (labels) out->loss = tf_cross_entropy(ctx, out->logits, labels, IGNORE, 0.0f);
    return out->logits && (!labels || out->loss) ? 0 : -1;
}

static int pretraining(tf_ctx *ctx, const tf_bert *m, const tf_bert_inputs *in, tf_bert_outputs *out) {
    tf_tensor *mlm_loss;
    if (mlm(ctx, m, in, out)) return -1;
    mlm_loss = out->loss, out->loss = NULL;
    out->seq_relationship_logits = tf_classifier_seq_forward(ctx, &m->nsp, out->pooler_output);  // (B,2)
    if (!out->seq_relationship_logits) return -1;
    tf_tensor *nsp = in->next_sentence_label;
    int64_t B = out->pooler_output->shape[0];
    if (!nsp) return 0;
    if (check_labels(nsp, "next_sentence_label", 1, &B, TF_DTYPE_I32) ||
        check_classes(nsp, "next_sentence_label", 2, NO_IGNORE))
        return -1;
    if (!mlm_loss) return 0; /* Hugging Face: a loss only with both label sets */
    out->loss = tf_add(ctx, mlm_loss, tf_cross_entropy(ctx, out->seq_relationship_logits, nsp, IGNORE, 0.0f));
    return out->loss ? 0 : -1;
}

/* h[:, 0] of h (B,T,C): the first token's states, where RoBERTa's and DistilBERT's classifiers read. */
static tf_tensor *first_token(tf_ctx *ctx, tf_tensor *h) {
    return tf_reshape(ctx, tf_narrow(ctx, h, 1, 0, 1), 2, (int64_t[]){h->shape[0], h->shape[2]});  // (B,C)
}

/* RoBERTa's RobertaClassificationHead: out_proj(dropout(tanh(dense(dropout(x[:, 0]))))), no pooler. */
static tf_tensor *roberta_cls(tf_ctx *ctx, const tf_bert *m, tf_tensor *h) {
    tf_tensor *x = first_token(ctx, h);  // (B,C)
    x = tf_dense(ctx, tf_dropout(ctx, x, m->cls.dropout), m->cls_dense.weight, 0, m->cls_dense.bias, TF_ACT_NONE);
    return tf_classifier_seq_forward(ctx, &m->cls, tf_tanh(ctx, x));  // (B,L)
}

/* DistilBERT's: classifier(dropout(relu(pre_classifier(x[:, 0])))), no pooler. */
static tf_tensor *distil_cls(tf_ctx *ctx, const tf_bert *m, tf_tensor *h) {
    tf_tensor *x = tf_dense(ctx, first_token(ctx, h), m->cls_dense.weight, 0, m->cls_dense.bias, TF_ACT_RELU);
    return tf_classifier_seq_forward(ctx, &m->cls, x);  // (B,L)
}

static int seq_cls(tf_ctx *ctx, const tf_bert *m, const tf_bert_inputs *in, tf_bert_outputs *out) {
    tf_tensor *h = out->last_hidden_state;
    out->logits = m->cfg.roberta      ? roberta_cls(ctx, m, h)  // (B,L)
                : m->cfg.distilbert ? distil_cls(ctx, m, h)
                                    : tf_classifier_seq_forward(ctx, &m->cls, out->pooler_output);
    tf_tensor *labels = in->labels;
    if (!out->logits || !labels) return out->logits ? 0 : -1;
    int64_t B = out->logits->shape[0];
    if (m->cfg.problem == TF_BERT_REGRESSION) { /* MSE of logits (B,1) against labels (B) */
        if (check_labels(labels, "labels", 1, &B, TF_DTYPE_F32)) return -1;
        tf_tensor *d = tf_add(ctx, tf_reshape(ctx, out->logits, 1, &B), tf_scale(ctx, labels, -1.0f));
        out->loss = tf_mean(ctx, tf_mul(ctx, d, d), TF_DIM_ALL, 0);
    } else {
        if (check_labels(labels, "labels", 1, &B, TF_DTYPE_I32) ||
            check_classes(labels, "labels", m->cfg.n_labels, IGNORE))
            return -1;
        out->loss = tf_cross_entropy(ctx, out->logits, labels, IGNORE, 0.0f);
    }
    return out->loss ? 0 : -1;
}

static int token_cls(tf_ctx *ctx, const tf_bert *m, const tf_bert_inputs *in, tf_bert_outputs *out) {
    tf_tensor *h = out->last_hidden_state, *labels = in->labels;
    out->logits = tf_classifier_token_forward(ctx, &m->cls, h);  // (B,T,L)
    if (!out->logits || !labels) return out->logits ? 0 : -1;
    if (check_labels(labels, "labels", 2, h->shape, TF_DTYPE_I32) ||
        check_classes(labels, "labels", m->cfg.n_labels, IGNORE))
        return -1;
    out->loss = tf_cross_entropy(ctx, out->logits, labels, IGNORE, 0.0f);
    return out->loss ? 0 : -1;
}

/* Positions (B) clamped to [0,T] as Hugging Face does; T is then ignored. */
static tf_tensor *clamped(tf_ctx *ctx, const tf_tensor *pos, const char *name, int64_t B, int64_t T) {
    if (check_labels(pos, name, 1, &B, TF_DTYPE_I32)) return NULL;
    tf_tensor *c = tf_tensor_new(ctx, TF_DTYPE_I32, 1, &B, 0);  // (B)
    for (int64_t b = 0; c && b < B; b++) {
        int32_t v = tf_i32(pos)[b];
        tf_i32(c)[b] = v < 0 ? 0 : v > T ? (int32_t)T : v;
    }
    return c;
}

static int span(tf_ctx *ctx, const tf_bert *m, const tf_bert_inputs *in, tf_bert_outputs *out) {
    tf_tensor *h = out->last_hidden_state;
    if (m->cfg.distilbert) h = tf_dropout(ctx, h, m->cfg.qa_dropout);  // DistilBERT's qa_dropout  (B,T,C)
    if (tf_span_head_forward(ctx, &m->span, h, &out->start_logits, &out->end_logits)) return -1;  // (B,T) each
    if (!in->start_positions || !in->end_positions) return 0;
    int64_t B = h->shape[0], T = h->shape[1];
    tf_tensor *s = clamped(ctx, in->start_positions, "start_positions", B, T);
    tf_tensor *e = clamped(ctx, in->end_positions, "end_positions", B, T);
    if (!s || !e) return -1;
    tf_tensor *ls = tf_cross_entropy(ctx, out->start_logits, s, (int)T, 0.0f);
    tf_tensor *le = tf_cross_entropy(ctx, out->end_logits, e, (int)T, 0.0f);
    out->loss = tf_scale(ctx, tf_add(ctx, ls, le), 0.5f);
    return out->loss ? 0 : -1;
}

int tf_bert_heads(tf_ctx *ctx, const tf_bert *m, const tf_bert_inputs *in, tf_bert_outputs *out) {
    switch (m->cfg.head) {
    case TF_BERT_PRETRAINING: return pretraining(ctx, m, in, out);
    case TF_BERT_MLM: return mlm(ctx, m, in, out);
    case TF_BERT_SEQ_CLS: return seq_cls(ctx, m, in, out);
    case TF_BERT_TOKEN_CLS: return token_cls(ctx, m, in, out);
    case TF_BERT_QA: return span(ctx, m, in, out);
    default: return 0;
    }
}
