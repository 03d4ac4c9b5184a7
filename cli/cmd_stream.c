/* tformer stream: a continual model on a stream (docs/continual.md). A
 * model of feature vectors reads one vector per line of standard input; a
 * model of tokens (vocab_size > 0) reads text, each line followed by a space
 * (as it was trained), a step per token. From the window-th step on, one
 * output line per step, written and flushed as soon as the step is done: the
 * output vector, or with a classifier the step's label and its probability
 * (text: after the token). Per-step latency does not grow with the stream. */
#include <errno.h>
#include <time.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

enum { MODEL, WINDOW, RECOMPUTE, TIMING, THREADS };
const cli_flag cmd_stream_flags[] = {
    [MODEL] = {"model", CLI_STRING, "DIR", NULL, "a continual model folder (config.json, model.safetensors)"},
    [WINDOW] = {"window", CLI_INT, "N", "", "steps in the receptive field (default: the config's window)"},
    [RECOMPUTE] = {"recompute", CLI_SWITCH, NULL, "off",
                   "run the regular network on each window instead of step mode (the same outputs, for timing)"},
    [TIMING] = {"timing", CLI_SWITCH, NULL, "off", "at the end, the steps and steps/s on standard error"},
    [THREADS] = CLI_THREADS_ROW,
    CLI_END,
};

/* The numbers of one line (spaces, tabs or commas between them) into x[0..d);
 * exits naming the line when there are not exactly d. */
static void parse_line(const cli_verb *v, char *line, long long lineno, float *x, int d) {
    int n = 0;
    char *p = line, msg[256];
    for (;;) {
        while (*p == ' ' || *p == '\t' || *p == ',' || *p == '\r' || *p == '\n') p++;
        if (!*p) break;
        char *end;
        errno = 0;
        float f = strtof(p, &end);
        if (end == p) {
            snprintf(msg, sizeof msg, "standard input line %lld: '%.20s' is not a number", lineno, p);
            cli_die(v, msg);
        }
        if (n < d) x[n] = f;
        n++;
        p = end;
    }
    if (n != d) {
        snprintf(msg, sizeof msg, "standard input line %lld: %d values; the model takes d_model = %d per step", lineno,
                 n, d);
        cli_die(v, msg);
    }
}

/* What a stream run holds: the model and its stream, the outputs' width, the time in steps. */
typedef struct {
    const cli_verb *v;
    tf_model *m;
    tf_stream *s;
    tf_stream_shape shape;
    float *out;     /* (n_labels or d_model) the step's output */
    double seconds; /* in steps */
} stream;

/* The step's output line: the vector, or the likeliest label and its probability. */
static void print_output(const stream *st, const char *token) {
    if (token) fputs(token, stdout), putchar('\t');
    const float *z = st->out;
    if (!st->shape.n_labels) {
        for (int i = 0; i < st->shape.d_model; i++) printf(i ? " %.7g" : "%.7g", z[i]);
    } else {
        int L = st->shape.n_labels, best = 0;
        double sum = 0;
        for (int k = 1; k < L; k++) best = z[k] > z[best] ? k : best;
        for (int k = 0; k < L; k++) sum += exp((double)z[k] - z[best]);
        char buf[256];
        printf("%s\t%.4f", tf_model_label(st->m, best, buf, sizeof buf), 1.0 / sum);
    }
    putchar('\n');
    fflush(stdout);
}

/* One step, a token id or the vector x (line lineno; token when reading text), and its output. */
static void run_step(stream *st, int32_t id, const float *x, long long lineno, const char *token) {
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    int rc = tf_stream_step(st->s, id, x, st->out);
    clock_gettime(CLOCK_MONOTONIC, &b);
    st->seconds += (double)(b.tv_sec - a.tv_sec) + 1e-9 * (double)(b.tv_nsec - a.tv_nsec);
    if (rc < 0) {
        char msg[1200];
        snprintf(msg, sizeof msg, "standard input line %lld: %s", lineno, tf_error());
        cli_die(st->v, msg);
    }
    if (rc == 1) print_output(st, token);
}

/* A token's text for the output line: tabs and newlines shown as \t and \n. */
static void token_text(tf_tokenizer *tok, int32_t id, char *buf, size_t cap) {
    char *text = NULL;
    size_t len = 0, k = 0;
    if (tf_tokenizer_decode(tok, &id, 1, &text, &len)) len = 0;
    for (size_t i = 0; i < len && k + 3 < cap; i++) {
        char c = text[i];
        if (c == '\t' || c == '\n') buf[k++] = '\\', buf[k++] = c == '\t' ? 't' : 'n';
        else buf[k++] = c;
    }
    buf[k] = 0;
    free(text);
}

/* The next line of standard input (plain or gzip'ed: cli_lines), NUL-terminated in *buf with a byte to spare; its
 * length without the newline, or -1 at the end. A read error exits naming standard input. */
static long long next_line(const stream *st, cli_lines *in, char **buf, size_t *cap) {
    const char *line;
    size_t len;
    if (cli_lines_next(st->v, in, 1, &line, &len) < 1) return -1;
    if (len + 2 > *cap) {
        char *nb = realloc(*buf, len + 2);
        if (!nb) cli_die(st->v, "cannot read standard input: out of memory");
        *buf = nb, *cap = len + 2;
    }
    memcpy(*buf, line, len);
    (*buf)[len] = 0;
    return (long long)len;
}

static void stream_text(stream *st, const char *dir) {
    tf_tokenizer *tok = tf_tokenizer_load(dir);
    if (!tok) cli_die(st->v, tf_error());
    size_t cap = 0;
    char *line = NULL, piece[256];
    long long lineno = 0, got;
    tf_ids ids = {0};
    cli_lines in;
    cli_lines_init(&in, 0);
    while ((got = next_line(st, &in, &line, &cap)) >= 0) {
        lineno++;
        size_t n = (size_t)got;
        while (n && line[n - 1] == '\r') n--;
        if (!n) continue; /* as in training: empty lines are not part of the stream */
        line[n++] = ' ';  /* a space between lines, as one running text */
        ids.n = 0;
        if (tf_tokenizer_encode(tok, line, n, &ids)) {
            char msg[1200];
            snprintf(msg, sizeof msg, "standard input line %lld: %s", lineno, tf_error());
            cli_die(st->v, msg);
        }
        for (size_t i = 0; i < ids.n; i++) {
            token_text(tok, ids.v[i], piece, sizeof piece);
            run_step(st, ids.v[i], NULL, lineno, piece);
        }
        cli_flush_or_die(st->v); /* each line answered before the next is read; a write error ends the verb */
    }
    cli_lines_free(&in);
    free(line);
    tf_ids_free(&ids);
    tf_tokenizer_free(tok);
}

static void stream_vectors(stream *st) {
    int d = st->shape.d_model;
    size_t cap = 0;
    char *line = NULL;
    long long lineno = 0;
    float *x = malloc((size_t)d * sizeof *x);
    if (!x) cli_die(st->v, "out of memory");
    cli_lines in;
    cli_lines_init(&in, 0);
    while (next_line(st, &in, &line, &cap) >= 0) {
        lineno++;
        parse_line(st->v, line, lineno, x, d);
        run_step(st, 0, x, lineno, NULL);
        cli_flush_or_die(st->v);
    }
    cli_lines_free(&in);
    free(line), free(x);
}

int cmd_stream(const cli_args *a) {
    tf_set_threads(cli_threads(&a->v[THREADS]));
    stream st = {.v = a->verb};
    long long w = a->v[WINDOW].i; /* given: replaces the config's (a huge one is refused by the check) */
    if (a->v[WINDOW].given && w < 1) cli_die(st.v, "--window: a window of 1 or more steps");
    tf_stream_opts o = {a->v[WINDOW].given ? (int)(w > 1 << 30 ? 1 << 30 : w) : 0, a->v[RECOMPUTE].given};
    if (!(st.m = tf_model_load(a->v[MODEL].text, &(tf_model_opts){.require = TF_CAP_STREAM})) ||
        !(st.s = tf_model_stream_new(st.m, &o)))
        cli_die(st.v, tf_error());
    st.shape = tf_stream_shape_of(st.s);
    char extra[120];
    snprintf(extra, sizeof extra, "window %d (%s); %s", st.shape.window, a->v[WINDOW].given ? "--window" : "the config's",
             o.recompute ? "the regular network on each window (--recompute)" : "step mode (no --recompute)");
    cli_say(st.v, &(cli_said){NULL, a->v[MODEL].text, NULL, 0, 0, extra});
    int width = st.shape.n_labels ? st.shape.n_labels : st.shape.d_model;
    if (!(st.out = malloc((size_t)width * sizeof *st.out))) cli_die(st.v, "out of memory");
    if (st.shape.vocab_size > 0) stream_text(&st, a->v[MODEL].text);
    else stream_vectors(&st);
    int64_t steps = tf_stream_steps(st.s);
    if (a->v[TIMING].given)
        fprintf(stderr, "%lld steps in %.3f s (%s): %.1f steps/s\n", (long long)steps, st.seconds,
                o.recompute ? "the regular network on each window" : "step mode",
                st.seconds > 0 ? (double)steps / st.seconds : 0.0);
    free(st.out), tf_stream_free(st.s), tf_model_free(st.m);
    return 0;
}
