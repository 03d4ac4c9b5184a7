/* Incremental GPT decoding with a KV cache, in plain loops (no tape): each
 * step feeds one token, appends its keys and values to the cache and returns
 * the next token's logits. A cache may sit on a shared, read-only prefix
 * (beam search keeps the prompt's keys and values once for every beam). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../../core/internal.h"

struct tf_kv_cache {
    const tf_kv_cache *prefix; /* positions [0, prefix->len) */
    int L, C, cap, len;        /* len: own positions */
    float *k, *v;              /* (L, cap, C) */
    float *x, *h, *qkv, *att, *f, *scores; /* scratch */
};

tf_kv_cache *tf_kv_cache_new(const tf_gpt *m, int capacity, const tf_kv_cache *prefix) {
    const tf_gpt_config *g = &m->cfg;
    int C = g->d_model, F = g->d_ff ? g->d_ff : 4 * C;
    tf_kv_cache *c = calloc(1, sizeof *c);
    if (!c || capacity < 1) return free(c), tf_set_error("kv cache: capacity %d", capacity), NULL;
    c->prefix = prefix, c->L = g->n_layer, c->C = C, c->cap = capacity;
    size_t kv = (size_t)g->n_layer * (size_t)capacity * (size_t)C;
    c->k = malloc(kv * sizeof *c->k);
    c->v = malloc(kv * sizeof *c->v);
    c->x = malloc((size_t)C * sizeof *c->x);
    c->h = malloc((size_t)C * sizeof *c->h);
    c->qkv = malloc(3 * (size_t)C * sizeof *c->qkv);
    c->att = malloc((size_t)C * sizeof *c->att);
    c->f = malloc((size_t)F * sizeof *c->f);
    c->scores = malloc((size_t)(g->context + 1) * sizeof *c->scores);
    if (!c->k || !c->v || !c->x || !c->h || !c->qkv || !c->att || !c->f || !c->scores) {
        tf_kv_cache_free(c);
        return tf_set_error("kv cache: out of memory"), NULL;
    }
    return c;
}

void tf_kv_cache_free(tf_kv_cache *c) {
    if (!c) return;
    free(c->k), free(c->v), free(c->x), free(c->h), free(c->qkv), free(c->att), free(c->f), free(c->scores);
    free(c);
}

int tf_kv_cache_len(const tf_kv_cache *c) { return (c->prefix ? tf_kv_cache_len(c->prefix) : 0) + c->len; }

/* Copy another cache's own positions (same prefix): a beam taking its parent's history. */
int tf_kv_cache_copy(tf_kv_cache *dst, const tf_kv_cache *src) {
    if (dst->cap < src->len || dst->prefix != src->prefix) return tf_set_error("kv cache: incompatible copy");
    for (int l = 0; l < src->L; l++) {
        size_t off = (size_t)l * (size_t)src->cap * (size_t)src->C, doff = (size_t)l * (size_t)dst->cap * (size_t)dst->C;
        memcpy(dst->k + doff, src->k + off, (size_t)src->len * (size_t)src->C * sizeof(float));
        memcpy(dst->v + doff, src->v + off, (size_t)src->len * (size_t)src->C * sizeof(float));
    }
    dst->len = src->len;
    return 0;
}

static void layernorm(float *y, const float *x, const tf_tensor *w, const tf_tensor *b, int C, float eps) {
    double s = 0, v = 0;
    for (int i = 0; i < C; i++) s += x[i];
    double mu = s / C;
    for (int i = 0; i < C; i++) v += (x[i] - mu) * (x[i] - mu);
    double rs = 1.0 / sqrt(v / C + eps);
    for (int i = 0; i < C; i++) y[i] = (float)((x[i] - mu) * rs) * tf_f32(w)[i] + (b ? tf_f32(b)[i] : 0.0f);
}

/* y (out) = x (in) W (in,out) + b */
static void conv1d(float *y, const float *x, const tf_tensor *w, const tf_tensor *b, int in, int out) {
    const float *W = tf_f32(w);
    for (int j = 0; j < out; j++) y[j] = b ? tf_f32(b)[j] : 0.0f;
    for (int i = 0; i < in; i++) {
        float xi = x[i];
        const float *row = W + (size_t)i * (size_t)out;
        for (int j = 0; j < out; j++) y[j] += xi * row[j];
    }
}

static float act(float x, tf_activation a) {
    if (a == TF_ACT_RELU) return x > 0 ? x : 0;
    if (a == TF_ACT_GELU) return (float)(0.5 * x * (1.0 + erf(x * 0.70710678118654752440)));
    double u = 0.79788456080286535588 * (x + 0.044715 * (double)x * x * x);
    return (float)(0.5 * x * (1.0 + tanh(u)));
}

/* Keys/values of position t (< total) in layer l, from the prefix or this cache. */
static const float *kv_at(const tf_kv_cache *c, int l, int t, int value) {
    int p = c->prefix ? tf_kv_cache_len(c->prefix) : 0;
    if (t < p) return kv_at(c->prefix, l, t, value);
    const float *base = value ? c->v : c->k;
    return base + ((size_t)l * (size_t)c->cap + (size_t)(t - p)) * (size_t)c->C;
}

/* Causal attention of the newest position over every cached one. */
static void attend(tf_kv_cache *c, const tf_gpt_config *g, int l, int total) {
    int C = g->d_model, H = g->n_head, D = C / H;
    float scale = 1.0f / sqrtf((float)D), *s = c->scores;
    memset(c->att, 0, (size_t)C * sizeof *c->att);
    for (int h = 0; h < H; h++) {
        const float *q = c->qkv + h * D;
        float mx = -INFINITY;
        for (int t = 0; t < total; t++) {
            s[t] = tf_dot(q, kv_at(c, l, t, 0) + h * D, D) * scale;
            if (s[t] > mx) mx = s[t];
        }
        double sum = 0;
        for (int t = 0; t < total; t++) sum += (s[t] = expf(s[t] - mx));
        float inv = (float)(1.0 / sum), *o = c->att + h * D;
        for (int t = 0; t < total; t++) {
            const float *v = kv_at(c, l, t, 1) + h * D;
            for (int i = 0; i < D; i++) o[i] += s[t] * inv * v[i];
        }
    }
}

int tf_gpt_decode_step(const tf_gpt *m, tf_kv_cache *c, int32_t token, float *logits) {
    const tf_gpt_config *g = &m->cfg;
    int C = g->d_model, F = g->d_ff ? g->d_ff : 4 * C, pos = tf_kv_cache_len(c);
    if (token < 0 || token >= g->vocab_size) return tf_set_error("decode: token %d outside the vocabulary", token);
    if (pos >= g->context || c->len >= c->cap)
        return tf_set_error("decode: position %d exceeds the context of %d", pos, g->context);
    float *x = c->x, *h = c->h, eps = g->norm_eps;
    for (int i = 0; i < C; i++) {
        float pe = 0;
        if (g->pos == TF_POS_LEARNED) pe = tf_f32(m->wpe)[(size_t)pos * (size_t)C + (size_t)i];
        else {
            double w = pos / pow(10000.0, (double)(i - (i & 1)) / C);
            pe = (float)((i & 1) ? cos(w) : sin(w));
        }
        x[i] = tf_f32(m->wte)[(size_t)token * (size_t)C + (size_t)i] + pe;
    }
    for (int l = 0; l < g->n_layer; l++) {
        const tf_gpt_block *b = &m->h[l];
        if (g->norm_first) layernorm(h, x, b->ln_1_w, b->ln_1_b, C, eps);
        else memcpy(h, x, (size_t)C * sizeof *h);
        conv1d(c->qkv, h, b->c_attn_w, b->c_attn_b, C, 3 * C);
        size_t at = ((size_t)l * (size_t)c->cap + (size_t)c->len) * (size_t)C;
        memcpy(c->k + at, c->qkv + C, (size_t)C * sizeof(float));
        memcpy(c->v + at, c->qkv + 2 * C, (size_t)C * sizeof(float));
        attend(c, g, l, pos + 1);
        conv1d(h, c->att, b->attn_proj_w, b->attn_proj_b, C, C);
        for (int i = 0; i < C; i++) x[i] += h[i];
        if (g->norm_first) layernorm(h, x, b->ln_2_w, b->ln_2_b, C, eps);
        else layernorm(x, x, b->ln_1_w, b->ln_1_b, C, eps), memcpy(h, x, (size_t)C * sizeof *h);
        conv1d(c->f, h, b->c_fc_w, b->c_fc_b, C, F);
        for (int i = 0; i < F; i++) c->f[i] = act(c->f[i], g->activation);
        conv1d(h, c->f, b->mlp_proj_w, b->mlp_proj_b, F, C);
        for (int i = 0; i < C; i++) x[i] += h[i];
        if (!g->norm_first) layernorm(x, x, b->ln_2_w, b->ln_2_b, C, eps);
    }
    if (g->norm_first) layernorm(x, x, m->ln_f_w, m->ln_f_b, C, eps);
    const float *W = tf_f32(g->tied ? m->wte : m->lm_head);
    for (int v = 0; v < g->vocab_size; v++) {
        logits[v] = tf_dot(W + (size_t)v * (size_t)C, x, C);
    }
    c->len++;
    return 0;
}
