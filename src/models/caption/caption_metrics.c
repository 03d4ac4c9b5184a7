/* Caption metrics (include/tformer/caption.h): corpus BLEU-4 against several references (the
 * tformer bleu code, no tokenisation, no smoothing) and CIDEr-D (Vedantam et al. 2015) as the
 * COCO caption evaluation code computes it (pycocoevalcap's Cider):
 *
 *   g_k(s)   = the counts of s's n-grams of order k (1..4), words split at whitespace
 *   df(w)    = the images whose references hold n-gram w (at least once)
 *   v(s)_w   = count_w(s) (log(images) - log(max(1, df(w))))       tf-idf, per order
 *   sim(c,r) = sum_w min(v(c)_w, v(r)_w) v(r)_w / (|v(c)| |v(r)|)   per order (0 when a norm is 0),
 *              times exp(-(l(c) - l(r))^2 / (2 6^2)), l = the sentence's bigram count (that code's
 *              length: one less than its words)
 *   CIDEr-D(image) = 10 mean_k (sum_r sim_k(c, r)) / refs;  the corpus: the mean over images. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../../util/util.h"
#include "tformer/caption.h"
#include "tformer/metrics.h"

enum { ORDER = 4 };

typedef struct {
    int32_t id;  /* the n-gram */
    int order;   /* 0..3 */
    double tf;   /* its count, then its tf-idf weight */
} gram;

typedef struct {
    gram *g;
    int n, cap;
    double norm[ORDER];
    int length; /* bigrams */
} sentence;

typedef struct {
    tf_strmap ids;          /* n-gram text ("w1 w2") -> id */
    int n_ids, cap_ids;
    int32_t *stamp, *slot;  /* per id: the last sentence (or image) that saw it, and its entry there */
    double *df, *ref;       /* per id: document frequency; a reference's weights while it is compared */
} corpus;

static int grow_ids(corpus *c) {
    int cap = c->cap_ids ? 2 * c->cap_ids : 1024;
    int32_t *st = realloc(c->stamp, (size_t)cap * sizeof *st), *sl = st ? realloc(c->slot, (size_t)cap * sizeof *sl) : NULL;
    if (st) c->stamp = st;
    if (sl) c->slot = sl;
    double *df = sl ? realloc(c->df, (size_t)cap * sizeof *df) : NULL, *ref = df ? realloc(c->ref, (size_t)cap * sizeof *ref) : NULL;
    if (df) c->df = df;
    if (!ref) return tf_set_error("cider: out of memory");
    c->ref = ref;
    for (int i = c->cap_ids; i < cap; i++) c->stamp[i] = -1, c->df[i] = 0, c->ref[i] = 0;
    c->cap_ids = cap;
    return 0;
}

/* The id of the n-gram key (len bytes), made when new. */
static int32_t gram_id(corpus *c, const char *key, size_t len) {
    int32_t id = tf_strmap_get(&c->ids, key, len);
    if (id >= 0) return id;
    if (c->n_ids == c->cap_ids && grow_ids(c)) return -1;
    return tf_strmap_put(&c->ids, key, len, c->n_ids) ? -1 : c->n_ids++;
}

static int is_space(unsigned char b) { return b < 0x80 && tf_py_isspace(b); }

/* Sentence text's n-gram counts into s; `who` stamps its entries. */
static int cook(corpus *c, const char *text, int who, sentence *s) {
    const char *w[256];
    size_t wl[256];
    int n = 0;
    for (const char *p = text; *p;) {
        while (*p && is_space((unsigned char)*p)) p++;
        const char *q = p;
        while (*q && !is_space((unsigned char)*q)) q++;
        if (q > p && n == 256) return tf_set_error("cider: a caption of more than 256 words");
        if (q > p) w[n] = p, wl[n++] = (size_t)(q - p);
        p = q;
    }
    memset(s, 0, sizeof *s);
    char key[4096];
    for (int k = 1; k <= ORDER; k++)
        for (int i = 0; i + k <= n; i++) {
            size_t len = 0;
            for (int j = i; j < i + k; j++) {
                if (len + wl[j] + 1 >= sizeof key) return tf_set_error("cider: an n-gram longer than %zu bytes", sizeof key);
                if (j > i) key[len++] = ' ';
                memcpy(key + len, w[j], wl[j]), len += wl[j];
            }
            int32_t id = gram_id(c, key, len);
            if (id < 0) return -1;
            if (k == 2) s->length++;
            if (c->stamp[id] == who) {
                s->g[c->slot[id]].tf += 1;
                continue;
            }
            if (s->n == s->cap) {
                int cap = s->cap ? 2 * s->cap : 32;
                gram *g = realloc(s->g, (size_t)cap * sizeof *g);
                if (!g) return tf_set_error("cider: out of memory");
                s->g = g, s->cap = cap;
            }
            c->stamp[id] = who, c->slot[id] = s->n;
            s->g[s->n++] = (gram){id, k - 1, 1.0};
        }
    return 0;
}

/* Counts to tf-idf weights and their norms per order. */
static void weigh(const corpus *c, double ref_len, sentence *s) {
    double sq[ORDER] = {0};
    for (int i = 0; i < s->n; i++) {
        gram *g = &s->g[i];
        g->tf *= ref_len - log(fmax(1.0, c->df[g->id]));
        sq[g->order] += g->tf * g->tf;
    }
    for (int k = 0; k < ORDER; k++) s->norm[k] = sqrt(sq[k]);
}

/* sim(hyp, ref) per order, added into val. */
static void similarity(corpus *c, const sentence *h, const sentence *r, double *val) {
    double v[ORDER] = {0}, delta = (double)(h->length - r->length);
    for (int i = 0; i < r->n; i++) c->ref[r->g[i].id] = r->g[i].tf;
    for (int i = 0; i < h->n; i++) {
        double a = h->g[i].tf, b = c->ref[h->g[i].id];
        v[h->g[i].order] += fmin(a, b) * b;
    }
    for (int i = 0; i < r->n; i++) c->ref[r->g[i].id] = 0;
    for (int k = 0; k < ORDER; k++) {
        if (h->norm[k] != 0 && r->norm[k] != 0) v[k] /= h->norm[k] * r->norm[k];
        val[k] += v[k] * exp(-(delta * delta) / (2.0 * 6.0 * 6.0));
    }
}

static void corpus_free(corpus *c) {
    tf_strmap_free(&c->ids);
    free(c->stamp), free(c->slot), free(c->df), free(c->ref);
}

/* Every sentence cooked (image i's hypothesis at s[off[i]], its references after it) and the
 * document frequencies counted. */
static int cook_all(corpus *c, const char *const *hyps, const char *const *const *refs, const int *n_refs, int n,
                    sentence *s, const int *off) {
    int who = 0;
    for (int i = 0; i < n; i++) {
        if (cook(c, hyps[i] ? hyps[i] : "", who++, &s[off[i]])) return -1;
        for (int j = 0; j < n_refs[i]; j++)
            if (cook(c, refs[i][j] ? refs[i][j] : "", who++, &s[off[i] + 1 + j])) return -1;
    }
    for (int id = 0; id < c->n_ids; id++) c->stamp[id] = -1;
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n_refs[i]; j++) {
            const sentence *r = &s[off[i] + 1 + j];
            for (int k = 0; k < r->n; k++)
                if (c->stamp[r->g[k].id] != i) c->stamp[r->g[k].id] = i, c->df[r->g[k].id] += 1;
        }
    return 0;
}

int tf_caption_cider_d(const char *const *hyps, const char *const *const *refs, const int *n_refs, int n,
                       double *scores, double *mean) {
    if (n < 1) return tf_set_error("cider: no images");
    int total = 0;
    for (int i = 0; i < n; i++) {
        if (n_refs[i] < 1) return tf_set_error("cider: image %d has no reference", i);
        total += 1 + n_refs[i];
    }
    corpus c = {0};
    sentence *s = calloc((size_t)total, sizeof *s);
    int *off = malloc((size_t)n * sizeof *off), rc = 0;
    if (!s || !off || tf_strmap_init(&c.ids, 1024)) rc = tf_set_error("cider: out of memory");
    for (int i = 0, k = 0; off && i < n; k += 1 + n_refs[i], i++) off[i] = k;
    if (!rc) rc = cook_all(&c, hyps, refs, n_refs, n, s, off);
    double ref_len = log((double)n), sum = 0;
    for (int i = 0; !rc && i < total; i++) weigh(&c, ref_len, &s[i]);
    for (int i = 0; !rc && i < n; i++) {
        double val[ORDER] = {0}, one = 0;
        for (int j = 0; j < n_refs[i]; j++) similarity(&c, &s[off[i]], &s[off[i] + 1 + j], val);
        for (int k = 0; k < ORDER; k++) one += val[k];
        one = one / ORDER / n_refs[i] * 10.0;
        if (scores) scores[i] = one;
        sum += one;
    }
    if (!rc) *mean = sum / n;
    for (int i = 0; s && i < total; i++) free(s[i].g);
    free(s), free(off), corpus_free(&c);
    return rc ? -1 : 0;
}

int tf_caption_bleu4(const char *const *hyps, const char *const *const *refs, const int *n_refs, int n, double *bleu) {
    tf_bleu_opts o = {TF_BLEU_TOK_NONE, TF_BLEU_SMOOTH_NONE, 0, 0};
    tf_bleu_stats st = {0};
    size_t lens[64];
    for (int i = 0; i < n; i++) {
        if (n_refs[i] < 1 || n_refs[i] > 64) return tf_set_error("bleu: image %d has %d references (1 to 64)", i, n_refs[i]);
        for (int j = 0; j < n_refs[i]; j++) lens[j] = strlen(refs[i][j]);
        if (tf_bleu_add(&st, &o, hyps[i], strlen(hyps[i]), refs[i], lens, n_refs[i])) return -1;
    }
    tf_bleu_score r;
    tf_bleu_compute(&st, &o, &r);
    *bleu = r.score / 100.0;
    return 0;
}
