/* SentencePiece behind the tokenizer interface (TF_TOKENIZER_SPM).
 *
 * A model file alone (*.spm, *.model): sentencepiece's own ids, as
 * EncodeAsIds / DecodeIds.
 *
 * A Marian side, as transformers' MarianTokenizer: source.spm or target.spm
 * with vocab.json beside it (piece -> model id, shared by both sides; the
 * target reads target_vocab.json when tokenizer_config.json says
 * separate_vocabs). Encoding: the special tokens (eos, unk, pad: "</s>",
 * "<unk>", "<pad>" unless the settings files name others) are matched whole
 * in the text; each span between them loses its language codes (">>xx<<",
 * Python's re ">>.+<<": a code at the span's start becomes a token of its
 * own, every match is removed), then its pieces map through the vocabulary
 * (a piece it lacks: the unk id). Decoding: the special tokens are skipped,
 * ids map back to pieces, the pieces decode with the side's model, U+2581
 * becomes a space, the text is stripped of whitespace at both ends and, with
 * clean_up_tokenization_spaces (transformers 4's default), " ." -> "." and the
 * other nine of transformers' clean_up_tokenization. */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "spm.h"

typedef struct {
    tf_spm *spm;
    int marian;
    tf_strmap vocab;      /* Marian: piece -> model id */
    const char **tok;     /* model id -> piece (the map's copies) */
    uint32_t *tok_len;
    int32_t n_vocab;
    int32_t special[3];   /* eos, unk, pad: whole in the text, skipped when decoding */
    uint32_t *special_len;
    int cleanup;          /* clean_up_tokenization_spaces */
} spm_tok;

static void spm_tok_free(void *impl) {
    spm_tok *k = impl;
    if (!k) return;
    tf_spm_free(k->spm);
    tf_strmap_free(&k->vocab);
    free(k->tok), free(k->tok_len), free(k);
}

/* ---------------------------------------------------------------- plain */

static int plain_encode(void *impl, const char *text, size_t len, tf_ids *out) {
    spm_tok *k = impl;
    tf_spm_pieces p = {0};
    int rc = tf_spm_encode(k->spm, text, len, &p);
    for (size_t i = 0; !rc && i < p.n; i++) rc = tf_ids_push(out, p.id[i]);
    tf_spm_pieces_free(&p);
    return rc ? -1 : 0;
}

/* Pieces of ids through a table (model ids -> pieces), then decoded. */
static int decode_through(const tf_spm *m, const char *const *tok, const uint32_t *tok_len, int32_t n_tok,
                          const int32_t *ids, size_t n, const int32_t *skip, int n_skip, tf_buf *out) {
    if (n >= SIZE_MAX / sizeof(char *)) return tf_set_error("decode: %zu ids are too many", n);
    const char **piece = malloc((n + 1) * sizeof *piece);
    uint32_t *len = malloc((n + 1) * sizeof *len);
    size_t k = 0;
    int rc = piece && len ? 0 : tf_set_error("tokenizer: out of memory");
    for (size_t i = 0; !rc && i < n; i++) {
        if (ids[i] < 0 || ids[i] >= n_tok) {
            rc = tf_set_error("decode: id %d at position %zu outside the vocabulary [0,%d)", ids[i], i, n_tok);
            break;
        }
        int s = 0;
        while (s < n_skip && skip[s] != ids[i]) s++;
        if (s == n_skip) piece[k] = tok[ids[i]], len[k++] = tok_len[ids[i]];
    }
    if (!rc) rc = tf_spm_decode_pieces(m, piece, len, k, out);
    free(piece), free(len);
    return rc;
}

static int plain_decode(const void *impl, const int32_t *ids, size_t n, tf_buf *out) {
    const spm_tok *k = impl;
    return decode_through(k->spm, k->spm->piece, k->spm->len, k->spm->n, ids, n, NULL, 0, out);
}

/* ---------------------------------------------------------------- Marian */

static int32_t vocab_id(const spm_tok *k, const char *s, size_t n) {
    int32_t id = tf_strmap_get(&k->vocab, s, n);
    return id >= 0 ? id : k->special[1];
}

/* The first match of Python's re ">>.+<<" at or after from ('.' is not a
 * newline; greedy: up to the last "<<" of the line): [*b, *e), 0 when none. */
static int next_code(const char *s, size_t n, size_t from, size_t *b, size_t *e) {
    for (size_t p = from; p + 2 <= n;) {
        size_t line_end = p;
        while (line_end < n && s[line_end] != '\n') line_end++;
        size_t q = line_end >= 2 ? line_end - 2 : 0; /* the line's last "<<" */
        while (q > p && memcmp(s + q, "<<", 2)) q--;
        for (; p + 2 <= line_end; p++) {
            if (memcmp(s + p, ">>", 2)) continue;
            if (q < p + 3 || memcmp(s + q, "<<", 2)) break; /* no "<<" after any later ">>" of this line */
            return *b = p, *e = q + 2, 1;
        }
        p = line_end + 1;
    }
    return 0;
}

/* One span between special tokens: its language code, then its pieces' model ids. */
static int marian_span(void *impl, const char *s, size_t n, tf_ids *out) {
    spm_tok *k = impl;
    tf_buf rest = {0};
    tf_spm_pieces p = {0};
    size_t b, e, from = 0;
    int rc = 0;
    if (next_code(s, n, 0, &b, &e) && b == 0) rc = tf_ids_push(out, vocab_id(k, s, e));
    while (!rc && next_code(s, n, from, &b, &e)) rc = tf_buf_put(&rest, s + from, b - from), from = e;
    if (!rc && from) rc = tf_buf_put(&rest, s + from, n - from);
    if (!rc) rc = from ? tf_spm_encode(k->spm, rest.p, rest.n, &p) : tf_spm_encode(k->spm, s, n, &p);
    for (size_t i = 0; !rc && i < p.n; i++) rc = tf_ids_push(out, vocab_id(k, p.text.p + p.off[i], p.len[i]));
    tf_spm_pieces_free(&p);
    free(rest.p);
    return rc ? -1 : 0;
}

static int marian_encode(void *impl, const char *text, size_t len, tf_ids *out) {
    spm_tok *k = impl;
    int32_t ids[3];
    int n = 0;
    for (int i = 0; i < 3; i++) { /* distinct, longest first */
        int j = 0;
        while (j < n && ids[j] != k->special[i]) j++;
        if (j == n) ids[n++] = k->special[i];
    }
    tf_sort_longest_first(ids, NULL, n, k->tok_len);
    tf_specials sp = {ids, n, k->tok, k->tok_len, NULL};
    return tf_encode_with_specials(text, len, &sp, marian_span, k, out);
}

/* Python's str.isspace for one code point. */
static int py_space(int32_t c) { return tf_unicode_is_space(c) || (c >= 0x1C && c <= 0x1F); }

/* text[b, e) without the whitespace at either end (Python's str.strip()). */
static void py_strip(const char *t, size_t *b, size_t *e) {
    int used;
    int32_t c;
    while (*b < *e && (c = tf_utf8_decode((const unsigned char *)t + *b, *e - *b, &used)) >= 0 && py_space(c))
        *b += (size_t)used;
    while (*e > *b) {
        size_t s = *e - 1;
        while (s > *b && ((unsigned char)t[s] & 0xC0) == 0x80 && *e - s < 4) s--;
        c = tf_utf8_decode((const unsigned char *)t + s, *e - s, &used);
        if (c < 0 || (size_t)used != *e - s || !py_space(c)) break;
        *e = s;
    }
}

/* transformers' clean_up_tokenization: each replacement over the whole text, in order. */
static int clean_up(tf_buf *t) {
    static const char *const from[] = {" .", " ?", " !", " ,", " ' ", " n't", " 'm", " 's", " 've", " 're"};
    static const char *const to[] = {".", "?", "!", ",", "'", "n't", "'m", "'s", "'ve", "'re"};
    for (int r = 0; r < 10; r++) {
        size_t fl = strlen(from[r]), tl = strlen(to[r]), w = 0;
        for (size_t i = 0; i < t->n;) { /* in place: the text only shrinks */
            if (i + fl <= t->n && !memcmp(t->p + i, from[r], fl)) {
                memmove(t->p + w, to[r], tl), w += tl, i += fl;
            } else {
                t->p[w++] = t->p[i++];
            }
        }
        t->n = w;
    }
    if (t->p) t->p[t->n] = 0;
    return 0;
}

static int marian_decode(const void *impl, const int32_t *ids, size_t n, tf_buf *out) {
    const spm_tok *k = impl;
    tf_buf raw = {0}, text = {0};
    int rc = decode_through(k->spm, k->tok, k->tok_len, k->n_vocab, ids, n, k->special, 3, &raw);
    size_t b = 0, e = raw.n;
    for (size_t i = 0; !rc && i < raw.n;) { /* U+2581 -> space */
        int mark = i + 3 <= raw.n && !memcmp(raw.p + i, "\xE2\x96\x81", 3);
        rc = tf_buf_put(&text, mark ? " " : raw.p + i, 1);
        i += mark ? 3 : 1;
    }
    e = text.n;
    if (!rc) py_strip(text.p, &b, &e);
    if (!rc && b) memmove(text.p, text.p + b, e - b);
    text.n = rc ? 0 : e - b;
    if (!rc && k->cleanup) rc = clean_up(&text);
    if (!rc) rc = tf_buf_put(out, text.p ? text.p : "", text.n);
    free(raw.p), free(text.p);
    return rc;
}

/* ---------------------------------------------------------------- the vtable */

static int spm_encode_any(void *impl, const char *text, size_t len, tf_ids *out) {
    return ((spm_tok *)impl)->marian ? marian_encode(impl, text, len, out) : plain_encode(impl, text, len, out);
}

static int spm_decode_any(const void *impl, const int32_t *ids, size_t n, tf_buf *out) {
    return ((const spm_tok *)impl)->marian ? marian_decode(impl, ids, n, out) : plain_decode(impl, ids, n, out);
}

static int32_t spm_token_id(const void *impl, const char *token) {
    const spm_tok *k = impl;
    return k->marian ? tf_strmap_get(&k->vocab, token, strlen(token)) : tf_spm_piece_id(k->spm, token, strlen(token));
}

static int32_t spm_vocab_size(const void *impl) {
    const spm_tok *k = impl;
    return k->marian ? k->n_vocab : k->spm->n;
}

/* No cuts: the normaliser joins and strips whitespace and adds a prefix space; decoding strips. */
const tf_tok_vtable tf_spm_vt = {spm_encode_any, spm_decode_any, spm_token_id, spm_vocab_size, spm_tok_free, NULL, 0};

/* ---------------------------------------------------------------- loading */

static int is_file(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* sentencepiece's roles: the unknown piece; <s>, </s>, <pad> (trainer_spec's names) when they are control pieces. */
static void plain_roles(tf_tokenizer *t, const tf_spm *m) {
    static const int roles[4] = {TF_ROLE_UNK, TF_ROLE_BOS, TF_ROLE_EOS, TF_ROLE_PAD};
    t->role[TF_ROLE_UNK] = m->unk_id;
    for (int r = 1; r < 4; r++) {
        int32_t id = tf_spm_piece_id(m, m->role_piece[r], strlen(m->role_piece[r]));
        t->role[roles[r]] = id >= 0 && m->type[id] == TF_SPM_CONTROL ? id : -1;
    }
}

/* A true/false key of tokenizer_config.json (dflt when absent or null). */
static int config_flag(const cJSON *root, const char *path, const char *key, int dflt, int *out) {
    const cJSON *v = root ? cJSON_GetObjectItemCaseSensitive(root, key) : NULL;
    *out = dflt;
    if (!v || cJSON_IsNull(v)) return 0;
    if (!cJSON_IsBool(v)) return tf_set_error("%s: \"%s\" must be true or false", path, key);
    *out = cJSON_IsTrue(v);
    return 0;
}

/* tokenizer_config.json's separate_vocabs and clean_up_tokenization_spaces;
 * additional special tokens are refused (MarianTokenizer's folders have none). */
static int marian_settings(const char *dir, int *separate, int *cleanup) {
    char path[4200];
    if (tf_path_join(path, sizeof path, dir, "tokenizer_config.json")) return -1;
    cJSON *root = is_file(path) ? tf_json_read(path) : NULL;
    if (is_file(path) && !root) return -1;
    int rc = config_flag(root, path, "separate_vocabs", 0, separate) ||
             config_flag(root, path, "clean_up_tokenization_spaces", 1, cleanup);
    const cJSON *extra = root ? cJSON_GetObjectItemCaseSensitive(root, "additional_special_tokens") : NULL;
    if (!rc && extra && !cJSON_IsNull(extra) && cJSON_GetArraySize(extra) > 0)
        rc = tf_set_error("%s: additional_special_tokens are not supported for Marian tokenizers", path);
    cJSON_Delete(root);
    return rc ? -1 : 0;
}

/* vocab.json: piece -> model id, ids exactly 0..n-1. */
static int marian_vocab(spm_tok *k, const char *path) {
    cJSON *root = tf_json_read(path);
    const char **tok = NULL;
    int rc = root ? tf_vocab_by_id(root, path, 0, &tok, &k->n_vocab) : -1;
    if (!rc && tf_strmap_init(&k->vocab, (size_t)k->n_vocab + 1)) rc = -1;
    k->tok = rc ? NULL : calloc((size_t)k->n_vocab + 1, sizeof *k->tok);
    k->tok_len = rc ? NULL : calloc((size_t)k->n_vocab + 1, sizeof *k->tok_len);
    if (!rc && (!k->tok || !k->tok_len)) rc = tf_set_error("tokenizer: out of memory");
    for (int32_t i = 0; !rc && i < k->n_vocab; i++) {
        k->tok_len[i] = (uint32_t)strlen(tok[i]);
        rc = tf_strmap_put(&k->vocab, tok[i], k->tok_len[i], i);
    }
    for (size_t i = 0; !rc && i < k->vocab.cap; i++)
        if (k->vocab.keys[i]) k->tok[k->vocab.vals[i]] = k->vocab.keys[i];
    free(tok);
    cJSON_Delete(root);
    return rc ? -1 : 0;
}

/* The special tokens by role (settings files, else Marian's names): unk and pad must be in the vocabulary. */
static int marian_specials(tf_tokenizer *t, spm_tok *k, const tf_hf_config *c, const char *vocab_path) {
    static const int roles[3] = {TF_ROLE_EOS, TF_ROLE_UNK, TF_ROLE_PAD};
    static const char *const names[3] = {"</s>", "<unk>", "<pad>"};
    for (int i = 0; i < 3; i++) {
        const char *name = c->role_tok[roles[i]] ? c->role_tok[roles[i]] : names[i];
        k->special[i] = tf_strmap_get(&k->vocab, name, strlen(name));
        if (k->special[i] < 0 && i > 0)
            return tf_set_error("%s: the %s token \"%.40s\" is not in the vocabulary", vocab_path,
                                i == 1 ? "unknown" : "padding", name);
    }
    if (k->special[0] < 0) k->special[0] = k->special[1]; /* as transformers: an absent token is the unk id */
    for (int i = 0; i < 3; i++) t->role[roles[i]] = k->special[i];
    return 0;
}

static int marian_load(tf_tokenizer *t, spm_tok *k, const char *dir, int target) {
    tf_hf_config c;
    int separate = 0, rc;
    char vocab[4200];
    if (tf_hf_config_read(&c, dir)) return -1;
    rc = marian_settings(dir, &separate, &k->cleanup);
    if (!rc) rc = tf_path_join(vocab, sizeof vocab, dir, target && separate ? "target_vocab.json" : "vocab.json");
    if (!rc) rc = marian_vocab(k, vocab) || marian_specials(t, k, &c, vocab);
    t->max_length = c.max_length ? c.max_length : 512; /* MarianTokenizer's default */
    k->marian = 1;
    tf_hf_config_free(&c);
    return rc ? -1 : 0;
}

int tf_spm_tokenizer_load(tf_tokenizer *t, const char *path) {
    spm_tok *k = calloc(1, sizeof *k);
    t->kind = TF_TOKENIZER_SPM, t->vt = &tf_spm_vt, t->impl = k;
    if (!k) return tf_set_error("tokenizer: out of memory");
    if (!(k->spm = tf_spm_load(path))) return -1;
    const char *slash = strrchr(path, '/'), *base = slash ? slash + 1 : path;
    int side = !strcmp(base, "source.spm") ? 0 : !strcmp(base, "target.spm") ? 1 : -1;
    char dir[4096], vocab[4200];
    snprintf(dir, sizeof dir, "%.*s", slash ? (int)(slash - path) : 1, slash ? path : ".");
    if (tf_path_join(vocab, sizeof vocab, dir, "vocab.json")) return -1;
    if (side < 0 || !is_file(vocab)) {
        plain_roles(t, k->spm);
        return 0;
    }
    return marian_load(t, k, dir, side);
}
