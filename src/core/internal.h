/* Private declarations shared by the library's source files. */
#ifndef TF_INTERNAL_H
#define TF_INTERNAL_H

#include <math.h>

#include "tformer.h"

/* Everything here is hidden from the shared library: it is built with
 * -fvisibility=hidden and exports only what include/tformer/ marks TF_API. */

/* One recorded operation. Forward reads `in` and `params`, writes `out` and
 * `saved`; it may be run again (tape replay) and must then give the same result. */
typedef struct tf_node {
    tf_op op;
    tf_tensor *out;
    int n_in;
    tf_tensor **in;
    void *params;        /* op-specific struct, arena-allocated */
    float *saved[2];     /* op-specific buffers, arena-allocated */
    struct tf_node *prev;
} tf_node;

/* The one op table: name, forward and backward of every op in one place. */
typedef struct {
    const char *name;
    void (*forward)(tf_node *n);
    void (*backward)(tf_node *n); /* accumulates into the inputs' grad buffers */
    int overwrites;               /* forward writes every output element: no zero fill first */
} tf_op_def;

extern const tf_op_def tf_op_table[TF_OP_COUNT];

struct tf_ctx {
    tf_arena *arena;
    tf_node *tape;     /* last recorded node; ->prev walks back */
    int grad_enabled;
    int training;
    int precision;     /* tf_precision of the matrix products recorded */
    uint64_t rng;      /* splitmix64 state, draws dropout seeds */
};

/* Checked size arithmetic: return 0 on overflow. */
int tf_mul_size(size_t a, size_t b, size_t *out);
uint64_t tf_splitmix64(uint64_t *state);
/* A counter-based key from four numbers (seed, step, row, split ...): every
 * random draw of training derives from one, so runs repeat bit for bit. */
static inline uint64_t tf_key(uint64_t a, uint64_t b, uint64_t c, uint64_t d) {
    uint64_t s = a ^ (b * 0x9E3779B97F4A7C15ull) ^ (c * 0xC2B2AE3D27D4EB4Full) ^ (d * 0x165667B19E3779F9ull);
    return tf_splitmix64(&s);
}
/* Uniform float in [0,1) from a counter-based hash (seed, i). */
float tf_hash_uniform(uint64_t seed, uint64_t i);

/* Normalise a possibly negative dim; -1 and an error when out of range. */
int tf_dim_index(const tf_tensor *x, int dim, const char *op);
void tf_contig_strides(int ndim, const int64_t *shape, int64_t *stride);
/* Strides of t broadcast (right-aligned) to shape[ndim], 0 where t has size 1
 * or lacks the dim. Returns -1 if t does not broadcast. */
int tf_bcast_strides(const tf_tensor *t, int ndim, const int64_t *shape, int64_t *stride);

/* Create a node: allocate out (with a gradient when any input tracks one and
 * gradients are on), record it and run its forward. NULL if an input is NULL. */
tf_node *tf_node_new(tf_ctx *ctx, tf_op op, int n_in, tf_tensor *const *in, tf_dtype out_dt,
                     int out_ndim, const int64_t *out_shape, void *params);
/* Record and run: call after filling saved[] buffers. */
tf_tensor *tf_node_run(tf_ctx *ctx, tf_node *n);
void *tf_ctx_alloc(tf_ctx *ctx, size_t bytes);
float *tf_ctx_floats(tf_ctx *ctx, int64_t n);
/* The same without zeroing, for buffers an op writes whole before reading. */
float *tf_ctx_scratch(tf_ctx *ctx, int64_t n);
void *tf_arena_alloc_uninit(tf_arena *a, size_t bytes);
tf_tensor *tf_view_new(tf_ctx *ctx, const tf_tensor *x);

/* The threads a parallel region opened here would get: 1 inside an active
 * region (a caller already shares out the work, e.g. one batch per thread)
 * or when one thread is asked for. */
int tf_threads_free(void);
/* Rows rows[0..n) (repeats allowed) of t (contiguous, rows first) as a new tensor of ctx:
 * the kept sources of a batch decoder after a beam's selection. */
tf_tensor *tf_tensor_gather_rows(tf_ctx *ctx, const tf_tensor *t, const int *rows, int n);
/* The largest of x (n), NaN left out (-inf for none): 16 running maxima, one
 * per lane, so that the compiler keeps them in a vector register (a single
 * running max is a chain it cannot reorder); the same on every machine. */
static inline float tf_max_f32(const float *x, int64_t n) {
    float m[16] = {-INFINITY, -INFINITY, -INFINITY, -INFINITY, -INFINITY, -INFINITY, -INFINITY, -INFINITY,
                   -INFINITY, -INFINITY, -INFINITY, -INFINITY, -INFINITY, -INFINITY, -INFINITY, -INFINITY};
    int64_t i = 0;
    for (; i + 16 <= n; i += 16)
        for (int j = 0; j < 16; j++) m[j] = x[i + j] > m[j] ? x[i + j] : m[j];
    for (; i < n; i++) m[0] = x[i] > m[0] ? x[i] : m[0];
    for (int j = 1; j < 16; j++) m[0] = m[j] > m[0] ? m[j] : m[0];
    return m[0];
}
/* log(sum(exp(x))) of x (n) through the vector kernels (scratch: n floats). */
float tf_log_sum_exp(float *scratch, const float *x, int64_t n);
/* The same when x's largest value mx (tf_max_f32's) is known. */
float tf_log_sum_exp_at(float *scratch, const float *x, int64_t n, float mx);

/* for (int64_t i = 0; i < n; i++) BODY, on the threads when cond holds and
 * as a plain loop otherwise: even an inactive parallel region costs about a
 * microsecond (libgomp builds a team), which a decoding step of small ops
 * would pay dozens of times. */
#define TF_PARALLEL_FOR(cond, i, n, ...)                                            \
    do {                                                                            \
        int64_t n_##i = (n);                                                        \
        if ((cond) && tf_threads_free() > 1) {                                      \
            _Pragma("omp parallel for schedule(static)")                            \
            for (int64_t i = 0; i < n_##i; i++) { __VA_ARGS__; }                    \
        } else {                                                                    \
            for (int64_t i = 0; i < n_##i; i++) { __VA_ARGS__; }                    \
        }                                                                           \
    } while (0)

/* Iterate a multi-index over shape[ndim-1] (all but the last dim), in row-major order. */
int tf_index_next(int64_t *idx, int ndim, const int64_t *shape);

/* Dot product with 8 fixed partial sums: the compiler vectorises it (no
 * reassociation is needed, the order is written out), and the result is the
 * same on every machine and thread count. */
static inline float tf_dot(const float *a, const float *b, int64_t n) {
    float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    int64_t c = 0;
    for (; c + 8 <= n; c += 8)
        for (int l = 0; l < 8; l++) acc[l] += a[c + l] * b[c + l];
    float s = ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
    for (; c < n; c++) s += a[c] * b[c];
    return s;
}

/* cblas_sgemm's signature (row/column order and transposes as CBLAS's enum
 * values); NULL when no BLAS could be loaded (src/ops/blas.c). */
typedef void (*tf_sgemm_fn)(int order, int ta, int tb, int M, int N, int K, float alpha, const float *A, int lda,
                            const float *B, int ldb, float beta, float *C, int ldc);
tf_sgemm_fn tf_blas_sgemm(void);

/* C (M,N) += op(A) op(B) with A stored (M,K) or (K,M) when ta, B (K,N) or
 * (N,K) when tb. AUTO sends large products to the BLAS when built with one;
 * BF16 rounds both factors to bf16 where the CPU can (src/ops/bf16.h), else AUTO. */
enum { TF_GEMM_AUTO, TF_GEMM_PORTABLE, TF_GEMM_BLAS, TF_GEMM_BF16 };
void tf_gemm_acc(float *C, const float *A, const float *B, int64_t M, int64_t N, int64_t K, int ta, int tb,
                 int kernel);
/* The kernel a product recorded now uses: BF16 under TF_PRECISION_BF16, else AUTO. */
static inline int tf_ctx_gemm_kernel(const tf_ctx *ctx) {
    return ctx->precision == TF_PRECISION_BF16 ? TF_GEMM_BF16 : TF_GEMM_AUTO;
}

/* Loss curves as PNG (cairo): the training series a (blue) and the
 * validation series b (red, may be empty) against the step, with ticks,
 * axis titles and a legend. */
int tf_png_plot(const char *path, const double *ax, const double *ay, int na, const double *bx, const double *by,
                int nb);
/* A cairo surface as a PNG file, written as every output is (tf_atomic_file's
 * rules: atomic replace, links followed, devices written through); cairo's
 * status st of the drawing first (an error there is reported, nothing written). */
struct _cairo_surface;
int tf_png_write(struct _cairo_surface *s, int st, const char *path);

/* Allocate every registered tensor, zero-filled (to be loaded, not initialised). */
int tf_params_alloc(tf_params *ps);
/* Inference loading: parameter i becomes a tensor of its shape without a
 * gradient, over data (borrowed: a mapped file's bytes, F32, contiguous) or,
 * when data is NULL, over fresh zeroed memory; returns it (NULL: out of memory). */
tf_tensor *tf_params_set_data(tf_params *ps, int i, float *data);
/* Parameter i's registered shape into shape; returns its number of dimensions. */
int tf_params_shape(const tf_params *ps, int i, int64_t *shape);
/* Large buffers that come and go with each batch (KV caches, a search's
 * logits), recycled: a fresh buffer costs a page fault per 4 KiB touched.
 * tf_buf_take gives at least bytes, 64-byte aligned, its size in *room
 * (NULL: out of memory); tf_buf_give takes it back with that room (NULL is
 * fine). A few are kept for the next requests, the rest freed. */
void *tf_buf_take(size_t bytes, size_t *room);
void tf_buf_give(void *p, size_t room);
/* Free every buffer kept. */
void tf_buf_trim(void);
/* Keep a safetensors file (whose mapping the tensors read) open until tf_params_free. */
struct tf_st_file;
void tf_params_keep_file(tf_params *ps, struct tf_st_file *f);
/* Write k and v (B,H,T,D) at the cache's length in layer `layer` and return
 * views (B,H,len+T,D) of every position held, new ones included (the cache's
 * length moves on with tf_kv_cache_advance once every layer has appended). */
int tf_kv_cache_append(tf_ctx *ctx, tf_kv_cache *c, int layer, tf_tensor *k, tf_tensor *v, tf_tensor **k_all,
                       tf_tensor **v_all);
/* Views (B,H,len,D) of layer `layer`'s held keys and values, appending
 * nothing: an encoder-decoder's cross-attention reads the source's projected
 * keys and values this way at every decoding step after the first. */
int tf_kv_cache_held(tf_ctx *ctx, const tf_kv_cache *c, int layer, tf_tensor **k_all, tf_tensor **v_all);
/* Query rows that share the cache's rows (beam search: the hypotheses of a
 * sentence read one copy of its encoder's keys and values): query row i
 * reads cache row rows[i], i < n; NULL: row i reads row i. Attention over a
 * held cache with such a map groups each row's queries (tf_mha_attend);
 * appending is refused; tf_kv_cache_select drops the map. */
int tf_kv_cache_share_rows(tf_kv_cache *c, const int *rows, int n);
/* The map (n rows), or NULL with *n = 0. */
const int *tf_kv_cache_row_map(const tf_kv_cache *c, int *n);
/* Hugging Face's attention_mask (B,Tk) I32 or U8, 1 = attend, as a key
 * padding mask (B,Tk) U8, 1 = hidden; a wrong shape or dtype is an error
 * starting with who ("gpt", "bert"). */
tf_tensor *tf_key_padding(tf_ctx *ctx, const tf_tensor *mask, int64_t B, int64_t Tk, const char *who);
/* tf_params_add with every element initialised to value (a constant that
 * tf_params_add's init codes cannot say, e.g. Scalable-Softmax's s). */
int tf_params_add_filled(tf_params *ps, const char *name, tf_tensor **slot, int ndim, const int64_t *shape,
                         float value);
/* The projections q, k, v (B,H,T,D) (views) of query, key, value (B,T,E);
 * one fused product for self-attention with in_proj weights. */
void tf_mha_project(tf_ctx *ctx, const tf_mha *m, tf_tensor *query, tf_tensor *key, tf_tensor *value,
                    tf_tensor *qkv[3]);

/* Multi-head attention of query over key/value (the same tensor for
 * self-attention: then one fused projection), optionally causal and through a
 * KV cache; the averaged weights (B,Tq,Tk) into *weights when asked, each
 * head's probabilities (B,H,Tq,Tk) into *probs when asked (either costs the
 * fused kernel: the scores are then materialised). With a cache and no key
 * and value, the cache's held keys and values are read as they are
 * (cross-attention after the first decoding step). */
tf_tensor *tf_mha_attend(tf_ctx *ctx, const tf_mha *m, tf_tensor *query, tf_tensor *key, tf_tensor *value,
                         const tf_attn_mask *mask, int causal, tf_kv_cache *cache, int layer, tf_tensor **weights,
                         tf_tensor **probs);
/* Swin's relative position index of a window: out (w^2,w^2), entry (i,j) =
 * (yi-yj+w-1)(2w-1) + (xi-xj+w-1) for positions i = (yi,xi), j = (yj,xj). */
void tf_window_relative_index(int32_t *out, int window);
/* Zeros appended along dim d of x until it is n long (x itself when it is): Swin's padding. */
tf_tensor *tf_pad_zeros(tf_ctx *ctx, tf_tensor *x, int d, int64_t n);
/* Self-attention of h (B,height*width,C) within the (shifted) windows of a (src/nn/window.c). */
tf_tensor *tf_window_attend(tf_ctx *ctx, const tf_mha *m, tf_tensor *h, const tf_window_attn *a, tf_tensor **probs);

/* ViViT's factorised dot-product attention (Model 4) of x (B,F*S,d_model),
 * F frames of S tokens: half the heads within each frame, half within each
 * place across the frames, then the output projection. n_head even. */
tf_tensor *tf_mha_attend_factorised(tf_ctx *ctx, const tf_mha *m, tf_tensor *x, int64_t frames);

/* Nyström attention of q, k, v (B,H,T,D) (the projections of one input;
 * tf_mha_config's nystrom, landmarks, conv_kernel) -> (B,H,T,D); mask: only
 * a key padding mask (B,T), applied where a query (or landmark) meets every key. */
tf_tensor *tf_nystrom_attend(tf_ctx *ctx, const tf_mha *m, tf_tensor *const qkv[3], const tf_attn_mask *mask);

/* Per-op forward/backward, defined next to each op's constructor. */
#define TF_OP_FUNCS(name)                                  \
    void tf_op_##name##_forward(tf_node *n);    \
    void tf_op_##name##_backward(tf_node *n);
TF_OP_FUNCS(copy)
TF_OP_FUNCS(matmul)
TF_OP_FUNCS(add)
TF_OP_FUNCS(mul)
TF_OP_FUNCS(scale)
TF_OP_FUNCS(bias_add)
TF_OP_FUNCS(softmax)
TF_OP_FUNCS(layernorm)
TF_OP_FUNCS(relu)
TF_OP_FUNCS(gelu)
TF_OP_FUNCS(dropout)
TF_OP_FUNCS(embedding)
TF_OP_FUNCS(concat)
TF_OP_FUNCS(sum)
TF_OP_FUNCS(cross_entropy)
TF_OP_FUNCS(sdpa)
TF_OP_FUNCS(dense)
TF_OP_FUNCS(tanh)
TF_OP_FUNCS(gru_cell)
TF_OP_FUNCS(lstm_cell)
TF_OP_FUNCS(patch_embed)
TF_OP_FUNCS(max)
TF_OP_FUNCS(reciprocal)
TF_OP_FUNCS(depthwise_conv)
TF_OP_FUNCS(soft_cross_entropy)
TF_OP_FUNCS(rmsnorm)
TF_OP_FUNCS(sparse_attention)
TF_OP_FUNCS(conv2d)
TF_OP_FUNCS(rope)
#undef TF_OP_FUNCS

#endif
