/* The RNN encoder-decoder as a folder: config.json (the configuration
 * table's keys, model_type "tformer-rnn-seq2seq") and model.safetensors,
 * loaded strictly (a missing, misshapen or unknown tensor is refused by name). */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "../../util/util.h"
#include "tformer/rnn_seq2seq.h"

#define MODEL_TYPE "tformer-rnn-seq2seq"

static int read_config(const char *path, tf_rnn_seq2seq_config *c) {
    cJSON *root = tf_json_read(path);
    if (!root) return -1;
    const cJSON *type = cJSON_GetObjectItemCaseSensitive(root, "model_type");
    tf_fields f = {&tf_rnn_seq2seq_config_table, c};
    int rc = 0;
    if (!cJSON_IsString(type) || strcmp(type->valuestring, MODEL_TYPE))
        rc = tf_set_error("%s: model_type %s%s%s, expected \"" MODEL_TYPE "\"", path, cJSON_IsString(type) ? "\"" : "",
                          cJSON_IsString(type) ? type->valuestring : "missing", cJSON_IsString(type) ? "\"" : "");
    if (!rc) rc = tf_fields_defaults(&f, 1) || tf_fields_from_json(root, &f, 1, path, 1) ? -1 : 0;
    cJSON_Delete(root);
    return rc;
}

tf_rnn_seq2seq *tf_rnn_seq2seq_load(const char *dir) {
    char path[4096];
    tf_rnn_seq2seq_config c;
    snprintf(path, sizeof path, "%s/config.json", dir);
    if (read_config(path, &c)) return NULL;
    tf_rnn_seq2seq *m = tf_rnn_seq2seq_new(&c, 0);
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    tf_st_file *f = m ? tf_st_open(path) : NULL;
    int rc = !f || tf_params_load(m->params, f, 1);
    tf_st_close(f);
    if (rc) {
        tf_rnn_seq2seq_free(m);
        return NULL;
    }
    return m;
}

int tf_rnn_seq2seq_save(const tf_rnn_seq2seq *m, const char *dir) {
    if (mkdir(dir, 0755) && errno != EEXIST) return tf_set_error("%s: cannot create: %s", dir, strerror(errno));
    char path[4096];
    snprintf(path, sizeof path, "%s/config.json", dir);
    tf_fields f = {&tf_rnn_seq2seq_config_table, (void *)&m->cfg};
    cJSON *r = cJSON_CreateObject();
    int rc = !r || !cJSON_AddStringToObject(r, "model_type", MODEL_TYPE) || tf_fields_to_json(r, &f, 1) ||
             tf_json_write(path, r);
    cJSON_Delete(r);
    if (rc) return -1;
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    return tf_params_save(m->params, path);
}
