/* Parallel text for translation: line-aligned source and target files,
 * tokenized, and batches of them by token count.
 *
 * Format (include/tformer/data.h): the set keeps each sentence's tokens
 * without specials; a batch row is src = tokens + EOS, tgt_in = BOS +
 * tokens, tgt_out = tokens + EOS, so tgt_out is tgt_in shifted left by one
 * and every row is tokens + 1 long.
 *
 * Batching (fairseq's --max-tokens): a pair costs L = max(source, target)
 * row length; a batch of pairs costs rows * max L, its padded size. Training
 * sorts the pairs by (L, source, target length), packs them greedily and
 * visits the batches of an epoch in a shuffled order. Ties are broken by a
 * hash of (seed, epoch, pair), so batches differ between epochs while their
 * number does not: packing only looks at the sorted L, the same every epoch.
 *
 * The loader interface draws batch `key` of `rows` examples. Token-count
 * batches have no fixed rows, so `rows` is ignored and `key` is a batch
 * counter (epoch = key / batches): the smallest change that keeps
 * tf_loader_next and the "same (split, key), same batch" contract. */
#include <stdlib.h>
#include <string.h>

#include "../core/core_internal.h"
#include "../util/util.h"
#include "tformer/data.h"
#include "tformer/tokenizer.h"

#define IGNORE (-100)

tf_parallel_opts tf_parallel_opts_default(void) {
    return (tf_parallel_opts){
        .max_len = 256, .src_eos = -1, .src_pad = -1, .tgt_bos = -1, .tgt_eos = -1, .tgt_pad = -1};
}

/* ---------------------------------------------------------------- reading */

/* The lines of a file ("\n"-terminated, the last one possibly not), read a line at a time. */
static int count_lines(const char *path, int64_t *n) {
    tf_line_reader *r = tf_line_reader_open(path);
    const char *line;
    size_t len;
    int got = r ? 1 : -1;
    for (*n = 0; got > 0;) *n += (got = tf_line_reader_next(r, &line, &len)) > 0;
    tf_line_reader_close(r);
    return got;
}

/* opt when given (>= 0), else the tokenizer's special id of role. */
static int special(int32_t opt, const tf_tokenizer *tok, const char *side, const char *role, const char *field,
                   int32_t *out) {
    *out = opt >= 0 ? opt : tf_tokenizer_special_id(tok, role);
    if (*out < 0)
        return tf_set_error("parallel: the %s tokenizer has no %s token: give its id in tf_parallel_opts.%s", side,
                            role, field);
    return 0;
}

static int resolve_specials(tf_tokenizer *src_tok, tf_tokenizer *tgt_tok, const tf_parallel_opts *o,
                            tf_parallel_set *s) {
    if (special(o->src_eos, src_tok, "source", "eos", "src_eos", &s->src_eos) ||
        special(o->src_pad, src_tok, "source", "pad", "src_pad", &s->src_pad) ||
        special(o->tgt_bos, tgt_tok, "target", "bos", "tgt_bos", &s->tgt_bos) ||
        special(o->tgt_eos, tgt_tok, "target", "eos", "tgt_eos", &s->tgt_eos) ||
        special(o->tgt_pad, tgt_tok, "target", "pad", "tgt_pad", &s->tgt_pad))
        return -1;
    int32_t sp[5] = {s->src_eos, s->src_pad, s->tgt_bos, s->tgt_eos, s->tgt_pad};
    for (int i = 0; i < 5; i++) s->max_id = sp[i] > s->max_id ? sp[i] : s->max_id;
    return 0;
}

/* One side of a pair appended to all: its token count in *n_tok (0 = empty).
 * Tokenizer errors and over-long sentences name the file and line. */
static int encode_side(tf_tokenizer *tok, const char *path, int line, const char *text, size_t n,
                       const tf_parallel_opts *o, tf_ids *all, tf_parallel_set *s, int32_t *n_tok) {
    size_t start = all->n;
    if (n && tf_tokenizer_encode(tok, text, n, all)) {
        char msg[400];
        snprintf(msg, sizeof msg, "%s", tf_error());
        return tf_set_error("%s line %d: %s", path, line, msg);
    }
    size_t len = all->n - start, limit = o->max_len > 0 ? (size_t)o->max_len - 1 : (size_t)INT32_MAX - 1;
    if (len > limit) {
        if (!o->truncate)
            return tf_set_error("%s line %d: %zu tokens + 1 = %zu ids, more than max_len %zu", path, line, len,
                                len + 1, limit + 1);
        all->n = start + limit, len = limit, s->n_truncated++;
    }
    for (size_t i = start; i < all->n; i++) s->max_id = all->v[i] > s->max_id ? all->v[i] : s->max_id;
    *n_tok = (int32_t)len;
    return 0;
}

typedef struct {
    const char *path;
    tf_line_reader *r;
    tf_tokenizer *tok;
} side;

/* The next line of a side: its start and length without a final "\r" (the files' lines were counted equal). */
static int next_line(side *d, const char **s, size_t *n) {
    int got = tf_line_reader_next(d->r, s, n);
    if (!got) return tf_set_error("%s: fewer lines than counted (changed while read?)", d->path);
    if (got > 0 && *n && (*s)[*n - 1] == '\r') --*n;
    return got > 0 ? 0 : -1;
}

/* Every line pair of two line-aligned texts into s. */
static int read_pairs(side *src, side *tgt, int64_t n_lines, const tf_parallel_opts *o, tf_ids *all,
                      tf_parallel_set *s) {
    for (int line = 1; line <= n_lines; line++) {
        size_t ns, nt, before = all->n;
        const char *ts, *tt;
        if (next_line(src, &ts, &ns) || next_line(tgt, &tt, &nt)) return -1;
        tf_parallel_pair p = {.src = (int64_t)all->n, .line = line};
        if (encode_side(src->tok, src->path, line, ts, ns, o, all, s, &p.src_len)) return -1;
        p.tgt = (int64_t)all->n;
        if (encode_side(tgt->tok, tgt->path, line, tt, nt, o, all, s, &p.tgt_len)) return -1;
        if (!p.src_len || !p.tgt_len) {
            if (!o->skip_empty)
                return tf_set_error("%s line %d: empty sentence (no tokens; or set skip_empty)",
                                    p.src_len ? tgt->path : src->path, line);
            all->n = before, s->n_skipped++;
            continue;
        }
        s->pairs[s->n++] = p;
    }
    return s->n ? 0 : tf_set_error("parallel: %s and %s hold no sentence pair", src->path, tgt->path);
}

static int check_opts(const tf_parallel_opts *o) {
    if (o->max_len != 0 && o->max_len < 2)
        return tf_set_error("parallel: max_len %d must be 2 or more (tokens + 1), or 0 for no limit", o->max_len);
    return 0;
}

int tf_parallel_read(tf_tokenizer *src_tok, tf_tokenizer *tgt_tok, const char *src_path, const char *tgt_path,
                     const tf_parallel_opts *o, tf_parallel_set *out) {
    memset(out, 0, sizeof *out);
    if (check_opts(o) || resolve_specials(src_tok, tgt_tok, o, out)) return -1;
    side src = {src_path, NULL, src_tok}, tgt = {tgt_path, NULL, tgt_tok};
    int64_t ns = 0, nt = 0; /* counted a line at a time, then read a line at a time: never whole */
    int rc = count_lines(src_path, &ns) < 0 || count_lines(tgt_path, &nt) < 0 ? -1 : 0;
    size_t bytes = 0;
    if (!rc && ns != nt)
        rc = tf_set_error("parallel: %s has %lld lines, %s %lld: the files must be line-aligned", src_path,
                          (long long)ns, tgt_path, (long long)nt);
    else if (!rc && ns == 0)
        rc = tf_set_error("parallel: %s and %s are empty", src_path, tgt_path);
    else if (!rc &&
             (ns > INT32_MAX || !tf_mul_size((size_t)ns, sizeof *out->pairs, &bytes) || !(out->pairs = malloc(bytes))))
        rc = tf_set_error("parallel: out of memory for %lld pairs", (long long)ns);
    if (!rc && (!(src.r = tf_line_reader_open(src_path)) || !(tgt.r = tf_line_reader_open(tgt_path)))) rc = -1;
    tf_ids all = {0};
    if (!rc) rc = read_pairs(&src, &tgt, ns, o, &all, out);
    tf_line_reader_close(src.r), tf_line_reader_close(tgt.r);
    out->ids = all.v;
    if (rc) tf_parallel_set_free(out);
    return rc;
}

void tf_parallel_set_free(tf_parallel_set *s) {
    if (!s) return;
    free(s->ids), free(s->pairs);
    memset(s, 0, sizeof *s);
}

/* ---------------------------------------------------------------- batches */

static int set_all(tf_batch *out, const char *const *names, tf_tensor *const *t, int n) {
    for (int i = 0; i < n; i++)
        if (!t[i] || tf_batch_set(out, names[i], t[i])) return -1;
    return 0;
}

/* Row r of a (rows,W) I32 tensor: body[0..n) after `first` (when >= 0), then
 * `last` (when >= 0), then fill. */
static void put_row(int32_t *row, int64_t W, int32_t first, const int32_t *body, int32_t n, int32_t last,
                    int32_t fill) {
    int64_t k = 0;
    if (first >= 0) row[k++] = first;
    for (int32_t i = 0; i < n; i++) row[k++] = body[i];
    if (last >= 0) row[k++] = last;
    while (k < W) row[k++] = fill;
}

static void put_mask(uint8_t *real, uint8_t *padding, int64_t W, int64_t len) {
    for (int64_t k = 0; k < W; k++) real[k] = k < len, padding[k] = k >= len;
}

int tf_parallel_batch(const tf_parallel_set *s, tf_ctx *ctx, const int *idx, int rows, tf_batch *out) {
    static const char *const NAMES[7] = {
        "src_ids", "src_mask", "src_key_padding_mask", "tgt_in", "tgt_out", "tgt_key_padding_mask", "n_tgt_tokens"};
    if (rows < 1) return tf_set_error("parallel: a batch of %d rows", rows);
    int64_t S = 1, T = 1, n_tgt = 0;
    for (int r = 0; r < rows; r++) {
        if (idx[r] < 0 || idx[r] >= s->n) return tf_set_error("parallel: pair %d of %d pairs", idx[r], s->n);
        const tf_parallel_pair *p = &s->pairs[idx[r]];
        S = p->src_len + 1 > S ? p->src_len + 1 : S, T = p->tgt_len + 1 > T ? p->tgt_len + 1 : T;
        n_tgt += p->tgt_len + 1;
    }
    if (n_tgt > INT32_MAX) return tf_set_error("parallel: %lld target tokens in a batch", (long long)n_tgt);
    int64_t bs[2] = {rows, S}, bt[2] = {rows, T};
    tf_tensor *t[7] = {
        tf_tensor_new(ctx, TF_DTYPE_I32, 2, bs, 0),  // src_ids: (B,S)
        tf_tensor_new(ctx, TF_DTYPE_U8, 2, bs, 0),   // src_mask: (B,S)
        tf_tensor_new(ctx, TF_DTYPE_U8, 2, bs, 0),   // src_key_padding_mask: (B,S)
        tf_tensor_new(ctx, TF_DTYPE_I32, 2, bt, 0),  // tgt_in: (B,T)
        tf_tensor_new(ctx, TF_DTYPE_I32, 2, bt, 0),  // tgt_out: (B,T)
        tf_tensor_new(ctx, TF_DTYPE_U8, 2, bt, 0),   // tgt_key_padding_mask: (B,T)
        tf_tensor_new(ctx, TF_DTYPE_I32, 0, NULL, 0) // n_tgt_tokens: ()
    };
    for (int i = 0; i < 7; i++)
        if (!t[i]) return -1;
    for (int64_t r = 0; r < rows; r++) {
        const tf_parallel_pair *p = &s->pairs[idx[r]];
        const int32_t *src = s->ids + p->src, *tgt = s->ids + p->tgt;
        put_row(tf_i32(t[0]) + r * S, S, -1, src, p->src_len, s->src_eos, s->src_pad);
        put_mask(tf_u8(t[1]) + r * S, tf_u8(t[2]) + r * S, S, p->src_len + 1);
        put_row(tf_i32(t[3]) + r * T, T, s->tgt_bos, tgt, p->tgt_len, -1, s->tgt_pad);
        put_row(tf_i32(t[4]) + r * T, T, -1, tgt, p->tgt_len, s->tgt_eos, IGNORE);
        for (int64_t k = 0; k < T; k++) tf_u8(t[5])[r * T + k] = k > p->tgt_len;
    }
    tf_i32(t[6])[0] = (int32_t)n_tgt;
    return set_all(out, NAMES, t, 7);
}

/* ---------------------------------------------------------------- the loader */

typedef struct {
    int *order; /* (n) pair indices in packing order */
    int *start; /* (nb + 1) batch b is order[start[b] .. start[b+1]) */
    int nb;
} plan;

typedef struct {
    uint32_t len;     /* L: the longer row of the pair */
    int32_t src, tgt; /* row lengths: second and third keys */
    uint64_t tie;     /* drawn per epoch */
    int idx;
} sort_key;

typedef struct {
    tf_loader base;
    const tf_parallel_set *train, *valid;
    int batch_tokens, max_rows;
    uint64_t seed;
    plan tr, va;    /* tr: the cached epoch's; va: file order */
    int *perm;      /* (tr.nb) the cached epoch's batch order */
    sort_key *keys; /* (train->n) scratch */
    uint64_t epoch;
    int has_epoch;
} par_loader;

static const tf_loader_vt PAR_LOADER;

static uint32_t pair_cost(const tf_parallel_pair *p) {
    return (uint32_t)(p->src_len > p->tgt_len ? p->src_len : p->tgt_len) + 1;
}

/* Greedy packing of s's pairs in p->order: a batch grows while rows * max L
 * stays within batch_tokens (and rows within max_rows). p->start is filled. */
static void pack(const tf_parallel_set *s, plan *p, int batch_tokens, int max_rows) {
    int rows = 0;
    uint32_t width = 0;
    p->nb = 0;
    for (int i = 0; i < s->n; i++) {
        uint32_t L = pair_cost(&s->pairs[p->order[i]]), w = L > width ? L : width;
        if (rows && ((uint64_t)(rows + 1) * w > (uint64_t)batch_tokens || (max_rows && rows == max_rows))) rows = 0;
        if (!rows) p->start[p->nb++] = i, width = 0, w = L;
        rows++, width = w;
    }
    p->start[p->nb] = s->n;
}

static int cmp_key(const void *a, const void *b) {
    const sort_key *x = a, *y = b;
    if (x->len != y->len) return x->len < y->len ? -1 : 1;
    if (x->src != y->src) return x->src < y->src ? -1 : 1;
    if (x->tgt != y->tgt) return x->tgt < y->tgt ? -1 : 1;
    if (x->tie != y->tie) return x->tie < y->tie ? -1 : 1;
    return (x->idx > y->idx) - (x->idx < y->idx);
}

/* The training order of an epoch: pairs by length (ties drawn), batch order shuffled. */
static void plan_epoch(par_loader *m, uint64_t epoch) {
    const tf_parallel_set *s = m->train;
    for (int i = 0; i < s->n; i++) {
        const tf_parallel_pair *p = &s->pairs[i];
        m->keys[i] = (sort_key){pair_cost(p), p->src_len, p->tgt_len, tf_key(m->seed, epoch, (uint64_t)i, 0x5041), i};
    }
    qsort(m->keys, (size_t)s->n, sizeof *m->keys, cmp_key);
    for (int i = 0; i < s->n; i++) m->tr.order[i] = m->keys[i].idx;
    pack(s, &m->tr, m->batch_tokens, m->max_rows); /* the same starts every epoch */
    uint64_t st = tf_key(m->seed, epoch, 0x4241, 1);
    for (int b = 0; b < m->tr.nb; b++) m->perm[b] = b;
    for (int b = m->tr.nb - 1; b > 0; b--) { /* Fisher-Yates */
        int j = (int)(tf_splitmix64(&st) % (uint64_t)(b + 1)), x = m->perm[b];
        m->perm[b] = m->perm[j], m->perm[j] = x;
    }
    m->epoch = epoch, m->has_epoch = 1;
}

int tf_parallel_loader_pairs(tf_loader *l, tf_subset split, uint64_t key, const int **idx, int *rows) {
    if (!l || l->vt != &PAR_LOADER) return tf_set_error("parallel: not a parallel-text loader");
    par_loader *m = (par_loader *)l;
    if (split == TF_SUBSET_VAL) {
        if (!m->valid) return tf_set_error("parallel: the loader has no validation pairs");
        int b = (int)(key % (uint64_t)m->va.nb);
        *idx = m->va.order + m->va.start[b], *rows = m->va.start[b + 1] - m->va.start[b];
        return 0;
    }
    uint64_t epoch = key / (uint64_t)m->tr.nb;
    if (!m->has_epoch || m->epoch != epoch) plan_epoch(m, epoch);
    int b = m->perm[key % (uint64_t)m->tr.nb];
    *idx = m->tr.order + m->tr.start[b], *rows = m->tr.start[b + 1] - m->tr.start[b];
    return 0;
}

int64_t tf_parallel_loader_batches(const tf_loader *l, tf_subset split) {
    if (!l || l->vt != &PAR_LOADER) return tf_set_error("parallel: not a parallel-text loader");
    const par_loader *m = (const par_loader *)l;
    if (split == TF_SUBSET_VAL) return m->valid ? m->va.nb : 0;
    return m->tr.nb;
}

static int par_next(tf_loader *l, tf_ctx *ctx, tf_subset split, uint64_t key, int rows, tf_batch *out) {
    (void)rows; /* token-count batches: see the top of the file */
    const int *idx;
    int n;
    if (tf_parallel_loader_pairs(l, split, key, &idx, &n)) return -1;
    par_loader *m = (par_loader *)l;
    return tf_parallel_batch(split == TF_SUBSET_VAL ? m->valid : m->train, ctx, idx, n, out);
}

static void plan_free(plan *p) { free(p->order), free(p->start); }

static void par_free(tf_loader *l) {
    par_loader *m = (par_loader *)l;
    if (!m) return;
    plan_free(&m->tr), plan_free(&m->va);
    free(m->perm), free(m->keys), free(m);
}

static const tf_loader_vt PAR_LOADER = {par_next, par_free};

/* A set's plan buffers; every pair must fit a batch alone. */
static int plan_alloc(const tf_parallel_set *s, plan *p, int batch_tokens, const char *what) {
    if (!s || s->n < 1 || !s->pairs) return tf_set_error("parallel: no %s pairs", what);
    for (int i = 0; i < s->n; i++)
        if (pair_cost(&s->pairs[i]) > (uint32_t)batch_tokens)
            return tf_set_error("parallel: the %s pair of line %d needs %u ids a row, more than batch_tokens %d", what,
                                s->pairs[i].line, pair_cost(&s->pairs[i]), batch_tokens);
    size_t bytes;
    if (!tf_mul_size((size_t)s->n + 1, sizeof(int), &bytes) || !(p->order = malloc(bytes)) ||
        !(p->start = malloc(bytes)))
        return tf_set_error("parallel: out of memory for %d pairs", s->n);
    for (int i = 0; i < s->n; i++) p->order[i] = i;
    return 0;
}

tf_loader *tf_parallel_loader_new(const tf_parallel_set *train, const tf_parallel_set *valid, int batch_tokens,
                                  int max_rows, uint64_t seed) {
    if (batch_tokens < 2 || max_rows < 0)
        return tf_set_error("parallel: batch_tokens %d (2 or more) and max_rows %d (0 or more)", batch_tokens, max_rows),
               NULL;
    par_loader *m = calloc(1, sizeof *m);
    if (!m) return tf_set_error("parallel: out of memory"), NULL;
    *m = (par_loader){.base = {&PAR_LOADER},
                      .train = train,
                      .valid = valid,
                      .batch_tokens = batch_tokens,
                      .max_rows = max_rows,
                      .seed = seed};
    size_t bytes;
    int rc = plan_alloc(train, &m->tr, batch_tokens, "training") ||
             (valid && plan_alloc(valid, &m->va, batch_tokens, "validation"));
    if (!rc && (!tf_mul_size((size_t)train->n, sizeof *m->keys, &bytes) || !(m->keys = malloc(bytes)) ||
                !(m->perm = malloc((size_t)train->n * sizeof *m->perm))))
        rc = tf_set_error("parallel: out of memory for %d pairs", train->n);
    if (rc) {
        par_free(&m->base);
        return NULL;
    }
    if (valid) pack(valid, &m->va, batch_tokens, max_rows);
    plan_epoch(m, 0);
    return &m->base;
}
