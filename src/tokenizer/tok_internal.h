/* Private: helpers shared by the tokenizers. */
#ifndef TF_TOK_INTERNAL_H
#define TF_TOK_INTERNAL_H

#include "../util/util.h"

/* UTF-8: decode one code point at s (n bytes left); -1 for an invalid sequence. */
int32_t tf_utf8_decode(const unsigned char *s, size_t n, int *used);
int tf_utf8_encode(uint32_t cp, char *out);

int tf_unicode_is_space(int32_t c);
/* Call fn on each run of non-whitespace; invalid UTF-8 is an error. */
typedef int (*tf_span_fn)(void *ctx, const char *s, size_t n);
int tf_split_whitespace(const char *s, size_t n, tf_span_fn fn, void *ctx);
/* Special tokens matched whole in the text (ids into a token table, longest first). */
typedef struct {
    const int32_t *ids;
    int n;
    const char *const *tok;
    const uint32_t *tok_len;
} tf_specials;
typedef int (*tf_encode_fn)(void *impl, const char *s, size_t n, tf_ids *out);
/* Encode text: special tokens as their ids, the spans between them with plain. */
int tf_encode_with_specials(const char *text, size_t len, const tf_specials *sp, tf_encode_fn plain, void *impl,
                            tf_ids *out);

/* Each "A B" line of a merges file (a leading "#version" line and empty lines
 * skipped, CR stripped) in order; errors get the file and line number. */
typedef int (*tf_merge_fn)(void *ctx, const char *a, const char *b);
int tf_for_each_merge(const char *path, tf_merge_fn fn, void *ctx);

/* GPT-2's reversible byte <-> printable code point table. */
void tf_bytes_to_unicode(uint32_t table[256]);

/* Merging by rank (bpe_merge.c): ids[0..n) in, merged ids appended to out. */
typedef struct {
    int32_t *ids, *prev, *next;
    struct tf_heap_ent *heap;
    size_t cap;
} tf_bpe_scratch;
int tf_bpe_scratch_reserve(tf_bpe_scratch *s, size_t n);
void tf_bpe_scratch_free(tf_bpe_scratch *s);
int tf_bpe_merge(const tf_pairmap *merges, tf_bpe_scratch *s, int32_t n, tf_ids *out);

/* GPT-2's pre-tokenizer pattern, compiled with PCRE2 (UTF, UCP, invalid UTF-8
 * allowed: such bytes are never part of a match). */
typedef struct {
    void *code, *md;
} tf_gpt2_re;
int tf_gpt2_re_init(tf_gpt2_re *r);
void tf_gpt2_re_free(tf_gpt2_re *r);
/* The next match at or after off: [*ms, *me); *ms = *me = n when none. */
int tf_gpt2_re_next(tf_gpt2_re *r, const char *s, size_t n, size_t off, size_t *ms, size_t *me);

/* Each tokenizer kind fills this table; tokenizer.c dispatches through it. */
typedef struct {
    int (*encode)(void *impl, const char *text, size_t len, tf_ids *out);
    int (*decode)(const void *impl, const int32_t *ids, size_t n, tf_buf *out);
    int32_t (*token_id)(const void *impl, const char *token);
    int32_t (*vocab_size)(const void *impl);
    void (*free)(void *impl);
} tf_tok_vtable;

struct tf_tokenizer {
    tf_tokenizer_kind kind;
    const tf_tok_vtable *vt;
    void *impl;
};

/* Loaders: NULL + tf_error on failure. */
void *tf_bytebpe_load(const char *vocab_path, const char *merges_path, int openai_layout);
extern const tf_tok_vtable tf_bytebpe_vt;
void *tf_wordpiece_load(const char *vocab_path);
extern const tf_tok_vtable tf_wordpiece_vt;
int tf_wordpiece_special(const void *impl, int32_t *cls, int32_t *sep);
/* BERT normalisation and pre-tokenization: fn gets each word's code points. */
typedef int (*tf_word_fn)(void *ctx, const int32_t *cp, size_t n);
int tf_wordpiece_split(int lower, const char *s, size_t n, tf_word_fn fn, void *ctx);
void *tf_bpe_load(const char *vocab_path, const char *merges_path);
extern const tf_tok_vtable tf_bpe_vt;
void *tf_chartok_load(const char *chars_path); /* NULL path: the 256 bytes */
extern const tf_tok_vtable tf_chartok_vt;

#endif
