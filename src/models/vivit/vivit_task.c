/* Video classification: a VivitForVideoClassification (Model 1, 2 or 3,
 * tubelet or frame embedding) on moving-object clips generated from
 * labelled images (Moving MNIST's procedure, tf_clips_loader_new), labels
 * that need time (the direction of motion, with or without the object's
 * class), optionally frame-shuffled as a control; cross-entropy, validation
 * accuracy; saved as a ViViT folder with the label names as id2label. */
#include <stdlib.h>
#include <string.h>

#include "../../task/task_internal.h"
#include "tformer/vivit.h"

static const char *const LABELS[] = {"direction", "class_direction|class-direction", NULL};
_Static_assert(sizeof(tf_clip_label) == sizeof(int), "enum rows store an int");

#define ROW(m, type, def, range, choices, help) \
    TF_FIELD_ROW(tf_vivit_task_config, m, type, #m, def, range, choices, help, 0, NULL)
static const tf_field VIVIT_TASK_ROWS[] = {
    ROW(val_fraction, TF_FIELD_FLOAT, "0.1", "(0,1)", NULL,
        "the last part of the images, held out: the validation clips are made of them"),
    ROW(val_clips, TF_FIELD_INT, "1000", "[1,10000000]", NULL, "validation clips"),
    ROW(label_smoothing, TF_FIELD_FLOAT, "0", "[0,1)", NULL, "label smoothing of the loss"),
    ROW(object_size, TF_FIELD_INT, "0", "[0,4096]", NULL,
        "the moving image drawn at object_size x object_size pixels (nearest pixel); 0: its own size (28)"),
    ROW(speed, TF_FIELD_FLOAT, "3", "[0,4096]", NULL, "pixels per frame"),
    ROW(labels, TF_FIELD_ENUM, "class_direction", NULL, LABELS,
        "direction: the quadrant of the first motion (4 classes); class_direction: the image's class and it "
        "(4 x classes)"),
    ROW(shuffle_frames, TF_FIELD_BOOL, "false", NULL, NULL,
        "the control: every clip's frames in a random order (a model that uses time scores lower)"),
    TF_FIELD_SUB(tf_vivit_task_config, model, tf_vivit_config_table),
};
#undef ROW
const tf_field_table tf_vivit_task_config_table = {"video classification", VIVIT_TASK_ROWS,
                                                   (int)(sizeof VIVIT_TASK_ROWS / sizeof VIVIT_TASK_ROWS[0])};

TF_FIELDS_DEFAULT_FN(tf_vivit_task_config, tf_vivit_task_config_default, tf_vivit_task_config_table)

typedef struct {
    tf_image_task img; /* base, the images the clips are made of, the clips' loader */
    tf_vivit_task_config cfg;
    tf_vivit *m;
} vivit_task;

static tf_tensor *vv_loss(tf_task *t, tf_ctx *ctx, const tf_batch *b, tf_metrics *m) {
    vivit_task *v = (vivit_task *)t;
    tf_vivit_inputs in = {tf_batch_get(b, "pixel_values"), tf_batch_get(b, "labels"), v->cfg.label_smoothing};
    tf_vivit_outputs out;
    if (tf_vivit_run(ctx, v->m, &in, &out)) return NULL;
    if (m) tf_task_count_hits(out.logits, in.labels, m);
    return out.loss;
}

static int vv_save(tf_task *t, const char *dir) { return tf_vivit_save(((vivit_task *)t)->m, dir); }

/* Tokens per clip: the embedded tubes. */
static int64_t vv_tokens(tf_task *t, int rows) {
    const tf_vivit_config *c = &((vivit_task *)t)->m->cfg;
    return (int64_t)rows * tf_vivit_time_tokens(c) * tf_vivit_spatial_tokens(c);
}

static void vv_free(tf_task *t) {
    tf_vivit_free(((vivit_task *)t)->m);
    tf_image_task_free(t);
}

static const tf_task_vt VIVIT_TASK = {TF_IMAGE_TASK_CALLS(vv_loss, vv_save, vv_tokens, vv_free)};

/* ---------------------------------------------------------------- construction */

static tf_clips_config clips_config(const tf_vivit_task_config *c) {
    return (tf_clips_config){c->model.image_size, c->model.num_frames, c->object_size, c->speed, c->labels,
                             c->shuffle_frames};
}

/* "right-down", ... or "<class>/right-down", ...: the model's label names. */
static int name_labels(tf_vivit *m, tf_clip_label kind) {
    static const char *const DIRS[4] = {"right-down", "left-down", "left-up", "right-up"};
    int n = m->cfg.n_labels, rc = 0;
    char **names = calloc((size_t)n, sizeof *names);
    for (int i = 0; names && i < n && !rc; i++) {
        char buf[64];
        if (kind == TF_CLIP_LABEL_DIRECTION) snprintf(buf, sizeof buf, "%s", DIRS[i % 4]);
        else snprintf(buf, sizeof buf, "%d/%s", i / 4, DIRS[i % 4]);
        if (!(names[i] = strdup(buf))) rc = -1;
    }
    rc = !names || rc ? tf_set_error("vivit: out of memory") : tf_vivit_set_labels(m, (const char *const *)names, n);
    for (int i = 0; names && i < n; i++) free(names[i]);
    free(names);
    return rc;
}

static int check_setup(const tf_vivit_task_config *c, const tf_images *s) {
    tf_fields f = {&tf_vivit_task_config_table, (void *)c};
    if (tf_fields_check(&f, 1) || tf_vivit_config_check(&c->model)) return -1;
    if (c->model.head != TF_VIVIT_VIDEO_CLS) return tf_set_error("head: training needs VivitForVideoClassification");
    if (s->channels != c->model.channels)
        return tf_set_error("the images have %d channel(s), the model %d: set --channels %d", s->channels,
                            c->model.channels, s->channels);
    int need = tf_clips_n_labels(&(tf_clips_config){.label = c->labels}, s->n_classes);
    if (c->model.n_labels != need)
        return tf_set_error("labels %s over %d image classes have %d classes, the model n_labels %d: set --n-labels %d",
                            c->labels == TF_CLIP_LABEL_DIRECTION ? "direction" : "class_direction", s->n_classes,
                            need, c->model.n_labels, need);
    return 0;
}

tf_task *tf_vivit_task_new(const tf_vivit_task_config *c, tf_images *images, const char *run_dir, uint64_t seed) {
    vivit_task *v = tf_image_task_alloc(sizeof *v, &VIVIT_TASK, images, NULL); /* the images are the task's */
    if (!v) return NULL;
    tf_image_task *g = &v->img;
    v->cfg = *c;
    g->base.config = (tf_fields){&tf_vivit_task_config_table, &v->cfg};
    tf_task_use_accuracy(&g->base);
    tf_clips_config cc = clips_config(c);
    int rc = check_setup(c, &g->train) || tf_task_make_dir(run_dir) ||
             tf_task_images_split(&g->train, &g->valid, c->val_fraction) ||
             !(v->m = tf_vivit_new(&c->model, seed ? seed : 1)) || name_labels(v->m, c->labels) ||
             !(g->loader = tf_clips_loader_new(&g->train, &g->valid, &cc, c->val_clips, seed));
    if (rc) {
        vv_free(&g->base);
        return NULL;
    }
    tf_image_task_set_model(g, v->m->params, &tf_vivit_config_table, &v->m->cfg);
    return &g->base;
}

const tf_vivit *tf_vivit_task_model(const tf_task *t) { return ((const vivit_task *)t)->m; }

int64_t tf_vivit_task_clips(const tf_task *t, tf_subset subset) {
    return subset == TF_SUBSET_VAL ? ((const vivit_task *)t)->cfg.val_clips : 0;
}
