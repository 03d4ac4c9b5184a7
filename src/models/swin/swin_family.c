/* The Swin Transformer's registry row (tformer/model.h). */
#include "../hf_run.h"
#include "../vision_family.h"
#include "tformer/swin.h"

/* ---------------------------------------------------------------- hf-run: forward()'s arguments */

/* SwinModel / SwinForImageClassification.forward(): ViT's inputs (hf_in_image, the classifier's
 * hf_head_class_labels), and refused: */
static const char *const SWIN_REFUSED[] = {
    "bool_masked_pos", "head_mask", "output_attentions", "output_hidden_states", "return_dict", NULL,
};

static const hf_arch SWIN_ARCHS[] = {
    {"SwinModel", hf_in_image, SWIN_REFUSED, hf_out_pooled, NULL},
    {"SwinForImageClassification", hf_in_image, SWIN_REFUSED, hf_out_lm, hf_head_class_labels},
    {NULL, NULL, NULL, NULL, NULL},
};

/* ---------------------------------------------------------------- loading and running */

TF_FAMILY_MODEL_CALLS(swin, tf_swin)

int tf_swin_classifier_forward(tf_ctx *ctx, const void *m, tf_tensor *pixels, tf_tensor *labels, float smoothing,
                               hf_classifier_out *o) {
    tf_swin_outputs out;
    tf_swin_inputs in = {.pixel_values = pixels, .labels = labels, .label_smoothing = smoothing};
    if (tf_swin_run(ctx, m, &in, &out)) return -1;
    if (out.logits) out.last_hidden_state = out.pooler_output = NULL; /* SwinForImageClassification: logits, loss */
    *o = (hf_classifier_out){out.last_hidden_state, out.pooler_output, out.logits, out.loss};
    return 0;
}

/* ---------------------------------------------------------------- capabilities */

TF_CLASSIFIER_CALLS(swin, tf_swin, tf_swin_classifier_forward, TF_SWIN_IMAGE_CLS, TF_CAP_CLASSIFY_IMAGE)
TF_IMAGE_CLASSIFIER_CALLS(swin, tf_swin)

/* One image through the forward. */
static int swin_logits(const void *model, const float *pixels, float *logits, float *maps) {
    (void)maps; /* no attention_grid: the handle asks for none */
    const tf_swin_config *c = &((const tf_swin *)model)->cfg;
    return tf_vision_image_logits(model, tf_swin_classifier_forward, c->channels, c->image_size, c->n_labels, pixels,
                                  logits);
}

/* ---------------------------------------------------------------- the row */

static const char *const SWIN_TYPES[] = {"swin", NULL};

TF_DEIT_TASK_CALLS(swin, tf_swin)

const tf_family tf_family_swin = {
    .name = "swin", .summary = "image classification by a Swin Transformer",
    .model_types = SWIN_TYPES, .verbs = "classify", .caps = TF_CAP_RUN | TF_CAP_CLASSIFY_IMAGE,
    TF_FAMILY_MODEL_ROW(swin, tf_swin), .archs = SWIN_ARCHS,
    TF_DEIT_TASK_ROW(swin, tf_swin),
    .classify_images = swin_classify, .image_shape = swin_shape, .label = swin_label, .image_logits = swin_logits,
};
