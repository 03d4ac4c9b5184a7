/* ViViT folders: Model 1 as Hugging Face's VivitModel /
 * VivitForVideoClassification (config.json of VivitConfig + model.safetensors),
 * Models 2 and 3 as tformer's own (model_type "tformer-vivit", the field
 * table's keys); both carry architectures and id2label. */
#include <cjson/cJSON.h>
#include <string.h>

#include "../model_folder.h"
#include "../vision.h"
#include "tformer/vivit.h"

static const char *const HF_ACTIVATIONS[] = {"relu", "gelu", "gelu_fast|gelu_new|gelu_pytorch_tanh", "silu|swish",
                                             NULL};
#define HF(m, type, name, def) TF_FIELD_ROW(tf_vivit_config, m, type, name, def, NULL, NULL, NULL, 0, NULL)
static const tf_field HF_ROWS[] = {
    HF(image_size, TF_FIELD_INT, "image_size", "224"),
    HF(num_frames, TF_FIELD_INT, "num_frames", "32"),
    HF(channels, TF_FIELD_INT, "num_channels", "3"),
    HF(n_layer, TF_FIELD_INT, "num_hidden_layers", "12"),
    HF(n_head, TF_FIELD_INT, "num_attention_heads", "12"),
    HF(d_model, TF_FIELD_INT, "hidden_size", "768"),
    HF(d_ff, TF_FIELD_INT, "intermediate_size", "3072"),
    TF_FIELD_ROW(tf_vivit_config, activation, TF_FIELD_ENUM, "hidden_act", "gelu_fast", NULL, HF_ACTIVATIONS, NULL, 0,
                 NULL),
    HF(norm_eps, TF_FIELD_FLOAT, "layer_norm_eps", "1e-6"),
    HF(dropout, TF_FIELD_FLOAT, "hidden_dropout_prob", "0"),
    HF(attn_dropout, TF_FIELD_FLOAT, "attention_probs_dropout_prob", "0"),
    HF(qkv_bias, TF_FIELD_BOOL, "qkv_bias", "true"),
    HF(init_std, TF_FIELD_FLOAT, "initializer_range", "0.02"),
};
#undef HF
static const tf_field_table HF_TABLE = {"config.json", HF_ROWS, (int)(sizeof HF_ROWS / sizeof HF_ROWS[0])};

/* "tubelet_size": [t, h, w] of positive integers (VivitConfig's default [2, 16, 16]). */
static int read_tubelet(const cJSON *root, const char *path, tf_vivit_config *c) {
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(root, "tubelet_size");
    int v[3] = {2, 16, 16};
    if (t && (!cJSON_IsArray(t) || cJSON_GetArraySize(t) != 3))
        return tf_set_error("%s: \"tubelet_size\" must be a list of 3 integers [t, h, w]", path);
    for (int i = 0; t && i < 3; i++) {
        const cJSON *e = cJSON_GetArrayItem(t, i);
        if (!cJSON_IsNumber(e) || e->valuedouble != (double)e->valueint || e->valueint < 1)
            return tf_set_error("%s: \"tubelet_size\"[%d] must be a positive integer", path, i);
        v[i] = e->valueint;
    }
    c->tubelet_t = v[0], c->tubelet_h = v[1], c->tubelet_w = v[2], c->embedding = TF_VIVIT_TUBELET;
    return 0;
}

/* architectures[0] (VivitModel when absent), num_labels / id2label, problem_type. */
static int read_extras(const cJSON *root, const char *path, tf_vivit_config *c) {
    const cJSON *arch = cJSON_GetObjectItemCaseSensitive(root, "architectures");
    const cJSON *first = cJSON_IsArray(arch) ? cJSON_GetArrayItem(arch, 0) : NULL;
    int head = cJSON_IsString(first) ? tf_vivit_head_from_name(first->valuestring) : TF_VIVIT_BODY;
    if (head < 0)
        return tf_set_error("%s: architecture \"%s\" is not a ViViT class tformer has", path, first->valuestring);
    c->head = (tf_vivit_head)head;
    return tf_folder_read_classes(root, path, &c->n_labels, NULL) ||
           (c->head == TF_VIVIT_VIDEO_CLS && tf_folder_refuse_regression(root, path, c->n_labels, 1)) ||
           tf_vision_read_pooler(root, path, c->d_model) /* 5.x's VivitPooler reads both */ ? -1 : 0;
}

/* model_type "vivit": Hugging Face's keys (Model 1); "tformer-vivit": the field table's. */
static int read_config(const cJSON *root, const char *path, tf_vivit_config *c) {
    const cJSON *mt = cJSON_GetObjectItemCaseSensitive(root, "model_type");
    int hf = cJSON_IsString(mt) && !strcmp(mt->valuestring, "vivit");
    if (!hf && !(cJSON_IsString(mt) && !strcmp(mt->valuestring, "tformer-vivit")))
        return tf_set_error("%s: model_type must be \"vivit\" (Hugging Face) or \"tformer-vivit\"", path);
    *c = tf_vivit_config_default();
    tf_fields f = {hf ? &HF_TABLE : &tf_vivit_config_table, c};
    if (tf_fields_defaults(&f, 1) || tf_fields_from_json(root, &f, 1, path, 1) ||
        (hf && (read_tubelet(root, path, c) || read_extras(root, path, c))))
        return -1;
    if (hf) c->model_kind = 1;
    c->pooler = 0; /* set from the weights */
    if (!tf_vivit_config_check(c)) return 0;
    char msg[512];
    snprintf(msg, sizeof msg, "%s", tf_error());
    return tf_set_error("%s: %s", path, msg);
}

static int read_labels(tf_vivit *m, const cJSON *root, const char *path) {
    return m->cfg.head == TF_VIVIT_VIDEO_CLS ? tf_vision_read_labels(&m->labels, m->cfg.n_labels, root, path) : 0;
}

tf_vivit *tf_vivit_load(const char *dir) {
    char path[4096], weights[4096];
    if (tf_path_join(path, sizeof path, dir, "config.json")) return NULL;
    if (tf_path_join(weights, sizeof weights, dir, "model.safetensors")) return NULL;
    tf_vivit_config c;
    cJSON *root = tf_json_read(path);
    tf_st_file *f = root && !read_config(root, path, &c) ? tf_st_open(weights) : NULL;
    c.pooler = f && c.head == TF_VIVIT_BODY && tf_st_find(f, "pooler.dense.weight"); /* add_pooling_layer */
    tf_st_close(f);
    tf_vivit *m = f ? tf_vivit_new(&c, 0) : NULL;
    if (m && (read_labels(m, root, path) ||
              tf_folder_load_weights(dir, m->params))) {
        tf_vivit_free(m);
        m = NULL;
    }
    cJSON_Delete(root);
    return m;
}

/* ---------------------------------------------------------------- saving */

/* Model 1 as Hugging Face's (frame embedding: tubelets one frame long), Models 2 and 3 as tformer's. */
int tf_vivit_save(const tf_vivit *m, const char *dir) {
    const tf_vivit_config *c = &m->cfg;
    int hf = c->model_kind == 1;
    tf_vivit_config w = *c;
    tf_fields f = {hf ? &HF_TABLE : &tf_vivit_config_table, &w};
    cJSON *extra = hf ? cJSON_CreateObject() : NULL;
    cJSON *t = hf ? cJSON_CreateIntArray((int[]){tf_vivit_tube_t(c), c->tubelet_h, c->tubelet_w}, 3) : NULL;
    if (hf && (!extra || !t || !cJSON_AddItemToObject(extra, "tubelet_size", t))) {
        cJSON_Delete(extra);
        return tf_set_error("vivit: out of memory");
    }
    return tf_vision_save(dir, tf_vivit_head_name(c->head), hf ? "vivit" : "tformer-vivit", &f, extra, m->labels,
                          c->head == TF_VIVIT_VIDEO_CLS ? c->n_labels : 0, m->params);
}
