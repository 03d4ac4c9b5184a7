/* tformer.train's C side: a family of the registry trained by the library's
 * trainer (tformer/trainer.h), as `tformer train` trains it: the trainer's and
 * the family's field tables set from keywords, the family's checks, the run
 * folder's rules, tf_train with a stop flag. The GIL is released while it
 * trains; each step's report takes it back to call the Python callback and to
 * run Python's signal handlers, so Ctrl-C (KeyboardInterrupt) stops the run
 * after the step in progress, with its checkpoint written. */
#include "_tformer.h"
#include "tformer/trainer.h"

#include <stdlib.h>
#include <string.h>

typedef struct {
    PyObject *callback;     /* report(dict) -> None, or None */
    PyObject *exc_type, *exc_value, *exc_tb; /* the first exception raised while training */
    volatile int stop;
} train_state;

/* One step's report as a dict. */
static PyObject *report_dict(const tf_train_report *r) {
    PyObject *d = Py_BuildValue("{s:L,s:L,s:d,s:d,s:d,s:d,s:d,s:d}", "step", (long long)r->step, "steps",
                                (long long)r->steps, "loss", (double)r->loss, "lr", (double)r->lr, "grad_norm",
                                r->grad_norm, "val_loss", r->val_loss, "elapsed_s", r->elapsed_s, "eta_s", r->eta_s);
    for (int i = 0; d && i < r->n_metrics && r->metric_names; i++) {
        char key[96];
        snprintf(key, sizeof key, "val_%s", r->metric_names[i]);
        PyObject *v = PyFloat_FromDouble(r->val_metric[i]);
        if (!v || PyDict_SetItemString(d, key, v)) Py_CLEAR(d);
        Py_XDECREF(v);
    }
    const char *note = r->notice ? r->notice : r->info;
    if (d && note) {
        PyObject *v = PyUnicode_DecodeUTF8(note, (Py_ssize_t)strlen(note), "replace");
        if (!v || PyDict_SetItemString(d, r->notice ? "notice" : "info", v)) Py_CLEAR(d);
        Py_XDECREF(v);
    }
    return d;
}

/* tf_train's report: the callback called and the signals run with the GIL; an exception stops the run. */
static void on_report(void *user, const tf_train_report *r) {
    train_state *s = user;
    PyGILState_STATE g = PyGILState_Ensure();
    if (!s->exc_type) {
        int failed = PyErr_CheckSignals();
        if (!failed && s->callback != Py_None) {
            PyObject *d = report_dict(r), *res = d ? PyObject_CallOneArg(s->callback, d) : NULL;
            failed = !res;
            Py_XDECREF(d), Py_XDECREF(res);
        }
        if (failed) PyErr_Fetch(&s->exc_type, &s->exc_value, &s->exc_tb), s->stop = 1;
    }
    PyGILState_Release(g);
}

typedef struct {
    const tf_family *f;
    void *cfg;
    tf_task_args args;
} task_job;

static tf_task *make_task(void *arg) {
    const task_job *j = arg;
    return j->f->task_new(j->cfg, &j->args);
}

/* What the arguments must hold for the family's input (the CLI's usage rules); NULL or a message. */
static const char *check_inputs(const tf_family *f, const tf_task_args *t) {
    int images = f->input == TF_TRAIN_IMAGES, vision = images || f->input == TF_TRAIN_CLIPS;
    int parallel = f->input == TF_TRAIN_PARALLEL;
    if (!vision && t->data_dir) return "data_dir is an image setting";
    if (vision && t->tokenizer) return "tokenizer is a text setting: this family reads images";
    if (images && (!t->data_dir == !t->n_data || t->n_data > 1))
        return "this family reads data_dir=DIR (idx files) or data=FILE (one digits.csv), one of them";
    if (f->input == TF_TRAIN_TEXT && !t->n_data) return "missing data= (the text files to train on)";
    if (!parallel && (t->src || t->tgt || t->valid_src || t->valid_tgt))
        return "src, tgt, valid_src and valid_tgt are translation settings";
    if (parallel && t->n_data) return "this family reads src= and tgt=, not data=";
    if (parallel && !(t->src && t->tgt && t->valid_src && t->valid_tgt))
        return "this family needs src=, tgt=, valid_src= and valid_tgt=";
    return NULL;
}

/* The settings ((key, text) pairs) into the tables; -1 with InputError naming the key. */
static int apply_settings(const tf_fields *tables, PyObject *settings, const char *config) {
    if (config && tf_fields_load(tables, 2, config, 0)) return raise_tf(InputError), -1;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(settings); i++) {
        const char *key, *text;
        if (!PyArg_ParseTuple(PyTuple_GET_ITEM(settings, i), "ss", &key, &text)) return -1;
        if (tf_fields_set(tables, 2, key, text)) return raise_tf(InputError), -1;
    }
    if (tf_train_config_check(tables[0].obj) || tf_fields_check(tables, 2)) return raise_tf(InputError), -1;
    return 0;
}

/* The run, the GIL released: the folder, the task, the data, the trainer. 0 done, 1 stopped, -1 error. */
static int run(const tf_train_config *train, task_job *job, const char *out, int overwrite, train_state *s) {
    int rc = -1;
    Py_BEGIN_ALLOW_THREADS
    if (!tf_run_folder_begin(out, TF_RUN_FOLDER_TRAIN, job->args.resume, overwrite)) {
        tf_task *t = tf_dist_task_new(make_task, job, out);
        if (t && !tf_task_set_data(t, job->args.data, job->args.n_data)) {
            tf_train_config c = *train;
            int64_t pass = job->f->val_batches ? job->f->val_batches(t, &job->args) : -1;
            if (pass >= 0 && c.eval_batches > pass) c.eval_batches = (int)pass; /* one pass at most */
            rc = tf_train(&c, t, out, job->args.resume, &s->stop, on_report, s);
        }
        tf_task_free(t);
        tf_run_folder_end(out);
    }
    Py_END_ALLOW_THREADS
    return rc;
}

/* train(arch, out, settings: tuple[(key, text)], data: tuple[str], tokenizer, src, tgt, valid_src, valid_tgt,
 *       data_dir, config, resume (TF_RESUME_*), overwrite, callback) -> 0 done, 1 stopped (stop_at). */
PyObject *module_train(PyObject *mod, PyObject *args) {
    const char *arch, *out, *tok, *src, *tgt, *vsrc, *vtgt, *ddir, *config;
    PyObject *settings, *data, *callback;
    int resume, overwrite;
    if (!PyArg_ParseTuple(args, "ssO!O!zzzzzzziiO", &arch, &out, &PyTuple_Type, &settings, &PyTuple_Type, &data, &tok,
                          &src, &tgt, &vsrc, &vtgt, &ddir, &config, &resume, &overwrite, &callback))
        return NULL;
    const tf_family *f = tf_family_find(arch);
    char list[256], buf[1024];
    if (!f || !f->task_new)
        return PyErr_Format(InputError, "train(): arch must be %s, got '%s'", tf_family_train_list(list, sizeof list, ~0u),
                            arch);
    if (overwrite && resume)
        return PyErr_Format(InputError, "train(): overwrite and resume exclude each other");
    tf_train_config train = tf_train_config_default();
    void *cfg = calloc(1, f->task_size);
    const char **files = PyMem_Calloc((size_t)PyTuple_GET_SIZE(data) + 1, sizeof *files);
    if (!cfg || !files) return free(cfg), PyMem_Free(files), PyErr_NoMemory();
    f->task_defaults(cfg, &train);
    tf_fields tables[2] = {{&tf_train_config_table, &train}, {f->task_table, cfg}};
    PyObject *res = NULL;
    int n_data = (int)PyTuple_GET_SIZE(data), ok = !apply_settings(tables, settings, config);
    for (int i = 0; ok && i < n_data; i++) ok = (files[i] = PyUnicode_AsUTF8(PyTuple_GET_ITEM(data, i))) != NULL;
    int64_t rows = train.accum > 0 ? train.batch / train.accum : 0;
    task_job job = {f, cfg, {.data = files, .n_data = n_data, .tokenizer = tok, .src = src, .tgt = tgt,
                             .valid_src = vsrc, .valid_tgt = vtgt, .data_dir = ddir, .run_dir = out, .resume = resume,
                             .accum = train.accum, .rows = rows, .seed = train.seed}};
    const char *why = ok && f->task_check ? f->task_check(cfg, &job.args, buf, sizeof buf) : NULL;
    if (ok && !why) why = check_inputs(f, &job.args);
    if (why) PyErr_Format(InputError, "train(): %s", why), ok = 0;
    if (ok) {
        train_state s = {callback, NULL, NULL, NULL, 0};
        int rc = run(&train, &job, out, overwrite, &s);
        if (s.exc_type) PyErr_Restore(s.exc_type, s.exc_value, s.exc_tb); /* the checkpoint is written */
        else if (rc < 0) raise_tf(Error);
        else res = PyLong_FromLong(rc);
    }
    free(cfg);
    PyMem_Free(files);
    return res;
}
