/* An encoder-decoder as a folder: config.json (the configuration table's
 * keys, model_type "tformer-seq2seq") and model.safetensors under the
 * BART / Marian parameter names. (Reading real Marian folders is a name map
 * and their settings on top of this: next.) */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "../../util/util.h"
#include "tformer/seq2seq.h"

#define MODEL_TYPE "tformer-seq2seq"

static int read_config(const char *path, tf_seq2seq_config *c) {
    cJSON *root = tf_json_read(path);
    if (!root) return -1;
    const cJSON *type = cJSON_GetObjectItemCaseSensitive(root, "model_type");
    tf_fields f = {&tf_seq2seq_config_table, c};
    int rc = 0;
    if (!cJSON_IsString(type) || strcmp(type->valuestring, MODEL_TYPE))
        rc = tf_set_error("%s: model_type %s%s%s, expected \"" MODEL_TYPE "\"", path, cJSON_IsString(type) ? "\"" : "",
                          cJSON_IsString(type) ? type->valuestring : "missing", cJSON_IsString(type) ? "\"" : "");
    if (!rc) rc = tf_fields_defaults(&f, 1) || tf_fields_from_json(root, &f, 1, path, 1) ? -1 : 0;
    cJSON_Delete(root);
    return rc;
}

static int load_weights(tf_seq2seq *m, const char *path) {
    tf_st_file *f = tf_st_open(path);
    if (!f) return -1;
    tf_params *ps = m->params;
    int rc = tf_params_alloc(ps); /* every tensor is then overwritten */
    for (int i = 0; !rc && i < tf_params_count(ps); i++) {
        const char *name = tf_params_name(ps, i);
        const tf_st_entry *e = tf_st_find(f, name);
        tf_tensor *t = tf_params_tensor(ps, i);
        int same = e && e->ndim == t->ndim;
        for (int d = 0; same && d < t->ndim; d++) same = e->shape[d] == t->shape[d];
        if (!e) rc = tf_set_error("%s: missing tensor '%s'", path, name);
        else if (!same) rc = tf_set_error("%s: tensor '%s' has the wrong shape for config.json", path, name);
        else rc = tf_st_read_f32(f, e, t);
    }
    for (int i = 0; !rc && i < tf_st_count(f); i++)
        if (!tf_params_get(ps, tf_st_entry_at(f, i)->name))
            rc = tf_set_error("%s: unexpected tensor '%s'", path, tf_st_entry_at(f, i)->name);
    tf_st_close(f);
    return rc;
}

tf_seq2seq *tf_seq2seq_load(const char *dir) {
    char path[4096];
    tf_seq2seq_config c;
    snprintf(path, sizeof path, "%s/config.json", dir);
    if (read_config(path, &c)) return NULL;
    tf_seq2seq *m = tf_seq2seq_new(&c, 0);
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    if (m && load_weights(m, path)) {
        tf_seq2seq_free(m);
        return NULL;
    }
    return m;
}

int tf_seq2seq_save(const tf_seq2seq *m, const char *dir) {
    if (mkdir(dir, 0755) && errno != EEXIST) return tf_set_error("%s: cannot create: %s", dir, strerror(errno));
    char path[4096];
    snprintf(path, sizeof path, "%s/config.json", dir);
    tf_fields f = {&tf_seq2seq_config_table, (void *)&m->cfg};
    cJSON *r = cJSON_CreateObject();
    int rc = !r || !cJSON_AddStringToObject(r, "model_type", MODEL_TYPE) || tf_fields_to_json(r, &f, 1) ||
             tf_json_write(path, r);
    cJSON_Delete(r);
    if (rc) return -1;
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    return tf_params_save(m->params, path);
}
