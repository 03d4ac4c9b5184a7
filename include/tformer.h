/*
 * tformer — a Transformer toolkit in C11.
 *
 * A runnable example: one pre-LN encoder layer on a random batch, then the
 * gradient of sum(output) with respect to every weight. (Train and sample a
 * whole GPT with tf_gpt_train / tf_gpt_generate, further down.)
 *
 *     #include <stdio.h>
 *     #include "tformer.h"
 *
 *     int main(void) {
 *         tf_layer_config cfg = tf_layer_config_default(16, 4);   // d_model 16, 4 heads
 *         cfg.dim_feedforward = 32;
 *         cfg.norm_first = 1;
 *         tf_params *ps = tf_params_new();
 *         tf_encoder_layer layer;
 *         tf_encoder_layer_register(ps, "layer.", &layer, &cfg);
 *         if (tf_params_init(ps, 42) != 0) { fprintf(stderr, "%s\n", tf_error()); return 1; }
 *
 *         tf_ctx *ctx = tf_ctx_new(7);
 *         int64_t shape[3] = {2, 5, 16};                          // x: (B,T,C)
 *         tf_tensor *x = tf_tensor_new(ctx, TF_DTYPE_F32, 3, shape, 0);
 *         tf_tensor_fill_normal(x, 1, 1.0f);
 *         tf_attn_mask self = {0};
 *         self.causal = 1;
 *         tf_tensor *y = tf_encoder_layer_forward(ctx, &layer, &cfg, x, &self);
 *         if (!y || tf_backward(ctx, y, NULL) != 0) { fprintf(stderr, "%s\n", tf_error()); return 1; }
 *         printf("y[0] = %f, dL/dW[0] = %f\n", tf_f32(y)[0],
 *                tf_params_get(ps, "layer.linear1.weight")->grad[0]);
 *         tf_ctx_free(ctx);
 *         tf_params_free(ps);
 *         return 0;
 *     }
 *
 * Conventions: every tensor is row-major with explicit strides; views
 * (reshape, transpose, narrow) share both data and gradient memory with their
 * base, so a view needs no backward of its own. Operations record themselves on
 * the context's tape; tf_backward() walks it in reverse. An operation that fails
 * returns NULL and leaves a message in tf_error(); an operation given a NULL
 * input returns NULL silently, so a whole forward pass can be checked once at the end.
 */
#ifndef TFORMER_H
#define TFORMER_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

#define TF_MAX_DIMS 6
#define TF_DIM_ALL 127 /* reduce over every dimension */

/* ---------------------------------------------------------------- errors */

/* The message of the last error on this thread ("" when none). */
const char *tf_error(void);
/* Set the thread's error message (printf-style); always returns -1. */
int tf_set_error(const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 1, 2)))
#endif
    ;

/* ---------------------------------------------------------------- arenas */

/* Bump allocator: 64-byte aligned, zeroed memory, freed all at once. */
typedef struct tf_arena tf_arena;
tf_arena *tf_arena_new(size_t block_bytes);
void tf_arena_free(tf_arena *a);
void *tf_arena_alloc(tf_arena *a, size_t bytes); /* NULL + tf_error() on failure */
void tf_arena_reset(tf_arena *a);                 /* keeps the first block */
size_t tf_arena_used(const tf_arena *a);
/* Bytes held in blocks, and (when blocks != NULL) how many blocks. */
size_t tf_arena_reserved(const tf_arena *a, int *blocks);

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
} tf_tensor;

size_t tf_dtype_size(tf_dtype dt);
int64_t tf_numel(const tf_tensor *t);
int tf_is_contiguous(const tf_tensor *t);
static inline float *tf_f32(const tf_tensor *t) { return (float *)t->data; }
static inline int32_t *tf_i32(const tf_tensor *t) { return (int32_t *)t->data; }
static inline uint8_t *tf_u8(const tf_tensor *t) { return (uint8_t *)t->data; }

/* A contiguous tensor in an arena, zero-filled (gradient too when requires_grad). */
tf_tensor *tf_tensor_alloc(tf_arena *a, tf_dtype dt, int ndim, const int64_t *shape,
                           int requires_grad);
/* Fill with N(0, std^2) (Box-Muller on splitmix64) / uniform(lo, hi). Contiguous F32 only. */
void tf_tensor_fill_normal(tf_tensor *t, uint64_t seed, float std);
void tf_tensor_fill_uniform(tf_tensor *t, uint64_t seed, float lo, float hi);
void tf_tensor_zero_grad(tf_tensor *t);
/* Write "(2,3,4)" into buf. */
const char *tf_shape_str(const tf_tensor *t, char *buf, size_t n);

/* Threads for the kernels that use them; 0 means all cores. Results do not
 * depend on the thread count. */
void tf_set_threads(int n);
/* Which BLAS serves large matrix products: OpenBLAS is loaded at first use
 * (TFORMER_BLAS=0 keeps the portable kernel); see docs/performance.md. */
const char *tf_blas_info(void);
/* Which row kernels run: "avx512", "avx2" or "portable" — the widest this CPU
 * has, or TFORMER_ISA=portable|avx2|avx512 (when the CPU has it). */
const char *tf_kernels_info(void);

/* ---------------------------------------------------------------- context and tape */

typedef struct tf_ctx tf_ctx;
tf_ctx *tf_ctx_new(uint64_t seed);
void tf_ctx_free(tf_ctx *ctx);
/* Drop the tape and every activation; parameters (in their own arenas) stay. */
void tf_ctx_reset(tf_ctx *ctx);
void tf_ctx_set_grad(tf_ctx *ctx, int enabled);       /* default on */
void tf_ctx_set_training(tf_ctx *ctx, int training);  /* dropout active; default off */
void tf_ctx_set_seed(tf_ctx *ctx, uint64_t seed);      /* dropout masks derive from it */
tf_arena *tf_ctx_arena(tf_ctx *ctx);
/* A tensor in the context's arena (lives until tf_ctx_reset). */
tf_tensor *tf_tensor_new(tf_ctx *ctx, tf_dtype dt, int ndim, const int64_t *shape,
                         int requires_grad);
/* Seed the gradient of `out` with grad_out (same shape; NULL means ones) and
 * accumulate gradients into every tensor that tracks one. It walks the whole
 * tape: once per tape (a second call would propagate the first's gradients
 * again), so two graphs that need separate backward passes take two contexts. */
int tf_backward(tf_ctx *ctx, tf_tensor *out, const tf_tensor *grad_out);
/* Run every recorded op's forward again, in order (used by gradient checks). */
void tf_tape_replay(tf_ctx *ctx);

/* ---------------------------------------------------------------- the op table */

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
    TF_OP_COUNT
} tf_op;

const char *tf_op_name(tf_op op);

typedef enum { TF_GELU_ERF, TF_GELU_TANH } tf_gelu_kind;

/* Views: no copy, no tape entry; data and gradient alias the base. */
tf_tensor *tf_reshape(tf_ctx *ctx, tf_tensor *x, int ndim, const int64_t *shape); /* -1 = infer */
tf_tensor *tf_transpose(tf_ctx *ctx, tf_tensor *x, int d0, int d1);
tf_tensor *tf_narrow(tf_ctx *ctx, tf_tensor *x, int dim, int64_t start, int64_t len);
tf_tensor *tf_unsqueeze(tf_ctx *ctx, tf_tensor *x, int dim);

/* Ops (recorded on the tape when gradients are on). Negative dims count from the end. */
tf_tensor *tf_contiguous(tf_ctx *ctx, tf_tensor *x); /* x itself if already contiguous */
tf_tensor *tf_matmul(tf_ctx *ctx, tf_tensor *a, tf_tensor *b, int trans_a, int trans_b);
tf_tensor *tf_add(tf_ctx *ctx, tf_tensor *a, tf_tensor *b);
tf_tensor *tf_mul(tf_ctx *ctx, tf_tensor *a, tf_tensor *b);
tf_tensor *tf_scale(tf_ctx *ctx, tf_tensor *x, float s);
tf_tensor *tf_bias_add(tf_ctx *ctx, tf_tensor *x, tf_tensor *bias);
/* mask: F32 (added to x) or U8 (nonzero = excluded), broadcastable to x. A row
 * with every entry excluded gives all zeros (PyTorch gives NaN). */
tf_tensor *tf_softmax(tf_ctx *ctx, tf_tensor *x, tf_tensor *mask);
tf_tensor *tf_layernorm(tf_ctx *ctx, tf_tensor *x, tf_tensor *w, tf_tensor *b, float eps);
tf_tensor *tf_relu(tf_ctx *ctx, tf_tensor *x);
tf_tensor *tf_gelu(tf_ctx *ctx, tf_tensor *x, tf_gelu_kind kind);
tf_tensor *tf_dropout(tf_ctx *ctx, tf_tensor *x, float p); /* identity unless training */
tf_tensor *tf_embedding(tf_ctx *ctx, tf_tensor *table, tf_tensor *ids);
tf_tensor *tf_concat(tf_ctx *ctx, int n, tf_tensor *const *xs, int dim);
/* Split along dim into n contiguous pieces of the given sizes. Returns 0 or -1. */
int tf_split(tf_ctx *ctx, tf_tensor *x, int dim, int n, const int64_t *sizes, tf_tensor **outs);
tf_tensor *tf_sum(tf_ctx *ctx, tf_tensor *x, int dim, int keepdim);  /* dim may be TF_DIM_ALL */
tf_tensor *tf_mean(tf_ctx *ctx, tf_tensor *x, int dim, int keepdim);
/* logits (...,C), targets I32 (...): mean loss over targets != ignore_index. */
tf_tensor *tf_cross_entropy(tf_ctx *ctx, tf_tensor *logits, tf_tensor *targets,
                            int ignore_index, float label_smoothing);
/* q (B,H,Tq,D), k (B,H,Tk,D), v (B,H,Tk,Dv) -> (B,H,Tq,Dv). mask: F32 (added) or
 * U8 (nonzero = excluded), broadcastable to (B,H,Tq,Tk). causal excludes key j
 * for query i when j > i + Tk - Tq (PyTorch's rule when Tq == Tk). */
tf_tensor *tf_sdpa(tf_ctx *ctx, tf_tensor *q, tf_tensor *k, tf_tensor *v, tf_tensor *mask,
                   int causal, float scale);
/* act(x W^T + b) in one op: x (..., K), w (N,K), or (K,N) when w_in_out
 * (Hugging Face's Conv1D: act(x W + b)), b (N) or NULL, act a tf_activation
 * or TF_ACT_NONE. Saves the bias pass and, with an activation, one (..., N)
 * tensor and its gradient over matmul + bias_add + activation. */
tf_tensor *tf_dense(tf_ctx *ctx, tf_tensor *x, tf_tensor *w, int w_in_out, tf_tensor *b, int act);

/* ---------------------------------------------------------------- parameters */

/* A registry of named parameters (PyTorch state-dict names). Modules register
 * their slots; the registry then allocates, initialises, loads or lists them. */
typedef struct tf_params tf_params;
tf_params *tf_params_new(void);
void tf_params_free(tf_params *ps);
/* Register a slot; the tensor is created by tf_params_init / tf_params_load.
 * init: > 0 normal with that std, TF_INIT_ZEROS or TF_INIT_ONES. */
#define TF_INIT_ZEROS 0.0f
#define TF_INIT_ONES (-1.0f)
int tf_params_add(tf_params *ps, const char *name, tf_tensor **slot, int ndim,
                  const int64_t *shape, float init);
int tf_params_count(const tf_params *ps);
const char *tf_params_name(const tf_params *ps, int i);
tf_tensor *tf_params_tensor(const tf_params *ps, int i);
tf_tensor *tf_params_get(const tf_params *ps, const char *name);
/* Allocate every slot and fill it as registered; seeds differ per parameter. */
int tf_params_init(tf_params *ps, uint64_t seed);
void tf_params_zero_grad(tf_params *ps);

/* ---------------------------------------------------------------- layers */

typedef enum { TF_ACT_RELU, TF_ACT_GELU, TF_ACT_GELU_TANH, TF_ACT_NONE } tf_activation;

typedef struct {
    tf_tensor *weight; /* (out,in), PyTorch's layout */
    tf_tensor *bias;   /* (out) or NULL */
} tf_linear;

typedef struct {
    tf_tensor *weight, *bias; /* (C) each, either may be NULL */
    float eps;
} tf_layer_norm;

typedef struct {
    int embed_dim, num_heads;
    int kdim, vdim; /* input widths of key and value; embed_dim when equal */
    int bias;       /* projections have biases */
    float dropout;  /* on the attention weights, training only */
    int rel_max_offset; /* > 0: learned relative-position bias, offsets clipped to +-this */
} tf_mha_config;

typedef struct {
    tf_mha_config cfg;
    tf_tensor *in_proj_weight;  /* (3E,E) when kdim == vdim == E, else NULL */
    tf_tensor *q_proj_weight;   /* (E,E)    when the widths differ */
    tf_tensor *k_proj_weight;   /* (E,kdim) */
    tf_tensor *v_proj_weight;   /* (E,vdim) */
    tf_tensor *in_proj_bias;    /* (3E) or NULL */
    tf_linear out_proj;         /* (E,E) */
    tf_tensor *rel_bias;        /* (2*rel_max_offset+1, H) or NULL */
} tf_mha;

/* The masks of one attention, in PyTorch's conventions. */
typedef struct {
    tf_tensor *mask;             /* (Tq,Tk) or (B*H,Tq,Tk); U8 true = masked, or F32 added */
    tf_tensor *key_padding_mask; /* (B,Tk); U8 true = padding, or F32 added */
    int causal;
} tf_attn_mask;

tf_mha_config tf_mha_config_default(int embed_dim, int num_heads);
int tf_mha_register(tf_params *ps, const char *prefix, tf_mha *m, const tf_mha_config *cfg);
/* query (B,Tq,E), key (B,Tk,kdim), value (B,Tk,vdim) -> (B,Tq,E). When weights
 * is non-NULL it receives the attention weights averaged over heads, (B,Tq,Tk). */
tf_tensor *tf_mha_forward(tf_ctx *ctx, const tf_mha *m, tf_tensor *query, tf_tensor *key,
                          tf_tensor *value, const tf_attn_mask *mask, tf_tensor **weights);

tf_tensor *tf_linear_forward(tf_ctx *ctx, const tf_linear *l, tf_tensor *x);
/* act(linear(x)) fused (tf_dense); act a tf_activation or TF_ACT_NONE */
tf_tensor *tf_linear_act_forward(tf_ctx *ctx, const tf_linear *l, tf_tensor *x, int act);
tf_tensor *tf_layer_norm_forward(tf_ctx *ctx, const tf_layer_norm *n, tf_tensor *x);

/* Positional encodings. */
/* out (T,d): PE(pos,2i) = sin(pos / 10000^(2i/d)), PE(pos,2i+1) = cos(same). */
void tf_posenc_sinusoidal(float *out, int64_t T, int64_t d);
tf_tensor *tf_posenc_sinusoidal_tensor(tf_ctx *ctx, int64_t T, int64_t d);
/* Learned absolute: rows [start, start+T) of table (max_len,d), a view sharing its gradient. */
tf_tensor *tf_posenc_learned(tf_ctx *ctx, tf_tensor *table, int64_t start, int64_t T);
/* Learned relative: table (2K+1,H) -> bias (1,H,Tq,Tk) with
 * bias[h,i,j] = table[clip(j - (i + Tk - Tq), -K, K) + K, h]. */
tf_tensor *tf_posenc_relative_bias(tf_ctx *ctx, tf_tensor *table, int64_t Tq, int64_t Tk);

/* ---------------------------------------------------------------- Transformer layers */

typedef struct {
    int d_model, nhead, dim_feedforward;
    tf_activation activation;
    float layer_norm_eps;
    float dropout;
    int norm_first; /* 0: post-LN X <- LN(X + f(X)) (the original paper); 1: pre-LN */
    int bias;       /* linear and LayerNorm biases */
} tf_layer_config;

typedef struct {
    tf_mha self_attn;
    tf_linear linear1, linear2;
    tf_layer_norm norm1, norm2;
} tf_encoder_layer;

typedef struct {
    tf_mha self_attn, multihead_attn;
    tf_linear linear1, linear2;
    tf_layer_norm norm1, norm2, norm3;
} tf_decoder_layer;

typedef struct {
    int num_layers;
    tf_encoder_layer *layers;
    tf_layer_norm norm; /* final LayerNorm; norm.weight NULL when absent */
    int has_norm;
} tf_encoder;

typedef struct {
    int num_layers;
    tf_decoder_layer *layers;
    tf_layer_norm norm;
    int has_norm;
} tf_decoder;

typedef struct {
    tf_encoder encoder;
    tf_decoder decoder;
} tf_transformer;

/* PyTorch's defaults: dim_feedforward 2048, relu, eps 1e-5, post-LN, biases, dropout 0. */
tf_layer_config tf_layer_config_default(int d_model, int nhead);

/* Parameters get PyTorch's names under prefix ("" or "layers.0." ...). */
int tf_encoder_layer_register(tf_params *ps, const char *prefix, tf_encoder_layer *l,
                              const tf_layer_config *cfg);
int tf_decoder_layer_register(tf_params *ps, const char *prefix, tf_decoder_layer *l,
                              const tf_layer_config *cfg);
/* The stacks allocate their layer arrays; free them with tf_encoder_free / tf_decoder_free. */
int tf_encoder_register(tf_params *ps, const char *prefix, tf_encoder *e,
                        const tf_layer_config *cfg, int num_layers, int final_norm);
int tf_decoder_register(tf_params *ps, const char *prefix, tf_decoder *d,
                        const tf_layer_config *cfg, int num_layers, int final_norm);
int tf_transformer_register(tf_params *ps, const char *prefix, tf_transformer *t,
                            const tf_layer_config *cfg, int num_encoder_layers,
                            int num_decoder_layers);
void tf_encoder_free(tf_encoder *e);
void tf_decoder_free(tf_decoder *d);
void tf_transformer_free(tf_transformer *t);

/* All activations are batch-first: x (B,T,d_model). */
tf_tensor *tf_encoder_layer_forward(tf_ctx *ctx, const tf_encoder_layer *l,
                                    const tf_layer_config *cfg, tf_tensor *x,
                                    const tf_attn_mask *self_mask);
tf_tensor *tf_decoder_layer_forward(tf_ctx *ctx, const tf_decoder_layer *l,
                                    const tf_layer_config *cfg, tf_tensor *x, tf_tensor *memory,
                                    const tf_attn_mask *self_mask, const tf_attn_mask *cross_mask);
tf_tensor *tf_encoder_forward(tf_ctx *ctx, const tf_encoder *e, const tf_layer_config *cfg,
                              tf_tensor *x, const tf_attn_mask *self_mask);
tf_tensor *tf_decoder_forward(tf_ctx *ctx, const tf_decoder *d, const tf_layer_config *cfg,
                              tf_tensor *x, tf_tensor *memory, const tf_attn_mask *self_mask,
                              const tf_attn_mask *cross_mask);
/* src (B,S,d), tgt (B,T,d) -> (B,T,d). */
tf_tensor *tf_transformer_forward(tf_ctx *ctx, const tf_transformer *t, const tf_layer_config *cfg,
                                  tf_tensor *src, tf_tensor *tgt, const tf_attn_mask *src_mask,
                                  const tf_attn_mask *tgt_mask, const tf_attn_mask *memory_mask);

/* ---------------------------------------------------------------- safetensors */

typedef enum {
    TF_ST_F32, TF_ST_F16, TF_ST_BF16, TF_ST_I64, TF_ST_I32, TF_ST_U8, TF_ST_BOOL, TF_ST_COUNT
} tf_st_dtype;

typedef struct {
    const char *name;
    tf_st_dtype dtype;
    int ndim;
    int64_t shape[TF_MAX_DIMS];
    const void *data; /* inside the mapped file; may be unaligned */
    size_t nbytes;
} tf_st_entry;

typedef struct tf_st_file tf_st_file;

/* Parse a safetensors file (mmap) or buffer (borrowed, must outlive the handle).
 * Every malformed header gives NULL and a message naming the problem. */
tf_st_file *tf_st_open(const char *path);
tf_st_file *tf_st_open_memory(const void *buf, size_t len, const char *label);
void tf_st_close(tf_st_file *f);
int tf_st_count(const tf_st_file *f);
const tf_st_entry *tf_st_entry_at(const tf_st_file *f, int i);
const tf_st_entry *tf_st_find(const tf_st_file *f, const char *name);
const char *tf_st_dtype_name(tf_st_dtype dt);
/* Convert an entry into a new contiguous tensor: float types -> F32, integer
 * types -> I32 (range-checked), U8/BOOL -> U8. */
tf_tensor *tf_st_to_tensor(const tf_st_file *f, const tf_st_entry *e, tf_arena *a);
/* Copy an F32/F16/BF16 entry into dst (same shape, contiguous F32). */
int tf_st_read_f32(const tf_st_file *f, const tf_st_entry *e, tf_tensor *dst);

/* Writer: collect named tensors, then write atomically (temporary file + rename). */
typedef struct tf_st_writer tf_st_writer;
tf_st_writer *tf_st_writer_new(void);
void tf_st_writer_free(tf_st_writer *w);
/* Copies the tensor's data (any layout) now. F32 is written as F32, U8 as BOOL,
 * I32 as I32. */
int tf_st_writer_add(tf_st_writer *w, const char *name, const tf_tensor *t);
/* Write gradient of t (F32). */
int tf_st_writer_add_grad(tf_st_writer *w, const char *name, const tf_tensor *t);
/* Store t converted to dtype: F32 tensors as F32, F16 or BF16 (round to nearest
 * even); I32 tensors as I32 or I64; U8 tensors as U8 or BOOL. */
int tf_st_writer_add_as(tf_st_writer *w, const char *name, const tf_tensor *t, tf_st_dtype dtype);
/* A __metadata__ string entry (key and value copied). */
int tf_st_writer_set_metadata(tf_st_writer *w, const char *key, const char *value);
int tf_st_writer_save(tf_st_writer *w, const char *path);
/* A __metadata__ string of an open file, or NULL. */
const char *tf_st_metadata(const tf_st_file *f, const char *key);

/* Load every registered parameter from a safetensors file: a missing tensor, a
 * wrong shape or (when strict) an unexpected tensor is an error naming it. */
int tf_params_load(tf_params *ps, const tf_st_file *f, int strict);
int tf_params_save(const tf_params *ps, const char *path);

/* ---------------------------------------------------------------- tokenizers */

typedef enum {
    TF_TOKENIZER_CHAR,      /* one id per character of a fixed alphabet (or per byte) */
    TF_TOKENIZER_BPE,       /* sub-word BPE of the lecture decks: characters + word-end marker */
    TF_TOKENIZER_BYTE_BPE,  /* GPT-2 byte-level BPE */
    TF_TOKENIZER_WORDPIECE  /* BERT WordPiece */
} tf_tokenizer_kind;

/* A growable id list; zero-initialise, free with tf_ids_free. */
typedef struct {
    int32_t *v;
    size_t n, cap;
} tf_ids;
int tf_ids_push(tf_ids *ids, int32_t id);
void tf_ids_free(tf_ids *ids);

typedef struct tf_tokenizer tf_tokenizer;

/* Load from a folder, recognising its files: encoder.json + vocab.bpe (OpenAI)
 * or vocab.json + merges.txt (Hugging Face) -> byte-level BPE; vocab.txt ->
 * WordPiece; tokenizer.tformer.json -> what it names. A file path ending in
 * vocab.txt is a WordPiece vocabulary. "char" alone is the 256-byte
 * tokenizer (id = byte value). */
tf_tokenizer *tf_tokenizer_load(const char *dir);
void tf_tokenizer_free(tf_tokenizer *t);
tf_tokenizer_kind tf_tokenizer_kind_of(const tf_tokenizer *t);
int32_t tf_tokenizer_vocab_size(const tf_tokenizer *t);
/* Id of a vocabulary entry written as in the vocabulary file, or -1. */
int32_t tf_tokenizer_token_id(const tf_tokenizer *t, const char *token);
/* Append the ids of text (any bytes; see docs/tokenizers.md for invalid UTF-8). */
int tf_tokenizer_encode(tf_tokenizer *t, const char *text, size_t len, tf_ids *out);
/* The text of ids, malloc'ed and NUL-terminated; an id out of range is an error. */
int tf_tokenizer_decode(const tf_tokenizer *t, const int32_t *ids, size_t n, char **text, size_t *len);
/* BERT inputs: [CLS] a [SEP] (b [SEP]) with token type ids 0 / 1, truncated
 * (longest first) to max_len ids when max_len > 0. WordPiece only. */
int tf_tokenizer_encode_pair(tf_tokenizer *t, const char *a, size_t la, const char *b, size_t lb,
                             size_t max_len, tf_ids *ids, tf_ids *type_ids);

typedef struct {
    tf_tokenizer_kind kind; /* BPE, BYTE_BPE or WORDPIECE (CHAR: the corpus' characters) */
    int32_t vocab_size;
    int64_t min_frequency;  /* merges need at least this count (default 0: any) */
} tf_tokenizer_train_opts;

/* Learn a vocabulary from text files and write it to out_dir (created if
 * missing) in the format tf_tokenizer_load reads back. */
int tf_tokenizer_train(const tf_tokenizer_train_opts *o, const char *const *files, int n_files,
                       const char *out_dir);

/* ---------------------------------------------------------------- GPT: decoder language model */

typedef enum { TF_POS_LEARNED, TF_POS_SINUSOIDAL } tf_pos_kind;

typedef struct {
    int vocab_size, context; /* context: the longest sequence (positions) */
    int n_layer, n_head, n_embd;
    int n_inner;             /* MLP width; 0 means 4 * n_embd */
    float dropout;
    tf_pos_kind pos;
    int norm_first;          /* 1: pre-LN with a final LayerNorm (GPT-2); 0: post-LN (the original paper) */
    tf_activation activation;/* GPT-2: TF_ACT_GELU_TANH */
    int tied;                /* output projection = token embedding (GPT-2) */
    float layer_norm_eps;
} tf_gpt_config;

/* GPT-2 small's shape scaled to the given sizes: pre-LN, learned positions,
 * tanh GELU, tied embeddings, eps 1e-5, dropout 0. */
tf_gpt_config tf_gpt_config_default(int vocab_size, int context, int n_layer, int n_head, int n_embd);

/* Weights of one block, named as Hugging Face's GPT-2 (Conv1D layout: (in, out)). */
typedef struct {
    tf_tensor *ln_1_w, *ln_1_b;
    tf_tensor *c_attn_w, *c_attn_b; /* (C,3C), (3C) */
    tf_tensor *attn_proj_w, *attn_proj_b; /* (C,C), (C) */
    tf_tensor *ln_2_w, *ln_2_b;
    tf_tensor *c_fc_w, *c_fc_b;     /* (C,F), (F) */
    tf_tensor *mlp_proj_w, *mlp_proj_b; /* (F,C), (C) */
} tf_gpt_block;

typedef struct {
    tf_gpt_config cfg;
    tf_params *params;  /* every tensor below, by Hugging Face name */
    tf_tensor *wte;     /* (V,C) */
    tf_tensor *wpe;     /* (context,C), NULL with sinusoidal positions */
    tf_gpt_block *h;    /* n_layer blocks */
    tf_tensor *ln_f_w, *ln_f_b; /* pre-LN only */
    tf_tensor *lm_head; /* (V,C), NULL when tied */
} tf_gpt;

/* Check a configuration; 0 or -1 with a message naming the field. */
int tf_gpt_config_check(const tf_gpt_config *c);
/* A model with GPT-2's initialisation (N(0,0.02), residual projections scaled
 * by 1/sqrt(2 n_layer)), or with its tensors left for tf_params_load when seed == 0. */
tf_gpt *tf_gpt_new(const tf_gpt_config *cfg, uint64_t seed);
void tf_gpt_free(tf_gpt *m);
/* ids (B,T) I32 -> logits (B,T,V); with targets (B,T) I32 (-1 = ignore) the
 * return value is the mean cross-entropy and *logits (if asked) the logits. */
tf_tensor *tf_gpt_forward(tf_ctx *ctx, const tf_gpt *m, tf_tensor *ids, tf_tensor *targets, tf_tensor **logits);

/* ---------------------------------------------------------------- generation */

typedef struct {
    int max_tokens;
    float temperature;        /* 0: greedy */
    int top_k;                /* 0: off */
    float top_p;              /* 1: off */
    float repetition_penalty; /* 1: off; >1 discourages tokens already in the context (CTRL's rule) */
    uint64_t seed;
    int beam;                 /* >= 1: beam search of that width (deterministic; sampling options ignored); 0: sampling */
    float length_penalty;     /* beam scores are sum(log p) / length^length_penalty */
    int32_t eos_id;           /* ends a sequence (-1: none) */
} tf_generate_opts;

tf_generate_opts tf_generate_opts_default(void);
/* Called with each new token as it is chosen (beam search: the best sequence
 * at the end); a non-zero return stops generation. */
typedef int (*tf_token_fn)(void *user, int32_t id);

/* Continue the prompt (at least one id). The generated ids are appended to
 * out; *score (if asked) gets the sequence's log-probability (beam: the
 * length-penalised score). Decoding is incremental with a KV cache; beam
 * search keeps the prompt's cache once, shared by every beam. */
int tf_gpt_generate(const tf_gpt *m, const int32_t *prompt, int n_prompt, const tf_generate_opts *o,
                    tf_token_fn on_token, void *user, tf_ids *out, double *score);

/* Incremental decoding, one position at a time: logits (V) of the next token
 * after feeding `token` at the cache's next position. */
typedef struct tf_kv_cache tf_kv_cache;
tf_kv_cache *tf_kv_cache_new(const tf_gpt *m, int capacity, const tf_kv_cache *shared_prefix);
void tf_kv_cache_free(tf_kv_cache *c);
int tf_kv_cache_len(const tf_kv_cache *c); /* positions held, the prefix included */
int tf_gpt_decode_step(const tf_gpt *m, tf_kv_cache *c, int32_t token, float *logits);

/* ---------------------------------------------------------------- optimisation */

/* AdamW with decoupled weight decay, applied to parameters of 2+ dims only
 * (no decay on biases and norms). State tensors are named "adam.m.<param>",
 * "adam.v.<param>" in checkpoints. */
typedef struct {
    float beta1, beta2, eps, weight_decay;
} tf_adamw_config;

typedef struct tf_adamw tf_adamw;
tf_adamw *tf_adamw_new(tf_params *ps, tf_adamw_config cfg);
void tf_adamw_free(tf_adamw *o);
/* One update with learning rate lr from the parameters' gradients. */
void tf_adamw_step(tf_adamw *o, float lr);
int64_t tf_adamw_steps(const tf_adamw *o);
int tf_adamw_save(const tf_adamw *o, tf_st_writer *w);
int tf_adamw_load(tf_adamw *o, const tf_st_file *f, int64_t steps);

/* Linear warmup over `warmup` steps, then cosine decay to min_lr at max_steps. */
float tf_lr_schedule(int64_t step, int64_t warmup, int64_t max_steps, float lr, float min_lr);
/* Scale every gradient so that their global L2 norm is at most max_norm (no
 * clipping when max_norm <= 0); returns the norm before clipping. */
double tf_clip_grad_norm(tf_params *ps, double max_norm);

/* Hugging Face GPT-2 folders: config.json + model.safetensors. */
tf_gpt *tf_gpt_load_hf(const char *dir);
int tf_gpt_save_hf(const tf_gpt *m, const char *dir);

/* ---------------------------------------------------------------- training a GPT */

typedef struct {
    tf_gpt_config model;     /* vocab_size is taken from the tokenizer */
    int64_t steps;           /* optimizer steps */
    int batch, accum;        /* sequences per micro-batch; micro-batches per step */
    float lr, min_lr;
    int64_t warmup;          /* linear warmup steps, then cosine decay to min_lr at `steps` */
    float weight_decay, beta1, beta2, grad_clip;
    int64_t eval_every;      /* validation loss every N steps (and at the end) */
    int eval_batches;
    float val_fraction;      /* the last part of the tokens is held out */
    int64_t checkpoint_every;
    uint64_t seed;
} tf_train_config;

/* nanoGPT's character-level Shakespeare settings (4 layers, 4 heads, width 128,
 * context 64, batch 12, 2000 steps, lr 1e-3, warmup 100, dropout 0). */
tf_train_config tf_train_config_default(void);
/* Overlay the keys of a JSON config file (the field names above; model keys
 * n_layer, n_head, n_embd, context, dropout, pos "learned"|"sinusoidal",
 * norm_first, activation "relu"|"gelu"|"gelu_tanh", tied, n_inner). Unknown
 * keys are an error naming them. */
int tf_train_config_load(tf_train_config *c, const char *path);
int tf_train_config_check(const tf_train_config *c);

typedef struct {
    int64_t step, steps;     /* step just done (1-based), total */
    float loss, lr;
    double grad_norm;
    double val_loss;         /* NaN unless evaluated at this step */
    double tokens_per_s, elapsed_s, eta_s;
} tf_train_report;

typedef void (*tf_train_report_fn)(void *user, const tf_train_report *r);

/* Train a GPT on the text files and write run_dir: config.json + model.safetensors
 * (a Hugging Face GPT-2 folder), checkpoint.safetensors (weights, AdamW state,
 * step, seed, config), the tokenizer's files, losses.csv and loss.png. The
 * tokenizer is a folder or "char" (the data's characters). With resume, the
 * run continues from run_dir's checkpoint bit for bit. When *stop becomes
 * non-zero the step in progress finishes, a checkpoint is written and the call
 * returns 1. Returns 0 when done, -1 on error. */
int tf_gpt_train(const tf_train_config *cfg, const char *const *data, int n_data, const char *tokenizer,
                 const char *run_dir, int resume, volatile int *stop, tf_train_report_fn report, void *user);

/* Mean next-token loss of a model on the text of files (windows of the context). */
int tf_gpt_evaluate(const tf_gpt *m, tf_tokenizer *tok, const char *const *data, int n_data, double *loss,
                    int64_t *tokens);

/* ---------------------------------------------------------------- PyTorch modules */

/* Run a torch.nn module (MultiheadAttention, TransformerEncoderLayer, ...)
 * described by a JSON config, with its state_dict weights, on named inputs;
 * write `output` (and gradients when the inputs hold `grad_output`). Warnings
 * (unknown config keys) go to `log` when non-NULL. See docs/torch-run.md. */
int tf_torch_run(const char *config_path, const char *weights_path, const char *input_path,
                 const char *output_path, FILE *log);

#ifdef __cplusplus
}
#endif
#endif /* TFORMER_H */
