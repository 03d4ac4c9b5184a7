/* Model folders (model_folder.h): tformer's own (the encoder-decoder and the
 * RNN baseline), and the pieces every Hugging Face family shares: strict
 * weight loading under a family's names, saving, class names, id checks. */
#include <errno.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "../nn/nn_internal.h"
#include "family.h"
#include "model_folder.h"

int tf_folder_read_config(const char *dir, const char *type, const tf_field_table *t, void *cfg) {
    char path[4096];
    if (tf_path_join(path, sizeof path, dir, "config.json")) return -1;
    cJSON *root = tf_json_read(path);
    if (!root) return -1;
    const cJSON *mt = cJSON_GetObjectItemCaseSensitive(root, "model_type");
    tf_fields f = {t, cfg};
    int rc = 0, named = cJSON_IsString(mt);
    if (!named || strcmp(mt->valuestring, type))
        rc = tf_set_error("%s: model_type %s%s%s, expected \"%s\"", path, named ? "\"" : "", named ? mt->valuestring : "missing",
                          named ? "\"" : "", type);
    if (!rc) rc = tf_fields_defaults(&f, 1) || tf_fields_from_json(root, &f, 1, path, 1) ? -1 : 0;
    cJSON_Delete(root);
    return rc;
}

int tf_folder_load_weights(const char *dir, tf_params *ps) {
    char path[4096];
    if (tf_path_join(path, sizeof path, dir, "model.safetensors")) return -1;
    tf_st_file *f = tf_st_open(path);
    if (!f) return -1;
    int rc = tf_params_load(ps, f, 1);
    tf_st_close(f);
    if (rc) {
        char msg[1024];
        snprintf(msg, sizeof msg, "%s", tf_error());
        return tf_set_error("%s: %s", path, msg);
    }
    return 0;
}

int tf_folder_save(const char *dir, const char *type, const tf_field_table *t, const void *cfg, const tf_params *ps) {
    if (mkdir(dir, 0755) && errno != EEXIST) return tf_set_error("%s: cannot create: %s", dir, strerror(errno));
    char path[4096];
    if (tf_path_join(path, sizeof path, dir, "config.json")) return -1;
    tf_fields f = {t, (void *)cfg};
    cJSON *r = cJSON_CreateObject();
    int rc = !r || !cJSON_AddStringToObject(r, "model_type", type) || tf_fields_to_json(r, &f, 1) || tf_json_write(path, r);
    cJSON_Delete(r);
    if (rc) return -1;
    if (tf_path_join(path, sizeof path, dir, "model.safetensors")) return -1;
    return tf_params_save(ps, path);
}

/* The verbs that run a folder of model_type t (its family's row), or NULL: the hint for a folder
 * given to another family's loader. */
static const char *verbs_for(const char *t) {
    const tf_family *f = tf_family_of_type(t);
    return f ? f->verbs : NULL;
}

int tf_folder_check_type(const cJSON *root, const char *path, const char *family, const char *const *types) {
    const cJSON *mt = cJSON_GetObjectItemCaseSensitive(root, "model_type");
    if (!cJSON_IsString(mt)) return 0; /* a hand-written folder may name none */
    char list[256];
    size_t n = 0;
    list[0] = 0;
    for (int k = 0; types[k]; k++) {
        if (!strcmp(mt->valuestring, types[k])) return 0;
        if (n < sizeof list) n += (size_t)snprintf(list + n, sizeof list - n, "%s\"%s\"", k ? ", " : "", types[k]);
    }
    const char *verbs = verbs_for(mt->valuestring);
    return tf_set_error("%s: model_type \"%s\" is not a %s folder (%s)%s%s%s", path, mt->valuestring, family, list,
                        verbs ? ": tformer " : "", verbs ? verbs : "", verbs ? " runs it" : "");
}

/* ---------------------------------------------------------------- Hugging Face weights */

/* Entry e exists and has the registered shape; else an error naming the file and tensor. */
static int fits(const tf_st_entry *e, const int64_t *shape, int ndim, const char *path, const char *name) {
    int same = e && e->ndim == ndim;
    for (int d = 0; same && d < ndim; d++) same = e->shape[d] == shape[d];
    if (!e) return tf_set_error("%s: missing tensor '%s'", path, name);
    return same ? 0 : tf_set_error("%s: tensor '%s' has the wrong shape for config.json", path, name);
}

/* Every parameter from f, copied into allocated tensors, or (mapped) the
 * file's F32 bytes themselves where they sit on a 4-byte boundary (others
 * converted into fresh tensors without gradients); then no tensor of f left
 * unclaimed. */
static int read_weights(const tf_st_file *f, const char *path, tf_params *ps, tf_folder_find_fn find,
                        tf_folder_known_fn known, int mapped) {
    int rc = mapped ? 0 : tf_params_alloc(ps); /* every tensor is then overwritten: no random init first */
    for (int i = 0; !rc && i < tf_params_count(ps); i++) {
        const char *name = tf_params_name(ps, i);
        const tf_st_entry *e = find ? find(f, name) : tf_st_find(f, name);
        int64_t shape[TF_MAX_DIMS];
        if ((rc = fits(e, shape, tf_params_shape(ps, i, shape), path, name))) break;
        int direct = mapped && e->dtype == TF_ST_F32 && (uintptr_t)e->data % sizeof(float) == 0;
        tf_tensor *t = !mapped ? tf_params_tensor(ps, i) : tf_params_set_data(ps, i, direct ? (float *)e->data : NULL);
        if (!t) rc = tf_set_error("%s: out of memory for '%s'", path, name);
        else if (!direct) rc = tf_st_read_f32(f, e, t);
    }
    for (int i = 0; !rc && i < tf_st_count(f); i++) {
        const char *name = tf_st_entry_at(f, i)->name;
        if (!(known ? known(ps, name) : tf_params_get(ps, name) != NULL))
            rc = tf_set_error("%s: unexpected tensor '%s'", path, name);
    }
    return rc;
}

int tf_folder_read_weights(const tf_st_file *f, const char *path, tf_params *ps, tf_folder_find_fn find,
                           tf_folder_known_fn known) {
    return read_weights(f, path, ps, find, known, 0);
}

int tf_folder_load_hf_weights(const char *path, tf_params *ps, tf_folder_find_fn find, tf_folder_known_fn known) {
    tf_st_file *f = tf_st_open(path);
    int rc = f ? read_weights(f, path, ps, find, known, 0) : -1;
    tf_st_close(f);
    return rc;
}

int tf_folder_map_hf_weights(const char *path, tf_params *ps, tf_folder_find_fn find, tf_folder_known_fn known) {
    tf_st_file *f = tf_st_open(path);
    int rc = f ? read_weights(f, path, ps, find, known, 1) : -1;
    if (rc) tf_st_close(f);
    else tf_params_keep_file(ps, f);
    return rc;
}

int tf_folder_save_weights(const tf_params *ps, const char *path, const char *extra_name, const tf_tensor *extra) {
    tf_st_writer *w = tf_st_writer_new();
    if (!w) return tf_set_error("%s: out of memory", path);
    int rc = 0;
    for (int i = 0; i < tf_params_count(ps) && !rc; i++)
        rc = tf_st_writer_add(w, tf_params_name(ps, i), tf_params_tensor(ps, i));
    if (!rc && extra_name && extra) rc = tf_st_writer_add(w, extra_name, extra);
    if (!rc) rc = tf_st_writer_save(w, path);
    tf_st_writer_free(w);
    return rc;
}

/* ---------------------------------------------------------------- class names */

void tf_labels_free(char ***labels, int n) {
    for (int i = 0; *labels && i < n; i++) free((*labels)[i]);
    free(*labels);
    *labels = NULL;
}

int tf_labels_set(char ***labels, int n, const char *const *names) {
    char **v = calloc((size_t)n, sizeof *v);
    for (int i = 0; v && i < n; i++)
        if (!(v[i] = strdup(names[i]))) tf_labels_free(&v, i);
    if (!v) return tf_set_error("labels: out of memory");
    tf_labels_free(labels, n);
    *labels = v;
    return 0;
}

const char *tf_labels_name(char *const *labels, int n, int i, char *buf, size_t cap) {
    if (labels && i >= 0 && i < n) return labels[i];
    snprintf(buf, cap, "LABEL_%d", i); /* Hugging Face's default names */
    return buf;
}

int tf_labels_from_json(char ***labels, int n, const cJSON *map, const char *path) {
    const char **names = calloc((size_t)n, sizeof *names);
    if (!names) return tf_set_error("labels: out of memory");
    int rc = 0;
    for (const cJSON *j = map->child; j && !rc; j = j->next) {
        char *end;
        long id = strtol(j->string, &end, 10);
        if (*end || end == j->string || id < 0 || id >= n || names[id] || !cJSON_IsString(j))
            rc = tf_set_error("%s: id2label key \"%s\" must be a distinct id in [0,%d) naming a string", path,
                              j->string, n);
        else names[id] = j->valuestring;
    }
    for (int i = 0; !rc && i < n; i++)
        if (!names[i]) rc = tf_set_error("%s: id2label has no name for id %d", path, i);
    rc = rc || tf_labels_set(labels, n, names);
    free(names);
    return rc;
}

int tf_labels_to_json(char *const *labels, int n, cJSON *root) {
    cJSON *id2 = cJSON_AddObjectToObject(root, "id2label"), *l2id = cJSON_AddObjectToObject(root, "label2id");
    if (!id2 || !l2id) return tf_set_error("labels: out of memory");
    for (int i = 0; i < n; i++) {
        char key[32], buf[32];
        const char *name = tf_labels_name(labels, n, i, buf, sizeof buf);
        snprintf(key, sizeof key, "%d", i);
        if (!cJSON_AddStringToObject(id2, key, name) || !cJSON_AddNumberToObject(l2id, name, i))
            return tf_set_error("labels: out of memory");
    }
    return 0;
}

/* ---------------------------------------------------------------- inputs */

int tf_check_ids(const char *family, const tf_tensor *t, const char *name, int64_t B, int64_t T, int32_t hi,
                 const char *what) {
    char s[64];
    if (!t) return 0;
    if (t->dtype != TF_DTYPE_I32 || t->ndim != 2 || t->shape[0] != B || t->shape[1] != T || !tf_is_contiguous(t))
        return tf_set_error("%s: %s %s must be contiguous I32 (%lld,%lld)", family, name, tf_shape_str(t, s, sizeof s),
                            (long long)B, (long long)T);
    for (int64_t i = 0; hi > 0 && i < B * T; i++) {
        int32_t v = tf_i32(t)[i];
        if (v < 0 || v >= hi)
            return tf_set_error("%s: %s holds %d at [%lld,%lld]; %s %d", family, name, (int)v, (long long)(i / T),
                                (long long)(i % T), what, (int)hi);
    }
    return 0;
}

/* ---------------------------------------------------------------- classifiers */

int tf_folder_read_classes(const cJSON *root, const char *path, int *n_labels, int *regression) {
    const cJSON *map = cJSON_GetObjectItemCaseSensitive(root, "id2label");
    const cJSON *n = cJSON_GetObjectItemCaseSensitive(root, "num_labels");
    const cJSON *p = cJSON_GetObjectItemCaseSensitive(root, "problem_type");
    *n_labels = cJSON_IsNumber(n) ? n->valueint : cJSON_IsObject(map) ? cJSON_GetArraySize(map) : 2;
    int single = cJSON_IsString(p) && !strcmp(p->valuestring, "single_label_classification");
    int reg = cJSON_IsString(p) && !strcmp(p->valuestring, "regression");
    if (cJSON_IsString(p) && !single && !(reg && regression))
        return tf_set_error("%s: problem_type %s is not implemented (single_label_classification %s)", path,
                            p->valuestring, regression ? "and regression are" : "is");
    if (regression) *regression = reg || (!cJSON_IsString(p) && *n_labels == 1);
    return 0;
}

int tf_folder_refuse_regression(const cJSON *root, const char *path, int n_labels, int always) {
    const cJSON *p = cJSON_GetObjectItemCaseSensitive(root, "problem_type");
    int single = cJSON_IsString(p) && !strcmp(p->valuestring, "single_label_classification");
    if (n_labels != 1 || (single && !always)) return 0;
    return tf_set_error("%s: num_labels 1%s: transformers computes a regression loss (mean squared error), which "
                        "tformer's classifier does not implement", path,
                        always ? "" : " without problem_type single_label_classification");
}
