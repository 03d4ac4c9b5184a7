/* The optimizers, clipping and schedules against PyTorch and transformers
 * (tests/ref/gen_optim_fixtures.py). SGD against torch.optim.SGD step for
 * step (momentum, Nesterov, weight decay on the matrices only, a new learning
 * rate each step): every parameter within 1e-6 after every step; a checkpoint
 * of its momentum continues the same updates; bad settings are refused.
 * AdamW against torch.optim.AdamW the same way, both moments too; clipping
 * against torch.nn.utils.clip_grad_norm_; the schedules against
 * transformers.optimization's. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "test.h"
#include "core/core_internal.h"
#include "train/train_internal.h"

#define OPT_DIR "tests/fixtures_optim"
#define TOL 1e-6
#define STEPS 5

/* SGD's and clipping's parameters are the first three, AdamW's all four */
#define N_SGD 3
#define N_ADAMW 4
static const char *const NAMES[N_ADAMW] = {"w", "b", "emb", "wide"};
static const int64_t SHAPES[N_ADAMW][3] = {{3, 4}, {4}, {5, 2, 3}, {3, 37}};
static const int NDIMS[N_ADAMW] = {2, 1, 3, 2};

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

/* The parameters (or with grads their gradients) set to the file's `prefix` tensors ("init", "grad.2", ...). */
static int set_params(tf_params *ps, const tf_st_file *f, const char *prefix, int grads) {
    char name[64];
    for (int i = 0; i < tf_params_count(ps); i++) {
        tf_tensor *p = tf_params_tensor(ps, i);
        if (!strcmp(tf_params_name(ps, i), "big")) continue; /* clipping's: from a formula */
        snprintf(name, sizeof name, "%s.%s", prefix, tf_params_name(ps, i));
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
    for (int i = 0; i < tf_params_count(ps) && worst >= 0; i++) {
        snprintf(name, sizeof name, "after.%d.%s", s, NAMES[i]);
        tf_tensor *want = test_st_tensor(f, name, a), *p = tf_params_get(ps, NAMES[i]);
        double d = want ? test_max_abs_diff(tf_f32(p), tf_f32(want), tf_numel(want)) : -1;
        worst = d < 0 || d > worst ? d : worst;
    }
    tf_arena_free(a);
    return worst;
}

/* The first n of NAMES, and with big clipping's "big" (BIG elements) after them. */
#define BIG 70001
static tf_params *make_params_big(int n, int big) {
    tf_params *ps = tf_params_new();
    static tf_tensor *slots[N_ADAMW + 1];
    for (int i = 0; ps && i < n; i++)
        if (tf_params_add(ps, NAMES[i], &slots[i], NDIMS[i], SHAPES[i], 1.0f)) return tf_params_free(ps), NULL;
    if (ps && big && tf_params_add(ps, "big", &slots[N_ADAMW], 1, (int64_t[]){BIG}, 1.0f))
        return tf_params_free(ps), NULL;
    if (ps && tf_params_init(ps, 1)) return tf_params_free(ps), NULL;
    return ps;
}

static tf_params *make_params(int n) { return make_params_big(n, 0); }

/* Steps [from, STEPS) of case k on o; the worst difference, -1 on failure. */
static double run_steps(tf_optim *o, tf_params *ps, const tf_st_file *f, int from) {
    tf_arena *a = tf_arena_new(0);
    tf_tensor *lr = test_st_tensor(f, "lr", a);
    double worst = lr ? 0 : -1;
    char prefix[32];
    for (int s = from; s < STEPS && worst >= 0; s++) {
        snprintf(prefix, sizeof prefix, "grad.%d", s);
        if (set_params(ps, f, prefix, 1)) worst = -1;
        if (worst < 0) break;
        tf_optim_step(o, tf_f32(lr)[s]);
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
        tf_params *ps = make_params(N_SGD);
        CHECK(f && ps && set_params(ps, f, "init", 0) == 0);
        tf_optim *o = tf_sgd_new(ps, CASES[k].cfg);
        CHECK(o != NULL);
        double d = run_steps(o, ps, f, 0);
        printf("    %-20s %d steps, max |param - torch| %.2e\n", CASES[k].name, STEPS, d);
        CHECKF(d >= 0 && d <= TOL, "%s: %.3g", CASES[k].name, d);
        overall = d > overall ? d : overall;
        /* a wrong setting must not pass: Nesterov flipped (or momentum where there is none) */
        tf_sgd_config wrong = CASES[k].cfg;
        if (wrong.momentum > 0) wrong.nesterov = !wrong.nesterov;
        else wrong.weight_decay *= 0.5f;
        tf_optim_free(o);
        CHECK(set_params(ps, f, "init", 0) == 0 && (o = tf_sgd_new(ps, wrong)) != NULL);
        double w = run_steps(o, ps, f, 0);
        CHECKF(w > 100 * TOL, "%s: a wrong setting passes (%.3g)", CASES[k].name, w);
        tf_optim_free(o), tf_params_free(ps), tf_st_close(f);
    }
    printf("    worst %.2e\n", overall);
}

/* Two steps, a save, a new optimizer loading it: the last three steps as torch's. */
TEST(sgd_momentum_survives_a_checkpoint) {
    tf_st_file *f = tf_st_open(OPT_DIR "/sgd_nesterov.safetensors");
    tf_params *ps = make_params(N_SGD);
    CHECK(f && ps && set_params(ps, f, "init", 0) == 0);
    tf_optim *o = tf_sgd_new(ps, CASES[1].cfg);
    tf_arena *a = tf_arena_new(0);
    tf_tensor *lr = test_st_tensor(f, "lr", a);
    CHECK(o && lr);
    for (int s = 0; s < 2; s++) {
        char prefix[32];
        snprintf(prefix, sizeof prefix, "grad.%d", s);
        CHECK(set_params(ps, f, prefix, 1) == 0);
        tf_optim_step(o, tf_f32(lr)[s]);
    }
    char path[] = "/tmp/tformer_sgd_XXXXXX";
    CHECK(test_temp_file(path) == 0);
    tf_st_writer *w = tf_st_writer_new();
    CHECK(w && tf_optim_save(o, w) == 0 && tf_st_writer_save(w, path) == 0);
    tf_st_writer_free(w), tf_optim_free(o);
    tf_st_file *ck = tf_st_open(path);
    CHECK(ck && tf_st_find(ck, "sgd.momentum.emb") && !tf_st_find(ck, "adam.m.emb"));
    o = tf_sgd_new(ps, CASES[1].cfg);
    CHECK(o && tf_optim_load(o, ck, 2) == 0);
    double d = run_steps(o, ps, f, 2);
    printf("    resumed after 2 of %d steps: max |param - torch| %.2e\n", STEPS, d);
    CHECK(d >= 0 && d <= TOL);
    tf_optim_free(o), tf_st_close(ck), unlink(path), tf_arena_free(a), tf_params_free(ps), tf_st_close(f);
}

TEST(sgd_bad_settings_are_refused) {
    tf_params *ps = make_params(N_SGD);
    CHECK(ps != NULL);
    CHECK(!tf_sgd_new(ps, (tf_sgd_config){0.0f, 0.1f, 1}) && strstr(tf_error(), "nesterov"));
    CHECK(!tf_sgd_new(ps, (tf_sgd_config){-0.5f, 0.1f, 0}) && strstr(tf_error(), "momentum"));
    tf_train_config c = tf_train_config_default();
    c.optimizer = TF_OPTIM_SGD, c.nesterov = 1, c.momentum = 0;
    CHECK(tf_train_config_check(&c) != 0 && strstr(tf_error(), "nesterov"));
    tf_params_free(ps);
}

/* ---------------------------------------------------------------- AdamW */

/* torch.optim.AdamW given the settings tformer holds (floats: beta2 0.999 is
 * 0.99900001287), weight decay 0 for the vectors, a new learning rate each
 * step: the parameters (relative to max(|w|, 1)), m and v (relative to each
 * tensor's largest) within TOL after each of 5 steps, on whichever kernel set
 * runs (make test-variants: each). */

static const char *const ADAMW_CASES[] = {"adamw_defaults", "adamw_gpt2_wd", "adamw_big_eps", "adamw_no_wd"};

/* The worst |got - want| / max(|want|, floor) over the file's tensors `prefix`.<name>
 * against got[i] (the parameters' values, or a moment); floor < 0: relative to the
 * tensor's largest |want| times -floor; -1 when one is missing. */
static double rel_diff(const tf_st_file *f, const char *prefix, float *const *got, int n, double floor) {
    char name[64];
    double worst = 0;
    tf_arena *a = tf_arena_new(0);
    for (int i = 0; i < n && worst >= 0; i++) {
        snprintf(name, sizeof name, "%s.%s", prefix, NAMES[i]);
        tf_tensor *want = test_st_tensor(f, name, a);
        if (!want) worst = -1;
        double scale = 0;
        for (int64_t k = 0; want && floor < 0 && k < tf_numel(want); k++) scale = fmax(scale, -floor * fabs(tf_f32(want)[k]));
        for (int64_t k = 0; want && k < tf_numel(want); k++) {
            double w = tf_f32(want)[k], d = fabs((double)got[i][k] - w) / fmax(fabs(w), floor < 0 ? scale : floor);
            worst = d > worst || d != d ? d : worst;
        }
    }
    tf_arena_free(a);
    return worst;
}

/* The optimizer's moments (k 0: m, 1: v) through a save: got[i] points into *ck (close it). */
static int moments(const tf_optim *o, int n, int k, tf_st_file **ck, float **got) {
    char path[] = "/tmp/tformer_adamw_XXXXXX", name[64];
    tf_st_writer *w = tf_st_writer_new();
    int rc = test_temp_file(path) || !w || tf_optim_save(o, w) || tf_st_writer_save(w, path) || !(*ck = tf_st_open(path));
    tf_st_writer_free(w), unlink(path);
    for (int i = 0; !rc && i < n; i++) {
        snprintf(name, sizeof name, "adam.%s.%s", k ? "v" : "m", NAMES[i]);
        const tf_st_entry *e = tf_st_find(*ck, name);
        rc = !e || e->dtype != TF_ST_F32 || ((uintptr_t)e->data & 3);
        if (!rc) got[i] = (float *)e->data;
    }
    return rc ? -1 : 0;
}

/* Steps 0..STEPS-1 of the file's AdamW run: the worst relative difference of
 * the parameters, m and v (worst[0..2]) over every step; -1 on failure. */
static int adamw_run(const tf_st_file *f, tf_adamw_config cfg, double worst[3]) {
    tf_params *ps = make_params(N_ADAMW);
    tf_arena *a = tf_arena_new(0);
    tf_tensor *lr = test_st_tensor(f, "lr", a);
    tf_optim *o = ps && lr && !set_params(ps, f, "init", 0) ? tf_adamw_new(ps, cfg) : NULL;
    int rc = o ? 0 : -1;
    worst[0] = worst[1] = worst[2] = 0;
    for (int s = 0; s < STEPS && !rc; s++) {
        char prefix[32];
        snprintf(prefix, sizeof prefix, "grad.%d", s);
        if ((rc = set_params(ps, f, prefix, 1))) break;
        tf_optim_step(o, tf_f32(lr)[s]);
        float *got[N_ADAMW];
        for (int i = 0; i < N_ADAMW; i++) got[i] = tf_f32(tf_params_get(ps, NAMES[i]));
        double d[3];
        snprintf(prefix, sizeof prefix, "after.%d", s);
        d[0] = rel_diff(f, prefix, got, N_ADAMW, 1.0);
        for (int k = 0; k < 2; k++) { /* the moments relative to themselves: v is ~1e-7 with big_eps' gradients */
            tf_st_file *ck = NULL;
            snprintf(prefix, sizeof prefix, "%s.%d", k ? "v" : "m", s);
            d[1 + k] = moments(o, N_ADAMW, k, &ck, got) ? -1 : rel_diff(f, prefix, got, N_ADAMW, -1.0);
            tf_st_close(ck);
        }
        for (int j = 0; j < 3; j++) {
            if (d[j] < 0) rc = -1;
            worst[j] = d[j] > worst[j] || d[j] != d[j] ? d[j] : worst[j];
        }
    }
    tf_optim_free(o), tf_arena_free(a), tf_params_free(ps);
    return rc;
}

TEST(adamw_matches_torch_step_for_step) {
    double overall[3] = {0};
    for (size_t c = 0; c < sizeof ADAMW_CASES / sizeof *ADAMW_CASES; c++) {
        char path[256];
        snprintf(path, sizeof path, OPT_DIR "/%s.safetensors", ADAMW_CASES[c]);
        tf_st_file *f = tf_st_open(path);
        tf_arena *a = tf_arena_new(0);
        tf_tensor *k = f ? test_st_tensor(f, "config", a) : NULL;
        CHECK(k && tf_numel(k) == 4);
        tf_adamw_config cfg = {tf_f32(k)[0], tf_f32(k)[1], tf_f32(k)[2], tf_f32(k)[3]};
        double w[3];
        CHECK(adamw_run(f, cfg, w) == 0);
        printf("    %-16s %d steps (%s): params %.2e, m %.2e, v %.2e\n", ADAMW_CASES[c], STEPS, tf_kernels_info(),
               w[0], w[1], w[2]);
        for (int j = 0; j < 3; j++) {
            CHECKF(w[j] <= TOL, "%s: %s %.3g", ADAMW_CASES[c], j ? j > 1 ? "v" : "m" : "params", w[j]);
            overall[j] = w[j] > overall[j] ? w[j] : overall[j];
        }
        /* a wrong setting must not pass: beta2 nearer 1 (v and its bias correction) */
        tf_adamw_config wrong = cfg;
        wrong.beta2 = 1.0f - (1.0f - cfg.beta2) * 0.5f;
        CHECK(adamw_run(f, wrong, w) == 0);
        CHECKF(w[0] > 10 * TOL && w[2] > 100 * TOL, "%s: a wrong beta2 passes (%.3g, %.3g)", ADAMW_CASES[c], w[0], w[2]);
        tf_arena_free(a), tf_st_close(f);
    }
    printf("    worst: params %.2e, m %.2e, v %.2e\n", overall[0], overall[1], overall[2]);
}

/* ---------------------------------------------------------------- clipping */

/* torch.nn.utils.clip_grad_norm_ above, below and exactly at the limit: the
 * norm returned and every gradient after it within CLIP_TOL (relative; one
 * float scale, a few ulp). "big" (70001 elements: several of the norm's
 * chunks) has gradients from a formula both sides compute exactly. */
#define CLIP_TOL 3e-7

static const char *const CLIP_CASES[] = {"clip_above", "clip_below", "clip_at_limit"};

/* Case c: its worst relative difference over the gradients (*grads) and the norm (*norm); -1 on failure. */
static int clip_case(const char *name, double *grads, double *norm) {
    char path[256];
    snprintf(path, sizeof path, OPT_DIR "/%s.safetensors", name);
    tf_st_file *f = tf_st_open(path);
    tf_arena *a = tf_arena_new(0);
    tf_tensor *mx = f ? test_st_tensor(f, "max_norm", a) : NULL, *want_norm = f ? test_st_tensor(f, "norm", a) : NULL;
    tf_tensor *bs = f ? test_st_tensor(f, "big_scale", a) : NULL, *big_want = NULL, *big = NULL;
    float scale = bs ? tf_f32(bs)[0] : 0.0f;
    tf_params *ps = make_params_big(N_SGD, scale > 0);
    int rc = mx && want_norm && bs && ps && !set_params(ps, f, "grad", 1) ? 0 : -1;
    if (!rc && scale > 0) { /* the big parameter, its gradients as the script's */
        big = tf_params_get(ps, "big");
        rc = !(big_want = test_st_tensor(f, "after.big_every97", a));
        for (int64_t k = 0; !rc && k < BIG; k++) big->grad[k] = (float)((k * 7919) % 1000 - 500) / 256.0f * scale;
    }
    if (!rc) {
        double got = tf_clip_grad_norm(ps, tf_f32(mx)[0]);
        *norm = fabs(got - tf_f32(want_norm)[0]) / tf_f32(want_norm)[0];
        float *after[N_SGD];
        for (int i = 0; i < N_SGD; i++) after[i] = tf_params_get(ps, NAMES[i])->grad;
        *grads = rel_diff(f, "after", after, N_SGD, 1e-30);
        for (int64_t k = 0; big_want && *grads >= 0 && k < tf_numel(big_want); k++) {
            double w = tf_f32(big_want)[k], d = fabs(big->grad[k * 97] - w) / fmax(fabs(w), 1e-30);
            *grads = d > *grads || d != d ? d : *grads;
        }
        rc = *grads < 0 ? -1 : 0;
    }
    tf_params_free(ps), tf_arena_free(a), tf_st_close(f);
    return rc;
}

TEST(clip_grad_norm_matches_torch) {
    for (size_t c = 0; c < sizeof CLIP_CASES / sizeof *CLIP_CASES; c++) {
        double g = 0, n = 0;
        CHECK(clip_case(CLIP_CASES[c], &g, &n) == 0);
        printf("    %-14s gradients %.2e, norm %.2e (relative)\n", CLIP_CASES[c], g, n);
        CHECKF(g <= CLIP_TOL && n <= CLIP_TOL, "%s: gradients %.3g, norm %.3g", CLIP_CASES[c], g, n);
    }
}

/* The trainer's step folds the clip's factor into the optimizer (tf_optim_step_scaled): weights and
 * moments equal, to the bit, to clipping first (tf_clip_grad_norm, its pass over the gradients) and then
 * stepping, for AdamW and SGD with momentum, over three steps with the clip active (factor < 1). */
TEST(clip_folded_into_the_step_equals_clipping_first) {
    for (int sgd = 0; sgd < 2; sgd++) {
        tf_params *ps[2];
        tf_tensor *w[2], *b[2];
        tf_optim *o[2];
        for (int k = 0; k < 2; k++) {
            ps[k] = tf_params_new();
            CHECK(ps[k] && tf_params_add(ps[k], "w", &w[k], 2, (int64_t[]){37, 29}, 0.5f) == 0 &&
                  tf_params_add(ps[k], "b", &b[k], 1, (int64_t[]){29}, 0.5f) == 0 && tf_params_init(ps[k], 3) == 0);
            o[k] = sgd ? tf_sgd_new(ps[k], (tf_sgd_config){0.9f, 0.01f, 1})
                       : tf_adamw_new(ps[k], (tf_adamw_config){0.9f, 0.95f, 1e-8f, 0.1f});
            CHECK(o[k] != NULL);
        }
        for (int step = 0; step < 3; step++) {
            uint64_t rng = 11 + (uint64_t)step * 7919; /* the same gradients in both */
            for (int k = 0; k < 2; k++) {
                uint64_t r = rng;
                float *g[2] = {w[k]->grad, b[k]->grad};
                int64_t n[2] = {37 * 29, 29};
                for (int j = 0; j < 2; j++)
                    for (int64_t i = 0; i < n[j]; i++) g[j][i] = (float)((int64_t)(tf_splitmix64(&r) % 2001) - 1000) / 100;
            }
            double norm0 = tf_clip_grad_norm(ps[0], 1.0);
            tf_optim_step(o[0], 1e-2f);
            double norm1 = tf_grad_norm(ps[1]);
            float s = tf_clip_factor(norm1, 1.0);
            tf_optim_step_scaled(o[1], 1e-2f, s);
            CHECK(norm0 == norm1 && s < 0.1f);
            CHECKF(!memcmp(tf_f32(w[0]), tf_f32(w[1]), 37 * 29 * sizeof(float)) &&
                       !memcmp(tf_f32(b[0]), tf_f32(b[1]), 29 * sizeof(float)),
                   "%s step %d: the weights differ from clipping first", sgd ? "SGD" : "AdamW", step);
        }
        for (int k = 0; k < 2; k++) tf_optim_free(o[k]), tf_params_free(ps[k]);
    }
}

/* ---------------------------------------------------------------- schedules */

/* tf_lr_schedule for every step of a 50-step run (lr 1e-3, min_lr 1e-4)
 * against transformers.optimization's LambdaLR rates (entry k: after k
 * scheduler steps; an HF Trainer's 0-based step k uses entry k). tformer
 * counts its warmup from 1 (lr * (i + 1) / warmup at the 0-based step i: no
 * step at lr 0, the Transformer paper's and Karpathy's build-nanogpt's), so
 * its step i is transformers' entry i + 1 for inverse_sqrt and constant; its
 * cosine decays from the 0-based step (build-nanogpt's get_lr exactly), so
 * the warmup is get_cosine_with_min_lr_schedule_with_warmup_lr_rate's (whose
 * warmup counts from 1 too) and the decay get_cosine_with_min_lr_schedule_
 * with_warmup's at the same index: the peak lr at steps warmup - 1 and
 * warmup, min_lr at step `steps` (one past the last). Without a warmup,
 * inverse_sqrt is lr / sqrt(i + 1): transformers' with timescale 1. */
#define SCHED_TOL 1e-6
#define SCHED_STEPS 50

typedef struct {
    tf_schedule kind;
    int64_t warmup;
    const char *hf;   /* the fixture's entry */
    int shift;        /* tformer's step i is entry i + shift */
    int64_t from, to; /* over tformer's steps [from, to) */
} sched_row;

static const sched_row SCHED_ROWS[] = {
    {TF_SCHEDULE_COSINE, 10, "cosine_min_lr_rate", 0, 0, 10},
    {TF_SCHEDULE_COSINE, 10, "cosine_min_lr", 0, 10, SCHED_STEPS + 1},
    {TF_SCHEDULE_COSINE, 0, "cosine_min_lr_w0", 0, 0, SCHED_STEPS + 1},
    {TF_SCHEDULE_INVERSE_SQRT, 10, "inverse_sqrt", 1, 0, SCHED_STEPS},
    {TF_SCHEDULE_INVERSE_SQRT, 0, "inverse_sqrt_w0_t1", 0, 0, SCHED_STEPS + 1},
    {TF_SCHEDULE_CONSTANT, 10, "constant_with_warmup", 1, 0, SCHED_STEPS},
};

TEST(lr_schedules_match_transformers) {
    tf_st_file *f = tf_st_open(OPT_DIR "/schedules.safetensors");
    tf_arena *a = tf_arena_new(0);
    CHECK(f && a);
    double overall = 0;
    for (size_t r = 0; r < sizeof SCHED_ROWS / sizeof *SCHED_ROWS; r++) {
        const sched_row *row = &SCHED_ROWS[r];
        tf_tensor *want = test_st_tensor(f, row->hf, a);
        CHECK(want && tf_numel(want) == SCHED_STEPS + 1);
        double worst = 0;
        for (int64_t i = row->from; i < row->to; i++) {
            float got = tf_lr_schedule(row->kind, i, row->warmup, SCHED_STEPS, 1e-3f, 1e-4f);
            double w = tf_f32(want)[i + row->shift], d = fabs(got - w) / w;
            CHECKF(d <= SCHED_TOL, "%s (warmup %lld): step %lld: %.9g, transformers' %.9g", row->hf,
                   (long long)row->warmup, (long long)i, got, w);
            worst = d > worst ? d : worst;
        }
        printf("    %-21s warmup %2lld, steps [%lld, %lld) = entries + %d: worst %.2e\n", row->hf,
               (long long)row->warmup, (long long)row->from, (long long)row->to, row->shift, worst);
        overall = worst > overall ? worst : overall;
    }
    /* the index matters: transformers' warmup at tformer's own index is a step behind */
    tf_tensor *c = test_st_tensor(f, "constant_with_warmup", a);
    CHECK(c && fabs(tf_lr_schedule(TF_SCHEDULE_CONSTANT, 3, 10, SCHED_STEPS, 1e-3f, 1e-4f) - tf_f32(c)[3]) > 1e-5);
    printf("    worst %.2e\n", overall);
    tf_arena_free(a), tf_st_close(f);
}
