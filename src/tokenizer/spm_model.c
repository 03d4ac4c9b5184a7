/* SentencePiece model files: the ModelProto message (protobuf, proto2) read by
 * hand -- pieces (text, score, type), trainer_spec (model_type, byte_fallback,
 * unk_surface, the special pieces), normalizer_spec (name,
 * precompiled_charsmap, add_dummy_prefix, remove_extra_whitespaces,
 * escape_whitespaces; protobuf's defaults when absent). Unknown fields are
 * skipped; a known field with another wire type, a truncated varint, a length
 * past the end, groups, a charsmap trie whose offsets leave it: an error
 * naming the file and the byte. Only unigram models are accepted. */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "spm.h"

/* ---------------------------------------------------------------- protobuf wire format */

enum { PB_VARINT = 0, PB_I64 = 1, PB_LEN = 2, PB_I32 = 5 };

typedef struct {
    const uint8_t *p, *end, *start; /* start: the file's first byte (offsets in messages) */
    const char *where, *msg;        /* the file; the message being read */
} pb;

typedef struct {
    uint32_t num;
    int wire;
    uint64_t v;          /* varint, fixed32, fixed64 */
    const uint8_t *data; /* length-delimited */
    size_t len;
} pb_field;

static size_t pb_at(const pb *r) { return (size_t)(r->p - r->start); }

static int pb_varint(pb *r, uint64_t *out) {
    size_t at = pb_at(r);
    uint64_t v = 0;
    for (int i = 0; i < 10; i++) {
        if (r->p >= r->end) return tf_set_error("%s: %s: truncated varint at byte %zu", r->where, r->msg, at);
        uint8_t b = *r->p++;
        if (i == 9 && b > 1) return tf_set_error("%s: %s: varint at byte %zu overflows 64 bits", r->where, r->msg, at);
        v |= (uint64_t)(b & 0x7F) << (7 * i);
        if (!(b & 0x80)) break;
    }
    *out = v;
    return 0;
}

static uint64_t le_bytes(const uint8_t *p, int n) {
    uint64_t v = 0;
    for (int i = n - 1; i >= 0; i--) v = v << 8 | p[i];
    return v;
}

/* The next field of the message: 1, 0 at its end, -1 on error. */
static int pb_next(pb *r, pb_field *f) {
    if (r->p >= r->end) return 0;
    size_t at = pb_at(r);
    uint64_t key, n;
    if (pb_varint(r, &key)) return -1;
    f->num = (uint32_t)(key >> 3), f->wire = (int)(key & 7);
    if (f->num == 0 || key >> 3 > 0x1FFFFFFF)
        return tf_set_error("%s: %s: invalid field number %llu at byte %zu", r->where, r->msg,
                            (unsigned long long)(key >> 3), at);
    switch (f->wire) {
    case PB_VARINT:
        return pb_varint(r, &f->v) ? -1 : 1;
    case PB_I64:
    case PB_I32:
        n = f->wire == PB_I64 ? 8 : 4;
        if ((uint64_t)(r->end - r->p) < n)
            return tf_set_error("%s: %s: field %u at byte %zu: truncated %d-byte value", r->where, r->msg, f->num, at, (int)n);
        f->v = le_bytes(r->p, (int)n);
        r->p += n;
        return 1;
    case PB_LEN:
        if (pb_varint(r, &n)) return -1;
        if (n > (uint64_t)(r->end - r->p))
            return tf_set_error("%s: %s: field %u at byte %zu: length %llu runs past the end (%zu bytes left)", r->where,
                                r->msg, f->num, at, (unsigned long long)n, (size_t)(r->end - r->p));
        f->data = r->p, f->len = (size_t)n;
        r->p += n;
        return 1;
    default:
        return tf_set_error("%s: %s: field %u at byte %zu has wire type %d (groups and types 6, 7 are not valid here)",
                            r->where, r->msg, f->num, at, f->wire);
    }
}

/* A known field must come with its wire type. */
static int pb_want(const pb *r, const pb_field *f, int wire, const char *name) {
    if (f->wire == wire) return 0;
    return tf_set_error("%s: %s.%s (field %u) before byte %zu has wire type %d, expected %d", r->where, r->msg, name,
                        f->num, pb_at(r), f->wire, wire);
}

static pb pb_sub(const pb *r, const pb_field *f, const char *msg) {
    return (pb){f->data, f->data + f->len, r->start, r->where, msg};
}

/* ---------------------------------------------------------------- the message, raw */

typedef struct {
    const uint8_t *s;
    size_t len;
} pb_str;

typedef struct {
    pb_str text;
    float score;
    uint8_t type;
} raw_piece;

typedef struct {
    raw_piece *piece;
    size_t n, cap;
    uint64_t model_type;
    int byte_fallback, ws_suffix;
    pb_str unk_surface, role[4], name, charsmap, denorm_charsmap;
    int has_unk_surface, has_role[4];
    int add_dummy_prefix, remove_extra_whitespaces, escape_whitespaces;
} raw_model;

static int read_piece(const pb *parent, const pb_field *f, raw_model *b) {
    pb r = pb_sub(parent, f, "pieces");
    raw_piece p = {{NULL, 0}, 0.0f, TF_SPM_NORMAL};
    pb_field g;
    int k;
    while ((k = pb_next(&r, &g)) == 1) {
        if (g.num == 1) {
            if (pb_want(&r, &g, PB_LEN, "piece")) return -1;
            p.text = (pb_str){g.data, g.len};
        } else if (g.num == 2) {
            if (pb_want(&r, &g, PB_I32, "score")) return -1;
            uint32_t bits = (uint32_t)g.v;
            memcpy(&p.score, &bits, sizeof p.score);
        } else if (g.num == 3) {
            if (pb_want(&r, &g, PB_VARINT, "type")) return -1;
            if (g.v < TF_SPM_NORMAL || g.v > TF_SPM_BYTE)
                return tf_set_error("%s: piece %zu: type %llu is not a SentencePiece type (1-6)", r.where, b->n,
                                    (unsigned long long)g.v);
            p.type = (uint8_t)g.v;
        }
    }
    if (k < 0) return -1;
    if (b->n == b->cap) {
        size_t cap = b->cap ? b->cap * 2 : 1024;
        raw_piece *q = realloc(b->piece, cap * sizeof *q);
        if (!q) return tf_set_error("%s: out of memory", r.where);
        b->piece = q, b->cap = cap;
    }
    b->piece[b->n++] = p;
    return 0;
}

static int read_trainer(const pb *parent, const pb_field *f, raw_model *b) {
    static const char *const role_names[4] = {"unk_piece", "bos_piece", "eos_piece", "pad_piece"};
    pb r = pb_sub(parent, f, "trainer_spec");
    pb_field g;
    int k;
    while ((k = pb_next(&r, &g)) == 1) {
        if (g.num == 3 || g.num == 24 || g.num == 35) {
            const char *name = g.num == 3 ? "model_type" : g.num == 24 ? "treat_whitespace_as_suffix" : "byte_fallback";
            if (pb_want(&r, &g, PB_VARINT, name)) return -1;
            if (g.num == 3) b->model_type = g.v;
            else if (g.num == 24) b->ws_suffix = g.v != 0;
            else b->byte_fallback = g.v != 0;
        } else if (g.num == 44) {
            if (pb_want(&r, &g, PB_LEN, "unk_surface")) return -1;
            b->unk_surface = (pb_str){g.data, g.len}, b->has_unk_surface = 1;
        } else if (g.num >= 45 && g.num <= 48) {
            if (pb_want(&r, &g, PB_LEN, role_names[g.num - 45])) return -1;
            b->role[g.num - 45] = (pb_str){g.data, g.len}, b->has_role[g.num - 45] = 1;
        }
    }
    return k < 0 ? -1 : 0;
}

/* normalizer_spec, or denormalizer_spec (only its charsmap is kept: tformer has no denormaliser). */
static int read_normalizer(const pb *parent, const pb_field *f, raw_model *b, int denorm) {
    static const char *const flag_names[3] = {"add_dummy_prefix", "remove_extra_whitespaces", "escape_whitespaces"};
    pb r = pb_sub(parent, f, denorm ? "denormalizer_spec" : "normalizer_spec");
    pb_field g;
    int k;
    while ((k = pb_next(&r, &g)) == 1) {
        if (g.num == 1 || g.num == 2) {
            if (pb_want(&r, &g, PB_LEN, g.num == 1 ? "name" : "precompiled_charsmap")) return -1;
            if (g.num == 1 && !denorm) b->name = (pb_str){g.data, g.len};
            if (g.num == 2) *(denorm ? &b->denorm_charsmap : &b->charsmap) = (pb_str){g.data, g.len};
        } else if (g.num >= 3 && g.num <= 5) {
            if (pb_want(&r, &g, PB_VARINT, flag_names[g.num - 3])) return -1;
            if (denorm) continue;
            int *flag[3] = {&b->add_dummy_prefix, &b->remove_extra_whitespaces, &b->escape_whitespaces};
            *flag[g.num - 3] = g.v != 0;
        }
    }
    return k < 0 ? -1 : 0;
}

static int read_model(const uint8_t *data, size_t n, const char *where, raw_model *b) {
    pb r = {data, data + n, data, where, "ModelProto"};
    pb_field f;
    int k;
    b->model_type = 1; /* protobuf's defaults */
    b->add_dummy_prefix = b->remove_extra_whitespaces = b->escape_whitespaces = 1;
    while ((k = pb_next(&r, &f)) == 1) {
        static const char *const names[6] = {"", "pieces", "trainer_spec", "normalizer_spec", "", "denormalizer_spec"};
        if (f.num != 1 && f.num != 2 && f.num != 3 && f.num != 5) continue;
        if (pb_want(&r, &f, PB_LEN, names[f.num])) return -1;
        int rc = f.num == 1   ? read_piece(&r, &f, b)
                 : f.num == 2 ? read_trainer(&r, &f, b)
                              : read_normalizer(&r, &f, b, f.num == 5);
        if (rc) return -1;
    }
    return k < 0 ? -1 : 0;
}

/* ---------------------------------------------------------------- the model */

static char *copy_str(pb_str s, const char *dflt) {
    const char *p = s.s ? (const char *)s.s : dflt;
    size_t n = s.s ? s.len : strlen(dflt);
    char *c = malloc(n + 1);
    if (c) memcpy(c, p, n), c[n] = 0;
    return c;
}

/* "<0xXX>" (upper-case hex, as sentencepiece writes byte pieces): the byte, else -1. */
static int byte_of_piece(const char *p, size_t n) {
    static const char hex[] = "0123456789ABCDEF";
    if (n != 6 || memcmp(p, "<0x", 3) || p[5] != '>') return -1;
    const char *h = strchr(hex, p[3]), *l = strchr(hex, p[4]);
    if (!p[3] || !p[4] || !h || !l) return -1;
    return (int)((h - hex) * 16 + (l - hex));
}

static int in_trie(const tf_spm *m, int type) {
    return m->hf || type == TF_SPM_NORMAL || type == TF_SPM_USER || type == TF_SPM_UNUSED;
}

/* Pieces of type NORMAL, USER_DEFINED and UNUSED (sentencepiece's pieces_) as a byte trie. */
static int trie_build(tf_spm *m) {
    size_t total = 1;
    for (int32_t i = 0; i < m->n; i++) total += in_trie(m, m->type[i]) ? m->len[i] : 0;
    if (total >= INT32_MAX) return tf_set_error("%s: pieces too long", m->where);
    m->node_id = malloc(total * sizeof *m->node_id);
    if (!m->node_id || tf_pairmap_init(&m->trie, total)) return tf_set_error("%s: out of memory", m->where);
    for (size_t i = 0; i < total; i++) m->node_id[i] = -1;
    m->n_nodes = 1;
    for (int32_t i = 0; i < m->n; i++) {
        if (!in_trie(m, m->type[i])) continue;
        int32_t node = 0;
        for (uint32_t k = 0; k < m->len[i]; k++) {
            uint8_t c = (uint8_t)m->piece[i][k];
            int32_t child = tf_pairmap_get(&m->trie, node, c, NULL);
            if (child < 0) {
                child = m->n_nodes++;
                if (tf_pairmap_put(&m->trie, node, c, child, 0)) return -1;
            }
            node = child;
        }
        m->node_id[node] = i;
        m->has_user |= m->type[i] == TF_SPM_USER;
    }
    return 0;
}

/* One piece into the model: unique, not empty; the unknown piece and byte pieces noted. */
static int add_piece(tf_spm *m, const raw_piece *p, double score) {
    int32_t i = m->n;
    const char *text = (const char *)p->text.s;
    if (!p->text.len) return tf_set_error("%s: piece %d is empty", m->where, i);
    if (p->text.len > UINT32_MAX) return tf_set_error("%s: piece %d is too long", m->where, i);
    int32_t prev = tf_strmap_get(&m->ids, text, p->text.len);
    if (prev >= 0)
        return tf_set_error("%s: piece %d \"%.*s\" repeats piece %d", m->where, i,
                            (int)(p->text.len > 40 ? 40 : p->text.len), text, prev);
    if (tf_strmap_put(&m->ids, text, p->text.len, i)) return -1;
    m->len[i] = (uint32_t)p->text.len, m->score[i] = score, m->type[i] = p->type;
    if (p->type == TF_SPM_UNKNOWN) {
        if (m->unk_id >= 0) return tf_set_error("%s: pieces %d and %d are both the unknown piece", m->where, m->unk_id, i);
        m->unk_id = i;
    }
    if (p->type == TF_SPM_BYTE) {
        int b = byte_of_piece(text, p->text.len);
        if (!m->byte_fallback)
            return tf_set_error("%s: byte piece %d \"%.*s\" in a model without byte_fallback", m->where, i,
                                (int)(p->text.len > 40 ? 40 : p->text.len), text);
        if (b < 0) return tf_set_error("%s: byte piece %d \"%.*s\" is not <0xXX>", m->where, i, (int)(p->text.len > 40 ? 40 : p->text.len), text);
        m->byte_id[b] = i;
    }
    if (p->type == TF_SPM_NORMAL || m->hf) {
        m->min_score = score < m->min_score ? score : m->min_score;
        m->max_score = score > m->max_score ? score : m->max_score;
    }
    m->n++;
    return 0;
}

/* What tformer computes: unigram models, whitespace as a prefix, no denormaliser. */
static int check_supported(const raw_model *b, const char *where) {
    static const char *const types[] = {"", "UNIGRAM", "BPE", "WORD", "CHAR"};
    if (b->model_type != 1) {
        if (b->model_type >= 2 && b->model_type <= 4)
            return tf_set_error("%s: trainer_spec.model_type is %s; only UNIGRAM models are supported", where,
                                types[b->model_type]);
        return tf_set_error("%s: trainer_spec.model_type %llu is not a SentencePiece model type; only UNIGRAM models "
                            "are supported", where, (unsigned long long)b->model_type);
    }
    if (b->ws_suffix) return tf_set_error("%s: trainer_spec.treat_whitespace_as_suffix is not supported", where);
    if (b->denorm_charsmap.len)
        return tf_set_error("%s: denormalizer_spec with a precompiled_charsmap is not supported", where);
    if (!b->n) return tf_set_error("%s: no pieces (not a SentencePiece model?)", where);
    return 0;
}

static int build(tf_spm *m, const raw_model *b) {
    static const char *const role_default[4] = {"<unk>", "<s>", "</s>", "<pad>"};
    size_t n = b->n;
    if (check_supported(b, m->where)) return -1;
    if (n > INT32_MAX / 2) return tf_set_error("%s: too many pieces", m->where);
    m->piece = calloc(n, sizeof *m->piece), m->len = calloc(n, sizeof *m->len);
    m->score = calloc(n, sizeof *m->score), m->type = calloc(n, 1);
    m->unk_surface = copy_str(b->has_unk_surface ? b->unk_surface : (pb_str){0}, " \xE2\x81\x87 ");
    m->norm_name = copy_str(b->name.s ? b->name : (pb_str){0}, "");
    for (int r = 0; r < 4; r++)
        if (!(m->role_piece[r] = copy_str(b->has_role[r] ? b->role[r] : (pb_str){0}, role_default[r]))) return -1;
    if (!m->piece || !m->len || !m->score || !m->type || !m->unk_surface || !m->norm_name ||
        tf_strmap_init(&m->ids, n + 1))
        return tf_set_error("%s: out of memory", m->where);
    m->byte_fallback = b->byte_fallback;
    m->add_dummy_prefix = b->add_dummy_prefix, m->remove_extra_whitespaces = b->remove_extra_whitespaces;
    m->escape_whitespaces = b->escape_whitespaces;
    m->unk_id = -1, m->min_score = FLT_MAX, m->max_score = FLT_MIN;
    for (int k = 0; k < 256; k++) m->byte_id[k] = -1;
    for (size_t i = 0; i < n; i++)
        if (add_piece(m, &b->piece[i], b->piece[i].score)) return -1;
    for (size_t i = 0; i < m->ids.cap; i++) /* piece strings: the map's NUL-terminated copies */
        if (m->ids.keys[i]) m->piece[m->ids.vals[i]] = m->ids.keys[i];
    if (m->unk_id < 0) return tf_set_error("%s: no unknown piece (type UNKNOWN)", m->where);
    return trie_build(m) || tf_charsmap_load(&m->cmap, b->charsmap.s, b->charsmap.len, m->where) ? -1 : 0;
}

tf_spm *tf_spm_parse(const uint8_t *data, size_t n, const char *where) {
    raw_model b;
    memset(&b, 0, sizeof b);
    tf_spm *m = calloc(1, sizeof *m);
    if (!m || !(m->where = strdup(where))) {
        free(m);
        return tf_set_error("%s: out of memory", where), NULL;
    }
    if (read_model(data, n, where, &b) || build(m, &b)) {
        tf_spm_free(m);
        m = NULL;
    }
    free(b.piece);
    return m;
}

tf_spm *tf_spm_load(const char *path) {
    size_t n;
    char *data = tf_read_file(path, &n);
    if (!data) return NULL;
    tf_spm *m = tf_spm_parse((const uint8_t *)data, n, path);
    free(data);
    return m;
}

/* Hugging Face's Unigram: every entry a piece of the trie (the unknown one
 * too, matched where its text appears), the lowest score over all of them. */
tf_spm *tf_spm_hf_new(const tf_spm_hf_src *s) {
    tf_spm *m = calloc(1, sizeof *m);
    size_t n = (size_t)s->n;
    if (!m || !(m->where = strdup(s->where))) {
        free(m);
        return tf_set_error("%s: out of memory", s->where), NULL;
    }
    m->hf = 1, m->byte_fallback = s->byte_fallback, m->unk_id = -1;
    m->min_score = HUGE_VAL, m->max_score = -HUGE_VAL;
    for (int k = 0; k < 256; k++) m->byte_id[k] = -1;
    m->piece = calloc(n + 1, sizeof *m->piece), m->len = calloc(n + 1, sizeof *m->len);
    m->score = calloc(n + 1, sizeof *m->score), m->type = calloc(n + 1, 1);
    m->unk_surface = copy_str((pb_str){0}, ""), m->norm_name = copy_str((pb_str){0}, "");
    for (int r = 0; r < 4; r++) m->role_piece[r] = copy_str((pb_str){0}, "");
    int rc = m->piece && m->len && m->score && m->type && m->unk_surface && m->norm_name && m->role_piece[3] &&
                     !tf_strmap_init(&m->ids, n + 1) ? 0 : tf_set_error("%s: out of memory", s->where);
    for (int32_t i = 0; !rc && i < s->n; i++) {
        raw_piece p = {{(const uint8_t *)s->piece[i], strlen(s->piece[i])}, 0.0f,
                       (uint8_t)(i == s->unk_id ? TF_SPM_UNKNOWN : TF_SPM_NORMAL)};
        rc = add_piece(m, &p, s->score[i]);
    }
    for (size_t i = 0; !rc && i < m->ids.cap; i++)
        if (m->ids.keys[i]) m->piece[m->ids.vals[i]] = m->ids.keys[i];
    if (!rc) rc = trie_build(m);
    if (rc) tf_spm_free(m);
    return rc ? NULL : m;
}

void tf_spm_free(tf_spm *m) {
    if (!m) return;
    tf_strmap_free(&m->ids);
    tf_pairmap_free(&m->trie);
    free(m->piece), free(m->len), free(m->score), free(m->type), free(m->unk_surface), free(m->norm_name);
    for (int r = 0; r < 4; r++) free(m->role_piece[r]);
    tf_charsmap_free(&m->cmap);
    free(m->node_id), free(m->where), free(m);
}

int32_t tf_spm_piece_id(const tf_spm *m, const char *piece, size_t len) { return tf_strmap_get(&m->ids, piece, len); }
