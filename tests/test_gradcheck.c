/* Every op of the op table, gradient-checked by central differences: the
 * analytic gradient of L = sum(out * R) (R random) against (L(x+e) - L(x-e)) / 2e,
 * with L accumulated in double and the forward re-run by replaying the tape. */
#include <stdlib.h>
#include <string.h>

#include "core/core_internal.h"
#include "test.h"

#define MAX_LEAVES 32

typedef struct {
    tf_tensor *leaf[MAX_LEAVES];
    int n;
    uint64_t seed;
} gc_state;

static gc_state G;

static tf_tensor *leaf(tf_ctx *ctx, int ndim, const int64_t *shape) {
    tf_tensor *t = tf_tensor_new(ctx, TF_DTYPE_F32, ndim, shape, 1);
    tf_tensor_fill_normal(t, ++G.seed * 7919, 1.0f);
    G.leaf[G.n++] = t;
    return t;
}
#define LEAF(ctx, ...) leaf(ctx, (int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)), (int64_t[]){__VA_ARGS__})

static tf_tensor *const_u8(tf_ctx *ctx, int ndim, const int64_t *shape, int every) {
    tf_tensor *t = tf_tensor_new(ctx, TF_DTYPE_U8, ndim, shape, 0);
    for (int64_t i = 0; i < tf_numel(t); i++) tf_u8(t)[i] = (uint8_t)(i % every == 1);
    return t;
}

static tf_tensor *ids(tf_ctx *ctx, int ndim, const int64_t *shape, int mod, int ignore) {
    tf_tensor *t = tf_tensor_new(ctx, TF_DTYPE_I32, ndim, shape, 0);
    for (int64_t i = 0; i < tf_numel(t); i++) tf_i32(t)[i] = (int32_t)((i * 7 + 3) % mod);
    if (ignore) tf_i32(t)[1] = -100;
    return t;
}

/* Each case builds one graph from leaves and returns its output. */
typedef tf_tensor *(*gc_case)(tf_ctx *ctx, int variant);

static tf_tensor *case_copy(tf_ctx *c, int v) {
    tf_tensor *x = LEAF(c, 3, 4, 5);
    x = tf_narrow(c, tf_transpose(c, x, 0, 2), 1, 1, 2 + v); /* (5,2+v,3), strided */
    return tf_contiguous(c, x);
}

static tf_tensor *case_matmul(tf_ctx *c, int v) {
    int ta = v & 1, tb = (v >> 1) & 1, shared_b = v >= 4;
    tf_tensor *a = ta ? LEAF(c, 2, 5, 3) : LEAF(c, 2, 3, 5);       /* op(a): (2,3,5) */
    tf_tensor *b = shared_b ? (tb ? LEAF(c, 7, 5) : LEAF(c, 5, 7))   /* op(b): (5,7) */
                            : (tb ? LEAF(c, 2, 7, 5) : LEAF(c, 2, 5, 7));
    return tf_matmul(c, a, b, ta, tb);
}

static tf_tensor *case_add(tf_ctx *c, int v) {
    if (v == 0) return tf_add(c, LEAF(c, 2, 1, 4), LEAF(c, 3, 1));
    tf_tensor *x = LEAF(c, 4, 3);
    return tf_add(c, tf_transpose(c, x, 0, 1), LEAF(c, 2, 3, 4)); /* strided operand */
}

static tf_tensor *case_mul(tf_ctx *c, int v) {
    if (v == 0) return tf_mul(c, LEAF(c, 2, 3, 4), LEAF(c, 4));
    if (v == 2) /* a (B,H,T,D) view of (B,T,H,D) times a per-head scale (1,H,1,1): the row fast path */
        return tf_mul(c, tf_transpose(c, LEAF(c, 2, 5, 3, 6), 1, 2), LEAF(c, 1, 3, 1, 1));
    tf_tensor *x = LEAF(c, 3, 5);
    return tf_mul(c, x, x); /* the same tensor on both sides */
}

static tf_tensor *case_scale(tf_ctx *c, int v) { return tf_scale(c, LEAF(c, 3, 4), v ? -0.5f : 2.5f); }
static tf_tensor *case_bias_add(tf_ctx *c, int v) { return tf_bias_add(c, LEAF(c, 2, 3, 5), LEAF(c, 5)); }

static tf_tensor *case_softmax(tf_ctx *c, int v) {
    tf_tensor *x = LEAF(c, 2, 3, 6);
    if (v == 0) return tf_softmax(c, x, NULL);
    if (v == 1) return tf_softmax(c, x, LEAF(c, 3, 6));   /* additive mask with a gradient */
    return tf_softmax(c, x, const_u8(c, 2, (int64_t[]){3, 6}, 3)); /* boolean, broadcast */
}

static tf_tensor *case_layernorm(tf_ctx *c, int v) {
    tf_tensor *x = LEAF(c, 4, 7);
    if (v == 0) return tf_layernorm(c, x, LEAF(c, 7), LEAF(c, 7), 1e-5f);
    return tf_layernorm(c, x, NULL, NULL, 1e-3f);
}

/* 0 with a weight, 1 without, 2 a strided input and eps large enough to matter. */
static tf_tensor *case_rmsnorm(tf_ctx *c, int v) {
    if (v == 0) return tf_rmsnorm(c, LEAF(c, 4, 7), LEAF(c, 7), 1e-5f);
    if (v == 1) return tf_rmsnorm(c, LEAF(c, 3, 6), NULL, 1e-5f);
    return tf_rmsnorm(c, tf_transpose(c, LEAF(c, 5, 4), 0, 1), LEAF(c, 5), 0.5f);
}

static tf_tensor *case_relu(tf_ctx *c, int v) {
    tf_tensor *x = LEAF(c, 5, 6);
    for (int i = 0; i < 30; i++) /* keep inputs away from the kink */
        if (fabsf(tf_f32(x)[i]) < 0.05f) tf_f32(x)[i] = 0.1f;
    return tf_relu(c, x);
}

static tf_tensor *case_gelu(tf_ctx *c, int v) { return tf_gelu(c, LEAF(c, 5, 6), v ? TF_GELU_TANH : TF_GELU_ERF); }
static tf_tensor *case_tanh(tf_ctx *c, int v) {
    tf_tensor *x = LEAF(c, 5, 6);
    if (v == 1) /* into the saturating tails, where 1 - tanh^2 is small */
        for (int i = 0; i < 30; i++) tf_f32(x)[i] *= 2.5f;
    return tf_tanh(c, x);
}

static tf_tensor *case_dropout(tf_ctx *c, int v) { return tf_dropout(c, LEAF(c, 6, 7), 0.3f); }

static tf_tensor *case_embedding(tf_ctx *c, int v) {
    return tf_embedding(c, LEAF(c, 5, 4), ids(c, 2, (int64_t[]){3, 4}, 5, 0)); /* repeated ids */
}

static tf_tensor *case_concat(tf_ctx *c, int v) {
    tf_tensor *xs[3] = {LEAF(c, 2, 1, 3), LEAF(c, 2, 4, 3), LEAF(c, 2, 2, 3)};
    if (v == 1) return tf_concat(c, 2, (tf_tensor *[]){LEAF(c, 3, 2), LEAF(c, 3, 5)}, -1);
    return tf_concat(c, 3, xs, 1);
}

static tf_tensor *case_sum(tf_ctx *c, int v) {
    tf_tensor *x = LEAF(c, 3, 4, 5);
    if (v == 0) return tf_sum(c, x, 1, 1);
    if (v == 1) return tf_mean(c, x, -1, 0);
    return tf_sum(c, x, TF_DIM_ALL, 0);
}

static tf_tensor *case_cross_entropy(tf_ctx *c, int v) {
    tf_tensor *logits = LEAF(c, 2, 3, 7);
    return tf_cross_entropy(c, logits, ids(c, 2, (int64_t[]){2, 3}, 7, v), -100, v ? 0.1f : 0.0f);
}

/* Soft targets: 0 mixup's (two smoothed one-hots mixed 0.3 : 0.7, rows summing to 1),
 * 1 any non-negative weights (rows summing to other than 1), strided logits. */
static tf_tensor *case_soft_cross_entropy(tf_ctx *c, int v) {
    tf_tensor *logits = v ? tf_transpose(c, LEAF(c, 7, 3), 0, 1) : LEAF(c, 2, 3, 7);
    tf_tensor *t = tf_tensor_new(c, TF_DTYPE_F32, logits->ndim, logits->shape, 0);
    int64_t rows = tf_numel(t) / 7;
    for (int64_t r = 0; r < rows; r++)
        for (int k = 0; k < 7; k++)
            tf_f32(t)[r * 7 + k] = v ? (float)((r * 5 + k * 3) % 4) * 0.25f
                                     : 0.1f / 7 + 0.3f * 0.9f * (k == r % 7) + 0.7f * 0.9f * (k == (r * 3 + 2) % 7);
    return tf_soft_cross_entropy(c, logits, t);
}

static tf_tensor *case_sdpa(tf_ctx *c, int v) {
    tf_tensor *q = LEAF(c, 2, 3, 4, 5), *k = LEAF(c, 2, 3, 6, 5), *vv = LEAF(c, 2, 3, 6, 7);
    float s = 1.0f / sqrtf(5.0f);
    if (v == 0) return tf_sdpa(c, q, k, vv, NULL, 1, s);
    if (v == 1) return tf_sdpa(c, q, k, vv, LEAF(c, 2, 1, 4, 6), 0, s); /* additive, per batch */
    if (v == 3) { /* a fused projection's heads read in place (rows 45 apart), the output heads-last */
        tf_tensor *x = LEAF(c, 2, 6, 9, 5), *in[3];  /* (B,T,3H,D) */
        for (int i = 0; i < 3; i++) in[i] = tf_transpose(c, tf_narrow(c, x, 2, i * 3, 3), 1, 2);  // (B,H,T,D)
        return tf_sdpa_heads_last(c, in[0], in[1], in[2], NULL, 1, s);                          // (B,T,H,D)
    }
    return tf_sdpa(c, q, k, vv, const_u8(c, 2, (int64_t[]){4, 6}, 4), 1, s);
}

static tf_tensor *case_sparse_attention(tf_ctx *c, int v) {
    static const int g[] = {1, 5};
    static const int32_t table[] = {3, 0, 2, 3, 0, 0, 1, 1};  /* (heads 2, blocks - 2 = 2, random 2): repeats */
    if (v == 4) {  /* Hugging Face's BigBird layout: 4 blocks of 2, a table per head, padded keys and queries */
        tf_sparse_pattern h = {.block = 2, .window = -1, .dilation = 1, .random = 2, .itc = 1, .itc_random = table,
                               .itc_heads = 2};
        return tf_sparse_attention(c, LEAF(c, 2, 2, 8, 3), LEAF(c, 2, 2, 8, 3), LEAF(c, 2, 2, 8, 4),
                                   const_u8(c, 2, (int64_t[]){2, 8}, 6), &h, 0.6f);
    }
    tf_tensor *q = LEAF(c, 2, 2, v == 3 ? 3 : 7, 3), *k = LEAF(c, 2, 2, 7, 3), *vv = LEAF(c, 2, 2, 7, 4);
    tf_sparse_pattern p = {.block = 2, .window = 1, .dilation = 1, .seed = 3};
    if (v == 0) p.random = 1, p.global = g, p.n_global = 1, p.global_first = 1;  /* BigBird, key padding */
    if (v == 1) p.causal = 1, p.dilation = 2, p.window = 2;  /* dilated, causal */
    if (v == 2) p.causal = 1, p.window = -1, p.global = g, p.n_global = 2;  /* global only, key padding */
    if (v == 3) p.causal = 1, p.random = 1, p.global_first = 1;  /* queries continuing a cache: positions 4..6 */
    return tf_sparse_attention(c, q, k, vv, v == 1 ? NULL : const_u8(c, 2, (int64_t[]){2, 7}, 5), &p, 0.6f);
}

/* Composite graphs: views, split and the attention layer, through the same check. */
static tf_tensor *case_split(tf_ctx *c, int v) {
    tf_tensor *outs[3], *x = LEAF(c, 3, 9);
    if (tf_split(c, x, 1, 3, (int64_t[]){2, 3, 4}, outs)) return NULL;
    return tf_mul(c, outs[1], tf_sum(c, outs[2], 1, 1));
}

/* Layers: every parameter of the registry becomes a checked leaf. */
static tf_params *G_params;

static void params_as_leaves(tf_params *ps) {
    tf_params_init(ps, 5);
    for (int i = 0; i < tf_params_count(ps) && G.n < MAX_LEAVES; i++) {
        tf_tensor *t = tf_params_tensor(ps, i);
        tf_tensor_fill_normal(t, 77 + (uint64_t)i, 0.5f); /* biases and norms too */
        G.leaf[G.n++] = t;
    }
}

static tf_tensor *case_mha(tf_ctx *c, int v) {
    tf_mha_config cfg = tf_mha_config_default(6, 2);
    if (v == 1) cfg.kdim = 4, cfg.vdim = 5;
    cfg.rel_max_offset = v == 2 ? 2 : 0;
    static tf_mha m;
    G_params = tf_params_new();
    tf_mha_register(G_params, "", &m, &cfg);
    tf_tensor *q = LEAF(c, 2, 3, 6), *k = LEAF(c, 2, 4, cfg.kdim), *val = LEAF(c, 2, 4, cfg.vdim);
    params_as_leaves(G_params);
    tf_attn_mask am = {0};
    am.causal = v != 1;
    tf_tensor *w = NULL;
    tf_tensor *kpm = tf_tensor_new(c, TF_DTYPE_U8, 2, (int64_t[]){2, 4}, 0);
    tf_u8(kpm)[3] = 1;
    am.key_padding_mask = kpm;
    tf_tensor *y = tf_mha_forward(c, &m, q, k, val, &am, v == 1 ? &w : NULL);
    return v == 1 ? tf_add(c, y, tf_sum(c, w, 2, 1)) : y;
}

/* GPT-2's block (Conv1D weights (in,out), fused q/k/v, causal, pre-LN),
 * BERT's (q, k, v apart with their own biases, post-LN) and ImageGPT's
 * (GPT-2's names, RMS norms without bias, quick_gelu), by name maps. */
static const tf_block_name GPT2_ROWS[] = {
    {TF_BP_NORM_ATTN_W, "ln_1.weight"}, {TF_BP_NORM_ATTN_B, "ln_1.bias"}, {TF_BP_QKV_W, "attn.c_attn.weight"},
    {TF_BP_QKV_B, "attn.c_attn.bias"},  {TF_BP_OUT_W, "attn.c_proj.weight"}, {TF_BP_OUT_B, "attn.c_proj.bias"},
    {TF_BP_NORM_FF_W, "ln_2.weight"},   {TF_BP_NORM_FF_B, "ln_2.bias"},     {TF_BP_FF_IN_W, "mlp.c_fc.weight"},
    {TF_BP_FF_IN_B, "mlp.c_fc.bias"},   {TF_BP_FF_OUT_W, "mlp.c_proj.weight"}, {TF_BP_FF_OUT_B, "mlp.c_proj.bias"}};
static const tf_block_name BERT_ROWS[] = {
    {TF_BP_Q_W, "q.weight"},       {TF_BP_Q_B, "q.bias"},       {TF_BP_K_W, "k.weight"},      {TF_BP_K_B, "k.bias"},
    {TF_BP_V_W, "v.weight"},       {TF_BP_V_B, "v.bias"},       {TF_BP_OUT_W, "o.weight"},    {TF_BP_OUT_B, "o.bias"},
    {TF_BP_NORM_ATTN_W, "n1.weight"}, {TF_BP_NORM_ATTN_B, "n1.bias"}, {TF_BP_FF_IN_W, "i.weight"}, {TF_BP_FF_IN_B, "i.bias"},
    {TF_BP_FF_OUT_W, "f.weight"},  {TF_BP_FF_OUT_B, "f.bias"},  {TF_BP_NORM_FF_W, "n2.weight"}, {TF_BP_NORM_FF_B, "n2.bias"}};

static tf_tensor *case_layer(tf_ctx *c, int v) {
    tf_block_config cfg = tf_block_config_default(6, 3);
    cfg.d_ff = 7;
    cfg.norm_first = v & 1;
    cfg.activation = v & 1 ? TF_ACT_GELU : TF_ACT_RELU;
    cfg.dropout = 0.2f; /* the context trains: dropout masks are replayed exactly */
    static tf_block layer;
    G_params = tf_params_new();
    tf_tensor *x = LEAF(c, 2, 3, 6), *mem = v == 2 || v == 3 ? LEAF(c, 2, 4, 6) : NULL;
    if (v < 2) tf_encoder_layer_register(G_params, "", &layer, &cfg);
    else if (v < 4) tf_decoder_layer_register(G_params, "", &layer, &cfg);
    else { /* the family blocks: attention dropout apart, no dropout after the activation */
        int gpt = v != 5;
        cfg.attn_dropout = 0.1f, cfg.activation_dropout = 0, cfg.activation = v == 4 ? TF_ACT_GELU_TANH : TF_ACT_GELU;
        cfg.w_in_out = gpt, cfg.self_attn.kind = gpt ? TF_ATTN_CAUSAL : TF_ATTN_FULL, cfg.norm_first = gpt;
        if (v == 6) cfg.norm = TF_NORM_RMS, cfg.activation = TF_ACT_QUICK_GELU;
        tf_block_names n = {gpt ? GPT2_ROWS : BERT_ROWS, gpt ? 12 : 16};
        tf_block_register(G_params, "", &layer, &cfg, &n, (tf_block_init){0.3f, 0.2f, 0});
    }
    params_as_leaves(G_params);
    tf_attn_mask self = {.causal = v < 4}, cross = {0};
    tf_block_args a = {.memory = mem, .self_mask = &self, .cross_mask = &cross};
    return tf_block_forward(c, &layer, &cfg, x, &a);
}

/* The continual encoder's batch mode (docs/continual.md): 0 two post-LN
 * blocks, learned recycled positions (the window starts at position 3 of 4:
 * they wrap), a class token, the last block single-output; 1 three pre-LN
 * blocks, sinusoidal positions, no class token. */
static tf_tensor *case_continual(tf_ctx *c, int v) {
    tf_continual_config cfg;
    tf_fields f = {tf_continual_config_fields(), &cfg};
    tf_fields_defaults(&f, 1);
    cfg.d_model = 8, cfg.n_head = 2, cfg.d_ff = 5, cfg.window = 3, cfg.pos_len = 4, cfg.n_layer = 2 + v;
    cfg.activation = TF_ACT_GELU; /* smooth: central differences across a ReLU kink are not the gradient */
    cfg.norm_first = v, cfg.cls_token = !v, cfg.pos = v ? TF_POS_SINUSOIDAL : TF_POS_LEARNED;
    tf_continual e;
    G_params = tf_params_new();
    tf_tensor *x = LEAF(c, 2, 3, 8);
    if (tf_continual_register(G_params, "", &e, &cfg)) return tf_continual_free(&e), NULL;
    params_as_leaves(G_params);
    for (int i = 0; i < tf_params_count(G_params); i++) /* LayerNorm gains near 1, as trained ones are */
        if (strstr(tf_params_name(G_params, i), "norm") && strstr(tf_params_name(G_params, i), "weight"))
            for (int64_t j = 0; j < tf_numel(tf_params_tensor(G_params, i)); j++) tf_f32(tf_params_tensor(G_params, i))[j] += 1.0f;
    tf_tensor *y = tf_continual_forward(c, &e, x, 3);
    tf_continual_free(&e); /* the tape holds the parameters (G_params), not the layer array */
    return y;
}

/* A Nyström block (BERT's rows and the convolution on v), post-LN, 2 heads
 * of 3: 0 six positions through 3 landmarks, the convolution of 3 taps and
 * row 1's last two keys padding; 1 the exact branch (landmarks 0) with 5
 * taps; 2 two landmarks without the convolution, batch 3. */
static tf_tensor *case_nystrom(tf_ctx *c, int v) {
    static const int64_t T[3] = {6, 4, 6}, B[3] = {2, 2, 3};
    static const int landmarks[3] = {3, 0, 2}, kernel[3] = {3, 5, 0};
    tf_block_name rows[17];
    memcpy(rows, BERT_ROWS, sizeof BERT_ROWS);
    rows[16] = (tf_block_name){TF_BP_CONV_W, "conv.weight"};
    tf_block_config cfg = tf_block_config_default(6, 2);
    cfg.d_ff = 5, cfg.activation = TF_ACT_GELU, cfg.self_attn.kind = TF_ATTN_NYSTROM;
    cfg.self_attn.landmarks = landmarks[v], cfg.self_attn.conv_kernel = kernel[v];
    static tf_block layer;
    G_params = tf_params_new();
    tf_tensor *x = LEAF(c, B[v], T[v], 6);
    if (tf_block_register(G_params, "", &layer, &cfg, &(tf_block_names){rows, 17}, (tf_block_init){0.3f, 0.2f, 0}))
        return NULL;
    params_as_leaves(G_params);
    tf_attn_mask self = {0};
    if (v == 0) {
        self.key_padding_mask = tf_tensor_new(c, TF_DTYPE_U8, 2, (int64_t[]){B[v], T[v]}, 0);
        tf_u8(self.key_padding_mask)[T[v] + 4] = tf_u8(self.key_padding_mask)[T[v] + 5] = 1;
    }
    tf_block_args a = {.self_mask = &self};
    return tf_block_forward(c, &layer, &cfg, x, &a);
}

/* The output heads (heads.h), every parameter a leaf: 0 tied LM head (GPT's
 * product), 1 own weight with bias, 2 MLM head tied (erf GELU), 3 MLM head own
 * decoder (tanh GELU) on gathered rows, 4 pooler, 5 sequence and 6 token
 * classifier with dropout, 7 span head (start and end side by side). */
static const tf_op HEAD_OPS[8] = {TF_OP_MATMUL, TF_OP_DENSE, TF_OP_LAYERNORM, TF_OP_LAYERNORM,
                                  TF_OP_TANH,   TF_OP_DROPOUT, TF_OP_DROPOUT, TF_OP_COPY};

static tf_tensor *case_heads(tf_ctx *c, int v) {
    static tf_tensor *table;
    static tf_lm_head lm;
    static tf_mlm_head mlm;
    static tf_pooler pool;
    static tf_classifier cls;
    static tf_span_head span;
    tf_mlm_head_names names = {"t.dense", "t.LayerNorm", v == 3 ? "decoder.weight" : NULL, "bias"};
    tf_mlm_head_config mc = {6, 7, v == 3 ? TF_ACT_GELU_TANH : TF_ACT_GELU, 1e-5f, TF_INIT_STD};
    G_params = tf_params_new();
    tf_tensor *x = v == 3 ? LEAF(c, 5, 6) : v == 5 ? LEAF(c, 3, 6) : LEAF(c, 2, 3, 6);
    int rc = v == 1 || v == 3 ? 0 : tf_params_add(G_params, "emb", &table, 2, (int64_t[]){7, 6}, 0.02f);
    if (v <= 1) rc |= tf_lm_head_register(G_params, v ? "w" : NULL, v ? "b" : NULL, &lm, v ? NULL : &table, 6, 7, 0.02f);
    if (v == 2 || v == 3) rc |= tf_mlm_head_register(G_params, &names, &mlm, &mc, v == 3 ? NULL : &table);
    if (v == 4) rc |= tf_pooler_register(G_params, "pool", &pool, 6, 0.02f);
    if (v == 5 || v == 6) rc |= tf_classifier_register(G_params, "cls", &cls, 6, 4, 0.3f, 0.02f);
    if (v == 7) rc |= tf_span_head_register(G_params, "qa", &span, 6, 0.02f);
    if (rc) return NULL;
    params_as_leaves(G_params);
    tf_tensor *se[2] = {NULL, NULL};
    switch (v) {
    case 0: case 1: return tf_lm_head_forward(c, &lm, x);
    case 2: case 3: return tf_mlm_head_forward(c, &mlm, x);
    case 4: return tf_pooler_forward(c, &pool, x);
    case 5: return tf_classifier_seq_forward(c, &cls, x);
    case 6: return tf_classifier_token_forward(c, &cls, x);
    default: return tf_span_head_forward(c, &span, x, &se[0], &se[1]) ? NULL : tf_concat(c, 2, se, 0);
    }
}

/* act(x W^T + b): no activation with and without bias, each activation, and
 * Hugging Face's (in,out) weight layout. */
static tf_tensor *case_dense(tf_ctx *c, int v) {
    static const int acts[8] = {TF_ACT_NONE, TF_ACT_NONE,      TF_ACT_GELU_TANH, TF_ACT_GELU,
                                TF_ACT_RELU, TF_ACT_GELU_TANH, TF_ACT_SILU,      TF_ACT_QUICK_GELU};
    tf_tensor *x = LEAF(c, 2, 3, 5), *w = v == 5 ? LEAF(c, 5, 7) : LEAF(c, 7, 5), *b = v == 1 ? NULL : LEAF(c, 7);
    if (v == 4) /* keep relu's inputs away from the kink: a bias far from zero */
        for (int i = 0; i < 7; i++) tf_f32(b)[i] = i % 2 ? 4.0f : -4.0f;
    return tf_dense(c, x, w, v == 5, b, acts[v]);
}

/* The recurrent cells (B 3, I 4, H 5): 0 with biases, 1 without, 2 a padded
 * row (its state passes through), 3 three steps through time from one
 * initial state with shared weights, the last step padding row 1. */
static tf_tensor *rnn_weight(tf_ctx *c, int64_t rows, int64_t cols) {
    tf_tensor *w = cols ? LEAF(c, rows, cols) : LEAF(c, rows);
    for (int64_t i = 0; i < tf_numel(w); i++) tf_f32(w)[i] *= 0.4f; /* gates away from saturation */
    return w;
}

static tf_tensor *rnn_pad(tf_ctx *c, int v, int step, int steps) {
    if (v < 2 || step != steps - 1) return NULL;
    tf_tensor *pad = tf_tensor_new(c, TF_DTYPE_U8, 1, (int64_t[]){3}, 0);
    tf_u8(pad)[1] = 1;
    return pad;
}

static tf_tensor *case_gru_cell(tf_ctx *c, int v) {
    int steps = v == 3 ? 3 : 1;
    tf_tensor *h = LEAF(c, 3, 5), *wi = rnn_weight(c, 15, 4), *wh = rnn_weight(c, 15, 5);
    tf_tensor *bi = v == 1 ? NULL : rnn_weight(c, 15, 0), *bh = v == 1 ? NULL : rnn_weight(c, 15, 0);
    for (int t = 0; t < steps; t++) h = tf_gru_cell_masked(c, LEAF(c, 3, 4), h, wi, wh, bi, bh, rnn_pad(c, v, t, steps));
    return h;
}

static tf_tensor *case_lstm_cell(tf_ctx *c, int v) {
    int steps = v == 3 ? 3 : 1;
    tf_tensor *h = LEAF(c, 3, 5), *cs = LEAF(c, 3, 5), *wi = rnn_weight(c, 20, 4), *wh = rnn_weight(c, 20, 5);
    tf_tensor *bi = v == 1 ? NULL : rnn_weight(c, 20, 0), *bh = v == 1 ? NULL : rnn_weight(c, 20, 0), *hc = NULL;
    for (int t = 0; t < steps; t++) {
        hc = tf_lstm_cell_masked(c, LEAF(c, 3, 4), h, cs, wi, wh, bi, bh, rnn_pad(c, v, t, steps));
        h = tf_lstm_cell_h(c, hc), cs = tf_lstm_cell_c(c, hc);
    }
    return hc;
}

/* Patch embedding: 0 a bias and leftover rows / columns (5x7 in 2x2
 * patches), 1 no bias and 3x3 patches, 2 1x1 patches of a strided input;
 * tubelets: 3 2x2x3 tubes of (2,5,2,5,7) with a leftover frame, row and
 * column, 4 1x1x2 tubes without bias (one frame each). */
static tf_tensor *case_patch_embed(tf_ctx *c, int v) {
    if (v == 0) return tf_patch_embed(c, LEAF(c, 2, 3, 5, 7), LEAF(c, 4, 3, 2, 2), LEAF(c, 4));
    if (v == 1) return tf_patch_embed(c, LEAF(c, 1, 2, 6, 6), LEAF(c, 5, 2, 3, 3), NULL);
    tf_tensor *x = tf_transpose(c, LEAF(c, 2, 3, 4, 3), 1, 2);  // (2,4,3,3), strided
    if (v == 2) return tf_patch_embed(c, x, LEAF(c, 3, 4, 1, 1), LEAF(c, 3));
    if (v == 3) return tf_patch_embed(c, LEAF(c, 2, 5, 2, 5, 7), LEAF(c, 3, 2, 2, 2, 3), LEAF(c, 3));
    return tf_patch_embed(c, LEAF(c, 1, 3, 1, 2, 4), LEAF(c, 2, 1, 1, 1, 2), NULL);
}

/* max: over a dim kept, over every element (inputs spread apart: no two
 * within eps of each other, where the maximum would switch). */
static tf_tensor *case_max(tf_ctx *c, int v) {
    tf_tensor *x = LEAF(c, 3, 4, 5);
    for (int64_t i = 0; i < 60; i++) tf_f32(x)[i] = (float)((i * 37) % 60) * 0.05f - 1.5f;
    if (v == 0) return tf_max(c, x, 1, 1);
    if (v == 1) return tf_max(c, x, -1, 0);
    return tf_max(c, x, TF_DIM_ALL, 0);
}

static tf_tensor *case_reciprocal(tf_ctx *c, int v) {
    tf_tensor *x = LEAF(c, 4, 5);
    for (int i = 0; i < 20; i++) tf_f32(x)[i] += tf_f32(x)[i] < 0 ? -0.5f : 0.5f; /* away from 0 */
    return tf_reciprocal(c, v ? tf_transpose(c, x, 0, 1) : x);
}

/* Depthwise convolution: 0 three taps, 1 five taps over three positions of a
 * strided input (taps past both ends), 2 one tap. */
static tf_tensor *case_depthwise_conv(tf_ctx *c, int v) {
    if (v == 0) return tf_depthwise_conv(c, LEAF(c, 2, 3, 6, 4), LEAF(c, 3, 3));
    if (v == 1) return tf_depthwise_conv(c, tf_transpose(c, LEAF(c, 2, 3, 2, 4), 1, 2), LEAF(c, 2, 5));
    return tf_depthwise_conv(c, LEAF(c, 1, 2, 4, 3), LEAF(c, 2, 1));
}

/* 2-D convolution: 0 3x3 stride 2 padding 1 with a bias on odd sizes (7x5),
 * 1 3x3 stride 1 padding 0 without bias, 2 2x2 stride 2 padding 1 of a
 * strided input (a leftover row), 3 1x1 stride 1 with a bias. */
static tf_tensor *case_conv2d(tf_ctx *c, int v) {
    if (v == 0) return tf_conv2d(c, LEAF(c, 2, 3, 7, 5), LEAF(c, 4, 3, 3, 3), LEAF(c, 4), 2, 1);
    if (v == 1) return tf_conv2d(c, LEAF(c, 1, 2, 5, 6), LEAF(c, 3, 2, 3, 3), NULL, 1, 0);
    if (v == 2) return tf_conv2d(c, tf_transpose(c, LEAF(c, 2, 5, 3, 4), 1, 2), LEAF(c, 2, 3, 2, 2), NULL, 2, 1);
    return tf_conv2d(c, LEAF(c, 2, 3, 3, 3), LEAF(c, 5, 3, 1, 1), LEAF(c, 5), 1, 0);
}

/* Both pairings, a transposed (B,H,T,D) view of (B,T,H,D) as attention makes it, a start past 0. */
static tf_tensor *case_rope(tf_ctx *c, int v) {
    if (v == 0) return tf_rope(c, LEAF(c, 2, 3, 5, 8), 0, 10000.0f, TF_ROPE_HALVES);
    if (v == 1) return tf_rope(c, tf_transpose(c, LEAF(c, 2, 5, 3, 6), 1, 2), 7, 100.0f, TF_ROPE_INTERLEAVED);
    return tf_rope(c, LEAF(c, 6, 4), 3, 10.0f, TF_ROPE_HALVES);
}

typedef struct {
    tf_op op;
    int variants;
    gc_case fn;
} gc_entry;

static const gc_entry CASES[TF_OP_COUNT] = {
    [TF_OP_COPY] = {TF_OP_COPY, 2, case_copy},
    [TF_OP_MATMUL] = {TF_OP_MATMUL, 8, case_matmul},
    [TF_OP_ADD] = {TF_OP_ADD, 2, case_add},
    [TF_OP_MUL] = {TF_OP_MUL, 3, case_mul},
    [TF_OP_SCALE] = {TF_OP_SCALE, 2, case_scale},
    [TF_OP_BIAS_ADD] = {TF_OP_BIAS_ADD, 1, case_bias_add},
    [TF_OP_SOFTMAX] = {TF_OP_SOFTMAX, 3, case_softmax},
    [TF_OP_LAYERNORM] = {TF_OP_LAYERNORM, 2, case_layernorm},
    [TF_OP_RELU] = {TF_OP_RELU, 1, case_relu},
    [TF_OP_GELU] = {TF_OP_GELU, 2, case_gelu},
    [TF_OP_DROPOUT] = {TF_OP_DROPOUT, 1, case_dropout},
    [TF_OP_EMBEDDING] = {TF_OP_EMBEDDING, 1, case_embedding},
    [TF_OP_CONCAT] = {TF_OP_CONCAT, 2, case_concat},
    [TF_OP_SUM] = {TF_OP_SUM, 3, case_sum},
    [TF_OP_CROSS_ENTROPY] = {TF_OP_CROSS_ENTROPY, 2, case_cross_entropy},
    [TF_OP_SDPA] = {TF_OP_SDPA, 4, case_sdpa},
    [TF_OP_DENSE] = {TF_OP_DENSE, 8, case_dense},
    [TF_OP_TANH] = {TF_OP_TANH, 2, case_tanh},
    [TF_OP_GRU_CELL] = {TF_OP_GRU_CELL, 4, case_gru_cell},
    [TF_OP_LSTM_CELL] = {TF_OP_LSTM_CELL, 4, case_lstm_cell},
    [TF_OP_PATCH_EMBED] = {TF_OP_PATCH_EMBED, 5, case_patch_embed},
    [TF_OP_MAX] = {TF_OP_MAX, 3, case_max},
    [TF_OP_RECIPROCAL] = {TF_OP_RECIPROCAL, 2, case_reciprocal},
    [TF_OP_DEPTHWISE_CONV] = {TF_OP_DEPTHWISE_CONV, 3, case_depthwise_conv},
    [TF_OP_SOFT_CROSS_ENTROPY] = {TF_OP_SOFT_CROSS_ENTROPY, 2, case_soft_cross_entropy},
    [TF_OP_SPARSE_ATTENTION] = {TF_OP_SPARSE_ATTENTION, 5, case_sparse_attention},
    [TF_OP_RMSNORM] = {TF_OP_RMSNORM, 3, case_rmsnorm},
    [TF_OP_CONV2D] = {TF_OP_CONV2D, 4, case_conv2d},
    [TF_OP_ROPE] = {TF_OP_ROPE, 3, case_rope},
};

static double weighted_sum(const tf_tensor *out, const float *R) {
    double L = 0.0;
    for (int64_t i = 0; i < tf_numel(out); i++) L += (double)tf_f32(out)[i] * R[i];
    return L;
}

/* Returns the worst relative L2 error over the leaves, or -1 on failure. */
static double gradcheck(gc_case fn, int variant, tf_op expect_op) {
    memset(&G, 0, sizeof G);
    G.seed = (uint64_t)variant * 101 + 1;
    tf_ctx *c = tf_ctx_new(99);
    tf_ctx_set_training(c, 1);
    tf_tensor *out = fn(c, variant);
    double worst = -1;
    if (!out) goto done;
    int found = (int)expect_op < 0;
    for (tf_node *n = c->tape; n; n = n->prev) found |= n->op == expect_op;
    if (!found) {
        tf_set_error("the case never records op %s", tf_op_name(expect_op));
        goto done;
    }
    tf_tensor *R = tf_tensor_new(c, TF_DTYPE_F32, out->ndim, out->shape, 0);
    tf_tensor_fill_normal(R, 12345, 1.0f);
    if (tf_backward(c, out, R)) goto done;
    worst = 0;
    const float eps = 4e-3f;
    double diff[MAX_LEAVES] = {0}, norm[MAX_LEAVES] = {0}, scale = 0;
    for (int l = 0; l < G.n; l++) {
        tf_tensor *x = G.leaf[l];
        int64_t n = tf_numel(x);
        float *num = calloc((size_t)n, sizeof *num);
        for (int64_t i = 0; i < n; i++) {
            float keep = tf_f32(x)[i];
            tf_f32(x)[i] = keep + eps;
            tf_tape_replay(c);
            double lp = weighted_sum(out, tf_f32(R));
            tf_f32(x)[i] = keep - eps;
            tf_tape_replay(c);
            double lm = weighted_sum(out, tf_f32(R));
            tf_f32(x)[i] = keep;
            num[i] = (float)((lp - lm) / (2.0 * eps));
        }
        for (int64_t i = 0; i < n; i++) {
            double d = (double)x->grad[i] - num[i];
            diff[l] += d * d, norm[l] += (double)num[i] * num[i];
        }
        free(num);
        scale = norm[l] > scale ? norm[l] : scale;
    }
    /* relative to the leaf's own gradient; a leaf whose gradient is zero in
     * exact arithmetic (a key bias: softmax ignores a shift of every score)
     * against the largest leaf's instead */
    for (int l = 0; l < G.n; l++) {
        double e = sqrt(diff[l] / (norm[l] >= 1e-8 * scale ? norm[l] : scale));
        if (getenv("GC_VERBOSE")) fprintf(stderr, "      leaf %d: %.3g%s\n", l, e, norm[l] < 1e-8 * scale ? " (zero gradient)" : "");
        if (e != e) e = INFINITY;
        if (e > worst) worst = e;
    }
done:
    tf_ctx_free(c);
    return worst;
}

/* Float32 forward, double loss, eps 4e-3: the worst case measured is 3.1e-4
 * (soft_cross_entropy; 2.1e-4 cross_entropy); a wrong gradient gives errors of order 1. GC_VERBOSE=1
 * prints every error. */
#define GC_TOL 1e-3

TEST(gradcheck_every_op) {
    for (int op = 0; op < TF_OP_COUNT; op++) {
        const gc_entry *e = &CASES[op];
        CHECKF(e->fn != NULL, "op %s has no gradient-check case", tf_op_name((tf_op)op));
        for (int v = 0; v < e->variants; v++) {
            double err = gradcheck(e->fn, v, (tf_op)op);
            if (getenv("GC_VERBOSE")) fprintf(stderr, "    %s/%d: %.3g\n", tf_op_name((tf_op)op), v, err);
            CHECKF(err >= 0 && err <= GC_TOL, "op %s variant %d: relative gradient error %g (%s)",
                   tf_op_name((tf_op)op), v, err, tf_error());
        }
    }
}

TEST(gradcheck_split) {
    double err = gradcheck(case_split, 0, TF_OP_COPY);
    CHECKF(err >= 0 && err <= GC_TOL, "split: relative gradient error %g (%s)", err, tf_error());
}

/* Drop path (a mul by per-sample constants) inside a residual, as the block uses it. */
static tf_tensor *case_drop_path(tf_ctx *c, int v) {
    tf_tensor *x = LEAF(c, 6, 3, 4);
    return tf_add(c, x, tf_drop_path(c, tf_gelu(c, x, TF_GELU_ERF), 0.5f));
}

TEST(gradcheck_drop_path) {
    double err = gradcheck(case_drop_path, 0, TF_OP_MUL);
    CHECKF(err >= 0 && err <= GC_TOL, "drop_path: relative gradient error %g (%s)", err, tf_error());
}

TEST(gradcheck_catches_a_wrong_gradient) {
    /* The check itself must be able to fail: corrupt one gradient element. */
    memset(&G, 0, sizeof G);
    tf_ctx *c = tf_ctx_new(1);
    tf_tensor *x = LEAF(c, 3, 4);
    tf_tensor *y = tf_gelu(c, x, TF_GELU_ERF);
    CHECK(tf_backward(c, y, NULL) == 0);
    float analytic = x->grad[5];
    x->grad[5] += 0.5f;
    float keep = tf_f32(x)[5];
    tf_f32(x)[5] = keep + 1e-3f;
    tf_tape_replay(c);
    double lp = 0;
    for (int i = 0; i < 12; i++) lp += tf_f32(y)[i];
    tf_f32(x)[5] = keep - 1e-3f;
    tf_tape_replay(c);
    double lm = 0;
    for (int i = 0; i < 12; i++) lm += tf_f32(y)[i];
    double num = (lp - lm) / 2e-3;
    CHECKF(fabs(num - analytic) < 1e-3, "numeric %g vs analytic %g", num, analytic);
    CHECK(fabs(num - x->grad[5]) > 0.4);
    tf_ctx_free(c);
}

TEST(gradcheck_layers) {
    for (int v = 0; v < 3; v++) {
        double err = gradcheck(case_mha, v, TF_OP_DENSE);
        if (getenv("GC_VERBOSE")) fprintf(stderr, "    attention/%d: %.3g over %d leaves\n", v, err, G.n);
        tf_params_free(G_params);
        CHECKF(err >= 0 && err <= GC_TOL, "attention variant %d: relative gradient error %g (%s)", v, err, tf_error());
    }
    for (int v = 0; v < 2; v++) {
        double err = gradcheck(case_continual, v, TF_OP_SDPA);
        if (getenv("GC_VERBOSE")) fprintf(stderr, "    continual/%d: %.3g over %d leaves\n", v, err, G.n);
        tf_params_free(G_params);
        CHECKF(err >= 0 && err <= GC_TOL, "continual variant %d: relative gradient error %g (%s)", v, err, tf_error());
    }
    for (int v = 0; v < 3; v++) {
        double err = gradcheck(case_nystrom, v, v == 1 ? TF_OP_SDPA : TF_OP_RECIPROCAL);
        if (getenv("GC_VERBOSE")) fprintf(stderr, "    nystrom/%d: %.3g over %d leaves\n", v, err, G.n);
        tf_params_free(G_params);
        CHECKF(err >= 0 && err <= GC_TOL, "nystrom variant %d: relative gradient error %g (%s)", v, err, tf_error());
    }
    for (int v = 0; v < 7; v++) {
        double err = gradcheck(case_layer, v, v == 6 ? TF_OP_RMSNORM : TF_OP_DROPOUT);
        if (getenv("GC_VERBOSE")) fprintf(stderr, "    layer/%d: %.3g over %d leaves\n", v, err, G.n);
        tf_params_free(G_params);
        CHECKF(err >= 0 && err <= GC_TOL, "layer variant %d: relative gradient error %g (%s)", v, err, tf_error());
    }
}

TEST(gradcheck_heads) {
    for (int v = 0; v < 8; v++) {
        double err = gradcheck(case_heads, v, HEAD_OPS[v]);
        if (getenv("GC_VERBOSE")) fprintf(stderr, "    heads/%d: %.3g over %d leaves\n", v, err, G.n);
        tf_params_free(G_params);
        CHECKF(err >= 0 && err <= GC_TOL, "heads variant %d: relative gradient error %g (%s)", v, err, tf_error());
    }
}

/* The RNN baseline's layers over a padded batch (row 1 has 2 of 4 tokens):
 * a bidirectional GRU (0) or LSTM (1) encoder, outputs and final states;
 * Bahdanau attention (2) from a decoder state over encoder outputs with the
 * same padding, the context and the weights alpha side by side. */
static tf_tensor *case_rnn(tf_ctx *c, int v) {
    static tf_birnn enc;
    static tf_additive_attn att;
    G_params = tf_params_new();
    tf_tensor *x = v < 2 ? LEAF(c, 2, 4, 3) : LEAF(c, 2, 4, 8), *s = v == 2 ? LEAF(c, 2, 5) : NULL, *alpha = NULL;
    if (v < 2 ? tf_birnn_register(G_params, "enc.", 0, &enc, v ? TF_RNN_LSTM : TF_RNN_GRU, 3, 4, 1)
              : tf_additive_attn_register(G_params, "attn.", &att, 5, 8, 6, 1, 0.3f))
        return NULL;
    params_as_leaves(G_params);
    tf_tensor *pad = tf_tensor_new(c, TF_DTYPE_U8, 2, (int64_t[]){2, 4}, 0);
    tf_u8(pad)[6] = tf_u8(pad)[7] = 1;
    if (v == 2) {
        tf_tensor *ctxv = tf_additive_attn_forward(c, &att, s, x, NULL, pad, &alpha);
        return ctxv && alpha ? tf_concat(c, 2, (tf_tensor *[]){ctxv, alpha}, 1) : NULL;  // (2,8+4)
    }
    tf_rnn_state fin[2];
    tf_tensor *h = tf_birnn_forward(c, &enc, x, pad, fin);  // (2,4,8)
    if (!h) return NULL;
    tf_tensor *parts[5] = {tf_reshape(c, h, 2, (int64_t[]){2, 32}), fin[0].h, fin[1].h, fin[0].c, fin[1].c};
    return tf_concat(c, v ? 5 : 3, parts, 1);  // (2,32+8) or (2,32+16)
}

TEST(gradcheck_rnn) {
    for (int v = 0; v < 3; v++) {
        double err = gradcheck(case_rnn, v, v == 1 ? TF_OP_LSTM_CELL : v ? TF_OP_SOFTMAX : TF_OP_GRU_CELL);
        if (getenv("GC_VERBOSE")) fprintf(stderr, "    rnn/%d: %.3g over %d leaves\n", v, err, G.n);
        tf_params_free(G_params);
        CHECKF(err >= 0 && err <= GC_TOL, "rnn variant %d: relative gradient error %g (%s)", v, err, tf_error());
    }
}
