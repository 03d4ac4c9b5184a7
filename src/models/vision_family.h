/* Private to src/models: the image classifiers' shared training defaults and checks
 * (ViT and Swin train by DeiT's recipe; ViViT by the same optimiser settings). */
#ifndef TF_VISION_FAMILY_H
#define TF_VISION_FAMILY_H

#include "family.h"
#include "hf_run.h"

/* AdamW as DeiT (weight decay 0.05, beta2 0.999) and at most one validation pass. */
static inline void tf_vision_train_defaults(tf_train_config *train) {
    train->weight_decay = 0.05f, train->beta2 = 0.999f;
    train->eval_batches = 1000; /* at most one pass over the validation images */
}

/* ViT's and Swin's, by DeiT's recipe: the above, batches of 128, min_lr 1e-5. */
static inline void tf_vision_deit_defaults(tf_train_config *train) {
    tf_vision_train_defaults(train);
    train->batch = 128, train->min_lr = 1e-5f;
}

/* An image classifier's training images: --data-dir's train split (labels below n_labels), or
 * one digits CSV; validation is the task's last val_fraction. */
static inline int tf_vision_train_images(const tf_task_args *a, int n_labels, tf_images *train) {
    return a->data_dir ? tf_images_read_dir(a->data_dir, "train", n_labels, train) : tf_images_read_digits(a->data[0], train);
}

/* A DeiT-recipe image classifier's training calls (ViT's, Swin's) for a model type T with T_task_config,
 * T_task_config_default and T_task_new: prefix_defaults and prefix_task (tf_vision_train_images). */
#define TF_DEIT_TASK_CALLS(prefix, T)                                                                           \
    static void prefix##_defaults(void *cfg, tf_train_config *train) {                                          \
        *(T##_task_config *)cfg = T##_task_config_default();                                                    \
        tf_vision_deit_defaults(train);                                                                         \
    }                                                                                                           \
    static tf_task *prefix##_task(const void *cfg, const tf_task_args *a) {                                     \
        tf_images train;                                                                                        \
        if (tf_vision_train_images(a, ((const T##_task_config *)cfg)->model.n_labels, &train)) return NULL;     \
        return T##_task_new(cfg, &train, NULL, a->run_dir, a->seed);                                            \
    }

/* The row's fields for them (tf_family's initialisers): DeiT's image input and its checks. */
#define TF_DEIT_TASK_ROW(prefix, T)                                                                             \
    .input = TF_TRAIN_IMAGES, .task_table = &T##_task_config_table, .task_size = sizeof(T##_task_config),      \
    .task_defaults = prefix##_defaults, .task_new = prefix##_task,          \
    .val_batches = tf_vision_image_val

/* A classifier row's typed calls for a model type T whose cfg holds head and n_labels: prefix_run (hf-run
 * through forward), prefix_caps (TF_CAP_RUN, and cap when cfg.head is cls) and prefix_label (T_label). */
#define TF_CLASSIFIER_CALLS(prefix, T, forward, cls, cap)                                                       \
    static int prefix##_run(hf_job *job) {                                                                      \
        return hf_run_classifier(job, ((const T *)job->model)->cfg.n_labels, forward);                          \
    }                                                                                                           \
    static unsigned prefix##_caps(const void *model) {                                                          \
        return ((const T *)model)->cfg.head == (cls) ? TF_CAP_RUN | (cap) : TF_CAP_RUN;                         \
    }                                                                                                           \
    static const char *prefix##_label(const void *model, int i, char *buf, size_t n) {                          \
        return T##_label(model, i, buf, n);                                                                     \
    }

/* And an image classifier's (cfg.channels, cfg.image_size; T_predict): prefix_classify and prefix_shape. */
#define TF_IMAGE_CLASSIFIER_CALLS(prefix, T)                                                                    \
    static int prefix##_classify(const void *model, const float *pixels, int64_t n, int batch, int hflip,       \
                                 const int32_t *labels, int32_t *pred, float *prob, double *loss,               \
                                 int64_t *correct) {                                                            \
        return T##_predict(model, pixels, n, batch, hflip, labels, pred, prob, loss, correct);                  \
    }                                                                                                           \
    static void prefix##_shape(const void *model, int *channels, int *size, int *n_labels) {                    \
        const T *m = model;                                                                                     \
        *channels = m->cfg.channels, *size = m->cfg.image_size, *n_labels = m->cfg.n_labels;                    \
    }

/* Defines T_classifier_forward (an hf_classifier_fn, declared below) for a model type T whose T_inputs hold
 * pixel_values, labels and label_smoothing and whose T_outputs hold hf_classifier_out's four tensors. */
#define TF_CLASSIFIER_FORWARD(T)                                                                                \
    int T##_classifier_forward(tf_ctx *ctx, const void *m, tf_tensor *pixels, tf_tensor *labels, float smoothing, \
                               hf_classifier_out *o) {                                                          \
        T##_outputs out;                                                                                        \
        T##_inputs in = {.pixel_values = pixels, .labels = labels, .label_smoothing = smoothing};               \
        if (T##_run(ctx, m, &in, &out)) return -1;                                                              \
        *o = (hf_classifier_out){out.last_hidden_state, out.pooler_output, out.logits, out.loss};               \
        return 0;                                                                                               \
    }

/* ViT's, Swin's and ViViT's classifier forwards (their rows' files), which ViT's and Swin's training task
 * runs too. */
int tf_vit_classifier_forward(tf_ctx *ctx, const void *m, tf_tensor *pixels, tf_tensor *labels, float smoothing,
                              hf_classifier_out *o);
int tf_swin_classifier_forward(tf_ctx *ctx, const void *m, tf_tensor *pixels, tf_tensor *labels, float smoothing,
                               hf_classifier_out *o);
int tf_vivit_classifier_forward(tf_ctx *ctx, const void *m, tf_tensor *pixels, tf_tensor *labels, float smoothing,
                                hf_classifier_out *o);
/* One image (channels x size x size) through an image classifier's forward: its n_labels logits. */
int tf_vision_image_logits(const void *model, hf_classifier_fn forward, int channels, int size, int n_labels,
                           const float *pixels, float *logits);
/* Validation batches of an image-classification task (ViT's or Swin's: tf_vit_task_new's): one pass. */
int64_t tf_vision_image_val(const tf_task *t, const tf_task_args *a);

#endif
