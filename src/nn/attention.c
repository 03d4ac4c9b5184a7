/* Linear, LayerNorm, multi-head attention and positional encodings. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nn_internal.h"

tf_tensor *tf_linear_forward(tf_ctx *ctx, const tf_linear *l, tf_tensor *x) {
    return tf_dense(ctx, x, l->weight, 0, l->bias, TF_ACT_NONE);  // (..., out) = x (..., in) W^T + b
}

tf_tensor *tf_linear_act_forward(tf_ctx *ctx, const tf_linear *l, tf_tensor *x, int act) {
    return tf_dense(ctx, x, l->weight, 0, l->bias, act);
}

tf_tensor *tf_layer_norm_forward(tf_ctx *ctx, const tf_layer_norm *n, tf_tensor *x) {
    if (!n->rms) return tf_layernorm(ctx, x, n->weight, n->bias, n->eps);
    tf_tensor *y = tf_rmsnorm(ctx, x, n->weight, n->eps);
    return n->bias ? tf_bias_add(ctx, y, n->bias) : y;
}

/* ---------------------------------------------------------------- positions */

void tf_posenc_sinusoidal(float *out, int64_t start, int64_t T, int64_t d) {
    for (int64_t t = 0; t < T; t++)
        for (int64_t c = 0; c < d; c++) {
            int64_t i2 = c - (c & 1); /* 2i */
            double angle = (double)(start + t) / pow(10000.0, (double)i2 / (double)d);
            out[t * d + c] = (float)((c & 1) ? cos(angle) : sin(angle));
        }
}

tf_tensor *tf_posenc_sinusoidal_tensor(tf_ctx *ctx, int64_t start, int64_t T, int64_t d) {
    tf_tensor *t = tf_tensor_new(ctx, TF_DTYPE_F32, 2, (int64_t[]){T, d}, 0);
    if (t) tf_posenc_sinusoidal(tf_f32(t), start, T, d);
    return t;
}

void tf_posenc_sinusoidal_halves(float *out, int64_t start, int64_t T, int64_t d) {
    int64_t h = (d + 1) / 2;
    for (int64_t t = 0; t < T; t++)
        for (int64_t c = 0; c < d; c++) {
            int64_t i = c < h ? c : c - h;
            double angle = (double)(start + t) / pow(10000.0, (double)(2 * i) / (double)d);
            out[t * d + c] = (float)(c < h ? sin(angle) : cos(angle));
        }
}

tf_tensor *tf_posenc_sinusoidal_halves_tensor(tf_ctx *ctx, int64_t start, int64_t T, int64_t d) {
    tf_tensor *t = tf_tensor_new(ctx, TF_DTYPE_F32, 2, (int64_t[]){T, d}, 0);
    if (t) tf_posenc_sinusoidal_halves(tf_f32(t), start, T, d);
    return t;
}

tf_tensor *tf_posenc_learned(tf_ctx *ctx, tf_tensor *table, int64_t start, int64_t T) {
    if (!table) return NULL;
    if (table->ndim != 2) return tf_set_error("posenc_learned: table must be (max_len, d)"), NULL;
    if (start < 0 || T < 0 || start > table->shape[0] - T)
        return tf_set_error("posenc_learned: positions [%lld, %lld) exceed the table's %lld",
                            (long long)start, (long long)(start + T), (long long)table->shape[0]), NULL;
    return tf_narrow(ctx, table, 0, start, T);
}

tf_tensor *tf_posenc_relative_bias(tf_ctx *ctx, tf_tensor *table, int64_t Tq, int64_t Tk) {
    if (!table) return NULL;
    if (table->ndim != 2 || table->shape[0] % 2 != 1)
        return tf_set_error("posenc_relative: table must be (2K+1, H)"), NULL;
    int64_t K = table->shape[0] / 2;
    tf_tensor *off = tf_tensor_new(ctx, TF_DTYPE_I32, 2, (int64_t[]){Tq, Tk}, 0);
    if (!off) return NULL;
    for (int64_t i = 0; i < Tq; i++)
        for (int64_t j = 0; j < Tk; j++) {
            int64_t rel = j - (i + Tk - Tq);
            rel = rel < -K ? -K : rel > K ? K : rel;
            tf_i32(off)[i * Tk + j] = (int32_t)(rel + K);
        }
    tf_tensor *b = tf_embedding(ctx, table, off);              // b: (Tq,Tk,H)
    b = tf_transpose(ctx, tf_transpose(ctx, b, 0, 2), 1, 2);   // b: (H,Tq,Tk), strided
    return tf_unsqueeze(ctx, b, 0);                            // (1,H,Tq,Tk)
}

/* ---------------------------------------------------------------- attention */

tf_tensor *tf_key_padding(tf_ctx *ctx, const tf_tensor *mask, int64_t B, int64_t Tk, const char *who) {
    char s[64];
    if (mask->ndim != 2 || mask->shape[0] != B || mask->shape[1] != Tk ||
        (mask->dtype != TF_DTYPE_I32 && mask->dtype != TF_DTYPE_U8))
        return tf_set_error("%s: attention_mask %s must be I32 or U8 (%lld,%lld)", who, tf_shape_str(mask, s, sizeof s),
                            (long long)B, (long long)Tk), NULL;
    tf_tensor *c = tf_contiguous(ctx, (tf_tensor *)mask);
    tf_tensor *pad = c ? tf_tensor_new(ctx, TF_DTYPE_U8, 2, mask->shape, 0) : NULL;  // (B,Tk)
    for (int64_t i = 0; pad && i < B * Tk; i++) tf_u8(pad)[i] = c->dtype == TF_DTYPE_I32 ? !tf_i32(c)[i] : !tf_u8(c)[i];
    return pad;
}

tf_mha_config tf_mha_config_default(int d_model, int n_head) {
    tf_mha_config c = {d_model, n_head, d_model, d_model, 1, 0.0f, 0, 0, 0, 0, 0, 0, {0}, TF_ROPE_NONE, 0.0f, 0, 0.0f};
    return c;
}

int tf_mha_register(tf_params *ps, const char *prefix, tf_mha *m, const tf_mha_config *cfg) {
    int E = cfg->d_model, H = cfg->n_head;
    if (E <= 0 || H <= 0 || E % H || cfg->kdim <= 0 || cfg->vdim <= 0)
        return tf_set_error("attention: d_model %d must be a positive multiple of n_head %d "
                            "(kdim %d, vdim %d)", E, H, cfg->kdim, cfg->vdim);
    if (tf_rope_check(cfg->rope, cfg->rope_base, E / H)) return -1;
    if (cfg->lsa && (cfg->nystrom || cfg->sparse))
        return tf_set_error("attention: locality self-attention (lsa) is an option of full attention, not of Nystrom "
                            "or sparse attention");
    if (!(cfg->ssmax >= 0.0f && cfg->ssmax < INFINITY))
        return tf_set_error("attention: ssmax %g must be 0 (off) or a positive initial s", cfg->ssmax);
    if (cfg->ssmax > 0.0f && (cfg->nystrom || cfg->sparse))
        return tf_set_error("attention: Scalable-Softmax (ssmax) is an option of full attention, not of Nystrom or "
                            "sparse attention");
    if (cfg->nystrom && (cfg->landmarks < 0 || cfg->conv_kernel < 0 || (cfg->conv_kernel > 0 && cfg->conv_kernel % 2 == 0)))
        return tf_set_error("attention: Nystrom landmarks %d must be >= 0 and conv_kernel %d 0 or odd", cfg->landmarks,
                            cfg->conv_kernel);
    memset(m, 0, sizeof *m);
    m->cfg = *cfg;
    char name[256];
    float std = 1.0f / sqrtf((float)E);
#define ADD(field, nd, init, ...) \
    (snprintf(name, sizeof name, "%s" #field, prefix), \
     tf_params_add(ps, name, &m->field, nd, (int64_t[]){__VA_ARGS__}, init))
    int rc = 0;
    if (cfg->kdim == E && cfg->vdim == E) {
        rc |= ADD(in_proj_weight, 2, std, 3 * E, E);
    } else {
        rc |= ADD(q_proj_weight, 2, std, E, E);
        rc |= ADD(k_proj_weight, 2, 1.0f / sqrtf((float)cfg->kdim), E, cfg->kdim);
        rc |= ADD(v_proj_weight, 2, 1.0f / sqrtf((float)cfg->vdim), E, cfg->vdim);
    }
    if (cfg->bias) rc |= ADD(in_proj_bias, 1, TF_INIT_ZEROS, 3 * E);
    rc |= ADD(out_proj.weight, 2, std, E, E);
    if (cfg->bias) rc |= ADD(out_proj.bias, 1, TF_INIT_ZEROS, E);
    if (cfg->rel_max_offset > 0) rc |= ADD(rel_bias, 2, 0.02f, 2 * cfg->rel_max_offset + 1, H);
    if (cfg->nystrom && cfg->conv_kernel > 0) rc |= ADD(conv_weight, 4, 0.02f, H, 1, cfg->conv_kernel, 1);
    if (cfg->lsa) rc |= ADD(temperature, 1, TF_INIT_ONES, H);
    if (cfg->ssmax > 0.0f)
        rc |= (snprintf(name, sizeof name, "%sssmax_scale", prefix),
               tf_params_add_filled(ps, name, &m->ssmax_scale, 1, (int64_t[]){H}, cfg->ssmax));
#undef ADD
    return rc ? -1 : 0;
}

/* The weight and bias of projection i (0 q, 1 k, 2 v): a slice of the fused
 * ones, or its own. A slice of an (in,out) weight is a column block. */
static tf_linear projection(tf_ctx *ctx, const tf_mha *m, int i) {
    int64_t E = m->cfg.d_model;
    tf_linear l;
    l.weight = m->in_proj_weight ? tf_narrow(ctx, m->in_proj_weight, m->cfg.w_in_out ? 1 : 0, i * E, E)
             : i == 0 ? m->q_proj_weight : i == 1 ? m->k_proj_weight : m->v_proj_weight;
    l.bias = m->in_proj_bias ? tf_narrow(ctx, m->in_proj_bias, 0, i * E, E)
           : i == 0 ? m->q_proj_bias : i == 1 ? m->k_proj_bias : m->v_proj_bias;
    return l;
}

/* y (B,T,E) -> (B,H,T,D), a view. A fused projection's q, k and v are
 * column slices of (B,T,3E) (rows 3E apart): viewed in place, as a reshape
 * would copy each slice first (the attention reads rows at any stride). */
static tf_tensor *split_heads(tf_ctx *ctx, tf_tensor *y, int64_t H) {
    if (!y) return NULL;
    int64_t B = y->shape[0], T = y->shape[1], D = y->shape[2] / H;
    if (y->stride[2] != 1 && !(y = tf_contiguous(ctx, y))) return NULL;
    tf_tensor *v = tf_view_new(ctx, y);
    if (!v) return NULL;
    v->ndim = 4;
    memcpy(v->shape, (int64_t[]){B, H, T, D}, sizeof(int64_t[4]));
    memcpy(v->stride, (int64_t[]){y->stride[0], D, y->stride[1], 1}, sizeof(int64_t[4]));
    return v;
}

/* q, k, v (B,H,T,D). Self-attention with fused weights is one product of
 * width 3E (GPT-2's c_attn, PyTorch's in_proj); otherwise one per input. */
void tf_mha_project(tf_ctx *ctx, const tf_mha *m, tf_tensor *query, tf_tensor *key, tf_tensor *value,
                    tf_tensor *qkv[3]) {
    int64_t E = m->cfg.d_model, H = m->cfg.n_head;
    int io = m->cfg.w_in_out;
    if (query == key && key == value && m->in_proj_weight && !m->q_proj_bias) {
        tf_tensor *y = tf_dense(ctx, query, m->in_proj_weight, io, m->in_proj_bias, TF_ACT_NONE);  // y: (B,T,3E)
        for (int i = 0; i < 3; i++) qkv[i] = split_heads(ctx, tf_narrow(ctx, y, 2, i * E, E), H);
        return;
    }
    tf_tensor *in[3] = {query, key, value};
    for (int i = 0; i < 3; i++) {
        tf_linear l = projection(ctx, m, i);
        qkv[i] = split_heads(ctx, tf_dense(ctx, in[i], l.weight, io, l.bias, TF_ACT_NONE), H);
    }
}

/* A mask as an additive F32 tensor: U8 true becomes -inf; F32 passes through. */
static tf_tensor *additive(tf_ctx *ctx, tf_tensor *m) {
    if (!m || m->dtype == TF_DTYPE_F32) return m;
    if (m->dtype != TF_DTYPE_U8) return tf_set_error("attention: masks must be BOOL/U8 or F32"), NULL;
    tf_tensor *c = tf_contiguous(ctx, m);
    tf_tensor *a = c ? tf_tensor_new(ctx, TF_DTYPE_F32, m->ndim, m->shape, 0) : NULL;
    if (!a) return NULL;
    for (int64_t i = 0; i < tf_numel(a); i++) tf_f32(a)[i] = tf_u8(c)[i] ? -INFINITY : 0.0f;
    return a;
}

static tf_tensor *add_opt(tf_ctx *ctx, tf_tensor *acc, tf_tensor *t) {
    return acc ? tf_add(ctx, acc, t) : t;
}

/* Locality self-attention's mask (Tq,Tk): query i's own key, i + Tk - Tq,
 * hidden; boolean, or additive (-inf) to join other masks. */
static tf_tensor *own_key_hidden(tf_ctx *ctx, int64_t Tq, int64_t Tk, int additive_form) {
    if (Tk < 2) return tf_set_error("attention: locality self-attention hides each query's own key: %lld key(s) leave "
                                    "a query none", (long long)Tk), NULL;
    tf_tensor *d = tf_tensor_new(ctx, additive_form ? TF_DTYPE_F32 : TF_DTYPE_U8, 2, (int64_t[]){Tq, Tk}, 0);
    if (!d) return NULL;
    for (int64_t i = 0; i < Tq; i++)
        for (int64_t j = 0; j < Tk; j++) {
            int own = j == i + Tk - Tq;
            if (additive_form) tf_f32(d)[i * Tk + j] = own ? -INFINITY : 0.0f;
            else tf_u8(d)[i * Tk + j] = (uint8_t)own;
        }
    return d;
}

/* All masks of one attention combined into one additive bias broadcastable
 * to (B,H,Tq,Tk); NULL with no error when there is none. */
static tf_tensor *attention_bias(tf_ctx *ctx, const tf_mha *m, const tf_attn_mask *am, int64_t B,
                                 int64_t Tq, int64_t Tk, int causal_needed, int *failed) {
    int64_t H = m->cfg.n_head;
    tf_tensor *acc = NULL;
    *failed = 1;
    if (am && am->mask) {
        tf_tensor *t = am->mask;
        char s[64];
        int is2 = t->ndim == 2 && t->shape[0] == Tq && t->shape[1] == Tk;
        int is3 = t->ndim == 3 && t->shape[0] == B * H && t->shape[1] == Tq && t->shape[2] == Tk;
        if (!is2 && !is3)
            return tf_set_error("attention: attn_mask %s should be (%lld,%lld) or (%lld,%lld,%lld)",
                                tf_shape_str(t, s, sizeof s), (long long)Tq, (long long)Tk,
                                (long long)(B * H), (long long)Tq, (long long)Tk), NULL;
        t = additive(ctx, t);
        acc = tf_reshape(ctx, t, 4, is2 ? (int64_t[]){1, 1, Tq, Tk} : (int64_t[]){B, H, Tq, Tk});
        if (!acc) return NULL;
    }
    if (am && am->key_padding_mask) {
        tf_tensor *t = am->key_padding_mask;
        char s[64];
        if (t->ndim != 2 || t->shape[0] != B || t->shape[1] != Tk)
            return tf_set_error("attention: key_padding_mask %s should be (%lld,%lld)",
                                tf_shape_str(t, s, sizeof s), (long long)B, (long long)Tk), NULL;
        t = tf_reshape(ctx, additive(ctx, t), 4, (int64_t[]){B, 1, 1, Tk});
        if (!(acc = add_opt(ctx, acc, t))) return NULL;
    }
    if (m->rel_bias && !(acc = add_opt(ctx, acc, tf_posenc_relative_bias(ctx, m->rel_bias, Tq, Tk))))
        return NULL;
    if (m->cfg.lsa && !(acc = add_opt(ctx, acc, own_key_hidden(ctx, Tq, Tk, acc || causal_needed)))) return NULL;
    if (causal_needed) { /* the unfused path spells the causal rule out as a mask: alone, a boolean one */
        tf_tensor *c = tf_tensor_new(ctx, acc ? TF_DTYPE_F32 : TF_DTYPE_U8, 2, (int64_t[]){Tq, Tk}, 0);
        if (!c) return NULL;
        for (int64_t i = 0; i < Tq; i++)
            for (int64_t j = 0; j < Tk; j++) {
                if (acc) tf_f32(c)[i * Tk + j] = j > i + Tk - Tq ? -INFINITY : 0.0f;
                else tf_u8(c)[i * Tk + j] = j > i + Tk - Tq;
            }
        if (!(acc = add_opt(ctx, acc, c))) return NULL;
    }
    *failed = 0;
    return acc;
}

static int check_inputs(const tf_mha *m, const tf_tensor *query, const tf_tensor *key, const tf_tensor *value) {
    const tf_mha_config *c = &m->cfg;
    char a[64], b[64], d[64];
    if (query->ndim != 3 || key->ndim != 3 || value->ndim != 3 || query->shape[2] != c->d_model ||
        key->shape[2] != c->kdim || value->shape[2] != c->vdim || key->shape[0] != query->shape[0] ||
        value->shape[0] != query->shape[0] || key->shape[1] != value->shape[1])
        return tf_set_error("attention: query %s, key %s, value %s do not fit (B,Tq,%d), (B,Tk,%d), (B,Tk,%d)",
                            tf_shape_str(query, a, sizeof a), tf_shape_str(key, b, sizeof b),
                            tf_shape_str(value, d, sizeof d), c->d_model, c->kdim, c->vdim);
    return 0;
}

/* Scalable-Softmax's ln n of each query, (B,1,Tq,1): n the keys query i of
 * row b sees, those the key padding does not hide (U8 nonzero or F32 -inf),
 * with causal masking only j <= i + Tk - Tq, and under lsa not its own
 * (key i + Tk - Tq); ln 1 = 0 (a lone key is attended to whatever s), and a
 * query that sees nothing gets 0 too (its row is all -inf anyway). */
static tf_tensor *ssmax_log_n(tf_ctx *ctx, const tf_attn_mask *am, int64_t B, int64_t Tq, int64_t Tk, int causal,
                              int lsa) {
    const tf_tensor *pad = am ? am->key_padding_mask : NULL;
    tf_tensor *c = pad ? tf_contiguous(ctx, (tf_tensor *)pad) : NULL;
    tf_tensor *out = tf_tensor_new(ctx, TF_DTYPE_F32, 4, (int64_t[]){B, 1, Tq, 1}, 0);          // (B,1,Tq,1)
    if (!out || (pad && !c)) return NULL;
    int64_t *seen = malloc((size_t)(Tk + 1) * sizeof *seen); /* seen[j]: keys before j not hidden */
    if (!seen) return tf_set_error("attention: out of memory"), NULL;
    for (int64_t b = 0; b < B; b++) {
        seen[0] = 0;
        for (int64_t j = 0; j < Tk; j++) {
            int64_t at = b * Tk + j;
            int hidden = c && (c->dtype == TF_DTYPE_U8 ? tf_u8(c)[at] != 0 : tf_f32(c)[at] == -INFINITY);
            seen[j + 1] = seen[j] + !hidden;
        }
        for (int64_t i = 0; i < Tq; i++) {
            int64_t own = i + Tk - Tq, last = causal ? own : Tk - 1, n = last < 0 ? 0 : seen[last + 1];
            if (lsa && own >= 0 && own < Tk) n -= seen[own + 1] - seen[own]; /* its own key, when not padding */
            tf_f32(out)[b * Tq + i] = n > 1 ? (float)log((double)n) : 0.0f;
        }
    }
    free(seen);
    return out;
}

/* softmax(q k^T / sqrt(D) + bias) v, (B,H,Tq,D): fused, or spelled out when
 * the weights or the probabilities are wanted or dropout applies to them.
 * probs gets the probabilities before dropout (Hugging Face's attentions). */
tf_tensor *tf_mha_attend_heads(tf_ctx *ctx, const tf_mha *m, tf_tensor *const qkv[3], const tf_attn_mask *mask,
                               int causal, tf_tensor **weights, tf_tensor **probs) {
    int64_t B = qkv[0]->shape[0], Tq = qkv[0]->shape[2], Tk = qkv[1]->shape[2];
    float scale = 1.0f / sqrtf((float)(m->cfg.d_model / m->cfg.n_head));
    int unfused = weights || probs || (ctx->training && m->cfg.dropout > 0.0f), failed;
    tf_tensor *bias = attention_bias(ctx, m, mask, B, Tq, Tk, unfused && causal, &failed);
    if (failed) return NULL;
    tf_tensor *q = qkv[0];
    if (m->temperature) /* lsa: head h's scores scaled by temperature[h], through q */
        q = tf_mul(ctx, q, tf_reshape(ctx, m->temperature, 4, (int64_t[]){1, m->cfg.n_head, 1, 1})); // (B,H,Tq,D)
    if (m->ssmax_scale) { /* Scalable-Softmax: head h's scores of query i times s[h] ln n_i, through q */
        tf_tensor *s = tf_reshape(ctx, m->ssmax_scale, 4, (int64_t[]){1, m->cfg.n_head, 1, 1});      // (1,H,1,1)
        q = tf_mul(ctx, tf_mul(ctx, q, s), ssmax_log_n(ctx, mask, B, Tq, Tk, causal, m->cfg.lsa));    // (B,H,Tq,D)
    }
    if (!unfused) /* (B,Tq,H,Dv) viewed as (B,H,Tq,Dv): the caller's transpose back is then contiguous */
        return tf_transpose(ctx, tf_sdpa_heads_last(ctx, q, qkv[1], qkv[2], bias, causal, scale), 1, 2);
    tf_tensor *s = tf_scale(ctx, tf_matmul(ctx, q, qkv[1], 0, 1), scale);  // s: (B,H,Tq,Tk)
    tf_tensor *p = tf_softmax(ctx, s, bias);                                    // p: (B,H,Tq,Tk)
    if (probs && !(*probs = p)) return NULL;
    p = tf_dropout(ctx, p, m->cfg.dropout);
    if (weights) *weights = tf_mean(ctx, p, 1, 0);                         // (B,Tq,Tk)
    return tf_matmul(ctx, p, qkv[2], 0, 0);                                 // (B,H,Tq,D)
}

/* The key padding as the sparse kernel takes it, (B,T) U8 nonzero = padding:
 * U8 as given, F32 additive with -inf for padding and 0 elsewhere. */
static tf_tensor *sparse_padding(tf_ctx *ctx, tf_tensor *t, int64_t B, int64_t T) {
    char s[64];
    if (t->ndim != 2 || t->shape[0] != B || t->shape[1] != T || (t->dtype != TF_DTYPE_U8 && t->dtype != TF_DTYPE_F32))
        return tf_set_error("attention: key_padding_mask %s should be U8 or F32 (%lld,%lld)", tf_shape_str(t, s, sizeof s),
                            (long long)B, (long long)T), NULL;
    if (t->dtype == TF_DTYPE_U8) return t;
    tf_tensor *c = tf_contiguous(ctx, t), *pad = c ? tf_tensor_new(ctx, TF_DTYPE_U8, 2, t->shape, 0) : NULL;
    for (int64_t i = 0; pad && i < B * T; i++) {
        float v = tf_f32(c)[i];
        if (v != 0.0f && v != -INFINITY)
            return tf_set_error("attention: sparse attention takes a key padding of 0 and -inf only (found %g)", v), NULL;
        tf_u8(pad)[i] = v == -INFINITY;
    }
    return pad;
}

/* Sparse self-attention of q (B,H,Tq,D) over k, v (B,H,T,D) (Tq < T: a
 * cache's new positions): the pattern's keys and no others; the key padding
 * mask (B,T), over the keys, its only mask. */
static tf_tensor *attend_sparse(tf_ctx *ctx, const tf_mha *m, tf_tensor *const qkv[3], const tf_attn_mask *mask,
                                int causal) {
    const tf_sparse_pattern *p = &m->cfg.pattern;
    if ((causal || (mask && mask->causal)) && !p->causal)
        return tf_set_error("attention: causal attention asked of a sparse pattern that is not causal"), NULL;
    if ((mask && mask->mask) || m->rel_bias)
        return tf_set_error("attention: sparse attention takes a key padding mask only (no attn_mask, no relative "
                            "positions)"), NULL;
    tf_tensor *pad = NULL;
    if (mask && mask->key_padding_mask &&
        !(pad = sparse_padding(ctx, mask->key_padding_mask, qkv[1]->shape[0], qkv[1]->shape[2])))
        return NULL;
    float scale = 1.0f / sqrtf((float)(m->cfg.d_model / m->cfg.n_head));
    return tf_sparse_attention(ctx, qkv[0], qkv[1], qkv[2], pad, p, scale);
}

/* (B,H,T,X) -> (B*T, H*X): the rows a gather moves. */
static tf_tensor *rows_of(tf_ctx *ctx, tf_tensor *x) {
    if (!x) return NULL;
    x = tf_transpose(ctx, x, 1, 2);  // (B,T,H,X)
    return tf_reshape(ctx, x, 2, (int64_t[]){x->shape[0] * x->shape[1], x->shape[2] * x->shape[3]});
}

/* (B*T, H*X) -> (B,H,T,X), a view. */
static tf_tensor *heads_of(tf_ctx *ctx, tf_tensor *x, int64_t B, int64_t H) {
    if (!x) return NULL;
    x = tf_reshape(ctx, x, 4, (int64_t[]){B, x->shape[0] / B, H, x->shape[1] / H});
    return tf_transpose(ctx, x, 1, 2);
}

/* Queries of R rows over held keys and values of G rows, query row r
 * reading row map[r] (a sentence's beams over its one copy of the encoder's
 * keys): the queries of each cache row's readers gathered into its group,
 * padded to the largest group with copies of a row whose results are
 * dropped, attended in one batch, and gathered back. Unfused when probs
 * are wanted (the attention pictures), which come back per query row.
 *   q (R,H,Tq,D), k and v (G,H,S,D), mask (G,S)  ->  (R,H,Tq,D) */
static tf_tensor *attend_shared(tf_ctx *ctx, const tf_mha *m, tf_tensor *const qkv[3], const int *map,
                                const tf_attn_mask *mask, tf_tensor **probs) {
    int64_t R = qkv[0]->shape[0], H = qkv[0]->shape[1], Tq = qkv[0]->shape[2], G = qkv[1]->shape[0], most = 0;
    int64_t *count = tf_ctx_alloc(ctx, (size_t)G * sizeof *count), *slot = tf_ctx_alloc(ctx, (size_t)R * sizeof *slot);
    if (!count || !slot) return NULL;
    memset(count, 0, (size_t)G * sizeof *count);
    for (int64_t r = 0; r < R; r++) slot[r] = count[map[r]]++, most = count[map[r]] > most ? count[map[r]] : most;
    tf_tensor *in = tf_tensor_new(ctx, TF_DTYPE_I32, 1, (int64_t[]){G * most * Tq}, 0);   // (G*most*Tq) query rows
    tf_tensor *out = tf_tensor_new(ctx, TF_DTYPE_I32, 1, (int64_t[]){R * Tq}, 0);         // (R*Tq) group rows
    if (!in || !out) return NULL;
    for (int64_t i = 0; i < G * most * Tq; i++) tf_i32(in)[i] = (int32_t)(i % Tq); /* padding: row 0's queries */
    for (int64_t r = 0; r < R; r++)
        for (int64_t t = 0; t < Tq; t++) {
            int64_t g = (map[r] * most + slot[r]) * Tq + t;
            tf_i32(in)[g] = (int32_t)(r * Tq + t), tf_i32(out)[r * Tq + t] = (int32_t)g;
        }
    tf_tensor *q = heads_of(ctx, tf_embedding(ctx, rows_of(ctx, qkv[0]), in), G, H);  // q: (G,H,most*Tq,D)
    tf_tensor *p = NULL,
              *o = tf_mha_attend_heads(ctx, m, (tf_tensor *[3]){q, qkv[1], qkv[2]}, mask, 0, NULL, probs ? &p : NULL);
    if (probs && !(*probs = heads_of(ctx, tf_embedding(ctx, rows_of(ctx, p), out), R, H)))  // (R,H,Tq,S)
        return NULL;
    return heads_of(ctx, tf_embedding(ctx, rows_of(ctx, o), out), R, H);                 // (R,H,Tq,D)
}

/* q (B,H,Tq,D) from query, k and v the cache's as held (no key, no value:
 * the encoder's projected keys and values at a later decoding step). */
static int project_query_only(tf_ctx *ctx, const tf_mha *m, tf_tensor *query, tf_kv_cache *cache, int layer,
                              tf_tensor *qkv[3]) {
    char a[64];
    if (query->ndim != 3 || query->shape[2] != m->cfg.d_model)
        return tf_set_error("attention: query %s does not fit (B,Tq,%d)", tf_shape_str(query, a, sizeof a), m->cfg.d_model);
    tf_linear l = projection(ctx, m, 0);
    qkv[0] = split_heads(ctx, tf_dense(ctx, query, l.weight, m->cfg.w_in_out, l.bias, TF_ACT_NONE), m->cfg.n_head);
    return qkv[0] ? tf_kv_cache_held(ctx, cache, layer, &qkv[1], &qkv[2]) : -1;
}

/* Rotary positions: q and k (B,H,T,D) of self-attention turned by their
 * positions, which continue a cache's; cross-attention is refused. */
static int rotate(tf_ctx *ctx, const tf_mha *m, const tf_tensor *query, const tf_tensor *key, const tf_kv_cache *cache,
                  tf_tensor *qkv[3]) {
    if (m->cfg.rope == TF_ROPE_NONE) return 0;
    if (key != query) return tf_set_error("attention: rotary positions are a setting of self-attention");
    int64_t start = cache ? tf_kv_cache_len(cache) : 0;
    float base = m->cfg.rope_base > 0.0f ? m->cfg.rope_base : 10000.0f;
    qkv[0] = tf_rope(ctx, qkv[0], start, base, m->cfg.rope);
    qkv[1] = tf_rope(ctx, qkv[1], start, base, m->cfg.rope);
    return qkv[0] && qkv[1] ? 0 : -1;
}

tf_tensor *tf_mha_attend(tf_ctx *ctx, const tf_mha *m, tf_tensor *query, tf_tensor *key, tf_tensor *value,
                         const tf_attn_mask *mask, int causal, tf_kv_cache *cache, int layer, tf_tensor **weights,
                         tf_tensor **probs) {
    int held = !key && !value && cache;
    if (!query || (!held && (!key || !value || check_inputs(m, query, key, value)))) return NULL;
    if (m->cfg.nystrom && (cache || causal || (mask && mask->causal) || key != query || value != query || weights || probs))
        return tf_set_error("attention: Nystrom attention is self-attention only, without a cache, causal masking "
                            "or attention weights"), NULL;
    if (m->cfg.lsa && (causal || (mask && mask->causal)))
        return tf_set_error("attention: locality self-attention hides each query's own key, which leaves a causal "
                            "first query none: not with causal masking"), NULL;
    if (m->cfg.ssmax > 0.0f && mask && mask->mask)
        return tf_set_error("attention: Scalable-Softmax (ssmax) counts the keys a query sees from the key padding "
                            "and causal masking: not with an attn_mask"), NULL;
    if (m->cfg.sparse && (key != query || value != query || weights || probs))
        return tf_set_error("attention: sparse attention (local, dilated, bigbird) is self-attention without "
                            "attention weights"), NULL;
    int64_t B = query->shape[0], Tq = query->shape[1], E = m->cfg.d_model;
    tf_tensor *qkv[3];
    int n_map = 0;
    const int *map = cache ? tf_kv_cache_row_map(cache, &n_map) : NULL;
    if (held) {
        if (project_query_only(ctx, m, query, cache, layer, qkv)) return NULL;
        if (map && n_map != B)
            return tf_set_error("attention: %lld query rows, but the cache's rows are read by %d", (long long)B, n_map), NULL;
        if (map && (weights || causal || (mask && (mask->causal || mask->mask)) || m->rel_bias || m->cfg.nystrom ||
                    m->cfg.sparse || m->cfg.lsa || m->cfg.ssmax > 0.0f))
            return tf_set_error("attention: shared cache rows take full attention with a key padding mask at most "
                                "(no causal or attn_mask, relative positions, averaged weights, lsa, ssmax)"), NULL;
    } else {
        tf_mha_project(ctx, m, query, key, value, qkv);
        if (!qkv[0] || !qkv[1] || !qkv[2] || rotate(ctx, m, query, key, cache, qkv)) return NULL;
        if (cache && tf_kv_cache_append(ctx, cache, layer, qkv[1], qkv[2], &qkv[1], &qkv[2])) return NULL;
    }
    tf_tensor *o = map && held     ? attend_shared(ctx, m, qkv, map, mask, probs)  // o: (B,H,Tq,D)
                   : m->cfg.nystrom ? tf_nystrom_attend(ctx, m, qkv, mask)
                   : m->cfg.sparse ? attend_sparse(ctx, m, qkv, mask, causal)
                                   : tf_mha_attend_heads(ctx, m, qkv, mask, causal || (mask && mask->causal), weights,
                                                         probs);
    o = tf_reshape(ctx, tf_transpose(ctx, o, 1, 2), 3, (int64_t[]){B, Tq, E});          // (B,Tq,E)
    return tf_dense(ctx, o, m->out_proj.weight, m->cfg.w_in_out, m->out_proj.bias, TF_ACT_NONE);
}

tf_tensor *tf_mha_attend_rows(tf_ctx *ctx, const tf_mha *m, tf_tensor *x, tf_kv_cache *const *caches, int layer,
                              int causal) {
    if (!x || check_inputs(m, x, x, x)) return NULL;
    int64_t R = x->shape[0], E = m->cfg.d_model;
    if (x->shape[1] != 1) return tf_set_error("attention: rows of one new position each, not %lld", (long long)x->shape[1]), NULL;
    if (m->cfg.nystrom || m->cfg.lsa || m->rel_bias)
        return tf_set_error("attention: rows at their own positions take attention without Nystrom, lsa or "
                            "relative positions"), NULL;
    tf_tensor *qkv[3], **o = tf_ctx_alloc(ctx, (size_t)R * sizeof *o);
    if (!o) return NULL;
    tf_mha_project(ctx, m, x, x, x, qkv);  // (R,H,1,D) each
    if (!qkv[0] || !qkv[1] || !qkv[2]) return NULL;
    for (int64_t r = 0; r < R; r++) { /* row r as tf_mha_attend steps it alone over its cache */
        tf_tensor *q[3];
        for (int i = 0; i < 3; i++)
            if (!(q[i] = tf_narrow(ctx, qkv[i], 0, r, 1))) return NULL;  // (1,H,1,D)
        if (rotate(ctx, m, x, x, caches[r], q) ||
            tf_kv_cache_append(ctx, caches[r], layer, q[1], q[2], &q[1], &q[2]))
            return NULL;
        tf_tensor *a = m->cfg.sparse ? attend_sparse(ctx, m, q, NULL, causal)
                                     : tf_mha_attend_heads(ctx, m, q, NULL, causal, NULL, NULL);
        if (!(o[r] = tf_reshape(ctx, tf_transpose(ctx, a, 1, 2), 3, (int64_t[]){1, 1, E})))  // (1,1,E)
            return NULL;
    }
    tf_tensor *all = R == 1 ? o[0] : tf_concat(ctx, (int)R, o, 0);  // (R,1,E)
    return tf_dense(ctx, all, m->out_proj.weight, m->cfg.w_in_out, m->out_proj.bias, TF_ACT_NONE);
}

tf_tensor *tf_mha_forward(tf_ctx *ctx, const tf_mha *m, tf_tensor *query, tf_tensor *key,
                          tf_tensor *value, const tf_attn_mask *mask, tf_tensor **weights) {
    return tf_mha_attend(ctx, m, query, key, value, mask, 0, NULL, 0, weights, NULL);
}
