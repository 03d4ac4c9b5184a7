/* tformer.Tokenizer's C side: a loaded tf_tokenizer (tformer/tokenizer.h) as
 * tformer._tformer.TokenizerHandle. Encoding and decoding run with the GIL
 * released, a whole batch at a time; the library's encoder is thread-safe, so
 * Python threads may share one tokenizer. */
#include "_tformer.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    PyObject_HEAD
    tf_tokenizer *t;
} Tok;

static int tok_open(Tok *self) {
    if (self->t) return 0;
    PyErr_SetString(Error, "the tokenizer is not loaded (use tformer.Tokenizer.load)");
    return -1;
}

static int tok_init(Tok *self, PyObject *args, PyObject *kw) {
    static char *names[] = {"path", NULL};
    PyObject *path_obj;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O&", names, PyUnicode_FSConverter, &path_obj)) return -1;
    const char *path = PyBytes_AS_STRING(path_obj);
    tf_tokenizer *t;
    Py_BEGIN_ALLOW_THREADS
    t = tf_tokenizer_load(path);
    Py_END_ALLOW_THREADS
    Py_DECREF(path_obj);
    if (!t) return raise_tf(Error), -1;
    tf_tokenizer_free(self->t);
    self->t = t;
    return 0;
}

static void tok_dealloc(Tok *self) {
    tf_tokenizer_free(self->t);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* ids -> a Python list of ints. */
static PyObject *ids_list(const tf_ids *ids) {
    PyObject *list = PyList_New((Py_ssize_t)ids->n);
    for (size_t i = 0; list && i < ids->n; i++) {
        PyObject *v = PyLong_FromLong(ids->v[i]);
        if (!v) Py_CLEAR(list);
        else PyList_SET_ITEM(list, (Py_ssize_t)i, v);
    }
    return list;
}

/* n texts encoded into ids[n] (and types[n] with specials): plain ids, or [CLS] a [SEP] (b [SEP]) cut to
 * max_len ids (0: no cut) when special; -1 with the library's error naming the text. */
static int encode_all(tf_tokenizer *t, const char **a, const char **b, Py_ssize_t n, int special, size_t max_len,
                      tf_ids *ids, tf_ids *types) {
    for (Py_ssize_t i = 0; i < n; i++) {
        int rc = special ? tf_tokenizer_encode_pair(t, a[i], strlen(a[i]), b ? b[i] : NULL, b ? strlen(b[i]) : 0,
                                                    max_len, &ids[i], &types[i])
                         : tf_tokenizer_encode(t, a[i], strlen(a[i]), &ids[i]);
        if (rc) {
            char why[1024];
            snprintf(why, sizeof why, "%s", tf_error());
            tf_set_error("texts[%zd]: %s", i, why);
            return -1;
        }
    }
    return 0;
}

/* encode(texts: tuple[str], pairs: tuple[str] | None, special: bool, max_len: int)
 *   -> (list[list[int]] ids, list[list[int]] type ids, empty lists without special) */
static PyObject *tok_encode(Tok *self, PyObject *args) {
    PyObject *texts, *pairs;
    int special;
    Py_ssize_t max_len;
    if (!PyArg_ParseTuple(args, "O!Opn", &PyTuple_Type, &texts, &pairs, &special, &max_len)) return NULL;
    if (tok_open(self)) return NULL;
    Py_ssize_t n = PyTuple_GET_SIZE(texts);
    if (pairs != Py_None && (!PyTuple_Check(pairs) || PyTuple_GET_SIZE(pairs) != n))
        return PyErr_Format(InputError, "encode(): pairs must be as many texts as texts (%zd)", n);
    const char **a = utf8_texts(texts, n, "encode"), **b = NULL;
    if (!a || (pairs != Py_None && !(b = utf8_texts(pairs, n, "encode")))) return PyMem_Free(a), NULL;
    tf_ids *ids = PyMem_Calloc(n ? (size_t)n : 1, sizeof *ids), *types = PyMem_Calloc(n ? (size_t)n : 1, sizeof *types);
    PyObject *res = NULL;
    if (ids && types) {
        int rc;
        Py_BEGIN_ALLOW_THREADS
        rc = encode_all(self->t, a, b, n, special, max_len > 0 ? (size_t)max_len : 0, ids, types);
        Py_END_ALLOW_THREADS
        if (rc) raise_tf(InputError);
        PyObject *l1 = rc ? NULL : PyList_New(n), *l2 = rc ? NULL : PyList_New(n);
        for (Py_ssize_t i = 0; l1 && l2 && i < n; i++) {
            PyObject *x = ids_list(&ids[i]), *y = ids_list(&types[i]);
            if (!x || !y) {
                Py_XDECREF(x), Py_XDECREF(y);
                Py_CLEAR(l1);
            } else {
                PyList_SET_ITEM(l1, i, x), PyList_SET_ITEM(l2, i, y);
            }
        }
        if (l1 && l2) res = PyTuple_Pack(2, l1, l2);
        Py_XDECREF(l1), Py_XDECREF(l2);
    } else {
        PyErr_NoMemory();
    }
    for (Py_ssize_t i = 0; ids && types && i < n; i++) tf_ids_free(&ids[i]), tf_ids_free(&types[i]);
    PyMem_Free(ids), PyMem_Free(types), PyMem_Free(a), PyMem_Free(b);
    return res;
}

/* One id sequence (any iterable of ints) -> a malloc'd int32 array; -1 with InputError naming seq[j]. */
static int32_t *ids_array(PyObject *seq, Py_ssize_t index, Py_ssize_t *n) {
    PyObject *fast = PySequence_Fast(seq, "decode(): each item must be a sequence of ints");
    if (!fast) return NULL;
    *n = PySequence_Fast_GET_SIZE(fast);
    int32_t *v = malloc((*n ? (size_t)*n : 1) * sizeof *v);
    if (!v) return Py_DECREF(fast), (int32_t *)PyErr_NoMemory();
    for (Py_ssize_t j = 0; j < *n; j++) {
        PyObject *o = PySequence_Fast_GET_ITEM(fast, j);
        PyObject *ix = PyNumber_Index(o);
        long x = ix ? PyLong_AsLong(ix) : -1;
        Py_XDECREF(ix);
        if ((x == -1 && PyErr_Occurred()) || x < INT32_MIN || x > INT32_MAX) {
            PyErr_Clear();
            PyErr_Format(InputError, "decode(): ids[%zd][%zd] is not an int32 token id (%s)", index, j,
                         Py_TYPE(o)->tp_name);
            return Py_DECREF(fast), free(v), NULL;
        }
        v[j] = (int32_t)x;
    }
    Py_DECREF(fast);
    return v;
}

/* decode(seqs: tuple[sequence[int]]) -> list[str] (invalid UTF-8 as U+FFFD). */
static PyObject *tok_decode(Tok *self, PyObject *arg) {
    if (tok_open(self)) return NULL;
    if (!PyTuple_Check(arg)) return PyErr_Format(InputError, "decode(): a tuple of id sequences");
    Py_ssize_t n = PyTuple_GET_SIZE(arg);
    PyObject *list = PyList_New(n);
    for (Py_ssize_t i = 0; list && i < n; i++) {
        Py_ssize_t k;
        int32_t *v = ids_array(PyTuple_GET_ITEM(arg, i), i, &k);
        if (!v) {
            Py_CLEAR(list);
            break;
        }
        char *text = NULL;
        size_t len = 0;
        int rc;
        Py_BEGIN_ALLOW_THREADS
        rc = tf_tokenizer_decode(self->t, v, (size_t)k, &text, &len);
        Py_END_ALLOW_THREADS
        free(v);
        PyObject *s = rc ? NULL : PyUnicode_DecodeUTF8(text, (Py_ssize_t)len, "replace");
        free(text);
        if (rc) PyErr_Format(InputError, "decode(): ids[%zd]: %s", i, tf_error());
        if (!s) Py_CLEAR(list);
        else PyList_SET_ITEM(list, i, s);
    }
    return list;
}

static PyObject *tok_info(Tok *self, PyObject *unused) {
    if (tok_open(self)) return NULL;
    static const char *kinds[] = {"char", "bpe", "byte-bpe", "wordpiece", "sentencepiece"};
    tf_tokenizer_kind k = tf_tokenizer_kind_of(self->t);
    const char *roles[] = {"cls", "sep", "pad", "mask", "unk", "bos", "eos"};
    PyObject *special = PyDict_New();
    for (size_t i = 0; special && i < sizeof roles / sizeof *roles; i++) {
        int32_t id = tf_tokenizer_special_id(self->t, roles[i]);
        PyObject *v = id >= 0 ? PyLong_FromLong(id) : Py_NewRef(Py_None);
        if (!v || PyDict_SetItemString(special, roles[i], v)) Py_CLEAR(special);
        Py_XDECREF(v);
    }
    if (!special) return NULL;
    return Py_BuildValue("{s:s,s:l,s:L,s:N}", "kind", (unsigned)k < 5 ? kinds[k] : "?", "vocab_size",
                         (long)tf_tokenizer_vocab_size(self->t), "model_max_length",
                         (long long)tf_tokenizer_max_length(self->t), "special", special);
}

static PyObject *tok_token_id(Tok *self, PyObject *arg) {
    if (tok_open(self)) return NULL;
    if (!PyUnicode_Check(arg)) return PyErr_Format(InputError, "token_id(): token must be str");
    const char *s = PyUnicode_AsUTF8(arg);
    if (!s) return NULL;
    int32_t id = tf_tokenizer_token_id(self->t, s);
    if (id < 0) Py_RETURN_NONE;
    return PyLong_FromLong(id);
}

static PyMethodDef tok_methods[] = {
    {"encode", (PyCFunction)tok_encode, METH_VARARGS,
     "encode(texts: tuple[str], pairs: tuple[str] | None, special: bool, max_len: int) -> (ids, type_ids)."},
    {"decode", (PyCFunction)tok_decode, METH_O, "decode(seqs: tuple[sequence[int]]) -> list[str]."},
    {"info", (PyCFunction)tok_info, METH_NOARGS, "{kind, vocab_size, model_max_length, special: {role: id}}."},
    {"token_id", (PyCFunction)tok_token_id, METH_O, "token_id(token) -> int, or None when not in the vocabulary."},
    {NULL, NULL, 0, NULL},
};

PyTypeObject TokenizerType = HANDLE_TYPE("TokenizerHandle", Tok, tok_dealloc, tok_methods, tok_init,
    "TokenizerHandle(path): a loaded tokenizer (tf_tokenizer_load). Use tformer.Tokenizer.load().");
