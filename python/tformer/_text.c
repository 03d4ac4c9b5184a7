/* tformer's CPython extension: the text capabilities (fill-mask, generate, translate), each
 * with the GIL released (_tformer.h). */
#include "_tformer.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------- fill-mask */

/* A token's text, as tformer fill-mask prints it (the tokenizer's decoding of the one id). */
static PyObject *token_text(tf_tokenizer *tok, int32_t id) {
    char *s;
    size_t n;
    if (tf_tokenizer_decode(tok, &id, 1, &s, &n)) return raise_tf(Error);
    PyObject *o = PyUnicode_DecodeUTF8(s, (Py_ssize_t)n, "replace");
    free(s);
    return o;
}

/* r as [[(position, token_id, token, score), ...k] per mask]. */
static PyObject *fill_mask_list(tf_tokenizer *tok, const tf_fill_mask_result *r) {
    PyObject *all = PyList_New(r->n);
    for (int i = 0; all && i < r->n; i++) {
        PyObject *row = PyList_New(r->k);
        for (int j = 0; row && j < r->k; j++) {
            size_t c = (size_t)i * (size_t)r->k + (size_t)j;
            PyObject *t = token_text(tok, r->ids[c]);
            PyObject *e = t ? Py_BuildValue("(iiNd)", r->positions[i], (int)r->ids[c], t, r->probs[c]) : NULL;
            if (!e) Py_CLEAR(row);
            else PyList_SET_ITEM(row, j, e);
        }
        if (!row) Py_CLEAR(all);
        else PyList_SET_ITEM(all, i, row);
    }
    return all;
}

/* _fill_mask(text, k) -> [[(position, token_id, token, score)] per mask token]. */
PyObject *model_fill_mask(Model *self, PyObject *args) {
    const char *text;
    Py_ssize_t len;
    int k, rc;
    if (!PyArg_ParseTuple(args, "s#i", &text, &len, &k)) return NULL;
    if (model_require(self, TF_CAP_FILL_MASK)) return NULL;
    if ((size_t)len != strlen(text)) return PyErr_Format(InputError, "fill_mask(): the text holds a NUL character");
    if (k < 1) return PyErr_Format(InputError, "fill_mask(): top_k must be at least 1, got %d", k);
    tf_fill_mask_result r;
    self->busy++;
    Py_BEGIN_ALLOW_THREADS
    rc = tf_model_fill_mask(self->m, text, k, &r);
    Py_END_ALLOW_THREADS
    self->busy--;
    if (rc) return raise_tf(InputError);
    PyObject *res = fill_mask_list(tf_model_tokenizer(self->m), &r);
    tf_fill_mask_result_free(&r);
    return res;
}

/* ---------------------------------------------------------------- generate */

/* on_text's Python callable, called with each piece (bytes) under the GIL; its exception kept. */
typedef struct {
    PyObject *fn;
    PyObject *exc_type, *exc_value, *exc_tb;
} text_callback;

static int call_on_text(void *user, const char *piece, size_t len) {
    text_callback *c = user;
    PyGILState_STATE g = PyGILState_Ensure();
    int stop = 1;
    if (!c->exc_type) {
        PyObject *r = PyObject_CallFunction(c->fn, "y#", piece, (Py_ssize_t)len);
        stop = r ? PyObject_IsTrue(r) != 0 : 1;
        Py_XDECREF(r);
        if (PyErr_Occurred()) PyErr_Fetch(&c->exc_type, &c->exc_value, &c->exc_tb);
    }
    PyGILState_Release(g);
    return stop;
}

PyObject *model_generate_defaults(Model *self, PyObject *unused) {
    tf_generate_opts o = tf_generate_opts_default();
    return Py_BuildValue("{s:i,s:d,s:i,s:d,s:d,s:i,s:K,s:d}", "max_tokens", o.max_tokens, "temperature",
                         (double)o.temperature, "top_k", o.top_k, "top_p", (double)o.top_p, "repetition_penalty",
                         (double)o.repetition_penalty, "beam", o.beam, "seed", (unsigned long long)o.seed,
                         "length_penalty", (double)o.length_penalty);
}

/* generate(quantize=): int8 products (as `--precision int8`), or (0) the precision the model was loaded with.
 * Switched only while no other call runs (it rewrites the model every thread reads); -1 with Error otherwise. */
static int set_quant(Model *self, int int8) {
    tf_precision want = int8 ? TF_PRECISION_INT8 : self->loaded;
    if (want == tf_model_precision(self->m)) return 0;
    if (self->busy) {
        PyErr_Format(Error, "generate(): quantize=%s while %d other call(s) run on this model: the weights are "
                     "switched only when it is idle", int8 ? "'int8'" : "None", self->busy);
        return -1;
    }
    return tf_model_set_precision(self->m, want) ? (raise_tf(Error), -1) : 0;
}

/* _generate(prompt, max_tokens, temperature, top_k, top_p, repetition_penalty, beam, seed, length_penalty,
 * stop, on_text, quant) -> bytes: the continuation (the arguments checked by the Python layer; quant 0 or
 * 1: the load's precision or int8, as the CLI's --precision int8). */
PyObject *model_generate(Model *self, PyObject *args) {
    const char *prompt, *stop;
    Py_ssize_t plen;
    unsigned long long seed;
    PyObject *fn;
    int quant;
    tf_generate_opts o = tf_generate_opts_default();
    if (!PyArg_ParseTuple(args, "s#ififfiKfzOp", &prompt, &plen, &o.max_tokens, &o.temperature, &o.top_k, &o.top_p,
                          &o.repetition_penalty, &o.beam, &seed, &o.length_penalty, &stop, &fn, &quant))
        return NULL;
    o.seed = seed;
    if (model_require(self, TF_CAP_GENERATE) || set_quant(self, quant)) return NULL;
    if ((size_t)plen != strlen(prompt)) return PyErr_Format(InputError, "generate(): the prompt holds a NUL character");
    text_callback cb = {fn != Py_None ? fn : NULL, NULL, NULL, NULL};
    char *text;
    size_t len;
    int rc;
    self->busy++;
    Py_BEGIN_ALLOW_THREADS
    rc = tf_model_generate(self->m, prompt, &o, stop, cb.fn ? call_on_text : NULL, &cb, &text, &len, NULL);
    Py_END_ALLOW_THREADS
    self->busy--;
    if (cb.exc_type) {
        if (!rc) free(text);
        PyErr_Restore(cb.exc_type, cb.exc_value, cb.exc_tb);
        return NULL;
    }
    if (rc) return raise_tf(InputError);
    PyObject *res = PyBytes_FromStringAndSize(text, (Py_ssize_t)len);
    free(text);
    return res;
}

/* ---------------------------------------------------------------- translate */

/* The outputs as a list of str; every text freed. */
static PyObject *text_list(char **out, const size_t *lens, Py_ssize_t n) {
    PyObject *list = PyList_New(n);
    for (Py_ssize_t i = 0; list && i < n; i++) {
        PyObject *s = PyUnicode_DecodeUTF8(out[i], (Py_ssize_t)lens[i], "replace");
        if (!s) Py_CLEAR(list);
        else PyList_SET_ITEM(list, i, s);
    }
    for (Py_ssize_t i = 0; i < n; i++) free(out[i]);
    return list;
}

/* The folder's settings with the arguments given over them (as tformer translate's flags). */
static void translate_opts(const Model *self, tf_translate_opts *o, int beam, float lp, float a, int b, int batch,
                           int stop) {
    tf_model_translator(self->m, NULL, NULL, o); /* made at load */
    if (beam > 0) o->search.beam = beam;
    if (!isnan(lp)) o->search.length_penalty = lp;
    if (!isnan(a) || b >= 0) { /* either: both from the arguments, the library's default for the other */
        tf_translate_opts d = tf_translate_opts_default();
        o->max_len_a = isnan(a) ? d.max_len_a : a, o->max_len_b = b < 0 ? d.max_len_b : b;
    }
    if (batch > 0) o->batch = batch;
    if (stop >= 0) o->search.beam_stop = (tf_beam_stop)stop;
}

/* _translate(texts: tuple[str], beam (0: the folder's), length_penalty (nan), max_len_a (nan), max_len_b (-1),
 * batch (0), beam_stop (-1)) -> list[str]. */
PyObject *model_translate(Model *self, PyObject *args) {
    PyObject *tuple;
    int beam, b, batch, stop, rc;
    float lp, a;
    if (!PyArg_ParseTuple(args, "O!iffiii", &PyTuple_Type, &tuple, &beam, &lp, &a, &b, &batch, &stop)) return NULL;
    if (model_require(self, TF_CAP_TRANSLATE)) return NULL;
    if (self->translate_error) return PyErr_Format(Error, "%s", self->translate_error);
    Py_ssize_t n = PyTuple_GET_SIZE(tuple);
    if (n > INT32_MAX / 2) return PyErr_Format(InputError, "translate(): %zd texts; at most %d a call", n, INT32_MAX / 2);
    tf_translate_opts o;
    translate_opts(self, &o, beam, lp, a, b, batch, stop);
    const char **texts = utf8_texts(tuple, n, "translate");
    char **out = texts ? PyMem_Calloc(n > 0 ? (size_t)n : 1, sizeof *out) : NULL;
    size_t *lens = out ? PyMem_Calloc(n > 0 ? (size_t)n : 1, sizeof *lens) : NULL;
    if (!lens) return PyMem_Free(texts), PyMem_Free(out), texts ? PyErr_NoMemory() : NULL;
    /* CHUNK batches at a time (tf_translate_lines' result for a text is tf_translate_line's, whatever it is
     * batched with), Python's signal handlers run between chunks: Ctrl-C (KeyboardInterrupt) stops a long
     * call. A chunk of many batches lets the library sort its texts by length (little padding) and give
     * each thread whole batches: one batch a call ran at half the CLI's speed on 2 cores (Multi30k's test
     * set, greedy, 2026-12-04). */
    enum { CHUNK = 16 };
    Py_ssize_t done = 0, step = (Py_ssize_t)(o.batch > 0 ? o.batch : 1) * CHUNK;
    int sig = 0, k = 0;
    self->busy++;
    for (rc = 0; !rc && !sig && done < n; done += rc ? 0 : k) {
        k = (int)(n - done < step ? n - done : step);
        Py_BEGIN_ALLOW_THREADS
        rc = tf_model_translate(self->m, k, texts + done, &o, out + done, lens + done);
        Py_END_ALLOW_THREADS
        if (!rc) sig = PyErr_CheckSignals();
    }
    self->busy--;
    PyObject *res = NULL;
    if (rc) { /* the failed batch freed its texts; the library's index is within the batch */
        const char *e = tf_error(), *rest = !strncmp(e, "text ", 5) ? strchr(e, ':') : NULL;
        if (rest) PyErr_Format(InputError, "text %zd%s", (Py_ssize_t)(done + strtol(e + 5, NULL, 10)), rest);
        else PyErr_SetString(InputError, e);
    } else if (!sig) res = text_list(out, lens, n), done = 0; /* text_list frees them */
    for (Py_ssize_t i = 0; i < done; i++) free(out[i]);
    PyMem_Free(texts), PyMem_Free(out), PyMem_Free(lens);
    return res;
}
