/* PyTorch conformance: every case folder under the fixture directory (see
 * tests/ref/gen_torch_fixtures.py) is run through tf_torch_run and compared:
 * outputs to 1e-5 and gradients to 1e-4 relative L2 error. */
#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "test.h"

#define TOL_FORWARD 1e-5
#define TOL_GRAD 1e-4


/* Compare every tensor of expected with the same name in got; returns the
 * number of failures and raises *worst_fwd / *worst_grad. */
static int compare_case(const char *name, const tf_st_file *exp, const tf_st_file *got,
                        double *worst_fwd, double *worst_grad) {
    int bad = 0;
    tf_arena *a = tf_arena_new(0);
    for (int i = 0; i < tf_st_count(exp); i++) {
        const tf_st_entry *e = tf_st_entry_at(exp, i), *g = tf_st_find(got, e->name);
        if (!g) {
            fprintf(stderr, "    %s: output lacks '%s'\n", name, e->name);
            bad++;
            continue;
        }
        tf_tensor *te = tf_st_to_tensor(exp, e, a), *tg = tf_st_to_tensor(got, g, a);
        if (!te || !tg || tf_numel(te) != tf_numel(tg) || te->ndim != tg->ndim) {
            fprintf(stderr, "    %s: '%s' shape differs\n", name, e->name);
            bad++;
            continue;
        }
        int is_grad = !strncmp(e->name, "grad.", 5);
        double err = test_rel_err(tf_f32(tg), tf_f32(te), (long)tf_numel(te));
        double *worst = is_grad ? worst_grad : worst_fwd;
        if (err > *worst) *worst = err;
        if (err > (is_grad ? TOL_GRAD : TOL_FORWARD)) {
            fprintf(stderr, "    %s: '%s' relative error %.3g\n", name, e->name, err);
            bad++;
        }
    }
    tf_arena_free(a);
    return bad;
}

TEST(torch_fixtures) {
    const char *dir = test_fixture_dir();
    char *names[1024];
    int n = test_dir_entries(dir, names, 1024);
    CHECKF(n >= 0, "cannot open fixture directory %s", dir);
    char tmpdir[] = "/tmp/tformer_fx_XXXXXX";
    CHECK(mkdtemp(tmpdir) != NULL);
    int failed_cases = 0;
    double worst_fwd = 0, worst_grad = 0;
    char p[4][1200];
    for (int i = 0; i < n; i++) {
        snprintf(p[0], sizeof p[0], "%s/%s/config.json", dir, names[i]);
        snprintf(p[1], sizeof p[1], "%s/%s/weights.safetensors", dir, names[i]);
        snprintf(p[2], sizeof p[2], "%s/%s/input.safetensors", dir, names[i]);
        snprintf(p[3], sizeof p[3], "%s/out.safetensors", tmpdir);
        if (tf_torch_run(p[0], p[1], p[2], p[3], NULL)) {
            fprintf(stderr, "    %s: torch-run failed: %s\n", names[i], tf_error());
            failed_cases++;
            continue;
        }
        snprintf(p[0], sizeof p[0], "%s/%s/expected.safetensors", dir, names[i]);
        tf_st_file *exp = tf_st_open(p[0]), *got = tf_st_open(p[3]);
        if (!exp || !got || compare_case(names[i], exp, got, &worst_fwd, &worst_grad)) failed_cases++;
        tf_st_close(exp);
        tf_st_close(got);
        unlink(p[3]);
    }
    rmdir(tmpdir);
    for (int i = 0; i < n; i++) free(names[i]);
    printf("    %d PyTorch cases from %s: worst forward error %.2e, worst gradient error %.2e\n", n,
           dir, worst_fwd, worst_grad);
    CHECKF(n > 0, "no fixture cases in %s", dir);
    CHECKF(failed_cases == 0, "%d of %d cases failed", failed_cases, n);
}
