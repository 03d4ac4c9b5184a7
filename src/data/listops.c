/* ListOps expressions as the Long Range Arena generates them
 * (lra_benchmarks/data/listops.py: generate_tree, to_value), from a seed:
 * every example is drawn again when asked, by rejection until its length
 * fits, so no set is stored. The answer is computed while the tokens are
 * written. tests/ref/listops_eval.py checks the answers independently. */
#include <stdlib.h>
#include <string.h>

#include "../core/core_internal.h"
#include "listops_internal.h"

#define MAX_ARGS_LIMIT 64 /* a node's arguments are held on the stack for the median */
#define MAX_DEPTH_LIMIT 64
#define VALUE_P 0.25 /* LRA: a node below max_depth is an operator when random() <= VALUE_P */
#define ATTEMPTS 1000000

static const char *const NAMES[TF_LISTOPS_SEP + 1] = {"[PAD]", "[CLS]", "0", "1", "2", "3", "4", "5", "6", "7", "8",
                                                      "9", "[MIN", "[MAX", "[MED", "[SM", "]", "[MASK]", "[SEP]"};

const char *tf_listops_token(int32_t id) { return id >= 0 && id <= TF_LISTOPS_SEP ? NAMES[id] : "?"; }

/* The longest expression the depth and arguments allow (saturating). */
static int64_t longest(int depth, const tf_listops_opts *o) {
    if (depth >= o->max_depth) return 1;
    int64_t sub = longest(depth + 1, o), n = 2 + (int64_t)o->max_args * sub;
    return n > INT32_MAX ? INT32_MAX : n;
}

int tf_listops_check(const tf_listops_opts *o) {
    if (o->max_args < 2 || o->max_args > MAX_ARGS_LIMIT)
        return tf_set_error("listops: max_args %d must lie in [2, %d]", o->max_args, MAX_ARGS_LIMIT);
    if (o->max_depth < 1 || o->max_depth > MAX_DEPTH_LIMIT)
        return tf_set_error("listops: max_depth %d must lie in [1, %d]", o->max_depth, MAX_DEPTH_LIMIT);
    if (o->min_len < 0 || o->max_len < o->min_len + 2)
        return tf_set_error("listops: lengths must satisfy 0 <= min_len < length < max_len: min_len %d, max_len %d "
                            "leave no length", o->min_len, o->max_len);
    if (o->sep != 0 && o->sep != 1) return tf_set_error("listops: sep %d must be 0 or 1", o->sep);
    if (o->drop_end != 0 && o->drop_end != 1) return tf_set_error("listops: drop_end %d must be 0 or 1", o->drop_end);
    if (longest(1, o) <= o->min_len)
        return tf_set_error("listops: max_depth %d and max_args %d make expressions of at most %lld tokens, not more "
                            "than min_len %d", o->max_depth, o->max_args, (long long)longest(1, o), o->min_len);
    return 0;
}

typedef struct {
    uint64_t rng;
    int32_t *ids;
    int n, cap; /* cap: max_len - 1, the most tokens kept */
    const tf_listops_opts *o;
} gen;

static double uniform(gen *g) { return (double)(tf_splitmix64(&g->rng) >> 11) * 0x1.0p-53; }
static int below(gen *g, int n) { return (int)(tf_splitmix64(&g->rng) % (uint64_t)n); }

static int cmp_int(const void *a, const void *b) { return *(const int *)a - *(const int *)b; }

/* An operator over its arguments' values: min, max, median (numpy's, then
 * int(): the mean of the middle two, rounded down), sum mod 10. */
static int apply(int op, int *v, int n) {
    int r = v[0];
    switch (op) {
    case TF_LISTOPS_MIN: for (int i = 1; i < n; i++) r = v[i] < r ? v[i] : r; return r;
    case TF_LISTOPS_MAX: for (int i = 1; i < n; i++) r = v[i] > r ? v[i] : r; return r;
    case TF_LISTOPS_MED:
        qsort(v, (size_t)n, sizeof *v, cmp_int);
        return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
    default: for (int i = 1; i < n; i++) r += v[i]; return r % 10;
    }
}

static int emit(gen *g, int32_t id) {
    if (g->n >= g->cap) return -1; /* too long: this attempt is rejected */
    g->ids[g->n++] = id;
    return 0;
}

/* One node at depth d (generate_tree's order of draws): its value, or -1 when too long. */
static int tree(gen *g, int d) {
    double r = d < g->o->max_depth ? uniform(g) : 1.0;
    if (r > VALUE_P) {
        int v = below(g, 10);
        return emit(g, TF_LISTOPS_DIGIT0 + v) ? -1 : v;
    }
    int n = 2 + below(g, g->o->max_args - 1), v[MAX_ARGS_LIMIT];
    int op = TF_LISTOPS_MIN + below(g, 4);  /* LRA draws the operator after the arguments; it writes it first */
    if (emit(g, op)) return -1;
    for (int i = 0; i < n; i++)
        if ((v[i] = tree(g, d + 1)) < 0) return -1;
    return emit(g, TF_LISTOPS_END) ? -1 : apply(op, v, n);
}

/* LRA's inputs: its released pipeline tokenizes the text with tfds's
 * Tokenizer, which keeps alphanumeric tokens only ("[MAX" -> "MAX", "]" and
 * the parentheses of its files dropped). The length filter has counted them. */
static int drop_ends(int32_t *ids, int n) {
    int k = 0;
    for (int i = 0; i < n; i++)
        if (ids[i] != TF_LISTOPS_END) ids[k++] = ids[i];
    return k;
}

int tf_listops_example(const tf_listops_opts *o, int subset, int64_t index, int32_t *ids, int cap, int *len,
                       int *label) {
    if (tf_listops_check(o)) return -1;
    if (cap < o->max_len - 1) return tf_set_error("listops: room for %d tokens, max_len %d needs %d", cap, o->max_len,
                                                  o->max_len - 1);
    gen g = {0, ids, 0, o->max_len - 1, o};
    for (uint64_t a = 0; a < ATTEMPTS; a++) {
        g.rng = tf_key(o->seed, (uint64_t)subset, (uint64_t)index, a), g.n = 0;
        int v = tree(&g, 1);
        if (v >= 0 && g.n > o->min_len) return *len = o->drop_end ? drop_ends(ids, g.n) : g.n, *label = v, 0;
    }
    return tf_set_error("listops: no expression of %d to %d tokens in %d attempts (max_depth %d, max_args %d)",
                        o->min_len + 1, o->max_len - 1, ATTEMPTS, o->max_depth, o->max_args);
}

int tf_listops_batch(tf_ctx *ctx, const tf_listops_opts *o, int subset, const int64_t *idx, int rows, int T,
                     int bucket, tf_tensor **ids, tf_tensor **mask, int32_t *labels) {
    int64_t cap = o->max_len; /* the rows' tokens first, then the batch's length */
    int32_t *tok = malloc((size_t)(rows * cap) * sizeof *tok), *lens = malloc((size_t)rows * sizeof *lens);
    int rc = tok && lens ? 0 : tf_set_error("listops: out of memory"), longest_row = 1;
    for (int r = 0; !rc && r < rows; r++) {
        int len = 0;
        rc = tf_listops_example(o, subset, idx[r], tok + r * cap, (int)cap, &len, &labels[r]);
        lens[r] = len + o->sep; /* the row's tokens after [CLS], [SEP] included */
        longest_row = lens[r] + 1 > longest_row ? lens[r] + 1 : longest_row;
    }
    int64_t Tb = bucket > 0 ? ((int64_t)longest_row + bucket - 1) / bucket * bucket : T;
    Tb = Tb < T ? Tb : T;
    if (!rc && longest_row > Tb) /* the callers check T against max_len; this guards the copies below */
        rc = tf_set_error("listops: a row of %d positions does not fit batches of %lld", longest_row, (long long)Tb);
    if (!rc && (!(*ids = tf_tensor_new(ctx, TF_DTYPE_I32, 2, (int64_t[]){rows, Tb}, 0)) ||  // (rows,Tb)
                !(*mask = tf_tensor_new(ctx, TF_DTYPE_I32, 2, (int64_t[]){rows, Tb}, 0))))  // (rows,Tb)
        rc = -1;
    for (int r = 0; !rc && r < rows; r++) { /* [CLS], the tokens, [SEP], padding; the mask covers all but padding */
        int32_t *x = tf_i32(*ids) + r * Tb, *m = tf_i32(*mask) + r * Tb;
        x[0] = TF_LISTOPS_CLS;
        memcpy(x + 1, tok + r * cap, (size_t)(lens[r] - o->sep) * sizeof *x);
        if (o->sep) x[lens[r]] = TF_LISTOPS_SEP;
        for (int64_t t = lens[r] + 1; t < Tb; t++) x[t] = TF_LISTOPS_PAD;
        for (int64_t t = 0; t < Tb; t++) m[t] = t <= lens[r];
    }
    free(tok), free(lens);
    return rc;
}

/* ---------------------------------------------------------------- the loader */

typedef struct {
    tf_loader base;
    tf_listops_opts o;
    int64_t n_train, n_valid;
    int T, bucket;
    int32_t *by_length; /* with bucket: the training examples sorted by length (n_train) */
} lo_loader;

/* A training batch's rows: random examples, or with bucket a random window
 * of `rows` neighbours in length order (rows of about one length: little
 * padding). */
static void train_rows(const lo_loader *L, uint64_t key, int rows, int64_t *idx) {
    if (!L->by_length) {
        for (int r = 0; r < rows; r++) idx[r] = (int64_t)(tf_key(L->o.seed, key, (uint64_t)r, 7) % (uint64_t)L->n_train);
        return;
    }
    int64_t span = L->n_train - rows + 1 > 1 ? L->n_train - rows + 1 : 1;
    int64_t start = (int64_t)(tf_key(L->o.seed, key, 0, 11) % (uint64_t)span);
    for (int r = 0; r < rows; r++) idx[r] = L->by_length[(start + r) % L->n_train];
}

static int lo_next(tf_loader *l, tf_ctx *ctx, tf_subset split, uint64_t key, int rows, tf_batch *out) {
    lo_loader *L = (lo_loader *)l;
    int64_t *idx = malloc((size_t)rows * sizeof *idx);
    tf_tensor *y = tf_tensor_new(ctx, TF_DTYPE_I32, 1, (int64_t[]){rows}, 0);  // (rows)
    if (!idx || !y) return free(idx), tf_set_error("listops: out of memory");
    if (split == TF_SUBSET_VAL)
        for (int r = 0; r < rows; r++) idx[r] = (int64_t)((key * (uint64_t)rows + (uint64_t)r) % (uint64_t)L->n_valid);
    else
        train_rows(L, key, rows, idx);
    tf_tensor *x, *mask;
    int rc = tf_listops_batch(ctx, &L->o, split == TF_SUBSET_VAL, idx, rows, L->T, L->bucket, &x, &mask, tf_i32(y));
    free(idx);
    return rc || tf_batch_set(out, "input_ids", x) || tf_batch_set(out, "attention_mask", mask) ||
           tf_batch_set(out, "labels", y);
}

static void lo_free(tf_loader *l) {
    if (l) free(((lo_loader *)l)->by_length);
    free(l);
}

static const tf_loader_vt LO_LOADER = {lo_next, lo_free};

typedef struct {
    int32_t len, index;
} len_index;

static int by_len(const void *a, const void *b) {
    const len_index *x = a, *y = b;
    return x->len != y->len ? (x->len > y->len) - (x->len < y->len) : (x->index > y->index) - (x->index < y->index);
}

/* L->by_length: the training examples' indices in order of length (then index). */
static int sort_by_length(lo_loader *L) {
    len_index *li = malloc((size_t)L->n_train * sizeof *li);
    int32_t *tmp = malloc((size_t)L->o.max_len * sizeof *tmp);
    L->by_length = malloc((size_t)L->n_train * sizeof *L->by_length);
    int rc = li && tmp && L->by_length ? 0 : tf_set_error("listops: out of memory");
    for (int64_t i = 0; !rc && i < L->n_train; i++) {
        int len, label;
        rc = tf_listops_example(&L->o, 0, i, tmp, L->o.max_len, &len, &label);
        li[i] = (len_index){len, (int32_t)i};
    }
    if (!rc) qsort(li, (size_t)L->n_train, sizeof *li, by_len);
    for (int64_t i = 0; !rc && i < L->n_train; i++) L->by_length[i] = li[i].index;
    free(li), free(tmp);
    return rc;
}

tf_loader *tf_listops_loader_new(const tf_listops_opts *o, int64_t n_train, int64_t n_valid, int T, int bucket) {
    if (tf_listops_check(o)) return NULL;
    if (n_train < 1 || n_valid < 1)
        return tf_set_error("listops: %lld training and %lld validation examples: both need at least 1",
                            (long long)n_train, (long long)n_valid), NULL;
    if (n_train > INT32_MAX) return tf_set_error("listops: %lld training examples: at most %d", (long long)n_train,
                                                 INT32_MAX), NULL;
    if (T < o->max_len + o->sep)
        return tf_set_error("listops: sequences of %d positions cannot hold [CLS]%s and up to %d tokens (max_len %d)",
                            T, o->sep ? ", [SEP]" : "", o->max_len - 1, o->max_len), NULL;
    if (bucket < 0) return tf_set_error("listops: bucket %d: 0 (every batch %d long) or a multiple", bucket, T), NULL;
    lo_loader *L = calloc(1, sizeof *L);
    if (!L) return tf_set_error("listops: out of memory"), NULL;
    *L = (lo_loader){{&LO_LOADER}, *o, n_train, n_valid, T, bucket, NULL};
    if (bucket > 0 && sort_by_length(L)) return lo_free(&L->base), NULL;
    return &L->base;
}
