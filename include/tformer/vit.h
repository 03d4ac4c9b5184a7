/* tformer: the Vision Transformer (ViT): an image cut into PxP patches, each
 * embedded linearly, a learned class token before them, learned positions
 * added, the one Transformer block (pre-LN), a final LayerNorm and a
 * classifier on the class token; laid out as Hugging Face's ViTModel /
 * ViTForImageClassification with their parameter names (docs/vision.md). */
#ifndef TFORMER_VIT_H
#define TFORMER_VIT_H

#include "config.h"
#include "heads.h"
#include "nn.h"
#include "images.h"
#include "task.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Which head sits on the encoder: Hugging Face's architectures. */
typedef enum {
    TF_VIT_BODY,     /* ViTModel: last_hidden_state, pooler_output (with a pooler) */
    TF_VIT_IMAGE_CLS /* ViTForImageClassification: the class token's final state -> n_labels */
} tf_vit_head;

/* How pixels become tokens. */
typedef enum {
    TF_VIT_STEM_PATCH, /* one PxP convolution of stride P (Hugging Face's ViTPatchEmbeddings) */
    TF_VIT_STEM_CONV   /* Xiao et al. 2021: log2(P) 3x3 convolutions of stride 2 with ReLUs, then a 1x1 one
                        * (stem_depth > 1: each followed by stem_depth - 1 of stride 1 at its width) */
} tf_vit_stem;

#define TF_VIT_MAX_STEM 32 /* 3x3 convolutions of a stem at most (log2(patch_size) x stem_depth) */

typedef struct {
    int image_size, patch_size, channels; /* square images of channels x image_size x image_size */
    tf_vit_stem stem;
    int stem_width;                       /* conv stem: the first 3x3 convolution's outputs, doubled by each
                                           * next halving; 0: max(1, d_model / patch_size) */
    int stem_depth;                       /* conv stem: 3x3 convolutions per halving, the first of stride 2, the
                                           * others of stride 1 at its width (1: Xiao et al.'s stem) */
    int n_layer, n_head, d_model, d_ff;
    tf_activation activation;             /* Hugging Face's hidden_act: gelu (erf) */
    float norm_eps;                       /* layer_norm_eps: 1e-12 */
    float dropout, attn_dropout;          /* hidden_dropout_prob, attention_probs_dropout_prob */
    float drop_path;                      /* stochastic depth while training: block l's rate is
                                           * tf_vit_drop_path(cfg, l), 0 at the first, this at the last */
    int qkv_bias;                         /* q, k, v projections have biases */
    tf_vit_head head;
    int n_labels;                         /* ViTForImageClassification */
    tf_pooling pooling;                   /* what its classifier reads: TF_POOL_CLS (the class token, Hugging
                                           * Face's), TF_POOL_MEAN (the patch tokens' mean) or TF_POOL_SEQ
                                           * (their mean weighted by a learned score, tf_seq_pool) */
    int pooler;                           /* ViTModel's tanh pooler over the class token */
    float init_std;                       /* initializer_range */
    int lsa;                              /* locality self-attention in every block (tf_mha_config's lsa) */
} tf_vit_config;

/* The field table's defaults: Fashion-MNIST's shape (28x28, one channel, 10
 * labels), patch 4, 4 layers of 4 heads, d_model 64, d_ff 4 d_model, erf
 * GELU, eps 1e-12, no dropout, qkv biases, ViTForImageClassification. */
TF_API tf_vit_config tf_vit_config_default(void);
/* 0, or -1 with a message naming the field. */
TF_API int tf_vit_config_check(const tf_vit_config *c);
TF_API extern const tf_field_table tf_vit_config_table;
/* Block l's drop-path rate: timm's torch.linspace(0, drop_path, n_layer)[l] in float32. */
TF_API float tf_vit_drop_path(const tf_vit_config *c, int l);
/* Patches of an image: (image_size / patch_size)^2 (a remainder is not seen, as Conv2d). */
TF_API int tf_vit_patches(const tf_vit_config *c);
/* The conv stem's 3x3 convolutions (log2(patch_size) x stem_depth; 0 for the
 * patch stem) and the outputs of the i-th: stem_width (or its default) times
 * 2^(i / stem_depth). The i-th has stride 2 when i is a multiple of stem_depth
 * (it halves the grid), 1 otherwise. */
TF_API int tf_vit_stem_convs(const tf_vit_config *c);
TF_API int tf_vit_stem_channels(const tf_vit_config *c, int i);
/* "ViTModel", "ViTForImageClassification" and back (-1 when unknown). */
TF_API const char *tf_vit_head_name(tf_vit_head h);
TF_API int tf_vit_head_from_name(const char *name);

typedef struct {
    tf_vit_config cfg;
    tf_block_config block; /* pre-LN, separate q/k/v: derived from cfg */
    tf_params *params;     /* every tensor, by Hugging Face name ("vit." prefix with a head) */
    tf_tensor *cls_token;  /* (1,1,d_model) */
    tf_tensor *position;   /* (1,N+1,d_model): the class token's position, then the patches' */
    tf_tensor *patch_w, *patch_b; /* (d_model,C,P,P), (d_model): patch_embeddings.projection;
                                   * conv stem: (d_model,c,1,1), (d_model): stem.projection (the 1x1) */
    int n_stem;                   /* conv stem: its 3x3 convolutions, tf_vit_stem_convs */
    tf_tensor *stem_w[TF_VIT_MAX_STEM], *stem_b[TF_VIT_MAX_STEM]; /* conv stem: stem.conv<i> (c_i,c_{i-1},3,3), (c_i) */
    tf_block *layer;       /* n_layer blocks */
    tf_layer_norm norm;    /* layernorm: the final one */
    tf_pooler pooler;      /* BODY with cfg.pooler */
    tf_classifier cls;     /* IMAGE_CLS: classifier */
    tf_seq_pool pool;      /* pooling seq: pooling.score */
    char **labels;         /* n_labels names (id2label), or NULL */
} tf_vit;

/* A model initialised as Hugging Face does (N(0, init_std^2), biases 0,
 * LayerNorms 1), or with its tensors left for loading when seed == 0. */
TF_API tf_vit *tf_vit_new(const tf_vit_config *cfg, uint64_t seed);
TF_API void tf_vit_free(tf_vit *m);
/* Name the labels (copied; n must be cfg.n_labels); label i's name or "LABEL_<i>" in buf. */
TF_API int tf_vit_set_labels(tf_vit *m, const char *const *names, int n);
TF_API const char *tf_vit_label(const tf_vit *m, int i, char *buf, size_t n);

/* The inputs of one forward pass, named as ViTForImageClassification.forward()'s. */
typedef struct {
    tf_tensor *pixel_values;  /* (B,channels,image_size,image_size) F32 */
    tf_tensor *labels;        /* (B) I32 in [0,n_labels) or -100 (ignored), or NULL */
    float label_smoothing;    /* of the loss: 0 is Hugging Face's */
    int output_attentions;    /* fill outputs.attentions (the scores are then materialised, not fused) */
} tf_vit_inputs;

/* Its outputs, by Hugging Face's field names; NULL when not computed. */
typedef struct {
    tf_tensor *last_hidden_state; /* (B,N+1,d_model), after the final LayerNorm */
    tf_tensor *pooler_output;     /* (B,d_model) */
    tf_tensor *logits;            /* (B,n_labels) */
    tf_tensor *loss;              /* scalar, with labels: the mean cross-entropy */
    tf_tensor **attentions;       /* with output_attentions: n_layer tensors (B,H,N+1,N+1), each layer's
                                   * self-attention probabilities (before dropout), rows sum to 1 */
    tf_tensor *pool_weights;      /* pooling seq: (B,N), each patch token's weight in the pooled vector */
} tf_vit_outputs;

TF_API int tf_vit_run(tf_ctx *ctx, const tf_vit *m, const tf_vit_inputs *in, tf_vit_outputs *out);

/* Where image b looks, from the outputs of a run with output_attentions:
 * the attention rollout (Abnar & Zuidema, 2020: R = Ã_L ... Ã_1 with
 * Ã = (mean over heads of A + I) / 2, rows renormalised), the row of what the
 * classifier reads over the N patches into rollout (N); and, heads not NULL,
 * the last layer's such row of each head over the patches into heads (H,N).
 * The row read: the class token's; with mean or seq pooling, the patch
 * tokens' rows weighted as the pooling weighs them. */
TF_API int tf_vit_attention_rollout(const tf_vit *m, const tf_vit_outputs *out, int64_t b, float *rollout,
                                    float *heads);

/* Predictions for images x (n, channels, image_size, image_size), `batch` at
 * a time (0: 256): the likeliest label of each into pred (n) and, when prob is
 * not NULL, its softmax probability (n); with labels (n) given (-100 ignored),
 * *loss receives the mean cross-entropy and *correct the right predictions.
 * hflip 1: test-time augmentation, each image's class probabilities averaged
 * with those of its mirror image (left-right; two forward passes).
 * ViTForImageClassification only. */
TF_API int tf_vit_predict(const tf_vit *m, const float *x, int64_t n, int batch, int hflip, const int32_t *labels,
                          int32_t *pred, float *prob, double *loss, int64_t *correct);

/* Hugging Face folders: config.json + model.safetensors. Keys of ViTConfig
 * that change the arithmetic and that tformer lacks are refused by name.
 * tformer's own folders (model_type "tformer-vit": a conv stem) load too. */
TF_API tf_vit *tf_vit_load(const char *dir);
/* Writes config.json and model.safetensors into dir (created if missing) as
 * Hugging Face's ViT; a conv stem is refused (ViTModel has none). */
TF_API int tf_vit_save_hf(const tf_vit *m, const char *dir);
/* Hugging Face's folder for the patch stem, tformer's own (model_type
 * "tformer-vit", the field table's keys) for the conv stem. */
TF_API int tf_vit_save(const tf_vit *m, const char *dir);

/* ---------------------------------------------------------------- image classification (docs/vision.md) */

/* Image classification's data handling and DeiT's recipe, shared by the
 * ViT and Swin tasks: its rows flat beside the model's and the trainer's. */
typedef struct {
    float val_fraction;      /* without a validation set: the last part of the training images */
    float label_smoothing;   /* 0.1 (DeiT) */
    int shift;               /* training images moved by up to this many pixels (0: none) */
    float hflip;             /* training images mirrored left-right with this probability (0: none) */
    char label_names[2048];  /* comma-separated class names for the folder's id2label; "": LABEL_<i> */
    /* DeiT's recipe (docs/vision.md), each off by default; DeiT's value in brackets */
    int randaug_ops;         /* RandAugment's ops per image (2); 0: none */
    float randaug_magnitude; /* (9) */
    float randaug_mstd;      /* (0.5) */
    float mixup, cutmix;     /* Beta(alpha, alpha) of mixup (0.8) and cutmix (1); 0: none */
    float mix_prob;          /* a batch is mixed with this probability (1) */
    float switch_prob;       /* with both: cutmix rather than mixup (0.5) */
    float erase_prob;        /* random erasing (0.25) */
    tf_erase_mode erase_mode;/* its values (pixel) */
    int repeats;             /* repeated augmentation (3); 1: none */
    float ema_decay;         /* EMA of the weights, evaluated and saved as the model (0.99996); 0: none */
} tf_image_recipe;
TF_API extern const tf_field_table tf_image_recipe_table;

/* A ViTForImageClassification on labelled images: cross-entropy with label
 * smoothing, validation accuracy. */
typedef struct {
    tf_vit_config model;     /* channels, image_size and n_labels must fit the images */
    tf_image_recipe recipe;
} tf_vit_task_config;
TF_API tf_vit_task_config tf_vit_task_config_default(void);
TF_API extern const tf_field_table tf_vit_task_config_table;
/* The task: *train (and *valid, or NULL: the last val_fraction of train held
 * out) moved into it (the caller's structs are emptied, also on failure); the
 * model initialised from seed; validation metric "accuracy" (run_dir/best/:
 * the highest). The images must be square, of the model's channels and size,
 * labelled in [0,n_labels). */
TF_API tf_task *tf_vit_task_new(const tf_vit_task_config *c, tf_images *train, tf_images *valid, const char *run_dir,
                                uint64_t seed);
TF_API const tf_vit *tf_vit_task_model(const tf_task *t);
/* Images of a subset (of a ViT or a Swin task). */
TF_API int64_t tf_vit_task_images(const tf_task *t, tf_subset subset);

#ifdef __cplusplus
}
#endif
#endif /* TFORMER_VIT_H */
