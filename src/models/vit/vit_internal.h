/* Private to src/models: the ViT's pieces another family builds on (the captioner's
 * VisionEncoderDecoderModel reads its encoder's config from a nested object). */
#ifndef TF_VIT_INTERNAL_H
#define TF_VIT_INTERNAL_H

#include <cjson/cJSON.h>

#include "tformer/vit.h"

/* A Hugging Face ViTConfig object (root, read from path) as a checked configuration; pooler 0
 * (the folder's tensors say whether there is one). */
int tf_vit_config_from_hf(const cJSON *root, const char *path, tf_vit_config *c);

#endif
