/* ViViT: a clip's tubelets (or each frame's patches) embedded by one strided
 * projection (tf_patch_embed), then one of the paper's three encoders, all
 * made of the one Transformer block (pre-LN, VivitLayer's name map).
 *
 *   p = tubelet_embed(pixels)                 (B,F*S,C)  F time groups of S tubes
 *   Model 1: h = enc([cls; p] + pos)          (B,F*S+1,C)            joint
 *   Model 2: s = enc_s([cls_s; p_f] + pos_s)  (B*F,S+1,C)  per frame group
 *            h = enc_t([cls_t; s[:,0]] + pos_t) (B,F+1,C)            late fusion
 *   Model 3: h = enc(p + pos)                 (B,F*S,C)  each block: space, time, MLP
 *   Model 4: h = enc(p + pos)                 (B,F*S,C)  each block's heads: half space, half time
 *   enc = dropout, the blocks, the final LayerNorm
 *   logits = classifier(h[:,0]) (Models 1, 2) or classifier(mean_n h) (Models 3, 4)
 */
#include <stdlib.h>
#include <string.h>

#include "../../nn/nn_internal.h"
#include "../family_construct.h"
#include "../vision.h"
#include "tformer/vivit.h"

static const tf_block_name JOINT[] = {TF_VIT_LAYER_NAMES};
/* Model 3: the temporal attention and its LayerNorm beside VivitLayer's tensors. */
static const tf_block_name FACTORISED[] = {
    TF_VIT_LAYER_NAMES,
    {TF_BP_X_Q_W, "temporal_attention.attention.query.weight"}, {TF_BP_X_Q_B, "temporal_attention.attention.query.bias"},
    {TF_BP_X_K_W, "temporal_attention.attention.key.weight"},   {TF_BP_X_K_B, "temporal_attention.attention.key.bias"},
    {TF_BP_X_V_W, "temporal_attention.attention.value.weight"}, {TF_BP_X_V_B, "temporal_attention.attention.value.bias"},
    {TF_BP_X_OUT_W, "temporal_attention.output.dense.weight"},  {TF_BP_X_OUT_B, "temporal_attention.output.dense.bias"},
    {TF_BP_NORM_CROSS_W, "layernorm_temporal.weight"},          {TF_BP_NORM_CROSS_B, "layernorm_temporal.bias"},
};

static tf_block_config block_config(const tf_vivit_config *c) {
    tf_block_config b = tf_block_config_default(c->d_model, c->n_head);
    b.d_ff = c->d_ff, b.activation = c->activation, b.norm_eps = c->norm_eps, b.norm_first = 1;
    b.dropout = c->dropout, b.attn_dropout = c->attn_dropout, b.self_attn.qkv_no_bias = !c->qkv_bias;
    b.self_attn.kind = TF_ATTN_FULL, b.w_in_out = 0;
    b.cross = c->model_kind == 3; /* Model 3: the cross roles attend across the frames (factorised_block) */
    return b;
}

/* "vivit." before the body's names when a head sits on it (Hugging Face's layout). */
static int body_name(const tf_vivit *m, char *out, size_t n, const char *a, const char *b) {
    if ((size_t)snprintf(out, n, "%s%s%s", m->cfg.head == TF_VIVIT_BODY ? "" : "vivit.", a, b) >= n)
        return tf_set_error("vivit: parameter name %s%s too long", a, b);
    return 0;
}

/* An encoder under names `emb`.cls_token / position_embeddings, `enc`.layer.i., `norm`. */
static int register_encoder(tf_vivit *m, tf_vivit_encoder *e, int n_layer, int64_t tokens, int cls, const char *emb,
                            const char *enc, const char *norm) {
    const tf_vivit_config *c = &m->cfg;
    tf_params *ps = m->params;
    int64_t D = c->d_model;
    char n[256], layer[64];
    if (!(e->layer = calloc((size_t)n_layer, sizeof *e->layer))) return tf_set_error("vivit: out of memory");
    int rc = cls && (body_name(m, n, sizeof n, emb, ".cls_token") ||
                     tf_params_add(ps, n, &e->cls_token, 3, (int64_t[]){1, 1, D}, c->init_std));
    rc = rc || body_name(m, n, sizeof n, emb, ".position_embeddings") ||
         tf_params_add(ps, n, &e->position, 3, (int64_t[]){1, tokens + cls, D}, c->init_std);
    tf_block_names names = {c->model_kind == 3 ? FACTORISED : JOINT,
                            c->model_kind == 3 ? (int)(sizeof FACTORISED / sizeof *FACTORISED)
                                               : (int)(sizeof JOINT / sizeof *JOINT)};
    tf_block_init init = {c->init_std, c->init_std, 0};
    for (int i = 0; !rc && i < n_layer; i++) {
        snprintf(layer, sizeof layer, ".layer.%d.", i);
        rc = body_name(m, n, sizeof n, enc, layer) || tf_block_register(ps, n, &e->layer[i], &m->block, &names, init);
    }
    return rc || body_name(m, n, sizeof n, norm, "") ||
           tf_layer_norm_register(ps, n, &e->norm, c->d_model, c->norm_eps, 1);
}

static int register_all(tf_vivit *m) {
    const tf_vivit_config *c = &m->cfg;
    tf_params *ps = m->params;
    int64_t D = c->d_model, F = tf_vivit_time_tokens(c), S = tf_vivit_spatial_tokens(c);
    char n[256];
    int rc = body_name(m, n, sizeof n, "embeddings.patch_embeddings.projection.weight", "") ||
             tf_params_add(ps, n, &m->patch_w, 5,
                           (int64_t[]){D, c->channels, tf_vivit_tube_t(c), c->tubelet_h, c->tubelet_w}, c->init_std) ||
             body_name(m, n, sizeof n, "embeddings.patch_embeddings.projection.bias", "") ||
             tf_params_add(ps, n, &m->patch_b, 1, (int64_t[]){D}, TF_INIT_ZEROS);
    int64_t tokens = c->model_kind == 2 ? S : F * S;
    rc = rc || register_encoder(m, &m->enc, c->n_layer, tokens, c->model_kind <= 2, "embeddings", "encoder", "layernorm");
    if (!rc && c->model_kind == 2)
        rc = register_encoder(m, &m->time_enc, c->n_layer_temporal, F, 1, "temporal_embeddings", "temporal_encoder",
                              "temporal_layernorm");
    if (!rc && c->head == TF_VIVIT_BODY && c->pooler)
        rc = tf_pooler_register(ps, "pooler.dense", &m->pooler, c->d_model, c->init_std);
    if (!rc && c->head == TF_VIVIT_VIDEO_CLS)
        rc = tf_classifier_register(ps, "classifier", &m->cls, c->d_model, c->n_labels, 0, c->init_std);
    return rc;
}

static int build(void *model) {
    tf_vivit *m = model;
    if (!m->cfg.d_ff) m->cfg.d_ff = 4 * m->cfg.d_model;
    m->block = block_config(&m->cfg);
    return register_all(m);
}

static void release(void *model) {
    tf_vivit *m = model;
    tf_labels_free(&m->labels, m->cfg.n_labels);
    free(m->enc.layer);
    free(m->time_enc.layer);
}

static const tf_family_layout LAYOUT = {
    .family = "vivit", TF_FAMILY_LAYOUT(tf_vivit), .build = build, .release = release};

TF_FAMILY_NEW_FREE(tf_vivit, LAYOUT)

int tf_vivit_set_labels(tf_vivit *m, const char *const *names, int n) {
    if (n != m->cfg.n_labels) return tf_set_error("vivit: %d label names for %d labels", n, m->cfg.n_labels);
    return tf_labels_set(&m->labels, n, names);
}

const char *tf_vivit_label(const tf_vivit *m, int i, char *buf, size_t n) {
    return tf_labels_name(m->labels, m->cfg.n_labels, i, buf, n);
}

/* ---------------------------------------------------------------- forward */

static int check_inputs(const tf_vivit *m, const tf_vivit_inputs *in) {
    const tf_vivit_config *c = &m->cfg;
    const tf_tensor *x = in->pixel_values, *y = in->labels;
    char s[64];
    if (!x || x->dtype != TF_DTYPE_F32 || x->ndim != 5 || x->shape[1] != c->num_frames || x->shape[2] != c->channels ||
        x->shape[3] != c->image_size || x->shape[4] != c->image_size)
        return tf_set_error("vivit: pixel_values %s must be F32 (B,%d,%d,%d,%d): num_frames, num_channels and "
                            "image_size of the model", x ? tf_shape_str(x, s, sizeof s) : "(none)", c->num_frames,
                            c->channels, c->image_size, c->image_size);
    if (!y) return 0;
    if (c->head != TF_VIVIT_VIDEO_CLS) return tf_set_error("vivit: labels need VivitForVideoClassification");
    return tf_vision_check_labels(y, x->shape[0], c->n_labels, "vivit", "clip");
}

/* Model 3's block, factorised self-attention: x (B,F*S,C) frame-major ->
 * (B*F,S,C) spatial groups, the self-attention within each frame; ->
 * (B*S,F,C) temporal groups, the cross roles attending within each place
 * across the frames (layernorm_temporal before); back to (B,F*S,C); then the
 * feed-forward. */
static tf_tensor *factorised_block(tf_ctx *ctx, const tf_block *b, const tf_block_config *c, tf_tensor *x, int64_t F) {
    int64_t B = x->shape[0], N = x->shape[1], C = x->shape[2], S = N / F;
    tf_tensor *xs = tf_reshape(ctx, x, 3, (int64_t[]){B * F, S, C});                       // (B*F,S,C)
    xs = tf_block_sublayer(ctx, b, c, TF_SUBLAYER_SELF, xs, NULL, c->dropout);
    tf_tensor *xt = tf_contiguous(ctx, tf_transpose(ctx, tf_reshape(ctx, xs, 4, (int64_t[]){B, F, S, C}), 1, 2));
    xt = tf_reshape(ctx, xt, 3, (int64_t[]){B * S, F, C});                                  // (B*S,F,C)
    tf_tensor *h = tf_block_residual_input(ctx, c, &b->norm_cross, xt);
    tf_tensor *f = tf_dropout(ctx, tf_mha_forward(ctx, &b->cross_attn, h, h, h, NULL, NULL), c->dropout);
    xt = tf_block_residual(ctx, c, &b->norm_cross, xt, f, 0.0f);                             // (B*S,F,C)
    tf_tensor *y = tf_contiguous(ctx, tf_transpose(ctx, tf_reshape(ctx, xt, 4, (int64_t[]){B, S, F, C}), 1, 2));
    return tf_block_sublayer(ctx, b, c, TF_SUBLAYER_FF, tf_reshape(ctx, y, 3, (int64_t[]){B, N, C}), NULL, c->dropout);
}

/* Model 4's factorised dot-product attention of x (B,F*S,C), frame-major:
 * one projection to q, k, v; heads [0,H/2) attend within each frame (the S
 * tokens of a time index), heads [H/2,H) within each place across the F
 * frames; the heads side by side, then the output projection. */
static tf_tensor *factorised_dot(tf_ctx *ctx, const tf_mha *m, tf_tensor *x, int64_t F) {
    int64_t B = x->shape[0], N = x->shape[1], E = m->cfg.d_model, H = m->cfg.n_head, Hs = H / 2, Ht = H - Hs;
    int64_t S = N / F, D = E / H;
    tf_tensor *qkv[3], *sp[3], *tm[3];
    tf_mha_project(ctx, m, x, x, x, qkv);  // (B,H,N,D) each
    for (int i = 0; i < 3; i++) {
        sp[i] = tf_reshape(ctx, tf_narrow(ctx, qkv[i], 1, 0, Hs), 4, (int64_t[]){B, Hs * F, S, D});  // (B,Hs*F,S,D)
        tf_tensor *t = tf_reshape(ctx, tf_narrow(ctx, qkv[i], 1, Hs, Ht), 5, (int64_t[]){B, Ht, F, S, D});
        tm[i] = tf_reshape(ctx, tf_transpose(ctx, t, 2, 3), 4, (int64_t[]){B, Ht * S, F, D});        // (B,Ht*S,F,D)
        if (!sp[i] || !tm[i]) return NULL;
    }
    tf_tensor *ys = tf_reshape(ctx, tf_mha_attend_heads(ctx, m, sp, NULL, 0, NULL, NULL), 4, (int64_t[]){B, Hs, N, D});
    tf_tensor *yt = tf_reshape(ctx, tf_mha_attend_heads(ctx, m, tm, NULL, 0, NULL, NULL), 5,
                               (int64_t[]){B, Ht, S, F, D});
    yt = tf_reshape(ctx, tf_transpose(ctx, yt, 2, 3), 4, (int64_t[]){B, Ht, N, D});        // frame-major again
    if (!ys || !yt) return NULL;
    tf_tensor *o = tf_concat(ctx, 2, (tf_tensor *[]){ys, yt}, 1);                         // (B,H,N,D)
    o = tf_reshape(ctx, tf_transpose(ctx, o, 1, 2), 3, (int64_t[]){B, N, E});             // (B,N,E)
    return tf_dense(ctx, o, m->out_proj.weight, m->cfg.w_in_out, m->out_proj.bias, TF_ACT_NONE);
}

/* Model 4's block: its self-attention factorised (VivitLayer's names), then the feed-forward. */
static tf_tensor *factorised_dot_block(tf_ctx *ctx, const tf_block *b, const tf_block_config *c, tf_tensor *x,
                                       int64_t F) {
    tf_tensor *h = tf_block_residual_input(ctx, c, &b->norm_attn, x);
    tf_tensor *f = tf_dropout(ctx, factorised_dot(ctx, &b->self_attn, h, F), c->dropout);
    x = tf_block_residual(ctx, c, &b->norm_attn, x, f, 0.0f);
    return tf_block_sublayer(ctx, b, c, TF_SUBLAYER_FF, x, NULL, c->dropout);
}

/* One layer of the model kind; x (B,N,C), N = frames * S for Models 3 and 4. */
static tf_tensor *layer_forward(tf_ctx *ctx, const tf_vivit *m, const tf_block *b, tf_tensor *x, int64_t frames) {
    if (!x) return NULL;
    if (m->cfg.model_kind < 3) return tf_block_forward(ctx, b, &m->block, x, NULL);
    if (frames <= 0 || x->shape[1] % frames)
        return tf_set_error("vivit: %lld tokens are not %lld frames of equal size", (long long)x->shape[1],
                            (long long)frames), NULL;
    return m->cfg.model_kind == 3 ? factorised_block(ctx, b, &m->block, x, frames)
                                  : factorised_dot_block(ctx, b, &m->block, x, frames);
}

/* x (B,N,C): the class token before it (if any), positions, the blocks, the final LayerNorm. */
static tf_tensor *encode(tf_ctx *ctx, const tf_vivit *m, const tf_vivit_encoder *e, int n_layer, tf_tensor *x,
                         int frames) {
    if (!x) return NULL;
    int64_t B = x->shape[0], D = m->cfg.d_model;
    if (e->cls_token) {
        tf_tensor *zeros = tf_tensor_new(ctx, TF_DTYPE_F32, 3, (int64_t[]){B, 1, D}, 0);
        tf_tensor *cls = tf_add(ctx, zeros, e->cls_token);                  // (B,1,C), broadcast
        x = tf_concat(ctx, 2, (tf_tensor *[]){cls, x}, 1);                  // (B,N+1,C)
    }
    x = tf_dropout(ctx, tf_add(ctx, x, e->position), m->cfg.dropout);
    for (int i = 0; i < n_layer; i++) x = layer_forward(ctx, m, &e->layer[i], x, frames);
    return tf_layer_norm_forward(ctx, &e->norm, x);
}

/* (B,N,C) -> (B,C): its first token. */
static tf_tensor *first_token(tf_ctx *ctx, tf_tensor *h) {
    return tf_reshape(ctx, tf_narrow(ctx, h, 1, 0, 1), 2, (int64_t[]){h->shape[0], h->shape[2]});
}

/* The encoders of the model kind: last_hidden_state. */
static tf_tensor *body(tf_ctx *ctx, const tf_vivit *m, tf_tensor *pixels) {
    const tf_vivit_config *c = &m->cfg;
    int64_t B = pixels->shape[0], D = c->d_model, F = tf_vivit_time_tokens(c), S = tf_vivit_spatial_tokens(c);
    tf_tensor *p = tf_patch_embed(ctx, pixels, m->patch_w, m->patch_b);  // (B,F*S,C), time-major
    if (!p) return NULL;
    if (c->model_kind == 1) return encode(ctx, m, &m->enc, c->n_layer, p, 0);
    if (c->model_kind >= 3) return encode(ctx, m, &m->enc, c->n_layer, p, (int)F);  // factorised: frames F
    tf_tensor *s = encode(ctx, m, &m->enc, c->n_layer, tf_reshape(ctx, p, 3, (int64_t[]){B * F, S, D}), 0);
    if (!s) return NULL;                                                      // (B*F,S+1,C)
    tf_tensor *frames = tf_reshape(ctx, first_token(ctx, s), 3, (int64_t[]){B, F, D});  // (B,F,C)
    return encode(ctx, m, &m->time_enc, c->n_layer_temporal, frames, 0);      // (B,F+1,C)
}

int tf_vivit_run(tf_ctx *ctx, const tf_vivit *m, const tf_vivit_inputs *in, tf_vivit_outputs *out) {
    memset(out, 0, sizeof *out);
    if (check_inputs(m, in)) return -1;
    tf_tensor *h = body(ctx, m, in->pixel_values);
    if (!(out->last_hidden_state = h)) return -1;
    if (m->cfg.head == TF_VIVIT_BODY) {
        if (m->cfg.pooler && !(out->pooler_output = tf_pooler_forward(ctx, &m->pooler, h))) return -1;
        return 0;
    }
    tf_tensor *pooled = m->cfg.model_kind >= 3 ? tf_mean(ctx, h, 1, 0) : first_token(ctx, h);  // (B,C)
    if (!(out->logits = tf_classifier_seq_forward(ctx, &m->cls, pooled))) return -1;          // (B,L)
    if (in->labels && !(out->loss = tf_cross_entropy(ctx, out->logits, in->labels, -100, in->label_smoothing)))
        return -1;
    return 0;
}

static int vivit_logits(tf_ctx *ctx, const void *model, tf_tensor *x, tf_tensor **logits) {
    tf_vivit_outputs o;
    int rc = tf_vivit_run(ctx, model, &(tf_vivit_inputs){.pixel_values = x}, &o);
    *logits = o.logits;
    return rc;
}

int tf_vivit_predict(const tf_vivit *m, const float *x, int64_t n, int batch, const int32_t *labels, int32_t *pred,
                     float *prob, double *loss, int64_t *correct) {
    const tf_vivit_config *c = &m->cfg;
    if (c->head != TF_VIVIT_VIDEO_CLS) return tf_set_error("vivit: predictions need VivitForVideoClassification");
    int64_t item[4] = {c->num_frames, c->channels, c->image_size, c->image_size};  // (T,C,S,S)
    return tf_predict_batches(m, vivit_logits, c->n_labels, x, n, 4, item, batch, 0, labels, pred, prob, loss, correct);
}
