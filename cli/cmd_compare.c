/* tformer compare: relative L2 error of every tensor of B against A's tensor of the same name.
 * Exits 1 when the files do not hold the same tensors: a name in one file only, a different
 * shape, a NaN or an infinity in either, an empty file, or a tensor that cannot be read. */
#include <math.h>

#include "cli.h"

const cli_flag cmd_compare_flags[] = {CLI_END};

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

/* One line per tensor; returns how many problems were reported. */
static int compare(const tf_st_file *a, const tf_st_file *b, const char *a_path, const char *b_path, tf_arena *ar) {
    double worst = 0;
    int problems = 0, compared = 0;
    if (!tf_st_count(a)) printf("%s holds no tensors\n", a_path), problems++;
    if (!tf_st_count(b)) printf("%s holds no tensors\n", b_path), problems++;
    for (int i = 0; i < tf_st_count(a); i++) {
        const char *name = tf_st_entry_at(a, i)->name;
        if (!tf_st_find(b, name)) printf("%-50s missing from %s\n", name, b_path), problems++;
    }
    for (int i = 0; i < tf_st_count(b); i++) {
        const tf_st_entry *eb = tf_st_entry_at(b, i), *ea = tf_st_find(a, eb->name);
        if (!ea) {
            printf("%-50s only in %s\n", eb->name, b_path), problems++;
            continue;
        }
        if (!same_shape(ea, eb)) {
            char sa[96], sb[96];
            shape_text(ea, sa, sizeof sa), shape_text(eb, sb, sizeof sb);
            printf("%-50s shape %s in %s, %s in %s\n", eb->name, sa, a_path, sb, b_path), problems++;
            continue;
        }
        tf_tensor *ta = tf_st_to_tensor(a, ea, ar), *tb = ta ? tf_st_to_tensor(b, eb, ar) : NULL;
        if (!ta || !tb) {
            printf("%-50s %s\n", eb->name, tf_error()), problems++;
            continue;
        }
        char what[160];
        int bad_a = non_finite(ta, what, sizeof what);
        if (bad_a) printf("%-50s %s in %s\n", eb->name, what, a_path), problems++;
        if (non_finite(tb, what, sizeof what)) printf("%-50s %s in %s\n", eb->name, what, b_path), problems++;
        else if (!bad_a) {
            double e = rel_err(ta, tb);
            worst = e > worst ? e : worst;
            compared++;
            printf("%-50s relative error %.3e\n", eb->name, e);
        }
        tf_arena_reset(ar);
    }
    printf("worst relative error %.3e over %d tensors\n", worst, compared);
    return problems;
}

int cmd_compare(const cli_args *a) {
    tf_st_file *fa = tf_st_open(a->operands[0]), *fb = fa ? tf_st_open(a->operands[1]) : NULL;
    tf_arena *ar = fb ? tf_arena_new(0) : NULL;
    if (!fa || !fb || !ar) cli_die(a->verb, tf_error());
    int problems = compare(fa, fb, a->operands[0], a->operands[1], ar);
    tf_arena_free(ar);
    tf_st_close(fa);
    tf_st_close(fb);
    if (fflush(stdout)) cli_die(a->verb, "cannot write to standard output");
    if (problems) fprintf(stderr, "tformer compare: %d problem%s (above): the files do not hold the same finite tensors\n",
                          problems, problems == 1 ? "" : "s");
    return problems ? 1 : 0;
}
