/* tformer predict: a fine-tuned BERT folder (from tformer finetune, or any
 * Hugging Face BertForSequenceClassification / TokenClassification /
 * QuestionAnswering folder) on inputs read from standard input in the
 * task's format without the label column; one output line per input: the
 * label and its probability, the tags of the words, or the answer. */
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "cli.h"

enum { MODEL, TASK, MAX_LEN, BATCH, THREADS, JSON, PRECISION };
const cli_flag cmd_predict_flags[] = {
    [MODEL] = {"model", CLI_STRING, "DIR", NULL, "a fine-tuned BERT folder with its tokenizer (tokenizer.json or vocab.txt)"},
    [TASK] = {"task", CLI_STRING, "classify|pairs|tag|span", "",
              "the input format (default: the folder's finetune.json, else its head)"},
    [MAX_LEN] = {"max-len", CLI_INT, "N", "0", "ids per input, longer ones cut (0: finetune.json's, else the context)"},
    [BATCH] = {"batch", CLI_INT, "N", "16", "inputs per forward pass"},
    [THREADS] = CLI_THREADS_ROW,
    [JSON] = {"json", CLI_SWITCH, NULL, "off",
              "one JSON object per input line instead of the text (JSON Lines; its keys: docs/json.md)"},
    [PRECISION] = CLI_PRECISION_ROW,
    CLI_END,
};

/* The folder's settings (finetune.json, else its head's task), then the flags. */
static tf_predict_opts settings(const cli_args *a, const tf_model *m) {
    tf_predict_opts o;
    const char *from;
    cli_check_max_len(a->verb, "--max-len", a->v[MAX_LEN].i, tf_model_context(m));
    if (tf_model_predict_opts(m, (int)a->v[MAX_LEN].i, &o, &from)) cli_die(a->verb, tf_error());
    if (a->v[TASK].given) {
        int k = tf_finetune_kind_from_name(a->v[TASK].text);
        if (k < 0) cli_usage_error(a, "--task expects classify, pairs, tag or span, got '%s'", a->v[TASK].text);
        o.task = (tf_finetune_kind)k, from = "--task";
    }
    o.batch = (int)a->v[BATCH].i;
    char extra[200];
    snprintf(extra, sizeof extra, "task %s (%s), inputs cut at %d ids%s", tf_finetune_kind_name(o.task), from,
             o.max_len, a->v[MAX_LEN].given && a->v[MAX_LEN].i > 0 ? " (--max-len)" : "");
    cli_say(a->verb, &(cli_said){tf_model_family(m)->name, a->v[MODEL].text, NULL, 0, tf_model_precision(m), extra});
    return o;
}

/* --json: {"label", "probability"}, {"tags": [label or null per word]} or {"answer", "start", "end"}. */
static void json_one(const cli_verb *v, const tf_model *m, const tf_finetune_example *x, const tf_finetune_prediction *p,
                     tf_finetune_kind kind) {
    char buf[64], *answer;
    cJSON *j = cli_json_object(v, NULL, NULL), *tags;
    if (kind == TF_FINETUNE_SPAN) {
        if (!(answer = strndup(x->b + p->answer_off, p->answer_len))) cli_die(v, "out of memory");
        cli_json_str(v, j, "answer", answer);
        cli_json_num(v, j, "start", (double)p->answer_off), cli_json_num(v, j, "end", (double)(p->answer_off + p->answer_len));
        free(answer);
    } else if (kind == TF_FINETUNE_TAG) {
        tags = cli_json_array(v, j, "tags");
        for (int w = 0; w < p->n_tags; w++)
            cli_json_str(v, tags, NULL, p->tags[w] < 0 ? NULL : tf_model_label(m, p->tags[w], buf, sizeof buf));
    } else {
        cli_json_str(v, j, "label", tf_model_label(m, p->label, buf, sizeof buf));
        cli_json_num(v, j, "probability", p->prob);
    }
    cli_json_print(v, j);
}

static void print_one(const tf_model *m, const tf_finetune_example *x, const tf_finetune_prediction *p,
                      tf_finetune_kind kind) {
    char buf[64];
    if (kind == TF_FINETUNE_SPAN) {
        printf("%.*s\n", (int)p->answer_len, x->b + p->answer_off);
    } else if (kind == TF_FINETUNE_TAG) {
        for (int w = 0; w < p->n_tags; w++)
            printf("%s%s", w ? " " : "", p->tags[w] < 0 ? "-" : tf_model_label(m, p->tags[w], buf, sizeof buf));
        printf("\n");
    } else {
        printf("%s\t%.4f\n", tf_model_label(m, p->label, buf, sizeof buf), p->prob);
    }
}

/* A chunk's error "<stdin>:N: ..." with N counted over the whole input (the chunk starts at line first). */
static void die_at(const cli_verb *v, long long first) {
    const char *e = tf_error();
    char *end;
    long long n = strncmp(e, "<stdin>:", 8) ? 0 : strtoll(e + 8, &end, 10);
    if (n <= 0 || *end != ':') cli_die(v, e);
    char msg[1400];
    snprintf(msg, sizeof msg, "<stdin>:%lld%s", first + n - 1, end);
    cli_die(v, msg);
}

typedef struct {
    const cli_args *a;
    const tf_model *m;
    tf_predict_opts o;
    int n, truncated; /* inputs answered, and cut, so far */
} predictor;

/* The inputs of text (whole lines, the first of them line `first`): parsed, predicted and written. */
static void predict_text(predictor *pr, const char *text, size_t len, long long first) {
    size_t blank = 0;
    while (blank < len && strchr(" \t\r\n", text[blank])) blank++;
    if (blank == len) return; /* no input in it (blank lines) */
    const cli_verb *v = pr->a->verb;
    tf_finetune_set s;
    if (tf_finetune_parse(pr->o.task, text, len, "<stdin>", 0, &s)) die_at(v, first);
    tf_finetune_prediction *p = calloc((size_t)s.n, sizeof *p);
    int cut;
    if (!p || tf_model_predict(pr->m, &s, &pr->o, p, &cut)) cli_die(v, p ? tf_error() : "out of memory");
    for (int i = 0; i < s.n; i++)
        if (pr->a->v[JSON].given) json_one(pr->a->verb, pr->m, &s.ex[i], &p[i], pr->o.task);
        else print_one(pr->m, &s.ex[i], &p[i], pr->o.task);
    pr->n += s.n, pr->truncated += cut;
    tf_finetune_predictions_free(p, s.n), free(p);
    tf_finetune_set_free(&s);
    cli_flush_or_die(v); /* each chunk answered before more is read; a write error ends the verb */
}

/* Standard input a chunk of lines at a time (tag: whole sentences, up to a blank line). */
static void predict_stdin(predictor *pr) {
    const cli_verb *v = pr->a->verb;
    const char *lines[CLI_BATCH_MAX];
    size_t lens[CLI_BATCH_MAX];
    char *text = NULL;
    size_t len = 0, cap = 0;
    long long first = 1, line_no = 0; /* text's first line; lines read */
    cli_lines in;
    cli_lines_init(&in, 0);
    for (int n; (n = cli_lines_next(v, &in, CLI_BATCH_MAX, lines, lens)) > 0;) {
        size_t cut = 0; /* text up to here is whole inputs (after the last blank line for tag) */
        long long cut_line = first;
        for (int i = 0; i < n; i++) {
            if (len + lens[i] + 1 >= cap) {
                while (len + lens[i] + 1 >= cap) cap = cap ? 2 * cap : 65536;
                char *grown = realloc(text, cap);
                if (!grown) cli_die(v, "cannot read standard input: out of memory");
                text = grown;
            }
            memcpy(text + len, lines[i], lens[i]);
            len += lens[i], text[len++] = '\n', line_no++;
            if (pr->o.task != TF_FINETUNE_TAG || !lens[i]) cut = len, cut_line = line_no + 1;
        }
        if (!cut) continue;
        predict_text(pr, text, cut, first);
        memmove(text, text + cut, len - cut);
        len -= cut, first = cut_line;
    }
    predict_text(pr, text ? text : "", len, first);
    cli_lines_free(&in);
    free(text);
    if (!pr->n) cli_die(v, "<stdin>: no examples");
}

int cmd_predict(const cli_args *a) {
    tf_set_threads(cli_threads(&a->v[THREADS]));
    if (a->v[BATCH].i < 1 || a->v[BATCH].i > CLI_BATCH_MAX)
        cli_usage_error(a, "--batch expects an integer in [1,%d], got %lld", CLI_BATCH_MAX, a->v[BATCH].i);
    tf_precision precision = cli_precision(a, PRECISION);
    tf_model *m = tf_model_load(a->v[MODEL].text, &(tf_model_opts){.precision = precision,
                                .require = TF_CAP_CLASSIFY_TEXT | TF_CAP_TAG | TF_CAP_ANSWER});
    if (!m) cli_die(a->verb, tf_error());
    cli_need_tokenizer(a->verb, m, NULL);
    predictor pr = {a, m, settings(a, m), 0, 0};
    predict_stdin(&pr); /* the model, its tokenizer and the task are checked first */
    if (pr.truncated)
        fprintf(stderr, "tformer predict: %d of %d inputs cut to %d ids\n", pr.truncated, pr.n, pr.o.max_len);
    tf_model_free(m);
    return 0;
}
