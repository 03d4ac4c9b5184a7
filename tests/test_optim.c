/* SGD against torch.optim.SGD step for step (tests/ref/gen_sgd_fixtures.py:
 * momentum, Nesterov, weight decay on the matrices only, a new learning rate
 * each step): every parameter within 1e-6 after every step; a checkpoint of
 * its momentum continues the same updates; bad settings are refused. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "test.h"

#define OPT_DIR "tests/fixtures_optim"
#define TOL 1e-6
#define STEPS 5

static const char *const NAMES[3] = {"w", "b", "emb"};
static const int64_t SHAPES[3][3] = {{3, 4}, {4}, {5, 2, 3}};
static const int NDIMS[3] = {2, 1, 3};

typedef struct {
    const char *name;
    tf_sgd_config cfg; /* as the script's CASES */
} sgd_case;

static const sgd_case CASES[] = {
    {"sgd_momentum_wd", {0.9f, 0.1f, 0}},
    {"sgd_nesterov", {0.8f, 0.05f, 1}},
    {"sgd_plain_wd", {0.0f, 0.1f, 0}},
    {"sgd_momentum_no_wd", {0.5f, 0.0f, 0}},
};

/* The three parameters set to the file's `prefix` tensors ("init", "after.2", ...). */
static int set_params(tf_params *ps, const tf_st_file *f, const char *prefix, int grads) {
    char name[64];
    for (int i = 0; i < 3; i++) {
        tf_tensor *p = tf_params_get(ps, NAMES[i]);
        snprintf(name, sizeof name, "%s.%s", prefix, NAMES[i]);
        const tf_st_entry *e = tf_st_find(f, name);
        tf_tensor t = *p;
        if (grads) t.data = p->grad;
        if (!e || tf_st_read_f32(f, e, &t)) return -1;
    }
    return 0;
}

/* Max |param - torch's| after step s (-1 when the file lacks it). */
static double step_diff(tf_params *ps, const tf_st_file *f, int s) {
    char name[64];
    double worst = 0;
    tf_arena *a = tf_arena_new(0);
    for (int i = 0; i < 3 && worst >= 0; i++) {
        snprintf(name, sizeof name, "after.%d.%s", s, NAMES[i]);
        tf_tensor *want = test_st_tensor(f, name, a), *p = tf_params_get(ps, NAMES[i]);
        double d = want ? test_max_abs_diff(tf_f32(p), tf_f32(want), tf_numel(want)) : -1;
        worst = d < 0 || d > worst ? d : worst;
    }
    tf_arena_free(a);
    return worst;
}

static tf_params *three_params(void) {
    tf_params *ps = tf_params_new();
    static tf_tensor *slots[3];
    for (int i = 0; ps && i < 3; i++)
        if (tf_params_add(ps, NAMES[i], &slots[i], NDIMS[i], SHAPES[i], 1.0f)) return tf_params_free(ps), NULL;
    if (ps && tf_params_init(ps, 1)) return tf_params_free(ps), NULL;
    return ps;
}

/* Steps [from, STEPS) of case k on o; the worst difference, -1 on failure. */
static double run_steps(tf_adamw *o, tf_params *ps, const tf_st_file *f, int from) {
    tf_arena *a = tf_arena_new(0);
    tf_tensor *lr = test_st_tensor(f, "lr", a);
    double worst = lr ? 0 : -1;
    char prefix[32];
    for (int s = from; s < STEPS && worst >= 0; s++) {
        snprintf(prefix, sizeof prefix, "grad.%d", s);
        if (set_params(ps, f, prefix, 1)) worst = -1;
        if (worst < 0) break;
        tf_adamw_step(o, tf_f32(lr)[s]);
        double d = step_diff(ps, f, s);
        worst = d < 0 || d > worst ? d : worst;
    }
    tf_arena_free(a);
    return worst;
}

TEST(sgd_matches_torch_step_for_step) {
    double overall = 0;
    for (size_t k = 0; k < sizeof CASES / sizeof *CASES; k++) {
        char path[256];
        snprintf(path, sizeof path, OPT_DIR "/%s.safetensors", CASES[k].name);
        tf_st_file *f = tf_st_open(path);
        tf_params *ps = three_params();
        CHECK(f && ps && set_params(ps, f, "init", 0) == 0);
        tf_adamw *o = tf_sgd_new(ps, CASES[k].cfg);
        CHECK(o != NULL);
        double d = run_steps(o, ps, f, 0);
        printf("    %-20s %d steps, max |param - torch| %.2e\n", CASES[k].name, STEPS, d);
        CHECKF(d >= 0 && d <= TOL, "%s: %.3g", CASES[k].name, d);
        overall = d > overall ? d : overall;
        /* a wrong setting must not pass: Nesterov flipped (or momentum where there is none) */
        tf_sgd_config wrong = CASES[k].cfg;
        if (wrong.momentum > 0) wrong.nesterov = !wrong.nesterov;
        else wrong.weight_decay *= 0.5f;
        tf_adamw_free(o);
        CHECK(set_params(ps, f, "init", 0) == 0 && (o = tf_sgd_new(ps, wrong)) != NULL);
        double w = run_steps(o, ps, f, 0);
        CHECKF(w > 100 * TOL, "%s: a wrong setting passes (%.3g)", CASES[k].name, w);
        tf_adamw_free(o), tf_params_free(ps), tf_st_close(f);
    }
    printf("    worst %.2e\n", overall);
}

/* Two steps, a save, a new optimizer loading it: the last three steps as torch's. */
TEST(sgd_momentum_survives_a_checkpoint) {
    tf_st_file *f = tf_st_open(OPT_DIR "/sgd_nesterov.safetensors");
    tf_params *ps = three_params();
    CHECK(f && ps && set_params(ps, f, "init", 0) == 0);
    tf_adamw *o = tf_sgd_new(ps, CASES[1].cfg);
    tf_arena *a = tf_arena_new(0);
    tf_tensor *lr = test_st_tensor(f, "lr", a);
    CHECK(o && lr);
    for (int s = 0; s < 2; s++) {
        char prefix[32];
        snprintf(prefix, sizeof prefix, "grad.%d", s);
        CHECK(set_params(ps, f, prefix, 1) == 0);
        tf_adamw_step(o, tf_f32(lr)[s]);
    }
    char path[] = "/tmp/tformer_sgd_XXXXXX";
    CHECK(test_temp_file(path) == 0);
    tf_st_writer *w = tf_st_writer_new();
    CHECK(w && tf_adamw_save(o, w) == 0 && tf_st_writer_save(w, path) == 0);
    tf_st_writer_free(w), tf_adamw_free(o);
    tf_st_file *ck = tf_st_open(path);
    CHECK(ck && tf_st_find(ck, "sgd.momentum.emb") && !tf_st_find(ck, "adam.m.emb"));
    o = tf_sgd_new(ps, CASES[1].cfg);
    CHECK(o && tf_adamw_load(o, ck, 2) == 0);
    double d = run_steps(o, ps, f, 2);
    printf("    resumed after 2 of %d steps: max |param - torch| %.2e\n", STEPS, d);
    CHECK(d >= 0 && d <= TOL);
    tf_adamw_free(o), tf_st_close(ck), unlink(path), tf_arena_free(a), tf_params_free(ps), tf_st_close(f);
}

TEST(sgd_bad_settings_are_refused) {
    tf_params *ps = three_params();
    CHECK(ps != NULL);
    CHECK(!tf_sgd_new(ps, (tf_sgd_config){0.0f, 0.1f, 1}) && strstr(tf_error(), "nesterov"));
    CHECK(!tf_sgd_new(ps, (tf_sgd_config){-0.5f, 0.1f, 0}) && strstr(tf_error(), "momentum"));
    tf_train_config c = tf_train_config_default();
    c.optimizer = TF_OPTIM_SGD, c.nesterov = 1, c.momentum = 0;
    CHECK(tf_train_config_check(&c) != 0 && strstr(tf_error(), "nesterov"));
    tf_params_free(ps);
}
