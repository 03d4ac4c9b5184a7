/* Data files, gzip'ed or plain (train.en.gz as Multi30k ships it): whole, and as lines. Apart
 * from file.c, so that a program linking only the rest of the library needs no zlib. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "util.h"

size_t tf_memory_quarter(void) {
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    size_t mem = pages > 0 && page > 0 && (size_t)pages < SIZE_MAX / (size_t)page ? (size_t)pages * (size_t)page
                                                                                  : SIZE_MAX;
    struct rlimit r;
    if (!getrlimit(RLIMIT_AS, &r) && r.rlim_cur != RLIM_INFINITY && r.rlim_cur < mem) mem = (size_t)r.rlim_cur;
    return mem / 4;
}

/* "PATH (N bytes): ... above the limit" for a file read whole, when bytes pass the limit. */
static int refuse_whole(const char *path, long long size, size_t bytes, int gz) {
    if (gz)
        return tf_set_error("%s (%lld bytes gzip'ed): its text passed %zu MB, the limit for a file read whole (a quarter "
                            "of this machine's memory, or of ulimit -v): the file is held in memory; give less data",
                            path, size, bytes >> 20);
    return tf_set_error("%s (%lld bytes): above %zu MB, the limit for a file read whole (a quarter of this machine's "
                        "memory, or of ulimit -v): the file is held in memory; give less data", path, size, bytes >> 20);
}

/* zlib's error for f, or NULL: a stream cut short reads as a short file with Z_BUF_ERROR set. */
static const char *gz_problem(gzFile f, const char *path, int got) {
    int err = Z_OK;
    const char *msg = gzerror(f, &err);
    if (got >= 0 && err == Z_OK) return NULL;
    size_t k = strlen(path); /* zlib's message starts with the path */
    if (msg && !strncmp(msg, path, k) && !strncmp(msg + k, ": ", 2)) msg += k + 2;
    return msg && *msg ? msg : "read error";
}

/* The rest of f, gunzipped (f closed). */
static char *read_gunzipped(gzFile f, int gz_fd, const char *path, size_t *len) {
    tf_buf b = {0};
    char chunk[65536];
    int got;
    size_t limit = tf_memory_quarter();
    while ((got = gzread(f, chunk, sizeof chunk)) > 0)
        if (b.n + (size_t)got > limit) {
            struct stat st;
            refuse_whole(path, fstat(gz_fd, &st) ? -1 : (long long)st.st_size, limit, 1);
            return gzclose(f), free(b.p), NULL;
        } else if (tf_buf_put(&b, chunk, (size_t)got)) {
            tf_set_error("%s: out of memory after %zu bytes", path, b.n);
            return gzclose(f), free(b.p), NULL;
        }
    const char *msg = gz_problem(f, path, got);
    if (msg) tf_set_error("%s: not a readable gzip file: %s", path, msg);
    gzclose(f);
    if (!msg && !b.p && tf_buf_put(&b, "", 0)) return NULL;
    if (msg) return free(b.p), NULL;
    *len = b.n;
    return b.p;
}

char *tf_read_data(const char *path, size_t *len) {
    int fd = tf_open_regular(path); /* a FIFO or a device is refused, never waited on */
    if (fd < 0) return NULL;
    unsigned char m[2];
    struct stat st;
    size_t limit = tf_memory_quarter();
    if (!fstat(fd, &st) && (unsigned long long)st.st_size > limit) /* refused before anything is allocated */
        return close(fd), refuse_whole(path, (long long)st.st_size, limit, 0), NULL;
    if (pread(fd, m, 2, 0) != 2 || m[0] != 0x1f || m[1] != 0x8b) return close(fd), tf_read_file(path, len);
    gzFile f = gzdopen(fd, "rb");
    if (!f) return close(fd), tf_set_error("%s: cannot open: out of memory", path), NULL;
    return read_gunzipped(f, fd, path, len);
}

enum { PIECE = 1 << 20 };

/* Up to cap bytes of f or fd (gzip or plain) into buf: the count, 0 at the end, -1 + an error naming path. */
static long read_some(gzFile gz, int fd, const char *path, char *buf, size_t cap) {
    if (gz) {
        int got = gzread(gz, buf, (unsigned)cap);
        const char *msg = gz_problem(gz, path, got);
        if (msg) return tf_set_error("%s: not a readable gzip file: %s", path, msg), -1;
        return got;
    }
    ssize_t got;
    while ((got = read(fd, buf, cap)) < 0 && errno == EINTR) {}
    if (got < 0) return tf_set_error("%s: read error: %s", path, strerror(errno)), -1;
    return (long)got;
}

int tf_read_data_pieces(const char *path, tf_data_cut_fn cut, tf_data_piece_fn fn, void *ctx) {
    int fd = tf_open_regular(path); /* a FIFO or a device is refused, never waited on */
    if (fd < 0) return -1;
    unsigned char m[2];
    gzFile gz = NULL;
    if (pread(fd, m, 2, 0) == 2 && m[0] == 0x1f && m[1] == 0x8b && !(gz = gzdopen(fd, "rb")))
        return close(fd), tf_set_error("%s: cannot open: out of memory", path);
    struct stat st;
    long long size = fstat(fd, &st) ? -1 : (long long)st.st_size;
    size_t cap = 2 * PIECE, n = 0, seen = 0, limit = tf_memory_quarter(); /* seen: held bytes already searched for a cut, less 2 */
    char *buf = malloc(cap);
    int rc = buf ? 0 : tf_set_error("%s: out of memory", path);
    for (long got = 1; !rc && got > 0;) {
        if (cap - n < PIECE) { /* no place to cut in what is held: hold more */
            char *nb = cap < SIZE_MAX / 2 && cap * 2 <= limit ? realloc(buf, cap * 2) : NULL;
            if (!nb && cap * 2 > limit) {
                rc = tf_set_error("%s (%lld bytes%s): %zu bytes without a place to cut the text (a line too long, or "
                                  "a tokenizer that encodes a text whole?) reach the limit of %zu MB (a quarter of "
                                  "this machine's memory, or of ulimit -v)", path, size, gz ? " gzip'ed" : "", n,
                                  limit >> 20);
                break;
            }
            if (!nb) {
                rc = tf_set_error("%s (%lld bytes%s): out of memory: %zu bytes without a place to cut the text (a "
                                  "line too long?)", path, size, gz ? " gzip'ed" : "", n);
                break;
            }
            buf = nb, cap *= 2;
        }
        if ((got = read_some(gz, fd, path, buf + n, cap - n)) < 0) rc = -1;
        n += got > 0 ? (size_t)got : 0;
        size_t k = got == 0 ? n : n >= PIECE ? cut(ctx, buf + seen, n - seen) : 0;
        if (k && got) k += seen; /* a cut depends on the 2 bytes before it: the search goes on from there */
        if (!k && n >= PIECE) seen = n - 2;
        if (rc || (!k && got)) continue;
        seen = 0;
        rc = fn(ctx, buf, k);
        memmove(buf, buf + k, n - k), n -= k;
    }
    free(buf);
    if (gz) gzclose(gz);
    else close(fd);
    return rc;
}

struct tf_line_reader {
    const char *path;
    int fd;
    gzFile gz;
    char *buf;
    size_t cap, start, n; /* the bytes held: buf[start, n) not yet handed out */
    long long line;
    int eof;
};

tf_line_reader *tf_line_reader_open(const char *path) {
    int fd = tf_open_regular(path); /* a FIFO or a device is refused, never waited on */
    if (fd < 0) return NULL;
    tf_line_reader *r = calloc(1, sizeof *r);
    unsigned char m[2];
    if (r && pread(fd, m, 2, 0) == 2 && m[0] == 0x1f && m[1] == 0x8b && !(r->gz = gzdopen(fd, "rb")))
        free(r), r = NULL;
    if (r) r->cap = 2 * PIECE, r->buf = malloc(r->cap);
    if (!r || !r->buf) {
        if (r) free(r->buf), r->gz ? (void)gzclose(r->gz) : (void)0;
        if (!r || !r->gz) close(fd);
        free(r);
        return tf_set_error("%s: out of memory", path), NULL;
    }
    r->path = path, r->fd = fd;
    return r;
}

int tf_line_reader_next(tf_line_reader *r, const char **line, size_t *n) {
    for (size_t searched = r->start;;) {
        char *e = memchr(r->buf + searched, '\n', r->n - searched);
        if (e || (r->eof && r->n > r->start)) {
            size_t end = e ? (size_t)(e - r->buf) : r->n;
            *line = r->buf + r->start, *n = end - r->start;
            r->start = e ? end + 1 : end, r->line++;
            return 1;
        }
        if (r->eof) return 0;
        searched = r->n;
        if (r->start) { /* what is handed out goes: the line being read moves to the front */
            memmove(r->buf, r->buf + r->start, r->n - r->start);
            searched -= r->start, r->n -= r->start, r->start = 0;
        }
        if (r->n > TF_LINE_MAX)
            return tf_set_error("%s line %lld: longer than %d MiB (a binary file, or a text without newlines?)", r->path,
                                r->line + 1, TF_LINE_MAX >> 20);
        if (r->cap - r->n < PIECE) {
            char *nb = realloc(r->buf, r->cap * 2);
            if (!nb) return tf_set_error("%s line %lld: out of memory", r->path, r->line + 1);
            r->buf = nb, r->cap *= 2;
        }
        long got = read_some(r->gz, r->fd, r->path, r->buf + r->n, r->cap - r->n);
        if (got < 0) return -1;
        r->n += (size_t)got, r->eof = got == 0;
    }
}

void tf_line_reader_close(tf_line_reader *r) {
    if (!r) return;
    if (r->gz) gzclose(r->gz);
    else close(r->fd);
    free(r->buf), free(r);
}

int tf_lines_read(const char *path, tf_lines *out) {
    memset(out, 0, sizeof *out);
    size_t n, lines = 0;
    if (!(out->text = tf_read_data(path, &n))) return -1;
    for (size_t i = 0; i < n; i++) lines += out->text[i] == '\n';
    lines += n > 0 && out->text[n - 1] != '\n';
    if (lines > INT32_MAX) return tf_lines_free(out), tf_set_error("%s: more than %d lines", path, INT32_MAX);
    out->start = malloc((lines ? lines : 1) * sizeof *out->start);
    out->len = malloc((lines ? lines : 1) * sizeof *out->len);
    if (!out->start || !out->len) return tf_lines_free(out), tf_set_error("%s: out of memory", path);
    for (size_t i = 0; i < n;) {
        size_t e = i;
        while (e < n && out->text[e] != '\n') e++;
        out->start[out->n] = i;
        out->len[out->n++] = e > i && out->text[e - 1] == '\r' ? e - i - 1 : e - i;
        i = e + 1;
    }
    return 0;
}

void tf_lines_free(tf_lines *l) {
    free(l->text), free(l->start), free(l->len);
    memset(l, 0, sizeof *l);
}
