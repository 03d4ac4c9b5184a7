/* ViT inference over a set of images: tf_predict_batches over the forward. */
#include "../vision.h"
#include "tformer/vit.h"

static int vit_logits(tf_ctx *ctx, const void *model, tf_tensor *x, tf_tensor **logits) {
    tf_vit_outputs o;
    int rc = tf_vit_run(ctx, model, &(tf_vit_inputs){.pixel_values = x}, &o);
    *logits = o.logits;
    return rc;
}

int tf_vit_predict(const tf_vit *m, const float *x, int64_t n, int batch, int hflip, const int32_t *labels, int32_t *pred,
                   float *prob, double *loss, int64_t *correct) {
    const tf_vit_config *c = &m->cfg;
    if (c->head != TF_VIT_IMAGE_CLS) return tf_set_error("vit: predictions need ViTForImageClassification");
    int64_t item[3] = {c->channels, c->image_size, c->image_size};  // (C,S,S)
    return tf_predict_batches(m, vit_logits, c->n_labels, x, n, 3, item, batch, hflip, labels, pred, prob, loss, correct);
}
