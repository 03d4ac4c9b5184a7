/* The Vision Transformer's registry row (tformer/model.h). */
#include <string.h>

#include "../hf_run.h"
#include "../vision_family.h"
#include "tformer/vit.h"

/* ---------------------------------------------------------------- hf-run: forward()'s arguments */

/* ViTModel / ViTForImageClassification.forward() (transformers 4.x): hf_in_image (the classifier's
 * hf_head_class_labels), and refused: */
static const char *const VIT_REFUSED[] = {
    "bool_masked_pos", "head_mask", "interpolate_pos_encoding", "output_attentions", "output_hidden_states",
    "return_dict", NULL,
};

static const hf_arch VIT_ARCHS[] = {
    {"ViTModel", hf_in_image, VIT_REFUSED, hf_out_pooled, NULL},
    {"ViTForImageClassification", hf_in_image, VIT_REFUSED, hf_out_lm, hf_head_class_labels},
    {NULL, NULL, NULL, NULL, NULL},
};

/* ---------------------------------------------------------------- loading and running */

TF_FAMILY_MODEL_CALLS(vit, tf_vit)

TF_CLASSIFIER_FORWARD(tf_vit)

/* ---------------------------------------------------------------- capabilities */

TF_CLASSIFIER_CALLS(vit, tf_vit, tf_vit_classifier_forward, TF_VIT_IMAGE_CLS, TF_CAP_CLASSIFY_IMAGE)
TF_IMAGE_CLASSIFIER_CALLS(vit, tf_vit)

/* One image through the forward (with its attention probabilities when maps are asked for). */
static int vit_logits(const void *model, const float *pixels, float *logits, float *maps) {
    const tf_vit *m = model;
    const tf_vit_config *c = &m->cfg;
    tf_ctx *ctx = tf_ctx_new(0);
    if (!ctx) return tf_set_error("out of memory");
    tf_ctx_set_grad(ctx, 0);
    tf_tensor *x = tf_tensor_new(ctx, TF_DTYPE_F32, 4, (int64_t[]){1, c->channels, c->image_size, c->image_size}, 0);
    tf_vit_outputs out;
    tf_vit_inputs in = {.pixel_values = x, .output_attentions = maps != NULL};
    int g = c->image_size / c->patch_size, rc = -1;
    if (x) memcpy(x->data, pixels, (size_t)tf_numel(x) * sizeof(float));
    if (x && !tf_vit_run(ctx, m, &in, &out)) {
        memcpy(logits, tf_f32(out.logits), (size_t)c->n_labels * sizeof *logits); // out.logits: (1,n_labels)
        rc = maps ? tf_vit_attention_rollout(m, &out, 0, maps, maps + g * g) : 0;
    }
    tf_ctx_free(ctx);
    return rc;
}

static void vit_grid(const void *model, int *g, int *heads, int *patch) {
    const tf_vit_config *c = &((const tf_vit *)model)->cfg;
    *g = c->image_size / c->patch_size, *heads = c->n_head, *patch = c->patch_size;
}

/* ---------------------------------------------------------------- the row */

static const char *const VIT_TYPES[] = {"vit", "tformer-vit", NULL};

TF_DEIT_TASK_CALLS(vit, tf_vit)

const tf_family tf_family_vit = {
    .name = "vit", .summary = "image classification",
    .model_types = VIT_TYPES, .verbs = "classify", .caps = TF_CAP_RUN | TF_CAP_CLASSIFY_IMAGE,
    TF_FAMILY_MODEL_ROW(vit, tf_vit), .archs = VIT_ARCHS,
    TF_DEIT_TASK_ROW(vit, tf_vit),
    .classify_images = vit_classify, .image_shape = vit_shape, .label = vit_label, .image_logits = vit_logits,
    .attention_grid = vit_grid,
};
