/* tformer: the Video Vision Transformer (ViViT, Arnab et al. 2021): a clip
 * of num_frames frames cut into non-overlapping tubelets (tubelet
 * embedding) or each frame into patches (uniform frame sampling: tubelets
 * one frame long), each embedded linearly, then one of four encoders made
 * of the one Transformer block (pre-LN):
 *   Model 1, joint: a class token and learned positions over all
 *     spatio-temporal tokens, one encoder (Hugging Face's VivitModel /
 *     VivitForVideoClassification, with their parameter names);
 *   Model 2, factorised encoder: a spatial encoder per frame (its class
 *     token, positions, final LayerNorm), then a temporal encoder over the
 *     frames' class-token states (its own class token and positions);
 *   Model 3, factorised self-attention: positions over all tokens, no class
 *     token; inside each block attention within each frame, then across the
 *     frames at each place, then the MLP; the mean of the final states is
 *     classified;
 *   Model 4, factorised dot-product attention: as Model 3 but one attention
 *     per block (Model 1's parameters, less the class token): half the heads
 *     attend within each frame, half within each place across the frames,
 *     their outputs side by side through the one output projection.
 * docs/video.md. */
#ifndef TFORMER_VIVIT_H
#define TFORMER_VIVIT_H

#include "config.h"
#include "heads.h"
#include "nn.h"
#include "images.h"
#include "task.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
    TF_VIVIT_BODY,     /* VivitModel: last_hidden_state, pooler_output (with a pooler) */
    TF_VIVIT_VIDEO_CLS /* VivitForVideoClassification: n_labels logits */
} tf_vivit_head;

typedef enum {
    TF_VIVIT_TUBELET, /* tubelet_t x tubelet_h x tubelet_w tubes */
    TF_VIVIT_FRAME    /* uniform frame sampling: each frame's tubelet_h x tubelet_w patches (tubelet_t unused) */
} tf_vivit_embedding;

typedef struct {
    int image_size, num_frames, channels;  /* clips of num_frames frames, channels x image_size x image_size */
    int tubelet_t, tubelet_h, tubelet_w;   /* Hugging Face's tubelet_size [t, h, w] */
    tf_vivit_embedding embedding;
    int model_kind;                        /* 1 joint, 2 factorised encoder, 3 factorised self-attention,
                                            * 4 factorised dot-product attention (n_head even) */
    int n_layer, n_layer_temporal;         /* blocks (Model 2: of the spatial encoder; then the temporal one's) */
    int n_head, d_model, d_ff;
    tf_activation activation;              /* Hugging Face's hidden_act: gelu_fast (tanh) */
    float norm_eps;                        /* layer_norm_eps: 1e-6 */
    float dropout, attn_dropout;
    int qkv_bias;
    tf_vivit_head head;
    int n_labels;
    int pooler;                            /* VivitModel's tanh pooler over the class token (Models 1, 2) */
    float init_std;
} tf_vivit_config;

TF_API tf_vivit_config tf_vivit_config_default(void);
TF_API int tf_vivit_config_check(const tf_vivit_config *c);
TF_API extern const tf_field_table tf_vivit_config_table;
/* The time extent of a tube: tubelet_t, or 1 with frame embedding. */
TF_API int tf_vivit_tube_t(const tf_vivit_config *c);
/* Tubes per frame group (spatial tokens S) and frame groups (F): F*S tokens embedded. */
TF_API int tf_vivit_spatial_tokens(const tf_vivit_config *c);
TF_API int tf_vivit_time_tokens(const tf_vivit_config *c);
TF_API const char *tf_vivit_head_name(tf_vivit_head h);
TF_API int tf_vivit_head_from_name(const char *name);

typedef struct {
    tf_layer_norm norm;     /* the encoder's final LayerNorm */
    tf_block *layer;        /* its blocks */
    tf_tensor *cls_token;   /* (1,1,d_model), or NULL (Model 3) */
    tf_tensor *position;    /* (1,tokens,d_model) */
} tf_vivit_encoder;

typedef struct {
    tf_vivit_config cfg;
    tf_block_config block;      /* pre-LN; Model 3: factorised */
    tf_params *params;          /* every tensor, by name ("vivit." prefix with a head) */
    tf_tensor *patch_w, *patch_b; /* (d_model,C,t,h,w), (d_model) */
    tf_vivit_encoder enc;       /* Model 1, 3: the encoder; Model 2: the spatial one */
    tf_vivit_encoder time_enc;  /* Model 2: the temporal encoder */
    tf_pooler pooler;
    tf_classifier cls;
    char **labels;
} tf_vivit;

TF_API tf_vivit *tf_vivit_new(const tf_vivit_config *cfg, uint64_t seed);
TF_API void tf_vivit_free(tf_vivit *m);
TF_API int tf_vivit_set_labels(tf_vivit *m, const char *const *names, int n);
TF_API const char *tf_vivit_label(const tf_vivit *m, int i, char *buf, size_t n);

/* VivitForVideoClassification.forward()'s inputs. */
typedef struct {
    tf_tensor *pixel_values;  /* (B,num_frames,channels,image_size,image_size) F32 */
    tf_tensor *labels;        /* (B) I32 in [0,n_labels) or -100, or NULL */
    float label_smoothing;
} tf_vivit_inputs;

typedef struct {
    tf_tensor *last_hidden_state; /* (B,tokens,d_model) after the final LayerNorm (Model 2: the temporal encoder's) */
    tf_tensor *pooler_output;     /* (B,d_model) */
    tf_tensor *logits;            /* (B,n_labels) */
    tf_tensor *loss;
} tf_vivit_outputs;

TF_API int tf_vivit_run(tf_ctx *ctx, const tf_vivit *m, const tf_vivit_inputs *in, tf_vivit_outputs *out);

/* Predictions for clips x (n, num_frames, channels, S, S), as tf_vit_predict. */
TF_API int tf_vivit_predict(const tf_vivit *m, const float *x, int64_t n, int batch, const int32_t *labels,
                            int32_t *pred, float *prob, double *loss, int64_t *correct);

/* Folders: Model 1 as Hugging Face's (model_type "vivit", config.json keys of
 * VivitConfig); Models 2 and 3 as tformer's own (model_type "tformer-vivit",
 * the field table's keys), which transformers refuses rather than misreads. */
TF_API tf_vivit *tf_vivit_load(const char *dir);
TF_API int tf_vivit_save(const tf_vivit *m, const char *dir);

/* ---------------------------------------------------------------- video classification (docs/video.md) */

/* A ViViT (VivitForVideoClassification, any model kind and embedding) on
 * moving-object clips made from labelled images (tf_clips_loader_new): the
 * clips' canvas and frames are the model's image_size and num_frames. */
typedef struct {
    tf_vivit_config model;   /* n_labels must be the clip labels' classes */
    float val_fraction;      /* the last part of the images, held out for the validation clips */
    int val_clips;           /* validation clips */
    float label_smoothing;
    int object_size;         /* the image drawn at this size; 0: its own */
    float speed;             /* pixels per frame */
    tf_clip_label labels;    /* direction, or class and direction */
    int shuffle_frames;      /* the control: each clip's frames in a random order */
} tf_vivit_task_config;
TF_API tf_vivit_task_config tf_vivit_task_config_default(void);
TF_API extern const tf_field_table tf_vivit_task_config_table;
/* The task: *images (labelled, one channel or more) moved into it (emptied,
 * also on failure), the last val_fraction held out; validation metric
 * "accuracy". */
TF_API tf_task *tf_vivit_task_new(const tf_vivit_task_config *c, tf_images *images, const char *run_dir, uint64_t seed);
TF_API const tf_vivit *tf_vivit_task_model(const tf_task *t);
TF_API int64_t tf_vivit_task_clips(const tf_task *t, tf_subset subset); /* validation: val_clips; training: 0 */

#ifdef __cplusplus
}
#endif
#endif /* TFORMER_VIVIT_H */
