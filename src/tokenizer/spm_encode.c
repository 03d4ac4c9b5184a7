/* The unigram model at work, as sentencepiece computes it: normalisation
 * (user-defined symbols kept whole, the precompiled charsmap's longest match,
 * invalid UTF-8 bytes as U+FFFD, leading / trailing / repeated spaces, the
 * dummy prefix, spaces escaped as U+2581), the best segmentation over piece
 * scores (unknown characters at the lowest score minus 10, user-defined
 * pieces at (bytes - 1) x 0.1, as sentencepiece 0.2.3), runs of unknown pieces merged,
 * byte fallback; and decoding pieces back to text. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "spm.h"

static const char SPACE_MARK[] = "\xE2\x96\x81"; /* U+2581, sentencepiece's escaped space */

/* Bytes of the UTF-8 character a lead byte starts (sentencepiece's OneCharLen: 1 for a stray continuation byte). */
static size_t one_char_len(uint8_t c) { return (size_t)"\1\1\1\1\1\1\1\1\1\1\1\1\2\2\3\4"[c >> 4]; }

/* The longest user-defined piece at the start of s (0: none). */
static size_t user_match(const tf_spm *m, const char *s, size_t n) {
    int32_t node = 0;
    size_t best = 0;
    for (size_t i = 0; m->has_user && i < n; i++) {
        if ((node = tf_pairmap_get(&m->trie, node, (uint8_t)s[i], NULL)) < 0) break;
        int32_t id = m->node_id[node];
        if (id >= 0 && m->type[id] == TF_SPM_USER) best = i + 1;
    }
    return best;
}

/* One step at s (n > 0 bytes left): the text it normalises to and the bytes it takes. */
static size_t norm_prefix(const tf_spm *m, const char *s, size_t n, const char **rep, size_t *rep_len) {
    size_t used = user_match(m, s, n);
    if (used) return *rep = s, *rep_len = used, used;
    if ((used = tf_charsmap_match(&m->cmap, s, n, 1, rep))) return *rep_len = strlen(*rep), used;
    int k;
    if (tf_utf8_decode((const unsigned char *)s, n, &k) < 0) return *rep = "\xEF\xBF\xBD", *rep_len = 3, 1;
    return *rep = s, *rep_len = (size_t)k, (size_t)k;
}

static int put_space(const tf_spm *m, tf_buf *out) {
    return m->escape_whitespaces ? tf_buf_put(out, SPACE_MARK, 3) : tf_buf_put(out, " ", 1);
}

int tf_spm_normalize(const tf_spm *m, const char *s, size_t n, tf_buf *out) {
    const char *rep;
    size_t rep_len, i = 0, start = out->n;
    int rew = m->remove_extra_whitespaces;
    while (rew && i < n) { /* leading whitespace */
        size_t used = norm_prefix(m, s + i, n - i, &rep, &rep_len);
        if (rep_len != 1 || rep[0] != ' ') break;
        i += used;
    }
    if (i == n) return 0;
    if (m->add_dummy_prefix && put_space(m, out)) return -1;
    int prev_space = rew;
    while (i < n) {
        i += norm_prefix(m, s + i, n - i, &rep, &rep_len);
        while (prev_space && rep_len && rep[0] == ' ') rep++, rep_len--;
        if (rep_len) {
            for (size_t k = 0; k < rep_len; k++)
                if (rep[k] == ' ' ? put_space(m, out) : tf_buf_put(out, rep + k, 1)) return -1;
            prev_space = rep[rep_len - 1] == ' ';
        }
        if (!rew) prev_space = 0;
    }
    const char *sp = m->escape_whitespaces ? SPACE_MARK : " ";
    size_t w = m->escape_whitespaces ? 3 : 1;
    while (rew && out->n - start >= w && !memcmp(out->p + out->n - w, sp, w)) out->n -= w; /* trailing */
    if (out->p) out->p[out->n] = 0;
    return 0;
}

/* ---------------------------------------------------------------- segmentation */

/* The best path ending at each byte position: its score, where its last piece starts (SIZE_MAX: none yet) and that piece. */
typedef struct {
    double *score;
    size_t *from;
    int32_t *id;
} best_path;

/* A candidate ending at end: the path's score there plus the piece's, in float
 * as sentencepiece (the double sum rounded once: the same as float addition),
 * in double as Hugging Face's Unigram. */
static void offer(const tf_spm *m, best_path *b, double till, size_t at, size_t end, int32_t id, double score) {
    double cand = m->hf ? score + till : (double)(float)(score + till);
    if (b->from[end] != SIZE_MAX && !(cand > b->score[end])) return;
    b->score[end] = cand, b->from[end] = at, b->id[end] = id;
}

/* Path scores beyond +-1e5 are taken relative to the current position (every
 * path reaching it or beyond, up to the furthest end so far), as sentencepiece
 * 0.2.1+ does to keep float precision on long inputs. */
static double rebase(const tf_spm *m, best_path *b, size_t at, size_t furthest) {
    double till = b->score[at];
    if (m->hf || (!(till < -1e5) && !(till > 1e5))) return till; /* Hugging Face never rebases */
    for (size_t i = at; i <= furthest; i++)
        if (i == at || b->from[i] != SIZE_MAX) b->score[i] = (double)(float)(b->score[i] - till);
    return 0.0;
}

/* sentencepiece's optimised Viterbi (0.2.3): at each character boundary every
 * piece starting there, shortest first; a piece's score is its own (NORMAL) or
 * (bytes - 1) x 0.1 (USER_DEFINED); an unknown piece, at the lowest NORMAL score
 * minus 10, covers one character where no single-character piece does. The
 * first of equal scores is kept. */
static void viterbi(const tf_spm *m, const uint8_t *t, size_t size, best_path *b) {
    const double unk_score = m->hf ? m->min_score - 10.0 : (double)(float)(m->min_score - 10.0);
    size_t furthest = 0;
    for (size_t at = 0; at < size;) {
        double till = rebase(m, b, at, furthest);
        size_t mblen = one_char_len(t[at]);
        if (mblen > size - at) mblen = size - at;
        int single = 0;
        int32_t node = 0;
        for (size_t k = at; k < size; k++) {
            if ((node = tf_pairmap_get(&m->trie, node, t[k], NULL)) < 0) break;
            int32_t id = m->node_id[node];
            if (id < 0 || (m->type[id] == TF_SPM_UNUSED && !m->hf)) continue;
            size_t len = k + 1 - at;
            furthest = k + 1 > furthest ? k + 1 : furthest;
            double score = m->type[id] == TF_SPM_USER ? (double)(float)((double)(len - 1) * 0.1) : m->score[id];
            offer(m, b, till, at, k + 1, id, score);
            single |= len == mblen;
        }
        if (!single) {
            offer(m, b, till, at, at + mblen, m->unk_id, unk_score);
            furthest = at + mblen > furthest ? at + mblen : furthest;
        }
        at += mblen;
    }
}

void tf_spm_pieces_free(tf_spm_pieces *p) {
    free(p->id), free(p->off), free(p->len), free(p->text.p);
    memset(p, 0, sizeof *p);
}

static int push_piece(tf_spm_pieces *p, int32_t id, const char *s, size_t n) {
    if (p->n == p->cap) {
        size_t cap = p->cap ? p->cap * 2 : 64;
        int32_t *id2 = realloc(p->id, cap * sizeof *id2);
        if (id2) p->id = id2;
        uint32_t *off = id2 ? realloc(p->off, cap * sizeof *off) : NULL;
        if (off) p->off = off;
        uint32_t *len = off ? realloc(p->len, cap * sizeof *len) : NULL;
        if (!len) return tf_set_error("tokenizer: out of memory");
        p->len = len, p->cap = cap;
    }
    if (p->text.n > UINT32_MAX - n) return tf_set_error("tokenizer: text too long");
    p->id[p->n] = id, p->off[p->n] = (uint32_t)p->text.n, p->len[p->n] = (uint32_t)n;
    p->n++;
    return tf_buf_put(&p->text, s, n);
}

/* The path's pieces in order: runs of unknown pieces merged, then spelled as byte pieces with byte fallback. */
static int emit(const tf_spm *m, const char *t, size_t size, const best_path *b, tf_spm_pieces *out) {
    size_t k = 0, *ends = NULL;
    for (size_t e = size; e > 0; e = b->from[e], k++) /* every boundary is reached: a guard, not a case */
        if (b->from[e] >= e) return tf_set_error("tokenizer: no segmentation reaches byte %zu", e);
    if (k && !(ends = malloc(k * sizeof *ends))) return tf_set_error("tokenizer: out of memory");
    size_t i = k;
    for (size_t e = size; e > 0; e = b->from[e]) ends[--i] = e;
    int rc = 0;
    for (i = 0; !rc && i < k; i++) {
        size_t start = b->from[ends[i]], end = ends[i];
        int32_t id = b->id[end];
        while (id == m->unk_id && i + 1 < k && b->id[ends[i + 1]] == m->unk_id) end = ends[++i];
        if (id != m->unk_id || !m->byte_fallback) {
            rc = push_piece(out, id, t + start, end - start);
            continue;
        }
        for (size_t j = start; !rc && j < end; j++) {
            static const char hex[] = "0123456789ABCDEF";
            uint8_t c = (uint8_t)t[j];
            char piece[7] = {'<', '0', 'x', hex[c >> 4], hex[c & 15], '>', 0};
            rc = push_piece(out, m->byte_id[c] >= 0 ? m->byte_id[c] : m->unk_id, piece, 6);
        }
    }
    free(ends);
    return rc;
}

/* The best paths over t[0, size) (size > 0) into b, allocated here. */
static int best_paths(const tf_spm *m, const char *t, size_t size, best_path *b) {
    if (size >= SIZE_MAX / sizeof(size_t) - 1) return tf_set_error("tokenizer: text too long");
    b->score = calloc(size + 1, sizeof *b->score);
    b->from = malloc((size + 1) * sizeof *b->from);
    b->id = calloc(size + 1, sizeof *b->id);
    if (!b->score || !b->from || !b->id) return tf_set_error("tokenizer: out of memory");
    for (size_t i = 0; i <= size; i++) b->from[i] = SIZE_MAX;
    viterbi(m, (const uint8_t *)t, size, b);
    return 0;
}

static void best_paths_free(best_path *b) { free(b->score), free(b->from), free(b->id); }

int tf_spm_encode(const tf_spm *m, const char *s, size_t n, tf_spm_pieces *out) {
    tf_buf norm = {0};
    best_path b = {0};
    int rc = tf_spm_normalize(m, s, n, &norm);
    if (!rc && norm.n) rc = best_paths(m, norm.p, norm.n, &b) || emit(m, norm.p, norm.n, &b, out);
    best_paths_free(&b), free(norm.p);
    return rc;
}

/* One piece of Hugging Face's path by its text: its id, else its bytes'
 * <0xXX> pieces when byte_fallback has them all, else the unknown id. */
static int hf_lookup(const tf_spm *m, const char *s, size_t n, tf_ids *out) {
    int32_t id = tf_strmap_get(&m->ids, s, n);
    if (id >= 0) return tf_ids_push(out, id);
    size_t all = m->byte_fallback;
    for (size_t j = 0; all && j < n; j++) {
        char piece[8];
        snprintf(piece, sizeof piece, "<0x%02X>", (unsigned)(uint8_t)s[j]);
        all = tf_strmap_get(&m->ids, piece, 6) >= 0;
    }
    if (!all) return tf_ids_push(out, m->unk_id);
    for (size_t j = 0; j < n; j++) {
        char piece[8];
        snprintf(piece, sizeof piece, "<0x%02X>", (unsigned)(uint8_t)s[j]);
        if (tf_ids_push(out, tf_strmap_get(&m->ids, piece, 6))) return -1;
    }
    return 0;
}

int tf_spm_hf_segment(const tf_spm *m, const char *s, size_t n, tf_ids *out) {
    best_path b = {0};
    size_t k = 0, *ends = NULL;
    int rc = n ? best_paths(m, s, n, &b) : 0;
    for (size_t e = n; !rc && e > 0; e = b.from[e], k++) /* every boundary is reached: a guard, not a case */
        if (b.from[e] >= e) rc = tf_set_error("tokenizer: no segmentation reaches byte %zu", e);
    if (!rc && k && !(ends = malloc(k * sizeof *ends))) rc = tf_set_error("tokenizer: out of memory");
    size_t i = k;
    for (size_t e = n; !rc && e > 0; e = b.from[e]) ends[--i] = e;
    for (i = 0; !rc && i < k; i++) { /* runs of unknown pieces fused into one string, as Unigram.encode */
        size_t start = b.from[ends[i]], end = ends[i];
        while (b.id[end] == m->unk_id && i + 1 < k && b.id[ends[i + 1]] == m->unk_id) end = ends[++i];
        rc = hf_lookup(m, s + start, end - start, out);
    }
    free(ends);
    best_paths_free(&b);
    return rc;
}

/* ---------------------------------------------------------------- decoding */

/* A run of byte pieces: each valid UTF-8 character as it is, every other byte as U+FFFD. */
static int flush_bytes(tf_buf *bytes, tf_buf *out) {
    for (size_t i = 0; i < bytes->n;) {
        int used;
        if (tf_utf8_decode((const unsigned char *)bytes->p + i, bytes->n - i, &used) < 0) {
            if (tf_buf_put(out, "\xEF\xBF\xBD", 3)) return -1;
        } else if (tf_buf_put(out, bytes->p + i, (size_t)used)) {
            return -1;
        }
        i += (size_t)used;
    }
    bytes->n = 0;
    return 0;
}

/* A piece's text with U+2581 as spaces (the first one dropped when skip_mark). */
static int put_unescaped(const char *p, size_t n, int skip_mark, tf_buf *out) {
    size_t i = skip_mark ? 3 : 0, last = i;
    for (; i + 3 <= n; i++)
        if (!memcmp(p + i, SPACE_MARK, 3)) {
            if (tf_buf_put(out, p + last, i - last) || tf_buf_put(out, " ", 1)) return -1;
            last = i + 3, i += 2;
        }
    return tf_buf_put(out, p + last, n - last);
}

static int hex_digit(char c) { return c <= '9' ? c - '0' : c - 'A' + 10; }

int tf_spm_decode_pieces(const tf_spm *m, const char *const *piece, const uint32_t *len, size_t n, tf_buf *out) {
    size_t start = out->n;
    int bos_ws = 1, bos_ws_seen = 0, rc = 0;
    tf_buf bytes = {0};
    for (size_t i = 0; !rc && i < n; i++) {
        int32_t id = tf_spm_piece_id(m, piece[i], len[i]);
        if (id < 0) id = m->unk_id;
        uint8_t type = m->type[id];
        if (type == TF_SPM_BYTE) {
            char c = (char)(hex_digit(m->piece[id][3]) << 4 | hex_digit(m->piece[id][4])); /* "<0xXX>", checked on load */
            rc = tf_buf_put(&bytes, &c, 1);
            continue;
        }
        if ((rc = flush_bytes(&bytes, out))) break;
        /* the leading U+2581 of pieces at the start is dropped: of every piece until some text
         * appears when extra whitespace is removed, else of the first only */
        if (out->n > start || (bos_ws_seen && !m->remove_extra_whitespaces)) bos_ws = 0;
        if (type == TF_SPM_CONTROL) continue;
        if (type == TF_SPM_UNKNOWN) {
            int is_unk = len[i] == m->len[id] && !memcmp(piece[i], m->piece[id], len[i]);
            rc = is_unk ? tf_buf_put(out, m->unk_surface, strlen(m->unk_surface)) : tf_buf_put(out, piece[i], len[i]);
            continue;
        }
        int skip = bos_ws && (m->add_dummy_prefix || m->remove_extra_whitespaces) && len[i] >= 3 &&
                   !memcmp(piece[i], SPACE_MARK, 3);
        rc = put_unescaped(piece[i], len[i], skip, out);
        bos_ws_seen |= skip;
    }
    if (!rc) rc = flush_bytes(&bytes, out);
    free(bytes.p);
    return rc;
}
