/* A run folder holds one run (issue 54). Before a task writes anything into
 * it (its tokenizer), a command takes the folder's lock and checks what the
 * folder holds: a fresh run into a folder that holds a run is refused unless
 * asked to overwrite it, which removes the old run's files first. A fresh
 * run writes a new run id (run_dir/run_id); the trainer records it in every
 * checkpoint and counts, keeps or averages only checkpoints that carry it.
 *
 * The lock is an exclusive flock on run_dir/.lock. A process may take it
 * more than once (the command before the task, the trainer after): the
 * folders this process holds are counted here, keyed by device and inode. */
#define _DEFAULT_SOURCE /* flock */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "tformer/trainer.h"
#include "train_internal.h"

/* ---------------------------------------------------------------- the lock */

enum { MAX_HELD = 16 };
static struct {
    dev_t dev;
    ino_t ino;
    int fd, refs, created; /* created: the first lock made the folder */
    char id[40]; /* the run id begun by this process (fresh run), or "" */
} g_held[MAX_HELD];

static int held_index(const char *run_dir) {
    struct stat st;
    if (stat(run_dir, &st)) return -1;
    for (int i = 0; i < MAX_HELD; i++)
        if (g_held[i].refs > 0 && g_held[i].dev == st.st_dev && g_held[i].ino == st.st_ino) return i;
    return -1;
}

int tf_run_lock(const char *run_dir) {
    char path[4200];
    int created = mkdir(run_dir, 0755) == 0;
    if (!created && errno != EEXIST) return tf_set_error("%s: cannot create: %s", run_dir, strerror(errno));
    struct stat st;
    if (stat(run_dir, &st)) return tf_set_error("%s: cannot read: %s", run_dir, strerror(errno));
    if (!S_ISDIR(st.st_mode)) return tf_set_error("%s: not a folder", run_dir);
    int i = held_index(run_dir);
    if (i >= 0) return g_held[i].refs++, 0;
    for (i = 0; i < MAX_HELD && g_held[i].refs > 0; i++) {}
    if (i == MAX_HELD) return tf_set_error("%s: this process holds %d run folders already", run_dir, MAX_HELD);
    if (tf_path_join(path, sizeof path, run_dir, ".lock")) return -1;
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0666);
    if (fd < 0) return tf_set_error("%s: cannot create: %s", path, strerror(errno));
    if (flock(fd, LOCK_EX | LOCK_NB)) {
        int busy = errno == EWOULDBLOCK;
        close(fd);
        return busy ? tf_set_error("%s: another training is writing into this folder (it holds %s)", run_dir, path)
                    : tf_set_error("%s: cannot lock: %s", path, strerror(errno));
    }
    g_held[i].dev = st.st_dev, g_held[i].ino = st.st_ino, g_held[i].fd = fd, g_held[i].refs = 1, g_held[i].id[0] = 0;
    g_held[i].created = created;
    return 0;
}

int tf_run_created(const char *run_dir) {
    int i = held_index(run_dir);
    return i >= 0 && g_held[i].created;
}

void tf_run_unlock(const char *run_dir) {
    int i = held_index(run_dir);
    if (i < 0 || --g_held[i].refs > 0) return;
    close(g_held[i].fd);
    g_held[i].fd = -1;
}

/* ---------------------------------------------------------------- what a run leaves */

/* Folders a run writes, files by name, files by ending. */
static const char *const RUN_DIRS[] = {"checkpoints", "best", "averaged", NULL};
static const char *const RUN_FILES[] = {"checkpoint.safetensors", "model.safetensors", "config.json", "losses.csv",
                                        "run_id", "loss.png", "metrics.json", "confusion.png", "finetune.json",
                                        "generation_config.json", "listops.json" /* TF_LISTOPS_SETTINGS */,
                                        /* tokenizers: tformer's, Hugging Face's, GPT-2's, SentencePiece's */
                                        "vocab.json", "merges.txt", "vocab.txt", "chars.txt", "tokenizer.tformer.json",
                                        "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json",
                                        "encoder.json", "vocab.bpe", "source.spm", "target.spm", NULL};
static const char *const RUN_ENDINGS[] = {".safetensors", ".png", NULL};

static int ends_with(const char *s, const char *end) {
    size_t n = strlen(s), m = strlen(end);
    return n >= m && !strcmp(s + n - m, end);
}

static int is_run_entry(const char *name, int is_dir) {
    const char *const *list = is_dir ? RUN_DIRS : RUN_FILES;
    for (int i = 0; list[i]; i++)
        if (!strcmp(name, list[i])) return 1;
    for (int i = 0; !is_dir && RUN_ENDINGS[i]; i++)
        if (ends_with(name, RUN_ENDINGS[i])) return 1;
    return 0;
}

static int remove_tree(const char *path) {
    struct stat st;
    if (lstat(path, &st)) return errno == ENOENT ? 0 : tf_set_error("%s: cannot remove: %s", path, strerror(errno));
    if (S_ISDIR(st.st_mode)) {
        DIR *d = opendir(path);
        if (!d) return tf_set_error("%s: cannot list: %s", path, strerror(errno));
        char sub[4400];
        int rc = 0;
        for (struct dirent *e; !rc && (e = readdir(d));) {
            if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
            rc = tf_path_join(sub, sizeof sub, path, e->d_name) ? -1 : remove_tree(sub);
        }
        closedir(d);
        if (rc) return -1;
        if (rmdir(path)) return tf_set_error("%s: cannot remove: %s", path, strerror(errno));
        return 0;
    }
    return unlink(path) && errno != ENOENT ? tf_set_error("%s: cannot remove: %s", path, strerror(errno)) : 0;
}

/* The run's entries in run_dir, the first few named into `found` (the
 * known names in their order: the checkpoint and the model first); with
 * remove, deleted. The number found, or -1. */
static int run_entries(const char *run_dir, int remove, char *found, size_t cap) {
    char path[4400];
    size_t used = 0;
    int shown = 0;
    if (cap) found[0] = 0;
    for (int list = 0; list < 2 && cap; list++)
        for (const char *const *name = list ? RUN_DIRS : RUN_FILES; *name; name++) {
            struct stat st;
            if (tf_path_join(path, sizeof path, run_dir, *name)) return -1;
            if (lstat(path, &st) || !is_run_entry(*name, S_ISDIR(st.st_mode)) || shown == 5 || used >= cap) continue;
            used += (size_t)snprintf(found + used, cap - used, "%s%s%s", shown++ ? ", " : "", *name, list ? "/" : "");
        }
    DIR *d = opendir(run_dir);
    if (!d) return tf_set_error("%s: cannot list: %s", run_dir, strerror(errno));
    int n = 0, rc = 0;
    for (struct dirent *e; !rc && (e = readdir(d));) {
        struct stat st;
        if (e->d_name[0] == '.') continue;
        if ((rc = tf_path_join(path, sizeof path, run_dir, e->d_name))) break;
        if (lstat(path, &st)) continue;
        if (!is_run_entry(e->d_name, S_ISDIR(st.st_mode))) continue;
        n++;
        if (remove) rc = remove_tree(path);
    }
    closedir(d);
    if (cap && n > shown && used < cap) snprintf(found + used, cap - used, "%s%d more", shown ? " and " : "", n - shown);
    return rc ? -1 : n;
}

/* ---------------------------------------------------------------- the run id */

static void new_id(char *id, size_t n) {
    uint64_t x = 0;
    int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
        if (read(fd, &x, sizeof x) != (ssize_t)sizeof x) x = 0;
        close(fd);
    }
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    x ^= (uint64_t)ts.tv_sec * 1000000007u ^ (uint64_t)ts.tv_nsec ^ ((uint64_t)getpid() << 32);
    snprintf(id, n, "%016llx", (unsigned long long)x);
}

static int write_id(const char *run_dir, const char *id) {
    char path[4200], text[64];
    if (tf_path_join(path, sizeof path, run_dir, "run_id")) return -1;
    int len = snprintf(text, sizeof text, "%s\n", id);
    return tf_write_file(path, text, (size_t)len);
}

/* run_dir/run_id's id, or "" when there is none (a run from before run ids). */
static int read_id(const char *run_dir, char *id, size_t n) {
    char path[4200];
    if (tf_path_join(path, sizeof path, run_dir, "run_id")) return -1;
    id[0] = 0;
    if (access(path, F_OK)) return 0;
    size_t len;
    char *text = tf_read_file(path, &len);
    if (!text) return -1;
    len = strcspn(text, "\r\n");
    int ok = len > 0 && len < n && len < 40 && strspn(text, "0123456789abcdef") == len;
    if (ok) memcpy(id, text, len), id[len] = 0;
    free(text);
    return ok ? 0 : tf_set_error("%s: not a run id (16 hexadecimal digits)", path);
}

int tf_run_id(const char *run_dir, int resume, char *id, size_t n) {
    int i = held_index(run_dir);
    if (i >= 0 && g_held[i].id[0]) return snprintf(id, n, "%s", g_held[i].id), 0;
    if (resume) return read_id(run_dir, id, n);
    new_id(id, n); /* a caller of tf_train that did not begin the folder: a new run all the same */
    if (write_id(run_dir, id)) return -1;
    if (i >= 0) snprintf(g_held[i].id, sizeof g_held[i].id, "%s", id);
    return 0;
}

/* ---------------------------------------------------------------- the start */

int tf_run_folder_begin(const char *run_dir, int kind, int resume, int overwrite) {
    if (!run_dir || !*run_dir) return tf_set_error("run folder: no folder given");
    if (resume && overwrite)
        return tf_set_error("%s: resume and overwrite exclude each other: continue the run there, or replace it",
                            run_dir);
    if (tf_run_lock(run_dir)) return -1;
    if (resume) return 0;
    char found[512];
    int n = run_entries(run_dir, 0, found, sizeof found);
    if (n > 0 && !overwrite) {
        tf_run_unlock(run_dir);
        if (kind == TF_RUN_FOLDER_TOKENIZER)
            return tf_set_error("%s holds a tokenizer or a run already (%s): refusing to mix two in one folder; "
                                "give another --out, or replace what is there with --overwrite",
                                run_dir, found);
        return tf_set_error("%s holds a run already (%s): continue it with --resume, or replace it with --overwrite "
                            "(which removes the old run's files first), or give another --out",
                            run_dir, found);
    }
    if (n < 0 || (n > 0 && run_entries(run_dir, 1, found, 0) < 0)) return tf_run_unlock(run_dir), -1;
    if (kind == TF_RUN_FOLDER_TOKENIZER) return 0;
    int i = held_index(run_dir);
    char id[40];
    new_id(id, sizeof id);
    if (write_id(run_dir, id)) return tf_run_unlock(run_dir), -1;
    if (i >= 0) snprintf(g_held[i].id, sizeof g_held[i].id, "%s", id);
    return 0;
}

void tf_run_folder_end(const char *run_dir) { tf_run_unlock(run_dir); }
