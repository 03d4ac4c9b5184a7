/* ViT models as Hugging Face folders: config.json + model.safetensors, both
 * ways, for ViTModel and ViTForImageClassification; a conv stem or a pooling
 * other than the class token, which Hugging Face's ViT lacks, as tformer's own (model_type "tformer-vit", the
 * field table's keys), which transformers refuses rather than misreads. */
#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

#include "../../util/util.h"
#include "../vision.h"
#include "vit_internal.h"

/* config.json's keys through a field table; the other keys are ignored or refused below. */
static const char *const HF_ACTIVATIONS[] = {"relu", "gelu", "gelu_new|gelu_pytorch_tanh", "silu|swish", NULL};
#define HF(m, type, name, def) TF_FIELD_ROW(tf_vit_config, m, type, name, def, NULL, NULL, NULL, 0, NULL)
static const tf_field HF_ROWS[] = {
    HF(image_size, TF_FIELD_INT, "image_size", "224"),
    HF(patch_size, TF_FIELD_INT, "patch_size", "16"),
    HF(channels, TF_FIELD_INT, "num_channels", "3"),
    HF(n_layer, TF_FIELD_INT, "num_hidden_layers", "12"),
    HF(n_head, TF_FIELD_INT, "num_attention_heads", "12"),
    HF(d_model, TF_FIELD_INT, "hidden_size", "768"),
    HF(d_ff, TF_FIELD_INT, "intermediate_size", "3072"),
    TF_FIELD_ROW(tf_vit_config, activation, TF_FIELD_ENUM, "hidden_act", "gelu", NULL, HF_ACTIVATIONS, NULL, 0, NULL),
    HF(norm_eps, TF_FIELD_FLOAT, "layer_norm_eps", "1e-12"),
    HF(dropout, TF_FIELD_FLOAT, "hidden_dropout_prob", "0"),
    HF(attn_dropout, TF_FIELD_FLOAT, "attention_probs_dropout_prob", "0"),
    HF(qkv_bias, TF_FIELD_BOOL, "qkv_bias", "true"),
    HF(init_std, TF_FIELD_FLOAT, "initializer_range", "0.02"),
};
#undef HF
static const tf_field_table HF_TABLE = {"config.json", HF_ROWS, (int)(sizeof HF_ROWS / sizeof HF_ROWS[0])};

/* architectures[0] (ViTModel when absent), num_labels / id2label, problem_type. */
static int read_extras(const cJSON *root, const char *path, tf_vit_config *c) {
    const cJSON *arch = cJSON_GetObjectItemCaseSensitive(root, "architectures");
    const cJSON *first = cJSON_IsArray(arch) ? cJSON_GetArrayItem(arch, 0) : NULL;
    int head = cJSON_IsString(first) ? tf_vit_head_from_name(first->valuestring) : TF_VIT_BODY;
    if (head < 0) return tf_set_error("%s: architecture \"%s\" is not a ViT class tformer has", path, first->valuestring);
    c->head = (tf_vit_head)head;
    if (tf_folder_read_classes(root, path, &c->n_labels, NULL) ||
        (c->head == TF_VIT_IMAGE_CLS && tf_folder_refuse_regression(root, path, c->n_labels, 0)))
        return -1;
    if (tf_vision_read_pooler(root, path, c->d_model)) return -1; /* transformers 4.40+ */
    const cJSON *model_type = cJSON_GetObjectItemCaseSensitive(root, "model_type");
    if (cJSON_IsString(model_type) && strcmp(model_type->valuestring, "vit"))
        return tf_set_error("%s: model_type \"%s\" is not \"vit\"", path, model_type->valuestring);
    return 0;
}

static int read_labels(tf_vit *m, const cJSON *root, const char *path) {
    return m->cfg.head == TF_VIT_IMAGE_CLS ? tf_vision_read_labels(&m->labels, m->cfg.n_labels, root, path) : 0;
}
/* model_type "vit" (or none): Hugging Face's keys; "tformer-vit": the field table's. */
int tf_vit_config_from_hf(const cJSON *root, const char *path, tf_vit_config *c) {
    const cJSON *mt = cJSON_GetObjectItemCaseSensitive(root, "model_type");
    int own = cJSON_IsString(mt) && !strcmp(mt->valuestring, "tformer-vit");
    *c = tf_vit_config_default();
    tf_fields f = {own ? &tf_vit_config_table : &HF_TABLE, c};
    if (tf_fields_defaults(&f, 1) || tf_fields_from_json(root, &f, 1, path, 1) || (!own && read_extras(root, path, c)))
        return -1;
    c->pooler = 0; /* set from the weights */
    if (!tf_vit_config_check(c)) return 0;
    char msg[512];
    snprintf(msg, sizeof msg, "%s", tf_error());
    return tf_set_error("%s: %s", path, msg);
}

/* ---------------------------------------------------------------- weights */

tf_vit *tf_vit_load(const char *dir) {
    char path[4096], weights[4096];
    if (tf_path_join(path, sizeof path, dir, "config.json")) return NULL;
    if (tf_path_join(weights, sizeof weights, dir, "model.safetensors")) return NULL;
    tf_vit_config c;
    cJSON *root = tf_json_read(path);
    tf_st_file *f = root && !tf_vit_config_from_hf(root, path, &c) ? tf_st_open(weights) : NULL;
    c.pooler = f && c.head == TF_VIT_BODY && tf_st_find(f, "pooler.dense.weight"); /* add_pooling_layer */
    tf_vit *m = f ? tf_vit_new(&c, 0) : NULL;
    if (m && (read_labels(m, root, path) || tf_folder_read_weights(f, weights, m->params, NULL, NULL))) {
        tf_vit_free(m);
        m = NULL;
    }
    tf_st_close(f);
    cJSON_Delete(root);
    return m;
}

/* ---------------------------------------------------------------- saving */

int tf_vit_save_hf(const tf_vit *m, const char *dir) {
    const tf_vit_config *c = &m->cfg;
    if (c->stem != TF_VIT_STEM_PATCH)
        return tf_set_error("%s: a ViT with a conv stem has no Hugging Face form (ViTModel embeds patches by one "
                            "strided projection): save it as tformer's folder (tf_vit_save)", dir);
    if (c->lsa)
        return tf_set_error("%s: a ViT with locality self-attention (lsa) has no Hugging Face form (ViTSelfAttention "
                            "has no temperature and hides no key): save it as tformer's folder (tf_vit_save)", dir);
    if (c->pooling != TF_POOL_CLS)
        return tf_set_error("%s: a ViT with %s pooling has no Hugging Face form (ViTForImageClassification reads the "
                            "class token): save it as tformer's folder (tf_vit_save)", dir,
                            c->pooling == TF_POOL_MEAN ? "mean" : "seq");
    tf_fields f = {&HF_TABLE, (void *)c};
    return tf_vision_save(dir, tf_vit_head_name(c->head), "vit", &f, NULL, m->labels,
                          c->head == TF_VIT_IMAGE_CLS ? c->n_labels : 0, m->params);
}

int tf_vit_save(const tf_vit *m, const char *dir) {
    const tf_vit_config *c = &m->cfg;
    if (c->stem == TF_VIT_STEM_PATCH && c->pooling == TF_POOL_CLS && !c->lsa) return tf_vit_save_hf(m, dir);
    tf_fields f = {&tf_vit_config_table, (void *)c};
    return tf_vision_save(dir, tf_vit_head_name(c->head), "tformer-vit", &f, NULL, m->labels,
                          c->head == TF_VIT_IMAGE_CLS ? c->n_labels : 0, m->params);
}
