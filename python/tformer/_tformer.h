/* Shared by the extension's files (_tformer.c: the module, the handle, embed, images, caption, run;
 * _text.c: fill-mask, generate, translate; _tokenizer.c: the tokenizer; _stream.c: continual streams;
 * _train.c: train; _classify.c: texts and clips). */
#ifndef TFORMER_PY_H
#define TFORMER_PY_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "tformer/model.h"

/* A loaded model (tformer._tformer.Handle). */
typedef struct {
    PyObject_HEAD
    tf_model *m;
    int busy;              /* calls running with the GIL released; close() refuses while any does */
    tf_precision loaded;   /* the precision load() asked for: generate(quantize=None) returns to it */
    char *translate_error; /* why the translator could not be made at load (malloc'd), or NULL */
} Model;

/* tformer.Error and its subclasses. */
extern PyObject *Error, *NotFound, *CapabilityError, *InputError;

/* The library's message (tf_error(), this thread's) raised as type; NULL. */
PyObject *raise_tf(PyObject *type);
/* 0, or -1 with Error when the model was closed. */
int model_check_open(Model *self);
/* 0, or -1 with CapabilityError (the library's message) when the model lacks cap. */
int model_require(Model *self, unsigned cap);
/* texts (a tuple of str, no NUL inside) -> their UTF-8 bytes (owned by the tuple's strings), PyMem; what: the
 * method, for messages. */
const char **utf8_texts(PyObject *tuple, Py_ssize_t n, const char *what);

PyObject *model_fill_mask(Model *self, PyObject *args);
PyObject *model_generate_defaults(Model *self, PyObject *unused);
PyObject *model_generate(Model *self, PyObject *args);
PyObject *model_translate(Model *self, PyObject *args);
/* _classify.c: texts and clips, any classifier's labels, the k likeliest labels of logits. */
PyObject *model_classify_texts(Model *self, PyObject *args);
PyObject *model_predict(Model *self, PyObject *args);
PyObject *model_classify_clips(Model *self, PyObject *arg);
PyObject *model_clip_shape(Model *self, PyObject *unused);
PyObject *model_read_clip(Model *self, PyObject *arg);
PyObject *model_labels(Model *self, PyObject *unused);
PyObject *module_top(PyObject *mod, PyObject *args);

/* A handle type: tformer._tformer.NAME over struct T, made by init, freed by dealloc, with methods. */
#define HANDLE_TYPE(NAME, T, dealloc, methods, init, doc)                                                 \
    {                                                                                                      \
        PyVarObject_HEAD_INIT(NULL, 0).tp_name = "tformer._tformer." NAME, .tp_basicsize = sizeof(T),      \
        .tp_dealloc = (destructor)(dealloc), .tp_flags = Py_TPFLAGS_DEFAULT, .tp_doc = (doc),              \
        .tp_methods = (methods), .tp_init = (initproc)(init), .tp_new = PyType_GenericNew,                 \
    }

/* A float32 array object (rows, cols) owning data (malloc'd; freed with the last view, or at once on failure). */
PyObject *buffer_new(float *data, Py_ssize_t rows, Py_ssize_t cols);

/* tformer._tformer.TokenizerHandle (_tokenizer.c), StreamHandle (_stream.c) and train (_train.c). */
extern PyTypeObject TokenizerType, StreamType;
PyObject *module_train(PyObject *mod, PyObject *args);

#endif
