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

#include "../io/io_internal.h"
#include "tformer/dist.h"
#include "trainer_internal.h"

int tf_series_add(tf_series *s, double x, double y) {
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

/* ---------------------------------------------------------------- losses.csv and loss.png */

/* One line of the history: the validation columns empty unless evaluated at that step. */
static int history_line(const tf_trainer *t, int i, int *v, tf_buf *b) {
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

static int write_history(const tf_trainer *t) {
    tf_buf b = {0};
    char path[4096];
    int rc = tf_buf_put(&b, "step,train_loss,val_loss,lr,grad_norm", 37);
    for (int m = 0; !rc && m < t->task->n_metrics; m++) rc = tf_buf_put(&b, ",val_", 5) ||
                                                 tf_buf_put(&b, t->task->metric_names[m], strlen(t->task->metric_names[m]));
    rc = rc || tf_buf_put(&b, "\n", 1);
    for (int i = 0, v = 0; !rc && i < t->train.n; i++) rc = history_line(t, i, &v, &b);
    rc = rc || tf_path_join(path, sizeof path, t->dir, "losses.csv") || tf_write_file(path, b.p, b.n);
    free(b.p);
    if (rc) return -1;
    if (tf_path_join(path, sizeof path, t->dir, "loss.png")) return -1;
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

/* losses.csv found broken on resume: kept beside as losses.csv.broken-<n>
 * (the first n free), a fresh one written from the rows that could be read;
 * the notice says so. Only the writer touches the folder. */
static int keep_broken_history(tf_trainer *t, const char *path, const char *why, int64_t upto) {
    char kept[4200] = "";
    for (int n = 1; t->writer && n < 1000 && !kept[0]; n++) {
        snprintf(kept, sizeof kept, "%s.broken-%d", path, n);
        if (!access(kept, F_OK)) kept[0] = 0;
    }
    if (t->writer && kept[0] && rename(path, kept))
        return tf_set_error("%s: %s, and it cannot be kept as %s: %s", path, why, kept, strerror(errno));
    snprintf(t->history, sizeof t->history, "%s: %s: kept as %s; a fresh losses.csv holds the %d step%s read before "
             "the problem (the checkpoint is at step %lld)", path, why, kept[0] ? kept : "(not kept)", t->train.n,
             t->train.n == 1 ? "" : "s", (long long)upto);
    return t->writer ? write_history(t) : 0;
}

/* The history up to the checkpoint's step (the plot continues): a row per
 * step from 1, rows after the checkpoint's step dropped (a run killed after
 * writing them). A missing file is reported; one that is garbage or ends
 * before the checkpoint's step is reported and kept beside a fresh one. */
static int read_history(tf_trainer *t, int64_t upto) {
    char path[4096], why[512] = "";
    if (tf_path_join(path, sizeof path, t->dir, "losses.csv")) return -1;
    size_t len;
    char *text = tf_read_file(path, &len);
    if (!text) {
        if (upto > 0)
            snprintf(t->history, sizeof t->history, "%s: missing (%s): the history of steps 1 to %lld is lost; a fresh "
                     "losses.csv starts at step %lld", path, tf_error(), (long long)upto, (long long)upto + 1);
        return 0; /* the plot restarts */
    }
    int rc = 0;
    static const char HEADER[] = "step,train_loss,val_loss,lr,grad_norm";
    if (strncmp(text, HEADER, sizeof HEADER - 1) || strlen(text) != len)
        snprintf(why, sizeof why, "not a history: line 1 is not \"%s...\"%s", HEADER,
                 strlen(text) != len ? " (it holds a NUL byte)" : "");
    int64_t last = 0, line_no = 1; /* steps increase (a history restarted after a loss has a gap) */
    for (char *line = strchr(text, '\n'); !why[0] && line && line[1] && !rc && last < upto;
         line = strchr(line + 1, '\n')) {
        line_no++;
        double f[5 + TF_METRICS_MAX];
        int n = csv_fields(line + 1, f, 5 + TF_METRICS_MAX);
        char *eol = strchr(line + 1, '\n');
        if (!eol || n < 5 || !(f[0] > (double)last) || f[0] != floor(f[0]) || !isfinite(f[1])) {
            snprintf(why, sizeof why, "line %lld is not a row of a step after %lld%s", (long long)line_no,
                     (long long)last, !eol ? " (the file ends inside it)" : "");
            break;
        }
        if (f[0] > (double)upto) break; /* rows after the checkpoint: recomputed */
        last = (int64_t)f[0];
        rc = tf_series_add(&t->train, f[0], f[1]) || tf_series_add(&t->lr, f[0], f[3]) ||
             tf_series_add(&t->gnorm, f[0], f[4]);
        if (!rc && !isnan(f[2])) {
            rc = tf_series_add(&t->val, f[0], f[2]);
            for (int m = 0; !rc && m < t->task->n_metrics; m++) /* a column added since: NaN, rows stay aligned */
                rc = tf_series_add(&t->metric[m], f[0], 5 + m < n ? f[5 + m] : NAN);
        }
    }
    if (!rc && !why[0] && last < upto)
        snprintf(why, sizeof why, "cut short: its rows end at step %lld, the checkpoint is at step %lld",
                 (long long)last, (long long)upto);
    free(text);
    return rc || !why[0] ? rc : keep_broken_history(t, path, why, upto);
}

/* ---------------------------------------------------------------- checkpoints */

static int save_checkpoint(const tf_trainer *t, int64_t step) {
    char path[4096], sig[1024], num[32];
    tf_st_writer *w = tf_st_writer_new();
    if (!w) return tf_set_error("checkpoint: out of memory");
    snprintf(num, sizeof num, "%lld", (long long)step);
    int rc = t->task->vt->signature(t->task, sig, sizeof sig) || tf_st_writer_set_metadata(w, "tformer_step", num) ||
             tf_st_writer_set_metadata(w, "tformer_model", sig);
    snprintf(num, sizeof num, "%llu", (unsigned long long)t->cfg.seed);
    rc = rc || tf_st_writer_set_metadata(w, "tformer_seed", num) ||
         tf_st_writer_set_metadata(w, "tformer_batch", "step"); /* batch counts a step, not a micro-batch */
    /* what --config reads back: the one process's settings (accum over every process) */
    tf_fields f[2] = {{&tf_train_config_table, (void *)&t->cfg}, t->task->config};
    char *cj = rc ? NULL : tf_fields_json(f, t->task->config.table ? 2 : 1);
    rc = rc || !cj || tf_st_writer_set_metadata(w, "tformer_config", cj) ||
         (t->task->data_digest && tf_st_writer_set_metadata(w, "tformer_data", t->task->data_digest)) ||
         (t->task->vt->save_meta && t->task->vt->save_meta(t->task, w));
    free(cj);
    for (int i = 0; !rc && i < tf_params_count(t->ps); i++) /* streamed at save: no copy */
        rc = tf_st_writer_add(w, tf_params_name(t->ps, i), tf_params_tensor(t->ps, i));
    rc = rc || tf_optim_save(t->opt, w);
    rc = rc || tf_path_join(path, sizeof path, t->dir, "checkpoint.safetensors");
    /* the history and the model first: a run killed before the checkpoint's
     * rename resumes from the one before, whose rows the history still holds */
    rc = rc || write_history(t) || t->task->vt->save(t->task, t->dir) || tf_st_writer_save(w, path);
    tf_st_writer_free(w);
    return rc ? -1 : 0;
}

/* The settings that steer the training against the checkpoint's: equal, or
 * the run was asked to continue with changed ones (kept for a notice). A
 * checkpoint's accum counts the micro-batches of every process. */
static int check_settings(tf_trainer *t, const tf_st_file *f, const char *path) {
    const char *stored = tf_st_metadata(f, "tformer_config");
    if (!stored) return 0; /* a checkpoint from before settings were recorded */
    char *now_counted = tf_st_metadata(f, "tformer_batch") ? NULL : tf_resume_step_batch(stored);
    if (!tf_st_metadata(f, "tformer_batch") && !now_counted) return -1;
    tf_fields now[2] = {{&tf_train_config_table, (void *)&t->cfg}, t->task->config};
    int n = tf_resume_changes(now, t->task->config.table ? 2 : 1, now_counted ? now_counted : stored,
                              t->cfg.schedule == TF_SCHEDULE_COSINE, t->changed, sizeof t->changed);
    cJSON_free(now_counted);
    if (n <= 0 || t->resume == TF_RESUME_CHANGED) return n < 0 ? -1 : 0;
    return tf_set_error("%s: resuming with %d changed setting%s (%s): a resume continues bit for bit only with the "
                        "checkpoint's settings; give them again, or allow the change (--allow-changes)%s",
                        path, n, n > 1 ? "s" : "", t->changed,
                        strstr(t->changed, "accum ") ? ". accum counts the micro-batches of a step over every "
                                                       "process: processes x --accum" : "");
}

/* Line i (0-based) of a "name\tdigest\n" list: its name and digest parts; 0 when absent. */
static int data_line(const char *list, int i, const char **name, int *name_len, const char **digest, int *digest_len) {
    for (; i > 0 && list; i--) list = strchr(list, '\n'), list = list ? list + 1 : NULL;
    const char *tab = list ? strchr(list, '\t') : NULL, *end = tab ? strchr(tab, '\n') : NULL;
    if (!tab || !end) return 0;
    *name = list, *name_len = (int)(tab - list), *digest = tab + 1, *digest_len = (int)(end - tab - 1);
    return 1;
}

static int data_count(const char *list) {
    int n = 0;
    for (; (list = strchr(list, '\n')); list++) n++;
    return n;
}

/* The data files (their sizes and content hashes, in order) against the
 * checkpoint's: equal, or the run allows changes (kept for the notice). */
static int check_data(tf_trainer *t, const tf_st_file *f, const char *path) {
    const char *was = tf_st_metadata(f, "tformer_data"), *now = t->task->data_digest;
    if (!was || !now) return 0; /* a checkpoint from before the data were recorded, or a task without files */
    int n_was = data_count(was), n_now = data_count(now);
    char why[1024] = "";
    for (int i = 0; i < n_was && i < n_now && !why[0]; i++) {
        const char *a, *ad, *b, *bd;
        int al, adl, bl, bdl;
        if (!data_line(was, i, &a, &al, &ad, &adl) || !data_line(now, i, &b, &bl, &bd, &bdl)) break;
        if (adl != bdl || memcmp(ad, bd, (size_t)adl))
            snprintf(why, sizeof why, "data file %d, %.*s (%.*s), is not the checkpoint's %.*s (%.*s)", i + 1, bl, b, bdl,
                     bd, al, a, adl, ad);
    }
    if (!why[0] && n_was != n_now) {
        const char *a = "", *ad;
        int al = 0, adl;
        data_line(n_was > n_now ? was : now, n_was > n_now ? n_now : n_was, &a, &al, &ad, &adl);
        snprintf(why, sizeof why, "%d data file%s where the checkpoint was trained on %d (%s %.*s)", n_now,
                 n_now == 1 ? "" : "s", n_was, n_was > n_now ? "missing:" : "added:", al, a);
    }
    if (!why[0]) return 0;
    if (t->resume == TF_RESUME_CHANGED) {
        size_t k = strlen(t->changed);
        snprintf(t->changed + k, sizeof t->changed - k, "%s%s", k ? "; " : "", why);
        return 0;
    }
    return tf_set_error("%s: resuming with other data: %s: a resume continues bit for bit only with the checkpoint's "
                        "data; give the same files again, or allow the change (--allow-changes)", path, why);
}

/* The checkpoint's step, model, seed, settings and data against this run's. */
static int check_checkpoint(tf_trainer *t, const tf_st_file *f, const char *path, int64_t *step) {
    char sig[1024], want_seed[32];
    const char *s = tf_st_metadata(f, "tformer_step"), *msig = tf_st_metadata(f, "tformer_model");
    const char *seed = tf_st_metadata(f, "tformer_seed");
    snprintf(want_seed, sizeof want_seed, "%llu", (unsigned long long)t->cfg.seed);
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
    if (*step > t->cfg.steps)
        return tf_set_error("%s: step %s is outside the run's %lld steps", path, s, (long long)t->cfg.steps);
    return check_settings(t, f, path) || check_data(t, f, path);
}

/* Every float tensor of the checkpoint (weights, AdamW's m and v, a task's
 * state) finite: a resume from a NaN only diverged some steps later. The
 * first tensor that is not is named, with its first bad element. */
static int check_finite(const tf_st_file *f, const char *path) {
    for (int i = 0; i < tf_st_count(f); i++) {
        const tf_st_entry *e = tf_st_entry_at(f, i);
        if (e->dtype != TF_ST_F32) continue;
        const unsigned char *p = e->data;
        size_t n = e->nbytes / sizeof(float), bad = 0, first = 0;
        float x, v = 0;
        for (size_t j = 0; j < n; j++) {
            memcpy(&x, p + j * sizeof x, sizeof x); /* the mapping may be unaligned */
            if (!isfinite(x) && !bad++) first = j, v = x;
        }
        if (bad)
            return tf_set_error("%s: tensor '%s' holds %s at element %zu (%zu of %zu values not finite): refusing to "
                                "resume from it (a diverged or damaged run; resume an earlier checkpoint or start "
                                "afresh)", path, e->name, isnan(v) ? "NaN" : v > 0 ? "inf" : "-inf", first, bad, n);
    }
    return 0;
}

/* Weights, optimizer state and step from run_dir/checkpoint.safetensors. */
static int load_checkpoint(tf_trainer *t, int64_t *step) {
    char path[4096];
    if (tf_path_join(path, sizeof path, t->dir, "checkpoint.safetensors")) return -1;
    tf_st_file *f = tf_st_open(path);
    if (!f) return -1;
    int rc = check_checkpoint(t, f, path, step) || check_finite(f, path) ||
             (t->task->vt->check_meta && t->task->vt->check_meta(t->task, f, path)) || tf_params_load(t->ps, f, 0) ||
             tf_optim_load(t->opt, f, *step);
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
static double selection(const tf_trainer *t, double loss, const double *metric) {
    int m = t->task->select_metric;
    char num[40];
    snprintf(num, sizeof num, "%.9g", m <= 0 || m > t->task->n_metrics ? loss : metric[m - 1]);
    double v = strtod(num, NULL);
    return m <= 0 || m > t->task->n_metrics ? v : -v;
}

/* The best of the history (a resumed run) after step cfg.best_after. */
static double best_so_far(const tf_trainer *t) {
    double best = INFINITY, metric[TF_METRICS_MAX];
    for (int i = 0; i < t->val.n; i++) {
        if (t->val.x[i] <= (double)t->cfg.best_after) continue;
        for (int m = 0; m < t->task->n_metrics; m++) metric[m] = i < t->metric[m].n ? t->metric[m].y[i] : NAN;
        double v = selection(t, t->val.y[i], metric);
        if (v < best) best = v;
    }
    return best;
}

/* ---------------------------------------------------------------- the run */

static void teardown(tf_trainer *t) {
    tf_trainer_split_free(t);
    tf_optim_free(t->opt);
    tf_ctx_free(t->ctx);
    tf_series *s[] = {&t->train, &t->val, &t->lr, &t->gnorm};
    for (int i = 0; i < 4; i++) free(s[i]->x), free(s[i]->y);
    for (int m = 0; m < TF_METRICS_MAX; m++) free(t->metric[m].x), free(t->metric[m].y);
}

/* Validation loss and metrics into the report and the history; the writer
 * adds the task's score and saves a better model than any before (after
 * step cfg.best_after) as run_dir/best. Collective. */
static int record_eval(tf_trainer *t, int64_t step, tf_train_report *rep, tf_metrics *m) {
    if (tf_trainer_evaluate(t, &rep->val_loss, m)) return -1;
    int rc = t->writer && t->task->vt->score ? t->task->vt->score(t->task, m) : 0;
    rc = rc || tf_series_add(&t->val, (double)step, rep->val_loss);
    for (int i = 0; !rc && i < t->task->n_metrics; i++) {
        rep->val_metric[i] = m->count[i] > 0 ? m->sum[i] / m->count[i] : NAN;
        rc = tf_series_add(&t->metric[i], (double)step, rep->val_metric[i]);
    }
    double v = rc ? NAN : selection(t, rep->val_loss, rep->val_metric);
    if (!rc && t->writer && step > t->cfg.best_after && v < t->best) {
        t->best = v;
        rc = tf_run_save_model(t->task, t->dir, "best");
    }
    return tf_dist_agree(rc);
}

/* At a checkpoint: the weights kept for averaging; at the end, their mean. */
static int keep_and_average(tf_trainer *t, int64_t step) {
    const tf_train_config *c = &t->cfg;
    int keep = c->keep_checkpoints > c->average_last ? c->keep_checkpoints : c->average_last;
    if (keep > 0 && tf_run_keep_weights(t->ps, t->dir, t->run_id, step, keep)) return -1;
    return c->average_last > 0 && step == c->steps ? tf_run_average(t->task, t->dir, t->run_id, c->average_last, NULL)
                                                   : 0;
}

/* A checkpoint by the writer (collective: every rank learns how it went). */
static int checkpoint(tf_trainer *t, int64_t step, int keep) {
    /* ZeRO: the writer saves the whole AdamW state, gathered from every rank's part */
    if (t->zero && tf_optim_gather(t->opt, tf_zero_parts(t->zero))) return -1;
    int rc = t->writer ? save_checkpoint(t, step) || (keep && keep_and_average(t, step)) : 0;
    tf_optim_release(t->opt);
    return tf_dist_agree(rc);
}

static int run_steps(tf_trainer *t, int64_t step, volatile int *stop, tf_train_report_fn report, void *user) {
    const tf_train_config *c = &t->cfg;
    double t0 = now_s();
    int64_t first = step, tokens = t->task->vt->tokens(t->task, t->rows) * c->accum;
    while (step < c->steps) {
        if (tf_dist_any(stop && *stop)) return checkpoint(t, step, 0) ? -1 : 1; /* every rank stops at this step */
        if (c->stop_at > 0 && step == c->stop_at) return checkpoint(t, step, 0) ? -1 : 1;
        tf_train_report rep = {.step = step + 1, .steps = c->steps, .val_loss = NAN};
        tf_metrics m;
        if (tf_trainer_step(t, step, &rep)) return -1;
        step++;
        int rc = tf_series_add(&t->train, (double)step, rep.loss) || tf_series_add(&t->lr, (double)step, rep.lr) ||
                 tf_series_add(&t->gnorm, (double)step, rep.grad_norm);
        if (tf_dist_agree(rc)) return -1;
        if ((step % c->eval_every == 0 || step == c->steps) && record_eval(t, step, &rep, &m)) return -1;
        double dt = now_s() - t0;
        rep.elapsed_s = dt;
        rep.tokens_per_s = (double)(step - first) * (double)tokens / dt;
        rep.eta_s = dt / (double)(step - first) * (double)(c->steps - step);
        rep.metric_names = t->task->metric_names, rep.n_metrics = t->task->n_metrics;
        if (report && t->writer) report(user, &rep);
        if ((step % c->checkpoint_every == 0 || step == c->steps) && checkpoint(t, step, 1)) return -1;
    }
    return 0;
}

/* One writer per run folder: an exclusive lock on run_dir/.lock, held until
 * the run ends (closing the descriptor releases it, a killed run's too; a
 * command that began the folder, tf_run_folder_begin, holds it already);
 * then the temporaries a killed run left behind are removed. */
static int lock_run(const char *run_dir) {
    char path[4200];
    if (tf_run_lock(run_dir)) return -1;
    DIR *d = opendir(run_dir);
    for (struct dirent *e; d && (e = readdir(d));)
        if (strstr(e->d_name, ".tmp.")) {
            if (!tf_path_join(path, sizeof path, run_dir, e->d_name)) remove(path);
        }
    if (d) closedir(d);
    return 0;
}

/* ---------------------------------------------------------------- the start, every rank alike */

/* Every rank's settings (the trainer's and the task's) and model and, after
 * a resume, its step and weights must be rank 0's. Collective. */
static int same_start(tf_trainer *t, const tf_train_config *cfg, int64_t step, int weights) {
    if (tf_dist_size() == 1) return 0;
    char sig[1024], num[32], hash[32];
    tf_fields f[2] = {{&tf_train_config_table, (void *)cfg}, t->task->config};
    if (!weights) {
        int rc = t->task->vt->signature(t->task, sig, sizeof sig);
        tf_dist_item model = {"model", sig, NULL};
        return tf_dist_agree(rc) || tf_dist_same_fields(f, t->task->config.table ? 2 : 1, &model, 1) ? -1 : 0;
    }
    uint64_t h = TF_DIST_HASH_INIT;
    for (int i = 0; i < tf_params_count(t->ps); i++) {
        const tf_tensor *p = tf_params_tensor(t->ps, i);
        h = tf_dist_hash(h, p->data, (size_t)tf_numel(p) * sizeof(float));
    }
    snprintf(num, sizeof num, "%lld", (long long)step);
    snprintf(hash, sizeof hash, "hash %016llx", (unsigned long long)h);
    tf_dist_item items[2] = {{"the checkpoint's step", num, NULL},
                             {"the weights (initialised or resumed)", hash, NULL}};
    return tf_dist_same(items, 2);
}

/* Everything before the first step (collective): the settings, the split
 * of a step, the writer's lock on the folder, the checkpoint on resume. */
static int start(tf_trainer *t, const tf_train_config *cfg, int *lock, int64_t *step) {
    tf_adamw_config oc = {cfg->beta1, cfg->beta2, 1e-8f, cfg->weight_decay};
    if (tf_dist_agree(tf_train_config_check(cfg)) || same_start(t, cfg, 0, 0)) return -1;
    int64_t lo = 0, hi = -1; /* the AdamW state this rank holds: all, or its ZeRO part */
    int rc = tf_trainer_split(t, cfg) || !(t->ctx = tf_ctx_new(cfg->seed));
    if (!rc) tf_ctx_set_precision(t->ctx, cfg->precision);
    if (!rc && t->zero) tf_zero_range(t->zero, &lo, &hi);
    tf_sgd_config sc = {cfg->momentum, cfg->weight_decay, cfg->nesterov};
    rc = rc || !(t->opt = cfg->optimizer == TF_OPTIM_SGD ? tf_sgd_new_shard(t->ps, sc, lo, hi)
                                                          : tf_adamw_new_shard(t->ps, oc, lo, hi));
    if (!rc && t->writer && !(rc = lock_run(t->dir))) *lock = 1;
    if (!rc && (t->writer || t->resume)) rc = tf_run_id(t->dir, t->resume, t->run_id, sizeof t->run_id);
    if (tf_dist_agree(rc) || tf_dist_agree(t->resume ? load_checkpoint(t, step) : 0)) return -1;
    if (cfg->stop_at > 0 && cfg->stop_at <= *step && *step < cfg->steps)
        return tf_set_error("stop_at %lld: the checkpoint is at step %lld already (give a later step, or 0 to run to "
                            "the end)", (long long)cfg->stop_at, (long long)*step);
    return same_start(t, cfg, *step, 1);
}

int tf_train(const tf_train_config *cfg, tf_task *task, const char *run_dir, int resume, volatile int *stop,
             tf_train_report_fn report, void *user) {
    if (cfg->average_last > 0 && task->model_is_ema)
        return tf_set_error("average_last: the task's model is an EMA of the weights (ema_decay); averaging the last "
                            "checkpoints' trained weights beside it is not supported: use one or the other");
    tf_trainer t;
    memset(&t, 0, sizeof t);
    t.task = task, t.dir = run_dir, t.ps = task->vt->params(task), t.best = INFINITY, t.resume = resume;
    int lock = 0;
    int64_t step = 0;
    int rc = start(&t, cfg, &lock, &step);
    char info[1024];
    if (!rc && report && t.writer && tf_trainer_describe(&t, cfg->zero, info, sizeof info)) {
        tf_train_report rep = {.step = step, .steps = cfg->steps, .val_loss = NAN, .info = info};
        report(user, &rep);
    }
    if (!rc && t.history[0] && report && t.writer) {
        tf_train_report rep = {.step = step, .steps = cfg->steps, .val_loss = NAN, .notice = t.history};
        report(user, &rep);
    }
    if (!rc && t.changed[0] && report && t.writer) {
        char notice[1100];
        snprintf(notice, sizeof notice, "resuming with changed settings: %s", t.changed);
        tf_train_report rep = {.step = step, .steps = cfg->steps, .val_loss = NAN, .notice = notice};
        report(user, &rep);
    }
    if (!rc) t.best = best_so_far(&t);
    if (!rc) rc = run_steps(&t, step, stop, report, user);
    teardown(&t);
    if (lock > 0) tf_run_unlock(run_dir);
    return rc;
}

void tf_task_free(tf_task *t) {
    if (t) free(t->data_digest), t->vt->free(t);
}
