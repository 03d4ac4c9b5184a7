/* VisionEncoderDecoderModel's forward (include/tformer/caption.h): the ViT (tf_vit_run), then
 * enc_to_dec_proj when the widths differ, then GPT-2's decoder composed from the shared block's
 * sub-layers: its own self-attention and MLP (the GPT-2's blocks), and between them a
 * cross-attention whose k and v are the two column halves of the fused c_attn (Conv1D's (in,out)
 * weight: a column block each, as the shared attention slices its own fused projection); a BERT
 * decoder's is caption_ved_bert.c's. */
#include <stdlib.h>
#include <string.h>

#include "../../nn/nn_internal.h"
#include "../model_folder.h"
#include "caption_internal.h"

/* Layer i's cross-attention as a block of the shared kind (its sub-layer CROSS only). */
static void cross_block(tf_ctx *ctx, const tf_caption_ved *m, int i, tf_block *b) {
    const tf_caption_xattn *x = &m->xattn[i];
    const tf_gpt_config *c = &m->decoder->cfg;
    int64_t E = c->d_model;
    memset(b, 0, sizeof *b);
    tf_mha *a = &b->cross_attn;
    a->cfg = tf_mha_config_default(c->d_model, c->n_head);
    a->cfg.w_in_out = 1, a->cfg.bias = 1, a->cfg.dropout = c->dropout;
    a->q_proj_weight = x->q.weight, a->q_proj_bias = x->q.bias;
    a->k_proj_weight = tf_narrow(ctx, x->kv.weight, 1, 0, E), a->k_proj_bias = tf_narrow(ctx, x->kv.bias, 0, 0, E);
    a->v_proj_weight = tf_narrow(ctx, x->kv.weight, 1, E, E), a->v_proj_bias = tf_narrow(ctx, x->kv.bias, 0, E, E);
    a->out_proj = x->proj;
    b->norm_cross = x->norm;
}

static int check(const tf_caption_ved *m, const tf_caption_ved_inputs *in) {
    const tf_vit_config *v = &m->encoder->cfg;
    tf_caption_ved_dims g = tf_caption_ved_decoder_dims(m);
    const tf_tensor *x = in->pixel_values, *ids = in->decoder_input_ids;
    char s[64];
    if (!x && !in->memory) return tf_set_error("caption: pixel_values missing");
    if (x && (x->dtype != TF_DTYPE_F32 || x->ndim != 4 || x->shape[1] != v->channels || x->shape[2] != v->image_size ||
              x->shape[3] != v->image_size))
        return tf_set_error("caption: pixel_values %s must be F32 (B,%d,%d,%d)", tf_shape_str(x, s, sizeof s),
                            v->channels, v->image_size, v->image_size);
    int64_t B = x ? x->shape[0] : in->memory->shape[0];
    if (ids && tf_check_ids("caption", ids, "decoder_input_ids", B, ids->shape[1], g.vocab, "vocab_size"))
        return -1;
    int64_t past = in->cache ? tf_kv_cache_len(in->cache) : 0;
    if (ids && past + ids->shape[1] > g.context)
        return tf_set_error("caption: %lld decoder positions exceed the decoder's n_positions %d",
                            (long long)(past + ids->shape[1]), g.context);
    if (in->labels && !ids) return tf_set_error("caption: labels need decoder_input_ids");
    if (in->labels && tf_check_ids("caption", in->labels, "labels", B, ids->shape[1], 0, NULL)) return -1;
    for (int64_t i = 0; in->labels && i < tf_numel(in->labels); i++) {
        int32_t y = tf_i32(in->labels)[i];
        if (y != -100 && (y < 0 || y >= g.vocab))
            return tf_set_error("caption: labels hold %d; below vocab_size %d, or -100 (ignored)", (int)y, g.vocab);
    }
    return 0;
}

int tf_caption_ved_block_args(tf_ctx *ctx, const tf_caption_ved_inputs *in, tf_tensor *memory, int n_layer,
                              tf_attn_mask *pad, tf_block_args *args, tf_caption_ved_outputs *out) {
    const tf_tensor *ids = in->decoder_input_ids;
    int64_t B = ids->shape[0], T = ids->shape[1], start = in->cache ? tf_kv_cache_len(in->cache) : 0;
    *pad = (tf_attn_mask){0};
    if (in->decoder_attention_mask &&
        !(pad->key_padding_mask = tf_key_padding(ctx, in->decoder_attention_mask, B, start + T, "caption")))
        return -1;
    *args = (tf_block_args){.memory = memory, .self_mask = in->decoder_attention_mask ? pad : NULL,
                            .cache = in->cache, .cross_cache = in->cross_cache};
    if (in->output_attentions && !(out->cross_attentions = tf_ctx_alloc(ctx, (size_t)n_layer * sizeof(tf_tensor *))))
        return -1;
    return 0;
}

/* GPT-2 with cross-attention over memory: logits (B,T,V). */
static tf_tensor *decode(tf_ctx *ctx, const tf_caption_ved *m, const tf_caption_ved_inputs *in, tf_tensor *memory,
                         tf_caption_ved_outputs *out) {
    const tf_gpt *g = m->decoder;
    const tf_gpt_config *c = &g->cfg;
    tf_tensor *ids = in->decoder_input_ids;
    int64_t T = ids->shape[1], start = in->cache ? tf_kv_cache_len(in->cache) : 0;
    tf_tensor *x = tf_add(ctx, tf_embedding(ctx, g->wte, ids), tf_posenc_learned(ctx, g->wpe, start, T));
    x = tf_dropout(ctx, x, c->dropout);  // (B,T,E)
    tf_attn_mask pad;
    tf_block_args args;
    if (tf_caption_ved_block_args(ctx, in, memory, c->n_layer, &pad, &args, out)) return NULL;
    int fill = in->cross_cache && tf_kv_cache_len(in->cross_cache) == 0;
    for (int i = 0; i < c->n_layer && x; i++) {
        tf_block xb;
        cross_block(ctx, m, i, &xb);
        args.layer = i, args.cross_probs = in->output_attentions ? &out->cross_attentions[i] : NULL;
        x = tf_block_sublayer(ctx, &g->h[i], &g->block, TF_SUBLAYER_SELF, x, &args, c->dropout);
        x = tf_block_sublayer(ctx, &xb, &g->block, TF_SUBLAYER_CROSS, x, &args, c->dropout);
        x = tf_block_sublayer(ctx, &g->h[i], &g->block, TF_SUBLAYER_FF, x, &args, c->dropout);
    }
    x = tf_layer_norm_forward(ctx, &g->ln_f, x);
    if (x && in->cache && tf_kv_cache_advance(in->cache, (int)T)) return NULL;
    if (x && fill && tf_kv_cache_advance(in->cross_cache, (int)memory->shape[1])) return NULL;
    return x ? tf_lm_head_forward(ctx, &g->head, x) : NULL;
}

int tf_caption_ved_run(tf_ctx *ctx, const tf_caption_ved *m, const tf_caption_ved_inputs *in,
                       tf_caption_ved_outputs *out) {
    memset(out, 0, sizeof *out);
    if (check(m, in)) return -1;
    out->memory = in->memory;
    if (in->pixel_values) {
        tf_vit_outputs vo;
        if (tf_vit_run(ctx, m->encoder, &(tf_vit_inputs){.pixel_values = in->pixel_values}, &vo)) return -1;
        out->encoder_last_hidden_state = vo.last_hidden_state;  // (B,N+1,D)
        out->memory = m->enc_to_dec.weight ? tf_linear_forward(ctx, &m->enc_to_dec, vo.last_hidden_state)
                                           : vo.last_hidden_state;  // (B,N+1,E)
        if (!out->memory) return -1;
    }
    if (!in->decoder_input_ids) return 0;
    out->logits = m->bert ? tf_caption_ved_bert_decode(ctx, m, in, out->memory, out) : decode(ctx, m, in, out->memory, out);
    if (!out->logits) return -1;
    if (in->labels && !(out->loss = tf_cross_entropy(ctx, out->logits, in->labels, -100, 0.0f))) return -1;
    return 0;
}
