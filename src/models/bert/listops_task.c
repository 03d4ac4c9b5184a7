/* ListOps classification (the Long Range Arena's long-sequence task): a BERT
 * encoder under BertForSequenceClassification's head, trained from scratch
 * on expressions generated from a seed (src/data/listops.c), cross-entropy
 * over the 10 answers, validation accuracy; saved as a Hugging Face folder
 * (its vocabulary: tf_listops_token). The attention kind is the model's
 * (--attention full|local|dilated|bigbird|nystrom).
 * Self-pretraining (--listops-objective mlm; Amos, Berant & Gupta 2023, "Never
 * Train from Scratch"): BertForMaskedLM on the same expressions with a [MASK]
 * token added, validation masked-token accuracy; a classifier given its folder
 * (--listops-init) starts from its encoder. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "../../core/core_internal.h"
#include "../../data/listops_internal.h"
#include "../../task/task_internal.h"
#include "tformer/bert.h"
#include "bert_internal.h"

static const char *const OBJECTIVES[] = {"classify", "mlm", NULL};
_Static_assert(sizeof(tf_listops_objective) == sizeof(int), "enum rows store an int");

#define R(m, type, name, def, range, help) TF_FIELD_ROW(tf_listops_task_config, m, type, name, def, range, NULL, help, 0, NULL)
static const tf_field LO_ROWS[] = {
    R(min_len, TF_FIELD_INT, "listops_min_len", "500", "[0,inf)", "ListOps: expressions longer than this (tokens)"),
    R(max_len, TF_FIELD_INT, "listops_max_len", "2000", "[2,inf)",
      "ListOps: expressions shorter than this; context must be at least this ([CLS] + tokens, + [SEP])"),
    R(max_depth, TF_FIELD_INT, "listops_depth", "10", "[1,64]", "ListOps: the deepest node (operators above it)"),
    R(max_args, TF_FIELD_INT, "listops_args", "10", "[2,64]", "ListOps: arguments of an operator, 2 to this"),
    R(n_train, TF_FIELD_INT, "listops_train", "96000", "[1,inf)", "ListOps: training expressions"),
    R(n_valid, TF_FIELD_INT, "listops_valid", "2000", "[1,inf)", "ListOps: validation expressions"),
    R(listops_seed, TF_FIELD_UINT64, "listops_seed", "1", NULL, "ListOps: the seed the expressions come from"),
    TF_FIELD_ROW(tf_listops_task_config, bucket, TF_FIELD_INT, "listops_bucket", "0", "[0,inf)", NULL,
                 "ListOps: 0, every batch context long; N, batches of about one length, each as long as its longest "
                 "row rounded up to a multiple of N (length bucketing)", TF_FIELD_RESUMABLE, NULL),
    R(sep, TF_FIELD_BOOL, "listops_sep", "false", NULL,
      "ListOps: [SEP] after each expression (BERT's [CLS] x [SEP]): a token that marks where the expression ends "
      "(LRA's inputs have none)"),
    R(drop_end, TF_FIELD_BOOL, "listops_drop_end", "false", NULL,
      "ListOps: leave out the closing \"]\" tokens, as LRA's released input pipeline does (its tokenizer keeps "
      "alphanumeric tokens only: operators and digits); the lengths still count them"),
    TF_FIELD_ROW(tf_listops_task_config, objective, TF_FIELD_ENUM, "listops_objective", "classify", NULL, OBJECTIVES,
                 "ListOps: classify (the answer), or mlm (self-pretraining: the expressions' masked tokens, a folder "
                 "for --listops-init)", 0, NULL),
    R(mask_prob, TF_FIELD_FLOAT, "listops_mask_prob", "0.15", "(0,1)",
      "ListOps mlm: tokens chosen (80% [MASK], 10% a random token, 10% kept)"),
    R(init, TF_FIELD_STRING, "listops_init", "", NULL,
      "ListOps classify: a run folder of --listops-objective mlm whose encoder starts the model (the model flags "
      "must be its own)"),
    TF_FIELD_SUB(tf_listops_task_config, model, tf_bert_config_table),
};
#undef R
const tf_field_table tf_listops_task_config_table = {"ListOps", LO_ROWS, (int)(sizeof LO_ROWS / sizeof LO_ROWS[0])};

TF_FIELDS_DEFAULT_FN(tf_listops_task_config, tf_listops_task_config_default, tf_listops_task_config_table)

typedef struct {
    tf_task base;
    tf_listops_task_config cfg;
    tf_bert *m;
    tf_loader *loader;
} lo_task;

/* Masked-LM inputs in place (BERT's rule): each token of an expression ([CLS]
 * and padding never) is chosen with probability p and becomes [MASK] (80%), a
 * random expression token (10%: a digit or an operator, "]" too unless the
 * inputs leave it out) or stays (10%); labels (B,T) hold the chosen
 * tokens' ids, -100 elsewhere. The draws come from (subset, key, position):
 * a batch is masked alike each time it is drawn (validation too). */
static int mask_batch(tf_ctx *ctx, const tf_listops_task_config *c, tf_subset subset, uint64_t key, tf_batch *b) {
    const double p = c->mask_prob;
    const uint64_t kinds = (uint64_t)(c->drop_end ? TF_LISTOPS_END : TF_LISTOPS_VOCAB) - TF_LISTOPS_DIGIT0;
    tf_tensor *ids = tf_batch_get(b, "input_ids"), *am = tf_batch_get(b, "attention_mask");
    int64_t B = ids->shape[0], T = ids->shape[1];
    tf_tensor *y = tf_tensor_new(ctx, TF_DTYPE_I32, 2, (int64_t[]){B, T}, 0);  // (B,T)
    if (!y) return -1;
    int32_t *x = tf_i32(ids), *lab = tf_i32(y);  // (B,T)
    const int32_t *keep = tf_i32(am);           // (B,T)
    for (int64_t i = 0; i < B * T; i++) {
        uint64_t r = tf_key(key, (uint64_t)subset, (uint64_t)i, 17);
        double u = (double)(r >> 11) * 0x1.0p-53;
        lab[i] = -100;
        if (!keep[i] || x[i] == TF_LISTOPS_CLS || x[i] == TF_LISTOPS_SEP || u >= p) continue;
        lab[i] = x[i];
        u /= p; /* uniform in [0,1) again, given the token was chosen */
        if (u < 0.8) x[i] = TF_LISTOPS_MASK;
        else if (u < 0.9) x[i] = TF_LISTOPS_DIGIT0 + (int32_t)(tf_key(r, 1, 2, 3) % kinds);
    }
    return tf_batch_set(b, "labels", y);
}

static int lo_batch(tf_task *t, tf_ctx *ctx, tf_subset subset, uint64_t key, int rows, tf_batch *b) {
    lo_task *l = (lo_task *)t;
    if (tf_loader_next(l->loader, ctx, subset, key, rows, b)) return -1;
    return l->cfg.objective == TF_LISTOPS_MLM ? mask_batch(ctx, &l->cfg, subset, key, b) : 0;
}

/* Masked-token accuracy: logits (N,V) of the labelled positions in order. */
static void count_masked(const tf_tensor *logits, const tf_tensor *labels, tf_metrics *m) {
    int64_t V = logits->shape[1], k = 0;
    for (int64_t i = 0; i < tf_numel(labels); i++) {
        int32_t y = tf_i32(labels)[i];
        if (y == -100) continue;
        m->sum[0] += tf_task_argmax(tf_f32(logits) + k++ * V, V) == y, m->count[0] += 1;
    }
}

static tf_tensor *lo_loss(tf_task *t, tf_ctx *ctx, const tf_batch *b, tf_metrics *m) {
    int mlm = ((lo_task *)t)->cfg.objective == TF_LISTOPS_MLM;
    tf_bert_inputs in = {.input_ids = tf_batch_get(b, "input_ids"), .attention_mask = tf_batch_get(b, "attention_mask"),
                         .labels = tf_batch_get(b, "labels"), .loss_only = mlm};
    tf_bert_outputs out;
    if (tf_bert_run(ctx, ((lo_task *)t)->m, &in, &out)) return NULL;
    if (m && mlm) count_masked(out.logits, in.labels, m);
    else if (m) tf_task_count_hits(out.logits, in.labels, m);
    return out.loss;
}

static tf_params *lo_params(tf_task *t) { return ((lo_task *)t)->m->params; }

static int lo_signature(tf_task *t, char *out, size_t n) {
    return tf_task_signature_of(&tf_bert_config_table, &((lo_task *)t)->m->cfg, out, n);
}

/* The model as a Hugging Face folder, and beside it the task's settings
 * (listops.json), from which `tformer eval --listops` draws the test set. */
static int lo_save(tf_task *t, const char *dir) {
    lo_task *l = (lo_task *)t;
    char path[4096];
    if (tf_path_join(path, sizeof path, dir, TF_LISTOPS_SETTINGS)) return -1;
    return tf_bert_save(l->m, dir) || tf_fields_save(&l->base.config, 1, path);
}
static int64_t lo_tokens(tf_task *t, int rows) { return (int64_t)rows * ((lo_task *)t)->cfg.model.context; }

static void lo_free(tf_task *t) {
    lo_task *l = (lo_task *)t;
    tf_bert_free(l->m);
    tf_loader_free(l->loader);
    free(l);
}

static const tf_task_vt LO_TASK = {
    .batch = lo_batch,
    .loss = lo_loss,
    .params = lo_params,
    .signature = lo_signature,
    .save = lo_save,
    .tokens = lo_tokens,
    .free = lo_free,
};

/* The model's settings the task fixes, and the lengths the context must hold. */
static int fit_model(tf_listops_task_config *c) {
    tf_bert_config *m = &c->model;
    int mlm = c->objective == TF_LISTOPS_MLM;
    int vocab = c->sep ? TF_LISTOPS_SEP + 1 : mlm || c->init[0] ? TF_LISTOPS_MASK + 1 : TF_LISTOPS_VOCAB;
    if (mlm && c->init[0])
        return tf_set_error("listops: listops_init %s starts a classifier: not with listops_objective mlm", c->init);
    if (m->vocab_size && m->vocab_size != vocab)
        return tf_set_error("listops: vocab_size %d: this ListOps model has %d tokens (leave it 0)", m->vocab_size, vocab);
    if ((m->head != TF_BERT_PRETRAINING && m->head != TF_BERT_SEQ_CLS) || (m->n_labels != 2 && m->n_labels != 10) ||
        !m->pooler || m->problem != TF_BERT_SINGLE_LABEL)
        return tf_set_error("listops: the model is BertForSequenceClassification with 10 labels, a pooler and "
                            "cross-entropy (BertForMaskedLM for mlm): leave head, n_labels, pooler and problem unset");
    m->vocab_size = vocab, m->head = mlm ? TF_BERT_MLM : TF_BERT_SEQ_CLS, m->n_labels = 10, m->pooler = !mlm;
    if (m->context < c->max_len + c->sep)
        return tf_set_error("listops: context %d cannot hold [CLS]%s and expressions of up to %d tokens (listops_max_len "
                            "%d): set --context %d or more", m->context, c->sep ? ", [SEP]" : "", c->max_len - 1,
                            c->max_len, c->max_len + c->sep);
    int L = m->attention.landmarks;
    if (m->attention.kind == TF_ATTENTION_NYSTROM && L > 0 && m->context != L && m->context % L)
        return tf_set_error("listops: attention nystrom needs the batches' length, context %d, to be a multiple of "
                            "its %d landmarks", m->context, L);
    if (m->attention.kind == TF_ATTENTION_NYSTROM && L > 0 && c->bucket % L)
        return tf_set_error("listops: attention nystrom needs the batches' lengths, multiples of listops_bucket %d, "
                            "to be multiples of its %d landmarks", c->bucket, L);
    return tf_bert_config_check(m);
}

/* Whether the space-separated words of s include w[0..len). */
static int has_word(const char *s, const char *w, size_t len) {
    for (size_t k; *s; s += k + (s[k] == ' '))
        if ((k = strcspn(s, " ")) == len && !strncmp(s, w, len)) return 1;
    return 0;
}

/* The first "name=value" of signature a that b lacks, into out; 0 when b has every one. */
static int first_difference(const char *a, const char *b, char *out, size_t n) {
    for (size_t len; *a; a += len + (a[len] == ' '))
        if (!has_word(b, a, len = strcspn(a, " "))) {
            snprintf(out, n, "%.*s", (int)len, a);
            return 1;
        }
    return 0;
}

/* The classifier the flags describe, its encoder's weights (every tensor but
 * the pooler's and the head's) from a masked-LM ListOps folder with the same
 * architecture (the signature rows; dropout may differ). */
static tf_bert *start_from(const tf_listops_task_config *c, uint64_t seed) {
    tf_listops_task_config pre;
    if (tf_listops_settings_load(c->init, &pre)) return NULL;
    if (pre.objective != TF_LISTOPS_MLM)
        return tf_set_error("listops: listops_init %s: a run of listops_objective %s, not mlm (self-pretraining)",
                            c->init, OBJECTIVES[pre.objective]), NULL;
    if (pre.sep != c->sep)
        return tf_set_error("listops: listops_init %s was trained with listops_sep %s: give the classifier the same",
                            c->init, pre.sep ? "true" : "false"), NULL;
    if (pre.drop_end != c->drop_end)
        return tf_set_error("listops: listops_init %s was trained with listops_drop_end %s: give the classifier the "
                            "same", c->init, pre.drop_end ? "true" : "false"), NULL;
    tf_bert *from = tf_bert_load(c->init, NULL), *m = NULL;
    if (!from) return NULL;
    tf_bert_config same = from->cfg; /* the head's rows as the classifier's */
    same.head = c->model.head, same.n_labels = c->model.n_labels, same.pooler = c->model.pooler;
    char want[4096], got[4096], diff[256];
    tf_fields fw = {&tf_bert_config_table, (void *)&c->model}, fg = {&tf_bert_config_table, &same};
    int rc = tf_fields_signature(&fw, 1, want, sizeof want) || tf_fields_signature(&fg, 1, got, sizeof got);
    if (!rc && strcmp(want, got)) { /* a row it has that the flags lack, or (rows at their default are left
                                       * out of a signature: conv_kernel) one only the flags have */
        if (first_difference(got, want, diff, sizeof diff))
            rc = tf_set_error("listops: listops_init %s: its model has %s, the flags do not: give the model flags it "
                              "was trained with", c->init, diff);
        else {
            first_difference(want, got, diff, sizeof diff);
            rc = tf_set_error("listops: listops_init %s: the flags give %s, its model does not: give the model "
                              "flags it was trained with", c->init, diff);
        }
    }
    if (!rc && !(m = tf_bert_new(&c->model, seed))) rc = -1;
    for (int i = 0; !rc && i < tf_params_count(from->params); i++) {
        const char *name = tf_params_name(from->params, i);
        if (strncmp(name, "bert.", 5) || !strncmp(name, "bert.pooler.", 12)) continue;
        tf_tensor *src = tf_params_tensor(from->params, i), *dst = tf_params_get(m->params, name);
        if (!dst || tf_numel(dst) != tf_numel(src))
            rc = tf_set_error("listops: listops_init %s: tensor %s does not fit the model", c->init, name);
        else
            memcpy(tf_f32(dst), tf_f32(src), (size_t)tf_numel(src) * sizeof(float));
    }
    tf_bert_free(from);
    if (rc) tf_bert_free(m);
    return rc ? NULL : m;
}

tf_listops_opts tf_listops_task_opts(const tf_listops_task_config *c) {
    return (tf_listops_opts){c->min_len, c->max_len, c->max_depth, c->max_args, c->listops_seed, c->sep, c->drop_end};
}

tf_task *tf_listops_task_new(const tf_listops_task_config *c, const char *run_dir, uint64_t seed) {
    if (tf_task_make_dir(run_dir)) return NULL;
    lo_task *l = calloc(1, sizeof *l);
    if (!l) return tf_set_error("listops: out of memory"), NULL;
    l->base.vt = &LO_TASK, l->cfg = *c;
    l->base.config = (tf_fields){&tf_listops_task_config_table, &l->cfg};
    l->base.n_metrics = 1;
    l->base.metric_names[0] = c->objective == TF_LISTOPS_MLM ? "mlm_accuracy" : "accuracy";
    l->base.select_metric = 1;
    tf_listops_opts o = tf_listops_task_opts(c);
    seed = seed ? seed : 1;
    if (fit_model(&l->cfg) ||
        !(l->loader = tf_listops_loader_new(&o, c->n_train, c->n_valid, l->cfg.model.context, c->bucket)) ||
        !(l->m = c->init[0] ? start_from(&l->cfg, seed) : tf_bert_new(&l->cfg.model, seed))) {
        lo_free(&l->base);
        return NULL;
    }
    return &l->base;
}

int tf_listops_settings_load(const char *dir, tf_listops_task_config *c) {
    char path[4096];
    if (tf_path_join(path, sizeof path, dir, TF_LISTOPS_SETTINGS)) return -1;
    struct stat st;
    if (stat(path, &st))
        return tf_set_error("%s: %s: not a ListOps run folder (tformer train --arch listops writes it)", path,
                            strerror(errno));
    *c = tf_listops_task_config_default();
    tf_fields f = {&tf_listops_task_config_table, c};
    return tf_fields_load(&f, 1, path, 0);
}

/* Rows [first, first+B) of subset as one batch: input_ids and attention_mask (B,Tb), labels in y. */
static int score_batch(tf_ctx *ctx, const tf_listops_opts *o, int subset, int64_t first, int B, int T, int bucket,
                       tf_bert_inputs *in, int32_t *y) {
    int64_t *idx = malloc((size_t)B * sizeof *idx);
    if (!idx) return tf_set_error("listops: out of memory");
    for (int r = 0; r < B; r++) idx[r] = first + r;
    int rc = tf_listops_batch(ctx, o, subset, idx, B, T, bucket, &in->input_ids, &in->attention_mask, y);
    free(idx);
    return rc;
}

int tf_listops_score(const tf_bert *m, const tf_listops_opts *o, int subset, int64_t first, int64_t n, int batch,
                     int bucket, float *logits, int64_t *hits, int64_t *confusion) {
    const tf_bert_config *c = &m->cfg;
    if (c->head != TF_BERT_SEQ_CLS || c->n_labels != 10 ||
        (c->vocab_size != TF_LISTOPS_VOCAB && c->vocab_size != TF_LISTOPS_MASK + 1 && c->vocab_size != TF_LISTOPS_SEP + 1))
        return tf_set_error("listops: the model is not a ListOps classifier (BertForSequenceClassification, 10 labels, "
                            "vocabulary %d, %d with [MASK] or %d with [SEP])", TF_LISTOPS_VOCAB, TF_LISTOPS_MASK + 1,
                            TF_LISTOPS_SEP + 1);
    if ((c->vocab_size == TF_LISTOPS_SEP + 1) != (o->sep == 1))
        return tf_set_error("listops: the model's vocabulary (%d tokens) %s [SEP], the expressions are asked %s it",
                            c->vocab_size, o->sep ? "lacks" : "has", o->sep ? "with" : "without");
    if (c->context < o->max_len + o->sep)
        return tf_set_error("listops: the model's context %d cannot hold [CLS]%s and expressions of up to %d tokens",
                            c->context, o->sep ? ", [SEP]" : "", o->max_len - 1);
    if (first < 0 || n < 1 || batch < 1 || bucket < 0)
        return tf_set_error("listops: %lld examples from %lld in batches of %d (bucket %d)", (long long)n,
                            (long long)first, batch, bucket);
    tf_ctx *ctx = tf_ctx_new(0);
    int32_t *y = malloc((size_t)batch * sizeof *y);
    int rc = !ctx || !y ? tf_set_error("listops: out of memory") : 0;
    if (ctx) tf_ctx_set_grad(ctx, 0);
    *hits = 0;
    if (confusion) memset(confusion, 0, 100 * sizeof *confusion);
    for (int64_t done = 0; !rc && done < n; done += batch) {
        int B = n - done < batch ? (int)(n - done) : batch;
        tf_bert_inputs in = {0};
        tf_bert_outputs out;
        rc = score_batch(ctx, o, subset, first + done, B, c->context, bucket, &in, y) || tf_bert_run(ctx, m, &in, &out);
        for (int r = 0; !rc && r < B; r++) {
            const float *z = tf_f32(out.logits) + r * 10;  // (B,10)
            if (logits) memcpy(logits + (done + r) * 10, z, 10 * sizeof *z);
            int best = (int)tf_task_argmax(z, 10);
            *hits += best == y[r];
            if (confusion) confusion[y[r] * 10 + best]++;
        }
        tf_ctx_reset(ctx);
    }
    free(y);
    tf_ctx_free(ctx);
    return rc ? -1 : 0;
}

/* The BERT row's test: a ListOps run folder's test expressions (its listops.json), scored as the run's own
 * validation scores them (tf_listops_score on subset 2). */
int tf_bert_listops_test(const tf_bert *m, const char *dir, int64_t n, int batch, tf_test_result *r) {
    tf_listops_task_config c;
    if (tf_listops_settings_load(dir, &c)) return -1;
    tf_listops_opts o = tf_listops_task_opts(&c);
    if (!(r->confusion = calloc(100, sizeof *r->confusion))) return tf_set_error("listops: out of memory");
    if (tf_listops_score(m, &o, 2, 0, n, batch, c.bucket, NULL, &r->correct, r->confusion)) return -1;
    r->total = n, r->n_classes = 10, r->items = "test expressions";
    snprintf(r->drawn, sizeof r->drawn, "listops_seed %llu, lengths %d-%d", (unsigned long long)c.listops_seed,
             c.min_len + 1, c.max_len - 1);
    r->n_settings = 3;
    r->settings[0].key = "listops_seed", r->settings[0].value = (double)c.listops_seed;
    r->settings[1].key = "min_length", r->settings[1].value = c.min_len + 1;
    r->settings[2].key = "max_length", r->settings[2].value = c.max_len - 1;
    return 0;
}
