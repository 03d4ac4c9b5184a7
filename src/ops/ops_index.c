/* Ops that move or reduce elements: embedding lookup, concat, split, sum/mean, max. */
#include <math.h>
#include <string.h>

#include "../core/core_internal.h"
#include "tformer/ops.h"

/* ---------------------------------------------------------------- embedding */

void tf_op_embedding_forward(tf_node *n) {
    const tf_tensor *T = n->in[0];
    const int32_t *ids = tf_i32(n->in[1]);
    int64_t C = T->shape[1], R = tf_numel(n->in[1]);
    float *out = tf_f32(n->out);  // out: (ids..., C)
    for (int64_t r = 0; r < R; r++) memcpy(out + r * C, tf_f32(T) + ids[r] * C, (size_t)C * sizeof *out);
}

/* Rows looked up by the id padding_idx (-1: none) take no gradient:
 * PyTorch's nn.Embedding(padding_idx). */
typedef struct {
    int32_t padding_idx;
} tf_embedding_params;

void tf_op_embedding_backward(tf_node *n) {
    tf_tensor *T = n->in[0];
    if (!T->grad) return;
    const tf_embedding_params *p = n->params;
    const int32_t *ids = tf_i32(n->in[1]);
    const float *g = n->out->grad;
    int64_t C = T->shape[1], R = tf_numel(n->in[1]);
    for (int64_t r = 0; r < R; r++)
        if (ids[r] != p->padding_idx)
            for (int64_t j = 0; j < C; j++) T->grad[ids[r] * C + j] += g[r * C + j];
}

tf_tensor *tf_embedding_padded(tf_ctx *ctx, tf_tensor *table, tf_tensor *ids, int32_t padding_idx) {
    if (!table || !ids) return NULL;
    char a[64];
    if (table->dtype != TF_DTYPE_F32 || table->ndim != 2)
        return tf_set_error("embedding: table %s must be F32 (V,C)", tf_shape_str(table, a, sizeof a)), NULL;
    if (ids->dtype != TF_DTYPE_I32 || ids->ndim + 1 > TF_MAX_DIMS)
        return tf_set_error("embedding: ids must be I32 with at most %d dims", TF_MAX_DIMS - 1), NULL;
    tf_tensor *in[2] = {tf_contiguous(ctx, table), tf_contiguous(ctx, ids)};
    tf_embedding_params *p = tf_ctx_alloc(ctx, sizeof *p);
    if (!in[0] || !in[1] || !p) return NULL;
    p->padding_idx = padding_idx;
    int64_t V = table->shape[0];
    for (int64_t i = 0, R = tf_numel(ids); i < R; i++) {
        int32_t id = tf_i32(in[1])[i];
        if (id < 0 || id >= V)
            return tf_set_error("embedding: id %d at position %lld outside [0,%lld)", id,
                                (long long)i, (long long)V), NULL;
    }
    int64_t shape[TF_MAX_DIMS];
    memcpy(shape, ids->shape, (size_t)ids->ndim * sizeof *shape);
    shape[ids->ndim] = table->shape[1];
    return tf_node_run(ctx, tf_node_new(ctx, TF_OP_EMBEDDING, 2, in, TF_DTYPE_F32, ids->ndim + 1, shape, p));
}

tf_tensor *tf_embedding(tf_ctx *ctx, tf_tensor *table, tf_tensor *ids) {
    return tf_embedding_padded(ctx, table, ids, -1);
}

/* ---------------------------------------------------------------- concat */

typedef struct {
    int64_t outer; /* product of the dims before the concat dim */
} tf_concat_params;

/* Walk every input block: out is (outer, row), input i fills columns [col, col+w). */
static void concat_walk(tf_node *n, int backward) {
    const tf_concat_params *p = n->params;
    if (p->outer == 0) return;
    int64_t row = tf_numel(n->out) / p->outer, col = 0;
    for (int i = 0; i < n->n_in; i++) {
        tf_tensor *x = n->in[i];
        int64_t w = tf_numel(x) / p->outer;
        for (int64_t o = 0; o < p->outer; o++) {
            if (!backward) {
                memcpy(tf_f32(n->out) + o * row + col, tf_f32(x) + o * w, (size_t)w * sizeof(float));
            } else if (x->grad) {
                const float *g = n->out->grad + o * row + col;
                for (int64_t j = 0; j < w; j++) x->grad[o * w + j] += g[j];
            }
        }
        col += w;
    }
}

void tf_op_concat_forward(tf_node *n) { concat_walk(n, 0); }
void tf_op_concat_backward(tf_node *n) { concat_walk(n, 1); }

tf_tensor *tf_concat(tf_ctx *ctx, int n, tf_tensor *const *xs, int dim) {
    if (n < 1) return tf_set_error("concat: no inputs"), NULL;
    for (int i = 0; i < n; i++)
        if (!xs[i]) return NULL;
    int d = tf_dim_index(xs[0], dim, "concat");
    if (d < 0) return NULL;
    tf_tensor **in = tf_ctx_alloc(ctx, (size_t)n * sizeof *in);
    tf_concat_params *p = tf_ctx_alloc(ctx, sizeof *p);
    if (!in || !p) return NULL;
    int64_t shape[TF_MAX_DIMS];
    memcpy(shape, xs[0]->shape, sizeof shape);
    shape[d] = 0;
    for (int i = 0; i < n; i++) {
        const tf_tensor *x = xs[i];
        int ok = x->dtype == TF_DTYPE_F32 && x->ndim == xs[0]->ndim;
        for (int k = 0; ok && k < x->ndim; k++) ok = k == d || x->shape[k] == xs[0]->shape[k];
        if (!ok) {
            char a[64], b[64];
            return tf_set_error("concat: input %d %s does not match input 0 %s along dims other than %d",
                                i, tf_shape_str(x, a, sizeof a), tf_shape_str(xs[0], b, sizeof b), d), NULL;
        }
        shape[d] += x->shape[d];
        if (!(in[i] = tf_contiguous(ctx, xs[i]))) return NULL;
    }
    p->outer = 1;
    for (int k = 0; k < d; k++) p->outer *= shape[k];
    return tf_node_run(ctx, tf_node_new(ctx, TF_OP_CONCAT, n, in, TF_DTYPE_F32, xs[0]->ndim, shape, p));
}

int tf_split(tf_ctx *ctx, tf_tensor *x, int dim, int n, const int64_t *sizes, tf_tensor **outs) {
    if (!x) return -1;
    int d = tf_dim_index(x, dim, "split");
    if (d < 0) return -1;
    int64_t total = 0;
    for (int i = 0; i < n; i++) total += sizes[i];
    if (total != x->shape[d])
        return tf_set_error("split: sizes add up to %lld, dim %d has %lld", (long long)total, d,
                            (long long)x->shape[d]);
    int64_t start = 0;
    for (int i = 0; i < n; i++) {
        /* A narrow view made contiguous: the copy op carries the gradient back;
         * a piece that is already contiguous stays a view sharing x's gradient. */
        tf_tensor *v = tf_narrow(ctx, x, d, start, sizes[i]);
        if (!v || !(outs[i] = tf_contiguous(ctx, v))) return -1;
        start += sizes[i];
    }
    return 0;
}

/* ---------------------------------------------------------------- sum / mean */

typedef struct {
    int64_t outer, n, inner; /* reduce x viewed as (outer, n, inner) over n */
    float scale;             /* 1 for sum, 1/n for mean */
} tf_sum_params;

void tf_op_sum_forward(tf_node *n) {
    const tf_sum_params *p = n->params;
    const float *x = tf_f32(n->in[0]);
    float *y = tf_f32(n->out);  // y: (outer, inner)
    for (int64_t o = 0; o < p->outer; o++)
        for (int64_t i = 0; i < p->inner; i++) {
            double s = 0.0;
            for (int64_t k = 0; k < p->n; k++) s += x[(o * p->n + k) * p->inner + i];
            y[o * p->inner + i] = (float)(s * p->scale);
        }
}

void tf_op_sum_backward(tf_node *n) {
    const tf_sum_params *p = n->params;
    float *gx = n->in[0]->grad;
    const float *g = n->out->grad;
    if (!gx) return;
    for (int64_t o = 0; o < p->outer; o++)
        for (int64_t k = 0; k < p->n; k++)
            for (int64_t i = 0; i < p->inner; i++)
                gx[(o * p->n + k) * p->inner + i] += g[o * p->inner + i] * p->scale;
}

/* max over n of x viewed as (outer, n, inner); NaN when one of them is. */
void tf_op_max_forward(tf_node *n) {
    const tf_sum_params *p = n->params;
    const float *x = tf_f32(n->in[0]);
    float *y = tf_f32(n->out);  // y: (outer, inner)
    for (int64_t o = 0; o < p->outer; o++)
        for (int64_t i = 0; i < p->inner; i++) {
            float m = -INFINITY;
            for (int64_t k = 0; k < p->n; k++) {
                float v = x[(o * p->n + k) * p->inner + i];
                if (v > m || v != v) m = v;
                if (m != m) break;
            }
            y[o * p->inner + i] = m;
        }
}

/* The gradient of each maximum shared evenly by the elements equal to it. */
void tf_op_max_backward(tf_node *n) {
    const tf_sum_params *p = n->params;
    const float *x = tf_f32(n->in[0]), *y = tf_f32(n->out), *g = n->out->grad;
    float *gx = n->in[0]->grad;
    if (!gx) return;
    for (int64_t o = 0; o < p->outer; o++)
        for (int64_t i = 0; i < p->inner; i++) {
            float m = y[o * p->inner + i];
            int64_t ties = 0;
            for (int64_t k = 0; k < p->n; k++) ties += x[(o * p->n + k) * p->inner + i] == m;
            for (int64_t k = 0; ties && k < p->n; k++)
                if (x[(o * p->n + k) * p->inner + i] == m)
                    gx[(o * p->n + k) * p->inner + i] += g[o * p->inner + i] / (float)ties;
        }
}

/* kind: 0 sum, 1 mean, 2 max. */
static tf_tensor *reduce(tf_ctx *ctx, tf_tensor *x, int dim, int keepdim, int kind) {
    static const char *const NAMES[3] = {"sum", "mean", "max"};
    if (!x) return NULL;
    if (x->dtype != TF_DTYPE_F32) return tf_set_error("%s: input must be F32", NAMES[kind]), NULL;
    if (kind == 2 && tf_numel(x) == 0) return tf_set_error("max: the input has no elements"), NULL;
    tf_sum_params *p = tf_ctx_alloc(ctx, sizeof *p);
    if (!p) return NULL;
    int64_t shape[TF_MAX_DIMS];
    int ndim;
    if (dim == TF_DIM_ALL) {
        p->outer = p->inner = 1;
        p->n = tf_numel(x);
        ndim = keepdim ? x->ndim : 0;
        for (int k = 0; k < ndim; k++) shape[k] = 1;
    } else {
        int d = tf_dim_index(x, dim, NAMES[kind]);
        if (d < 0) return NULL;
        if (kind == 2 && x->shape[d] == 0) return tf_set_error("max: dim %d has no elements", d), NULL;
        p->outer = p->inner = 1;
        for (int k = 0; k < d; k++) p->outer *= x->shape[k];
        for (int k = d + 1; k < x->ndim; k++) p->inner *= x->shape[k];
        p->n = x->shape[d];
        ndim = 0;
        for (int k = 0; k < x->ndim; k++)
            if (k != d) shape[ndim++] = x->shape[k];
            else if (keepdim) shape[ndim++] = 1;
    }
    p->scale = kind == 1 ? (p->n ? 1.0f / (float)p->n : 0.0f) : 1.0f;
    x = tf_contiguous(ctx, x);
    return tf_node_run(ctx, tf_node_new(ctx, kind == 2 ? TF_OP_MAX : TF_OP_SUM, 1, &x, TF_DTYPE_F32, ndim, shape, p));
}

tf_tensor *tf_sum(tf_ctx *ctx, tf_tensor *x, int dim, int keepdim) { return reduce(ctx, x, dim, keepdim, 0); }
tf_tensor *tf_mean(tf_ctx *ctx, tf_tensor *x, int dim, int keepdim) { return reduce(ctx, x, dim, keepdim, 1); }
tf_tensor *tf_max(tf_ctx *ctx, tf_tensor *x, int dim, int keepdim) { return reduce(ctx, x, dim, keepdim, 2); }
