/* SentencePiece behind the tokenizer interface (TF_TOKENIZER_SPM).
 *
 * A model file alone (*.spm, *.model): sentencepiece's own ids, as
 * EncodeAsIds / DecodeIds.
 */
#include <stdlib.h>
#include <string.h>

#include "spm.h"

typedef struct {
    tf_spm *spm;
} spm_tok;

static void spm_tok_free(void *impl) {
    spm_tok *k = impl;
    if (!k) return;
    tf_spm_free(k->spm);
    free(k);
}

/* ---------------------------------------------------------------- plain */

static int plain_encode(void *impl, const char *text, size_t len, tf_ids *out) {
    spm_tok *k = impl;
    tf_spm_pieces p = {0};
    int rc = tf_spm_encode(k->spm, text, len, &p);
    for (size_t i = 0; !rc && i < p.n; i++) rc = tf_ids_push(out, p.id[i]);
    tf_spm_pieces_free(&p);
    return rc ? -1 : 0;
}

/* Pieces of ids through a table (model ids -> pieces), then decoded. */
static int decode_through(const tf_spm *m, const char *const *tok, const uint32_t *tok_len, int32_t n_tok,
                          const int32_t *ids, size_t n, const int32_t *skip, int n_skip, tf_buf *out) {
    const char **piece = malloc((n + 1) * sizeof *piece);
    uint32_t *len = malloc((n + 1) * sizeof *len);
    size_t k = 0;
    int rc = piece && len ? 0 : tf_set_error("tokenizer: out of memory");
    for (size_t i = 0; !rc && i < n; i++) {
        if (ids[i] < 0 || ids[i] >= n_tok) {
            rc = tf_set_error("decode: id %d at position %zu outside the vocabulary [0,%d)", ids[i], i, n_tok);
            break;
        }
        int s = 0;
        while (s < n_skip && skip[s] != ids[i]) s++;
        if (s == n_skip) piece[k] = tok[ids[i]], len[k++] = tok_len[ids[i]];
    }
    if (!rc) rc = tf_spm_decode_pieces(m, piece, len, k, out);
    free(piece), free(len);
    return rc;
}

static int plain_decode(const void *impl, const int32_t *ids, size_t n, tf_buf *out) {
    const spm_tok *k = impl;
    return decode_through(k->spm, k->spm->piece, k->spm->len, k->spm->n, ids, n, NULL, 0, out);
}

/* ---------------------------------------------------------------- the vtable */

static int32_t spm_token_id(const void *impl, const char *token) {
    const spm_tok *k = impl;
    return tf_spm_piece_id(k->spm, token, strlen(token));
}

static int32_t spm_vocab_size(const void *impl) { return ((const spm_tok *)impl)->spm->n; }

const tf_tok_vtable tf_spm_vt = {plain_encode, plain_decode, spm_token_id, spm_vocab_size, spm_tok_free};

/* ---------------------------------------------------------------- loading */

/* sentencepiece's roles: the unknown piece; <s>, </s>, <pad> (trainer_spec's names) when they are control pieces. */
static void plain_roles(tf_tokenizer *t, const tf_spm *m) {
    static const int roles[4] = {TF_ROLE_UNK, TF_ROLE_BOS, TF_ROLE_EOS, TF_ROLE_PAD};
    t->role[TF_ROLE_UNK] = m->unk_id;
    for (int r = 1; r < 4; r++) {
        int32_t id = tf_spm_piece_id(m, m->role_piece[r], strlen(m->role_piece[r]));
        t->role[roles[r]] = id >= 0 && m->type[id] == TF_SPM_CONTROL ? id : -1;
    }
}

int tf_spm_tokenizer_load(tf_tokenizer *t, const char *path) {
    spm_tok *k = calloc(1, sizeof *k);
    t->kind = TF_TOKENIZER_SPM, t->vt = &tf_spm_vt, t->impl = k;
    if (!k) return tf_set_error("tokenizer: out of memory");
    if (!(k->spm = tf_spm_load(path))) return -1;
    plain_roles(t, k->spm);
    return 0;
}
