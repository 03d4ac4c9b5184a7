/* tformer train | generate | eval: the GPT commands. */
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static volatile int g_stop;
static void on_sigint(int sig) {
    (void)sig;
    g_stop = 1;
}

static void fmt_duration(double s, char *out, size_t n) {
    if (!isfinite(s) || s < 0) s = 0;
    long t = (long)(s + 0.5);
    if (t >= 3600) snprintf(out, n, "%ldh%02ldm", t / 3600, t / 60 % 60);
    else snprintf(out, n, "%ldm%02lds", t / 60, t % 60);
}

static void progress(void *user, const tf_train_report *r) {
    int every = *(int *)user;
    int val = !isnan(r->val_loss);
    if (!val && r->step % every && r->step != r->steps) return;
    char eta[32];
    fmt_duration(r->eta_s, eta, sizeof eta);
    printf("step %lld/%lld | loss %.4f", (long long)r->step, (long long)r->steps, r->loss);
    if (val) printf(" | val %.4f", r->val_loss);
    printf(" | lr %.2e | %.1fk tok/s | ETA %s\n", r->lr, r->tokens_per_s / 1000.0, eta);
    fflush(stdout);
}

/* Flags that override the config: name, field kind, offset. */
typedef struct {
    const char *flag;
    char kind; /* i int, l int64, f float */
    size_t off;
} override;

#define O(f, k, m) {f, k, offsetof(tf_train_config, m)}
static const override OVERRIDES[] = {
    O("--steps", 'l', steps), O("--batch", 'i', batch), O("--accum", 'i', accum), O("--context", 'i', model.context),
    O("--layers", 'i', model.n_layer), O("--heads", 'i', model.n_head), O("--width", 'i', model.d_model),
    O("--mlp-width", 'i', model.d_ff), O("--dropout", 'f', model.dropout), O("--lr", 'f', lr),
    O("--min-lr", 'f', min_lr), O("--warmup", 'l', warmup), O("--weight-decay", 'f', weight_decay),
    O("--grad-clip", 'f', grad_clip), O("--eval-every", 'l', eval_every), O("--eval-batches", 'i', eval_batches),
    O("--checkpoint-every", 'l', checkpoint_every), O("--seed", 'l', seed), O("--val-fraction", 'f', val_fraction),
};
#undef O

static int apply_override(tf_train_config *c, const char *flag, const char *value) {
    for (size_t i = 0; i < sizeof OVERRIDES / sizeof OVERRIDES[0]; i++) {
        if (strcmp(OVERRIDES[i].flag, flag)) continue;
        char *end;
        double v = strtod(value, &end);
        if (end == value || *end || !isfinite(v) || (OVERRIDES[i].kind != 'f' && (v < 0 || floor(v) != v))) {
            fprintf(stderr, "tformer train: %s expects a %s, got '%s'\n", flag,
                    OVERRIDES[i].kind == 'f' ? "number" : "non-negative integer", value);
            exit(2);
        }
        char *p = (char *)c + OVERRIDES[i].off;
        if (OVERRIDES[i].kind == 'f') *(float *)p = (float)v;
        else if (OVERRIDES[i].kind == 'i') *(int *)p = (int)v;
        else *(int64_t *)p = (int64_t)v;
        return 1;
    }
    return 0;
}

int cmd_train(int argc, char **argv) {
    tf_train_config cfg = tf_train_config_default();
    const char *tokenizer = NULL, *out = NULL, *config = NULL, *data[256];
    int n_data = 0, resume = 0, threads = cli_threads_default(), every = 10;
    for (int i = 0; i < argc; i++) /* the config first, so that flags override it */
        if (!strcmp(argv[i], "--config") && i + 1 < argc) config = argv[i + 1];
    if (config && tf_train_config_load(&cfg, config)) cli_die("tformer train", tf_error());
    for (int i = 0; i < argc; i++) {
        const char *f = argv[i];
        if (!strcmp(f, "--resume")) { resume = 1; continue; }
        if (i + 1 >= argc) cli_usage_die("tformer train", f);
        const char *v = argv[++i];
        if (!strcmp(f, "--data")) {
            for (data[n_data++] = v; i + 1 < argc && strncmp(argv[i + 1], "--", 2) && n_data < 256;) data[n_data++] = argv[++i];
        } else if (!strcmp(f, "--tokenizer")) tokenizer = v;
        else if (!strcmp(f, "--out")) out = v;
        else if (!strcmp(f, "--config")) continue;
        else if (!strcmp(f, "--threads")) threads = atoi(v);
        else if (!strcmp(f, "--log-every")) every = atoi(v) > 0 ? atoi(v) : 1;
        else if (!strcmp(f, "--pos")) cfg.model.pos = strcmp(v, "sinusoidal") ? TF_POS_LEARNED : TF_POS_SINUSOIDAL;
        else if (!strcmp(f, "--norm")) cfg.model.norm_first = strcmp(v, "post") != 0;
        else if (!apply_override(&cfg, f, v)) cli_usage_die("tformer train", f);
    }
    if (!n_data || !out) {
        fprintf(stderr, "usage: tformer train --data FILE... --out RUN_DIR [--tokenizer DIR|char] [--config CFG.json] "
                        "[--resume] [--steps N --batch N --context N --layers N --heads N --width N --lr X "
                        "--eval-every N --seed N --threads N ...]\n");
        return 2;
    }
    tf_set_threads(threads);
    signal(SIGINT, on_sigint);
    int rc = tf_gpt_train(&cfg, data, n_data, tokenizer ? tokenizer : "char", out, resume, &g_stop, progress, &every);
    if (rc < 0) cli_die("tformer train", tf_error());
    if (rc == 1) printf("interrupted: checkpoint written to %s/checkpoint.safetensors (continue with --resume)\n", out);
    return rc == 1 ? 130 : 0;
}

typedef struct {
    tf_tokenizer *tok;
    tf_ids ids;
    size_t printed; /* bytes of the decoded text already written */
    const char *stop;
} stream;

/* Decode everything generated so far and write the new part; stop at the stop string. */
static int on_token(void *user, int32_t id) {
    stream *s = user;
    char *text;
    size_t len;
    if (tf_ids_push(&s->ids, id) || tf_tokenizer_decode(s->tok, s->ids.v, s->ids.n, &text, &len)) return 1;
    int stop = 0;
    if (s->stop && *s->stop) {
        char *hit = strstr(text, s->stop);
        if (hit) len = (size_t)(hit - text), stop = 1;
    }
    if (len > s->printed) fwrite(text + s->printed, 1, len - s->printed, stdout), s->printed = len;
    fflush(stdout);
    free(text);
    return stop;
}

static tf_gpt *load_model(const char *dir, tf_tokenizer **tok, const char *cmd) {
    tf_gpt *m = tf_gpt_load_hf(dir);
    if (!m) cli_die(cmd, tf_error());
    if (!(*tok = tf_tokenizer_load(dir))) cli_die(cmd, tf_error());
    if (tf_tokenizer_vocab_size(*tok) > m->cfg.vocab_size) {
        fprintf(stderr, "%s: the tokenizer in %s has %d tokens, the model only %d\n", cmd, dir,
                tf_tokenizer_vocab_size(*tok), m->cfg.vocab_size);
        exit(1);
    }
    return m;
}

int cmd_generate(int argc, char **argv) {
    static const char *const keys[] = {"--model", "--prompt", "--max-tokens", "--temperature", "--top-k", "--top-p",
                                       "--repetition-penalty", "--seed", "--stop", "--beam", "--length-penalty", "--threads"};
    const char *v[12] = {0};
    if (cli_parse_flags(argc, argv, keys, v, 12) || !v[0] || !v[1]) {
        fprintf(stderr, "usage: tformer generate --model DIR --prompt TEXT [--max-tokens N] [--temperature T] "
                        "[--top-k K] [--top-p P] [--repetition-penalty R] [--seed S] [--stop TEXT] [--beam N "
                        "[--length-penalty A]]\n");
        return 2;
    }
    tf_tokenizer *tok;
    tf_gpt *m = load_model(v[0], &tok, "tformer generate");
    tf_generate_opts o = tf_generate_opts_default();
    if (v[2]) o.max_tokens = atoi(v[2]);
    if (v[3]) o.temperature = (float)atof(v[3]);
    if (v[4]) o.top_k = atoi(v[4]);
    if (v[5]) o.top_p = (float)atof(v[5]);
    if (v[6]) o.repetition_penalty = (float)atof(v[6]);
    if (v[7]) o.seed = strtoull(v[7], NULL, 10);
    if (v[9]) o.beam = atoi(v[9]);
    if (v[10]) o.length_penalty = (float)atof(v[10]);
    o.eos_id = tf_tokenizer_token_id(tok, "<|endoftext|>");
    tf_ids prompt = {0}, out = {0};
    if (tf_tokenizer_encode(tok, v[1], strlen(v[1]), &prompt)) cli_die("tformer generate", tf_error());
    stream s = {tok, {0}, 0, v[8]};
    fwrite(v[1], 1, strlen(v[1]), stdout);
    if (tf_gpt_generate(m, prompt.v, (int)prompt.n, &o, on_token, &s, &out, NULL)) {
        printf("\n");
        cli_die("tformer generate", tf_error());
    }
    printf("\n");
    tf_ids_free(&prompt), tf_ids_free(&out), tf_ids_free(&s.ids);
    tf_tokenizer_free(tok);
    tf_gpt_free(m);
    return 0;
}

int cmd_eval(int argc, char **argv) {
    const char *model = NULL, *data[256];
    int n_data = 0;
    for (int i = 0; i < argc; i++) {
        if (!strcmp(argv[i], "--model") && i + 1 < argc) model = argv[++i];
        else if (!strcmp(argv[i], "--data") && i + 1 < argc)
            for (data[n_data++] = argv[++i]; i + 1 < argc && strncmp(argv[i + 1], "--", 2) && n_data < 256;) data[n_data++] = argv[++i];
        else cli_usage_die("tformer eval", argv[i]);
    }
    if (!model || !n_data) {
        fprintf(stderr, "usage: tformer eval --model DIR --data FILE...\n");
        return 2;
    }
    tf_tokenizer *tok;
    tf_gpt *m = load_model(model, &tok, "tformer eval");
    double loss;
    int64_t n;
    if (tf_gpt_evaluate(m, tok, data, n_data, &loss, &n)) cli_die("tformer eval", tf_error());
    printf("loss %.4f perplexity %.3f over %lld tokens\n", loss, exp(loss), (long long)n);
    tf_tokenizer_free(tok);
    tf_gpt_free(m);
    return 0;
}
