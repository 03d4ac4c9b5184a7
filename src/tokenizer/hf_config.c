/* The settings files beside a Hugging Face tokenizer.json: tokenizer_config.json
 * (do_lower_case, strip_accents, tokenize_chinese_chars, model_max_length,
 * tokenizer_class, special tokens) and special_tokens_map.json (special tokens,
 * read second: its entries win, as in transformers' from_pretrained). */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "tok_internal.h"

static const char *const role_keys[TF_N_ROLES] = {"cls_token", "sep_token",  "pad_token", "mask_token",
                                                  "unk_token", "bos_token", "eos_token"};

/* BERT-style fast tokenizers, whose constructor rebuilds a BertNormalizer that
 * disagrees with do_lower_case / strip_accents / tokenize_chinese_chars. */
static int bert_family(const char *cls) {
    static const char *const names[] = {"BertTokenizer",       "DistilBertTokenizer", "ElectraTokenizer",
                                        "FunnelTokenizer",     "LayoutLMTokenizer",   "LxmertTokenizer",
                                        "MobileBertTokenizer", "SqueezeBertTokenizer", "ConvBertTokenizer",
                                        "RetriBertTokenizer",  "MPNetTokenizer",      "RealmTokenizer"};
    size_t n = strlen(cls);
    if (n > 4 && !strcmp(cls + n - 4, "Fast")) n -= 4;
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (strlen(names[i]) == n && !strncmp(cls, names[i], n)) return 1;
    return 0;
}

/* A special token: "text" or {"content": "text", ...}; NULL for null. */
static int token_text(const cJSON *v, const char *path, const char *key, char **out) {
    if (!v || cJSON_IsNull(v)) return 0;
    const cJSON *c = cJSON_IsObject(v) ? cJSON_GetObjectItemCaseSensitive(v, "content") : v;
    if (!cJSON_IsString(c)) return tf_set_error("%s: \"%s\" must be a string or an object with a \"content\" string", path, key);
    free(*out);
    if (!(*out = strdup(c->valuestring))) return tf_set_error("tokenizer: out of memory");
    return 0;
}

/* A true/false key: 1 / 0, -1 when absent or null. */
static int flag(const cJSON *root, const char *path, const char *key, int *out) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, key);
    if (!v || cJSON_IsNull(v)) return 0;
    if (!cJSON_IsBool(v)) return tf_set_error("%s: \"%s\" must be true, false or null", path, key);
    *out = cJSON_IsTrue(v);
    return 0;
}

static int read_tokenizer_config(tf_hf_config *c, const cJSON *root, const char *path) {
    c->present = 1;
    if (flag(root, path, "do_lower_case", &c->do_lower_case) || flag(root, path, "strip_accents", &c->strip_accents) ||
        flag(root, path, "tokenize_chinese_chars", &c->tokenize_chinese_chars))
        return -1;
    const cJSON *cls = cJSON_GetObjectItemCaseSensitive(root, "tokenizer_class");
    if (cls && !cJSON_IsNull(cls) && !cJSON_IsString(cls))
        return tf_set_error("%s: \"tokenizer_class\" must be a string", path);
    c->bert_family = cJSON_IsString(cls) ? bert_family(cls->valuestring) : -1;
    const cJSON *ml = cJSON_GetObjectItemCaseSensitive(root, "model_max_length");
    if (ml && !cJSON_IsNull(ml)) {
        if (!cJSON_IsNumber(ml) || ml->valuedouble < 1)
            return tf_set_error("%s: \"model_max_length\" must be a positive number", path);
        c->max_length = ml->valuedouble >= 1e12 ? 0 : (int64_t)ml->valuedouble; /* 1e30: transformers' "unknown" */
    }
    return 0;
}

static int read_one(tf_hf_config *c, const char *dir, const char *name, int is_config) {
    char path[4096];
    struct stat st;
    if (tf_path_join(path, sizeof path, dir, name)) return -1;
    if (stat(path, &st) != 0) return 0;
    cJSON *root = tf_json_read(path);
    if (!root) return -1;
    int rc = is_config ? read_tokenizer_config(c, root, path) : 0;
    for (int r = 0; r < TF_N_ROLES && !rc; r++)
        rc = token_text(cJSON_GetObjectItemCaseSensitive(root, role_keys[r]), path, role_keys[r], &c->role_tok[r]);
    cJSON_Delete(root);
    return rc;
}

int tf_hf_config_read(tf_hf_config *c, const char *dir) {
    memset(c, 0, sizeof *c);
    c->do_lower_case = c->strip_accents = c->tokenize_chinese_chars = c->bert_family = -1;
    if (read_one(c, dir, "tokenizer_config.json", 1) || read_one(c, dir, "special_tokens_map.json", 0)) {
        tf_hf_config_free(c);
        return -1;
    }
    return 0;
}

void tf_hf_config_free(tf_hf_config *c) {
    for (int r = 0; r < TF_N_ROLES; r++) free(c->role_tok[r]), c->role_tok[r] = NULL;
}

const char *tf_hf_role_key(int role) { return role_keys[role]; }
