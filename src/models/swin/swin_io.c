/* Swin models as Hugging Face folders: config.json + model.safetensors, both
 * ways, for SwinModel and SwinForImageClassification. */
#include <stdlib.h>
#include <string.h>

#include "../../nn/nn_internal.h"
#include "swin_internal.h"

static const char *const HF_ACTIVATIONS[] = {"relu", "gelu", "gelu_new|gelu_pytorch_tanh", "silu|swish", NULL};
#define HF(m, type, name, def) TF_FIELD_ROW(tf_swin_config, m, type, name, def, NULL, NULL, NULL, 0, NULL)
static const tf_field HF_ROWS[] = {
    HF(image_size, TF_FIELD_INT, "image_size", "224"),
    HF(patch_size, TF_FIELD_INT, "patch_size", "4"),
    HF(channels, TF_FIELD_INT, "num_channels", "3"),
    HF(d_model, TF_FIELD_INT, "embed_dim", "96"),
    HF(window, TF_FIELD_INT, "window_size", "7"),
    HF(mlp_ratio, TF_FIELD_FLOAT, "mlp_ratio", "4"),
    TF_FIELD_ROW(tf_swin_config, activation, TF_FIELD_ENUM, "hidden_act", "gelu", NULL, HF_ACTIVATIONS, NULL, 0, NULL),
    HF(norm_eps, TF_FIELD_FLOAT, "layer_norm_eps", "1e-5"),
    HF(dropout, TF_FIELD_FLOAT, "hidden_dropout_prob", "0"),
    HF(attn_dropout, TF_FIELD_FLOAT, "attention_probs_dropout_prob", "0"),
    HF(drop_path, TF_FIELD_FLOAT, "drop_path_rate", "0.1"),
    HF(qkv_bias, TF_FIELD_BOOL, "qkv_bias", "true"),
    HF(init_std, TF_FIELD_FLOAT, "initializer_range", "0.02"),
};
#undef HF
static const tf_field_table HF_TABLE = {"config.json", HF_ROWS, (int)(sizeof HF_ROWS / sizeof HF_ROWS[0])};

/* A JSON array of positive integers as "a,b,c" into out (cap bytes). */
static int read_list(const cJSON *root, const char *path, const char *key, const char *def, char *out, size_t cap) {
    const cJSON *a = cJSON_GetObjectItemCaseSensitive(root, key);
    if (!a) return snprintf(out, cap, "%s", def), 0;
    if (!cJSON_IsArray(a) || !cJSON_GetArraySize(a) || cJSON_GetArraySize(a) > TF_SWIN_MAX_STAGES)
        return tf_set_error("%s: \"%s\" must be an array of 1 to %d integers", path, key, TF_SWIN_MAX_STAGES);
    size_t used = 0;
    out[0] = 0;
    for (const cJSON *e = a->child; e; e = e->next) {
        if (!cJSON_IsNumber(e) || e->valuedouble != (double)e->valueint || e->valueint < 1)
            return tf_set_error("%s: \"%s\" must hold positive integers", path, key);
        used += (size_t)snprintf(out + used, cap - used, "%s%d", used ? "," : "", e->valueint);
        if (used >= cap) return tf_set_error("%s: \"%s\" is too long", path, key);
    }
    return 0;
}

/* architectures[0] (SwinModel when absent), labels, the lists, and the keys tformer refuses. */
static int read_extras(const cJSON *root, const char *path, tf_swin_config *c) {
    const cJSON *arch = cJSON_GetObjectItemCaseSensitive(root, "architectures");
    const cJSON *first = cJSON_IsArray(arch) ? cJSON_GetArrayItem(arch, 0) : NULL;
    int head = cJSON_IsString(first) ? tf_swin_head_from_name(first->valuestring) : TF_SWIN_BODY;
    if (head < 0) return tf_set_error("%s: architecture \"%s\" is not a Swin class tformer has", path, first->valuestring);
    c->head = (tf_swin_head)head;
    if (tf_folder_read_classes(root, path, &c->n_labels, NULL) ||
        (c->head == TF_SWIN_IMAGE_CLS && tf_folder_refuse_regression(root, path, c->n_labels, 0)))
        return -1;
    if (read_list(root, path, "depths", "2,2,6,2", c->depths, sizeof c->depths) ||
        read_list(root, path, "num_heads", "3,6,12,24", c->heads, sizeof c->heads))
        return -1;
    const cJSON *abs_pos = cJSON_GetObjectItemCaseSensitive(root, "use_absolute_embeddings");
    if (cJSON_IsTrue(abs_pos)) return tf_set_error("%s: \"use_absolute_embeddings\" true is not implemented", path);
    const cJSON *model_type = cJSON_GetObjectItemCaseSensitive(root, "model_type");
    if (cJSON_IsString(model_type) && strcmp(model_type->valuestring, "swin"))
        return tf_set_error("%s: model_type \"%s\" is not \"swin\"", path, model_type->valuestring);
    return 0;
}

static int read_config(const cJSON *root, const char *path, tf_swin_config *c) {
    *c = tf_swin_config_default();
    tf_fields f = {&HF_TABLE, c};
    if (tf_fields_defaults(&f, 1) || tf_fields_from_json(root, &f, 1, path, 1) || read_extras(root, path, c)) return -1;
    if (!tf_swin_config_check(c)) return 0;
    char msg[512];
    snprintf(msg, sizeof msg, "%s", tf_error());
    return tf_set_error("%s: %s", path, msg);
}

/* The fixed relative_position_index buffers transformers saves beside the weights. */
static int known(const tf_params *ps, const char *name) {
    size_t n = strlen(name), k = strlen("relative_position_index");
    return tf_params_get(ps, name) != NULL || (n > k && !strcmp(name + n - k, "relative_position_index"));
}

/* Each relative_position_index the file holds is the one tformer computes
 * (transformers reads the stored buffer: another one would index differently). */
static int check_indices(const tf_swin *m, const tf_st_file *f, const char *path) {
    tf_arena *a = tf_arena_new(0);
    int rc = a ? 0 : tf_set_error("%s: out of memory", path);
    for (int s = 0; !rc && s < m->n_stage; s++) {
        const tf_swin_stage *st = &m->stage[s];
        int64_t N = (int64_t)st->window * st->window;
        int32_t *want = malloc((size_t)(N * N) * sizeof *want);
        if (!want) rc = tf_set_error("%s: out of memory", path);
        else tf_window_relative_index(want, st->window);
        for (int j = 0; !rc && j < st->depth; j++) {
            char name[512];
            snprintf(name, sizeof name, "%sencoder.layers.%d.blocks.%d.attention.self.relative_position_index",
                     m->cfg.head == TF_SWIN_BODY ? "" : "swin.", s, j);
            const tf_st_entry *e = tf_st_find(f, name);
            tf_tensor *t = e ? tf_st_to_tensor(f, e, a) : NULL;
            if (e && (!t || t->dtype != TF_DTYPE_I32 || tf_numel(t) != N * N || memcmp(tf_i32(t), want, (size_t)(N * N) * sizeof *want)))
                rc = tf_set_error("%s: '%s' is not the relative position index of a %dx%d window", path, name,
                                  st->window, st->window);
        }
        free(want);
    }
    tf_arena_free(a);
    return rc;
}

tf_swin *tf_swin_load(const char *dir) {
    char path[4096], weights[4096];
    if (tf_path_join(path, sizeof path, dir, "config.json")) return NULL;
    if (tf_path_join(weights, sizeof weights, dir, "model.safetensors")) return NULL;
    tf_swin_config c;
    cJSON *root = tf_json_read(path);
    tf_st_file *f = root && !read_config(root, path, &c) ? tf_st_open(weights) : NULL;
    tf_swin *m = f ? tf_swin_new(&c, 0) : NULL;
    if (m && ((c.head == TF_SWIN_IMAGE_CLS && tf_vision_read_labels(&m->labels, c.n_labels, root, path)) ||
              tf_folder_read_weights(f, weights, m->params, NULL, known) || check_indices(m, f, weights))) {
        tf_swin_free(m);
        m = NULL;
    }
    tf_st_close(f);
    cJSON_Delete(root);
    return m;
}

/* Every parameter, and each block's relative_position_index (I64 (N,N)): the
 * fixed buffers transformers saves beside them and reads back. */
static int save_weights(const tf_swin *m, const char *path) {
    tf_st_writer *w = tf_st_writer_new();
    tf_arena *a = tf_arena_new(0);
    int rc = w && a ? 0 : tf_set_error("%s: out of memory", path);
    for (int i = 0; !rc && i < tf_params_count(m->params); i++)
        rc = tf_st_writer_add(w, tf_params_name(m->params, i), tf_params_tensor(m->params, i));
    for (int s = 0; !rc && s < m->n_stage; s++) {
        const tf_swin_stage *st = &m->stage[s];
        int64_t N = (int64_t)st->window * st->window;
        tf_tensor *idx = tf_tensor_alloc(a, TF_DTYPE_I32, 2, (int64_t[]){N, N}, 0);
        if (!idx) rc = tf_set_error("%s: out of memory", path);
        else tf_window_relative_index(tf_i32(idx), st->window);
        for (int j = 0; !rc && j < st->depth; j++) {
            char name[512];
            snprintf(name, sizeof name, "%sencoder.layers.%d.blocks.%d.attention.self.relative_position_index",
                     m->cfg.head == TF_SWIN_BODY ? "" : "swin.", s, j);
            rc = tf_st_writer_add_as(w, name, idx, TF_ST_I64);
        }
    }
    rc = rc || tf_st_writer_save(w, path);
    tf_st_writer_free(w);
    tf_arena_free(a);
    return rc ? -1 : 0;
}

static cJSON *int_array(const char *list) {
    int v[TF_SWIN_MAX_STAGES], n = tf_swin_parse_list(list, "list", v);
    return n > 0 ? cJSON_CreateIntArray(v, n) : NULL;
}

int tf_swin_save(const tf_swin *m, const char *dir) {
    const tf_swin_config *c = &m->cfg;
    tf_fields f = {&HF_TABLE, (void *)c};
    cJSON *extra = cJSON_CreateObject();
    int ok = extra && cJSON_AddItemToObject(extra, "depths", int_array(c->depths)) &&
             cJSON_AddItemToObject(extra, "num_heads", int_array(c->heads)) &&
             cJSON_AddFalseToObject(extra, "use_absolute_embeddings");
    if (!ok) { /* (cJSON_AddItemToObject refuses a NULL array) */
        cJSON_Delete(extra);
        return tf_set_error("swin: out of memory");
    }
    char path[4096];
    if (tf_path_join(path, sizeof path, dir, "model.safetensors")) return -1;
    return tf_vision_save_config(dir, tf_swin_head_name(c->head), "swin", &f, extra, m->labels,
                                 c->head == TF_SWIN_IMAGE_CLS ? c->n_labels : 0) ||
                   save_weights(m, path)
               ? -1
               : 0;
}
