/* ViT: patches embedded by one strided projection (tf_patch_embed) or a
 * convolutional stem (stem conv: 3x3 convolutions of stride 2 with ReLUs, then
 * a 1x1; Xiao et al. 2021, "Early Convolutions Help Transformers See
 * Better"), a class
 * token before them, learned positions, a stack of the one Transformer block
 * (pre-LN, bidirectional, separate q/k/v: Hugging Face ViTLayer's name map),
 * the final LayerNorm and the head of ViTModel / ViTForImageClassification.
 *
 *   p = patch_embed(pixels)                         (B,N,C)   N = (S/P)^2
 *   x = [cls; p] + position                         (B,N+1,C)
 *   x = block_l(x)            l = 0 .. n_layer-1    (B,N+1,C)
 *   h = LN(x)                                       (B,N+1,C)  last_hidden_state
 *   ViTModel: pooled = tanh(dense(h[:, 0]))         (B,C)
 *   ViTForImageClassification: logits = classifier(pool(h))   (B,L)
 *     pool: h[:, 0] (cls), mean of h[:, 1:] (mean), or seq:
 *     a = softmax_i(score(h[:, i])) over the patches, sum_i a_i h[:, i]   (B,C)
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../../core/core_internal.h"
#include "../family_construct.h"
#include "../vision.h"
#include "tformer/vit.h"

static const tf_block_name VIT_BLOCK[] = {TF_VIT_LAYER_NAMES};

static tf_block_config block_config(const tf_vit_config *c) {
    tf_block_config b = tf_block_config_default(c->d_model, c->n_head);
    b.d_ff = c->d_ff, b.activation = c->activation, b.norm_eps = c->norm_eps, b.norm_first = 1;
    b.dropout = c->dropout, b.attn_dropout = c->attn_dropout, b.self_attn.qkv_no_bias = !c->qkv_bias;
    b.self_attn.kind = TF_ATTN_FULL, b.w_in_out = 0, b.self_attn.lsa = c->lsa;
    return b;
}

/* "vit." before the body's names when a head sits on it (Hugging Face's layout). */
static int body_name(const tf_vit *m, char *out, size_t n, const char *name) {
    if ((size_t)snprintf(out, n, "%s%s", m->cfg.head == TF_VIT_BODY ? "" : "vit.", name) >= n)
        return tf_set_error("vit: parameter name %s too long", name);
    return 0;
}

/* The conv stem (Xiao et al. 2021): stem.conv<i> 3x3 from He's normal
 * (std sqrt(2 / fan_in): ReLUs follow and no normalisation rescales them),
 * biases 0; stem.projection, the 1x1 to d_model, as the patch projection. */
static int register_stem(tf_vit *m) {
    const tf_vit_config *c = &m->cfg;
    int64_t in = c->channels;
    char n[256], name[64];
    m->n_stem = tf_vit_stem_convs(c);
    for (int i = 0; i < m->n_stem; i++) {
        int64_t out = tf_vit_stem_channels(c, i);
        float he = sqrtf(2.0f / (float)(9 * in));
        snprintf(name, sizeof name, "embeddings.stem.conv%d.weight", i);
        if (body_name(m, n, sizeof n, name) || tf_params_add(m->params, n, &m->stem_w[i], 4, (int64_t[]){out, in, 3, 3}, he))
            return -1;
        snprintf(name, sizeof name, "embeddings.stem.conv%d.bias", i);
        if (body_name(m, n, sizeof n, name) || tf_params_add(m->params, n, &m->stem_b[i], 1, (int64_t[]){out}, TF_INIT_ZEROS))
            return -1;
        in = out;
    }
    return body_name(m, n, sizeof n, "embeddings.stem.projection.weight") ||
           tf_params_add(m->params, n, &m->patch_w, 4, (int64_t[]){c->d_model, in, 1, 1}, c->init_std) ||
           body_name(m, n, sizeof n, "embeddings.stem.projection.bias") ||
           tf_params_add(m->params, n, &m->patch_b, 1, (int64_t[]){c->d_model}, TF_INIT_ZEROS);
}

static int register_embeddings(tf_vit *m) {
    const tf_vit_config *c = &m->cfg;
    tf_params *ps = m->params;
    float std = c->init_std;
    int64_t D = c->d_model, P = c->patch_size;
    char n[256];
    int rc = body_name(m, n, sizeof n, "embeddings.cls_token") ||
             tf_params_add(ps, n, &m->cls_token, 3, (int64_t[]){1, 1, D}, std) ||
             body_name(m, n, sizeof n, "embeddings.position_embeddings") ||
             tf_params_add(ps, n, &m->position, 3, (int64_t[]){1, tf_vit_patches(c) + 1, D}, std);
    if (rc || c->stem == TF_VIT_STEM_CONV) return rc || register_stem(m);
    return body_name(m, n, sizeof n, "embeddings.patch_embeddings.projection.weight") ||
           tf_params_add(ps, n, &m->patch_w, 4, (int64_t[]){D, c->channels, P, P}, std) ||
           body_name(m, n, sizeof n, "embeddings.patch_embeddings.projection.bias") ||
           tf_params_add(ps, n, &m->patch_b, 1, (int64_t[]){D}, TF_INIT_ZEROS);
}

static int register_all(tf_vit *m) {
    const tf_vit_config *c = &m->cfg;
    tf_params *ps = m->params;
    char n[256];
    int rc = register_embeddings(m);
    tf_block_names names = {VIT_BLOCK, (int)(sizeof VIT_BLOCK / sizeof *VIT_BLOCK)};
    tf_block_init init = {c->init_std, c->init_std, 0};
    for (int i = 0; !rc && i < c->n_layer; i++) {
        char layer[64];
        snprintf(layer, sizeof layer, "encoder.layer.%d.", i);
        rc = body_name(m, n, sizeof n, layer) || tf_block_register(ps, n, &m->layer[i], &m->block, &names, init);
    }
    rc = rc || body_name(m, n, sizeof n, "layernorm") || tf_layer_norm_register(ps, n, &m->norm, c->d_model, c->norm_eps, 1);
    if (!rc && c->head == TF_VIT_BODY && c->pooler)
        rc = tf_pooler_register(ps, "pooler.dense", &m->pooler, c->d_model, c->init_std);
    if (!rc && c->head == TF_VIT_IMAGE_CLS && c->pooling == TF_POOL_SEQ)
        rc = tf_seq_pool_register(ps, "pooling.score", &m->pool, c->d_model, c->init_std);
    if (!rc && c->head == TF_VIT_IMAGE_CLS)
        rc = tf_classifier_register(ps, "classifier", &m->cls, c->d_model, c->n_labels, 0, c->init_std);
    return rc;
}

static int build(void *model) {
    tf_vit *m = model;
    if (!(m->layer = calloc((size_t)m->cfg.n_layer, sizeof *m->layer))) return tf_set_error("vit: out of memory");
    if (!m->cfg.d_ff) m->cfg.d_ff = 4 * m->cfg.d_model;
    m->block = block_config(&m->cfg);
    return register_all(m);
}

static void release(void *model) {
    tf_vit *m = model;
    tf_labels_free(&m->labels, m->cfg.n_labels);
    free(m->layer);
}

static const tf_family_layout LAYOUT = {.family = "vit", TF_FAMILY_LAYOUT(tf_vit), .build = build, .release = release};

TF_FAMILY_NEW_FREE(tf_vit, LAYOUT)

int tf_vit_set_labels(tf_vit *m, const char *const *names, int n) {
    if (n != m->cfg.n_labels) return tf_set_error("vit: %d label names for %d labels", n, m->cfg.n_labels);
    return tf_labels_set(&m->labels, n, names);
}

const char *tf_vit_label(const tf_vit *m, int i, char *buf, size_t n) {
    return tf_labels_name(m->labels, m->cfg.n_labels, i, buf, n);
}

/* ---------------------------------------------------------------- forward */

static int check_inputs(const tf_vit *m, const tf_vit_inputs *in) {
    const tf_vit_config *c = &m->cfg;
    const tf_tensor *x = in->pixel_values, *y = in->labels;
    char s[64];
    if (!x || x->dtype != TF_DTYPE_F32 || x->ndim != 4 || x->shape[1] != c->channels || x->shape[2] != c->image_size ||
        x->shape[3] != c->image_size)
        return tf_set_error("vit: pixel_values %s must be F32 (B,%d,%d,%d): num_channels and image_size of the model",
                            x ? tf_shape_str(x, s, sizeof s) : "(none)", c->channels, c->image_size, c->image_size);
    if (!y) return 0;
    if (c->head != TF_VIT_IMAGE_CLS) return tf_set_error("vit: labels need ViTForImageClassification");
    return tf_vision_check_labels(y, x->shape[0], c->n_labels, "vit", "image");
}

/* The conv stem: the first 3x3 convolution of each stem_depth halves the
 * grid, the others keep it; the 1x1 (a patch embedding of 1x1 patches) makes
 * the (B,N,C) tokens of the patch grid. */
static tf_tensor *conv_stem(tf_ctx *ctx, const tf_vit *m, tf_tensor *pixels) {
    tf_tensor *h = pixels;                                           // (B,channels,S,S)
    for (int i = 0; i < m->n_stem; i++) {
        int stride = i % m->cfg.stem_depth ? 1 : 2;
        h = tf_relu(ctx, tf_conv2d(ctx, h, m->stem_w[i], m->stem_b[i], stride, 1)); // (B,c_i,S/2^k,S/2^k), k = i/depth+1
    }
    return tf_patch_embed(ctx, h, m->patch_w, m->patch_b);           // (B,N,C)
}

/* (B,N+1,C): the class token, then the embedded patches; positions added. */
static tf_tensor *embed(tf_ctx *ctx, const tf_vit *m, tf_tensor *pixels) {
    int64_t B = pixels->shape[0], D = m->cfg.d_model;
    tf_tensor *patches = m->cfg.stem == TF_VIT_STEM_CONV ? conv_stem(ctx, m, pixels)
                                                         : tf_patch_embed(ctx, pixels, m->patch_w, m->patch_b);  // (B,N,C)
    tf_tensor *zeros = tf_tensor_new(ctx, TF_DTYPE_F32, 3, (int64_t[]){B, 1, D}, 0);
    tf_tensor *cls = tf_add(ctx, zeros, m->cls_token);                          // (B,1,C), broadcast
    tf_tensor *x = tf_concat(ctx, 2, (tf_tensor *[]){cls, patches}, 1);         // (B,N+1,C)
    return tf_dropout(ctx, tf_add(ctx, x, m->position), m->cfg.dropout);       // (B,N+1,C)
}

/* What the classifier reads (B,C) of h (B,N+1,C): the class token, or the N
 * patch tokens pooled (the class token is then one more token they attend to). */
static tf_tensor *pool(tf_ctx *ctx, const tf_vit *m, tf_tensor *h, tf_tensor **weights) {
    int64_t B = h->shape[0], N = h->shape[1] - 1;
    if (m->cfg.pooling == TF_POOL_CLS)
        return tf_reshape(ctx, tf_narrow(ctx, h, 1, 0, 1), 2, (int64_t[]){B, m->cfg.d_model});  // (B,C)
    tf_tensor *patches = tf_contiguous(ctx, tf_narrow(ctx, h, 1, 1, N));                        // (B,N,C)
    if (m->cfg.pooling == TF_POOL_MEAN) return tf_mean(ctx, patches, 1, 0);                     // (B,C)
    return tf_seq_pool_forward(ctx, &m->pool, patches, weights);                                // (B,C)
}

int tf_vit_run(tf_ctx *ctx, const tf_vit *m, const tf_vit_inputs *in, tf_vit_outputs *out) {
    memset(out, 0, sizeof *out);
    if (check_inputs(m, in)) return -1;
    tf_tensor *x = embed(ctx, m, in->pixel_values);
    tf_block_args args = {0};
    if (in->output_attentions &&
        !(out->attentions = tf_ctx_alloc(ctx, (size_t)m->cfg.n_layer * sizeof *out->attentions)))
        return -1;
    for (int i = 0; i < m->cfg.n_layer; i++) {
        args.drop_path = tf_vit_drop_path(&m->cfg, i);
        args.self_probs = out->attentions ? &out->attentions[i] : NULL;
        x = tf_block_forward(ctx, &m->layer[i], &m->block, x, &args);
    }
    if (!(out->last_hidden_state = tf_layer_norm_forward(ctx, &m->norm, x))) return -1;  // (B,N+1,C)
    if (m->cfg.head == TF_VIT_BODY) {
        if (m->cfg.pooler && !(out->pooler_output = tf_pooler_forward(ctx, &m->pooler, out->last_hidden_state)))
            return -1;
        return 0;
    }
    tf_tensor *pooled = pool(ctx, m, out->last_hidden_state, in->output_attentions ? &out->pool_weights : NULL);
    if (!(out->logits = tf_classifier_seq_forward(ctx, &m->cls, pooled))) return -1; // (B,L)
    if (in->labels && !(out->loss = tf_cross_entropy(ctx, out->logits, in->labels, -100, in->label_smoothing)))
        return -1;
    return 0;
}
