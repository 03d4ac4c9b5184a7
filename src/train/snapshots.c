/* What a run keeps besides its latest state: the best model so far (by the
 * task's selection: lowest validation loss or highest metric) as a model
 * folder run_dir/best/, the weights of the last N checkpoints in
 * run_dir/checkpoints/step-<step>.safetensors, and their average (Vaswani et
 * al. average the last 5 or 20 checkpoints) as the folder run_dir/averaged/.
 * A model folder is the task's save plus the run's tokenizer files. */
#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "train_internal.h"

/* The run's files that are neither its state nor its model: the tokenizer's. */
static int is_run_own(const char *name) {
    static const char *const OWN[] = {"checkpoint.safetensors", "model.safetensors", "config.json", "losses.csv",
                                      "loss.png", "run_id", NULL};
    for (int i = 0; OWN[i]; i++)
        if (!strcmp(name, OWN[i])) return 1;
    return name[0] == '.' || strstr(name, ".tmp") != NULL;
}

int tf_run_save_model(tf_task *task, const char *run_dir, const char *sub) {
    char dir[4096], from[4400], to[4400];
    if (tf_path_join(dir, sizeof dir, run_dir, sub)) return -1;
    if (mkdir(dir, 0755) && errno != EEXIST) return tf_set_error("%s: cannot create: %s", dir, strerror(errno));
    if (task->vt->save(task, dir)) return -1;
    DIR *d = opendir(run_dir);
    if (!d) return tf_set_error("%s: cannot list: %s", run_dir, strerror(errno));
    int rc = 0;
    for (struct dirent *e; !rc && (e = readdir(d));) {
        struct stat st;
        if (is_run_own(e->d_name)) continue;
        if ((rc = tf_path_join(from, sizeof from, run_dir, e->d_name))) break;
        if (stat(from, &st) || !S_ISREG(st.st_mode)) continue;
        rc = tf_path_join(to, sizeof to, dir, e->d_name) ? -1 : tf_copy_file(from, to);
    }
    closedir(d);
    return rc;
}

/* Whether a kept file is run_id's: its tformer_run (none: "", a run from
 * before run ids) and its tformer_step (when there) the name's. A file of
 * another run is neither counted, kept, pruned nor averaged as this one's. */
static int is_this_runs(const char *dir, const char *name, long long step, const char *run_id) {
    char path[4400];
    if (tf_path_join(path, sizeof path, dir, name)) return 0; /* no file of this run can have that name */
    tf_st_file *f = tf_st_open(path);
    if (!f) return 0; /* unreadable: not this run's (a killed write is a .tmp file, removed at the start) */
    const char *id = tf_st_metadata(f, "tformer_run"), *s = tf_st_metadata(f, "tformer_step");
    int ours = !strcmp(id ? id : "", run_id) && (!s || strtoll(s, NULL, 10) == step);
    tf_st_close(f);
    return ours;
}

/* The steps of run_id's kept weights, ascending (malloc'd; *n of them). */
static int kept_steps(const char *dir, const char *run_id, int64_t **steps, int *n) {
    *steps = NULL, *n = 0;
    DIR *d = opendir(dir);
    if (!d) return errno == ENOENT ? 0 : tf_set_error("%s: cannot list: %s", dir, strerror(errno));
    int cap = 0, rc = 0;
    for (struct dirent *e; !rc && (e = readdir(d));) {
        long long s;
        char tail[32];
        if (sscanf(e->d_name, "step-%lld%31s", &s, tail) != 2 || strcmp(tail, ".safetensors")) continue;
        if (!is_this_runs(dir, e->d_name, s, run_id)) continue;
        if (*n == cap) {
            int64_t *p = realloc(*steps, (size_t)(cap = cap ? 2 * cap : 16) * sizeof *p);
            if (!p) rc = tf_set_error("train: out of memory");
            else *steps = p;
        }
        if (!rc) (*steps)[(*n)++] = s;
    }
    closedir(d);
    for (int i = 1; i < *n; i++) /* insertion sort: a handful of files */
        for (int j = i; j > 0 && (*steps)[j - 1] > (*steps)[j]; j--) {
            int64_t x = (*steps)[j];
            (*steps)[j] = (*steps)[j - 1], (*steps)[j - 1] = x;
        }
    return rc;
}

static void kept_path(char *out, size_t n, const char *run_dir, int64_t step) {
    snprintf(out, n, "%s/checkpoints/step-%08lld.safetensors", run_dir, (long long)step);
}

/* ps with the run id and step, as a safetensors file. */
static int save_kept(const tf_params *ps, const char *path, const char *run_id, int64_t step) {
    tf_st_writer *w = tf_st_writer_new();
    if (!w) return tf_set_error("train: out of memory");
    char num[32];
    snprintf(num, sizeof num, "%lld", (long long)step);
    int rc = tf_st_writer_set_metadata(w, "tformer_step", num) ||
             (run_id[0] && tf_st_writer_set_metadata(w, "tformer_run", run_id));
    for (int i = 0; !rc && i < tf_params_count(ps); i++) {
        const tf_tensor *t = tf_params_tensor(ps, i);
        if (t) rc = tf_st_writer_add(w, tf_params_name(ps, i), t);
    }
    rc = rc || tf_st_writer_save(w, path);
    tf_st_writer_free(w);
    return rc ? -1 : 0;
}

int tf_run_keep_weights(const tf_params *ps, const char *run_dir, const char *run_id, int64_t step, int keep) {
    char dir[4096], path[4200];
    if (tf_path_join(dir, sizeof dir, run_dir, "checkpoints")) return -1;
    if (mkdir(dir, 0755) && errno != EEXIST) return tf_set_error("%s: cannot create: %s", dir, strerror(errno));
    kept_path(path, sizeof path, run_dir, step);
    int64_t *steps;
    int n;
    if (save_kept(ps, path, run_id, step) || kept_steps(dir, run_id, &steps, &n)) return -1;
    for (int i = 0; i < n - keep; i++) { /* the oldest beyond the last `keep` */
        kept_path(path, sizeof path, run_dir, steps[i]);
        if (remove(path) && errno != ENOENT) {
            free(steps);
            return tf_set_error("%s: cannot remove: %s", path, strerror(errno));
        }
    }
    free(steps);
    return 0;
}

/* acc[i] (+)= params; with scale, params = acc * scale instead. */
static int accumulate(tf_params *ps, float **acc, int first, float scale) {
    for (int i = 0; i < tf_params_count(ps); i++) {
        tf_tensor *t = tf_params_tensor(ps, i);
        float *x = tf_f32(t);
        int64_t n = tf_numel(t);
        if (first && !(acc[i] = malloc((size_t)n * sizeof *x))) return tf_set_error("train: out of memory");
        for (int64_t j = 0; j < n; j++) {
            if (scale) x[j] = acc[i][j] * scale;
            else acc[i][j] = first ? x[j] : acc[i][j] + x[j];
        }
    }
    return 0;
}

/* Each kept file's weights, loaded in turn into ps, summed into acc. */
static int sum_kept(tf_params *ps, const char *run_dir, const int64_t *steps, int n, float **acc) {
    char path[4200];
    for (int k = 0; k < n; k++) {
        kept_path(path, sizeof path, run_dir, steps[k]);
        tf_st_file *f = tf_st_open(path);
        int rc = !f || tf_params_load(ps, f, 1) || accumulate(ps, acc, k == 0, 0);
        tf_st_close(f);
        if (rc) return -1;
    }
    return 0;
}

int tf_run_average(tf_task *task, const char *run_dir, const char *run_id, int last, int *n_used) {
    char dir[4096];
    if (tf_path_join(dir, sizeof dir, run_dir, "checkpoints")) return -1;
    tf_params *ps = task->vt->params(task);
    int np = tf_params_count(ps), n;
    int64_t *steps;
    if (kept_steps(dir, run_id, &steps, &n)) return -1;
    int first = n > last ? n - last : 0;
    float **acc = calloc((size_t)np, sizeof *acc), **now = calloc((size_t)np, sizeof *now);
    int rc = !acc || !now ? tf_set_error("train: out of memory") : n == 0 ? tf_set_error("%s: no weights kept", dir) : 0;
    rc = rc || accumulate(ps, now, 1, 0); /* the latest weights, put back after */
    rc = rc || sum_kept(ps, run_dir, steps + first, n - first, acc) || accumulate(ps, acc, 0, 1.0f / (float)(n - first));
    rc = rc || tf_run_save_model(task, run_dir, "averaged");
    if (np > 0 && now && now[np - 1]) accumulate(ps, now, 0, 1.0f);
    for (int i = 0; i < np; i++) free(acc ? acc[i] : NULL), free(now ? now[i] : NULL);
    free(acc), free(now), free(steps);
    if (!rc && n_used) *n_used = n - first;
    return rc ? -1 : 0;
}
