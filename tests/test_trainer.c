/* The trainer behind the task interface, on a task that is not a language
 * model: a linear classifier of synthetic points with an accuracy metric.
 * It learns, reports its metric in losses.csv, resumes bit for bit, and a
 * loss that turns NaN stops the run with the step named. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "test.h"

/* Points x (4) in [-1,1); the label is 1 when w* . x > 0. */
typedef struct {
    tf_task base;
    tf_params *ps;
    tf_linear lin; /* (2,4) */
    int nan_after; /* > 0: the loss of that many calls on is NaN */
    int calls;
} toy_task;

static const float W_STAR[4] = {1.0f, -2.0f, 0.5f, 1.5f};

static int toy_batch(tf_task *t, tf_ctx *ctx, tf_subset subset, uint64_t key, int rows, tf_batch *b) {
    (void)t;
    tf_tensor *x = tf_tensor_new(ctx, TF_DTYPE_F32, 2, (int64_t[]){rows, 4}, 0);
    tf_tensor *y = tf_tensor_new(ctx, TF_DTYPE_I32, 1, (int64_t[]){rows}, 0);
    if (!x || !y) return -1;
    tf_tensor_fill_uniform(x, key * 2 + (uint64_t)subset + 1, -1.0f, 1.0f);
    for (int r = 0; r < rows; r++) {
        float s = 0;
        for (int i = 0; i < 4; i++) s += W_STAR[i] * tf_f32(x)[r * 4 + i];
        tf_i32(y)[r] = s > 0;
    }
    return tf_batch_set(b, "x", x) || tf_batch_set(b, "labels", y);
}

static tf_tensor *toy_loss(tf_task *t, tf_ctx *ctx, const tf_batch *b, tf_metrics *m) {
    toy_task *k = (toy_task *)t;
    tf_tensor *logits = tf_linear_forward(ctx, &k->lin, tf_batch_get(b, "x")), *y = tf_batch_get(b, "labels");
    if (!logits) return NULL;
    tf_tensor *loss = tf_cross_entropy(ctx, logits, y, -100, 0.0f);
    if (k->nan_after && ++k->calls >= k->nan_after) loss = tf_scale(ctx, loss, NAN);
    for (int64_t r = 0; m && r < y->shape[0]; r++) { /* accuracy */
        const float *l = tf_f32(logits) + 2 * r;
        m->sum[0] += (l[1] > l[0]) == tf_i32(y)[r];
        m->count[0] += 1;
    }
    return loss;
}

static tf_params *toy_params(tf_task *t) { return ((toy_task *)t)->ps; }
static int toy_signature(tf_task *t, char *out, size_t n) { return (void)t, snprintf(out, n, "toy 4->2") < 0; }

static int toy_save(tf_task *t, const char *dir) {
    char path[512];
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    return tf_params_save(((toy_task *)t)->ps, path);
}

static int64_t toy_tokens(tf_task *t, int rows) { return (void)t, rows; }
static void toy_free(tf_task *t) {
    tf_params_free(((toy_task *)t)->ps);
    free(t);
}

static const tf_task_vt TOY = {toy_batch, toy_loss, toy_params, toy_signature, toy_save, NULL, NULL, toy_tokens,
                               toy_free, NULL, NULL};

static tf_task *toy_new(int nan_after) {
    toy_task *k = calloc(1, sizeof *k);
    k->base.vt = &TOY, k->base.n_metrics = 1, k->base.metric_names[0] = "accuracy";
    k->ps = tf_params_new();
    tf_params_add(k->ps, "w", &k->lin.weight, 2, (int64_t[]){2, 4}, 0.1f);
    tf_params_add(k->ps, "b", &k->lin.bias, 1, (int64_t[]){2}, TF_INIT_ZEROS);
    tf_params_init(k->ps, 3);
    k->nan_after = nan_after;
    return &k->base;
}

static tf_train_config toy_config(void) {
    tf_train_config c = tf_train_config_default();
    c.steps = 30, c.batch = 32, c.lr = 0.1f, c.min_lr = 0.01f, c.warmup = 3, c.eval_every = 10, c.eval_batches = 4;
    c.checkpoint_every = 100, c.weight_decay = 0;
    return c;
}

static void stop_at_15(void *user, const tf_train_report *r) {
    if (r->step == 15) *(volatile int *)user = 1;
}

static char *slurp_in(const char *dir, const char *name, size_t *n) {
    char p[256];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    return test_slurp(p, n);
}

TEST(trainer_runs_any_task_with_metrics_and_resumes) {
    char a[64], b[64], cmd[200];
    snprintf(a, sizeof a, "/tmp/tformer_toy_a_%d", (int)getpid());
    snprintf(b, sizeof b, "/tmp/tformer_toy_b_%d", (int)getpid());
    tf_train_config c = toy_config();
    tf_task *t = toy_new(0);
    CHECK(tf_train(&c, t, a, 0, NULL, NULL, NULL) == 0);
    tf_task_free(t);
    size_t n;
    char *csv = slurp_in(a, "losses.csv", &n);
    CHECKF(csv && !strncmp(csv, "step,train_loss,val_loss,lr,grad_norm,val_accuracy\n", 51), "%s", csv);
    const char *last = strstr(csv, "\n30,");
    CHECK(last != NULL);
    double acc = atof(strrchr(last, ',') + 1);
    CHECKF(acc > 0.9, "validation accuracy %g after 30 steps", acc);
    /* 15 steps, a stop, then resume: the same files */
    volatile int stop = 0;
    t = toy_new(0);
    CHECK(tf_train(&c, t, b, 0, &stop, stop_at_15, (void *)&stop) == 1);
    tf_task_free(t);
    t = toy_new(0);
    CHECK(tf_train(&c, t, b, 1, NULL, NULL, NULL) == 0);
    tf_task_free(t);
    char *csv_b = slurp_in(b, "losses.csv", &n);
    CHECKF(csv_b && !strcmp(csv, csv_b), "after resume:\n%s\nstraight:\n%s", csv_b, csv);
    free(csv), free(csv_b);
    snprintf(cmd, sizeof cmd, "cmp -s %s/checkpoint.safetensors %s/checkpoint.safetensors", a, b);
    CHECK(system(cmd) == 0);
    snprintf(cmd, sizeof cmd, "rm -r %s %s", a, b);
    CHECK(system(cmd) == 0);
}

static int64_t toy_step(const char *dir) {
    size_t n;
    char *csv = slurp_in(dir, "losses.csv", &n);
    const char *end = csv && n > 1 ? csv + n - 2 : NULL; /* the last line's start */
    while (end && end > csv && end[-1] != '\n') end--;
    int64_t step = end ? atoll(end) : -1;
    free(csv);
    return step;
}

/* stop_at: phases of one schedule, the same bits as a straight run */
TEST(trainer_stop_at_runs_a_schedule_in_phases) {
    char a[64], b[64], cmd[200];
    snprintf(a, sizeof a, "/tmp/tformer_phase_a_%d", (int)getpid());
    snprintf(b, sizeof b, "/tmp/tformer_phase_b_%d", (int)getpid());
    tf_train_config c = toy_config();
    tf_task *t = toy_new(0);
    CHECK(tf_train(&c, t, a, 0, NULL, NULL, NULL) == 0);
    tf_task_free(t);
    int64_t at[3] = {12, 20, 0}, seen[3] = {12, 20, 30};
    for (int i = 0; i < 3; i++) {
        c.stop_at = at[i];
        t = toy_new(0);
        CHECKF(tf_train(&c, t, b, i > 0, NULL, NULL, NULL) == (at[i] ? 1 : 0), "phase %d: %s", i, tf_error());
        tf_task_free(t);
        CHECKF(toy_step(b) == seen[i], "phase %d ended at step %lld", i, (long long)toy_step(b));
    }
    snprintf(cmd, sizeof cmd, "cmp -s %s/checkpoint.safetensors %s/checkpoint.safetensors", a, b);
    CHECK(system(cmd) == 0);
    /* a stop_at the checkpoint has passed is refused, naming both steps */
    snprintf(cmd, sizeof cmd, "rm -r %s && mkdir %s", b, b);
    CHECK(system(cmd) == 0);
    c.stop_at = 10;
    t = toy_new(0);
    CHECK(tf_train(&c, t, b, 0, NULL, NULL, NULL) == 1);
    tf_task_free(t);
    t = toy_new(0);
    CHECK(tf_train(&c, t, b, 1, NULL, NULL, NULL) == -1);
    CHECKF(strstr(tf_error(), "stop_at 10") && strstr(tf_error(), "step 10 already"), "%s", tf_error());
    tf_task_free(t);
    snprintf(cmd, sizeof cmd, "rm -r %s %s", a, b);
    CHECK(system(cmd) == 0);
}

TEST(trainer_stops_on_divergence_naming_the_step) {
    char a[64], cmd[128];
    snprintf(a, sizeof a, "/tmp/tformer_toy_nan_%d", (int)getpid());
    tf_train_config c = toy_config();
    c.accum = 1;
    tf_task *t = toy_new(7); /* the 7th loss (step 7: no evaluation before step 10) is NaN */
    CHECK(tf_train(&c, t, a, 0, NULL, NULL, NULL) != 0);
    CHECKF(strstr(tf_error(), "diverged at step 7") && strstr(tf_error(), "loss nan"), "%s", tf_error());
    tf_task_free(t);
    snprintf(cmd, sizeof cmd, "rm -rf %s", a);
    CHECK(system(cmd) == 0);
}

/* The weights (w then b: 10 floats) after each step, captured by the report. */
typedef struct {
    tf_task *t;
    float w[31][10];
    double val_loss[31], acc[31];
} toy_trace;

static void trace(void *user, const tf_train_report *r) {
    toy_trace *k = user;
    tf_params *ps = k->t->vt->params(k->t);
    memcpy(k->w[r->step], tf_f32(tf_params_get(ps, "w")), 8 * sizeof(float));
    memcpy(k->w[r->step] + 8, tf_f32(tf_params_get(ps, "b")), 2 * sizeof(float));
    k->val_loss[r->step] = r->val_loss, k->acc[r->step] = r->val_metric[0];
}

/* A folder's model.safetensors ("w", "b") as 10 floats. */
static int read_toy(const char *dir, const char *sub, float *out) {
    char p[256];
    snprintf(p, sizeof p, "%s/%s/model.safetensors", dir, sub);
    tf_st_file *f = tf_st_open(p);
    if (!f) return -1;
    tf_ctx *ctx = tf_ctx_new(1);
    tf_tensor *w = tf_tensor_new(ctx, TF_DTYPE_F32, 2, (int64_t[]){2, 4}, 0);
    tf_tensor *b = tf_tensor_new(ctx, TF_DTYPE_F32, 1, (int64_t[]){2}, 0);
    int rc = tf_st_read_f32(f, tf_st_find(f, "w"), w) || tf_st_read_f32(f, tf_st_find(f, "b"), b);
    memcpy(out, tf_f32(w), 8 * sizeof(float)), memcpy(out + 8, tf_f32(b), 2 * sizeof(float));
    tf_ctx_free(ctx), tf_st_close(f);
    return rc;
}

/* best_after: best/ is the best evaluation after that step only, in a
 * straight run and in a second phase resumed with it (the first phase's
 * evaluations in the history are not candidates). */
TEST(trainer_best_after_chooses_among_later_evaluations) {
    char a[64], cmd[160];
    snprintf(a, sizeof a, "/tmp/tformer_toy_best_after_%d", (int)getpid());
    for (int phases = 0; phases <= 1; phases++) {
        tf_train_config c = toy_config();
        c.checkpoint_every = 5, c.eval_every = 5, c.lr = 0.5f;
        static toy_trace k;
        memset(&k, 0, sizeof k);
        k.t = toy_new(0);
        k.t->select_metric = 1;
        if (phases) {
            c.stop_at = 15;
            CHECK(tf_train(&c, k.t, a, 0, NULL, trace, &k) == 1);
            tf_task_free(k.t);
            k.t = toy_new(0);
            k.t->select_metric = 1;
            c.stop_at = 0;
        }
        c.best_after = 15;
        CHECKF(tf_train(&c, k.t, a, phases, NULL, trace, &k) == 0, "%s", tf_error());
        int best_all = 5, best = 20;
        for (int s = 10; s <= 30; s += 5) best_all = k.acc[s] > k.acc[best_all] ? s : best_all;
        for (int s = 25; s <= 30; s += 5) best = k.acc[s] > k.acc[best] ? s : best;
        CHECKF(best_all <= 15, "the toy's first best accuracy is at step %d: the test needs one before 16", best_all);
        float got[10];
        CHECK(read_toy(a, "best", got) == 0);
        for (int i = 0; i < 10; i++)
            CHECKF(got[i] == k.w[best][i], "phases %d: best/ is not step %d's: %g vs %g", phases, best, got[i],
                   k.w[best][i]);
        tf_task_free(k.t);
        snprintf(cmd, sizeof cmd, "rm -r %s", a);
        CHECK(system(cmd) == 0);
    }
}

/* best/ is the model of the best evaluation (lowest loss, or highest
 * accuracy when the task selects it); checkpoints/ keeps the last N
 * checkpoints' weights; averaged/ is their mean. */
TEST(trainer_keeps_best_last_checkpoints_and_their_average) {
    char a[64], cmd[320];
    snprintf(a, sizeof a, "/tmp/tformer_toy_avg_%d", (int)getpid());
    for (int select = 0; select <= 1; select++) {
        tf_train_config c = toy_config();
        c.checkpoint_every = 5, c.eval_every = 5, c.keep_checkpoints = 2, c.average_last = 3;
        c.lr = 0.5f; /* large steps: the evaluations differ */
        static toy_trace k;
        memset(&k, 0, sizeof k);
        k.t = toy_new(0);
        k.t->select_metric = select;
        CHECK(tf_train(&c, k.t, a, 0, NULL, trace, &k) == 0);
        int best = 5;
        for (int s = 10; s <= 30; s += 5)
            if (select ? k.acc[s] > k.acc[best] : k.val_loss[s] < k.val_loss[best]) best = s;
        float got[10], want[10];
        CHECK(read_toy(a, "best", got) == 0);
        for (int i = 0; i < 10; i++) CHECKF(got[i] == k.w[best][i], "best/ is step %d's: %g vs %g", best, got[i], k.w[best][i]);
        CHECK(read_toy(a, "averaged", got) == 0);
        for (int i = 0; i < 10; i++) {
            want[i] = (k.w[20][i] + k.w[25][i] + k.w[30][i]) * (1.0f / 3);
            CHECKF(fabsf(got[i] - want[i]) <= 1e-6f * (1 + fabsf(want[i])), "averaged[%d] %g, mean of steps 20-30 %g", i,
                   got[i], want[i]);
            CHECKF(fabsf(got[i] - k.w[30][i]) > 1e-4f || i == 9, "averaged[%d] equals the last weights", i);
        }
        snprintf(cmd, sizeof cmd, "test \"$(ls %s/checkpoints | tr '\\n' ' ')\" = \"step-00000020.safetensors "
                 "step-00000025.safetensors step-00000030.safetensors \"", a);
        CHECKF(system(cmd) == 0, "checkpoints/ holds the last 3 (average_last > keep_checkpoints)");
        /* the task's weights after the run are the last, not the average */
        float *w = tf_f32(tf_params_get(k.t->vt->params(k.t), "w"));
        for (int i = 0; i < 8; i++) CHECK(w[i] == k.w[30][i]);
        tf_task_free(k.t);
        snprintf(cmd, sizeof cmd, "rm -r %s", a);
        CHECK(system(cmd) == 0);
    }
}
