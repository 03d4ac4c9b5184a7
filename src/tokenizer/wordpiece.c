/* BERT WordPiece: the normaliser (clean control characters, space around CJK
 * ideographs, NFD and strip accents, lower-case — utf8proc; each step
 * switched as Hugging Face's BertNormalizer), the pre-tokenizer (whitespace,
 * punctuation), then greedy longest-match-first with "##" continuations.
 * Special tokens in the text stay whole. One constructor serves vocab.txt
 * and tokenizer.json (hf_json.c). */
#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

#include "tok_internal.h"

typedef struct {
    tf_strmap vocab;
    const char **tok;
    uint32_t *tok_len;
    int32_t n;
    int32_t unk;
    tf_bert_norm norm;
    char prefix[16];     /* continuing-subword prefix ("##") */
    size_t prefix_len;
    int max_chars;       /* longer words are unk */
    int32_t *special;    /* matched whole in the text, longest first */
    uint8_t *flags;
    int n_special;
} wordpiece;

const tf_bert_norm tf_bert_uncased = {1, 1, 1, 1};

static void wordpiece_free(void *impl) {
    wordpiece *w = impl;
    if (!w) return;
    tf_strmap_free(&w->vocab);
    free(w->tok), free(w->tok_len), free(w->special), free(w->flags), free(w);
}

/* The special tokens: the added tokens given, else the usual five where present. */
static int wordpiece_specials(wordpiece *w, const tf_added *added) {
    static const char *const names[] = {"[UNK]", "[SEP]", "[PAD]", "[CLS]", "[MASK]"};
    int cap = added ? added->n : 5;
    w->special = calloc((size_t)cap + 1, sizeof *w->special);
    w->flags = calloc((size_t)cap + 1, 1);
    if (!w->special || !w->flags) return tf_set_error("tokenizer: out of memory");
    for (int k = 0; k < cap; k++) {
        int32_t id = added ? added->ids[k] : tf_strmap_get(&w->vocab, names[k], strlen(names[k]));
        if (id < 0) continue;
        if (id >= w->n) return tf_set_error("added token id %d outside the vocabulary [0,%d)", id, w->n);
        w->flags[w->n_special] = added && added->flags ? added->flags[k] : 0;
        w->special[w->n_special++] = id;
    }
    tf_sort_longest_first(w->special, w->flags, w->n_special, w->tok_len);
    return 0;
}

void *tf_wordpiece_new(const tf_wordpiece_src *s) {
    wordpiece *w = calloc(1, sizeof *w);
    if (!w || tf_strmap_init(&w->vocab, (size_t)s->n + 1)) goto fail;
    w->tok = calloc((size_t)s->n + 1, sizeof *w->tok);
    w->tok_len = calloc((size_t)s->n + 1, sizeof *w->tok_len);
    if (!w->tok || !w->tok_len) goto fail;
    for (; w->n < s->n; w->n++) {
        const char *t = s->tok[w->n];
        uint32_t n = s->tok_len[w->n];
        if (tf_strmap_get(&w->vocab, t, n) >= 0 || tf_strmap_put(&w->vocab, t, n, w->n)) {
            tf_set_error("%s: token '%.*s' (id %d) repeats", s->where, (int)(n > 60 ? 60 : n), t, w->n);
            goto fail;
        }
        w->tok_len[w->n] = n;
    }
    for (size_t i = 0; i < w->vocab.cap; i++) /* token strings: the map's NUL-terminated copies */
        if (w->vocab.keys[i]) w->tok[w->vocab.vals[i]] = w->vocab.keys[i];
    w->norm = s->norm;
    w->max_chars = s->max_chars;
    w->prefix_len = strlen(s->prefix);
    if (w->prefix_len >= sizeof w->prefix) {
        tf_set_error("%s: continuing-subword prefix \"%.20s\" is longer than 15 bytes", s->where, s->prefix);
        goto fail;
    }
    memcpy(w->prefix, s->prefix, w->prefix_len);
    if ((w->unk = tf_strmap_get(&w->vocab, s->unk, strlen(s->unk))) < 0) {
        tf_set_error("%s: no %s token in the vocabulary (%d tokens read)", s->where, s->unk, w->n);
        goto fail;
    }
    if (wordpiece_specials(w, s->added)) {
        tf_set_error("%s: %s", s->where, tf_error());
        goto fail;
    }
    return w;
fail:
    if (!w) tf_set_error("tokenizer: out of memory");
    wordpiece_free(w);
    return NULL;
}

/* vocab.txt: one token per line, id = line number - 1. A vocabulary is uncased
 * unless it holds "The" (BertTokenizer's files carry no flag). */
void *tf_wordpiece_load(const char *path) {
    size_t len, lines = 1;
    char *text = tf_read_file(path, &len);
    if (!text) return NULL;
    for (size_t i = 0; i < len; i++) lines += text[i] == '\n';
    const char **tok = calloc(lines, sizeof *tok);
    uint32_t *tok_len = calloc(lines, sizeof *tok_len);
    void *w = NULL;
    if (!tok || !tok_len) {
        tf_set_error("tokenizer: out of memory");
        goto out;
    }
    int32_t n = 0;
    int cased = 0;
    for (char *line = text, *end; line < text + len; line = end + 1) {
        end = memchr(line, '\n', (size_t)(text + len - line));
        if (!end) end = text + len;
        size_t m = (size_t)(end - line);
        if (m && line[m - 1] == '\r') m--;
        cased |= m == 3 && !memcmp(line, "The", 3);
        tok[n] = line, tok_len[n++] = (uint32_t)m;
    }
    tf_wordpiece_src s = {tok, tok_len, n, tf_bert_uncased, "[UNK]", "##", 100, NULL, path};
    if (cased) s.norm.strip_accents = s.norm.lowercase = 0;
    w = tf_wordpiece_new(&s);
out:
    free(tok), free(tok_len), free(text);
    return w;
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

/* Append the normalised form of one code point c (BertNormalizer's steps in
 * its order: clean, CJK spacing, NFD + strip accents, lower-case). */
static size_t normalise_cp(const tf_bert_norm *nm, int32_t c, int32_t *o) {
    size_t k = 0;
    if (nm->clean_text) {
        if (c == 0 || c == 0xFFFD || (!tf_unicode_is_space(c) && is_other(c))) return 0;
        if (tf_unicode_is_space(c)) c = ' ';
    }
    int32_t buf[8];
    utf8proc_ssize_t m = 1;
    buf[0] = c;
    if (nm->strip_accents) { /* NFD, then drop non-spacing marks */
        int last = 0;
        m = utf8proc_decompose_char(c, buf, 8, UTF8PROC_DECOMPOSE, &last);
        if (m < 0 || m > 8) m = 1, buf[0] = c;
    }
    int cjk = nm->handle_chinese_chars && is_cjk(c);
    if (cjk) o[k++] = ' ';
    for (utf8proc_ssize_t j = 0; j < m; j++) {
        if (nm->strip_accents && utf8proc_category(buf[j]) == UTF8PROC_CATEGORY_MN) continue;
        if (nm->lowercase && buf[j] == 0x130) { /* İ lower-cases to i + combining dot (Unicode SpecialCasing) */
            o[k++] = 'i', o[k++] = 0x307;
            continue;
        }
        o[k++] = nm->lowercase ? utf8proc_tolower(buf[j]) : buf[j];
    }
    if (cjk) o[k++] = ' ';
    return k;
}

/* Code points of a span after normalisation. Invalid UTF-8 bytes read as
 * U+FFFD and are dropped. */
static int normalise(const tf_bert_norm *nm, const char *s, size_t n, int32_t **out, size_t *out_n) {
    size_t cap = n * 3 + 32, k = 0;
    int32_t *cp = malloc(cap * sizeof *cp);
    if (!cp) return tf_set_error("tokenizer: out of memory");
    for (size_t i = 0; i < n;) {
        int used;
        int32_t c = tf_utf8_decode((const unsigned char *)s + i, n - i, &used);
        i += (size_t)used;
        if (c < 0) continue;
        if (k + 20 > cap) {
            int32_t *g = realloc(cp, (cap *= 2) * sizeof *cp);
            if (!g) {
                free(cp);
                return tf_set_error("tokenizer: out of memory");
            }
            cp = g;
        }
        k += normalise_cp(nm, c, cp + k);
    }
    *out = cp;
    *out_n = k;
    return 0;
}

/* ---------------------------------------------------------------- WordPiece */

/* Greedy longest-match-first over one word: the pieces are looked up as
 * UTF-8 in utf, where room for the prefix is kept before each piece. */
static int wordpiece_pieces(const wordpiece *w, char *utf, const size_t *off, size_t n, tf_ids *out) {
    size_t start_out = out->n, i = 0, pl = w->prefix_len;
    while (i < n) {
        int32_t id = -1;
        size_t j = n;
        for (; j > i; j--) {
            char *piece = utf + pl + off[i];
            size_t plen = off[j] - off[i];
            if (i > 0) { /* prefix + piece, written just before it */
                char save[16];
                memcpy(save, piece - pl, pl);
                memcpy(piece - pl, w->prefix, pl);
                id = tf_strmap_get(&w->vocab, piece - pl, plen + pl);
                memcpy(piece - pl, save, pl);
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

static int wordpiece_word(const wordpiece *w, const int32_t *cp, size_t n, tf_ids *out) {
    if (n > (size_t)w->max_chars) return tf_ids_push(out, w->unk);
    char sbuf[512];
    size_t soff[129];
    int heap = n > 128 || n * 4 + w->prefix_len + 1 > sizeof sbuf;
    char *utf = heap ? malloc(n * 4 + w->prefix_len + 1) : sbuf;
    size_t *off = heap ? malloc((n + 1) * sizeof *off) : soff, len = 0;
    int rc = -1;
    if (!utf || !off) {
        tf_set_error("tokenizer: out of memory");
        goto out;
    }
    for (size_t i = 0; i < n; i++) off[i] = len, len += (size_t)tf_utf8_encode((uint32_t)cp[i], utf + w->prefix_len + len);
    off[n] = len;
    rc = wordpiece_pieces(w, utf, off, n, out);
out:
    if (heap) free(utf), free(off);
    return rc;
}

int tf_wordpiece_split(const tf_bert_norm *norm, const char *s, size_t n, tf_word_fn fn, void *ctx) {
    int32_t *cp = NULL;
    size_t k = 0, start = 0;
    if (normalise(norm, s, n, &cp, &k)) return -1;
    int rc = 0;
    for (size_t i = 0; i <= k && !rc; i++) { /* words end at whitespace; punctuation stands alone */
        int ws = i < k && tf_unicode_is_space(cp[i]), punct = i < k && is_punct(cp[i]);
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
    return tf_wordpiece_split(&w->norm, s, n, on_word, &c);
}

static int encode_plain_fn(void *impl, const char *s, size_t n, tf_ids *out) { return encode_plain(impl, s, n, out); }

static int wordpiece_encode(void *impl, const char *text, size_t len, tf_ids *out) {
    const wordpiece *w = impl;
    tf_specials sp = {w->special, w->n_special, w->tok, w->tok_len, w->flags};
    return tf_encode_with_specials(text, len, &sp, encode_plain_fn, impl, out);
}

/* Tokens joined by spaces, prefixed ("##") pieces glued to the one before. */
static int wordpiece_decode(const void *impl, const int32_t *ids, size_t n, tf_buf *out) {
    const wordpiece *w = impl;
    for (size_t i = 0; i < n; i++) {
        if (ids[i] < 0 || ids[i] >= w->n)
            return tf_set_error("decode: id %d at position %zu outside the vocabulary [0,%d)", ids[i], i, w->n);
        const char *t = w->tok[ids[i]];
        size_t tl = w->tok_len[ids[i]];
        size_t pl = w->prefix_len;
        int cont = pl && tl > pl && !memcmp(t, w->prefix, pl);
        if (i > 0 && !cont && tf_buf_put(out, " ", 1)) return -1;
        if (tf_buf_put(out, t + (cont ? pl : 0), tl - (cont ? pl : 0))) return -1;
    }
    return 0;
}

static int32_t wordpiece_token_id(const void *impl, const char *token) {
    return tf_strmap_get(&((const wordpiece *)impl)->vocab, token, strlen(token));
}

static int32_t wordpiece_vocab_size(const void *impl) { return ((const wordpiece *)impl)->n; }

static size_t wordpiece_cut(const void *impl, const char *s, size_t n) {
    const wordpiece *w = impl;
    tf_specials sp = {w->special, w->n_special, w->tok, w->tok_len, w->flags};
    return tf_specials_allow_cut(&sp) ? tf_cut_before_line(s, n) : 0;
}

const tf_tok_vtable tf_wordpiece_vt = {wordpiece_encode, wordpiece_decode, wordpiece_token_id,
                                       wordpiece_vocab_size, wordpiece_free, wordpiece_cut, 1};
