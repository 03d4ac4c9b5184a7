/* Continual model folders: config.json ({"model_type": "continual"} and the
 * tf_continual_config table's keys) and model.safetensors. */
#include <stdio.h>
#include <string.h>

#include "../model_folder.h"
#include "tformer/continual.h"

#define MODEL_TYPE "continual"

int tf_continual_load(const char *dir, int window, tf_continual *e) {
    tf_continual_config c;
    memset(e, 0, sizeof *e);
    if (tf_folder_read_config(dir, MODEL_TYPE, tf_continual_config_fields(), &c)) return -1;
    if (window >= 0) c.window = window;
    tf_params *ps = tf_params_new();
    if (!ps) return tf_set_error("%s: out of memory", dir);
    if (tf_continual_register(ps, "", e, &c) || tf_folder_load_weights(dir, ps)) {
        char msg[1024];
        snprintf(msg, sizeof msg, "%s", tf_error());
        tf_continual_free(e), tf_params_free(ps);
        return tf_set_error("%s: %s", dir, msg);
    }
    e->params = ps;
    return 0;
}

int tf_continual_save(const char *dir, const tf_continual *e, const tf_params *ps) {
    return tf_folder_save(dir, MODEL_TYPE, tf_continual_config_fields(), &e->cfg, ps ? ps : e->params);
}
