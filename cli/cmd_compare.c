/* tformer compare: relative L2 error of every tensor of B against A's tensor of the same name. */
#include <math.h>

#include "cli.h"

const cli_flag cmd_compare_flags[] = {CLI_END};

static double value(const tf_tensor *t, int64_t i) {
    return t->dtype == TF_DTYPE_F32 ? tf_f32(t)[i] : t->dtype == TF_DTYPE_I32 ? tf_i32(t)[i] : tf_u8(t)[i];
}

/* Relative L2 error of b against a, in double. */
static double rel_err(const tf_tensor *a, const tf_tensor *b) {
    double d = 0, r = 0;
    for (int64_t i = 0; i < tf_numel(a); i++) {
        double x = value(a, i), y = value(b, i);
        d += (x - y) * (x - y);
        r += x * x;
    }
    return r > 0 ? sqrt(d / r) : sqrt(d);
}

/* One line per tensor of b; 0, or 1 when a tensor cannot be compared. */
static int compare(const tf_st_file *a, const tf_st_file *b, const char *b_path, tf_arena *ar) {
    double worst = 0;
    int rc = 0;
    for (int i = 0; i < tf_st_count(b); i++) {
        const tf_st_entry *eb = tf_st_entry_at(b, i), *ea = tf_st_find(a, eb->name);
        if (!ea) {
            printf("%-50s only in %s\n", eb->name, b_path);
            continue;
        }
        tf_tensor *ta = tf_st_to_tensor(a, ea, ar), *tb = tf_st_to_tensor(b, eb, ar);
        if (!ta || !tb || tf_numel(ta) != tf_numel(tb)) {
            printf("%-50s %s\n", eb->name, !ta || !tb ? tf_error() : "different sizes");
            rc = 1;
            continue;
        }
        double e = rel_err(ta, tb);
        worst = e > worst ? e : worst;
        printf("%-50s relative error %.3e\n", eb->name, e);
    }
    printf("worst relative error %.3e over %d tensors\n", worst, tf_st_count(b));
    return rc;
}

int cmd_compare(const cli_args *a) {
    tf_st_file *fa = tf_st_open(a->operands[0]), *fb = fa ? tf_st_open(a->operands[1]) : NULL;
    tf_arena *ar = tf_arena_new(0);
    if (!fa || !fb || !ar) cli_die(a->verb, tf_error());
    int rc = compare(fa, fb, a->operands[1], ar);
    tf_arena_free(ar);
    tf_st_close(fa);
    tf_st_close(fb);
    return rc;
}
