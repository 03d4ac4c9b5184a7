/* GPT models as Hugging Face GPT-2 folders: config.json + model.safetensors.
 * tformer's own variants (sinusoidal positions, post-LN) add two keys that
 * Hugging Face ignores: tformer_position and tformer_norm_first. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "../../util/util.h"

static int json_int(const cJSON *root, const char *key, int *out, int required, const char *path) {
    const cJSON *j = cJSON_GetObjectItemCaseSensitive(root, key);
    if (!j || cJSON_IsNull(j)) return required ? tf_set_error("%s: missing \"%s\"", path, key) : 0;
    if (!cJSON_IsNumber(j) || j->valuedouble < 0 || j->valuedouble > 1e9 || (int)j->valuedouble != j->valuedouble)
        return tf_set_error("%s: \"%s\" must be a non-negative integer", path, key);
    *out = (int)j->valuedouble;
    return 0;
}

static int read_config(const char *path, tf_gpt_config *c) {
    size_t len;
    char *text = tf_read_file(path, &len);
    if (!text) return -1;
    cJSON *root = cJSON_ParseWithLength(text, len);
    free(text);
    int rc = -1;
    *c = tf_gpt_config_default(0, 0, 0, 0, 0);
    if (!cJSON_IsObject(root)) {
        tf_set_error("%s: not a JSON object", path);
        goto out;
    }
    if (json_int(root, "vocab_size", &c->vocab_size, 1, path) || json_int(root, "n_positions", &c->context, 1, path) ||
        json_int(root, "n_layer", &c->n_layer, 1, path) || json_int(root, "n_head", &c->n_head, 1, path) ||
        json_int(root, "n_embd", &c->d_model, 1, path) || json_int(root, "n_inner", &c->d_ff, 0, path))
        goto out;
    const cJSON *act = cJSON_GetObjectItemCaseSensitive(root, "activation_function");
    if (cJSON_IsString(act)) {
        if (!strcmp(act->valuestring, "gelu_new") || !strcmp(act->valuestring, "gelu_pytorch_tanh")) c->activation = TF_ACT_GELU_TANH;
        else if (!strcmp(act->valuestring, "gelu")) c->activation = TF_ACT_GELU;
        else if (!strcmp(act->valuestring, "relu")) c->activation = TF_ACT_RELU;
        else {
            tf_set_error("%s: activation_function \"%s\" is not supported", path, act->valuestring);
            goto out;
        }
    }
    const cJSON *eps = cJSON_GetObjectItemCaseSensitive(root, "layer_norm_epsilon");
    if (cJSON_IsNumber(eps)) c->norm_eps = (float)eps->valuedouble;
    const cJSON *tie = cJSON_GetObjectItemCaseSensitive(root, "tie_word_embeddings");
    if (cJSON_IsBool(tie)) c->tied = cJSON_IsTrue(tie);
    const cJSON *pos = cJSON_GetObjectItemCaseSensitive(root, "tformer_position");
    if (cJSON_IsString(pos) && !strcmp(pos->valuestring, "sinusoidal")) c->pos = TF_POS_SINUSOIDAL;
    const cJSON *nf = cJSON_GetObjectItemCaseSensitive(root, "tformer_norm_first");
    if (cJSON_IsBool(nf)) c->norm_first = cJSON_IsTrue(nf);
    rc = tf_gpt_config_check(c);
    if (rc) {
        char msg[512];
        snprintf(msg, sizeof msg, "%s", tf_error());
        tf_set_error("%s: %s", path, msg);
    }
out:
    cJSON_Delete(root);
    return rc;
}

/* Hugging Face writes "transformer.h.0..." (GPT2LMHeadModel) or "h.0..." (GPT2Model). */
static const tf_st_entry *find_param(const tf_st_file *f, const char *name) {
    const tf_st_entry *e = tf_st_find(f, name);
    if (!e && !strncmp(name, "transformer.", 12)) e = tf_st_find(f, name + 12);
    return e;
}

static int known_extra(const char *name) { /* buffers Hugging Face may store besides the parameters */
    size_t n = strlen(name);
    return (n > 9 && !strcmp(name + n - 9, ".attn.bias")) || (n > 16 && !strcmp(name + n - 16, ".attn.masked_bias")) ||
           !strcmp(name, "lm_head.weight");
}

static int load_weights(tf_gpt *m, const char *path) {
    tf_st_file *f = tf_st_open(path);
    if (!f) return -1;
    tf_params *ps = m->params;
    int rc = tf_params_init(ps, 1); /* allocate; every tensor is then overwritten */
    for (int i = 0; !rc && i < tf_params_count(ps); i++) {
        const char *name = tf_params_name(ps, i);
        const tf_st_entry *e = find_param(f, name);
        tf_tensor *t = tf_params_tensor(ps, i);
        int same = e && e->ndim == t->ndim;
        for (int d = 0; same && d < t->ndim; d++) same = e->shape[d] == t->shape[d];
        if (!e) rc = tf_set_error("%s: missing tensor '%s'", path, name);
        else if (!same) rc = tf_set_error("%s: tensor '%s' has the wrong shape for config.json", path, name);
        else rc = tf_st_read_f32(f, e, t);
    }
    for (int i = 0; !rc && i < tf_st_count(f); i++) {
        const char *name = tf_st_entry_at(f, i)->name;
        char full[300];
        snprintf(full, sizeof full, "transformer.%s", name);
        if (!tf_params_get(ps, name) && !tf_params_get(ps, full) && !known_extra(name))
            rc = tf_set_error("%s: unexpected tensor '%s'", path, name);
    }
    tf_st_close(f);
    return rc;
}

tf_gpt *tf_gpt_load_hf(const char *dir) {
    char path[4096];
    tf_gpt_config c;
    snprintf(path, sizeof path, "%s/config.json", dir);
    if (read_config(path, &c)) return NULL;
    tf_gpt *m = tf_gpt_new(&c, 0);
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    if (m && load_weights(m, path)) {
        tf_gpt_free(m);
        return NULL;
    }
    return m;
}

static const char *activation_name(tf_activation a) {
    return a == TF_ACT_RELU ? "relu" : a == TF_ACT_GELU ? "gelu" : "gelu_new";
}

static int write_config(const tf_gpt *m, const char *path) {
    const tf_gpt_config *c = &m->cfg;
    cJSON *r = cJSON_CreateObject();
    cJSON *arch = cJSON_AddArrayToObject(r, "architectures");
    cJSON_AddItemToArray(arch, cJSON_CreateString("GPT2LMHeadModel"));
    cJSON_AddStringToObject(r, "model_type", "gpt2");
    cJSON_AddNumberToObject(r, "vocab_size", c->vocab_size);
    cJSON_AddNumberToObject(r, "n_positions", c->context);
    cJSON_AddNumberToObject(r, "n_ctx", c->context);
    cJSON_AddNumberToObject(r, "n_embd", c->d_model);
    cJSON_AddNumberToObject(r, "n_layer", c->n_layer);
    cJSON_AddNumberToObject(r, "n_head", c->n_head);
    if (c->d_ff) cJSON_AddNumberToObject(r, "n_inner", c->d_ff);
    else cJSON_AddNullToObject(r, "n_inner");
    cJSON_AddStringToObject(r, "activation_function", activation_name(c->activation));
    cJSON_AddNumberToObject(r, "layer_norm_epsilon", c->norm_eps);
    cJSON_AddNumberToObject(r, "resid_pdrop", c->dropout);
    cJSON_AddNumberToObject(r, "embd_pdrop", c->dropout);
    cJSON_AddNumberToObject(r, "attn_pdrop", c->dropout);
    cJSON_AddBoolToObject(r, "tie_word_embeddings", c->tied);
    cJSON_AddStringToObject(r, "tformer_position", c->pos == TF_POS_LEARNED ? "learned" : "sinusoidal");
    cJSON_AddBoolToObject(r, "tformer_norm_first", c->norm_first);
    int rc = tf_json_write(path, r);
    cJSON_Delete(r);
    return rc;
}

int tf_gpt_save_hf(const tf_gpt *m, const char *dir) {
    if (mkdir(dir, 0755) && errno != EEXIST) return tf_set_error("%s: cannot create: %s", dir, strerror(errno));
    char path[4096];
    snprintf(path, sizeof path, "%s/config.json", dir);
    if (write_config(m, path)) return -1;
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    return tf_params_save(m->params, path);
}
