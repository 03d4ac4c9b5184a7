/* Standard input a chunk of lines at a time (cli.h): bounded memory
 * whatever the input's length, and an answer for each chunk before more is
 * read, so a writer that waits for its answers gets them. A chunk ends at
 * `max` lines, at the end of the input, or when the lines read so far are
 * all that is ready (poll: nothing more to read without waiting). */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <zlib.h>

#include "cli.h"

enum { LINES_MAX_LINE = 1 << 26 }; /* 64 MiB: a longer line is refused, not buffered */

void cli_lines_init(cli_lines *r, int fd) {
    memset(r, 0, sizeof *r);
    r->fd = fd;
}

int cli_lines_gunzip(const cli_verb *v, cli_lines *r) {
    unsigned char m[2];
    if (pread(r->fd, m, 2, 0) != 2 || m[0] != 0x1f || m[1] != 0x8b) return 0;
    int fd = dup(r->fd);
    if (fd < 0 || !(r->gz = gzdopen(fd, "rb"))) {
        if (fd >= 0) close(fd);
        cli_die(v, "cannot read a gzipped file: out of memory or descriptors");
    }
    return 1;
}

void cli_lines_free(cli_lines *r) {
    if (r->gz) gzclose((gzFile)r->gz);
    free(r->buf);
    memset(r, 0, sizeof *r);
}

/* Whether more input can be read at once (poll with no wait; an error or hang-up counts as ready: read says). */
static int ready(int fd) {
    struct pollfd p = {fd, POLLIN, 0};
    int n;
    while ((n = poll(&p, 1, 0)) < 0 && errno == EINTR) {}
    return n != 0;
}

/* More bytes into the buffer (blocking); 0 at the end of input. */
static ssize_t fill(const cli_verb *v, cli_lines *r) {
    if (r->cap - r->len < 65536 && r->start) { /* the lines handed out are done with: move the rest down */
        memmove(r->buf, r->buf + r->start, r->len - r->start);
        r->len -= r->start, r->consumed -= r->start, r->start = 0;
    }
    if (r->cap - r->len < 65536) { /* room for a read of 64 KiB at least */
        size_t cap = r->cap ? r->cap : 65536;
        while (cap - r->len < 65536) cap *= 2;
        char *nb = realloc(r->buf, cap);
        if (!nb) cli_die(v, "cannot read standard input: out of memory");
        r->buf = nb, r->cap = cap;
    }
    ssize_t got;
    int zerr = Z_OK;
    size_t room = r->cap - r->len < (1u << 30) ? r->cap - r->len : (1u << 30);
    if (r->gz) {
        got = gzread((gzFile)r->gz, r->buf + r->len, (unsigned)room);
        const char *why = got <= 0 ? gzerror((gzFile)r->gz, &zerr) : NULL;
        if (got < 0 || (got == 0 && zerr != Z_OK && zerr != Z_STREAM_END)) {
            char msg[4300];
            snprintf(msg, sizeof msg, "cannot gunzip %s: %s", r->name ? r->name : "standard input",
                     zerr == Z_BUF_ERROR ? "truncated" : why ? why : "a read error");
            cli_die(v, msg);
        }
    } else {
        while ((got = read(r->fd, r->buf + r->len, room)) < 0 && errno == EINTR) {}
    }
    if (got < 0) {
        char msg[4300];
        snprintf(msg, sizeof msg, "cannot read %s: %s", r->name ? r->name : "standard input", strerror(errno));
        cli_die(v, msg);
    }
    r->len += (size_t)got;
    return got;
}

int cli_lines_next(const cli_verb *v, cli_lines *r, int max, const char **lines, size_t *lens) {
    r->start = r->consumed; /* the previous chunk's lines are done with: fill may move the rest down */
    size_t off[max > 0 ? max : 1], rel = 0; /* offsets from r->start: valid across fill */
    int n = 0;
    while (n < max) {
        size_t at = r->start + rel;
        char *nl = at < r->len ? memchr(r->buf + at, '\n', r->len - at) : NULL;
        if (nl || (r->eof && at < r->len)) {
            size_t e = nl ? (size_t)(nl - r->buf) : r->len, len = e - at;
            if (len && r->buf[e - 1] == '\r' && !r->keep_cr) len--;
            off[n] = rel, lens[n++] = len;
            rel = (nl ? e + 1 : r->len) - r->start;
            continue;
        }
        if (r->eof || (n > 0 && !r->gz && !ready(r->fd))) break;
        if (r->len - at > LINES_MAX_LINE) {
            char msg[4300];
            snprintf(msg, sizeof msg, "%s line %lld: longer than %d MiB", r->name ? r->name : "standard input",
                     (long long)(r->line_no + n + 1), LINES_MAX_LINE >> 20);
            cli_die(v, msg);
        }
        if (fill(v, r) == 0) r->eof = 1;
    }
    for (int i = 0; i < n; i++) lines[i] = r->buf + r->start + off[i];
    r->consumed = r->start + rel;
    r->line_no += n;
    return n;
}

size_t cli_bytes_next(const cli_verb *v, cli_lines *r, const char **p, int *eof) {
    r->start = r->consumed; /* the bytes taken are done with: fill may move the rest down */
    if (!r->eof && fill(v, r) == 0) r->eof = 1;
    *p = r->buf ? r->buf + r->consumed : "";
    *eof = r->eof;
    return r->len - r->consumed;
}

void cli_bytes_take(cli_lines *r, size_t n) { r->consumed += n; }

int cli_bytes_waiting(const cli_lines *r) { return !r->eof && (r->gz || ready(r->fd)); }

void cli_flush_or_die(const cli_verb *v) {
    errno = 0;
    if (!fflush(stdout) && !ferror(stdout)) return;
    if (!errno && fcntl(fileno(stdout), F_GETFL) < 0) errno = EBADF; /* an earlier write failed: a closed descriptor? */
    char msg[256];
    snprintf(msg, sizeof msg, "standard output: write error%s%s", errno ? ": " : "", errno ? strerror(errno) : "");
    cli_die(v, msg);
}
