/* Model.classify for texts and clips (tf_model_classify_texts, tf_model_classify_clips), the labels of any
 * classifier, and the k likeliest labels of logits as the CLI scores them (tf_model_top). */
#include <string.h>

#include "_tformer.h"

/* A malloc'd float array of rows x cols, or NULL with MemoryError. */
static float *rows_new(int64_t rows, int cols) {
    size_t r = rows > 0 ? (size_t)rows : 1, c = cols > 0 ? (size_t)cols : 1;
    float *p = r <= SIZE_MAX / sizeof(float) / c ? malloc(r * c * sizeof(float)) : NULL;
    if (!p) PyErr_NoMemory();
    return p;
}

/* classify_texts(a: tuple[str], b: tuple[str] | None) -> Buffer (n, labels): the logits `tformer predict` scores. */
PyObject *model_classify_texts(Model *self, PyObject *args) {
    PyObject *ta, *tb;
    if (!PyArg_ParseTuple(args, "O!O", &PyTuple_Type, &ta, &tb)) return NULL;
    if (model_require(self, TF_CAP_CLASSIFY_TEXT)) return NULL;
    Py_ssize_t n = PyTuple_GET_SIZE(ta);
    if (tb != Py_None && (!PyTuple_Check(tb) || PyTuple_GET_SIZE(tb) != n))
        return PyErr_Format(InputError, "classify(): the second texts of the pairs must be a tuple of %zd", n);
    if (n > INT32_MAX) return PyErr_Format(InputError, "classify(): %zd texts; at most %d a call", n, INT32_MAX);
    int l = tf_model_n_labels(self->m), rc;
    const char **a = utf8_texts(ta, n, "classify"), **b = tb == Py_None || !a ? NULL : utf8_texts(tb, n, "classify");
    float *logits = a && (tb == Py_None || b) ? rows_new(n, l) : NULL;
    if (!logits) return PyMem_Free(a), PyMem_Free(b), NULL;
    self->busy++;
    Py_BEGIN_ALLOW_THREADS
    rc = tf_model_classify_texts(self->m, a, b, (int)n, logits);
    Py_END_ALLOW_THREADS
    self->busy--;
    PyMem_Free(a), PyMem_Free(b);
    if (rc) return free(logits), raise_tf(InputError);
    return buffer_new(logits, n, l);
}

/* clip_shape() -> (frames, channels, size, labels) of a clip classifier. */
PyObject *model_clip_shape(Model *self, PyObject *unused) {
    if (model_require(self, TF_CAP_CLASSIFY_CLIP)) return NULL;
    int t, c, s;
    tf_model_clip_shape(self->m, &t, &c, &s);
    return Py_BuildValue("(iiii)", t, c, s, tf_model_n_labels(self->m));
}

/* read_clip(folder) -> Buffer (frames, C*S*S): the folder's PNG frames (in name order) as `tformer classify`
 * reads a clip, for the model's channels; the count and size are checked by classify_clips. */
PyObject *model_read_clip(Model *self, PyObject *arg) {
    if (model_require(self, TF_CAP_CLASSIFY_CLIP)) return NULL;
    PyObject *path_obj;
    if (!PyUnicode_FSConverter(arg, &path_obj)) return NULL;
    int t, c, s, rc;
    tf_model_clip_shape(self->m, &t, &c, &s);
    tf_images im;
    Py_BEGIN_ALLOW_THREADS
    rc = tf_images_read_clip(PyBytes_AS_STRING(path_obj), c == 1 ? 1 : 3, &im);
    Py_END_ALLOW_THREADS
    Py_DECREF(path_obj);
    if (rc) return raise_tf(InputError);
    PyObject *res = buffer_new(im.pixels, (Py_ssize_t)im.n, (Py_ssize_t)im.channels * im.height * im.width);
    im.pixels = NULL;
    PyObject *shape = res ? Py_BuildValue("(Niii)", res, im.channels, im.height, im.width) : NULL;
    tf_images_free(&im);
    return shape;
}

/* classify_clips(pixels: float32 (n, frames, C, S, S)) -> Buffer (n, labels). */
PyObject *model_classify_clips(Model *self, PyObject *arg) {
    Py_buffer v;
    int t, c, s, rc;
    if (model_require(self, TF_CAP_CLASSIFY_CLIP) || PyObject_GetBuffer(arg, &v, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT))
        return NULL;
    tf_model_clip_shape(self->m, &t, &c, &s);
    int l = tf_model_n_labels(self->m);
    if (!v.format || strcmp(v.format, "f") || v.ndim != 5 || v.shape[1] != t || v.shape[2] != c || v.shape[3] != s ||
        v.shape[4] != s) {
        PyBuffer_Release(&v);
        return PyErr_Format(InputError, "classify(): clips must be float32 (n, %d, %d, %d, %d)", t, c, s, s);
    }
    int64_t n = v.shape[0];
    float *logits = rows_new(n, l);
    if (!logits) return PyBuffer_Release(&v), NULL;
    self->busy++;
    Py_BEGIN_ALLOW_THREADS
    rc = tf_model_classify_clips(self->m, v.buf, n, logits);
    Py_END_ALLOW_THREADS
    self->busy--;
    PyBuffer_Release(&v);
    if (rc) return free(logits), raise_tf(Error);
    return buffer_new(logits, (Py_ssize_t)n, l);
}

/* labels() -> the label names of any classifier, in the logits' order. */
PyObject *model_labels(Model *self, PyObject *unused) {
    if (model_check_open(self)) return NULL;
    int l = tf_model_n_labels(self->m);
    if (!l) return model_require(self, TF_CAP_CLASSIFY_IMAGE) ? NULL : PyList_New(0);
    PyObject *list = PyList_New(l);
    for (int i = 0; list && i < l; i++) {
        char buf[256];
        const char *label = tf_model_label(self->m, i, buf, sizeof buf);
        PyObject *name = PyUnicode_DecodeUTF8(label, (Py_ssize_t)strlen(label), "replace");
        if (!name) Py_CLEAR(list);
        else PyList_SET_ITEM(list, i, name);
    }
    return list;
}

/* top(logits: float32 (n, labels), k) -> [[(label index, probability), ...] per row]: tf_model_top's. */
PyObject *module_top(PyObject *mod, PyObject *args) {
    PyObject *obj;
    int k;
    Py_buffer v;
    if (!PyArg_ParseTuple(args, "Oi", &obj, &k) || PyObject_GetBuffer(obj, &v, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT))
        return NULL;
    if (!v.format || strcmp(v.format, "f") || v.ndim != 2 || k < 1 || v.shape[1] > INT32_MAX) {
        PyBuffer_Release(&v);
        return PyErr_Format(InputError, "top(): float32 (n, labels) logits and k >= 1");
    }
    int L = (int)v.shape[1];
    int32_t *ids = PyMem_Calloc((size_t)(L > 0 ? L : 1), sizeof *ids);
    float *probs = PyMem_Calloc((size_t)(L > 0 ? L : 1), sizeof *probs);
    PyObject *rows = ids && probs ? PyList_New(v.shape[0]) : PyErr_NoMemory();
    for (Py_ssize_t r = 0; rows && r < v.shape[0]; r++) {
        int got = tf_model_top((const float *)v.buf + (size_t)r * (size_t)L, L, k, ids, probs);
        PyObject *row = PyList_New(got);
        for (int i = 0; row && i < got; i++) {
            PyObject *pair = Py_BuildValue("(id)", ids[i], (double)probs[i]);
            if (!pair) Py_CLEAR(row);
            else PyList_SET_ITEM(row, i, pair);
        }
        if (!row) Py_CLEAR(rows);
        else PyList_SET_ITEM(rows, r, row);
    }
    PyMem_Free(ids), PyMem_Free(probs), PyBuffer_Release(&v);
    return rows;
}

/* predict(task: str, text: bytes) -> list: the inputs of text in `tformer predict`'s format for task ("tag": a
 * sentence a line, its words apart by spaces; "span": a JSON object a line with "question" and "context"),
 * predicted with the folder's settings (finetune.json, else the head's; tf_model_predict) -> per input, tag: a
 * list of label ids (-1: a word cut away); span: (answer's byte offset in the context, its bytes). */
static PyObject *prediction_obj(const tf_finetune_prediction *p, tf_finetune_kind kind) {
    if (kind == TF_FINETUNE_SPAN) return Py_BuildValue("(nn)", (Py_ssize_t)p->answer_off, (Py_ssize_t)p->answer_len);
    PyObject *tags = PyList_New(p->n_tags);
    for (int w = 0; tags && w < p->n_tags; w++) {
        PyObject *t = PyLong_FromLong(p->tags[w]);
        if (!t) return Py_DECREF(tags), NULL;
        PyList_SET_ITEM(tags, w, t);
    }
    return tags;
}

PyObject *model_predict(Model *self, PyObject *args) {
    const char *task, *text;
    Py_ssize_t len;
    if (!PyArg_ParseTuple(args, "sy#", &task, &text, &len)) return NULL;
    int kind = tf_finetune_kind_from_name(task);
    if (kind != TF_FINETUNE_TAG && kind != TF_FINETUNE_SPAN) return PyErr_Format(InputError, "predict(): task %s", task);
    if (model_require(self, kind == TF_FINETUNE_TAG ? TF_CAP_TAG : TF_CAP_ANSWER)) return NULL;
    tf_predict_opts o;
    tf_finetune_set s = {0};
    tf_finetune_prediction *p = NULL;
    int rc;
    self->busy++;
    Py_BEGIN_ALLOW_THREADS
    rc = tf_model_predict_opts(self->m, 0, &o, NULL) || tf_finetune_parse((tf_finetune_kind)kind, text, (size_t)len,
                                                                          "inputs", 0, &s);
    if (!rc) o.task = (tf_finetune_kind)kind, p = calloc(s.n > 0 ? (size_t)s.n : 1, sizeof *p);
    if (!rc) rc = p ? tf_model_predict(self->m, &s, &o, p, NULL) : tf_set_error("predict(): out of memory");
    Py_END_ALLOW_THREADS
    self->busy--;
    PyObject *out = rc ? raise_tf(InputError) : PyList_New(s.n);
    for (int i = 0; out && i < s.n; i++) {
        PyObject *x = prediction_obj(&p[i], (tf_finetune_kind)kind);
        if (!x) Py_CLEAR(out);
        else PyList_SET_ITEM(out, i, x);
    }
    if (p) tf_finetune_predictions_free(p, s.n);
    free(p), tf_finetune_set_free(&s);
    return out;
}
