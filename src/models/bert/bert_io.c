/* BERT models as Hugging Face folders: config.json + model.safetensors, both
 * ways, for BertModel and the five BertFor* heads; RoBERTa's five classes
 * (tf_bert_config.roberta) and DistilBERT's (tf_bert_config.distilbert, its
 * config.json in bert_distil.c) both ways; RoFormer's four classes
 * with BERT's heads both ways (a model with exactly RoFormer's arithmetic is
 * written as RoFormer). A folder can be loaded
 * with another head than its own (a pre-trained body fine-tuned): the head's
 * tensors it lacks are initialised, the ones of its old head left unused. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "../../nn/nn_internal.h"
#include "../../util/util.h"
#include "../model_folder.h"
#include "bert_internal.h"

/* config.json's keys through a field table; the many other keys are ignored. */
static const char *const HF_ACTIVATIONS[] = {"relu", "gelu", "gelu_new|gelu_pytorch_tanh", NULL};
#define HF(m, type, name, def, flags) TF_FIELD_ROW(tf_bert_config, m, type, name, def, NULL, NULL, NULL, flags, NULL)
#define HF_E(m, name, def, choices) TF_FIELD_ROW(tf_bert_config, m, TF_FIELD_ENUM, name, def, NULL, choices, NULL, 0, NULL)
static const tf_field HF_ROWS[] = {
    HF(vocab_size, TF_FIELD_INT, "vocab_size", NULL, TF_FIELD_REQUIRED),
    HF(context, TF_FIELD_INT, "max_position_embeddings", "512", 0),
    HF(type_vocab_size, TF_FIELD_INT, "type_vocab_size", "2", 0),
    HF(n_layer, TF_FIELD_INT, "num_hidden_layers", "12", 0),
    HF(n_head, TF_FIELD_INT, "num_attention_heads", "12", 0),
    HF(d_model, TF_FIELD_INT, "hidden_size", "768", 0),
    HF(d_ff, TF_FIELD_INT, "intermediate_size", "3072", 0),
    HF_E(activation, "hidden_act", "gelu", HF_ACTIVATIONS),
    HF(norm_eps, TF_FIELD_FLOAT, "layer_norm_eps", "1e-12", 0),
    HF(dropout, TF_FIELD_FLOAT, "hidden_dropout_prob", "0.1", 0),
    HF(attn_dropout, TF_FIELD_FLOAT, "attention_probs_dropout_prob", "0.1", 0),
    HF(init_std, TF_FIELD_FLOAT, "initializer_range", "0.02", 0),
    HF(tied, TF_FIELD_BOOL, "tie_word_embeddings", "true", 0),
    TF_FIELD_SUB(tf_bert_config, attention, tf_attention_hf_table),
};
#undef HF
#undef HF_E
static const tf_field_table HF_TABLE = {"config.json", HF_ROWS, (int)(sizeof HF_ROWS / sizeof HF_ROWS[0])};

/* Hugging Face's BigBirdModel is BERT's arithmetic under BERT's names, with
 * attention_type "original_full" (full attention) or "block_sparse" (its
 * block layout through the sparse kernel: docs/long-sequences.md); rescaled
 * embeddings and bias-free projections are refused by name. */
static int read_bigbird(const cJSON *root, const char *path, tf_bert_config *c) {
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(root, "attention_type");
    int sparse = cJSON_IsString(t) && !strcmp(t->valuestring, "block_sparse");
    if (t && !sparse && !(cJSON_IsString(t) && !strcmp(t->valuestring, "original_full")))
        return tf_set_error("%s: BigBird's \"attention_type\" must be \"original_full\" or \"block_sparse\"", path);
    if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(root, "rescale_embeddings")))
        return tf_set_error("%s: BigBird's \"rescale_embeddings\" must be false", path);
    if (cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(root, "use_bias")))
        return tf_set_error("%s: BigBird's \"use_bias\" must be true", path);
    if (!sparse) return 0;
    static const char *const KEYS[] = {"block_size", "num_random_blocks", "pad_token_id"};
    int *dst[] = {&c->bigbird_block, &c->bigbird_random, &c->pad_token_id}, def[] = {64, 3, 0};
    for (int i = 0; i < 3; i++) {
        const cJSON *j = cJSON_GetObjectItemCaseSensitive(root, KEYS[i]);
        *dst[i] = j ? j->valueint : def[i];
        if ((j && (!cJSON_IsNumber(j) || j->valuedouble != (double)j->valueint)) || *dst[i] < (i < 2) ||
            (i == 0 && *dst[i] > TF_SPARSE_MAX_BLOCK) || (i == 2 && *dst[i] >= c->vocab_size))
            return tf_set_error("%s: BigBird's \"%s\" must be an integer in [%d, %d] with block_sparse attention%s",
                                path, KEYS[i], i < 2, i == 0 ? TF_SPARSE_MAX_BLOCK : i == 2 ? c->vocab_size - 1 : INT32_MAX,
                                i == 1 ? " (transformers fails with 0 random blocks)" : "");
    }
    c->bigbird_sparse = 1;
    return 0;
}

/* BertConfig settings that change the arithmetic and that tformer does not
 * implement: refused by name rather than run to a different answer. */
static int refuse_unsupported(const cJSON *root, const char *path, tf_bert_config *c) {
    if (read_bigbird(root, path, c)) return -1;
    const cJSON *j = cJSON_GetObjectItemCaseSensitive(root, "position_embedding_type");
    if (j && !cJSON_IsNull(j) && !(cJSON_IsString(j) && !strcmp(j->valuestring, "absolute")))
        return tf_set_error("%s: \"position_embedding_type\" must be \"absolute\" (relative positions are not "
                            "implemented)", path);
    static const char *const FALSE_KEYS[] = {"is_decoder", "add_cross_attention"};
    for (int i = 0; i < 2; i++) {
        j = cJSON_GetObjectItemCaseSensitive(root, FALSE_KEYS[i]);
        if (cJSON_IsTrue(j))
            return tf_set_error("%s: \"%s\" must be false: tformer's BERT is an encoder", path, FALSE_KEYS[i]);
    }
    return 0;
}

/* tformer's own settings (tf_bert_config's norm_first, pooling,
 * learned_positions), written only when they differ from BERT's:
 * tformer_norm_first, tformer_pooling, tformer_learned_positions. */
static int read_own(const cJSON *root, const char *path, tf_bert_config *c) {
    const cJSON *nf = cJSON_GetObjectItemCaseSensitive(root, "tformer_norm_first");
    const cJSON *pool = cJSON_GetObjectItemCaseSensitive(root, "tformer_pooling");
    const cJSON *lp = cJSON_GetObjectItemCaseSensitive(root, "tformer_learned_positions");
    if (nf && !cJSON_IsBool(nf)) return tf_set_error("%s: \"tformer_norm_first\" must be true or false", path);
    if (lp && !cJSON_IsBool(lp)) return tf_set_error("%s: \"tformer_learned_positions\" must be true or false", path);
    c->norm_first = cJSON_IsTrue(nf);
    c->learned_positions = !cJSON_IsFalse(lp);
    if (!pool) return 0;
    static const char *const NAMES[] = {"cls", "mean", "last"};
    static const tf_pooling KINDS[] = {TF_POOL_CLS, TF_POOL_MEAN, TF_POOL_LAST};
    for (int i = 0; i < 3; i++)
        if (cJSON_IsString(pool) && !strcmp(pool->valuestring, NAMES[i])) return c->pooling = KINDS[i], 0;
    return tf_set_error("%s: \"tformer_pooling\" must be \"cls\", \"mean\" or \"last\"", path);
}

/* num_labels from id2label (Hugging Face writes that, not num_labels), and the names. */
int tf_bert_read_labels(const cJSON *root, const char *path, tf_bert *m_or_null, int *n_labels) {
    const cJSON *map = cJSON_GetObjectItemCaseSensitive(root, "id2label");
    const cJSON *n = cJSON_GetObjectItemCaseSensitive(root, "num_labels");
    *n_labels = cJSON_IsNumber(n) ? n->valueint : map ? cJSON_GetArraySize(map) : 2;
    if (!map || !m_or_null) return 0;
    if (!cJSON_IsObject(map) || cJSON_GetArraySize(map) != *n_labels)
        return tf_set_error("%s: \"id2label\" must be an object of %d labels", path, *n_labels);
    return tf_labels_from_json(&m_or_null->labels, *n_labels, map, path);
}

/* RoFormer's classes whose head is BERT's (their body is BERT's, turned:
 * read_roformer), as tformer's heads; -1 for the others. */
static int roformer_head(const char *name) {
    static const char *const NAMES[] = {"RoFormerModel", "RoFormerForMaskedLM", "RoFormerForTokenClassification",
                                        "RoFormerForQuestionAnswering"};
    static const tf_bert_head AS[] = {TF_BERT_BODY, TF_BERT_MLM, TF_BERT_TOKEN_CLS, TF_BERT_QA};
    for (int i = 0; i < 4; i++)
        if (!strcmp(name, NAMES[i])) return (int)AS[i];
    return -1;
}

/* RoFormer: BERT's body without the position table, q and k of every layer
 * turned by interleaved pairs at base 10000 (tformer's --rope interleaved
 * --learned-positions false). A projection after the embeddings
 * (embedding_size other than hidden_size) and v turned too (rotary_value)
 * are refused by name. */
static int read_roformer(const cJSON *root, const char *path, tf_bert_config *c) {
    const cJSON *e = cJSON_GetObjectItemCaseSensitive(root, "embedding_size");
    if (e && !cJSON_IsNull(e) && !(cJSON_IsNumber(e) && e->valuedouble == (double)c->d_model))
        return tf_set_error("%s: RoFormer's \"embedding_size\" must be null or hidden_size %d (the projection after "
                            "the embeddings is not implemented)", path, c->d_model);
    if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(root, "rotary_value")))
        return tf_set_error("%s: RoFormer's \"rotary_value\" must be false (tformer turns q and k only)", path);
    c->learned_positions = 0, c->attention.rope = TF_ROPE_INTERLEAVED, c->attention.rope_base = 10000.0f;
    return 0;
}

/* RoBERTa (architectures Roberta* or model_type "roberta"): BERT's body with
 * RoBERTa's positions and heads (tf_bert_config.roberta); its pad_token_id
 * (transformers' default 1) sets the positions. The classes tformer lacks
 * (RobertaForCausalLM, RobertaForMultipleChoice) are refused by name. */
static int read_roberta(const cJSON *root, const char *path, const char *arch, tf_bert_config *c, int *head) {
    int xlm = arch && !strncmp(arch, "XLM", 3); /* XLM-RoBERTa: RoBERTa's classes under other names */
    *head = arch ? tf_bert_roberta_head_from_name(arch + (xlm ? 3 : 0)) : TF_BERT_BODY;
    if (*head < 0)
        return tf_set_error("%s: architecture \"%s\": tformer reads %sRobertaModel, %sRobertaForMaskedLM, "
                            "%sRobertaForSequenceClassification, %sRobertaForTokenClassification and "
                            "%sRobertaForQuestionAnswering", path, arch, xlm ? "XLM" : "", xlm ? "XLM" : "",
                            xlm ? "XLM" : "", xlm ? "XLM" : "", xlm ? "XLM" : "");
    const cJSON *pad = cJSON_GetObjectItemCaseSensitive(root, "pad_token_id");
    if (pad && !(cJSON_IsNumber(pad) && pad->valuedouble == (double)pad->valueint && pad->valueint >= 0 &&
                 pad->valueint < c->vocab_size))
        return tf_set_error("%s: RoBERTa's \"pad_token_id\" must be an id below vocab_size %d (its positions count "
                            "from it)", path, c->vocab_size);
    c->roberta = 1, c->pad_token_id = pad ? pad->valueint : 1;
    return 0;
}

int tf_bert_read_head(const cJSON *root, const char *path, const tf_bert_load_opts *o, tf_bert_config *c, int head) {
    c->head = o && o->head >= 0 ? (tf_bert_head)o->head : (tf_bert_head)head;
    if (tf_bert_read_labels(root, path, NULL, &c->n_labels)) return -1;
    if (o && o->n_labels > 0) c->n_labels = o->n_labels;
    const cJSON *p = cJSON_GetObjectItemCaseSensitive(root, "problem_type");
    if (cJSON_IsString(p) && !strcmp(p->valuestring, "multi_label_classification"))
        return tf_set_error("%s: problem_type multi_label_classification is not implemented", path);
    c->problem =
        (cJSON_IsString(p) && !strcmp(p->valuestring, "regression")) || (!cJSON_IsString(p) && c->n_labels == 1)
            ? TF_BERT_REGRESSION
            : TF_BERT_SINGLE_LABEL;
    return 0;
}

/* *folder_head: the folder's own head (architectures[0]); c->head: the one asked for. */
static int read_extras(const cJSON *root, const char *path, const tf_bert_load_opts *o, tf_bert_config *c,
                       int *folder_head) {
    const cJSON *arch = cJSON_GetObjectItemCaseSensitive(root, "architectures");
    const cJSON *first = cJSON_IsArray(arch) ? cJSON_GetArrayItem(arch, 0) : NULL;
    int bigbird = cJSON_IsString(first) && !strcmp(first->valuestring, "BigBirdModel");
    int roformer = cJSON_IsString(first) && !strncmp(first->valuestring, "RoFormer", 8);
    const cJSON *type = cJSON_GetObjectItemCaseSensitive(root, "model_type");
    int roberta = (cJSON_IsString(first) && (!strncmp(first->valuestring, "Roberta", 7) ||
                                             !strncmp(first->valuestring, "XLMRoberta", 10))) ||
                  (cJSON_IsString(type) && (!strcmp(type->valuestring, "roberta") || !strcmp(type->valuestring, "xlm-roberta")));
    int head = bigbird ? TF_BERT_BODY : roformer ? roformer_head(first->valuestring)
             : cJSON_IsString(first) ? tf_bert_head_from_name(first->valuestring) : TF_BERT_BODY;
    if (roberta && read_roberta(root, path, cJSON_IsString(first) ? first->valuestring : NULL, c, &head)) return -1;
    if (roformer && head < 0)
        return tf_set_error("%s: architecture \"%s\": tformer reads RoFormerModel, RoFormerForMaskedLM, "
                            "RoFormerForTokenClassification and RoFormerForQuestionAnswering (BERT's heads)", path,
                            first->valuestring);
    if (cJSON_IsString(first) && head < 0)
        return tf_set_error("%s: architecture \"%s\" is not a BERT class tformer has", path, first->valuestring);
    *folder_head = head;
    if (tf_bert_read_head(root, path, o, c, head)) return -1;
    const cJSON *cd = cJSON_GetObjectItemCaseSensitive(root, "classifier_dropout");
    c->classifier_dropout = cJSON_IsNumber(cd) ? (float)cd->valuedouble : -1.0f;
    return read_own(root, path, c) || refuse_unsupported(root, path, c) || (roformer && read_roformer(root, path, c));
}

int tf_bert_config_from_hf(const cJSON *root, const char *path, const tf_bert_load_opts *o, tf_bert_config *c,
                           int *folder_head) {
    static const char *const TYPES[] = {"bert",    "tformer-bert", "roformer",   "big_bird",
                                        "roberta", "xlm-roberta",  "distilbert", NULL};
    *c = tf_bert_config_default(0, 0, 0, 0, 0);
    tf_fields f = {&HF_TABLE, c};
    if (tf_folder_check_type(root, path, "BERT (RoBERTa, XLM-RoBERTa, DistilBERT, RoFormer, BigBird)", TYPES)) return -1;
    const cJSON *type = cJSON_GetObjectItemCaseSensitive(root, "model_type");
    const cJSON *arch = cJSON_GetObjectItemCaseSensitive(root, "architectures");
    const cJSON *first = cJSON_IsArray(arch) ? cJSON_GetArrayItem(arch, 0) : NULL;
    if ((cJSON_IsString(type) && !strcmp(type->valuestring, "distilbert")) ||
        (cJSON_IsString(first) && !strncmp(first->valuestring, "DistilBert", 10)))
        return tf_bert_distil_config_from_hf(root, path, o, c, folder_head); /* its own keys */
    if (tf_fields_defaults(&f, 1) || tf_fields_from_json(root, &f, 1, path, 1) ||
        read_extras(root, path, o, c, folder_head))
        return -1;
    if (c->roberta)
        c->pooler = c->head == TF_BERT_BODY; /* its heads have none (tf_bert_load: the body's file says) */
    if (c->bigbird_sparse && c->head != TF_BERT_BODY)
        return tf_set_error("%s: a block_sparse BigBird is read as BigBirdModel only (hf-run); tformer has no head or "
                            "training for it", path);
    if (!tf_bert_config_check(c)) return 0;
    char msg[512];
    snprintf(msg, sizeof msg, "%s", tf_error());
    return tf_set_error("%s: %s", path, msg);
}

/* ---------------------------------------------------------------- weights */

/* The body's prefixes with a head on it (BERT's, RoBERTa's, DistilBERT's). */
static const char *const BODY_PREFIXES[] = {"bert.", "roberta.", "distilbert."};

/* A body name without its prefix. */
static const char *strip_body_prefix(const char *name) {
    for (int i = 0; i < 3; i++)
        if (!strncmp(name, BODY_PREFIXES[i], strlen(BODY_PREFIXES[i]))) return name + strlen(BODY_PREFIXES[i]);
    return name;
}

/* The file's tensor for one of ours: as named, with / without "bert." or
 * "roberta.", or under RoFormer's "roformer." (its body has BERT's names). */
static const tf_st_entry *find_as_named(const tf_st_file *f, const char *name) {
    const tf_st_entry *e = tf_st_find(f, name);
    const char *body = strip_body_prefix(name);
    char alt[512];
    if (!e && body != name) e = tf_st_find(f, body);
    for (int i = 0; !e && body == name && i < 3; i++)
        if ((size_t)snprintf(alt, sizeof alt, "%s%s", BODY_PREFIXES[i], name) < sizeof alt) e = tf_st_find(f, alt);
    if (!e && (size_t)snprintf(alt, sizeof alt, "roformer.%s", body) < sizeof alt) e = tf_st_find(f, alt);
    return e;
}

/* BigBird's pooler is one nn.Linear: "pooler.weight" for BERT's "pooler.dense.weight".
 * The other name of `name` in out, or NULL when it has none. */
static const char *bigbird_pooler(const char *name, char *out, size_t cap) {
    const char *p = strstr(name, "pooler."), *rest = p ? p + 7 : NULL;
    if (!rest) return NULL;
    const char *swap = !strcmp(rest, "dense.weight") ? "weight" : !strcmp(rest, "dense.bias") ? "bias"
                     : !strcmp(rest, "weight") ? "dense.weight" : !strcmp(rest, "bias") ? "dense.bias" : NULL;
    if (!swap || (size_t)snprintf(out, cap, "%.*spooler.%s", (int)(p - name), name, swap) >= cap) return NULL;
    return out;
}

static const tf_st_entry *find_param(const tf_st_file *f, const char *name) {
    const tf_st_entry *e = find_as_named(f, name);
    char alt[512];
    const char *other = e ? NULL : bigbird_pooler(name, alt, sizeof alt);
    return other ? find_as_named(f, other) : e;
}

/* Tensors Hugging Face stores besides the parameters: buffers, tied copies
 * and RoFormer's sinusoid table (checked by check_sinusoids). */
static int known_extra(const char *name) {
    static const char *const ENDS[] = {"embeddings.position_ids", "cls.predictions.decoder.bias",
                                       "cls.predictions.decoder.weight", "encoder.embed_positions.weight",
                                       "lm_head.decoder.bias", "lm_head.decoder.weight", "vocab_projector.weight"};
    size_t n = strlen(name);
    for (int i = 0; i < 7; i++) {
        size_t k = strlen(ENDS[i]);
        if (n >= k && !strcmp(name + n - k, ENDS[i])) return 1;
    }
    return 0;
}

/* A tensor the model has under either prefix (RoFormer's "roformer." as "bert."). */
static int ours_as_named(const tf_params *ps, const char *name) {
    char alt[512];
    if (!strncmp(name, "roformer.", 9) && (size_t)snprintf(alt, sizeof alt, "bert.%s", name + 9) < sizeof alt)
        return ours_as_named(ps, alt);
    if (tf_params_get(ps, name)) return 1;
    const char *body = strip_body_prefix(name);
    if (body != name) return tf_params_get(ps, body) != NULL;
    for (int i = 0; i < 3; i++)
        if ((size_t)snprintf(alt, sizeof alt, "%s%s", BODY_PREFIXES[i], name) < sizeof alt && tf_params_get(ps, alt))
            return 1;
    return 0;
}

static int ours(const tf_params *ps, const char *name) {
    char alt[512];
    const char *other = bigbird_pooler(name, alt, sizeof alt);
    return ours_as_named(ps, name) || (other && ours_as_named(ps, other));
}

static int read_tensor(const tf_st_file *f, const char *path, const char *name, tf_tensor *t, int may_miss) {
    /* The MLM decoder's bias: Hugging Face's forward adds cls.predictions.decoder.bias (RoBERTa's
     * lm_head.decoder.bias), which 4.x ties to cls.predictions.bias (lm_head.bias) and 5.x keeps
     * apart when the decoder is untied. */
    const tf_st_entry *e = !strcmp(name, "cls.predictions.bias") ? tf_st_find(f, "cls.predictions.decoder.bias")
                         : !strcmp(name, "lm_head.bias") ? tf_st_find(f, "lm_head.decoder.bias") : NULL;
    if (!e) e = find_param(f, name);
    if (!e) return may_miss ? 0 : tf_set_error("%s: missing tensor '%s'", path, name);
    int same = e->ndim == t->ndim;
    for (int d = 0; same && d < t->ndim; d++) same = e->shape[d] == t->shape[d];
    if (!same) return tf_set_error("%s: tensor '%s' has the wrong shape for config.json", path, name);
    return tf_st_read_f32(f, e, t);
}

/* The head's tensors (the pooler's too): initialised when a folder lacks them. */
static int head_tensor(const char *name) {
    return !strncmp(name, "cls.", 4) || !strncmp(name, "classifier.", 11) || !strncmp(name, "qa_outputs.", 11) ||
           !strncmp(name, "lm_head.", 8) || !strncmp(name, "vocab_", 6) || !strncmp(name, "pre_classifier.", 15) ||
           strstr(name, "pooler.") != NULL;
}

/* RoFormer stores its rotation angles' sines and cosines (max_position_embeddings,
 * head width: sin(p w_i) for i < D/2, then cos(p w_i), w_i = 10000^(-2i/D)) and
 * transformers uses them as stored; tformer computes them, so a table that is
 * not those values is refused rather than run to another answer. */
static double roformer_sinusoid(int64_t p, int64_t j, int64_t D) {
    int64_t i = j < D / 2 ? j : j - D / 2;
    double angle = (double)p / pow(10000.0, 2.0 * (double)i / (double)D);
    return j < D / 2 ? sin(angle) : cos(angle);
}

static int check_sinusoids(const tf_st_file *f, const char *path, const tf_bert_config *c) {
    const tf_st_entry *e = tf_st_find(f, "roformer.encoder.embed_positions.weight");
    if (!e) e = tf_st_find(f, "encoder.embed_positions.weight");
    if (!e) return 0;
    int64_t P = c->context, D = c->d_model / c->n_head;
    if (e->ndim != 2 || e->shape[0] != P || e->shape[1] != D)
        return tf_set_error("%s: tensor '%s' has the wrong shape for config.json", path, e->name);
    tf_arena *a = tf_arena_new(0);
    tf_tensor *t = a ? tf_tensor_alloc(a, TF_DTYPE_F32, 2, (int64_t[]){P, D}, 0) : NULL;  // (P,D)
    int rc = !t ? tf_set_error("%s: out of memory", path) : tf_st_read_f32(f, e, t);
    for (int64_t p = 0; !rc && p < P; p++)
        for (int64_t j = 0; !rc && j < D; j++) {
            double want = roformer_sinusoid(p, j, D), got = tf_f32(t)[p * D + j];
            if (fabs(got - want) > 1e-6)
                rc = tf_set_error("%s: tensor '%s' is not RoFormer's sinusoid table (row %lld, column %lld: %g, not "
                                  "%g): tformer computes the rotation from the positions", path, e->name,
                                  (long long)p, (long long)j, got, want);
        }
    tf_arena_free(a);
    return rc;
}

/* own_head: the folder's head is the model's (every tensor must be used);
 * else the new head's tensors keep their initial values when absent. */
static int load_weights(tf_bert *m, const char *path, uint64_t seed, int own_head) {
    tf_st_file *f = tf_st_open(path);
    if (!f) return -1;
    tf_params *ps = m->params;
    int rc = seed ? tf_params_init(ps, seed) : tf_params_alloc(ps);
    for (int i = 0; !rc && i < tf_params_count(ps); i++) {
        const char *name = tf_params_name(ps, i);
        rc = read_tensor(f, path, name, tf_params_tensor(ps, i), seed && head_tensor(name));
        if (rc && !own_head && head_tensor(name) && !find_param(f, name))
            rc = tf_set_error("%s: no tensor '%s': the folder has no %s head", path, name,
                              tf_bert_class_name(&m->cfg));
    }
    for (int i = 0; !rc && own_head && i < tf_st_count(f); i++) {
        const char *name = tf_st_entry_at(f, i)->name;
        if (!ours(ps, name) && !known_extra(name)) rc = tf_set_error("%s: unexpected tensor '%s'", path, name);
    }
    if (!rc) rc = check_sinusoids(f, path, &m->cfg);
    tf_st_close(f);
    return rc;
}

/* BertModel folders may lack the pooler (add_pooling_layer=False). */
static int has_pooler(const char *path, int *pooler) {
    tf_st_file *f = tf_st_open(path);
    if (!f) return -1;
    *pooler = find_param(f, "pooler.dense.weight") != NULL;
    tf_st_close(f);
    return 0;
}

tf_bert *tf_bert_load(const char *dir, const tf_bert_load_opts *opts) {
    char path[4096], weights[4096];
    tf_bert_config c;
    if (tf_path_join(path, sizeof path, dir, "config.json")) return NULL;
    if (tf_path_join(weights, sizeof weights, dir, "model.safetensors")) return NULL;
    cJSON *root = tf_json_read(path); /* read once: the table's keys, then the rest */
    int folder_head = -1, pooled = 1;
    int rc = !root || tf_bert_config_from_hf(root, path, opts, &c, &folder_head);
    if (!rc && c.head == TF_BERT_BODY) rc = has_pooler(weights, &pooled);
    c.pooler = c.distilbert             ? 0
               : c.head == TF_BERT_BODY ? pooled
                                        : c.head == TF_BERT_PRETRAINING || (c.head == TF_BERT_SEQ_CLS && !c.roberta);
    tf_bert *m = rc ? NULL : tf_bert_new(&c, 0);
    int n_labels;
    if (m && (int)c.head == folder_head && tf_bert_read_labels(root, path, m, &n_labels)) rc = -1;
    cJSON_Delete(root);
    uint64_t seed = opts && (int)c.head != folder_head ? opts->seed : 0; /* 0: every tensor must be there */
    if (m && (rc || load_weights(m, weights, seed, (int)c.head == folder_head))) {
        tf_bert_free(m);
        return NULL;
    }
    return m;
}

/* ---------------------------------------------------------------- label names */

int tf_bert_set_labels(tf_bert *m, const char *const *names, int n) {
    if (n != m->cfg.n_labels) return tf_set_error("bert: %d label names for %d labels", n, m->cfg.n_labels);
    return tf_labels_set(&m->labels, n, names);
}

const char *tf_bert_label(const tf_bert *m, int i, char *buf, size_t n) {
    return tf_labels_name(m->labels, m->cfg.n_labels, i, buf, n);
}

/* ---------------------------------------------------------------- saving */

static int write_config(const tf_bert *m, const char *path) {
    const tf_bert_config *c = &m->cfg;
    tf_fields f = {&HF_TABLE, (void *)c};
    cJSON *r = cJSON_CreateObject();
    cJSON *arch = r ? cJSON_AddArrayToObject(r, "architectures") : NULL;
    if (arch) cJSON_AddItemToArray(arch, cJSON_CreateString(tf_bert_class_name(c)));
    /* Arithmetic that Hugging Face's BertModel does not have (another
     * attention kind, rotary positions or Scalable-Softmax, pre-LN, mean
     * or last pooling): model_type "tformer-bert", which transformers
     * refuses rather than run the weights as BERT's. */
    int own = c->norm_first || c->pooling != TF_POOL_CLS || c->attention.kind != TF_ATTENTION_FULL ||
              c->attention.rope != TF_ROPE_NONE || !c->learned_positions || c->attention.ssmax > 0.0f;
    cJSON_AddStringToObject(r, "model_type", own ? "tformer-bert" : c->roberta ? "roberta" : "bert");
    if (c->roberta) cJSON_AddNumberToObject(r, "pad_token_id", c->pad_token_id); /* its positions count from it */
    if (c->norm_first) cJSON_AddBoolToObject(r, "tformer_norm_first", 1);
    if (c->pooling != TF_POOL_CLS)
        cJSON_AddStringToObject(r, "tformer_pooling", c->pooling == TF_POOL_LAST ? "last" : "mean");
    if (!c->learned_positions) cJSON_AddBoolToObject(r, "tformer_learned_positions", 0);
    cJSON_AddStringToObject(r, "position_embedding_type", "absolute");
    int rc = !arch || tf_fields_to_json(r, &f, 1);
    if (c->classifier_dropout >= 0) cJSON_AddNumberToObject(r, "classifier_dropout", c->classifier_dropout);
    else cJSON_AddNullToObject(r, "classifier_dropout");
    if (c->head == TF_BERT_SEQ_CLS)
        cJSON_AddStringToObject(r, "problem_type", c->problem == TF_BERT_REGRESSION ? "regression"
                                                                                    : "single_label_classification");
    int named = c->head == TF_BERT_SEQ_CLS || c->head == TF_BERT_TOKEN_CLS;
    rc = rc || (named && tf_labels_to_json(m->labels, c->n_labels, r)) || tf_json_write(path, r);
    cJSON_Delete(r);
    return rc ? -1 : 0;
}

/* ---------------------------------------------------------------- RoFormer's form */

/* RoFormer's classes for tformer's heads (roformer_head's inverse); NULL for
 * the others (its sequence classifier is not BERT's pooler + Linear). */
static const char *roformer_class(tf_bert_head h) {
    return h == TF_BERT_BODY ? "RoFormerModel" : h == TF_BERT_MLM ? "RoFormerForMaskedLM"
         : h == TF_BERT_TOKEN_CLS ? "RoFormerForTokenClassification" : h == TF_BERT_QA ? "RoFormerForQuestionAnswering"
         : NULL;
}

/* A model whose arithmetic is exactly RoFormer's (read_roformer's inverse):
 * rotary positions on q and k by interleaved pairs at base 10000, no position
 * table, post-LN, full attention, no pooler (RoFormerModel has none), a head
 * RoFormer has with BERT's layout. */
static int roformer_form(const tf_bert_config *c) {
    float base = c->attention.rope_base;
    return c->attention.rope == TF_ROPE_INTERLEAVED && (base == 0.0f || base == 10000.0f) && !c->learned_positions &&
           !c->norm_first && c->attention.kind == TF_ATTENTION_FULL && c->attention.ssmax == 0.0f && !c->pooler &&
           !c->bigbird_sparse &&
           roformer_class(c->head) != NULL;
}

static int write_roformer_config(const tf_bert *m, const char *path) {
    const tf_bert_config *c = &m->cfg;
    tf_fields f = {&HF_TABLE, (void *)c};
    cJSON *r = cJSON_CreateObject();
    cJSON *arch = r ? cJSON_AddArrayToObject(r, "architectures") : NULL;
    if (arch) cJSON_AddItemToArray(arch, cJSON_CreateString(roformer_class(c->head)));
    cJSON_AddStringToObject(r, "model_type", "roformer");
    cJSON_AddNumberToObject(r, "embedding_size", c->d_model);
    cJSON_AddBoolToObject(r, "rotary_value", 0);
    int rc = !arch || tf_fields_to_json(r, &f, 1);
    if (c->classifier_dropout >= 0) cJSON_AddNumberToObject(r, "classifier_dropout", c->classifier_dropout);
    rc = rc || (c->head == TF_BERT_TOKEN_CLS && tf_labels_to_json(m->labels, c->n_labels, r)) || tf_json_write(path, r);
    cJSON_Delete(r);
    return rc ? -1 : 0;
}

/* model.safetensors as RoFormer names it: "roformer." for "bert.", and the
 * sinusoid table RoFormer stores (roformer_sinusoid), which tformer computes. */
static int write_roformer_weights(const tf_bert *m, const char *path) {
    const tf_bert_config *c = &m->cfg;
    int64_t P = c->context, D = c->d_model / c->n_head;
    tf_arena *a = tf_arena_new(0);
    tf_tensor *table = a ? tf_tensor_alloc(a, TF_DTYPE_F32, 2, (int64_t[]){P, D}, 0) : NULL;  // (P,D)
    tf_st_writer *w = table ? tf_st_writer_new() : NULL;
    int rc = w ? 0 : tf_set_error("%s: out of memory", path);
    for (int64_t p = 0; !rc && p < P; p++)
        for (int64_t j = 0; j < D; j++) tf_f32(table)[p * D + j] = (float)roformer_sinusoid(p, j, D);
    char name[512];
    const char *prefix = c->head == TF_BERT_BODY ? "" : "roformer.";
    for (int i = 0; !rc && i < tf_params_count(m->params); i++) {
        const char *n = tf_params_name(m->params, i);
        int body = !strncmp(n, "bert.", 5);
        snprintf(name, sizeof name, "%s%s", body ? "roformer." : "", body ? n + 5 : n);
        rc = tf_st_writer_add(w, name, tf_params_tensor(m->params, i));
    }
    snprintf(name, sizeof name, "%sencoder.embed_positions.weight", prefix);
    rc = rc || tf_st_writer_add(w, name, table);
    if (!rc && c->head == TF_BERT_MLM) /* as BERT's: transformers 5.x reads decoder.bias when untied */
        rc = tf_st_writer_add(w, "cls.predictions.decoder.bias", m->mlm.decoder.bias);
    rc = rc || tf_st_writer_save(w, path);
    tf_st_writer_free(w);
    tf_arena_free(a);
    return rc;
}

int tf_bert_save(const tf_bert *m, const char *dir) {
    if (m->cfg.bigbird_sparse) /* written as BERT it would come back with full attention */
        return tf_set_error("%s: a block_sparse BigBird cannot be saved (tformer writes BERT folders)", dir);
    if (mkdir(dir, 0755) && errno != EEXIST) return tf_set_error("%s: cannot create: %s", dir, strerror(errno));
    char path[4096];
    int roformer = roformer_form(&m->cfg);
    if (tf_path_join(path, sizeof path, dir, "config.json")) return -1;
    if (m->cfg.distilbert) { /* the tied decoder is the word table: transformers ties it on loading */
        if (tf_bert_distil_write_config(m, path)) return -1;
        if (tf_path_join(path, sizeof path, dir, "model.safetensors")) return -1;
        return tf_folder_save_weights(m->params, path, NULL, NULL);
    }
    if (roformer ? write_roformer_config(m, path) : write_config(m, path)) return -1;
    if (tf_path_join(path, sizeof path, dir, "model.safetensors")) return -1;
    if (roformer) return write_roformer_weights(m, path);
    /* the MLM decoder's bias under both names: transformers 5.x reads decoder.bias when untied */
    return tf_folder_save_weights(
        m->params, path, m->cfg.roberta ? "lm_head.decoder.bias" : "cls.predictions.decoder.bias", m->mlm.decoder.bias);
}
