/* Sub-word BPE of the lecture decks: words are split on whitespace, each
 * becomes its characters followed by a word-end symbol "</w>" (the decks'
 * underscore), and learned merges are applied by rank. Characters never seen in training
 * become <unk>. Decoding writes each word end as one space. */
#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

#include "tok_internal.h"

#define EOW "</w>"
#define EOW_LEN 4

typedef struct {
    tf_strmap vocab;
    const char **tok;
    uint32_t *tok_len;
    int32_t n, unk;
    tf_pairmap merges;
    tf_bpe_scratch scratch;
} bpe;

static void bpe_free(void *impl) {
    bpe *b = impl;
    if (!b) return;
    tf_strmap_free(&b->vocab);
    tf_pairmap_free(&b->merges);
    tf_bpe_scratch_free(&b->scratch);
    free(b->tok), free(b->tok_len), free(b);
}

static int load_vocab(bpe *b, const char *path) {
    cJSON *root = tf_json_read(path);
    if (!root) return -1;
    int n = cJSON_GetArraySize(root), rc = -1;
    if (!cJSON_IsObject(root) || n == 0 || tf_strmap_init(&b->vocab, (size_t)n) ||
        !(b->tok = calloc((size_t)n, sizeof *b->tok)) || !(b->tok_len = calloc((size_t)n, sizeof *b->tok_len))) {
        tf_set_error("%s: not a JSON object of token -> id", path);
        goto out;
    }
    b->n = n;
    for (cJSON *e = root->child; e; e = e->next) {
        double v = cJSON_IsNumber(e) ? e->valuedouble : -1;
        if (v < 0 || v >= n || (int32_t)v != v || b->tok[(int32_t)v]) {
            tf_set_error("%s: token \"%.40s\" has id %g (ids must be 0..%d, each once)", path, e->string, v, n - 1);
            goto out;
        }
        size_t l = strlen(e->string);
        if (tf_strmap_put(&b->vocab, e->string, l, (int32_t)v)) goto out;
        b->tok[(int32_t)v] = e->string; /* replaced by the map's copy below */
        b->tok_len[(int32_t)v] = (uint32_t)l;
    }
    for (size_t i = 0; i < b->vocab.cap; i++)
        if (b->vocab.keys[i]) b->tok[b->vocab.vals[i]] = b->vocab.keys[i];
    b->unk = tf_strmap_get(&b->vocab, "<unk>", 5);
    rc = 0;
out:
    cJSON_Delete(root);
    return rc;
}

typedef struct {
    bpe *b;
    int32_t rank;
} merge_ctx;

static int load_merge(void *vctx, const char *x, const char *y) {
    merge_ctx *c = vctx;
    tf_buf both = {0};
    int32_t a = tf_strmap_get(&c->b->vocab, x, strlen(x)), b = tf_strmap_get(&c->b->vocab, y, strlen(y)), m = -1;
    if (!tf_buf_put(&both, x, strlen(x)) && !tf_buf_put(&both, y, strlen(y))) m = tf_strmap_get(&c->b->vocab, both.p, both.n);
    free(both.p);
    if (a < 0 || b < 0 || m < 0) return tf_set_error("not two vocabulary tokens whose concatenation is one");
    int32_t rank = c->rank++;
    return tf_pairmap_get(&c->b->merges, a, b, NULL) >= 0 ? 0 : tf_pairmap_put(&c->b->merges, a, b, rank, m);
}

static int load_merges(bpe *b, const char *path) {
    merge_ctx c = {b, 0};
    return tf_pairmap_init(&b->merges, 4096) || tf_for_each_merge(path, load_merge, &c) ? -1 : 0;
}

void *tf_bpe_load(const char *vocab_path, const char *merges_path) {
    bpe *b = calloc(1, sizeof *b);
    if (!b) return tf_set_error("tokenizer: out of memory"), NULL;
    if (load_vocab(b, vocab_path) || load_merges(b, merges_path)) {
        bpe_free(b);
        return NULL;
    }
    return b;
}

/* One word (valid UTF-8, no whitespace): its characters, then </w>. */
static int encode_word(bpe *b, const char *w, size_t n, tf_ids *out) {
    if (tf_bpe_scratch_reserve(&b->scratch, n + 1)) return -1;
    int32_t k = 0;
    for (size_t i = 0; i <= n;) {
        int used = EOW_LEN;
        const char *sym = EOW;
        if (i < n) {
            tf_utf8_decode((const unsigned char *)w + i, n - i, &used);
            sym = w + i;
        }
        i += i < n ? (size_t)used : 1;
        size_t l = (size_t)used;
        int32_t id = tf_strmap_get(&b->vocab, sym, l);
        if (id < 0 && (id = b->unk) < 0)
            return tf_set_error("encode: '%.*s' is not in the vocabulary, which has no <unk>", (int)l, sym);
        b->scratch.ids[k++] = id;
    }
    return tf_bpe_merge(&b->merges, &b->scratch, k, out);
}

typedef struct {
    bpe *b;
    tf_ids *out;
} word_ctx;

static int on_word(void *ctx, const char *w, size_t n) {
    word_ctx *c = ctx;
    return encode_word(c->b, w, n, c->out);
}

static int bpe_encode(void *impl, const char *text, size_t len, tf_ids *out) {
    word_ctx c = {impl, out};
    return tf_split_whitespace(text, len, on_word, &c);
}

static int bpe_decode(const void *impl, const int32_t *ids, size_t n, tf_buf *out) {
    const bpe *b = impl;
    for (size_t i = 0; i < n; i++) {
        if (ids[i] < 0 || ids[i] >= b->n)
            return tf_set_error("decode: id %d at position %zu outside the vocabulary [0,%d)", ids[i], i, b->n);
        const char *t = b->tok[ids[i]];
        size_t l = b->tok_len[ids[i]];
        int eow = l >= EOW_LEN && !memcmp(t + l - EOW_LEN, EOW, EOW_LEN);
        if (tf_buf_put(out, t, eow ? l - EOW_LEN : l) || (eow && tf_buf_put(out, " ", 1))) return -1;
    }
    return 0;
}

static int32_t bpe_token_id(const void *impl, const char *token) {
    return tf_strmap_get(&((const bpe *)impl)->vocab, token, strlen(token));
}

static int32_t bpe_vocab_size(const void *impl) { return ((const bpe *)impl)->n; }

static size_t bpe_cut(const void *impl, const char *s, size_t n) { return tf_cut_before_line(s, n); }

const tf_tok_vtable tf_bpe_vt = {bpe_encode, bpe_decode, bpe_token_id, bpe_vocab_size, bpe_free, bpe_cut, 1};
