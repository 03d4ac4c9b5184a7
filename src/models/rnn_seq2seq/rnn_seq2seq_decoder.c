/* The decoder interface over the RNN encoder-decoder, for one source or a
 * batch of them (padded to the longest, masked): the sources are encoded
 * once (annotations h_j and keys U_a h_j); each step runs tf_rnn_seq2seq_run
 * (the one forward) on every row's new tokens from the kept states s (and
 * c) and keeps the last token's alignment alpha. Select gathers the rows'
 * states and sources (into a second context; the two alternate); fork
 * (one row) copies s, c and alpha; reset goes back to s_0. */
#include <stdlib.h>
#include <string.h>

#include "../../core/core_internal.h"
#include "../source_batch.h"
#include "tformer/rnn_seq2seq.h"

typedef struct {
    tf_source_batch b;                   /* the sources; the tensors below live in b.mem_ctx[b.cur] too */
    tf_tensor *annotations, *keys;       /* (R,S,2H), (R,S,A) */
    float *s0;                           /* (R,2,H): s_0, then c_0 */
    int refs;
} shared;

typedef struct {
    tf_decoder base;
    const tf_rnn_seq2seq *m;
    shared *sh;
    float *s;     /* (R,2,H): s, then c (LSTM) */
    float *alpha; /* (R,S): the last step's alignments */
    int has_alpha;
    const float *logits; /* (R,V): the last step's, in the step context (a step given NULL) */
} rnn_decoder;

static int64_t n_src(const rnn_decoder *g) { return g->sh->b.src_ids->shape[1]; }

/* (R,H) tensor of half k (0: s, 1: c) of the rows' states buf (R,2,H). */
static tf_tensor *state_tensor(tf_ctx *ctx, const float *buf, int64_t R, int64_t H, int k) {
    tf_tensor *t = tf_tensor_new(ctx, TF_DTYPE_F32, 2, (int64_t[]){R, H}, 0);
    for (int64_t r = 0; t && r < R; r++) memcpy(tf_f32(t) + r * H, buf + (2 * r + k) * H, (size_t)H * sizeof *buf);
    return t;
}

/* Rows of x (R,H), any strides, into half k of buf (R,2,H). */
static int keep_state(tf_ctx *ctx, float *buf, tf_tensor *x, int64_t R, int64_t H, int k) {
    tf_tensor *c = tf_contiguous(ctx, x);
    if (!c) return -1;
    for (int64_t r = 0; r < R; r++) memcpy(buf + (2 * r + k) * H, tf_f32(c) + r * H, (size_t)H * sizeof *buf);
    return 0;
}

static int rnn_step(tf_decoder *d, const int32_t *tokens, int n, float *logits) {
    rnn_decoder *g = (rnn_decoder *)d;
    const tf_rnn_seq2seq_config *c = &g->m->cfg;
    int64_t H = c->hidden, V = c->tgt_vocab, S = n_src(g), R = d->rows;
    int lstm = c->cell == TF_RNN_LSTM;
    tf_ctx *ctx = g->sh->b.step_ctx;
    tf_ctx_reset(ctx);
    tf_tensor *ids = tf_tensor_new(ctx, TF_DTYPE_I32, 2, (int64_t[]){R, n}, 0);  // (R,n)
    tf_rnn_state st = {state_tensor(ctx, g->s, R, H, 0), lstm ? state_tensor(ctx, g->s, R, H, 1) : NULL};
    if (!ids || !st.h || (lstm && !st.c)) return -1;
    memcpy(ids->data, tokens, (size_t)(R * n) * sizeof *tokens);
    tf_rnn_seq2seq_inputs in = {.input_ids = g->sh->b.src_ids, .attention_mask = g->sh->b.src_mask,
                                .decoder_input_ids = ids, .output_attentions = 1,
                                .encoder_output = g->sh->annotations, .keys = g->sh->keys, .state = &st};
    tf_rnn_seq2seq_outputs out;
    if (tf_rnn_seq2seq_run(ctx, g->m, &in, &out) || keep_state(ctx, g->s, out.state.h, R, H, 0) ||
        (lstm && keep_state(ctx, g->s, out.state.c, R, H, 1)))
        return -1;
    tf_source_batch_last(logits, tf_f32(out.logits), R, n, V);
    for (int64_t r = 0; r < R; r++) /* each row's last alignment (S) */
        memcpy(g->alpha + r * S, tf_f32(out.attentions) + (r * n + n - 1) * S, (size_t)S * sizeof *g->alpha);
    g->logits = logits ? NULL : tf_f32(out.logits), g->has_alpha = 1;
    return 0;
}

static const float *rnn_logits(const tf_decoder *d) { return ((const rnn_decoder *)d)->logits; }

static void shared_free(shared *sh) {
    if (!sh || --sh->refs > 0) return;
    tf_source_batch_free(&sh->b);
    free(sh->s0), free(sh);
}

static void rnn_free(tf_decoder *d) {
    rnn_decoder *g = (rnn_decoder *)d;
    shared_free(g->sh);
    free(g->s), free(g->alpha);
    free(g);
}

static void rnn_reset(tf_decoder *d) {
    rnn_decoder *g = (rnn_decoder *)d;
    memcpy(g->s, g->sh->s0, 2 * (size_t)d->rows * (size_t)g->m->cfg.hidden * sizeof *g->s);
    g->has_alpha = 0;
}

/* The state buffers s (R,2,H) and alpha (R,S) of g, fresh. */
static int alloc_state(rnn_decoder *g, int64_t R, int64_t H, int64_t S) {
    free(g->s), free(g->alpha);
    g->s = calloc(2 * (size_t)(R * H), sizeof *g->s);
    g->alpha = calloc((size_t)(R * S), sizeof *g->alpha);
    return g->s && g->alpha ? 0 : tf_set_error("decoder: out of memory");
}

static tf_decoder *rnn_fork(const tf_decoder *d) {
    const rnn_decoder *g = (const rnn_decoder *)d;
    rnn_decoder *f = malloc(sizeof *f);
    if (!f) return tf_set_error("decoder: out of memory"), NULL;
    *f = *g;
    f->s = NULL, f->alpha = NULL;
    f->sh->refs++;
    int64_t H = g->m->cfg.hidden, S = n_src(g), R = d->rows;
    if (alloc_state(f, R, H, S)) return rnn_free(&f->base), NULL;
    memcpy(f->s, g->s, 2 * (size_t)(R * H) * sizeof *f->s);
    memcpy(f->alpha, g->alpha, (size_t)(R * S) * sizeof *f->alpha);
    return &f->base;
}

/* Rows of a float buffer of `width` floats a row, into a new buffer (NULL when out of memory). */
static float *gather_floats(const float *buf, int64_t width, const int *rows, int n) {
    float *out = malloc((size_t)n * (size_t)width * sizeof *out);
    for (int i = 0; out && i < n; i++) memcpy(out + i * width, buf + rows[i] * width, (size_t)width * sizeof *out);
    return out;
}

static int rnn_select(tf_decoder *d, const int *rows, int n) {
    rnn_decoder *g = (rnn_decoder *)d;
    shared *sh = g->sh;
    if (sh->refs > 1) return tf_set_error("decoder: a forked decoder shares its sources and cannot select rows");
    int64_t H = g->m->cfg.hidden, S = n_src(g);
    tf_ctx *next = sh->b.mem_ctx[!sh->b.cur];
    tf_ctx_reset(next);
    tf_tensor *ids = tf_tensor_gather_rows(next, sh->b.src_ids, rows, n), *ann = tf_tensor_gather_rows(next, sh->annotations, rows, n);
    tf_tensor *keys = tf_tensor_gather_rows(next, sh->keys, rows, n);
    tf_tensor *mask = sh->b.src_mask ? tf_tensor_gather_rows(next, sh->b.src_mask, rows, n) : NULL;
    float *s = gather_floats(g->s, 2 * H, rows, n), *s0 = gather_floats(sh->s0, 2 * H, rows, n);
    float *alpha = gather_floats(g->alpha, S, rows, n);
    if (!ids || !ann || !keys || (sh->b.src_mask && !mask) || !s || !s0 || !alpha) {
        free(s), free(s0), free(alpha);
        return tf_set_error("decoder: out of memory");
    }
    free(g->s), free(sh->s0), free(g->alpha);
    g->s = s, sh->s0 = s0, g->alpha = alpha;
    sh->b.src_ids = ids, sh->annotations = ann, sh->keys = keys, sh->b.src_mask = mask, sh->b.cur = !sh->b.cur;
    return 0;
}

static const tf_decoder_vt RNN_DECODER = {rnn_step, rnn_fork, rnn_reset, rnn_free, rnn_select, NULL, rnn_logits};

/* The sources (padded to S, masked when their lengths differ) through the
 * encoder (in the step context), its outputs kept in the memory context; s_0
 * (and c_0) of each row copied out. */
static int encode_sources(shared *sh, const tf_rnn_seq2seq *m, const int32_t *const *src, const int *n, int R, int S) {
    int64_t H = m->cfg.hidden;
    if (!(sh->s0 = calloc(2 * (size_t)(R * H), sizeof *sh->s0))) return tf_set_error("decoder: out of memory");
    if (tf_source_batch_init(&sh->b, src, n, R, S)) return -1;
    tf_ctx *ctx = sh->b.step_ctx; /* the encoder's activations: scratch, what the steps read kept */
    tf_rnn_seq2seq_inputs in = {.input_ids = sh->b.src_ids, .attention_mask = sh->b.src_mask}; /* the encoder alone */
    tf_rnn_seq2seq_outputs out;
    if (tf_rnn_seq2seq_run(ctx, m, &in, &out)) return -1;
    sh->annotations = tf_source_batch_keep(&sh->b, tf_contiguous(ctx, out.encoder_output));
    sh->keys = tf_source_batch_keep(&sh->b, tf_contiguous(ctx, out.keys));
    if (!sh->annotations || !sh->keys) return -1;
    if (keep_state(ctx, sh->s0, out.state.h, R, H, 0) || (out.state.c && keep_state(ctx, sh->s0, out.state.c, R, H, 1)))
        return -1;
    return 0;
}

tf_decoder *tf_rnn_seq2seq_decoder_new_batch(const tf_rnn_seq2seq *m, const int32_t *const *src, const int *n_src,
                                             int n, int capacity) {
    const tf_rnn_seq2seq_config *c = &m->cfg;
    int S;
    if (tf_source_batch_check(n_src, n, c->context, &S)) return NULL;
    rnn_decoder *g = calloc(1, sizeof *g);
    if (!g) return tf_set_error("decoder: out of memory"), NULL;
    int cap = capacity > 0 && capacity < c->context ? capacity : c->context;
    g->base = (tf_decoder){&RNN_DECODER, c->tgt_vocab, cap, 0, 0, n};
    g->m = m;
    if (!(g->sh = calloc(1, sizeof *g->sh))) {
        free(g);
        return tf_set_error("decoder: out of memory"), NULL;
    }
    g->sh->refs = 1;
    if (encode_sources(g->sh, m, src, n_src, n, S) || alloc_state(g, n, c->hidden, S)) {
        rnn_free(&g->base);
        return NULL;
    }
    rnn_reset(&g->base);
    return &g->base;
}

tf_decoder *tf_rnn_seq2seq_decoder_new(const tf_rnn_seq2seq *m, const int32_t *src, int n, int capacity) {
    return tf_rnn_seq2seq_decoder_new_batch(m, &src, &n, 1, capacity);
}

const float *tf_rnn_seq2seq_decoder_alpha(const tf_decoder *d) {
    if (!d || d->vt != &RNN_DECODER) return tf_set_error("rnn seq2seq: not an RNN translation decoder"), NULL;
    const rnn_decoder *g = (const rnn_decoder *)d;
    return g->has_alpha ? g->alpha : NULL;
}
