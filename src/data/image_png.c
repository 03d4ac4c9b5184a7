/* One PNG file as an image of 1 or 3 channels in [0,1] (libpng's reader):
 * palettes and low-bit grey expanded, 16-bit samples kept and divided by
 * 65535, alpha dropped, RGB to grey by PIL's weights. libpng reports errors
 * through a longjmp; its message is kept and returned naming the file.
 * Writing: 8-bit grey or RGB, encoded in memory and written atomically. */
#include <errno.h>
#include <png.h>
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "../core/core_internal.h"
#include "../util/util.h"
#include "tformer/images.h"

typedef struct {
    char msg[256];
} png_err_buf;

static void on_error(png_structp p, png_const_charp msg) {
    png_err_buf *e = png_get_error_ptr(p);
    snprintf(e->msg, sizeof e->msg, "%s", msg);
    png_longjmp(p, 1);
}

static void on_warning(png_structp p, png_const_charp msg) { (void)p, (void)msg; }

/* Sample k of a row of 8- or 16-bit (big-endian) samples, in [0,1]. */
static float sample(const png_byte *row, size_t k, int depth) {
    if (depth == 16) return (float)((row[2 * k] << 8 | row[2 * k + 1]) / 65535.0);
    return row[k] / 255.0f;
}

/* Rows of src_ch samples per pixel (grey, grey+alpha, RGB, RGBA) into (C,H,W). */
static void convert(png_bytep *rows, int src_ch, int depth, int channels, int64_t H, int64_t W, float *out) {
    for (int64_t y = 0; y < H; y++)
        for (int64_t x = 0; x < W; x++) {
            size_t k = (size_t)x * (size_t)src_ch;
            float v[3];
            for (int c = 0; c < 3; c++) v[c] = sample(rows[y], k + (src_ch >= 3 ? (size_t)c : 0), depth);
            if (channels == 1) /* PIL's convert("L") weights: ITU-R 601-2 luma */
                out[y * W + x] = src_ch >= 3 ? (float)(0.299 * v[0] + 0.587 * v[1] + 0.114 * v[2]) : v[0];
            else
                for (int c = 0; c < 3; c++) out[c * H * W + y * W + x] = v[c];
        }
}

/* What the header says, after the transforms; raw_bits: the pixel bits as stored. */
typedef struct {
    int64_t H, W;
    int src_ch, depth;
    size_t rowbytes;
    double raw_bits;
} png_shape;

/* libpng's setjmp in a function of its own for each phase: no local of the
 * caller changes between the setjmp and a longjmp. */
static int read_header(png_structp p, png_infop info, FILE *f, png_shape *s) {
    if (setjmp(png_jmpbuf(p))) return -1;
    png_init_io(p, f);
    png_read_info(p, info);
    s->raw_bits = (double)png_get_image_width(p, info) * png_get_image_height(p, info) * png_get_channels(p, info) *
                  png_get_bit_depth(p, info);
    png_set_expand(p); /* palette -> RGB, grey < 8 bits -> 8, tRNS -> alpha */
    png_set_interlace_handling(p);
    png_read_update_info(p, info);
    s->H = png_get_image_height(p, info), s->W = png_get_image_width(p, info);
    s->src_ch = png_get_channels(p, info), s->depth = png_get_bit_depth(p, info);
    s->rowbytes = png_get_rowbytes(p, info);
    return 0;
}

static int read_rows(png_structp p, png_infop info, png_bytep *rows) {
    if (setjmp(png_jmpbuf(p))) return -1;
    png_read_image(p, rows);
    png_read_end(p, info);
    return 0;
}

/* Deflate shrinks data 1032 times at most (zlib's FAQ): a file smaller than
 * its pixels / 1032 cannot hold them, and nothing is allocated for them. */
#define DEFLATE_MAX_RATIO 1032.0

static int decode(const char *path, png_structp p, png_infop info, FILE *f, const png_err_buf *err, int channels,
                  tf_images *out) {
    png_shape s;
    if (read_header(p, info, f, &s)) return tf_set_error("%s: not a readable PNG: %s", path, err->msg);
    size_t total;
    if (s.H > 65535 || s.W > 65535 || !tf_mul_size(s.rowbytes, (size_t)s.H, &total))
        return tf_set_error("%s: an image of %lldx%lld is too large", path, (long long)s.W, (long long)s.H);
    struct stat st;
    double least = s.raw_bits / 8.0 / DEFLATE_MAX_RATIO;
    if (!fstat(fileno(f), &st) && (double)st.st_size < least)
        return tf_set_error("%s: not a readable PNG: its %lldx%lld pixels need at least %.0f bytes of compressed data, "
                            "the file has %lld (truncated or corrupt)", path, (long long)s.W, (long long)s.H, least,
                            (long long)st.st_size);
    if (s.H * s.W > TF_IMAGES_MAX_PIXELS) /* a PNG bomb: a small file whose header declares a huge image */
        return tf_set_error("%s: an image of %lldx%lld (%lld pixels) is above the limit of %lld pixels "
                            "(TF_IMAGES_MAX_PIXELS): refusing to decode it",
                            path, (long long)s.W, (long long)s.H, (long long)(s.H * s.W), (long long)TF_IMAGES_MAX_PIXELS);
    png_bytep *rows = calloc((size_t)s.H, sizeof *rows), data = malloc(total);
    int rc = rows && data ? 0 : tf_set_error("%s: out of memory", path);
    for (int64_t y = 0; !rc && y < s.H; y++) rows[y] = data + (size_t)y * s.rowbytes;
    if (!rc && read_rows(p, info, rows)) rc = tf_set_error("%s: not a readable PNG: %s", path, err->msg);
    if (!rc && !(out->pixels = malloc((size_t)(channels * s.H * s.W) * sizeof(float))))
        rc = tf_set_error("%s: out of memory", path);
    if (!rc) {
        convert(rows, s.src_ch, s.depth, channels, s.H, s.W, out->pixels);
        out->n = 1, out->channels = channels, out->height = (int)s.H, out->width = (int)s.W;
    }
    free(data), free(rows);
    return rc;
}

/* The file opened at its start, its PNG signature checked; NULL on error. */
static FILE *open_png(const char *path) {
    FILE *f = tf_fopen_read(path); /* a FIFO or device: refused, never waited on */
    if (!f) return NULL;
    unsigned char sig[8];
    if (fread(sig, 1, 8, f) != 8 || png_sig_cmp(sig, 0, 8)) {
        fclose(f);
        tf_set_error("%s: not a PNG file (no PNG signature)", path);
        return NULL;
    }
    rewind(f);
    return f;
}

static int header_only(png_structp p, png_infop info, FILE *f, png_uint_32 *w, png_uint_32 *h) {
    if (setjmp(png_jmpbuf(p))) return -1;
    png_init_io(p, f);
    png_read_info(p, info); /* the chunks before the pixels: nothing is decoded or allocated for them */
    *w = png_get_image_width(p, info), *h = png_get_image_height(p, info);
    return 0;
}

int tf_images_png_size(const char *path, int *width, int *height) {
    FILE *f = open_png(path);
    if (!f) return -1;
    png_err_buf err = {{0}};
    png_structp p = png_create_read_struct(PNG_LIBPNG_VER_STRING, &err, on_error, on_warning);
    png_infop info = p ? png_create_info_struct(p) : NULL;
    png_uint_32 w = 0, h = 0;
    int rc = !info ? tf_set_error("%s: out of memory", path)
             : header_only(p, info, f, &w, &h) ? tf_set_error("%s: not a readable PNG: %s", path, err.msg)
             : w > 65535 || h > 65535 ? tf_set_error("%s: an image of %lux%lu is too large", path, (unsigned long)w,
                                                     (unsigned long)h)
                                      : 0;
    png_destroy_read_struct(&p, info ? &info : NULL, NULL);
    fclose(f);
    if (!rc) *width = (int)w, *height = (int)h;
    return rc;
}

int tf_images_read_png(const char *path, int channels, tf_images *out) {
    memset(out, 0, sizeof *out);
    if (channels != 1 && channels != 3) return tf_set_error("%s: channels %d must be 1 or 3", path, channels);
    FILE *f = open_png(path);
    if (!f) return -1;
    png_err_buf err = {{0}};
    png_structp p = png_create_read_struct(PNG_LIBPNG_VER_STRING, &err, on_error, on_warning);
    png_infop info = p ? png_create_info_struct(p) : NULL;
    int rc = info ? decode(path, p, info, f, &err, channels, out) : tf_set_error("%s: out of memory", path);
    png_destroy_read_struct(&p, info ? &info : NULL, NULL);
    fclose(f);
    if (rc) tf_images_free(out);
    return rc ? -1 : 0;
}

/* ---------------------------------------------------------------- writing */

static void to_buf(png_structp p, png_bytep data, png_size_t n) {
    if (tf_buf_put(png_get_io_ptr(p), data, n)) png_error(p, "out of memory");
}

static void no_flush(png_structp p) { (void)p; }

/* Image i of s as 8-bit rows into b (libpng's errors longjmp back here). */
static int encode(png_structp p, png_infop info, const tf_images *s, int64_t i, png_bytep row, tf_buf *b) {
    if (setjmp(png_jmpbuf(p))) return -1;
    int C = s->channels, H = s->height, W = s->width;
    png_set_write_fn(p, b, to_buf, no_flush);
    png_set_IHDR(p, info, (png_uint_32)W, (png_uint_32)H, 8, C == 1 ? PNG_COLOR_TYPE_GRAY : PNG_COLOR_TYPE_RGB,
                 PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
    png_write_info(p, info);
    const float *px = s->pixels + (size_t)i * C * H * W; // px: (C,H,W)
    for (int y = 0; y < H; y++) {
        for (int x = 0; x < W; x++)
            for (int c = 0; c < C; c++) {
                float v = px[((size_t)c * H + y) * W + x] * 255.0f + 0.5f;
                row[x * C + c] = (png_byte)(v <= 0.0f ? 0 : v >= 255.0f ? 255 : (int)v);
            }
        png_write_row(p, row);
    }
    png_write_end(p, NULL);
    return 0;
}

int tf_images_write_png(const tf_images *s, int64_t i, const char *path) {
    if (i < 0 || i >= s->n) return tf_set_error("%s: image %lld of a set of %lld", path, (long long)i, (long long)s->n);
    if (s->channels != 1 && s->channels != 3)
        return tf_set_error("%s: %d channels: PNG files are written grey (1) or RGB (3)", path, s->channels);
    png_err_buf err = {{0}};
    tf_buf b = {0};
    png_structp p = png_create_write_struct(PNG_LIBPNG_VER_STRING, &err, on_error, on_warning);
    png_infop info = p ? png_create_info_struct(p) : NULL;
    png_bytep row = malloc((size_t)s->width * (size_t)s->channels);
    int rc = !info || !row ? tf_set_error("%s: out of memory", path)
             : encode(p, info, s, i, row, &b) ? tf_set_error("%s: cannot encode the PNG: %s", path, err.msg)
                                               : tf_write_file(path, b.p, b.n);
    png_destroy_write_struct(&p, info ? &info : NULL);
    free(row), free(b.p);
    return rc;
}
