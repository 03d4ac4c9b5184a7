/* tformer train: a GPT (next-token prediction) or a BERT (masked LM +
 * next-sentence prediction) on text files, an encoder-decoder on
 * line-aligned source and target files (--arch seq2seq: the Transformer;
 * --arch rnn: the RNN baseline with Bahdanau attention), or a ViT on
 * labelled images (--arch vit; --arch swin: a Swin Transformer; idx files or scikit-learn's digits), an ImageGPT on images as
 * colour tokens (--arch imagegpt: a GPT on k-means pixel tokens), a ViViT on moving-object clips made
 * from idx images (--arch vivit), or a Continual Transformer labelling each token of a stream
 * (--arch continual: a --data file per class), or a BERT encoder classifying
 * generated ListOps expressions (--arch listops, docs/long-sequences.md). Its flags are the trainer's and
 * the task's field tables (the model's included), so every setting has a
 * flag, a JSON key for --config and a line in --help; --arch picks the task
 * (`tformer train --arch bert --help` lists BERT's rows). */
#include <stdlib.h>
#include <string.h>

#include "cli.h"

enum { ARCH, DATA, OUT, TOKENIZER, CONFIG, RESUME, ALLOW_CHANGES, THREADS, LOG_EVERY, NORM, SRC, TGT, VALID_SRC, VALID_TGT,
       DATA_DIR };
const cli_flag cmd_train_flags[] = {
    [ARCH] = {"arch", CLI_STRING, "gpt|bert|seq2seq|rnn|vit|swin|imagegpt|vivit|continual|listops", "gpt",
              "the model family: gpt (next token), bert (masked LM + NSP), seq2seq (translation), rnn (RNN translation), "
              "vit (image classification), swin (image classification by a Swin Transformer), imagegpt (next pixel: a "
              "GPT on colour tokens), vivit (video classification on moving-object clips), continual (each token of a "
              "stream classified by a Continual Transformer), listops (a BERT encoder classifying generated ListOps "
              "expressions)"},
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
    [NORM] = {"norm", CLI_STRING, "pre|post", "", "an older form of --norm-first true|false"},
    [SRC] = {"src", CLI_STRING, "FILE", "", "seq2seq: source sentences, one a line"},
    [TGT] = {"tgt", CLI_STRING, "FILE", "", "seq2seq: their translations, line-aligned"},
    [VALID_SRC] = {"valid-src", CLI_STRING, "FILE", "", "seq2seq: validation sources"},
    [VALID_TGT] = {"valid-tgt", CLI_STRING, "FILE", "", "seq2seq: validation targets"},
    [DATA_DIR] = {"data-dir", CLI_STRING, "DIR", "",
                  "vit, swin, imagegpt, vivit: a folder of MNIST-style idx files: train-images-idx3-ubyte(.gz), "
                  "train-labels-idx1-ubyte(.gz); imagegpt validates on its t10k-* files (the test set); vivit makes its "
                  "clips of the train images"},
    CLI_END,
};

static tf_train_config g_train;
static tf_lm_config g_lm;
static tf_bert_pretrain_config g_bert;
static tf_seq2seq_task_config g_s2s;
static tf_rnn_seq2seq_task_config g_rnn;
static tf_vit_task_config g_vit;
static tf_swin_task_config g_swin;
static tf_imagegpt_task_config g_igpt;
static tf_vivit_task_config g_vivit;
static tf_costream_config g_co;
static tf_listops_task_config g_lo;
static tf_fields g_tables[2];

static int is_arch(const char *name) {
    const char *arch = cli_peek("arch");
    return arch && !strcmp(arch, name);
}

int cmd_train_tables(const tf_fields **t) {
    g_train = tf_train_config_default(), g_lm = tf_lm_config_default(), g_bert = tf_bert_pretrain_config_default();
    g_s2s = tf_seq2seq_task_config_default(), g_rnn = tf_rnn_seq2seq_task_config_default();
    g_vit = tf_vit_task_config_default(), g_swin = tf_swin_task_config_default(), g_igpt = tf_imagegpt_task_config_default();
    g_vivit = tf_vivit_task_config_default();
    g_vivit.model.n_labels = 40; /* the default labels: 10 classes x 4 directions */
    g_co = tf_costream_config_default(), g_lo = tf_listops_task_config_default();
    if (is_arch("vit") || is_arch("swin")) { /* image classification's own defaults (AdamW as DeiT, larger batches) */
        g_train.batch = 128, g_train.weight_decay = 0.05f, g_train.beta2 = 0.999f, g_train.min_lr = 1e-5f;
        g_train.eval_batches = 1000; /* at most one pass over the validation images (train_vit) */
    }
    if (is_arch("vivit")) g_train.batch = 32, g_train.weight_decay = 0.05f, g_train.beta2 = 0.999f, g_train.eval_batches = 1000;
    g_tables[0] = (tf_fields){&tf_train_config_table, &g_train};
    if (is_arch("imagegpt")) g_train.eval_batches = 1000; /* at most one pass over the validation images */
    g_tables[1] = is_arch("vit") ? (tf_fields){&tf_vit_task_config_table, &g_vit}
                : is_arch("swin") ? (tf_fields){&tf_swin_task_config_table, &g_swin}
                : is_arch("imagegpt") ? (tf_fields){&tf_imagegpt_task_config_table, &g_igpt}
                : is_arch("vivit") ? (tf_fields){&tf_vivit_task_config_table, &g_vivit}
                : is_arch("bert") ? (tf_fields){&tf_bert_pretrain_config_table, &g_bert}
                : is_arch("seq2seq") ? (tf_fields){&tf_seq2seq_task_config_table, &g_s2s}
                : is_arch("rnn") ? (tf_fields){&tf_rnn_seq2seq_task_config_table, &g_rnn}
                : is_arch("continual") ? (tf_fields){&tf_costream_config_table, &g_co}
                : is_arch("listops") ? (tf_fields){&tf_listops_task_config_table, &g_lo}
                                     : (tf_fields){&tf_lm_config_table, &g_lm};
    *t = g_tables;
    return 2;
}

static const char *opt(const cli_val *v) { return v->text && *v->text ? v->text : NULL; }

/* The config file, then the flags in order (--norm first, so --norm-first wins). */
static void configure(const cli_args *a) {
    if (a->v[CONFIG].text && tf_fields_load(g_tables, 2, a->v[CONFIG].text, 0)) cli_die(a->verb, tf_error());
    const char *norm = a->v[NORM].text;
    if (norm && strcmp(norm, "pre") && strcmp(norm, "post"))
        cli_usage_error(a, "--norm expects pre or post, got '%s'", norm);
    if (norm) tf_fields_set(g_tables, 2, "--norm-first", strcmp(norm, "pre") ? "false" : "true");
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

/* Validation over at most one pass of n held-out items, in micro-batches (a short last
 * batch is padded, its padding not counted). */
static void one_pass(int64_t n) {
    int64_t rows = g_train.batch / (g_train.accum * tf_dist_size()); /* a micro-batch's (tf_train checks the split) */
    int64_t passes = rows > 0 ? (n + rows - 1) / rows : 1;
    if (g_train.eval_batches > passes) g_train.eval_batches = (int)passes;
}

typedef struct {
    const cli_args *a;
    const char *arch, *out;
    int resume;
} task_args;

/* The task of --arch (made on rank 0 first when several processes train). */
static tf_task *make_task(void *arg) {
    const task_args *t = arg;
    const cli_args *a = t->a;
    const char *tok = a->v[TOKENIZER].given ? a->v[TOKENIZER].text : NULL;
    const char *const *data = (const char *const *)a->v[DATA].list;
    int accum = g_train.accum * tf_dist_size(); /* the micro-batches of a step over every process */
    if (!strcmp(t->arch, "bert"))
        return tf_bert_pretrain_task_new(&g_bert, data, a->v[DATA].n, tok, t->out, t->resume, g_train.seed);
    if (!strcmp(t->arch, "listops")) return tf_listops_task_new(&g_lo, t->out, g_train.seed);
    if (!strcmp(t->arch, "continual"))
        return tf_costream_task_new(&g_co, data, a->v[DATA].n, a->v[TOKENIZER].text, t->out, t->resume, g_train.seed);
    if (!strcmp(t->arch, "gpt"))
        return tf_lm_task_new(&g_lm, data, a->v[DATA].n, a->v[TOKENIZER].text, t->out, t->resume, g_train.seed);
    if (!strcmp(t->arch, "vit") || !strcmp(t->arch, "swin")) { /* --data-dir's train split, or one digits CSV;
                                                                   * validation: the last val_fraction */
        const char *dir = opt(&a->v[DATA_DIR]);
        int swin = !strcmp(t->arch, "swin"), n_labels = swin ? g_swin.model.n_labels : g_vit.model.n_labels;
        tf_images train;
        if (dir ? tf_images_read_dir(dir, "train", n_labels, &train) : tf_images_read_digits(data[0], &train))
            return NULL;
        return swin ? tf_swin_task_new(&g_swin, &train, NULL, t->out, g_train.seed)
                    : tf_vit_task_new(&g_vit, &train, NULL, t->out, g_train.seed);
    }
    if (!strcmp(t->arch, "vivit")) { /* the clips are made of --data-dir's train split; validation: its last part */
        tf_images images;
        if (tf_images_read_dir(opt(&a->v[DATA_DIR]), "train", 0, &images)) return NULL;
        return tf_vivit_task_new(&g_vivit, &images, t->out, g_train.seed);
    }
    if (!strcmp(t->arch, "imagegpt")) { /* --data-dir's train and t10k splits, or one digits CSV and its tail */
        const char *dir = opt(&a->v[DATA_DIR]);
        tf_images train, test;
        if (!dir) return tf_images_read_digits(data[0], &train) ? NULL
                                                                  : tf_imagegpt_task_new(&g_igpt, &train, NULL, t->out, g_train.seed);
        if (tf_images_read_dir(dir, "train", 0, &train)) return NULL;
        if (tf_images_read_dir(dir, "t10k", 0, &test)) return tf_images_free(&train), NULL;
        return tf_imagegpt_task_new(&g_igpt, &train, &test, t->out, g_train.seed);
    }
    if (!strcmp(t->arch, "rnn"))
        return tf_rnn_seq2seq_task_new(&g_rnn, opt(&a->v[SRC]), opt(&a->v[TGT]), opt(&a->v[VALID_SRC]),
                                       opt(&a->v[VALID_TGT]), tok, t->out, t->resume, accum, g_train.seed);
    return tf_seq2seq_task_new(&g_s2s, opt(&a->v[SRC]), opt(&a->v[TGT]), opt(&a->v[VALID_SRC]), opt(&a->v[VALID_TGT]),
                               tok, t->out, t->resume, accum, g_train.seed);
}

/* What the command line must hold for --arch (usage errors, before any process joins a run). */
static void check_usage(const cli_args *a, const char *arch) {
    int translation = !strcmp(arch, "seq2seq") || !strcmp(arch, "rnn"), video = !strcmp(arch, "vivit");
    int classify = !strcmp(arch, "vit") || !strcmp(arch, "swin");
    int vision = classify || !strcmp(arch, "imagegpt") || video, listops = !strcmp(arch, "listops");
    if (strcmp(arch, "gpt") && strcmp(arch, "bert") && strcmp(arch, "continual") && !translation && !vision && !listops)
        cli_usage_error(a, "--arch expects gpt, bert, seq2seq, rnn, vit, swin, imagegpt, vivit, continual or listops, "
                        "got '%s'", arch);
    if (listops && (a->v[DATA].n || a->v[TOKENIZER].given || a->v[NORM].text))
        cli_usage_error(a, "--arch listops generates its data (--listops-seed ...): no --data, --tokenizer or --norm "
                           "(the blocks' order: --norm-first true|false)");
    if (!strcmp(arch, "continual") && a->v[DATA].n < 2)
        cli_usage_error(a, "--arch continual needs a --data file per class (at least 2)");
    if (!vision && opt(&a->v[DATA_DIR])) cli_usage_error(a, "--data-dir is an image setting (--arch vit, swin, imagegpt or vivit)");
    if (video && (!opt(&a->v[DATA_DIR]) || a->v[DATA].n))
        cli_usage_error(a, "--arch vivit reads --data-dir DIR (idx files: the images its clips are made of)");
    if ((classify || video) && a->v[NORM].text)
        cli_usage_error(a, "--norm is a GPT setting (ViT, Swin and ViViT are pre-LN)");
    if (vision && a->v[TOKENIZER].given)
        cli_usage_error(a, "--tokenizer is a text setting: --arch %s reads images", arch);
    if (vision && !video && (!opt(&a->v[DATA_DIR]) == !a->v[DATA].n || a->v[DATA].n > 1))
        cli_usage_error(a, "--arch %s reads --data-dir DIR (idx files) or --data FILE (one digits.csv), one of them",
                        arch);
    if (!translation && !vision && !listops && !a->v[DATA].n) cli_usage_error(a, "missing --data");
    if (!translation)
        for (int k = SRC; k <= VALID_TGT; k++)
            if (opt(&a->v[k]))
                cli_usage_error(a, "--%s is a seq2seq setting (--arch seq2seq or rnn)", cmd_train_flags[k].name);
    if (translation && a->v[DATA].n) cli_usage_error(a, "--arch %s reads --src and --tgt, not --data", arch);
    for (int k = SRC; translation && k <= VALID_TGT; k++)
        if (!opt(&a->v[k])) cli_usage_error(a, "--arch %s needs --%s", arch, cmd_train_flags[k].name);
    if (!strcmp(arch, "bert") && a->v[NORM].text)
        cli_usage_error(a, "--norm is GPT's older flag: BERT's blocks take --norm-first true|false (default false, post-LN)");
    if (!strcmp(arch, "bert") && g_bert.model.head != TF_BERT_PRETRAINING)
        cli_usage_error(a, "--head: pre-training trains BertForPreTraining (fine-tune other heads with tformer "
                           "finetune)");
}

/* Under mpirun every rank runs this; rank 0 alone prints and writes (docs/distributed.md). */
int cmd_train(const cli_args *a) {
    configure(a);
    int every = a->v[LOG_EVERY].i > 0 ? (int)a->v[LOG_EVERY].i : 1;
    const char *out = a->v[OUT].text, *arch = a->v[ARCH].text;
    check_usage(a, arch);
    tf_set_threads(cli_threads(&a->v[THREADS]));
    if (tf_dist_init()) cli_die(a->verb, tf_error());
    cli_catch_sigint();
    task_args ta = {a, arch, out, cli_resume_mode(a, RESUME, ALLOW_CHANGES)};
    if (same_args(a) || tf_dist_agree(tf_train_config_check(&g_train))) cli_die(a->verb, tf_error());
    tf_task *t = tf_dist_task_new(make_task, &ta, out);
    if (!t) cli_die(a->verb, tf_error());
    if (g_train.precision == TF_PRECISION_BF16 && tf_dist_rank() == 0)
        fprintf(stderr, "precision bf16: matrix products on %s\n", tf_bf16_info());
    if ((!strcmp(arch, "seq2seq") || !strcmp(arch, "rnn")) && g_train.eval_batches > tf_seq2seq_task_val_batches(t))
        g_train.eval_batches = (int)tf_seq2seq_task_val_batches(t); /* one pass over the validation set at most */
    if (!strcmp(arch, "vit") || !strcmp(arch, "swin")) one_pass(tf_vit_task_images(t, TF_SUBSET_VAL));
    if (!strcmp(arch, "vivit")) one_pass(tf_vivit_task_clips(t, TF_SUBSET_VAL));
    if (!strcmp(arch, "imagegpt")) one_pass(tf_imagegpt_task_images(t, TF_SUBSET_VAL));
    int rc = tf_train(&g_train, t, out, ta.resume, &cli_stop, cli_train_progress, &every);
    tf_task_free(t);
    if (rc < 0) cli_die(a->verb, tf_error());
    return cli_train_end(rc, tf_dist_rank() == 0, out);
}
