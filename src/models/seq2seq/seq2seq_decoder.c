/* The decoder interface over an encoder-decoder: the source is encoded once
 * into a context of its own that every fork shares; each step runs
 * tf_seq2seq_run (the one forward pass) on the new target tokens through
 * the self-attention KV cache, with the stored memory. A decoder and its
 * forks share one activation context too (they step one at a time).
 * The cross-attentions project the memory into keys and values on the
 * first step, into a cache every fork shares (the same source), and read
 * them after. */
#include <stdlib.h>
#include <string.h>

#include "../../core/internal.h"
#include "tformer/seq2seq.h"

typedef struct {
    tf_ctx *mem_ctx, *step_ctx;
    tf_tensor *memory;   /* (1,S,C) */
    tf_tensor *src_ids;  /* (1,S) */
    tf_kv_cache *cross;  /* per decoder layer (1,H,S,D) keys and values of the memory */
    int refs;
} shared;

typedef struct {
    tf_decoder base;
    const tf_seq2seq *m;
    tf_kv_cache *cache;
    shared *sh;
} s2s_decoder;

static int s2s_step(tf_decoder *d, const int32_t *tokens, int n, float *logits) {
    s2s_decoder *g = (s2s_decoder *)d;
    tf_ctx *ctx = g->sh->step_ctx;
    tf_ctx_reset(ctx);
    tf_tensor *ids = tf_tensor_new(ctx, TF_DTYPE_I32, 2, (int64_t[]){1, n}, 0);  // (1,n)
    if (!ids) return -1;
    memcpy(ids->data, tokens, (size_t)n * sizeof *tokens);
    tf_seq2seq_inputs in = {.input_ids = g->sh->src_ids, .decoder_input_ids = ids, .encoder_output = g->sh->memory,
                            .cache = g->cache, .cross_cache = g->sh->cross};
    tf_seq2seq_outputs out;
    if (tf_seq2seq_run(ctx, g->m, &in, &out)) return -1;
    int64_t V = g->m->cfg.tgt_vocab;
    memcpy(logits, tf_f32(out.logits) + (int64_t)(n - 1) * V, (size_t)V * sizeof *logits);  // the last position's (V)
    return 0;
}

static void s2s_free(tf_decoder *d) {
    s2s_decoder *g = (s2s_decoder *)d;
    tf_kv_cache_free(g->cache);
    if (g->sh && --g->sh->refs == 0)
        tf_kv_cache_free(g->sh->cross), tf_ctx_free(g->sh->mem_ctx), tf_ctx_free(g->sh->step_ctx), free(g->sh);
    free(g);
}

static void s2s_reset(tf_decoder *d) { tf_kv_cache_reset(((s2s_decoder *)d)->cache); }

static tf_decoder *s2s_fork(const tf_decoder *d) {
    const s2s_decoder *g = (const s2s_decoder *)d;
    s2s_decoder *f = malloc(sizeof *f);
    if (!f) return tf_set_error("decoder: out of memory"), NULL;
    *f = *g;
    if (!(f->cache = tf_kv_cache_fork(g->cache))) return free(f), NULL;
    f->sh->refs++;
    return &f->base;
}

static const tf_decoder_vt S2S_DECODER = {s2s_step, s2s_fork, s2s_reset, s2s_free};

/* The source through the encoder, kept in the shared memory context. */
static int encode_source(shared *sh, const tf_seq2seq *m, const int32_t *src, int n_src) {
    if (!(sh->src_ids = tf_tensor_new(sh->mem_ctx, TF_DTYPE_I32, 2, (int64_t[]){1, n_src}, 0))) return -1;
    memcpy(sh->src_ids->data, src, (size_t)n_src * sizeof *src);
    tf_seq2seq_inputs in = {.input_ids = sh->src_ids}; /* no target: the encoder alone */
    tf_seq2seq_outputs out;
    if (tf_seq2seq_run(sh->mem_ctx, m, &in, &out)) return -1;
    sh->memory = out.encoder_last_hidden_state;
    return 0;
}

tf_decoder *tf_seq2seq_decoder_new(const tf_seq2seq *m, const int32_t *src, int n_src, int capacity) {
    const tf_seq2seq_config *c = &m->cfg;
    if (n_src < 1 || n_src > c->context)
        return tf_set_error("translate: a source of %d tokens (1 to the context of %d)", n_src, c->context), NULL;
    s2s_decoder *g = calloc(1, sizeof *g);
    if (!g) return tf_set_error("decoder: out of memory"), NULL;
    int cap = capacity > 0 && capacity < c->context ? capacity : c->context;
    g->base = (tf_decoder){&S2S_DECODER, c->tgt_vocab, cap, 0, 0};
    g->m = m;
    if ((g->sh = calloc(1, sizeof *g->sh))) {
        g->sh->refs = 1;
        g->sh->mem_ctx = tf_ctx_new(0), g->sh->step_ctx = tf_ctx_new(0);
    }
    if (!g->sh || !g->sh->mem_ctx || !g->sh->step_ctx) {
        s2s_free(&g->base);
        return tf_set_error("decoder: out of memory"), NULL;
    }
    tf_ctx_set_grad(g->sh->mem_ctx, 0), tf_ctx_set_grad(g->sh->step_ctx, 0);
    int L = c->n_decoder_layers, H = c->n_head, D = c->d_model / c->n_head;
    if (encode_source(g->sh, m, src, n_src) || !(g->cache = tf_kv_cache_new(L, 1, H, D, cap)) ||
        !(g->sh->cross = tf_kv_cache_new(L, 1, H, D, n_src))) {
        s2s_free(&g->base);
        return NULL;
    }
    return &g->base;
}
