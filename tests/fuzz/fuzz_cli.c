/* libFuzzer target for the command-line flag parser (cli/flags.c): the
 * first byte picks the verb, the rest is split at NUL bytes into its argv
 * words. cli_parse must accept the words or say why, never crash, print or
 * exit; what it accepts must hold together: every required flag present,
 * integers in [0, INT_MAX], lists not empty, operands within the verb's
 * bounds. The table flags are then set as cli_apply would (a bad value is
 * an error, not an exit). Nothing the verbs run is fuzzed. */
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../cli/cli.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

enum { MAX_WORDS = 64 };

/* Copies of the words: parse writes into them ("--x=v" is split at '='). */
static int split(const uint8_t *data, size_t size, char **argv) {
    int n = 0;
    for (size_t i = 0; i < size && n < MAX_WORDS;) {
        const uint8_t *z = memchr(data + i, 0, size - i);
        size_t len = z ? (size_t)(z - (data + i)) : size - i;
        if (!(argv[n] = malloc(len + 1))) break;
        memcpy(argv[n], data + i, len);
        argv[n++][len] = 0;
        i += len + 1;
    }
    argv[n] = NULL;
    return n;
}

/* What an accepted command line promises the verb. */
static void check_parsed(const cli_args *a) {
    const cli_verb *v = a->verb;
    for (int k = 0; v->flags[k].name; k++) {
        const cli_flag *r = &v->flags[k];
        const cli_val *val = &a->v[k];
        if (!r->def && !val->given) abort(); /* a required flag went missing */
        if (r->kind == CLI_INT && val->text && (val->i < 0 || val->i > INT_MAX)) abort();
        if (r->kind == CLI_LIST && val->given && (val->n < 1 || !val->list)) abort();
        if (r->kind == CLI_LIST)
            for (int i = 0; i < val->n; i++)
                if (!val->list[i]) abort();
    }
    if (a->n_operands < v->min_operands || (v->max_operands >= 0 && a->n_operands > v->max_operands)) abort();
    for (int i = 0; i < a->n_sets; i++) /* what cli_apply does, without its exit */
        if (!tf_fields_find(a->tables, a->n_tables, a->sets[2 * i], NULL) ||
            (tf_fields_set(a->tables, a->n_tables, a->sets[2 * i], a->sets[2 * i + 1]) && !tf_error()[0]))
            abort(); /* a refused value says why */
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static FILE *sink;
    if (!sink && !(sink = fopen("/dev/null", "w"))) return 0;
    if (size < 1) return 0;
    int n_verbs;
    const cli_verb *verbs = cli_verbs(&n_verbs);
    const cli_verb *v = &verbs[data[0] % n_verbs];
    char *argv[MAX_WORDS + 1];
    int argc = split(data + 1, size - 1, argv);
    cli_args a;
    int rc = cli_parse(v, argc, argv, &a);
    if (rc < -1 || rc > 1 || a.verb != v) abort();
    if (rc == 0) check_parsed(&a);
    if (rc == 1) cli_help(&a, sink);
    if (rc == -1) {
        if (a.err && !a.err[0]) abort(); /* an error says something (NULL: out of memory) */
        fprintf(sink, "tformer %s: %s\n", v->name, a.err ? a.err : "out of memory");
        cli_usage(&a, sink);
    }
    cli_args_free(&a);
    for (int i = 0; i < argc; i++) free(argv[i]);
    return 0;
}
