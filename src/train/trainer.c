/* One trainer for every model family: AdamW steps on the batches a task
 * gives (warmup then cosine, inverse-sqrt or constant learning rates,
 * clipping, accumulation), evaluation, atomic checkpoints written by
 * streaming the tensors, bit-exact resume, a stop flag (Ctrl-C), divergence
 * reported with its step, progress with an ETA, losses.csv and loss.png.
 * All randomness is counter-based (seed, step, micro-batch, row), so a run
 * repeats bit for bit on any thread count and a resumed run continues
 * exactly: a checkpoint needs only the step besides weights and AdamW state. */
#define _DEFAULT_SOURCE /* flock */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "train_internal.h"

typedef struct {
    double *x, *y;
    int n, cap;
} series;

typedef struct {
    const tf_train_config *cfg;
    tf_task *task;
    const char *dir;
    tf_params *ps;
    tf_adamw *opt;
    tf_ctx *ctx;
    series train, val, lr, gnorm; /* lr and grad norm share x with train */
    series metric[TF_METRICS_MAX]; /* the task's validation metrics */
    double best;                   /* the selection's best so far (lower is better: metrics negated) */
    int resume;                    /* TF_RESUME_* */
    char changed[1024];            /* settings changed on resume, "name A -> B, ..." */
} trainer;

static int series_add(series *s, double x, double y) {
    if (s->n == s->cap) {
        int cap = s->cap ? 2 * s->cap : 1024;
        double *nx = realloc(s->x, (size_t)cap * sizeof *nx);
        if (nx) s->x = nx;
        double *ny = nx ? realloc(s->y, (size_t)cap * sizeof *ny) : NULL;
        if (!ny) return tf_set_error("train: out of memory");
        s->y = ny, s->cap = cap;
    }
    s->x[s->n] = x, s->y[s->n++] = y;
    return 0;
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* ---------------------------------------------------------------- steps */

/* Forward (and backward, scaled) of the batch drawn for key k. */
static int micro_step(trainer *t, tf_subset subset, uint64_t k, int train, float grad_scale, double *loss,
                      tf_metrics *m) {
    tf_ctx *ctx = t->ctx;
    tf_ctx_reset(ctx);
    tf_ctx_set_training(ctx, train);
    tf_ctx_set_grad(ctx, train);
    tf_ctx_set_seed(ctx, tf_key(t->cfg->seed, k, 0xD0, 1));
    tf_batch b;
    memset(&b, 0, sizeof b);
    if (t->task->vt->batch(t->task, ctx, subset, k, t->cfg->batch, &b)) return -1;
    tf_tensor *l = t->task->vt->loss(t->task, ctx, &b, m);
    if (!l) return -1;
    if (train) {
        tf_tensor *g = tf_tensor_new(ctx, TF_DTYPE_F32, 0, NULL, 0);
        if (!g) return -1;
        tf_f32(g)[0] = grad_scale;
        if (tf_backward(ctx, l, g)) return -1;
    }
    *loss = tf_f32(l)[0];
    return 0;
}

static int evaluate(trainer *t, double *loss, tf_metrics *m) {
    double sum = 0, l;
    memset(m, 0, sizeof *m);
    for (int i = 0; i < t->cfg->eval_batches; i++) {
        if (micro_step(t, TF_SUBSET_VAL, (uint64_t)i, 0, 0, &l, m)) return -1;
        sum += l;
    }
    *loss = sum / t->cfg->eval_batches;
    return t->task->vt->score ? t->task->vt->score(t->task, m) : 0;
}

static int train_step(trainer *t, int64_t step, tf_train_report *rep) {
    const tf_train_config *c = t->cfg;
    tf_params_zero_grad(t->ps);
    double loss = 0, l;
    for (int micro = 0; micro < c->accum; micro++) {
        if (micro_step(t, TF_SUBSET_TRAIN, (uint64_t)step * 1024 + (uint64_t)micro, 1, 1.0f / (float)c->accum, &l,
                       NULL))
            return -1;
        loss += l / c->accum;
    }
    rep->grad_norm = tf_clip_grad_norm(t->ps, c->grad_clip);
    rep->lr = tf_lr_schedule(c->schedule, step, c->warmup, c->steps, c->lr, c->min_lr);
    rep->loss = (float)loss;
    if (!isfinite(loss) || !isfinite(rep->grad_norm)) /* before the update: the weights stay finite */
        return tf_set_error("train: diverged at step %lld: loss %g, gradient norm %g (lr %g); the last checkpoint "
                            "is intact — lower lr or lengthen the warmup", (long long)step + 1, loss, rep->grad_norm,
                            rep->lr);
    tf_adamw_step(t->opt, rep->lr);
    return t->task->vt->after_step ? t->task->vt->after_step(t->task, step + 1) : 0;
}

/* ---------------------------------------------------------------- losses.csv and loss.png */

/* One line of the history: the validation columns empty unless evaluated at that step. */
static int history_line(const trainer *t, int i, int *v, tf_buf *b) {
    char line[512], num[40] = "";
    while (*v < t->val.n && t->val.x[*v] < t->train.x[i]) ++*v;
    int at = *v < t->val.n && t->val.x[*v] == t->train.x[i];
    if (at) snprintf(num, sizeof num, "%.9g", t->val.y[*v]);
    int n = snprintf(line, sizeof line, "%.0f,%.9g,%s,%.9g,%.9g", t->train.x[i], t->train.y[i], num, t->lr.y[i],
                     t->gnorm.y[i]);
    for (int m = 0; m < t->task->n_metrics; m++) {
        num[0] = 0;
        if (at && *v < t->metric[m].n) snprintf(num, sizeof num, "%.9g", t->metric[m].y[*v]);
        n += snprintf(line + n, sizeof line - (size_t)n, ",%s", num);
    }
    line[n++] = '\n';
    return tf_buf_put(b, line, (size_t)n);
}

static int write_history(const trainer *t) {
    tf_buf b = {0};
    char path[4096];
    int rc = tf_buf_put(&b, "step,train_loss,val_loss,lr,grad_norm", 37);
    for (int m = 0; !rc && m < t->task->n_metrics; m++) rc = tf_buf_put(&b, ",val_", 5) ||
                                                 tf_buf_put(&b, t->task->metric_names[m], strlen(t->task->metric_names[m]));
    rc = rc || tf_buf_put(&b, "\n", 1);
    for (int i = 0, v = 0; !rc && i < t->train.n; i++) rc = history_line(t, i, &v, &b);
    snprintf(path, sizeof path, "%s/losses.csv", t->dir);
    rc = rc || tf_write_file(path, b.p, b.n);
    free(b.p);
    if (rc) return -1;
    snprintf(path, sizeof path, "%s/loss.png", t->dir);
    return tf_png_plot(path, t->train.x, t->train.y, t->train.n, t->val.x, t->val.y, t->val.n);
}

/* Fields of one CSV line; an empty field is NaN. */
static int csv_fields(const char *line, double *f, int max) {
    int n = 0;
    for (const char *p = line; n < max;) {
        char *end;
        f[n] = strtod(p, &end);
        if (end == p) f[n] = NAN;
        n++;
        p = strchr(p, ',');
        if (!p || p > strchr(line, '\n')) break;
        p++;
    }
    return n;
}

/* The history up to the checkpoint's step (the plot continues). */
static int read_history(trainer *t, int64_t upto) {
    char path[4096];
    snprintf(path, sizeof path, "%s/losses.csv", t->dir);
    size_t len;
    char *text = tf_read_file(path, &len);
    if (!text) return 0; /* no history: the plot restarts */
    int rc = 0;
    for (char *line = strchr(text, '\n'); line && line[1] && !rc; line = strchr(line + 1, '\n')) {
        double f[5 + TF_METRICS_MAX];
        int n = csv_fields(line + 1, f, 5 + TF_METRICS_MAX);
        if (n < 5 || isnan(f[0]) || f[0] > (double)upto) break;
        rc = series_add(&t->train, f[0], f[1]) || series_add(&t->lr, f[0], f[3]) || series_add(&t->gnorm, f[0], f[4]);
        if (!rc && !isnan(f[2])) {
            rc = series_add(&t->val, f[0], f[2]);
            for (int m = 0; !rc && m < t->task->n_metrics; m++) /* a column added since: NaN, rows stay aligned */
                rc = series_add(&t->metric[m], f[0], 5 + m < n ? f[5 + m] : NAN);
        }
    }
    free(text);
    return rc;
}

/* ---------------------------------------------------------------- checkpoints */

static int save_checkpoint(const trainer *t, int64_t step) {
    char path[4096], sig[1024], num[32];
    tf_st_writer *w = tf_st_writer_new();
    if (!w) return tf_set_error("checkpoint: out of memory");
    snprintf(num, sizeof num, "%lld", (long long)step);
    int rc = t->task->vt->signature(t->task, sig, sizeof sig) || tf_st_writer_set_metadata(w, "tformer_step", num) ||
             tf_st_writer_set_metadata(w, "tformer_model", sig);
    snprintf(num, sizeof num, "%llu", (unsigned long long)t->cfg->seed);
    rc = rc || tf_st_writer_set_metadata(w, "tformer_seed", num);
    tf_fields f[2] = {{&tf_train_config_table, (void *)t->cfg}, t->task->config}; /* what --config reads back */
    char *cj = rc ? NULL : tf_fields_json(f, t->task->config.table ? 2 : 1);
    rc = rc || !cj || tf_st_writer_set_metadata(w, "tformer_config", cj) ||
         (t->task->vt->save_meta && t->task->vt->save_meta(t->task, w));
    free(cj);
    for (int i = 0; !rc && i < tf_params_count(t->ps); i++) /* streamed at save: no copy */
        rc = tf_st_writer_add(w, tf_params_name(t->ps, i), tf_params_tensor(t->ps, i));
    rc = rc || tf_adamw_save(t->opt, w);
    snprintf(path, sizeof path, "%s/checkpoint.safetensors", t->dir);
    /* the history and the model first: a run killed before the checkpoint's
     * rename resumes from the one before, whose rows the history still holds */
    rc = rc || write_history(t) || t->task->vt->save(t->task, t->dir) || tf_st_writer_save(w, path);
    tf_st_writer_free(w);
    return rc ? -1 : 0;
}

/* The settings that steer the training against the checkpoint's: equal, or
 * the run was asked to continue with changed ones (kept for a notice). */
static int check_settings(trainer *t, const tf_st_file *f, const char *path) {
    const char *stored = tf_st_metadata(f, "tformer_config");
    if (!stored) return 0; /* a checkpoint from before settings were recorded */
    tf_fields now[2] = {{&tf_train_config_table, (void *)t->cfg}, t->task->config};
    int n = tf_resume_changes(now, t->task->config.table ? 2 : 1, stored, t->cfg->schedule == TF_SCHEDULE_COSINE,
                              t->changed, sizeof t->changed);
    if (n <= 0 || t->resume == TF_RESUME_CHANGED) return n < 0 ? -1 : 0;
    return tf_set_error("%s: resuming with %d changed setting%s (%s): a resume continues bit for bit only with the "
                        "checkpoint's settings; give them again, or allow the change (--allow-changes)",
                        path, n, n > 1 ? "s" : "", t->changed);
}

/* The checkpoint's step, model, seed and settings against this run's. */
static int check_checkpoint(trainer *t, const tf_st_file *f, const char *path, int64_t *step) {
    char sig[1024], want_seed[32];
    const char *s = tf_st_metadata(f, "tformer_step"), *msig = tf_st_metadata(f, "tformer_model");
    const char *seed = tf_st_metadata(f, "tformer_seed");
    snprintf(want_seed, sizeof want_seed, "%llu", (unsigned long long)t->cfg->seed);
    if (t->task->vt->signature(t->task, sig, sizeof sig)) return -1;
    if (!s || !msig || !seed) return tf_set_error("%s: not a tformer checkpoint (no step, model or seed)", path);
    if (strcmp(msig, sig))
        return tf_set_error("%s: checkpoint of another model: it has %s; the config asks for %s", path, msig, sig);
    if (strcmp(seed, want_seed)) return tf_set_error("%s: checkpoint trained with seed %s, not %s", path, seed, want_seed);
    char *end;
    errno = 0;
    *step = strtoll(s, &end, 10);
    if (!*s || strspn(s, "0123456789") != strlen(s) || errno)
        return tf_set_error("%s: its step \"%.40s\" is not a whole number", path, s);
    if (*step > t->cfg->steps)
        return tf_set_error("%s: step %s is outside the run's %lld steps", path, s, (long long)t->cfg->steps);
    return check_settings(t, f, path);
}

/* Weights, optimizer state and step from run_dir/checkpoint.safetensors. */
static int load_checkpoint(trainer *t, int64_t *step) {
    char path[4096];
    snprintf(path, sizeof path, "%s/checkpoint.safetensors", t->dir);
    tf_st_file *f = tf_st_open(path);
    if (!f) return -1;
    int rc = check_checkpoint(t, f, path, step) ||
             (t->task->vt->check_meta && t->task->vt->check_meta(t->task, f, path)) || tf_params_load(t->ps, f, 0) ||
             tf_adamw_load(t->opt, f, *step);
    if (rc && !strstr(tf_error(), path)) {
        char msg[900];
        snprintf(msg, sizeof msg, "%s", tf_error());
        tf_set_error("%s: %s", path, msg);
    }
    tf_st_close(f);
    return rc ? -1 : read_history(t, *step);
}

/* The value the best model is chosen by, lower is better: the loss or minus
 * the metric, as losses.csv holds it (%.9g), so a resumed run, which reads
 * the best so far from there, picks the same model on a tie. */
static double selection(const trainer *t, double loss, const double *metric) {
    int m = t->task->select_metric;
    char num[40];
    snprintf(num, sizeof num, "%.9g", m <= 0 || m > t->task->n_metrics ? loss : metric[m - 1]);
    double v = strtod(num, NULL);
    return m <= 0 || m > t->task->n_metrics ? v : -v;
}

/* The best of the history (a resumed run). */
static double best_so_far(const trainer *t) {
    double best = INFINITY, metric[TF_METRICS_MAX];
    for (int i = 0; i < t->val.n; i++) {
        for (int m = 0; m < t->task->n_metrics; m++) metric[m] = i < t->metric[m].n ? t->metric[m].y[i] : NAN;
        double v = selection(t, t->val.y[i], metric);
        if (v < best) best = v;
    }
    return best;
}

/* ---------------------------------------------------------------- the run */

static void teardown(trainer *t) {
    tf_adamw_free(t->opt);
    tf_ctx_free(t->ctx);
    series *s[] = {&t->train, &t->val, &t->lr, &t->gnorm};
    for (int i = 0; i < 4; i++) free(s[i]->x), free(s[i]->y);
    for (int m = 0; m < TF_METRICS_MAX; m++) free(t->metric[m].x), free(t->metric[m].y);
}

/* Validation loss and metrics into the report and the history; a better
 * model than any before is saved as run_dir/best. */
static int record_eval(trainer *t, int64_t step, tf_train_report *rep, tf_metrics *m) {
    if (evaluate(t, &rep->val_loss, m)) return -1;
    int rc = series_add(&t->val, (double)step, rep->val_loss);
    for (int i = 0; !rc && i < t->task->n_metrics; i++) {
        rep->val_metric[i] = m->count[i] > 0 ? m->sum[i] / m->count[i] : NAN;
        rc = series_add(&t->metric[i], (double)step, rep->val_metric[i]);
    }
    double v = rc ? NAN : selection(t, rep->val_loss, rep->val_metric);
    if (rc || !(v < t->best)) return rc;
    t->best = v;
    return tf_run_save_model(t->task, t->dir, "best");
}

/* At a checkpoint: the weights kept for averaging; at the end, their mean. */
static int keep_and_average(trainer *t, int64_t step) {
    const tf_train_config *c = t->cfg;
    int keep = c->keep_checkpoints > c->average_last ? c->keep_checkpoints : c->average_last;
    if (keep > 0 && tf_run_keep_weights(t->ps, t->dir, step, keep)) return -1;
    return c->average_last > 0 && step == c->steps ? tf_run_average(t->task, t->dir, c->average_last, NULL) : 0;
}

static int run_steps(trainer *t, int64_t step, volatile int *stop, tf_train_report_fn report, void *user) {
    const tf_train_config *c = t->cfg;
    double t0 = now_s();
    int64_t first = step, tokens = t->task->vt->tokens(t->task, c->batch) * c->accum;
    int rc = 0;
    while (!rc && step < c->steps) {
        if (stop && *stop) return save_checkpoint(t, step) ? -1 : 1;
        tf_train_report rep = {.step = step + 1, .steps = c->steps, .val_loss = NAN};
        tf_metrics m;
        if (train_step(t, step, &rep)) return -1;
        step++;
        rc = series_add(&t->train, (double)step, rep.loss) || series_add(&t->lr, (double)step, rep.lr) ||
             series_add(&t->gnorm, (double)step, rep.grad_norm);
        if (!rc && (step % c->eval_every == 0 || step == c->steps)) rc = record_eval(t, step, &rep, &m);
        double dt = now_s() - t0;
        rep.elapsed_s = dt;
        rep.tokens_per_s = (double)(step - first) * (double)tokens / dt;
        rep.eta_s = dt / (double)(step - first) * (double)(c->steps - step);
        rep.metric_names = t->task->metric_names, rep.n_metrics = t->task->n_metrics;
        if (report) report(user, &rep);
        if (!rc && (step % c->checkpoint_every == 0 || step == c->steps))
            rc = save_checkpoint(t, step) || keep_and_average(t, step);
    }
    return rc;
}

/* One writer per run folder: an exclusive lock on run_dir/.lock, held until
 * the run ends (closing the descriptor releases it, a killed run's too);
 * then the temporaries a killed run left behind are removed. */
static int lock_run(const char *run_dir, int *fd) {
    char path[4200];
    snprintf(path, sizeof path, "%s/.lock", run_dir);
    if ((*fd = open(path, O_RDWR | O_CREAT, 0666)) < 0) return tf_set_error("%s: cannot create: %s", path, strerror(errno));
    if (flock(*fd, LOCK_EX | LOCK_NB)) {
        int busy = errno == EWOULDBLOCK;
        close(*fd), *fd = -1;
        return busy ? tf_set_error("%s: another training is writing into this folder (it holds %s)", run_dir, path)
                    : tf_set_error("%s: cannot lock: %s", path, strerror(errno));
    }
    DIR *d = opendir(run_dir);
    for (struct dirent *e; d && (e = readdir(d));)
        if (strstr(e->d_name, ".tmp.")) {
            snprintf(path, sizeof path, "%s/%s", run_dir, e->d_name);
            remove(path);
        }
    if (d) closedir(d);
    return 0;
}

int tf_train(const tf_train_config *cfg, tf_task *task, const char *run_dir, int resume, volatile int *stop,
             tf_train_report_fn report, void *user) {
    if (tf_train_config_check(cfg)) return -1;
    if (cfg->average_last > 0 && task->model_is_ema)
        return tf_set_error("average_last: the task's model is an EMA of the weights (ema_decay); averaging the last "
                            "checkpoints' trained weights beside it is not supported: use one or the other");
    if (mkdir(run_dir, 0755) && errno != EEXIST) return tf_set_error("%s: cannot create: %s", run_dir, strerror(errno));
    int lock;
    if (lock_run(run_dir, &lock)) return -1;
    trainer t;
    memset(&t, 0, sizeof t);
    t.cfg = cfg, t.task = task, t.dir = run_dir, t.ps = task->vt->params(task);
    tf_adamw_config oc = {cfg->beta1, cfg->beta2, 1e-8f, cfg->weight_decay};
    int64_t step = 0;
    int rc = !(t.ctx = tf_ctx_new(cfg->seed)) || !(t.opt = tf_adamw_new(t.ps, oc)) ? -1 : 0;
    t.best = INFINITY;
    t.resume = resume;
    if (!rc && resume) rc = load_checkpoint(&t, &step);
    if (!rc && t.changed[0] && report) {
        char notice[1100];
        snprintf(notice, sizeof notice, "resuming with changed settings: %s", t.changed);
        tf_train_report rep = {.step = step, .steps = cfg->steps, .val_loss = NAN, .notice = notice};
        report(user, &rep);
    }
    if (!rc) t.best = best_so_far(&t);
    if (!rc) rc = run_steps(&t, step, stop, report, user);
    teardown(&t);
    close(lock);
    return rc;
}

void tf_task_free(tf_task *t) {
    if (t) t->vt->free(t);
}
