/* What the ranks of a data-parallel run must have alike (tf_dist_same: the
 * settings, the data files, the weights they start from) and a task made on
 * rank 0 before the others (tf_dist_task_new: rank 0 alone writes the run
 * folder). Collective calls built on dist.c's; no MPI here. */
#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tformer/dist.h"
#include "tformer/trainer.h"
#include "train_internal.h"

#define FNV_PRIME 1099511628211ull

/* FNV-1a over 8-byte words (then the bytes left): the same bytes in the same
 * pieces give the same hash on every rank. */
uint64_t tf_dist_hash(uint64_t h, const void *p, size_t n) {
    const unsigned char *b = p;
    for (; n >= 8; n -= 8, b += 8) {
        uint64_t w;
        memcpy(&w, b, 8);
        h = (h ^ w) * FNV_PRIME;
    }
    for (; n; n--, b++) h = (h ^ *b) * FNV_PRIME;
    return h;
}

/* "N bytes, hash H" of a file's content, or why it cannot be read. */
static void file_digest(const char *path, char *out, size_t cap) {
    enum { BLOCK = 1 << 20 };
    FILE *f = tf_fopen_read(path);
    unsigned char *buf = f ? malloc(BLOCK) : NULL;
    if (!f || !buf) {
        snprintf(out, cap, "cannot be read (%s)", f ? "out of memory" : tf_error());
        if (f) fclose(f);
        return;
    }
    uint64_t h = TF_DIST_HASH_INIT;
    size_t total = 0, got;
    while ((got = fread(buf, 1, BLOCK, f)) > 0) h = tf_dist_hash(h, buf, got), total += got;
    if (ferror(f))
        snprintf(out, cap, "cannot be read (a read error)");
    else
        snprintf(out, cap, "%zu bytes, content hash %016llx", total, (unsigned long long)h);
    fclose(f);
    free(buf);
}

int tf_task_set_data(tf_task *t, const char *const *paths, int n) {
    tf_buf b = {0};
    char digest[128];
    for (int i = 0; i < n; i++) {
        file_digest(paths[i], digest, sizeof digest);
        if (!strncmp(digest, "cannot", 6)) {
            free(b.p);
            return tf_set_error("%s: %s", paths[i], digest);
        }
        /* "name\tdigest\n", tabs and newlines in a name made spaces */
        for (const char *c = paths[i]; *c; c++) {
            char ch = *c == '\t' || *c == '\n' ? ' ' : *c;
            if (tf_buf_put(&b, &ch, 1)) return free(b.p), tf_set_error("out of memory");
        }
        if (tf_buf_put(&b, "\t", 1) || tf_buf_put(&b, digest, strlen(digest)) || tf_buf_put(&b, "\n", 1))
            return free(b.p), tf_set_error("out of memory");
    }
    free(t->data_digest);
    t->data_digest = b.p; /* tf_buf keeps it NUL-terminated */
    return 0;
}

/* One "name\tvalue\n" line per item; tabs and newlines inside become spaces. */
static int put_clean(tf_buf *b, const char *s) {
    for (; *s; s++) {
        char c = *s == '\t' || *s == '\n' ? ' ' : *s;
        if (tf_buf_put(b, &c, 1)) return -1;
    }
    return 0;
}

static int items_text(const tf_dist_item *it, int n, tf_buf *b) {
    if (tf_buf_put(b, "", 0)) return -1; /* a text even without items */
    for (int i = 0; i < n; i++) {
        char digest[128] = "";
        if (it[i].file) file_digest(it[i].file, digest, sizeof digest);
        int rc = put_clean(b, it[i].name) || tf_buf_put(b, "\t", 1);
        if (!rc && it[i].file)
            rc = put_clean(b, it[i].value ? it[i].value : it[i].file) || tf_buf_put(b, ": ", 2) || put_clean(b, digest);
        else if (!rc)
            rc = put_clean(b, it[i].value ? it[i].value : "");
        if (rc || tf_buf_put(b, "\n", 1)) return tf_set_error("dist: out of memory");
    }
    return 0;
}

/* The line after *p (NULL at the end): name and value split at the tab. */
static int next_line(const char **p, char *name, char *value, size_t cap) {
    if (!*p || !**p) return 0;
    const char *end = strchr(*p, '\n'), *tab = strchr(*p, '\t');
    if (!end) end = *p + strlen(*p);
    if (!tab || tab > end) tab = end;
    snprintf(name, cap, "%.*s", (int)(tab - *p), *p);
    snprintf(value, cap, "%.*s", tab < end ? (int)(end - tab - 1) : 0, tab < end ? tab + 1 : "");
    *p = *end ? end + 1 : end;
    return 1;
}

/* Rank k's first item unlike rank 0's, as a sentence. */
static void describe(const char *mine, const char *zero, int k, int size, char *msg, size_t cap) {
    char na[160], va[160], nb[160], vb[160]; /* cut: the message holds four */
    int n = snprintf(msg, cap, "rank %d of %d was not started like rank 0: ", k, size);
    size_t left = n > 0 && (size_t)n < cap ? cap - (size_t)n : 0;
    for (;;) {
        int a = next_line(&mine, na, va, sizeof na), b = next_line(&zero, nb, vb, sizeof nb);
        if (a && b && !strcmp(na, nb) && strcmp(va, vb))
            snprintf(msg + n, left, "%s is %s there, %s on rank 0", na, va, vb);
        else if (a && b && strcmp(na, nb))
            snprintf(msg + n, left, "it has %s %s where rank 0 has %s %s", na, va, nb, vb);
        else if (a != b)
            snprintf(msg + n, left, a ? "it has %s %s, which rank 0 has not" : "it lacks %s %s, which rank 0 has",
                     a ? na : nb, a ? va : vb);
        else if (a)
            continue;
        else
            snprintf(msg + n, left, "their settings differ");
        break;
    }
    size_t len = strlen(msg);
    snprintf(msg + len, cap - len, " (every rank needs the same arguments, data and run folder)");
}

/* Rank 0's text to every rank; rank k's description of the difference to every rank. */
static int report_difference(const tf_buf *b, int k) {
    uint64_t len = b->n;
    char msg[1024] = "";
    int rank = tf_dist_rank();
    if (tf_dist_bcast(&len, sizeof len, 0)) return -1;
    char *zero = rank == 0 ? b->p : malloc(len + 1);
    if (tf_dist_agree(zero ? 0 : tf_set_error("dist: out of memory"))) return -1;
    int rc = tf_dist_bcast(zero, len, 0); /* the same length everywhere: fails on every rank or none */
    if (!rc && rank == k) {
        zero[len] = 0;
        describe(b->p, zero, k, tf_dist_size(), msg, sizeof msg);
    }
    if (zero != b->p) free(zero);
    if (rc || tf_dist_bcast(msg, sizeof msg, k)) return -1;
    msg[sizeof msg - 1] = 0;
    tf_set_error("%s", msg);
    return tf_dist_error_share();
}

int tf_dist_same(const tf_dist_item *items, int n) {
    int size = tf_dist_size();
    if (size == 1) return 0;
    tf_buf b = {0};
    int rc = items_text(items, n, &b);
    if (tf_dist_agree(rc)) return free(b.p), -1;
    uint64_t h = tf_dist_hash(TF_DIST_HASH_INIT, b.p, b.n), *all = calloc((size_t)size, sizeof *all);
    if (tf_dist_agree(all ? 0 : tf_set_error("dist: out of memory"))) return free(b.p), free(all), -1;
    tf_dist_allgather(&h, sizeof h, all);
    int k = 1;
    while (k < size && all[k] == all[0]) k++;
    free(all);
    rc = k < size ? report_difference(&b, k) : 0;
    free(b.p);
    return rc;
}

/* ---------------------------------------------------------------- settings */

enum { MAX_ITEMS = 512, ITEM_VALUE = 1024 };
typedef struct {
    tf_dist_item *it;
    char (*val)[ITEM_VALUE];
    int n;
} item_list;

static int field_item(void *user, const tf_field *f, void *obj) {
    item_list *l = user;
    if (l->n == MAX_ITEMS) return tf_set_error("dist: more than %d settings to compare", MAX_ITEMS);
    if (tf_fields_format(f, obj, l->val[l->n], ITEM_VALUE) < 0)
        snprintf(l->val[l->n], ITEM_VALUE, "(a value of %d bytes or more)", ITEM_VALUE);
    l->it[l->n] = (tf_dist_item){f->name, l->val[l->n], NULL};
    l->n++;
    return 0;
}

int tf_dist_same_fields(const tf_fields *f, int n, const tf_dist_item *extra, int n_extra) {
    if (tf_dist_size() == 1) return 0;
    item_list l = {calloc(MAX_ITEMS + (size_t)n_extra, sizeof *l.it), calloc(MAX_ITEMS, sizeof *l.val), 0};
    int rc = !l.it || !l.val ? tf_set_error("dist: out of memory") : tf_fields_each(f, n, field_item, &l);
    if (!rc && n_extra) memcpy(l.it + l.n, extra, (size_t)n_extra * sizeof *extra);
    rc = tf_dist_agree(rc) || tf_dist_same(l.it, l.n + n_extra);
    free(l.it), free(l.val);
    return rc ? -1 : 0;
}

/* ---------------------------------------------------------------- a task, rank 0 first */

/* A folder this run created: the files make() put in it (a tokenizer
 * installed before the data was refused), then the folder; a subfolder
 * keeps it. tf_error stays make's. */
static void remove_new_folder(const char *dir) {
    DIR *d = opendir(dir);
    char path[4200];
    for (struct dirent *e; d && (e = readdir(d));)
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..") &&
            !tf_path_join(path, sizeof path, dir, e->d_name))
            unlink(path);
    if (d) closedir(d);
    rmdir(dir);
}

/* Rank 0's make(), with the folder it created removed again when it fails. */
static tf_task *make_first(tf_task *(*make)(void *arg), void *arg, const char *run_dir) {
    struct stat st;
    int existed = !run_dir || (stat(run_dir, &st) == 0 && !tf_run_created(run_dir));
    tf_task *t = make(arg);
    if (!t && !existed) remove_new_folder(run_dir);
    return t;
}

tf_task *tf_dist_task_new(tf_task *(*make)(void *arg), void *arg, const char *run_dir) {
    if (tf_dist_size() == 1) return make_first(make, arg, run_dir);
    int first = tf_dist_rank() == 0;
    tf_task *t = first ? make_first(make, arg, run_dir) : NULL;
    if (tf_dist_agree(first && !t ? -1 : 0)) return tf_task_free(t), NULL; /* rank 0's folder is ready */
    if (!first) t = make(arg);
    if (tf_dist_agree(t ? 0 : -1)) return tf_task_free(t), NULL;
    return t;
}
