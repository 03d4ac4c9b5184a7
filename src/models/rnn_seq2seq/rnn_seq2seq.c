/* The RNN encoder-decoder with Bahdanau attention (include/tformer/rnn_seq2seq.h).
 * Following ../shared/seeds/05-attention-lecture-dl1.txt lines 117-143 (p(y_i|...) =
 * g(y_{i-1}, s_i, c_i), s_i = f(s_{i-1}, y_{i-1}, c_i), c_i = sum_j alpha_ij h_j,
 * alpha_ij = softmax_j(e_ij), e_ij = a(s_{i-1}, h_j)) and
 * 02-attention-and-transformers-vlm.txt lines 145-201 (s_0 from the encoder's final
 * state; alignment scores from s_{t-1}; a new context vector each decoder step).
 * Where the decks are silent this follows the paper: h_j = [->h_j; <-h_j],
 * s_0 = tanh(W_s <-h_1), a(s, h) = v_a^T tanh(W_a s + U_a h_j) without biases;
 * and PyTorch's tutorial practice: the cell's input is [E y_{i-1}; c_i], the
 * output a linear layer over [s_i; c_i; E y_{i-1}] (or, with maxout, the
 * paper's deep output over the same three), an LSTM's c_0 = 0.
 *
 *   training:  logits[:, i] = step(s_{i-1}, E y_{i-1})  for i = 1..T (teacher forcing)
 *   decoding:  the same step on each fed token, s kept between calls */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../../nn/nn_internal.h"
#include "../family_construct.h"
#include "tformer/rnn_seq2seq.h"

static int register_all(tf_rnn_seq2seq *m) {
    const tf_rnn_seq2seq_config *c = &m->cfg;
    tf_params *ps = m->params;
    int64_t E = c->emb_dim, H = c->hidden, V = c->tgt_vocab;
    int rc;
    /* nn.Embedding's N(0, 1) */
    if (c->share_embeddings) {
        rc = tf_params_add(ps, "shared.weight", &m->src_embed, 2, (int64_t[]){c->src_vocab, E}, 1.0f);  // (V,E)
    } else {
        rc = tf_params_add(ps, "encoder.embed_tokens.weight", &m->src_embed, 2, (int64_t[]){c->src_vocab, E}, 1.0f) ||
             tf_params_add(ps, "decoder.embed_tokens.weight", &m->tgt_embed, 2, (int64_t[]){c->tgt_vocab, E}, 1.0f);
    }
    if (!rc) rc = tf_birnn_register(ps, "encoder.rnn.", 0, &m->encoder, c->cell, E, H, 1);
    if (!rc) rc = tf_linear_register(ps, "decoder.init", &m->init, H, H, 1, tf_fan_in_std(H));  // W_s (H,H)
    if (!rc) rc = tf_additive_attn_register(ps, "decoder.attention.", &m->attn, H, 2 * H, c->attn_size, 0, tf_fan_in_std(H));
    if (!rc) rc = tf_rnn_register(ps, "decoder.cell.", "", &m->cell, c->cell, E + 2 * H, H, 1, 0);
    int64_t O = 3 * H + E, L = c->maxout;  // o_i's width, the maxout units
    if (!rc && L) rc = tf_linear_register(ps, "decoder.deep_out", &m->deep_out, O, 2 * L, 1, tf_fan_in_std(O));  // U_o (2L,O)
    if (!rc) rc = tf_linear_register(ps, "decoder.out", &m->out, L ? L : O, V, 1, tf_fan_in_std(L ? L : O));  // W_o (V,L|O)
    return rc ? -1 : 0;
}

static int build(void *m) { return register_all(m); }
static const tf_family_layout LAYOUT = {.family = "rnn seq2seq", TF_FAMILY_LAYOUT(tf_rnn_seq2seq), .build = build};

TF_FAMILY_NEW_FREE(tf_rnn_seq2seq, LAYOUT)

/* ---------------------------------------------------------------- forward */

static int check_ids(const tf_tensor *t, const char *name, int64_t vocab) {
    char s[64];
    if (!t || t->dtype != TF_DTYPE_I32 || t->ndim != 2 || t->shape[0] < 1 || t->shape[1] < 1)
        return tf_set_error("rnn seq2seq: %s %s must be I32 (B,T)", name, t ? tf_shape_str(t, s, sizeof s) : "missing");
    for (int64_t i = 0; i < tf_numel(t); i++)
        if (tf_i32(t)[i] < 0 || tf_i32(t)[i] >= vocab)
            return tf_set_error("rnn seq2seq: %s holds id %d, outside the vocabulary of %lld", name, tf_i32(t)[i],
                                (long long)vocab);
    return 0;
}

/* The encoder: annotations h_j (B,S,2H), keys U_a h_j (B,S,A) and s_0 = tanh(W_s <-h_1) (B,H). */
static int encode(tf_ctx *ctx, const tf_rnn_seq2seq *m, tf_tensor *ids, tf_tensor *pad, tf_rnn_seq2seq_outputs *out) {
    int64_t B = ids->shape[0], H = m->cfg.hidden;
    tf_tensor *x = tf_dropout(ctx, tf_embedding(ctx, m->src_embed, ids), m->cfg.dropout);  // (B,S,E)
    tf_rnn_state fin[2];
    tf_tensor *h = tf_birnn_forward(ctx, &m->encoder, x, pad, fin);  // (B,S,2H)
    if (!h) return -1;
    out->encoder_output = h;
    out->keys = tf_additive_attn_keys(ctx, &m->attn, h);                           // (B,S,A)
    out->state.h = tf_tanh(ctx, tf_linear_forward(ctx, &m->init, fin[1].h));         // (B,H): <-h_1 is the reverse's last state
    out->state.c = m->cfg.cell == TF_RNN_LSTM ? tf_tensor_new(ctx, TF_DTYPE_F32, 2, (int64_t[]){B, H}, 0) : NULL;  // (B,H) zeros
    return out->keys && out->state.h && (m->cfg.cell != TF_RNN_LSTM || out->state.c) ? 0 : -1;
}

/* One target position i: c_i from s_{i-1}; s_i = f(s_{i-1}, [E y_{i-1}; c_i]) into st;
 * returns o_i = [s_i; c_i; E y_{i-1}] (B,3H+E); alpha_i (B,S) into *alpha. */
static tf_tensor *decode_step(tf_ctx *ctx, const tf_rnn_seq2seq *m, tf_tensor *ey, tf_tensor *h, tf_tensor *keys,
                              tf_tensor *pad, tf_rnn_state *st, tf_tensor **alpha) {
    tf_tensor *c = tf_additive_attn_forward(ctx, &m->attn, st->h, h, keys, pad, alpha);  // c_i (B,2H)
    tf_tensor *xin[2] = {ey, c};
    tf_tensor *x = c ? tf_concat(ctx, 2, xin, 1) : NULL;  // (B,E+2H)
    if (!x || tf_rnn_cell_step(ctx, &m->cell, x, NULL, st)) return NULL;  // s_i (B,H)
    tf_tensor *oin[3] = {st->h, c, ey};
    return tf_concat(ctx, 3, oin, 1);  // (B,3H+E)
}

/* The output layer over every position at once: o (B,T,3H+E) -> logits (B,T,V). */
static tf_tensor *output_layer(tf_ctx *ctx, const tf_rnn_seq2seq *m, tf_tensor *o) {
    int64_t B = o->shape[0], T = o->shape[1], L = m->cfg.maxout;
    tf_tensor *x = tf_dropout(ctx, o, m->cfg.dropout);
    if (L) { /* t = max(u_{2k}, u_{2k+1}): pairs of adjacent units */
        tf_tensor *u = tf_linear_forward(ctx, &m->deep_out, x);                           // (B,T,2L)
        x = tf_max(ctx, tf_reshape(ctx, u, 4, (int64_t[]){B, T, L, 2}), 3, 0);             // (B,T,L)
    }
    return tf_linear_forward(ctx, &m->out, x);  // (B,T,V)
}

/* Teacher forcing over decoder_input_ids (B,T): logits (B,T,V), alphas (B,T,S), the final state. */
static int decode(tf_ctx *ctx, const tf_rnn_seq2seq *m, const tf_rnn_seq2seq_inputs *in, tf_tensor *pad,
                  tf_rnn_seq2seq_outputs *out) {
    tf_tensor *ids = in->decoder_input_ids, *h = out->encoder_output;
    int64_t B = ids->shape[0], T = ids->shape[1], S = h->shape[1], E = m->cfg.emb_dim;
    tf_tensor *table = m->cfg.share_embeddings ? m->src_embed : m->tgt_embed;
    tf_tensor *y = tf_dropout(ctx, tf_embedding(ctx, table, ids), m->cfg.dropout);  // (B,T,E)
    tf_tensor *ys = tf_contiguous(ctx, tf_transpose(ctx, y, 0, 1));                 // (T,B,E)
    int64_t O = 3 * m->cfg.hidden + E;
    tf_tensor **os = tf_ctx_alloc(ctx, 2 * (size_t)T * sizeof *os), **al = os ? os + T : NULL;  // T of (B,1,O), (B,1,S)
    if (!ys || !os) return -1;
    for (int64_t t = 0; t < T; t++) {
        tf_tensor *ey = tf_reshape(ctx, tf_narrow(ctx, ys, 0, t, 1), 2, (int64_t[]){B, E});  // E y_{i-1} (B,E)
        tf_tensor *alpha = NULL;
        tf_tensor *o = decode_step(ctx, m, ey, h, out->keys, pad, &out->state, &alpha);  // (B,O)
        os[t] = tf_reshape(ctx, o, 3, (int64_t[]){B, 1, O});
        al[t] = alpha ? tf_reshape(ctx, alpha, 3, (int64_t[]){B, 1, S}) : NULL;
        if (!os[t] || !al[t]) return -1;
    }
    tf_tensor *o = T == 1 ? os[0] : tf_concat(ctx, (int)T, os, 1);  // (B,T,O)
    out->logits = o ? output_layer(ctx, m, o) : NULL;                 // (B,T,V)
    if (in->output_attentions && !(out->attentions = tf_concat(ctx, (int)T, al, 1))) return -1;  // (B,T,S)
    return out->logits ? 0 : -1;
}

/* The inputs' shapes against each other and the configuration. */
static int check_inputs(const tf_rnn_seq2seq *m, const tf_rnn_seq2seq_inputs *in) {
    const tf_rnn_seq2seq_config *c = &m->cfg;
    if (check_ids(in->input_ids, "input_ids", c->src_vocab) ||
        (in->decoder_input_ids && check_ids(in->decoder_input_ids, "decoder_input_ids", c->tgt_vocab)))
        return -1;
    int64_t B = in->input_ids->shape[0], S = in->input_ids->shape[1];
    if (S > c->context) return tf_set_error("rnn seq2seq: a source of %lld exceeds the context of %d", (long long)S, c->context);
    if (in->decoder_input_ids && in->decoder_input_ids->shape[0] != B)
        return tf_set_error("rnn seq2seq: %lld sources but %lld targets", (long long)B,
                            (long long)in->decoder_input_ids->shape[0]);
    if (in->decoder_input_ids && in->decoder_input_ids->shape[1] > c->context)
        return tf_set_error("rnn seq2seq: a target of %lld exceeds the context of %d",
                            (long long)in->decoder_input_ids->shape[1], c->context);
    if (in->encoder_output && (!in->state || !in->state->h || (c->cell == TF_RNN_LSTM && !in->state->c)))
        return tf_set_error("rnn seq2seq: encoder_output needs the decoder state it goes with");
    const tf_tensor *s = in->state ? in->state->h : NULL;
    if (s && (s->ndim != 2 || s->shape[0] != B || s->shape[1] != c->hidden))
        return tf_set_error("rnn seq2seq: the decoder state must be (%lld,%d)", (long long)B, c->hidden);
    return 0;
}

int tf_rnn_seq2seq_run(tf_ctx *ctx, const tf_rnn_seq2seq *m, const tf_rnn_seq2seq_inputs *in,
                       tf_rnn_seq2seq_outputs *out) {
    memset(out, 0, sizeof *out);
    if (check_inputs(m, in)) return -1;
    int64_t B = in->input_ids->shape[0], S = in->input_ids->shape[1];
    tf_tensor *pad = NULL;  // (B,S) U8, 1 = padding
    if (in->attention_mask && !(pad = tf_key_padding(ctx, in->attention_mask, B, S, "rnn seq2seq"))) return -1;
    if (in->encoder_output) {
        out->encoder_output = in->encoder_output;
        out->keys = in->keys ? in->keys : tf_additive_attn_keys(ctx, &m->attn, in->encoder_output);
        if (!out->keys) return -1;
    } else if (encode(ctx, m, in->input_ids, pad, out)) {
        return -1;
    }
    if (in->state) out->state = *in->state;
    if (!in->decoder_input_ids) return 0; /* the encoder alone: annotations, keys, s_0 */
    if (decode(ctx, m, in, pad, out)) return -1;
    if (in->labels && !(out->loss = tf_cross_entropy(ctx, out->logits, in->labels, -100, in->label_smoothing))) return -1;
    return 0;
}
