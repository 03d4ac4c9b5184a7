/* tformer: The differentiable operations (the tape's op codes and the views: core.h). */
#ifndef TFORMER_OPS_H
#define TFORMER_OPS_H

#include "core.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum { TF_GELU_ERF, TF_GELU_TANH } tf_gelu_kind;

/* Activations (tf_dense's fused one, the layers' and blocks' settings).
 * TF_ACT_SILU: x sigmoid(x) (Marian's "swish"); TF_ACT_QUICK_GELU: x sigmoid(1.702 x) (ImageGPT's
 * "quick_gelu"). TF_ACT_NONE stays last: range checks read it. */
typedef enum { TF_ACT_RELU, TF_ACT_GELU, TF_ACT_GELU_TANH, TF_ACT_SILU, TF_ACT_QUICK_GELU, TF_ACT_NONE } tf_activation;

/* Ops (recorded on the tape when gradients are on; tf_contiguous, the copy, is
 * declared with the views in core.h). Negative dims count from the end. */
TF_API tf_tensor *tf_matmul(tf_ctx *ctx, tf_tensor *a, tf_tensor *b, int trans_a, int trans_b);
TF_API tf_tensor *tf_add(tf_ctx *ctx, tf_tensor *a, tf_tensor *b);
TF_API tf_tensor *tf_mul(tf_ctx *ctx, tf_tensor *a, tf_tensor *b);
TF_API tf_tensor *tf_scale(tf_ctx *ctx, tf_tensor *x, float s);
TF_API tf_tensor *tf_bias_add(tf_ctx *ctx, tf_tensor *x, tf_tensor *bias);
/* mask: F32 (added to x) or U8 (nonzero = excluded), broadcastable to x. A row
 * with every entry excluded gives all zeros (PyTorch gives NaN). */
TF_API tf_tensor *tf_softmax(tf_ctx *ctx, tf_tensor *x, tf_tensor *mask);
TF_API tf_tensor *tf_layernorm(tf_ctx *ctx, tf_tensor *x, tf_tensor *w, tf_tensor *b, float eps);
/* x / sqrt(mean(x^2) + eps) * w over the last dim (w may be NULL): ImageGPT's LayerNorm. */
TF_API tf_tensor *tf_rmsnorm(tf_ctx *ctx, tf_tensor *x, tf_tensor *w, float eps);
TF_API tf_tensor *tf_relu(tf_ctx *ctx, tf_tensor *x);
TF_API tf_tensor *tf_gelu(tf_ctx *ctx, tf_tensor *x, tf_gelu_kind kind);
TF_API tf_tensor *tf_tanh(tf_ctx *ctx, tf_tensor *x);
TF_API tf_tensor *tf_dropout(tf_ctx *ctx, tf_tensor *x, float p); /* identity unless training */
TF_API tf_tensor *tf_embedding(tf_ctx *ctx, tf_tensor *table, tf_tensor *ids);
/* The same, but rows looked up by the id padding_idx take no gradient (-1:
 * every row does): PyTorch's nn.Embedding(padding_idx=...). */
TF_API tf_tensor *tf_embedding_padded(tf_ctx *ctx, tf_tensor *table, tf_tensor *ids, int32_t padding_idx);
TF_API tf_tensor *tf_concat(tf_ctx *ctx, int n, tf_tensor *const *xs, int dim);
/* Split along dim into n contiguous pieces of the given sizes. Returns 0 or -1. */
TF_API int tf_split(tf_ctx *ctx, tf_tensor *x, int dim, int n, const int64_t *sizes, tf_tensor **outs);
TF_API tf_tensor *tf_sum(tf_ctx *ctx, tf_tensor *x, int dim, int keepdim);  /* dim may be TF_DIM_ALL */
TF_API tf_tensor *tf_mean(tf_ctx *ctx, tf_tensor *x, int dim, int keepdim);
/* The largest element over dim (or TF_DIM_ALL); NaN when the reduced elements
 * hold one. The gradient goes to the elements equal to the maximum, shared
 * evenly when several are (PyTorch's max() over all elements). */
TF_API tf_tensor *tf_max(tf_ctx *ctx, tf_tensor *x, int dim, int keepdim);
/* 1/x element by element (an infinity at 0, as IEEE division). */
TF_API tf_tensor *tf_reciprocal(tf_ctx *ctx, tf_tensor *x);
/* logits (...,C), targets I32 (...): mean loss over targets != ignore_index. */
TF_API tf_tensor *tf_cross_entropy(tf_ctx *ctx, tf_tensor *logits, tf_tensor *targets,
                            int ignore_index, float label_smoothing);
/* logits (...,C), targets F32 (...,C) (soft labels, no gradient): the mean
 * over rows of -sum_c targets_c log softmax(logits)_c, which is timm's
 * SoftTargetCrossEntropy (label smoothing lives in the targets). */
TF_API tf_tensor *tf_soft_cross_entropy(tf_ctx *ctx, tf_tensor *logits, tf_tensor *targets);
/* Stochastic depth (timm's DropPath): while training, each sample (index of
 * dim 0) of x is zeroed with probability p and the others scaled by 1/(1-p);
 * the draw is a counter-based hash of a per-call seed (like dropout's).
 * Identity when not training or p == 0. */
TF_API tf_tensor *tf_drop_path(tf_ctx *ctx, tf_tensor *x, float p);
/* q (B,H,Tq,D), k (B,H,Tk,D), v (B,H,Tk,Dv) -> (B,H,Tq,Dv). mask: F32 (added) or
 * U8 (nonzero = excluded), broadcastable to (B,H,Tq,Tk). causal excludes key j
 * for query i when j > i + Tk - Tq (PyTorch's rule when Tq == Tk). */
TF_API tf_tensor *tf_sdpa(tf_ctx *ctx, tf_tensor *q, tf_tensor *k, tf_tensor *v, tf_tensor *mask,
                   int causal, float scale);
/* The same attention with the output (B,Tq,H,Dv): the heads side by side in
 * each row, as the output projection reads them (no copy between the two). */
TF_API tf_tensor *tf_sdpa_heads_last(tf_ctx *ctx, tf_tensor *q, tf_tensor *k, tf_tensor *v, tf_tensor *mask,
                                     int causal, float scale);
/* act(x W^T + b) in one op: x (..., K), w (N,K), or (K,N) when w_in_out
 * (Hugging Face's Conv1D: act(x W + b)), b (N) or NULL, act a tf_activation
 * or TF_ACT_NONE. Saves the bias pass and, with an activation, one (..., N)
 * tensor and its gradient over matmul + bias_add + activation. */
TF_API tf_tensor *tf_dense(tf_ctx *ctx, tf_tensor *x, tf_tensor *w, int w_in_out, tf_tensor *b, int act);

/* Recurrent cells, PyTorch's GRUCell and LSTMCell exactly: x (B,I), h and c
 * (B,H), w_ih (G*H,I), w_hh (G*H,H), b_ih and b_hh (G*H) or NULL, gates in
 * PyTorch's order (GRU, G = 3: r, z, n with n = tanh(W_in x + b_in + r (W_hn h
 * + b_hn)); LSTM, G = 4: i, f, g, o). The GRU returns h' (B,H). The LSTM
 * returns h' and c' stacked as (2,B,H): tf_lstm_cell_h / _c give the halves
 * as contiguous (B,H) views sharing its gradient (the op table has one output
 * per op). The _masked forms take pad U8 (B): a row whose entry is nonzero
 * keeps its state (h' = h, c' = c), a padded step of a packed sequence. */
TF_API tf_tensor *tf_gru_cell(tf_ctx *ctx, tf_tensor *x, tf_tensor *h, tf_tensor *w_ih, tf_tensor *w_hh,
                              tf_tensor *b_ih, tf_tensor *b_hh);
TF_API tf_tensor *tf_gru_cell_masked(tf_ctx *ctx, tf_tensor *x, tf_tensor *h, tf_tensor *w_ih, tf_tensor *w_hh,
                                     tf_tensor *b_ih, tf_tensor *b_hh, tf_tensor *pad);
TF_API tf_tensor *tf_lstm_cell(tf_ctx *ctx, tf_tensor *x, tf_tensor *h, tf_tensor *c, tf_tensor *w_ih,
                               tf_tensor *w_hh, tf_tensor *b_ih, tf_tensor *b_hh);
TF_API tf_tensor *tf_lstm_cell_masked(tf_ctx *ctx, tf_tensor *x, tf_tensor *h, tf_tensor *c, tf_tensor *w_ih,
                                      tf_tensor *w_hh, tf_tensor *b_ih, tf_tensor *b_hh, tf_tensor *pad);
TF_API tf_tensor *tf_lstm_cell_h(tf_ctx *ctx, tf_tensor *hc); /* (2,B,H) -> h' (B,H) */
TF_API tf_tensor *tf_lstm_cell_c(tf_ctx *ctx, tf_tensor *hc); /* (2,B,H) -> c' (B,H) */

/* ViT's patch embedding: x (B,C,H,W), w (D,C,P,P), b (D) or NULL ->
 * (B,N,D), N = (H/P)*(W/P) patches in row-major order, patch n's row
 * = w . x[:, :, P*gy:P*gy+P, P*gx:P*gx+P] + b: PyTorch's
 * Conv2d(C, D, P, stride=P)(x).flatten(2).transpose(1,2); rows and columns
 * past the last whole patch are ignored, as Conv2d does.
 * ViViT's tubelet embedding: x (B,T,C,H,W) (frames first, as
 * Hugging Face's pixel_values), w (D,C,Pt,Ph,Pw) -> (B,N,D),
 * N = (T/Pt)*(H/Ph)*(W/Pw) tubes ordered (time, row, column): PyTorch's
 * Conv3d(C, D, (Pt,Ph,Pw), stride=(Pt,Ph,Pw))(x.permute(0,2,1,3,4))
 * .flatten(2).transpose(1,2); Pt = 1 embeds each frame as ViT does. */
TF_API tf_tensor *tf_patch_embed(tf_ctx *ctx, tf_tensor *x, tf_tensor *w, tf_tensor *b);

/* A depthwise convolution along the sequence: x (B,C,T,D), w (C,K), K odd ->
 * y (B,C,T,D), y[b,c,t,d] = sum_j w[c,j] x[b,c,t+j-(K-1)/2,d], positions
 * outside [0,T) zero: PyTorch's Conv2d(C, C, (K,1), padding=((K-1)/2,0),
 * groups=C, bias=False) with its weight (C,1,K,1) viewed as (C,K). */
TF_API tf_tensor *tf_depthwise_conv(tf_ctx *ctx, tf_tensor *x, tf_tensor *w);

/* A 2-D convolution: x (B,C,H,W), w (O,C,K,K), b (O) or NULL -> y (B,O,H',W'),
 * H' = (H + 2 padding - K) / stride + 1 (W' alike), zeros outside the image:
 * PyTorch's torch.nn.functional.conv2d(x, w, b, stride, padding). */
TF_API tf_tensor *tf_conv2d(tf_ctx *ctx, tf_tensor *x, tf_tensor *w, tf_tensor *b, int stride, int padding);
/* Rotary position embedding (RoFormer): row t of x's last two dims (T,D), D
 * even, at position start + t, each pair of its values turned by the angle
 * position * base^(-2i/D), i the pair's index (< D/2); TF_ROPE_HALVES pairs
 * x[i] with x[i + D/2] (GPT-NeoX, LLaMA), TF_ROPE_INTERLEAVED x[2i] with
 * x[2i+1] (RoFormer, GPT-J). base > 1 (10000 in both). */
typedef enum { TF_ROPE_NONE, TF_ROPE_HALVES, TF_ROPE_INTERLEAVED } tf_rope_kind;
TF_API tf_tensor *tf_rope(tf_ctx *ctx, tf_tensor *x, int64_t start, float base, tf_rope_kind kind);
/* A rotary setting: kind none, halves or interleaved; base 0 (10000) or a finite
 * number > 1; head_dim even with rotary positions. 0, or -1 with a message. */
TF_API int tf_rope_check(tf_rope_kind kind, float base, int head_dim);

/* ---------------------------------------------------------------- sparse attention */

/* Which keys j each query i of a T-long self-attention sees (src/ops/sparse_pattern.c).
 * The parts compose: key j is visible to query i when (causal: j <= i) and
 *   - the window holds it: i - j = k * dilation with |k| <= window (causal: 0 <= k <= window), or
 *   - i or j is a global position (a global query sees every key, every query sees a global key):
 *     the first global_first positions (tokens a model adds in front, BERT's [CLS]) and any listed, or
 *   - j's key block is one of the `random` key blocks drawn for i's query block.
 * Queries and keys are grouped in blocks of `block` positions (the last block
 * may be shorter). The random blocks of each query block are drawn, without
 * repeats, among the key blocks the window and the global keys do not already
 * visit (causal: blocks up to the query block's own) from a hash of (seed,
 * query block): the same pattern and T always give the same blocks, for every
 * batch row and head; a causal pattern's do not depend on T (the window's
 * blocks are those of the query block's whole extent), so a query sees the
 * same keys whatever follows it, as a KV cache's decoding needs. */
typedef struct {
    int block;          /* b in [1, TF_SPARSE_MAX_BLOCK] */
    int causal;
    int window;         /* w >= 0, or -1: no window */
    int dilation;       /* r >= 1 */
    int global_first;   /* positions 0 .. min(global_first, T)-1 are global (a short sequence: all of it) */
    const int *global;  /* n_global more positions in [0, T), any order, or NULL */
    int n_global;
    int random;         /* key blocks per query block, >= 0 */
    uint64_t seed;
    /* Hugging Face's block_sparse BigBird (the paper's ITC layout) instead of
     * the parts above (window, dilation and seed unused; causal and global
     * tokens refused): T a multiple of block, nb = T/block >= 3 blocks. Query
     * blocks 0 and nb-1 see every key; query block qb in [1, nb-2] sees the
     * key blocks {0, qb-1, qb, qb+1, nb-1} and the `random` blocks
     * itc_random[h][qb-1][.], each counted as often as listed (Hugging Face
     * concatenates them: a repeated block weighs twice); a padded query sees
     * no key (zeros, Hugging Face's from_mask). */
    int itc;
    const int32_t *itc_random; /* (itc_heads, nb-2, random) key blocks in [0,nb), or NULL: all 0 (HF's eval mode) */
    int itc_heads;             /* itc_random's heads: 1 (every head) or the attention's H */
} tf_sparse_pattern;

#define TF_SPARSE_MAX_BLOCK 128

/* The key blocks each query block needs, ascending: query block qb (rows
 * [qb*b, min(qb*b+b, T))) visits kblock[off[qb] .. off[qb+1]); random[t] is 1
 * for a block drawn at random (all its keys visible, causal aside). An itc
 * pattern lists them in Hugging Face's order, repeats included, per head. */
typedef struct {
    int64_t n_qblocks, n_kblocks;
    int64_t n_heads;  /* 1, or the heads of an itc pattern's table: head h's query block qb is row h*n_qblocks+qb */
    int64_t *off;     /* (n_heads*n_qblocks+1) */
    int32_t *kblock;  /* (off[n_qblocks]) */
    uint8_t *random;  /* (off[n_qblocks]) */
    int64_t max_visit; /* the most key blocks any query block visits */
} tf_sparse_layout;

/* 0, or -1 and an error naming the bad field (block, window, dilation, a
 * global position outside [0,T), random). */
TF_API int tf_sparse_check(const tf_sparse_pattern *p, int64_t T);
TF_API int tf_sparse_layout_new(tf_sparse_layout *l, const tf_sparse_pattern *p, int64_t T);
TF_API void tf_sparse_layout_free(tf_sparse_layout *l);
/* The equivalent dense mask (T,T) row-major, 1 = hidden (PyTorch's boolean
 * attn_mask): for tests and for the unfused path. */
TF_API int tf_sparse_mask(const tf_sparse_pattern *p, int64_t T, uint8_t *mask);

/* Block-sparse flash attention: q (B,H,Tq,D), k (B,H,T,D), v (B,H,T,Dv) ->
 * (B,H,Tq,Dv), Tq <= T, the queries being positions T-Tq .. T-1 (all of them,
 * or a KV cache's new ones); softmax over the visible keys of scale * q k^T,
 * only the key blocks of the layout visited (time O(T k b D) for k blocks per query block, memory
 * O(T D)). pad (B,T) U8 (nonzero = padding key) or NULL. A query that sees no
 * key gives zeros (as tf_sdpa). */
TF_API tf_tensor *tf_sparse_attention(tf_ctx *ctx, tf_tensor *q, tf_tensor *k, tf_tensor *v, tf_tensor *pad,
                                      const tf_sparse_pattern *pattern, float scale);

#ifdef __cplusplus
}
#endif
#endif /* TFORMER_OPS_H */
