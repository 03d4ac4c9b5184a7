/* What the tests of Hugging Face folders share (test_hf_run.c, test_vit.c,
 * test_nystrom.c, test_marian.c, ...): outputs compared with a case's
 * expected.safetensors, scratch copies of a fixture folder (config.json
 * patched, one weight moved or left out), input files written from a table,
 * and the two tables every family runs: bad folders / inputs that must be a
 * clear error, and weights whose perturbation the comparison must notice. */
#include <cjson/cJSON.h>
#include <png.h>
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

int test_copy_files(const char *src, const char *dst, const char *const *names, int n) {
    char from[1200], to[1200];
    int rc = 0;
    for (int i = 0; !rc && i < n; i++) {
        size_t len;
        snprintf(from, sizeof from, "%s/%s", src, names[i]);
        snprintf(to, sizeof to, "%s/%s", dst, names[i]);
        char *text = test_slurp(from, &len);
        rc = !text || test_write_file(to, text, len);
        free(text);
    }
    return rc ? -1 : 0;
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
        else if (moved && t->dtype == TF_DTYPE_I32) tf_i32(t)[at] += (int32_t)delta;
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

/* src/config.json into dst with the logits processors of one generate()
 * run (generate.json): forced_eos_token_id and bad_words_ids as the run
 * names them, else null and none (how the fixtures called generate()). */
int test_marian_generate_config(const char *src, const char *dst, const struct cJSON *run) {
    char p[1200];
    size_t n;
    snprintf(p, sizeof p, "%s/config.json", src);
    char *text = test_slurp(p, &n);
    cJSON *cfg = text ? cJSON_Parse(text) : NULL;
    free(text);
    const cJSON *forced = run ? cJSON_GetObjectItem(run, "forced_eos_token_id") : NULL;
    const cJSON *bad = run ? cJSON_GetObjectItem(run, "bad_words_ids") : NULL;
    int rc = cfg ? 0 : -1;
    cJSON_DeleteItemFromObject(cfg, "forced_eos_token_id");
    cJSON_DeleteItemFromObject(cfg, "bad_words_ids");
    cJSON *f = rc ? NULL : forced ? cJSON_Duplicate(forced, 1) : cJSON_CreateNull();
    if (!rc && !cJSON_AddItemToObject(cfg, "forced_eos_token_id", f)) rc = -1;
    if (!rc && bad && !cJSON_AddItemToObject(cfg, "bad_words_ids", cJSON_Duplicate(bad, 1))) rc = -1;
    const cJSON *renorm = run ? cJSON_GetObjectItem(run, "renormalize_logits") : NULL;
    cJSON_DeleteItemFromObject(cfg, "renormalize_logits");
    if (!rc && renorm && !cJSON_AddItemToObject(cfg, "renormalize_logits", cJSON_Duplicate(renorm, 1))) rc = -1;
    char *out = rc ? NULL : cJSON_Print(cfg);
    snprintf(p, sizeof p, "%s/config.json", dst);
    rc = out ? test_write_text(p, out) : -1;
    free(out);
    cJSON_Delete(cfg);
    return rc;
}

/* ---------------------------------------------------------------- vision cases (ViT, ViViT) */

double test_patch_case(const char *dir) { return test_unfold_case(dir, 0.0f); }

double test_unfold_case(const char *dir, float bump) {
    char p[1200];
    snprintf(p, sizeof p, "%s/case.safetensors", dir);
    tf_st_file *f = tf_st_open(p);
    tf_arena *a = tf_arena_new(0);
    tf_ctx *ctx = tf_ctx_new(1);
    double worst = -1;
    tf_tensor *src[3] = {f ? test_st_tensor(f, "x", a) : NULL, f ? test_st_tensor(f, "weight", a) : NULL,
                         f && tf_st_find(f, "bias") ? test_st_tensor(f, "bias", a) : NULL};
    tf_tensor *r = f ? test_st_tensor(f, "r", a) : NULL, *want = f ? test_st_tensor(f, "out", a) : NULL, *leaf[3] = {0};
    tf_tensor *sp = f && tf_st_find(f, "stride_padding") ? test_st_tensor(f, "stride_padding", a) : NULL;  // I32 (2)
    for (int i = 0; i < 3 && src[i]; i++) { /* leaves of the context that track gradients, holding the file's values */
        leaf[i] = tf_tensor_new(ctx, TF_DTYPE_F32, src[i]->ndim, src[i]->shape, 1);
        memcpy(leaf[i]->data, src[i]->data, (size_t)tf_numel(src[i]) * sizeof(float));
    }
    if (leaf[1]) tf_f32(leaf[1])[0] += bump;
    tf_tensor *y = !leaf[0] || !leaf[1] || !r || !want || (sp && tf_numel(sp) != 2) ? NULL
                   : sp ? tf_conv2d(ctx, leaf[0], leaf[1], leaf[2], tf_i32(sp)[0], tf_i32(sp)[1])
                        : tf_patch_embed(ctx, leaf[0], leaf[1], leaf[2]);
    if (y && tf_numel(y) == tf_numel(want) && tf_backward(ctx, y, r) == 0) {
        worst = test_max_abs_diff(tf_f32(y), tf_f32(want), tf_numel(y));
        static const char *const GRADS[3] = {"grad_x", "grad_weight", "grad_bias"};
        for (int i = 0; i < 3 && leaf[i]; i++) {
            tf_tensor *g = test_st_tensor(f, GRADS[i], a);
            double e = g && tf_numel(g) == tf_numel(leaf[i]) ? test_rel_err(leaf[i]->grad, tf_f32(g), (long)tf_numel(g))
                                                             : INFINITY;
            if (!(e <= worst)) worst = e;
        }
    }
    tf_ctx_free(ctx);
    tf_arena_free(a);
    tf_st_close(f);
    return worst;
}

static int is_model_case(const char *dir) {
    char p[1400];
    snprintf(p, sizeof p, "%s/config.json", dir);
    return access(p, F_OK) == 0;
}

/* ---------------------------------------------------------------- image files */

static void put32(unsigned char *p, uint32_t v) {
    p[0] = (unsigned char)(v >> 24), p[1] = (unsigned char)(v >> 16), p[2] = (unsigned char)(v >> 8), p[3] = (unsigned char)v;
}

int test_write_idx_set(const char *dir, const char *split, int n_img, int side, int classes,
                       unsigned char (*pixel)(int i, int c, int y, int x)) {
    size_t n = 16 + (size_t)n_img * side * side;
    unsigned char *img = malloc(n), *lab = malloc(8 + (size_t)n_img);
    if (!img || !lab) return free(img), free(lab), -1;
    put32(img, 0x803), put32(img + 4, (uint32_t)n_img), put32(img + 8, (uint32_t)side), put32(img + 12, (uint32_t)side);
    put32(lab, 0x801), put32(lab + 4, (uint32_t)n_img);
    for (int i = 0; i < n_img; i++) {
        lab[8 + i] = (unsigned char)(i % classes);
        for (int p = 0; p < side * side; p++)
            img[16 + (size_t)i * side * side + (size_t)p] = pixel(i, i % classes, p / side, p % side);
    }
    char path[512];
    snprintf(path, sizeof path, "%s/%s-images-idx3-ubyte", dir, split);
    FILE *f = fopen(path, "wb");
    int rc = !f || fwrite(img, 1, n, f) != n;
    if (f) rc |= fclose(f) != 0;
    snprintf(path, sizeof path, "%s/%s-labels-idx1-ubyte", dir, split);
    f = fopen(path, "wb");
    rc |= !f || fwrite(lab, 1, 8 + (size_t)n_img, f) != 8 + (size_t)n_img;
    if (f) rc |= fclose(f) != 0;
    free(img), free(lab);
    return rc ? -1 : 0;
}

int test_write_grey_png(const char *path, const unsigned char *pixels, int w, int h) {
    FILE *f = fopen(path, "wb");
    png_structp p = png_create_write_struct(PNG_LIBPNG_VER_STRING, NULL, NULL, NULL);
    png_infop info = p ? png_create_info_struct(p) : NULL;
    if (!f || !info || setjmp(png_jmpbuf(p))) {
        if (p) png_destroy_write_struct(&p, info ? &info : NULL);
        if (f) fclose(f);
        return -1;
    }
    png_init_io(p, f);
    png_set_IHDR(p, info, (png_uint_32)w, (png_uint_32)h, 8, PNG_COLOR_TYPE_GRAY, PNG_INTERLACE_NONE,
                 PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
    png_write_info(p, info);
    for (int y = 0; y < h; y++) png_write_row(p, (png_bytep)(pixels + (size_t)y * w));
    png_write_end(p, NULL);
    png_destroy_write_struct(&p, &info);
    return fclose(f);
}

int test_hf_run_dir_stats(const char *dir, double tol, int by_rel, void (*each)(const char *path, void *arg), void *arg,
                          test_hf_dir_stats *s) {
    char *names[256], path[1200], out[] = "/tmp/tformer_hfcase_out_XXXXXX";
    int n = test_dir_entries(dir, names, 256), failed = 0;
    *s = (test_hf_dir_stats){0};
    if (test_temp_file(out)) n = -1;
    for (int i = 0; i < n; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        int v5 = !strncmp(names[i], "v5", 2);
        free(names[i]);
        if (!is_model_case(path)) continue;
        double rel = 0, d = test_hf_run_case(path, path, out, &rel), e = by_rel ? rel : d;
        if (each) each(path, arg);
        ++s->cases;
        if (rel > s->worst_rel[v5]) s->worst_rel[v5] = rel;
        if (d < 0 || d != d || !(e <= tol))
            failed += fprintf(stderr, "    %s: %s %.3g\n", path, by_rel ? "relative error" : "max |diff|", e) > 0;
        else if (d > s->worst) s->worst = d;
    }
    unlink(out);
    return n < 0 ? -1 : failed;
}

int test_hf_run_family(const char *dir, const char *family, double tol, int by_rel,
                       void (*each)(const char *path, void *arg), void *arg, int *cases) {
    test_hf_dir_stats s;
    int failed = test_hf_run_dir_stats(dir, tol, by_rel, each, arg, &s);
    printf("    %d %s cases, %d failed, worst relative L2 error %.2e", s.cases, family, failed, s.worst_rel[0]);
    if (s.worst_rel[1] > 0) printf(" (4.x), %.2e (5.x)", s.worst_rel[1]);
    printf(", worst max |diff| %.2e\n", s.worst);
    *cases = s.cases;
    return failed;
}

int test_hf_run_dir(const char *dir, double tol, void (*each)(const char *path, void *arg), void *arg, int *cases,
                    double *worst) {
    test_hf_dir_stats s;
    int failed = test_hf_run_dir_stats(dir, tol, 0, each, arg, &s);
    *cases = s.cases, *worst = s.worst;
    return failed;
}

/* ---------------------------------------------------------------- gradients */

#define MAX_GRADS 256

double test_gradient_error(const tf_params *ps, tf_tensor *extra, const char *extra_name, const tf_st_file *g,
                           tf_arena *a, const char *dir) {
    int first = extra ? 1 : 0, n = tf_params_count(ps) + first;
    double diff[MAX_GRADS], norm[MAX_GRADS], largest = 0, worst = 0;
    if (n > MAX_GRADS) return -1;
    for (int i = 0; i < n; i++) { /* extra first, then the parameters */
        tf_tensor *t = i < first ? extra : tf_params_tensor(ps, i - first);
        tf_tensor *w = test_st_tensor(g, i < first ? extra_name : tf_params_name(ps, i - first), a);
        diff[i] = INFINITY, norm[i] = 1;
        if (w && tf_numel(w) == tf_numel(t)) test_diff_norms(t->grad, tf_f32(w), tf_numel(w), &diff[i], &norm[i]);
        if (norm[i] > largest) largest = norm[i];
    }
    /* relative to its own gradient; one that is zero in exact arithmetic
     * (a key bias: softmax ignores a shift of every score) against the largest */
    for (int i = 0; i < n; i++) {
        double e = diff[i] / (norm[i] >= 1e-4 * largest ? norm[i] : largest);
        if (e > 1e-4) fprintf(stderr, "    %s: %s: %.3g\n", dir, i < first ? extra_name : tf_params_name(ps, i - first), e);
        if (!(e <= worst)) worst = e;
    }
    return worst;
}

/* dir's gradients.safetensors against ps's gradients of the loss that run
 * computes on dir's input.safetensors (and of *extra, an input it returns
 * there when it has one, named extra_name). */
static double gradient_frame(const char *dir, tf_params *ps, const char *extra_name, int *n_tensors,
                             tf_tensor *(*run)(tf_ctx *ctx, const tf_st_file *in, tf_arena *a, void *arg,
                                               tf_tensor **extra),
                             void *arg) {
    char p[1300];
    snprintf(p, sizeof p, "%s/gradients.safetensors", dir);
    tf_st_file *g = tf_st_open(p);
    snprintf(p, sizeof p, "%s/input.safetensors", dir);
    tf_st_file *in = tf_st_open(p);
    tf_ctx *ctx = tf_ctx_new(1);
    tf_arena *a = tf_arena_new(0);
    double worst = -1;
    tf_tensor *extra = NULL, *l = NULL;
    if (g && in) {
        tf_params_zero_grad(ps);
        l = run(ctx, in, a, arg, &extra);
    }
    if (l && !tf_backward(ctx, l, NULL) && (worst = test_gradient_error(ps, extra, extra_name, g, a, dir)) >= 0)
        *n_tensors = tf_params_count(ps) + (extra ? 1 : 0);
    tf_arena_free(a);
    tf_ctx_free(ctx);
    tf_st_close(in), tf_st_close(g);
    return worst;
}

typedef struct {
    const void *model;
    test_loss_fn loss;
    test_text_loss_fn text_loss;
} loss_arg;

/* pixel_values (a copy that takes a gradient) and labels through an image model's loss */
static tf_tensor *image_loss(tf_ctx *ctx, const tf_st_file *in, tf_arena *a, void *arg, tf_tensor **extra) {
    const loss_arg *la = arg;
    tf_tensor *x = test_st_tensor(in, "pixel_values", a), *y = test_st_tensor(in, "labels", a);
    if (!x || !y) return NULL;
    tf_tensor *lx = tf_tensor_new(ctx, TF_DTYPE_F32, x->ndim, x->shape, 1);
    memcpy(lx->data, x->data, (size_t)tf_numel(x) * sizeof(float));
    *extra = lx;
    return la->loss(ctx, la->model, lx, y);
}

static tf_tensor *text_loss(tf_ctx *ctx, const tf_st_file *in, tf_arena *a, void *arg, tf_tensor **extra) {
    const loss_arg *la = arg;
    (void)extra;
    return la->text_loss(ctx, la->model, in, a);
}

int test_gradient_cases(const char *const *cases, int n, double tol, double (*one)(const char *dir, int *n_tensors)) {
    double worst = 0;
    int bad = 0, tensors = 0;
    for (int i = 0; i < n; i++) {
        double e = one(cases[i], &tensors);
        if (!(e >= 0 && e <= tol))
            bad += fprintf(stderr, "    %s: relative gradient error %g (%s)\n", cases[i], e, tf_error()) > 0;
        if (e > worst) worst = e;
    }
    printf("    every parameter (%d tensors in the last case): worst relative error %.2e\n", tensors, worst);
    return bad;
}

double test_gradient_case(const char *dir, const void *model, tf_params *ps, test_loss_fn loss, int *n_tensors) {
    loss_arg la = {model, loss, NULL};
    return gradient_frame(dir, ps, "pixel_values", n_tensors, image_loss, &la);
}

double test_text_gradient_case(const char *dir, const void *model, tf_params *ps, test_text_loss_fn loss,
                               int *n_tensors) {
    loss_arg la = {model, NULL, loss};
    return gradient_frame(dir, ps, NULL, n_tensors, text_loss, &la);
}

int test_write_image_input(const char *path, int64_t B, int channels, int size, int n_labels, int labels) {
    tf_arena *a = tf_arena_new(0);
    tf_tensor *x = tf_tensor_alloc(a, TF_DTYPE_F32, 4, (int64_t[]){B, channels, size, size}, 0);
    tf_tensor *y = tf_tensor_alloc(a, TF_DTYPE_I32, 1, (int64_t[]){B}, 0);
    tf_st_writer *w = tf_st_writer_new();
    int rc = x && y && w ? 0 : -1;
    if (!rc) {
        tf_tensor_fill_uniform(x, (uint64_t)B * 31 + (uint64_t)size, 0.0f, 1.0f);
        for (int64_t b = 0; b < B; b++) tf_i32(y)[b] = (int32_t)((b * 7 + 1) % n_labels);
        rc = tf_st_writer_add(w, "pixel_values", x) || (labels && tf_st_writer_add_as(w, "labels", y, TF_ST_I64)) ||
             tf_st_writer_save(w, path);
    }
    tf_st_writer_free(w);
    tf_arena_free(a);
    return rc;
}

tf_tensor *test_vit_loss(tf_ctx *ctx, const void *m, tf_tensor *pixels, tf_tensor *labels) {
    tf_vit_outputs o;
    return tf_vit_run(ctx, m, &(tf_vit_inputs){.pixel_values = pixels, .labels = labels}, &o) ? NULL : o.loss;
}

int test_vit_folder_matches(const tf_vit *m, const char *dir, tf_vit **back) {
    char own[300], in[300], out[300];
    snprintf(own, sizeof own, "%s/own", dir);
    snprintf(in, sizeof in, "%s/input.safetensors", dir);
    snprintf(out, sizeof out, "%s/logits.safetensors", dir);
    *back = NULL;
    if (tf_vit_save(m, own) || test_write_image_input(in, 2, m->cfg.channels, m->cfg.image_size, m->cfg.n_labels, 1) ||
        !(*back = tf_vit_load(own)) || tf_hf_run(own, in, out, NULL))
        return -1;
    tf_st_file *f = tf_st_open(in), *a = tf_st_open(out);
    tf_arena *ar = tf_arena_new(0);
    tf_ctx *ctx = tf_ctx_new(1);
    tf_vit_outputs o;
    tf_tensor *x = f ? test_st_tensor(f, "pixel_values", ar) : NULL, *got = a ? test_st_tensor(a, "logits", ar) : NULL;
    int rc = x && got && !tf_vit_run(ctx, m, &(tf_vit_inputs){.pixel_values = x}, &o) ? 0 : -1;
    if (!rc && (tf_numel(got) != tf_numel(o.logits) || memcmp(got->data, o.logits->data, (size_t)tf_numel(got) * sizeof(float))))
        rc = tf_set_error("%s: hf-run's logits differ from the model's", own);
    tf_ctx_free(ctx), tf_arena_free(ar), tf_st_close(f), tf_st_close(a);
    return rc;
}

void test_randomize_params(tf_params *ps, uint64_t seed) {
    for (int i = 0; i < tf_params_count(ps); i++) {
        tf_tensor *t = tf_params_tensor(ps, i);
        int norm = strstr(tf_params_name(ps, i), "norm") != NULL;
        tf_tensor_fill_normal(t, seed + (uint64_t)i, norm ? 0.2f : 0.4f);
        for (int64_t k = 0; norm && t->ndim == 1 && strstr(tf_params_name(ps, i), "weight") && k < tf_numel(t); k++)
            tf_f32(t)[k] += 1.0f;
    }
}
