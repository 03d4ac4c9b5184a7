/* tformer train: any family of the registry (tformer/model.h) that trains,
 * picked by --arch: a GPT (next-token prediction), a BERT (masked LM +
 * next-sentence prediction), an encoder-decoder on line-aligned source and
 * target files, an image or video classifier, an ImageGPT, a Continual
 * Transformer or a ListOps classifier (`tformer train --help` lists them).
 * Its flags are the trainer's and the family's task field tables (the
 * model's included), so every setting has a flag, a JSON key for --config and
 * a line in --help; `tformer train --arch bert --help` lists BERT's rows. The
 * family's row checks its own arguments, makes its task and bounds its
 * validation pass; this file knows no family by name. */
#include <stdlib.h>
#include <string.h>

#include "cli.h"

/* --arch's value list and help, from the registry (filled before the flags are parsed). */
static char g_arch_names[256], g_arch_help[2048];

enum { ARCH, DATA, OUT, TOKENIZER, CONFIG, RESUME, ALLOW_CHANGES, THREADS, LOG_EVERY, SRC, TGT, VALID_SRC, VALID_TGT,
       DATA_DIR, OVERWRITE };
const cli_flag cmd_train_flags[] = {
    [ARCH] = {"arch", CLI_STRING, g_arch_names, "gpt", g_arch_help},
    [DATA] = {"data", CLI_LIST, "FILE...", "",
              "text files to train on (gpt, bert; continual: one a class); vit, swin, imagegpt: one digits.csv(.gz)"},
    [OUT] = {"out", CLI_STRING, "DIR", NULL, "the run folder: model, tokenizer, checkpoint, losses.csv, loss.png"},
    [TOKENIZER] = {"tokenizer", CLI_STRING, "DIR|char", "char",
                   "a tokenizer folder, or char: the data's characters (bert: a WordPiece folder or vocab.txt)"},
    [CONFIG] = {"config", CLI_STRING, "FILE.json", "",
                "settings as one JSON object (keys: the names below with _); flags override it"},
    [RESUME] = CLI_RESUME_ROW,
    [ALLOW_CHANGES] = CLI_ALLOW_CHANGES_ROW,
    [THREADS] = CLI_THREADS_ROW,
    [LOG_EVERY] = {"log-every", CLI_INT, "N", "10", "a progress line every N steps"},
    [SRC] = {"src", CLI_STRING, "FILE", "", "seq2seq: source sentences, one a line"},
    [TGT] = {"tgt", CLI_STRING, "FILE", "", "seq2seq: their translations, line-aligned"},
    [VALID_SRC] = {"valid-src", CLI_STRING, "FILE", "", "seq2seq: validation sources"},
    [VALID_TGT] = {"valid-tgt", CLI_STRING, "FILE", "", "seq2seq: validation targets"},
    [DATA_DIR] = {"data-dir", CLI_STRING, "DIR", "",
                  "vit, swin, imagegpt, vivit: a folder of MNIST-style idx files: train-images-idx3-ubyte(.gz), "
                  "train-labels-idx1-ubyte(.gz); imagegpt validates on its t10k-* files (the test set); vivit makes its "
                  "clips of the train images"},
    [OVERWRITE] = CLI_OVERWRITE_ROW,
    CLI_END,
};

static tf_train_config g_train;
static void *g_task; /* the family's task configuration (its row's task_size bytes) */
static tf_fields g_tables[2];

/* --arch's family; the default's when the value names none (check_usage refuses it). */
static const tf_family *arch_family(const char *name) {
    const tf_family *f = tf_family_find(name);
    return f && f->task_new ? f : tf_family_find("gpt");
}

/* --arch's metavar ("gpt|bert|...") and help (each family's summary) from the registry. */
static void describe_families(void) {
    size_t k = 0, h = (size_t)snprintf(g_arch_help, sizeof g_arch_help, "the model family:");
    const tf_family *const *f = tf_families();
    for (int i = 0; f[i]; i++) {
        if (!f[i]->task_new) continue;
        if (k < sizeof g_arch_names)
            k += (size_t)snprintf(g_arch_names + k, sizeof g_arch_names - k, "%s%s", k ? "|" : "", f[i]->name);
        if (h < sizeof g_arch_help)
            h += (size_t)snprintf(g_arch_help + h, sizeof g_arch_help - h, "%s %s (%s)", i ? "," : "", f[i]->name,
                                  f[i]->summary);
    }
}

int cmd_train_tables(const tf_fields **t) {
    const char *arch = cli_peek("arch");
    const tf_family *f = arch_family(arch ? arch : "gpt");
    describe_families();
    g_train = tf_train_config_default();
    free(g_task);
    if (!(g_task = calloc(1, f->task_size))) return 0;
    f->task_defaults(g_task, &g_train);
    g_tables[0] = (tf_fields){&tf_train_config_table, &g_train};
    g_tables[1] = (tf_fields){f->task_table, g_task};
    *t = g_tables;
    return 2;
}

static const char *opt(const cli_val *v) { return v->text && *v->text ? v->text : NULL; }

/* The config file, then the flags in order. */
static void configure(const cli_args *a) {
    if (a->v[CONFIG].text && tf_fields_load(g_tables, 2, a->v[CONFIG].text, 0)) cli_die(a->verb, tf_error());
    cli_apply(a);
}

/* The flags that are not field rows, and the data files' contents, as items every rank must have alike. */
static int same_args(const cli_args *a) {
    static const int FLAGS[] = {ARCH, OUT, TOKENIZER, RESUME, ALLOW_CHANGES, SRC, TGT, VALID_SRC, VALID_TGT, DATA_DIR};
    enum { N_FLAGS = sizeof FLAGS / sizeof *FLAGS };
    char name[N_FLAGS][32];
    tf_dist_item *it = calloc((size_t)(2 * N_FLAGS + a->v[DATA].n), sizeof *it);
    if (!it) return tf_dist_agree(tf_set_error("out of memory"));
    int n = 0;
    for (int i = 0; i < N_FLAGS; i++) {
        const cli_val *v = &a->v[FLAGS[i]];
        snprintf(name[i], sizeof name[i], "--%s", cmd_train_flags[FLAGS[i]].name);
        const char *value = cmd_train_flags[FLAGS[i]].kind == CLI_SWITCH ? (v->given ? "on" : "off") : opt(v);
        it[n++] = (tf_dist_item){name[i], value ? value : "(none)", NULL};
        if (FLAGS[i] >= SRC && FLAGS[i] <= VALID_TGT && value)
            it[n++] = (tf_dist_item){name[i], value, value}; /* --src ...: their contents */
    }
    for (int i = 0; i < a->v[DATA].n; i++) it[n++] = (tf_dist_item){"--data", a->v[DATA].list[i], a->v[DATA].list[i]};
    int rc = tf_dist_same_fields(g_tables, 2, it, n);
    free(it);
    return rc;
}

/* The family's arguments from the command line. */
static tf_task_args task_args(const cli_args *a, int resume) {
    int64_t split = (int64_t)g_train.accum * tf_dist_size(); /* tf_train checks the split (accum 0 included) */
    int64_t rows = split > 0 ? g_train.batch / split : 0;   /* a micro-batch's */
    return (tf_task_args){
        .data = (const char *const *)a->v[DATA].list, .n_data = a->v[DATA].n,
        .tokenizer = a->v[TOKENIZER].given ? a->v[TOKENIZER].text : NULL,
        .src = opt(&a->v[SRC]), .tgt = opt(&a->v[TGT]), .valid_src = opt(&a->v[VALID_SRC]),
        .valid_tgt = opt(&a->v[VALID_TGT]), .data_dir = opt(&a->v[DATA_DIR]), .run_dir = a->v[OUT].text,
        .resume = resume,
        .accum = g_train.accum * tf_dist_size(), /* the micro-batches of a step over every process */
        .rows = rows, .seed = g_train.seed,
    };
}

typedef struct {
    const tf_family *f;
    tf_task_args args;
} task_job;

/* The family's task (made on rank 0 first when several processes train). */
static tf_task *make_task(void *arg) {
    const task_job *j = arg;
    return j->f->task_new(g_task, &j->args);
}

/* What the command line must hold for the family's input (usage errors, before any process joins a run). */
static void check_usage(const cli_args *a, const tf_family *f, const tf_task_args *t) {
    char buf[1024], list[256];
    if (!tf_family_find(a->v[ARCH].text) || !tf_family_find(a->v[ARCH].text)->task_new)
        cli_usage_error(a, "--arch expects %s, got '%s'", tf_family_train_list(list, sizeof list, ~0u), a->v[ARCH].text);
    const char *why = f->task_check ? f->task_check(g_task, t, buf, sizeof buf) : NULL;
    if (why) cli_usage_error(a, "%s", why);
    const char *arch = f->name;
    int images = f->input == TF_TRAIN_IMAGES, vision = images || f->input == TF_TRAIN_CLIPS;
    int translation = f->input == TF_TRAIN_PARALLEL;
    if (!vision && t->data_dir)
        cli_usage_error(a, "--data-dir is an image setting (--arch %s)",
                        tf_family_train_list(list, sizeof list, 1u << TF_TRAIN_IMAGES | 1u << TF_TRAIN_CLIPS));
    if (vision && t->tokenizer) cli_usage_error(a, "--tokenizer is a text setting: --arch %s reads images", arch);
    if (images && (!t->data_dir == !t->n_data || t->n_data > 1))
        cli_usage_error(a, "--arch %s reads --data-dir DIR (idx files) or --data FILE (one digits.csv), one of them",
                        arch);
    if (f->input == TF_TRAIN_TEXT && !t->n_data) cli_usage_error(a, "missing --data");
    for (int k = SRC; !translation && k <= VALID_TGT; k++)
        if (opt(&a->v[k]))
            cli_usage_error(a, "--%s is a seq2seq setting (--arch %s)", cmd_train_flags[k].name,
                            tf_family_train_list(list, sizeof list, 1u << TF_TRAIN_PARALLEL));
    if (translation && t->n_data) cli_usage_error(a, "--arch %s reads --src and --tgt, not --data", arch);
    for (int k = SRC; translation && k <= VALID_TGT; k++)
        if (!opt(&a->v[k])) cli_usage_error(a, "--arch %s needs --%s", arch, cmd_train_flags[k].name);
}

/* Under mpirun every rank runs this; rank 0 alone prints and writes (docs/distributed.md). */
int cmd_train(const cli_args *a) {
    configure(a);
    int every = a->v[LOG_EVERY].i > 0 ? (int)a->v[LOG_EVERY].i : 1;
    const char *out = a->v[OUT].text;
    const tf_family *f = arch_family(a->v[ARCH].text);
    task_job job = {f, task_args(a, 0)};
    check_usage(a, f, &job.args);
    tf_set_threads(cli_threads(&a->v[THREADS]));
    if (tf_dist_init()) cli_die(a->verb, tf_error());
    cli_catch_sigint();
    job.args = task_args(a, cli_resume_mode(a, RESUME, ALLOW_CHANGES)); /* the processes are known now */
    if (same_args(a) || tf_dist_agree(tf_train_config_check(&g_train))) cli_die(a->verb, tf_error());
    cli_run_folder(a, TF_RUN_FOLDER_TRAIN, out, job.args.resume, OVERWRITE);
    tf_task *t = tf_dist_task_new(make_task, &job, out);
    if (!t || tf_task_set_data(t, job.args.data, job.args.n_data)) cli_die(a->verb, tf_error()); /* resume checks them */
    if (tf_dist_rank() == 0) cli_train_summary(a->verb, f->name, &job.args, t);
    if (g_train.precision == TF_PRECISION_BF16 && tf_dist_rank() == 0)
        fprintf(stderr, "precision bf16: matrix products on %s\n", tf_bf16_info());
    int64_t pass = f->val_batches ? f->val_batches(t, &job.args) : -1;
    if (pass >= 0 && g_train.eval_batches > pass) g_train.eval_batches = (int)pass; /* one pass at most */
    int rc = tf_train(&g_train, t, out, job.args.resume, &cli_stop, cli_train_progress, &every);
    tf_task_free(t);
    if (rc < 0) cli_die(a->verb, tf_error());
    return cli_train_end(rc, tf_dist_rank() == 0, out);
}
