/* tformer.Stream's C side: a model's stream (tf_model_stream_new, tformer/model.h) in step
 * mode, as `tformer stream` runs it: each step's input (a feature vector, or a token id
 * embedded by the model) through tf_stream_step with the state cached, an output (the
 * vector, or the classifier's logits) per step once the window is full. A stream holds
 * state: one call at a time (others are refused). */
#include "_tformer.h"

#include <stdlib.h>
#include <string.h>

typedef struct {
    PyObject_HEAD
    tf_model *m;
    tf_stream *s;
    tf_stream_shape shape;
    int busy;
} Stream;

static void stream_release(Stream *self) {
    tf_stream_free(self->s), self->s = NULL;
    tf_model_free(self->m), self->m = NULL;
}

/* StreamHandle(path, window): window <= 0 keeps the config's. */
static int stream_init(Stream *self, PyObject *args, PyObject *kw) {
    static char *names[] = {"path", "window", NULL};
    PyObject *path_obj;
    int window = -1, failed;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O&|i", names, PyUnicode_FSConverter, &path_obj, &window)) return -1;
    if (self->busy) return PyErr_SetString(Error, "the stream is running in another thread"), Py_DECREF(path_obj), -1;
    stream_release(self);
    const char *path = PyBytes_AS_STRING(path_obj);
    tf_stream_opts o = {window > 0 ? window : 0, 0};
    Py_BEGIN_ALLOW_THREADS
    self->m = tf_model_load(path, NULL);
    self->s = self->m ? tf_model_stream_new(self->m, &o) : NULL;
    failed = !self->s;
    Py_END_ALLOW_THREADS
    Py_DECREF(path_obj);
    if (failed) return stream_release(self), raise_tf(InputError), -1;
    self->shape = tf_stream_shape_of(self->s);
    return 0;
}

static void stream_dealloc(Stream *self) {
    stream_release(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* {d_model, window, vocab_size, n_labels, labels (a classifier's names, else None), steps}. */
static PyObject *stream_info(Stream *self, PyObject *unused) {
    (void)unused;
    if (!self->s) return PyErr_Format(Error, "the stream is not open");
    const tf_stream_shape *c = &self->shape;
    PyObject *labels = c->n_labels > 0 ? PyList_New(c->n_labels) : Py_NewRef(Py_None);
    for (int i = 0; labels && i < c->n_labels; i++) {
        char buf[256];
        PyObject *name = PyUnicode_FromString(tf_model_label(self->m, i, buf, sizeof buf));
        if (!name) return Py_DECREF(labels), NULL;
        PyList_SET_ITEM(labels, i, name);
    }
    if (!labels) return NULL;
    return Py_BuildValue("{s:i,s:i,s:i,s:i,s:N,s:L}", "d_model", c->d_model, "window", c->window, "vocab_size",
                         c->vocab_size, "n_labels", c->n_labels, "labels", labels, "steps",
                         (long long)tf_stream_steps(self->s));
}

/* Steps 0..n of v (ids: int32 (n); else float32 (n, d_model)) -> out rows (n_labels or d_model wide), *k of them. */
static int run_steps(Stream *self, const Py_buffer *v, int ids, Py_ssize_t n, float *out, Py_ssize_t *k) {
    const tf_stream_shape *c = &self->shape;
    int d = c->d_model, width = c->n_labels > 0 ? c->n_labels : d, rc = 0;
    *k = 0;
    for (Py_ssize_t t = 0; t < n && rc >= 0; t++) {
        int32_t id = ids ? ((const int32_t *)v->buf)[t] : 0;
        const float *x = ids ? NULL : (const float *)v->buf + (size_t)t * (size_t)d;
        rc = tf_stream_step(self->s, id, x, out + (size_t)*k * (size_t)width);
        if (rc == 1) ++*k;
        if (rc < 0) {
            char why[1024];
            snprintf(why, sizeof why, "%s", tf_error());
            tf_set_error("step %zd of the call: %s", t, why);
        }
    }
    return rc < 0 ? -1 : 0;
}

/* feed(steps: int32 (n) ids or float32 (n, d_model) vectors) -> Buffer (k, width): the outputs of the steps that
 * complete a window. */
static PyObject *stream_feed(Stream *self, PyObject *arg) {
    if (!self->s) return PyErr_Format(Error, "the stream is not open");
    if (self->busy) return PyErr_Format(Error, "feed(): the stream is running in another thread");
    const tf_stream_shape *c = &self->shape;
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
    {"info", (PyCFunction)stream_info, METH_NOARGS, "{d_model, window, vocab_size, n_labels, labels, steps}."},
    {NULL, NULL, 0, NULL},
};

PyTypeObject StreamType = HANDLE_TYPE("StreamHandle", Stream, stream_dealloc, stream_methods, stream_init,
    "StreamHandle(path, window=-1): a model's stream in step mode (tf_stream_step). Use Model.stream().");
