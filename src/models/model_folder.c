/* tformer's own model folders (model_folder.h): the encoder-decoder and the
 * RNN baseline read and write theirs here. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "model_folder.h"

int tf_folder_read_config(const char *dir, const char *type, const tf_field_table *t, void *cfg) {
    char path[4096];
    snprintf(path, sizeof path, "%s/config.json", dir);
    cJSON *root = tf_json_read(path);
    if (!root) return -1;
    const cJSON *mt = cJSON_GetObjectItemCaseSensitive(root, "model_type");
    tf_fields f = {t, cfg};
    int rc = 0, named = cJSON_IsString(mt);
    if (!named || strcmp(mt->valuestring, type))
        rc = tf_set_error("%s: model_type %s%s%s, expected \"%s\"", path, named ? "\"" : "", named ? mt->valuestring : "missing",
                          named ? "\"" : "", type);
    if (!rc) rc = tf_fields_defaults(&f, 1) || tf_fields_from_json(root, &f, 1, path, 1) ? -1 : 0;
    cJSON_Delete(root);
    return rc;
}

int tf_folder_load_weights(const char *dir, tf_params *ps) {
    char path[4096];
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    tf_st_file *f = tf_st_open(path);
    if (!f) return -1;
    int rc = tf_params_load(ps, f, 1);
    tf_st_close(f);
    if (rc) {
        char msg[1024];
        snprintf(msg, sizeof msg, "%s", tf_error());
        return tf_set_error("%s: %s", path, msg);
    }
    return 0;
}

int tf_folder_save(const char *dir, const char *type, const tf_field_table *t, const void *cfg, const tf_params *ps) {
    if (mkdir(dir, 0755) && errno != EEXIST) return tf_set_error("%s: cannot create: %s", dir, strerror(errno));
    char path[4096];
    snprintf(path, sizeof path, "%s/config.json", dir);
    tf_fields f = {t, (void *)cfg};
    cJSON *r = cJSON_CreateObject();
    int rc = !r || !cJSON_AddStringToObject(r, "model_type", type) || tf_fields_to_json(r, &f, 1) || tf_json_write(path, r);
    cJSON_Delete(r);
    if (rc) return -1;
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    return tf_params_save(ps, path);
}
