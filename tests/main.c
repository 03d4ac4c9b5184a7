/* Test runner: runs every registered test (or those whose names start with
 * the arguments) and ends with the line "N passed, N failed". */
#include <dirent.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cairo.h>

#include "test.h"

typedef struct {
    const char *name;
    tf_test_fn fn;
} test_entry;

/* Every registered test: the array grows as TEST's constructors register them (no limit);
 * a registration that cannot be kept ends the runner before any test runs. */
static test_entry *g_tests;
static int g_n, g_room, g_failed;
static const char *g_fixtures = "tests/fixtures";

void test_register(const char *name, tf_test_fn fn) {
    if (g_n == g_room) {
        int room = g_room ? 2 * g_room : 256;
        test_entry *t = realloc(g_tests, (size_t)room * sizeof *t);
        if (!t) {
            fprintf(stderr, "run_tests: out of memory registering test %d (%s)\n", g_n + 1, name);
            exit(2);
        }
        g_tests = t, g_room = room;
    }
    g_tests[g_n++] = (test_entry){name, fn};
}

void test_fail(const char *file, int line, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "    %s:%d: ", file, line);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    g_failed = 1;
}

int test_failed(void) { return g_failed; }
const char *test_fixture_dir(void) { return g_fixtures; }

double test_rel_err(const float *a, const float *b, long n) {
    double d = 0.0, r = 0.0;
    for (long i = 0; i < n; i++) {
        double e = (double)a[i] - b[i];
        d += e * e;
        r += (double)b[i] * b[i];
    }
    if (d != d) return INFINITY; /* NaN */
    return r > 0 ? sqrt(d / r) : sqrt(d);
}

double test_max_diff_at(const tf_tensor *piece, const tf_tensor *full, int64_t at) {
    int64_t B = piece->shape[0], Tp = piece->shape[1], C = piece->shape[2], T = full->shape[1];
    double worst = 0;
    for (int64_t b = 0; b < B; b++)
        for (int64_t i = 0; i < Tp * C; i++) {
            double d = fabs((double)tf_f32(piece)[b * Tp * C + i] - tf_f32(full)[(b * T + at) * C + i]);
            worst = d > worst ? d : worst;
        }
    return worst;
}

/* Every role a test's self-attention block may have, under short names (rows a block does not use are skipped). */
static const tf_block_name TEST_BLOCK_ROWS[] = {
    {TF_BP_QKV_W, "qkv.w"}, {TF_BP_QKV_B, "qkv.b"}, {TF_BP_OUT_W, "o.w"}, {TF_BP_OUT_B, "o.b"},
    {TF_BP_NORM_ATTN_W, "n1.w"}, {TF_BP_NORM_ATTN_B, "n1.b"}, {TF_BP_FF_IN_W, "f1.w"}, {TF_BP_FF_IN_B, "f1.b"},
    {TF_BP_FF_OUT_W, "f2.w"}, {TF_BP_FF_OUT_B, "f2.b"}, {TF_BP_NORM_FF_W, "n3.w"}, {TF_BP_NORM_FF_B, "n3.b"},
    {TF_BP_SSMAX, "s"}};

int test_two_blocks_new(tf_params *ps, tf_block bl[2], const tf_block_config *c) {
    tf_block_names n = {TEST_BLOCK_ROWS, (int)(sizeof TEST_BLOCK_ROWS / sizeof *TEST_BLOCK_ROWS)};
    for (int l = 0; l < 2; l++) {
        char p[16];
        snprintf(p, sizeof p, "l%d.", l);
        if (tf_block_register(ps, p, &bl[l], c, &n, (tf_block_init){0.3f, 0.2f, 0})) return -1;
    }
    return tf_params_init(ps, 8);
}

tf_tensor *test_two_blocks(tf_ctx *ctx, const tf_block bl[2], const tf_block_config *c, tf_tensor *x, tf_kv_cache *kv) {
    tf_block_args a = {.cache = kv};
    for (int l = 0; l < 2; l++) a.layer = l, x = tf_block_forward(ctx, &bl[l], c, x, &a);
    return x;
}

double test_two_blocks_cached(tf_ctx *ctx, const tf_block bl[2], const tf_block_config *c, tf_tensor *x,
                              const tf_tensor *full) {
    int64_t B = x->shape[0], T = x->shape[1];
    tf_kv_cache *kv = tf_kv_cache_new(2, (int)B, c->n_head, c->d_model / c->n_head, (int)T);
    int pieces[3] = {3, 1, 4}, at = 0;
    double worst = kv && T == 8 ? 0 : -1;
    for (int k = 0; k < 3 && worst >= 0; k++) {
        tf_tensor *y = test_two_blocks(ctx, bl, c, tf_narrow(ctx, x, 1, at, pieces[k]), kv);
        if (!y || tf_kv_cache_advance(kv, pieces[k])) worst = -1;
        else worst = fmax(worst, test_max_diff_at(y, full, at));
        at += pieces[k];
    }
    tf_kv_cache_free(kv);
    return worst;
}

char *test_slurp(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *b = n >= 0 ? malloc((size_t)n + 1) : NULL;
    if (b && fread(b, 1, (size_t)n, f) != (size_t)n) n = 0;
    fclose(f);
    if (b) b[n] = 0;
    *len = n > 0 ? (size_t)n : 0;
    return b;
}

static int by_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

const char *test_tformer_bin(void) {
    const char *b = getenv("TFORMER_BIN");
    return b ? b : "build/tformer";
}

/* Whether line (len bytes) is a start-up line: a verb that loads a model ("tformer VERB: FAMILY model from DIR/;
 * ...; float32, avx2 kernels...", cli_say) or another verb's (cli_say_plain), known by a phrase of its verb's. */
static int is_said(const char *line, size_t len) {
    static const char *const SAID[][2] = {
        {"", " model from "}, {"encode: tokenizer ", ""}, {"decode: tokenizer ", ""}, {"bleu: BLEU of ", ""},
        {"bleu: BLEU and chrF2 of ", ""}, {"bleu: chrF2 of ", ""}, {"tokenizer-train: ", " (--type: "},
        {"inspect: ", "(--json"}, {"compare: each tensor of ", ""}, {"convert: ", "(the conversion chosen by "},
        {"torch-run: ", " kernels"}, {"serve: ", " kernels"}};
    char copy[8192];
    if (len >= sizeof copy || strncmp(line, "tformer ", 8)) return 0;
    memcpy(copy, line, len), copy[len] = 0;
    for (size_t i = 0; i < sizeof SAID / sizeof *SAID; i++)
        if (!strncmp(copy + 8, SAID[i][0], strlen(SAID[i][0])) && strstr(copy, SAID[i][1]) &&
            (i || strstr(copy, " kernels")))
            return 1;
    return 0;
}

/* The start-up lines taken out of out: the tests of what a verb prints compare the rest exactly, and
 * tests/test_cli_said.c checks those lines. */
static void drop_said(char *out) {
    for (char *line = out; *line;) {
        char *end = strchr(line, '\n');
        size_t len = end ? (size_t)(end - line) + 1 : strlen(line);
        if (is_said(line, len)) memmove(line, line + len, strlen(line + len) + 1);
        else line += len;
    }
}

int test_run_cli(const char *env, const char *args, char *out, size_t n) {
    size_t len = strlen(env) + strlen(test_tformer_bin()) + strlen(args) + 128;
    char *cmd = malloc(len), log[] = "/tmp/tformer_cli_log_XXXXXX";
    if (!cmd || test_temp_file(log)) return free(cmd), -1;
    snprintf(cmd, len, "%s %s %s > %s 2>&1", env, test_tformer_bin(), args, log);
    int st = system(cmd);
    free(cmd);
    FILE *f = fopen(log, "r");
    size_t k = f ? fread(out, 1, n - 1, f) : 0;
    out[k] = 0;
    if (f) fclose(f);
    unlink(log);
    drop_said(out);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + (WIFSIGNALED(st) ? WTERMSIG(st) : 0);
}

int test_cli_cases(const test_cli_case *cases, size_t n_cases, const char *dir, char *why, size_t n) {
    char args[1024], out[8192];
    for (size_t i = 0; i < n_cases; i++) {
        int k = snprintf(args, sizeof args, cases[i].args, dir, dir);
        snprintf(args + k, sizeof args - (size_t)k, " < /dev/null");
        int rc = test_run_cli("", args, out, sizeof out);
        if (rc != cases[i].rc || !strstr(out, cases[i].expect))
            return snprintf(why, n, "%s: exit %d (expected %d), %s", args, rc, cases[i].rc, out), -1;
    }
    return 0;
}

int test_popen(const char *cmd, char *out, size_t n) {
    FILE *p = popen(cmd, "r");
    if (!p) return -1;
    size_t k = fread(out, 1, n - 1, p);
    out[k] = 0;
    int st = pclose(p);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

int test_said_line(const char *args, char *line, size_t n) {
    size_t len = strlen(test_tformer_bin()) + strlen(args) + 32;
    char *cmd = malloc(len);
    if (!cmd) return -1;
    snprintf(cmd, len, "%s %s 2>&1 >/dev/null", test_tformer_bin(), args);
    int rc = test_popen(cmd, line, n);
    free(cmd);
    line[strcspn(line, "\n")] = 0;
    return rc;
}

const char *test_path_in(const char *dir, const char *name) {
    static char p[4][512];
    static int k;
    k = (k + 1) % 4;
    snprintf(p[k], sizeof p[k], "%s/%s", dir, name);
    return p[k];
}

int test_same_bytes(const char *path_a, const char *path_b) {
    size_t na, nb;
    char *x = test_slurp(path_a, &na), *y = test_slurp(path_b, &nb);
    int same = x && y && na == nb && !memcmp(x, y, na);
    free(x), free(y);
    return same;
}

int test_same_file(const char *a, const char *b, const char *name) {
    return test_same_bytes(test_path_in(a, name), test_path_in(b, name));
}

int test_cp_weights(const char *from_dir, const char *dir) {
    size_t n;
    char *w = test_slurp(test_path_in(from_dir, "model.safetensors"), &n);
    int rc = w ? test_write_file(test_path_in(dir, "model.safetensors"), w, n) : -1;
    free(w);
    return rc;
}

int test_edit_config(const char *dir, const char *from, const char *to) {
    const char *path = test_path_in(dir, "config.json");
    size_t n;
    char *text = test_slurp(path, &n), *out = text ? test_replaced(text, from, to) : NULL;
    int rc = out ? test_write_text(path, out) : -1;
    free(text), free(out);
    return rc;
}

void test_rm_rf(const char *dir) {
    char cmd[512];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd)) fprintf(stderr, "    cannot remove %s\n", dir);
}

int test_temp_file(char *path) {
    int fd = mkstemp(path);
    if (fd < 0) return -1;
    close(fd);
    return 0;
}

int test_png_size(const char *path, int *w, int *h) {
    static const unsigned char SIG[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
    size_t n;
    char *data = test_slurp(path, &n);
    int ok = data && n > 8 && !memcmp(data, SIG, 8);
    free(data);
    if (!ok) return -1;
    cairo_surface_t *s = cairo_image_surface_create_from_png(path);
    ok = cairo_surface_status(s) == CAIRO_STATUS_SUCCESS;
    *w = ok ? cairo_image_surface_get_width(s) : 0, *h = ok ? cairo_image_surface_get_height(s) : 0;
    cairo_surface_destroy(s);
    return ok ? 0 : -1;
}

int test_dir_entries(const char *dir, char **names, int max) {
    DIR *d = opendir(dir);
    if (!d) return -1;
    int n = 0;
    for (struct dirent *e; (e = readdir(d)) && n < max;)
        if (e->d_name[0] != '.') names[n++] = strdup(e->d_name);
    closedir(d);
    qsort(names, (size_t)n, sizeof *names, by_str);
    return n;
}

/* The runner holds every test the sources define: each line of a tests/ C file that starts with
 * "TEST(" is one registered test (the count a fixed-size table would silently cut). */
TEST(runner_registers_every_test) {
    char *names[256];
    int n = test_dir_entries("tests", names, 256), defined = 0;
    CHECKF(n > 0 && n < 256, "tests/ holds %d entries", n);
    for (int i = 0; i < n; i++) {
        size_t len = strlen(names[i]);
        if (len > 2 && !strcmp(names[i] + len - 2, ".c")) {
            char path[512], line[4096];
            snprintf(path, sizeof path, "tests/%s", names[i]);
            FILE *f = fopen(path, "r");
            CHECKF(f != NULL, "cannot read %s", path);
            while (f && fgets(line, sizeof line, f))
                if (!strncmp(line, "TEST(", 5)) defined++;
            if (f) fclose(f);
        }
        free(names[i]);
    }
    CHECKF(defined > 300 && defined == g_n, "%d tests defined in tests/*.c, %d registered", defined, g_n);
}

static int by_name(const void *a, const void *b) {
    return strcmp(((const test_entry *)a)->name, ((const test_entry *)b)->name);
}

int main(int argc, char **argv) {
    int first = 1;
    if (argc > 2 && !strcmp(argv[1], "--fixtures")) {
        g_fixtures = argv[2];
        first = 3;
    }
    qsort(g_tests, (size_t)g_n, sizeof g_tests[0], by_name);
    /* Two tests of one name would be selected and reported as one: refuse them at start-up. */
    for (int i = 1; i < g_n; i++)
        if (!strcmp(g_tests[i - 1].name, g_tests[i].name)) {
            fprintf(stderr, "run_tests: test %s registered twice\n", g_tests[i].name);
            return 2;
        }
    printf("kernels: %s; matrix products: %s\n", tf_kernels_info(), tf_blas_info());
    int passed = 0, failed = 0;
    for (int i = 0; i < g_n; i++) {
        int selected = first >= argc;
        for (int a = first; a < argc; a++)
            if (!strncmp(g_tests[i].name, argv[a], strlen(argv[a]))) selected = 1;
        if (!selected) continue;
        g_failed = 0;
        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        g_tests[i].fn();
        clock_gettime(CLOCK_MONOTONIC, &t1);
        /* TFORMER_TEST_TIMES=1 adds each test's wall time, to see where CI's minutes go */
        if (getenv("TFORMER_TEST_TIMES"))
            printf("%s %s %.2fs\n", g_failed ? "FAIL" : "ok  ", g_tests[i].name,
                   (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec));
        else
            printf("%s %s\n", g_failed ? "FAIL" : "ok  ", g_tests[i].name);
        fflush(stdout);
        if (g_failed) failed++;
        else passed++;
    }
    printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
