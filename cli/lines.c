/* Standard input a chunk of lines at a time (cli.h): bounded memory
 * whatever the input's length, and an answer for each chunk before more is
 * read, so a writer that waits for its answers gets them. A chunk ends at
 * `max` lines, at the end of the input, or when the lines read so far are
 * all that is ready (poll: nothing more to read without waiting). Input that
 * starts with gzip's magic bytes (1f 8b) is gunzipped as it is read, a pipe
 * as well as a file (`tformer encode < x.gz`, `zcat`-less pipelines): zlib's
 * inflate over read(), 64 KiB of compressed input held at a time. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <zlib.h>

#include "cli.h"

enum { LINES_MAX_LINE = 1 << 26 }; /* 64 MiB: a longer line is refused, not buffered */
enum { GZ_IN = 65536 };            /* compressed bytes held at a time */

/* The gunzip state of an input that started with gzip's magic bytes. */
typedef struct {
    z_stream s;
    unsigned char in[GZ_IN];
    int in_member; /* inside a gzip member: its end not reached yet */
    int raw_eof;   /* the compressed input ended */
    int out_full;  /* the last inflate filled its output: more may come without reading */
} gunzip;

void cli_lines_init(cli_lines *r, int fd) {
    memset(r, 0, sizeof *r);
    r->fd = fd;
}

void cli_lines_free(cli_lines *r) {
    gunzip *z = r->gz;
    if (z) inflateEnd(&z->s);
    free(z);
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

static const char *input_name(const cli_lines *r) { return r->name ? r->name : "standard input"; }

/* Up to n raw bytes from the descriptor (blocking); 0 at its end. A read error exits naming the input. */
static size_t read_raw(const cli_verb *v, const cli_lines *r, void *p, size_t n) {
    ssize_t got;
    while ((got = read(r->fd, p, n)) < 0 && errno == EINTR) {}
    if (got < 0) {
        char msg[4300];
        snprintf(msg, sizeof msg, "cannot read %s: %s", input_name(r), strerror(errno));
        cli_die(v, msg);
    }
    return (size_t)got;
}

static _Noreturn void gz_die(const cli_verb *v, const cli_lines *r, const char *why) {
    char msg[4400];
    snprintf(msg, sizeof msg, "cannot gunzip %s: %s", input_name(r), why);
    cli_die(v, msg);
}

/* The first bytes read (r->buf[0, r->len)) start with gzip's magic bytes: they become the compressed input, and
 * what is read from here on is gunzipped. A lone first byte 0x1f waits for the second (text never starts so). */
static void sniff(const cli_verb *v, cli_lines *r) {
    r->sniffed = 1;
    unsigned char *b = (unsigned char *)r->buf;
    if (r->len == 1 && b[0] == 0x1f) r->len += read_raw(v, r, r->buf + 1, 1);
    if (r->len < 2 || b[0] != 0x1f || b[1] != 0x8b) return;
    gunzip *z = calloc(1, sizeof *z);
    if (!z) cli_die(v, "cannot gunzip: out of memory");
    if (inflateInit2(&z->s, 16 + MAX_WBITS) != Z_OK) free(z), cli_die(v, "cannot gunzip: out of memory");
    memcpy(z->in, r->buf, r->len);
    z->s.next_in = z->in, z->s.avail_in = (uInt)r->len, z->in_member = 1;
    r->gz = z, r->len = 0;
}

/* Up to room gunzipped bytes at p (blocking); 0 at the end. After a member's end, another member follows
 * (concatenated gzip files, as gzip -d reads them) or the rest is ignored (zlib's gzread does the same). */
static size_t gz_read(const cli_verb *v, cli_lines *r, char *p, size_t room) {
    gunzip *z = r->gz;
    for (;;) {
        if (!z->s.avail_in && !z->raw_eof && !z->out_full) {
            size_t got = read_raw(v, r, z->in, sizeof z->in);
            z->s.next_in = z->in, z->s.avail_in = (uInt)got, z->raw_eof = got == 0;
        }
        if (!z->in_member) {
            if (!z->s.avail_in || z->s.next_in[0] != 0x1f) return 0; /* the end, or trailing bytes ignored */
            if (inflateReset(&z->s) != Z_OK) gz_die(v, r, "zlib cannot start the next member");
            z->in_member = 1;
        }
        if (!z->s.avail_in && z->raw_eof && !z->out_full) gz_die(v, r, "truncated (the gzip data ends before its end marker)");
        z->s.next_out = (unsigned char *)p, z->s.avail_out = (uInt)room;
        int rc = inflate(&z->s, Z_NO_FLUSH);
        size_t out = room - z->s.avail_out;
        z->out_full = rc != Z_STREAM_END && z->s.avail_out == 0;
        if (rc == Z_STREAM_END) z->in_member = 0;
        else if (rc != Z_OK && rc != Z_BUF_ERROR) gz_die(v, r, z->s.msg ? z->s.msg : "not gzip data");
        if (out) return out;
    }
}

/* Whether more input can be had without waiting: gunzipped input held, or the descriptor ready. */
static int more_ready(const cli_lines *r) {
    const gunzip *z = r->gz;
    return (z && (z->s.avail_in || z->out_full)) || ready(r->fd);
}

/* More bytes into the buffer (blocking); 0 at the end of input. */
static size_t fill(const cli_verb *v, cli_lines *r) {
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
    size_t room = r->cap - r->len < (1u << 30) ? r->cap - r->len : (1u << 30), got;
    if (r->gz) got = gz_read(v, r, r->buf + r->len, room);
    else {
        size_t before = r->len;
        got = read_raw(v, r, r->buf + r->len, r->sniffed ? room : GZ_IN);
        r->len += got;
        if (!r->sniffed) { /* the input's first bytes: gzip's? */
            sniff(v, r);
            if (r->gz) return fill(v, r);
            got = r->len - before;
        }
        return got;
    }
    r->len += got;
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
        if (r->eof || (n > 0 && !more_ready(r))) break;
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

int cli_bytes_waiting(const cli_lines *r) { return !r->eof && more_ready(r); }

void cli_flush_or_die(const cli_verb *v) {
    errno = 0;
    if (!fflush(stdout) && !ferror(stdout)) return;
    if (!errno && fcntl(fileno(stdout), F_GETFL) < 0) errno = EBADF; /* an earlier write failed: a closed descriptor? */
    char msg[256];
    snprintf(msg, sizeof msg, "standard output: write error%s%s", errno ? ": " : "", errno ? strerror(errno) : "");
    cli_die(v, msg);
}
