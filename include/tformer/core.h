/* tformer: Tensors, arenas, the autodiff context and errors. */
#ifndef TFORMER_CORE_H
#define TFORMER_CORE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Marks the library's public functions: the shared library is built with
 * -fvisibility=hidden, so only these are exported. */
#if defined(__GNUC__)
#define TF_API __attribute__((visibility("default")))
#else
#define TF_API
#endif

#ifdef __cplusplus
extern "C" {
#endif

#define TF_MAX_DIMS 6
#define TF_DIM_ALL 127 /* reduce over every dimension */

/* ---------------------------------------------------------------- errors */

/* The message of the last error on this thread ("" when none). */
TF_API const char *tf_error(void);
/* Set the thread's error message (printf-style); always returns -1. */
TF_API int tf_set_error(const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 1, 2)))
#endif
    ;

/* ---------------------------------------------------------------- arenas */

/* Bump allocator: 64-byte aligned, zeroed memory, freed all at once. */
typedef struct tf_arena tf_arena;
TF_API tf_arena *tf_arena_new(size_t block_bytes);
TF_API void tf_arena_free(tf_arena *a);
TF_API void *tf_arena_alloc(tf_arena *a, size_t bytes); /* NULL + tf_error() on failure */
TF_API void tf_arena_reset(tf_arena *a);                 /* keeps the first block */
TF_API size_t tf_arena_used(const tf_arena *a);
/* Bytes held in blocks, and (when blocks != NULL) how many blocks. */
TF_API size_t tf_arena_reserved(const tf_arena *a, int *blocks);

/* ---------------------------------------------------------------- tensors */

typedef enum {
    TF_DTYPE_F32, /* activations and parameters: the only dtype with gradients */
    TF_DTYPE_I32, /* token ids, targets */
    TF_DTYPE_U8   /* boolean masks: nonzero = masked out */
} tf_dtype;

typedef struct tf_tensor {
    tf_dtype dtype;
    int ndim;
    int64_t shape[TF_MAX_DIMS];
    int64_t stride[TF_MAX_DIMS]; /* in elements */
    void *data;                  /* first element */
    float *grad;                 /* same layout as data; NULL if no gradient is tracked */
    struct tf_quant *quant;      /* an int8 copy for inference (tf_params_quantize), or NULL */
} tf_tensor;

TF_API size_t tf_dtype_size(tf_dtype dt);
TF_API int64_t tf_numel(const tf_tensor *t);
TF_API int tf_is_contiguous(const tf_tensor *t);
static inline float *tf_f32(const tf_tensor *t) { return (float *)t->data; }
static inline int32_t *tf_i32(const tf_tensor *t) { return (int32_t *)t->data; }
static inline uint8_t *tf_u8(const tf_tensor *t) { return (uint8_t *)t->data; }

/* A contiguous tensor in an arena, zero-filled (gradient too when requires_grad). */
TF_API tf_tensor *tf_tensor_alloc(tf_arena *a, tf_dtype dt, int ndim, const int64_t *shape,
                           int requires_grad);
/* Fill with N(0, std^2) (Box-Muller on splitmix64) / uniform(lo, hi). Contiguous F32 only. */
TF_API void tf_tensor_fill_normal(tf_tensor *t, uint64_t seed, float std);
TF_API void tf_tensor_fill_uniform(tf_tensor *t, uint64_t seed, float lo, float hi);
TF_API void tf_tensor_zero_grad(tf_tensor *t);
/* Write "(2,3,4)" into buf. */
TF_API const char *tf_shape_str(const tf_tensor *t, char *buf, size_t n);

/* Threads for the kernels that use them; 0 or less means all cores, more
 * than 256 (or the cores, if more) is clamped. Results do not depend on the
 * thread count. */
TF_API void tf_set_threads(int n);
/* Which BLAS serves large matrix products: OpenBLAS is loaded at first use
 * (TFORMER_BLAS=0 keeps the portable kernel, TFORMER_BLAS=FILE loads another
 * library with cblas_sgemm, e.g. Intel's MKL); see docs/performance.md. */
TF_API const char *tf_blas_info(void);
/* Which row kernels run: "avx512", "avx2" or "portable" — the widest this CPU
 * has, or TFORMER_ISA=portable|avx2|avx512 (when the CPU has it). */
TF_API const char *tf_kernels_info(void);

/* ---------------------------------------------------------------- context and tape */

typedef struct tf_ctx tf_ctx;
TF_API tf_ctx *tf_ctx_new(uint64_t seed);
TF_API void tf_ctx_free(tf_ctx *ctx);
/* Drop the tape and every activation; parameters (in their own arenas) stay. */
TF_API void tf_ctx_reset(tf_ctx *ctx);
TF_API void tf_ctx_set_grad(tf_ctx *ctx, int enabled);       /* default on */
TF_API void tf_ctx_set_training(tf_ctx *ctx, int training);  /* dropout active; default off */
TF_API void tf_ctx_set_seed(tf_ctx *ctx, uint64_t seed);      /* dropout masks derive from it */
/* The precision of the dense and matmul ops' matrix products recorded from now
 * on (forward and backward): float (the default), or bf16 (both factors
 * rounded to bfloat16, products and sums in float, results float; weights,
 * gradients and every other op stay float) on AMX or AVX512-BF16 CPUs —
 * elsewhere bf16 products run in float (tf_bf16_info says which). INT8 is a
 * precision of inference weights only (tf_params_set_precision): a context
 * set to it computes in float. */
typedef enum { TF_PRECISION_F32, TF_PRECISION_BF16, TF_PRECISION_INT8 } tf_precision;
/* "f32", "bf16", "int8" (the --precision values); NULL for another value. */
TF_API const char *tf_precision_name(tf_precision precision);
/* *precision from its name; -1 with an error listing the names when name is none of them. */
TF_API int tf_precision_parse(const char *name, tf_precision *precision);
TF_API void tf_ctx_set_precision(tf_ctx *ctx, tf_precision precision);
TF_API tf_precision tf_ctx_precision(const tf_ctx *ctx);
/* Where bf16 products run: "amx-bf16", "avx512-bf16", or "float (...)" with the reason. */
TF_API const char *tf_bf16_info(void);
TF_API tf_arena *tf_ctx_arena(tf_ctx *ctx);
/* A tensor in the context's arena (lives until tf_ctx_reset). */
TF_API tf_tensor *tf_tensor_new(tf_ctx *ctx, tf_dtype dt, int ndim, const int64_t *shape,
                         int requires_grad);
/* Seed the gradient of `out` with grad_out (same shape; NULL means ones) and
 * accumulate gradients into every tensor that tracks one. It walks the whole
 * tape: once per tape (a second call would propagate the first's gradients
 * again), so two graphs that need separate backward passes take two contexts. */
TF_API int tf_backward(tf_ctx *ctx, tf_tensor *out, const tf_tensor *grad_out);
/* Run every recorded op's forward again, in order (used by gradient checks). */
TF_API void tf_tape_replay(tf_ctx *ctx);

/* ---------------------------------------------------------------- the tape's op codes and views */

/* What the tape records: each op's forward and backward are the ops layer's
 * (ops.h, src/ops/op_table.c). */
typedef enum {
    TF_OP_COPY,          /* strided view -> contiguous copy */
    TF_OP_MATMUL,        /* batched, either side transposed */
    TF_OP_ADD,           /* broadcasting */
    TF_OP_MUL,           /* broadcasting */
    TF_OP_SCALE,         /* times a constant */
    TF_OP_BIAS_ADD,      /* (...,N) + (N) */
    TF_OP_SOFTMAX,       /* last dim, optional additive or boolean mask */
    TF_OP_LAYERNORM,     /* last dim */
    TF_OP_RELU,
    TF_OP_GELU,          /* exact erf or tanh approximation */
    TF_OP_DROPOUT,       /* seeded, inverted scaling */
    TF_OP_EMBEDDING,     /* rows of a table */
    TF_OP_CONCAT,
    TF_OP_SUM,           /* over one dim or all; mean is a scaled sum */
    TF_OP_CROSS_ENTROPY, /* logits, ignore index, label smoothing */
    TF_OP_SDPA,          /* fused scaled dot-product attention */
    TF_OP_DENSE,         /* x W^T + b, then an optional activation, fused */
    TF_OP_TANH,          /* the pooler's activation */
    TF_OP_GRU_CELL,      /* PyTorch's GRUCell, fused */
    TF_OP_LSTM_CELL,     /* PyTorch's LSTMCell, fused: (2,B,H) = [h', c'] */
    TF_OP_PATCH_EMBED,   /* non-overlapping patches / tubelets, each projected: Conv2d / Conv3d(stride=kernel) flattened */
    TF_OP_MAX,           /* over one dim or all; the gradient shared by the maxima */
    TF_OP_RECIPROCAL,    /* 1/x */
    TF_OP_DEPTHWISE_CONV, /* per channel along the sequence: Conv2d((K,1), groups=C) (Nystromformer's skip on V) */
    TF_OP_SOFT_CROSS_ENTROPY, /* logits against a distribution over the classes (mixup's targets) */
    TF_OP_SPARSE_ATTENTION, /* block-sparse flash attention over a tf_sparse_pattern */
    TF_OP_RMSNORM,       /* last dim, no centring and no bias (ImageGPT's LayerNorm) */
    TF_OP_CONV2D,        /* 2-D convolution, any stride and zero padding: im2col + one product (ViT's conv stem) */
    TF_OP_ROPE,          /* rotary position embedding of (..., T, D) rows (q and k before the scores) */
    TF_OP_COUNT
} tf_op;

TF_API const char *tf_op_name(tf_op op);

/* Views: no copy, no tape entry; data and gradient alias the base. */
TF_API tf_tensor *tf_reshape(tf_ctx *ctx, tf_tensor *x, int ndim, const int64_t *shape); /* -1 = infer */
TF_API tf_tensor *tf_transpose(tf_ctx *ctx, tf_tensor *x, int d0, int d1);
TF_API tf_tensor *tf_narrow(tf_ctx *ctx, tf_tensor *x, int dim, int64_t start, int64_t len);
TF_API tf_tensor *tf_unsqueeze(tf_ctx *ctx, tf_tensor *x, int dim);
/* A contiguous copy of x (an op of ops.h, recorded on the tape; the views
 * above reshape through it): x itself if already contiguous. */
TF_API tf_tensor *tf_contiguous(tf_ctx *ctx, tf_tensor *x);

#ifdef __cplusplus
}
#endif
#endif /* TFORMER_CORE_H */
