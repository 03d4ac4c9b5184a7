/* The decoder interface over the captioner, one image: the image is encoded once (the
 * annotations a_i and keys U_a a_i, or the Transformer's memory, shared by forks); each step
 * runs tf_caption_run (the one forward) on the new words from the kept state h (and c), or the
 * Transformer's KV caches (its words' and the memory's keys and values). Beam search forks.
 * A VisionEncoderDecoderModel's decoder is the same with its own step (tf_caption_ved_run on
 * the ViT's memory through the GPT-2's caches) and no RNN state. */
#include <stdlib.h>
#include <string.h>

#include "caption_internal.h"

typedef struct {
    tf_ctx *mem, *step;          /* the image's tensors; each step's scratch */
    tf_tensor *annotations, *keys; /* (1,N,D), (1,N,A) or NULL */
    float *s0;                   /* (2,H): h_0, c_0 */
    int refs;
} shared;

typedef struct {
    tf_decoder base;
    const tf_caption *m;      /* or: */
    const tf_caption_ved *ved;
    shared *sh;               /* a VisionEncoderDecoderModel's memory in annotations */
    int hidden;               /* H of the RNN state; 0 without one */
    float *s; /* (2,H): h, c */
    tf_kv_cache *cache, *cross; /* the Transformer's, else NULL */
} cap_decoder;

static void shared_free(shared *sh) {
    if (!sh || --sh->refs > 0) return;
    tf_ctx_free(sh->mem), tf_ctx_free(sh->step);
    free(sh->s0), free(sh);
}

/* Row 0 of x (1,H) into half k of buf (2,H). */
static int keep(tf_ctx *ctx, float *buf, tf_tensor *x, int64_t H, int k) {
    tf_tensor *c = tf_contiguous(ctx, x);
    if (!c) return -1;
    memcpy(buf + k * H, tf_f32(c), (size_t)H * sizeof *buf);
    return 0;
}

static tf_tensor *state_tensor(tf_ctx *ctx, const float *buf, int64_t H, int k) {
    tf_tensor *t = tf_tensor_new(ctx, TF_DTYPE_F32, 2, (int64_t[]){1, H}, 0);  // (1,H)
    if (t) memcpy(t->data, buf + k * H, (size_t)H * sizeof *buf);
    return t;
}

static int cap_step(tf_decoder *d, const int32_t *tokens, int n, float *logits) {
    cap_decoder *g = (cap_decoder *)d;
    int64_t H = g->m->cfg.hidden, V = g->m->cfg.vocab;
    int lstm = g->m->cfg.cell == TF_RNN_LSTM;
    tf_ctx *ctx = g->sh->step;
    tf_ctx_reset(ctx);
    tf_tensor *ids = tf_tensor_new(ctx, TF_DTYPE_I32, 2, (int64_t[]){1, n}, 0);  // (1,n)
    int rnn = !g->cache;
    tf_rnn_state st = {rnn ? state_tensor(ctx, g->s, H, 0) : NULL, rnn && lstm ? state_tensor(ctx, g->s, H, 1) : NULL};
    if (!ids || (rnn && !st.h) || (rnn && lstm && !st.c)) return -1;
    memcpy(ids->data, tokens, (size_t)n * sizeof *tokens);
    tf_caption_inputs in = {.input_ids = ids, .annotations = g->sh->annotations, .keys = g->sh->keys,
                            .state = rnn ? &st : NULL, .cache = g->cache, .cross_cache = g->cross};
    tf_caption_outputs out;
    if (tf_caption_run(ctx, g->m, &in, &out) || (rnn && keep(ctx, g->s, out.state.h, H, 0)) ||
        (rnn && lstm && keep(ctx, g->s, out.state.c, H, 1)))
        return -1;
    memcpy(logits, tf_f32(out.logits) + (int64_t)(n - 1) * V, (size_t)V * sizeof *logits);  // the last word's (V)
    return 0;
}

static void cap_free(tf_decoder *d) {
    cap_decoder *g = (cap_decoder *)d;
    shared_free(g->sh);
    tf_kv_cache_free(g->cache), tf_kv_cache_free(g->cross);
    free(g->s), free(g);
}

static void cap_reset(tf_decoder *d) {
    cap_decoder *g = (cap_decoder *)d;
    if (g->hidden) memcpy(g->s, g->sh->s0, 2 * (size_t)g->hidden * sizeof *g->s);
    if (g->cache) tf_kv_cache_reset(g->cache), tf_kv_cache_reset(g->cross);
}

static tf_decoder *cap_fork(const tf_decoder *d) {
    const cap_decoder *g = (const cap_decoder *)d;
    cap_decoder *f = malloc(sizeof *f);
    size_t bytes = 2 * (size_t)g->hidden * sizeof *f->s;
    float *st = bytes ? malloc(bytes) : NULL;
    if (!f || (bytes && !st)) return free(f), free(st), tf_set_error("decoder: out of memory"), NULL;
    *f = *g, f->s = st, f->cache = f->cross = NULL;
    f->sh->refs++;
    if (bytes) memcpy(f->s, g->s, bytes);
    if (g->cache && (!(f->cache = tf_kv_cache_fork(g->cache)) || !(f->cross = tf_kv_cache_fork(g->cross))))
        return cap_free(&f->base), tf_set_error("decoder: out of memory"), NULL;
    return &f->base;
}

static const tf_decoder_vt CAPTION_DECODER = {cap_step, cap_fork, cap_reset, cap_free, NULL, NULL, NULL};

/* The image through the encoder: annotations and keys kept in sh->mem, h_0 (c_0) in sh->s0. */
static int encode_image(shared *sh, const tf_caption *m, const float *pixels) {
    const tf_caption_config *c = &m->cfg;
    int64_t H = c->hidden, S = c->image_size;
    if (!(sh->mem = tf_ctx_new(0)) || !(sh->step = tf_ctx_new(0)) || !(sh->s0 = calloc(2 * (size_t)H, sizeof *sh->s0)))
        return tf_set_error("decoder: out of memory");
    tf_ctx_set_grad(sh->mem, 0), tf_ctx_set_grad(sh->step, 0);
    tf_tensor *x = tf_tensor_new(sh->mem, TF_DTYPE_F32, 4, (int64_t[]){1, c->channels, S, S}, 0);  // (1,C,S,S)
    if (!x) return -1;
    memcpy(x->data, pixels, (size_t)tf_numel(x) * sizeof *pixels);
    tf_caption_outputs out;
    if (tf_caption_run(sh->mem, m, &(tf_caption_inputs){.pixel_values = x}, &out)) return -1;
    sh->annotations = out.annotations, sh->keys = out.keys;
    if (c->decoder == TF_CAPTION_TRANSFORMER) return 0; /* no state: the caches */
    return keep(sh->mem, sh->s0, out.state.h, H, 0) || (out.state.c && keep(sh->mem, sh->s0, out.state.c, H, 1));
}

tf_decoder *tf_caption_decoder_new(const tf_caption *m, const float *pixels) {
    if (!m || !pixels) return tf_set_error("caption: no model or no image"), NULL;
    if (m->ved) return tf_caption_ved_decoder_new(m->ved, pixels); /* the ViT captioner's (pixels normalised there) */
    cap_decoder *g = calloc(1, sizeof *g);
    if (!g || !(g->sh = calloc(1, sizeof *g->sh)) || !(g->s = calloc(2 * (size_t)m->cfg.hidden, sizeof *g->s))) {
        if (g) free(g->sh);
        free(g);
        return tf_set_error("decoder: out of memory"), NULL;
    }
    g->base = (tf_decoder){&CAPTION_DECODER, m->cfg.vocab, m->cfg.context, 0, 0, 1};
    g->m = m, g->hidden = m->cfg.hidden, g->sh->refs = 1;
    const tf_caption_config *c = &m->cfg;
    int N = tf_caption_grid(c) * tf_caption_grid(c), hd = c->hidden / c->n_head;
    if (c->decoder == TF_CAPTION_TRANSFORMER && (!(g->cache = tf_kv_cache_new(c->n_layer, 1, c->n_head, hd, c->context)) ||
                                                 !(g->cross = tf_kv_cache_new(c->n_layer, 1, c->n_head, hd, N)))) {
        cap_free(&g->base);
        return NULL;
    }
    if (encode_image(g->sh, m, pixels)) {
        cap_free(&g->base);
        return NULL;
    }
    cap_reset(&g->base);
    return &g->base;
}

/* ---------------------------------------------------------------- a caption */

/* Each word's attention: the full forward over BOS + the n words, (n + 1) rows of N. */
static int attention_maps(const tf_caption *m, const float *pixels, const int32_t *ids, int n, float *attention) {
    const tf_caption_config *c = &m->cfg;
    int64_t S = c->image_size, G = tf_caption_grid(c);
    tf_ctx *ctx = tf_ctx_new(0);
    if (!ctx) return tf_set_error("caption: out of memory");
    tf_ctx_set_grad(ctx, 0);
    tf_tensor *x = tf_tensor_new(ctx, TF_DTYPE_F32, 4, (int64_t[]){1, c->channels, S, S}, 0);  // (1,C,S,S)
    tf_tensor *y = tf_tensor_new(ctx, TF_DTYPE_I32, 2, (int64_t[]){1, n + 1}, 0);               // (1,n+1)
    tf_caption_outputs out;
    int rc = -1;
    if (x && y) {
        memcpy(x->data, pixels, (size_t)tf_numel(x) * sizeof *pixels);
        tf_i32(y)[0] = c->vocab - 2; /* BOS */
        memcpy(tf_i32(y) + 1, ids, (size_t)n * sizeof *ids);
        tf_caption_inputs in = {.pixel_values = x, .input_ids = y, .output_attentions = 1};
        rc = tf_caption_run(ctx, m, &in, &out);
    }
    if (!rc) memcpy(attention, tf_f32(out.attentions), (size_t)((n + 1) * G * G) * sizeof *attention);  // (1,n+1,N)
    tf_ctx_free(ctx);
    return rc;
}

int tf_caption_generate(const tf_caption *m, const float *pixels, const tf_generate_opts *o, int32_t *ids, int cap,
                        int *n, float *attention) {
    /* The ViT captioner as its folder captions (and transformers' generate): no ids banned. */
    if (m->ved) return tf_caption_ved_generate(m->ved, pixels, o, ids, cap, n, attention);
    tf_generate_opts g = *o;
    const int32_t banned[] = {m->cfg.vocab - 3, m->cfg.vocab - 2}; /* padding, BOS */
    if (g.eos_id < 0) g.eos_id = m->cfg.vocab - 1;
    if (g.max_tokens <= 0 || g.max_tokens > m->cfg.context - 1) g.max_tokens = m->cfg.context - 1;
    if (!g.n_bad_ids) g.bad_ids = banned, g.n_bad_ids = 2;
    if (m->cfg.vocab != tf_caption_grammar_vocab(m->cfg.grammar))
        return tf_set_error("caption: a vocabulary of %d words: its grammar's is %d", m->cfg.vocab,
                            tf_caption_grammar_vocab(m->cfg.grammar));
    tf_decoder *d = tf_caption_decoder_new(m, pixels);
    tf_ids out = {0};
    int32_t bos = m->cfg.vocab - 2;
    int rc = d ? tf_generate(d, &bos, 1, &g, NULL, NULL, &out, NULL) : -1;
    tf_decoder_free(d);
    size_t k = out.n && out.v[out.n - 1] == g.eos_id ? out.n - 1 : out.n;
    if (!rc && k > (size_t)cap) rc = tf_set_error("caption: %zu words do not fit in %d", k, cap);
    if (!rc) memcpy(ids, out.v, k * sizeof *ids), *n = (int)k;
    tf_ids_free(&out);
    if (!rc && attention && m->cfg.attention) rc = attention_maps(m, pixels, ids, *n, attention);
    return rc;
}

/* ---------------------------------------------------------------- a VisionEncoderDecoderModel's */

static int ved_step(tf_decoder *d, const int32_t *tokens, int n, float *logits) {
    cap_decoder *g = (cap_decoder *)d;
    int64_t V = tf_caption_ved_decoder_dims(g->ved).vocab;
    tf_ctx *ctx = g->sh->step;
    tf_ctx_reset(ctx);
    tf_tensor *ids = tf_tensor_new(ctx, TF_DTYPE_I32, 2, (int64_t[]){1, n}, 0);  // (1,n)
    if (!ids) return -1;
    memcpy(ids->data, tokens, (size_t)n * sizeof *tokens);
    tf_caption_ved_inputs in = {.memory = g->sh->annotations, .decoder_input_ids = ids, .cache = g->cache,
                                .cross_cache = g->cross};
    tf_caption_ved_outputs out;
    if (tf_caption_ved_run(ctx, g->ved, &in, &out)) return -1;
    memcpy(logits, tf_f32(out.logits) + (int64_t)(n - 1) * V, (size_t)V * sizeof *logits);  // the last id's (V)
    return 0;
}

static const tf_decoder_vt VED_DECODER = {ved_step, cap_fork, cap_reset, cap_free, NULL, NULL, NULL};

tf_decoder *tf_caption_ved_decoder_new(const tf_caption_ved *m, const float *pixels) {
    if (!m || !pixels) return tf_set_error("caption: no model or no image"), NULL;
    tf_caption_ved_dims dims = tf_caption_ved_decoder_dims(m);
    const tf_caption_ved_dims *c = &dims;
    int N = tf_vit_patches(&m->encoder->cfg) + 1, hd = c->d_model / c->n_head;
    cap_decoder *g = calloc(1, sizeof *g);
    if (!g || !(g->sh = calloc(1, sizeof *g->sh))) return free(g), tf_set_error("decoder: out of memory"), NULL;
    g->base = (tf_decoder){&VED_DECODER, c->vocab, c->context, 0, 0, 1};
    g->ved = m, g->sh->refs = 1;
    tf_caption_ved_outputs out;
    int rc = !(g->cache = tf_kv_cache_new(c->n_layer, 1, c->n_head, hd, c->context)) ||
             !(g->cross = tf_kv_cache_new(c->n_layer, 1, c->n_head, hd, N)) || !(g->sh->mem = tf_ctx_new(0)) ||
             !(g->sh->step = tf_ctx_new(0));
    if (!rc) {
        tf_ctx_set_grad(g->sh->mem, 0), tf_ctx_set_grad(g->sh->step, 0);
        tf_tensor *x = tf_caption_ved_pixels(g->sh->mem, m, pixels);
        rc = !x || tf_caption_ved_run(g->sh->mem, m, &(tf_caption_ved_inputs){.pixel_values = x}, &out);
    }
    if (rc) return cap_free(&g->base), NULL;
    g->sh->annotations = out.memory;
    return &g->base;
}
