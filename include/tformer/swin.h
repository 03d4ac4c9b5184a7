/* tformer: the Swin Transformer (Liu et al., "Swin Transformer: Hierarchical
 * Vision Transformer using Shifted Windows", 2021): patches embedded by a
 * strided projection and a LayerNorm, stages of the one Transformer block
 * (pre-LN) whose self-attention runs within local windows with a learned
 * relative position bias, every second block's windows shifted by half a
 * window, 2x2 patch merging between stages (4C -> 2C), a final LayerNorm,
 * average pooling and a classifier; laid out as Hugging Face's SwinModel /
 * SwinForImageClassification with their parameter names (docs/vision.md). */
#ifndef TFORMER_SWIN_H
#define TFORMER_SWIN_H

#include "config.h"
#include "heads.h"
#include "nn.h"
#include "vit.h"
#include "task.h"

#ifdef __cplusplus
extern "C" {
#endif

#define TF_SWIN_MAX_STAGES 8

typedef enum {
    TF_SWIN_BODY,     /* SwinModel: last_hidden_state, pooler_output (the mean over the tokens) */
    TF_SWIN_IMAGE_CLS /* SwinForImageClassification: the pooled state -> n_labels */
} tf_swin_head;

typedef struct {
    int image_size, patch_size, channels; /* square images; a size not a multiple of patch_size is zero-padded */
    int d_model;                          /* embed_dim: stage s is d_model * 2^s wide */
    char depths[64], heads[64];           /* blocks and heads per stage, comma-separated: "2,2" and "2,4" */
    int window;                           /* window_size (a stage whose grid is not larger uses its grid, unshifted) */
    float mlp_ratio;                      /* d_ff = (int)(mlp_ratio * width) */
    tf_activation activation;             /* hidden_act: gelu (erf) */
    float norm_eps;                       /* layer_norm_eps of the blocks and the final LayerNorm */
    float dropout, attn_dropout, drop_path;
    int qkv_bias;
    tf_swin_head head;
    int n_labels;
    float init_std;
} tf_swin_config;

TF_API tf_swin_config tf_swin_config_default(void);
/* 0, or -1 with a message naming the field (depths / heads malformed, widths
 * not multiples of the heads, the patch larger than the image, ...). */
TF_API int tf_swin_config_check(const tf_swin_config *c);
TF_API extern const tf_field_table tf_swin_config_table;
/* "SwinModel", "SwinForImageClassification" and back (-1 when unknown). */
TF_API const char *tf_swin_head_name(tf_swin_head h);
TF_API int tf_swin_head_from_name(const char *name);

/* One stage: its blocks at one resolution, then (all but the last) patch merging. */
typedef struct {
    int depth, n_head, d_model;
    int height, width;     /* its token grid */
    int window, shift;     /* the window side (clamped to the grid) and the odd blocks' shift (0 when clamped) */
    tf_block_config block;
    tf_block *blocks;      /* depth blocks */
    tf_tensor **rel_table; /* depth tables ((2 window-1)^2, n_head): attention.self.relative_position_bias_table */
    tf_layer_norm merge_norm; /* downsample.norm over 4 d_model */
    tf_tensor *merge_w;    /* downsample.reduction.weight (2 d_model, 4 d_model), no bias */
} tf_swin_stage;

typedef struct {
    tf_swin_config cfg;
    int n_stage;
    tf_swin_stage stage[TF_SWIN_MAX_STAGES];
    tf_params *params;            /* every tensor by Hugging Face name ("swin." prefix with a head) */
    tf_tensor *patch_w, *patch_b; /* (d_model,C,P,P), (d_model) */
    tf_layer_norm embed_norm;     /* embeddings.norm */
    tf_layer_norm norm;           /* layernorm: the final one */
    tf_classifier cls;            /* IMAGE_CLS: classifier */
    char **labels;                /* n_labels names (id2label), or NULL */
} tf_swin;

/* A model initialised as Hugging Face does (N(0, init_std^2), biases and the
 * bias tables 0, LayerNorms 1), or with its tensors left for loading when seed == 0. */
TF_API tf_swin *tf_swin_new(const tf_swin_config *cfg, uint64_t seed);
TF_API void tf_swin_free(tf_swin *m);
TF_API int tf_swin_set_labels(tf_swin *m, const char *const *names, int n);
TF_API const char *tf_swin_label(const tf_swin *m, int i, char *buf, size_t n);
/* Tokens of the last stage: last_hidden_state's second dimension. */
TF_API int tf_swin_tokens(const tf_swin *m);

typedef struct {
    tf_tensor *pixel_values; /* (B,channels,image_size,image_size) F32 */
    tf_tensor *labels;       /* (B) I32 in [0,n_labels) or -100, or NULL */
    float label_smoothing;
} tf_swin_inputs;

typedef struct {
    tf_tensor *last_hidden_state; /* (B,T,width of the last stage) after the final LayerNorm */
    tf_tensor *pooler_output;     /* (B,width): its mean over the tokens */
    tf_tensor *logits;            /* (B,n_labels) */
    tf_tensor *loss;
} tf_swin_outputs;

TF_API int tf_swin_run(tf_ctx *ctx, const tf_swin *m, const tf_swin_inputs *in, tf_swin_outputs *out);
/* As tf_vit_predict. SwinForImageClassification only. */
TF_API int tf_swin_predict(const tf_swin *m, const float *x, int64_t n, int batch, int hflip, const int32_t *labels,
                           int32_t *pred, float *prob, double *loss, int64_t *correct);

/* Hugging Face folders: config.json + model.safetensors. */
TF_API tf_swin *tf_swin_load(const char *dir);
TF_API int tf_swin_save(const tf_swin *m, const char *dir);

/* ---------------------------------------------------------------- image classification (docs/vision.md) */

/* A SwinForImageClassification on labelled images: the same task as ViT's. */
typedef struct {
    tf_swin_config model;    /* channels, image_size and n_labels must fit the images */
    tf_image_recipe recipe;
} tf_swin_task_config;
TF_API tf_swin_task_config tf_swin_task_config_default(void);
TF_API extern const tf_field_table tf_swin_task_config_table;
TF_API tf_task *tf_swin_task_new(const tf_swin_task_config *c, tf_images *train, tf_images *valid, const char *run_dir,
                                 uint64_t seed);
TF_API const tf_swin *tf_swin_task_model(const tf_task *t);

#ifdef __cplusplus
}
#endif
#endif /* TFORMER_SWIN_H */
