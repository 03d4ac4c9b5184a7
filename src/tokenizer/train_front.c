/* tf_tokenizer_train: corpus -> words -> learned vocabulary -> files that
 * tf_tokenizer_load reads back (and, for byte-level BPE, Hugging Face too). */
#include <cjson/cJSON.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "train_internal.h"

/* ---------------------------------------------------------------- output files */

static int write_atomic(const char *dir, const char *name, const char *data, size_t n) {
    char path[4096];
    if (tf_path_join(path, sizeof path, dir, name)) return -1;
    return tf_write_file(path, data, n);
}

static int write_kind(const char *dir, const char *type) {
    char text[128];
    int n = snprintf(text, sizeof text, "{\"type\": \"%s\", \"written_by\": \"tformer\"}\n", type);
    return write_atomic(dir, "tokenizer.tformer.json", text, (size_t)n);
}

/* vocab.json (token -> id, in id order) and merges.txt ("a b" per line). */
static int write_bpe_files(const tf_trainer *t, const char *dir, int version_header) {
    cJSON *v = cJSON_CreateObject();
    for (int32_t i = 0; v && i < t->n_tok; i++) {
        cJSON *num = cJSON_CreateNumber(i);
        if (!num || !cJSON_AddItemToObject(v, t->tok[i], num)) cJSON_Delete(v), v = NULL;
    }
    char *json = v ? cJSON_PrintUnformatted(v) : NULL;
    cJSON_Delete(v);
    tf_buf m = {0};
    int rc = json ? 0 : tf_set_error("train: out of memory");
    if (!rc && version_header) rc = tf_buf_put(&m, "#version: 0.2\n", 14);
    for (size_t k = 0; !rc && k + 1 < t->merges.n; k += 2) {
        int32_t a = t->merges.v[k], b = t->merges.v[k + 1];
        rc = tf_buf_put(&m, t->tok[a], t->tok_len[a]) || tf_buf_put(&m, " ", 1) ||
             tf_buf_put(&m, t->tok[b], t->tok_len[b]) || tf_buf_put(&m, "\n", 1);
    }
    if (!rc) rc = write_atomic(dir, "vocab.json", json, strlen(json));
    if (!rc) rc = write_atomic(dir, "merges.txt", m.p ? m.p : "", m.n);
    free(json);
    free(m.p);
    return rc;
}

/* ---------------------------------------------------------------- alphabets */

static int by_text(const void *x, const void *y) { return strcmp(*(char *const *)x, *(char *const *)y); }

/* Add the distinct symbols of a set (a strmap used as a set) as tokens, in code-point order. */
static int add_sorted(tf_trainer *t, const tf_strmap *set) {
    const char **keys = malloc((set->n ? set->n : 1) * sizeof *keys);
    if (!keys) return tf_set_error("train: out of memory");
    size_t k = 0;
    for (size_t i = 0; i < set->cap; i++)
        if (set->keys[i]) keys[k++] = set->keys[i];
    qsort(keys, k, sizeof *keys, by_text);
    int rc = 0;
    for (size_t i = 0; i < k && !rc; i++) rc = tr_token(t, keys[i], strlen(keys[i])) < 0;
    free(keys);
    return rc ? -1 : 0;
}

/* The symbols of word text w under the trainer's mode: UTF-8 characters then
 * a "</w>" word-end symbol (sub-word BPE), or "##" on all characters but the
 * first (WordPiece). */
typedef enum { MODE_BPE, MODE_WORDPIECE } char_mode;

static int word_symbols(const char *w, size_t n, char_mode mode, int (*fn)(void *, const char *, size_t), void *ctx) {
    char sym[16];
    for (size_t i = 0; i < n;) {
        int used;
        tf_utf8_decode((const unsigned char *)w + i, n - i, &used);
        size_t l = 0;
        if (mode == MODE_WORDPIECE && i > 0) memcpy(sym, "##", 2), l = 2;
        memcpy(sym + l, w + i, (size_t)used), l += (size_t)used;
        i += (size_t)used;
        if (fn(ctx, sym, l)) return -1;
    }
    return mode == MODE_BPE ? fn(ctx, "</w>", 4) : 0;
}

static int collect_symbol(void *ctx, const char *s, size_t n) {
    return tf_strmap_get(ctx, s, n) >= 0 ? 0 : tf_strmap_put(ctx, s, n, 0);
}

typedef struct {
    tf_trainer *t;
    tr_word *w;
} sym_ctx;

static int append_symbol(void *ctx, const char *s, size_t n) {
    sym_ctx *c = ctx;
    c->w->sym[c->w->len++] = tf_strmap_get(&c->t->tok_map, s, n);
    return 0;
}

/* Alphabet then word symbols for character modes (words are keyed by text). */
static int symbolise_chars(tf_trainer *t, char_mode mode) {
    tf_strmap firsts, rest;
    if (tf_strmap_init(&firsts, 1024) || tf_strmap_init(&rest, 1024)) return -1;
    int rc = 0;
    for (size_t i = 0; i < t->word_map.cap && !rc; i++)
        if (t->word_map.keys[i])
            rc = word_symbols(t->word_map.keys[i], t->word_map.lens[i], mode, collect_symbol,
                              mode == MODE_WORDPIECE ? (void *)&rest : (void *)&firsts);
    /* WordPiece: first characters too, without "##" */
    for (size_t i = 0; mode == MODE_WORDPIECE && i < t->word_map.cap && !rc; i++)
        if (t->word_map.keys[i]) {
            int used;
            tf_utf8_decode((const unsigned char *)t->word_map.keys[i], t->word_map.lens[i], &used);
            rc = collect_symbol(&firsts, t->word_map.keys[i], (size_t)used);
        }
    if (!rc) rc = add_sorted(t, &firsts) || add_sorted(t, &rest);
    tf_strmap_free(&firsts);
    tf_strmap_free(&rest);
    for (size_t i = 0; i < t->word_map.cap && !rc; i++) {
        if (!t->word_map.keys[i]) continue;
        tr_word *w = &t->words[t->word_map.vals[i]];
        if (!(w->sym = malloc((t->word_map.lens[i] + 2) * sizeof *w->sym))) return tf_set_error("train: out of memory");
        sym_ctx c = {t, w};
        rc = word_symbols(t->word_map.keys[i], t->word_map.lens[i], mode, append_symbol, &c);
    }
    return rc;
}

/* ---------------------------------------------------------------- corpora */

typedef int (*text_fn)(tf_trainer *t, const char *s, size_t n);

static int count_word(void *t, const char *w, size_t n) { return tr_count_word(t, w, n); }

/* Sub-word BPE words: whitespace-separated, valid UTF-8. */
static int words_by_space(tf_trainer *t, const char *s, size_t n) { return tf_split_whitespace(s, n, count_word, t); }

static int count_cp_word(void *ctx, const int32_t *cp, size_t n) {
    tf_buf b = {0};
    char u[4];
    int rc = 0;
    for (size_t i = 0; i < n && !rc; i++) rc = tf_buf_put(&b, u, (size_t)tf_utf8_encode((uint32_t)cp[i], u));
    if (!rc) rc = tr_count_word(ctx, b.p, b.n);
    free(b.p);
    return rc;
}

static int words_bert(tf_trainer *t, const char *s, size_t n) { return tf_wordpiece_split(&tf_bert_uncased, s, n, count_cp_word, t); }

/* Byte-level words: GPT-2 pre-tokenizer pieces of each line (its newline
 * included), as Hugging Face feeds files line by line; keyed by raw bytes. */
static int words_gpt2(tf_trainer *t, const char *s, size_t n) {
    tf_gpt2_re re;
    if (tf_gpt2_re_init(&re)) return -1;
    int rc = 0;
    for (size_t line = 0; line < n && !rc;) {
        const char *nl = memchr(s + line, '\n', n - line);
        size_t end = nl ? (size_t)(nl - s) + 1 : n, off = line;
        while (off < end && !rc) {
            size_t ms, me;
            rc = tf_gpt2_re_next(&re, s, end, off, &ms, &me);
            for (; !rc && off < ms; off++) rc = tr_count_word(t, s + off, 1); /* invalid UTF-8 bytes */
            if (!rc && me > ms) rc = tr_count_word(t, s + ms, me - ms), off = me;
        }
        line = end;
    }
    tf_gpt2_re_free(&re);
    return rc;
}

/* A file being counted a piece of whole lines at a time: the words never span lines. */
typedef struct {
    tf_trainer *t;
    text_fn fn;
    const char *path;
    size_t line, byte; /* where the piece starts: its line (from 1) and byte */
} corpus_piece;

/* After the last newline; all of it when it holds a NUL byte (refused at once, not held). */
static size_t after_last_line(void *ctx, const char *text, size_t n) {
    (void)ctx;
    if (memchr(text, 0, n)) return n;
    while (n > 0 && text[n - 1] != '\n') n--;
    return n;
}

/* A NUL byte in a text: refused, named as U+0000 with its line and column
 * (the vocabulary left it out, and encoding the same text then failed). */
static int refuse_nul(const corpus_piece *p, const char *text, size_t len) {
    const char *nul = memchr(text, 0, len);
    if (!nul) return 0;
    size_t line = p->line, start = 0, at = (size_t)(nul - text);
    for (size_t i = 0; i < at; i++)
        if (text[i] == '\n') line++, start = i + 1;
    return tf_set_error("%s:%zu: a NUL byte (U+0000) at column %zu (byte %zu): a text file holds no NUL (a binary "
                        "file?); remove it", p->path, line, at - start + 1, p->byte + at);
}

static int count_piece(void *ctx, const char *text, size_t n) {
    corpus_piece *p = ctx;
    if (refuse_nul(p, text, n)) return -1;
    if (p->fn(p->t, text, n)) {
        char msg[512];
        snprintf(msg, sizeof msg, "%s", tf_error());
        if (!p->byte) return tf_set_error("%s: %s", p->path, msg);
        return tf_set_error("%s: in the text from line %zu (byte %zu) on: %s", p->path, p->line, p->byte, msg);
    }
    for (size_t i = 0; i < n; i++) p->line += text[i] == '\n';
    p->byte += n;
    return 0;
}

/* Each file read a piece of whole lines at a time (tf_read_data_pieces), never whole: the words' counts are
 * what is kept. */
static int read_corpus(tf_trainer *t, const char *const *files, int n_files, text_fn fn) {
    for (int f = 0; f < n_files; f++) {
        corpus_piece p = {t, fn, files[f], 1, 0};
        if (tf_read_data_pieces(files[f], after_last_line, count_piece, &p)) return -1;
    }
    if (!t->n_words && n_files == 1) return tf_set_error("%s: holds no words to learn a vocabulary from", files[0]);
    if (!t->n_words)
        return tf_set_error("%s and the %d other files hold no words to learn a vocabulary from", files[0], n_files - 1);
    return 0;
}

/* ---------------------------------------------------------------- the kinds */

static int train_byte_bpe(tf_trainer *t, const tf_tokenizer_train_opts *o, const char *const *files, int n_files,
                          const char *dir) {
    if (read_corpus(t, files, n_files, words_gpt2) || tr_token(t, "<|endoftext|>", 13) < 0) return -1;
    uint32_t fwd[256];
    int32_t id_of_byte[256];
    tf_bytes_to_unicode(fwd);
    tf_strmap alphabet;
    if (tf_strmap_init(&alphabet, 512)) return -1;
    char u[4];
    for (int b = 0; b < 256; b++) tf_strmap_put(&alphabet, u, (size_t)tf_utf8_encode(fwd[b], u), 0);
    int rc = add_sorted(t, &alphabet);
    tf_strmap_free(&alphabet);
    for (int b = 0; b < 256 && !rc; b++) id_of_byte[b] = tr_token(t, u, (size_t)tf_utf8_encode(fwd[b], u));
    for (size_t i = 0; i < t->word_map.cap && !rc; i++) {
        if (!t->word_map.keys[i]) continue;
        tr_word *w = &t->words[t->word_map.vals[i]];
        uint32_t n = t->word_map.lens[i];
        if (!(w->sym = malloc(n * sizeof *w->sym))) return tf_set_error("train: out of memory");
        for (uint32_t k = 0; k < n; k++) w->sym[k] = id_of_byte[(unsigned char)t->word_map.keys[i][k]];
        w->len = (int32_t)n;
    }
    if (rc || tr_learn(t, o->vocab_size, o->min_frequency)) return -1;
    return write_bpe_files(t, dir, 1) || write_kind(dir, "byte-bpe");
}

static int train_subword_bpe(tf_trainer *t, const tf_tokenizer_train_opts *o, const char *const *files,
                             int n_files, const char *dir) {
    if (read_corpus(t, files, n_files, words_by_space) || tr_token(t, "<unk>", 5) < 0 ||
        symbolise_chars(t, MODE_BPE) || tr_learn(t, o->vocab_size, o->min_frequency))
        return -1;
    return write_bpe_files(t, dir, 0) || write_kind(dir, "bpe");
}

static int train_wordpiece(tf_trainer *t, const tf_tokenizer_train_opts *o, const char *const *files,
                           int n_files, const char *dir) {
    static const char *const specials[] = {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"};
    if (read_corpus(t, files, n_files, words_bert)) return -1;
    for (int k = 0; k < 5; k++)
        if (tr_token(t, specials[k], strlen(specials[k])) < 0) return -1;
    if (symbolise_chars(t, MODE_WORDPIECE) || tr_learn(t, o->vocab_size, o->min_frequency)) return -1;
    tf_buf v = {0};
    int rc = 0;
    for (int32_t i = 0; i < t->n_tok && !rc; i++) rc = tf_buf_put(&v, t->tok[i], t->tok_len[i]) || tf_buf_put(&v, "\n", 1);
    if (!rc) rc = write_atomic(dir, "vocab.txt", v.p, v.n);
    free(v.p);
    return rc;
}

static int collect_chars(tf_trainer *t, const char *s, size_t n) {
    for (size_t i = 0; i < n;) {
        int used;
        if (tf_utf8_decode((const unsigned char *)s + i, n - i, &used) < 0)
            return tf_set_error("invalid UTF-8 at byte %zu", i);
        if (tr_count_word(t, s + i, (size_t)used)) return -1;
        i += (size_t)used;
    }
    return 0;
}

static int train_chars(tf_trainer *t, const char *const *files, int n_files, const char *dir) {
    if (read_corpus(t, files, n_files, collect_chars) || add_sorted(t, &t->word_map)) return -1;
    tf_buf v = {0};
    int rc = 0;
    for (int32_t i = 0; i < t->n_tok && !rc; i++) rc = tf_buf_put(&v, t->tok[i], t->tok_len[i]);
    if (!rc) rc = write_atomic(dir, "chars.txt", v.p, v.n) || write_kind(dir, "char");
    free(v.p);
    return rc;
}

int tf_tokenizer_train(const tf_tokenizer_train_opts *o, const char *const *files, int n_files,
                       const char *out_dir) {
    if (n_files < 1) return tf_set_error("train: no input files");
    if (o->kind == TF_TOKENIZER_SPM) return tf_set_error("train: SentencePiece models are trained by sentencepiece, not tformer");
    if (o->kind != TF_TOKENIZER_CHAR && (o->vocab_size < 1 || o->vocab_size > (1 << 24)))
        return tf_set_error("train: vocab size %d outside [1, 2^24]", o->vocab_size);
    if (mkdir(out_dir, 0755) && errno != EEXIST) return tf_set_error("%s: cannot create: %s", out_dir, strerror(errno));
    tf_trainer t;
    if (tr_init(&t, o->kind == TF_TOKENIZER_WORDPIECE ? "##" : "")) return -1;
    int rc;
    switch (o->kind) {
    case TF_TOKENIZER_BYTE_BPE: rc = train_byte_bpe(&t, o, files, n_files, out_dir); break;
    case TF_TOKENIZER_BPE: rc = train_subword_bpe(&t, o, files, n_files, out_dir); break;
    case TF_TOKENIZER_WORDPIECE: rc = train_wordpiece(&t, o, files, n_files, out_dir); break;
    default: rc = train_chars(&t, files, n_files, out_dir); break;
    }
    tr_free(&t);
    return rc ? -1 : 0;
}
