/* ViT inference over a set of images: batches without gradients, each its
 * own context reset, predictions in order. */
#include <math.h>
#include <string.h>

#include "../../core/internal.h"

/* The argmax and softmax probability of each row of logits (B,L); the loss
 * and hits summed where labels are not -100. */
static void score_rows(const float *logits, int64_t B, int64_t L, const int32_t *labels, int32_t *pred, float *prob,
                       double *loss_sum, int64_t *counted, int64_t *correct) {
    for (int64_t b = 0; b < B; b++) {
        const float *z = logits + b * L;
        int64_t best = 0;
        for (int64_t k = 1; k < L; k++) best = z[k] > z[best] ? k : best;
        double sum = 0;
        for (int64_t k = 0; k < L; k++) sum += exp((double)z[k] - z[best]);
        pred[b] = (int32_t)best;
        if (prob) prob[b] = (float)(1.0 / sum);
        if (labels && labels[b] != -100) {
            *loss_sum += log(sum) - ((double)z[labels[b]] - z[best]);
            *counted += 1, *correct += labels[b] == best;
        }
    }
}

int tf_vit_predict(const tf_vit *m, const float *x, int64_t n, int batch, const int32_t *labels, int32_t *pred,
                   float *prob, double *loss, int64_t *correct) {
    const tf_vit_config *c = &m->cfg;
    if (c->head != TF_VIT_IMAGE_CLS) return tf_set_error("vit: predictions need ViTForImageClassification");
    if (batch <= 0) batch = 256;
    int64_t per = (int64_t)c->channels * c->image_size * c->image_size, counted = 0, hits = 0;
    double loss_sum = 0;
    tf_ctx *ctx = tf_ctx_new(0);
    if (!ctx) return tf_set_error("vit: out of memory");
    tf_ctx_set_grad(ctx, 0);
    int rc = 0;
    for (int64_t first = 0; !rc && first < n; first += batch) {
        int64_t B = n - first < batch ? n - first : batch;
        tf_tensor *px = tf_tensor_new(ctx, TF_DTYPE_F32, 4, (int64_t[]){B, c->channels, c->image_size, c->image_size}, 0);
        tf_vit_outputs o;
        if (!px) rc = -1;
        else memcpy(px->data, x + first * per, (size_t)(B * per) * sizeof(float));  // (B,C,S,S)
        if (!rc && !(rc = tf_vit_run(ctx, m, &(tf_vit_inputs){.pixel_values = px}, &o)))
            score_rows(tf_f32(o.logits), B, c->n_labels, labels ? labels + first : NULL, pred + first,
                       prob ? prob + first : NULL, &loss_sum, &counted, &hits);
        tf_ctx_reset(ctx);
    }
    tf_ctx_free(ctx);
    if (loss) *loss = counted ? loss_sum / (double)counted : NAN;
    if (correct) *correct = hits;
    return rc;
}
