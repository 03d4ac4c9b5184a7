/* The model handle's classifiers of texts and clips (tformer/model.h), through the family's row,
 * and the k likeliest labels of a row of logits as tformer's verbs score them. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "model_impl.h"

int tf_model_n_labels(const tf_model *m) {
    if (m->caps & TF_CAP_CLASSIFY_IMAGE) {
        int channels, size, n_labels;
        tf_model_image_shape(m, &channels, &size, &n_labels);
        return n_labels;
    }
    if (!(m->caps & (TF_CAP_CLASSIFY_TEXT | TF_CAP_CLASSIFY_CLIP)) || !m->f->n_labels) return 0;
    return m->f->n_labels(m->impl);
}

/* The likeliest label after (prev, its logit v): the largest logit below v, or equal to v at a higher
 * id; -1 when none is left. */
static int next_best(const float *x, int L, int prev, float v) {
    int best = -1;
    for (int j = 0; j < L; j++) {
        int after = prev < 0 || x[j] < v || (x[j] == v && j > prev);
        if (after && (best < 0 || x[j] > x[best])) best = j;
    }
    return best;
}

int tf_model_top(const float *logits, int n_labels, int k, int32_t *ids, float *probs) {
    if (n_labels < 1 || k < 1) return 0;
    if (k > n_labels) k = n_labels;
    int best = next_best(logits, n_labels, -1, 0);
    double z = 0;
    for (int j = 0; j < n_labels; j++) z += exp((double)logits[j] - (double)logits[best]);
    int got = 0;
    for (int j = best; got < k && j >= 0; j = next_best(logits, n_labels, j, logits[j])) {
        ids[got] = j;
        probs[got++] = (float)(exp((double)logits[j] - (double)logits[best]) / z);
    }
    return got;
}

int tf_model_classify_texts(const tf_model *m, const char *const *a, const char *const *b, int n, float *logits) {
    if (tf_model_require(m, TF_CAP_CLASSIFY_TEXT)) return -1;
    if (n < 0 || (n > 0 && (!a || !logits))) return tf_set_error("classify: %d texts", n);
    return m->f->classify_texts(m->impl, m->tok, m->dir, a, b, n, logits);
}

int tf_model_classify_clips(const tf_model *m, const float *pixels, int64_t n, float *logits) {
    if (tf_model_require(m, TF_CAP_CLASSIFY_CLIP)) return -1;
    if (n < 0 || (n > 0 && (!pixels || !logits))) return tf_set_error("classify: %lld clips", (long long)n);
    return m->f->classify_clips(m->impl, pixels, n, logits);
}

void tf_model_clip_shape(const tf_model *m, int *frames, int *channels, int *size) {
    *frames = *channels = *size = 0;
    if (m->caps & TF_CAP_CLASSIFY_CLIP && m->f->clip_shape) m->f->clip_shape(m->impl, frames, channels, size);
}
