/* tformer: Nyströmformer, the BERT-like encoder of Xiong et al. (2021) whose
 * self-attention is approximated through segment-mean landmarks, laid out as
 * Hugging Face's NystromformerModel / NystromformerFor* with their parameter
 * names: the one Transformer block with TF_ATTN_NYSTROM (post-LN, q/k/v
 * apart, the depthwise convolution on v) and BERT's embeddings with
 * positions offset by 2. */
#ifndef TFORMER_NYSTROM_H
#define TFORMER_NYSTROM_H

#include "config.h"
#include "heads.h"
#include "nn.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Which head sits on the encoder: Hugging Face's architectures. */
typedef enum {
    TF_NYSTROM_BODY,      /* NystromformerModel: last_hidden_state */
    TF_NYSTROM_MLM,       /* NystromformerForMaskedLM: cls.predictions, as BERT's */
    TF_NYSTROM_SEQ_CLS,   /* NystromformerForSequenceClassification: x[:,0] -> dense -> act -> out_proj */
    TF_NYSTROM_TOKEN_CLS  /* NystromformerForTokenClassification: every token -> n_labels */
} tf_nystrom_head;

typedef struct {
    int vocab_size, max_positions, type_vocab_size; /* max_position_embeddings: the table has 2 more rows */
    int n_layer, n_head, d_model, d_ff;
    tf_activation activation;                 /* hidden_act; Hugging Face's default gelu_new (tanh) */
    float norm_eps;                           /* layer_norm_eps, 1e-5 */
    float dropout;                            /* hidden_dropout_prob (attention weights: none, as transformers) */
    int seq_len;                              /* segment_means_seq_len: the length the landmarks are cut for */
    int landmarks;                            /* num_landmarks; == seq_len: exact softmax attention */
    int conv_kernel;                          /* conv_kernel_size, odd; 0: no convolution (null) */
    tf_nystrom_head head;
    int n_labels;                             /* classification heads */
    int regression;                           /* sequence classification by mean squared error (num_labels 1) */
    int tied;                                 /* MLM decoder = word embeddings (tie_word_embeddings) */
    int pad_token_id;                         /* the word row lookups give no gradient (nn.Embedding's
                                               * padding_idx); -1: none */
    float init_std;                           /* initializer_range */
} tf_nystrom_config;

/* 0, or -1 with a message naming the field (Hugging Face's key). */
TF_API int tf_nystrom_config_check(const tf_nystrom_config *c);
/* "NystromformerModel", ... and back (-1 when unknown). */
TF_API const char *tf_nystrom_head_name(tf_nystrom_head h);
TF_API int tf_nystrom_head_from_name(const char *name);

typedef struct {
    tf_nystrom_config cfg;
    tf_block_config block; /* post-LN, TF_ATTN_NYSTROM: derived from cfg */
    tf_params *params;     /* every tensor, by Hugging Face name ("nystromformer." prefix with a head) */
    tf_tensor *word, *position, *token_type; /* (V,C), (max_positions+2,C), (TV,C) */
    tf_layer_norm emb_norm;
    tf_block *layer;       /* n_layer blocks */
    tf_mlm_head mlm;       /* MLM: cls.predictions */
    tf_linear cls_dense, cls_out; /* SEQ_CLS: classifier.dense, classifier.out_proj */
    tf_classifier token;   /* TOKEN_CLS: classifier */
} tf_nystrom;

/* A model initialised as Hugging Face does (N(0, init_std^2), biases 0,
 * LayerNorms 1), or with its tensors left for loading when seed == 0. */
TF_API tf_nystrom *tf_nystrom_new(const tf_nystrom_config *cfg, uint64_t seed);
TF_API void tf_nystrom_free(tf_nystrom *m);

/* The inputs of one forward pass, named as forward()'s; all but input_ids may be NULL. */
typedef struct {
    tf_tensor *input_ids;      /* (B,T) I32; T = segment_means_seq_len unless num_landmarks equals it */
    tf_tensor *attention_mask; /* (B,T) I32 or U8, 1 = token, 0 = padding (hidden as a key) */
    tf_tensor *token_type_ids; /* (B,T) I32; NULL: all 0 */
    tf_tensor *position_ids;   /* (B,T) I32 below max_positions + 2; NULL: 2 .. T+1 */
    tf_tensor *labels;         /* MLM, token classes: (B,T) I32, -100 ignored; sequence classes: (B) I32,
                                * or (B) F32 for regression */
} tf_nystrom_inputs;

typedef struct {
    tf_tensor *last_hidden_state; /* (B,T,C) */
    tf_tensor *logits;            /* MLM (B,T,V); sequence classes (B,L); token classes (B,T,L) */
    tf_tensor *loss;              /* scalar, with labels */
} tf_nystrom_outputs;

/* One forward pass; 0, or -1 with a message. */
TF_API int tf_nystrom_run(tf_ctx *ctx, const tf_nystrom *m, const tf_nystrom_inputs *in, tf_nystrom_outputs *out);

/* A Hugging Face folder: config.json + model.safetensors (the weights with or
 * without the "nystromformer." prefix); settings transformers would not run
 * as configured, or that tformer does not implement, are refused by name. */
TF_API tf_nystrom *tf_nystrom_load(const char *dir);

#ifdef __cplusplus
}
#endif
#endif /* TFORMER_NYSTROM_H */
