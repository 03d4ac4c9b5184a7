/* Private to the library: the nn layer's (src/nn: parameters, KV caches,
 * attention) declarations for the model families. */
#ifndef TF_NN_INTERNAL_H
#define TF_NN_INTERNAL_H

#include "../core/core_internal.h"
#include "tformer/nn.h"

/* Everything here is hidden from the shared library: it is built with
 * -fvisibility=hidden and exports only what include/tformer/ marks TF_API. */

/* Allocate every registered tensor, zero-filled (to be loaded, not initialised). */
int tf_params_alloc(tf_params *ps);
/* Inference loading: parameter i becomes a tensor of its shape without a
 * gradient, over data (borrowed: a mapped file's bytes, F32, contiguous) or,
 * when data is NULL, over fresh zeroed memory; returns it (NULL: out of memory). */
tf_tensor *tf_params_set_data(tf_params *ps, int i, float *data);
/* Parameter i's registered shape into shape; returns its number of dimensions. */
int tf_params_shape(const tf_params *ps, int i, int64_t *shape);

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
/* Every parameter of src registered into dst under prefix + its name, with src's own slot, shape and
 * initialisation (the slots are left as they are): dst is a view of src's tensors, so initialising,
 * loading or training dst fills the slots src's model reads (a model built of other families'
 * models, each with its own registry: the captioner's ViT and GPT-2). 0, or -1 with the error set. */
int tf_params_add_view(tf_params *dst, const char *prefix, const tf_params *src);
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
/* Self-attention (causal: causal masking, as tf_mha_attend's) of R rows of one new position each, x (R,1,E), row r appending to and
 * attending over its own cache caches[r] (one row each, at its own length, not advanced here):
 * the projections one product over the rows, each row's attention as tf_mha_attend with its
 * cache computes it; (R,1,E). Under the context's row products (a decoding step of several
 * rows) each row's output is the bits of its step alone. */
tf_tensor *tf_mha_attend_rows(tf_ctx *ctx, const tf_mha *m, tf_tensor *x, tf_kv_cache *const *caches, int layer,
                              int causal);
/* The softmax attention of projected heads q (B,H,Tq,D), k, v (B,H,Tk,D) ->
 * (B,H,Tq,D): tf_mha_attend's after its projections (mask, causal, the
 * weights' dropout, lsa's temperature, ssmax; averaged weights and per-head
 * probabilities as there), for a family that groups the heads its own way
 * (ViViT's factorised dot-product attention). */
tf_tensor *tf_mha_attend_heads(tf_ctx *ctx, const tf_mha *m, tf_tensor *const qkv[3], const tf_attn_mask *mask,
                               int causal, tf_tensor **weights, tf_tensor **probs);
/* Swin's relative position index of a window: out (w^2,w^2), entry (i,j) =
 * (yi-yj+w-1)(2w-1) + (xi-xj+w-1) for positions i = (yi,xi), j = (yj,xj). */
void tf_window_relative_index(int32_t *out, int window);
/* Zeros appended along dim d of x until it is n long (x itself when it is): Swin's padding. */
tf_tensor *tf_pad_zeros(tf_ctx *ctx, tf_tensor *x, int d, int64_t n);
/* Self-attention of h (B,height*width,C) within the (shifted) windows of a (src/nn/window.c). */
tf_tensor *tf_window_attend(tf_ctx *ctx, const tf_mha *m, tf_tensor *h, const tf_window_attn *a, tf_tensor **probs);

/* Nyström attention of q, k, v (B,H,T,D) (the projections of one input;
 * tf_mha_config's nystrom, landmarks, conv_kernel) -> (B,H,T,D); mask: only
 * a key padding mask (B,T), applied where a query (or landmark) meets every key. */
tf_tensor *tf_nystrom_attend(tf_ctx *ctx, const tf_mha *m, tf_tensor *const qkv[3], const tf_attn_mask *mask);

/* PyTorch's Linear / RNN initialisation, U(-1/sqrt(in), 1/sqrt(in)), as a normal's std: 1/sqrt(3 in). */
float tf_fan_in_std(int64_t in);
/* One step of r's cell (a GRUCell or an LSTMCell) on x (B,I): st's h (and c) (B,H) replaced by the
 * next state, except in the rows where pad (B) is nonzero (NULL: none). 0, or -1 (st->h NULL). */
int tf_rnn_cell_step(tf_ctx *ctx, const tf_rnn *r, tf_tensor *x, tf_tensor *pad, tf_rnn_state *st);

#endif
