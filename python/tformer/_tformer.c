/* tformer's CPython extension: the model handle (tformer/model.h) as a Python
 * object, written with the Python C API and the buffer protocol alone.
 *
 * Every computation runs with the GIL released: a loaded tf_model is
 * read-only and each capability call makes its own context, so two Python
 * threads may call one model at once. Output arrays are the library's own
 * malloc'd buffers, handed to numpy without a copy through a small owner
 * object (Buffer) that exports them by the buffer protocol and free()s them
 * when the last array over them goes. The Python layer (__init__.py) turns
 * arguments into the contiguous arrays checked here. */
#include "_tformer.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

PyObject *Error, *NotFound, *CapabilityError, *InputError;

/* ---------------------------------------------------------------- Buffer: a malloc'd array */

typedef struct {
    PyObject_HEAD
    void *data;          /* malloc'd by the library; free()d here */
    int ndim;
    Py_ssize_t itemsize;
    char format[2];      /* the buffer protocol's: "f" float32, "i" int32, "B" uint8 */
    Py_ssize_t shape[TF_MAX_DIMS];
    Py_ssize_t strides[TF_MAX_DIMS];
} Buffer;

static void buffer_dealloc(Buffer *b) {
    free(b->data);
    Py_TYPE(b)->tp_free((PyObject *)b);
}

static int buffer_get(Buffer *b, Py_buffer *view, int flags) {
    if ((flags & PyBUF_F_CONTIGUOUS) == PyBUF_F_CONTIGUOUS && b->ndim > 1) {
        PyErr_SetString(PyExc_BufferError, "tformer's arrays are C-contiguous (row-major), not Fortran-contiguous");
        return -1;
    }
    view->buf = b->data;
    view->obj = (PyObject *)b;
    Py_INCREF(b);
    view->len = b->itemsize;
    for (int i = 0; i < b->ndim; i++) view->len *= b->shape[i];
    view->readonly = 0;
    view->itemsize = b->itemsize;
    view->format = (flags & PyBUF_FORMAT) ? b->format : NULL;
    view->ndim = b->ndim;
    view->shape = (flags & PyBUF_ND) ? b->shape : NULL;
    view->strides = (flags & PyBUF_STRIDES) == PyBUF_STRIDES ? b->strides : NULL;
    view->suboffsets = NULL;
    view->internal = NULL;
    return 0;
}

static PyBufferProcs buffer_procs = {(getbufferproc)buffer_get, NULL};

static PyTypeObject BufferType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "tformer._tformer.Buffer",
    .tp_basicsize = sizeof(Buffer),
    .tp_dealloc = (destructor)buffer_dealloc,
    .tp_as_buffer = &buffer_procs,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "An array the library allocated, exported by the buffer protocol and freed with the last view.",
};

/* data (ndim sizes, row-major, items of format "f", "i" or "B") owned by a new Buffer; freed on failure. */
static PyObject *buffer_new_nd(void *data, const char *format, int ndim, const int64_t *shape) {
    Buffer *b = ndim >= 0 && ndim <= TF_MAX_DIMS ? PyObject_New(Buffer, &BufferType) : NULL;
    if (!b) return free(data), ndim > TF_MAX_DIMS ? PyErr_Format(Error, "an array of %d dimensions", ndim) : NULL;
    b->data = data, b->ndim = ndim, b->itemsize = *format == 'B' ? 1 : 4;
    b->format[0] = *format, b->format[1] = 0;
    Py_ssize_t stride = b->itemsize;
    for (int i = ndim - 1; i >= 0; i--) b->shape[i] = (Py_ssize_t)shape[i], b->strides[i] = stride, stride *= b->shape[i];
    return (PyObject *)b;
}

PyObject *buffer_new(float *data, Py_ssize_t rows, Py_ssize_t cols) {
    return buffer_new_nd(data, "f", 2, (int64_t[]){rows, cols});
}

/* ---------------------------------------------------------------- Model */

/* The library's message (tf_error(), this thread's) as exception type. */
PyObject *raise_tf(PyObject *type) {
    PyErr_SetString(type, tf_error());
    return NULL;
}

int model_check_open(Model *self) {
    if (self->m) return 0;
    PyErr_SetString(Error, "the model is closed (Model.close() was called)");
    return -1;
}

int model_require(Model *self, unsigned cap) {
    if (model_check_open(self)) return -1;
    if (tf_model_require(self->m, cap)) return raise_tf(CapabilityError), -1;
    return 0;
}

static int model_init(Model *self, PyObject *args, PyObject *kw) {
    static char *names[] = {"path", "threads", "precision", NULL};
    PyObject *path_obj;
    int threads = 0;
    const char *pname = "f32";
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O&|is", names, PyUnicode_FSConverter, &path_obj, &threads, &pname))
        return -1;
    const char *path = PyBytes_AS_STRING(path_obj);
    tf_precision precision;
    if (threads < 0 || tf_precision_parse(pname, &precision)) {
        Py_DECREF(path_obj);
        if (threads < 0) PyErr_Format(InputError, "threads must be positive, got %d", threads);
        else PyErr_Format(InputError, "precision must be f32, bf16 or int8, got '%s'", pname);
        return -1;
    }
    if (self->busy) {
        Py_DECREF(path_obj);
        PyErr_SetString(Error, "the model is running in another thread");
        return -1;
    }
    if (self->m) tf_model_free(self->m), self->m = NULL;
    tf_model_opts opts = {.threads = threads, .precision = precision};
    self->loaded = precision;
    tf_model *m;
    char *why = NULL;
    Py_BEGIN_ALLOW_THREADS
    m = tf_model_load(path, &opts);
    /* the translator now, before threads share the model (it prepares the weights); its error at translate() */
    if (m && tf_model_caps(m) & TF_CAP_TRANSLATE && tf_model_translator(m, NULL, NULL, NULL))
        why = strdup(tf_error());
    Py_END_ALLOW_THREADS
    free(self->translate_error);
    self->translate_error = why;
    if (!m) {
        char cfg[4096];
        struct stat st;
        snprintf(cfg, sizeof cfg, "%s/config.json", path);
        raise_tf(stat(cfg, &st) ? NotFound : Error);
    }
    Py_DECREF(path_obj);
    self->m = m;
    return m ? 0 : -1;
}

static void model_dealloc(Model *self) {
    tf_model_free(self->m);
    free(self->translate_error);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *model_close(Model *self, PyObject *unused) {
    if (self->busy) {
        PyErr_SetString(Error, "close(): the model is running in another thread");
        return NULL;
    }
    tf_model_free(self->m);
    self->m = NULL;
    Py_RETURN_NONE;
}

/* require(name): None, or CapabilityError (the library's message) when the model cannot do the named capability. */
static PyObject *model_require_named(Model *self, PyObject *arg) {
    const char *name = PyUnicode_Check(arg) ? PyUnicode_AsUTF8(arg) : NULL;
    if (!name) return PyErr_Format(InputError, "require(): a capability's name");
    for (int i = 0; i < TF_CAP_COUNT; i++)
        if (!strcmp(tf_cap_name(1u << i), name)) return model_require(self, 1u << i) ? NULL : Py_NewRef(Py_None);
    return PyErr_Format(InputError, "require(): no capability is named '%s'", name);
}

static PyObject *model_info(Model *self, PyObject *unused) {
    if (model_check_open(self)) return NULL;
    const char *arch = tf_model_architecture(self->m);
    unsigned caps = tf_model_caps(self->m);
    PyObject *list = PyList_New(0);
    for (int i = 0; list && i < TF_CAP_COUNT; i++) {
        if (!(caps >> i & 1u)) continue;
        PyObject *s = PyUnicode_FromString(tf_cap_name(1u << i));
        if (!s || PyList_Append(list, s)) Py_CLEAR(list);
        Py_XDECREF(s);
    }
    if (!list) return NULL;
    return Py_BuildValue("{s:s,s:s,s:z,s:O&,s:N}", "family", tf_model_family(self->m)->name, "model_type",
                         tf_model_type(self->m), "architecture", arch, "dir", PyUnicode_DecodeFSDefault,
                         tf_model_dir(self->m), "capabilities", list);
}

/* ---------------------------------------------------------------- embed */

const char **utf8_texts(PyObject *tuple, Py_ssize_t n, const char *what) {
    const char **t = PyMem_Calloc(n > 0 ? (size_t)n : 1, sizeof *t);
    if (!t) return (const char **)PyErr_NoMemory();
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *s = PyTuple_GET_ITEM(tuple, i);
        Py_ssize_t len;
        if (!PyUnicode_Check(s)) {
            PyErr_Format(InputError, "%s(): texts[%zd] is %s, not str", what, i, Py_TYPE(s)->tp_name);
            return PyMem_Free(t), NULL;
        }
        if (!(t[i] = PyUnicode_AsUTF8AndSize(s, &len))) return PyMem_Free(t), NULL;
        if ((size_t)len != strlen(t[i])) {
            PyErr_Format(InputError, "%s(): texts[%zd] holds a NUL character", what, i);
            return PyMem_Free(t), NULL;
        }
    }
    return t;
}

/* _embed(texts: tuple[str], batch: int, normalize: -1|0|1, pooling: -1|mean|cls|max, max_length: int) */
static PyObject *model_embed(Model *self, PyObject *args) {
    PyObject *tuple;
    int batch, normalize, pooling, max_len;
    if (!PyArg_ParseTuple(args, "O!iiii", &PyTuple_Type, &tuple, &batch, &normalize, &pooling, &max_len)) return NULL;
    if (model_require(self, TF_CAP_EMBED)) return NULL;
    if (batch < 1) return PyErr_Format(InputError, "embed(): batch_size must be at least 1, got %d", batch);
    if (max_len < 0) return PyErr_Format(InputError, "embed(): max_length must be positive, got %d", max_len);
    Py_ssize_t n = PyTuple_GET_SIZE(tuple);
    if (n > INT32_MAX) return PyErr_Format(InputError, "embed(): %zd texts; at most %d a call", n, INT32_MAX);
    tf_embed_opts o;
    if (tf_embed_opts_load(tf_model_dir(self->m), &o)) return raise_tf(Error);
    if (normalize >= 0) o.normalize = normalize;
    if (pooling >= 0) o.pooling = (tf_pooling)pooling;
    if (max_len > 0) o.max_len = max_len;
    o.batch = batch;
    const char **texts = utf8_texts(tuple, n, "embed");
    if (!texts) return NULL;
    float *out = NULL;
    int rc, d = tf_model_embed_dim(self->m);
    self->busy++;
    Py_BEGIN_ALLOW_THREADS
    rc = tf_model_embed(self->m, texts, (int)n, &o, &out);
    Py_END_ALLOW_THREADS
    self->busy--;
    PyMem_Free(texts);
    if (rc) return raise_tf(Error);
    return buffer_new(out, n, d);
}

/* ---------------------------------------------------------------- images */

/* 0 when the model takes images (a classifier or a captioner), else -1 with CapabilityError. */
static int require_images(Model *self) {
    if (model_check_open(self)) return -1;
    return model_require(self, tf_model_caps(self->m) & TF_CAP_CAPTION ? TF_CAP_CAPTION : TF_CAP_CLASSIFY_IMAGE);
}

static PyObject *model_image_shape(Model *self, PyObject *unused) {
    if (require_images(self)) return NULL;
    int c, s, l;
    tf_model_image_shape(self->m, &c, &s, &l);
    return Py_BuildValue("(iii)", c, s, l);
}

/* read_png(path, colour=0) -> Buffer (C, S*S): the PNG's pixels in [0,1] for the model's channels and size, read
 * as grey (colour 1: PIL's convert("L"), repeated into three channels for a model of RGB images), as RGB (3) or,
 * colour 0, as the model's channels (the CLI's --grayscale, --rgb, neither). */
static PyObject *model_read_png(Model *self, PyObject *args) {
    if (require_images(self)) return NULL;
    PyObject *path_obj;
    int colour = 0, c, s, l, rc;
    if (!PyArg_ParseTuple(args, "O&|i", PyUnicode_FSConverter, &path_obj, &colour)) return NULL;
    const char *path = PyBytes_AS_STRING(path_obj);
    tf_model_image_shape(self->m, &c, &s, &l);
    if (colour != 0 && colour != 1 && colour != 3) {
        Py_DECREF(path_obj);
        return PyErr_Format(InputError, "read_png(): colour must be 0, 1 or 3, got %d", colour);
    }
    tf_images im;
    Py_BEGIN_ALLOW_THREADS
    rc = tf_images_read_png(path, colour ? colour : c == 1 ? 1 : 3, &im);
    Py_END_ALLOW_THREADS
    if (rc) return Py_DECREF(path_obj), raise_tf(InputError);
    PyObject *res = NULL;
    if (im.channels == 1 && c == 3 && im.height == s && im.width == s) { /* grey into three channels */
        float *p = realloc(im.pixels, (size_t)3 * s * s * sizeof *p);
        if (!p) return tf_images_free(&im), Py_DECREF(path_obj), PyErr_NoMemory();
        memcpy(p + (size_t)s * s, p, (size_t)s * s * sizeof *p), memcpy(p + (size_t)2 * s * s, p, (size_t)s * s * sizeof *p);
        im.pixels = p, im.channels = 3;
    }
    if (im.height != s || im.width != s || im.channels != c)
        PyErr_Format(InputError, "%s: an image of %dx%d; the model takes %dx%d with %d channel(s)", path, im.width,
                     im.height, s, s, c);
    else
        res = buffer_new(im.pixels, c, (Py_ssize_t)s * s), im.pixels = NULL;
    tf_images_free(&im);
    Py_DECREF(path_obj);
    return res;
}

/* For a model with cap: a C-contiguous float32 (n, C, S, S) view of obj, *per = C * S * S and *labels; or -1 with
 * CapabilityError or InputError (what: the method, for messages). */
static int pixels_view(Model *self, PyObject *obj, unsigned cap, const char *what, Py_buffer *v, int64_t *n,
                       size_t *per, int *labels) {
    if (model_require(self, cap) || PyObject_GetBuffer(obj, v, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT)) return -1;
    int c, s;
    tf_model_image_shape(self->m, &c, &s, labels);
    int ok = v->format && !strcmp(v->format, "f") && v->ndim == 4 && v->shape[1] == c && v->shape[2] == s &&
             v->shape[3] == s;
    if (!ok) {
        PyBuffer_Release(v);
        PyErr_Format(InputError, "%s(): pixels must be float32 (n, %d, %d, %d)", what, c, s, s);
        return -1;
    }
    *n = v->shape[0], *per = (size_t)c * (size_t)s * (size_t)s;
    return 0;
}

/* _image_logits(pixels: float32 (n, C, S, S)) -> Buffer (n, labels). */
static PyObject *model_image_logits(Model *self, PyObject *arg) {
    Py_buffer v;
    int64_t n;
    size_t per;
    int l, rc = 0;
    if (pixels_view(self, arg, TF_CAP_CLASSIFY_IMAGE, "classify", &v, &n, &per, &l)) return NULL;
    size_t rows = n > 0 ? (size_t)n : 1;
    float *logits = rows <= SIZE_MAX / sizeof(float) / (size_t)(l > 0 ? l : 1) ? malloc(rows * (size_t)l * sizeof(float))
                                                                                : NULL;
    if (!logits) return PyBuffer_Release(&v), PyErr_NoMemory();
    self->busy++;
    Py_BEGIN_ALLOW_THREADS
    for (int64_t i = 0; i < n && !rc; i++)
        rc = tf_model_image_logits(self->m, (const float *)v.buf + (size_t)i * per, logits + (size_t)i * (size_t)l, NULL);
    Py_END_ALLOW_THREADS
    self->busy--;
    PyBuffer_Release(&v);
    if (rc) return free(logits), raise_tf(Error);
    return buffer_new(logits, (Py_ssize_t)n, l);
}

/* One caption as (text, words, attention Buffer (words + 1, grid * grid) or None, grid); r is freed. */
static PyObject *caption_tuple(tf_caption_result *r) {
    PyObject *words = PyList_New(r->n_words), *att = Py_None;
    for (int i = 0; words && i < r->n_words; i++) {
        PyObject *w = PyUnicode_DecodeUTF8(r->words[i], (Py_ssize_t)strlen(r->words[i]), "replace");
        if (!w) Py_CLEAR(words);
        else PyList_SET_ITEM(words, i, w);
    }
    if (r->attention) {
        att = buffer_new(r->attention, r->n_words + 1, (Py_ssize_t)r->grid * r->grid);
        r->attention = NULL;
    } else {
        Py_INCREF(att);
    }
    PyObject *res = NULL;
    if (words && att) /* N: both taken, on failure too */
        res = Py_BuildValue("(s#NNi)", r->text, (Py_ssize_t)strlen(r->text), words, att, r->grid);
    else
        Py_XDECREF(words), Py_XDECREF(att);
    tf_caption_result_free(r);
    return res;
}

/* _caption(pixels: float32 (n, C, S, S), beam (1: greedy), max_tokens (0: the model's)) -> [caption_tuple]. */
static PyObject *model_caption(Model *self, PyObject *args) {
    PyObject *pixels;
    int beam, max_tokens;
    if (!PyArg_ParseTuple(args, "Oii", &pixels, &beam, &max_tokens)) return NULL;
    Py_buffer v;
    int64_t n;
    size_t per;
    int l, rc = 0;
    if (pixels_view(self, pixels, TF_CAP_CAPTION, "caption", &v, &n, &per, &l)) return NULL;
    tf_generate_opts o = tf_generate_opts_default();
    o.temperature = 0, o.eos_id = -1, o.max_tokens = max_tokens, o.beam = beam > 1 ? beam : 0;
    PyObject *list = PyList_New((Py_ssize_t)n);
    for (int64_t i = 0; list && i < n; i++) {
        tf_caption_result r;
        self->busy++;
        Py_BEGIN_ALLOW_THREADS
        rc = tf_model_caption(self->m, (const float *)v.buf + (size_t)i * per, &o, &r);
        Py_END_ALLOW_THREADS
        self->busy--;
        PyObject *t = rc ? raise_tf(InputError) : caption_tuple(&r);
        if (!t) Py_CLEAR(list);
        else PyList_SET_ITEM(list, (Py_ssize_t)i, t);
    }
    PyBuffer_Release(&v);
    return list;
}

/* ---------------------------------------------------------------- complete-image */

/* completion_shape() -> (channels, height, width) of the images the model completes. */
static PyObject *model_completion_shape(Model *self, PyObject *unused) {
    (void)unused;
    int c, h, w;
    if (model_require(self, TF_CAP_COMPLETE_IMAGE)) return NULL;
    if (tf_model_completion_shape(self->m, &c, &h, &w)) return raise_tf(InputError);
    return Py_BuildValue("(iii)", c, h, w);
}

/* complete_image(pixels: float32 (C, H, W), keep_rows, samples, temperature, top_k, top_p, seed) -> Buffer
 * (samples, C*H*W): completion i sampled with seed + i, as `tformer complete-image` draws them. */
static PyObject *model_complete_image(Model *self, PyObject *args) {
    PyObject *pixels;
    int keep, samples, top_k, c, h, w, rc = 0;
    float temperature, top_p;
    unsigned long long seed;
    if (!PyArg_ParseTuple(args, "OiififK", &pixels, &keep, &samples, &temperature, &top_k, &top_p, &seed)) return NULL;
    if (model_require(self, TF_CAP_COMPLETE_IMAGE)) return NULL;
    if (tf_model_completion_shape(self->m, &c, &h, &w)) return raise_tf(InputError);
    Py_buffer v;
    if (PyObject_GetBuffer(pixels, &v, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT)) return NULL;
    if (!v.format || strcmp(v.format, "f") || v.ndim != 3 || v.shape[0] != c || v.shape[1] != h || v.shape[2] != w) {
        PyBuffer_Release(&v);
        return PyErr_Format(InputError, "complete_image(): pixels must be float32 (%d, %d, %d)", c, h, w);
    }
    size_t per = (size_t)c * (size_t)h * (size_t)w;
    float *out = samples >= 1 && samples <= 64 ? malloc((size_t)samples * per * sizeof *out) : NULL;
    if (!out) return PyBuffer_Release(&v), samples >= 1 && samples <= 64 ? PyErr_NoMemory()
                                                           : PyErr_Format(InputError, "complete_image(): samples 1..64");
    tf_generate_opts o = tf_generate_opts_default();
    o.temperature = temperature, o.top_k = top_k, o.top_p = top_p;
    self->busy++;
    Py_BEGIN_ALLOW_THREADS
    for (int i = 0; i < samples && !rc; i++) {
        o.seed = (uint64_t)seed + (uint64_t)i;
        rc = tf_model_complete_image(self->m, v.buf, keep, &o, out + (size_t)i * per);
    }
    Py_END_ALLOW_THREADS
    self->busy--;
    PyBuffer_Release(&v);
    if (rc) return free(out), raise_tf(InputError);
    return buffer_new(out, samples, (Py_ssize_t)per);
}

/* ---------------------------------------------------------------- run */

/* run([(name, dtype, array), ...]): hf-run's forward on the arrays themselves (dtype: safetensors' name,
 * "F32", "I64", ...; the arrays C-contiguous, little-endian), the GIL released -> {name: Buffer} of the
 * output fields, the library's buffers handed over without a copy. */
static PyObject *model_run(Model *self, PyObject *arg) {
    if (model_require(self, TF_CAP_RUN)) return NULL;
    if (!PyList_Check(arg)) return PyErr_Format(InputError, "run(): a list of (name, dtype, array)");
    Py_ssize_t n = PyList_GET_SIZE(arg);
    if (n > 64) return PyErr_Format(InputError, "run(): %zd inputs; forward() takes at most 64", n);
    tf_st_entry e[64];
    Py_buffer views[64];
    Py_ssize_t got = 0;
    PyObject *res = NULL;
    for (; got < n; got++) {
        const char *name, *dtype;
        PyObject *array;
        if (!PyArg_ParseTuple(PyList_GET_ITEM(arg, got), "ssO", &name, &dtype, &array)) goto done;
        if (PyObject_GetBuffer(array, &views[got], PyBUF_C_CONTIGUOUS | PyBUF_ND)) goto done;
        int k = 0;
        while (k < TF_ST_COUNT && strcmp(tf_st_dtype_name((tf_st_dtype)k), dtype)) k++;
        if (k == TF_ST_COUNT || views[got].ndim > TF_MAX_DIMS) {
            PyBuffer_Release(&views[got]);
            PyErr_Format(InputError, "run(): input '%s': dtype %s with %d dimensions", name, dtype, views[got].ndim);
            goto done;
        }
        e[got] = (tf_st_entry){.name = name, .dtype = (tf_st_dtype)k, .ndim = views[got].ndim,
                               .data = views[got].buf, .nbytes = (size_t)views[got].len};
        for (int d = 0; d < views[got].ndim; d++) e[got].shape[d] = views[got].shape[d];
    }
    tf_run_output *out = NULL;
    int n_out = 0, rc;
    self->busy++;
    Py_BEGIN_ALLOW_THREADS
    rc = tf_model_run(self->m, e, (int)n, &out, &n_out);
    Py_END_ALLOW_THREADS
    self->busy--;
    if (rc) {
        raise_tf(InputError);
        goto done;
    }
    res = PyDict_New();
    for (int i = 0; i < n_out; i++) {
        const char *format = out[i].dtype == TF_ST_F32 ? "f" : out[i].dtype == TF_ST_I32 ? "i" : "B";
        PyObject *b = res ? buffer_new_nd(out[i].data, format, out[i].ndim, out[i].shape) : NULL;
        out[i].data = NULL; /* the Buffer's now (or freed) */
        if (!b || PyDict_SetItemString(res, out[i].name, b)) Py_CLEAR(res);
        Py_XDECREF(b);
    }
    tf_run_outputs_free(out, n_out);
done:
    for (Py_ssize_t i = 0; i < got; i++) PyBuffer_Release(&views[i]);
    return res;
}

static PyMethodDef model_methods[] = {
    {"close", (PyCFunction)model_close, METH_NOARGS, "Free the model's memory now; later calls raise tformer.Error."},
    {"require", (PyCFunction)model_require_named, METH_O,
     "require(name): None, or CapabilityError when the model cannot do it (\"caption\", \"embed\", ...)."},
    {"info", (PyCFunction)model_info, METH_NOARGS,
     "A dict: family, model_type, architecture (or None), dir, capabilities (a list of names)."},
    {"embed", (PyCFunction)model_embed, METH_VARARGS,
     "embed(texts: tuple[str], batch, normalize (-1: the folder's; Model.embed passes 1 by default), "
     "pooling (-1: the folder's; 0 mean, 1 cls, 2 max), max_length (0: the folder's)) -> Buffer (n, d) float32."},
    {"image_shape", (PyCFunction)model_image_shape, METH_NOARGS, "(channels, size, labels) of an image classifier."},
    {"labels", (PyCFunction)model_labels, METH_NOARGS, "The classifier's label names, in order."},
    {"classify_texts", (PyCFunction)model_classify_texts, METH_VARARGS,
     "classify_texts(a: tuple[str], b: tuple[str] | None) -> Buffer (n, labels): the logits of texts or pairs."},
    {"predict", (PyCFunction)model_predict, METH_VARARGS,
     "predict(task, text): tag or span inputs in tformer predict's format -> per input, label ids or (offset, bytes)."},
    {"classify_clips", (PyCFunction)model_classify_clips, METH_O,
     "classify_clips(pixels: float32 (n, frames, C, S, S)) -> Buffer (n, labels): the logits of clips."},
    {"clip_shape", (PyCFunction)model_clip_shape, METH_NOARGS, "(frames, channels, size, labels) of a clip classifier."},
    {"read_clip", (PyCFunction)model_read_clip, METH_O,
     "read_clip(folder) -> (Buffer (frames, C*H*W), C, H, W): a clip folder's PNG frames in name order."},
    {"read_png", (PyCFunction)model_read_png, METH_VARARGS,
     "read_png(path, colour=0) -> Buffer (channels, size*size): the PNG's pixels in [0, 1] for this model, read as "
     "grey (1), RGB (3) or the model's channels (0)."},
    {"image_logits", (PyCFunction)model_image_logits, METH_O,
     "image_logits(pixels: float32 (n, C, S, S)) -> Buffer (n, labels): the classifier's logits."},
    {"fill_mask", (PyCFunction)model_fill_mask, METH_VARARGS,
     "fill_mask(text, k) -> [[(position, token_id, token, score), ...] per mask token], likeliest first."},
    {"generate_defaults", (PyCFunction)model_generate_defaults, METH_NOARGS,
     "The library's generation defaults (tf_generate_opts_default) as a dict."},
    {"generate", (PyCFunction)model_generate, METH_VARARGS,
     "generate(prompt, max_tokens, temperature, top_k, top_p, repetition_penalty, beam, seed, length_penalty, stop, "
     "on_text) -> bytes: the continuation; on_text(piece: bytes) -> bool (True stops) or None."},
    {"translate", (PyCFunction)model_translate, METH_VARARGS,
     "translate(texts: tuple[str], beam (0: the folder's; Model.translate passes 5 by default), "
     "length_penalty (nan: the folder's), max_len_a (nan), max_len_b (-1), batch (0), beam_stop (-1)) -> list[str]."},
    {"caption", (PyCFunction)model_caption, METH_VARARGS,
     "caption(pixels: float32 (n, C, S, S), beam, max_tokens) -> [(text, words, attention Buffer | None, grid)]."},
    {"completion_shape", (PyCFunction)model_completion_shape, METH_NOARGS,
     "completion_shape() -> (channels, height, width): the images complete_image takes."},
    {"complete_image", (PyCFunction)model_complete_image, METH_VARARGS,
     "complete_image(pixels (C, H, W), keep_rows, samples, temperature, top_k, top_p, seed) -> Buffer (samples, C*H*W)."},
    {"run", (PyCFunction)model_run, METH_O,
     "run([(name, dtype, array), ...]) -> {name: Buffer}: hf-run's forward on the arrays, no files."},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject ModelType = HANDLE_TYPE("Handle", Model, model_dealloc, model_methods, model_init,
    "Handle(path, threads=0, precision='f32'): a loaded tformer model (tf_model_load). Use tformer.load().");

/* ---------------------------------------------------------------- the module */

static PyObject *module_set_threads(PyObject *mod, PyObject *arg) {
    long n = PyLong_AsLong(arg);
    if (n == -1 && PyErr_Occurred()) return NULL;
    if (n < 1 || n > 4096) return PyErr_Format(InputError, "threads must be in 1..4096, got %ld", n);
    tf_set_threads((int)n);
    Py_RETURN_NONE;
}

static PyMethodDef module_methods[] = {
    {"set_threads", module_set_threads, METH_O, "set_threads(n): the library's thread count (every model's)."},
    {"top", module_top, METH_VARARGS,
     "top(logits: float32 (n, labels), k) -> [[(label, probability), ...]]: the k likeliest of each row."},
    {"train", module_train, METH_VARARGS,
     "train(arch, out, settings, data, tokenizer, src, tgt, valid_src, valid_tgt, data_dir, config, resume, overwrite, "
     "callback) -> 0 done, 1 stopped at stop_at; the GIL released, the callback called with each step's report."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT, "tformer._tformer", "tformer's C extension: the model handle (tformer/model.h).", -1,
    module_methods, NULL, NULL, NULL, NULL,
};

/* An exception class tformer.NAME with bases, added to the module. */
static PyObject *add_error(PyObject *mod, const char *name, const char *doc, PyObject *bases) {
    char full[64];
    snprintf(full, sizeof full, "tformer.%s", name);
    PyObject *e = PyErr_NewExceptionWithDoc(full, doc, bases, NULL);
    if (e && PyModule_AddObjectRef(mod, name, e)) Py_CLEAR(e);
    return e;
}

PyMODINIT_FUNC PyInit__tformer(void) {
    if (PyType_Ready(&BufferType) || PyType_Ready(&ModelType) || PyType_Ready(&TokenizerType) || PyType_Ready(&StreamType)) return NULL;
    PyObject *mod = PyModule_Create(&module_def);
    if (!mod) return NULL;
    PyObject *b1 = NULL, *b2 = NULL, *b3 = NULL;
    Error = add_error(mod, "Error", "tformer's errors: the library's message, naming the file or argument.", NULL);
    if (Error) b1 = PyTuple_Pack(2, Error, PyExc_FileNotFoundError), b2 = PyTuple_Pack(2, Error, PyExc_ValueError);
    if (b1 && b2) {
        NotFound = add_error(mod, "ModelNotFoundError", "A folder that is not a model (no config.json).", b1);
        CapabilityError = add_error(mod, "CapabilityError", "A call the model cannot make (its capabilities).", b2);
        InputError = add_error(mod, "InputError", "An argument of the wrong type, dtype, shape or value.", b2);
        b3 = PyUnicode_FromString(tf_kernels_info());
    }
    Py_XDECREF(b1), Py_XDECREF(b2);
    if (!NotFound || !CapabilityError || !InputError || !b3 || PyModule_AddObjectRef(mod, "Handle", (PyObject *)&ModelType) ||
        PyModule_AddObjectRef(mod, "TokenizerHandle", (PyObject *)&TokenizerType) ||
        PyModule_AddObjectRef(mod, "StreamHandle", (PyObject *)&StreamType) ||
        PyModule_AddObject(mod, "kernels", b3)) {
        Py_XDECREF(b3);
        Py_DECREF(mod);
        return NULL;
    }
    return mod;
}
