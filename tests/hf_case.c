/* What the tests of Hugging Face folders share (test_hf_run.c, test_vit.c,
 * test_nystrom.c, test_marian.c, ...): outputs compared with a case's
 * expected.safetensors, scratch copies of a fixture folder (config.json
 * patched, one weight moved or left out), input files written from a table,
 * and the two tables every family runs: bad folders / inputs that must be a
 * clear error, and weights whose perturbation the comparison must notice. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "test.h"

const char *test_fixture_dir_or(const char *family_dir) {
    const char *d = test_fixture_dir(); /* --fixtures DIR: fresh cases (make *-conformance) */
    return strcmp(d, "tests/fixtures") ? d : family_dir;
}

tf_tensor *test_st_tensor(const tf_st_file *f, const char *name, tf_arena *a) {
    const tf_st_entry *e = tf_st_find(f, name);
    return e ? tf_st_to_tensor(f, e, a) : NULL;
}

double test_max_abs_diff(const float *a, const float *b, int64_t n) {
    double worst = 0;
    for (int64_t i = 0; i < n; i++) {
        double d = a[i] != a[i] && b[i] != b[i] ? 0 : fabs((double)a[i] - b[i]);
        if (!(d <= worst)) worst = d; /* NaN on one side only: NaN */
    }
    return worst;
}

void test_diff_norms(const float *a, const float *b, int64_t n, double *diff, double *norm) {
    *diff = *norm = 0;
    for (int64_t i = 0; i < n; i++) {
        double d = (double)a[i] - b[i];
        *diff += d * d, *norm += (double)b[i] * b[i];
    }
    *diff = sqrt(*diff), *norm = sqrt(*norm);
}

/* Max |got - expected| over every field of expected (NaN equal to NaN), and
 * (rel not NULL) the worst relative L2 error; the output must hold exactly
 * those fields, of the same shapes: -1 when not. */
double test_compare_outputs(const char *expected_path, const char *out_path, double *rel) {
    tf_st_file *exp = tf_st_open(expected_path), *got = tf_st_open(out_path);
    tf_arena *a = tf_arena_new(0);
    double worst = exp && got && a && tf_st_count(exp) == tf_st_count(got) ? 0 : -1;
    if (rel) *rel = 0;
    for (int i = 0; worst >= 0 && i < tf_st_count(exp); i++) {
        const tf_st_entry *e = tf_st_entry_at(exp, i), *g = tf_st_find(got, e->name);
        tf_tensor *te = tf_st_to_tensor(exp, e, a), *tg = g ? tf_st_to_tensor(got, g, a) : NULL;
        int same = te && tg && te->ndim == tg->ndim;
        for (int d = 0; same && d < te->ndim; d++) same = te->shape[d] == tg->shape[d];
        if (!same) {
            fprintf(stderr, "    %s: '%s' missing or of another shape\n", out_path, e->name);
            worst = -1;
            break;
        }
        double d = test_max_abs_diff(tf_f32(tg), tf_f32(te), tf_numel(te));
        if (!(d <= worst)) worst = d;
        double r = rel ? test_rel_err(tf_f32(tg), tf_f32(te), (long)tf_numel(te)) : 0;
        if (rel && r == r && r > *rel) *rel = r;
    }
    tf_arena_free(a);
    tf_st_close(exp), tf_st_close(got);
    return worst;
}

double test_hf_run_case(const char *dir, const char *case_dir, const char *out, double *rel) {
    char in[1300], exp[1300];
    snprintf(in, sizeof in, "%s/input.safetensors", case_dir);
    snprintf(exp, sizeof exp, "%s/expected.safetensors", case_dir);
    if (tf_hf_run(dir, in, out, NULL)) return fprintf(stderr, "    %s: hf-run failed: %s\n", dir, tf_error()), -1;
    double d = test_compare_outputs(exp, out, rel);
    unlink(out);
    return d;
}

/* ---------------------------------------------------------------- scratch folders */

int test_write_file(const char *path, const void *data, size_t n) {
    FILE *f = fopen(path, "wb");
    if (!f) return -1;
    size_t w = fwrite(data, 1, n, f);
    return fclose(f) || w != n ? -1 : 0;
}

int test_write_text(const char *path, const char *text) { return test_write_file(path, text, strlen(text)); }

char *test_replaced(const char *text, const char *from, const char *to) {
    const char *at = strstr(text, from);
    char *out = at ? malloc(strlen(text) + strlen(to) + 1) : NULL;
    if (!out) return NULL;
    memcpy(out, text, (size_t)(at - text));
    strcpy(out + (at - text), to);
    strcat(out, at + strlen(from));
    return out;
}

int test_copy_config(const char *src, const char *dst, const char *from, const char *to) {
    char p[1200];
    size_t n;
    snprintf(p, sizeof p, "%s/config.json", src);
    char *text = test_slurp(p, &n), *cfg = text && from ? test_replaced(text, from, to) : text;
    snprintf(p, sizeof p, "%s/config.json", dst);
    int rc = cfg ? test_write_file(p, cfg, strlen(cfg)) : -1;
    if (cfg != text) free(cfg);
    free(text);
    return rc;
}

int test_copy_case(const char *src, const char *dst, const char *from, const char *to, const char *name, int64_t at,
                   float delta, const char *drop) {
    char p[1200];
    int rc = test_copy_config(src, dst, from, to);
    snprintf(p, sizeof p, "%s/model.safetensors", src);
    tf_st_file *f = tf_st_open(p);
    tf_st_writer *w = tf_st_writer_new();
    tf_arena *a = tf_arena_new(0);
    rc = rc || !f || !w || !a ? -1 : 0;
    for (int i = 0; !rc && i < tf_st_count(f); i++) {
        const tf_st_entry *e = tf_st_entry_at(f, i);
        tf_tensor *t = tf_st_to_tensor(f, e, a);
        int moved = name && !strcmp(e->name, name);
        if (!t || (moved && at >= tf_numel(t))) rc = -1;
        else if (moved) tf_f32(t)[at] += delta;
        if (!rc && !(drop && !strcmp(e->name, drop))) rc = tf_st_writer_add(w, e->name, t);
    }
    snprintf(p, sizeof p, "%s/model.safetensors", dst);
    if (!rc) rc = tf_st_writer_save(w, p);
    tf_st_writer_free(w);
    tf_arena_free(a);
    tf_st_close(f);
    return rc;
}

int test_write_inputs(const test_input *specs, int max, const char *path) {
    tf_st_writer *w = tf_st_writer_new();
    tf_arena *a = tf_arena_new(0);
    int rc = w && a ? 0 : -1;
    for (const test_input *s = specs; !rc && s < specs + max && s->name; s++) {
        int is_f = s->dtype == TF_ST_F32, is_i = s->dtype == TF_ST_I64 || s->dtype == TF_ST_I32;
        tf_tensor *t = tf_tensor_alloc(a, is_f ? TF_DTYPE_F32 : is_i ? TF_DTYPE_I32 : TF_DTYPE_U8, s->ndim, s->shape, 0);
        if (!t) rc = -1;
        for (int64_t i = 0; !rc && i < tf_numel(t); i++) {
            if (is_f) tf_f32(t)[i] = s->value;
            else if (is_i) tf_i32(t)[i] = (int32_t)s->value;
            else tf_u8(t)[i] = (uint8_t)s->value;
        }
        if (!rc) rc = tf_st_writer_add_as(w, s->name, t, s->dtype);
    }
    if (!rc) rc = tf_st_writer_save(w, path);
    tf_st_writer_free(w);
    tf_arena_free(a);
    return rc;
}

/* ---------------------------------------------------------------- the two tables */

/* One bad case in scratch folder tmp: 1 when it was not a clear error. */
static int bad_case_fails(const test_bad_case *k, const char *default_model, const char *tmp, int verbose) {
    char in[1200], out[1200];
    snprintf(in, sizeof in, "%s/in.safetensors", tmp);
    snprintf(out, sizeof out, "%s/out.safetensors", tmp);
    const char *model = k->model ? k->model : default_model;
    unlink(in), unlink(out);
    if (((k->from || k->drop) && test_copy_case(model, tmp, k->from, k->to, NULL, 0, 0, k->drop)) ||
        (k->in[0].name && test_write_inputs(k->in, 3, in)))
        return fprintf(stderr, "    %s: cannot set up: %s\n", k->what, tf_error()) > 0;
    tf_set_error("%s", "");
    int rc = tf_hf_run(k->from || k->drop ? tmp : model, in, out, NULL);
    const char *msg = tf_error();
    int ok = rc == -1 && access(out, F_OK) != 0;
    for (int i = 0; ok && i < 3 && k->expect[i]; i++) ok = strstr(msg, k->expect[i]) != NULL;
    if (!ok || verbose)
        fprintf(stderr, "    %s: rc %d, output %s, error \"%s\"\n", k->what, rc, access(out, F_OK) ? "absent" : "written",
                msg);
    unlink(out);
    return !ok;
}

int test_hf_run_bad_cases(const test_bad_case *cases, size_t n, const char *default_model, const char *verbose_env) {
    char tmp[] = "/tmp/tformer_hfbad_XXXXXX";
    if (!mkdtemp(tmp)) return (int)n;
    int bad = 0, verbose = verbose_env && getenv(verbose_env);
    for (size_t c = 0; c < n; c++) bad += bad_case_fails(&cases[c], default_model, tmp, verbose);
    test_rm_rf(tmp);
    return bad;
}

int test_hf_perturbed(const char *case_dir, const test_weight *w, int n, double tol, double *same, double *least) {
    char tmp[] = "/tmp/tformer_hfp_XXXXXX", out[64];
    if (!mkdtemp(tmp)) return n;
    snprintf(out, sizeof out, "%s/out.safetensors", tmp);
    *same = test_copy_case(case_dir, tmp, NULL, NULL, NULL, 0, 0, NULL) ? -1 : test_hf_run_case(tmp, case_dir, out, NULL);
    int missed = 0;
    *least = INFINITY;
    for (int i = 0; i < n; i++) {
        double d = test_copy_case(case_dir, tmp, NULL, NULL, w[i].name, w[i].at, 1e-3f, NULL)
                       ? -1
                       : test_hf_run_case(tmp, case_dir, out, NULL);
        if (!(d > tol)) missed += fprintf(stderr, "    %s[%lld] + 1e-3: max |diff| %.3g passes\n", w[i].name,
                                          (long long)w[i].at, d) > 0;
        if (d < *least) *least = d;
    }
    test_rm_rf(tmp);
    return missed;
}
