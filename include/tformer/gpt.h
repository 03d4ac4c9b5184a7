/* tformer: GPT: the decoder language model. */
#ifndef TFORMER_GPT_H
#define TFORMER_GPT_H

#include "config.h"
#include "generate.h"
#include "heads.h"
#include "images.h"
#include "nn.h"
#include "safetensors.h"
#include "task.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------- GPT: decoder language model */


typedef struct {
    int vocab_size, context; /* context: the longest sequence (positions) */
    int n_layer, n_head, d_model;
    int d_ff;                /* MLP width; 0 means 4 * d_model */
    float dropout;
    tf_pos_kind pos;
    int norm_first;          /* 1: pre-LN with a final LayerNorm (GPT-2); 0: post-LN (the original paper) */
    tf_activation activation;/* GPT-2: TF_ACT_GELU_TANH */
    int tied;                /* output projection = token embedding (GPT-2) */
    float norm_eps;
    tf_attention_options attention; /* full (causal), or local / dilated / bigbird causal patterns */
    tf_norm_kind norm;       /* GPT-2: LayerNorm; ImageGPT: TF_NORM_RMS (no centring, no bias) */
    int predict_last;        /* 0: the last token (a start token, only fed in) has no logit: vocab_size - 1
                              * outputs (ImageGPT); its logit reads -inf where a full row is asked for */
} tf_gpt_config;

/* GPT-2 small's shape scaled to the given sizes: pre-LN, learned positions,
 * tanh GELU, tied embeddings, eps 1e-5, dropout 0. */
TF_API tf_gpt_config tf_gpt_config_default(int vocab_size, int context, int n_layer, int n_head, int d_model);
/* Its field table (config.h): defaults (nanoGPT's character-level sizes:
 * context 64, 4 layers, 4 heads, width 128), ranges, JSON keys and flags;
 * every field but dropout is part of the checkpoint signature. */
TF_API extern const tf_field_table tf_gpt_config_table;

/* GPT-2's layout with Hugging Face's names: the blocks are the one
 * Transformer block (tf_block) with GPT-2's name map. */
typedef struct {
    tf_gpt_config cfg;
    tf_block_config block; /* derived from cfg */
    tf_params *params;     /* every tensor below, by Hugging Face name */
    tf_tensor *wte;        /* (V,C) */
    tf_tensor *wpe;        /* (context,C), NULL with sinusoidal positions */
    tf_block *h;           /* n_layer blocks */
    tf_layer_norm ln_f;    /* pre-LN only */
    tf_lm_head head;       /* logits = h wte^T (tied), or "lm_head.weight" (V,C); (V-1,C) without predict_last */
    int has_head;          /* 0: GPT2Model, hidden states only */
} tf_gpt;

/* Check a configuration; 0 or -1 with a message naming the field. */
TF_API int tf_gpt_config_check(const tf_gpt_config *c);
/* A model with GPT-2's initialisation (N(0,0.02), residual projections scaled
 * by 1/sqrt(2 n_layer)), or with its tensors left for tf_params_load when seed == 0. */
TF_API tf_gpt *tf_gpt_new(const tf_gpt_config *cfg, uint64_t seed);
TF_API void tf_gpt_free(tf_gpt *m);
/* ids (B,T) I32 -> logits (B,T,V); with targets (B,T) I32 (-1 = ignore) the
 * return value is the mean cross-entropy and *logits (if asked) the logits. */
TF_API tf_tensor *tf_gpt_forward(tf_ctx *ctx, const tf_gpt *m, tf_tensor *ids, tf_tensor *targets, tf_tensor **logits);

/* The inputs of one forward pass, named as Hugging Face's GPT2Model.forward()
 * arguments; every one but input_ids may be NULL. */
typedef struct {
    tf_tensor *input_ids;      /* (B,T) I32 */
    tf_tensor *attention_mask; /* (B,T) I32 or U8: 1 = attend, 0 = padding (keys hidden) */
    tf_tensor *position_ids;   /* (B,T) I32; NULL: 0..T-1 */
    tf_tensor *token_type_ids; /* (B,T) I32, embedded with the token table (as GPT-2 does) */
    tf_tensor *targets;        /* (B,T) I32 next tokens (-1 = ignore): the loss */
    tf_kv_cache *cache;        /* past_key_values: the positions before these (attention_mask then covers both) */
    int output_attentions;     /* fill outputs.attentions (the scores are then materialised, not fused) */
} tf_gpt_inputs;

/* Its outputs, named as Hugging Face's output fields; NULL when not asked for. */
typedef struct {
    tf_tensor *last_hidden_state; /* (B,T,d_model), after the final LayerNorm */
    tf_tensor *logits;            /* (B,T,V) */
    tf_tensor *loss;              /* scalar, with targets */
    tf_tensor **attentions;       /* with output_attentions: n_layer tensors (B,H,T,S), each layer's attention
                                   * probabilities over the S positions held (the cache's, then these) */
} tf_gpt_outputs;

/* One forward pass; 0, or -1 with a message. A query at a padded position
 * whose every visible key is padding gets zeros (Hugging Face: a mean of the
 * padded values); other positions agree. */
TF_API int tf_gpt_run(tf_ctx *ctx, const tf_gpt *m, const tf_gpt_inputs *in, tf_gpt_outputs *out);

/* A KV cache for this model: batch rows of up to capacity positions. */
TF_API tf_kv_cache *tf_gpt_cache_new(const tf_gpt *m, int batch, int capacity);
/* One decoding step of R rows, each at its own position: row r's token tokens[r] after the
 * positions its own cache caches[r] holds (one row, tf_gpt_cache_new(m, 1, ...); no two rows
 * share one), each cache advanced by one; logits (R,V) of each row's next token. The linear
 * layers and the head are one product over the rows, each row attends over its own cache,
 * and each row's logits are the bits of its step alone (tf_gpt_run with its cache); int8
 * weights step the rows one at a time. On an error the caches' lengths are as they were. */
TF_API int tf_gpt_step_rows(tf_ctx *ctx, const tf_gpt *m, tf_kv_cache *const *caches, const int32_t *tokens, int R,
                            float *logits);
/* The decoder interface over a GPT (capacity positions; at most the context):
 * every step runs tf_gpt_run through a KV cache. The model must outlive it. */
TF_API tf_decoder *tf_gpt_decoder_new(const tf_gpt *m, int capacity);
/* tf_generate on a GPT decoder sized for the prompt and max_tokens. */
TF_API int tf_gpt_generate(const tf_gpt *m, const int32_t *prompt, int n_prompt, const tf_generate_opts *o,
                           tf_token_fn on_token, void *user, tf_ids *out, double *score);


/* Hugging Face GPT-2 folders: config.json + model.safetensors. */
TF_API tf_gpt *tf_gpt_load(const char *dir);
/* The same for inference: the weights are the model file's mapped pages
 * (no copy, nothing zero-filled; F16/BF16 tensors are converted) and track
 * no gradients; writing to them writes private copies of their pages, never
 * the file. generate and eval load models this way. */
TF_API tf_gpt *tf_gpt_load_mapped(const char *dir);
TF_API int tf_gpt_save(const tf_gpt *m, const char *dir);

/* ---------------------------------------------------------------- ImageGPT: a GPT on pixel tokens */

/* A model folder of tformer train --arch imagegpt: the GPT-2 folder and its
 * image_tokens.json, checked against each other (vocab_size = clusters + 1,
 * context >= the pixels). */
TF_API tf_gpt *tf_imagegpt_load(const char *dir, tf_image_tokens *tokens);
/* The decoder interface over an ImageGPT: the GPT's decoder with the start
 * token's logit set to -inf (it is never a pixel, so never sampled). */
TF_API tf_decoder *tf_imagegpt_decoder_new(const tf_gpt *m, const tf_image_tokens *tokens);
/* One completion of an image's tokens (H*W, raster order): its first
 * keep_rows rows kept, the rest sampled (tf_generate with o's temperature,
 * top_k, top_p and seed) after the start token and the kept pixels; out (H*W). */
TF_API int tf_imagegpt_complete(const tf_gpt *m, const tf_image_tokens *tokens, const int32_t *image, int keep_rows,
                                const tf_generate_opts *o, int32_t *out);

/* ---------------------------------------------------------------- the language-modelling task */

/* The language-modelling task: a GPT learning the next token of a text. */
typedef struct {
    tf_gpt_config model;     /* vocab_size 0: the tokenizer's size */
    float val_fraction;      /* the last part of the tokens is held out */
} tf_lm_config;

/* nanoGPT's character-level model (tf_gpt_config_table's defaults), val_fraction 0.1. */
TF_API tf_lm_config tf_lm_config_default(void);
TF_API int tf_lm_config_check(const tf_lm_config *c);
/* val_fraction and the model's rows, flat ("n_layer", not "model.n_layer"):
 * a training config file is one JSON object read with both tables,
 * tf_fields_load({{&tf_train_config_table, &train}, {&tf_lm_config_table, &lm}}, 2, path, 0). */
TF_API extern const tf_field_table tf_lm_config_table;

/* The language-modelling task over text files: the tokenizer (a folder, or
 * "char" for the data's characters) is copied into run_dir (unless resuming),
 * the text tokenized and windowed (tf_lm_loader_new), the GPT initialised
 * from seed. */
TF_API tf_task *tf_lm_task_new(const tf_lm_config *c, const char *const *data, int n_data, const char *tokenizer,
                               const char *run_dir, int resume, uint64_t seed);
TF_API const tf_gpt *tf_lm_task_model(const tf_task *t);

/* Mean next-token loss of a model on the text of files (windows of the context). */
TF_API int tf_gpt_evaluate(const tf_gpt *m, tf_tokenizer *tok, const char *const *data, int n_data, double *loss,
                    int64_t *tokens);

/* ---------------------------------------------------------------- ImageGPT (docs/vision.md) */

/* A GPT on images as raster-order colour tokens (tf_image_tokens): its
 * vocabulary the clusters plus the start token, its context the pixels;
 * next-pixel cross-entropy; validation metric "bpd", bits per pixel (the
 * mean negative log-likelihood of each pixel's token in nats / ln 2; a
 * grey pixel is one dimension). Saved as a GPT-2 folder with image_tokens.json. */
typedef struct {
    tf_gpt_config model;   /* vocab_size (0: n_clusters + 1) and context (set to the pixels) follow the images */
    float val_fraction;    /* without a validation set: the last part of the training images */
    int n_clusters;        /* k-means colour clusters (16 for grey) */
    int image_size;        /* images resized to image_size x image_size first (box filter); 0: as they are */
    int kmeans_iters;      /* Lloyd rounds at most */
    int64_t kmeans_pixels; /* pixels of the training set the clusters are fitted on (drawn under the seed); 0: all */
    int val_images;        /* validation images evaluated (the first ones); 0: all */
} tf_imagegpt_task_config;
TF_API tf_imagegpt_task_config tf_imagegpt_task_config_default(void);
TF_API extern const tf_field_table tf_imagegpt_task_config_table;
/* The task: *train (and *valid, or NULL: the last val_fraction of train held
 * out) moved into it as with tf_vit_task_new; clusters fitted on the
 * training images under seed; the GPT initialised from seed. */
TF_API tf_task *tf_imagegpt_task_new(const tf_imagegpt_task_config *c, tf_images *train, tf_images *valid,
                                     const char *run_dir, uint64_t seed);
TF_API const tf_gpt *tf_imagegpt_task_model(const tf_task *t);
TF_API const tf_image_tokens *tf_imagegpt_task_tokens(const tf_task *t);
/* Images of a subset (validation: those evaluated). */
TF_API int64_t tf_imagegpt_task_images(const tf_task *t, tf_subset subset);

#ifdef __cplusplus
}
#endif
#endif /* TFORMER_GPT_H */
