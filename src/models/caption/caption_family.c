/* The captioner's registry row (tformer/model.h): a CNN encoder and a GRU/LSTM decoder with
 * attention over the image's grid (Show, Attend and Tell), or the baseline without. */
#include <stdlib.h>
#include <string.h>

#include "../family.h"
#include "tformer/caption.h"

static const char *const CAPTION_TYPES[] = {"tformer-caption", NULL};

static void cap_defaults(void *cfg, tf_train_config *train) {
    (void)train;
    *(tf_caption_task_config *)cfg = tf_caption_task_config_default();
}

static const char *cap_check(const void *cfg, const tf_task_args *a, char *buf, size_t n) {
    (void)cfg, (void)buf, (void)n;
    if (a->n_data || a->tokenizer || a->data_dir || a->norm_given)
        return "--arch caption makes its scenes (--scene-seed, --scene-items ...): no --data, --data-dir, --tokenizer "
               "or --norm";
    return NULL;
}

static tf_task *cap_task(const void *cfg, const tf_task_args *a) { return tf_caption_task_new(cfg, a->run_dir, a->seed); }

static int64_t cap_val(const tf_task *t, const tf_task_args *a) {
    return tf_family_one_pass(((const tf_caption_task_config *)t->config.obj)->n_valid, a->rows);
}

static void *cap_load(const char *dir, const char *architecture) {
    (void)architecture; /* tformer's own folders name none */
    return tf_caption_load(dir);
}

static void cap_free(void *model) { tf_caption_free(model); }
static const tf_params *cap_params(const void *model) { return ((const tf_caption *)model)->params; }

static void cap_shape(const void *model, int *channels, int *size, int *n_labels) {
    const tf_caption *m = model;
    *channels = m->cfg.channels, *size = m->cfg.image_size, *n_labels = 0;
}

/* The words of ids into r (text, words). */
static int words_of(const int32_t *ids, int n, tf_caption_result *r) {
    size_t len = 1;
    for (int i = 0; i < n; i++) len += strlen(tf_caption_word(ids[i])) + 1;
    if (!(r->text = malloc(len)) || !(r->words = calloc((size_t)n + 1, sizeof *r->words)))
        return tf_set_error("caption: out of memory");
    r->text[0] = 0;
    for (int i = 0; i < n; i++, r->n_words++) {
        const char *w = tf_caption_word(ids[i]);
        if (!(r->words[i] = strdup(w))) return tf_set_error("caption: out of memory");
        if (i) strcat(r->text, " ");
        strcat(r->text, w);
    }
    return 0;
}

static int cap_caption(const void *model, const float *pixels, const tf_generate_opts *o, tf_caption_result *r) {
    const tf_caption *m = model;
    int cap = m->cfg.context, n = 0, G = tf_caption_grid(&m->cfg);
    int32_t *ids = malloc((size_t)cap * sizeof *ids);
    float *att = m->cfg.attention ? malloc((size_t)(cap + 1) * (size_t)(G * G) * sizeof *att) : NULL;
    int rc = ids && (att || !m->cfg.attention) ? tf_caption_generate(m, pixels, o, ids, cap, &n, att)
                                               : tf_set_error("caption: out of memory");
    if (!rc) rc = words_of(ids, n, r);
    r->attention = att, r->grid = G;
    free(ids);
    return rc;
}
static int cap_save(const void *model, const char *dir) { return tf_caption_save(model, dir); }


const tf_family tf_family_caption = {
    .name = "caption", .summary = "image captioning: a CNN grid, an RNN with attention or a Transformer decoder",
    .model_types = CAPTION_TYPES, .verbs = "caption", .caps = TF_CAP_CAPTION,
    .load = cap_load, .free = cap_free, .params = cap_params,
    .config_table = &tf_caption_config_table, .save = cap_save,
    .input = TF_TRAIN_GENERATED, .task_table = &tf_caption_task_config_table,
    .task_size = sizeof(tf_caption_task_config),
    .task_defaults = cap_defaults, .task_check = cap_check, .task_new = cap_task, .val_batches = cap_val,
    .image_shape = cap_shape, .caption = cap_caption,
};
