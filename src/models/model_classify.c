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
    if (!(m->caps & (TF_CAP_CLASSIFY_TEXT | TF_CAP_CLASSIFY_CLIP | TF_CAP_TAG)) || !m->f->n_labels) return 0;
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

int tf_model_clip_tubelet(const tf_model *m) {
    if (!(m->caps & TF_CAP_CLASSIFY_CLIP)) return 0;
    return m->f->clip_tubelet ? m->f->clip_tubelet(m->impl) : 1;
}

/* ---------------------------------------------------------------- fine-tuned encoders */

/* The capability a fine-tuning task's inputs need. */
static unsigned task_cap(tf_finetune_kind k) {
    return k == TF_FINETUNE_TAG ? TF_CAP_TAG : k == TF_FINETUNE_SPAN ? TF_CAP_ANSWER : TF_CAP_CLASSIFY_TEXT;
}

int tf_model_predict_opts(const tf_model *m, int max_len, tf_predict_opts *o, const char **from) {
    if (!(m->caps & (TF_CAP_CLASSIFY_TEXT | TF_CAP_TAG | TF_CAP_ANSWER)) || !m->f->predict_opts)
        return tf_model_require(m, TF_CAP_CLASSIFY_TEXT);
    if (max_len < 0) return tf_set_error("predict: max_len %d", max_len);
    const char *own;
    return m->f->predict_opts(m->impl, m->dir, max_len, o, from ? from : &own);
}

int tf_model_predict(const tf_model *m, const tf_finetune_set *s, const tf_predict_opts *o, tf_finetune_prediction *p,
                     int *n_truncated) {
    int cut = 0;
    if (n_truncated) *n_truncated = 0;
    if (!s || !o || !p) return tf_set_error("predict: no inputs, options or room for the predictions");
    if (tf_model_require(m, task_cap(s->kind))) return -1;
    if (s->kind != o->task)
        return tf_set_error("predict: inputs in %s's format, options for %s", tf_finetune_kind_name(s->kind),
                            tf_finetune_kind_name(o->task));
    if (o->max_len < 8) return tf_set_error("predict: max_len %d: an input takes at least 8 ids", o->max_len);
    if (o->batch < 1 || o->max_answer < 1)
        return tf_set_error("predict: batch %d, max_answer %d: each must be at least 1", o->batch, o->max_answer);
    if (!m->f->predict) return tf_set_error("%s: a %s model predicts no fine-tuning task", m->dir, m->f->name);
    int rc = m->f->predict(m->impl, m->tok, s, o, p, &cut);
    if (!rc && n_truncated) *n_truncated = cut;
    return rc;
}

/* ---------------------------------------------------------------- a run's own test set */

int tf_model_test(const tf_model *m, int64_t n, int batch, tf_test_result *r) {
    memset(r, 0, sizeof *r);
    if (!m->f->test) return tf_set_error("%s: a %s model has no test set of its own", m->dir, m->f->name);
    if (n < 1 || batch < 1)
        return tf_set_error("test: %lld items, batch %d: each must be at least 1", (long long)n, batch);
    int rc = m->f->test(m->impl, m->dir, n, batch, r);
    if (rc) tf_test_result_free(r);
    return rc;
}

void tf_test_result_free(tf_test_result *r) {
    free(r->confusion);
    memset(r, 0, sizeof *r);
}
