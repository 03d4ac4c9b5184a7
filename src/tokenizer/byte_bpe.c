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
    int32_t *special;       /* ids of <|...|> tokens, longest first */
    int n_special;
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
    if (id < 0 || id >= b->n_vocab) return tf_set_error("vocabulary: id %d out of range", id);
    if (tf_strmap_put(&b->vocab, raw, len, id)) return -1;
    char *copy = tf_arena_alloc(b->vocab.arena, len + 1);
    if (!copy) return -1;
    memcpy(copy, raw, len);
    b->tok[id] = copy;
    b->tok_len[id] = (uint32_t)len;
    if (len == 1) b->byte_id[(unsigned char)raw[0]] = id;
    if (len > 4 && !memcmp(raw, "<|", 2) && !memcmp(raw + len - 2, "|>", 2)) b->special[b->n_special++] = id;
    return 0;
}

static int load_vocab(bytebpe *b, const char *path, const uint32_t inv[512]) {
    size_t len;
    char *text = tf_read_file(path, &len);
    if (!text) return -1;
    cJSON *root = cJSON_ParseWithLength(text, len);
    free(text);
    int rc = -1, n = cJSON_GetArraySize(root);
    tf_buf raw = {0};
    if (!cJSON_IsObject(root) || n == 0) {
        tf_set_error("%s: not a JSON object of token -> id", path);
        goto out;
    }
    b->n_vocab = n;
    b->tok = calloc((size_t)n, sizeof *b->tok);
    b->tok_len = calloc((size_t)n, sizeof *b->tok_len);
    b->special = calloc((size_t)n, sizeof *b->special);
    if (!b->tok || !b->tok_len || !b->special || tf_strmap_init(&b->vocab, (size_t)n)) goto out;
    for (cJSON *e = root->child; e; e = e->next) {
        double v = cJSON_IsNumber(e) ? e->valuedouble : -1;
        if (v < 0 || v >= n || (int32_t)v != v) {
            tf_set_error("%s: token \"%.40s\" has id %g, outside [0,%d) or not an integer", path, e->string, v, n);
            goto out;
        }
        int r = unicode_to_bytes(inv, e->string, &raw);
        if (r < 0 || (r ? add_token(b, e->string, strlen(e->string), (int32_t)v) : add_token(b, raw.p ? raw.p : "", raw.n, (int32_t)v))) {
            tf_set_error("%s: token \"%.40s\": %s", path, e->string, tf_error());
            goto out;
        }
    }
    for (int32_t i = 0; i < n; i++)
        if (!b->tok[i]) {
            tf_set_error("%s: id %d has no token (ids must be 0..%d)", path, i, n - 1);
            goto out;
        }
    for (int i = 0; i < 256; i++)
        if (b->byte_id[i] < 0) {
            tf_set_error("%s: byte 0x%02X has no single-byte token", path, i);
            goto out;
        }
    rc = 0;
out:
    free(raw.p);
    cJSON_Delete(root);
    return rc;
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

static int load_merges(bytebpe *b, const char *path, const uint32_t inv[512]) {
    merge_ctx c = {b, inv, 0, {0}};
    int rc = tf_pairmap_init(&b->merges, 65536) || tf_for_each_merge(path, load_merge, &c);
    free(c.raw.p);
    return rc ? -1 : 0;
}

static void bytebpe_free(void *impl) {
    bytebpe *b = impl;
    if (!b) return;
    tf_strmap_free(&b->vocab);
    tf_strmap_free(&b->cache);
    tf_pairmap_free(&b->merges);
    free(b->tok), free(b->tok_len), free(b->special);
    free(b->cache_ids), free(b->cache_ent);
    tf_bpe_scratch_free(&b->scratch);
    tf_gpt2_re_free(&b->re);
    free(b);
}

void *tf_bytebpe_load(const char *vocab_path, const char *merges_path, int openai_layout) {
    (void)openai_layout; /* both layouts hold the same data */
    bytebpe *b = calloc(1, sizeof *b);
    if (!b) return tf_set_error("tokenizer: out of memory"), NULL;
    uint32_t fwd[256], inv[512];
    tf_bytes_to_unicode(fwd);
    for (int i = 0; i < 512; i++) inv[i] = 1000;
    for (int i = 0; i < 256; i++) inv[fwd[i]] = (uint32_t)i, b->byte_id[i] = -1;
    if (load_vocab(b, vocab_path, inv) || load_merges(b, merges_path, inv) || tf_gpt2_re_init(&b->re) ||
        tf_strmap_init(&b->cache, 4096)) {
        bytebpe_free(b);
        return NULL;
    }
    /* Longest special token first, so that a prefix never wins. */
    for (int i = 1; i < b->n_special; i++)
        for (int j = i; j > 0 && b->tok_len[b->special[j]] > b->tok_len[b->special[j - 1]]; j--) {
            int32_t t = b->special[j];
            b->special[j] = b->special[j - 1];
            b->special[j - 1] = t;
        }
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

static int encode_plain_fn(void *impl, const char *s, size_t n, tf_ids *out) { return encode_plain(impl, s, n, out); }

static int bytebpe_encode(void *impl, const char *text, size_t len, tf_ids *out) {
    bytebpe *b = impl;
    tf_specials sp = {b->special, b->n_special, b->tok, b->tok_len};
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

const tf_tok_vtable tf_bytebpe_vt = {bytebpe_encode, bytebpe_decode, bytebpe_token_id, bytebpe_vocab_size, bytebpe_free};
