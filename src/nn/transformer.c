/* Encoder and decoder layers (post-LN and pre-LN), their stacks, and the
 * encoder-decoder Transformer, with PyTorch's parameter names. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "../core/internal.h"

tf_layer_config tf_layer_config_default(int d_model, int n_head) {
    tf_layer_config c = {d_model, n_head, 2048, TF_ACT_RELU, 1e-5f, 0.0f, 0, 1};
    return c;
}

static int join(char *out, size_t n, const char *prefix, const char *name) {
    if ((size_t)snprintf(out, n, "%s%s", prefix, name) >= n)
        return tf_set_error("params: name %s%s too long", prefix, name);
    return 0;
}

static int linear_register(tf_params *ps, const char *prefix, const char *name, tf_linear *l,
                           int64_t in, int64_t out, int bias) {
    char w[256], b[256], base[200];
    if ((size_t)snprintf(base, sizeof base, "%s%s", prefix, name) >= sizeof base ||
        join(w, sizeof w, base, ".weight") || join(b, sizeof b, base, ".bias"))
        return tf_set_error("params: name %s%s too long", prefix, name);
    l->bias = NULL;
    if (tf_params_add(ps, w, &l->weight, 2, (int64_t[]){out, in}, 1.0f / sqrtf((float)in))) return -1;
    return bias ? tf_params_add(ps, b, &l->bias, 1, (int64_t[]){out}, TF_INIT_ZEROS) : 0;
}

static int norm_register(tf_params *ps, const char *prefix, const char *name, tf_layer_norm *n,
                         int64_t C, float eps, int bias) {
    char w[256], base[200];
    if ((size_t)snprintf(base, sizeof base, "%s%s", prefix, name) >= sizeof base ||
        join(w, sizeof w, base, ".weight"))
        return -1;
    n->eps = eps;
    n->bias = NULL;
    if (tf_params_add(ps, w, &n->weight, 1, (int64_t[]){C}, TF_INIT_ONES)) return -1;
    if (!bias) return 0;
    return join(w, sizeof w, base, ".bias") ? -1 : tf_params_add(ps, w, &n->bias, 1, (int64_t[]){C}, TF_INIT_ZEROS);
}

static int attn_register(tf_params *ps, const char *prefix, const char *name, tf_mha *m,
                         const tf_layer_config *cfg) {
    char p[256];
    if ((size_t)snprintf(p, sizeof p, "%s%s.", prefix, name) >= sizeof p) return -1;
    tf_mha_config mc = tf_mha_config_default(cfg->d_model, cfg->n_head);
    mc.bias = cfg->bias;
    mc.dropout = cfg->dropout;
    return tf_mha_register(ps, p, m, &mc);
}

static int check_config(const tf_layer_config *cfg) {
    if (cfg->d_model <= 0 || cfg->n_head <= 0 || cfg->d_model % cfg->n_head || cfg->d_ff <= 0)
        return tf_set_error("layer: d_model %d must be a positive multiple of n_head %d, "
                            "d_ff %d positive", cfg->d_model, cfg->n_head, cfg->d_ff);
    return 0;
}

int tf_encoder_layer_register(tf_params *ps, const char *prefix, tf_encoder_layer *l,
                              const tf_layer_config *cfg) {
    int d = cfg->d_model, f = cfg->d_ff, b = cfg->bias;
    if (check_config(cfg) || attn_register(ps, prefix, "self_attn", &l->self_attn, cfg) ||
        linear_register(ps, prefix, "linear1", &l->linear1, d, f, b) ||
        linear_register(ps, prefix, "linear2", &l->linear2, f, d, b) ||
        norm_register(ps, prefix, "norm1", &l->norm1, d, cfg->norm_eps, b) ||
        norm_register(ps, prefix, "norm2", &l->norm2, d, cfg->norm_eps, b))
        return -1;
    return 0;
}

int tf_decoder_layer_register(tf_params *ps, const char *prefix, tf_decoder_layer *l,
                              const tf_layer_config *cfg) {
    int d = cfg->d_model, f = cfg->d_ff, b = cfg->bias;
    if (check_config(cfg) || attn_register(ps, prefix, "self_attn", &l->self_attn, cfg) ||
        attn_register(ps, prefix, "multihead_attn", &l->multihead_attn, cfg) ||
        linear_register(ps, prefix, "linear1", &l->linear1, d, f, b) ||
        linear_register(ps, prefix, "linear2", &l->linear2, f, d, b) ||
        norm_register(ps, prefix, "norm1", &l->norm1, d, cfg->norm_eps, b) ||
        norm_register(ps, prefix, "norm2", &l->norm2, d, cfg->norm_eps, b) ||
        norm_register(ps, prefix, "norm3", &l->norm3, d, cfg->norm_eps, b))
        return -1;
    return 0;
}

/* Register num_layers layers under "<prefix>layers.<i>." and an optional "<prefix>norm". */
#define STACK_REGISTER(kind, st)                                                           \
    int tf_##kind##_register(tf_params *ps, const char *prefix, tf_##kind *st,            \
                             const tf_layer_config *cfg, int num_layers, int final_norm) { \
        if (num_layers < 0 || num_layers > 100000)                                         \
            return tf_set_error(#kind ": num_layers %d invalid", num_layers);              \
        st->num_layers = num_layers;                                                       \
        st->has_norm = final_norm;                                                         \
        st->norm.weight = st->norm.bias = NULL;                                            \
        st->layers = calloc(num_layers ? (size_t)num_layers : 1, sizeof *st->layers);      \
        if (!st->layers) return tf_set_error(#kind ": out of memory");                     \
        char p[256];                                                                       \
        for (int i = 0; i < num_layers; i++) {                                             \
            snprintf(p, sizeof p, "%slayers.%d.", prefix, i);                              \
            if (tf_##kind##_layer_register(ps, p, &st->layers[i], cfg)) return -1;         \
        }                                                                                  \
        return final_norm ? norm_register(ps, prefix, "norm", &st->norm, cfg->d_model,     \
                                          cfg->norm_eps, cfg->bias)                  \
                          : 0;                                                             \
    }
STACK_REGISTER(encoder, e)
STACK_REGISTER(decoder, d)
#undef STACK_REGISTER

int tf_transformer_register(tf_params *ps, const char *prefix, tf_transformer *t,
                            const tf_layer_config *cfg, int num_encoder_layers,
                            int num_decoder_layers) {
    char p[256];
    t->decoder.layers = NULL;
    snprintf(p, sizeof p, "%sencoder.", prefix);
    if (tf_encoder_register(ps, p, &t->encoder, cfg, num_encoder_layers, 1)) return -1;
    snprintf(p, sizeof p, "%sdecoder.", prefix);
    return tf_decoder_register(ps, p, &t->decoder, cfg, num_decoder_layers, 1);
}

void tf_encoder_free(tf_encoder *e) { free(e->layers); e->layers = NULL; }
void tf_decoder_free(tf_decoder *d) { free(d->layers); d->layers = NULL; }
void tf_transformer_free(tf_transformer *t) {
    tf_encoder_free(&t->encoder);
    tf_decoder_free(&t->decoder);
}

/* ---------------------------------------------------------------- forward */

/* MLP(x) = dropout(linear2(dropout(act(linear1(x))))) */
static tf_tensor *mlp(tf_ctx *ctx, const tf_linear *l1, const tf_linear *l2,
                      const tf_layer_config *cfg, tf_tensor *x) {
    tf_tensor *h = tf_dropout(ctx, tf_linear_act_forward(ctx, l1, x, cfg->activation), cfg->dropout);
    return tf_dropout(ctx, tf_linear_forward(ctx, l2, h), cfg->dropout);
}

static tf_tensor *attend(tf_ctx *ctx, const tf_mha *m, const tf_layer_config *cfg, tf_tensor *x,
                         tf_tensor *mem, const tf_attn_mask *mask) {
    return tf_dropout(ctx, tf_mha_forward(ctx, m, x, mem, mem, mask, NULL), cfg->dropout);
}

/* One residual sub-layer: pre-LN x + f(LN(x)), or post-LN LN(x + f(x)). */
#define SUBLAYER(norm, f_of)                                                     \
    (cfg->norm_first ? tf_add(ctx, x, f_of(tf_layer_norm_forward(ctx, norm, x)))  \
                     : tf_layer_norm_forward(ctx, norm, tf_add(ctx, x, f_of(x))))

tf_tensor *tf_encoder_layer_forward(tf_ctx *ctx, const tf_encoder_layer *l,
                                    const tf_layer_config *cfg, tf_tensor *x,
                                    const tf_attn_mask *self_mask) {
#define SELF(h) attend(ctx, &l->self_attn, cfg, h, h, self_mask)
#define FF(h) mlp(ctx, &l->linear1, &l->linear2, cfg, h)
    x = SUBLAYER(&l->norm1, SELF);
    x = SUBLAYER(&l->norm2, FF);
    return x;
}

tf_tensor *tf_decoder_layer_forward(tf_ctx *ctx, const tf_decoder_layer *l,
                                    const tf_layer_config *cfg, tf_tensor *x, tf_tensor *memory,
                                    const tf_attn_mask *self_mask, const tf_attn_mask *cross_mask) {
#define CROSS(h) attend(ctx, &l->multihead_attn, cfg, h, memory, cross_mask)
    x = SUBLAYER(&l->norm1, SELF);
    x = SUBLAYER(&l->norm2, CROSS);
    x = SUBLAYER(&l->norm3, FF);
    return x;
#undef SELF
#undef CROSS
#undef FF
}
#undef SUBLAYER

tf_tensor *tf_encoder_forward(tf_ctx *ctx, const tf_encoder *e, const tf_layer_config *cfg,
                              tf_tensor *x, const tf_attn_mask *self_mask) {
    for (int i = 0; i < e->num_layers; i++) x = tf_encoder_layer_forward(ctx, &e->layers[i], cfg, x, self_mask);
    return e->has_norm ? tf_layer_norm_forward(ctx, &e->norm, x) : x;
}

tf_tensor *tf_decoder_forward(tf_ctx *ctx, const tf_decoder *d, const tf_layer_config *cfg,
                              tf_tensor *x, tf_tensor *memory, const tf_attn_mask *self_mask,
                              const tf_attn_mask *cross_mask) {
    for (int i = 0; i < d->num_layers; i++)
        x = tf_decoder_layer_forward(ctx, &d->layers[i], cfg, x, memory, self_mask, cross_mask);
    return d->has_norm ? tf_layer_norm_forward(ctx, &d->norm, x) : x;
}

tf_tensor *tf_transformer_forward(tf_ctx *ctx, const tf_transformer *t, const tf_layer_config *cfg,
                                  tf_tensor *src, tf_tensor *tgt, const tf_attn_mask *src_mask,
                                  const tf_attn_mask *tgt_mask, const tf_attn_mask *memory_mask) {
    tf_tensor *memory = tf_encoder_forward(ctx, &t->encoder, cfg, src, src_mask);
    return tf_decoder_forward(ctx, &t->decoder, cfg, tgt, memory, tgt_mask, memory_mask);
}
