/* Stream classification with a Continual Transformer encoder (deck 01, the
 * Continual Inference Networks): each data file is one class; their lines,
 * shuffled under the seed, are concatenated into one token stream in which
 * every token carries its line's class. The encoder trains in batch mode on
 * windows of `window` tokens (the regular network: positions from the
 * window's start in the stream, recycled mod pos_len) to name the class of
 * the window's last token; `tformer stream` then runs it step by step, one
 * label per token. The run folder is a continual model folder with its
 * tokenizer (docs/continual.md, "A real stream"). */
#include <stdlib.h>
#include <string.h>

#include "../../core/core_internal.h"
#include "../../task/task_internal.h"
#include "tformer/continual.h"

#define ROW(m, type, def, range, choices, help) \
    TF_FIELD_ROW(tf_continual_task_config, m, type, #m, def, range, choices, help, 0, NULL)
static const tf_field COSTREAM_ROWS[] = {
    ROW(val_fraction, TF_FIELD_FLOAT, "0.1", "(0,1)", NULL, "the last part of the stream is held out"),
    TF_FIELD_SUB(tf_continual_task_config, model, tf_continual_config_table),
};
#undef ROW
const tf_field_table tf_continual_task_config_table = {"stream classification", COSTREAM_ROWS,
                                                 (int)(sizeof COSTREAM_ROWS / sizeof COSTREAM_ROWS[0])};

TF_FIELDS_DEFAULT_FN(tf_continual_task_config, tf_continual_task_config_default, tf_continual_task_config_table)

typedef struct {
    tf_text_task text; /* base, tokenizer, loader, run folder, parameters; context: the window */
    tf_continual_task_config cfg;
    tf_continual enc;
} co_task;

/* Each window (B,n) -> the class of its last token; accuracy on validation. */
static tf_tensor *co_loss(tf_task *t, tf_ctx *ctx, const tf_batch *b, tf_metrics *m) {
    co_task *c = (co_task *)t;
    tf_tensor *ids = tf_batch_get(b, "input_ids"), *labels = tf_batch_get(b, "labels");  // (B,n) each
    int64_t B = ids->shape[0], n = ids->shape[1], L = c->cfg.model.n_labels;
    tf_tensor *y = tf_tensor_new(ctx, TF_DTYPE_I32, 1, (int64_t[]){B}, 0);  // (B): the last tokens' classes
    for (int64_t i = 0; y && i < B; i++) tf_i32(y)[i] = tf_i32(labels)[i * n + n - 1];
    tf_tensor *h = tf_continual_forward(ctx, &c->enc, tf_continual_embed(ctx, &c->enc, ids), 0);  // (B,d_model)
    tf_tensor *logits = h ? tf_continual_classify(ctx, &c->enc, h) : NULL;                    // (B,L)
    for (int64_t i = 0; m && logits && i < B; i++)
        m->sum[0] += tf_task_argmax(tf_f32(logits) + i * L, L) == tf_i32(y)[i], m->count[0] += 1;
    return logits && y ? tf_cross_entropy(ctx, logits, y, -100, 0.0f) : NULL;
}

static int co_save(tf_task *t, const char *dir) {
    co_task *c = (co_task *)t;
    if (tf_continual_save(dir, &c->enc, c->text.params)) return -1;
    /* best/: its own copy of the tokenizer */
    return strcmp(dir, c->text.dir) ? tf_task_tokenizer_install(c->text.dir, NULL, 0, dir) : 0;
}

static void co_free(tf_task *t) {
    co_task *c = (co_task *)t;
    tf_continual_free(&c->enc);
    tf_params_free(c->text.params);
    tf_text_task_free(t);
}

static const tf_task_vt COSTREAM_TASK = TF_TEXT_TASK_VT(co_loss, co_save, co_free);

/* ---------------------------------------------------------------- the stream */

/* Every line of every file, each file a class, in an order shuffled by seed:
 * ids and each id's class. Empty lines are skipped; errors name the file.
 * Each file is read a line at a time (tf_line_reader), never whole: a line's
 * ids (it and a space, as one running text) are made as it is read, and the
 * lines' ids are put in the shuffled order after. */
static int build_stream(tf_tokenizer *tok, const char *const *data, int n_data, uint64_t seed, tf_ids *ids,
                        tf_ids *labels) {
    typedef struct { size_t start, n; int cls; } line;
    line *lines = NULL;
    size_t n_lines = 0, cap = 0;
    tf_ids all = {0}; /* every line's ids, in file order */
    int rc = 0;
    for (int f = 0; !rc && f < n_data; f++) {
        tf_line_reader *r = tf_line_reader_open(data[f]);
        const char *p;
        size_t n;
        int got = r ? 1 : -1;
        while (r && !rc && (got = tf_line_reader_next(r, &p, &n)) > 0) {
            if (!n) continue;
            if (n_lines == cap && !(lines = realloc(lines, (cap = cap ? 2 * cap : 1024) * sizeof *lines))) {
                rc = tf_set_error("train: out of memory");
                break;
            }
            char buf[8192];
            size_t k = n < sizeof buf - 1 ? n : sizeof buf - 2, before = all.n;
            memcpy(buf, p, k), buf[k++] = ' '; /* a space between lines, as one running text */
            if (tf_tokenizer_encode(tok, buf, k, &all)) rc = tf_set_error("%s: %s", data[f], tf_error());
            lines[n_lines++] = (line){before, all.n - before, f};
        }
        if (!rc && got < 0) rc = -1;
        tf_line_reader_close(r);
    }
    for (size_t i = n_lines; !rc && i > 1; i--) { /* Fisher-Yates under the seed */
        size_t j = (size_t)(tf_key(seed, 0x5717ea, (uint64_t)i, 0) % i);
        line tmp = lines[i - 1];
        lines[i - 1] = lines[j], lines[j] = tmp;
    }
    for (size_t i = 0; !rc && i < n_lines; i++)
        for (size_t t = lines[i].start; !rc && t < lines[i].start + lines[i].n; t++)
            rc = tf_ids_push(ids, all.v[t]) || tf_ids_push(labels, lines[i].cls) ? -1 : 0;
    tf_ids_free(&all), free(lines);
    return rc;
}

static int load_data(co_task *c, const char *const *data, int n_data, const char *tokenizer, int resume,
                     uint64_t seed) {
    tf_continual_config *model = &c->cfg.model;
    if (tf_text_task_tokenizer(&c->text, tokenizer, data, n_data, resume, &model->vocab_size)) return -1;
    if (model->n_labels && model->n_labels != n_data)
        return tf_set_error("n_labels %d: %d data files (one class each)", model->n_labels, n_data);
    model->n_labels = n_data;
    if (tf_continual_config_check(model)) return -1;
    tf_ids ids = {0}, labels = {0};
    int rc = build_stream(c->text.tok, data, n_data, seed, &ids, &labels);
    if (!rc && !(c->text.loader = tf_stream_loader_new(ids.v, labels.v, (int64_t)ids.n, c->cfg.val_fraction,
                                                       model->window, seed)))
        rc = -1;
    tf_ids_free(&ids), tf_ids_free(&labels);
    return rc;
}

/* label_names: empty (the files' base names) or exactly one per file. */
static int set_label_names(tf_continual_config *c, const char *const *data, int n_data) {
    if (c->label_names[0]) {
        int k = 1;
        for (const char *p = c->label_names; *p; p++) k += *p == ',';
        return k == n_data ? 0 : tf_set_error("label_names: %d names for %d data files (one class each)", k, n_data);
    }
    size_t used = 0;
    for (int i = 0; i < n_data; i++) {
        const char *base = strrchr(data[i], '/') ? strrchr(data[i], '/') + 1 : data[i];
        int w = snprintf(c->label_names + used, sizeof c->label_names - used, "%s%s", i ? "," : "", base);
        if (w < 0 || (size_t)w >= sizeof c->label_names - used)
            return tf_set_error("label_names: the files' names are too long");
        used += (size_t)w;
    }
    return 0;
}

tf_task *tf_continual_task_new(const tf_continual_task_config *cfg, const char *const *data, int n_data,
                              const char *tokenizer, const char *run_dir, int resume, uint64_t seed) {
    if (n_data < 2) return tf_set_error("train --arch continual: give a --data file per class (at least 2)"), NULL;
    co_task *c = tf_text_task_alloc(sizeof *c, &COSTREAM_TASK, n_data, run_dir);
    if (!c) return NULL;
    if (!(c->text.params = tf_params_new())) return co_free(&c->text.base), tf_set_error("train: out of memory"), NULL;
    c->cfg = *cfg;
    tf_task *base = &c->text.base;
    base->config = (tf_fields){&tf_continual_task_config_table, &c->cfg};
    tf_task_use_accuracy(base);
    tf_text_task_set_model(&c->text, c->text.params, &tf_continual_config_table, &c->cfg.model, c->cfg.model.window);
    if (tf_fields_check(&base->config, 1) || set_label_names(&c->cfg.model, data, n_data) ||
        load_data(c, data, n_data, tokenizer ? tokenizer : "char", resume, seed) ||
        tf_continual_register(c->text.params, "", &c->enc, &c->cfg.model) ||
        tf_params_init(c->text.params, seed ? seed : 1)) {
        co_free(base);
        return NULL;
    }
    return base;
}
