/* Private: the parts of a Hugging Face tokenizer.json pipeline around a
 * Unigram model (hf_pipe.c): normalizers, pre-tokenizers and decoders read
 * from the file's JSON and applied as the `tokenizers` library applies them;
 * hf_unigram.c puts them around the model (spm.h) behind the tokenizer
 * interface. Text here is valid UTF-8 (tf_utf8_sanitize). */
#ifndef TF_HF_PIPE_H
#define TF_HF_PIPE_H

#include "spm.h"

/* Optional keys of a component object (ctx names it in messages): absent or
 * null gives def; a value of another type is an error naming path, ctx and key. */
const char *tf_hfj_type(const char *path, const cJSON *o, const char *what);
int tf_hfj_bool(const char *path, const cJSON *o, const char *ctx, const char *key, int def, int *out);
int tf_hfj_int(const char *path, const cJSON *o, const char *ctx, const char *key, int def, int *out);
int tf_hfj_str(const char *path, const cJSON *o, const char *ctx, const char *key, const char *def, const char **out);
int tf_hfj_unsupported(const char *path, const char *what, const char *type, const char *supported);

/* Bytes as Python's bytes.decode("utf-8", errors="replace"): each maximal
 * invalid subpart becomes one U+FFFD (out replaces its content). */
int tf_utf8_sanitize(const char *s, size_t n, tf_buf *out);

typedef struct tf_hf_norm tf_hf_norm; /* the normalizer (a sequence of steps) */
typedef struct tf_hf_pre tf_hf_pre;   /* the pre-tokenizer */
typedef struct tf_hf_dec tf_hf_dec;   /* the decoder */

/* Each reads the root's "normalizer" / "pre_tokenizer" / "decoder" (null: none). */
tf_hf_norm *tf_hf_norm_read(const cJSON *root, const char *path);
tf_hf_pre *tf_hf_pre_read(const cJSON *root, const char *path);
tf_hf_dec *tf_hf_dec_read(const cJSON *root, const char *path);
void tf_hf_norm_free(tf_hf_norm *n);
void tf_hf_pre_free(tf_hf_pre *p);
void tf_hf_dec_free(tf_hf_dec *d);

/* The normalised text of s (out replaces its content). */
int tf_hf_normalize(const tf_hf_norm *nm, const char *s, size_t n, tf_buf *out);
/* Each pre-token of normalised text s: fn(ctx, piece, len). at_start: the
 * text begins the input (Metaspace's prepend_scheme "first"). */
typedef int (*tf_hf_piece_fn)(void *ctx, const char *s, size_t n);
int tf_hf_pre_tokenize(const tf_hf_pre *p, const char *s, size_t n, int at_start, tf_hf_piece_fn fn, void *ctx);
/* Tokens (strings) to text, as Decoder.decode (no decoder: joined by spaces). */
int tf_hf_decode(const tf_hf_dec *d, const char *const *tok, const uint32_t *len, size_t n, tf_buf *out);

/* The tokenizer of a Unigram tokenizer.json: tokens by id (the model's
 * n_model pieces with their scores, then added tokens past them), the added
 * tokens matched in the text, the components read from root. */
typedef struct {
    const cJSON *root;
    const char *path;
    const char *const *tok;
    const double *score;
    int32_t n, n_model, unk_id;
    int byte_fallback;
    const tf_added *added;
} tf_hf_unigram_src;
void *tf_hf_unigram_new(const tf_hf_unigram_src *s);
extern const tf_tok_vtable tf_hf_unigram_vt;

#endif
