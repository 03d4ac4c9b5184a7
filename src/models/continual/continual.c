/* The Continual Transformer Encoder (deck 01, Figure 1): one set of
 * parameters, two ways to run it.
 *
 *   batch:  x (B,n,E) + PE[(pos_start + i) mod P] -> block_1 .. block_L -> last row (B,E)
 *   step:   x_t (B,E) + PE[t mod P] ->
 *           L == 1: single-output block (CoSiAtt over cached k, v)
 *           L >= 2: retroactive block_1 (CoReAtt: all n rows updated)
 *                   [+ class token] -> regular block_2 .. block_{L-1}
 *                   -> single-output block_L (the last row queries)
 *
 * Both give the same output for the same window (tests/test_continual.c). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../core/core_internal.h"
#include "tformer/continual.h"
#include "tformer/heads.h"

static const char *const POS_KINDS[] = {"learned", "sinusoidal", NULL};
static const char *const ACTIVATIONS[] = {"relu", "gelu", "gelu_tanh", "silu", NULL};

#define ROW(m, type, name, def, range, choices, help, flags) \
    TF_FIELD_ROW(tf_continual_config, m, type, name, def, range, choices, help, flags, NULL)
static const tf_field COENC_ROWS[] = {
    ROW(d_model, TF_FIELD_INT, "d_model", "64", "[1,inf)", NULL, "width of a step's feature vector", TF_FIELD_SIGNATURE),
    ROW(n_head, TF_FIELD_INT, "n_head", "4", "[1,inf)", NULL, "attention heads", TF_FIELD_SIGNATURE),
    ROW(d_ff, TF_FIELD_INT, "d_ff", "128", "[1,inf)", NULL, "feed-forward width", TF_FIELD_SIGNATURE),
    ROW(n_layer, TF_FIELD_INT, "n_layer", "2", "[1,10000]", NULL, "blocks", TF_FIELD_SIGNATURE),
    ROW(window, TF_FIELD_INT, "window", "16", "[1,inf)", NULL, "steps in the receptive field (n)", 0),
    ROW(pos_len, TF_FIELD_INT, "pos_len", "16", "[0,inf)", NULL, "rows of the recycling position table; 0: no positions",
        TF_FIELD_SIGNATURE),
    ROW(pos, TF_FIELD_ENUM, "pos", "learned", NULL, POS_KINDS, "positional encoding", TF_FIELD_SIGNATURE),
    ROW(activation, TF_FIELD_ENUM, "activation", "relu", NULL, ACTIVATIONS, "feed-forward activation", TF_FIELD_SIGNATURE),
    ROW(norm_eps, TF_FIELD_FLOAT, "norm_eps", "1e-5", "(0,inf)", NULL, "LayerNorm epsilon", 0),
    ROW(dropout, TF_FIELD_FLOAT, "dropout", "0", "[0,1)", NULL, "dropout while training", 0),
    ROW(norm_first, TF_FIELD_BOOL, "norm_first", "false", NULL, NULL, "pre-LN blocks", TF_FIELD_SIGNATURE),
    ROW(cls_token, TF_FIELD_BOOL, "cls_token", "false", NULL, NULL, "class token after the first block", TF_FIELD_SIGNATURE),
    ROW(vocab_size, TF_FIELD_INT, "vocab_size", "0", "[0,inf)", NULL,
        "token ids embedded (training: the tokenizer's size); 0: feature vectors", TF_FIELD_SIGNATURE),
    ROW(n_labels, TF_FIELD_INT, "n_labels", "0", "[0,inf)", NULL, "classes of a classifier on the output; 0: none",
        TF_FIELD_SIGNATURE),
    ROW(label_names, TF_FIELD_STRING, "label_names", "", NULL, NULL,
        "the classes' names, comma-separated (training: default the data files' names)", 0),
};
const tf_field_table tf_continual_config_table = {"continual", COENC_ROWS, (int)(sizeof COENC_ROWS / sizeof *COENC_ROWS)};

const tf_field_table *tf_continual_config_fields(void) { return &tf_continual_config_table; }

int tf_continual_config_check(const tf_continual_config *c) {
    tf_fields f = {&tf_continual_config_table, (void *)c};
    if (tf_fields_check(&f, 1)) return -1;
    if (c->pos != TF_POS_LEARNED && c->pos != TF_POS_SINUSOIDAL)
        return tf_set_error("continual: pos must be learned or sinusoidal");
    if (c->pos_len > 0 && c->window > c->pos_len)
        return tf_set_error("continual: window %d is larger than the position table (pos_len %d)", c->window, c->pos_len);
    if (c->cls_token && c->n_layer < 2)
        return tf_set_error("continual: cls_token needs n_layer >= 2 (the token joins after the first block)");
    if (c->d_model % c->n_head)
        return tf_set_error("continual: d_model %d must be a multiple of n_head %d", c->d_model, c->n_head);
    return 0;
}

int tf_continual_register_names(tf_params *ps, const char *prefix, tf_continual *e, const tf_continual_config *cfg,
                            const char *const *layer_prefix, const tf_block_names *names) {
    memset(e, 0, sizeof *e);
    if (tf_continual_config_check(cfg)) return -1;
    e->cfg = *cfg;
    tf_block_config b = tf_block_config_default(cfg->d_model, cfg->n_head);
    b.d_ff = cfg->d_ff, b.activation = cfg->activation, b.norm_eps = cfg->norm_eps, b.dropout = cfg->dropout;
    b.norm_first = cfg->norm_first, b.attn_dropout = b.activation_dropout = cfg->dropout; /* PyTorch's layer */
    e->block = b;
    if (!(e->layers = calloc((size_t)cfg->n_layer, sizeof *e->layers))) return tf_set_error("continual: out of memory");
    char name[512];
    for (int i = 0; i < cfg->n_layer; i++) {
        int rc;
        if (names) {
            snprintf(name, sizeof name, "%s%s", prefix, layer_prefix[i]);
            rc = tf_block_register(ps, name, &e->layers[i], &b, &names[i], (tf_block_init){0, 0, 1});
        } else {
            snprintf(name, sizeof name, "%slayers.%d.", prefix, i);
            rc = tf_encoder_layer_register(ps, name, &e->layers[i], &b);
        }
        if (rc) return -1;
    }
    int64_t E = cfg->d_model;
    snprintf(name, sizeof name, "%spos_embed", prefix);
    if (cfg->pos == TF_POS_LEARNED && cfg->pos_len > 0 && tf_params_add(ps, name, &e->pos_embed, 2, (int64_t[]){cfg->pos_len, E}, 0.02f))
        return -1;
    snprintf(name, sizeof name, "%scls_token", prefix);
    if (cfg->cls_token && tf_params_add(ps, name, &e->cls, 1, (int64_t[]){E}, 0.02f)) return -1;
    snprintf(name, sizeof name, "%sembed", prefix);
    if (cfg->vocab_size > 0 && tf_params_add(ps, name, &e->embed, 2, (int64_t[]){cfg->vocab_size, E}, 1.0f)) return -1;
    snprintf(name, sizeof name, "%shead", prefix);
    if (cfg->n_labels > 0 && tf_linear_register(ps, name, &e->head, E, cfg->n_labels, 1, 0.02f)) return -1;
    return 0;
}

tf_tensor *tf_continual_embed(tf_ctx *ctx, const tf_continual *e, tf_tensor *ids) {
    char s[64];
    if (!e->embed) return tf_set_error("continual: the model takes feature vectors (vocab_size 0), not token ids"), NULL;
    if (!ids || ids->dtype != TF_DTYPE_I32 || ids->ndim < 1 || ids->ndim > 2)
        return tf_set_error("continual: token ids %s must be I32 (B) or (B,T)", ids ? tf_shape_str(ids, s, sizeof s) : ""),
               NULL;
    for (int64_t i = 0; i < tf_numel(ids); i++)
        if (tf_i32(ids)[i] < 0 || tf_i32(ids)[i] >= e->cfg.vocab_size)
            return tf_set_error("continual: token id %d outside the vocabulary of %d", tf_i32(ids)[i], e->cfg.vocab_size),
                   NULL;
    return tf_embedding(ctx, e->embed, ids);  // (B,d_model) or (B,T,d_model)
}

tf_tensor *tf_continual_classify(tf_ctx *ctx, const tf_continual *e, tf_tensor *h) {
    if (!e->head.weight) return tf_set_error("continual: the model has no classifier (n_labels 0)"), NULL;
    return tf_linear_forward(ctx, &e->head, h);  // (B,n_labels)
}

int tf_continual_register(tf_params *ps, const char *prefix, tf_continual *e, const tf_continual_config *cfg) {
    return tf_continual_register_names(ps, prefix, e, cfg, NULL, NULL);
}

void tf_continual_free(tf_continual *e) {
    free(e->layers);
    tf_params_free(e->params); /* a loaded model's own; NULL otherwise */
    e->layers = NULL, e->params = NULL;
}

/* x (T,E) or (B,T,E) plus the positional encoding of T steps from position
 * start, recycled mod P; x itself without positions (pos_len 0). */
static tf_tensor *add_positions(tf_ctx *ctx, const tf_continual *e, tf_tensor *x, int64_t start, int64_t T) {
    int64_t P = e->cfg.pos_len, E = e->cfg.d_model;
    if (P == 0) return x;
    start = ((start % P) + P) % P;
    if (e->cfg.pos == TF_POS_SINUSOIDAL) {
        tf_tensor *pe = tf_tensor_new(ctx, TF_DTYPE_F32, 2, (int64_t[]){T, E}, 0);
        for (int64_t i = 0; pe && i < T; i++) tf_posenc_sinusoidal(tf_f32(pe) + i * E, (start + i) % P, 1, E);
        return tf_add(ctx, x, pe);
    }
    tf_tensor *ids = tf_tensor_new(ctx, TF_DTYPE_I32, 1, (int64_t[]){T}, 0);
    for (int64_t i = 0; ids && i < T; i++) tf_i32(ids)[i] = (int32_t)((start + i) % P);
    return tf_add(ctx, x, tf_embedding(ctx, e->pos_embed, ids));  // (T,E) rows, gradient into the table
}

/* z (B,T,E) with the class token appended: (B,T+1,E). */
static tf_tensor *append_cls(tf_ctx *ctx, const tf_continual *e, tf_tensor *z) {
    if (!e->cls || !z) return z;
    tf_tensor *zero = tf_tensor_new(ctx, TF_DTYPE_F32, 3, (int64_t[]){z->shape[0], 1, z->shape[2]}, 0);
    tf_tensor *parts[2] = {z, tf_add(ctx, zero, e->cls)};  // cls broadcast to (B,1,E)
    return parts[1] ? tf_concat(ctx, 2, parts, 1) : NULL;
}

/* Blocks from..L-1 on z (B,T,E), the last one single-output: (B,E). */
static tf_tensor *upper_blocks(tf_ctx *ctx, const tf_continual *e, tf_tensor *z, int from) {
    int L = e->cfg.n_layer;
    tf_block_args last = {.query_last = 1};
    for (int i = from; i < L; i++) z = tf_block_forward(ctx, &e->layers[i], &e->block, z, i == L - 1 ? &last : NULL);
    return z ? tf_reshape(ctx, z, 2, (int64_t[]){z->shape[0], z->shape[2]}) : NULL;
}

tf_tensor *tf_continual_forward(tf_ctx *ctx, const tf_continual *e, tf_tensor *x, int64_t pos_start) {
    char s[64];
    if (!x) return NULL;
    if (x->ndim != 3 || x->shape[1] != e->cfg.window || x->shape[2] != e->cfg.d_model)
        return tf_set_error("continual: input %s must be (B,window=%d,d_model=%d)", tf_shape_str(x, s, sizeof s),
                            e->cfg.window, e->cfg.d_model), NULL;
    tf_tensor *u = add_positions(ctx, e, x, pos_start, x->shape[1]);  // u: (B,n,E)
    if (e->cfg.n_layer == 1) return upper_blocks(ctx, e, u, 0);
    tf_tensor *z = tf_block_forward(ctx, &e->layers[0], &e->block, u, NULL);   // z: (B,n,E)
    return upper_blocks(ctx, e, append_cls(ctx, e, z), 1);
}

/* ---------------------------------------------------------------- step mode */

struct tf_continual_state {
    const tf_continual *e;
    int B;
    int64_t t;
    tf_coatt *att; /* the first block's attention: single-output (L == 1) or retroactive */
    float *u;      /* (B,n,E) ring of the first block's inputs, slot t % n (retroactive residual) */
};

tf_continual_state *tf_continual_state_new(const tf_continual *e, int batch) {
    tf_continual_state *s = calloc(1, sizeof *s);
    if (!s) return tf_set_error("continual: out of memory"), NULL;
    s->e = e, s->B = batch;
    int retro = e->cfg.n_layer > 1;
    s->att = tf_coatt_new(&e->layers[0].self_attn, retro ? TF_COATT_RETRO : TF_COATT_SINGLE, batch, e->cfg.window);
    size_t cells;
    int ok = s->att && tf_mul_size((size_t)batch * e->cfg.window, (size_t)e->cfg.d_model, &cells);
    if (ok && retro) ok = (s->u = calloc(cells, sizeof *s->u)) != NULL;
    if (!ok) {
        if (s->att) tf_set_error("continual: out of memory");
        return tf_continual_state_free(s), NULL;
    }
    return s;
}

void tf_continual_state_free(tf_continual_state *s) {
    if (!s) return;
    tf_coatt_free(s->att);
    free(s->u);
    free(s);
}

int64_t tf_continual_state_steps(const tf_continual_state *s) { return s->t; }

static int check_step(const tf_continual_state *s, const tf_tensor *x) {
    char a[64];
    int64_t E = s->e->cfg.d_model;
    if (!x) return -1;
    if (x->dtype != TF_DTYPE_F32 || x->ndim != 2 || x->shape[0] != s->B || x->shape[1] != E || !tf_is_contiguous(x))
        return tf_set_error("continual: step input %s must be F32 (B=%d,d_model=%lld)", tf_shape_str(x, a, sizeof a),
                            s->B, (long long)E);
    for (int64_t i = 0; i < s->B * E; i++)
        if (!isfinite(tf_f32(x)[i]))
            return tf_set_error("continual: step %lld: stream %lld feature %lld is %g", (long long)s->t,
                                (long long)(i / E), (long long)(i % E), tf_f32(x)[i]);
    return 0;
}

/* The window of first-block inputs from the ring, oldest first: (B,n,E). */
static tf_tensor *window_inputs(tf_ctx *ctx, const tf_continual_state *s) {
    int n = s->e->cfg.window, E = s->e->cfg.d_model;
    tf_tensor *w = tf_tensor_new(ctx, TF_DTYPE_F32, 3, (int64_t[]){s->B, n, E}, 0);
    for (int b = 0; w && b < s->B; b++)
        for (int j = 0; j < n; j++)
            memcpy(tf_f32(w) + ((size_t)b * n + j) * E, s->u + ((size_t)b * n + (s->t + 1 + j) % n) * E,
                   (size_t)E * sizeof(float));
    return w;
}

int tf_continual_step(tf_ctx *ctx, tf_continual_state *s, tf_tensor *x, tf_tensor **out) {
    *out = NULL;
    if (check_step(s, x)) return -1;
    const tf_continual *e = s->e;
    const tf_block *b0 = &e->layers[0];
    int n = e->cfg.window, E = e->cfg.d_model, grad = ctx->grad_enabled, training = ctx->training, rc;
    ctx->grad_enabled = 0, ctx->training = 0; /* step mode is inference: no tape, no dropout */
    tf_tensor *u = add_positions(ctx, e, x, s->t, 1);                                // u: (B,E)
    tf_tensor *h = e->cfg.norm_first ? tf_layer_norm_forward(ctx, &b0->norm_attn, u) : u;
    tf_tensor *a = NULL, *y = NULL;
    if (!h || (rc = tf_coatt_step(ctx, s->att, h, &a)) < 0) return ctx->grad_enabled = grad, ctx->training = training, -1;
    if (s->u)
        for (int i = 0; i < s->B; i++)
            memcpy(s->u + ((size_t)i * n + s->t % n) * E, tf_f32(u) + (size_t)i * E, (size_t)E * sizeof(float));
    if (rc == 1 && e->cfg.n_layer == 1) {  // a: (B,E)
        tf_block_args args = {.self_attn_out = tf_reshape(ctx, a, 3, (int64_t[]){s->B, 1, E})};
        y = upper_blocks(ctx, e, tf_block_forward(ctx, b0, &e->block, tf_reshape(ctx, u, 3, (int64_t[]){s->B, 1, E}),
                                                  &args), 1);
    } else if (rc == 1) {                  // a: (B,n,E), every row of the window updated
        tf_block_args args = {.self_attn_out = a};
        tf_tensor *z = tf_block_forward(ctx, b0, &e->block, window_inputs(ctx, s), &args);  // z: (B,n,E)
        y = upper_blocks(ctx, e, append_cls(ctx, e, z), 1);
    }
    s->t++;
    ctx->grad_enabled = grad, ctx->training = training;
    if (rc == 1 && !y) return -1;
    *out = y;
    return rc;
}
