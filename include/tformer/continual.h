/* tformer: Continual Transformers (Hedegaard & Iosifidis): step inference on
 * a stream with cached state, outputs identical to regular inference on the
 * window of the last n steps. See docs/continual.md. */
#ifndef TFORMER_CONTINUAL_H
#define TFORMER_CONTINUAL_H

#include "config.h"
#include "nn.h"
#include "task.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------- the continual encoder */

/* A Transformer encoder on a stream: the window of the last `window` steps
 * (feature vectors of width d_model) plus a recycling positional encoding
 * (step t at position t mod pos_len), n_layer PyTorch encoder layers, the
 * output of the last position (or of a class token appended after the first
 * block, n_layer >= 2). Step mode: a single-output first block when
 * n_layer == 1, else a retroactive first block, regular middle blocks and a
 * single-output last block. */
typedef struct {
    int d_model, n_head, d_ff, n_layer;
    int window;           /* n: steps the receptive field holds */
    int pos_len;          /* rows of the position table, >= window; 0: no positional encoding */
    tf_pos_kind pos;      /* TF_POS_LEARNED or TF_POS_SINUSOIDAL */
    tf_activation activation;
    float norm_eps, dropout;
    int norm_first;       /* pre-LN */
    int cls_token;        /* a learned class token after the first block */
    int vocab_size;       /* > 0: steps are token ids, embedded by "embed" (vocab_size,d_model); 0: feature vectors */
    int n_labels;         /* > 0: a classifier "head" (n_labels,d_model) on the output; 0: none */
    char label_names[256]; /* the classes' names, comma-separated, or empty */
} tf_continual_config;

/* The table of tf_continual_config (config.json of a continual model folder). */
TF_API extern const tf_field_table tf_continual_config_table;
TF_API const tf_field_table *tf_continual_config_fields(void);
TF_API int tf_continual_config_check(const tf_continual_config *c);

typedef struct {
    tf_continual_config cfg;
    tf_block_config block;
    tf_block *layers;     /* "layers.<i>." PyTorch's TransformerEncoderLayer names */
    tf_tensor *pos_embed; /* "pos_embed" (pos_len,d_model) when learned */
    tf_tensor *cls;       /* "cls_token" (d_model) with cls_token */
    tf_tensor *embed;     /* "embed" (vocab_size,d_model) with vocab_size */
    tf_linear head;       /* "head" (n_labels,d_model) with n_labels */
    tf_params *params;    /* its own when loaded from a folder (tf_continual_load, freed with the model);
                           * NULL when registered into the caller's (tf_continual_register) */
} tf_continual;

TF_API int tf_continual_register(tf_params *ps, const char *prefix, tf_continual *e, const tf_continual_config *cfg);
/* The same with another checkpoint's names: layer i's tensors named
 * prefix + layer_prefix[i] + names[i]'s rows (continual-inference's modules). */
TF_API int tf_continual_register_names(tf_params *ps, const char *prefix, tf_continual *e, const tf_continual_config *cfg,
                                   const char *const *layer_prefix, const tf_block_names *names);
TF_API void tf_continual_free(tf_continual *e);
/* Batch mode, the regular network: x (B,window,d_model), the window's first
 * step at position pos_start (mod pos_len) -> (B,d_model). Differentiable. */
TF_API tf_tensor *tf_continual_forward(tf_ctx *ctx, const tf_continual *e, tf_tensor *x, int64_t pos_start);

/* A continual model folder: config.json ({"model_type": "continual"} and the
 * table's keys) and model.safetensors, into e with parameters of its own
 * (e->params; tf_continual_free frees them). window >= 0 replaces the
 * config's (then checked: 0, or more than pos_len, is an error). */
TF_API int tf_continual_load(const char *dir, int window, tf_continual *e);
/* The model into dir; ps NULL: its own parameters (a loaded model's). */
TF_API int tf_continual_save(const char *dir, const tf_continual *e, const tf_params *ps);

/* Token ids (B,T) or (B) I32 in [0,vocab_size) -> their embeddings (B,T,d_model) or (B,d_model). */
TF_API tf_tensor *tf_continual_embed(tf_ctx *ctx, const tf_continual *e, tf_tensor *ids);
/* The classifier on outputs h (B,d_model) -> logits (B,n_labels). */
TF_API tf_tensor *tf_continual_classify(tf_ctx *ctx, const tf_continual *e, tf_tensor *h);

typedef struct tf_continual_state tf_continual_state;
TF_API tf_continual_state *tf_continual_state_new(const tf_continual *e, int batch);
TF_API void tf_continual_state_free(tf_continual_state *s);
/* Steps taken so far; the window of the next output starts at step
 * steps + 1 - window, position (that) mod pos_len. */
TF_API int64_t tf_continual_state_steps(const tf_continual_state *s);
/* Step mode: x (B,d_model) -> 1 and *out (B,d_model) once `window` steps
 * were seen (equal to tf_continual_forward on the last window), 0 before, -1 on
 * an error (a NaN or infinity in x is one, naming the step). */
TF_API int tf_continual_step(tf_ctx *ctx, tf_continual_state *s, tf_tensor *x, tf_tensor **out);

/* ---------------------------------------------------------------- stream classification */

/* A Continual Transformer encoder classifying each token of a stream (src/models/continual/continual_task.c):
 * one data file a class; the encoder's rows flat beside these. */
typedef struct {
    tf_continual_config model;   /* vocab_size, n_labels 0: the tokenizer's size, the number of files */
    float val_fraction;      /* the last part of the stream is held out */
} tf_continual_task_config;
TF_API extern const tf_field_table tf_continual_task_config_table;
TF_API tf_continual_task_config tf_continual_task_config_default(void);
/* Lines of the data files (file i: class i) shuffled by seed into one
 * stream; windows of model.window tokens name their last token's class. */
TF_API tf_task *tf_continual_task_new(const tf_continual_task_config *c, const char *const *data, int n_data,
                                     const char *tokenizer, const char *run_dir, int resume, uint64_t seed);

#ifdef __cplusplus
}
#endif
#endif /* TFORMER_CONTINUAL_H */
