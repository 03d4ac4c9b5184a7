/* The model handle's streams (tformer/model.h): the family's stream behind
 * the calls, each step's id checked here against the stream's shape (the
 * family checks the values of a vector). */
#include "family.h"
#include "model_impl.h"

tf_stream *tf_model_stream_new(const tf_model *m, const tf_stream_opts *o) {
    if (tf_model_require(m, TF_CAP_STREAM)) return NULL;
    tf_stream_opts none = {0};
    if (o && o->window < 0) return tf_set_error("%s: stream window %d: 0 (the model's) or more", m->dir, o->window), NULL;
    return m->f->stream(m->impl, o ? o : &none);
}

void tf_stream_free(tf_stream *s) {
    if (s) s->free(s);
}

tf_stream_shape tf_stream_shape_of(const tf_stream *s) { return s->shape; }

int tf_stream_step(tf_stream *s, int32_t id, const float *x, float *out) {
    const tf_stream_shape *h = &s->shape;
    if (h->vocab_size > 0 && (id < 0 || id >= h->vocab_size))
        return tf_set_error("stream: token id %d is outside the vocabulary (0..%d)", (int)id, h->vocab_size - 1);
    if (h->vocab_size == 0 && !x)
        return tf_set_error("stream: a model of vectors takes d_model = %d values a step", h->d_model);
    return s->step(s, id, x, out);
}

int64_t tf_stream_steps(const tf_stream *s) { return s->steps(s); }
