/* tformer predict: a fine-tuned BERT folder (from tformer finetune, or any
 * Hugging Face BertForSequenceClassification / TokenClassification /
 * QuestionAnswering folder) on inputs read from standard input in the
 * task's format without the label column; one output line per input: the
 * label and its probability, the tags of the words, or the answer. */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"

enum { MODEL, TASK, MAX_LEN, BATCH, THREADS };
const cli_flag cmd_predict_flags[] = {
    [MODEL] = {"model", CLI_STRING, "DIR", NULL, "a fine-tuned BERT folder with its vocab.txt"},
    [TASK] = {"task", CLI_STRING, "classify|pairs|tag|span", "",
              "the input format (default: the folder's finetune.json, else its head)"},
    [MAX_LEN] = {"max-len", CLI_INT, "N", "0", "ids per input, longer ones cut (0: finetune.json's, else the context)"},
    [BATCH] = {"batch", CLI_INT, "N", "16", "inputs per forward pass"},
    [THREADS] = CLI_THREADS_ROW,
    CLI_END,
};

/* The folder's finetune.json (when present), then the flags. */
static tf_finetune_config settings(const cli_args *a, const tf_bert *m) {
    tf_finetune_config c = tf_finetune_config_default();
    char path[4096];
    struct stat st;
    snprintf(path, sizeof path, "%s/finetune.json", a->v[MODEL].text);
    tf_fields f = {&tf_finetune_config_table, &c};
    int have = !stat(path, &st);
    if (have && tf_fields_load(&f, 1, path, 1)) cli_die(a->verb, tf_error());
    if (!have) c.task = m->cfg.head == TF_BERT_TOKEN_CLS ? TF_FINETUNE_TAG
                      : m->cfg.head == TF_BERT_QA    ? TF_FINETUNE_SPAN : TF_FINETUNE_CLASSIFY;
    if (a->v[TASK].given) {
        int k = tf_finetune_kind_from_name(a->v[TASK].text);
        if (k < 0) cli_usage_error(a, "--task expects classify, pairs, tag or span, got '%s'", a->v[TASK].text);
        c.task = (tf_finetune_kind)k;
    }
    cli_check_max_len(a->verb, "--max-len", a->v[MAX_LEN].i, m->cfg.context);
    if (a->v[MAX_LEN].given) c.max_len = (int)a->v[MAX_LEN].i;
    int most = tf_bert_max_tokens(&m->cfg);
    if (!c.max_len || c.max_len > most) c.max_len = most;
    return c;
}

static void print_one(const tf_bert *m, const tf_finetune_example *x, const tf_finetune_prediction *p,
                      tf_finetune_kind kind) {
    char buf[64];
    if (kind == TF_FINETUNE_SPAN) {
        printf("%.*s\n", (int)p->answer_len, x->b + p->answer_off);
    } else if (kind == TF_FINETUNE_TAG) {
        for (int w = 0; w < p->n_tags; w++)
            printf("%s%s", w ? " " : "", p->tags[w] < 0 ? "-" : tf_bert_label(m, p->tags[w], buf, sizeof buf));
        printf("\n");
    } else {
        printf("%s\t%.4f\n", tf_bert_label(m, p->label, buf, sizeof buf), p->prob);
    }
}

int cmd_predict(const cli_args *a) {
    tf_set_threads(cli_threads(&a->v[THREADS]));
    tf_bert *m = tf_bert_load(a->v[MODEL].text, &(tf_bert_load_opts){-1, 0, 0});
    if (!m) cli_die(a->verb, tf_error());
    tf_tokenizer *tok = cli_load_tokenizer(a->verb, a->v[MODEL].text);
    tf_finetune_config c = settings(a, m);
    if (a->v[BATCH].i < 1) cli_usage_error(a, "--batch must be at least 1");
    size_t len;
    char *text = cli_read_stdin(a->verb, &len);
    tf_finetune_set s;
    tf_finetune_data d;
    if (tf_finetune_parse(c.task, text, len, "<stdin>", 0, &s)) cli_die(a->verb, tf_error());
    free(text);
    if (tf_finetune_encode(tok, &s, NULL, 0, c.max_len, &d)) cli_die(a->verb, tf_error());
    tf_finetune_prediction *p = calloc((size_t)d.n, sizeof *p);
    if (!p || tf_finetune_predict(m, &d, (int)a->v[BATCH].i, c.max_answer, p))
        cli_die(a->verb, p ? tf_error() : "out of memory");
    for (int i = 0; i < d.n; i++) print_one(m, &s.ex[i], &p[i], c.task);
    if (d.n_truncated) fprintf(stderr, "tformer predict: %d of %d inputs cut to %d ids\n", d.n_truncated, d.n, c.max_len);
    tf_finetune_predictions_free(p, d.n), free(p);
    tf_finetune_data_free(&d), tf_finetune_set_free(&s);
    tf_tokenizer_free(tok), tf_bert_free(m);
    return 0;
}
