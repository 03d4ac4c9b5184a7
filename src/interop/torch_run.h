/* Private: `tformer torch-run`, split into config parsing and running. */
#ifndef TF_TORCH_RUN_H
#define TF_TORCH_RUN_H

#include "../core/internal.h"

typedef enum {
    TR_MHA, TR_ENCODER_LAYER, TR_DECODER_LAYER, TR_ENCODER, TR_DECODER, TR_TRANSFORMER,
    TR_MODULE_COUNT
} tr_module;

typedef struct {
    tr_module kind;
    int batch_first;
    tf_mha_config mha;     /* TR_MHA */
    tf_block_config layer; /* every other module */
    int num_layers;        /* TR_ENCODER, TR_DECODER */
    int num_encoder_layers, num_decoder_layers;
    /* Accepted but not used: dropout is treated as 0 (runs are deterministic);
     * add_bias_kv and add_zero_attn must be false. */
    float dropout;
    int add_bias_kv, add_zero_attn, enable_nested_tensor, mask_check;
    char device[32], dtype[32];
} tr_config;

int tr_config_load(const char *path, tr_config *c, FILE *log);
const char *tr_module_name(tr_module m);

#endif
