/* Tensors, views, the context and its tape. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core_internal.h"

#ifdef _OPENMP
#include <omp.h>
#endif

int tf_threads_free(void) {
#ifdef _OPENMP
    return omp_in_parallel() ? 1 : omp_get_max_threads();
#else
    return 1;
#endif
}

size_t tf_dtype_size(tf_dtype dt) { return dt == TF_DTYPE_U8 ? 1 : 4; }

int64_t tf_numel(const tf_tensor *t) {
    int64_t n = 1;
    for (int i = 0; i < t->ndim; i++) n *= t->shape[i];
    return n;
}

void tf_contig_strides(int ndim, const int64_t *shape, int64_t *stride) {
    int64_t s = 1;
    for (int i = ndim - 1; i >= 0; i--) {
        stride[i] = s;
        s *= shape[i];
    }
}

int tf_is_contiguous(const tf_tensor *t) {
    int64_t s = 1;
    for (int i = t->ndim - 1; i >= 0; i--) {
        if (t->shape[i] != 1 && t->stride[i] != s) return 0;
        s *= t->shape[i];
    }
    return 1;
}

const char *tf_shape_str(const tf_tensor *t, char *buf, size_t n) {
    size_t off = (size_t)snprintf(buf, n, "(");
    for (int i = 0; i < t->ndim && off < n; i++)
        off += (size_t)snprintf(buf + off, n - off, i ? ",%lld" : "%lld", (long long)t->shape[i]);
    if (off < n) snprintf(buf + off, n - off, ")");
    return buf;
}

/* A tensor whose data is zero-filled when zero_data (its gradient always is). */
static tf_tensor *tensor_alloc(tf_arena *a, tf_dtype dt, int ndim, const int64_t *shape, int requires_grad,
                               int zero_data) {
    if (ndim < 0 || ndim > TF_MAX_DIMS) {
        tf_set_error("tensor: %d dimensions (at most %d)", ndim, TF_MAX_DIMS);
        return NULL;
    }
    size_t n = 1;
    for (int i = 0; i < ndim; i++) {
        if (shape[i] < 0 || !tf_mul_size(n, (size_t)shape[i], &n)) {
            tf_set_error("tensor: invalid or overflowing shape (dim %d = %lld)", i,
                         (long long)shape[i]);
            return NULL;
        }
    }
    size_t bytes;
    if (!tf_mul_size(n, tf_dtype_size(dt), &bytes)) {
        tf_set_error("tensor: size overflows");
        return NULL;
    }
    tf_tensor *t = tf_arena_alloc(a, sizeof *t);
    if (!t) return NULL;
    t->dtype = dt;
    t->ndim = ndim;
    if (ndim) memcpy(t->shape, shape, (size_t)ndim * sizeof *shape);
    tf_contig_strides(ndim, shape, t->stride);
    if (!(t->data = zero_data ? tf_arena_alloc(a, bytes) : tf_arena_alloc_uninit(a, bytes))) return NULL;
    if (requires_grad && dt == TF_DTYPE_F32 && !(t->grad = tf_arena_alloc(a, bytes))) return NULL;
    return t;
}

tf_tensor *tf_tensor_alloc(tf_arena *a, tf_dtype dt, int ndim, const int64_t *shape,
                           int requires_grad) {
    return tensor_alloc(a, dt, ndim, shape, requires_grad, 1);
}

void tf_tensor_fill_normal(tf_tensor *t, uint64_t seed, float std) {
    float *x = tf_f32(t);
    int64_t n = tf_numel(t);
    for (int64_t i = 0; i < n; i += 2) {
        float u1 = tf_hash_uniform(seed, (uint64_t)i), u2 = tf_hash_uniform(seed, (uint64_t)i + 1);
        double r = sqrt(-2.0 * log(1.0 - u1)), th = 6.283185307179586 * u2;
        x[i] = (float)(r * cos(th)) * std;
        if (i + 1 < n) x[i + 1] = (float)(r * sin(th)) * std;
    }
}

void tf_tensor_fill_uniform(tf_tensor *t, uint64_t seed, float lo, float hi) {
    float *x = tf_f32(t);
    int64_t n = tf_numel(t);
    for (int64_t i = 0; i < n; i++) x[i] = lo + (hi - lo) * tf_hash_uniform(seed, (uint64_t)i);
}

void tf_tensor_zero_grad(tf_tensor *t) {
    if (t && t->grad) memset(t->grad, 0, (size_t)tf_numel(t) * sizeof(float));
}

int tf_dim_index(const tf_tensor *x, int dim, const char *op) {
    int d = dim < 0 ? dim + x->ndim : dim;
    if (d < 0 || d >= x->ndim) {
        tf_set_error("%s: dim %d out of range for a %d-d tensor", op, dim, x->ndim);
        return -1;
    }
    return d;
}

int tf_bcast_strides(const tf_tensor *t, int ndim, const int64_t *shape, int64_t *stride) {
    if (t->ndim > ndim) return -1;
    int off = ndim - t->ndim;
    for (int i = 0; i < ndim; i++) {
        if (i < off) {
            stride[i] = 0;
            continue;
        }
        int64_t s = t->shape[i - off];
        if (s == shape[i]) stride[i] = s == 1 ? 0 : t->stride[i - off];
        else if (s == 1) stride[i] = 0;
        else return -1;
    }
    return 0;
}

int tf_index_next(int64_t *idx, int ndim, const int64_t *shape) {
    for (int d = ndim - 2; d >= 0; d--) {
        if (++idx[d] < shape[d]) return 1;
        idx[d] = 0;
    }
    return 0;
}

/* ---------------------------------------------------------------- views */

tf_tensor *tf_view_new(tf_ctx *ctx, const tf_tensor *x) {
    tf_tensor *v = tf_ctx_alloc(ctx, sizeof *v);
    if (v) *v = *x;
    return v;
}

tf_tensor *tf_reshape(tf_ctx *ctx, tf_tensor *x, int ndim, const int64_t *shape) {
    if (!x) return NULL;
    if (ndim < 0 || ndim > TF_MAX_DIMS) {
        tf_set_error("reshape: %d dimensions", ndim);
        return NULL;
    }
    int64_t known = 1, n = tf_numel(x);
    int infer = -1;
    for (int i = 0; i < ndim; i++) {
        if (shape[i] == -1 && infer < 0) infer = i;
        else if (shape[i] < 0) return tf_set_error("reshape: invalid size %lld", (long long)shape[i]), NULL;
        else known *= shape[i];
    }
    int64_t sh[TF_MAX_DIMS];
    memcpy(sh, shape, (size_t)ndim * sizeof *sh);
    if (infer >= 0) sh[infer] = known ? n / known : 0;
    int64_t total = 1;
    for (int i = 0; i < ndim; i++) total *= sh[i];
    if (total != n) {
        char b[64];
        tf_set_error("reshape: cannot view %s (%lld elements) with %lld elements",
                     tf_shape_str(x, b, sizeof b), (long long)n, (long long)total);
        return NULL;
    }
    x = tf_contiguous(ctx, x);
    if (!x) return NULL;
    tf_tensor *v = tf_view_new(ctx, x);
    if (!v) return NULL;
    v->ndim = ndim;
    memcpy(v->shape, sh, (size_t)ndim * sizeof *sh);
    tf_contig_strides(ndim, sh, v->stride);
    return v;
}

tf_tensor *tf_transpose(tf_ctx *ctx, tf_tensor *x, int d0, int d1) {
    if (!x) return NULL;
    int a = tf_dim_index(x, d0, "transpose"), b = tf_dim_index(x, d1, "transpose");
    if (a < 0 || b < 0) return NULL;
    tf_tensor *v = tf_view_new(ctx, x);
    if (!v) return NULL;
    int64_t s = v->shape[a], st = v->stride[a];
    v->shape[a] = v->shape[b];
    v->stride[a] = v->stride[b];
    v->shape[b] = s;
    v->stride[b] = st;
    return v;
}

tf_tensor *tf_narrow(tf_ctx *ctx, tf_tensor *x, int dim, int64_t start, int64_t len) {
    if (!x) return NULL;
    int d = tf_dim_index(x, dim, "narrow");
    if (d < 0) return NULL;
    if (start < 0 || len < 0 || start > x->shape[d] - len) {
        tf_set_error("narrow: [%lld, %lld) outside dim %d of size %lld", (long long)start,
                     (long long)(start + len), d, (long long)x->shape[d]);
        return NULL;
    }
    tf_tensor *v = tf_view_new(ctx, x);
    if (!v) return NULL;
    int64_t off = start * x->stride[d];
    v->data = (char *)x->data + off * (int64_t)tf_dtype_size(x->dtype);
    if (x->grad) v->grad = x->grad + off;
    v->shape[d] = len;
    return v;
}

tf_tensor *tf_unsqueeze(tf_ctx *ctx, tf_tensor *x, int dim) {
    if (!x) return NULL;
    if (x->ndim >= TF_MAX_DIMS || dim < 0 || dim > x->ndim) {
        tf_set_error("unsqueeze: dim %d invalid for a %d-d tensor", dim, x->ndim);
        return NULL;
    }
    tf_tensor *v = tf_view_new(ctx, x);
    if (!v) return NULL;
    for (int i = x->ndim; i > dim; i--) {
        v->shape[i] = x->shape[i - 1];
        v->stride[i] = x->stride[i - 1];
    }
    v->shape[dim] = 1;
    v->stride[dim] = dim < x->ndim ? x->shape[dim] * x->stride[dim] : 1;
    v->ndim = x->ndim + 1;
    return v;
}

/* ---------------------------------------------------------------- context */

tf_ctx *tf_ctx_new(uint64_t seed) {
    tf_ctx *c = calloc(1, sizeof *c);
    if (!c) return NULL;
    if (!(c->arena = tf_arena_new(0))) {
        free(c);
        return NULL;
    }
    c->grad_enabled = 1;
    c->rng = seed;
    return c;
}

void tf_ctx_free(tf_ctx *ctx) {
    if (!ctx) return;
    tf_arena_free(ctx->arena);
    free(ctx);
}

void tf_ctx_reset(tf_ctx *ctx) {
    tf_arena_reset(ctx->arena);
    ctx->tape = NULL;
}

void tf_ctx_set_grad(tf_ctx *ctx, int enabled) { ctx->grad_enabled = enabled; }
void tf_ctx_set_training(tf_ctx *ctx, int training) { ctx->training = training; }
void tf_ctx_set_seed(tf_ctx *ctx, uint64_t seed) { ctx->rng = seed; }
void tf_ctx_set_precision(tf_ctx *ctx, tf_precision precision) { ctx->precision = precision == TF_PRECISION_BF16; }
tf_precision tf_ctx_precision(const tf_ctx *ctx) { return ctx->precision ? TF_PRECISION_BF16 : TF_PRECISION_F32; }

static const char *const PRECISION_NAMES[] = {"f32", "bf16", "int8"};

const char *tf_precision_name(tf_precision precision) {
    return (unsigned)precision < 3 ? PRECISION_NAMES[precision] : NULL;
}

int tf_precision_parse(const char *name, tf_precision *precision) {
    for (int i = 0; i < 3; i++)
        if (name && !strcmp(name, PRECISION_NAMES[i])) return *precision = (tf_precision)i, 0;
    return tf_set_error("precision '%s': f32, bf16 or int8", name ? name : "(none)");
}
tf_arena *tf_ctx_arena(tf_ctx *ctx) { return ctx->arena; }
void *tf_ctx_alloc(tf_ctx *ctx, size_t bytes) { return tf_arena_alloc(ctx->arena, bytes); }

static float *ctx_floats(tf_ctx *ctx, int64_t n, int zeroed) {
    size_t bytes;
    if (n < 0 || !tf_mul_size((size_t)n, sizeof(float), &bytes)) {
        tf_set_error("buffer of %lld floats overflows", (long long)n);
        return NULL;
    }
    return zeroed ? tf_arena_alloc(ctx->arena, bytes) : tf_arena_alloc_uninit(ctx->arena, bytes);
}

float *tf_ctx_floats(tf_ctx *ctx, int64_t n) { return ctx_floats(ctx, n, 1); }
float *tf_ctx_scratch(tf_ctx *ctx, int64_t n) { return ctx_floats(ctx, n, 0); }

tf_tensor *tf_tensor_new(tf_ctx *ctx, tf_dtype dt, int ndim, const int64_t *shape,
                         int requires_grad) {
    return tf_tensor_alloc(ctx->arena, dt, ndim, shape, requires_grad);
}

tf_node *tf_node_new(tf_ctx *ctx, tf_op op, int n_in, tf_tensor *const *in, tf_dtype out_dt,
                     int out_ndim, const int64_t *out_shape, void *params) {
    int needs_grad = 0;
    for (int i = 0; i < n_in; i++) {
        if (!in[i]) return NULL;
        if (in[i]->grad) needs_grad = 1;
    }
    tf_node *n = tf_ctx_alloc(ctx, sizeof *n);
    tf_tensor **ins = n ? tf_ctx_alloc(ctx, (size_t)n_in * sizeof *ins) : NULL;
    if (!ins) return NULL;
    memcpy(ins, in, (size_t)n_in * sizeof *ins);
    n->op = op;
    n->n_in = n_in;
    n->in = ins;
    n->params = params;
    n->out = tensor_alloc(ctx->arena, out_dt, out_ndim, out_shape, needs_grad && ctx->grad_enabled,
                          !tf_op_table[op].overwrites);
    return n->out ? n : NULL;
}

tf_tensor *tf_node_run(tf_ctx *ctx, tf_node *n) {
    if (!n) return NULL;
    tf_op_table[n->op].forward(n);
    if (n->out->grad) { /* only nodes that gradients flow through are recorded */
        n->prev = ctx->tape;
        ctx->tape = n;
    }
    return n->out;
}

int tf_backward(tf_ctx *ctx, tf_tensor *out, const tf_tensor *grad_out) {
    if (!out) return -1; /* an earlier op failed and set the error */
    if (!out->grad) return tf_set_error("backward: the output does not track a gradient");
    int64_t n = tf_numel(out);
    if (grad_out) {
        if (grad_out->ndim != out->ndim || memcmp(grad_out->shape, out->shape,
                                                  (size_t)out->ndim * sizeof(int64_t))) {
            char a[64], b[64];
            return tf_set_error("backward: grad_output shape %s differs from the output's %s",
                                tf_shape_str(grad_out, a, sizeof a), tf_shape_str(out, b, sizeof b));
        }
        if (!tf_is_contiguous(out) || !tf_is_contiguous(grad_out))
            return tf_set_error("backward: output and grad_output must be contiguous");
        for (int64_t i = 0; i < n; i++) out->grad[i] += tf_f32(grad_out)[i];
    } else {
        for (int64_t i = 0; i < n; i++) out->grad[i] += 1.0f;
    }
    for (tf_node *nd = ctx->tape; nd; nd = nd->prev) tf_op_table[nd->op].backward(nd);
    return 0;
}

void tf_tape_replay(tf_ctx *ctx) {
    size_t n = 0;
    for (tf_node *nd = ctx->tape; nd; nd = nd->prev) n++;
    tf_node **order = malloc((n ? n : 1) * sizeof *order);
    if (!order) return;
    size_t i = n;
    for (tf_node *nd = ctx->tape; nd; nd = nd->prev) order[--i] = nd;
    for (i = 0; i < n; i++) tf_op_table[order[i]->op].forward(order[i]);
    free(order);
}

const char *tf_op_name(tf_op op) {
    return (unsigned)op < TF_OP_COUNT ? tf_op_table[op].name : "?";
}

tf_tensor *tf_tensor_gather_rows(tf_ctx *ctx, const tf_tensor *t, const int *rows, int n) {
    if (!t) return NULL;
    if (!tf_is_contiguous(t)) return tf_set_error("gather rows: the tensor is not contiguous"), NULL;
    int64_t shape[TF_MAX_DIMS];
    memcpy(shape, t->shape, sizeof shape);
    shape[0] = n;
    tf_tensor *g = tf_tensor_new(ctx, t->dtype, t->ndim, shape, 0);
    size_t row = (size_t)(tf_numel(t) / t->shape[0]) * tf_dtype_size(t->dtype);
    for (int i = 0; g && i < n; i++) memcpy((char *)g->data + (size_t)i * row, (const char *)t->data + (size_t)rows[i] * row, row);
    return g;
}
