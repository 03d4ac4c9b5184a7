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
    tf_layer_config layer; /* every other module */
    int num_layers;        /* TR_ENCODER, TR_DECODER */
    int num_encoder_layers, num_decoder_layers;
} tr_config;

int tr_config_load(const char *path, tr_config *c, FILE *log);
const char *tr_module_name(tr_module m);

#endif
