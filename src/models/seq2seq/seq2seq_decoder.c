/* The decoder interface over an encoder-decoder, for one source sentence or
 * a batch of them: the sources are encoded once (padded to the longest, the
 * padding masked) and each step runs tf_seq2seq_run (the one forward pass)
 * on every row's new target tokens through the self-attention KV cache, with
 * the stored memory. The cross-attentions project the memory into keys and
 * values on the first step, into a cache, and read them after.
 * Rows are re-selected by beam search (a hypothesis' children, sentences
 * that ended dropped): the self-attention caches follow; the sources stay,
 * each read by its rows through the cross caches' row map (a sentence's
 * beams share one copy of its keys and values), and are gathered into a
 * second context (the two alternate) only when a sentence ends. A fork (a
 * single hypothesis' copy) shares the sources. */
#include <stdlib.h>
#include <string.h>

#include "../../nn/nn_internal.h"
#include "../source_batch.h"
#include "tformer/seq2seq.h"

typedef struct {
    tf_source_batch b;   /* the sources; the tensors below live in b.mem_ctx[b.cur] too */
    tf_tensor *memory;   /* (G,S,C): G sources, one per row until beams share them */
    tf_kv_cache *cross;  /* per decoder layer (G,H,S,D) keys and values of the memory; row i reads source
                            map[i] through its row map (none: row i reads source i) */
    int refs;
} shared;

typedef struct {
    tf_decoder base;
    const tf_seq2seq *m;
    tf_kv_cache *cache;
    shared *sh;
    const float *logits; /* (rows,V): the last step's, in the step context (a step given NULL) */
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
    tf_source_batch_last(logits, tf_f32(out.logits), R, n, V);
    g->logits = logits ? NULL : tf_f32(out.logits);
    return 0;
}

static const float *s2s_logits(const tf_decoder *d) { return ((const s2s_decoder *)d)->logits; }

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

/* The sources' rows src[0..n) kept (the memory, ids, masks, cross-attention caches) as the new G = n. */
static int keep_sources(shared *sh, const int *src, int n) {
    tf_ctx *next = sh->b.mem_ctx[!sh->b.cur];
    tf_ctx_reset(next);
    tf_tensor *memory = tf_tensor_gather_rows(next, sh->memory, src, n), *ids = tf_tensor_gather_rows(next, sh->b.src_ids, src, n);
    tf_tensor *mask = sh->b.src_mask ? tf_tensor_gather_rows(next, sh->b.src_mask, src, n) : NULL;
    if (!memory || !ids || (sh->b.src_mask && !mask) || tf_kv_cache_select(sh->cross, src, n)) return -1;
    sh->memory = memory, sh->b.src_ids = ids, sh->b.src_mask = mask, sh->b.cur = !sh->b.cur;
    return 0;
}

/* Row i becomes old row rows[i]. The self-attention caches move; the
 * sources do not: row i reads source map[i] through the cross caches' row
 * map, the sources no row reads dropped (a sentence ended) — before the
 * cross caches are filled (no step yet), the sources move with the rows. */
static int select_rows(shared *sh, tf_kv_cache *cache, const int *rows, int n, int *map, int *renum, int *keep) {
    int n_old, G = (int)sh->memory->shape[0], kept = 0;
    const int *old = tf_kv_cache_row_map(sh->cross, &n_old);
    if (tf_kv_cache_select(cache, rows, n)) return -1;
    if (tf_kv_cache_len(sh->cross) == 0) return keep_sources(sh, rows, n);
    for (int i = 0; i < n; i++) map[i] = old ? old[rows[i]] : rows[i];
    for (int g = 0; g < G; g++) renum[g] = -1;
    for (int i = 0; i < n; i++) renum[map[i]] = 0;
    for (int g = 0; g < G; g++)
        if (!renum[g]) renum[g] = kept, keep[kept++] = g;
    if (kept < G && keep_sources(sh, keep, kept)) return -1;
    int identity = n == kept;
    for (int i = 0; i < n; i++) map[i] = renum[map[i]], identity &= map[i] == i;
    return tf_kv_cache_share_rows(sh->cross, identity ? NULL : map, n);
}

static int s2s_select(tf_decoder *d, const int *rows, int n) {
    s2s_decoder *g = (s2s_decoder *)d;
    shared *sh = g->sh;
    if (sh->refs > 1) return tf_set_error("decoder: a forked decoder shares its sources and cannot select rows");
    size_t G = (size_t)sh->memory->shape[0];
    int *buf = malloc(((size_t)n + 2 * G) * sizeof *buf);
    if (!buf) return tf_set_error("decoder: out of memory");
    int rc = select_rows(sh, g->cache, rows, n, buf, buf + n, buf + n + G);
    free(buf);
    return rc;
}

static const tf_decoder_vt S2S_DECODER = {s2s_step, s2s_fork, s2s_reset, s2s_free, s2s_select, NULL, s2s_logits};

/* The sources (padded to S, masked when their lengths differ) through the encoder. */
static int encode_sources(shared *sh, const tf_seq2seq *m, const int32_t *const *src, const int *n_src, int R, int S) {
    if (tf_source_batch_init(&sh->b, src, n_src, R, S)) return -1;
    tf_seq2seq_inputs in = {.input_ids = sh->b.src_ids, .attention_mask = sh->b.src_mask}; /* the encoder alone */
    tf_seq2seq_outputs out;
    if (tf_seq2seq_run(sh->b.step_ctx, m, &in, &out)) return -1; /* its activations: scratch */
    return !(sh->memory = tf_source_batch_keep(&sh->b, out.encoder_last_hidden_state)) ? -1 : 0;
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
