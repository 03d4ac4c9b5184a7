/* Fine-tuning examples as BERT inputs, and their batches: classify / pairs
 * through tf_tokenizer_encode_pair; tagging word by word (the tag on a
 * word's first piece, -100 on the rest, Hugging Face's convention); spans
 * as [CLS] question [SEP] context [SEP] with the answer's character range
 * mapped onto pieces through the context's words (split at whitespace and
 * ASCII punctuation, as BERT's pre-tokenizer splits, each encoded alone). */
#include <stdlib.h>
#include <string.h>

#include "../core/core_internal.h"
#include "finetune_internal.h"
#include "tformer/data.h"
#include "tformer/tokenizer.h"

#define IGNORE (-100)

typedef struct {
    int32_t cls, sep;
} specials;

/* Room for len ids, types, words (and token labels) of one example. */
static int alloc_example(tf_finetune_encoded *e, size_t len, int words, int tok_labels) {
    size_t bytes;
    if (!tf_mul_size(len ? len : 1, sizeof(int32_t), &bytes)) return tf_set_error("finetune: example too long");
    e->ids = malloc(bytes), e->types = calloc(len ? len : 1, sizeof(int32_t));
    e->word = words ? malloc(bytes) : NULL;
    e->tok_labels = tok_labels ? malloc(bytes) : NULL;
    if (!e->ids || !e->types || (words && !e->word) || (tok_labels && !e->tok_labels))
        return tf_set_error("finetune: out of memory");
    return 0;
}

/* ---------------------------------------------------------------- classify, pairs */

static int encode_text(tf_tokenizer *tok, const tf_finetune_example *x, int pairs, int max_len,
                       tf_finetune_encoded *e) {
    tf_ids ids = {0}, types = {0};
    const char *b = pairs ? x->b : NULL;
    size_t lb = b ? strlen(b) : 0;
    int rc = tf_tokenizer_encode_pair(tok, x->a, strlen(x->a), b, lb, 0, &ids, &types);
    if (!rc && ids.n > (size_t)max_len) { /* cut longest first, as Hugging Face's truncation=True */
        e->truncated = 1, ids.n = types.n = 0;
        rc = tf_tokenizer_encode_pair(tok, x->a, strlen(x->a), b, lb, (size_t)max_len, &ids, &types);
    }
    if (!rc) rc = alloc_example(e, ids.n, 0, 0);
    if (!rc) {
        e->len = (int)ids.n;
        memcpy(e->ids, ids.v, ids.n * sizeof(int32_t));
        memcpy(e->types, types.v, types.n * sizeof(int32_t));
    }
    tf_ids_free(&ids), tf_ids_free(&types);
    return rc ? -1 : 0;
}

/* ---------------------------------------------------------------- tagging */

/* [CLS] pieces [SEP]; the tag of a word on its first piece; words that do not fit are lost. */
static int encode_tags(tf_tokenizer *tok, const tf_finetune_example *x, char *const *labels, int n_labels,
                       specials sp, int max_len, tf_finetune_encoded *e, int *lost) {
    if (alloc_example(e, (size_t)max_len, 1, 1)) return -1;
    e->n_words = x->n_words;
    int n = 0, rc = 0;
    e->ids[n] = sp.cls, e->word[n] = -1, e->tok_labels[n++] = IGNORE;
    tf_ids p = {0};
    for (int w = 0; !rc && w < x->n_words; w++) {
        p.n = 0;
        rc = tf_tokenizer_encode(tok, x->words[w], strlen(x->words[w]), &p);
        int32_t tag = x->tags ? tf_finetune_label_index(labels, n_labels, x->tags[w]) : IGNORE;
        if (!rc && p.n && n >= max_len - 1) e->truncated = 1, ++*lost;
        for (size_t k = 0; !rc && k < p.n; k++) {
            if (n >= max_len - 1) break;
            e->ids[n] = p.v[k], e->word[n] = k ? -1 : w, e->tok_labels[n++] = k ? IGNORE : tag;
        }
        if (!rc && n >= max_len - 1 && w + 1 < x->n_words) e->truncated = 1;
    }
    tf_ids_free(&p);
    e->ids[n] = sp.sep, e->word[n] = -1, e->tok_labels[n++] = IGNORE;
    e->len = n;
    return rc ? -1 : 0;
}

/* ---------------------------------------------------------------- spans */

static int is_space(unsigned char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; }
static int is_punct(unsigned char c) {
    return (c >= 33 && c <= 47) || (c >= 58 && c <= 64) || (c >= 91 && c <= 96) || (c >= 123 && c <= 126);
}

/* The context's words: [off, end) byte ranges, punctuation alone. */
static int split_words(const char *s, tf_finetune_encoded *e) {
    size_t n = strlen(s), cap = n + 1;
    e->word_off = malloc(cap * sizeof(size_t)), e->word_end = malloc(cap * sizeof(size_t));
    if (!e->word_off || !e->word_end) return tf_set_error("finetune: out of memory");
    int k = 0;
    for (size_t i = 0; i < n;) {
        unsigned char c = (unsigned char)s[i];
        if (is_space(c)) { i++; continue; }
        size_t j = i + 1;
        if (!is_punct(c))
            while (j < n && !is_space((unsigned char)s[j]) && !is_punct((unsigned char)s[j])) j++;
        e->word_off[k] = i, e->word_end[k++] = j;
        i = j;
    }
    e->n_words = k;
    return 0;
}

typedef struct {
    tf_ids q, c;     /* the question's ids; the context's */
    tf_ids c_word;   /* the context word of each context id */
} span_parts;

static int span_pieces(tf_tokenizer *tok, const tf_finetune_example *x, tf_finetune_encoded *e, span_parts *s) {
    int rc = tf_tokenizer_encode(tok, x->a, strlen(x->a), &s->q) || split_words(x->b, e);
    for (int w = 0; !rc && w < e->n_words; w++) {
        size_t before = s->c.n;
        rc = tf_tokenizer_encode(tok, x->b + e->word_off[w], e->word_end[w] - e->word_off[w], &s->c);
        for (size_t k = before; !rc && k < s->c.n; k++) rc = tf_ids_push(&s->c_word, w);
    }
    return rc ? -1 : 0;
}

/* The answer's first and last pieces (context piece k sits at c0 + k), or 0 / 0 ([CLS]) when any of
 * it was cut away (Hugging Face's convention). */
static void answer_pieces(const tf_finetune_example *x, const span_parts *s, size_t nc, int c0,
                          tf_finetune_encoded *e, int *lost) {
    size_t a0 = x->answer_off, a1 = x->answer_off + x->answer_len;
    long first = -1, last = -1;
    for (size_t k = 0; k < s->c.n; k++) {
        int w = s->c_word.v[k];
        if (e->word_end[w] <= a0 || e->word_off[w] >= a1) continue;
        if (first < 0) first = (long)k;
        last = (long)k;
    }
    if (first < 0 || (size_t)last >= nc) {
        e->start = e->end = 0, ++*lost;
        return;
    }
    e->start = c0 + (int)first, e->end = c0 + (int)last;
}

static int encode_span(tf_tokenizer *tok, const tf_finetune_example *x, int labelled, specials sp, int max_len,
                       tf_finetune_encoded *e, int *lost) {
    span_parts s = {{0}, {0}, {0}};
    int rc = span_pieces(tok, x, e, &s);
    size_t room = (size_t)max_len - 3, nq = s.q.n, nc = s.c.n;
    if (nq + nc > room) { /* the context is cut first; a question over half the room is cut to half */
        e->truncated = 1;
        size_t half = room / 2;
        if (nq > half) nq = nc < room && room - nc > half ? room - nc : half; /* nc may exceed the room alone */
        nc = room - nq < nc ? room - nq : nc;
    }
    if (!rc) rc = alloc_example(e, nq + nc + 3, 1, 0);
    if (!rc) {
        int n = 0;
        e->ids[n] = sp.cls, e->word[n++] = -1;
        for (size_t k = 0; k < nq; k++) e->ids[n] = s.q.v[k], e->word[n++] = -1;
        e->ids[n] = sp.sep, e->word[n++] = -1;
        for (size_t k = 0; k < nc; k++) e->types[n] = 1, e->ids[n] = s.c.v[k], e->word[n++] = s.c_word.v[k];
        e->types[n] = 1, e->ids[n] = sp.sep, e->word[n++] = -1;
        e->len = n;
        if (labelled) answer_pieces(x, &s, nc, (int)nq + 2, e, lost);
    }
    tf_ids_free(&s.q), tf_ids_free(&s.c), tf_ids_free(&s.c_word);
    return rc ? -1 : 0;
}

/* ---------------------------------------------------------------- a set */

static int encode_one(tf_tokenizer *tok, const tf_finetune_set *s, int i, char *const *labels, int n_labels,
                      specials sp, int max_len, tf_finetune_data *d) {
    const tf_finetune_example *x = &s->ex[i];
    tf_finetune_encoded *e = &d->ex[i];
    e->label = -1;
    int rc;
    if (s->kind == TF_FINETUNE_TAG) rc = encode_tags(tok, x, labels, n_labels, sp, max_len, e, &d->n_words_lost);
    else if (s->kind == TF_FINETUNE_SPAN) rc = encode_span(tok, x, s->labelled, sp, max_len, e, &d->n_answers_lost);
    else rc = encode_text(tok, x, s->kind == TF_FINETUNE_PAIRS, max_len, e);
    if (!rc && s->labelled && x->label) e->label = tf_finetune_label_index(labels, n_labels, x->label);
    d->n_truncated += e->truncated;
    return rc;
}

int tf_finetune_encode(tf_tokenizer *tok, const tf_finetune_set *s, char *const *labels, int n_labels, int max_len,
                       tf_finetune_data *out) {
    memset(out, 0, sizeof *out);
    if (max_len < 8) return tf_set_error("finetune: max_len %d is below 8", max_len);
    if (s->labelled && s->kind != TF_FINETUNE_SPAN && !labels)
        return tf_set_error("finetune: a labelled set needs its label names");
    /* the roles: [CLS] [SEP] [PAD] of a WordPiece vocabulary, RoBERTa's <s> </s> <pad> from its tokenizer files */
    specials sp = {tf_tokenizer_special_id(tok, "cls"), tf_tokenizer_special_id(tok, "sep")};
    out->pad = tf_tokenizer_special_id(tok, "pad");
    if (sp.cls < 0 || sp.sep < 0 || out->pad < 0)
        return tf_set_error("finetune: the tokenizer lacks a cls, sep or pad token ([CLS], [SEP], [PAD] of a BERT "
                            "WordPiece vocabulary; RoBERTa's <s>, </s>, <pad>)");
    if (tf_tokenizer_kind_of(tok) != TF_TOKENIZER_WORDPIECE &&
        (s->kind == TF_FINETUNE_TAG || s->kind == TF_FINETUNE_SPAN))
        return tf_set_error("finetune: --task %s maps words onto WordPiece pieces; with a byte-level BPE tokenizer "
                            "(RoBERTa's) only classify and pairs are implemented",
                            s->kind == TF_FINETUNE_TAG ? "tag" : "span");
    out->kind = s->kind, out->labelled = s->labelled;
    if (!(out->ex = calloc((size_t)s->n, sizeof *out->ex))) return tf_set_error("finetune: out of memory");
    out->n = s->n;
    for (int i = 0; i < s->n; i++)
        if (encode_one(tok, s, i, labels, n_labels, sp, max_len, out)) {
            char msg[512];
            snprintf(msg, sizeof msg, "%s", tf_error());
            tf_finetune_data_free(out);
            return tf_set_error("line %d: %s", s->ex[i].line, msg);
        }
    return 0;
}

void tf_finetune_data_free(tf_finetune_data *d) {
    for (int i = 0; d->ex && i < d->n; i++) {
        tf_finetune_encoded *e = &d->ex[i];
        free(e->ids), free(e->types), free(e->tok_labels), free(e->word), free(e->word_off), free(e->word_end);
    }
    free(d->ex);
    memset(d, 0, sizeof *d);
}

/* ---------------------------------------------------------------- batches and the loader */

/* The labels of a batch: (rows) classes, (rows,T) token tags, or (rows) start / end. */
static int batch_labels(const tf_finetune_data *d, tf_ctx *ctx, const int *idx, int rows, int64_t T, tf_batch *out) {
    if (d->kind == TF_FINETUNE_SPAN) {
        tf_tensor *s = tf_tensor_new(ctx, TF_DTYPE_I32, 1, (int64_t[]){rows}, 0);  // s: (rows)
        tf_tensor *e = tf_tensor_new(ctx, TF_DTYPE_I32, 1, (int64_t[]){rows}, 0);  // e: (rows)
        if (!s || !e) return -1;
        for (int r = 0; r < rows; r++) tf_i32(s)[r] = d->ex[idx[r]].start, tf_i32(e)[r] = d->ex[idx[r]].end;
        return tf_batch_set(out, "start_positions", s) || tf_batch_set(out, "end_positions", e) ? -1 : 0;
    }
    int tag = d->kind == TF_FINETUNE_TAG;
    tf_tensor *y = tag ? tf_tensor_new(ctx, TF_DTYPE_I32, 2, (int64_t[]){rows, T}, 0)  // y: (rows,T)
                       : tf_tensor_new(ctx, TF_DTYPE_I32, 1, (int64_t[]){rows}, 0);    // y: (rows)
    if (!y) return -1;
    for (int r = 0; r < rows; r++) {
        const tf_finetune_encoded *e = &d->ex[idx[r]];
        if (!tag) tf_i32(y)[r] = e->label;
        for (int64_t t = 0; tag && t < T; t++) tf_i32(y)[r * T + t] = t < e->len ? e->tok_labels[t] : IGNORE;
    }
    return tf_batch_set(out, "labels", y);
}

/* The examples idx[0..rows), padded to the longest. */
static int fill_batch(const tf_finetune_data *d, tf_ctx *ctx, const int *idx, int rows, tf_batch *out) {
    int64_t T = 1;
    for (int r = 0; r < rows; r++) T = d->ex[idx[r]].len > T ? d->ex[idx[r]].len : T;
    tf_tensor *x = tf_tensor_new(ctx, TF_DTYPE_I32, 2, (int64_t[]){rows, T}, 0);     // x: (rows,T)
    tf_tensor *mask = tf_tensor_new(ctx, TF_DTYPE_I32, 2, (int64_t[]){rows, T}, 1);  // mask: (rows,T)
    tf_tensor *ty = tf_tensor_new(ctx, TF_DTYPE_I32, 2, (int64_t[]){rows, T}, 1);    // ty: (rows,T)
    if (!x || !mask || !ty) return -1;
    for (int r = 0; r < rows; r++) {
        const tf_finetune_encoded *e = &d->ex[idx[r]];
        for (int64_t t = 0; t < T; t++) tf_i32(x)[r * T + t] = t < e->len ? e->ids[t] : d->pad;
        for (int t = 0; t < e->len; t++) tf_i32(mask)[r * T + t] = 1, tf_i32(ty)[r * T + t] = e->types[t];
    }
    if (tf_batch_set(out, "input_ids", x) || tf_batch_set(out, "attention_mask", mask) ||
        tf_batch_set(out, "token_type_ids", ty))
        return -1;
    return d->labelled ? batch_labels(d, ctx, idx, rows, T, out) : 0;
}

int tf_finetune_batch(const tf_finetune_data *d, tf_ctx *ctx, int64_t first, int rows, tf_batch *out) {
    if (rows < 1 || d->n < 1 || first < 0) return tf_set_error("finetune: a batch of %d rows from %d examples", rows, d->n);
    int *idx = malloc((size_t)rows * sizeof *idx);
    if (!idx) return tf_set_error("finetune: out of memory");
    for (int r = 0; r < rows; r++) idx[r] = (int)((first + r) % d->n);
    int rc = fill_batch(d, ctx, idx, rows, out);
    free(idx);
    return rc;
}

typedef struct {
    tf_loader base;
    const tf_finetune_data *train, *valid;
    uint64_t seed;
} ft_loader;

static int ft_next(tf_loader *l, tf_ctx *ctx, tf_subset split, uint64_t key, int rows, tf_batch *out) {
    ft_loader *f = (ft_loader *)l;
    if (split == TF_SUBSET_VAL) return tf_finetune_batch(f->valid, ctx, (int64_t)(key % (uint64_t)f->valid->n) * rows, rows, out);
    int *idx = malloc((size_t)(rows > 0 ? rows : 1) * sizeof *idx);
    if (!idx) return tf_set_error("finetune: out of memory");
    for (int r = 0; r < rows; r++) idx[r] = (int)(tf_key(f->seed, key, (uint64_t)r, 0) % (uint64_t)f->train->n);
    int rc = rows < 1 ? tf_set_error("finetune: a batch of %d rows", rows) : fill_batch(f->train, ctx, idx, rows, out);
    free(idx);
    return rc;
}

static void ft_free(tf_loader *l) { free(l); }

static const tf_loader_vt FT_LOADER = {ft_next, ft_free};

tf_loader *tf_finetune_loader_new(const tf_finetune_data *train, const tf_finetune_data *valid, uint64_t seed) {
    if (!train || !valid || train->n < 1 || valid->n < 1 || !train->labelled || !valid->labelled)
        return tf_set_error("finetune: the loader needs labelled training and validation examples"), NULL;
    ft_loader *f = calloc(1, sizeof *f);
    if (!f) return tf_set_error("finetune: out of memory"), NULL;
    *f = (ft_loader){{&FT_LOADER}, train, valid, seed};
    return &f->base;
}
