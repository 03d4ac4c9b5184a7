/* GPT: token + position embeddings, a stack of causal self-attention blocks,
 * a final LayerNorm and the (tied) output projection — GPT-2's layout and
 * Hugging Face's parameter names, with the original paper's post-LN as an option. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../../core/internal.h"

static int add(tf_params *ps, tf_tensor **slot, float init, const char *fmt, int layer, int ndim, int64_t d0, int64_t d1) {
    char name[128];
    snprintf(name, sizeof name, fmt, layer);
    return tf_params_add(ps, name, slot, ndim, (int64_t[]){d0, d1}, init);
}

static int register_block(tf_params *ps, tf_gpt_block *b, const tf_gpt_config *c, int i) {
    int64_t C = c->d_model, F = c->d_ff ? c->d_ff : 4 * C;
    float std = 0.02f, proj = 0.02f / sqrtf(2.0f * (float)c->n_layer);
    return add(ps, &b->ln_1_w, TF_INIT_ONES, "transformer.h.%d.ln_1.weight", i, 1, C, 0) ||
           add(ps, &b->ln_1_b, TF_INIT_ZEROS, "transformer.h.%d.ln_1.bias", i, 1, C, 0) ||
           add(ps, &b->c_attn_w, std, "transformer.h.%d.attn.c_attn.weight", i, 2, C, 3 * C) ||
           add(ps, &b->c_attn_b, TF_INIT_ZEROS, "transformer.h.%d.attn.c_attn.bias", i, 1, 3 * C, 0) ||
           add(ps, &b->attn_proj_w, proj, "transformer.h.%d.attn.c_proj.weight", i, 2, C, C) ||
           add(ps, &b->attn_proj_b, TF_INIT_ZEROS, "transformer.h.%d.attn.c_proj.bias", i, 1, C, 0) ||
           add(ps, &b->ln_2_w, TF_INIT_ONES, "transformer.h.%d.ln_2.weight", i, 1, C, 0) ||
           add(ps, &b->ln_2_b, TF_INIT_ZEROS, "transformer.h.%d.ln_2.bias", i, 1, C, 0) ||
           add(ps, &b->c_fc_w, std, "transformer.h.%d.mlp.c_fc.weight", i, 2, C, F) ||
           add(ps, &b->c_fc_b, TF_INIT_ZEROS, "transformer.h.%d.mlp.c_fc.bias", i, 1, F, 0) ||
           add(ps, &b->mlp_proj_w, proj, "transformer.h.%d.mlp.c_proj.weight", i, 2, F, C) ||
           add(ps, &b->mlp_proj_b, TF_INIT_ZEROS, "transformer.h.%d.mlp.c_proj.bias", i, 1, C, 0);
}

tf_gpt *tf_gpt_new(const tf_gpt_config *cfg, uint64_t seed) {
    if (tf_gpt_config_check(cfg)) return NULL;
    tf_gpt *m = calloc(1, sizeof *m);
    if (!m || !(m->params = tf_params_new()) || !(m->h = calloc((size_t)cfg->n_layer, sizeof *m->h))) {
        tf_gpt_free(m);
        return tf_set_error("gpt: out of memory"), NULL;
    }
    m->cfg = *cfg;
    tf_params *ps = m->params;
    int64_t C = cfg->d_model;
    int rc = add(ps, &m->wte, 0.02f, "transformer.wte.weight", 0, 2, cfg->vocab_size, C);
    if (!rc && cfg->pos == TF_POS_LEARNED) rc = add(ps, &m->wpe, 0.01f, "transformer.wpe.weight", 0, 2, cfg->context, C);
    for (int i = 0; !rc && i < cfg->n_layer; i++) rc = register_block(ps, &m->h[i], cfg, i);
    if (!rc && cfg->norm_first)
        rc = add(ps, &m->ln_f_w, TF_INIT_ONES, "transformer.ln_f.weight", 0, 1, C, 0) ||
             add(ps, &m->ln_f_b, TF_INIT_ZEROS, "transformer.ln_f.bias", 0, 1, C, 0);
    if (!rc && !cfg->tied) rc = add(ps, &m->lm_head, 0.02f, "lm_head.weight", 0, 2, cfg->vocab_size, C);
    if (!rc && seed) rc = tf_params_init(ps, seed);
    if (rc) {
        tf_gpt_free(m);
        return NULL;
    }
    return m;
}

void tf_gpt_free(tf_gpt *m) {
    if (!m) return;
    tf_params_free(m->params);
    free(m->h);
    free(m);
}

/* x (..., in) W (in, out) + b: Hugging Face's Conv1D. */
/* Hugging Face's Conv1D: x W + b with W stored (in,out), then act (or TF_ACT_NONE) */
static tf_tensor *conv1d(tf_ctx *ctx, tf_tensor *x, tf_tensor *w, tf_tensor *b, int act) {
    return tf_dense(ctx, x, w, 1, b, act);
}

/* Causal self-attention of x (B,T,C) -> (B,T,C). */
static tf_tensor *attention(tf_ctx *ctx, const tf_gpt *m, const tf_gpt_block *b, tf_tensor *x) {
    if (!x) return NULL; /* an earlier op failed */
    const tf_gpt_config *c = &m->cfg;
    int64_t B = x->shape[0], T = x->shape[1], C = c->d_model, H = c->n_head, D = C / H;
    tf_tensor *qkv = conv1d(ctx, x, b->c_attn_w, b->c_attn_b, TF_ACT_NONE);  // qkv: (B,T,3C)
    tf_tensor *hd[3];
    for (int i = 0; i < 3; i++) {  // (B,T,C) slice -> (B,H,T,D)
        tf_tensor *part = tf_reshape(ctx, tf_narrow(ctx, qkv, 2, i * C, C), 4, (int64_t[]){B, T, H, D});
        hd[i] = tf_transpose(ctx, part, 1, 2);
    }
    float scale = 1.0f / sqrtf((float)D);
    tf_tensor *y;
    if (ctx->training && c->dropout > 0.0f) { /* dropout on the attention weights: the unfused path */
        tf_tensor *mask = tf_tensor_new(ctx, TF_DTYPE_U8, 2, (int64_t[]){T, T}, 0);
        if (!mask) return NULL;
        for (int64_t i = 0; i < T; i++)
            for (int64_t j = i + 1; j < T; j++) tf_u8(mask)[i * T + j] = 1;
        tf_tensor *p = tf_softmax(ctx, tf_scale(ctx, tf_matmul(ctx, hd[0], hd[1], 0, 1), scale), mask);
        y = tf_matmul(ctx, tf_dropout(ctx, p, c->dropout), hd[2], 0, 0);
    } else {
        y = tf_sdpa(ctx, hd[0], hd[1], hd[2], NULL, 1, scale);  // y: (B,H,T,D)
    }
    y = tf_reshape(ctx, tf_transpose(ctx, y, 1, 2), 3, (int64_t[]){B, T, C});
    return tf_dropout(ctx, conv1d(ctx, y, b->attn_proj_w, b->attn_proj_b, TF_ACT_NONE), c->dropout);
}

static tf_tensor *mlp(tf_ctx *ctx, const tf_gpt *m, const tf_gpt_block *b, tf_tensor *x) {
    const tf_gpt_config *c = &m->cfg;
    tf_tensor *h = conv1d(ctx, x, b->c_fc_w, b->c_fc_b, c->activation);  // h: (B,T,4C)
    return tf_dropout(ctx, conv1d(ctx, h, b->mlp_proj_w, b->mlp_proj_b, TF_ACT_NONE), c->dropout);
}

static tf_tensor *block(tf_ctx *ctx, const tf_gpt *m, const tf_gpt_block *b, tf_tensor *x) {
    float eps = m->cfg.norm_eps;
    if (m->cfg.norm_first) {  // x + f(LN(x))
        x = tf_add(ctx, x, attention(ctx, m, b, tf_layernorm(ctx, x, b->ln_1_w, b->ln_1_b, eps)));
        return tf_add(ctx, x, mlp(ctx, m, b, tf_layernorm(ctx, x, b->ln_2_w, b->ln_2_b, eps)));
    }
    x = tf_layernorm(ctx, tf_add(ctx, x, attention(ctx, m, b, x)), b->ln_1_w, b->ln_1_b, eps);  // LN(x + f(x))
    return tf_layernorm(ctx, tf_add(ctx, x, mlp(ctx, m, b, x)), b->ln_2_w, b->ln_2_b, eps);
}

/* Token + position embeddings, the blocks, the final LayerNorm: (B,T,C). */
static tf_tensor *hidden_states(tf_ctx *ctx, const tf_gpt *m, tf_tensor *ids) {
    const tf_gpt_config *c = &m->cfg;
    int64_t T = ids->shape[1];
    tf_tensor *pos = c->pos == TF_POS_LEARNED ? tf_posenc_learned(ctx, m->wpe, 0, T)
                                              : tf_posenc_sinusoidal_tensor(ctx, T, c->d_model);
    tf_tensor *x = tf_dropout(ctx, tf_add(ctx, tf_embedding(ctx, m->wte, ids), pos), c->dropout);  // x: (B,T,C)
    for (int i = 0; i < c->n_layer; i++) x = block(ctx, m, &m->h[i], x);
    if (c->norm_first) x = tf_layernorm(ctx, x, m->ln_f_w, m->ln_f_b, c->norm_eps);
    return x;
}

int tf_gpt_run(tf_ctx *ctx, const tf_gpt *m, const tf_gpt_inputs *in, tf_gpt_outputs *out) {
    const tf_gpt_config *c = &m->cfg;
    tf_tensor *ids = in->input_ids;
    memset(out, 0, sizeof *out);
    if (!ids || ids->dtype != TF_DTYPE_I32 || ids->ndim != 2) return tf_set_error("gpt: input_ids must be I32 (B,T)");
    int64_t T = ids->shape[1];
    if (T > c->context) return tf_set_error("gpt: %lld tokens exceed the context of %d", (long long)T, c->context);
    if (in->attention_mask || in->position_ids || in->token_type_ids)
        return tf_set_error("gpt: attention_mask, position_ids and token_type_ids are not supported yet");
    tf_tensor *x = hidden_states(ctx, m, ids);
    out->last_hidden_state = x;
    out->logits = tf_matmul(ctx, x, c->tied ? m->wte : m->lm_head, 0, 1);  // (B,T,V)
    if (in->targets) out->loss = tf_cross_entropy(ctx, out->logits, in->targets, -1, 0.0f);
    return out->logits && (!in->targets || out->loss) ? 0 : -1;
}

tf_tensor *tf_gpt_forward(tf_ctx *ctx, const tf_gpt *m, tf_tensor *ids, tf_tensor *targets, tf_tensor **logits) {
    if (!ids) return NULL;
    tf_gpt_inputs in = {.input_ids = ids, .targets = targets};
    tf_gpt_outputs out;
    if (tf_gpt_run(ctx, m, &in, &out)) return NULL;
    if (logits) *logits = out.logits;
    return targets ? out.loss : out.logits;
}
