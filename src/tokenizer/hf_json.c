/* Hugging Face tokenizer.json (the `tokenizers` single-file format) onto the
 * WordPiece and byte-level BPE tokenizers: WordPiece + BertNormalizer +
 * BertPreTokenizer, and BPE + ByteLevel (GPT-2, RoBERTa). Anything that would
 * encode differently is refused with an error naming the file and the
 * component; the settings files beside it (hf_config.c) give do_lower_case,
 * model_max_length and the special tokens' roles. */
#include <stdlib.h>
#include <string.h>

#include "hf_pipe.h"

typedef struct {
    const char *path;
    cJSON *root;
    tf_hf_config cfg;
    int n_added;
    int32_t *add_id;
    uint8_t *add_flags;
    const char **add_text;
    const char **tok; /* by id: the model's vocabulary, then added tokens beyond it */
    int32_t n, n_model;
    int bytelevel;    /* vocabulary written in GPT-2's byte-to-unicode characters */
} hf;

static const cJSON *item(const cJSON *o, const char *key) { return cJSON_GetObjectItemCaseSensitive(o, key); }
static int is_null(const cJSON *v) { return !v || cJSON_IsNull(v); }

/* The "type" of a component object; NULL + error when it has none. */
const char *tf_hfj_type(const char *path, const cJSON *o, const char *what) {
    const cJSON *t = cJSON_IsObject(o) ? item(o, "type") : NULL;
    if (!cJSON_IsString(t)) return tf_set_error("%s: \"%s\" has no \"type\"", path, what), NULL;
    return t->valuestring;
}

int tf_hfj_unsupported(const char *path, const char *what, const char *type, const char *supported) {
    return tf_set_error("%s: %s type \"%s\" is not supported (supported: %s)", path, what, type, supported);
}

/* Optional keys of object o (named ctx in messages): absent or null gives def. */
int tf_hfj_bool(const char *path, const cJSON *o, const char *ctx, const char *key, int def, int *out) {
    const cJSON *v = item(o, key);
    *out = def;
    if (is_null(v)) return 0;
    if (!cJSON_IsBool(v)) return tf_set_error("%s: %s.%s must be true or false", path, ctx, key);
    *out = cJSON_IsTrue(v);
    return 0;
}

int tf_hfj_int(const char *path, const cJSON *o, const char *ctx, const char *key, int def, int *out) {
    const cJSON *v = item(o, key);
    *out = def;
    if (is_null(v)) return 0;
    if (!cJSON_IsNumber(v) || v->valuedouble < 0 || v->valuedouble > 1e9 || (int)v->valuedouble != v->valuedouble)
        return tf_set_error("%s: %s.%s must be a non-negative integer", path, ctx, key);
    *out = (int)v->valuedouble;
    return 0;
}

int tf_hfj_str(const char *path, const cJSON *o, const char *ctx, const char *key, const char *def, const char **out) {
    const cJSON *v = item(o, key);
    *out = def;
    if (is_null(v)) return 0;
    if (!cJSON_IsString(v)) return tf_set_error("%s: %s.%s must be a string", path, ctx, key);
    *out = v->valuestring;
    return 0;
}

static const char *type_of(const hf *h, const cJSON *o, const char *what) { return tf_hfj_type(h->path, o, what); }
static int unsupported(const hf *h, const char *what, const char *type, const char *supported) {
    return tf_hfj_unsupported(h->path, what, type, supported);
}

/* ---------------------------------------------------------------- added tokens */

static int read_added_one(hf *h, const cJSON *e, int i) {
    char ctx[48];
    snprintf(ctx, sizeof ctx, "added_tokens[%d]", i);
    const cJSON *id = item(e, "id"), *content = item(e, "content");
    if (!cJSON_IsObject(e)) return tf_set_error("%s: %s must be an object", h->path, ctx);
    if (!id) return tf_set_error("%s: %s: missing \"id\"", h->path, ctx);
    if (!content) return tf_set_error("%s: %s: missing \"content\"", h->path, ctx);
    if (!cJSON_IsNumber(id) || id->valuedouble < 0 || id->valuedouble >= INT32_MAX ||
        (int32_t)id->valuedouble != id->valuedouble)
        return tf_set_error("%s: %s.id must be a non-negative integer", h->path, ctx);
    if (!cJSON_IsString(content) || !content->valuestring[0])
        return tf_set_error("%s: %s.content must be a non-empty string", h->path, ctx);
    int single, lstrip, rstrip;
    if (tf_hfj_bool(h->path, e, ctx, "single_word", 0, &single) || tf_hfj_bool(h->path, e, ctx, "lstrip", 0, &lstrip) ||
        tf_hfj_bool(h->path, e, ctx, "rstrip", 0, &rstrip))
        return -1;
    if (single)
        return tf_set_error("%s: %s (\"%.40s\"): single_word true is not supported", h->path, ctx, content->valuestring);
    h->add_id[i] = (int32_t)id->valuedouble;
    h->add_text[i] = content->valuestring;
    h->add_flags[i] = (uint8_t)((lstrip ? TF_SPECIAL_LSTRIP : 0) | (rstrip ? TF_SPECIAL_RSTRIP : 0));
    return 0;
}

static int read_added(hf *h) {
    const cJSON *a = item(h->root, "added_tokens");
    if (is_null(a)) return 0;
    if (!cJSON_IsArray(a)) return tf_set_error("%s: \"added_tokens\" must be a list", h->path);
    int n = cJSON_GetArraySize(a);
    h->add_id = calloc((size_t)n + 1, sizeof *h->add_id);
    h->add_flags = calloc((size_t)n + 1, 1);
    h->add_text = calloc((size_t)n + 1, sizeof *h->add_text);
    if (!h->add_id || !h->add_flags || !h->add_text) return tf_set_error("tokenizer: out of memory");
    for (const cJSON *e = a->child; e; e = e->next, h->n_added++)
        if (read_added_one(h, e, h->n_added)) return -1;
    return 0;
}

/* An added token inside the model's vocabulary must be that entry (by its
 * text, as Hugging Face looks it up); in a byte-level vocabulary the text
 * must also read the same as bytes, i.e. be printable ASCII. */
static int check_added_in_vocab(const hf *h, int k) {
    const char *text = h->add_text[k], *v = h->tok[h->add_id[k]];
    if (strcmp(text, v))
        return tf_set_error("%s: added_tokens[%d] \"%.40s\" has id %d, which model.vocab gives to \"%.40s\"", h->path,
                            k, text, h->add_id[k], v);
    for (const char *p = text; h->bytelevel && *p; p++)
        if (*p < '!' || *p > '~')
            return tf_set_error("%s: added_tokens[%d] \"%.40s\": an added token inside a byte-level vocabulary must be "
                                "printable ASCII", h->path, k, text);
    return 0;
}

static int place_added(hf *h);

/* The tokens by id: model.vocab (ids exactly 0..n-1), then the added tokens
 * beyond it, which must continue the ids without gaps. */
static int assemble_vocab(hf *h, const cJSON *vocab) {
    char where[4200];
    snprintf(where, sizeof where, "%s: model.vocab", h->path);
    if (!vocab) return tf_set_error("%s: missing \"model.vocab\"", h->path);
    if (tf_vocab_by_id(vocab, where, h->n_added, &h->tok, &h->n_model)) return -1;
    return place_added(h);
}

/* The added tokens into the table h->tok[0..n_model) (room for n_added more). */
static int place_added(hf *h) {
    h->n = h->n_model;
    for (int k = 0; k < h->n_added; k++) {
        int32_t id = h->add_id[k];
        if (id < h->n_model) {
            if (check_added_in_vocab(h, k)) return -1;
            continue;
        }
        int gap = id >= h->n_model + h->n_added;
        if (gap || h->tok[id])
            return tf_set_error("%s: added_tokens[%d] \"%.40s\": id %d %s (ids must continue the vocabulary's 0..%d "
                                "without gaps)", h->path, k, h->add_text[k], id, gap ? "leaves a gap" : "repeats",
                                h->n_model - 1);
        h->tok[id] = h->add_text[k];
        if (id >= h->n) h->n = id + 1;
    }
    for (int32_t id = h->n_model; id < h->n; id++)
        if (!h->tok[id])
            return tf_set_error("%s: added_tokens: no token has id %d (ids must continue the vocabulary's 0..%d without "
                                "gaps)", h->path, id, h->n_model - 1);
    return 0;
}

/* ---------------------------------------------------------------- components */

/* The component at key, alone or as the one entry of a Sequence (list_key),
 * which must be of type want; NULL + error otherwise. */
static const cJSON *one_component(const hf *h, const char *key, const char *list_key, const char *want) {
    const cJSON *c = item(h->root, key);
    if (is_null(c)) return tf_set_error("%s: %s null is not supported (supported: %s)", h->path, key, want), NULL;
    const char *type = type_of(h, c, key);
    if (type && !strcmp(type, "Sequence")) {
        const cJSON *list = item(c, list_key);
        if (cJSON_GetArraySize(list) != 1)
            return tf_set_error("%s: a %s Sequence of %d entries is not supported (supported: %s alone)", h->path, key,
                                cJSON_GetArraySize(list), want), NULL;
        c = list->child;
        type = type_of(h, c, key);
    }
    if (type && strcmp(type, want)) return unsupported(h, key, type, want), NULL;
    return type ? c : NULL;
}

/* The decoder only changes decoding: null or the model's own. */
static int check_decoder(const hf *h, const char *want) {
    const cJSON *d = item(h->root, "decoder");
    return is_null(d) || one_component(h, "decoder", "decoders", want) ? 0 : -1;
}

/* transformers' BERT-style fast tokenizers rebuild the normaliser when the
 * settings file disagrees with it on any of its three switches (defaults:
 * lower-case, strip_accents null, Chinese characters spaced). */
static void apply_config(const tf_hf_config *c, tf_bert_norm *nm, int *strip_raw) {
    if (!c->present || c->bert_family == 0) return;
    int dflt = c->bert_family == 1;
    int lower = c->do_lower_case >= 0 ? c->do_lower_case : dflt ? 1 : nm->lowercase;
    int strip = c->strip_accents >= 0 || dflt ? c->strip_accents : *strip_raw;
    int cjk = c->tokenize_chinese_chars >= 0 ? c->tokenize_chinese_chars : dflt ? 1 : nm->handle_chinese_chars;
    if (lower != nm->lowercase || strip != *strip_raw || cjk != nm->handle_chinese_chars)
        nm->lowercase = lower, *strip_raw = strip, nm->handle_chinese_chars = cjk;
}

static int read_bert_normalizer(const hf *h, const cJSON *n, tf_bert_norm *nm, int *strip_raw) {
    const cJSON *s = item(n, "strip_accents");
    if (tf_hfj_bool(h->path, n, "normalizer", "clean_text", 1, &nm->clean_text) ||
        tf_hfj_bool(h->path, n, "normalizer", "handle_chinese_chars", 1, &nm->handle_chinese_chars) ||
        tf_hfj_bool(h->path, n, "normalizer", "lowercase", 1, &nm->lowercase) || tf_hfj_bool(h->path, n, "normalizer", "strip_accents", 0, strip_raw))
        return -1;
    if (is_null(s)) *strip_raw = -1;
    return 0;
}

/* The normaliser: null (none), a BertNormalizer, or a Sequence of at most one. */
static int read_normalizer(const hf *h, tf_bert_norm *nm) {
    const cJSON *n = item(h->root, "normalizer");
    int strip_raw = -1, found = 0;
    memset(nm, 0, sizeof *nm);
    if (!is_null(n)) {
        const char *type = type_of(h, n, "normalizer");
        if (!type) return -1;
        const cJSON *list = !strcmp(type, "Sequence") ? item(n, "normalizers") : NULL;
        if (list && !cJSON_IsArray(list)) return tf_set_error("%s: normalizer.normalizers must be a list", h->path);
        for (const cJSON *e = list ? list->child : n; e; e = list ? e->next : NULL) {
            if (!(type = type_of(h, e, "normalizer"))) return -1;
            if (strcmp(type, "BertNormalizer") || found)
                return unsupported(h, "normalizer", type, "BertNormalizer, or a Sequence holding only it");
            if (read_bert_normalizer(h, e, nm, &strip_raw)) return -1;
            found = 1;
        }
    }
    if (found) apply_config(&h->cfg, nm, &strip_raw);
    nm->strip_accents = strip_raw < 0 ? nm->lowercase : strip_raw;
    return 0;
}

/* ---------------------------------------------------------------- models */

static int build_wordpiece(hf *h, tf_tokenizer *t) {
    const cJSON *m = item(h->root, "model");
    tf_bert_norm norm;
    const char *unk, *prefix;
    int max_chars;
    if (read_normalizer(h, &norm) || !one_component(h, "pre_tokenizer", "pretokenizers", "BertPreTokenizer") ||
        check_decoder(h, "WordPiece") || tf_hfj_str(h->path, m, "model", "unk_token", "[UNK]", &unk) ||
        tf_hfj_str(h->path, m, "model", "continuing_subword_prefix", "##", &prefix) ||
        tf_hfj_int(h->path, m, "model", "max_input_chars_per_word", 100, &max_chars) || assemble_vocab(h, item(m, "vocab")))
        return -1;
    uint32_t *len = malloc(((size_t)h->n + 1) * sizeof *len);
    if (!len) return tf_set_error("tokenizer: out of memory");
    for (int32_t i = 0; i < h->n; i++) len[i] = (uint32_t)strlen(h->tok[i]);
    tf_added added = {h->add_id, h->add_flags, h->n_added};
    tf_wordpiece_src s = {h->tok, len, h->n, norm, unk, prefix, max_chars, &added, h->path};
    t->kind = TF_TOKENIZER_WORDPIECE, t->vt = &tf_wordpiece_vt, t->impl = tf_wordpiece_new(&s);
    free(len);
    if (t->impl && t->role[TF_ROLE_UNK] < 0) t->role[TF_ROLE_UNK] = t->vt->token_id(t->impl, unk);
    return t->impl ? 0 : -1;
}

typedef struct {
    const hf *h;
    const cJSON *list;
} json_merges;

/* One entry of model.merges: "a b" (tokenizers < 0.20) or ["a", "b"]. */
static int merge_entry(const cJSON *e, tf_merge_fn fn, void *ctx) {
    if (cJSON_IsArray(e) && cJSON_GetArraySize(e) == 2 && cJSON_IsString(e->child) && cJSON_IsString(e->child->next))
        return fn(ctx, e->child->valuestring, e->child->next->valuestring);
    if (!cJSON_IsString(e)) return tf_set_error("expected \"a b\" or [\"a\", \"b\"]");
    char *a = strdup(e->valuestring), *sp = a ? strchr(a, ' ') : NULL;
    int rc;
    if (!a) rc = tf_set_error("tokenizer: out of memory");
    else if (!sp || sp == a || !sp[1] || strchr(sp + 1, ' ')) rc = tf_set_error("expected two tokens separated by one space");
    else *sp = 0, rc = fn(ctx, a, sp + 1);
    free(a);
    return rc;
}

static int merges_json(const void *src, tf_merge_fn fn, void *ctx) {
    const json_merges *m = src;
    int i = 0;
    for (const cJSON *e = m->list->child; e; e = e->next, i++)
        if (merge_entry(e, fn, ctx)) {
            char msg[512];
            snprintf(msg, sizeof msg, "%s", tf_error());
            return tf_set_error("%s: model.merges[%d]: %s", m->h->path, i, msg);
        }
    return 0;
}

/* BPE settings that would change encoding are refused. */
static int check_bpe_model(const hf *h, const cJSON *m) {
    const cJSON *d = item(m, "dropout");
    const char *cont, *suffix;
    int fallback, ignore;
    if (!is_null(d) && !(cJSON_IsNumber(d) && d->valuedouble == 0))
        return tf_set_error("%s: model.dropout is not supported (BPE dropout makes encoding random)", h->path);
    if (tf_hfj_str(h->path, m, "model", "continuing_subword_prefix", "", &cont) ||
        tf_hfj_str(h->path, m, "model", "end_of_word_suffix", "", &suffix) ||
        tf_hfj_bool(h->path, m, "model", "byte_fallback", 0, &fallback) || tf_hfj_bool(h->path, m, "model", "ignore_merges", 0, &ignore))
        return -1;
    if (*cont || *suffix)
        return tf_set_error("%s: model.%s \"%s\" is not supported with a byte-level vocabulary", h->path,
                            *cont ? "continuing_subword_prefix" : "end_of_word_suffix", *cont ? cont : suffix);
    if (fallback || ignore)
        return tf_set_error("%s: model.%s true is not supported", h->path, fallback ? "byte_fallback" : "ignore_merges");
    if (!item(m, "merges")) return tf_set_error("%s: missing \"model.merges\"", h->path);
    if (!cJSON_IsArray(item(m, "merges"))) return tf_set_error("%s: model.merges must be a list", h->path);
    return 0;
}

static int build_bpe(hf *h, tf_tokenizer *t) {
    const cJSON *m = item(h->root, "model"), *pre;
    int prefix, regex;
    h->bytelevel = 1;
    const cJSON *n = item(h->root, "normalizer");
    if (check_bpe_model(h, m)) return -1;
    if (!is_null(n) && !(cJSON_IsArray(item(n, "normalizers")) && !cJSON_GetArraySize(item(n, "normalizers")))) {
        const char *type = type_of(h, n, "normalizer");
        return type ? unsupported(h, "normalizer", type, "null with a BPE model") : -1;
    }
    if (!(pre = one_component(h, "pre_tokenizer", "pretokenizers", "ByteLevel")) ||
        tf_hfj_bool(h->path, pre, "pre_tokenizer", "add_prefix_space", 1, &prefix) ||
        tf_hfj_bool(h->path, pre, "pre_tokenizer", "use_regex", 1, &regex) || check_decoder(h, "ByteLevel"))
        return -1;
    if (!regex) return tf_set_error("%s: pre_tokenizer ByteLevel with use_regex false is not supported", h->path);
    if (assemble_vocab(h, item(m, "vocab"))) return -1;
    json_merges jm = {h, item(m, "merges")};
    tf_added added = {h->add_id, h->add_flags, h->n_added};
    tf_bytebpe_src s = {h->tok, h->n, h->n_model, merges_json, &jm, &added, prefix, h->path};
    t->kind = TF_TOKENIZER_BYTE_BPE, t->vt = &tf_bytebpe_vt, t->impl = tf_bytebpe_new(&s);
    return t->impl ? 0 : -1;
}

/* Unigram: model.vocab a list of [piece, score] in id order, unk_id (required:
 * tformer's Viterbi needs an unknown piece), byte_fallback. */
static int build_unigram(hf *h, tf_tokenizer *t) {
    const cJSON *m = item(h->root, "model"), *v = item(m, "vocab"), *unk = item(m, "unk_id");
    int fallback, n = cJSON_GetArraySize(v), i = 0;
    if (!cJSON_IsArray(v) || !n) return tf_set_error("%s: model.vocab must be a non-empty list of [piece, score]", h->path);
    if (!cJSON_IsNumber(unk) || unk->valuedouble < 0 || unk->valuedouble >= n || (int)unk->valuedouble != unk->valuedouble)
        return tf_set_error("%s: model.unk_id must be the id of a vocabulary entry (0..%d)", h->path, n - 1);
    if (tf_hfj_bool(h->path, m, "model", "byte_fallback", 0, &fallback)) return -1;
    double *score = malloc(((size_t)n + 1) * sizeof *score);
    h->tok = calloc((size_t)n + (size_t)h->n_added + 1, sizeof *h->tok);
    if (!score || !h->tok) return free(score), tf_set_error("tokenizer: out of memory");
    for (const cJSON *e = v->child; e; e = e->next, i++) {
        const cJSON *p = cJSON_IsArray(e) ? e->child : NULL, *sc = p ? p->next : NULL;
        if (cJSON_GetArraySize(e) != 2 || !cJSON_IsString(p) || !cJSON_IsNumber(sc)) {
            free(score);
            return tf_set_error("%s: model.vocab[%d] must be [piece, score]", h->path, i);
        }
        h->tok[i] = p->valuestring, score[i] = sc->valuedouble;
    }
    h->n_model = n;
    int rc = place_added(h);
    tf_added added = {h->add_id, h->add_flags, h->n_added};
    tf_hf_unigram_src src = {h->root, h->path, h->tok, score, h->n, h->n_model, (int32_t)unk->valuedouble, fallback,
                             &added};
    t->kind = TF_TOKENIZER_SPM, t->vt = &tf_hf_unigram_vt;
    if (!rc) t->impl = tf_hf_unigram_new(&src);
    free(score);
    if (t->impl) t->role[TF_ROLE_UNK] = (int32_t)unk->valuedouble;
    return t->impl ? 0 : -1;
}

/* ---------------------------------------------------------------- roles and loading */

/* A special token's id: an added token's text, else a vocabulary entry. */
static int32_t find_token(const hf *h, const tf_tokenizer *t, const char *text) {
    for (int k = 0; k < h->n_added; k++)
        if (!strcmp(h->add_text[k], text)) return h->add_id[k];
    return t->vt->token_id(t->impl, text);
}

/* The single layout holds A once, the pair layout A and B once each: truncation to max_len counts every id
 * outside the sequences as fixed, so a sequence named twice would break the bound (Hugging Face, which takes
 * any repeats, then returns more than max_length ids). */
static int check_template_sequences(const hf *h, const char *key, const tf_template *tp) {
    int count[2] = {0, 0};
    for (int i = 0; i < tp->n; i++)
        if (tp->seq[i] >= 0) count[tp->seq[i]]++;
    int pair = !strcmp(key, "pair");
    if (count[0] != 1 || count[1] != pair)
        return tf_set_error("%s: post_processor.%s names Sequence A %d and B %d times; tformer takes %s", h->path, key,
                            count[0], count[1], pair ? "A once and B once" : "A once and no B");
    return 0;
}

/* One TemplateProcessing list ("single" or "pair") into tp, ids from special_tokens. */
static int read_template(const hf *h, const cJSON *post, const char *key, tf_template *tp) {
    const cJSON *list = item(post, key), *specials = item(post, "special_tokens");
    tp->n = 0;
    if (!cJSON_IsArray(list)) return tf_set_error("%s: post_processor TemplateProcessing: \"%s\" must be a list", h->path, key);
    int i = 0;
    for (const cJSON *e = list->child; e; e = e->next, i++) {
        const cJSON *sp = item(e, "SpecialToken"), *sq = item(e, "Sequence"), *o = sp ? sp : sq;
        const cJSON *id = item(o, "id"), *type = item(o, "type_id");
        if (!cJSON_IsObject(o) || !cJSON_IsString(id) || !cJSON_IsNumber(type) || type->valuedouble < 0 || type->valuedouble > 255)
            return tf_set_error("%s: post_processor.%s[%d] must be {\"SpecialToken\" or \"Sequence\": {\"id\", \"type_id\"}}",
                                h->path, key, i);
        const cJSON *ids = sp ? item(item(specials, id->valuestring), "ids") : NULL;
        int count = sp ? cJSON_GetArraySize(ids) : 1;
        if (sp && (!cJSON_IsArray(ids) || !count))
            return tf_set_error("%s: post_processor.%s[%d]: \"%.40s\" has no ids in special_tokens", h->path, key, i,
                                id->valuestring);
        if (sq && strcmp(id->valuestring, "A") && strcmp(id->valuestring, "B"))
            return tf_set_error("%s: post_processor.%s[%d]: a Sequence is \"A\" or \"B\"", h->path, key, i);
        const cJSON *x = sp ? ids->child : NULL;
        for (int k = 0; k < count; k++, x = x ? x->next : NULL) {
            if (tp->n == TF_TEMPLATE_MAX) return tf_set_error("%s: post_processor.%s: more than %d items", h->path, key, TF_TEMPLATE_MAX);
            if (sp && !(cJSON_IsNumber(x) && x->valuedouble >= 0 && x->valuedouble < h->n && (int32_t)x->valuedouble == x->valuedouble))
                return tf_set_error("%s: post_processor: special token \"%.40s\" has an id outside the vocabulary [0,%d)",
                                    h->path, id->valuestring, h->n);
            tp->id[tp->n] = sp ? (int32_t)x->valuedouble : -1;
            tp->seq[tp->n] = (int8_t)(sp ? -1 : id->valuestring[0] - 'A');
            tp->type[tp->n++] = (uint8_t)type->valuedouble;
        }
    }
    return check_template_sequences(h, key, tp);
}

/* TemplateProcessing: both layouts; cls and sep (when no settings file named
 * them) the single layout's special tokens before and after A. */
static int read_templates(const hf *h, tf_tokenizer *t, const cJSON *post) {
    if (read_template(h, post, "single", &t->template[0]) || read_template(h, post, "pair", &t->template[1])) return -1;
    t->has_template = 1;
    const tf_template *s = &t->template[0];
    int a = 0;
    while (a < s->n && s->seq[a] != 0) a++;
    if (a > 0 && t->role[TF_ROLE_CLS] < 0) t->role[TF_ROLE_CLS] = s->id[0];
    if (a + 1 < s->n && s->seq[a + 1] < 0 && t->role[TF_ROLE_SEP] < 0) t->role[TF_ROLE_SEP] = s->id[a + 1];
    return 0;
}

/* Roles from the settings files, then BertProcessing's / RobertaProcessing's cls and sep. */
static int resolve_roles(const hf *h, tf_tokenizer *t) {
    for (int r = 0; r < TF_N_ROLES; r++) {
        const char *text = h->cfg.role_tok[r];
        if (!text) continue;
        if ((t->role[r] = find_token(h, t, text)) < 0)
            return tf_set_error("%s: %s \"%.40s\" (tokenizer_config.json / special_tokens_map.json) is not in the "
                                "vocabulary", h->path, tf_hf_role_key(r), text);
    }
    const cJSON *post = item(h->root, "post_processor");
    const char *type = cJSON_IsString(item(post, "type")) ? item(post, "type")->valuestring : "";
    if (!strcmp(type, "TemplateProcessing")) return read_templates(h, t, post);
    if (strcmp(type, "BertProcessing") && strcmp(type, "RobertaProcessing")) return 0;
    t->roberta_pairs = !strcmp(type, "RobertaProcessing");
    static const char *const keys[2] = {"cls", "sep"};
    for (int k = 0; k < 2; k++) {
        const cJSON *p = item(post, keys[k]);
        int32_t *role = &t->role[k ? TF_ROLE_SEP : TF_ROLE_CLS];
        if (*role >= 0 || !cJSON_IsArray(p) || !cJSON_IsString(p->child)) continue;
        if ((*role = find_token(h, t, p->child->valuestring)) < 0)
            return tf_set_error("%s: post_processor.%s \"%.40s\" is not in the vocabulary", h->path, keys[k],
                                p->child->valuestring);
    }
    return 0;
}

static int load_model(hf *h, tf_tokenizer *t) {
    const cJSON *m = item(h->root, "model");
    if (!m) return tf_set_error("%s: missing \"model\"", h->path);
    const char *type = type_of(h, m, "model");
    if (!type) return -1;
    if (!strcmp(type, "WordPiece")) return build_wordpiece(h, t);
    if (!strcmp(type, "BPE")) return build_bpe(h, t);
    if (!strcmp(type, "Unigram")) return build_unigram(h, t);
    return unsupported(h, "model", type, "WordPiece, BPE, Unigram");
}

int tf_hf_tokenizer_load(tf_tokenizer *t, const char *path) {
    hf h = {0};
    h.path = path;
    char dir[4096];
    const char *slash = strrchr(path, '/');
    snprintf(dir, sizeof dir, "%.*s", slash ? (int)(slash - path) : 1, slash ? path : ".");
    int rc = -1;
    if (!(h.root = tf_json_read(path))) return -1;
    if (!tf_hf_config_read(&h.cfg, dir) && !read_added(&h) && !load_model(&h, t) && !resolve_roles(&h, t)) {
        t->max_length = h.cfg.max_length;
        rc = 0;
    }
    tf_hf_config_free(&h.cfg);
    free(h.add_id), free(h.add_flags), free(h.add_text), free(h.tok);
    cJSON_Delete(h.root);
    return rc;
}
