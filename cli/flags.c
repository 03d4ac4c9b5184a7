/* The one flag parser of every verb, and its --help: the verb's own rows
 * (cli_flag) plus the rows of any field tables (config.h) it fills. */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"

static int find_name(const cli_verb *v, const char *name) {
    for (int k = 0; v->flags && v->flags[k].name; k++)
        if (!strcmp(v->flags[k].name, name)) return k;
    return -1;
}

/* The verb's row of a word as typed ("--lowercase", or an alias: "-lc"), or -1. */
static int find_flag(const cli_verb *v, const char *word) {
    int n;
    const cli_alias *al = cli_aliases(&n);
    for (int i = 0; i < n; i++)
        if (!strcmp(al[i].verb, v->name) && !strcmp(al[i].word, word)) return find_name(v, al[i].flag);
    return strncmp(word, "--", 2) ? -1 : find_name(v, word + 2);
}

/* A flag rather than a value or an operand: "--..." or one of the verb's aliases ("-lc"). */
static int is_flag_word(const cli_verb *v, const char *word) {
    return !strncmp(word, "--", 2) || (word[0] == '-' && find_flag(v, word) >= 0);
}

/* "n_layer" -> "--n-layer" */
static void flag_of(const char *name, char *out, size_t cap) {
    size_t n = 2;
    snprintf(out, cap, "--");
    for (; *name && n + 1 < cap; name++) out[n++] = *name == '_' ? '-' : *name;
    out[n] = 0;
}

/* The value a table row takes, for --help: "N", "X", "true|false", "a|b|c", "TEXT". */
static void placeholder(const tf_field *r, char *out, size_t cap) {
    const char *fixed = r->type == TF_FIELD_FLOAT ? "X" : r->type == TF_FIELD_BOOL ? "true|false"
                      : r->type == TF_FIELD_STRING ? "TEXT" : "N";
    if (r->type != TF_FIELD_ENUM) {
        snprintf(out, cap, "%s", fixed);
        return;
    }
    size_t n = 0;
    out[0] = 0;
    for (int k = 0; r->choices[k] && n < cap; k++)
        n += (size_t)snprintf(out + n, cap - n, "%s%.*s", k ? "|" : "", (int)strcspn(r->choices[k], "|"), r->choices[k]);
}

typedef struct {
    const cli_args *a;
    FILE *f;
} print_ctx;

static int usage_table_fn(void *user, const tf_field *r, void *obj) {
    (void)obj;
    const print_ctx *c = user;
    char flag[64], arg[128];
    if (!(r->flags & TF_FIELD_REQUIRED)) return 0;
    flag_of(r->name, flag, sizeof flag), placeholder(r, arg, sizeof arg);
    fprintf(c->f, " %s %s", flag, arg);
    return 0;
}

/* "usage: tformer train --data FILE... --out DIR [options]" */
void cli_usage(const cli_args *a, FILE *f) {
    const cli_verb *v = a->verb;
    print_ctx c = {a, f};
    int optional = a->n_tables > 0;
    fprintf(f, "usage: tformer %s", v->name);
    for (const cli_flag *r = v->flags; r && r->name; r++)
        if (r->def) optional = 1;
        else fprintf(f, " --%s %s", r->name, r->arg);
    tf_fields_each(a->tables, a->n_tables, usage_table_fn, &c);
    fprintf(f, "%s%s%s\n", optional ? " [options]" : "", v->operands ? " " : "", v->operands ? v->operands : "");
}

_Noreturn void cli_usage_error(const cli_args *a, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "tformer %s: ", a->verb->name);
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
    cli_usage(a, stderr);
    exit(2);
}

/* def NULL: the help says the default itself ("(default: the folder's, else mean)"). */
static void help_line(FILE *f, const char *flag, const char *arg, const char *help, const char *def) {
    char left[256];
    snprintf(left, sizeof left, "%s%s%s", flag, arg ? " " : "", arg ? arg : "");
    fprintf(f, "  %-34s %s%s%s%s\n", left, help, def ? " (" : "", def ? def : "", def ? ")" : "");
}

static void help_table(FILE *f, const tf_field_table *t, const char *obj) {
    fprintf(f, "\n%s:\n", t->name);
    for (int i = 0; i < t->n; i++) {
        const tf_field *r = &t->rows[i];
        char flag[64], arg[128], val[128], def[300];
        if (r->type == TF_FIELD_TABLE) {
            help_table(f, r->sub, obj + r->offset);
            continue;
        }
        flag_of(r->name, flag, sizeof flag), placeholder(r, arg, sizeof arg);
        if (tf_fields_format(r, obj, val, sizeof val) < 0) snprintf(val, sizeof val, "?");
        int n = r->flags & TF_FIELD_REQUIRED ? snprintf(def, sizeof def, "required")
                                             : snprintf(def, sizeof def, "default %s", *val ? val : "none");
        const char *aliases = r->flags & TF_FIELD_RENAMED ? NULL : r->alias; /* former JSON keys: no flags */
        for (const char *p = aliases; p && n < (int)sizeof def; p = strchr(p, '|') ? strchr(p, '|') + 1 : NULL) {
            char also[64], word[64];
            snprintf(word, sizeof word, "%.*s", (int)strcspn(p, "|"), p);
            flag_of(word, also, sizeof also);
            n += snprintf(def + n, sizeof def - (size_t)n, "%s%s", p == aliases ? "; also " : ", ", also);
        }
        help_line(f, flag, arg, r->help ? r->help : "", def);
    }
}

/* "; also -lc" after a verb flag's default: its aliases (cli_aliases). */
static void also_alias(const cli_verb *v, const char *name, char *def, size_t cap) {
    int n, first = 1;
    const cli_alias *al = cli_aliases(&n);
    for (int i = 0; i < n; i++) {
        if (strcmp(al[i].verb, v->name) || strcmp(al[i].flag, name)) continue;
        size_t len = strlen(def);
        snprintf(def + len, cap - len, "%s%s", first ? "; also " : ", ", al[i].word);
        first = 0;
    }
}

void cli_help(const cli_args *a, FILE *f) {
    const cli_verb *v = a->verb;
    cli_usage(a, f);
    fprintf(f, "\n%s.\n", v->summary);
    if (v->flags && v->flags->name) fprintf(f, "\noptions:\n");
    for (const cli_flag *r = v->flags; r && r->name; r++) {
        char flag[64], def[128];
        snprintf(flag, sizeof flag, "--%s", r->name);
        if (!r->def) snprintf(def, sizeof def, "required");
        else snprintf(def, sizeof def, "default %s", *r->def ? r->def : "none");
        also_alias(v, r->name, def, sizeof def);
        /* an empty default that the help explains is said once, not also as "default none" */
        int said = r->def && !*r->def && strstr(r->help, "(default") && !strstr(def, "; also");
        help_line(f, flag, r->kind == CLI_SWITCH ? NULL : r->arg, r->help, said ? NULL : def);
    }
    for (int i = 0; i < a->n_tables; i++) help_table(f, a->tables[i].table, a->tables[i].obj);
    fprintf(f, "\n  %-34s %s\n", "-h, --help", "this text");
}

/* ---------------------------------------------------------------- "did you mean" */

/* Words longer than 63 bytes are far from everything (cli.h). */
int cli_edit_distance(const char *a, const char *b) {
    while (*a == '-') a++;
    while (*b == '-') b++;
    size_t n = strlen(a), m = strlen(b);
    if (n > 63 || m > 63) return 99;
    int d[64][64];
    for (size_t i = 0; i <= n; i++) d[i][0] = (int)i;
    for (size_t j = 0; j <= m; j++) d[0][j] = (int)j;
    for (size_t i = 1; i <= n; i++)
        for (size_t j = 1; j <= m; j++) {
            int best = d[i - 1][j - 1] + (a[i - 1] != b[j - 1]);
            if (d[i - 1][j] + 1 < best) best = d[i - 1][j] + 1;
            if (d[i][j - 1] + 1 < best) best = d[i][j - 1] + 1;
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] && d[i - 2][j - 2] + 1 < best)
                best = d[i - 2][j - 2] + 1;
            d[i][j] = best;
        }
    return d[n][m];
}

typedef struct {
    const char *typed;
    char best[64]; /* the closest flag as typed ("--prompt"), "" when none is close */
    int dist;
} near_ctx;

int cli_is_near(int d, size_t typed_len, size_t candidate_len) {
    int most = typed_len <= 4 ? 1 : typed_len <= 9 ? 2 : 3;
    return d <= most && d < (int)candidate_len;
}

/* flag ("--prompt", "-lc") is a candidate: kept when closer than any before and near (cli_is_near). */
static void consider(near_ctx *c, const char *flag) {
    size_t len = strlen(c->typed + strspn(c->typed, "-")), flen = strlen(flag + strspn(flag, "-"));
    int d = cli_edit_distance(c->typed, flag);
    if (cli_is_near(d, len, flen) && d < c->dist) c->dist = d, snprintf(c->best, sizeof c->best, "%s", flag);
}

/* A table row's flag and its aliases' ("max_tokens|max_new_tokens" -> --max-tokens, --max-new-tokens). A renamed
 * row's former key typed as a flag (train --arch seq2seq --max-tokens) gets the row's flag (--batch-tokens). */
static int near_table_fn(void *user, const tf_field *r, void *obj) {
    (void)obj;
    near_ctx *c = user;
    char flag[64], word[64], former[64];
    flag_of(r->name, flag, sizeof flag);
    consider(c, flag);
    for (const char *p = r->alias; p; p = strchr(p, '|') ? strchr(p, '|') + 1 : NULL) {
        snprintf(word, sizeof word, "%.*s", (int)strcspn(p, "|"), p);
        flag_of(word, former, sizeof former);
        if (!(r->flags & TF_FIELD_RENAMED)) consider(c, former);
        else if (!strcmp(c->typed, former)) c->dist = 0, snprintf(c->best, sizeof c->best, "%s", flag);
    }
    return 0;
}

/* The verb's flag (its rows, their aliases, its tables' rows and aliases) closest to typed, or "". */
static void suggest(const cli_args *a, const char *typed, char *out, size_t cap) {
    near_ctx c = {typed, "", 99};
    int n;
    const cli_alias *al = cli_aliases(&n);
    for (const cli_flag *r = a->verb->flags; r && r->name; r++) {
        char flag[64];
        snprintf(flag, sizeof flag, "--%s", r->name);
        consider(&c, flag);
    }
    for (int i = 0; i < n; i++)
        if (!strcmp(al[i].verb, a->verb->name)) consider(&c, al[i].word);
    tf_fields_each(a->tables, a->n_tables, near_table_fn, &c);
    snprintf(out, cap, "%s", c.best);
}

/* The problem into a->err (malloc'd: a message quotes what was typed, however long); -1. */
static int fail(cli_args *a, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
static int fail(cli_args *a, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    free(a->err);
    a->err = n >= 0 ? malloc((size_t)n + 1) : NULL; /* NULL: cli_run says "out of memory" */
    if (a->err) {
        va_start(ap, fmt);
        vsnprintf(a->err, (size_t)n + 1, fmt, ap);
        va_end(ap);
    }
    return -1;
}

static int parse_int(cli_args *a, const char *flag, const char *text, long long *out) {
    char *end;
    errno = 0;
    long long x = strtoll(text, &end, 10);
    if (!isdigit((unsigned char)text[0]) || *end)
        return fail(a, "%s expects a non-negative integer, got '%s'", flag, text);
    if (errno || x > INT_MAX) /* digits, but more than the int it is kept in */
        return fail(a, "%s expects a non-negative integer, got '%s': more than the largest it holds (%d)", flag, text,
                    INT_MAX);
    *out = x;
    return 0;
}

/* The word after flag argv[*i], which must not be another flag; NULL after fail(). */
static const char *next_value(cli_args *a, int argc, char **argv, int *i) {
    if (*i + 1 >= argc || is_flag_word(a->verb, argv[*i + 1])) {
        fail(a, "option '%s' needs a value (see tformer %s --help)", argv[*i], a->verb->name);
        return NULL;
    }
    return argv[++*i];
}

/* A list: argv[*i] holds its first value (--name=VALUE) or none. Given
 * again, the values add up (--ref A --ref B is --ref A B). */
static int parse_list(cli_args *a, cli_val *val, int argc, char **argv, int *i, const char *value) {
    const char *flag = argv[*i];
    int before = val->n;
    if (!val->list && !(val->list = calloc((size_t)argc + 1, sizeof *val->list))) return fail(a, "out of memory");
    if (value) val->list[val->n++] = (char *)value;
    for (; *i + 1 < argc && !is_flag_word(a->verb, argv[*i + 1]); ++*i) val->list[val->n++] = argv[*i + 1];
    if (val->n == before) return fail(a, "option '%s' needs a value (see tformer %s --help)", flag, a->verb->name);
    return 0;
}

/* One flag at argv[i] (split at '=' in place); the index of its last word, or -1 after fail(). */
static int parse_flag(cli_args *a, int argc, char **argv, int i) {
    char *eq = strchr(argv[i], '=');
    if (eq) *eq = 0;
    const char *flag = argv[i], *value = eq ? eq + 1 : NULL;
    int k = find_flag(a->verb, flag);
    if (k < 0) {
        if (!tf_fields_find(a->tables, a->n_tables, flag, NULL)) {
            char near[80];
            suggest(a, flag, near, sizeof near);
            return fail(a, "unknown option '%s' (%s%s%ssee tformer %s --help)", flag, *near ? "did you mean " : "",
                        near, *near ? "? " : "", a->verb->name);
        }
        if (!value && !(value = next_value(a, argc, argv, &i))) return -1;
        a->sets[2 * a->n_sets] = flag;
        a->sets[2 * a->n_sets++ + 1] = value;
        return i;
    }
    const cli_flag *r = &a->verb->flags[k];
    cli_val *val = &a->v[k];
    if (r->kind == CLI_LIST && parse_list(a, val, argc, argv, &i, value)) return -1;
    if (r->kind == CLI_SWITCH && value) return fail(a, "option '%s' takes no value", flag);
    if (r->kind == CLI_STRING || r->kind == CLI_INT) {
        if (!(val->text = value ? value : next_value(a, argc, argv, &i))) return -1;
    }
    if (r->kind == CLI_INT && parse_int(a, flag, val->text, &val->i)) return -1;
    val->given = 1;
    return i;
}

/* Was table row r given as a flag? */
static int flag_given(void *user, const tf_field *r) {
    const cli_args *a = user;
    for (int i = 0; i < a->n_sets; i++)
        if (tf_fields_find(a->tables, a->n_tables, a->sets[2 * i], NULL) == r) return 1;
    return 0;
}

int cli_table_given(const cli_args *a, const char *flag) {
    const tf_field *r = tf_fields_find(a->tables, a->n_tables, flag, NULL);
    return r && flag_given((void *)a, r);
}

/* An operand too many; a word like a flag ("-promt") gets the verb's flag closest to it. */
static int unexpected(cli_args *a, const char *word) {
    char near[80] = "";
    if (word[0] == '-') suggest(a, word, near, sizeof near);
    if (!*near) return fail(a, "unexpected argument '%s'", word);
    return fail(a, "unexpected argument '%s' (did you mean %s? see tformer %s --help)", word, near, a->verb->name);
}

/* Defaults of the flags not given; every required flag and operand present. */
static int finish(cli_args *a) {
    const cli_verb *v = a->verb;
    for (int k = 0; v->flags && v->flags[k].name; k++) {
        const cli_flag *r = &v->flags[k];
        cli_val *val = &a->v[k];
        if (val->given) continue;
        if (!r->def) return fail(a, "missing --%s (see tformer %s --help)", r->name, v->name);
        if (r->kind == CLI_STRING || r->kind == CLI_INT) val->text = *r->def ? r->def : NULL;
        if (r->kind == CLI_INT && val->text && parse_int(a, r->name, val->text, &val->i)) return -1;
    }
    const tf_field *missing = tf_fields_missing(a->tables, a->n_tables, flag_given, a);
    char flag[64];
    if (missing) {
        flag_of(missing->name, flag, sizeof flag);
        return fail(a, "missing %s (see tformer %s --help)", flag, v->name);
    }
    if (v->max_operands >= 0 && a->n_operands > v->max_operands)
        return unexpected(a, a->operands[v->max_operands]);
    if (a->n_operands < v->min_operands) return fail(a, "missing %s", v->operands);
    return 0;
}

static int g_argc;
static char **g_argv;

const char *cli_peek(const char *name) {
    size_t n = strlen(name);
    for (int i = 0; i < g_argc && strcmp(g_argv[i], "--"); i++) {
        const char *w = g_argv[i];
        if (strncmp(w, "--", 2) || strncmp(w + 2, name, n)) continue;
        if (w[2 + n] == '=') return w + 3 + n;
        if (!w[2 + n] && i + 1 < g_argc) return g_argv[i + 1];
    }
    return NULL;
}

/* The verb's tables, which may depend on a flag (train --arch): cli_peek sees argv meanwhile only. */
static void bind_tables(const cli_verb *v, int argc, char **argv, cli_args *a) {
    g_argc = argc, g_argv = argv;
    a->n_tables = v->tables ? v->tables(&a->tables) : 0;
    g_argc = 0, g_argv = NULL;
}

int cli_parse(const cli_verb *v, int argc, char **argv, cli_args *a) {
    memset(a, 0, sizeof *a);
    a->verb = v;
    bind_tables(v, argc, argv, a);
    int n_flags = 0;
    while (v->flags[n_flags].name) n_flags++;
    if (n_flags > CLI_MAX_FLAGS) return fail(a, "%d flags, more than CLI_MAX_FLAGS", n_flags);
    for (int i = 0; i < argc && strcmp(argv[i], "--"); i++)
        if (!strcmp(argv[i], "--help")) return 1;
    a->operands = calloc((size_t)argc + 1, sizeof *a->operands);
    a->sets = calloc(2 * (size_t)argc + 2, sizeof *a->sets);
    if (!a->operands || !a->sets) return fail(a, "out of memory");
    int rest = 0; /* after "--": operands only */
    for (int i = 0; i < argc; i++) {
        if (!rest && !strcmp(argv[i], "-h")) return 1;
        if (!rest && !strcmp(argv[i], "--")) rest = 1;
        else if (rest || !is_flag_word(v, argv[i])) a->operands[a->n_operands++] = argv[i];
        else if ((i = parse_flag(a, argc, argv, i)) < 0) return -1;
    }
    return finish(a);
}

void cli_args_free(cli_args *a) {
    for (int k = 0; k < CLI_MAX_FLAGS; k++) free(a->v[k].list);
    free(a->operands);
    free((void *)a->sets);
    free(a->err);
    memset(a, 0, sizeof *a);
}

void cli_apply(const cli_args *a) {
    for (int i = 0; i < a->n_sets; i++)
        if (tf_fields_set(a->tables, a->n_tables, a->sets[2 * i], a->sets[2 * i + 1])) cli_usage_error(a, "%s", tf_error());
}

int cli_stdout_status(const char *verb, int rc) {
    errno = 0;
    if (fflush(stdout) || ferror(stdout)) { /* a full disk, a closed pipe: never exit 0 on lost output */
        fprintf(stderr, "tformer%s%s: standard output: write error%s%s\n", verb ? " " : "", verb ? verb : "",
                errno ? ": " : "", errno ? strerror(errno) : "");
        rc = rc ? rc : 1;
    }
    return rc;
}

/* --model naming one form of a folder's weights (DIR/model.safetensors, DIR/model.safetensors.index.json) rather
 * than the folder: the folder is read with that form (tf_st_pick), as naming a tokenizer's file picks it where
 * the folder holds two. The flag's value becomes the folder (cut in argv itself). A problem exits 1. */
static void pick_weights(cli_args *a) {
    for (int i = 0; a->verb->flags[i].name; i++) {
        char *text = (char *)a->v[i].text;
        size_t n = text && a->v[i].given && a->verb->flags[i].kind == CLI_STRING ? strlen(text) : 0;
        const char *base = n ? strrchr(text, '/') : NULL;
        base = base ? base + 1 : text;
        if (strcmp(a->verb->flags[i].name, "model") || !n ||
            (strcmp(base, "model.safetensors") && strcmp(base, "model.safetensors.index.json")))
            continue;
        struct stat st;
        if (stat(text, &st) || !S_ISREG(st.st_mode)) continue; /* the loader says what is missing */
        if (tf_st_pick(text)) cli_die(a->verb, tf_error());
        if (base == text) a->v[i].text = ".";
        else if (base == text + 1) text[1] = 0; /* /model.safetensors: the root */
        else text[base - text - 1] = 0;
    }
}

/* A folder given as "run/" is "run" (a DIR flag's trailing slashes cut in argv itself, the root kept), so that
 * the paths made from it and the messages that name them read run/best, not run//best. */
static void trim_dirs(cli_args *a) {
    for (int i = 0; a->verb->flags[i].name; i++) {
        const cli_flag *r = &a->verb->flags[i];
        char *text = (char *)a->v[i].text;
        if (r->kind != CLI_STRING || !a->v[i].given || !text || !r->arg || strncmp(r->arg, "DIR", 3)) continue;
        for (size_t n = strlen(text); n > 1 && text[n - 1] == '/'; n--) text[n - 1] = 0;
    }
}

int cli_run(const cli_verb *v, int argc, char **argv) {
    cli_args a;
    int parsed = cli_parse(v, argc, argv, &a);
    if (parsed < 0) {
        fprintf(stderr, "tformer %s: %s\n", v->name, a.err ? a.err : "out of memory");
        cli_usage(&a, stderr);
        exit(2);
    }
    if (parsed > 0) cli_help(&a, stdout), exit(cli_stdout_status(v->name, 0));
    const char *check = getenv("TFORMER_CHECK_ARGS"); /* tools/docs_run.py: the command line alone */
    if (check && *check && strcmp(check, "0")) {
        cli_apply(&a); /* a table flag's bad value exits 2 naming it */
        cli_args_free(&a);
        exit(0);
    }
    trim_dirs(&a);
    pick_weights(&a);
    int rc = cli_stdout_status(v->name, v->run(&a));
    cli_args_free(&a);
    return rc;
}
