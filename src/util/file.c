/* Growable buffers and whole files: read, and written atomically. */
#define _XOPEN_SOURCE 700 /* realpath */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util.h"

int tf_buf_put(tf_buf *b, const void *data, size_t n) {
    if (n > SIZE_MAX / 2 - b->n) return tf_set_error("buffer too large");
    if (b->n + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->n + n + 1) cap *= 2;
        char *p = realloc(b->p, cap);
        if (!p) return tf_set_error("out of memory");
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->n, data, n);
    b->n += n;
    b->p[b->n] = 0;
    return 0;
}

const char *tf_memfind(const char *hay, size_t n, const char *needle, size_t m) {
    if (m == 0) return hay;
    const char *end = hay + n;
    for (const char *p = hay; (size_t)(end - p) >= m; p++) {
        p = memchr(p, needle[0], (size_t)(end - p) - m + 1);
        if (!p) return NULL;
        if (!memcmp(p, needle, m)) return p;
    }
    return NULL;
}

/* What a path that is not a regular file names, for a refusal. */
static const char *file_kind(mode_t m) {
    return S_ISDIR(m) ? "is a directory, not a file"
         : S_ISFIFO(m) ? "is a FIFO (a named pipe), not a regular file: refusing to read it (it would wait for a writer)"
         : S_ISCHR(m) ? "is a character device, not a regular file: refusing to read it"
         : S_ISBLK(m) ? "is a block device, not a regular file: refusing to read it"
         : S_ISSOCK(m) ? "is a socket, not a regular file: refusing to read it"
                      : "is not a regular file: refusing to read it";
}

int tf_open_regular(const char *path) {
    struct stat st;
    if (!stat(path, &st) && !S_ISREG(st.st_mode)) return tf_set_error("%s: %s", path, file_kind(st.st_mode));
    /* O_NONBLOCK: a FIFO put in its place since never blocks the open; fstat decides */
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) return tf_set_error("%s: cannot open: %s", path, strerror(errno));
    if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
        int e = errno;
        close(fd);
        return tf_set_error("%s: %s", path, S_ISREG(st.st_mode) ? strerror(e) : file_kind(st.st_mode));
    }
    int fl = fcntl(fd, F_GETFL);
    if (fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) < 0) {
        close(fd);
        return tf_set_error("%s: cannot open: %s", path, strerror(errno));
    }
    return fd;
}

FILE *tf_fopen_read(const char *path) {
    int fd = tf_open_regular(path);
    if (fd < 0) return NULL;
    FILE *f = fdopen(fd, "rb");
    if (!f) close(fd), tf_set_error("%s: cannot open: %s", path, strerror(errno));
    return f;
}

char *tf_read_file(const char *path, size_t *len) {
    FILE *f = tf_fopen_read(path);
    if (!f) return NULL;
    tf_buf b = {0};
    char chunk[65536];
    size_t n;
    struct stat st; /* the buffer sized once for a regular file: no doubling past its size */
    long long size = !fstat(fileno(f), &st) ? (long long)st.st_size : -1;
    if (size > 0 && (uint64_t)size < SIZE_MAX / 2 && (b.p = malloc((size_t)size + 1))) b.cap = (size_t)size + 1;
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0)
        if (tf_buf_put(&b, chunk, n)) {
            free(b.p);
            fclose(f);
            return tf_set_error("%s: out of memory after reading %zu of its %lld bytes (the file is read whole)", path,
                                b.n, size), NULL;
        }

    int err = ferror(f);
    fclose(f);
    if (err) {
        free(b.p);
        return tf_set_error("%s: read error", path), NULL;
    }
    if (!b.p && tf_buf_put(&b, "", 0)) return NULL;
    *len = b.n;
    return b.p;
}

/* The process's umask, without changing it even for a moment where /proc tells. */
static mode_t current_umask(void) {
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    unsigned m;
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "Umask: %o", &m) == 1) return fclose(f), (mode_t)m;
    if (f) fclose(f);
    mode_t old = umask(022);
    umask(old);
    return old;
}

/* What a write to path should do (tf_atomic_file's rules): 0 with *through
 * set for a device or FIFO and *target for a followed link; -1 refused. */
static int output_target(const char *path, char **target, int *through) {
    struct stat st;
    *target = NULL, *through = 0;
    if (lstat(path, &st)) return errno == ENOENT ? 0 : tf_set_error("%s: %s", path, strerror(errno));
    if (S_ISLNK(st.st_mode)) {
        if (!(*target = realpath(path, NULL)) || stat(*target, &st))
            return free(*target), *target = NULL,
                   tf_set_error("%s: a symbolic link to nothing (%s): refusing to write through it", path, strerror(errno));
    }
    if (S_ISREG(st.st_mode)) return 0;
    if (S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode)) return *through = 1, 0;
    const char *what = S_ISDIR(st.st_mode) ? "a directory" : S_ISBLK(st.st_mode) ? "a block device"
                       : S_ISSOCK(st.st_mode) ? "a socket" : "not a regular file";
    free(*target), *target = NULL;
    return tf_set_error("%s: %s, not a file: refusing to replace it", path, what);
}

int tf_atomic_open(tf_atomic_file *a, const char *path) {
    int through;
    a->f = NULL, a->tmp = NULL, a->path = path;
    if (output_target(path, &a->target, &through)) return -1;
    if (a->target) a->path = a->target;
    if (through) {
        if (!(a->f = fopen(a->path, "wb"))) {
            tf_set_error("%s: cannot open for writing: %s", path, strerror(errno));
            free(a->target), a->target = NULL;
            return -1;
        }
        return 0;
    }
    size_t n = strlen(a->path);
    if (!(a->tmp = malloc(n + 12))) return free(a->target), a->target = NULL, tf_set_error("%s: out of memory", path);
    memcpy(a->tmp, a->path, n);
    memcpy(a->tmp + n, ".tmp.XXXXXX", 12);
    int fd = mkstemp(a->tmp); /* 0600: the umask's permissions given below */
    if (fd >= 0 && (fchmod(fd, 0666 & ~current_umask()) || !(a->f = fdopen(fd, "wb")))) close(fd), unlink(a->tmp);
    if (!a->f) {
        tf_set_error("%s: cannot create a temporary file: %s", path, strerror(errno));
        free(a->tmp), a->tmp = NULL, free(a->target), a->target = NULL;
        return -1;
    }
    return 0;
}

void tf_atomic_abort(tf_atomic_file *a) {
    if (a->f) {
        fclose(a->f);
        if (a->tmp) unlink(a->tmp);
    }
    free(a->tmp), free(a->target);
    a->f = NULL, a->tmp = NULL, a->target = NULL;
}

int tf_atomic_commit(tf_atomic_file *a, int ok) {
    int caller = !ok || ferror(a->f) ? errno : 0; /* the cause of the caller's failed write (a full disk: ENOSPC) */
    errno = 0;
    ok = ok && !ferror(a->f) && fflush(a->f) == 0 && (!a->tmp || fsync(fileno(a->f)) == 0);
    ok = fclose(a->f) == 0 && ok;
    a->f = NULL;
    if (!ok || (a->tmp && rename(a->tmp, a->path) != 0)) {
        tf_set_error("%s: write failed: %s", a->path, strerror(caller ? caller : errno ? errno : EIO));
        if (a->tmp) unlink(a->tmp);
        free(a->tmp), free(a->target), a->tmp = NULL, a->target = NULL;
        return -1;
    }
    free(a->tmp), free(a->target), a->tmp = NULL, a->target = NULL;
    return 0;
}

int tf_write_file(const char *path, const void *data, size_t n) {
    tf_atomic_file a;
    if (tf_atomic_open(&a, path)) return -1;
    return tf_atomic_commit(&a, fwrite(data, 1, n, a.f) == n);
}

int tf_copy_file(const char *from, const char *to) {
    size_t n;
    char *data = tf_read_file(from, &n);
    if (!data) return -1;
    int rc = tf_write_file(to, data, n);
    free(data);
    return rc;
}
