/* `tformer torch-run` on continual-inference's modules: its state_dict names
 * mapped onto tformer's continual attention and encoder, and its
 * forward_steps over a whole stream computed step by step. */
#include <string.h>

#include "torch_run.h"

#define ATTN(p)                                                                                          \
    {TF_BP_QKV_W, p "self_attn.in_proj_weight"}, {TF_BP_QKV_B, p "self_attn.in_proj_bias"},             \
    {TF_BP_OUT_W, p "self_attn.out_proj.weight"}, {TF_BP_OUT_B, p "self_attn.out_proj.bias"}
#define FF(p)                                                                                            \
    {TF_BP_FF_IN_W, p "linear1.weight"}, {TF_BP_FF_IN_B, p "linear1.bias"},                              \
    {TF_BP_FF_OUT_W, p "linear2.weight"}, {TF_BP_FF_OUT_B, p "linear2.bias"}

/* A retroactive layer (the first of two) and a single-output layer. */
static const tf_block_name CO_RETRO_LAYER[] = {
    ATTN("0."), FF("1.fn._ff_block.fn."), {TF_BP_NORM_ATTN_W, "1.fn.norm1.weight"},
    {TF_BP_NORM_ATTN_B, "1.fn.norm1.bias"}, {TF_BP_NORM_FF_W, "1.fn.norm2.weight"}, {TF_BP_NORM_FF_B, "1.fn.norm2.bias"}};
static const tf_block_name CO_SINGLE_LAYER[] = {
    ATTN("0."), FF("1._ff_block.1."), {TF_BP_NORM_ATTN_W, "1.norm1.fn.weight"},
    {TF_BP_NORM_ATTN_B, "1.norm1.fn.bias"}, {TF_BP_NORM_FF_W, "1.norm2.fn.weight"}, {TF_BP_NORM_FF_B, "1.norm2.fn.bias"}};
#define COUNT(a) (int)(sizeof a / sizeof *a)

int tr_continual_register(tf_params *ps, const tr_config *c, tr_continual *w) {
    if (c->kind != TR_CO_ENCODER) return tf_mha_register(ps, "", &w->mha, &c->mha);
    tf_continual_config e;
    tf_fields f = {tf_continual_config_fields(), &e};
    if (tf_fields_defaults(&f, 1)) return -1;
    e.d_model = c->layer.d_model, e.n_head = c->layer.n_head, e.d_ff = c->layer.d_ff, e.n_layer = c->num_layers;
    e.window = c->sequence_len, e.pos_len = 0, e.activation = c->layer.activation, e.norm_eps = c->layer.norm_eps;
    tf_block_names names[2] = {{CO_SINGLE_LAYER, COUNT(CO_SINGLE_LAYER)}, {CO_SINGLE_LAYER, COUNT(CO_SINGLE_LAYER)}};
    const char *one[1] = {"layers.0."}, *two[2] = {"layers.0.", "layers.1.fn."};
    if (c->num_layers == 2) names[0] = (tf_block_names){CO_RETRO_LAYER, COUNT(CO_RETRO_LAYER)};
    return tf_continual_register_names(ps, "", &w->enc, &e, c->num_layers == 1 ? one : two, names);
}

void tr_continual_free(const tr_config *c, tr_continual *w) {
    if (c->kind == TR_CO_ENCODER) tf_continual_free(&w->enc);
}

/* Step t of x: query (B,T,E) -> (B,E); input (B,C,T) -> (B,C). */
static tf_tensor *step_input(tf_ctx *ctx, tf_tensor *x, int64_t t, int channels_first) {
    int64_t B = x->shape[0], E = channels_first ? x->shape[1] : x->shape[2];
    tf_tensor *s = tf_tensor_new(ctx, TF_DTYPE_F32, 2, (int64_t[]){B, E}, 0);
    for (int64_t b = 0; s && b < B; b++)
        for (int64_t i = 0; i < E; i++)
            tf_f32(s)[b * E + i] = channels_first ? tf_f32(x)[(b * E + i) * x->shape[2] + t]
                                                  : tf_f32(x)[(b * x->shape[1] + t) * E + i];
    return s;
}

/* Output of step o (after the window filled) into y: retro (B,S,n,E), single (B,S,E), encoder (B,C,S). */
static void place(tf_tensor *y, const tf_tensor *out, int64_t o, tr_module kind) {
    int64_t B = y->shape[0], S = kind == TR_CO_ENCODER ? y->shape[2] : y->shape[1];
    int64_t row = tf_numel(out) / B;  /* n*E, E or C */
    for (int64_t b = 0; b < B; b++)
        for (int64_t i = 0; i < row; i++) {
            float v = tf_f32(out)[b * row + i];
            if (kind == TR_CO_ENCODER) tf_f32(y)[(b * row + i) * S + o] = v;
            else tf_f32(y)[(b * S + o) * row + i] = v;
        }
}

tf_tensor *tr_continual_forward(tf_ctx *ctx, const tr_config *c, const tr_continual *w, tf_tensor *x,
                                const char *path) {
    char s[64];
    int enc = c->kind == TR_CO_ENCODER;
    int64_t n = c->sequence_len, E = enc ? c->layer.d_model : c->mha.d_model;
    if (x->dtype != TF_DTYPE_F32 || x->ndim != 3 || x->shape[enc ? 1 : 2] != E || !tf_is_contiguous(x))
        return tf_set_error("%s: '%s' has shape %s; expected %s with %s %lld", path, enc ? "input" : "query",
                            tf_shape_str(x, s, sizeof s), enc ? "(B,C,T)" : "(B,T,E)", enc ? "C" : "E",
                            (long long)E), NULL;
    int64_t B = x->shape[0], T = x->shape[enc ? 2 : 1], S = T - n + 1;
    if (S < 1) return tf_set_error("%s: %lld steps are fewer than sequence_len %lld", path, (long long)T, (long long)n), NULL;
    int64_t shape[4] = {B, S, n, E};
    if (c->kind == TR_CO_SINGLE) shape[2] = E;
    if (enc) shape[1] = E, shape[2] = S;
    tf_tensor *y = tf_tensor_new(ctx, TF_DTYPE_F32, c->kind == TR_CO_RETRO ? 4 : 3, shape, 0);
    tf_ctx *step = tf_ctx_new(0); /* one step's activations, dropped after each */
    tf_coatt *att = enc ? NULL : tf_coatt_new(&w->mha, c->kind == TR_CO_RETRO ? TF_COATT_RETRO : TF_COATT_SINGLE, (int)B, (int)n);
    tf_continual_state *st = enc ? tf_continual_state_new(&w->enc, (int)B) : NULL;
    int ok = y && step && (att || st);
    for (int64_t t = 0; ok && t < T; t++, tf_ctx_reset(step)) {
        tf_tensor *out = NULL, *xt = step_input(step, x, t, enc);
        int rc = !xt ? -1 : enc ? tf_continual_step(step, st, xt, &out) : tf_coatt_step(step, att, xt, &out);
        if (rc < 0) ok = 0;
        else if (rc == 1) place(y, out, t - n + 1, c->kind);
    }
    tf_coatt_free(att), tf_continual_state_free(st), tf_ctx_free(step);
    return ok ? y : NULL;
}
