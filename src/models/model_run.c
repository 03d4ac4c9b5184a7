/* The model handle's forward in memory (tf_model_run): the caller's named
 * arrays through hf-run's checks and the family's forward, each output field
 * copied into a buffer of its own that the caller keeps. */
#include <stdlib.h>
#include <string.h>

#include "hf_run.h"
#include "model_impl.h"

typedef struct {
    tf_run_output *out;
    int n;
} collected;

/* job->out's fields, in the architecture's order, into c (contiguous copies). */
static int collect(const hf_job *job, const hf_arch *arch, void *user) {
    collected *c = user;
    int cap = 0;
    for (const char *const *o = arch->outputs; *o; o++) cap += hf_get(&job->out, *o) != NULL;
    if (!cap) return tf_set_error("run: %s computed none of its output fields", arch->name);
    if (!(c->out = calloc((size_t)cap, sizeof *c->out))) return tf_set_error("run: out of memory");
    for (const char *const *o = arch->outputs; *o; o++) {
        tf_tensor *t = hf_get(&job->out, *o);
        if (!t) continue;
        tf_run_output *r = &c->out[c->n];
        if (t->dtype != TF_DTYPE_F32 && t->dtype != TF_DTYPE_I32 && t->dtype != TF_DTYPE_U8)
            return tf_set_error("run: output '%s' has a dtype (%d) outside F32, I32 and U8", *o, (int)t->dtype);
        r->dtype = t->dtype == TF_DTYPE_F32 ? TF_ST_F32 : t->dtype == TF_DTYPE_I32 ? TF_ST_I32 : TF_ST_U8;
        tf_tensor *ct = tf_contiguous(job->ctx, t);
        if (!ct) return -1;
        r->name = *o, r->ndim = t->ndim, r->nbytes = (size_t)tf_numel(t) * tf_dtype_size(t->dtype);
        memcpy(r->shape, t->shape, (size_t)t->ndim * sizeof *t->shape);
        if (!(r->data = malloc(r->nbytes ? r->nbytes : 1))) return tf_set_error("run: out of memory");
        memcpy(r->data, ct->data, r->nbytes);
        c->n++;
    }
    return 0;
}

int tf_model_run(const tf_model *m, const tf_st_entry *in, int n, tf_run_output **out, int *n_out) {
    *out = NULL, *n_out = 0;
    if (tf_model_require(m, TF_CAP_RUN)) return -1;
    tf_st_file *f = tf_st_open_entries(in, n, "inputs");
    if (!f) return -1;
    collected c = {0};
    int rc = hf_run_entries(m->f, m->arch, m->impl, m->dir, f, "inputs", collect, &c);
    tf_st_close(f);
    if (rc) return tf_run_outputs_free(c.out, c.n), -1;
    *out = c.out, *n_out = c.n;
    return 0;
}

void tf_run_outputs_free(tf_run_output *out, int n) {
    for (int i = 0; out && i < n; i++) free(out[i].data);
    free(out);
}
