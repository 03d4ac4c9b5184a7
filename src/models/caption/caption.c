/* The deck's captioner (include/tformer/caption.h): Show, Attend and Tell (Xu et al. 2015).
 *
 *   image (B,C,S,S) --CNN--> grid (B,D,G,G) --> annotations a (B,N,D), N = G*G
 *        mean_i a_i --> h_0 = tanh(W_h abar)                       (LSTM: c_0 too)
 *   for each word t:  z_t = attention(h_{t-1}, a)                  (the baseline: none)
 *                     h_t = cell(h_{t-1}, [E y_{t-1}; z_t])
 *                     o_t = [h_t; z_t; E y_{t-1}]
 *   logits = W_o o (all words at once); loss = cross-entropy + alpha_c sum_i (1 - sum_t alpha_ti)^2 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../../nn/nn_internal.h"
#include "../family_construct.h"
#include "caption_internal.h"

static int register_cnn(tf_caption *m) {
    const tf_caption_config *c = &m->cfg;
    int64_t D = c->cnn_dim;
    for (int i = 0; i < c->n_conv; i++) {
        int64_t in = i ? D : c->channels;
        char w[64], b[64];
        snprintf(w, sizeof w, "encoder.conv.%d.weight", i), snprintf(b, sizeof b, "encoder.conv.%d.bias", i);
        float he = (float)sqrt(2.0 / (double)(in * 9)); /* He's init for a ReLU layer */
        if (tf_params_add(m->params, w, &m->conv_w[i], 4, (int64_t[]){D, in, 3, 3}, he) ||
            tf_params_add(m->params, b, &m->conv_b[i], 1, (int64_t[]){D}, TF_INIT_ZEROS))
            return -1;
    }
    return 0;
}

static int register_all(tf_caption *m) {
    const tf_caption_config *c = &m->cfg;
    tf_params *ps = m->params;
    int64_t D = c->cnn_dim, E = c->emb_dim, H = c->hidden, V = c->vocab, att = c->attention;
    int64_t O = H + att * D + E; /* o_t's width */
    if (c->encoder == TF_CAPTION_VIT) return tf_caption_vit_register(m); /* a VisionEncoderDecoderModel */
    int rc = register_cnn(m);
    if (!rc && c->decoder == TF_CAPTION_TRANSFORMER) {
        rc = tf_params_add(ps, "decoder.embed.weight", &m->embed, 2, (int64_t[]){V, H}, 0.02f) ||  // (V,H)
             tf_caption_transformer_register(m) ||
             tf_linear_register(ps, "decoder.out", &m->out, H, V, 1, tf_fan_in_std(H));  // W_o (V,H)
        return rc ? -1 : 0;
    }
    if (!rc) rc = tf_linear_register(ps, "decoder.init_h", &m->init_h, D, H, 1, tf_fan_in_std(D));
    if (!rc && c->cell == TF_RNN_LSTM) rc = tf_linear_register(ps, "decoder.init_c", &m->init_c, D, H, 1, tf_fan_in_std(D));
    if (!rc) rc = tf_params_add(ps, "decoder.embed.weight", &m->embed, 2, (int64_t[]){V, E}, 1.0f);  // (V,E)
    if (!rc && att) rc = tf_additive_attn_register(ps, "decoder.attention.", &m->attn, H, D, c->attn_size, 0, tf_fan_in_std(H));
    if (!rc) rc = tf_rnn_register(ps, "decoder.cell.", "", &m->rnn, c->cell, E + att * D, H, 1, 0);
    if (!rc) rc = tf_linear_register(ps, "decoder.out", &m->out, O, V, 1, tf_fan_in_std(O));  // W_o (V,O)
    return rc ? -1 : 0;
}

static int build(void *m) { return register_all(m); }
static void release(void *m) { tf_caption_ved_free(((tf_caption *)m)->ved); }
static const tf_family_layout LAYOUT = {.family = "caption", TF_FAMILY_LAYOUT(tf_caption), .build = build,
                                        .release = release};

TF_FAMILY_NEW_FREE(tf_caption, LAYOUT)

/* ---------------------------------------------------------------- forward */

/* The CNN: pixels (B,C,S,S) -> annotations (B,N,D); h_0 (and c_0) from their mean. */
static int encode(tf_ctx *ctx, const tf_caption *m, tf_tensor *x, tf_caption_outputs *out) {
    const tf_caption_config *c = &m->cfg;
    int64_t B = x->shape[0], D = c->cnn_dim, G = tf_caption_grid(c);
    for (int i = 0; i < c->n_conv && x; i++) x = tf_relu(ctx, tf_conv2d(ctx, x, m->conv_w[i], m->conv_b[i], 2, 1));
    tf_tensor *g = tf_reshape(ctx, x, 3, (int64_t[]){B, D, G * G});                     // (B,D,N)
    tf_tensor *a = tf_contiguous(ctx, tf_transpose(ctx, g, 1, 2));                       // (B,N,D)
    if (c->decoder == TF_CAPTION_TRANSFORMER) return (out->annotations = tf_caption_memory(ctx, m, a)) ? 0 : -1;
    tf_tensor *abar = tf_mean(ctx, a, 1, 0);                                             // (B,D)
    out->annotations = a;
    out->state.h = tf_tanh(ctx, tf_linear_forward(ctx, &m->init_h, abar));               // (B,H)
    out->state.c = c->cell == TF_RNN_LSTM ? tf_tanh(ctx, tf_linear_forward(ctx, &m->init_c, abar)) : NULL;
    return a && out->state.h && (c->cell != TF_RNN_LSTM || out->state.c) ? 0 : -1;
}

/* One word: z_t from h_{t-1} (with attention), the cell into st; returns o_t (B,O), alpha_t into *alpha. */
static tf_tensor *step(tf_ctx *ctx, const tf_caption *m, tf_tensor *ey, tf_tensor *a, tf_tensor *keys,
                       tf_rnn_state *st, tf_tensor **alpha) {
    tf_tensor *z = m->cfg.attention ? tf_additive_attn_forward(ctx, &m->attn, st->h, a, keys, NULL, alpha) : NULL;
    if (m->cfg.attention && !z) return NULL;
    tf_tensor *xin[2] = {ey, z};
    tf_tensor *x = z ? tf_concat(ctx, 2, xin, 1) : ey;  // (B,E[+D])
    if (!x || tf_rnn_cell_step(ctx, &m->rnn, x, NULL, st)) return NULL;  // h_t (B,H)
    tf_tensor *oin[3] = {st->h, z ? z : ey, ey};
    return tf_concat(ctx, z ? 3 : 2, oin, 1);  // (B,H[+D]+E)
}

/* Teacher forcing over input_ids (B,T): logits (B,T,V), alphas (B,T,N), the final state. */
static int decode(tf_ctx *ctx, const tf_caption *m, tf_tensor *ids, int want_alpha, tf_caption_outputs *out) {
    int64_t B = ids->shape[0], T = ids->shape[1], E = m->cfg.emb_dim, N = out->annotations->shape[1];
    int att = m->cfg.attention;
    int64_t O = m->cfg.hidden + att * m->cfg.cnn_dim + E;
    tf_tensor *ys = tf_contiguous(ctx, tf_transpose(ctx, tf_embedding(ctx, m->embed, ids), 0, 1));  // (T,B,E)
    tf_tensor **os = tf_ctx_alloc(ctx, 2 * (size_t)T * sizeof *os), **al = os ? os + T : NULL;  // T of (B,1,O), (B,1,N)
    if (!ys || !os) return -1;
    for (int64_t t = 0; t < T; t++) {
        tf_tensor *ey = tf_reshape(ctx, tf_narrow(ctx, ys, 0, t, 1), 2, (int64_t[]){B, E});  // E y_{t-1} (B,E)
        tf_tensor *alpha = NULL;
        tf_tensor *o = step(ctx, m, ey, out->annotations, out->keys, &out->state, &alpha);  // (B,O)
        os[t] = tf_reshape(ctx, o, 3, (int64_t[]){B, 1, O});
        al[t] = alpha ? tf_reshape(ctx, alpha, 3, (int64_t[]){B, 1, N}) : NULL;
        if (!os[t] || (att && !al[t])) return -1;
    }
    tf_tensor *o = T == 1 ? os[0] : tf_concat(ctx, (int)T, os, 1);                         // (B,T,O)
    out->logits = o ? tf_linear_forward(ctx, &m->out, tf_dropout(ctx, o, m->cfg.dropout)) : NULL;  // (B,T,V)
    if (att && want_alpha && !(out->attentions = T == 1 ? al[0] : tf_concat(ctx, (int)T, al, 1))) return -1;  // (B,T,N)
    return out->logits ? 0 : -1;
}

/* alpha_c sum_i (1 - sum_t alpha_ti)^2, averaged over the batch, t over the labelled words. */
static tf_tensor *doubly_stochastic(tf_ctx *ctx, const tf_caption *m, tf_tensor *alphas, tf_tensor *labels) {
    int64_t B = alphas->shape[0], T = alphas->shape[1], N = alphas->shape[2];
    tf_tensor *keep = tf_tensor_new(ctx, TF_DTYPE_F32, 3, (int64_t[]){B, T, 1}, 0);  // (B,T,1): 1 on a word
    tf_tensor *one = tf_tensor_new(ctx, TF_DTYPE_F32, 2, (int64_t[]){B, N}, 0);      // (B,N) of -1
    if (!keep || !one) return NULL;
    for (int64_t i = 0; i < B * T; i++) tf_f32(keep)[i] = tf_i32(labels)[i] != -100;
    for (int64_t i = 0; i < B * N; i++) tf_f32(one)[i] = -1.0f;
    tf_tensor *s = tf_sum(ctx, tf_mul(ctx, alphas, keep), 1, 0);  // sum_t alpha_ti (B,N)
    tf_tensor *d = tf_add(ctx, s, one);                            // (B,N)
    return tf_scale(ctx, tf_sum(ctx, tf_mul(ctx, d, d), TF_DIM_ALL, 0), m->cfg.alpha_c / (float)B);
}

static int check_ids(const tf_tensor *t, const char *name, int64_t vocab, int64_t B, int ignore) {
    char s[64];
    if (!t || t->dtype != TF_DTYPE_I32 || t->ndim != 2 || t->shape[0] != B || t->shape[1] < 1)
        return tf_set_error("caption: %s %s must be I32 (%lld,T)", name, t ? tf_shape_str(t, s, sizeof s) : "missing",
                            (long long)B);
    for (int64_t i = 0; i < tf_numel(t); i++)
        if ((tf_i32(t)[i] < 0 || tf_i32(t)[i] >= vocab) && !(ignore && tf_i32(t)[i] == -100))
            return tf_set_error("caption: %s holds id %d, outside the vocabulary of %lld", name, tf_i32(t)[i],
                                (long long)vocab);
    return 0;
}

static int check_inputs(const tf_caption *m, const tf_caption_inputs *in) {
    const tf_caption_config *c = &m->cfg;
    const tf_tensor *x = in->pixel_values, *a = in->annotations;
    char s[64];
    int64_t N = (int64_t)tf_caption_grid(c) * tf_caption_grid(c), B;
    if (x && (x->dtype != TF_DTYPE_F32 || x->ndim != 4 || x->shape[0] < 1 || x->shape[1] != c->channels ||
              x->shape[2] != c->image_size || x->shape[3] != c->image_size))
        return tf_set_error("caption: pixel_values %s must be F32 (B,%d,%d,%d)", tf_shape_str(x, s, sizeof s),
                            c->channels, c->image_size, c->image_size);
    int rnn = c->decoder == TF_CAPTION_RNN, width = rnn ? c->cnn_dim : c->hidden;
    if (!x && (!a || (rnn && (!in->state || !in->state->h))))
        return tf_set_error("caption: pixel_values missing (or annotations with the decoder state)");
    if (!x && (a->ndim != 3 || a->shape[1] != N || a->shape[2] != width))
        return tf_set_error("caption: annotations %s must be (B,%lld,%d)", tf_shape_str(a, s, sizeof s), (long long)N,
                            width);
    B = x ? x->shape[0] : a->shape[0];
    if (in->input_ids && check_ids(in->input_ids, "input_ids", c->vocab, B, 0)) return -1;
    if (in->input_ids && in->input_ids->shape[1] > c->context)
        return tf_set_error("caption: %lld words exceed the context of %d", (long long)in->input_ids->shape[1], c->context);
    if (in->labels && (!in->input_ids || check_ids(in->labels, "labels", c->vocab, B, 1))) return -1;
    if (in->labels && in->labels->shape[1] != in->input_ids->shape[1])
        return tf_set_error("caption: labels and input_ids differ in length");
    return 0;
}

int tf_caption_run(tf_ctx *ctx, const tf_caption *m, const tf_caption_inputs *in, tf_caption_outputs *out) {
    memset(out, 0, sizeof *out);
    if (m->ved) return tf_caption_vit_run(ctx, m, in, out);
    if (check_inputs(m, in)) return -1;
    if (in->pixel_values) {
        if (encode(ctx, m, in->pixel_values, out)) return -1;
    } else {
        out->annotations = in->annotations, out->keys = in->keys;
    }
    if (in->state) out->state = *in->state;
    int rnn = m->cfg.decoder == TF_CAPTION_RNN;
    if (rnn && m->cfg.attention && !out->keys && !(out->keys = tf_additive_attn_keys(ctx, &m->attn, out->annotations)))
        return -1;  // U_a a_i (B,N,A)
    if (!in->input_ids) return 0; /* the encoder alone: annotations, keys, h_0 */
    int ds = rnn && in->labels && m->cfg.attention && m->cfg.alpha_c > 0;
    if (rnn ? decode(ctx, m, in->input_ids, in->output_attentions || ds, out)
            : tf_caption_transformer_decode(ctx, m, in->input_ids, in->cache, in->cross_cache, in->output_attentions, out))
        return -1;
    if (!in->labels) return 0;
    out->loss = out->xent = tf_cross_entropy(ctx, out->logits, in->labels, -100, 0.0f);
    if (ds && out->xent) out->loss = tf_add(ctx, out->xent, doubly_stochastic(ctx, m, out->attentions, in->labels));
    return out->loss ? 0 : -1;
}
