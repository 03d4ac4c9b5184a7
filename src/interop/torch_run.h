/* Private: `tformer torch-run`, split into config parsing and running. */
#ifndef TF_TORCH_RUN_H
#define TF_TORCH_RUN_H

#include "tformer/continual.h"

typedef enum {
    TR_MHA, TR_ENCODER_LAYER, TR_DECODER_LAYER, TR_ENCODER, TR_DECODER, TR_TRANSFORMER,
    TR_CO_RETRO, TR_CO_SINGLE, TR_CO_ENCODER, /* continual-inference's modules (src/interop/torch_continual.c) */
    TR_MODULE_COUNT
} tr_module;

typedef struct {
    tr_module kind;
    int batch_first;
    tf_mha_config mha;     /* TR_MHA */
    tf_block_config layer; /* every other module */
    int num_layers;        /* TR_ENCODER, TR_DECODER */
    int num_encoder_layers, num_decoder_layers;
    int sequence_len;      /* continual modules: the window n */
    /* Accepted but not used: dropout is treated as 0 (runs are deterministic);
     * add_bias_kv and add_zero_attn must be false. */
    float dropout;
    int add_bias_kv, add_zero_attn, enable_nested_tensor, mask_check;
    char device[32], dtype[32];
} tr_config;

int tr_config_load(const char *path, tr_config *c, FILE *log);

/* continual-inference's modules: registration under its state_dict names, and
 * forward_steps over the whole stream computed step by step. */
typedef struct {
    tf_mha mha;
    tf_continual enc;
} tr_continual;
int tr_continual_register(tf_params *ps, const tr_config *c, tr_continual *w);
void tr_continual_free(const tr_config *c, tr_continual *w);
/* x: query (B,T,E) or input (B,C,T) -> (B,T-n+1,n,E), (B,T-n+1,E) or (B,C,T-n+1). */
tf_tensor *tr_continual_forward(tf_ctx *ctx, const tr_config *c, const tr_continual *w, tf_tensor *x,
                                const char *path);
const char *tr_module_name(tr_module m);

#endif
