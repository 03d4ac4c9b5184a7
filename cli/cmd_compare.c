/* tformer compare: relative L2 error of every tensor of B against A's tensor of the same name.
 * Exits 1 when the files do not hold the same tensors: a name in one file only, a different
 * shape, a NaN or an infinity in either, an empty file, or a tensor that cannot be read. */
#include <math.h>
#include <stdarg.h>

#include <cjson/cJSON.h>

#include "cli.h"

enum { JSON };
const cli_flag cmd_compare_flags[] = {[JSON] = CLI_JSON_ROW, CLI_END};

/* Where the lines go: standard output, or the JSON array of --json (docs/json.md). */
typedef struct {
    const cli_verb *v;
    cJSON *tensors; /* NULL: text */
    int problems;
} report;

/* A problem with tensor name (NULL: with a file): "%-50s why", or {"tensor", "problem"}. */
static void problem(report *r, const char *name, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
static void problem(report *r, const char *name, const char *fmt, ...) {
    char why[4400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    r->problems++;
    if (!r->tensors) {
        if (name) printf("%-50s %s\n", name, why);
        else printf("%s\n", why);
        return;
    }
    cJSON *e = cli_json_object(r->v, r->tensors, NULL);
    cli_json_str(r->v, e, "tensor", name), cli_json_str(r->v, e, "problem", why);
}

static void result(report *r, const char *name, double err) {
    if (!r->tensors) {
        printf("%-50s relative error %.3e\n", name, err);
        return;
    }
    cJSON *e = cli_json_object(r->v, r->tensors, NULL);
    cli_json_str(r->v, e, "tensor", name), cli_json_num(r->v, e, "relative_error", err);
}

static double value(const tf_tensor *t, int64_t i) {
    return t->dtype == TF_DTYPE_F32 ? tf_f32(t)[i] : t->dtype == TF_DTYPE_I32 ? tf_i32(t)[i] : tf_u8(t)[i];
}

/* Relative L2 error of b against a, in double (both finite, same size). */
static double rel_err(const tf_tensor *a, const tf_tensor *b) {
    double d = 0, r = 0;
    for (int64_t i = 0; i < tf_numel(a); i++) {
        double x = value(a, i), y = value(b, i);
        d += (x - y) * (x - y);
        r += x * x;
    }
    return r > 0 ? sqrt(d / r) : sqrt(d);
}

/* 1 and a description ("2 NaN, 1 inf (first at element 5)") when t holds a non-finite value. */
static int non_finite(const tf_tensor *t, char *out, size_t cap) {
    if (t->dtype != TF_DTYPE_F32) return 0;
    int64_t nan = 0, inf = 0, first = -1;
    for (int64_t i = 0; i < tf_numel(t); i++) {
        float x = tf_f32(t)[i];
        if (isfinite(x)) continue;
        if (first < 0) first = i;
        if (isnan(x)) nan++;
        else inf++;
    }
    if (first < 0) return 0;
    snprintf(out, cap, "%lld NaN, %lld inf (first at element %lld)", (long long)nan, (long long)inf, (long long)first);
    return 1;
}

static int same_shape(const tf_st_entry *a, const tf_st_entry *b) {
    int same = a->ndim == b->ndim;
    for (int d = 0; same && d < a->ndim; d++) same = a->shape[d] == b->shape[d];
    return same;
}

static void shape_text(const tf_st_entry *e, char *out, size_t cap) {
    tf_tensor t = {.ndim = e->ndim};
    for (int d = 0; d < e->ndim; d++) t.shape[d] = e->shape[d];
    tf_shape_str(&t, out, cap);
}

/* One line (or JSON entry) per tensor; returns the worst relative error, r->compared set. */
static double compare(report *r, const tf_st_file *a, const tf_st_file *b, const char *a_path, const char *b_path,
                      tf_arena *ar, int *compared) {
    double worst = 0;
    *compared = 0;
    if (!tf_st_count(a)) problem(r, NULL, "%s holds no tensors", a_path);
    if (!tf_st_count(b)) problem(r, NULL, "%s holds no tensors", b_path);
    for (int i = 0; i < tf_st_count(a); i++) {
        const char *name = tf_st_entry_at(a, i)->name;
        if (!tf_st_find(b, name)) problem(r, name, "missing from %s", b_path);
    }
    for (int i = 0; i < tf_st_count(b); i++) {
        const tf_st_entry *eb = tf_st_entry_at(b, i), *ea = tf_st_find(a, eb->name);
        if (!ea) {
            problem(r, eb->name, "only in %s", b_path);
            continue;
        }
        if (!same_shape(ea, eb)) {
            char sa[96], sb[96];
            shape_text(ea, sa, sizeof sa), shape_text(eb, sb, sizeof sb);
            problem(r, eb->name, "shape %s in %s, %s in %s", sa, a_path, sb, b_path);
            continue;
        }
        tf_tensor *ta = tf_st_to_tensor(a, ea, ar), *tb = ta ? tf_st_to_tensor(b, eb, ar) : NULL;
        if (!ta || !tb) {
            problem(r, eb->name, "%s", tf_error());
            continue;
        }
        char what[160];
        int bad_a = non_finite(ta, what, sizeof what);
        if (bad_a) problem(r, eb->name, "%s in %s", what, a_path);
        if (non_finite(tb, what, sizeof what)) problem(r, eb->name, "%s in %s", what, b_path);
        else if (!bad_a) {
            double e = rel_err(ta, tb);
            worst = e > worst ? e : worst;
            ++*compared;
            result(r, eb->name, e);
        }
        tf_arena_reset(ar);
    }
    return worst;
}

int cmd_compare(const cli_args *a) {
    cli_pick_operand(a->operands[0]), cli_pick_operand(a->operands[1]);
    tf_st_file *fa = tf_st_open(a->operands[0]), *fb = fa ? tf_st_open(a->operands[1]) : NULL;
    tf_arena *ar = fb ? tf_arena_new(0) : NULL;
    if (!fa || !fb || !ar) cli_die(a->verb, tf_error());
    cli_say_plain(a->verb, 0, "each tensor of %s (%d) against %s's (%d) of the same name: relative L2 error "
                  "||a - b|| / ||a||, in double, one thread; %s", a->operands[1], tf_st_count(fb), a->operands[0],
                  tf_st_count(fa), a->v[JSON].given ? "one JSON object (--json)" : "a line per tensor (--json: one JSON object)");
    cJSON *j = a->v[JSON].given ? cli_json_object(a->verb, NULL, NULL) : NULL;
    report r = {a->verb, j ? cli_json_array(a->verb, j, "tensors") : NULL, 0};
    int compared, problems;
    double worst = compare(&r, fa, fb, a->operands[0], a->operands[1], ar, &compared);
    problems = r.problems;
    if (j) {
        cli_json_str(a->verb, j, "a", a->operands[0]), cli_json_str(a->verb, j, "b", a->operands[1]);
        cli_json_num(a->verb, j, "worst_relative_error", worst), cli_json_num(a->verb, j, "compared", compared);
        cli_json_num(a->verb, j, "problems", problems);
        cli_json_print(a->verb, j);
    } else printf("worst relative error %.3e over %d tensors\n", worst, compared);
    tf_arena_free(ar);
    tf_st_close(fa);
    tf_st_close(fb);
    if (fflush(stdout)) cli_die(a->verb, "cannot write to standard output");
    if (problems) fprintf(stderr, "tformer compare: %d problem%s (above): the files do not hold the same finite tensors\n",
                          problems, problems == 1 ? "" : "s");
    return problems ? 1 : 0;
}
