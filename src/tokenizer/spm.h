/* Private: SentencePiece models (ModelProto files: .spm, .model), unigram only.
 * spm_model.c reads and checks the file, spm_encode.c normalises, segments
 * and decodes, spm_tok.c puts them behind the tokenizer interface (plain, or
 * a Marian side with vocab.json). */
#ifndef TF_SPM_H
#define TF_SPM_H

#include "tok_internal.h"

/* ModelProto.SentencePiece.Type */
enum { TF_SPM_NORMAL = 1, TF_SPM_UNKNOWN = 2, TF_SPM_CONTROL = 3, TF_SPM_USER = 4, TF_SPM_UNUSED = 5, TF_SPM_BYTE = 6 };

/* A precompiled charsmap (sentencepiece's normalisation rules): darts-clone's
 * double array over UTF-8 bytes and the NUL-terminated replacement strings. */
typedef struct {
    uint32_t *units;
    size_t n_units;
    char *repl;
    size_t n_repl;
} tf_charsmap;
/* From its blob (trie size, units, strings); every reachable node checked. */
int tf_charsmap_load(tf_charsmap *c, const uint8_t *blob, size_t n, const char *where);
void tf_charsmap_free(tf_charsmap *c);
/* A prefix of s the charsmap maps: its length (0: none) and *rep, the
 * NUL-terminated replacement. longest: darts-clone's longest result
 * (sentencepiece); else the first, shortest one, the search stopping at a NUL
 * byte (Hugging Face's Precompiled). */
size_t tf_charsmap_match(const tf_charsmap *c, const char *s, size_t n, int longest, const char **rep);

typedef struct {
    /* pieces, in id order */
    int32_t n;
    const char **piece;  /* NUL-terminated (the id map's copies) */
    uint32_t *len;
    double *score;       /* sentencepiece's floats, or tokenizer.json's f64 */
    uint8_t *type;
    tf_strmap ids;       /* piece -> id */
    int32_t unk_id;
    int32_t byte_id[256]; /* the BYTE piece <0xXX> of each byte, -1 when absent */
    double min_score, max_score; /* over NORMAL pieces, from FLT_MAX / FLT_MIN as sentencepiece (hf: every piece) */
    int hf;              /* Hugging Face's Unigram (tokenizer.json): f64 sums, every piece in the trie */
    /* trainer_spec */
    int byte_fallback;
    char *unk_surface;   /* decoded text of the unknown piece (" \u2047 ") */
    char *role_piece[4]; /* unk, bos, eos, pad pieces (TF_SPM_ROLE_*) */
    /* normalizer_spec */
    char *norm_name;
    int add_dummy_prefix, remove_extra_whitespaces, escape_whitespaces;
    tf_charsmap cmap;    /* precompiled_charsmap (units NULL: none) */
    /* pieces of type NORMAL, USER_DEFINED, UNUSED as a byte trie: (node, byte) -> child */
    tf_pairmap trie;
    int32_t *node_id;    /* piece id ending at a node, -1 */
    int32_t n_nodes;
    int has_user;        /* some piece is USER_DEFINED */
    char *where;         /* the file, for messages */
} tf_spm;

enum { TF_SPM_ROLE_UNK, TF_SPM_ROLE_BOS, TF_SPM_ROLE_EOS, TF_SPM_ROLE_PAD };

/* A model from the bytes of a ModelProto (where: the file, for messages) or a
 * file; NULL + tf_error naming it when malformed or not a unigram model. */
tf_spm *tf_spm_parse(const uint8_t *data, size_t n, const char *where);
tf_spm *tf_spm_load(const char *path);
void tf_spm_free(tf_spm *m);
/* The id of a piece, -1 when absent. */
int32_t tf_spm_piece_id(const tf_spm *m, const char *piece, size_t len);

/* Normalised text: the charsmap, user-defined symbols kept, whitespace rules, U+2581. */
int tf_spm_normalize(const tf_spm *m, const char *s, size_t n, tf_buf *out);

/* Encoded pieces: piece i is id[i] with text text.p + off[i], len[i] bytes. */
typedef struct {
    int32_t *id;
    uint32_t *off, *len;
    size_t n, cap;
    tf_buf text;
} tf_spm_pieces;
void tf_spm_pieces_free(tf_spm_pieces *p);
/* The pieces of text as sentencepiece's Encode (appended to out). */
int tf_spm_encode(const tf_spm *m, const char *s, size_t n, tf_spm_pieces *out);
/* Hugging Face's Unigram model from tokenizer.json's vocabulary (pieces in id
 * order, copied; unk_id one of them): every piece in the trie, no normaliser. */
typedef struct {
    const char *const *piece;
    const double *score;
    int32_t n, unk_id;
    int byte_fallback;
    const char *where;
} tf_spm_hf_src;
tf_spm *tf_spm_hf_new(const tf_spm_hf_src *s);
/* The ids of already normalised, valid UTF-8 text as Hugging Face's
 * Unigram.tokenize (unknown runs fused, then looked up; byte fallback whole
 * or not at all), appended to out. */
int tf_spm_hf_segment(const tf_spm *m, const char *s, size_t n, tf_ids *out);

/* Text of pieces given as strings, as sentencepiece's DecodePieces (appended). */
int tf_spm_decode_pieces(const tf_spm *m, const char *const *piece, const uint32_t *len, size_t n, tf_buf *out);

/* The tokenizer: a model file (plain: sentencepiece's ids), or a Marian side
 * (source.spm / target.spm + vocab.json beside it). */
extern const tf_tok_vtable tf_spm_vt;
int tf_spm_tokenizer_load(tf_tokenizer *t, const char *path);

#endif
