/* GPT-2 byte-level BPE: the pre-tokenizer regex (PCRE2, Unicode classes),
 * merges applied by rank with a heap (n log n in the word length), a cache of
 * encoded words, and special tokens (<|...|>) matched in the text. */
#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

#include "tok_internal.h"

#define CACHE_MAX_IDS (1 << 22)

typedef struct {
    tf_strmap vocab;        /* raw bytes -> id */
    const char **tok;       /* id -> raw bytes */
    uint32_t *tok_len;
    int32_t n_vocab;
    int32_t byte_id[256];
    tf_pairmap merges;
    int32_t *special;       /* ids of <|...|> or added tokens, longest first */
    uint8_t *flags;         /* TF_SPECIAL_* of each */
    int n_special;
    int add_prefix_space;   /* a space before each span that does not start with one */
    tf_strmap cache;        /* word -> index into cache_ent */
    int32_t *cache_ids;     /* pool */
    size_t cache_n, cache_cap;
    int64_t (*cache_ent)[2]; /* offset, count */
    size_t cache_ents, cache_ents_cap;
    tf_bpe_scratch scratch;
    tf_gpt2_re re;
} bytebpe;

/* ---------------------------------------------------------------- loading */

/* A vocabulary string (byte-to-unicode characters) back to raw bytes. */
static int unicode_to_bytes(const uint32_t inv[512], const char *s, tf_buf *out) {
    out->n = 0;
    for (size_t i = 0, n = strlen(s); i < n;) {
        int used;
        int32_t cp = tf_utf8_decode((const unsigned char *)s + i, n - i, &used);
        if (cp < 0 || cp >= 512 || inv[cp] > 255) return 1; /* not byte-level: keep the text */
        unsigned char b = (unsigned char)inv[cp];
        if (tf_buf_put(out, &b, 1)) return -1;
        i += (size_t)used;
    }
    return 0;
}

static int add_token(bytebpe *b, const char *raw, size_t len, int32_t id) {
    int32_t old = tf_strmap_get(&b->vocab, raw, len);
    if (old >= 0) return tf_set_error("repeats the token of id %d", old);
    if (tf_strmap_put(&b->vocab, raw, len, id)) return -1;
    char *copy = tf_arena_alloc(b->vocab.arena, len + 1);
    if (!copy) return -1;
    memcpy(copy, raw, len);
    b->tok[id] = copy;
    b->tok_len[id] = (uint32_t)len;
    if (len == 1) b->byte_id[(unsigned char)raw[0]] = id;
    return 0;
}

/* The tokens by id: byte-level characters back to bytes below n_model, raw text above. */
static int add_tokens(bytebpe *b, const tf_bytebpe_src *s, const uint32_t inv[512]) {
    int32_t n = s->n;
    b->n_vocab = n;
    b->tok = calloc((size_t)n, sizeof *b->tok);
    b->tok_len = calloc((size_t)n, sizeof *b->tok_len);
    b->special = calloc((size_t)n + 1, sizeof *b->special);
    b->flags = calloc((size_t)n + 1, 1);
    if (!b->tok || !b->tok_len || !b->special || !b->flags || tf_strmap_init(&b->vocab, (size_t)n))
        return tf_set_error("tokenizer: out of memory");
    tf_buf raw = {0};
    int rc = 0;
    for (int32_t id = 0; id < n && !rc; id++) {
        const char *t = s->tok[id];
        int r = id < s->n_model ? unicode_to_bytes(inv, t, &raw) : 1;
        if (r < 0 || (r ? add_token(b, t, strlen(t), id) : add_token(b, raw.p ? raw.p : "", raw.n, id)))
            rc = tf_set_error("%s: token \"%.40s\" (id %d): %s", s->where, t, id, tf_error());
    }
    free(raw.p);
    for (int i = 0; i < 256 && !rc; i++)
        if (b->byte_id[i] < 0) rc = tf_set_error("%s: byte 0x%02X has no single-byte token", s->where, i);
    return rc;
}

/* Special tokens: the added tokens given, else the vocabulary's <|...|> entries. */
static int find_specials(bytebpe *b, const tf_added *added) {
    for (int32_t id = 0; !added && id < b->n_vocab; id++) {
        const char *t = b->tok[id];
        size_t len = b->tok_len[id];
        if (len > 4 && !memcmp(t, "<|", 2) && !memcmp(t + len - 2, "|>", 2)) b->special[b->n_special++] = id;
    }
    for (int k = 0; added && k < added->n; k++) {
        if (added->ids[k] < 0 || added->ids[k] >= b->n_vocab)
            return tf_set_error("added token id %d outside the vocabulary [0,%d)", added->ids[k], b->n_vocab);
        b->flags[b->n_special] = added->flags ? added->flags[k] : 0;
        b->special[b->n_special++] = added->ids[k];
    }
    tf_sort_longest_first(b->special, b->flags, b->n_special, b->tok_len);
    return 0;
}

typedef struct {
    bytebpe *b;
    const uint32_t *inv;
    int32_t rank;
    tf_buf raw;
} merge_ctx;

/* One merge "A B": both sides and their concatenation must be in the vocabulary. */
static int load_merge(void *vctx, const char *a, const char *bside) {
    merge_ctx *c = vctx;
    int32_t ids[2];
    const char *side[2] = {a, bside};
    tf_buf both = {0};
    for (int k = 0; k < 2; k++) {
        if (unicode_to_bytes(c->inv, side[k], &c->raw) || (ids[k] = tf_strmap_get(&c->b->vocab, c->raw.p, c->raw.n)) < 0) {
            free(both.p);
            return tf_set_error("token '%s' is not in the vocabulary", side[k]);
        }
        if (tf_buf_put(&both, c->raw.p, c->raw.n)) return free(both.p), -1;
    }
    int32_t merged = tf_strmap_get(&c->b->vocab, both.p, both.n);
    free(both.p);
    if (merged < 0) return tf_set_error("the merge '%s%s' is not in the vocabulary", side[0], side[1]);
    int32_t rank = c->rank++;
    if (tf_pairmap_get(&c->b->merges, ids[0], ids[1], NULL) >= 0) return 0; /* a repeat keeps its first rank */
    return tf_pairmap_put(&c->b->merges, ids[0], ids[1], rank, merged);
}

static void bytebpe_free(void *impl) {
    bytebpe *b = impl;
    if (!b) return;
    tf_strmap_free(&b->vocab);
    tf_strmap_free(&b->cache);
    tf_pairmap_free(&b->merges);
    free(b->tok), free(b->tok_len), free(b->special), free(b->flags);
    free(b->cache_ids), free(b->cache_ent);
    tf_bpe_scratch_free(&b->scratch);
    tf_gpt2_re_free(&b->re);
    free(b);
}

void *tf_bytebpe_new(const tf_bytebpe_src *s) {
    bytebpe *b = calloc(1, sizeof *b);
    if (!b) return tf_set_error("tokenizer: out of memory"), NULL;
    uint32_t fwd[256], inv[512];
    tf_bytes_to_unicode(fwd);
    for (int i = 0; i < 512; i++) inv[i] = 1000;
    for (int i = 0; i < 256; i++) inv[fwd[i]] = (uint32_t)i, b->byte_id[i] = -1;
    b->add_prefix_space = s->add_prefix_space;
    merge_ctx c = {b, inv, 0, {0}};
    int rc = add_tokens(b, s, inv);
    if (!rc && find_specials(b, s->added)) rc = tf_set_error("%s: %s", s->where, tf_error());
    if (!rc) rc = tf_pairmap_init(&b->merges, 65536) || s->merges(s->merges_src, load_merge, &c);
    free(c.raw.p);
    if (rc || tf_gpt2_re_init(&b->re) || tf_strmap_init(&b->cache, 4096)) {
        bytebpe_free(b);
        return NULL;
    }
    return b;
}

static int merges_file(const void *path, tf_merge_fn fn, void *ctx) { return tf_for_each_merge(path, fn, ctx); }

void *tf_bytebpe_load(const char *vocab_path, const char *merges_path, int openai_layout) {
    (void)openai_layout; /* both layouts hold the same data */
    cJSON *root = tf_json_read(vocab_path);
    if (!root) {
        char msg[512];
        snprintf(msg, sizeof msg, "%s", tf_error());
        return tf_set_error("%s: not a JSON object of token -> id", msg), NULL;
    }
    const char **tok = NULL;
    int32_t n = 0;
    void *b = NULL;
    if (!tf_vocab_by_id(root, vocab_path, 0, &tok, &n)) {
        tf_bytebpe_src s = {tok, n, n, merges_file, merges_path, NULL, 0, vocab_path};
        b = tf_bytebpe_new(&s);
    }
    free(tok);
    cJSON_Delete(root);
    return b;
}

/* The single-byte tokens of a word into the merge scratch. */
static int scratch_word(bytebpe *b, const unsigned char *w, size_t n) {
    if (tf_bpe_scratch_reserve(&b->scratch, n)) return -1;
    for (size_t i = 0; i < n; i++) b->scratch.ids[i] = b->byte_id[w[i]];
    return 0;
}

/* A pre-token through the cache. */
static int encode_word(bytebpe *b, const char *w, size_t n, tf_ids *out) {
    if (n == 1) return tf_ids_push(out, b->byte_id[(unsigned char)w[0]]);
    if (n > INT32_MAX / 2) return tf_set_error("tokenizer: a %zu-byte word is too long", n);
    int32_t hit = tf_strmap_get(&b->cache, w, n);
    if (hit >= 0) {
        for (int64_t k = 0; k < b->cache_ent[hit][1]; k++)
            if (tf_ids_push(out, b->cache_ids[b->cache_ent[hit][0] + k])) return -1;
        return 0;
    }
    size_t start = out->n;
    if (scratch_word(b, (const unsigned char *)w, n) ||
        tf_bpe_merge(&b->merges, &b->scratch, (int32_t)n, out))
        return -1;
    size_t cnt = out->n - start;
    if (b->cache_n + cnt > CACHE_MAX_IDS || n > 256) return 0; /* long words and a full cache: no caching */
    if (b->cache_n + cnt > b->cache_cap || b->cache_ents == b->cache_ents_cap) {
        size_t cap = b->cache_cap ? b->cache_cap * 2 : 65536, ecap = b->cache_ents_cap ? b->cache_ents_cap * 2 : 16384;
        int32_t *pool = realloc(b->cache_ids, cap * sizeof *pool);
        if (!pool) return 0;
        b->cache_ids = pool;
        b->cache_cap = cap;
        int64_t(*ent)[2] = realloc(b->cache_ent, ecap * sizeof *ent);
        if (!ent) return 0;
        b->cache_ent = ent;
        b->cache_ents_cap = ecap;
    }
    memcpy(b->cache_ids + b->cache_n, out->v + start, cnt * sizeof(int32_t));
    b->cache_ent[b->cache_ents][0] = (int64_t)b->cache_n;
    b->cache_ent[b->cache_ents][1] = (int64_t)cnt;
    b->cache_n += cnt;
    return tf_strmap_put(&b->cache, w, n, (int32_t)b->cache_ents++);
}

/* Pre-tokenize a span without special tokens. Bytes the regex cannot match
 * (invalid UTF-8) become one-byte pieces, so every input round-trips. */
static int encode_plain(bytebpe *b, const char *s, size_t n, tf_ids *out) {
    size_t off = 0;
    while (off < n) {
        size_t ms, me;
        if (tf_gpt2_re_next(&b->re, s, n, off, &ms, &me)) return -1;
        for (; off < ms; off++)
            if (tf_ids_push(out, b->byte_id[(unsigned char)s[off]])) return -1;
        if (me > ms) {
            if (encode_word(b, s + ms, me - ms, out)) return -1;
            off = me;
        } else if (off < n) { /* an empty match cannot happen with this pattern; stay safe */
            if (tf_ids_push(out, b->byte_id[(unsigned char)s[off++]])) return -1;
        }
    }
    return 0;
}

/* Hugging Face's ByteLevel add_prefix_space: each span between special
 * tokens that does not start with a space gets one. */
static int encode_plain_fn(void *impl, const char *s, size_t n, tf_ids *out) {
    bytebpe *b = impl;
    if (!b->add_prefix_space || !n || s[0] == ' ') return encode_plain(b, s, n, out);
    char *t = malloc(n + 1);
    if (!t) return tf_set_error("tokenizer: out of memory");
    t[0] = ' ';
    memcpy(t + 1, s, n);
    int rc = encode_plain(b, t, n + 1, out);
    free(t);
    return rc;
}

static int bytebpe_encode(void *impl, const char *text, size_t len, tf_ids *out) {
    bytebpe *b = impl;
    tf_specials sp = {b->special, b->n_special, b->tok, b->tok_len, b->flags};
    if (tf_encode_with_specials(text, len, &sp, encode_plain_fn, b, out)) return -1;
    if (b->cache_n > CACHE_MAX_IDS / 2 && b->cache.n > 1000000) {
        tf_strmap_clear(&b->cache);
        b->cache_n = b->cache_ents = 0;
    }
    return 0;
}

static int bytebpe_decode(const void *impl, const int32_t *ids, size_t n, tf_buf *out) {
    const bytebpe *b = impl;
    for (size_t i = 0; i < n; i++) {
        if (ids[i] < 0 || ids[i] >= b->n_vocab)
            return tf_set_error("decode: id %d at position %zu outside the vocabulary [0,%d)", ids[i], i, b->n_vocab);
        if (tf_buf_put(out, b->tok[ids[i]], b->tok_len[ids[i]])) return -1;
    }
    return 0;
}

static int32_t bytebpe_token_id(const void *impl, const char *token) {
    const bytebpe *b = impl;
    uint32_t fwd[256], inv[512];
    tf_bytes_to_unicode(fwd);
    for (int i = 0; i < 512; i++) inv[i] = 1000;
    for (int i = 0; i < 256; i++) inv[fwd[i]] = (uint32_t)i;
    tf_buf raw = {0};
    int r = unicode_to_bytes(inv, token, &raw);
    int32_t id = r < 0 ? -1 : r ? tf_strmap_get(&b->vocab, token, strlen(token)) : tf_strmap_get(&b->vocab, raw.p ? raw.p : "", raw.n);
    free(raw.p);
    return id;
}

static int32_t bytebpe_vocab_size(const void *impl) { return ((const bytebpe *)impl)->n_vocab; }

/* GPT-2's pattern makes a newline between two printable characters a token of its own; a prefix space would be
 * added after a cut. */
static size_t bytebpe_cut(const void *impl, const char *s, size_t n) {
    const bytebpe *b = impl;
    tf_specials sp = {b->special, b->n_special, b->tok, b->tok_len, b->flags};
    return b->add_prefix_space || !tf_specials_allow_cut(&sp) ? 0 : tf_cut_before_line(s, n);
}

const tf_tok_vtable tf_bytebpe_vt = {bytebpe_encode, bytebpe_decode, bytebpe_token_id, bytebpe_vocab_size, bytebpe_free,
                                     bytebpe_cut, 1};
