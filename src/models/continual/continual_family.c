/* The Continual Transformer's registry row (tformer/model.h): each token of a
 * stream labelled, trained on a --data file per class. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "continual_internal.h"

static const char *const CONTINUAL_TYPES[] = {"continual", NULL};

static void continual_defaults(void *cfg, tf_train_config *train) {
    (void)train;
    *(tf_continual_task_config *)cfg = tf_continual_task_config_default();
}

static const char *continual_check(const void *cfg, const tf_task_args *a, char *buf, size_t n) {
    (void)cfg, (void)buf, (void)n;
    return a->n_data < 2 ? "--arch continual needs a --data file per class (at least 2)" : NULL;
}

static tf_task *continual_task(const void *cfg, const tf_task_args *a) {
    return tf_continual_task_new(cfg, a->data, a->n_data, a->tokenizer ? a->tokenizer : "char", a->run_dir, a->resume,
                                a->seed);
}

static void continual_free(void *model) {
    if (model) tf_continual_free(model);
    free(model);
}

static void *continual_load(const char *dir, const char *architecture) {
    (void)architecture;
    tf_continual *m = calloc(1, sizeof *m);
    if (!m) return tf_set_error("out of memory"), NULL;
    if (tf_continual_load(dir, -1, m)) return free(m), NULL;
    return m;
}

static int continual_save(const void *model, const char *dir) { return tf_continual_save(dir, model, NULL); }

/* Label i: the i-th of label_names ("a,b,c") when they name all n_labels, else LABEL_i. */
static const char *continual_label(const void *model, int i, char *buf, size_t n) {
    const tf_continual_config *c = &((const tf_continual *)model)->cfg;
    const char *name = NULL, *p = c->label_names;
    int count = 0, len = 0;
    while (*c->label_names) { /* name `count` is [p, the next comma) */
        const char *end = strchr(p, ',') ? strchr(p, ',') : p + strlen(p);
        if (count++ == i) name = p, len = (int)(end - p);
        if (!*end) break;
        p = end + 1;
    }
    if (name && count == c->n_labels) snprintf(buf, n, "%.*s", len, name);
    else snprintf(buf, n, "LABEL_%d", i);
    return buf;
}

const tf_family tf_family_continual = {
    .name = "continual", .summary = "each token of a stream classified by a Continual Transformer",
    .model_types = CONTINUAL_TYPES, .verbs = "stream", .caps = TF_CAP_STREAM,
    .load = continual_load, .free = continual_free,
    .config_table = &tf_continual_config_table, .save = continual_save,
    .input = TF_TRAIN_TEXT, .task_table = &tf_continual_task_config_table,
    .task_size = sizeof(tf_continual_task_config),
    .task_defaults = continual_defaults, .task_check = continual_check, .task_new = continual_task,
    .stream = tf_continual_stream_new, .label = continual_label,
};
