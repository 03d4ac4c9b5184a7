/* Private: helpers shared by the tokenizers. */
#ifndef TF_TOK_INTERNAL_H
#define TF_TOK_INTERNAL_H

#include <pthread.h>

#include "../util/util.h"
#include "tformer/tokenizer.h"

/* UTF-8: decode one code point at s (n bytes left); -1 for an invalid sequence. */
int32_t tf_utf8_decode(const unsigned char *s, size_t n, int *used);
int tf_utf8_encode(uint32_t cp, char *out);

int tf_unicode_is_space(int32_t c);
/* Call fn on each run of non-whitespace; invalid UTF-8 is an error. */
typedef int (*tf_span_fn)(void *ctx, const char *s, size_t n);
int tf_split_whitespace(const char *s, size_t n, tf_span_fn fn, void *ctx);
/* Special tokens matched whole in the text (ids into a token table, longest
 * first). flags (may be NULL) per entry: TF_SPECIAL_LSTRIP / _RSTRIP take the
 * whitespace before / after a match into it (Hugging Face's added tokens). */
enum { TF_SPECIAL_LSTRIP = 1, TF_SPECIAL_RSTRIP = 2 };
typedef struct {
    const int32_t *ids;
    int n;
    const char *const *tok;
    const uint32_t *tok_len;
    const uint8_t *flags;
} tf_specials;
typedef int (*tf_encode_fn)(void *impl, const char *s, size_t n, tf_ids *out);
/* Encode text: special tokens as their ids, the spans between them with plain. */
/* The last offset b <= n with s[b-2] a printable ASCII character, s[b-1] a newline and s[b] an ASCII letter or
 * digit: a cut there leaves the ids of every tokenizer that splits words at whitespace (or encodes characters
 * one by one) unchanged, and GPT-2's pattern too (the newline is a token of its own); 0 when none. */
size_t tf_cut_before_line(const char *s, size_t n);
/* Whether specials allow such cuts: none holds a newline or starts with an ASCII letter or digit. */
int tf_specials_allow_cut(const tf_specials *sp);
int tf_encode_with_specials(const char *text, size_t len, const tf_specials *sp, tf_encode_fn plain, void *impl,
                            tf_ids *out);

/* Each "A B" line of a merges file (a leading "#version" line and empty lines
 * skipped, CR stripped) in order; errors get the file and line number. */
typedef int (*tf_merge_fn)(void *ctx, const char *a, const char *b);
int tf_for_each_merge(const char *path, tf_merge_fn fn, void *ctx);
/* A source of merges in rank order: calls fn on each (a merges file, a JSON list). */
typedef int (*tf_merge_each)(const void *src, tf_merge_fn fn, void *ctx);
/* Sort ids longest token first (stable), so that a prefix never wins a match. */
void tf_sort_longest_first(int32_t *ids, uint8_t *flags, int n, const uint32_t *tok_len);

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
    /* The last offset <= n where the text can be cut without changing its ids (tf_tokenizer_encode_cut), 0 when
     * none; NULL: never. */
    size_t (*cut)(const void *impl, const char *s, size_t n);
    int decode_concat; /* decode(a ++ b) = decode(a) ++ what decode(a's last id ++ b) adds to decode(a's last id) */
} tf_tok_vtable;

/* Roles of special tokens (tf_tokenizer_special_id). */
enum { TF_ROLE_CLS, TF_ROLE_SEP, TF_ROLE_PAD, TF_ROLE_MASK, TF_ROLE_UNK, TF_ROLE_BOS, TF_ROLE_EOS, TF_N_ROLES };
extern const char *const tf_role_names[TF_N_ROLES];

/* A TemplateProcessing layout: each item a special token's id (seq -1) or
 * sequence A / B (seq 0 / 1), with its token type id. */
enum { TF_TEMPLATE_MAX = 16 };
typedef struct {
    int n;
    int32_t id[TF_TEMPLATE_MAX];
    int8_t seq[TF_TEMPLATE_MAX];
    uint8_t type[TF_TEMPLATE_MAX];
} tf_template;

struct tf_tokenizer {
    tf_tokenizer_kind kind;
    const tf_tok_vtable *vt;
    void *impl;
    int32_t role[TF_N_ROLES]; /* ids of the special tokens by role, -1 when absent */
    int64_t max_length;       /* model_max_length, 0 when unknown */
    char *source;             /* the file read (tf_tokenizer_source), malloc'd */
    int roberta_pairs;        /* tokenizer.json's post_processor RobertaProcessing: <s> a </s></s> b </s> */
    int has_template;         /* its post_processor TemplateProcessing: template[0] single, [1] pair */
    tf_template template[2];
    pthread_mutex_t lock;     /* encoding uses the model's caches and scratch: one caller at a time */
};

/* Added tokens (Hugging Face) or the vocabulary's own special tokens. */
typedef struct {
    const int32_t *ids;   /* matched whole in the text */
    const uint8_t *flags; /* TF_SPECIAL_* per entry, or NULL */
    int n;
} tf_added;

/* BERT's normaliser switches (Hugging Face's BertNormalizer). */
typedef struct {
    int clean_text, handle_chinese_chars, strip_accents, lowercase;
} tf_bert_norm;
extern const tf_bert_norm tf_bert_uncased;

/* WordPiece from tokens in id order (tok[i] of tok_len[i] bytes, copied). */
typedef struct {
    const char *const *tok;
    const uint32_t *tok_len;
    int32_t n;
    tf_bert_norm norm;
    const char *unk;      /* "[UNK]" */
    const char *prefix;   /* continuing-subword prefix, "##" */
    int max_chars;        /* longer words are unk (100) */
    const tf_added *added; /* NULL: [UNK] [SEP] [PAD] [CLS] [MASK] where present */
    const char *where;    /* the file, for messages */
} tf_wordpiece_src;
void *tf_wordpiece_new(const tf_wordpiece_src *s);

/* Byte-level BPE from tokens in id order: ids < n_model written in GPT-2's
 * byte-to-unicode characters (vocab.json), the rest raw text (added tokens). */
typedef struct {
    const char *const *tok;
    int32_t n, n_model;
    tf_merge_each merges;
    const void *merges_src;
    const tf_added *added; /* NULL: the <|...|> entries */
    int add_prefix_space;  /* a space before text that does not start with one */
    const char *where;
} tf_bytebpe_src;
void *tf_bytebpe_new(const tf_bytebpe_src *s);

/* A JSON object token -> id whose ids are exactly 0..n-1: *tok[id] (pointing
 * into obj; *tok is malloc'ed with room for extra more) and n. Errors name where. */
int tf_vocab_by_id(const cJSON *obj, const char *where, int32_t extra, const char ***tok, int32_t *n);

/* Loaders: NULL + tf_error on failure. */
void *tf_bytebpe_load(const char *vocab_path, const char *merges_path, int openai_layout);
extern const tf_tok_vtable tf_bytebpe_vt;
void *tf_wordpiece_load(const char *vocab_path);
extern const tf_tok_vtable tf_wordpiece_vt;
/* BERT normalisation and pre-tokenization: fn gets each word's code points. */
typedef int (*tf_word_fn)(void *ctx, const int32_t *cp, size_t n);
int tf_wordpiece_split(const tf_bert_norm *norm, const char *s, size_t n, tf_word_fn fn, void *ctx);
void *tf_bpe_load(const char *vocab_path, const char *merges_path);
extern const tf_tok_vtable tf_bpe_vt;
void *tf_chartok_load(const char *chars_path); /* NULL path: the 256 bytes */
extern const tf_tok_vtable tf_chartok_vt;

/* tokenizer.json (+ tokenizer_config.json, special_tokens_map.json beside it)
 * into t: kind, table, impl, roles and max length (hf_json.c). */
int tf_hf_tokenizer_load(tf_tokenizer *t, const char *json_path);
/* Settings beside a tokenizer.json (hf_config.c). */
typedef struct {
    int present;                        /* tokenizer_config.json was read */
    int do_lower_case, strip_accents;   /* -1: absent (strip_accents: null or absent) */
    int tokenize_chinese_chars;         /* -1: absent */
    int bert_family;                    /* tokenizer_class is BERT-style: 1 / 0, -1 when absent */
    char *role_tok[TF_N_ROLES];         /* special tokens by role, malloc'ed, NULL when absent */
    int64_t max_length;                 /* 0: unknown */
} tf_hf_config;
int tf_hf_config_read(tf_hf_config *c, const char *dir);
void tf_hf_config_free(tf_hf_config *c);
const char *tf_hf_role_key(int role); /* "cls_token", ... */

#endif
