/* The encoder-decoder Transformer (docs/translation.md): the one shared
 * block in two stacks under Hugging Face's BART / Marian names, embeddings,
 * positions and the (tied) output projection.
 *
 *   memory = enc_l(... enc_0(E_src[src] s + P_0..S-1))        (B,S,C)  s = sqrt(C) or 1
 *   h      = dec_l(... dec_0(E_tgt[tgt] s + P_t0.., memory))   (B,T,C)  causal self-attention, cross-attention
 *   logits = h E_tgt^T or h W^T (+ b, Marian's final_logits_bias)  (B,T,V) */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../nn/nn_internal.h"
#include "../family_construct.h"
#include "tformer/seq2seq.h"

/* BART / Marian's names for a layer's tensors, in their checkpoint order. */
static const tf_block_name BART_BLOCK[] = {
    {TF_BP_K_W, "self_attn.k_proj.weight"},        {TF_BP_K_B, "self_attn.k_proj.bias"},
    {TF_BP_V_W, "self_attn.v_proj.weight"},        {TF_BP_V_B, "self_attn.v_proj.bias"},
    {TF_BP_Q_W, "self_attn.q_proj.weight"},        {TF_BP_Q_B, "self_attn.q_proj.bias"},
    {TF_BP_OUT_W, "self_attn.out_proj.weight"},    {TF_BP_OUT_B, "self_attn.out_proj.bias"},
    {TF_BP_NORM_ATTN_W, "self_attn_layer_norm.weight"}, {TF_BP_NORM_ATTN_B, "self_attn_layer_norm.bias"},
    {TF_BP_X_K_W, "encoder_attn.k_proj.weight"},   {TF_BP_X_K_B, "encoder_attn.k_proj.bias"},
    {TF_BP_X_V_W, "encoder_attn.v_proj.weight"},   {TF_BP_X_V_B, "encoder_attn.v_proj.bias"},
    {TF_BP_X_Q_W, "encoder_attn.q_proj.weight"},   {TF_BP_X_Q_B, "encoder_attn.q_proj.bias"},
    {TF_BP_X_OUT_W, "encoder_attn.out_proj.weight"}, {TF_BP_X_OUT_B, "encoder_attn.out_proj.bias"},
    {TF_BP_NORM_CROSS_W, "encoder_attn_layer_norm.weight"}, {TF_BP_NORM_CROSS_B, "encoder_attn_layer_norm.bias"},
    {TF_BP_FF_IN_W, "fc1.weight"},                 {TF_BP_FF_IN_B, "fc1.bias"},
    {TF_BP_FF_OUT_W, "fc2.weight"},                {TF_BP_FF_OUT_B, "fc2.bias"},
    {TF_BP_NORM_FF_W, "final_layer_norm.weight"},  {TF_BP_NORM_FF_B, "final_layer_norm.bias"},
};

static tf_block_config block_config(const tf_seq2seq_config *c, int decoder) {
    tf_block_config b = tf_block_config_default(c->d_model, c->n_head);
    b.d_ff = c->d_ff ? c->d_ff : 4 * c->d_model;
    b.activation = c->activation, b.norm_eps = c->norm_eps, b.norm_first = c->norm_first;
    b.dropout = c->dropout, b.w_in_out = 0;
    b.attn_dropout = c->attn_dropout >= 0 ? c->attn_dropout : c->dropout;
    b.activation_dropout = c->activation_dropout >= 0 ? c->activation_dropout : c->dropout;
    b.self_attn.kind = decoder ? TF_ATTN_CAUSAL : TF_ATTN_FULL;
    b.cross = decoder;
    return b;
}

static int add(tf_params *ps, const char *name, tf_tensor **slot, float init, int64_t d0, int64_t d1) {
    return tf_params_add(ps, name, slot, 2, (int64_t[]){d0, d1}, init);
}

/* One stack: "model.<side>.layers.<i>." blocks and, pre-LN, "model.<side>.layer_norm". */
static int register_stack(tf_seq2seq *m, const char *side, tf_block *blocks, int n, const tf_block_config *b,
                          tf_layer_norm *norm) {
    const tf_seq2seq_config *c = &m->cfg;
    tf_block_names names = {BART_BLOCK, (int)(sizeof BART_BLOCK / sizeof *BART_BLOCK)};
    tf_block_init init = {0.02f, 0.02f, 0};
    char prefix[96];
    int rc = 0;
    for (int i = 0; !rc && i < n; i++) {
        snprintf(prefix, sizeof prefix, "model.%s.layers.%d.", side, i);
        rc = tf_block_register(m->params, prefix, &blocks[i], b, &names, init);
    }
    norm->eps = c->norm_eps;
    snprintf(prefix, sizeof prefix, "model.%s.layer_norm", side);
    if (!rc && c->norm_first) rc = tf_layer_norm_register(m->params, prefix, norm, c->d_model, c->norm_eps, 1);
    return rc;
}

static int register_all(tf_seq2seq *m) {
    const tf_seq2seq_config *c = &m->cfg;
    tf_params *ps = m->params;
    int64_t C = c->d_model;
    float std = c->scale_embedding ? 1.0f / sqrtf((float)C) : 0.02f; /* scaled by sqrt(C): unit-size inputs */
    int rc;
    if (c->share_embeddings) {
        rc = add(ps, "model.shared.weight", &m->src_embed, std, c->src_vocab, C); /* tgt_embed stays NULL */
    } else {
        rc = add(ps, "model.encoder.embed_tokens.weight", &m->src_embed, std, c->src_vocab, C);
        if (!rc) rc = add(ps, "model.decoder.embed_tokens.weight", &m->tgt_embed, std, c->tgt_vocab, C);
    }
    if (!rc && c->pos == TF_POS_LEARNED) {
        rc = add(ps, "model.encoder.embed_positions.weight", &m->src_pos, 0.01f, c->context, C);
        if (!rc) rc = add(ps, "model.decoder.embed_positions.weight", &m->tgt_pos, 0.01f, c->context, C);
    }
    if (!rc) rc = register_stack(m, "encoder", m->encoder, c->n_encoder_layers, &m->enc_block, &m->enc_norm);
    if (!rc) rc = register_stack(m, "decoder", m->decoder, c->n_decoder_layers, &m->dec_block, &m->dec_norm);
    if (!rc)
        rc = tf_lm_head_register(ps, c->tied ? NULL : "lm_head.weight", NULL, &m->head,
                                 !c->tied ? NULL : c->share_embeddings ? &m->src_embed : &m->tgt_embed, C, c->tgt_vocab, 0.02f);
    if (!rc && c->final_logits_bias) /* Marian's (1,V) buffer, under its name */
        rc = tf_params_add(ps, "final_logits_bias", &m->logits_bias, 2, (int64_t[]){1, c->tgt_vocab}, TF_INIT_ZEROS);
    return rc;
}

static int build(void *model) {
    tf_seq2seq *m = model;
    const tf_seq2seq_config *cfg = &m->cfg;
    if (!(m->encoder = calloc((size_t)cfg->n_encoder_layers, sizeof *m->encoder)) ||
        !(m->decoder = calloc((size_t)cfg->n_decoder_layers, sizeof *m->decoder)))
        return tf_set_error("seq2seq: out of memory");
    m->enc_block = block_config(cfg, 0), m->dec_block = block_config(cfg, 1);
    return register_all(m);
}

static void release(void *model) {
    tf_seq2seq *m = model;
    free(m->encoder), free(m->decoder);
}

static const tf_family_layout LAYOUT = {
    .family = "seq2seq", TF_FAMILY_LAYOUT(tf_seq2seq), .build = build, .release = release};

TF_FAMILY_NEW_FREE(tf_seq2seq, LAYOUT)

/* ---------------------------------------------------------------- forward */

/* E[ids] s + positions start..start+T-1, dropout: (B,T,C). */
static tf_tensor *embed(tf_ctx *ctx, const tf_seq2seq *m, tf_tensor *table, tf_tensor *pos_table, tf_tensor *ids,
                        int64_t start) {
    const tf_seq2seq_config *c = &m->cfg;
    int64_t T = ids->shape[1];
    if (start + T > c->context)
        return tf_set_error("seq2seq: %lld positions exceed the context of %d", (long long)(start + T), c->context), NULL;
    tf_tensor *x = tf_embedding(ctx, table, ids);
    if (c->scale_embedding) x = tf_scale(ctx, x, sqrtf((float)c->d_model));
    tf_tensor *p = pos_table ? tf_posenc_learned(ctx, pos_table, start, T)
                   : c->pos == TF_POS_SINUSOIDAL_HALVES ? tf_posenc_sinusoidal_halves_tensor(ctx, start, T, c->d_model)
                                                        : tf_posenc_sinusoidal_tensor(ctx, start, T, c->d_model);
    return tf_dropout(ctx, tf_add(ctx, x, p), c->dropout);
}

static int check_ids(const tf_tensor *t, const char *name, int64_t vocab) {
    char s[64];
    if (!t || t->dtype != TF_DTYPE_I32 || t->ndim != 2 || t->shape[0] < 1 || t->shape[1] < 1)
        return tf_set_error("seq2seq: %s %s must be I32 (B,T)", name, t ? tf_shape_str(t, s, sizeof s) : "missing");
    for (int64_t i = 0; i < tf_numel(t); i++)
        if (tf_i32(t)[i] < 0 || tf_i32(t)[i] >= vocab)
            return tf_set_error("seq2seq: %s holds id %d, outside the vocabulary of %lld", name, tf_i32(t)[i], (long long)vocab);
    return 0;
}

/* The encoder: memory (B,S,C). */
static tf_tensor *encode(tf_ctx *ctx, const tf_seq2seq *m, const tf_seq2seq_inputs *in, const tf_attn_mask *mask) {
    tf_tensor *x = embed(ctx, m, m->src_embed, m->src_pos, in->input_ids, 0);  // x: (B,S,C)
    tf_block_args args = {.self_mask = mask};
    for (int i = 0; i < m->cfg.n_encoder_layers; i++) x = tf_block_forward(ctx, &m->encoder[i], &m->enc_block, x, &args);
    return m->cfg.norm_first ? tf_layer_norm_forward(ctx, &m->enc_norm, x) : x;
}

/* The decoder over the new target positions (after the cache's): (B,T,C);
 * cross (n_decoder_layers slots, or NULL) gets each layer's cross-attention
 * probabilities (B,H,T,S). */
static tf_tensor *decode(tf_ctx *ctx, const tf_seq2seq *m, const tf_seq2seq_inputs *in, tf_tensor *memory,
                         const tf_attn_mask *cross_mask, tf_tensor **cross) {
    int64_t B = in->decoder_input_ids->shape[0], T = in->decoder_input_ids->shape[1];
    int64_t start = in->cache ? tf_kv_cache_len(in->cache) : 0;
    tf_attn_mask self = {0};
    if (in->decoder_attention_mask &&
        !(self.key_padding_mask = tf_key_padding(ctx, in->decoder_attention_mask, B, start + T, "seq2seq")))
        return NULL;
    tf_tensor *table = m->cfg.share_embeddings ? m->src_embed : m->tgt_embed;
    tf_tensor *x = embed(ctx, m, table, m->tgt_pos, in->decoder_input_ids, start);  // x: (B,T,C)
    tf_block_args args = {.memory = memory, .self_mask = in->decoder_attention_mask ? &self : NULL,
                          .cross_mask = cross_mask, .cache = in->cache, .cross_cache = in->cross_cache};
    int fill = in->cross_cache && tf_kv_cache_len(in->cross_cache) == 0;
    for (int i = 0; i < m->cfg.n_decoder_layers; i++) {
        args.layer = i, args.cross_probs = cross ? &cross[i] : NULL;
        x = tf_block_forward(ctx, &m->decoder[i], &m->dec_block, x, &args);
    }
    if (m->cfg.norm_first) x = tf_layer_norm_forward(ctx, &m->dec_norm, x);
    if (x && in->cache && tf_kv_cache_advance(in->cache, (int)T)) return NULL;
    if (x && fill && tf_kv_cache_advance(in->cross_cache, (int)memory->shape[1])) return NULL;
    return x;
}

/* logits (B,T,V) = h E^T or h W^T, plus Marian's final_logits_bias (1,V) when it has one. */
static tf_tensor *project(tf_ctx *ctx, const tf_seq2seq *m, tf_tensor *h) {
    tf_tensor *logits = tf_lm_head_forward(ctx, &m->head, h);
    return m->logits_bias && logits ? tf_add(ctx, logits, m->logits_bias) : logits;
}

int tf_seq2seq_run(tf_ctx *ctx, const tf_seq2seq *m, const tf_seq2seq_inputs *in, tf_seq2seq_outputs *out) {
    memset(out, 0, sizeof *out);
    if (check_ids(in->input_ids, "input_ids", m->cfg.src_vocab) ||
        (in->decoder_input_ids && check_ids(in->decoder_input_ids, "decoder_input_ids", m->cfg.tgt_vocab)))
        return -1;
    int64_t B = in->input_ids->shape[0], S = in->input_ids->shape[1];
    int shared = 0; /* target rows reading the sources' held cross-attention rows through a map (beams) */
    if (in->cross_cache) tf_kv_cache_row_map(in->cross_cache, &shared);
    if (in->decoder_input_ids && in->decoder_input_ids->shape[0] != (shared ? shared : B))
        return tf_set_error("seq2seq: %lld sources but %lld targets", (long long)(shared ? shared : B),
                            (long long)in->decoder_input_ids->shape[0]);
    tf_attn_mask src = {0};
    if (in->attention_mask && !(src.key_padding_mask = tf_key_padding(ctx, in->attention_mask, B, S, "seq2seq")))
        return -1;
    const tf_attn_mask *src_mask = in->attention_mask ? &src : NULL;
    tf_tensor *memory = in->encoder_output ? in->encoder_output : encode(ctx, m, in, src_mask);
    if (!(out->encoder_last_hidden_state = memory)) return -1;
    if (!in->decoder_input_ids) return 0; /* the encoder alone */
    if (in->output_attentions &&
        !(out->cross_attentions = tf_ctx_alloc(ctx, (size_t)m->cfg.n_decoder_layers * sizeof *out->cross_attentions)))
        return -1;
    if (!(out->last_hidden_state = decode(ctx, m, in, memory, src_mask, out->cross_attentions))) return -1;
    if (!(out->logits = project(ctx, m, out->last_hidden_state))) return -1;
    if (in->labels && !(out->loss = tf_cross_entropy(ctx, out->logits, in->labels, -100, in->label_smoothing))) return -1;
    return 0;
}
