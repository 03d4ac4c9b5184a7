/* Hugging Face's DistilBERT folders, both ways: DistilBertConfig's own keys
 * (dim, n_layers, n_heads, hidden_dim, activation, dropout,
 * attention_dropout, seq_classif_dropout, qa_dropout, sinusoidal_pos_embds)
 * onto tf_bert_config with distilbert set; the weights' names are bert.c's
 * (DistilBERT's name map) and bert_io.c reads them. What DistilBERT fixes
 * that BERT's config.json sets (every LayerNorm's eps 1e-12, no token types,
 * no pooler) is fixed here too: its config.json's layer_norm_eps or
 * type_vocab_size, which transformers ignores, are not read. */
#include <cjson/cJSON.h>
#include <string.h>

#include "../../util/util.h"
#include "bert_internal.h"
#include "../model_folder.h"

/* transformers' get_activation(config.activation): the ones tformer has. */
static const char *const ACTIVATIONS[] = {"relu", "gelu", "gelu_new|gelu_pytorch_tanh", NULL};
#define HF(m, type, name, def, flags, alias)                                                                           \
    TF_FIELD_ROW(tf_bert_config, m, type, name, def, NULL, NULL, NULL, flags, alias)
static const tf_field ROWS[] = {
    HF(vocab_size, TF_FIELD_INT, "vocab_size", NULL, TF_FIELD_REQUIRED, NULL),
    HF(context, TF_FIELD_INT, "max_position_embeddings", "512", 0, NULL),
    /* DistilBertConfig's attribute_map: hidden_size, num_attention_heads, num_hidden_layers */
    HF(n_layer, TF_FIELD_INT, "n_layers", "6", 0, "num_hidden_layers"),
    HF(n_head, TF_FIELD_INT, "n_heads", "12", 0, "num_attention_heads"),
    HF(d_model, TF_FIELD_INT, "dim", "768", 0, "hidden_size"),
    HF(d_ff, TF_FIELD_INT, "hidden_dim", "3072", 0, NULL),
    TF_FIELD_ROW(tf_bert_config, activation, TF_FIELD_ENUM, "activation", "gelu", NULL, ACTIVATIONS, NULL, 0, NULL),
    HF(dropout, TF_FIELD_FLOAT, "dropout", "0.1", 0, NULL),
    HF(attn_dropout, TF_FIELD_FLOAT, "attention_dropout", "0.1", 0, NULL),
    HF(classifier_dropout, TF_FIELD_FLOAT, "seq_classif_dropout", "0.2", 0, NULL),
    HF(qa_dropout, TF_FIELD_FLOAT, "qa_dropout", "0.1", 0, NULL),
    HF(init_std, TF_FIELD_FLOAT, "initializer_range", "0.02", 0, NULL),
    HF(tied, TF_FIELD_BOOL, "tie_word_embeddings", "true", 0, NULL),
    HF(distilbert_sinusoidal, TF_FIELD_BOOL, "sinusoidal_pos_embds", "false", 0, NULL),
};
#undef HF
static const tf_field_table TABLE = {"config.json", ROWS, (int)(sizeof ROWS / sizeof ROWS[0])};

/* pad_token_id: the word row without gradient (nn.Embedding's padding_idx); null: none (-1). */
static int read_pad(const cJSON *root, const char *path, tf_bert_config *c) {
    const cJSON *pad = cJSON_GetObjectItemCaseSensitive(root, "pad_token_id");
    c->pad_token_id = pad ? -1 : 0; /* DistilBertConfig's default 0 */
    if (!pad || cJSON_IsNull(pad)) return 0;
    if (!(cJSON_IsNumber(pad) && pad->valuedouble == (double)pad->valueint && pad->valueint >= 0 &&
          pad->valueint < c->vocab_size))
        return tf_set_error("%s: DistilBERT's \"pad_token_id\" must be null or an id below vocab_size %d", path,
                            c->vocab_size);
    c->pad_token_id = pad->valueint;
    return 0;
}

int tf_bert_distil_config_from_hf(const cJSON *root, const char *path, const tf_bert_load_opts *o, tf_bert_config *c,
                                  int *folder_head) {
    *c = tf_bert_config_default(0, 0, 0, 0, 0);
    tf_fields f = {&TABLE, c};
    if (tf_fields_defaults(&f, 1) || tf_fields_from_json(root, &f, 1, path, 1)) return -1;
    const cJSON *arch = cJSON_GetObjectItemCaseSensitive(root, "architectures");
    const cJSON *first = cJSON_IsArray(arch) ? cJSON_GetArrayItem(arch, 0) : NULL;
    int head = cJSON_IsString(first) ? tf_bert_distil_head_from_name(first->valuestring) : TF_BERT_BODY;
    if (head < 0)
        return tf_set_error("%s: architecture \"%s\": tformer reads DistilBertModel, DistilBertForMaskedLM, "
                            "DistilBertForSequenceClassification, DistilBertForTokenClassification and "
                            "DistilBertForQuestionAnswering", path, first->valuestring);
    *folder_head = head;
    if (tf_bert_read_head(root, path, o, c, head) || read_pad(root, path, c)) return -1;
    if (head == TF_BERT_QA && c->head == TF_BERT_QA && c->n_labels != 2) /* transformers raises */
        return tf_set_error("%s: DistilBertForQuestionAnswering needs num_labels 2 (got %d)", path, c->n_labels);
    c->distilbert = 1, c->norm_eps = 1e-12f, c->type_vocab_size = 1, c->pooler = 0, c->learned_positions = 1;
    if (!tf_bert_config_check(c)) return 0;
    char msg[512];
    snprintf(msg, sizeof msg, "%s", tf_error());
    return tf_set_error("%s: %s", path, msg);
}

int tf_bert_distil_write_config(const tf_bert *m, const char *path) {
    tf_bert_config c = m->cfg;
    if (c.classifier_dropout < 0) c.classifier_dropout = c.dropout; /* tformer's "the hidden dropout" */
    tf_fields f = {&TABLE, &c};
    cJSON *r = cJSON_CreateObject();
    cJSON *arch = r ? cJSON_AddArrayToObject(r, "architectures") : NULL;
    if (arch) cJSON_AddItemToArray(arch, cJSON_CreateString(tf_bert_class_name(&c)));
    cJSON_AddStringToObject(r, "model_type", "distilbert");
    int rc = !arch || tf_fields_to_json(r, &f, 1);
    if (c.pad_token_id >= 0) cJSON_AddNumberToObject(r, "pad_token_id", c.pad_token_id);
    else cJSON_AddNullToObject(r, "pad_token_id");
    if (c.head == TF_BERT_SEQ_CLS)
        cJSON_AddStringToObject(r, "problem_type", c.problem == TF_BERT_REGRESSION ? "regression"
                                                                                   : "single_label_classification");
    int named = c.head == TF_BERT_SEQ_CLS || c.head == TF_BERT_TOKEN_CLS;
    rc = rc || (named && tf_labels_to_json(m->labels, c.n_labels, r)) || tf_json_write(path, r);
    cJSON_Delete(r);
    return rc ? -1 : 0;
}
