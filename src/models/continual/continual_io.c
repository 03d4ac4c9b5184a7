/* Continual model folders: config.json ({"model_type": "continual"} and the
 * tf_coenc_config table's keys) and model.safetensors. */
#include <stdio.h>
#include <string.h>

#include "../model_folder.h"
#include "tformer/continual.h"

#define MODEL_TYPE "continual"

int tf_coenc_load(const char *dir, int window, tf_params *ps, tf_coenc *e) {
    tf_coenc_config c;
    memset(e, 0, sizeof *e);
    if (tf_folder_read_config(dir, MODEL_TYPE, tf_coenc_config_fields(), &c)) return -1;
    if (window >= 0) c.window = window;
    if (tf_coenc_register(ps, "", e, &c) || tf_folder_load_weights(dir, ps)) {
        char msg[1024];
        snprintf(msg, sizeof msg, "%s", tf_error());
        return tf_set_error("%s: %s", dir, msg);
    }
    return 0;
}

int tf_coenc_save(const char *dir, const tf_coenc *e, const tf_params *ps) {
    return tf_folder_save(dir, MODEL_TYPE, tf_coenc_config_fields(), &e->cfg, ps);
}
