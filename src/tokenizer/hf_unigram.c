/* A Unigram tokenizer.json behind the tokenizer interface (TF_TOKENIZER_SPM):
 * the added tokens matched whole in the raw text, each span between them
 * normalised, pre-tokenised and segmented by the Unigram model (spm.h's
 * Viterbi in Hugging Face's mode); decoding through the file's decoder
 * (Metaspace, or a Sequence of Replace / ByteFallback / Fuse / Strip /
 * Metaspace). Text is read as Python's bytes.decode("utf-8", "replace"). */
#include <stdlib.h>
#include <string.h>

#include "hf_pipe.h"

/* ---------------------------------------------------------------- decoders */

enum { D_METASPACE, D_REPLACE, D_BYTE_FALLBACK, D_FUSE, D_STRIP };

typedef struct {
    int kind;
    char rep[8];                /* Metaspace's replacement */
    int prepend;                /* Metaspace: the first token loses its replacements */
    char *pat, *content;        /* Replace; Strip: content (copies) */
    int start, stop;            /* Strip */
} dec_step;

struct tf_hf_dec {
    dec_step step[8];
    int n, present;
};

static int add_dec(tf_hf_dec *d, const char *path, const cJSON *o, int depth) {
    const char *type = tf_hfj_type(path, o, "decoder");
    if (!type) return -1;
    if (!strcmp(type, "Sequence")) {
        const cJSON *list = cJSON_GetObjectItemCaseSensitive(o, "decoders");
        if (!cJSON_IsArray(list)) return tf_set_error("%s: decoder Sequence: \"decoders\" must be a list", path);
        if (depth > 8) return tf_set_error("%s: decoder Sequences nested too deep", path);
        for (const cJSON *e = list->child; e; e = e->next)
            if (add_dec(d, path, e, depth + 1)) return -1;
        return 0;
    }
    if (d->n == 8) return tf_set_error("%s: more than 8 decoders", path);
    dec_step *st = &d->step[d->n++];
    memset(st, 0, sizeof *st);
    if (!strcmp(type, "ByteFallback")) return st->kind = D_BYTE_FALLBACK, 0;
    if (!strcmp(type, "Fuse")) return st->kind = D_FUSE, 0;
    if (!strcmp(type, "Metaspace")) {
        const char *rep, *scheme;
        int add_prefix;
        if (tf_hfj_str(path, o, "decoder Metaspace", "replacement", NULL, &rep) ||
            (!rep && tf_hfj_str(path, o, "decoder Metaspace", "str_rep", "\xE2\x96\x81", &rep)) ||
            tf_hfj_str(path, o, "decoder Metaspace", "prepend_scheme", "always", &scheme) ||
            tf_hfj_bool(path, o, "decoder Metaspace", "add_prefix_space", 1, &add_prefix))
            return -1;
        if (!rep[0] || strlen(rep) > 4) return tf_set_error("%s: decoder Metaspace: \"replacement\" must be one character", path);
        st->kind = D_METASPACE, st->prepend = add_prefix && strcmp(scheme, "never");
        memcpy(st->rep, rep, strlen(rep) + 1);
        return 0;
    }
    if (!strcmp(type, "Replace")) {
        const cJSON *p = cJSON_GetObjectItemCaseSensitive(o, "pattern"), *c = cJSON_GetObjectItemCaseSensitive(o, "content");
        const cJSON *str = cJSON_IsObject(p) ? cJSON_GetObjectItemCaseSensitive(p, "String") : NULL;
        if (!cJSON_IsString(str) || !str->valuestring[0] || !cJSON_IsString(c))
            return tf_set_error("%s: decoder Replace: needs \"pattern\" {\"String\": non-empty} and a \"content\" string "
                                "(a Regex pattern is not supported)", path);
        st->kind = D_REPLACE, st->pat = strdup(str->valuestring), st->content = strdup(c->valuestring);
        return st->pat && st->content ? 0 : tf_set_error("tokenizer: out of memory");
    }
    if (!strcmp(type, "Strip")) {
        const cJSON *c = cJSON_GetObjectItemCaseSensitive(o, "content");
        int used = 0;
        if (!cJSON_IsString(c) || tf_utf8_decode((const unsigned char *)c->valuestring, strlen(c->valuestring), &used) < 0 ||
            (size_t)used != strlen(c->valuestring))
            return tf_set_error("%s: decoder Strip: \"content\" must be one character", path);
        st->kind = D_STRIP;
        if (!(st->content = strdup(c->valuestring))) return tf_set_error("tokenizer: out of memory");
        return tf_hfj_int(path, o, "decoder Strip", "start", 0, &st->start) ||
               tf_hfj_int(path, o, "decoder Strip", "stop", 0, &st->stop);
    }
    return tf_hfj_unsupported(path, "decoder", type, "Metaspace, Replace, ByteFallback, Fuse, Strip, Sequence");
}

tf_hf_dec *tf_hf_dec_read(const cJSON *root, const char *path) {
    tf_hf_dec *d = calloc(1, sizeof *d);
    const cJSON *o = cJSON_GetObjectItemCaseSensitive(root, "decoder");
    if (!d) return tf_set_error("tokenizer: out of memory"), NULL;
    d->present = o && !cJSON_IsNull(o);
    if (d->present && add_dec(d, path, o, 0)) return tf_hf_dec_free(d), NULL;
    return d;
}

void tf_hf_dec_free(tf_hf_dec *d) {
    for (int i = 0; d && i < d->n; i++) free(d->step[i].pat), free(d->step[i].content);
    free(d);
}

/* A token list: each token a malloc'ed string. */
typedef struct {
    tf_buf *t;
    size_t n;
} toks;

static void toks_free(toks *l) {
    for (size_t i = 0; i < l->n; i++) free(l->t[i].p);
    free(l->t);
}

/* "<0xXX>" as Rust's u8::from_str_radix(.., 16) reads XX (a '+' sign allowed): the byte, else -1. */
static int byte_token(const tf_buf *t) {
    if (t->n != 6 || memcmp(t->p, "<0x", 3) || t->p[5] != '>') return -1;
    int v = 0;
    for (int i = 3; i < 5; i++) {
        char c = t->p[i];
        int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
        if (i == 3 && c == '+') continue;
        if (d < 0) return -1;
        v = v * 16 + d;
    }
    return v;
}

/* A run of byte tokens: its bytes as one token when they are UTF-8, else one U+FFFD per byte. */
static int flush_run(tf_buf *run, toks *o) {
    int ok = 1, used;
    for (size_t i = 0; ok && i < run->n; i += (size_t)used)
        ok = tf_utf8_decode((const unsigned char *)run->p + i, run->n - i, &used) >= 0;
    for (size_t k = 0; k < (ok ? 1 : run->n); k++) {
        tf_buf *t = &o->t[o->n++];
        *t = (tf_buf){0};
        if (ok ? tf_buf_put(t, run->p, run->n) : tf_buf_put(t, "\xEF\xBF\xBD", 3)) return -1;
    }
    run->n = 0;
    return 0;
}

/* ByteFallback: runs of <0xXX> tokens become text (never more tokens than they were). */
static int byte_fallback(toks *l) {
    toks o = {calloc(l->n + 1, sizeof(tf_buf)), 0};
    tf_buf run = {0};
    int rc = o.t ? 0 : tf_set_error("tokenizer: out of memory");
    for (size_t i = 0; !rc && i <= l->n; i++) {
        int b = i < l->n ? byte_token(&l->t[i]) : -1;
        if (b >= 0) {
            char c = (char)b;
            rc = tf_buf_put(&run, &c, 1);
            continue;
        }
        if (run.n) rc = flush_run(&run, &o);
        if (!rc && i < l->n) o.t[o.n++] = l->t[i], l->t[i] = (tf_buf){0};
    }
    free(run.p);
    toks_free(l);
    *l = o;
    return rc;
}

/* Each token's text through one step (Replace, Strip, Metaspace) into a fresh buffer. */
static int per_token(const dec_step *st, size_t index, const tf_buf *t, tf_buf *o) {
    if (st->kind == D_REPLACE) {
        size_t pl = strlen(st->pat), last = 0;
        for (size_t i = 0; i + pl <= t->n;)
            if (!memcmp(t->p + i, st->pat, pl)) {
                if (tf_buf_put(o, t->p + last, i - last) || tf_buf_put(o, st->content, strlen(st->content))) return -1;
                i += pl, last = i;
            } else {
                i++;
            }
        return tf_buf_put(o, t->p + last, t->n - last);
    }
    if (st->kind == D_METASPACE) { /* the first token loses every replacement (tokenizers' Metaspace decoder) */
        size_t rl = strlen(st->rep);
        for (size_t i = 0; i < t->n;) {
            int hit = i + rl <= t->n && !memcmp(t->p + i, st->rep, rl);
            if (hit && !(index == 0 && st->prepend) && tf_buf_put(o, " ", 1)) return -1;
            if (!hit && tf_buf_put(o, t->p + i, 1)) return -1;
            i += hit ? rl : 1;
        }
        return tf_buf_put(o, "", 0);
    }
    size_t cl = strlen(st->content), b = 0, e = t->n; /* Strip: up to start / stop copies of content */
    for (int k = 0; k < st->start && e - b >= cl && !memcmp(t->p + b, st->content, cl); k++) b += cl;
    for (int k = 0; k < st->stop && e - b >= cl && !memcmp(t->p + e - cl, st->content, cl); k++) e -= cl;
    return tf_buf_put(o, t->p + b, e - b);
}

static int dec_step_run(const dec_step *st, toks *l) {
    if (st->kind == D_BYTE_FALLBACK) return byte_fallback(l);
    if (st->kind == D_FUSE) {
        for (size_t i = 1; i < l->n; i++) {
            if (tf_buf_put(&l->t[0], l->t[i].p, l->t[i].n)) return -1;
            free(l->t[i].p);
        }
        l->n = l->n ? 1 : 0;
        return 0;
    }
    for (size_t i = 0; i < l->n; i++) {
        tf_buf o = {0};
        if (per_token(st, i, &l->t[i], &o)) return free(o.p), -1;
        free(l->t[i].p);
        l->t[i] = o;
    }
    return 0;
}

int tf_hf_decode(const tf_hf_dec *d, const char *const *tok, const uint32_t *len, size_t n, tf_buf *out) {
    toks l = {calloc(n + 1, sizeof(tf_buf)), 0};
    int rc = l.t ? 0 : tf_set_error("tokenizer: out of memory");
    for (; !rc && l.n < n; l.n++) l.t[l.n] = (tf_buf){0}, rc = tf_buf_put(&l.t[l.n], tok[l.n], len[l.n]);
    for (int k = 0; !rc && k < d->n; k++) rc = dec_step_run(&d->step[k], &l);
    for (size_t i = 0; !rc && i < l.n; i++) /* no decoder: joined by spaces */
        rc = (i && !d->present && tf_buf_put(out, " ", 1)) || tf_buf_put(out, l.t[i].p, l.t[i].n);
    toks_free(&l);
    return rc ? -1 : 0;
}

/* ---------------------------------------------------------------- the tokenizer */

typedef struct {
    tf_spm *m;          /* the Unigram model: ids 0..n_model-1 */
    tf_hf_norm *norm;
    tf_hf_pre *pre;
    tf_hf_dec *dec;
    char **tok;         /* every token by id (the added ones past the model too), copies */
    uint32_t *tok_len;
    int32_t n, n_model;
    int32_t *add_ids;   /* added tokens, longest first */
    uint8_t *add_flags;
    int n_added;
    const char *base;   /* the text being encoded (its first span begins the input) */
} hfu;

static void hfu_free(void *impl) {
    hfu *u = impl;
    if (!u) return;
    tf_spm_free(u->m), tf_hf_norm_free(u->norm), tf_hf_pre_free(u->pre), tf_hf_dec_free(u->dec);
    for (int32_t i = 0; u->tok && i < u->n; i++) free(u->tok[i]);
    free(u->tok), free(u->tok_len), free(u->add_ids), free(u->add_flags), free(u);
}

typedef struct {
    const tf_spm *m;
    tf_ids *out;
} piece_ctx;

static int piece_ids(void *ctx, const char *s, size_t n) {
    piece_ctx *c = ctx;
    return tf_spm_hf_segment(c->m, s, n, c->out);
}

/* One span between added tokens: normalised, pre-tokenised, each piece segmented. */
static int hfu_span(void *impl, const char *s, size_t n, tf_ids *out) {
    hfu *u = impl;
    tf_buf norm = {0};
    piece_ctx c = {u->m, out};
    int rc = n ? tf_hf_normalize(u->norm, s, n, &norm) : 0;
    if (!rc && n) rc = tf_hf_pre_tokenize(u->pre, norm.p, norm.n, s == u->base, piece_ids, &c);
    free(norm.p);
    return rc;
}

static int hfu_encode(void *impl, const char *text, size_t len, tf_ids *out) {
    hfu *u = impl;
    tf_buf clean = {0};
    int rc = tf_utf8_sanitize(text, len, &clean);
    tf_specials sp = {u->add_ids, u->n_added, (const char *const *)u->tok, u->tok_len, u->add_flags};
    u->base = clean.p;
    if (!rc) rc = tf_encode_with_specials(clean.p, clean.n, &sp, hfu_span, u, out);
    free(clean.p);
    return rc;
}

static int hfu_decode(const void *impl, const int32_t *ids, size_t n, tf_buf *out) {
    const hfu *u = impl;
    if (n >= SIZE_MAX / sizeof(char *)) return tf_set_error("decode: %zu ids are too many", n);
    const char **tok = malloc((n + 1) * sizeof *tok);
    uint32_t *len = malloc((n + 1) * sizeof *len);
    int rc = tok && len ? 0 : tf_set_error("tokenizer: out of memory");
    for (size_t i = 0; !rc && i < n; i++) {
        if (ids[i] < 0 || ids[i] >= u->n)
            rc = tf_set_error("decode: id %d at position %zu outside the vocabulary [0,%d)", ids[i], i, u->n);
        else tok[i] = u->tok[ids[i]], len[i] = u->tok_len[ids[i]];
    }
    if (!rc) rc = tf_hf_decode(u->dec, tok, len, n, out);
    free(tok), free(len);
    return rc;
}

static int32_t hfu_token_id(const void *impl, const char *token) {
    const hfu *u = impl;
    int32_t id = tf_spm_piece_id(u->m, token, strlen(token));
    for (int32_t i = u->n_model; id < 0 && i < u->n; i++)
        if (!strcmp(u->tok[i], token)) id = i;
    return id;
}

static int32_t hfu_vocab_size(const void *impl) { return ((const hfu *)impl)->n; }

const tf_tok_vtable tf_hf_unigram_vt = {hfu_encode, hfu_decode, hfu_token_id, hfu_vocab_size, hfu_free, NULL, 0};

void *tf_hf_unigram_new(const tf_hf_unigram_src *s) {
    hfu *u = calloc(1, sizeof *u);
    if (!u) return tf_set_error("tokenizer: out of memory"), NULL;
    char where[4200];
    snprintf(where, sizeof where, "%s: model.vocab", s->path);
    tf_spm_hf_src ms = {s->tok, s->score, s->n_model, s->unk_id, s->byte_fallback, where};
    u->n = s->n, u->n_model = s->n_model, u->n_added = s->added->n;
    u->tok = calloc((size_t)s->n + 1, sizeof *u->tok), u->tok_len = calloc((size_t)s->n + 1, sizeof *u->tok_len);
    u->add_ids = malloc(((size_t)u->n_added + 1) * sizeof *u->add_ids), u->add_flags = malloc((size_t)u->n_added + 1);
    int rc = u->tok && u->tok_len && u->add_ids && u->add_flags ? 0 : tf_set_error("tokenizer: out of memory");
    for (int32_t i = 0; !rc && i < s->n; i++) {
        u->tok_len[i] = (uint32_t)strlen(s->tok[i]);
        if (!(u->tok[i] = strdup(s->tok[i]))) rc = tf_set_error("tokenizer: out of memory");
    }
    if (!rc && u->n_added) { /* memcpy from NULL is undefined even for 0 bytes */
        memcpy(u->add_ids, s->added->ids, (size_t)u->n_added * sizeof *u->add_ids);
        memcpy(u->add_flags, s->added->flags, (size_t)u->n_added);
        tf_sort_longest_first(u->add_ids, u->add_flags, u->n_added, u->tok_len);
    }
    if (!rc && !((u->m = tf_spm_hf_new(&ms)) && (u->norm = tf_hf_norm_read(s->root, s->path)) &&
                 (u->pre = tf_hf_pre_read(s->root, s->path)) && (u->dec = tf_hf_dec_read(s->root, s->path))))
        rc = -1;
    if (rc) hfu_free(u);
    return rc ? NULL : u;
}
