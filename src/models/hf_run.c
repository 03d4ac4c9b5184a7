/* `tformer hf-run`: a Hugging Face model folder (config.json's
 * architectures[0] + model.safetensors) run on inputs named as its forward()
 * arguments, writing the output fields Hugging Face returns, by its names.
 * An architecture is a row of its family's table (src/models/<family>/<family>_family.c),
 * found through the registry. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../util/util.h"
#include "hf_run.h"
#include "tformer/interop.h"

/* ---------------------------------------------------------------- output fields */

const char *const hf_out_lm[] = {"logits", "loss", NULL};
const char *const hf_out_body[] = {"last_hidden_state", NULL};
const char *const hf_out_pooled[] = {"last_hidden_state", "pooler_output", NULL};

/* ---------------------------------------------------------------- input lists */

const hf_input hf_in_text[] = {
    {"input_ids", HF_IN_IDS, "B,T", 1}, {"attention_mask", HF_IN_MASK, "B,T", 0},
    {"token_type_ids", HF_IN_IDS, "B,T", 0}, {"position_ids", HF_IN_IDS, "B,T", 0}, {NULL, 0, NULL, 0},
};
const hf_input hf_in_image[] = {{"pixel_values", HF_IN_FLOAT, "B,C,H,W", 1}, {NULL, 0, NULL, 0}};
const hf_input hf_head_token_labels[] = {{"labels", HF_IN_LABELS, "B,T", 0}, {NULL, 0, NULL, 0}};
const hf_input hf_head_class_labels[] = {{"labels", HF_IN_LABELS, "B", 0}, {NULL, 0, NULL, 0}};
const hf_input hf_head_targets[] = {{"labels", HF_IN_TARGETS, "B", 0}, {NULL, 0, NULL, 0}};
const hf_input hf_head_spans[] = {
    {"start_positions", HF_IN_INT, "B", 0}, {"end_positions", HF_IN_INT, "B", 0}, {NULL, 0, NULL, 0},
};

/* ---------------------------------------------------------------- shared by the families */

/* An error of the forward, named after the input file. */
int hf_all_ignored(const tf_tensor *labels) {
    int all = labels && labels->dtype == TF_DTYPE_I32;
    for (int64_t i = 0; all && i < tf_numel(labels); i++) all = tf_i32(labels)[i] == -100;
    return all;
}

int hf_input_error(const hf_job *job) {
    char msg[512];
    snprintf(msg, sizeof msg, "%s", tf_error());
    return tf_set_error("%s: %s", job->input_path, msg);
}

/* The output fields of a classifier's forward; PyTorch's mean over no labels is 0/0. */
int hf_put_classifier_outputs(hf_job *job, const tf_tensor *labels, tf_tensor *last, tf_tensor *pooled,
                              tf_tensor *logits, tf_tensor *loss) {
    if (loss && hf_all_ignored(labels)) tf_f32(loss)[0] = NAN;
    return hf_put(&job->out, "last_hidden_state", last) || hf_put(&job->out, "pooler_output", pooled) ||
           hf_put(&job->out, "logits", logits) || hf_put(&job->out, "loss", loss);
}

int hf_run_classifier(hf_job *job, int n_labels, hf_classifier_fn forward) {
    tf_tensor *pixels = hf_get(&job->in, "pixel_values"), *labels = hf_get(&job->in, "labels");
    if (hf_check_range(job, "labels", 0, n_labels, -100, "labels must be below num_labels (or -100)")) return -1;
    hf_classifier_out o;
    if (forward(job->ctx, job->model, pixels, labels, 0.0f, &o)) return hf_input_error(job);
    return hf_put_classifier_outputs(job, labels, o.last_hidden_state, o.pooler_output, o.logits, o.loss);
}

/* ---------------------------------------------------------------- named tensors */

tf_tensor *hf_get(const hf_tensors *ts, const char *name) {
    for (int i = 0; i < ts->n; i++)
        if (!strcmp(ts->name[i], name)) return ts->t[i];
    return NULL;
}

int hf_put(hf_tensors *ts, const char *name, tf_tensor *t) {
    if (!t) return 0;
    if (ts->n == HF_MAX_TENSORS) return tf_set_error("hf-run: more than %d tensors", HF_MAX_TENSORS);
    ts->name[ts->n] = name;
    ts->t[ts->n++] = t;
    return 0;
}

/* "(b,t)" of a flat index into a tensor of shape dims, for messages. */
static const char *index_str(const tf_tensor *t, int64_t i, char *buf, size_t n) {
    int64_t idx[TF_MAX_DIMS];
    for (int d = t->ndim - 1; d >= 0; d--) {
        idx[d] = t->shape[d] ? i % t->shape[d] : 0;
        i = t->shape[d] ? i / t->shape[d] : 0;
    }
    size_t k = (size_t)snprintf(buf, n, "[");
    for (int d = 0; d < t->ndim && k < n; d++)
        k += (size_t)snprintf(buf + k, n - k, "%s%lld", d ? "," : "", (long long)idx[d]);
    if (k < n) snprintf(buf + k, n - k, "]");
    return buf;
}

int hf_check_range(const hf_job *job, const char *name, int32_t lo, int32_t hi, int32_t skip, const char *what) {
    const tf_tensor *t = hf_get(&job->in, name);
    if (!t) return 0;
    const int32_t *v = tf_i32(t);
    for (int64_t i = 0; i < tf_numel(t); i++)
        if (v[i] != skip && (v[i] < lo || v[i] >= hi)) {
            char at[96];
            return tf_set_error("%s: input '%s' holds %d at %s; %s", job->input_path, name, (int)v[i],
                                index_str(t, i, at, sizeof at), what);
        }
    return 0;
}

/* ---------------------------------------------------------------- config.json */

/* The registry's architecture named name and its family, or NULL. */
static const hf_arch *find_arch(const char *name, const tf_family **family) {
    const tf_family *const *f = tf_families();
    for (int i = 0; f[i]; i++)
        for (const hf_arch *r = f[i]->archs; r && r->name; r++)
            if (!strcmp(r->name, name)) return *family = f[i], r;
    return NULL;
}

static const char *supported_list(char *buf, size_t n) {
    size_t k = 0;
    buf[0] = 0;
    const tf_family *const *f = tf_families();
    for (int i = 0; f[i]; i++)
        for (const hf_arch *r = f[i]->archs; r && r->name && k < n; r++)
            k += (size_t)snprintf(buf + k, n - k, "%s%s", k ? ", " : "", r->name);
    return buf;
}

const hf_arch *hf_read_architecture(const char *dir, FILE *log, const tf_family **family) {
    char path[4096], list[2048];
    if (tf_path_join(path, sizeof path, dir, "config.json")) return NULL;
    cJSON *root = tf_json_read(path);
    if (!root) return NULL;
    const cJSON *a = cJSON_GetObjectItemCaseSensitive(root, "architectures");
    const cJSON *first = cJSON_IsArray(a) ? cJSON_GetArrayItem(a, 0) : NULL;
    const hf_arch *arch = NULL;
    supported_list(list, sizeof list);
    if (!cJSON_IsString(first))
        tf_set_error("%s: no \"architectures\" list naming the model class (hf-run supports: %s)", path, list);
    else if (!(arch = find_arch(first->valuestring, family)))
        tf_set_error("%s: architecture \"%s\" is not supported by hf-run (supported: %s)", path,
                     first->valuestring, list);
    else if (log && cJSON_GetArraySize(a) > 1)
        fprintf(log, "warning: %s: %d architectures; running the first, %s\n", path, cJSON_GetArraySize(a), arch->name);
    cJSON_Delete(root);
    return arch;
}

/* dir/model.safetensors, or a sharded checkpoint (model.safetensors.index.json and its shards, as
 * save_pretrained's max_shard_size writes them: 5 GB by default in 4.x, 50 GB in 5.x), which tf_st_open reads
 * as one file; without either, what the folder holds instead, named: PyTorch's pickle. */
static int check_weights_file(const char *dir) {
    static const struct {
        const char *file, *what;
    } OTHER[] = {
        {"pytorch_model.bin", "only pytorch_model.bin, which tformer does not read: re-save the model with "
                              "safetensors (model.save_pretrained(dir, safe_serialization=True))"},
        {"pytorch_model.bin.index.json", "only a sharded pytorch_model.bin, which tformer does not read: re-save the "
                                         "model as one safetensors file (model.save_pretrained(dir, "
                                         "safe_serialization=True, max_shard_size=\"1000GB\"))"},
    };
    char path[4096];
    if (tf_path_join(path, sizeof path, dir, "model.safetensors")) return -1;
    if (!access(path, F_OK)) return 0;
    if (tf_path_join(path, sizeof path, dir, "model.safetensors.index.json")) return -1;
    if (!access(path, F_OK)) return 0;
    for (size_t i = 0; i < sizeof OTHER / sizeof OTHER[0]; i++) {
        if (tf_path_join(path, sizeof path, dir, OTHER[i].file)) return -1;
        if (!access(path, F_OK)) return tf_set_error("%s: no model.safetensors; %s", dir, OTHER[i].what);
    }
    return tf_set_error("%s: no model.safetensors or model.safetensors.index.json (the weights save_pretrained "
                        "writes)", dir);
}

/* ---------------------------------------------------------------- inputs */

/* The i-th argument arch takes (its inputs, then its head's), or NULL past the last. */
static const hf_input *arch_input(const hf_arch *arch, int i) {
    int n = 0;
    while (arch->inputs[n].name) n++;
    if (i < n) return &arch->inputs[i];
    for (int k = 0; arch->head && arch->head[k].name; k++)
        if (k == i - n) return &arch->head[k];
    return NULL;
}

static const char *accepted_list(const hf_arch *arch, char *buf, size_t n) {
    size_t k = 0;
    buf[0] = 0;
    const hf_input *in;
    for (int i = 0; (in = arch_input(arch, i)) && k < n; i++)
        k += (size_t)snprintf(buf + k, n - k, "%s%s", i ? ", " : "", in->name);
    return buf;
}

static const hf_input *find_input(const hf_arch *arch, const char *name) {
    const hf_input *in;
    for (int i = 0; (in = arch_input(arch, i)); i++)
        if (!strcmp(in->name, name)) return in;
    return NULL;
}

/* Every tensor of the file must be an argument hf-run takes. */
static int check_names(const hf_arch *arch, const tf_st_file *f, const char *path) {
    char list[512];
    for (int i = 0; i < tf_st_count(f); i++) {
        const char *name = tf_st_entry_at(f, i)->name;
        if (find_input(arch, name)) continue;
        int refused = 0;
        for (const char *const *r = arch->refused; *r && !refused; r++) refused = !strcmp(*r, name);
        accepted_list(arch, list, sizeof list);
        if (refused)
            return tf_set_error("%s: input '%s' (an argument of %s.forward()) is not supported by hf-run; "
                                "it takes: %s", path, name, arch->name, list);
        return tf_set_error("%s: input '%s' is not an argument of %s.forward(); hf-run takes: %s", path, name,
                            arch->name, list);
    }
    return 0;
}

/* The shape pattern ("B,T"): sizes by letter, bound by the first input that
 * has the letter (binder names it for messages). */
typedef struct {
    int64_t size[26];
    const char *binder[26];
} hf_dims;

static int check_shape(hf_dims *d, const hf_input *in, const tf_st_entry *e, const char *path) {
    char got[96];
    size_t k = (size_t)snprintf(got, sizeof got, "(");
    for (int i = 0; i < e->ndim && k < sizeof got; i++)
        k += (size_t)snprintf(got + k, sizeof got - k, "%s%lld", i ? "," : "", (long long)e->shape[i]);
    if (k < sizeof got) snprintf(got + k, sizeof got - k, ")");
    int n = (int)(strlen(in->shape) + 1) / 2;
    if (e->ndim != n) return tf_set_error("%s: input '%s' has shape %s; expected (%s)", path, in->name, got, in->shape);
    for (int i = 0; i < n; i++) {
        int l = in->shape[2 * i] - 'A';
        if (e->shape[i] < 1) return tf_set_error("%s: input '%s' has shape %s; no size may be 0", path, in->name, got);
        if (!d->binder[l]) {
            d->size[l] = e->shape[i];
            d->binder[l] = in->name;
        } else if (d->size[l] != e->shape[i]) {
            return tf_set_error("%s: input '%s' has shape %s; expected (%s) with %c = %lld as in '%s'", path,
                                in->name, got, in->shape, in->shape[2 * i], (long long)d->size[l], d->binder[l]);
        }
    }
    return 0;
}

static int dtype_ok(hf_in_kind kind, tf_st_dtype dt) {
    int is_int = dt == TF_ST_I64 || dt == TF_ST_I32, is_float = dt == TF_ST_F32 || dt == TF_ST_F16 || dt == TF_ST_BF16;
    switch (kind) {
    case HF_IN_IDS:
    case HF_IN_LABELS:
    case HF_IN_INT: return is_int;
    case HF_IN_FLOAT: return is_float;
    case HF_IN_TARGETS: return is_int || is_float;
    default: return 1; /* masks: any dtype, values checked */
    }
}

static const char *const KIND_DTYPES[] = {
    [HF_IN_IDS] = "I64 or I32", [HF_IN_LABELS] = "I64 or I32",
    [HF_IN_MASK] = "I64, I32, U8, BOOL or float", [HF_IN_FLOAT] = "F32, F16 or BF16",
    [HF_IN_INT] = "I64 or I32", [HF_IN_TARGETS] = "I64, I32 (classes) or F32, F16, BF16 (regression)",
};

/* A mask of 0/1 values in any dtype -> U8, 1 = attend. */
static tf_tensor *to_mask(tf_tensor *t, tf_arena *a, const char *name, const char *path) {
    tf_tensor *m = t->dtype == TF_DTYPE_U8 ? t : tf_tensor_alloc(a, TF_DTYPE_U8, t->ndim, t->shape, 0);
    if (!m) return NULL;
    for (int64_t i = 0; i < tf_numel(t); i++) {
        double v = t->dtype == TF_DTYPE_F32 ? tf_f32(t)[i] : t->dtype == TF_DTYPE_I32 ? tf_i32(t)[i] : tf_u8(t)[i];
        if (v != 0 && v != 1) {
            char at[96];
            return tf_set_error("%s: input '%s' holds %g at %s; a mask holds 0 (padding) or 1", path, name, v,
                                index_str(t, i, at, sizeof at)), NULL;
        }
        tf_u8(m)[i] = v != 0;
    }
    return m;
}

/* Check and convert one given input; sign checks here, model ranges in the family. */
static tf_tensor *load_input(hf_dims *d, const hf_input *in, const tf_st_file *f, const tf_st_entry *e,
                             tf_arena *a, const char *path) {
    if (!dtype_ok(in->kind, e->dtype))
        return tf_set_error("%s: input '%s' is %s; expected %s", path, in->name, tf_st_dtype_name(e->dtype),
                            KIND_DTYPES[in->kind]), NULL;
    if (check_shape(d, in, e, path)) return NULL;
    tf_tensor *t = tf_st_to_tensor(f, e, a);
    if (!t) return NULL;
    if (in->kind == HF_IN_MASK) return to_mask(t, a, in->name, path);
    int labels = in->kind == HF_IN_LABELS || in->kind == HF_IN_TARGETS;
    for (int64_t i = 0; in->kind != HF_IN_INT && t->dtype == TF_DTYPE_I32 && i < tf_numel(t); i++)
        if (tf_i32(t)[i] < 0 && !(labels && tf_i32(t)[i] == -100)) {
            char at[96];
            return tf_set_error("%s: input '%s' holds %d at %s; expected %s", path, in->name, (int)tf_i32(t)[i],
                                index_str(t, i, at, sizeof at),
                                labels ? "a label >= 0 or -100 (ignored)" : "ids >= 0"), NULL;
        }
    return t;
}

/* Every input of the table row, in its order (so input_ids binds the sizes first). */
static int load_inputs(hf_job *job, const hf_arch *arch, const tf_st_file *f) {
    if (check_names(arch, f, job->input_path)) return -1;
    hf_dims d;
    memset(&d, 0, sizeof d);
    const hf_input *in;
    for (int i = 0; (in = arch_input(arch, i)); i++) {
        const tf_st_entry *e = tf_st_find(f, in->name);
        if (!e && in->required)
            return tf_set_error("%s: missing input '%s' (%s.forward() needs it)", job->input_path, in->name, arch->name);
        if (!e) continue;
        tf_tensor *t = load_input(&d, in, f, e, tf_ctx_arena(job->ctx), job->input_path);
        if (!t || hf_put(&job->in, in->name, t)) return -1;
    }
    return 0;
}

/* ---------------------------------------------------------------- running */

static int write_outputs(const hf_job *job, const hf_arch *arch, const char *path) {
    tf_st_writer *w = tf_st_writer_new();
    if (!w) return tf_set_error("out of memory");
    int rc = 0, n = 0;
    for (const char *const *o = arch->outputs; !rc && *o; o++) {
        tf_tensor *t = hf_get(&job->out, *o);
        if (t) rc = tf_st_writer_add(w, *o, t), n++;
    }
    if (!rc && !n) rc = tf_set_error("hf-run: %s computed none of its output fields", arch->name);
    if (!rc) rc = tf_st_writer_save(w, path);
    tf_st_writer_free(w);
    return rc;
}

/* The forward of f's inputs (the model loaded when NULL); emit(job, arch, user) takes the outputs while the
 * context lives. */
static int run_inputs(const tf_family *family, const hf_arch *arch, const void *model, const char *model_dir,
                      const tf_st_file *f, const char *label, FILE *log, hf_emit_fn emit, void *user) {
    tf_ctx *ctx = tf_ctx_new(0);
    if (!ctx) return tf_set_error("out of memory");
    void *loaded = NULL;
    int rc = -1;
    tf_ctx_set_grad(ctx, 0);
    hf_job job = {.ctx = ctx, .input_path = label, .log = log};
    /* the inputs first: a bad one is reported before a large model loads */
    if (!load_inputs(&job, arch, f) && (model || (model = loaded = family->load(model_dir, arch->name)))) {
        job.model = model;
        rc = family->run(&job) || emit(&job, arch, user) ? -1 : 0;
    }
    if (loaded) family->free(loaded);
    tf_ctx_free(ctx);
    return rc;
}

static int write_file(const hf_job *job, const hf_arch *arch, void *path) { return write_outputs(job, arch, path); }

int hf_run_file(const tf_family *family, const hf_arch *arch, const void *model, const char *model_dir,
                const char *input_path, const char *output_path, FILE *log) {
    if (check_weights_file(model_dir)) return -1;
    tf_st_file *f = tf_st_open(input_path);
    int rc = f ? run_inputs(family, arch, model, model_dir, f, input_path, log, write_file, (void *)output_path) : -1;
    tf_st_close(f);
    return rc;
}

int hf_run_entries(const tf_family *family, const hf_arch *arch, const void *model, const char *model_dir,
                   const tf_st_file *inputs, const char *label, hf_emit_fn emit, void *user) {
    if (check_weights_file(model_dir)) return -1;
    return run_inputs(family, arch, model, model_dir, inputs, label, NULL, emit, user);
}

int tf_hf_run(const char *model_dir, const char *input_path, const char *output_path, FILE *log) {
    const tf_family *family = NULL;
    const hf_arch *arch = hf_read_architecture(model_dir, log, &family);
    return arch ? hf_run_file(family, arch, NULL, model_dir, input_path, output_path, log) : -1;
}
