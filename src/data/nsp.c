/* BERT pre-training examples from text files: documents separated by blank
 * lines, sentences by lines. Each example is [CLS] A [SEP] B [SEP]: A a run
 * of consecutive sentences of a document, B the sentences that follow it
 * (next_sentence_label 0) or, half of the time, a run from another document
 * (1); then masked language modelling: mask_prob of the tokens chosen (one
 * at least), 80% of those replaced by [MASK], 10% by a random token, 10%
 * kept. Everything is drawn from (seed, split, key, row): dynamic masking,
 * the same batch for the same draw on any thread count and on resume.
 * Documents are held out whole for validation. */
#include <stdlib.h>
#include <string.h>

#include "../core/core_internal.h"
#include "../util/util.h"
#include "tformer/data.h"
#include "tformer/tokenizer.h"

typedef struct {
    int64_t start, len; /* ids[start .. start+len) */
} span;

typedef struct {
    int first, n; /* sentences[first .. first+n) */
} doc;

typedef struct {
    tf_loader base;
    tf_nsp_opts o;
    int32_t *ids;
    span *sent;
    doc *docs;
    int *subset[2], n_subset[2]; /* documents of 2+ sentences, by subset */
    int *any[2], n_any[2];       /* every document, by subset: random B */
    uint64_t seed;
} nsp_loader;

/* ---------------------------------------------------------------- one example */

typedef struct {
    int32_t *tok, *type, *label; /* (context) each */
    int len, is_random;
} example;

static uint64_t draw(uint64_t *s, uint64_t n) { return n ? tf_splitmix64(s) % n : 0; }
static double uniform(uint64_t *s) { return (double)(tf_splitmix64(s) >> 11) * 0x1.0p-53; }

/* Sentences of doc d from sentence i on, while they fit in budget (one at least). */
static int take(const nsp_loader *m, const doc *d, int i, int budget, int max_n, int *n_out) {
    int len = 0, n = 0;
    while (i + n < d->first + d->n && n < max_n && (n == 0 || len + m->sent[i + n].len <= budget))
        len += (int)m->sent[i + n].len, n++;
    *n_out = n;
    return len;
}

static void append(const nsp_loader *m, example *e, int first, int n, int32_t type, int *room) {
    for (int s = first; s < first + n; s++)
        for (int64_t k = 0; k < m->sent[s].len && *room > 0; k++, (*room)--)
            e->tok[e->len] = m->ids[m->sent[s].start + k], e->type[e->len++] = type;
}

/* Lengths of A and B cut longest first until they fit. */
static void fit(int *la, int *lb, int budget) {
    while (*la + *lb > budget) {
        if (*la >= *lb) (*la)--;
        else (*lb)--;
    }
}

static void make_pair(const nsp_loader *m, int split, uint64_t *s, example *e) {
    int budget = m->o.context - 3;
    const doc *d = &m->docs[m->subset[split][draw(s, (uint64_t)m->n_subset[split])]];
    int i = d->first + (int)draw(s, (uint64_t)(d->n - 1)), na, nb, first_b;
    int la = take(m, d, i, budget / 2, d->first + d->n - 1 - i, &na), lb;
    e->is_random = m->n_any[split] > 1 && uniform(s) < 0.5;
    if (e->is_random) {
        const doc *r;
        do r = &m->docs[m->any[split][draw(s, (uint64_t)m->n_any[split])]];
        while (r == d);
        first_b = r->first + (int)draw(s, (uint64_t)r->n);
        lb = take(m, r, first_b, budget - la, r->n, &nb);
    } else {
        first_b = i + na;
        lb = take(m, d, first_b, budget - la, d->n, &nb);
    }
    fit(&la, &lb, budget);
    e->len = 0;
    e->tok[e->len] = m->o.cls, e->type[e->len++] = 0;
    append(m, e, i, na, 0, &la);
    e->tok[e->len] = m->o.sep, e->type[e->len++] = 0;
    append(m, e, first_b, nb, 1, &lb);
    e->tok[e->len] = m->o.sep, e->type[e->len++] = 1;
}

static void mask_one(const nsp_loader *m, uint64_t *s, example *e, int p) {
    e->label[p] = e->tok[p];
    double u = uniform(s);
    if (u < 0.8) e->tok[p] = m->o.mask;
    else if (u < 0.9) e->tok[p] = (int32_t)draw(s, (uint64_t)m->o.vocab_size);
}

/* Choose mask_prob of the non-special positions (1 .. len-2 but the middle [SEP]). */
static void mask_tokens(const nsp_loader *m, uint64_t *s, example *e) {
    int chosen = 0, candidates = 0;
    for (int p = 0; p < e->len; p++) e->label[p] = -100;
    for (int p = 1; p < e->len - 1; p++)
        if (e->tok[p] != m->o.sep) candidates++;
    for (int p = 1; p < e->len - 1; p++)
        if (e->tok[p] != m->o.sep && uniform(s) < m->o.mask_prob) mask_one(m, s, e, p), chosen++;
    /* one at least: every example teaches something, if it has a token to mask
     * (sentences of nothing but [SEP] have none: drawing for one never ended) */
    while (!chosen && candidates) {
        int p = 1 + (int)draw(s, (uint64_t)(e->len - 2));
        if (e->tok[p] != m->o.sep) mask_one(m, s, e, p), chosen++;
    }
}

/* ---------------------------------------------------------------- batches */

/* Examples into (rows,C) scratch rows; the batch is then as long as its
 * longest example (less work on short sentences). */
static int fill_rows(nsp_loader *m, int val, uint64_t key, int rows, int32_t *buf, int32_t *nsp) {
    int C = m->o.context, longest = 1;
    size_t plane = (size_t)rows * (size_t)C;
    for (int b = 0; b < rows; b++) {
        uint64_t s = tf_key(m->seed, key, (uint64_t)b, (uint64_t)val);
        size_t o = (size_t)b * (size_t)C;
        example e = {buf + o, buf + plane + o, buf + 2 * plane + o, 0, 0};
        make_pair(m, val, &s, &e);
        mask_tokens(m, &s, &e);
        for (int p = e.len; p < C; p++) e.tok[p] = m->o.pad, e.type[p] = 0, e.label[p] = -100;
        for (int p = 0; p < C; p++) buf[3 * plane + o + (size_t)p] = p < e.len;
        nsp[b] = e.is_random;
        longest = e.len > longest ? e.len : longest;
    }
    return longest;
}

static int nsp_next(tf_loader *l, tf_ctx *ctx, tf_subset split, uint64_t key, int rows, tf_batch *out) {
    static const char *const NAMES[4] = {"input_ids", "token_type_ids", "labels", "attention_mask"};
    nsp_loader *m = (nsp_loader *)l;
    int C = m->o.context;
    size_t plane = (size_t)rows * (size_t)C;
    int32_t *buf = malloc(4 * plane * sizeof *buf);
    tf_tensor *nsp = tf_tensor_new(ctx, TF_DTYPE_I32, 1, (int64_t[]){rows}, 0);  // (rows)
    if (!buf || !nsp) return free(buf), tf_set_error("data: out of memory");
    int T = fill_rows(m, split == TF_SUBSET_VAL, key, rows, buf, tf_i32(nsp)), rc = 0;
    for (int k = 0; k < 4 && !rc; k++) {
        tf_tensor *t = tf_tensor_new(ctx, TF_DTYPE_I32, 2, (int64_t[]){rows, T}, 0);  // (rows,T)
        for (int b = 0; t && b < rows; b++)
            memcpy(tf_i32(t) + (size_t)b * (size_t)T, buf + k * plane + (size_t)b * (size_t)C, (size_t)T * 4);
        rc = !t || tf_batch_set(out, NAMES[k], t);
    }
    free(buf);
    return rc || tf_batch_set(out, "next_sentence_label", nsp) ? -1 : 0;
}

static void nsp_free(tf_loader *l) {
    nsp_loader *m = (nsp_loader *)l;
    if (!m) return;
    free(m->ids), free(m->sent), free(m->docs);
    for (int k = 0; k < 2; k++) free(m->subset[k]), free(m->any[k]);
    free(m);
}

static const tf_loader_vt NSP_LOADER = {nsp_next, nsp_free};

/* ---------------------------------------------------------------- construction */

/* Close the document being read (sentences first .. n_sent-1), if any. */
static int end_doc(tf_buf *docs, int *first, int n_sent) {
    doc d = {*first, n_sent - *first};
    *first = n_sent;
    return d.n ? tf_buf_put(docs, &d, sizeof d) : 0;
}

/* One file's lines tokenized: a sentence per non-blank line, a document per
 * run of them; the file read a line at a time (tf_line_reader), never whole.
 * Errors name the file and line. */
static int read_file_docs(tf_tokenizer *tok, const char *path, tf_ids *ids, tf_buf *sents, tf_buf *docs) {
    tf_line_reader *r = tf_line_reader_open(path);
    if (!r) return -1;
    int rc = 0, got = 1, lineno = 1, first = (int)(sents->n / sizeof(span));
    const char *text;
    size_t n;
    for (; !rc && (got = tf_line_reader_next(r, &text, &n)) > 0; lineno++) {
        while (n && (text[n - 1] == '\r' || text[n - 1] == ' ' || text[n - 1] == '\t')) n--;
        span sp = {(int64_t)ids->n, 0};
        if (n && tf_tokenizer_encode(tok, text, n, ids)) {
            char msg[400];
            snprintf(msg, sizeof msg, "%s", tf_error());
            rc = tf_set_error("%s line %d: %s", path, lineno, msg);
        }
        sp.len = (int64_t)ids->n - sp.start;
        if (!rc && sp.len) rc = tf_buf_put(sents, &sp, sizeof sp);
        if (!rc && !n) rc = end_doc(docs, &first, (int)(sents->n / sizeof(span)));
    }
    if (!rc && got < 0) rc = -1;
    if (!rc) rc = end_doc(docs, &first, (int)(sents->n / sizeof(span)));
    tf_line_reader_close(r);
    return rc;
}

/* Documents to subsets by a hash of their index; the lists of each. */
static int split_docs(nsp_loader *m, int n_docs, float val_fraction) {
    for (int k = 0; k < 2; k++)
        if (!(m->subset[k] = malloc((size_t)n_docs * sizeof(int))) || !(m->any[k] = malloc((size_t)n_docs * sizeof(int))))
            return tf_set_error("data: out of memory");
    for (int i = 0; i < n_docs; i++) {
        int val = (double)(tf_key(0x6e7370, (uint64_t)i, 0, 0) >> 11) * 0x1.0p-53 < val_fraction;
        m->any[val][m->n_any[val]++] = i;
        if (m->docs[i].n >= 2) m->subset[val][m->n_subset[val]++] = i;
    }
    static const char *const NAME[2] = {"training", "validation"};
    for (int k = 0; k < 2; k++)
        if (!m->n_subset[k])
            return tf_set_error("data: %d documents, none of two sentences or more in the %s part (val_fraction %g): "
                                "NSP needs documents (runs of non-blank lines) of 2+ lines", n_docs, NAME[k],
                                (double)val_fraction);
    return 0;
}

static int check_opts(const tf_nsp_opts *o) {
    if (o->context < 8) return tf_set_error("data: context %d is too short for sentence pairs (8 at least)", o->context);
    if (!(o->mask_prob > 0.0f && o->mask_prob < 1.0f)) return tf_set_error("data: mask_prob %g outside (0,1)", (double)o->mask_prob);
    if (!(o->val_fraction > 0.0f && o->val_fraction < 1.0f))
        return tf_set_error("data: val_fraction %g outside (0,1)", (double)o->val_fraction);
    if (o->cls < 0 || o->sep < 0 || o->mask < 0 || o->pad < 0)
        return tf_set_error("data: the vocabulary needs [CLS], [SEP], [MASK] and [PAD] for BERT pre-training");
    return o->vocab_size > 0 ? 0 : tf_set_error("data: vocab_size %d", o->vocab_size);
}

tf_loader *tf_nsp_loader_new(tf_tokenizer *tok, const char *const *files, int n_files, const tf_nsp_opts *o,
                             uint64_t seed) {
    if (check_opts(o)) return NULL;
    nsp_loader *m = calloc(1, sizeof *m);
    if (!m) return tf_set_error("data: out of memory"), NULL;
    m->base.vt = &NSP_LOADER, m->o = *o, m->seed = seed;
    tf_ids ids = {0};
    tf_buf sents = {0}, docs = {0};
    int rc = 0;
    for (int f = 0; f < n_files && !rc; f++) rc = read_file_docs(tok, files[f], &ids, &sents, &docs);
    m->ids = ids.v, m->sent = (span *)sents.p, m->docs = (doc *)docs.p;
    if (!rc) rc = split_docs(m, (int)(docs.n / sizeof(doc)), o->val_fraction);
    if (rc) {
        nsp_free(&m->base);
        return NULL;
    }
    return &m->base;
}
