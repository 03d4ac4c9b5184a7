/* tformer: Parameters, layers and Transformer blocks. */
#ifndef TFORMER_NN_H
#define TFORMER_NN_H

#include "ops.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------- parameters */

/* A registry of named parameters (PyTorch state-dict names). Modules register
 * their slots; the registry then allocates, initialises, loads or lists them. */
typedef struct tf_params tf_params;
TF_API tf_params *tf_params_new(void);
TF_API void tf_params_free(tf_params *ps);
/* Register a slot; the tensor is created by tf_params_init / tf_params_load.
 * init: > 0 normal with that std, TF_INIT_ZEROS or TF_INIT_ONES. */
#define TF_INIT_ZEROS 0.0f
#define TF_INIT_ONES (-1.0f)
TF_API int tf_params_add(tf_params *ps, const char *name, tf_tensor **slot, int ndim,
                  const int64_t *shape, float init);
TF_API int tf_params_count(const tf_params *ps);
TF_API const char *tf_params_name(const tf_params *ps, int i);
TF_API tf_tensor *tf_params_tensor(const tf_params *ps, int i);
TF_API tf_tensor *tf_params_get(const tf_params *ps, const char *name);
/* Allocate every slot and fill it as registered; seeds differ per parameter. */
TF_API int tf_params_init(tf_params *ps, uint64_t seed);
TF_API void tf_params_zero_grad(tf_params *ps);

/* ---------------------------------------------------------------- layers */

typedef enum { TF_ACT_RELU, TF_ACT_GELU, TF_ACT_GELU_TANH, TF_ACT_NONE } tf_activation;

typedef struct {
    tf_tensor *weight; /* (out,in), PyTorch's layout */
    tf_tensor *bias;   /* (out) or NULL */
} tf_linear;

typedef struct {
    tf_tensor *weight, *bias; /* (C) each, either may be NULL */
    float eps;
} tf_layer_norm;

typedef struct {
    int d_model, n_head;
    int kdim, vdim; /* input widths of key and value; d_model when equal */
    int bias;       /* projections have biases */
    float dropout;  /* on the attention weights, training only */
    int rel_max_offset; /* > 0: learned relative-position bias, offsets clipped to +-this */
} tf_mha_config;

typedef struct {
    tf_mha_config cfg;
    tf_tensor *in_proj_weight;  /* (3E,E) when kdim == vdim == E, else NULL */
    tf_tensor *q_proj_weight;   /* (E,E)    when the widths differ */
    tf_tensor *k_proj_weight;   /* (E,kdim) */
    tf_tensor *v_proj_weight;   /* (E,vdim) */
    tf_tensor *in_proj_bias;    /* (3E) or NULL */
    tf_linear out_proj;         /* (E,E) */
    tf_tensor *rel_bias;        /* (2*rel_max_offset+1, H) or NULL */
} tf_mha;

/* The masks of one attention, in PyTorch's conventions. */
typedef struct {
    tf_tensor *mask;             /* (Tq,Tk) or (B*H,Tq,Tk); U8 true = masked, or F32 added */
    tf_tensor *key_padding_mask; /* (B,Tk); U8 true = padding, or F32 added */
    int causal;
} tf_attn_mask;

TF_API tf_mha_config tf_mha_config_default(int d_model, int n_head);
TF_API int tf_mha_register(tf_params *ps, const char *prefix, tf_mha *m, const tf_mha_config *cfg);
/* query (B,Tq,E), key (B,Tk,kdim), value (B,Tk,vdim) -> (B,Tq,E). When weights
 * is non-NULL it receives the attention weights averaged over heads, (B,Tq,Tk). */
TF_API tf_tensor *tf_mha_forward(tf_ctx *ctx, const tf_mha *m, tf_tensor *query, tf_tensor *key,
                          tf_tensor *value, const tf_attn_mask *mask, tf_tensor **weights);

TF_API tf_tensor *tf_linear_forward(tf_ctx *ctx, const tf_linear *l, tf_tensor *x);
/* act(linear(x)) fused (tf_dense); act a tf_activation or TF_ACT_NONE */
TF_API tf_tensor *tf_linear_act_forward(tf_ctx *ctx, const tf_linear *l, tf_tensor *x, int act);
TF_API tf_tensor *tf_layer_norm_forward(tf_ctx *ctx, const tf_layer_norm *n, tf_tensor *x);

/* Positional encodings. */
/* out (T,d): PE(pos,2i) = sin(pos / 10000^(2i/d)), PE(pos,2i+1) = cos(same). */
TF_API void tf_posenc_sinusoidal(float *out, int64_t T, int64_t d);
TF_API tf_tensor *tf_posenc_sinusoidal_tensor(tf_ctx *ctx, int64_t T, int64_t d);
/* Learned absolute: rows [start, start+T) of table (max_len,d), a view sharing its gradient. */
TF_API tf_tensor *tf_posenc_learned(tf_ctx *ctx, tf_tensor *table, int64_t start, int64_t T);
/* Learned relative: table (2K+1,H) -> bias (1,H,Tq,Tk) with
 * bias[h,i,j] = table[clip(j - (i + Tk - Tq), -K, K) + K, h]. */
TF_API tf_tensor *tf_posenc_relative_bias(tf_ctx *ctx, tf_tensor *table, int64_t Tq, int64_t Tk);

/* ---------------------------------------------------------------- Transformer layers */

typedef struct {
    int d_model, n_head, d_ff;
    tf_activation activation;
    float norm_eps;
    float dropout;
    int norm_first; /* 0: post-LN X <- LN(X + f(X)) (the original paper); 1: pre-LN */
    int bias;       /* linear and LayerNorm biases */
} tf_layer_config;

typedef struct {
    tf_mha self_attn;
    tf_linear linear1, linear2;
    tf_layer_norm norm1, norm2;
} tf_encoder_layer;

typedef struct {
    tf_mha self_attn, multihead_attn;
    tf_linear linear1, linear2;
    tf_layer_norm norm1, norm2, norm3;
} tf_decoder_layer;

typedef struct {
    int num_layers;
    tf_encoder_layer *layers;
    tf_layer_norm norm; /* final LayerNorm; norm.weight NULL when absent */
    int has_norm;
} tf_encoder;

typedef struct {
    int num_layers;
    tf_decoder_layer *layers;
    tf_layer_norm norm;
    int has_norm;
} tf_decoder;

typedef struct {
    tf_encoder encoder;
    tf_decoder decoder;
} tf_transformer;

/* PyTorch's defaults: d_ff 2048, relu, eps 1e-5, post-LN, biases, dropout 0. */
TF_API tf_layer_config tf_layer_config_default(int d_model, int n_head);

/* Parameters get PyTorch's names under prefix ("" or "layers.0." ...). */
TF_API int tf_encoder_layer_register(tf_params *ps, const char *prefix, tf_encoder_layer *l,
                              const tf_layer_config *cfg);
TF_API int tf_decoder_layer_register(tf_params *ps, const char *prefix, tf_decoder_layer *l,
                              const tf_layer_config *cfg);
/* The stacks allocate their layer arrays; free them with tf_encoder_free / tf_decoder_free. */
TF_API int tf_encoder_register(tf_params *ps, const char *prefix, tf_encoder *e,
                        const tf_layer_config *cfg, int num_layers, int final_norm);
TF_API int tf_decoder_register(tf_params *ps, const char *prefix, tf_decoder *d,
                        const tf_layer_config *cfg, int num_layers, int final_norm);
TF_API int tf_transformer_register(tf_params *ps, const char *prefix, tf_transformer *t,
                            const tf_layer_config *cfg, int num_encoder_layers,
                            int num_decoder_layers);
TF_API void tf_encoder_free(tf_encoder *e);
TF_API void tf_decoder_free(tf_decoder *d);
TF_API void tf_transformer_free(tf_transformer *t);

/* All activations are batch-first: x (B,T,d_model). */
TF_API tf_tensor *tf_encoder_layer_forward(tf_ctx *ctx, const tf_encoder_layer *l,
                                    const tf_layer_config *cfg, tf_tensor *x,
                                    const tf_attn_mask *self_mask);
TF_API tf_tensor *tf_decoder_layer_forward(tf_ctx *ctx, const tf_decoder_layer *l,
                                    const tf_layer_config *cfg, tf_tensor *x, tf_tensor *memory,
                                    const tf_attn_mask *self_mask, const tf_attn_mask *cross_mask);
TF_API tf_tensor *tf_encoder_forward(tf_ctx *ctx, const tf_encoder *e, const tf_layer_config *cfg,
                              tf_tensor *x, const tf_attn_mask *self_mask);
TF_API tf_tensor *tf_decoder_forward(tf_ctx *ctx, const tf_decoder *d, const tf_layer_config *cfg,
                              tf_tensor *x, tf_tensor *memory, const tf_attn_mask *self_mask,
                              const tf_attn_mask *cross_mask);
/* src (B,S,d), tgt (B,T,d) -> (B,T,d). */
TF_API tf_tensor *tf_transformer_forward(tf_ctx *ctx, const tf_transformer *t, const tf_layer_config *cfg,
                                  tf_tensor *src, tf_tensor *tgt, const tf_attn_mask *src_mask,
                                  const tf_attn_mask *tgt_mask, const tf_attn_mask *memory_mask);

#ifdef __cplusplus
}
#endif
#endif /* TFORMER_NN_H */
