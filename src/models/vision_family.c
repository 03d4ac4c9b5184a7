/* What the image classifiers' registry rows share (vision_family.h). */
#include <string.h>

#include "vision_family.h"
#include "tformer/vit.h"

int tf_vision_image_logits(const void *model, hf_classifier_fn forward, int channels, int size, int n_labels,
                           const float *pixels, float *logits) {
    tf_ctx *ctx = tf_ctx_new(0);
    if (!ctx) return tf_set_error("out of memory");
    tf_ctx_set_grad(ctx, 0);
    tf_tensor *x = tf_tensor_new(ctx, TF_DTYPE_F32, 4, (int64_t[]){1, channels, size, size}, 0);
    hf_classifier_out out;
    int rc = -1;
    if (x) memcpy(x->data, pixels, (size_t)tf_numel(x) * sizeof(float));
    if (x && !forward(ctx, model, x, NULL, 0.0f, &out)) {
        memcpy(logits, tf_f32(out.logits), (size_t)n_labels * sizeof *logits); // out.logits: (1,n_labels)
        rc = 0;
    }
    tf_ctx_free(ctx);
    return rc;
}

int64_t tf_vision_image_val(const tf_task *t, const tf_task_args *a) {
    return tf_family_one_pass(tf_vit_task_images(t, TF_SUBSET_VAL), a->rows);
}
