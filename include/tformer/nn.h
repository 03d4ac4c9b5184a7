/* tformer: Parameters, layers and Transformer blocks. */
#ifndef TFORMER_NN_H
#define TFORMER_NN_H

#include "ops.h"
#include "safetensors.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------- parameters */

/* A registry of named parameters (PyTorch state-dict names). Modules register
 * their slots; the registry then allocates, initialises, loads or lists them. */
typedef struct tf_params tf_params;
TF_API tf_params *tf_params_new(void);
TF_API void tf_params_free(tf_params *ps);
/* Register a slot; the tensor is created by tf_params_init / tf_params_load.
 * init: > 0 normal with that std, TF_INIT_ZEROS or TF_INIT_ONES. */
#define TF_INIT_ZEROS 0.0f
#define TF_INIT_ONES (-1.0f)
TF_API int tf_params_add(tf_params *ps, const char *name, tf_tensor **slot, int ndim,
                  const int64_t *shape, float init);
TF_API int tf_params_count(const tf_params *ps);
TF_API const char *tf_params_name(const tf_params *ps, int i);
TF_API tf_tensor *tf_params_tensor(const tf_params *ps, int i);
TF_API tf_tensor *tf_params_get(const tf_params *ps, const char *name);
/* Allocate every slot and fill it as registered; seeds differ per parameter. */
TF_API int tf_params_init(tf_params *ps, uint64_t seed);
TF_API void tf_params_zero_grad(tf_params *ps);
/* 0 when every allocated parameter holds only finite values; else -1, *name (when
 * name is not NULL) the first tensor holding a NaN or an infinity, and an error
 * naming it, the first bad element and how many there are. */
TF_API int tf_params_check_finite(const tf_params *ps, const char **name);
/* Inference with int8 weights: every 2-D weight gets an int8 copy the first
 * time a dense layer reads it without tracking gradients (rows of the
 * product, per-row absmax scales: w ~ scale * q, q in [-127, 127]); the
 * layer's input is quantised per row the same way at each call, and the
 * product runs on int8 dot products (AVX-512 VNNI where the CPU has it).
 * Products that track gradients keep the float weights. Call it once the
 * weights are final: the copies do not follow later changes to them.
 * TF_QUANT_F32 keeps float values: each (out,in) weight a dense layer reads
 * gets a transposed copy, (in,out), which products of a few rows (decoding
 * steps: under 96 rows, or 192 for weights under 2 MB) read in place through
 * the tile kernel, where a BLAS would repack the weight at every call: the
 * same products summed in another order (1.3-3.7x faster on AVX-512,
 * bench_matmul infer). TF_QUANT_NONE drops the copies. */
typedef enum { TF_QUANT_NONE, TF_QUANT_INT8, TF_QUANT_F32, TF_QUANT_BF16 } tf_quant_kind;
TF_API int tf_params_quantize(tf_params *ps, tf_quant_kind kind);
/* The precision of inference with these weights (the inference verbs'
 * --precision; docs/precision.md): TF_PRECISION_F32, the weights as they are;
 * TF_PRECISION_INT8, tf_params_quantize(ps, TF_QUANT_INT8); TF_PRECISION_BF16,
 * tf_params_quantize(ps, TF_QUANT_BF16): every dense product that tracks no
 * gradient rounds its input and the weight to bfloat16 and sums in float, as
 * tf_ctx_set_precision's bf16 (AMX or AVX512-BF16; float where the CPU has
 * neither, tf_bf16_info). Products that track gradients, and those between
 * activations (attention's scores), stay float. F32 on weights already F32
 * keeps their copies (TF_QUANT_F32, built for decoding). Call it before threads
 * share the weights. */
TF_API int tf_params_set_precision(tf_params *ps, tf_precision precision);
/* The weights' precision: the last tf_params_set_precision's, or tf_params_quantize's
 * (INT8 -> int8, BF16 -> bf16, NONE and F32 -> f32); f32 at first. */
TF_API tf_precision tf_params_precision(const tf_params *ps);
/* Bytes held by the copies built so far. */
TF_API size_t tf_params_quant_bytes(const tf_params *ps);

/* Load every registered parameter from a safetensors file: a missing tensor, a
 * wrong shape or (when strict) an unexpected tensor is an error naming it. */
TF_API int tf_params_load(tf_params *ps, const tf_st_file *f, int strict);
TF_API int tf_params_save(const tf_params *ps, const char *path);

/* ---------------------------------------------------------------- layers */

typedef struct {
    tf_tensor *weight; /* (out,in), PyTorch's layout */
    tf_tensor *bias;   /* (out) or NULL */
} tf_linear;

typedef struct {
    tf_tensor *weight, *bias; /* (C) each, either may be NULL */
    float eps;
    int rms;                  /* 1: x / sqrt(mean(x^2) + eps) * weight (tf_rmsnorm: no centring; ImageGPT's) */
} tf_layer_norm;

/* The block's norms: LayerNorm, or RMS norm (no centring, no bias: ImageGPT's "LayerNorm"). */
typedef enum { TF_NORM_LAYER, TF_NORM_RMS } tf_norm_kind;

typedef struct {
    int d_model, n_head;
    int kdim, vdim; /* input widths of key and value; d_model when equal */
    int bias;       /* projections have biases */
    float dropout;  /* on the attention weights, training only */
    int rel_max_offset; /* > 0: learned relative-position bias, offsets clipped to +-this */
    int w_in_out;   /* projection weights stored (in,out), Hugging Face's Conv1D (GPT-2); else (out,in) */
    /* Nyström attention (Hugging Face's Nyströmformer; self-attention without a
     * cache, not causal, a key padding mask its only mask), off by default:
     * q and k scaled by D^-1/4 each, then with landmarks L > 0 and T != L
     * (T a multiple of L) the landmarks are segment means q~, k~ (B,H,L,D) and
     *   out = softmax(q k~^T) pinv(softmax(q~ k~^T)) (softmax(q~ k^T + mask) v)
     * pinv: 6 steps of the iterative Moore-Penrose inverse from
     * Z0 = K^T / max over the whole batch of K's column sums; with L == 0 or
     * T == L exact softmax(q k^T + mask) v. No dropout on the weights. */
    int nystrom;
    int landmarks;   /* L: segment-mean landmarks; 0: exact softmax (num_landmarks == segment_means_seq_len) */
    int conv_kernel; /* K > 0 (odd): out += depthwise convolution of v along the sequence, conv_weight (H,1,K,1) */
    /* Sparse attention (tf_sparse_attention, off by default): self-attention
     * (a cache's new positions continue the sequence) over the keys `pattern`
     * lets each query see (its causal field decides causality), a key padding
     * mask its only mask, no dropout on the weights (the kernel never forms
     * them), no attention weights out. */
    int sparse;
    tf_sparse_pattern pattern;
    /* Rotary positions (tf_rope, off with TF_ROPE_NONE): self-attention's q and k
     * turned by their positions before the scores (a cache's new positions
     * continue from its length); not with cross-attention. */
    tf_rope_kind rope;
    float rope_base; /* 10000 when 0 */
    /* Locality self-attention (Lee et al. 2021, "Vision Transformer for Small-Size
     * Datasets"), off by default: each head's scores q k^T / sqrt(D) multiplied by
     * a learned `temperature` (H, initially 1), and each query's own key hidden
     * (the diagonal, key i + Tk - Tq for query i), so attention goes to the other
     * tokens. Full attention only (not Nyström or sparse). */
    int lsa;
    /* Scalable-Softmax (Nakanishi 2025, "Scalable-Softmax Is Superior for
     * Attention"), off at 0: each head's scores q k^T / sqrt(D) multiplied by
     * s[h] ln n, n the keys the query sees (the row's keys not padded, and with
     * causal masking those not after it; lsa's own key not counted), so a
     * peaked row stays peaked however many keys it has; s (`ssmax_scale`, (H))
     * learned, starting at this value. Full attention with a key padding mask
     * at most (no attn_mask), not Nyström or sparse. */
    float ssmax;
} tf_mha_config;

typedef struct {
    tf_mha_config cfg;
    tf_tensor *in_proj_weight;  /* (3E,E) when kdim == vdim == E, else NULL */
    tf_tensor *q_proj_weight;   /* (E,E)    when the widths differ */
    tf_tensor *k_proj_weight;   /* (E,kdim) */
    tf_tensor *v_proj_weight;   /* (E,vdim) */
    tf_tensor *in_proj_bias;    /* (3E) or NULL */
    tf_tensor *q_proj_bias, *k_proj_bias, *v_proj_bias; /* (E) each when the biases are separate (BERT) */
    tf_linear out_proj;         /* (E,E) */
    tf_tensor *rel_bias;        /* (2*rel_max_offset+1, H) or NULL */
    tf_tensor *conv_weight;     /* Nyström's skip on v: (H,1,K,1) with conv_kernel K, else NULL */
    tf_tensor *temperature;     /* lsa: (H), each head's multiplier of 1/sqrt(D), else NULL */
    tf_tensor *ssmax_scale;     /* ssmax: (H), each head's s (scores times s ln n), else NULL */
} tf_mha;

/* The masks of one attention, in PyTorch's conventions. */
typedef struct {
    tf_tensor *mask;             /* (Tq,Tk) or (B*H,Tq,Tk); U8 true = masked, or F32 added */
    tf_tensor *key_padding_mask; /* (B,Tk); U8 true = padding, or F32 added */
    int causal;
} tf_attn_mask;

TF_API tf_mha_config tf_mha_config_default(int d_model, int n_head);
TF_API int tf_mha_register(tf_params *ps, const char *prefix, tf_mha *m, const tf_mha_config *cfg);
/* query (B,Tq,E), key (B,Tk,kdim), value (B,Tk,vdim) -> (B,Tq,E). When weights
 * is non-NULL it receives the attention weights averaged over heads, (B,Tq,Tk). */
TF_API tf_tensor *tf_mha_forward(tf_ctx *ctx, const tf_mha *m, tf_tensor *query, tf_tensor *key,
                          tf_tensor *value, const tf_attn_mask *mask, tf_tensor **weights);

TF_API tf_tensor *tf_linear_forward(tf_ctx *ctx, const tf_linear *l, tf_tensor *x);
/* act(linear(x)) fused (tf_dense); act a tf_activation or TF_ACT_NONE */
TF_API tf_tensor *tf_linear_act_forward(tf_ctx *ctx, const tf_linear *l, tf_tensor *x, int act);
TF_API tf_tensor *tf_layer_norm_forward(tf_ctx *ctx, const tf_layer_norm *n, tf_tensor *x);

/* Where a model's positions come from: a learned table or the sinusoidal one,
 * interleaved (the paper) or in halves (Marian: every sine, then every cosine). */
typedef enum { TF_POS_LEARNED, TF_POS_SINUSOIDAL, TF_POS_SINUSOIDAL_HALVES } tf_pos_kind;

/* Positional encodings. */
/* out (T,d): rows for positions start .. start+T-1 of
 * PE(pos,2i) = sin(pos / 10000^(2i/d)), PE(pos,2i+1) = cos(same). */
TF_API void tf_posenc_sinusoidal(float *out, int64_t start, int64_t T, int64_t d);
TF_API tf_tensor *tf_posenc_sinusoidal_tensor(tf_ctx *ctx, int64_t start, int64_t T, int64_t d);
/* Hugging Face Marian's layout, out (T,d) for positions start .. start+T-1 with
 * h = ceil(d/2): out[pos,i] = sin(pos / 10000^(2i/d)) for i < h, then
 * out[pos,h+i] = cos(pos / 10000^(2i/d)) for i < d - h (computed in double). */
TF_API void tf_posenc_sinusoidal_halves(float *out, int64_t start, int64_t T, int64_t d);
TF_API tf_tensor *tf_posenc_sinusoidal_halves_tensor(tf_ctx *ctx, int64_t start, int64_t T, int64_t d);
/* Learned absolute: rows [start, start+T) of table (max_len,d), a view sharing its gradient. */
TF_API tf_tensor *tf_posenc_learned(tf_ctx *ctx, tf_tensor *table, int64_t start, int64_t T);
/* Learned relative: table (2K+1,H) -> bias (1,H,Tq,Tk) with
 * bias[h,i,j] = table[clip(j - (i + Tk - Tq), -K, K) + K, h]. */
TF_API tf_tensor *tf_posenc_relative_bias(tf_ctx *ctx, tf_tensor *table, int64_t Tq, int64_t Tk);

/* ---------------------------------------------------------------- recurrent layers */

/* The RNN baseline (src/nn/rnn.c): PyTorch's nn.GRU / nn.LSTM one layer at a
 * time, running the cell ops (tf_gru_cell, tf_lstm_cell) step by step. */
typedef enum { TF_RNN_GRU, TF_RNN_LSTM } tf_rnn_kind;

typedef struct {
    tf_rnn_kind kind;
    int64_t input_size, hidden_size;
    int reverse;                   /* from each row's last real token back to its first */
    tf_tensor *weight_ih;          /* (G*H,I), G = 3 (GRU: r,z,n) or 4 (LSTM: i,f,g,o) */
    tf_tensor *weight_hh;          /* (G*H,H) */
    tf_tensor *bias_ih, *bias_hh;  /* (G*H) each, or NULL */
} tf_rnn;

/* A direction's state: h (B,H), and c (B,H) for the LSTM (NULL for the GRU). */
typedef struct {
    tf_tensor *h, *c;
} tf_rnn_state;

/* nn.GRU(bidirectional=True)'s layer: h_j = [->h_j; <-h_j]. */
typedef struct {
    tf_rnn fwd, bwd;
} tf_birnn;

/* "<prefix>weight_ih<suffix>", "weight_hh", "bias_ih", "bias_hh" (PyTorch's
 * names: suffix "" for a GRUCell / LSTMCell, "_l0" or "_l0_reverse" for a
 * layer of nn.GRU); every tensor N(0, 1/(3H)), the variance of PyTorch's
 * U(-1/sqrt(H), 1/sqrt(H)). */
TF_API int tf_rnn_register(tf_params *ps, const char *prefix, const char *suffix, tf_rnn *r, tf_rnn_kind kind,
                           int64_t input_size, int64_t hidden_size, int bias, int reverse);
/* x (B,T,I) -> (B,T,H). pad (B,T) U8 or NULL: nonzero = padding, trailing in
 * each row; a padded step leaves the row's state unchanged and outputs 0
 * (PyTorch's pack_padded_sequence / pad_packed_sequence). init: starting
 * state (NULL or NULL members: zeros); final receives the state after the
 * last step, each row's at its last real token (PyTorch's h_n, c_n). */
TF_API tf_tensor *tf_rnn_forward(tf_ctx *ctx, const tf_rnn *r, tf_tensor *x, tf_tensor *pad,
                                 const tf_rnn_state *init, tf_rnn_state *final);
/* Layer `layer` of a bidirectional nn.GRU / nn.LSTM: "<prefix>weight_ih_l<layer>" and "..._reverse". */
TF_API int tf_birnn_register(tf_params *ps, const char *prefix, int layer, tf_birnn *b, tf_rnn_kind kind,
                             int64_t input_size, int64_t hidden_size, int bias);
/* x (B,T,I) -> (B,T,2H), both directions from zero states; final[0] forward's, final[1] backward's. */
TF_API tf_tensor *tf_birnn_forward(tf_ctx *ctx, const tf_birnn *b, tf_tensor *x, tf_tensor *pad,
                                   tf_rnn_state final[2]);

/* Bahdanau's additive attention: e_j = v_a^T tanh(W_a s + U_a h_j),
 * alpha = softmax_j(e) over the unpadded j, context = sum_j alpha_j h_j. */
typedef struct {
    int64_t dec_size, enc_size, attn_size; /* Hd, He, A */
    tf_linear W_a;                         /* "<prefix>W_a" (A,Hd), bias optional */
    tf_linear U_a;                         /* "<prefix>U_a" (A,He), bias optional */
    tf_linear v_a;                         /* "<prefix>v_a" (1,A), no bias (softmax ignores it) */
} tf_additive_attn;

TF_API int tf_additive_attn_register(tf_params *ps, const char *prefix, tf_additive_attn *a, int64_t dec_size,
                                     int64_t enc_size, int64_t attn_size, int bias, float init_std);
/* U_a h_j (B,S,A): once per source sentence, reused by every decoder step. */
TF_API tf_tensor *tf_additive_attn_keys(tf_ctx *ctx, const tf_additive_attn *a, tf_tensor *h);
/* s (B,Hd), h (B,S,He), keys from tf_additive_attn_keys or NULL (computed),
 * pad (B,S) U8 (nonzero = padding) or NULL -> context (B,He); alpha, when
 * non-NULL, receives the weights (B,S) (0 on padding; a row that is all
 * padding gives zeros). */
TF_API tf_tensor *tf_additive_attn_forward(tf_ctx *ctx, const tf_additive_attn *a, tf_tensor *s, tf_tensor *h,
                                           tf_tensor *keys, tf_tensor *pad, tf_tensor **alpha);

/* ---------------------------------------------------------------- the KV cache */

/* Keys and values of the positions a decoder has seen, per layer: a block
 * given a cache appends the new positions' keys and values and attends over
 * everything held, so incremental decoding runs the same ops as a full pass. */
typedef struct tf_kv_cache tf_kv_cache;
/* Room for `capacity` positions of n_layer layers, each (batch, n_head, capacity, head_dim). */
TF_API tf_kv_cache *tf_kv_cache_new(int n_layer, int batch, int n_head, int head_dim, int capacity);
TF_API void tf_kv_cache_free(tf_kv_cache *c);
/* Positions held (committed by tf_kv_cache_advance). */
TF_API int tf_kv_cache_len(const tf_kv_cache *c);
TF_API int tf_kv_cache_capacity(const tf_kv_cache *c);
/* Commit the n positions every layer has just appended. */
TF_API int tf_kv_cache_advance(tf_kv_cache *c, int n);
/* An independent copy of the positions held (a beam's child). */
TF_API tf_kv_cache *tf_kv_cache_fork(const tf_kv_cache *c);
/* Forget every position. */
TF_API void tf_kv_cache_reset(tf_kv_cache *c);
/* Keep rows rows[0..n) (repeats allowed) as the new batch of n rows: a
 * batch's beams after a search step, sentences that ended dropped. */
TF_API int tf_kv_cache_select(tf_kv_cache *c, const int *rows, int n);

/* ---------------------------------------------------------------- the Transformer block */

/* Which keys a query sees in self-attention, and how (room for sparse and
 * continual attention). */
typedef enum {
    TF_ATTN_FULL,   /* every key (encoders; masks may still hide some) */
    TF_ATTN_CAUSAL, /* keys up to the query's own position (decoders) */
    TF_ATTN_NYSTROM, /* every key through Nyström landmarks (tf_mha_config's nystrom; block's landmarks, conv_kernel) */
    TF_ATTN_SPARSE  /* the keys the block's `sparse` pattern lets each query see (block-sparse flash kernel) */
} tf_attn_kind;

/* The self-attention's kind and the options of its kinds (the options live
 * with the attention they change; a family sets what it uses). */
typedef struct {
    tf_attn_kind kind;
    int landmarks;            /* TF_ATTN_NYSTROM: landmarks L (0: exact softmax), T a multiple of L */
    int conv_kernel;          /* TF_ATTN_NYSTROM: K > 0 (odd) adds the depthwise convolution of v (role CONV_W) */
    tf_sparse_pattern sparse; /* TF_ATTN_SPARSE: which keys each query sees; attn_dropout must be 0 */
    tf_rope_kind rope;        /* rotary positions (tf_mha_config's rope), TF_ROPE_NONE: none */
    float rope_base;          /* their base; 10000 when 0 */
    int lsa;                  /* locality self-attention (tf_mha_config's lsa; role TEMPERATURE): TF_ATTN_FULL only */
    float ssmax;              /* Scalable-Softmax's initial s (tf_mha_config's ssmax; role SSMAX), 0: off; full or causal */
    int qkv_no_bias;          /* with the block's bias: q, k and v without theirs all the same (ViT's qkv_bias false) */
} tf_self_attn_config;

/* One block serves every family: self-attention, an optional cross-attention
 * and a feed-forward network, each a residual sub-layer, pre-LN
 * x + f(LN(x)) or post-LN LN(x + f(x)). What one family alone does is its own
 * composition of the sub-layers (tf_block_sublayer): DistilBERT's undropped
 * attention output, ViViT's factorised self-attention. */
typedef struct {
    int d_model, n_head, d_ff;
    tf_activation activation;
    float norm_eps;
    float dropout;      /* on each sub-layer's output */
    float attn_dropout; /* on the attention weights */
    int norm_first;     /* 0: post-LN X <- LN(X + f(X)) (the original paper); 1: pre-LN */
    int bias;           /* projections and LayerNorms have biases */
    tf_self_attn_config self_attn;
    int cross;          /* a cross-attention sub-layer over `memory` (encoder-decoder; ViViT's Model 3
                         * registers its attention across frames under these roles) */
    float activation_dropout; /* after the feed-forward activation (PyTorch's layers: = dropout) */
    int w_in_out;       /* weights stored (in,out): Hugging Face's Conv1D (GPT-2, ImageGPT) */
    tf_norm_kind norm;  /* TF_NORM_RMS: the norms without bias (no NORM_*_B roles) whatever `bias` says */
} tf_block_config;

typedef struct {
    tf_mha self_attn, cross_attn;
    tf_linear ff_in, ff_out;           /* (d_ff,d_model), (d_model,d_ff); transposed with w_in_out */
    tf_layer_norm norm_attn, norm_cross, norm_ff;
} tf_block;

/* What a family's checkpoint calls each tensor of a block: its name map. */
typedef enum {
    TF_BP_QKV_W, TF_BP_QKV_B,   /* q, k, v fused: (3d,d) and (3d) (PyTorch's in_proj, GPT-2's c_attn) */
    TF_BP_Q_W, TF_BP_Q_B, TF_BP_K_W, TF_BP_K_B, TF_BP_V_W, TF_BP_V_B, /* or apart (BERT) */
    TF_BP_OUT_W, TF_BP_OUT_B,
    TF_BP_NORM_ATTN_W, TF_BP_NORM_ATTN_B,
    TF_BP_X_QKV_W, TF_BP_X_QKV_B, /* the same for cross-attention */
    TF_BP_X_Q_W, TF_BP_X_Q_B, TF_BP_X_K_W, TF_BP_X_K_B, TF_BP_X_V_W, TF_BP_X_V_B,
    TF_BP_X_OUT_W, TF_BP_X_OUT_B,
    TF_BP_NORM_CROSS_W, TF_BP_NORM_CROSS_B,
    TF_BP_FF_IN_W, TF_BP_FF_IN_B, TF_BP_FF_OUT_W, TF_BP_FF_OUT_B,
    TF_BP_NORM_FF_W, TF_BP_NORM_FF_B,
    TF_BP_CONV_W,               /* Nyström's convolution on v (H,1,K,1), with conv_kernel K > 0 */
    TF_BP_TEMPERATURE,          /* locality self-attention's per-head temperature (H), with lsa */
    TF_BP_SSMAX,                /* Scalable-Softmax's per-head s (H), with ssmax > 0 */
    TF_BP_COUNT
} tf_block_param;

/* A name map: rows in the checkpoint's order (the registration order). The
 * fused rows (QKV) make q, k and v one projection; without them Q, K and V
 * are separate. Rows a configuration does not need (biases without bias,
 * cross rows without cross) are skipped; a needed row that is missing is an
 * error naming it. */
typedef struct {
    tf_block_param role;
    const char *name; /* appended to the block's prefix */
} tf_block_name;

typedef struct {
    const tf_block_name *rows;
    int n;
} tf_block_names;

/* Initial weights: N(0, std^2), the two output projections N(0, out_std^2)
 * (GPT-2 scales them by 1/sqrt(2 n_layer)); fan_in instead gives every
 * weight std 1/sqrt(in) (PyTorch's layers). Biases 0, LayerNorm weights 1. */
typedef struct {
    float std, out_std;
    int fan_in;
} tf_block_init;

/* Swin's (shifted) window self-attention (Liu et al. 2021): the tokens of x
 * (B,height*width,C), a row-major grid, are zero-padded on the right and
 * bottom to multiples of `window` (after the block's LayerNorm, as Hugging
 * Face's SwinLayer), cyclically shifted up and left by `shift`
 * (torch.roll(-shift)), cut into windows of window^2 tokens that attend only
 * among themselves, with `bias` added to every window's scores and, when
 * shifted, -100 between tokens that came from different regions of the
 * unshifted grid; then put back, unshifted and cropped. */
typedef struct {
    int height, width;  /* the token grid */
    int window, shift;  /* window side >= 1; 0 <= shift < window */
    tf_tensor *bias;    /* (H,window^2,window^2) added to each head's scores (relative positions), or NULL */
} tf_window_attn;

/* The relative position bias of a window: table ((2w-1)^2,H) -> (H,w^2,w^2),
 * entry (h,i,j) = table[(yi-yj+w-1)(2w-1) + (xi-xj+w-1), h] for window
 * positions i = (yi,xi), j = (yj,xj) row-major (gradients flow to the table). */
TF_API tf_tensor *tf_window_relative_bias(tf_ctx *ctx, tf_tensor *table, int window);
/* The shifted-window mask of a padded (height,width) grid (multiples of
 * window): (n_windows,window^2,window^2), 0 within a region, -100 across
 * (Hugging Face's get_attn_mask); no gradient. */
TF_API tf_tensor *tf_window_shift_mask(tf_ctx *ctx, int height, int width, int window, int shift);

/* The per-call inputs of a block besides x. */
typedef struct {
    tf_tensor *memory;                 /* (B,S,d_model): the cross-attention's keys and values */
    const tf_attn_mask *self_mask;     /* PyTorch's masks of the self-attention, or NULL */
    const tf_attn_mask *cross_mask;
    tf_kv_cache *cache;                /* incremental decoding: append to and attend over it */
    tf_kv_cache *cross_cache;          /* the memory's projected keys and values: filled while empty
                                        * (the caller then advances it by S), read after */
    int layer;                         /* this block's layer in the cache */
    tf_tensor **cross_probs;           /* non-NULL: receives the cross-attention's probabilities (B,H,T,S),
                                        * each head's (the scores are then materialised, not fused) */
    tf_tensor **self_probs;            /* the same for the self-attention: (B,H,T,T) */
    float drop_path;                   /* stochastic depth while training: each sub-layer's output (after
                                        * its dropout, before the residual add) through tf_drop_path */
    tf_kv_cache *const *row_caches;    /* instead of cache: x (R,1,d_model) is R rows of one new position
                                        * each, row r appending to and attending over row_caches[r] (each
                                        * one row at its own length; the caller advances them) */
} tf_block_args;

/* PyTorch's layer defaults: d_ff 2048, relu, eps 1e-5, post-LN, biases,
 * dropout 0, full attention. */
TF_API tf_block_config tf_block_config_default(int d_model, int n_head);
TF_API int tf_block_config_check(const tf_block_config *cfg);
TF_API int tf_block_register(tf_params *ps, const char *prefix, tf_block *b, const tf_block_config *cfg,
                             const tf_block_names *names, tf_block_init init);
/* x (B,T,d_model) -> (B,T,d_model); args may be NULL. */
TF_API tf_tensor *tf_block_forward(tf_ctx *ctx, const tf_block *b, const tf_block_config *cfg, tf_tensor *x,
                                   const tf_block_args *args);

/* The block's sub-layers, for a family that composes its own layer. */
typedef enum {
    TF_SUBLAYER_SELF,  /* the self-attention (norm_attn): the kind of cfg->self_attn */
    TF_SUBLAYER_CROSS, /* the cross-attention over args' memory (norm_cross) */
    TF_SUBLAYER_FF     /* the feed-forward network (norm_ff) */
} tf_sublayer;
/* One residual sub-layer: pre-LN x + f(LN(x)) or post-LN LN(x + f(x)), f's
 * output through dropout p, then args' drop path. tf_block_forward is SELF,
 * CROSS (with a cross-attention), FF, each with cfg->dropout. */
TF_API tf_tensor *tf_block_sublayer(tf_ctx *ctx, const tf_block *b, const tf_block_config *cfg, tf_sublayer which,
                                    tf_tensor *x, const tf_block_args *args, float p);
/* The residual around a family's own f (ViViT's factorised attentions):
 * f's input is tf_block_residual_input (LN(x) pre-LN, x post-LN), and
 * tf_block_residual gives x + drop_path(f) pre-LN, LN(x + drop_path(f))
 * post-LN, norm being the sub-layer's LayerNorm. tf_block_sublayer is the two
 * around the block's own sub-layers. */
TF_API tf_tensor *tf_block_residual_input(tf_ctx *ctx, const tf_block_config *cfg, const tf_layer_norm *norm,
                                          tf_tensor *x);
TF_API tf_tensor *tf_block_residual(tf_ctx *ctx, const tf_block_config *cfg, const tf_layer_norm *norm, tf_tensor *x,
                                    tf_tensor *f, float drop_path);

/* ---------------------------------------------------------------- attention kinds of a family */

/* The self-attention a family trains with (tformer train --attention ...,
 * src/nn/attention_kind.c): full (the family's own: causal for GPT), or a
 * sparse pattern (causal when the family is), or Nyström (encoders only). */
typedef enum {
    TF_ATTENTION_FULL,
    TF_ATTENTION_LOCAL,   /* a window of +-window positions (causal: the window before) */
    TF_ATTENTION_DILATED, /* the same every dilation-th position: offsets k * dilation, |k| <= window */
    TF_ATTENTION_BIGBIRD, /* local window + global tokens + random_blocks random key blocks per query block */
    TF_ATTENTION_NYSTROM  /* Nyström landmarks (not causal) */
} tf_attention_kind;

typedef struct {
    tf_attention_kind kind;
    int window, dilation;  /* local, dilated, BigBird (dilation: dilated only) */
    int global_tokens;     /* local, dilated, BigBird: the first positions see and are seen by every position */
    int random_blocks;     /* BigBird */
    int block_size;        /* the kernel's blocks of queries and keys (random blocks are drawn in these) */
    uint64_t pattern_seed; /* BigBird's random blocks */
    int landmarks;         /* Nyström: 0 exact softmax; else T must be a multiple of it */
    int conv_kernel;       /* Nyström: taps K of the depthwise convolution over v added to its output
                            * (Nyströmformer's conv_kernel_size; a (H,1,K,1) weight per layer); 0: none, else odd */
    tf_rope_kind rope;     /* rotary positions in the self-attention (any kind), TF_ROPE_NONE: none */
    float rope_base;       /* their base (10000) */
    float ssmax;           /* Scalable-Softmax's initial s in the self-attention (full kind only), 0: off */
} tf_attention_options;

/* Its rows ("attention", "window", ... : the flags --attention, --window, ...),
 * flattened into a family's table with TF_FIELD_SUB; settings, not part of the
 * checkpoint's signature (no kind changes the weights' shapes), but for
 * conv_kernel and ssmax, which add a tensor per layer when set. */
TF_API extern const struct tf_field_table tf_attention_table;
/* The same rows with tformer_ in front of each key (config.json of a Hugging Face folder). */
TF_API extern const struct tf_field_table tf_attention_hf_table;
/* Set b's attention (b->attn on entry: the family's TF_ATTN_FULL or
 * TF_ATTN_CAUSAL) from o. -1 with a message when a knob is set that the kind
 * does not use, or Nyström is asked of a causal family. Sparse kinds and
 * Nyström have no dropout on the attention weights: b->attn_dropout becomes 0. */
TF_API int tf_attention_apply(const tf_attention_options *o, tf_block_config *b);

/* ---------------------------------------------------------------- PyTorch's layers and stacks */

/* PyTorch's TransformerEncoderLayer / TransformerDecoderLayer: a block with
 * PyTorch's names under prefix ("" or "layers.0." ...) and fan-in init;
 * the decoder layer has the cross-attention. */
TF_API int tf_encoder_layer_register(tf_params *ps, const char *prefix, tf_block *b, const tf_block_config *cfg);
TF_API int tf_decoder_layer_register(tf_params *ps, const char *prefix, tf_block *b, const tf_block_config *cfg);

/* A stack of blocks and an optional final LayerNorm (PyTorch's
 * TransformerEncoder / TransformerDecoder: "<prefix>layers.<i>." and "<prefix>norm"). */
typedef struct {
    int n_layer;
    tf_block *layers;
    tf_layer_norm norm; /* norm.weight NULL when absent */
    int has_norm;
} tf_stack;

typedef struct {
    tf_stack encoder, decoder;
} tf_transformer;

/* Register n_layer PyTorch layers (decoder layers when cfg->cross). The stack
 * allocates its layer array; free it with tf_stack_free. */
TF_API int tf_stack_register(tf_params *ps, const char *prefix, tf_stack *s, const tf_block_config *cfg,
                             int n_layer, int final_norm);
TF_API void tf_stack_free(tf_stack *s);
TF_API tf_tensor *tf_stack_forward(tf_ctx *ctx, const tf_stack *s, const tf_block_config *cfg, tf_tensor *x,
                                   const tf_block_args *args);
/* PyTorch's nn.Transformer; enc and dec differ only in cross (set here). */
TF_API int tf_transformer_register(tf_params *ps, const char *prefix, tf_transformer *t,
                                   const tf_block_config *cfg, int n_encoder_layers, int n_decoder_layers);
TF_API void tf_transformer_free(tf_transformer *t);
/* src (B,S,d), tgt (B,T,d) -> (B,T,d). */
TF_API tf_tensor *tf_transformer_forward(tf_ctx *ctx, const tf_transformer *t, const tf_block_config *cfg,
                                         tf_tensor *src, tf_tensor *tgt, const tf_attn_mask *src_mask,
                                         const tf_attn_mask *tgt_mask, const tf_attn_mask *memory_mask);

/* ---------------------------------------------------------------- continual attention */

/* Retroactive (CoReAtt): each step updates the outputs of all n queries of
 * the window (removes the oldest key, adds the newest). Single-output
 * (CoSiAtt): only the newest query, over the cached keys and values. */
typedef enum { TF_COATT_RETRO, TF_COATT_SINGLE } tf_coatt_kind;

/* The cached state of one self-attention over a batch of streams. */
typedef struct tf_coatt tf_coatt;

/* State for the self-attention m (fused or separate q/k/v projections of width
 * d_model, weights (out,in), no relative positions, no Nyström) over `batch`
 * streams with window n >= 1. Retroactive rows keep a running maximum per
 * row (rescaling when a larger score arrives) and sums in double; a row whose
 * sum loses most of its mass when the oldest key leaves is recomputed. */
TF_API tf_coatt *tf_coatt_new(const tf_mha *m, tf_coatt_kind kind, int batch, int window);
TF_API void tf_coatt_free(tf_coatt *s);
/* Forget the stream (the next step is step 0). */
TF_API void tf_coatt_reset(tf_coatt *s);
/* Steps taken, and how many rows were recomputed to avoid cancellation. */
TF_API int64_t tf_coatt_steps(const tf_coatt *s);
TF_API int64_t tf_coatt_recomputed(const tf_coatt *s);
/* One step: x (B,d_model), each stream's new input. Returns 1 and *out
 * (retroactive: (B,n,d_model), oldest first; single-output: (B,d_model)) once
 * the window is full, 0 (*out NULL) during the first n-1 steps, -1 on an
 * error. The projections run as ops in ctx (no gradient is recorded). */
TF_API int tf_coatt_step(tf_ctx *ctx, tf_coatt *s, tf_tensor *x, tf_tensor **out);

#ifdef __cplusplus
}
#endif
#endif /* TFORMER_NN_H */
