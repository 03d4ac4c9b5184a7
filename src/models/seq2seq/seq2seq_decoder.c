/* The decoder interface over an encoder-decoder, for one source sentence or
 * a batch of them: the sources are encoded once (padded to the longest, the
 * padding masked) and each step runs tf_seq2seq_run (the one forward pass)
 * on every row's new target tokens through the self-attention KV cache, with
 * the stored memory. The cross-attentions project the memory into keys and
 * values on the first step, into a cache, and read them after.
 * Rows are re-selected by beam search (a hypothesis' children, sentences
 * that ended dropped): the self- and cross-attention caches, the memory and
 * the sources' masks follow, gathered into a second context (the two
 * alternate). A fork (a single hypothesis' copy) shares the sources. */
#include <stdlib.h>
#include <string.h>

#include "../../core/internal.h"
#include "../source_batch.h"
#include "tformer/seq2seq.h"

typedef struct {
    tf_source_batch b;   /* the sources; the tensors below live in b.mem_ctx[b.cur] too */
    tf_tensor *memory;   /* (R,S,C) */
    tf_kv_cache *cross;  /* per decoder layer (R,H,S,D) keys and values of the memory */
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
    tf_ctx *ctx = g->sh->b.step_ctx;
    int64_t R = d->rows, V = g->m->cfg.tgt_vocab;
    tf_ctx_reset(ctx);
    tf_tensor *ids = tf_tensor_new(ctx, TF_DTYPE_I32, 2, (int64_t[]){R, n}, 0);  // (R,n)
    if (!ids) return -1;
    memcpy(ids->data, tokens, (size_t)(R * n) * sizeof *tokens);
    tf_seq2seq_inputs in = {.input_ids = g->sh->b.src_ids, .attention_mask = g->sh->b.src_mask, .decoder_input_ids = ids,
                            .encoder_output = g->sh->memory, .cache = g->cache, .cross_cache = g->sh->cross};
    tf_seq2seq_outputs out;
    if (tf_seq2seq_run(ctx, g->m, &in, &out)) return -1;
    for (int64_t r = 0; r < R; r++) /* each row's last position (V) */
        memcpy(logits + r * V, tf_f32(out.logits) + (r * n + n - 1) * V, (size_t)V * sizeof *logits);
    return 0;
}

static void shared_free(shared *sh) {
    if (!sh || --sh->refs > 0) return;
    tf_kv_cache_free(sh->cross);
    tf_source_batch_free(&sh->b);
    free(sh);
}

static void s2s_free(tf_decoder *d) {
    s2s_decoder *g = (s2s_decoder *)d;
    tf_kv_cache_free(g->cache);
    shared_free(g->sh);
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

static int s2s_select(tf_decoder *d, const int *rows, int n) {
    s2s_decoder *g = (s2s_decoder *)d;
    shared *sh = g->sh;
    if (sh->refs > 1) return tf_set_error("decoder: a forked decoder shares its sources and cannot select rows");
    tf_ctx *next = sh->b.mem_ctx[!sh->b.cur];
    tf_ctx_reset(next);
    tf_tensor *memory = tf_tensor_gather_rows(next, sh->memory, rows, n), *ids = tf_tensor_gather_rows(next, sh->b.src_ids, rows, n);
    tf_tensor *mask = sh->b.src_mask ? tf_tensor_gather_rows(next, sh->b.src_mask, rows, n) : NULL;
    if (!memory || !ids || (sh->b.src_mask && !mask) || tf_kv_cache_select(g->cache, rows, n) ||
        tf_kv_cache_select(sh->cross, rows, n))
        return -1;
    sh->memory = memory, sh->b.src_ids = ids, sh->b.src_mask = mask, sh->b.cur = !sh->b.cur;
    return 0;
}

static const tf_decoder_vt S2S_DECODER = {s2s_step, s2s_fork, s2s_reset, s2s_free, s2s_select};

/* The sources (padded to S, masked when their lengths differ) through the encoder. */
static int encode_sources(shared *sh, const tf_seq2seq *m, const int32_t *const *src, const int *n_src, int R, int S) {
    if (tf_source_batch_init(&sh->b, src, n_src, R, S)) return -1;
    tf_ctx *ctx = sh->b.mem_ctx[0];
    tf_seq2seq_inputs in = {.input_ids = sh->b.src_ids, .attention_mask = sh->b.src_mask}; /* the encoder alone */
    tf_seq2seq_outputs out;
    if (tf_seq2seq_run(ctx, m, &in, &out)) return -1;
    sh->memory = out.encoder_last_hidden_state;
    return 0;
}

tf_decoder *tf_seq2seq_decoder_new_batch(const tf_seq2seq *m, const int32_t *const *src, const int *n_src, int n,
                                         int capacity) {
    const tf_seq2seq_config *c = &m->cfg;
    int S;
    if (tf_source_batch_check(n_src, n, c->context, &S)) return NULL;
    s2s_decoder *g = calloc(1, sizeof *g);
    if (!g) return tf_set_error("decoder: out of memory"), NULL;
    int cap = capacity > 0 && capacity < c->context ? capacity : c->context;
    g->base = (tf_decoder){&S2S_DECODER, c->tgt_vocab, cap, 0, 0, n};
    g->m = m;
    if (!(g->sh = calloc(1, sizeof *g->sh))) {
        free(g);
        return tf_set_error("decoder: out of memory"), NULL;
    }
    g->sh->refs = 1;
    int L = c->n_decoder_layers, H = c->n_head, D = c->d_model / c->n_head;
    if (encode_sources(g->sh, m, src, n_src, n, S) || !(g->cache = tf_kv_cache_new(L, n, H, D, cap)) ||
        !(g->sh->cross = tf_kv_cache_new(L, n, H, D, S))) {
        s2s_free(&g->base);
        return NULL;
    }
    return &g->base;
}

tf_decoder *tf_seq2seq_decoder_new(const tf_seq2seq *m, const int32_t *src, int n_src, int capacity) {
    return tf_seq2seq_decoder_new_batch(m, &src, &n_src, 1, capacity);
}
