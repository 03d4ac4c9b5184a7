/* What the image and video families share (vision.h): folders, batched predictions. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <sys/stat.h>

#include "vision.h"
#include "../data/augment.h"

/* ---------------------------------------------------------------- folders */

int tf_vision_read_labels(char ***labels, int n, const cJSON *root, const char *path) {
    const cJSON *map = cJSON_GetObjectItemCaseSensitive(root, "id2label");
    if (!map) return 0;
    if (!cJSON_IsObject(map) || cJSON_GetArraySize(map) != n)
        return tf_set_error("%s: \"id2label\" must be an object of %d labels", path, n);
    return tf_labels_from_json(labels, n, map, path);
}

int tf_vision_read_pooler(const cJSON *root, const char *path, int d_model) {
    const cJSON *act = cJSON_GetObjectItemCaseSensitive(root, "pooler_act");
    if (act && !cJSON_IsNull(act) && !(cJSON_IsString(act) && !strcmp(act->valuestring, "tanh")))
        return tf_set_error("%s: \"pooler_act\" must be \"tanh\" (other pooler activations are not implemented)", path);
    const cJSON *width = cJSON_GetObjectItemCaseSensitive(root, "pooler_output_size");
    if (width && !cJSON_IsNull(width) && !(cJSON_IsNumber(width) && width->valueint == d_model))
        return tf_set_error("%s: \"pooler_output_size\" must equal hidden_size %d", path, d_model);
    return 0;
}

static int write_config(const char *path, const char *arch, const char *model_type, const tf_fields *f, cJSON *extra,
                        char *const *labels, int n_labels) {
    cJSON *r = cJSON_CreateObject();
    cJSON *archs = r ? cJSON_AddArrayToObject(r, "architectures") : NULL;
    int rc = !archs || !cJSON_AddItemToArray(archs, cJSON_CreateString(arch)) ||
             !cJSON_AddStringToObject(r, "model_type", model_type) || tf_fields_to_json(r, f, 1);
    while (!rc && extra && extra->child) {
        cJSON *item = cJSON_DetachItemViaPointer(extra, extra->child);
        rc = !cJSON_AddItemToObject(r, item->string, item);
    }
    if (!rc && n_labels > 0)
        rc = !cJSON_AddStringToObject(r, "problem_type", "single_label_classification") ||
             tf_labels_to_json(labels, n_labels, r);
    rc = rc || tf_json_write(path, r);
    cJSON_Delete(r);
    cJSON_Delete(extra);
    return rc ? -1 : 0;
}

int tf_vision_save_config(const char *dir, const char *arch, const char *model_type, const tf_fields *f, cJSON *extra,
                          char *const *labels, int n_labels) {
    if (mkdir(dir, 0755) && errno != EEXIST) {
        cJSON_Delete(extra);
        return tf_set_error("%s: cannot create: %s", dir, strerror(errno));
    }
    char path[4096];
    if (tf_path_join(path, sizeof path, dir, "config.json")) return cJSON_Delete(extra), -1; /* it owns extra */
    return write_config(path, arch, model_type, f, extra, labels, n_labels);
}

int tf_vision_save(const char *dir, const char *arch, const char *model_type, const tf_fields *f, cJSON *extra,
                   char *const *labels, int n_labels, const tf_params *ps) {
    if (tf_vision_save_config(dir, arch, model_type, f, extra, labels, n_labels)) return -1;
    char path[4096];
    if (tf_path_join(path, sizeof path, dir, "model.safetensors")) return -1;
    return tf_folder_save_weights(ps, path, NULL, NULL);
}

int tf_vision_check_labels(const tf_tensor *y, int64_t B, int n_labels, const char *who, const char *item) {
    char s[64];
    if (!y) return 0;
    if (y->dtype != TF_DTYPE_I32 || y->ndim != 1 || y->shape[0] != B)
        return tf_set_error("%s: labels %s must be I32 (%lld)", who, tf_shape_str(y, s, sizeof s), (long long)B);
    for (int64_t i = 0; i < B; i++)
        if (tf_i32(y)[i] != -100 && (tf_i32(y)[i] < 0 || tf_i32(y)[i] >= n_labels))
            return tf_set_error("%s: label %d of %s %lld is out of range [0,%d)", who, tf_i32(y)[i], item, (long long)i,
                                n_labels);
    return 0;
}

/* ---------------------------------------------------------------- predictions */

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

/* z (B,L) <- log((softmax(z) + softmax(zf)) / 2), row by row in log space: the
 * two views' probabilities averaged, as logits whose softmax they are. */
static void mean_of_views(float *z, const float *zf, int64_t B, int64_t L) {
    for (int64_t b = 0; b < B; b++) {
        float *u = z + b * L;
        const float *v = zf + b * L;
        double mu = u[0], mv = v[0], su = 0, sv = 0;
        for (int64_t k = 1; k < L; k++) mu = fmax(mu, u[k]), mv = fmax(mv, v[k]);
        for (int64_t k = 0; k < L; k++) su += exp(u[k] - mu), sv += exp(v[k] - mv);
        double lu = mu + log(su), lv = mv + log(sv);
        for (int64_t k = 0; k < L; k++) {
            double a = u[k] - lu, c = v[k] - lv, hi = fmax(a, c);
            u[k] = (float)(log(0.5) + hi + log1p(exp(-fabs(a - c))));
        }
    }
}

/* The batch's logits (B,L) into z: the model's on x (B, item...) and, with
 * hflip, averaged with its logits on x mirrored left-right (the last dim). */
static int batch_logits(tf_ctx *ctx, const void *model, tf_logits_fn logits, const float *x, int ndim,
                        const int64_t *shape, int hflip, float *z) {
    int64_t per = 1, W = shape[ndim - 1];
    for (int d = 0; d < ndim; d++) per *= shape[d];
    tf_tensor *px = tf_tensor_new(ctx, TF_DTYPE_F32, ndim, shape, 0), *out = NULL;
    if (!px) return -1;
    memcpy(px->data, x, (size_t)per * sizeof(float));
    if (logits(ctx, model, px, &out)) return -1;
    int64_t nz = tf_numel(out);
    memcpy(z, tf_f32(out), (size_t)nz * sizeof(float));
    if (!hflip) return 0;
    tf_aug_mirror(tf_f32(px), per / W, W);  // every row of pixels, reversed in place
    if (logits(ctx, model, px, &out)) return -1;
    mean_of_views(z, tf_f32(out), shape[0], nz / shape[0]);
    return 0;
}

int tf_predict_batches(const void *model, tf_logits_fn logits, int n_labels, const float *x, int64_t n, int item_ndim,
                       const int64_t *item, int batch, int hflip, const int32_t *labels, int32_t *pred, float *prob,
                       double *loss, int64_t *correct) {
    if (batch <= 0) batch = 256;
    if (batch > n) batch = n > 0 ? (int)n : 1;
    int64_t per = 1, counted = 0, hits = 0, shape[8];
    for (int d = 0; d < item_ndim; d++) per *= item[d], shape[d + 1] = item[d];
    double loss_sum = 0;
    tf_ctx *ctx = tf_ctx_new(0);
    float *z = malloc((size_t)batch * (size_t)n_labels * sizeof *z);  // (batch,L)
    if (!ctx || !z) {
        tf_ctx_free(ctx), free(z);
        return tf_set_error("predict: out of memory");
    }
    tf_ctx_set_grad(ctx, 0);
    int rc = 0;
    for (int64_t first = 0; !rc && first < n; first += batch) {
        int64_t B = n - first < batch ? n - first : batch;
        shape[0] = B;
        if (!(rc = batch_logits(ctx, model, logits, x + first * per, item_ndim + 1, shape, hflip, z)))
            score_rows(z, B, n_labels, labels ? labels + first : NULL, pred + first, prob ? prob + first : NULL,
                       &loss_sum, &counted, &hits);
        tf_ctx_reset(ctx);
    }
    tf_ctx_free(ctx), free(z);
    if (loss) *loss = counted ? loss_sum / (double)counted : NAN;
    if (correct) *correct = hits;
    return rc;
}
