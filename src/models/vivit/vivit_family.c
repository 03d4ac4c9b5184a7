/* ViViT's registry row (tformer/model.h): video classification on moving-object clips. */

#include <string.h>

#include "../hf_run.h"
#include "../vision_family.h"
#include "tformer/vivit.h"

/* ---------------------------------------------------------------- hf-run: forward()'s arguments */

/* VivitModel / VivitForVideoClassification.forward() (transformers 4.x): clips (B,T,C,H,W). */
static const hf_input VIVIT_INPUTS[] = {{"pixel_values", HF_IN_FLOAT, "B,T,C,H,W", 1}, {NULL, 0, NULL, 0}};
static const char *const VIVIT_REFUSED[] = {"head_mask", "output_attentions", "output_hidden_states", "return_dict", NULL};

static const hf_arch VIVIT_ARCHS[] = {
    {"VivitModel", VIVIT_INPUTS, VIVIT_REFUSED, hf_out_pooled, NULL},
    {"VivitForVideoClassification", VIVIT_INPUTS, VIVIT_REFUSED, hf_out_lm, hf_head_class_labels},
    {NULL, NULL, NULL, NULL, NULL},
};

/* ---------------------------------------------------------------- loading and running */

TF_FAMILY_MODEL_CALLS(vivit, tf_vivit)

TF_CLASSIFIER_FORWARD(tf_vivit)

TF_CLASSIFIER_CALLS(vivit, tf_vivit, tf_vivit_classifier_forward, TF_VIVIT_VIDEO_CLS, TF_CAP_CLASSIFY_CLIP)

/* Each clip alone, (1, frames, channels, size, size), as `tformer classify` runs a clip folder. */
static int vivit_classify_clips(const void *model, const float *pixels, int64_t n, float *logits) {
    const tf_vivit *m = model;
    const tf_vivit_config *c = &m->cfg;
    int64_t shape[5] = {1, c->num_frames, c->channels, c->image_size, c->image_size}, per = 1;
    for (int d = 1; d < 5; d++) per *= shape[d];
    tf_ctx *ctx = tf_ctx_new(0);
    if (!ctx) return -1;
    tf_ctx_set_grad(ctx, 0);
    int rc = 0;
    for (int64_t i = 0; !rc && i < n; i++) {
        tf_ctx_reset(ctx);
        tf_tensor *x = tf_tensor_new(ctx, TF_DTYPE_F32, 5, shape, 0);
        tf_vivit_outputs o;
        if (!x) rc = -1;
        else memcpy(x->data, pixels + i * per, (size_t)per * sizeof(float));
        if (!rc) rc = tf_vivit_run(ctx, m, &(tf_vivit_inputs){.pixel_values = x}, &o);
        if (!rc && !o.logits) rc = tf_set_error("vivit: clips need VivitForVideoClassification");
        if (!rc) memcpy(logits + i * c->n_labels, tf_f32(o.logits), (size_t)c->n_labels * sizeof(float));
    }
    tf_ctx_free(ctx);
    return rc;
}

static void vivit_clip_shape(const void *model, int *frames, int *channels, int *size) {
    const tf_vivit_config *c = &((const tf_vivit *)model)->cfg;
    *frames = c->num_frames, *channels = c->channels, *size = c->image_size;
}

static int vivit_clip_tubelet(const void *model) { return tf_vivit_tube_t(&((const tf_vivit *)model)->cfg); }

static int vivit_n_labels(const void *model) {
    const tf_vivit_config *c = &((const tf_vivit *)model)->cfg;
    return c->head == TF_VIVIT_VIDEO_CLS ? c->n_labels : 0;
}

/* ---------------------------------------------------------------- the row */

static const char *const VIVIT_TYPES[] = {"vivit", "tformer-vivit", NULL};

static void vivit_defaults(void *cfg, tf_train_config *train) {
    tf_vivit_task_config *c = cfg;
    *c = tf_vivit_task_config_default();
    c->model.n_labels = 40; /* the default labels: 10 classes x 4 directions */
    tf_vision_train_defaults(train);
    train->batch = 32;
}

static const char *vivit_check(const void *cfg, const tf_task_args *a, char *buf, size_t n) {
    (void)cfg, (void)buf, (void)n;
    if (!a->data_dir || a->n_data) return "--arch vivit reads --data-dir DIR (idx files: the images its clips are made of)";
    return NULL;
}

/* The clips are made of --data-dir's train split; validation: its last part. */
static tf_task *vivit_task(const void *cfg, const tf_task_args *a) {
    tf_images images;
    if (tf_images_read_dir(a->data_dir, "train", 0, &images)) return NULL;
    return tf_vivit_task_new(cfg, &images, a->run_dir, a->seed);
}

static int64_t vivit_val(const tf_task *t, const tf_task_args *a) {
    return tf_family_one_pass(tf_vivit_task_clips(t, TF_SUBSET_VAL), a->rows);
}

const tf_family tf_family_vivit = {
    .name = "vivit", .summary = "video classification on moving-object clips",
    .model_types = VIVIT_TYPES, .verbs = "classify", .caps = TF_CAP_RUN | TF_CAP_CLASSIFY_CLIP,
    TF_FAMILY_MODEL_ROW(vivit, tf_vivit), .archs = VIVIT_ARCHS,
    .input = TF_TRAIN_CLIPS, .task_table = &tf_vivit_task_config_table, .task_size = sizeof(tf_vivit_task_config),
    .task_defaults = vivit_defaults, .task_check = vivit_check, .task_new = vivit_task, .val_batches = vivit_val,
    .label = vivit_label, .classify_clips = vivit_classify_clips, .clip_shape = vivit_clip_shape,
    .clip_tubelet = vivit_clip_tubelet,
    .n_labels = vivit_n_labels,
};
