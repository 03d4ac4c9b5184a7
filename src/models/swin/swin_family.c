/* The Swin Transformer's registry row (tformer/model.h). */
#include <math.h>
#include <string.h>

#include "../hf_run.h"
#include "../vision_family.h"
#include "tformer/swin.h"

/* ---------------------------------------------------------------- hf-run: forward()'s arguments */

/* SwinModel / SwinForImageClassification.forward(): ViT's inputs. */
static const hf_input SWIN_INPUTS[] = {{"pixel_values", HF_IN_FLOAT, "B,C,H,W", 1}, {NULL, 0, NULL, 0}};
static const hf_input SWIN_CLS_INPUTS[] = {
    {"pixel_values", HF_IN_FLOAT, "B,C,H,W", 1}, {"labels", HF_IN_LABELS, "B", 0}, {NULL, 0, NULL, 0},
};
static const char *const SWIN_REFUSED[] = {
    "bool_masked_pos", "head_mask", "output_attentions", "output_hidden_states", "return_dict", NULL,
};

static const hf_arch SWIN_ARCHS[] = {
    {"SwinModel", SWIN_INPUTS, SWIN_REFUSED, hf_out_pooled},
    {"SwinForImageClassification", SWIN_CLS_INPUTS, SWIN_REFUSED, hf_out_lm},
    {NULL, NULL, NULL, NULL},
};

/* ---------------------------------------------------------------- loading and running */

static void *swin_load(const char *dir, const char *architecture) {
    (void)architecture;
    return tf_swin_load(dir);
}

static void swin_free(void *model) { tf_swin_free(model); }

static int swin_run(hf_job *job) {
    const tf_swin *m = job->model;
    tf_swin_inputs in = {.pixel_values = hf_get(&job->in, "pixel_values"), .labels = hf_get(&job->in, "labels")};
    if (hf_check_range(job, "labels", 0, m->cfg.n_labels, -100, "labels must be below num_labels (or -100)"))
        return -1;
    tf_swin_outputs out;
    if (tf_swin_run(job->ctx, m, &in, &out)) return hf_input_error(job);
    if (out.logits) out.last_hidden_state = out.pooler_output = NULL; /* SwinForImageClassification: logits, loss */
    return hf_put_classifier_outputs(job, in.labels, out.last_hidden_state, out.pooler_output, out.logits, out.loss);
}

/* ---------------------------------------------------------------- capabilities */

static unsigned swin_caps(const void *model) {
    return ((const tf_swin *)model)->cfg.head == TF_SWIN_IMAGE_CLS ? TF_CAP_RUN | TF_CAP_CLASSIFY_IMAGE : TF_CAP_RUN;
}

static int swin_classify(const void *model, const float *pixels, int64_t n, int batch, int hflip, const int32_t *labels,
                        int32_t *pred, float *prob, double *loss, int64_t *correct) {
    return tf_swin_predict(model, pixels, n, batch, hflip, labels, pred, prob, loss, correct);
}

static void swin_shape(const void *model, int *channels, int *size, int *n_labels) {
    const tf_swin *m = model;
    *channels = m->cfg.channels, *size = m->cfg.image_size, *n_labels = m->cfg.n_labels;
}

static const char *swin_label(const void *model, int i, char *buf, size_t n) { return tf_swin_label(model, i, buf, n); }

/* One image through the forward. */
static int swin_logits(const void *model, const float *pixels, float *logits, float *maps) {
    (void)maps; /* no attention_grid: the handle asks for none */
    const tf_swin *m = model;
    const tf_swin_config *c = &m->cfg;
    tf_ctx *ctx = tf_ctx_new(0);
    if (!ctx) return tf_set_error("out of memory");
    tf_ctx_set_grad(ctx, 0);
    tf_tensor *x = tf_tensor_new(ctx, TF_DTYPE_F32, 4, (int64_t[]){1, c->channels, c->image_size, c->image_size}, 0);
    tf_swin_outputs out;
    int rc = -1;
    if (x) memcpy(x->data, pixels, (size_t)tf_numel(x) * sizeof(float));
    if (x && !tf_swin_run(ctx, m, &(tf_swin_inputs){.pixel_values = x}, &out)) {
        memcpy(logits, tf_f32(out.logits), (size_t)c->n_labels * sizeof *logits); // out.logits: (1,n_labels)
        rc = 0;
    }
    tf_ctx_free(ctx);
    return rc;
}

static const tf_params *swin_params(const void *model) { return ((const tf_swin *)model)->params; }

static int swin_save(const void *model, const char *dir) { return tf_swin_save(model, dir); }

/* ---------------------------------------------------------------- the row */

static const char *const SWIN_TYPES[] = {"swin", NULL};

static void swin_defaults(void *cfg, tf_train_config *train) {
    *(tf_swin_task_config *)cfg = tf_swin_task_config_default();
    tf_vision_train_defaults(train);
    train->batch = 128, train->min_lr = 1e-5f;
}

static tf_task *swin_task(const void *cfg, const tf_task_args *a) {
    tf_images train;
    if (tf_vision_train_images(a, ((const tf_swin_task_config *)cfg)->model.n_labels, &train)) return NULL;
    return tf_swin_task_new(cfg, &train, NULL, a->run_dir, a->seed);
}

/* The task's held-out images, counted as ViT's task counts them. */
static int64_t swin_val(const tf_task *t, const tf_task_args *a) {
    return tf_family_one_pass(tf_vit_task_images(t, TF_SUBSET_VAL), a->rows);
}

const tf_family tf_family_swin = {
    .name = "swin", .summary = "image classification by a Swin Transformer",
    .model_types = SWIN_TYPES, .verbs = "classify", .caps = TF_CAP_RUN | TF_CAP_CLASSIFY_IMAGE,
    .load = swin_load, .free = swin_free, .model_caps = swin_caps, .params = swin_params,
    .config_table = &tf_swin_config_table, .save = swin_save,
    .archs = SWIN_ARCHS, .run = swin_run,
    .input = TF_TRAIN_IMAGES, .task_table = &tf_swin_task_config_table, .task_size = sizeof(tf_swin_task_config),
    .task_defaults = swin_defaults, .task_check = tf_vision_task_check, .task_new = swin_task, .val_batches = swin_val,
    .classify_images = swin_classify, .image_shape = swin_shape, .label = swin_label, .image_logits = swin_logits,
};
