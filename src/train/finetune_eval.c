/* Fine-tuned BERTs at work: predictions for encoded examples (the likeliest
 * label and its probability, a tag per word from its first piece, the best
 * answer span within the context), their scores against gold labels
 * (accuracy, per-label precision / recall / F1, macro-F1, the confusion
 * matrix; exact match and the pieces' F1 for spans) and metrics.json. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tformer/bert.h"
#include "train_internal.h"

/* ---------------------------------------------------------------- predictions */

static void predict_label(const float *x, int64_t L, tf_finetune_prediction *p) {
    int64_t best = 0;
    for (int64_t i = 1; i < L; i++) best = x[i] > x[best] ? i : best;
    double z = 0;
    for (int64_t i = 0; i < L; i++) z += exp((double)x[i] - (double)x[best]);
    p->label = (int)best, p->prob = (float)(1.0 / z);
}

static int predict_tags(const tf_finetune_encoded *e, const float *x, int64_t L, tf_finetune_prediction *p) {
    p->n_tags = e->n_words;
    if (!(p->tags = malloc((size_t)(e->n_words ? e->n_words : 1) * sizeof *p->tags)))
        return tf_set_error("finetune: out of memory");
    for (int w = 0; w < e->n_words; w++) p->tags[w] = -1;
    for (int t = 0; t < e->len; t++) {
        if (e->word[t] < 0) continue;
        tf_finetune_prediction one;
        predict_label(x + (int64_t)t * L, L, &one);
        p->tags[e->word[t]] = one.label;
    }
    return 0;
}

/* The best start <= end < start + max_answer, both context pieces. */
static void predict_span(const tf_finetune_encoded *e, const float *s, const float *en, int max_answer,
                         tf_finetune_prediction *p) {
    float best = -INFINITY;
    p->start = p->end = 0, p->answer_off = p->answer_len = 0;
    for (int i = 0; i < e->len; i++) {
        if (e->word[i] < 0) continue;
        for (int j = i; j < e->len && j < i + max_answer && e->word[j] >= 0; j++)
            if (s[i] + en[j] > best) best = s[i] + en[j], p->start = i, p->end = j;
    }
    if (best == -INFINITY) return;
    p->answer_off = e->word_off[e->word[p->start]];
    p->answer_len = e->word_end[e->word[p->end]] - p->answer_off;
}

static int predict_rows(const tf_bert *m, const tf_finetune_data *d, tf_ctx *ctx, int first, int rows, int max_answer,
                        tf_finetune_prediction *out) {
    tf_bert_outputs o;
    if (tf_bert_finetune_forward(ctx, m, d, first, rows, &o)) return -1;
    int64_t T = o.last_hidden_state->shape[1];
    for (int r = 0; r < rows; r++) {
        const tf_finetune_encoded *e = &d->ex[first + r];
        tf_finetune_prediction *p = &out[first + r];
        if (d->kind == TF_FINETUNE_SPAN)
            predict_span(e, tf_f32(o.start_logits) + r * T, tf_f32(o.end_logits) + r * T, max_answer, p);
        else if (d->kind == TF_FINETUNE_TAG) {
            int64_t L = o.logits->shape[2];
            if (predict_tags(e, tf_f32(o.logits) + r * T * L, L, p)) return -1;
        } else predict_label(tf_f32(o.logits) + r * o.logits->shape[1], o.logits->shape[1], p);
    }
    return 0;
}

int tf_finetune_predict(const tf_bert *m, const tf_finetune_data *d, int batch, int max_answer,
                        tf_finetune_prediction *out) {
    memset(out, 0, (size_t)d->n * sizeof *out);
    static const tf_bert_head want[] = {TF_BERT_SEQ_CLS, TF_BERT_SEQ_CLS, TF_BERT_TOKEN_CLS, TF_BERT_QA};
    if (m->cfg.head != want[d->kind])
        return tf_set_error("finetune: task %s needs a %s, the model is a %s", tf_finetune_kind_name(d->kind),
                            tf_bert_head_name(want[d->kind]), tf_bert_head_name(m->cfg.head));
    tf_ctx *ctx = tf_ctx_new(0);
    if (!ctx) return -1;
    tf_ctx_set_grad(ctx, 0);
    int rc = 0;
    if (batch < 1) batch = 16;
    for (int first = 0; !rc && first < d->n; first += batch) {
        tf_ctx_reset(ctx);
        rc = predict_rows(m, d, ctx, first, d->n - first < batch ? d->n - first : batch, max_answer, out);
    }
    tf_ctx_free(ctx);
    if (rc) tf_finetune_predictions_free(out, d->n);
    return rc ? -1 : 0;
}

void tf_finetune_predictions_free(tf_finetune_prediction *p, int n) {
    for (int i = 0; p && i < n; i++) free(p[i].tags), p[i].tags = NULL;
}

/* ---------------------------------------------------------------- scores */

/* Precision, recall and F1 per label from the confusion matrix; macro-F1 over the labels that occur. */
static void per_label(tf_finetune_metrics *m) {
    int L = m->n_labels, used = 0;
    int64_t right = 0, all = 0;
    double sum = 0;
    for (int i = 0; i < L; i++) {
        int64_t tp = m->confusion[(size_t)i * L + i], gold = 0, pred = 0;
        for (int j = 0; j < L; j++) gold += m->confusion[(size_t)i * L + j], pred += m->confusion[(size_t)j * L + i];
        m->support[i] = gold, right += tp, all += gold;
        m->precision[i] = pred ? (double)tp / (double)pred : 0;
        m->recall[i] = gold ? (double)tp / (double)gold : 0;
        double s = m->precision[i] + m->recall[i];
        m->f1[i] = s > 0 ? 2 * m->precision[i] * m->recall[i] / s : 0;
        if (gold || pred) sum += m->f1[i], used++;
    }
    m->accuracy = all ? (double)right / (double)all : 0;
    m->macro_f1 = used ? sum / used : 0;
    m->n = all;
}

static int count_confusion(const tf_finetune_data *g, const tf_finetune_prediction *p, tf_finetune_metrics *m) {
    int L = m->n_labels;
    for (int i = 0; i < g->n; i++) {
        const tf_finetune_encoded *e = &g->ex[i];
        for (int t = 0; g->kind == TF_FINETUNE_TAG && t < e->len; t++) {
            int w = e->word[t], y = e->tok_labels[t];
            if (w < 0 || y < 0) continue;
            int q = w < p[i].n_tags ? p[i].tags[w] : -1;
            if (y >= L || q < 0 || q >= L) return tf_set_error("finetune: example %d: tag out of range", i);
            m->confusion[(size_t)y * L + q]++;
        }
        if (g->kind == TF_FINETUNE_TAG) continue;
        if (e->label < 0 || e->label >= L || p[i].label < 0 || p[i].label >= L)
            return tf_set_error("finetune: example %d: label out of range", i);
        m->confusion[(size_t)e->label * L + p[i].label]++;
    }
    return 0;
}

static void score_spans(const tf_finetune_data *g, const tf_finetune_prediction *p, tf_finetune_metrics *m) {
    double em = 0, f1 = 0;
    for (int i = 0; i < g->n; i++) {
        int gs = g->ex[i].start, ge = g->ex[i].end, ps = p[i].start, pe = p[i].end;
        em += gs == ps && ge == pe;
        int lo = gs > ps ? gs : ps, hi = ge < pe ? ge : pe;
        double overlap = hi >= lo ? hi - lo + 1 : 0;
        if (!gs && !ge) f1 += !ps && !pe; /* the answer was cut away: only [CLS] is right */
        else if (overlap > 0) {
            double pr = overlap / (pe - ps + 1), rc = overlap / (ge - gs + 1);
            f1 += 2 * pr * rc / (pr + rc);
        }
    }
    m->n = g->n, m->lost = g->n_answers_lost;
    m->exact_match = g->n ? em / g->n : 0, m->span_f1 = g->n ? f1 / g->n : 0;
    m->accuracy = m->exact_match;
}

int tf_finetune_score(const tf_finetune_data *gold, const tf_finetune_prediction *p, int n_labels,
                      tf_finetune_metrics *out) {
    memset(out, 0, sizeof *out);
    out->kind = gold->kind;
    if (!gold->labelled) return tf_set_error("finetune: scoring needs a labelled set");
    if (gold->kind == TF_FINETUNE_SPAN) return score_spans(gold, p, out), 0;
    if (n_labels < 1 || n_labels > 100000) return tf_set_error("finetune: %d labels", n_labels);
    size_t L = (size_t)n_labels;
    out->n_labels = n_labels, out->lost = gold->n_words_lost;
    out->confusion = calloc(L * L, sizeof *out->confusion), out->support = calloc(L, sizeof *out->support);
    out->precision = calloc(L, sizeof(double)), out->recall = calloc(L, sizeof(double)), out->f1 = calloc(L, sizeof(double));
    if (!out->confusion || !out->support || !out->precision || !out->recall || !out->f1)
        return tf_finetune_metrics_free(out), tf_set_error("finetune: out of memory");
    if (count_confusion(gold, p, out)) return tf_finetune_metrics_free(out), -1;
    per_label(out);
    return 0;
}

void tf_finetune_metrics_free(tf_finetune_metrics *m) {
    free(m->confusion), free(m->support), free(m->precision), free(m->recall), free(m->f1);
    m->confusion = NULL, m->support = NULL, m->precision = m->recall = m->f1 = NULL;
}

/* ---------------------------------------------------------------- metrics.json */

static cJSON *per_label_json(const tf_finetune_metrics *m, const char *const *labels) {
    cJSON *o = cJSON_CreateObject(), *cm = cJSON_CreateArray();
    for (int i = 0; o && i < m->n_labels; i++) {
        cJSON *l = cJSON_AddObjectToObject(o, labels[i]), *row = cJSON_CreateArray();
        if (!l || !row) return cJSON_Delete(o), cJSON_Delete(row), cJSON_Delete(cm), NULL;
        cJSON_AddNumberToObject(l, "precision", m->precision[i]), cJSON_AddNumberToObject(l, "recall", m->recall[i]);
        cJSON_AddNumberToObject(l, "f1", m->f1[i]), cJSON_AddNumberToObject(l, "support", (double)m->support[i]);
        for (int j = 0; j < m->n_labels; j++)
            cJSON_AddItemToArray(row, cJSON_CreateNumber((double)m->confusion[(size_t)i * m->n_labels + j]));
        cJSON_AddItemToArray(cm, row);
    }
    cJSON *root = cJSON_CreateObject();
    if (!root || !o || !cm) return cJSON_Delete(root), cJSON_Delete(o), cJSON_Delete(cm), NULL;
    cJSON_AddItemToObject(root, "per_label", o);
    cJSON_AddItemToObject(root, "confusion_matrix", cm); /* rows: gold labels, columns: predicted */
    return root;
}

int tf_finetune_metrics_save(const tf_finetune_metrics *m, const char *const *labels, const char *path) {
    cJSON *root = m->kind == TF_FINETUNE_SPAN ? cJSON_CreateObject() : per_label_json(m, labels);
    if (!root) return tf_set_error("%s: out of memory", path);
    cJSON_AddStringToObject(root, "task", tf_finetune_kind_name(m->kind));
    cJSON_AddNumberToObject(root, m->kind == TF_FINETUNE_TAG ? "words" : "examples", (double)m->n);
    if (m->kind == TF_FINETUNE_SPAN) {
        cJSON_AddNumberToObject(root, "exact_match", m->exact_match);
        cJSON_AddNumberToObject(root, "f1", m->span_f1);
        cJSON_AddNumberToObject(root, "answers_cut_away", (double)m->lost);
    } else {
        cJSON_AddNumberToObject(root, m->kind == TF_FINETUNE_TAG ? "token_accuracy" : "accuracy", m->accuracy);
        cJSON_AddNumberToObject(root, "macro_f1", m->macro_f1);
        if (m->kind == TF_FINETUNE_TAG) cJSON_AddNumberToObject(root, "words_cut_away", (double)m->lost);
        cJSON *labs = cJSON_CreateArray();
        for (int i = 0; labs && i < m->n_labels; i++) cJSON_AddItemToArray(labs, cJSON_CreateString(labels[i]));
        cJSON_AddItemToObject(root, "labels", labs);
    }
    int rc = tf_json_write(path, root);
    cJSON_Delete(root);
    return rc;
}
