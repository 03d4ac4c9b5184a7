/* Swin: Hugging Face's SwinModel / SwinForImageClassification on the one
 * Transformer block's sub-layers (pre-LN, separate q/k/v): its own block,
 * window_block, attends within (shifted) windows (tf_window_attend, src/nn/window.c),
 * then runs the block's feed-forward sub-layer.
 *
 *   x = LN(patch_embed(pad(pixels)))                  (B,G*G,C)   G = ceil(S/P)
 *   stage s: x = block_j(x) in windows, j odd shifted (B,Gs*Gs,C*2^s)
 *            x = merge(x) but for the last stage       (B,Gs'*Gs',C*2^(s+1))  Gs' = ceil(Gs/2)
 *   h = LN(x)                                          last_hidden_state
 *   pooled = mean over tokens of h                     (B,C*2^(n-1))  pooler_output
 *   logits = classifier(pooled)                        SwinForImageClassification */
#include <stdlib.h>
#include <string.h>

#include "../../nn/nn_internal.h"
#include "../family_construct.h"
#include "swin_internal.h"

static const tf_block_name SWIN_BLOCK[] = {
    {TF_BP_NORM_ATTN_W, "layernorm_before.weight"},     {TF_BP_NORM_ATTN_B, "layernorm_before.bias"},
    {TF_BP_Q_W, "attention.self.query.weight"},         {TF_BP_Q_B, "attention.self.query.bias"},
    {TF_BP_K_W, "attention.self.key.weight"},           {TF_BP_K_B, "attention.self.key.bias"},
    {TF_BP_V_W, "attention.self.value.weight"},         {TF_BP_V_B, "attention.self.value.bias"},
    {TF_BP_OUT_W, "attention.output.dense.weight"},     {TF_BP_OUT_B, "attention.output.dense.bias"},
    {TF_BP_NORM_FF_W, "layernorm_after.weight"},        {TF_BP_NORM_FF_B, "layernorm_after.bias"},
    {TF_BP_FF_IN_W, "intermediate.dense.weight"},       {TF_BP_FF_IN_B, "intermediate.dense.bias"},
    {TF_BP_FF_OUT_W, "output.dense.weight"},            {TF_BP_FF_OUT_B, "output.dense.bias"},
};

/* nn.LayerNorm's default: the embeddings' and the patch merging's norms ignore layer_norm_eps. */
#define TORCH_LN_EPS 1e-5f

static int name_of(const tf_swin *m, char *out, size_t n, const char *fmt, int a, int b, const char *rest) {
    char tail[256];
    snprintf(tail, sizeof tail, fmt, a, b);
    if ((size_t)snprintf(out, n, "%s%s%s", m->cfg.head == TF_SWIN_BODY ? "" : "swin.", tail, rest) >= n)
        return tf_set_error("swin: parameter name %s too long", tail);
    return 0;
}

/* Each stage's grid, width, heads, window and shift; HF's set_shift_and_window_size. */
static int plan_stages(tf_swin *m) {
    const tf_swin_config *c = &m->cfg;
    int depth[TF_SWIN_MAX_STAGES], heads[TF_SWIN_MAX_STAGES];
    m->n_stage = tf_swin_parse_list(c->depths, "depths", depth);
    if (m->n_stage < 0 || tf_swin_parse_list(c->heads, "heads", heads) < 0) return -1;
    int g = (c->image_size + c->patch_size - 1) / c->patch_size;
    for (int s = 0; s < m->n_stage; s++, g = (g + 1) / 2) {
        tf_swin_stage *st = &m->stage[s];
        st->depth = depth[s], st->n_head = heads[s], st->d_model = c->d_model << s;
        st->height = st->width = g;
        st->window = g <= c->window ? g : c->window;
        st->shift = g <= c->window ? 0 : c->window / 2;
        tf_block_config b = tf_block_config_default(st->d_model, st->n_head);
        b.d_ff = (int)(c->mlp_ratio * (float)st->d_model), b.activation = c->activation, b.norm_eps = c->norm_eps;
        b.norm_first = 1, b.dropout = c->dropout, b.attn_dropout = c->attn_dropout, b.self_attn.qkv_no_bias = !c->qkv_bias;
        b.self_attn.kind = TF_ATTN_FULL, b.w_in_out = 0;
        st->block = b;
        if (!(st->blocks = calloc((size_t)st->depth, sizeof *st->blocks)) ||
            !(st->rel_table = calloc((size_t)st->depth, sizeof *st->rel_table)))
            return tf_set_error("swin: out of memory");
    }
    return 0;
}

static int register_stage(tf_swin *m, int s) {
    tf_swin_stage *st = &m->stage[s];
    tf_params *ps = m->params;
    tf_block_names names = {SWIN_BLOCK, (int)(sizeof SWIN_BLOCK / sizeof *SWIN_BLOCK)};
    tf_block_init init = {m->cfg.init_std, m->cfg.init_std, 0};
    int64_t L = (int64_t)(2 * st->window - 1) * (2 * st->window - 1), C = st->d_model;
    char n[512];
    for (int j = 0; j < st->depth; j++) {
        if (name_of(m, n, sizeof n, "encoder.layers.%d.blocks.%d.", s, j, "") ||
            tf_block_register(ps, n, &st->blocks[j], &st->block, &names, init) ||
            name_of(m, n, sizeof n, "encoder.layers.%d.blocks.%d.", s, j, "attention.self.relative_position_bias_table") ||
            tf_params_add(ps, n, &st->rel_table[j], 2, (int64_t[]){L, st->n_head}, TF_INIT_ZEROS))
            return -1;
    }
    if (s == m->n_stage - 1) return 0;
    return name_of(m, n, sizeof n, "encoder.layers.%d.downsample.reduction.weight", s, 0, "") ||
           tf_params_add(ps, n, &st->merge_w, 2, (int64_t[]){2 * C, 4 * C}, m->cfg.init_std) ||
           name_of(m, n, sizeof n, "encoder.layers.%d.downsample.norm", s, 0, "") ||
           tf_layer_norm_register(ps, n, &st->merge_norm, 4 * C, TORCH_LN_EPS, 1);
}

static int register_all(tf_swin *m) {
    const tf_swin_config *c = &m->cfg;
    tf_params *ps = m->params;
    int64_t D = c->d_model, P = c->patch_size;
    char n[512];
    int rc = name_of(m, n, sizeof n, "embeddings.patch_embeddings.projection.weight", 0, 0, "") ||
             tf_params_add(ps, n, &m->patch_w, 4, (int64_t[]){D, c->channels, P, P}, c->init_std) ||
             name_of(m, n, sizeof n, "embeddings.patch_embeddings.projection.bias", 0, 0, "") ||
             tf_params_add(ps, n, &m->patch_b, 1, (int64_t[]){D}, TF_INIT_ZEROS) ||
             name_of(m, n, sizeof n, "embeddings.norm", 0, 0, "") ||
             tf_layer_norm_register(ps, n, &m->embed_norm, D, TORCH_LN_EPS, 1);
    for (int s = 0; !rc && s < m->n_stage; s++) rc = register_stage(m, s);
    int64_t last = m->stage[m->n_stage - 1].d_model;
    rc = rc || name_of(m, n, sizeof n, "layernorm", 0, 0, "") || tf_layer_norm_register(ps, n, &m->norm, last, c->norm_eps, 1);
    if (!rc && c->head == TF_SWIN_IMAGE_CLS) rc = tf_classifier_register(ps, "classifier", &m->cls, last, c->n_labels, 0, c->init_std);
    return rc;
}

static int build(void *m) { return plan_stages(m) || register_all(m) ? -1 : 0; }

static void release(void *model) {
    tf_swin *m = model;
    tf_labels_free(&m->labels, m->cfg.n_labels);
    for (int s = 0; s < TF_SWIN_MAX_STAGES; s++) free(m->stage[s].blocks), free(m->stage[s].rel_table);
}

static const tf_family_layout LAYOUT = {
    .family = "swin", TF_FAMILY_LAYOUT(tf_swin), .build = build, .release = release};

TF_FAMILY_NEW_FREE(tf_swin, LAYOUT)

int tf_swin_set_labels(tf_swin *m, const char *const *names, int n) {
    if (n != m->cfg.n_labels) return tf_set_error("swin: %d label names for %d labels", n, m->cfg.n_labels);
    return tf_labels_set(&m->labels, n, names);
}

const char *tf_swin_label(const tf_swin *m, int i, char *buf, size_t n) {
    return tf_labels_name(m->labels, m->cfg.n_labels, i, buf, n);
}

int tf_swin_tokens(const tf_swin *m) {
    const tf_swin_stage *st = &m->stage[m->n_stage - 1];
    return st->height * st->width;
}

/* ---------------------------------------------------------------- forward */

static int check_inputs(const tf_swin *m, const tf_swin_inputs *in) {
    const tf_swin_config *c = &m->cfg;
    const tf_tensor *x = in->pixel_values, *y = in->labels;
    char s[64];
    if (!x || x->dtype != TF_DTYPE_F32 || x->ndim != 4 || x->shape[1] != c->channels || x->shape[2] != c->image_size ||
        x->shape[3] != c->image_size)
        return tf_set_error("swin: pixel_values %s must be F32 (B,%d,%d,%d): num_channels and image_size of the model",
                            x ? tf_shape_str(x, s, sizeof s) : "(none)", c->channels, c->image_size, c->image_size);
    if (!y) return 0;
    if (c->head != TF_SWIN_IMAGE_CLS) return tf_set_error("swin: labels need SwinForImageClassification");
    return tf_vision_check_labels(y, x->shape[0], c->n_labels, "swin", "image");
}

/* (B,G*G,C): the padded image's patches, embedded and normalised. */
static tf_tensor *embed(tf_ctx *ctx, const tf_swin *m, tf_tensor *pixels) {
    int64_t P = m->cfg.patch_size, S = m->cfg.image_size, Sp = (S + P - 1) / P * P;
    tf_tensor *x = tf_pad_zeros(ctx, tf_pad_zeros(ctx, pixels, 3, Sp), 2, Sp);                              // (B,C,Sp,Sp)
    x = tf_layer_norm_forward(ctx, &m->embed_norm, tf_patch_embed(ctx, x, m->patch_w, m->patch_b));  // (B,N,C)
    return tf_dropout(ctx, x, m->cfg.dropout);
}

/* Swin's block: pre-LN, the self-attention within (shifted) windows, then the
 * feed-forward; each sub-layer's output through dropout and drop path. */
static tf_tensor *window_block(tf_ctx *ctx, const tf_block *b, const tf_block_config *c, tf_tensor *x,
                               const tf_window_attn *win, float drop_path) {
    tf_block_args a = {.drop_path = drop_path};
    tf_tensor *h = tf_layer_norm_forward(ctx, &b->norm_attn, x);                          // (B,H*W,C)
    tf_tensor *att = tf_dropout(ctx, tf_window_attend(ctx, &b->self_attn, h, win, NULL), c->dropout);
    x = tf_add(ctx, x, tf_drop_path(ctx, att, drop_path));
    return tf_block_sublayer(ctx, b, c, TF_SUBLAYER_FF, x, &a, c->dropout);
}

/* x (B,h*w,C) -> (B,ceil(h/2)*ceil(w/2),2C): the 2x2 neighbours [x00,x10,x01,x11] concatenated, LN, linear. */
static tf_tensor *merge(tf_ctx *ctx, const tf_swin_stage *st, tf_tensor *x) {
    if (!x) return NULL;
    int64_t B = x->shape[0], C = x->shape[2], h = st->height, w = st->width, h2 = (h + 1) / 2, w2 = (w + 1) / 2;
    tf_tensor *g = tf_reshape(ctx, x, 4, (int64_t[]){B, h, w, C});
    g = tf_contiguous(ctx, tf_pad_zeros(ctx, tf_pad_zeros(ctx, g, 2, 2 * w2), 1, 2 * h2));  // (B,2h2,2w2,C)
    g = tf_reshape(ctx, g, 6, (int64_t[]){B, h2, 2, w2, 2, C});
    tf_tensor *part[4];
    for (int k = 0; k < 4; k++) /* HF's order: rows 0::2 / 1::2 vary first */
        part[k] = tf_narrow(ctx, tf_narrow(ctx, g, 2, k % 2, 1), 4, k / 2, 1);  // (B,h2,1,w2,1,C)
    tf_tensor *y = tf_reshape(ctx, tf_concat(ctx, 4, part, 5), 3, (int64_t[]){B, h2 * w2, 4 * C});
    y = tf_layer_norm_forward(ctx, &st->merge_norm, y);
    return tf_dense(ctx, y, st->merge_w, 0, NULL, TF_ACT_NONE);  // (B,h2*w2,2C)
}

static tf_tensor *encode(tf_ctx *ctx, const tf_swin *m, tf_tensor *x) {
    int total = 0, l = 0;
    for (int s = 0; s < m->n_stage; s++) total += m->stage[s].depth;
    for (int s = 0; s < m->n_stage && x; s++) {
        const tf_swin_stage *st = &m->stage[s];
        for (int j = 0; j < st->depth; j++, l++) {
            tf_window_attn win = {st->height, st->width, st->window, j % 2 ? st->shift : 0, NULL};
            if (!(win.bias = tf_window_relative_bias(ctx, st->rel_table[j], st->window))) return NULL;
            x = window_block(ctx, &st->blocks[j], &st->block, x, &win, tf_swin_drop_path(&m->cfg, l, total));
        }
        if (s < m->n_stage - 1) x = merge(ctx, st, x);
    }
    return x;
}

int tf_swin_run(tf_ctx *ctx, const tf_swin *m, const tf_swin_inputs *in, tf_swin_outputs *out) {
    memset(out, 0, sizeof *out);
    if (check_inputs(m, in)) return -1;
    tf_tensor *x = encode(ctx, m, embed(ctx, m, in->pixel_values));
    if (!(out->last_hidden_state = tf_layer_norm_forward(ctx, &m->norm, x))) return -1;  // (B,T,C)
    if (!(out->pooler_output = tf_mean(ctx, out->last_hidden_state, 1, 0))) return -1;   // (B,C)
    if (m->cfg.head == TF_SWIN_BODY) return 0;
    if (!(out->logits = tf_classifier_seq_forward(ctx, &m->cls, out->pooler_output))) return -1;  // (B,L)
    if (in->labels && !(out->loss = tf_cross_entropy(ctx, out->logits, in->labels, -100, in->label_smoothing)))
        return -1;
    return 0;
}

static int swin_logits(tf_ctx *ctx, const void *model, tf_tensor *x, tf_tensor **logits) {
    tf_swin_outputs o;
    int rc = tf_swin_run(ctx, model, &(tf_swin_inputs){.pixel_values = x}, &o);
    *logits = o.logits;
    return rc;
}

int tf_swin_predict(const tf_swin *m, const float *x, int64_t n, int batch, int hflip, const int32_t *labels, int32_t *pred,
                    float *prob, double *loss, int64_t *correct) {
    const tf_swin_config *c = &m->cfg;
    if (c->head != TF_SWIN_IMAGE_CLS) return tf_set_error("swin: predictions need SwinForImageClassification");
    int64_t item[3] = {c->channels, c->image_size, c->image_size};  // (C,S,S)
    return tf_predict_batches(m, swin_logits, c->n_labels, x, n, 3, item, batch, hflip, labels, pred, prob, loss, correct);
}
