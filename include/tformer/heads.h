/* tformer: output heads shared by the model families, and the registration of
 * their building blocks (Linear, LayerNorm).
 *
 * Each head is a small struct, a register function that takes the parameter
 * names (a family passes its checkpoint's names: Hugging Face BERT's are given
 * as examples) and a forward on hidden states (B,T,d_model). Weights start as
 * N(0, init_std^2) (TF_INIT_STD, BERT's initializer_range), biases 0,
 * LayerNorm weights 1. A forward given a NULL input returns NULL (or -1)
 * without a new message, like every op; a wrong shape is an error naming the
 * head and both shapes. */
#ifndef TFORMER_HEADS_H
#define TFORMER_HEADS_H

#include "nn.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------- building blocks */

/* BERT's initializer_range: the default std of the heads' weights. */
#define TF_INIT_STD 0.02f

/* A Linear: "<name>.weight" (out,in) from N(0, init_std^2) (TF_INIT_ZEROS: zeros)
 * and, when bias, "<name>.bias" (out) zeros. */
TF_API int tf_linear_register(tf_params *ps, const char *name, tf_linear *l, int64_t in, int64_t out, int bias,
                              float init_std);
/* A LayerNorm over C: "<name>.weight" (C) ones and, when bias, "<name>.bias" (C) zeros. */
TF_API int tf_layer_norm_register(tf_params *ps, const char *name, tf_layer_norm *n, int64_t C, float eps,
                                  int bias);

/* ---------------------------------------------------------------- language-model heads */

/* logits (...,V) = x E^T (+ bias), E (V,d_model) either a table shared with
 * the embedding (tied: GPT-2's lm_head, BERT's cls.predictions.decoder) or the
 * head's own weight. Without a bias the product is tf_matmul(x, E, 0, 1),
 * exactly GPT's. */
typedef struct {
    int64_t d_model, vocab;
    tf_tensor *weight;      /* (V,d_model) own weight, or NULL when tied */
    tf_tensor *const *tied; /* slot of the shared table (V,d_model), or NULL */
    tf_tensor *bias;        /* (V) or NULL */
} tf_lm_head;

/* Exactly one of tied (the slot of a table registered elsewhere, e.g.
 * &model->wte: read at every forward, so it may be initialised or loaded
 * after this call) and weight_name (an own weight, e.g. "lm_head.weight").
 * bias_name: the bias's full name ("cls.predictions.bias"), or NULL for none. */
TF_API int tf_lm_head_register(tf_params *ps, const char *weight_name, const char *bias_name, tf_lm_head *h,
                               tf_tensor *const *tied, int64_t d_model, int64_t vocab, float init_std);
/* x (...,d_model), at least 2 dims -> logits (...,V). */
TF_API tf_tensor *tf_lm_head_forward(tf_ctx *ctx, const tf_lm_head *h, tf_tensor *x);

/* The masked-LM head: transform = LayerNorm(act(dense(x))), then the decoder
 * x E^T + bias (BERT's cls.predictions, RoBERTa's lm_head). */
typedef struct {
    int64_t d_model, vocab;
    tf_activation act; /* BERT's hidden_act: "gelu" is TF_ACT_GELU */
    float norm_eps;    /* BERT's layer_norm_eps: 1e-12 */
    float init_std;    /* TF_INIT_STD */
} tf_mlm_head_config;

/* Full names (BERT's in the comments). */
typedef struct {
    const char *dense;   /* the transform's Linear (d_model,d_model): "cls.predictions.transform.dense" */
    const char *norm;    /* its LayerNorm: "cls.predictions.transform.LayerNorm" */
    const char *decoder; /* an own decoder weight (V,d_model), or NULL when tied: "cls.predictions.decoder.weight" */
    const char *bias;    /* the decoder's bias (V), or NULL for none: "cls.predictions.bias" */
} tf_mlm_head_names;

typedef struct {
    tf_mlm_head_config cfg;
    tf_linear dense;      /* (d_model,d_model) */
    tf_layer_norm norm;   /* (d_model) */
    tf_lm_head decoder;   /* (V,d_model), tied or own, and the bias */
} tf_mlm_head;

/* tied: as for tf_lm_head_register (NULL when names->decoder is given). */
TF_API int tf_mlm_head_register(tf_params *ps, const tf_mlm_head_names *names, tf_mlm_head *h,
                                const tf_mlm_head_config *cfg, tf_tensor *const *tied);
/* x (...,d_model), at least 2 dims (all positions, or the masked ones gathered
 * as (N,d_model)) -> logits (...,V). */
TF_API tf_tensor *tf_mlm_head_forward(tf_ctx *ctx, const tf_mlm_head *h, tf_tensor *x);

/* ---------------------------------------------------------------- pooler and classifiers */

/* Which tokens a pooled vector summarises: the first ([CLS]), the mean or the
 * maximum over the tokens (padding left out), their mean weighted by a
 * learned score (tf_seq_pool), or the last token that is not padding
 * (GPT2ForSequenceClassification's rule). Each family's table lists the ones
 * it has. */
typedef enum { TF_POOL_MEAN, TF_POOL_CLS, TF_POOL_MAX, TF_POOL_SEQ, TF_POOL_LAST } tf_pooling;

/* Sequence pooling (SeqPool, Hassani et al. 2021, "Escaping the Big Data
 * Paradigm with Compact Transformers"): a score per token from a Linear
 * d_model -> 1 (CCT's has a bias, which the softmax cancels: left out here),
 * softmax over the tokens, the tokens' weighted sum. */
typedef struct {
    int64_t d_model;
    tf_linear score; /* (1,d_model), no bias (a constant added to every score changes nothing) */
} tf_seq_pool;

/* name: the Linear's, "pooling.score". */
TF_API int tf_seq_pool_register(tf_params *ps, const char *name, tf_seq_pool *p, int64_t d_model, float init_std);
/* x (B,T,d_model) -> pooled (B,d_model); weights, when not NULL, receives the
 * softmax weights (B,T). */
TF_API tf_tensor *tf_seq_pool_forward(tf_ctx *ctx, const tf_seq_pool *p, tf_tensor *x, tf_tensor **weights);

/* BERT's pooler: tanh(dense(x[:, 0])), the first token's hidden state. */
typedef struct {
    int64_t d_model;
    tf_linear dense; /* (d_model,d_model) */
} tf_pooler;

/* name: the Linear's, "bert.pooler.dense". */
TF_API int tf_pooler_register(tf_params *ps, const char *name, tf_pooler *p, int64_t d_model, float init_std);
/* x (B,T,d_model) -> pooled (B,d_model). */
TF_API tf_tensor *tf_pooler_forward(tf_ctx *ctx, const tf_pooler *p, tf_tensor *x);
/* The same dense + tanh on the mean of the tokens instead of the first, the
 * positions where attention_mask (B,T, I32 or U8, 0 = padding; NULL: none) is
 * 0 left out: the mean pooling of Long Range Arena's re-runs. */
TF_API tf_tensor *tf_pooler_forward_mean(tf_ctx *ctx, const tf_pooler *p, tf_tensor *x, const tf_tensor *attention_mask);
/* The same dense + tanh on each row's last token that attention_mask keeps
 * (the last of the row when NULL): where a right-padded sequence ends. A row
 * with no token kept gives tanh(bias). */
TF_API tf_tensor *tf_pooler_forward_last(tf_ctx *ctx, const tf_pooler *p, tf_tensor *x, const tf_tensor *attention_mask);

/* dropout + Linear d_model -> n_labels, on a pooled vector per sequence
 * (BertForSequenceClassification's "classifier"; next-sentence prediction,
 * "cls.seq_relationship", is one with 2 labels and no dropout) or on every
 * token (BertForTokenClassification's "classifier"). Dropout acts only while
 * the context trains. */
typedef struct {
    int64_t d_model, n_labels;
    float dropout;
    tf_linear out; /* (n_labels,d_model) */
} tf_classifier;

TF_API int tf_classifier_register(tf_params *ps, const char *name, tf_classifier *c, int64_t d_model,
                                  int64_t n_labels, float dropout, float init_std);
/* pooled (B,d_model) -> logits (B,n_labels). */
TF_API tf_tensor *tf_classifier_seq_forward(tf_ctx *ctx, const tf_classifier *c, tf_tensor *pooled);
/* x (B,T,d_model) -> logits (B,T,n_labels). */
TF_API tf_tensor *tf_classifier_token_forward(tf_ctx *ctx, const tf_classifier *c, tf_tensor *x);

/* Extractive question answering: a Linear d_model -> 2 on every token, split
 * into the span's start and end logits (BertForQuestionAnswering's "qa_outputs"). */
typedef struct {
    int64_t d_model;
    tf_linear out; /* (2,d_model): row 0 start, row 1 end */
} tf_span_head;

TF_API int tf_span_head_register(tf_params *ps, const char *name, tf_span_head *h, int64_t d_model,
                                 float init_std);
/* x (B,T,d_model) -> *start (B,T), *end (B,T). 0, or -1 with both NULL. */
TF_API int tf_span_head_forward(tf_ctx *ctx, const tf_span_head *h, tf_tensor *x, tf_tensor **start,
                                tf_tensor **end);

#ifdef __cplusplus
}
#endif
#endif /* TFORMER_HEADS_H */
