/* Private to src/models: tformer's own model folders (families without a
 * Hugging Face layout to follow): config.json = {"model_type": TYPE, the
 * configuration table's keys} and model.safetensors under the parameters'
 * names, loaded strictly (a missing, misshapen or unknown tensor is refused
 * by name). */
#ifndef TF_MODEL_FOLDER_H
#define TF_MODEL_FOLDER_H

#include "../util/util.h"

/* cfg (of table t) from dir/config.json, defaults first; another or no model_type is an error. */
int tf_folder_read_config(const char *dir, const char *type, const tf_field_table *t, void *cfg);
/* dir/model.safetensors into ps (registered, not yet allocated). */
int tf_folder_load_weights(const char *dir, tf_params *ps);
/* dir (created if missing): config.json and model.safetensors. */
int tf_folder_save(const char *dir, const char *type, const tf_field_table *t, const void *cfg, const tf_params *ps);

#endif
