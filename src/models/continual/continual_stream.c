/* The Continual Transformer's streams (tf_model_stream_new): step mode
 * through tf_continual_step with its state, or --recompute's regular network
 * on each window of the last inputs; token ids embedded first; the classifier
 * after, when the model has one. */
#include <stdlib.h>
#include <string.h>

#include "continual_internal.h"

typedef struct {
    tf_stream base;
    tf_continual e;        /* the model's, its window replaced (shallow: the layers and weights stay the model's) */
    tf_continual_state *s; /* step mode */
    float *ring;           /* recompute: (window,d_model) the last inputs, slot t % window */
    int64_t t;             /* recompute: steps taken */
    tf_ctx *ctx;
} continual_stream;

/* Recompute: input x (1,d_model) into the ring; 1 and *out (1,d_model) once the window is full. */
static int recompute_step(continual_stream *s, tf_tensor *x, tf_tensor **out) {
    int n = s->e.cfg.window, d = s->e.cfg.d_model;
    memcpy(s->ring + (s->t % n) * d, tf_f32(x), (size_t)d * sizeof(float));
    *out = NULL;
    if (++s->t < n) return 0;
    tf_tensor *w = tf_tensor_new(s->ctx, TF_DTYPE_F32, 3, (int64_t[]){1, n, d}, 0);  // (1,n,d): oldest first
    for (int j = 0; w && j < n; j++)
        memcpy(tf_f32(w) + (size_t)j * d, s->ring + ((s->t + j) % n) * d, (size_t)d * sizeof(float));
    return (*out = tf_continual_forward(s->ctx, &s->e, w, s->t - n)) ? 1 : -1;
}

static int stream_step(tf_stream *base, int32_t id, const float *x, float *out) {
    continual_stream *s = (continual_stream *)base;
    const tf_continual *e = &s->e;
    int d = e->cfg.d_model;
    tf_tensor *in;
    if (e->cfg.vocab_size > 0) {
        tf_tensor *ids = tf_tensor_new(s->ctx, TF_DTYPE_I32, 1, (int64_t[]){1}, 0);  // (1)
        if (ids) tf_i32(ids)[0] = id;
        in = ids ? tf_continual_embed(s->ctx, e, ids) : NULL;                            // (1,d_model)
    } else if ((in = tf_tensor_new(s->ctx, TF_DTYPE_F32, 2, (int64_t[]){1, d}, 0)))    // (1,d_model)
        memcpy(tf_f32(in), x, (size_t)d * sizeof(float));
    tf_tensor *y = NULL;
    int rc = !in ? -1 : s->ring ? recompute_step(s, in, &y) : tf_continual_step(s->ctx, s->s, in, &y);
    if (rc == 1 && e->head.weight) rc = (y = tf_continual_classify(s->ctx, e, y)) ? 1 : -1;  // (1,n_labels)
    if (rc == 1) memcpy(out, tf_f32(y), (size_t)(e->head.weight ? e->cfg.n_labels : d) * sizeof(float));
    tf_ctx_reset(s->ctx);
    return rc;
}

static int64_t stream_steps(const tf_stream *base) {
    const continual_stream *s = (const continual_stream *)base;
    return s->ring ? s->t : tf_continual_state_steps(s->s);
}

static void stream_free(tf_stream *base) {
    continual_stream *s = (continual_stream *)base;
    tf_continual_state_free(s->s), tf_ctx_free(s->ctx), free(s->ring), free(s);
}

tf_stream *tf_continual_stream_new(const void *model, const tf_stream_opts *o) {
    continual_stream *s = calloc(1, sizeof *s);
    if (!s) return tf_set_error("stream: out of memory"), NULL;
    s->e = *(const tf_continual *)model;
    if (o->window > 0) s->e.cfg.window = o->window;
    if (tf_continual_config_check(&s->e.cfg)) return free(s), NULL;
    const tf_continual_config *c = &s->e.cfg;
    s->base = (tf_stream){{c->window, c->d_model, c->vocab_size, c->n_labels}, stream_step, stream_steps, stream_free};
    s->ctx = tf_ctx_new(0);
    size_t cells = 0;
    if (!s->ctx || !tf_mul_size((size_t)c->window, (size_t)c->d_model, &cells) ||
        (o->recompute && !(s->ring = calloc(cells, sizeof *s->ring))))
        return stream_free(&s->base), tf_set_error("stream: out of memory"), NULL;
    if (!o->recompute && !(s->s = tf_continual_state_new(&s->e, 1))) return stream_free(&s->base), NULL;
    tf_ctx_set_grad(s->ctx, 0);
    return &s->base;
}
