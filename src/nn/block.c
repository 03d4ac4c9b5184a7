/* The one Transformer block: self-attention, an optional cross-attention and
 * a feed-forward network, each a residual sub-layer (pre-LN or post-LN). A
 * family names its tensors with a name map; PyTorch's layers and stacks are
 * the block with PyTorch's names. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nn_internal.h"
#include "tformer/heads.h"

tf_block_config tf_block_config_default(int d_model, int n_head) {
    tf_block_config c = {.d_model = d_model, .n_head = n_head, .d_ff = 2048, .activation = TF_ACT_RELU, .norm_eps = 1e-5f,
                         .bias = 1, .self_attn.kind = TF_ATTN_FULL, .norm = TF_NORM_LAYER};
    return c;
}

int tf_block_config_check(const tf_block_config *c) {
    if (c->d_model <= 0 || c->n_head <= 0 || c->d_model % c->n_head || c->d_ff <= 0)
        return tf_set_error("block: d_model %d must be a positive multiple of n_head %d, d_ff %d positive", c->d_model,
                            c->n_head, c->d_ff);
    if (!(c->dropout >= 0.0f && c->dropout < 1.0f) || !(c->attn_dropout >= 0.0f && c->attn_dropout < 1.0f) ||
        !(c->activation_dropout >= 0.0f && c->activation_dropout < 1.0f))
        return tf_set_error("block: dropout %g, attn_dropout %g and activation_dropout %g must lie in [0,1)", c->dropout,
                            c->attn_dropout, c->activation_dropout);
    if (!(c->norm_eps > 0.0f)) return tf_set_error("block: norm_eps %g must be positive", c->norm_eps);
    if (c->norm != TF_NORM_LAYER && c->norm != TF_NORM_RMS) return tf_set_error("block: unknown norm kind %d", (int)c->norm);
    if (c->self_attn.kind != TF_ATTN_NYSTROM && (c->self_attn.landmarks || c->self_attn.conv_kernel))
        return tf_set_error("block: landmarks %d and conv_kernel %d are settings of Nystrom attention (TF_ATTN_NYSTROM)",
                            c->self_attn.landmarks, c->self_attn.conv_kernel);
    if (c->self_attn.kind == TF_ATTN_SPARSE && c->attn_dropout > 0.0f)
        return tf_set_error("block: sparse attention has no dropout on the attention weights (attn_dropout %g)",
                            c->attn_dropout);
    if (c->self_attn.kind == TF_ATTN_SPARSE && tf_sparse_check(&c->self_attn.sparse, INT64_MAX)) return -1;
    if (c->self_attn.landmarks < 0 || c->self_attn.conv_kernel < 0 || (c->self_attn.conv_kernel > 0 && c->self_attn.conv_kernel % 2 == 0))
        return tf_set_error("block: landmarks %d must be >= 0 and conv_kernel %d 0 or odd", c->self_attn.landmarks,
                            c->self_attn.conv_kernel);
    if (c->self_attn.lsa && c->self_attn.kind != TF_ATTN_FULL)
        return tf_set_error("block: locality self-attention (lsa) needs full self-attention");
    if (!(c->self_attn.ssmax >= 0.0f && c->self_attn.ssmax < INFINITY))
        return tf_set_error("block: ssmax %g must be 0 (off) or a positive initial s", c->self_attn.ssmax);
    if (c->self_attn.ssmax > 0.0f && c->self_attn.kind != TF_ATTN_FULL && c->self_attn.kind != TF_ATTN_CAUSAL)
        return tf_set_error("block: Scalable-Softmax (ssmax) needs full or causal self-attention");
    return tf_rope_check(c->self_attn.rope, c->self_attn.rope_base, c->d_model / c->n_head);
}

/* ---------------------------------------------------------------- registration */

static const char *const ROLE_NAMES[TF_BP_COUNT] = {
    "QKV_W", "QKV_B", "Q_W", "Q_B", "K_W", "K_B", "V_W", "V_B", "OUT_W", "OUT_B", "NORM_ATTN_W", "NORM_ATTN_B",
    "X_QKV_W", "X_QKV_B", "X_Q_W", "X_Q_B", "X_K_W", "X_K_B", "X_V_W", "X_V_B", "X_OUT_W", "X_OUT_B",
    "NORM_CROSS_W", "NORM_CROSS_B", "FF_IN_W", "FF_IN_B", "FF_OUT_W", "FF_OUT_B", "NORM_FF_W", "NORM_FF_B", "CONV_W",
    "TEMPERATURE", "SSMAX"};

/* Where role r lives in b. Attention roles come in two runs of ten (self, cross). */
static tf_tensor **slot(tf_block *b, int r) {
    if (r <= TF_BP_OUT_B || (r >= TF_BP_X_QKV_W && r <= TF_BP_X_OUT_B)) {
        tf_mha *m = r <= TF_BP_OUT_B ? &b->self_attn : &b->cross_attn;
        tf_tensor **s[10] = {&m->in_proj_weight, &m->in_proj_bias, &m->q_proj_weight, &m->q_proj_bias,
                             &m->k_proj_weight,  &m->k_proj_bias,  &m->v_proj_weight, &m->v_proj_bias,
                             &m->out_proj.weight, &m->out_proj.bias};
        return s[r <= TF_BP_OUT_B ? r : r - TF_BP_X_QKV_W];
    }
    switch (r) {
    case TF_BP_NORM_ATTN_W: return &b->norm_attn.weight;
    case TF_BP_NORM_ATTN_B: return &b->norm_attn.bias;
    case TF_BP_NORM_CROSS_W: return &b->norm_cross.weight;
    case TF_BP_NORM_CROSS_B: return &b->norm_cross.bias;
    case TF_BP_FF_IN_W: return &b->ff_in.weight;
    case TF_BP_FF_IN_B: return &b->ff_in.bias;
    case TF_BP_FF_OUT_W: return &b->ff_out.weight;
    case TF_BP_FF_OUT_B: return &b->ff_out.bias;
    case TF_BP_NORM_FF_W: return &b->norm_ff.weight;
    case TF_BP_CONV_W: return &b->self_attn.conv_weight;
    case TF_BP_TEMPERATURE: return &b->self_attn.temperature;
    case TF_BP_SSMAX: return &b->self_attn.ssmax_scale;
    default: return &b->norm_ff.bias;
    }
}

static int named(const tf_block_names *n, int r) {
    for (int i = 0; i < n->n; i++)
        if ((int)n->rows[i].role == r) return 1;
    return 0;
}

/* Does the configuration use role r (given which fused rows the map names)? */
static int needed(const tf_block_config *c, const tf_block_names *n, int r) {
    if (r == TF_BP_CONV_W) return c->self_attn.kind == TF_ATTN_NYSTROM && c->self_attn.conv_kernel > 0;
    if (r == TF_BP_TEMPERATURE) return c->self_attn.lsa;
    if (r == TF_BP_SSMAX) return c->self_attn.ssmax > 0.0f;
    int cross = r >= TF_BP_X_QKV_W && r <= TF_BP_NORM_CROSS_B, base = cross ? r - TF_BP_X_QKV_W : r;
    int is_bias = r % 2 == 1; /* every _B role is odd */
    if ((cross && !c->cross) || (is_bias && !c->bias)) return 0;
    if (c->norm == TF_NORM_RMS && (r == TF_BP_NORM_ATTN_B || r == TF_BP_NORM_CROSS_B || r == TF_BP_NORM_FF_B)) return 0;
    if (is_bias && base <= TF_BP_V_B && c->self_attn.qkv_no_bias) return 0;
    if (base <= TF_BP_V_B) { /* q, k, v: fused or apart, weights and biases separately */
        int fused = named(n, (is_bias ? TF_BP_QKV_B : TF_BP_QKV_W) + (cross ? TF_BP_X_QKV_W : 0));
        return base <= TF_BP_QKV_B ? fused : !fused;
    }
    return 1;
}

/* Shape and initial std of role r: (out,in), or (in,out) with w_in_out;
 * Nyström's convolution (H,1,K,1). */
static float shape_of(const tf_block_config *c, tf_block_init init, int r, int *ndim, int64_t shape[4]) {
    if (r == TF_BP_CONV_W) {
        *ndim = 4, shape[0] = c->n_head, shape[1] = 1, shape[2] = c->self_attn.conv_kernel, shape[3] = 1;
        return init.fan_in ? 1.0f / sqrtf((float)c->self_attn.conv_kernel) : init.std;
    }
    if (r == TF_BP_TEMPERATURE) return *ndim = 1, shape[0] = c->n_head, TF_INIT_ONES;
    if (r == TF_BP_SSMAX) return *ndim = 1, shape[0] = c->n_head, c->self_attn.ssmax; /* filled with it, not drawn */
    int base = r >= TF_BP_X_QKV_W && r <= TF_BP_NORM_CROSS_B ? r - TF_BP_X_QKV_W : r;
    int64_t d = c->d_model, out = d, in = d;
    if (base == TF_BP_QKV_W || base == TF_BP_QKV_B) out = 3 * d;
    if (r == TF_BP_FF_IN_W || r == TF_BP_FF_IN_B) out = c->d_ff;
    if (r == TF_BP_FF_OUT_W) in = c->d_ff;
    if (r % 2 == 1 || base == TF_BP_NORM_ATTN_W || r == TF_BP_NORM_FF_W) { /* a vector */
        *ndim = 1, shape[0] = out;
        return base == TF_BP_NORM_ATTN_W || r == TF_BP_NORM_FF_W ? TF_INIT_ONES : TF_INIT_ZEROS;
    }
    *ndim = 2;
    shape[0] = c->w_in_out ? in : out, shape[1] = c->w_in_out ? out : in;
    if (init.fan_in) return 1.0f / sqrtf((float)in);
    return base == TF_BP_OUT_W || r == TF_BP_FF_OUT_W ? init.out_std : init.std;
}

static void attn_config(tf_mha *m, const tf_block_config *c, int self) {
    m->cfg = tf_mha_config_default(c->d_model, c->n_head);
    m->cfg.bias = c->bias, m->cfg.dropout = c->attn_dropout, m->cfg.w_in_out = c->w_in_out;
    if (self && c->self_attn.kind == TF_ATTN_NYSTROM)
        m->cfg.nystrom = 1, m->cfg.landmarks = c->self_attn.landmarks, m->cfg.conv_kernel = c->self_attn.conv_kernel;
    if (self && c->self_attn.kind == TF_ATTN_SPARSE) m->cfg.sparse = 1, m->cfg.pattern = c->self_attn.sparse;
    if (self) m->cfg.rope = c->self_attn.rope, m->cfg.rope_base = c->self_attn.rope_base, m->cfg.lsa = c->self_attn.lsa, m->cfg.ssmax = c->self_attn.ssmax;
}

int tf_block_register(tf_params *ps, const char *prefix, tf_block *b, const tf_block_config *cfg,
                      const tf_block_names *names, tf_block_init init) {
    if (tf_block_config_check(cfg)) return -1;
    memset(b, 0, sizeof *b);
    attn_config(&b->self_attn, cfg, 1);
    attn_config(&b->cross_attn, cfg, 0);
    b->norm_attn.eps = b->norm_cross.eps = b->norm_ff.eps = cfg->norm_eps;
    b->norm_attn.rms = b->norm_cross.rms = b->norm_ff.rms = cfg->norm == TF_NORM_RMS;
    int done[TF_BP_COUNT] = {0};
    char name[512];
    for (int i = 0; i < names->n; i++) {
        int r = (int)names->rows[i].role, ndim;
        if (r < 0 || r >= TF_BP_COUNT || !needed(cfg, names, r) || done[r]) continue;
        int64_t shape[4];
        float std = shape_of(cfg, init, r, &ndim, shape);
        if ((size_t)snprintf(name, sizeof name, "%s%s", prefix, names->rows[i].name) >= sizeof name)
            return tf_set_error("block: name %s%s too long", prefix, names->rows[i].name);
        if (r == TF_BP_SSMAX ? tf_params_add_filled(ps, name, slot(b, r), ndim, shape, std)
                             : tf_params_add(ps, name, slot(b, r), ndim, shape, std))
            return -1;
        done[r] = 1;
    }
    for (int r = 0; r < TF_BP_COUNT; r++)
        if (needed(cfg, names, r) && !done[r])
            return tf_set_error("block %s: the name map has no name for %s", prefix, ROLE_NAMES[r]);
    return 0;
}

/* ---------------------------------------------------------------- forward */

/* Sub-layer `which` of h (B,T,d_model), dropout p on its output. */
static tf_tensor *branch(tf_ctx *ctx, const tf_block *b, const tf_block_config *c, tf_sublayer which, tf_tensor *h,
                         const tf_block_args *a, float p) {
    if (which == TF_SUBLAYER_SELF && a->row_caches)
        return tf_dropout(ctx, tf_mha_attend_rows(ctx, &b->self_attn, h, a->row_caches, a->layer,
                                                  c->self_attn.kind == TF_ATTN_CAUSAL), p);
    if (which == TF_SUBLAYER_SELF)
        return tf_dropout(ctx, tf_mha_attend(ctx, &b->self_attn, h, h, h, a->self_mask,
                                             c->self_attn.kind == TF_ATTN_CAUSAL, a->cache, a->layer, NULL,
                                             a->self_probs), p);
    if (which == TF_SUBLAYER_CROSS) { /* with a cross cache: memory projected once, read after */
        tf_tensor *mem = a->cross_cache && tf_kv_cache_len(a->cross_cache) > 0 ? NULL : a->memory;
        return tf_dropout(ctx, tf_mha_attend(ctx, &b->cross_attn, h, mem, mem, a->cross_mask, 0, a->cross_cache,
                                             a->layer, NULL, a->cross_probs), p);
    }
    tf_tensor *u = tf_dense(ctx, h, b->ff_in.weight, c->w_in_out, b->ff_in.bias, c->activation);  // u: (B,T,d_ff)
    u = tf_dropout(ctx, u, c->activation_dropout);
    return tf_dropout(ctx, tf_dense(ctx, u, b->ff_out.weight, c->w_in_out, b->ff_out.bias, TF_ACT_NONE), p);
}

tf_tensor *tf_block_residual_input(tf_ctx *ctx, const tf_block_config *c, const tf_layer_norm *norm, tf_tensor *x) {
    return c->norm_first ? tf_layer_norm_forward(ctx, norm, x) : x;
}

/* pre-LN x + f, or post-LN LN(x + f); f through drop path (timm's Block) */
tf_tensor *tf_block_residual(tf_ctx *ctx, const tf_block_config *c, const tf_layer_norm *norm, tf_tensor *x,
                             tf_tensor *f, float drop_path) {
    tf_tensor *y = tf_add(ctx, x, tf_drop_path(ctx, f, drop_path));
    return c->norm_first ? y : tf_layer_norm_forward(ctx, norm, y);
}

tf_tensor *tf_block_sublayer(tf_ctx *ctx, const tf_block *b, const tf_block_config *c, tf_sublayer which, tf_tensor *x,
                             const tf_block_args *args, float p) {
    tf_block_args none = {0};
    const tf_block_args *a = args ? args : &none;
    const tf_layer_norm *norm = which == TF_SUBLAYER_SELF ? &b->norm_attn : which == TF_SUBLAYER_FF ? &b->norm_ff
                                                                                                 : &b->norm_cross;
    tf_tensor *f = branch(ctx, b, c, which, tf_block_residual_input(ctx, c, norm, x), a, p);
    return tf_block_residual(ctx, c, norm, x, f, a->drop_path);
}

tf_tensor *tf_block_forward(tf_ctx *ctx, const tf_block *b, const tf_block_config *cfg, tf_tensor *x,
                            const tf_block_args *args) {
    tf_block_args none = {0};
    const tf_block_args *a = args ? args : &none;
    int cross = b->cross_attn.out_proj.weight != NULL;
    if (cross && !a->memory) return tf_set_error("block: cross-attention needs the encoder's memory"), NULL;
    x = tf_block_sublayer(ctx, b, cfg, TF_SUBLAYER_SELF, x, a, cfg->dropout);
    if (cross) x = tf_block_sublayer(ctx, b, cfg, TF_SUBLAYER_CROSS, x, a, cfg->dropout);
    return tf_block_sublayer(ctx, b, cfg, TF_SUBLAYER_FF, x, a, cfg->dropout);
}

/* ---------------------------------------------------------------- PyTorch's layers and stacks */

#define TORCH_ATTN(p, R)                                                                                 \
    {TF_BP_##R##QKV_W, p ".in_proj_weight"}, {TF_BP_##R##QKV_B, p ".in_proj_bias"},                     \
    {TF_BP_##R##OUT_W, p ".out_proj.weight"}, {TF_BP_##R##OUT_B, p ".out_proj.bias"}
#define TORCH_LINEARS                                                                                    \
    {TF_BP_FF_IN_W, "linear1.weight"}, {TF_BP_FF_IN_B, "linear1.bias"}, {TF_BP_FF_OUT_W, "linear2.weight"}, \
    {TF_BP_FF_OUT_B, "linear2.bias"}

static const tf_block_name TORCH_ENCODER[] = {
    TORCH_ATTN("self_attn", ), TORCH_LINEARS, {TF_BP_NORM_ATTN_W, "norm1.weight"}, {TF_BP_NORM_ATTN_B, "norm1.bias"},
    {TF_BP_NORM_FF_W, "norm2.weight"}, {TF_BP_NORM_FF_B, "norm2.bias"}};
static const tf_block_name TORCH_DECODER[] = {
    TORCH_ATTN("self_attn", ), TORCH_ATTN("multihead_attn", X_), TORCH_LINEARS,
    {TF_BP_NORM_ATTN_W, "norm1.weight"}, {TF_BP_NORM_ATTN_B, "norm1.bias"},
    {TF_BP_NORM_CROSS_W, "norm2.weight"}, {TF_BP_NORM_CROSS_B, "norm2.bias"},
    {TF_BP_NORM_FF_W, "norm3.weight"}, {TF_BP_NORM_FF_B, "norm3.bias"}};

/* PyTorch's one dropout covers the attention weights, the activation and every sub-layer. */
static int torch_layer(tf_params *ps, const char *prefix, tf_block *b, const tf_block_config *cfg, int cross) {
    tf_block_config c = *cfg;
    c.cross = cross, c.attn_dropout = c.activation_dropout = c.dropout;
    tf_block_names n = {cross ? TORCH_DECODER : TORCH_ENCODER,
                        cross ? (int)(sizeof TORCH_DECODER / sizeof *TORCH_DECODER)
                              : (int)(sizeof TORCH_ENCODER / sizeof *TORCH_ENCODER)};
    return tf_block_register(ps, prefix, b, &c, &n, (tf_block_init){0, 0, 1});
}

int tf_encoder_layer_register(tf_params *ps, const char *prefix, tf_block *b, const tf_block_config *cfg) {
    return torch_layer(ps, prefix, b, cfg, 0);
}

int tf_decoder_layer_register(tf_params *ps, const char *prefix, tf_block *b, const tf_block_config *cfg) {
    return torch_layer(ps, prefix, b, cfg, 1);
}

int tf_stack_register(tf_params *ps, const char *prefix, tf_stack *s, const tf_block_config *cfg, int n_layer,
                      int final_norm) {
    memset(s, 0, sizeof *s);
    if (n_layer < 0 || n_layer > 100000) return tf_set_error("stack: %d layers", n_layer);
    if (!(s->layers = calloc(n_layer ? (size_t)n_layer : 1, sizeof *s->layers)))
        return tf_set_error("stack: out of memory");
    s->n_layer = n_layer, s->has_norm = final_norm;
    char p[512];
    for (int i = 0; i < n_layer; i++) {
        snprintf(p, sizeof p, "%slayers.%d.", prefix, i);
        if (torch_layer(ps, p, &s->layers[i], cfg, cfg->cross)) return -1;
    }
    if (!final_norm) return 0;
    snprintf(p, sizeof p, "%snorm", prefix);
    return tf_layer_norm_register(ps, p, &s->norm, cfg->d_model, cfg->norm_eps, cfg->bias);
}

void tf_stack_free(tf_stack *s) {
    free(s->layers);
    s->layers = NULL;
}

tf_tensor *tf_stack_forward(tf_ctx *ctx, const tf_stack *s, const tf_block_config *cfg, tf_tensor *x,
                            const tf_block_args *args) {
    tf_block_args a = args ? *args : (tf_block_args){0};
    for (int i = 0; i < s->n_layer; i++) {
        a.layer = i;
        x = tf_block_forward(ctx, &s->layers[i], cfg, x, &a);
    }
    return s->has_norm ? tf_layer_norm_forward(ctx, &s->norm, x) : x;
}

int tf_transformer_register(tf_params *ps, const char *prefix, tf_transformer *t, const tf_block_config *cfg,
                            int n_encoder_layers, int n_decoder_layers) {
    char p[512];
    tf_block_config c = *cfg;
    memset(t, 0, sizeof *t);
    c.cross = 0;
    snprintf(p, sizeof p, "%sencoder.", prefix);
    if (tf_stack_register(ps, p, &t->encoder, &c, n_encoder_layers, 1)) return -1;
    c.cross = 1;
    snprintf(p, sizeof p, "%sdecoder.", prefix);
    return tf_stack_register(ps, p, &t->decoder, &c, n_decoder_layers, 1);
}

void tf_transformer_free(tf_transformer *t) {
    tf_stack_free(&t->encoder);
    tf_stack_free(&t->decoder);
}

tf_tensor *tf_transformer_forward(tf_ctx *ctx, const tf_transformer *t, const tf_block_config *cfg, tf_tensor *src,
                                  tf_tensor *tgt, const tf_attn_mask *src_mask, const tf_attn_mask *tgt_mask,
                                  const tf_attn_mask *memory_mask) {
    tf_block_args enc = {.self_mask = src_mask};
    tf_tensor *memory = tf_stack_forward(ctx, &t->encoder, cfg, src, &enc);
    if (!memory) return NULL;
    tf_block_args dec = {.memory = memory, .self_mask = tgt_mask, .cross_mask = memory_mask};
    return tf_stack_forward(ctx, &t->decoder, cfg, tgt, &dec);
}
