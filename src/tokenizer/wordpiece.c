/* BERT WordPiece: the normaliser (clean control characters, space around CJK
 * ideographs, NFD and strip accents, lower-case — utf8proc), the
 * pre-tokenizer (whitespace, punctuation), then greedy longest-match-first
 * with "##" continuations. Special tokens in the text stay whole. */
#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

#include "tok_internal.h"

#define MAX_WORD_CHARS 100

typedef struct {
    tf_strmap vocab;
    const char **tok;
    uint32_t *tok_len;
    int32_t n;
    int32_t unk, cls, sep;
    int lower;          /* uncased vocabulary: lower-case and strip accents */
    int32_t special[8]; /* [UNK] [SEP] [PAD] [CLS] [MASK] present in the vocabulary */
    int n_special;
} wordpiece;

static void wordpiece_free(void *impl) {
    wordpiece *w = impl;
    if (!w) return;
    tf_strmap_free(&w->vocab);
    free(w->tok), free(w->tok_len), free(w);
}

void *tf_wordpiece_load(const char *path) {
    wordpiece *w = calloc(1, sizeof *w);
    size_t len;
    char *text = w ? tf_read_file(path, &len) : NULL;
    if (!text || tf_strmap_init(&w->vocab, 32768)) goto fail;
    size_t lines = 1;
    for (size_t i = 0; i < len; i++) lines += text[i] == '\n';
    w->tok = calloc(lines, sizeof *w->tok);
    w->tok_len = calloc(lines, sizeof *w->tok_len);
    if (!w->tok || !w->tok_len) goto fail;
    for (char *line = text, *end; line < text + len; line = end + 1) {
        end = memchr(line, '\n', (size_t)(text + len - line));
        if (!end) end = text + len;
        size_t n = (size_t)(end - line);
        if (n && line[n - 1] == '\r') n--;
        if (tf_strmap_get(&w->vocab, line, n) >= 0 || tf_strmap_put(&w->vocab, line, n, w->n)) {
            tf_set_error("%s line %d: token '%.*s' repeats", path, w->n + 1, (int)(n > 60 ? 60 : n), line);
            goto fail;
        }
        w->tok_len[w->n++] = (uint32_t)n;
    }
    /* token strings: the map's NUL-terminated copies */
    for (size_t i = 0; i < w->vocab.cap; i++)
        if (w->vocab.keys[i]) w->tok[w->vocab.vals[i]] = w->vocab.keys[i];
    static const char *const names[] = {"[UNK]", "[SEP]", "[PAD]", "[CLS]", "[MASK]"};
    for (int k = 0; k < 5; k++) {
        int32_t id = tf_strmap_get(&w->vocab, names[k], strlen(names[k]));
        if (id >= 0) w->special[w->n_special++] = id;
    }
    w->unk = tf_strmap_get(&w->vocab, "[UNK]", 5);
    w->cls = tf_strmap_get(&w->vocab, "[CLS]", 5);
    w->sep = tf_strmap_get(&w->vocab, "[SEP]", 5);
    if (w->unk < 0) {
        tf_set_error("%s: no [UNK] token (%d lines read)", path, w->n);
        goto fail;
    }
    w->lower = tf_strmap_get(&w->vocab, "The", 3) < 0; /* a cased vocabulary has capitals */
    free(text);
    return w;
fail:
    free(text);
    wordpiece_free(w);
    return NULL;
}

/* ---------------------------------------------------------------- normaliser */

static int is_other(int32_t c) { /* Cc Cf Cs Co Cn, as the Hugging Face normaliser */
    utf8proc_category_t k = utf8proc_category(c);
    return k == UTF8PROC_CATEGORY_CC || k == UTF8PROC_CATEGORY_CF || k == UTF8PROC_CATEGORY_CS ||
           k == UTF8PROC_CATEGORY_CO || k == UTF8PROC_CATEGORY_CN;
}

static int is_cjk(int32_t c) {
    return (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0x3400 && c <= 0x4DBF) || (c >= 0x20000 && c <= 0x2A6DF) ||
           (c >= 0x2A700 && c <= 0x2B73F) || (c >= 0x2B740 && c <= 0x2B81F) || (c >= 0x2B820 && c <= 0x2CEAF) ||
           (c >= 0xF900 && c <= 0xFAFF) || (c >= 0x2F800 && c <= 0x2FA1F);
}

static int is_punct(int32_t c) {
    if ((c >= 33 && c <= 47) || (c >= 58 && c <= 64) || (c >= 91 && c <= 96) || (c >= 123 && c <= 126)) return 1;
    utf8proc_category_t k = utf8proc_category(c);
    return k >= UTF8PROC_CATEGORY_PC && k <= UTF8PROC_CATEGORY_PO;
}

/* Code points of a span after cleaning, CJK spacing, NFD + accent stripping
 * and lower-casing (the last two for uncased vocabularies). Invalid UTF-8
 * bytes read as U+FFFD, which cleaning drops. */
static int normalise(int lower, const char *s, size_t n, int32_t **out, size_t *out_n) {
    size_t cap = n * 3 + 16, k = 0;
    int32_t *cp = malloc(cap * sizeof *cp);
    if (!cp) return tf_set_error("tokenizer: out of memory");
    for (size_t i = 0; i < n;) {
        int used;
        int32_t c = tf_utf8_decode((const unsigned char *)s + i, n - i, &used);
        i += (size_t)used;
        if (c < 0 || c == 0 || c == 0xFFFD || (!tf_unicode_is_space(c) && is_other(c))) continue;
        if (tf_unicode_is_space(c)) c = ' ';
        int32_t buf[8];
        utf8proc_ssize_t m = 1;
        buf[0] = c;
        if (lower) { /* NFD, then drop non-spacing marks */
            int last = 0;
            m = utf8proc_decompose_char(c, buf, 8, UTF8PROC_DECOMPOSE, &last);
            if (m < 0 || m > 8) m = 1, buf[0] = c;
        }
        if (k + (size_t)m + 2 > cap) {
            int32_t *g = realloc(cp, (cap *= 2) * sizeof *cp);
            if (!g) {
                free(cp);
                return tf_set_error("tokenizer: out of memory");
            }
            cp = g;
        }
        int cjk = is_cjk(c);
        if (cjk) cp[k++] = ' ';
        for (utf8proc_ssize_t j = 0; j < m; j++) {
            if (lower && utf8proc_category(buf[j]) == UTF8PROC_CATEGORY_MN) continue;
            cp[k++] = lower ? utf8proc_tolower(buf[j]) : buf[j];
        }
        if (cjk) cp[k++] = ' ';
    }
    *out = cp;
    *out_n = k;
    return 0;
}

/* ---------------------------------------------------------------- WordPiece */

/* Greedy longest-match-first over one word (code points -> UTF-8 in buf). */
static int wordpiece_word(const wordpiece *w, const int32_t *cp, size_t n, tf_ids *out) {
    if (n > MAX_WORD_CHARS) return tf_ids_push(out, w->unk);
    char utf[MAX_WORD_CHARS * 4 + 3];
    size_t off[MAX_WORD_CHARS + 1], len = 0;
    for (size_t i = 0; i < n; i++) off[i] = len, len += (size_t)tf_utf8_encode((uint32_t)cp[i], utf + 2 + len);
    off[n] = len;
    size_t start_out = out->n, i = 0;
    while (i < n) {
        int32_t id = -1;
        size_t j = n;
        for (; j > i; j--) {
            char *piece = utf + 2 + off[i];
            size_t plen = off[j] - off[i];
            if (i > 0) { /* "##" + piece, written just before it */
                char save0 = piece[-2], save1 = piece[-1];
                piece[-2] = '#', piece[-1] = '#';
                id = tf_strmap_get(&w->vocab, piece - 2, plen + 2);
                piece[-2] = save0, piece[-1] = save1;
            } else {
                id = tf_strmap_get(&w->vocab, piece, plen);
            }
            if (id >= 0) break;
        }
        if (id < 0) { /* no piece matches: the whole word is unknown */
            out->n = start_out;
            return tf_ids_push(out, w->unk);
        }
        if (tf_ids_push(out, id)) return -1;
        i = j;
    }
    return 0;
}

int tf_wordpiece_split(int lower, const char *s, size_t n, tf_word_fn fn, void *ctx) {
    int32_t *cp = NULL;
    size_t k = 0, start = 0;
    if (normalise(lower, s, n, &cp, &k)) return -1;
    int rc = 0;
    for (size_t i = 0; i <= k && !rc; i++) { /* words end at whitespace; punctuation stands alone */
        int ws = i < k && cp[i] == ' ', punct = i < k && is_punct(cp[i]);
        if (i == k || ws || punct) {
            if (i > start) rc = fn(ctx, cp + start, i - start);
            if (!rc && punct) rc = fn(ctx, cp + i, 1);
            start = i + 1;
        }
    }
    free(cp);
    return rc;
}

typedef struct {
    const wordpiece *w;
    tf_ids *out;
} word_ctx;

static int on_word(void *ctx, const int32_t *cp, size_t n) {
    word_ctx *c = ctx;
    return wordpiece_word(c->w, cp, n, c->out);
}

static int encode_plain(const wordpiece *w, const char *s, size_t n, tf_ids *out) {
    word_ctx c = {w, out};
    return tf_wordpiece_split(w->lower, s, n, on_word, &c);
}

static int encode_plain_fn(void *impl, const char *s, size_t n, tf_ids *out) { return encode_plain(impl, s, n, out); }

static int wordpiece_encode(void *impl, const char *text, size_t len, tf_ids *out) {
    const wordpiece *w = impl;
    tf_specials sp = {w->special, w->n_special, w->tok, w->tok_len};
    return tf_encode_with_specials(text, len, &sp, encode_plain_fn, impl, out);
}

/* Tokens joined by spaces, "##" pieces glued to the one before. */
static int wordpiece_decode(const void *impl, const int32_t *ids, size_t n, tf_buf *out) {
    const wordpiece *w = impl;
    for (size_t i = 0; i < n; i++) {
        if (ids[i] < 0 || ids[i] >= w->n)
            return tf_set_error("decode: id %d at position %zu outside the vocabulary [0,%d)", ids[i], i, w->n);
        const char *t = w->tok[ids[i]];
        size_t tl = w->tok_len[ids[i]];
        int cont = tl > 2 && t[0] == '#' && t[1] == '#';
        if (i > 0 && !cont && tf_buf_put(out, " ", 1)) return -1;
        if (tf_buf_put(out, t + (cont ? 2 : 0), tl - (cont ? 2 : 0))) return -1;
    }
    return 0;
}

static int32_t wordpiece_token_id(const void *impl, const char *token) {
    return tf_strmap_get(&((const wordpiece *)impl)->vocab, token, strlen(token));
}

static int32_t wordpiece_vocab_size(const void *impl) { return ((const wordpiece *)impl)->n; }

int tf_wordpiece_special(const void *impl, int32_t *cls, int32_t *sep) {
    const wordpiece *w = impl;
    *cls = w->cls, *sep = w->sep;
    return w->cls >= 0 && w->sep >= 0 ? 0 : tf_set_error("WordPiece vocabulary lacks [CLS] or [SEP]");
}

const tf_tok_vtable tf_wordpiece_vt = {wordpiece_encode, wordpiece_decode, wordpiece_token_id,
                                       wordpiece_vocab_size, wordpiece_free};
