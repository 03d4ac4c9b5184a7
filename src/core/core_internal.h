/* Private to the library: the core layer's (src/core: tensors, the tape, the
 * context, buffers; threads and random keys) declarations for every layer above. */
#ifndef TF_CORE_INTERNAL_H
#define TF_CORE_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "tformer/core.h"

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
    int row_products;  /* 1: F32 products of several rows sum each row as a one-row product does
                          (tf_ctx_gemm_kernel: TF_GEMM_ROWS; a decoding step of several rows) */
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

/* Large buffers that come and go with each batch (KV caches, a search's
 * logits), recycled: a fresh buffer costs a page fault per 4 KiB touched.
 * tf_buf_take gives at least bytes, 64-byte aligned, its size in *room
 * (NULL: out of memory); tf_buf_give takes it back with that room (NULL is
 * fine). A few are kept for the next requests, the rest freed. */
void *tf_buf_take(size_t bytes, size_t *room);
void tf_buf_give(void *p, size_t room);
/* Free every buffer kept. */
void tf_buf_trim(void);
/* Unmap the arena blocks kept for the next arena (arena.c: a freed arena's
 * mapped blocks are kept, at most 4 and a quarter of memory). */
void tf_arena_trim(void);

#endif
