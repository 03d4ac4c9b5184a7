/* The decoder interface over a GPT: each step runs the model's one forward
 * pass (tf_gpt_run's code) on the new tokens through a KV cache. A decoder
 * and its forks share one activation context (they step one at a time). */
#include <stdlib.h>
#include <string.h>

#include "gpt_internal.h"

typedef struct {
    tf_ctx *ctx;
    int refs;
} shared_ctx;

typedef struct {
    tf_decoder base;
    const tf_gpt *m;
    tf_kv_cache *cache;
    shared_ctx *sh;
} gpt_decoder;

static int gpt_step(tf_decoder *d, const int32_t *tokens, int n, float *logits) {
    gpt_decoder *g = (gpt_decoder *)d;
    tf_ctx_reset(g->sh->ctx);
    return tf_gpt_next_logits(g->sh->ctx, g->m, g->cache, tokens, n, logits);
}

/* Decoders over one model stepped together (tf_gpt_step_rows) in the first one's context;
 * over several models: an error (each then steps alone). */
static int gpt_step_rows(tf_decoder *const *d, int n, const int32_t *tokens, float *const *logits) {
    const gpt_decoder *g0 = (const gpt_decoder *)d[0];
    tf_kv_cache *few[64], **caches = n <= 64 ? few : malloc((size_t)n * sizeof *caches);
    float *y = malloc((size_t)n * (size_t)g0->base.vocab_size * sizeof *y);  // (n,V)
    int rc = caches && y ? 0 : tf_set_error("decoder: out of memory");
    for (int i = 0; !rc && i < n; i++) {
        const gpt_decoder *g = (const gpt_decoder *)d[i];
        if (g->m != g0->m) rc = tf_set_error("decoder: rows of different models");
        caches[i] = g->cache;
    }
    if (!rc) tf_ctx_reset(g0->sh->ctx), rc = tf_gpt_step_rows(g0->sh->ctx, g0->m, caches, tokens, n, y);
    for (int i = 0; !rc && i < n; i++)
        memcpy(logits[i], y + (size_t)i * (size_t)g0->base.vocab_size, (size_t)g0->base.vocab_size * sizeof *y);
    if (caches != few) free(caches);
    free(y);
    return rc;
}

static void gpt_free(tf_decoder *d) {
    gpt_decoder *g = (gpt_decoder *)d;
    tf_kv_cache_free(g->cache);
    if (g->sh && --g->sh->refs == 0) tf_ctx_free(g->sh->ctx), free(g->sh);
    free(g);
}

static void gpt_reset(tf_decoder *d) { tf_kv_cache_reset(((gpt_decoder *)d)->cache); }

static tf_decoder *gpt_fork(const tf_decoder *d) {
    const gpt_decoder *g = (const gpt_decoder *)d;
    gpt_decoder *f = malloc(sizeof *f);
    if (!f) return tf_set_error("decoder: out of memory"), NULL;
    *f = *g;
    if (!(f->cache = tf_kv_cache_fork(g->cache))) return free(f), NULL;
    f->sh->refs++;
    return &f->base;
}

static const tf_decoder_vt GPT_DECODER = {gpt_step, gpt_fork, gpt_reset, gpt_free, NULL, gpt_step_rows, NULL};

tf_decoder *tf_gpt_decoder_new(const tf_gpt *m, int capacity) {
    if (!m->has_head) return tf_set_error("decoder: the model has no language-model head"), NULL;
    gpt_decoder *g = calloc(1, sizeof *g);
    if (!g) return tf_set_error("decoder: out of memory"), NULL;
    g->base = (tf_decoder){&GPT_DECODER, m->cfg.vocab_size, capacity < m->cfg.context ? capacity : m->cfg.context, 1, 0, 1};
    g->m = m;
    if ((g->sh = calloc(1, sizeof *g->sh))) g->sh->refs = 1, g->sh->ctx = tf_ctx_new(0);
    if (!g->sh || !g->sh->ctx) {
        gpt_free(&g->base);
        return tf_set_error("decoder: out of memory"), NULL;
    }
    if (!(g->cache = tf_gpt_cache_new(m, 1, g->base.capacity))) return gpt_free(&g->base), NULL;
    tf_ctx_set_grad(g->sh->ctx, 0);
    return &g->base;
}

tf_decoder *tf_gpt_decoder_for(const tf_gpt *m, int n_prompt, int max_tokens) {
    int64_t want = (int64_t)n_prompt + (max_tokens > 0 ? max_tokens : 0);
    if (n_prompt > m->cfg.context)
        return tf_set_error("generate: the prompt has %d tokens, more than the context of %d", n_prompt, m->cfg.context),
               NULL;
    return tf_gpt_decoder_new(m, want < m->cfg.context ? (int)(want > 0 ? want : 1) : m->cfg.context);
}

int tf_gpt_generate(const tf_gpt *m, const int32_t *prompt, int n_prompt, const tf_generate_opts *o,
                    tf_token_fn on_token, void *user, tf_ids *out, double *score) {
    tf_decoder *d = tf_gpt_decoder_for(m, n_prompt, o->max_tokens);
    if (!d) return -1;
    int rc = tf_generate(d, prompt, n_prompt, o, on_token, user, out, score);
    tf_decoder_free(d);
    return rc;
}
