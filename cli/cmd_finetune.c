/* tformer finetune: a pre-trained BERT folder fine-tuned on a labelled
 * training file (classify, pairs, tag or span) by the shared trainer, then
 * evaluated on the whole validation file: the metrics printed and written
 * to metrics.json, the confusion matrix drawn into confusion.png. Its flags
 * are the trainer's and the task's field tables. */
#include <stdlib.h>
#include <string.h>

#include "cli.h"

enum { MODEL, TRAIN, VALID, OUT, CONFIG, RESUME, ALLOW_CHANGES, THREADS, LOG_EVERY, OVERWRITE };
const cli_flag cmd_finetune_flags[] = {
    [MODEL] = {"model", CLI_STRING, "DIR", NULL, "a pre-trained BERT folder (config.json, model.safetensors, and its tokenizer: tokenizer.json or vocab.txt)"},
    [TRAIN] = {"train", CLI_STRING, "FILE", NULL, "labelled training examples (the label set is theirs)"},
    [VALID] = {"valid", CLI_STRING, "FILE", NULL, "labelled validation examples, all scored at the end"},
    [OUT] = {"out", CLI_STRING, "DIR", NULL,
             "the run folder: the fine-tuned model, tokenizer, checkpoint, losses.csv, metrics.json, confusion.png"},
    [CONFIG] = {"config", CLI_STRING, "FILE.json", "", "settings as one JSON object (keys: the names below with _)"},
    [RESUME] = CLI_RESUME_ROW,
    [ALLOW_CHANGES] = CLI_ALLOW_CHANGES_ROW,
    [THREADS] = CLI_THREADS_ROW,
    [LOG_EVERY] = {"log-every", CLI_INT, "N", "10", "a progress line every N steps"},
    [OVERWRITE] = CLI_OVERWRITE_ROW,
    CLI_END,
};

static tf_train_config g_train;
static tf_finetune_config g_ft;
static tf_fields g_tables[2];

/* The trainer's defaults for fine-tuning (Hugging Face's Trainer: lr 5e-5, no floor). */
int cmd_finetune_tables(const tf_fields **t) {
    g_train = tf_train_config_default(), g_ft = tf_finetune_config_default();
    g_train.steps = 1000, g_train.batch = 16, g_train.lr = 5e-5f, g_train.min_lr = 0, g_train.warmup = 100;
    g_train.weight_decay = 0.01f, g_train.beta2 = 0.999f, g_train.eval_every = 200, g_train.eval_batches = 20;
    g_tables[0] = (tf_fields){&tf_train_config_table, &g_train};
    g_tables[1] = (tf_fields){&tf_finetune_config_table, &g_ft};
    *t = g_tables;
    return 2;
}

static void print_counts(const tf_task *t) {
    const tf_finetune_data *tr = tf_finetune_task_data(t, TF_SUBSET_TRAIN), *va = tf_finetune_task_data(t, TF_SUBSET_VAL);
    printf("train: %d examples, %d truncated | valid: %d examples, %d truncated", tr->n, tr->n_truncated, va->n,
           va->n_truncated);
    if (tr->kind == TF_FINETUNE_SPAN)
        printf(" | answers cut away: train %d, valid %d", tr->n_answers_lost, va->n_answers_lost);
    if (tr->kind == TF_FINETUNE_TAG) printf(" | words cut away: train %d, valid %d", tr->n_words_lost, va->n_words_lost);
    printf(" (max_len %d)\n", g_ft.max_len ? g_ft.max_len : tf_bert_max_tokens(&tf_finetune_task_model(t)->cfg));
}

static void print_metrics(const tf_finetune_metrics *m, const char *const *labels) {
    if (m->kind == TF_FINETUNE_SPAN) {
        printf("valid: exact match %.4f | F1 %.4f (%lld examples, %lld answers cut away)\n", m->exact_match, m->span_f1,
               (long long)m->n, (long long)m->lost);
        return;
    }
    if (m->kind == TF_FINETUNE_TAG) {
        printf("%-20s %9s %9s %9s %9s\n", "tag", "precision", "recall", "f1", "support");
        for (int i = 0; i < m->n_labels; i++)
            printf("%-20s %9.4f %9.4f %9.4f %9lld\n", labels[i], m->precision[i], m->recall[i], m->f1[i],
                   (long long)m->support[i]);
        printf("valid: token accuracy %.4f | macro-F1 %.4f (%lld words, %lld cut away)\n", m->accuracy, m->macro_f1,
               (long long)m->n, (long long)m->lost);
        return;
    }
    printf("valid: accuracy %.4f | macro-F1 %.4f (%lld examples)\n", m->accuracy, m->macro_f1, (long long)m->n);
}

/* The whole validation set: metrics printed, metrics.json, confusion.png. */
static int evaluate(const cli_args *a, tf_task *t, const char *out) {
    const tf_bert *m = tf_finetune_task_model(t);
    const tf_finetune_data *va = tf_finetune_task_data(t, TF_SUBSET_VAL);
    /* Every label's name (any number of labels): a generated one ("LABEL_7") lives in buf. */
    enum { NAME = 32 };
    int L = m->cfg.n_labels > 0 ? m->cfg.n_labels : 0;
    tf_finetune_prediction *p = calloc(va->n > 0 ? (size_t)va->n : 1, sizeof *p);
    char **names = calloc((size_t)L + 1, sizeof *names), *buf = calloc((size_t)L + 1, NAME), path[4096], title[256];
    if (!p || !names || !buf) return free(p), free(names), free(buf), tf_set_error("finetune: out of memory");
    for (int i = 0; i < L; i++) names[i] = (char *)tf_bert_label(m, i, buf + (size_t)i * NAME, NAME);
    tf_finetune_metrics s;
    if (tf_finetune_predict(m, va, g_train.batch, g_ft.max_answer, p)) return free(p), free(names), free(buf), -1;
    int rc = tf_finetune_score(va, p, L, &s);
    tf_finetune_predictions_free(p, va->n), free(p);
    if (rc) return free(names), free(buf), -1;
    print_metrics(&s, (const char *const *)names);
    snprintf(path, sizeof path, "%s/metrics.json", out);
    rc = tf_finetune_metrics_save(&s, (const char *const *)names, path);
    if (!rc && s.kind != TF_FINETUNE_SPAN) {
        snprintf(title, sizeof title, "%s: %s %.3f, macro-F1 %.3f (%lld %s)", tf_finetune_kind_name(s.kind),
                 s.kind == TF_FINETUNE_TAG ? "token accuracy" : "accuracy", s.accuracy, s.macro_f1, (long long)s.n,
                 s.kind == TF_FINETUNE_TAG ? "words" : "examples");
        snprintf(path, sizeof path, "%s/confusion.png", out);
        rc = tf_plot_confusion(path, s.confusion, (const char *const *)names, L, title);
    }
    if (!rc) printf("wrote %s/metrics.json%s\n", out, s.kind != TF_FINETUNE_SPAN ? " and confusion.png" : "");
    tf_finetune_metrics_free(&s);
    free(names), free(buf);
    (void)a;
    return rc;
}

typedef struct {
    const cli_args *a;
    int resume;
} task_args;

static tf_task *make_task(void *arg) {
    const task_args *t = arg;
    return tf_finetune_task_new(&g_ft, t->a->v[MODEL].text, t->a->v[TRAIN].text, t->a->v[VALID].text,
                                t->a->v[OUT].text, t->resume, g_train.seed);
}

/* Every rank of a run of several processes must be given the same flags and files (docs/distributed.md). */
static int same_args(const cli_args *a) {
    const char *resume = a->v[RESUME].given ? "on" : "off", *allow = a->v[ALLOW_CHANGES].given ? "on" : "off";
    tf_dist_item it[] = {{"--model", a->v[MODEL].text, NULL},
                         {"--out", a->v[OUT].text, NULL},
                         {"--resume", resume, NULL},
                         {"--allow-changes", allow, NULL},
                         {"--train", a->v[TRAIN].text, a->v[TRAIN].text}, /* and its content */
                         {"--valid", a->v[VALID].text, a->v[VALID].text}};
    return tf_dist_same_fields(g_tables, 2, it, (int)(sizeof it / sizeof *it));
}

/* The start-up line, as train's: the folder's family (config.json's model_type), the task's parameters. */
static void summary(const cli_args *a, tf_task *t, int resume) {
    char type[128];
    cli_model_type(a->v[MODEL].text, type, sizeof type);
    const tf_family *f = tf_family_of_type(type);
    const char *data[] = {a->v[TRAIN].text, a->v[VALID].text};
    tf_task_args ta = {.data = data, .n_data = 2, .tokenizer = a->v[MODEL].text, .run_dir = a->v[OUT].text,
                       .resume = resume};
    cli_train_summary(a->verb, f ? f->name : type, &ta, t);
}

/* Under mpirun every rank trains; rank 0 alone prints, writes and evaluates at the end. */
int cmd_finetune(const cli_args *a) {
    if (a->v[CONFIG].text && tf_fields_load(g_tables, 2, a->v[CONFIG].text, 0)) cli_die(a->verb, tf_error());
    cli_apply(a);
    int every = a->v[LOG_EVERY].i > 0 ? (int)a->v[LOG_EVERY].i : 1;
    const char *out = a->v[OUT].text;
    tf_set_threads(cli_threads(&a->v[THREADS]));
    if (tf_dist_init()) cli_die(a->verb, tf_error());
    cli_catch_sigint();
    task_args ta = {a, cli_resume_mode(a, RESUME, ALLOW_CHANGES)};
    if (same_args(a) || tf_dist_agree(tf_train_config_check(&g_train))) cli_die(a->verb, tf_error());
    cli_run_folder(a, TF_RUN_FOLDER_TRAIN, out, ta.resume, OVERWRITE);
    tf_task *t = tf_dist_task_new(make_task, &ta, out);
    const char *files[] = {a->v[TRAIN].text, a->v[VALID].text}; /* resume checks them */
    if (!t || tf_task_set_data(t, files, files[1] ? 2 : 1)) cli_die(a->verb, tf_error());
    int first = tf_dist_rank() == 0;
    if (first) print_counts(t), summary(a, t, ta.resume);
    int n_val = tf_finetune_task_data(t, TF_SUBSET_VAL)->n, micro = g_train.accum * tf_dist_size();
    int rows = g_train.batch % micro ? g_train.batch : g_train.batch / micro; /* tf_train refuses the first */
    int cover = (n_val + rows - 1) / rows;
    if (g_train.eval_batches > cover) g_train.eval_batches = cover; /* about one pass over the validation set */
    int rc = tf_train(&g_train, t, out, ta.resume, &cli_stop, cli_train_progress, &every);
    if (rc == 0 && tf_dist_agree(first ? evaluate(a, t, out) : 0)) rc = -1;
    tf_task_free(t);
    if (rc < 0) cli_die(a->verb, tf_error());
    return cli_train_end(rc, first, out);
}
