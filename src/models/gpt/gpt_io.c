/* GPT models as Hugging Face GPT-2 folders: config.json + model.safetensors.
 * tformer's own variants (sinusoidal positions, post-LN, other attention
 * kinds) add keys of their own (tformer_position, tformer_norm_first,
 * tformer_attention...) under model_type "tformer-gpt2", which transformers
 * refuses. ImageGPT
 * folders (model_type "imagegpt") are GPT-2's layout and keys with RMS norms
 * without bias, quick_gelu and tie_word_embeddings false by default, and
 * ImageGPTForCausalImageModeling's untied head of vocab_size - 1 rows (no
 * logit for the start token, the last id). */
#include <cjson/cJSON.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "../../util/util.h"
#include "gpt_internal.h"
#include "../model_folder.h"

/* config.json through a field table with Hugging Face's keys; the many
 * other keys Hugging Face writes are ignored. */
static const char *const HF_POS[] = {"learned", "sinusoidal", NULL};
static const char *const HF_ACTIVATIONS[] = {"relu", "gelu", "gelu_new|gelu_pytorch_tanh", "silu|swish", "quick_gelu", NULL};
#define HF(m, type, name, def, choices, flags) TF_FIELD_ROW(tf_gpt_config, m, type, name, def, NULL, choices, NULL, flags, NULL)
static const tf_field HF_ROWS[] = {
    HF(vocab_size, TF_FIELD_INT, "vocab_size", NULL, NULL, TF_FIELD_REQUIRED),
    HF(context, TF_FIELD_INT, "n_positions", NULL, NULL, TF_FIELD_REQUIRED),
    HF(d_model, TF_FIELD_INT, "n_embd", NULL, NULL, TF_FIELD_REQUIRED),
    HF(n_layer, TF_FIELD_INT, "n_layer", NULL, NULL, TF_FIELD_REQUIRED),
    HF(n_head, TF_FIELD_INT, "n_head", NULL, NULL, TF_FIELD_REQUIRED),
    HF(d_ff, TF_FIELD_INT, "n_inner", "0", NULL, TF_FIELD_NULL_ZERO),
    HF(activation, TF_FIELD_ENUM, "activation_function", "gelu_new", HF_ACTIVATIONS, 0),
    HF(norm_eps, TF_FIELD_FLOAT, "layer_norm_epsilon", "1e-5", NULL, 0),
    HF(tied, TF_FIELD_BOOL, "tie_word_embeddings", "true", NULL, 0),
    HF(pos, TF_FIELD_ENUM, "tformer_position", "learned", HF_POS, 0),
    HF(norm_first, TF_FIELD_BOOL, "tformer_norm_first", "true", NULL, 0),
    TF_FIELD_SUB(tf_gpt_config, attention, tf_attention_hf_table),
};
#undef HF
static const tf_field_table HF_TABLE = {"config.json", HF_ROWS, (int)(sizeof HF_ROWS / sizeof HF_ROWS[0])};

/* architectures[0], or "" */
static const char *architecture(const cJSON *root) {
    const cJSON *arch = cJSON_GetObjectItemCaseSensitive(root, "architectures");
    const cJSON *first = cJSON_IsArray(arch) ? cJSON_GetArrayItem(arch, 0) : NULL;
    return cJSON_IsString(first) ? first->valuestring : "";
}

static int is_imagegpt(const cJSON *root) {
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(root, "model_type");
    return (cJSON_IsString(t) && (!strcmp(t->valuestring, "imagegpt") || !strcmp(t->valuestring, "tformer-imagegpt"))) ||
           !strncmp(architecture(root), "ImageGPT", 8);
}

static int read_config(const cJSON *root, const char *path, tf_gpt_config *c) {
    *c = tf_gpt_config_default(0, 0, 0, 0, 0); /* fields Hugging Face does not set (dropout) */
    tf_fields f = {&HF_TABLE, c};
    if (tf_fields_defaults(&f, 1)) return -1;
    if (is_imagegpt(root)) /* ImageGPTConfig's defaults, then its norm and head */
        c->activation = TF_ACT_QUICK_GELU, c->tied = 0, c->norm = TF_NORM_RMS, c->predict_last = 0;
    if (tf_fields_from_json(root, &f, 1, path, 1)) return -1;
    if (!c->predict_last && c->tied && !strcmp(architecture(root), "ImageGPTModel")) c->tied = 0; /* no head to tie */
    if (!c->predict_last && c->tied)
        return tf_set_error("%s: tie_word_embeddings true: ImageGPT's head (vocab_size - 1 rows) cannot be the token "
                            "table; tformer runs only the untied head", path);
    if (!tf_gpt_config_check(c)) return 0;
    char msg[512];
    snprintf(msg, sizeof msg, "%s", tf_error());
    return tf_set_error("%s: %s", path, msg);
}

/* Hugging Face writes "transformer.h.0..." (GPT2LMHeadModel) or "h.0..." (GPT2Model). */
static const tf_st_entry *find_param(const tf_st_file *f, const char *name) {
    const tf_st_entry *e = tf_st_find(f, name);
    if (!e && !strncmp(name, "transformer.", 12)) e = tf_st_find(f, name + 12);
    return e;
}

/* A file tensor we use (with or without the "transformer." prefix) or a buffer
 * Hugging Face may store besides the parameters. */
static int known(const tf_params *ps, const char *name) {
    size_t n = strlen(name);
    char full[300];
    if (tf_params_get(ps, name)) return 1;
    if ((size_t)snprintf(full, sizeof full, "transformer.%s", name) < sizeof full && tf_params_get(ps, full)) return 1;
    return (n > 9 && !strcmp(name + n - 9, ".attn.bias")) || (n > 16 && !strcmp(name + n - 16, ".attn.masked_bias")) ||
           !strcmp(name, "lm_head.weight");
}

/* GPT2Config settings that change the arithmetic and that tf_gpt does not
 * implement: refused by name rather than run to a different answer. */
static const struct {
    const char *key;
    int supported; /* the only value tf_gpt computes */
} GPT2_FLAGS[] = {
    {"scale_attn_weights", 1},
    {"scale_attn_by_inverse_layer_idx", 0},
    {"add_cross_attention", 0},
};

/* What the field table does not carry: a body alone (GPT2Model folders have
 * no output projection) and the unsupported settings. */
static int read_extras(const cJSON *root, const char *path, int *body) {
    *body = !strcmp(architecture(root), "GPT2Model") || !strcmp(architecture(root), "ImageGPTModel");
    int rc = 0;
    for (size_t i = 0; !rc && i < sizeof GPT2_FLAGS / sizeof GPT2_FLAGS[0]; i++) {
        const cJSON *j = cJSON_GetObjectItemCaseSensitive(root, GPT2_FLAGS[i].key);
        if (j && !cJSON_IsNull(j) && (!cJSON_IsBool(j) || cJSON_IsTrue(j) != GPT2_FLAGS[i].supported))
            rc = tf_set_error("%s: \"%s\" must be %s: tformer's GPT-2 does not implement the other setting", path,
                              GPT2_FLAGS[i].key, GPT2_FLAGS[i].supported ? "true" : "false");
    }
    return rc;
}

int tf_gpt_config_from_hf(const cJSON *root, const char *path, tf_gpt_config *c, int *body) {
    static const char *const TYPES[] = {"gpt2", "tformer-gpt2", "imagegpt", "tformer-imagegpt", NULL};
    return tf_folder_check_type(root, path, "GPT-2 / ImageGPT", TYPES) || read_config(root, path, c) ||
                   read_extras(root, path, body) ? -1 : 0;
}

static tf_gpt *load(const char *dir, int mapped) {
    char path[4096];
    tf_gpt_config c;
    if (tf_path_join(path, sizeof path, dir, "config.json")) return NULL;
    int body, rc;
    cJSON *root = tf_json_read(path); /* read once: the table's keys, then the rest */
    rc = !root || tf_gpt_config_from_hf(root, path, &c, &body);
    cJSON_Delete(root);
    if (rc) return NULL;
    if (tf_path_join(path, sizeof path, dir, "model.safetensors")) return NULL;
    tf_gpt *m = tf_gpt_new_body(&c, 0, !body);
    if (m && (mapped ? tf_folder_map_hf_weights : tf_folder_load_hf_weights)(path, m->params, find_param, known)) {
        tf_gpt_free(m);
        return NULL;
    }
    return m;
}

tf_gpt *tf_gpt_load(const char *dir) { return load(dir, 0); }
tf_gpt *tf_gpt_load_mapped(const char *dir) { return load(dir, 1); }

/* GPT-2's layout, or ImageGPT's (RMS norms and a head without the start
 * token's logit); the mixtures neither class computes are refused. */
static int write_config(const tf_gpt *m, const char *path) {
    static const char *const PDROP[] = {"resid_pdrop", "embd_pdrop", "attn_pdrop"};
    const tf_gpt_config *c = &m->cfg;
    int igpt = c->norm == TF_NORM_RMS;
    if (igpt != !c->predict_last)
        return tf_set_error("%s: norm %s with predict_last %s is neither GPT-2's layout nor ImageGPT's", path,
                            igpt ? "rms" : "layer", c->predict_last ? "true" : "false");
    tf_fields f = {&HF_TABLE, (void *)c};
    cJSON *r = cJSON_CreateObject();
    cJSON *arch = cJSON_AddArrayToObject(r, "architectures");
    const char *name = igpt ? (m->has_head ? "ImageGPTForCausalImageModeling" : "ImageGPTModel")
                            : (m->has_head ? "GPT2LMHeadModel" : "GPT2Model");
    cJSON_AddItemToArray(arch, cJSON_CreateString(name));
    /* Arithmetic that transformers' GPT-2 / ImageGPT does not have (post-LN,
     * sinusoidal positions, another attention kind, rotary positions,
     * Scalable-Softmax): model_type "tformer-gpt2" / "tformer-imagegpt", which
     * transformers refuses rather than run the weights as its own; tformer
     * reads both. */
    int own = !c->norm_first || c->pos != TF_POS_LEARNED || c->attention.kind != TF_ATTENTION_FULL ||
              c->attention.rope != TF_ROPE_NONE || c->attention.ssmax > 0.0f;
    cJSON_AddStringToObject(r, "model_type", igpt ? (own ? "tformer-imagegpt" : "imagegpt") : own ? "tformer-gpt2" : "gpt2");
    int rc = !r || tf_fields_to_json(r, &f, 1);
    cJSON_AddNumberToObject(r, "n_ctx", m->cfg.context);
    for (int i = 0; i < 3; i++) cJSON_AddNumberToObject(r, PDROP[i], m->cfg.dropout);
    rc = rc || tf_json_write(path, r);
    cJSON_Delete(r);
    return rc ? -1 : 0;
}

int tf_gpt_save(const tf_gpt *m, const char *dir) {
    if (mkdir(dir, 0755) && errno != EEXIST) return tf_set_error("%s: cannot create: %s", dir, strerror(errno));
    char path[4096];
    if (tf_path_join(path, sizeof path, dir, "config.json")) return -1;
    if (write_config(m, path)) return -1;
    if (tf_path_join(path, sizeof path, dir, "model.safetensors")) return -1;
    return tf_params_save(m->params, path);
}
