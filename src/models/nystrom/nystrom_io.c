/* Nyströmformer models from Hugging Face folders: config.json (the keys of
 * NystromformerConfig) + model.safetensors, for NystromformerModel and the
 * NystromformerFor* heads tformer has. */
#include <cjson/cJSON.h>
#include <string.h>

#include "../../util/util.h"
#include "../model_folder.h"
#include "tformer/nystrom.h"

/* config.json's keys through a field table, with transformers' defaults; other keys are ignored or refused below. */
static const char *const HF_ACTIVATIONS[] = {"relu", "gelu", "gelu_new|gelu_pytorch_tanh", NULL};
#define HF(m, type, name, def, range, flags) \
    TF_FIELD_ROW(tf_nystrom_config, m, type, name, def, range, NULL, NULL, flags, NULL)
static const tf_field HF_ROWS[] = {
    HF(vocab_size, TF_FIELD_INT, "vocab_size", "30000", "[1,inf)", 0),
    HF(max_positions, TF_FIELD_INT, "max_position_embeddings", "510", "[1,inf)", 0),
    HF(type_vocab_size, TF_FIELD_INT, "type_vocab_size", "2", "[1,inf)", 0),
    HF(n_layer, TF_FIELD_INT, "num_hidden_layers", "12", "[1,10000]", 0),
    HF(n_head, TF_FIELD_INT, "num_attention_heads", "12", "[1,inf)", 0),
    HF(d_model, TF_FIELD_INT, "hidden_size", "768", "[1,inf)", 0),
    HF(d_ff, TF_FIELD_INT, "intermediate_size", "3072", "[1,inf)", 0),
    TF_FIELD_ROW(tf_nystrom_config, activation, TF_FIELD_ENUM, "hidden_act", "gelu_new", NULL, HF_ACTIVATIONS, NULL, 0,
                 NULL),
    HF(norm_eps, TF_FIELD_FLOAT, "layer_norm_eps", "1e-5", "(0,inf)", 0),
    HF(dropout, TF_FIELD_FLOAT, "hidden_dropout_prob", "0.1", "[0,1)", 0),
    HF(seq_len, TF_FIELD_INT, "segment_means_seq_len", "64", "[1,inf)", 0),
    HF(landmarks, TF_FIELD_INT, "num_landmarks", "64", "[1,inf)", 0),
    HF(conv_kernel, TF_FIELD_INT, "conv_kernel_size", "65", "[0,inf)", TF_FIELD_NULL_ZERO),
    HF(init_std, TF_FIELD_FLOAT, "initializer_range", "0.02", "(0,inf)", 0),
    HF(tied, TF_FIELD_BOOL, "tie_word_embeddings", "true", NULL, 0),
};
#undef HF
static const tf_field_table HF_TABLE = {"config.json", HF_ROWS, (int)(sizeof HF_ROWS / sizeof HF_ROWS[0])};

/* Settings transformers runs differently from tformer, or not at all: refused by name. */
static int refuse_unsupported(const cJSON *root, const char *path) {
    const cJSON *j = cJSON_GetObjectItemCaseSensitive(root, "model_type");
    if (cJSON_IsString(j) && strcmp(j->valuestring, "nystromformer"))
        return tf_set_error("%s: model_type \"%s\" is not \"nystromformer\"", path, j->valuestring);
    if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(root, "inv_coeff_init_option")))
        return tf_set_error("%s: \"inv_coeff_init_option\" must be false (transformers 4.x then reads "
                            "config[\"inv_init_coeff_option\"], which fails)", path);
    j = cJSON_GetObjectItemCaseSensitive(root, "position_embedding_type");
    if (j && !cJSON_IsNull(j) && !(cJSON_IsString(j) && !strcmp(j->valuestring, "absolute")))
        return tf_set_error("%s: \"position_embedding_type\" must be \"absolute\" (transformers adds no positions "
                            "otherwise; not implemented)", path);
    return 0;
}

/* architectures[0] (NystromformerModel when absent), num_labels, problem_type. */
static int read_extras(const cJSON *root, const char *path, tf_nystrom_config *c) {
    const cJSON *arch = cJSON_GetObjectItemCaseSensitive(root, "architectures");
    const cJSON *first = cJSON_IsArray(arch) ? cJSON_GetArrayItem(arch, 0) : NULL;
    int head = cJSON_IsString(first) ? tf_nystrom_head_from_name(first->valuestring) : TF_NYSTROM_BODY;
    if (head < 0)
        return tf_set_error("%s: architecture \"%s\" is not a Nystromformer class tformer has (%s, %s, %s, %s)", path,
                            first->valuestring, tf_nystrom_head_name(TF_NYSTROM_BODY), tf_nystrom_head_name(TF_NYSTROM_MLM),
                            tf_nystrom_head_name(TF_NYSTROM_SEQ_CLS), tf_nystrom_head_name(TF_NYSTROM_TOKEN_CLS));
    c->head = (tf_nystrom_head)head;
    int regression;
    if (tf_folder_read_classes(root, path, &c->n_labels, &regression)) return -1;
    const cJSON *pad = cJSON_GetObjectItemCaseSensitive(root, "pad_token_id"); /* transformers' default 1 */
    c->pad_token_id = !pad ? 1 : cJSON_IsNumber(pad) ? pad->valueint : -1;
    if (pad && !cJSON_IsNull(pad) && (!cJSON_IsNumber(pad) || pad->valueint < 0 || pad->valueint >= c->vocab_size))
        return tf_set_error("%s: \"pad_token_id\" must be null or an id below vocab_size %d", path, c->vocab_size);
    c->regression = c->head == TF_NYSTROM_SEQ_CLS && regression;
    return refuse_unsupported(root, path);
}

static int read_config(const cJSON *root, const char *path, tf_nystrom_config *c) {
    memset(c, 0, sizeof *c);
    tf_fields f = {&HF_TABLE, c};
    if (tf_fields_defaults(&f, 1) || tf_fields_from_json(root, &f, 1, path, 1) || tf_fields_check(&f, 1) ||
        read_extras(root, path, c))
        return -1;
    if (!tf_nystrom_config_check(c)) return 0;
    char msg[512];
    snprintf(msg, sizeof msg, "%s", tf_error());
    return tf_set_error("%s: %s", path, msg);
}

/* ---------------------------------------------------------------- weights */

#define PREFIX "nystromformer."
#define PREFIX_LEN 14

/* The file's tensor for one of ours: as named, or with / without the prefix.
 * The MLM bias: the forward adds cls.predictions.decoder.bias, which 4.x ties
 * to cls.predictions.bias and 5.x keeps apart when the decoder is untied (as
 * BERT's): decoder.bias first. */
static const tf_st_entry *find_param(const tf_st_file *f, const char *name) {
    const tf_st_entry *e = !strcmp(name, "cls.predictions.bias") ? tf_st_find(f, "cls.predictions.decoder.bias") : NULL;
    if (!e) e = tf_st_find(f, name);
    char alt[512];
    if (!e && !strncmp(name, PREFIX, PREFIX_LEN)) e = tf_st_find(f, name + PREFIX_LEN);
    if (!e && strncmp(name, PREFIX, PREFIX_LEN) && (size_t)snprintf(alt, sizeof alt, PREFIX "%s", name) < sizeof alt)
        e = tf_st_find(f, alt);
    return e;
}

/* A file tensor we use (under either prefix) or one transformers stores besides: tied copies. */
static int known(const tf_params *ps, const char *name) {
    char alt[512];
    if (!strcmp(name, "cls.predictions.decoder.bias") || !strcmp(name, "cls.predictions.decoder.weight")) return 1;
    if (tf_params_get(ps, name)) return 1;
    if (!strncmp(name, PREFIX, PREFIX_LEN)) return tf_params_get(ps, name + PREFIX_LEN) != NULL;
    return (size_t)snprintf(alt, sizeof alt, PREFIX "%s", name) < sizeof alt && tf_params_get(ps, alt);
}

tf_nystrom *tf_nystrom_load(const char *dir) {
    char path[4096], weights[4096];
    if (tf_path_join(path, sizeof path, dir, "config.json")) return NULL;
    if (tf_path_join(weights, sizeof weights, dir, "model.safetensors")) return NULL;
    tf_nystrom_config c;
    cJSON *root = tf_json_read(path);
    tf_nystrom *m = root && !read_config(root, path, &c) ? tf_nystrom_new(&c, 0) : NULL;
    cJSON_Delete(root);
    if (m && tf_folder_load_hf_weights(weights, m->params, find_param, known)) {
        tf_nystrom_free(m);
        m = NULL;
    }
    return m;
}
