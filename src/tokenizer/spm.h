/* Private: SentencePiece models (ModelProto files: .spm, .model), unigram only.
 * spm_model.c reads and checks the file, spm_encode.c normalises, segments
 * and decodes, spm_tok.c puts them behind the tokenizer interface (plain, or
 * a Marian side with vocab.json). */
#ifndef TF_SPM_H
#define TF_SPM_H

#include "tok_internal.h"

/* ModelProto.SentencePiece.Type */
enum { TF_SPM_NORMAL = 1, TF_SPM_UNKNOWN = 2, TF_SPM_CONTROL = 3, TF_SPM_USER = 4, TF_SPM_UNUSED = 5, TF_SPM_BYTE = 6 };

typedef struct {
    /* pieces, in id order */
    int32_t n;
    const char **piece;  /* NUL-terminated (the id map's copies) */
    uint32_t *len;
    float *score;
    uint8_t *type;
    tf_strmap ids;       /* piece -> id */
    int32_t unk_id;
    int32_t byte_id[256]; /* the BYTE piece <0xXX> of each byte, -1 when absent */
    float min_score, max_score; /* over NORMAL pieces, from FLT_MAX / FLT_MIN as sentencepiece */
    /* trainer_spec */
    int byte_fallback;
    char *unk_surface;   /* decoded text of the unknown piece (" \u2047 ") */
    char *role_piece[4]; /* unk, bos, eos, pad pieces (TF_SPM_ROLE_*) */
    /* normalizer_spec */
    char *norm_name;
    int add_dummy_prefix, remove_extra_whitespaces, escape_whitespaces;
    uint32_t *units;     /* precompiled_charsmap's double array (darts-clone), NULL: none */
    size_t n_units;
    char *repl;          /* its replacement strings, NUL-terminated */
    size_t n_repl;
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

/* The longest prefix of s the charsmap maps: its length (0: none) and *rep, the
 * NUL-terminated replacement (darts-clone's commonPrefixSearch, longest result). */
size_t tf_spm_charsmap_match(const tf_spm *m, const char *s, size_t n, const char **rep);
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
/* Text of pieces given as strings, as sentencepiece's DecodePieces (appended). */
int tf_spm_decode_pieces(const tf_spm *m, const char *const *piece, const uint32_t *len, size_t n, tf_buf *out);

/* The tokenizer: a model file (plain: sentencepiece's ids), or a Marian side
 * (source.spm / target.spm + vocab.json beside it). */
extern const tf_tok_vtable tf_spm_vt;
int tf_spm_tokenizer_load(tf_tokenizer *t, const char *path);

#endif
