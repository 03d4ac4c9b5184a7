/* Labelled image sets: idx files (Fashion-MNIST, MNIST) and scikit-learn's
 * digits.csv, gzip'ed or plain (zlib's gzread passes plain files through),
 * as float pixels in [0,1], NCHW; a set's sub-range. PNG files:
 * image_png.c; the loader of batches: image_loader.c. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "../core/core_internal.h"
#include "../util/util.h"
#include "tformer/images.h"

/* ---------------------------------------------------------------- whole files through zlib */

/* A regular file opened through zlib; NULL + an error naming it (a FIFO or
 * device is refused, never waited on: tf_open_regular). */
static gzFile open_gz(const char *path) {
    int fd = tf_open_regular(path);
    if (fd < 0) return NULL;
    gzFile f = gzdopen(fd, "rb");
    if (!f) close(fd), tf_set_error("%s: cannot open: out of memory", path);
    return f;
}

/* The file's bytes, gunzipped when it is gzip'ed; NULL + an error naming it.
 * A truncated gzip stream reads as a short file with Z_BUF_ERROR set: an error. */
static unsigned char *read_gz(const char *path, size_t *len) {
    gzFile f = open_gz(path);
    if (!f) return NULL;
    size_t cap = 1 << 16, n = 0;
    unsigned char *buf = malloc(cap);
    int got = buf ? 1 : 0, err = Z_OK;
    while (got > 0) {
        if (cap - n < (1 << 16)) {
            unsigned char *nb = cap > SIZE_MAX / 4 ? NULL : realloc(buf, cap * 2);
            if (!nb) break;
            buf = nb, cap *= 2;
        }
        if ((got = gzread(f, buf + n, 1 << 16)) > 0) n += (size_t)got;
    }
    const char *msg = gzerror(f, &err);
    if (got > 0 || !buf) tf_set_error("%s: out of memory after %zu bytes", path, n);
    else if (got < 0 || err != Z_OK) { /* zlib's message starts with the path */
        size_t k = strlen(path);
        if (msg && !strncmp(msg, path, k) && !strncmp(msg + k, ": ", 2)) msg += k + 2;
        tf_set_error("%s: not a readable gzip file: %s", path, msg && *msg ? msg : "read error");
    }
    gzclose(f);
    if (got != 0 || err != Z_OK || !buf) return free(buf), NULL;
    *len = n;
    return buf;
}

static uint32_t be32(const unsigned char *p) {
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | (uint32_t)p[3];
}

/* ---------------------------------------------------------------- idx */

/* Up to n bytes of f into buf (gzread takes an int at a time): the count, or -1. */
static int64_t gz_fill(gzFile f, unsigned char *buf, size_t n) {
    size_t got = 0;
    while (got < n) {
        unsigned chunk = n - got > (1u << 30) ? 1u << 30 : (unsigned)(n - got);
        int k = gzread(f, buf + got, chunk);
        if (k < 0) return -1;
        if (k == 0) break;
        got += (size_t)k;
    }
    return (int64_t)got;
}

/* zlib's error for f, or NULL: a stream cut short reads as a short file with Z_BUF_ERROR set. */
static const char *gz_failed(gzFile f, const char *path) {
    int err = Z_OK;
    const char *msg = gzerror(f, &err);
    if (err == Z_OK) return NULL;
    size_t k = strlen(path); /* zlib's message starts with the path */
    if (msg && !strncmp(msg, path, k) && !strncmp(msg + k, ": ", 2)) msg += k + 2;
    return msg && *msg ? msg : "read error";
}

/* The data of an idx file of unsigned bytes with ndim dimensions, streamed
 * through zlib: the header, then exactly the bytes it declares, read as
 * they come, so memory grows with the data present and never with what a
 * header claims; then nothing may follow. dims into dim[]. */
typedef struct {
    gzFile f;
    const char *path, *what;
    int ndim;
    size_t need, have;
    unsigned char *data;
} idx_stream;

static int idx_stream_header(idx_stream *s, uint32_t dim[3]) {
    unsigned char head[16];
    uint32_t magic = 0x00000800u | (uint32_t)s->ndim;
    size_t size = 4 + 4 * (size_t)s->ndim;
    int64_t got = gz_fill(s->f, head, size);
    const char *gz = gz_failed(s->f, s->path);
    if (got < 0 || gz) return tf_set_error("%s: not a readable gzip file: %s", s->path, gz ? gz : "read error");
    if (got < 4 || be32(head) != magic)
        return tf_set_error("%s: not an idx file of %s (magic 0x%08x, expected 0x%08x: unsigned bytes, %d dimension%s)",
                            s->path, s->what, got < 4 ? 0u : be32(head), magic, s->ndim, s->ndim > 1 ? "s" : "");
    if ((size_t)got < size)
        return tf_set_error("%s: truncated: the header needs %zu bytes, the file has %lld", s->path, size, (long long)got);
    s->need = 1;
    for (int d = 0; d < s->ndim; d++) {
        dim[d] = be32(head + 4 + 4 * d);
        if (dim[d] == 0 || !tf_mul_size(s->need, dim[d], &s->need))
            return tf_set_error("%s: dimension %d is %u", s->path, d, dim[d]);
    }
    return 0;
}

/* The declared bytes into s->data, the buffer doubling as they arrive; then none after. */
static int idx_stream_data(idx_stream *s, uint32_t n_items) {
    size_t cap = 0;
    int64_t got = 1;
    while (got > 0 && s->have < s->need) {
        if (s->have == cap) {
            size_t grow = cap ? (cap > s->need / 2 ? s->need : 2 * cap) : (s->need < 65536 ? s->need : 65536);
            unsigned char *nb = realloc(s->data, grow);
            if (!nb) return tf_set_error("%s: out of memory after %zu bytes", s->path, s->have);
            s->data = nb, cap = grow;
        }
        if ((got = gz_fill(s->f, s->data + s->have, cap - s->have)) > 0) s->have += (size_t)got;
    }
    unsigned char rest[4096];
    int64_t after = s->have == s->need ? gz_fill(s->f, rest, sizeof rest) : 0;
    const char *gz = gz_failed(s->f, s->path);
    if (got < 0 || after < 0 || gz) return tf_set_error("%s: not a readable gzip file: %s", s->path, gz ? gz : "read error");
    if (s->have < s->need)
        return tf_set_error("%s: truncated: %u %s need %zu bytes of data, the file has %zu", s->path, n_items, s->what,
                            s->need, s->have);
    if (after > 0)
        return tf_set_error("%s: %s%lld byte%s after the last of %u %s", s->path, after == (int64_t)sizeof rest ? "at least " : "",
                            (long long)after, after > 1 ? "s" : "", n_items, s->what);
    return 0;
}

/* The data bytes of path (an idx file of ndim dimensions), or NULL + an error naming it. */
static unsigned char *idx_read(const char *path, int ndim, uint32_t dim[3]) {
    idx_stream s = {open_gz(path), path, ndim == 3 ? "images" : "labels", ndim, 0, 0, NULL};
    if (!s.f) return NULL;
    int rc = idx_stream_header(&s, dim) || idx_stream_data(&s, dim[0]);
    gzclose(s.f);
    if (rc) free(s.data), s.data = NULL;
    return s.data;
}

/* An idx file's label bytes as int32, checked against n_classes (0: the largest + 1). */
static int idx_labels(const char *path, const unsigned char *d, int64_t n, int n_classes, tf_images *out) {
    if (!(out->labels = malloc((size_t)n * sizeof *out->labels))) return tf_set_error("%s: out of memory", path);
    int hi = 0;
    for (int64_t i = 0; i < n; i++) {
        out->labels[i] = d[i];
        if (n_classes > 0 && d[i] >= n_classes)
            return tf_set_error("%s: label %d of image %lld is out of range [0,%d)", path, d[i], (long long)i, n_classes);
        if (d[i] >= hi) hi = d[i] + 1;
    }
    out->n_classes = n_classes > 0 ? n_classes : hi;
    return 0;
}

int tf_images_read_idx(const char *images, const char *labels, int n_classes, tf_images *out) {
    memset(out, 0, sizeof *out);
    uint32_t di[3] = {0}, dl[3] = {0};
    unsigned char *pi = idx_read(images, 3, di), *pl = NULL;
    int rc = !pi;
    if (!rc && labels) rc = !(pl = idx_read(labels, 1, dl));
    if (!rc && labels && dl[0] != di[0])
        rc = tf_set_error("%s has %u images but %s has %u labels", images, di[0], labels, dl[0]);
    size_t count = 0;
    if (!rc && (di[1] > 65535 || di[2] > 65535 || !tf_mul_size((size_t)di[0] * di[1], di[2], &count)))
        rc = tf_set_error("%s: images of %ux%u are too large", images, di[1], di[2]);
    if (!rc && !(out->pixels = malloc(count * sizeof *out->pixels))) rc = tf_set_error("%s: out of memory", images);
    if (!rc) {
        out->n = di[0], out->channels = 1, out->height = (int)di[1], out->width = (int)di[2];
        for (size_t i = 0; i < count; i++) out->pixels[i] = pi[i] / 255.0f;
    }
    if (!rc && labels) rc = idx_labels(labels, pl, out->n, n_classes, out);
    free(pi), free(pl);
    if (rc) tf_images_free(out);
    return rc ? -1 : 0;
}

/* dir/<split>-<kind>-ubyte.gz, or without .gz, whichever exists, into path. */
static int find_idx(const char *dir, const char *split, const char *kind, char *path, size_t n) {
    int k = snprintf(path, n, "%s/%s-%s-ubyte.gz", dir, split, kind);
    if (k < 0 || (size_t)k >= n) return tf_set_error("%s: path too long", dir);
    struct stat st; /* which exists (a FIFO is refused when read, never opened here) */
    if (stat(path, &st)) {
        path[k - 3] = 0; /* the plain file */
        if (stat(path, &st))
            return tf_set_error("%s: no %s-%s-ubyte.gz or %s-%s-ubyte", dir, split, kind, split, kind);
    }
    return 0;
}

int tf_images_read_dir(const char *dir, const char *split, int n_classes, tf_images *out) {
    memset(out, 0, sizeof *out);
    char images[4096], labels[4096];
    if (find_idx(dir, split, "images-idx3", images, sizeof images) ||
        find_idx(dir, split, "labels-idx1", labels, sizeof labels))
        return -1;
    return tf_images_read_idx(images, labels, n_classes, out);
}

/* ---------------------------------------------------------------- scikit-learn's digits */

/* One value of a line: an integral number in [0,hi], then ',' or the line's end. */
static int digits_value(const char **p, const char *end, int hi, int last, double *v) {
    char *stop;
    errno = 0;
    *v = strtod(*p, &stop);
    if (stop == *p || errno || *v < 0 || *v > hi || *v != (double)(int)*v) return -1;
    while (stop < end && (*stop == ' ' || *stop == '\r')) stop++;
    if (last ? stop != end : (stop >= end || *stop != ',')) return -1;
    *p = stop + !last;
    return 0;
}

static int digits_line(const char *path, int line, const char *s, const char *end, float *pix, int32_t *label) {
    int commas = 0;
    for (const char *c = s; c < end; c++) commas += *c == ',';
    if (commas != 64)
        return tf_set_error("%s:%d: %d values; a line holds 65, separated by commas (64 pixels 0..16, the label 0..9)",
                            path, line, commas + 1);
    double v;
    for (int k = 0; k < 65; k++) {
        if (digits_value(&s, end, k < 64 ? 16 : 9, k == 64, &v))
            return tf_set_error("%s:%d: value %d must be %s", path, line, k + 1,
                                k < 64 ? "a whole number 0..16 (a pixel)" : "a label 0..9");
        if (k < 64) pix[k] = (float)(v / 16.0);
        else *label = (int32_t)v;
    }
    return 0;
}

int tf_images_read_digits(const char *path, tf_images *out) {
    memset(out, 0, sizeof *out);
    size_t len;
    unsigned char *text = read_gz(path, &len);
    if (!text) return -1;
    int64_t lines = 0;
    for (size_t i = 0; i < len; i++) lines += text[i] == '\n' || (i + 1 == len);
    int rc = 0;
    if (!(out->pixels = malloc((size_t)(lines ? lines : 1) * 64 * sizeof(float))) ||
        !(out->labels = malloc((size_t)(lines ? lines : 1) * sizeof(int32_t))))
        rc = tf_set_error("%s: out of memory", path);
    const char *s = (const char *)text, *all = s + len;
    for (int line = 1; !rc && s < all; line++) {
        const char *e = memchr(s, '\n', (size_t)(all - s));
        if (!e) e = all;
        if (memchr(s, 0, (size_t)(e - s))) rc = tf_set_error("%s:%d: a NUL byte: not a text file", path, line);
        else if (e > s && !(e == s + 1 && *s == '\r') &&
                 !(rc = digits_line(path, line, s, e, out->pixels + out->n * 64, out->labels + out->n)))
            out->n++;
        s = e + 1;
    }
    if (!rc && out->n == 0) rc = tf_set_error("%s: no images", path);
    free(text);
    out->channels = 1, out->height = out->width = 8, out->n_classes = 10;
    if (rc) tf_images_free(out);
    return rc ? -1 : 0;
}

/* ---------------------------------------------------------------- sets */

int tf_images_take(const tf_images *src, int64_t start, int64_t n, tf_images *out) {
    memset(out, 0, sizeof *out);
    if (start < 0 || n < 1 || start > src->n - n)
        return tf_set_error("images: [%lld,%lld) is not a range of the %lld images", (long long)start,
                            (long long)(start + n), (long long)src->n);
    size_t per = (size_t)src->channels * (size_t)src->height * (size_t)src->width, bytes;
    if (!tf_mul_size(per * sizeof(float), (size_t)n, &bytes) || !(out->pixels = malloc(bytes)) ||
        (src->labels && !(out->labels = malloc((size_t)n * sizeof(int32_t))))) {
        tf_images_free(out);
        return tf_set_error("images: out of memory for %lld images", (long long)n);
    }
    memcpy(out->pixels, src->pixels + (size_t)start * per, bytes);
    if (src->labels) memcpy(out->labels, src->labels + start, (size_t)n * sizeof(int32_t));
    out->n = n, out->channels = src->channels, out->height = src->height, out->width = src->width;
    out->n_classes = src->n_classes;
    return 0;
}

void tf_images_free(tf_images *im) {
    if (!im) return;
    free(im->pixels), free(im->labels);
    memset(im, 0, sizeof *im);
}

/* ---------------------------------------------------------------- resizing */

/* The boxes of n output cells over an input of m: cell i covers input
 * pixels [first[i], first[i] + span) with weights w (n,span), the overlaps
 * with [i m / n, (i+1) m / n) over its length (0 past its end). */
typedef struct {
    int span, *first;
    double *w;
} boxes;

static int boxes_make(boxes *b, int n, int m) {
    b->span = m / n + 2 < m ? m / n + 2 : m;
    b->first = malloc((size_t)n * sizeof *b->first), b->w = calloc((size_t)n * (size_t)b->span, sizeof *b->w);
    if (!b->first || !b->w) return -1;
    for (int i = 0; i < n; i++) {
        double lo = (double)i * m / n, hi = (double)(i + 1) * m / n;
        int f = (int)lo;
        b->first[i] = f + b->span > m ? m - b->span : f;
        for (int k = 0; k < b->span; k++) {
            int j = b->first[i] + k;
            double a = j > lo ? j : lo, e = j + 1 < hi ? j + 1 : hi;
            b->w[(size_t)i * b->span + k] = e > a ? (e - a) / (hi - lo) : 0.0;
        }
    }
    return 0;
}

/* One channel s (H,W) -> d (height,width). */
static void resize_plane(const boxes *by, const boxes *bx, const float *s, int W, float *d, int height, int width) {
    for (int y = 0; y < height; y++)
        for (int x = 0; x < width; x++) {
            double sum = 0;
            for (int ky = 0; ky < by->span; ky++) {
                double wy = by->w[(size_t)y * by->span + ky];
                const float *row = s + (size_t)(by->first[y] + ky) * W + bx->first[x];
                for (int kx = 0; wy > 0 && kx < bx->span; kx++) sum += wy * bx->w[(size_t)x * bx->span + kx] * row[kx];
            }
            d[y * width + x] = (float)sum;
        }
}

int tf_images_resize(const tf_images *src, int height, int width, tf_images *out) {
    memset(out, 0, sizeof *out);
    if (height < 1 || width < 1 || height > 65536 || width > 65536)
        return tf_set_error("images: cannot resize to %dx%d", width, height);
    int H = src->height, W = src->width, C = src->channels;
    size_t per = (size_t)C * (size_t)height * (size_t)width, bytes;
    boxes by = {0}, bx = {0};
    int rc = boxes_make(&by, height, H) || boxes_make(&bx, width, W) ||
             !tf_mul_size(per * sizeof(float), (size_t)src->n, &bytes) || !(out->pixels = malloc(bytes)) ||
             (src->labels && !(out->labels = malloc((size_t)src->n * sizeof(int32_t))));
    for (int64_t p = 0; !rc && p < src->n * C; p++) /* each channel of each image */
        resize_plane(&by, &bx, src->pixels + (size_t)p * H * W, W, out->pixels + (size_t)p * height * width, height,
                     width);
    free(by.first), free(by.w), free(bx.first), free(bx.w);
    if (rc) {
        tf_images_free(out);
        return tf_set_error("images: out of memory resizing %lld images", (long long)src->n);
    }
    if (src->labels) memcpy(out->labels, src->labels, (size_t)src->n * sizeof(int32_t));
    out->n = src->n, out->channels = C, out->height = height, out->width = width, out->n_classes = src->n_classes;
    return 0;
}

/* ---------------------------------------------------------------- grids */

int tf_images_grid(const tf_images *s, int cols, int scale, int gap, float gap_value, tf_images *out) {
    memset(out, 0, sizeof *out);
    if (s->n < 1 || cols < 1 || scale < 1 || scale > 64 || gap < 0 || gap > 64)
        return tf_set_error("images: a grid of %lld images needs cols >= 1, scale in [1,64], gap in [0,64]",
                            (long long)s->n);
    int64_t rows = (s->n + cols - 1) / cols, C = s->channels, h = (int64_t)s->height * scale, w = (int64_t)s->width * scale;
    int64_t GH = rows * h + (rows + 1) * gap, GW = cols * w + (cols + 1) * gap;
    if (GH > 65535 || GW > 65535) return tf_set_error("images: a grid of %lldx%lld pixels is too large", (long long)GW,
                                                      (long long)GH);
    if (!(out->pixels = malloc((size_t)(C * GH * GW) * sizeof(float))))
        return tf_set_error("images: out of memory for a grid");
    for (int64_t k = 0; k < C * GH * GW; k++) out->pixels[k] = gap_value;
    for (int64_t i = 0; i < s->n; i++)
        for (int64_t c = 0; c < C; c++)
            for (int64_t y = 0; y < h; y++)
                for (int64_t x = 0; x < w; x++) {
                    int64_t gy = gap + (i / cols) * (h + gap) + y, gx = gap + (i % cols) * (w + gap) + x;
                    out->pixels[(c * GH + gy) * GW + gx] =
                        s->pixels[((i * C + c) * s->height + y / scale) * s->width + x / scale];
                }
    out->n = 1, out->channels = (int)C, out->height = (int)GH, out->width = (int)GW;
    return 0;
}
