/* The decoder interface over the RNN encoder-decoder: the source is encoded
 * once (annotations h_j and keys U_a h_j in a context every fork shares);
 * each step runs tf_rnn_seq2seq_run (the one forward) on the new tokens from
 * the kept state s (and c) and keeps the last token's alignment alpha.
 * Fork copies s, c and alpha; reset goes back to s_0. */
#include <stdlib.h>
#include <string.h>

#include "../../core/internal.h"
#include "tformer/rnn_seq2seq.h"

typedef struct {
    tf_ctx *mem_ctx, *step_ctx;
    tf_tensor *src_ids, *annotations, *keys; /* (1,S), (1,S,2H), (1,S,A) */
    float *s0;                               /* (2,H): s_0, then c_0 */
    int refs;
} shared;

typedef struct {
    tf_decoder base;
    const tf_rnn_seq2seq *m;
    shared *sh;
    float *s;     /* (2,H): s, then c (LSTM) */
    float *alpha; /* (S): the last step's alignment */
    int has_alpha;
} rnn_decoder;

static int64_t n_src(const rnn_decoder *g) { return g->sh->src_ids->shape[1]; }

/* (1,H) tensor of row k of buf (2,H) in ctx. */
static tf_tensor *state_tensor(tf_ctx *ctx, const float *buf, int64_t H, int k) {
    tf_tensor *t = tf_tensor_new(ctx, TF_DTYPE_F32, 2, (int64_t[]){1, H}, 0);
    if (t) memcpy(t->data, buf + k * H, (size_t)H * sizeof *buf);
    return t;
}

static int rnn_step(tf_decoder *d, const int32_t *tokens, int n, float *logits) {
    rnn_decoder *g = (rnn_decoder *)d;
    const tf_rnn_seq2seq_config *c = &g->m->cfg;
    int64_t H = c->hidden, V = c->tgt_vocab, S = n_src(g);
    int lstm = c->cell == TF_RNN_LSTM;
    tf_ctx *ctx = g->sh->step_ctx;
    tf_ctx_reset(ctx);
    tf_tensor *ids = tf_tensor_new(ctx, TF_DTYPE_I32, 2, (int64_t[]){1, n}, 0);  // (1,n)
    tf_rnn_state st = {state_tensor(ctx, g->s, H, 0), lstm ? state_tensor(ctx, g->s, H, 1) : NULL};
    if (!ids || !st.h || (lstm && !st.c)) return -1;
    memcpy(ids->data, tokens, (size_t)n * sizeof *tokens);
    tf_rnn_seq2seq_inputs in = {.input_ids = g->sh->src_ids, .decoder_input_ids = ids, .output_attentions = 1,
                                .encoder_output = g->sh->annotations, .keys = g->sh->keys, .state = &st};
    tf_rnn_seq2seq_outputs out;
    if (tf_rnn_seq2seq_run(ctx, g->m, &in, &out)) return -1;
    tf_tensor *h = tf_contiguous(ctx, out.state.h), *cc = lstm ? tf_contiguous(ctx, out.state.c) : NULL;  // (1,H) each
    if (!h || (lstm && !cc)) return -1;
    memcpy(g->s, h->data, (size_t)H * sizeof *g->s);
    if (lstm) memcpy(g->s + H, cc->data, (size_t)H * sizeof *g->s);
    memcpy(logits, tf_f32(out.logits) + (int64_t)(n - 1) * V, (size_t)V * sizeof *logits);        // the last position's (V)
    memcpy(g->alpha, tf_f32(out.attentions) + (int64_t)(n - 1) * S, (size_t)S * sizeof *g->alpha);  // (S)
    g->has_alpha = 1;
    return 0;
}

static void rnn_free(tf_decoder *d) {
    rnn_decoder *g = (rnn_decoder *)d;
    if (g->sh && --g->sh->refs == 0)
        tf_ctx_free(g->sh->mem_ctx), tf_ctx_free(g->sh->step_ctx), free(g->sh->s0), free(g->sh);
    free(g->s), free(g->alpha);
    free(g);
}

static void rnn_reset(tf_decoder *d) {
    rnn_decoder *g = (rnn_decoder *)d;
    memcpy(g->s, g->sh->s0, 2 * (size_t)g->m->cfg.hidden * sizeof *g->s);
    g->has_alpha = 0;
}

/* The state buffers s (2,H) and alpha (S) of g, fresh. */
static int alloc_state(rnn_decoder *g, int64_t H, int64_t S) {
    g->s = calloc(2 * (size_t)H, sizeof *g->s);
    g->alpha = calloc((size_t)S, sizeof *g->alpha);
    return g->s && g->alpha ? 0 : tf_set_error("decoder: out of memory");
}

static tf_decoder *rnn_fork(const tf_decoder *d) {
    const rnn_decoder *g = (const rnn_decoder *)d;
    rnn_decoder *f = malloc(sizeof *f);
    if (!f) return tf_set_error("decoder: out of memory"), NULL;
    *f = *g;
    f->sh->refs++;
    int64_t H = g->m->cfg.hidden, S = n_src(g);
    if (alloc_state(f, H, S)) return rnn_free(&f->base), NULL;
    memcpy(f->s, g->s, 2 * (size_t)H * sizeof *f->s);
    memcpy(f->alpha, g->alpha, (size_t)S * sizeof *f->alpha);
    return &f->base;
}

static const tf_decoder_vt RNN_DECODER = {rnn_step, rnn_fork, rnn_reset, rnn_free, NULL};

/* The source through the encoder, kept in the shared memory context; s_0 (and c_0) copied out. */
static int encode_source(shared *sh, const tf_rnn_seq2seq *m, const int32_t *src, int n) {
    int64_t H = m->cfg.hidden;
    if (!(sh->s0 = calloc(2 * (size_t)H, sizeof *sh->s0))) return tf_set_error("decoder: out of memory");
    if (!(sh->src_ids = tf_tensor_new(sh->mem_ctx, TF_DTYPE_I32, 2, (int64_t[]){1, n}, 0))) return -1;  // (1,S)
    memcpy(sh->src_ids->data, src, (size_t)n * sizeof *src);
    tf_rnn_seq2seq_inputs in = {.input_ids = sh->src_ids}; /* no target: the encoder alone */
    tf_rnn_seq2seq_outputs out;
    if (tf_rnn_seq2seq_run(sh->mem_ctx, m, &in, &out)) return -1;
    sh->annotations = out.encoder_output, sh->keys = out.keys;
    memcpy(sh->s0, out.state.h->data, (size_t)H * sizeof *sh->s0);
    if (out.state.c) memcpy(sh->s0 + H, out.state.c->data, (size_t)H * sizeof *sh->s0);
    return 0;
}

tf_decoder *tf_rnn_seq2seq_decoder_new(const tf_rnn_seq2seq *m, const int32_t *src, int n, int capacity) {
    const tf_rnn_seq2seq_config *c = &m->cfg;
    if (n < 1 || n > c->context)
        return tf_set_error("translate: a source of %d tokens (1 to the context of %d)", n, c->context), NULL;
    rnn_decoder *g = calloc(1, sizeof *g);
    if (!g) return tf_set_error("decoder: out of memory"), NULL;
    int cap = capacity > 0 && capacity < c->context ? capacity : c->context;
    g->base = (tf_decoder){&RNN_DECODER, c->tgt_vocab, cap, 0, 0, 1};
    g->m = m;
    if ((g->sh = calloc(1, sizeof *g->sh))) {
        g->sh->refs = 1;
        g->sh->mem_ctx = tf_ctx_new(0), g->sh->step_ctx = tf_ctx_new(0);
    }
    if (!g->sh || !g->sh->mem_ctx || !g->sh->step_ctx) {
        rnn_free(&g->base);
        return tf_set_error("decoder: out of memory"), NULL;
    }
    tf_ctx_set_grad(g->sh->mem_ctx, 0), tf_ctx_set_grad(g->sh->step_ctx, 0);
    if (encode_source(g->sh, m, src, n) || alloc_state(g, c->hidden, n)) {
        rnn_free(&g->base);
        return NULL;
    }
    rnn_reset(&g->base);
    return &g->base;
}

const float *tf_rnn_seq2seq_decoder_alpha(const tf_decoder *d) {
    if (!d || d->vt != &RNN_DECODER) return tf_set_error("rnn seq2seq: not an RNN translation decoder"), NULL;
    const rnn_decoder *g = (const rnn_decoder *)d;
    return g->has_alpha ? g->alpha : NULL;
}
