/* GPT: token + position embeddings, a stack of the one Transformer block
 * (causal self-attention, GPT-2's name map and Conv1D weights), a final
 * LayerNorm and the (tied) output projection — GPT-2's layout and Hugging
 * Face's parameter names, with the original paper's post-LN as an option.
 *
 *   x = wte[ids] + wpe[pos]                      (B,T,C)
 *   x = block_l(x)            l = 0 .. n_layer-1 (B,T,C)
 *   h = ln_f(x)               (pre-LN only)
 *   logits = h wte^T          (or lm_head)       (B,T,V), (B,T,V-1) without predict_last
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../../nn/nn_internal.h"
#include "../family_construct.h"
#include "gpt_internal.h"

/* GPT-2's names for the block's tensors, in its checkpoint order. */
static const tf_block_name GPT2_BLOCK[] = {
    {TF_BP_NORM_ATTN_W, "ln_1.weight"},    {TF_BP_NORM_ATTN_B, "ln_1.bias"},
    {TF_BP_QKV_W, "attn.c_attn.weight"},   {TF_BP_QKV_B, "attn.c_attn.bias"},
    {TF_BP_OUT_W, "attn.c_proj.weight"},   {TF_BP_OUT_B, "attn.c_proj.bias"},
    {TF_BP_NORM_FF_W, "ln_2.weight"},      {TF_BP_NORM_FF_B, "ln_2.bias"},
    {TF_BP_FF_IN_W, "mlp.c_fc.weight"},    {TF_BP_FF_IN_B, "mlp.c_fc.bias"},
    {TF_BP_FF_OUT_W, "mlp.c_proj.weight"}, {TF_BP_FF_OUT_B, "mlp.c_proj.bias"},
    {TF_BP_SSMAX, "attn.ssmax_scale"}, /* Scalable-Softmax's s, with ssmax (tformer's own) */
};

static tf_block_config block_config(const tf_gpt_config *c) {
    tf_block_config b = tf_block_config_default(c->d_model, c->n_head);
    b.d_ff = c->d_ff ? c->d_ff : 4 * c->d_model;
    b.activation = c->activation, b.norm_eps = c->norm_eps, b.norm_first = c->norm_first, b.norm = c->norm;
    b.dropout = b.attn_dropout = c->dropout;
    b.self_attn.kind = TF_ATTN_CAUSAL, b.w_in_out = 1;
    tf_attention_apply(&c->attention, &b); /* checked by tf_gpt_config_check */
    return b;
}

static int add(tf_params *ps, const char *name, tf_tensor **slot, float init, int ndim, int64_t d0, int64_t d1) {
    return tf_params_add(ps, name, slot, ndim, (int64_t[]){d0, d1}, init);
}

static int register_all(tf_gpt *m) {
    const tf_gpt_config *c = &m->cfg;
    tf_params *ps = m->params;
    int64_t C = c->d_model;
    int rc = add(ps, "transformer.wte.weight", &m->wte, 0.02f, 2, c->vocab_size, C);
    if (!rc && c->pos == TF_POS_LEARNED) rc = add(ps, "transformer.wpe.weight", &m->wpe, 0.01f, 2, c->context, C);
    tf_block_names names = {GPT2_BLOCK, (int)(sizeof GPT2_BLOCK / sizeof *GPT2_BLOCK)};
    tf_block_init init = {0.02f, 0.02f / sqrtf(2.0f * (float)c->n_layer), 0}; /* GPT-2's scaled residual init */
    char prefix[64];
    for (int i = 0; !rc && i < c->n_layer; i++) {
        snprintf(prefix, sizeof prefix, "transformer.h.%d.", i);
        rc = tf_block_register(ps, prefix, &m->h[i], &m->block, &names, init);
    }
    if (!rc && c->norm_first)
        rc = tf_layer_norm_register(ps, "transformer.ln_f", &m->ln_f, C, c->norm_eps, c->norm == TF_NORM_LAYER);
    m->ln_f.eps = c->norm_eps, m->ln_f.rms = c->norm == TF_NORM_RMS;
    if (!rc && m->has_head)
        rc = tf_lm_head_register(ps, c->tied ? NULL : "lm_head.weight", NULL, &m->head, c->tied ? &m->wte : NULL, C,
                                 c->vocab_size - !c->predict_last, 0.02f);
    return rc;
}

static int build(tf_gpt *m, int has_head) {
    if (!(m->h = calloc((size_t)m->cfg.n_layer, sizeof *m->h))) return tf_set_error("gpt: out of memory");
    m->block = block_config(&m->cfg), m->has_head = has_head;
    return register_all(m);
}

static int build_lm(void *m) { return build(m, 1); }
static int build_body(void *m) { return build(m, 0); }
static void release(void *m) { free(((tf_gpt *)m)->h); }

static const tf_family_layout LM = {.family = "gpt", TF_FAMILY_LAYOUT(tf_gpt), .build = build_lm, .release = release};
static const tf_family_layout BODY = {
    .family = "gpt", TF_FAMILY_LAYOUT(tf_gpt), .build = build_body, .release = release};

/* A model; has_head 0 leaves out the output projection (GPT2Model). */
tf_gpt *tf_gpt_new_body(const tf_gpt_config *cfg, uint64_t seed, int has_head) {
    return tf_gpt_config_check(cfg) ? NULL : tf_family_construct(has_head ? &LM : &BODY, cfg, seed);
}

tf_gpt *tf_gpt_new(const tf_gpt_config *cfg, uint64_t seed) { return tf_gpt_new_body(cfg, seed, 1); }

void tf_gpt_free(tf_gpt *m) { tf_family_destroy(&LM, m); }

/* ---------------------------------------------------------------- forward */

/* Positions start .. start+T-1, or position_ids: (T,C) or (B,T,C). */
static tf_tensor *positions(tf_ctx *ctx, const tf_gpt *m, const tf_tensor *pos_ids, int64_t start, int64_t T) {
    const tf_gpt_config *c = &m->cfg;
    if (!pos_ids) return c->pos == TF_POS_LEARNED ? tf_posenc_learned(ctx, m->wpe, start, T)
                                                  : tf_posenc_sinusoidal_tensor(ctx, start, T, c->d_model);
    if (c->pos == TF_POS_LEARNED) return tf_embedding(ctx, m->wpe, (tf_tensor *)pos_ids);
    int32_t top = 0; /* the sinusoidal table up to the largest position, then a lookup */
    for (int64_t i = 0; i < tf_numel(pos_ids); i++) top = tf_i32(pos_ids)[i] > top ? tf_i32(pos_ids)[i] : top;
    return tf_embedding(ctx, tf_posenc_sinusoidal_tensor(ctx, 0, (int64_t)top + 1, c->d_model), (tf_tensor *)pos_ids);
}

static int check_ids(const tf_tensor *t, const char *name, int64_t B, int64_t T) {
    char s[64];
    if (t && (t->dtype != TF_DTYPE_I32 || t->ndim != 2 || t->shape[0] != B || t->shape[1] != T))
        return tf_set_error("gpt: %s %s must be I32 (%lld,%lld)", name, tf_shape_str(t, s, sizeof s), (long long)B,
                            (long long)T);
    return 0;
}

/* The blocks' output (B,T,C) after the final LayerNorm. */
static tf_tensor *hidden(tf_ctx *ctx, const tf_gpt *m, const tf_gpt_inputs *in, tf_tensor **attentions) {
    const tf_gpt_config *c = &m->cfg;
    tf_tensor *ids = in->input_ids;
    int64_t B = ids->shape[0], T = ids->shape[1], start = in->cache ? tf_kv_cache_len(in->cache) : 0;
    if (start + T > c->context)
        return tf_set_error("gpt: %lld tokens exceed the context of %d", (long long)(start + T), c->context), NULL;
    if (check_ids(in->position_ids, "position_ids", B, T) || check_ids(in->token_type_ids, "token_type_ids", B, T))
        return NULL;
    tf_attn_mask mask = {0};
    if (in->attention_mask &&
        !(mask.key_padding_mask = tf_key_padding(ctx, in->attention_mask, B, start + T, "gpt")))
        return NULL;
    tf_tensor *pos = positions(ctx, m, in->position_ids, start, T);
    tf_tensor *x = tf_add(ctx, tf_embedding(ctx, m->wte, ids), pos);
    if (in->token_type_ids) x = tf_add(ctx, x, tf_embedding(ctx, m->wte, in->token_type_ids));
    x = tf_dropout(ctx, x, c->dropout);  // x: (B,T,C)
    tf_block_args args = {.self_mask = in->attention_mask ? &mask : NULL, .cache = in->cache};
    for (int i = 0; i < c->n_layer; i++) {
        args.layer = i;
        args.self_probs = attentions ? &attentions[i] : NULL;
        x = tf_block_forward(ctx, &m->h[i], &m->block, x, &args);
    }
    if (c->norm_first) x = tf_layer_norm_forward(ctx, &m->ln_f, x);
    if (x && in->cache && tf_kv_cache_advance(in->cache, (int)T)) return NULL;
    return x;
}

/* logits (B,T,V) = h E^T: the token table (tied) or lm_head (the shared LM head). */
static tf_tensor *head(tf_ctx *ctx, const tf_gpt *m, tf_tensor *h) {
    if (!m->has_head) return tf_set_error("gpt: this model has no language-model head (GPT2Model)"), NULL;
    return tf_lm_head_forward(ctx, &m->head, h);
}

int tf_gpt_run(tf_ctx *ctx, const tf_gpt *m, const tf_gpt_inputs *in, tf_gpt_outputs *out) {
    tf_tensor *ids = in->input_ids;
    memset(out, 0, sizeof *out);
    if (!ids || ids->dtype != TF_DTYPE_I32 || ids->ndim != 2) return tf_set_error("gpt: input_ids must be I32 (B,T)");
    if (in->output_attentions &&
        !(out->attentions = tf_ctx_alloc(ctx, (size_t)m->cfg.n_layer * sizeof *out->attentions)))
        return -1;
    if (!(out->last_hidden_state = hidden(ctx, m, in, out->attentions))) return -1;
    if (!m->has_head && !in->targets) return 0;
    out->logits = head(ctx, m, out->last_hidden_state);
    if (out->logits && in->targets) out->loss = tf_cross_entropy(ctx, out->logits, in->targets, -1, 0.0f);
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

tf_kv_cache *tf_gpt_cache_new(const tf_gpt *m, int batch, int capacity) {
    const tf_gpt_config *c = &m->cfg;
    if (capacity > c->context) capacity = c->context;
    return tf_kv_cache_new(c->n_layer, batch, c->n_head, c->d_model / c->n_head, capacity);
}

/* logits (V) of the position after the n new tokens: the head of the last position only. */
int tf_gpt_next_logits(tf_ctx *ctx, const tf_gpt *m, tf_kv_cache *cache, const int32_t *tokens, int n, float *logits) {
    tf_tensor *ids = tf_tensor_new(ctx, TF_DTYPE_I32, 2, (int64_t[]){1, n}, 0);
    if (!ids) return -1;
    memcpy(ids->data, tokens, (size_t)n * sizeof *tokens);
    tf_gpt_inputs in = {.input_ids = ids, .cache = cache};
    tf_tensor *h = hidden(ctx, m, &in, NULL);
    tf_tensor *y = head(ctx, m, tf_narrow(ctx, h, 1, n - 1, 1));  // y: (1,1,V)
    if (!y) return -1;
    int out = m->cfg.vocab_size - !m->cfg.predict_last; /* the start token without a logit: -inf */
    memcpy(logits, y->data, (size_t)out * sizeof *logits);
    for (int v = out; v < m->cfg.vocab_size; v++) logits[v] = -INFINITY;
    return 0;
}

/* ---------------------------------------------------------------- rows at their own positions */

/* Whether a product of the model reads int8 weights (tf_params_quantize), whose rows are not
 * summed as a one-row product sums them: such a model steps its rows one at a time. */
static int quantized(const tf_gpt *m) {
    const tf_tensor *w = m->head.tied ? *m->head.tied : m->head.weight;
    if (w && w->quant) return 1;
    for (int i = 0; i < m->cfg.n_layer; i++) {
        const tf_block *b = &m->h[i];
        const tf_tensor *ws[] = {b->self_attn.in_proj_weight, b->self_attn.out_proj.weight, b->ff_in.weight,
                                 b->ff_out.weight};
        for (int j = 0; j < 4; j++)
            if (ws[j] && ws[j]->quant) return 1;
    }
    return 0;
}

/* The rows' hidden states (R,1,C) after the final LayerNorm: hidden()'s code, each row's
 * position its cache's length, the blocks over the rows' own caches. */
static tf_tensor *rows_hidden(tf_ctx *ctx, const tf_gpt *m, tf_kv_cache *const *caches, const int32_t *tokens, int R) {
    const tf_gpt_config *c = &m->cfg;
    tf_tensor *ids = tf_tensor_new(ctx, TF_DTYPE_I32, 2, (int64_t[]){R, 1}, 0);  // (R,1)
    tf_tensor *pos = tf_tensor_new(ctx, TF_DTYPE_I32, 2, (int64_t[]){R, 1}, 0);  // (R,1)
    if (!ids || !pos) return NULL;
    for (int r = 0; r < R; r++) {
        int len = tf_kv_cache_len(caches[r]);
        if (len + 1 > c->context)
            return tf_set_error("gpt: row %d: %d tokens exceed the context of %d", r, len + 1, c->context), NULL;
        tf_i32(ids)[r] = tokens[r], tf_i32(pos)[r] = len;
    }
    tf_tensor *x = tf_add(ctx, tf_embedding(ctx, m->wte, ids), positions(ctx, m, pos, 0, 1));  // x: (R,1,C)
    tf_block_args args = {.row_caches = caches};
    for (int i = 0; i < c->n_layer; i++) {
        args.layer = i;
        x = tf_block_forward(ctx, &m->h[i], &m->block, x, &args);
    }
    return c->norm_first ? tf_layer_norm_forward(ctx, &m->ln_f, x) : x;
}

int tf_gpt_step_rows(tf_ctx *ctx, const tf_gpt *m, tf_kv_cache *const *caches, const int32_t *tokens, int R,
                     float *logits) {
    if (R < 1 || !caches || !tokens || !logits) return tf_set_error("gpt: a step of rows needs R >= 1 caches and tokens");
    int V = m->cfg.vocab_size, out = V - !m->cfg.predict_last; /* the start token without a logit: -inf */
    if (quantized(m)) { /* one row at a time (the same bits, by construction) */
        for (int r = 0; r < R; r++)
            if (tf_gpt_next_logits(ctx, m, caches[r], tokens + r, 1, logits + (size_t)r * (size_t)V)) return -1;
        return 0;
    }
    for (int r = 0; r < R; r++)
        for (int j = 0; j < r; j++)
            if (caches[j] == caches[r]) return tf_set_error("gpt: rows %d and %d share a cache", j, r);
    int was = ctx->row_products;
    ctx->row_products = 1; /* each row's products summed as its own step sums them */
    tf_tensor *y = head(ctx, m, rows_hidden(ctx, m, caches, tokens, R));  // y: (R,1,V)
    ctx->row_products = was;
    if (!y) return -1;
    for (int r = 0; r < R; r++)
        if (tf_kv_cache_advance(caches[r], 1)) return -1;
    for (int r = 0; r < R; r++) {
        float *l = logits + (size_t)r * (size_t)V;
        memcpy(l, tf_f32(y) + (size_t)r * (size_t)out, (size_t)out * sizeof *l);
        for (int v = out; v < V; v++) l[v] = -INFINITY;
    }
    return 0;
}
