/* Stream classification with a Continual Transformer encoder (deck 01, the
 * Continual Inference Networks): each data file is one class; their lines,
 * shuffled under the seed, are concatenated into one token stream in which
 * every token carries its line's class. The encoder trains in batch mode on
 * windows of `window` tokens (the regular network: positions from the
 * window's start in the stream, recycled mod pos_len) to name the class of
 * the window's last token; `tformer stream` then runs it step by step, one
 * label per token. The run folder is a continual model folder with its
 * tokenizer (docs/continual.md, "A real stream"). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

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

tf_continual_task_config tf_continual_task_config_default(void) {
    tf_continual_task_config c;
    memset(&c, 0, sizeof c);
    tf_fields f = {&tf_continual_task_config_table, &c};
    tf_fields_defaults(&f, 1);
    return c;
}

typedef struct {
    tf_task base;
    tf_continual_task_config cfg;
    tf_params *params;
    tf_continual enc;
    tf_tokenizer *tok;
    tf_loader *loader;
    char *dir;
} co_task;

static int co_batch(tf_task *t, tf_ctx *ctx, tf_subset subset, uint64_t key, int rows, tf_batch *b) {
    return tf_loader_next(((co_task *)t)->loader, ctx, subset, key, rows, b);
}

/* Each window (B,n) -> the class of its last token; accuracy on validation. */
static tf_tensor *co_loss(tf_task *t, tf_ctx *ctx, const tf_batch *b, tf_metrics *m) {
    co_task *c = (co_task *)t;
    tf_tensor *ids = tf_batch_get(b, "input_ids"), *labels = tf_batch_get(b, "labels");  // (B,n) each
    int64_t B = ids->shape[0], n = ids->shape[1], L = c->cfg.model.n_labels;
    tf_tensor *y = tf_tensor_new(ctx, TF_DTYPE_I32, 1, (int64_t[]){B}, 0);  // (B): the last tokens' classes
    for (int64_t i = 0; y && i < B; i++) tf_i32(y)[i] = tf_i32(labels)[i * n + n - 1];
    tf_tensor *h = tf_continual_forward(ctx, &c->enc, tf_continual_embed(ctx, &c->enc, ids), 0);  // (B,d_model)
    tf_tensor *logits = h ? tf_continual_classify(ctx, &c->enc, h) : NULL;                    // (B,L)
    for (int64_t i = 0; m && logits && i < B; i++) {
        const float *z = tf_f32(logits) + i * L;
        int64_t best = 0;
        for (int64_t k = 1; k < L; k++) best = z[k] > z[best] ? k : best;
        m->sum[0] += best == tf_i32(y)[i], m->count[0] += 1;
    }
    return logits && y ? tf_cross_entropy(ctx, logits, y, -100, 0.0f) : NULL;
}

static tf_params *co_params(tf_task *t) { return ((co_task *)t)->params; }

static int co_signature(tf_task *t, char *out, size_t n) {
    tf_fields f = {&tf_continual_config_table, &((co_task *)t)->cfg.model};
    return tf_fields_signature(&f, 1, out, n);
}

static int co_save(tf_task *t, const char *dir) {
    co_task *c = (co_task *)t;
    if (tf_continual_save(dir, &c->enc, c->params)) return -1;
    return strcmp(dir, c->dir) ? tf_task_tokenizer_install(c->dir, NULL, 0, dir) : 0; /* best/: its own copy */
}

static int co_save_meta(tf_task *t, tf_st_writer *w) { return tf_task_tokenizer_save(((co_task *)t)->dir, w); }
static int co_check_meta(tf_task *t, const tf_st_file *f, const char *ck) {
    return tf_task_tokenizer_check(((co_task *)t)->dir, f, ck);
}
static int64_t co_tokens(tf_task *t, int rows) { return (int64_t)rows * ((co_task *)t)->cfg.model.window; }

static void co_free(tf_task *t) {
    co_task *c = (co_task *)t;
    tf_continual_free(&c->enc);
    tf_params_free(c->params);
    tf_tokenizer_free(c->tok);
    tf_loader_free(c->loader);
    free(c->dir);
    free(c);
}

static const tf_task_vt COSTREAM_TASK = {
    .batch = co_batch,
    .loss = co_loss,
    .params = co_params,
    .signature = co_signature,
    .save = co_save,
    .save_meta = co_save_meta,
    .check_meta = co_check_meta,
    .tokens = co_tokens,
    .free = co_free,
};

/* ---------------------------------------------------------------- the stream */

/* Every line of every file, each file a class, in an order shuffled by seed:
 * ids and each id's class. Empty lines are skipped; errors name the file. */
static int build_stream(tf_tokenizer *tok, const char *const *data, int n_data, uint64_t seed, tf_ids *ids,
                        tf_ids *labels) {
    typedef struct { const char *p; size_t n; int cls; } line;
    line *lines = NULL;
    size_t n_lines = 0, cap = 0;
    char **texts = calloc((size_t)n_data, sizeof *texts);
    int rc = texts ? 0 : tf_set_error("train: out of memory");
    for (int f = 0; !rc && f < n_data; f++) {
        size_t len;
        if (!(texts[f] = tf_read_file(data[f], &len))) rc = -1;
        for (size_t i = 0; !rc && i < len;) {
            size_t e = i;
            while (e < len && texts[f][e] != '\n') e++;
            if (e > i && n_lines == cap && !(lines = realloc(lines, (cap = cap ? 2 * cap : 1024) * sizeof *lines)))
                rc = tf_set_error("train: out of memory");
            if (!rc && e > i) lines[n_lines++] = (line){texts[f] + i, e - i, f};
            i = e + 1;
        }
    }
    for (size_t i = n_lines; !rc && i > 1; i--) { /* Fisher-Yates under the seed */
        size_t j = (size_t)(tf_key(seed, 0x5717ea, (uint64_t)i, 0) % i);
        line tmp = lines[i - 1];
        lines[i - 1] = lines[j], lines[j] = tmp;
    }
    for (size_t i = 0; !rc && i < n_lines; i++) {
        size_t before = ids->n;
        char buf[8192];
        size_t k = lines[i].n < sizeof buf - 1 ? lines[i].n : sizeof buf - 2;
        memcpy(buf, lines[i].p, k), buf[k++] = ' '; /* a space between lines, as one running text */
        if (tf_tokenizer_encode(tok, buf, k, ids)) rc = tf_set_error("%s: %s", data[lines[i].cls], tf_error());
        for (size_t t = before; !rc && t < ids->n; t++) rc = tf_ids_push(labels, lines[i].cls);
    }
    for (int f = 0; texts && f < n_data; f++) free(texts[f]);
    free(texts), free(lines);
    return rc;
}

static int load_data(co_task *c, const char *const *data, int n_data, const char *tokenizer, int resume,
                     uint64_t seed) {
    tf_continual_config *model = &c->cfg.model;
    if (tf_task_tokenizer_prepare(tokenizer, data, n_data, c->dir, resume)) return -1;
    if (!(c->tok = tf_tokenizer_load(c->dir))) return -1;
    int vocab = tf_tokenizer_vocab_size(c->tok);
    if (model->vocab_size && model->vocab_size != vocab)
        return tf_set_error("vocab_size %d: the tokenizer has %d tokens", model->vocab_size, vocab);
    if (model->n_labels && model->n_labels != n_data)
        return tf_set_error("n_labels %d: %d data files (one class each)", model->n_labels, n_data);
    model->vocab_size = vocab, model->n_labels = n_data;
    if (tf_continual_config_check(model)) return -1;
    tf_ids ids = {0}, labels = {0};
    int rc = build_stream(c->tok, data, n_data, seed, &ids, &labels);
    if (!rc && !(c->loader = tf_stream_loader_new(ids.v, labels.v, (int64_t)ids.n, c->cfg.val_fraction, model->window,
                                                  seed)))
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
    if (mkdir(run_dir, 0755) && errno != EEXIST)
        return tf_set_error("%s: cannot create: %s", run_dir, strerror(errno)), NULL;
    co_task *c = calloc(1, sizeof *c);
    if (!c || !(c->dir = strdup(run_dir)) || !(c->params = tf_params_new()))
        return c ? co_free(&c->base) : (void)0, tf_set_error("train: out of memory"), NULL;
    c->base.vt = &COSTREAM_TASK, c->cfg = *cfg;
    c->base.config = (tf_fields){&tf_continual_task_config_table, &c->cfg};
    c->base.n_metrics = 1, c->base.metric_names[0] = "accuracy", c->base.select_metric = 1;
    tf_fields f = {&tf_continual_task_config_table, &c->cfg};
    if (tf_fields_check(&f, 1) || set_label_names(&c->cfg.model, data, n_data) ||
        load_data(c, data, n_data, tokenizer ? tokenizer : "char", resume, seed) ||
        tf_continual_register(c->params, "", &c->enc, &c->cfg.model) || tf_params_init(c->params, seed ? seed : 1)) {
        co_free(&c->base);
        return NULL;
    }
    return &c->base;
}
