/* The decoder interface over a VisionEncoderDecoderModel and one image (include/tformer/caption.h):
 * the image through the ViT once (its memory shared by forks), then each step the GPT-2 decoder on
 * the new ids through its KV caches (the words', and the memory's keys and values, filled by the
 * first step); beam search forks. A caption's attention: the full forward's cross-attention. */
#include <stdlib.h>
#include <string.h>

#include "caption_internal.h"

typedef struct {
    tf_ctx *mem, *step;
    tf_tensor *memory; /* (1,N+1,E) */
    int refs;
} ved_shared;

typedef struct {
    tf_decoder base;
    const tf_caption_ved *m;
    ved_shared *sh;
    tf_kv_cache *cache, *cross;
} ved_decoder;

static void shared_free(ved_shared *sh) {
    if (!sh || --sh->refs > 0) return;
    tf_ctx_free(sh->mem), tf_ctx_free(sh->step), free(sh);
}

static int ved_step(tf_decoder *d, const int32_t *tokens, int n, float *logits) {
    ved_decoder *g = (ved_decoder *)d;
    int64_t V = g->m->decoder->cfg.vocab_size;
    tf_ctx *ctx = g->sh->step;
    tf_ctx_reset(ctx);
    tf_tensor *ids = tf_tensor_new(ctx, TF_DTYPE_I32, 2, (int64_t[]){1, n}, 0);  // (1,n)
    if (!ids) return -1;
    memcpy(ids->data, tokens, (size_t)n * sizeof *tokens);
    tf_caption_ved_inputs in = {.memory = g->sh->memory, .decoder_input_ids = ids, .cache = g->cache,
                                .cross_cache = g->cross};
    tf_caption_ved_outputs out;
    if (tf_caption_ved_run(ctx, g->m, &in, &out)) return -1;
    memcpy(logits, tf_f32(out.logits) + (int64_t)(n - 1) * V, (size_t)V * sizeof *logits);  // the last id's (V)
    return 0;
}

static void ved_free(tf_decoder *d) {
    ved_decoder *g = (ved_decoder *)d;
    shared_free(g->sh);
    tf_kv_cache_free(g->cache), tf_kv_cache_free(g->cross);
    free(g);
}

static void ved_reset(tf_decoder *d) {
    ved_decoder *g = (ved_decoder *)d;
    tf_kv_cache_reset(g->cache), tf_kv_cache_reset(g->cross);
}

static tf_decoder *ved_fork(const tf_decoder *d) {
    const ved_decoder *g = (const ved_decoder *)d;
    ved_decoder *f = calloc(1, sizeof *f);
    if (!f) return tf_set_error("decoder: out of memory"), NULL;
    f->base = g->base, f->m = g->m, f->sh = g->sh;
    f->sh->refs++;
    if (!(f->cache = tf_kv_cache_fork(g->cache)) || !(f->cross = tf_kv_cache_fork(g->cross)))
        return ved_free(&f->base), tf_set_error("decoder: out of memory"), NULL;
    return &f->base;
}

static const tf_decoder_vt VED_DECODER = {ved_step, ved_fork, ved_reset, ved_free, NULL};

/* One image (C,S,S) in [0,1] as the image processor gives it to the model: (x - mean) / std. */
tf_tensor *tf_caption_ved_pixels(tf_ctx *ctx, const tf_caption_ved *m, const float *pixels) {
    const tf_vit_config *c = &m->encoder->cfg;
    int64_t S = c->image_size, P = S * S;
    tf_tensor *x = tf_tensor_new(ctx, TF_DTYPE_F32, 4, (int64_t[]){1, c->channels, S, S}, 0);
    for (int64_t ch = 0; x && ch < c->channels; ch++)
        for (int64_t i = 0; i < P; i++) {
            float v = pixels[ch * P + i];
            tf_f32(x)[ch * P + i] = m->normalize ? (v - m->mean[ch]) / m->std[ch] : v;
        }
    return x;
}

tf_decoder *tf_caption_ved_decoder_new(const tf_caption_ved *m, const float *pixels) {
    if (!m || !pixels) return tf_set_error("caption: no model or no image"), NULL;
    const tf_gpt_config *c = &m->decoder->cfg;
    int N = tf_vit_patches(&m->encoder->cfg) + 1, hd = c->d_model / c->n_head;
    ved_decoder *g = calloc(1, sizeof *g);
    if (!g || !(g->sh = calloc(1, sizeof *g->sh))) return free(g), tf_set_error("decoder: out of memory"), NULL;
    g->base = (tf_decoder){&VED_DECODER, c->vocab_size, c->context, 0, 0, 1};
    g->m = m, g->sh->refs = 1;
    tf_caption_ved_outputs out;
    int rc = !(g->cache = tf_kv_cache_new(c->n_layer, 1, c->n_head, hd, c->context)) ||
             !(g->cross = tf_kv_cache_new(c->n_layer, 1, c->n_head, hd, N)) || !(g->sh->mem = tf_ctx_new(0)) ||
             !(g->sh->step = tf_ctx_new(0));
    if (!rc) {
        tf_ctx_set_grad(g->sh->mem, 0), tf_ctx_set_grad(g->sh->step, 0);
        tf_tensor *x = tf_caption_ved_pixels(g->sh->mem, m, pixels);
        rc = !x || tf_caption_ved_run(g->sh->mem, m, &(tf_caption_ved_inputs){.pixel_values = x}, &out);
    }
    if (rc) return ved_free(&g->base), NULL;
    g->sh->memory = out.memory;
    return &g->base;
}

/* ---------------------------------------------------------------- a caption */

/* Each id's cross-attention (the start's, then the n ids'), the mean over layers and heads, over
 * the patches (the class token's share left out, each row renormalised): (n + 1, N). */
static int attention_maps(const tf_caption_ved *m, const float *pixels, const int32_t *ids, int n, float *attention) {
    const tf_gpt_config *c = &m->decoder->cfg;
    int64_t N = tf_vit_patches(&m->encoder->cfg), T = n + 1, H = c->n_head;
    tf_ctx *ctx = tf_ctx_new(0);
    if (!ctx) return tf_set_error("caption: out of memory");
    tf_ctx_set_grad(ctx, 0);
    tf_tensor *x = tf_caption_ved_pixels(ctx, m, pixels);
    tf_tensor *y = tf_tensor_new(ctx, TF_DTYPE_I32, 2, (int64_t[]){1, T}, 0);  // (1,n+1)
    tf_caption_ved_outputs out;
    int rc = -1;
    if (x && y) {
        tf_i32(y)[0] = m->start_id;
        memcpy(tf_i32(y) + 1, ids, (size_t)n * sizeof *ids);
        rc = tf_caption_ved_run(ctx, m, &(tf_caption_ved_inputs){.pixel_values = x, .decoder_input_ids = y,
                                                                 .output_attentions = 1}, &out);
    }
    for (int64_t t = 0; !rc && t < T; t++) {
        float *row = attention + t * N;
        double sum = 0;
        memset(row, 0, (size_t)N * sizeof *row);
        for (int l = 0; l < c->n_layer; l++) {
            tf_tensor *p = tf_contiguous(ctx, out.cross_attentions[l]);  // (1,H,T,N+1)
            if (!p) return tf_ctx_free(ctx), -1;
            for (int64_t h = 0; h < H; h++)
                for (int64_t i = 0; i < N; i++) row[i] += tf_f32(p)[(h * T + t) * (N + 1) + 1 + i];
        }
        for (int64_t i = 0; i < N; i++) sum += row[i];
        for (int64_t i = 0; i < N; i++) row[i] = sum > 0 ? (float)(row[i] / sum) : 1.0f / (float)N;
    }
    tf_ctx_free(ctx);
    return rc;
}

int tf_caption_ved_generate(const tf_caption_ved *m, const float *pixels, const tf_generate_opts *o, int32_t *ids,
                            int cap, int *n, float *attention) {
    tf_generate_opts g = *o;
    if (g.eos_id < 0) g.eos_id = m->eos_id;
    if (g.max_tokens <= 0 || g.max_tokens > m->decoder->cfg.context - 1) g.max_tokens = m->decoder->cfg.context - 1;
    tf_decoder *d = tf_caption_ved_decoder_new(m, pixels);
    tf_ids out = {0};
    int32_t start = m->start_id;
    int rc = d ? tf_generate(d, &start, 1, &g, NULL, NULL, &out, NULL) : -1;
    tf_decoder_free(d);
    size_t k = out.n && g.eos_id >= 0 && out.v[out.n - 1] == g.eos_id ? out.n - 1 : out.n;
    if (!rc && k > (size_t)cap) rc = tf_set_error("caption: %zu ids do not fit in %d", k, cap);
    if (!rc) memcpy(ids, out.v, k * sizeof *ids), *n = (int)k;
    tf_ids_free(&out);
    if (!rc && attention) rc = attention_maps(m, pixels, ids, *n, attention);
    return rc;
}
