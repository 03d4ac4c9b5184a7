/* The Transformer captioner's decoder (tformer/caption.h): the CNN's grid projected to the
 * decoder's width with learned positions is the memory; the words, with learned positions,
 * go through pre-LN decoder blocks (the shared block: causal self-attention, cross-attention
 * over the memory, ReLU feed-forward; PyTorch's nn.TransformerDecoderLayer names), a final
 * LayerNorm and the output layer.
 *
 *   memory = W_p a + P_grid                                  (B,N,H)
 *   x      = E[y] + P_t[start .. start+T)                    (B,T,H)
 *   h      = norm(block_L(... block_1(x, memory)))           (B,T,H)
 *   logits = W_o h + b_o                                     (B,T,V) */
#include <math.h>
#include <stdio.h>

#include "caption_internal.h"

int tf_caption_transformer_register(tf_caption *m) {
    const tf_caption_config *c = &m->cfg;
    tf_params *ps = m->params;
    int64_t H = c->hidden, G = tf_caption_grid(c);
    m->block = tf_block_config_default(c->hidden, c->n_head);
    m->block.d_ff = c->d_ff, m->block.norm_first = 1, m->block.self_attn.kind = TF_ATTN_CAUSAL, m->block.cross = 1;
    if (tf_block_config_check(&m->block) ||
        tf_linear_register(ps, "encoder.proj", &m->proj, c->cnn_dim, H, 1, (float)(1.0 / sqrt(3.0 * c->cnn_dim))) ||
        tf_params_add(ps, "encoder.pos", &m->grid_pos, 2, (int64_t[]){G * G, H}, 0.02f) ||
        tf_params_add(ps, "decoder.pos", &m->tok_pos, 2, (int64_t[]){c->context, H}, 0.02f))
        return -1;
    for (int i = 0; i < c->n_layer; i++) {
        char prefix[48];
        snprintf(prefix, sizeof prefix, "decoder.layers.%d.", i);
        if (tf_decoder_layer_register(ps, prefix, &m->layers[i], &m->block)) return -1;
    }
    return tf_layer_norm_register(ps, "decoder.norm", &m->norm, H, m->block.norm_eps, 1);
}

tf_tensor *tf_caption_memory(tf_ctx *ctx, const tf_caption *m, tf_tensor *a) {
    return tf_add(ctx, tf_linear_forward(ctx, &m->proj, a), m->grid_pos);  // (B,N,H) + (N,H)
}

/* The layers' cross-attention probabilities (B,heads,T,N) averaged into (B,T,N). */
static tf_tensor *mean_maps(tf_ctx *ctx, tf_tensor *const *probs, int n) {
    tf_tensor *sum = NULL;
    for (int i = 0; i < n; i++) sum = sum ? tf_add(ctx, sum, probs[i]) : probs[i];
    return tf_scale(ctx, tf_mean(ctx, sum, 1, 0), 1.0f / (float)n);
}

int tf_caption_transformer_decode(tf_ctx *ctx, const tf_caption *m, tf_tensor *ids, tf_kv_cache *cache,
                                  tf_kv_cache *cross_cache, int want_alpha, tf_caption_outputs *out) {
    int64_t T = ids->shape[1], start = cache ? tf_kv_cache_len(cache) : 0;
    tf_tensor *memory = out->annotations, *probs[8] = {0};
    if (start + T > m->cfg.context)
        return tf_set_error("caption: %lld words exceed the context of %d", (long long)(start + T), m->cfg.context);
    tf_tensor *x = tf_add(ctx, tf_embedding(ctx, m->embed, ids), tf_narrow(ctx, m->tok_pos, 0, start, T));  // (B,T,H)
    tf_block_args args = {.memory = memory, .cache = cache, .cross_cache = cross_cache};
    int fill = cross_cache && tf_kv_cache_len(cross_cache) == 0;
    for (int i = 0; i < m->cfg.n_layer; i++) {
        args.layer = i, args.cross_probs = want_alpha ? &probs[i] : NULL;
        x = tf_block_forward(ctx, &m->layers[i], &m->block, x, &args);
    }
    x = tf_layer_norm_forward(ctx, &m->norm, x);
    out->logits = tf_linear_forward(ctx, &m->out, tf_dropout(ctx, x, m->cfg.dropout));  // (B,T,V)
    if (!out->logits) return -1;
    if (want_alpha && !(out->attentions = mean_maps(ctx, probs, m->cfg.n_layer))) return -1;  // (B,T,N)
    if (cache && tf_kv_cache_advance(cache, (int)T)) return -1;
    if (fill && tf_kv_cache_advance(cross_cache, (int)memory->shape[1])) return -1;
    return 0;
}
