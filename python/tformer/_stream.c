/* tformer.Stream's C side: a continual model (tformer/continual.h) in step mode,
 * as `tformer stream` runs it: each step's input (a feature vector, or a token
 * id embedded by the model) through tf_continual_step with the state cached,
 * an output (the vector, or the classifier's logits) per step once the window
 * is full. A stream holds state: one call at a time (others are refused). */
#include "_tformer.h"
#include "tformer/continual.h"

#include <stdlib.h>
#include <string.h>

typedef struct {
    PyObject_HEAD
    tf_continual e;
    int loaded, busy;
    tf_continual_state *s;
    tf_ctx *ctx;
} Stream;

static void stream_release(Stream *self) {
    tf_continual_state_free(self->s), self->s = NULL;
    tf_ctx_free(self->ctx), self->ctx = NULL;
    if (self->loaded) tf_continual_free(&self->e), self->loaded = 0;
}

/* StreamHandle(path, window): window < 0 keeps the config's. */
static int stream_init(Stream *self, PyObject *args, PyObject *kw) {
    static char *names[] = {"path", "window", NULL};
    PyObject *path_obj;
    int window = -1, rc;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O&|i", names, PyUnicode_FSConverter, &path_obj, &window)) return -1;
    if (self->busy) return PyErr_SetString(Error, "the stream is running in another thread"), Py_DECREF(path_obj), -1;
    stream_release(self);
    const char *path = PyBytes_AS_STRING(path_obj);
    Py_BEGIN_ALLOW_THREADS
    rc = tf_continual_load(path, window, &self->e);
    Py_END_ALLOW_THREADS
    Py_DECREF(path_obj);
    if (rc) return raise_tf(InputError), -1;
    self->loaded = 1;
    self->s = tf_continual_state_new(&self->e, 1);
    self->ctx = tf_ctx_new(0);
    if (!self->s || !self->ctx) return stream_release(self), PyErr_NoMemory(), -1;
    tf_ctx_set_grad(self->ctx, 0);
    return 0;
}

static void stream_dealloc(Stream *self) {
    stream_release(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *stream_info(Stream *self, PyObject *unused) {
    if (!self->loaded) return PyErr_Format(Error, "the stream is not open");
    const tf_continual_config *c = &self->e.cfg;
    return Py_BuildValue("{s:i,s:i,s:i,s:i,s:s,s:L}", "d_model", c->d_model, "window", c->window, "vocab_size",
                         c->vocab_size, "n_labels", c->n_labels, "label_names", c->label_names, "steps",
                         (long long)tf_continual_state_steps(self->s));
}

/* Steps 0..n of v (ids: int32 (n); else float32 (n, d_model)) -> out rows (n_labels or d_model wide), *k of them. */
static int run_steps(Stream *self, const Py_buffer *v, int ids, Py_ssize_t n, float *out, Py_ssize_t *k) {
    const tf_continual *e = &self->e;
    int d = e->cfg.d_model, width = e->cfg.n_labels > 0 ? e->cfg.n_labels : d, rc = 0;
    *k = 0;
    for (Py_ssize_t t = 0; t < n && rc >= 0; t++) {
        tf_tensor *x;
        if (ids) {
            tf_tensor *id = tf_tensor_new(self->ctx, TF_DTYPE_I32, 1, (int64_t[]){1}, 0);
            if (id) tf_i32(id)[0] = ((const int32_t *)v->buf)[t];
            x = id ? tf_continual_embed(self->ctx, e, id) : NULL;
        } else {
            x = tf_tensor_new(self->ctx, TF_DTYPE_F32, 2, (int64_t[]){1, d}, 0);
            if (x) memcpy(tf_f32(x), (const float *)v->buf + (size_t)t * (size_t)d, (size_t)d * sizeof(float));
        }
        tf_tensor *y = NULL;
        rc = x ? tf_continual_step(self->ctx, self->s, x, &y) : -1;
        if (rc == 1 && e->cfg.n_labels > 0) rc = (y = tf_continual_classify(self->ctx, e, y)) ? 1 : -1;
        if (rc == 1) memcpy(out + (size_t)(*k)++ * (size_t)width, tf_f32(y), (size_t)width * sizeof(float));
        if (rc < 0) {
            char why[1024];
            snprintf(why, sizeof why, "%s", tf_error());
            tf_set_error("step %zd of the call: %s", t, why);
        }
        tf_ctx_reset(self->ctx);
    }
    return rc < 0 ? -1 : 0;
}

/* feed(steps: int32 (n) ids or float32 (n, d_model) vectors) -> Buffer (k, width): the outputs of the steps that
 * complete a window. */
static PyObject *stream_feed(Stream *self, PyObject *arg) {
    if (!self->loaded) return PyErr_Format(Error, "the stream is not open");
    if (self->busy) return PyErr_Format(Error, "feed(): the stream is running in another thread");
    const tf_continual_config *c = &self->e.cfg;
    Py_buffer v;
    if (PyObject_GetBuffer(arg, &v, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT)) return NULL;
    int ids = c->vocab_size > 0;
    int ok = v.format && (ids ? !strcmp(v.format, "i") && v.ndim == 1
                              : !strcmp(v.format, "f") && v.ndim == 2 && v.shape[1] == c->d_model);
    if (!ok) {
        PyBuffer_Release(&v);
        if (ids) return PyErr_Format(InputError, "stream(): a model of tokens takes int32 ids (n)");
        return PyErr_Format(InputError, "stream(): steps must be float32 (n, %d): d_model values a step", c->d_model);
    }
    Py_ssize_t n = v.shape[0], k = 0, width = c->n_labels > 0 ? c->n_labels : c->d_model;
    for (Py_ssize_t t = 0; ids && t < n; t++) {
        int32_t id = ((const int32_t *)v.buf)[t];
        if (id < 0 || id >= c->vocab_size) {
            PyBuffer_Release(&v);
            return PyErr_Format(InputError, "stream(): ids[%zd] = %d is outside the vocabulary (0..%d)", t, (int)id,
                                c->vocab_size - 1);
        }
    }
    float *out = malloc((size_t)(n > 0 ? n : 1) * (size_t)width * sizeof(float));
    if (!out) return PyBuffer_Release(&v), PyErr_NoMemory();
    int rc;
    self->busy = 1;
    Py_BEGIN_ALLOW_THREADS
    rc = run_steps(self, &v, ids, n, out, &k);
    Py_END_ALLOW_THREADS
    self->busy = 0;
    PyBuffer_Release(&v);
    if (rc) return free(out), raise_tf(InputError);
    return buffer_new(out, k, width);
}

static PyMethodDef stream_methods[] = {
    {"feed", (PyCFunction)stream_feed, METH_O,
     "feed(steps: int32 (n) | float32 (n, d_model)) -> Buffer (outputs, n_labels or d_model)."},
    {"info", (PyCFunction)stream_info, METH_NOARGS, "{d_model, window, vocab_size, n_labels, label_names, steps}."},
    {NULL, NULL, 0, NULL},
};

PyTypeObject StreamType = HANDLE_TYPE("StreamHandle", Stream, stream_dealloc, stream_methods, stream_init,
    "StreamHandle(path, window=-1): a continual model in step mode (tf_continual_step). Use Model.stream().");
