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

/* What a stream run holds: the model, its state, the window of inputs for --recompute. */
typedef struct {
    const cli_verb *v;
    tf_continual e;
    tf_continual_state *s;
    tf_ctx *ctx;
    char **labels;  /* n_labels names, or NULL */
    int recompute;
    float *ring;    /* --recompute: (window,d_model) the last inputs, slot t % window */
    int64_t t;
    double seconds; /* in steps */
} stream;

/* One step of input x (1,d_model): 1 and *out (1,d_model) once the window is full. */
static int step(stream *st, tf_tensor *x, tf_tensor **out) {
    if (!st->recompute) return tf_continual_step(st->ctx, st->s, x, out);
    int n = st->e.cfg.window, d = st->e.cfg.d_model;
    memcpy(st->ring + (st->t % n) * d, tf_f32(x), (size_t)d * sizeof(float));
    *out = NULL;
    if (++st->t < n) return 0;
    tf_tensor *w = tf_tensor_new(st->ctx, TF_DTYPE_F32, 3, (int64_t[]){1, n, d}, 0);  // (1,n,d): oldest first
    for (int j = 0; w && j < n; j++)
        memcpy(tf_f32(w) + (size_t)j * d, st->ring + ((st->t + j) % n) * d, (size_t)d * sizeof(float));
    return (*out = tf_continual_forward(st->ctx, &st->e, w, st->t - n)) ? 1 : -1;
}

/* The step's output line: the vector, or the likeliest label and its probability. */
static void print_output(const stream *st, const tf_tensor *y, const char *token) {
    if (token) fputs(token, stdout), putchar('\t');
    if (!st->e.head.weight) {
        for (int i = 0; i < st->e.cfg.d_model; i++) printf(i ? " %.7g" : "%.7g", tf_f32(y)[i]);
    } else {
        const float *z = tf_f32(y);
        int L = st->e.cfg.n_labels, best = 0;
        double sum = 0;
        for (int k = 1; k < L; k++) best = z[k] > z[best] ? k : best;
        for (int k = 0; k < L; k++) sum += exp((double)z[k] - z[best]);
        char buf[32];
        snprintf(buf, sizeof buf, "LABEL_%d", best);
        printf("%s\t%.4f", st->labels ? st->labels[best] : buf, 1.0 / sum);
    }
    putchar('\n');
    fflush(stdout);
}

/* Input x of the step (line lineno; token when reading text): a step, its output. */
static void run_step(stream *st, tf_tensor *x, long long lineno, const char *token) {
    tf_tensor *out;
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    int rc = x ? step(st, x, &out) : -1;
    if (rc == 1 && st->e.head.weight) out = tf_continual_classify(st->ctx, &st->e, out), rc = out ? 1 : -1;
    clock_gettime(CLOCK_MONOTONIC, &b);
    st->seconds += (double)(b.tv_sec - a.tv_sec) + 1e-9 * (double)(b.tv_nsec - a.tv_nsec);
    if (rc < 0) {
        char msg[1200];
        snprintf(msg, sizeof msg, "standard input line %lld: %s", lineno, tf_error());
        cli_die(st->v, msg);
    }
    if (rc == 1) print_output(st, out, token);
    tf_ctx_reset(st->ctx);
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
            tf_tensor *id = tf_tensor_new(st->ctx, TF_DTYPE_I32, 1, (int64_t[]){1}, 0);
            if (id) tf_i32(id)[0] = ids.v[i];
            token_text(tok, ids.v[i], piece, sizeof piece);
            run_step(st, id ? tf_continual_embed(st->ctx, &st->e, id) : NULL, lineno, piece);
        }
        cli_flush_or_die(st->v); /* each line answered before the next is read; a write error ends the verb */
    }
    cli_lines_free(&in);
    free(line);
    tf_ids_free(&ids);
    tf_tokenizer_free(tok);
}

static void stream_vectors(stream *st) {
    int d = st->e.cfg.d_model;
    size_t cap = 0;
    char *line = NULL;
    long long lineno = 0;
    cli_lines in;
    cli_lines_init(&in, 0);
    while (next_line(st, &in, &line, &cap) >= 0) {
        lineno++;
        tf_tensor *x = tf_tensor_new(st->ctx, TF_DTYPE_F32, 2, (int64_t[]){1, d}, 0);
        if (!x) cli_die(st->v, tf_error());
        parse_line(st->v, line, lineno, tf_f32(x), d);
        run_step(st, x, lineno, NULL);
        cli_flush_or_die(st->v);
    }
    cli_lines_free(&in);
    free(line);
}

/* label_names "a,b,c" as n names (NULL when they are not n). */
static char **split_labels(const char *list, int n) {
    char **v = n > 0 && *list ? calloc((size_t)n, sizeof *v) : NULL;
    int k = 0;
    for (const char *p = list; v && k < n; k++) {
        const char *e = strchr(p, ',') ? strchr(p, ',') : p + strlen(p);
        v[k] = strndup(p, (size_t)(e - p));
        if (!*e) break;
        p = e + 1;
    }
    if (v && k != n - 1) {
        for (int i = 0; i < n; i++) free(v[i]);
        free(v), v = NULL;
    }
    return v;
}

int cmd_stream(const cli_args *a) {
    tf_set_threads(cli_threads(&a->v[THREADS]));
    stream st = {.v = a->verb, .recompute = a->v[RECOMPUTE].given};
    long long w = a->v[WINDOW].i; /* given: replaces the config's (a huge one is refused by the check) */
    if (tf_continual_load(a->v[MODEL].text, a->v[WINDOW].given ? (int)(w > 1 << 30 ? 1 << 30 : w) : -1, &st.e))
        cli_die(st.v, tf_error());
    char extra[120];
    snprintf(extra, sizeof extra, "window %d (%s); %s", st.e.cfg.window, a->v[WINDOW].given ? "--window" : "the config's",
             st.recompute ? "the regular network on each window (--recompute)" : "step mode (no --recompute)");
    cli_say(st.v, &(cli_said){NULL, a->v[MODEL].text, NULL, 0, 0, extra});
    st.s = st.recompute ? NULL : tf_continual_state_new(&st.e, 1);
    st.ctx = tf_ctx_new(0);
    if (st.recompute) st.ring = calloc((size_t)st.e.cfg.window * (size_t)st.e.cfg.d_model, sizeof *st.ring);
    if ((!st.s && !st.recompute) || !st.ctx || (st.recompute && !st.ring)) cli_die(st.v, "out of memory");
    tf_ctx_set_grad(st.ctx, 0);
    st.labels = split_labels(st.e.cfg.label_names, st.e.cfg.n_labels);
    if (st.e.cfg.vocab_size > 0) stream_text(&st, a->v[MODEL].text);
    else stream_vectors(&st);
    int64_t steps = st.recompute ? st.t : tf_continual_state_steps(st.s);
    if (a->v[TIMING].given)
        fprintf(stderr, "%lld steps in %.3f s (%s): %.1f steps/s\n", (long long)steps, st.seconds,
                st.recompute ? "the regular network on each window" : "step mode",
                st.seconds > 0 ? (double)steps / st.seconds : 0.0);
    for (int i = 0; st.labels && i < st.e.cfg.n_labels; i++) free(st.labels[i]);
    free(st.labels), free(st.ring);
    tf_continual_state_free(st.s), tf_ctx_free(st.ctx), tf_continual_free(&st.e);
    return 0;
}
