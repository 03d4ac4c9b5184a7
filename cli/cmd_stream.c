/* tformer stream: a continual model on a stream (docs/continual.md). One
 * feature vector per line of standard input; from the window-th line on, one
 * output line per step, written and flushed as soon as the step is done. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

enum { MODEL, WINDOW };
const cli_flag cmd_stream_flags[] = {
    [MODEL] = {"model", CLI_STRING, "DIR", NULL, "a continual model folder (config.json, model.safetensors)"},
    [WINDOW] = {"window", CLI_INT, "N", "", "steps in the receptive field (default: the config's window)"},
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

int cmd_stream(const cli_args *a) {
    const cli_verb *v = a->verb;
    tf_params *ps = tf_params_new();
    tf_coenc e;
    long long w = a->v[WINDOW].i; /* given: replaces the config's (a huge one is refused by the check) */
    if (!ps || tf_coenc_load(a->v[MODEL].text, a->v[WINDOW].given ? (int)(w > 1 << 30 ? 1 << 30 : w) : -1, ps, &e))
        cli_die(v, tf_error());
    tf_coenc_state *s = tf_coenc_state_new(&e, 1);
    tf_ctx *ctx = tf_ctx_new(0);
    if (!s || !ctx) cli_die(v, tf_error());
    tf_ctx_set_grad(ctx, 0);
    int d = e.cfg.d_model;
    size_t cap = 0;
    char *line = NULL;
    long long lineno = 0;
    while (getline(&line, &cap, stdin) > 0) {
        lineno++;
        tf_tensor *x = tf_tensor_new(ctx, TF_DTYPE_F32, 2, (int64_t[]){1, d}, 0), *out;
        if (!x) cli_die(v, tf_error());
        parse_line(v, line, lineno, tf_f32(x), d);
        int rc = tf_coenc_step(ctx, s, x, &out);
        if (rc < 0) {
            char msg[1200];
            snprintf(msg, sizeof msg, "standard input line %lld: %s", lineno, tf_error());
            cli_die(v, msg);
        }
        for (int i = 0; rc == 1 && i < d; i++) printf(i ? " %.7g" : "%.7g", tf_f32(out)[i]);
        if (rc == 1) putchar('\n'), fflush(stdout);
        tf_ctx_reset(ctx);
    }
    free(line);
    tf_coenc_state_free(s), tf_ctx_free(ctx), tf_coenc_free(&e), tf_params_free(ps);
    return 0;
}
