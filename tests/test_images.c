/* Images in (include/tformer/images.h): idx files plain and gzip'ed, digits
 * CSV, PNG files of every colour type written here by libpng, then a table
 * of bad inputs, each an error naming the file; and the loader's batches. */
#include <png.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "test.h"
#include "task/task_internal.h"

static char g_dir[64];

/* Each test in a fresh folder of its own (tests run alone by prefix too). */
static int fresh_dir(void) {
    if (g_dir[0]) test_rm_rf(g_dir);
    snprintf(g_dir, sizeof g_dir, "/tmp/tformer_images_XXXXXX");
    return mkdtemp(g_dir) ? 0 : -1;
}

static const char *tmp_path(const char *name) { return test_path_in(g_dir, name); }

/* Bytes into a file, gzip'ed when gz. */
static int write_bytes(const char *path, const void *b, size_t n, int gz) {
    if (gz) {
        gzFile f = gzopen(path, "wb");
        int ok = f && gzwrite(f, b, (unsigned)n) == (int)n;
        return f && gzclose(f) == Z_OK && ok ? 0 : -1;
    }
    FILE *f = fopen(path, "wb");
    int ok = f && fwrite(b, 1, n, f) == n;
    return f && fclose(f) == 0 && ok ? 0 : -1;
}

static void put32(unsigned char *p, uint32_t v) { p[0] = (unsigned char)(v >> 24), p[1] = (unsigned char)(v >> 16), p[2] = (unsigned char)(v >> 8), p[3] = (unsigned char)v; }

/* An idx image file of n images h x w (pixel (i,y,x) = (i*7 + y*w + x) % 256) and its labels (i % 3). */
static size_t idx_images(unsigned char *b, uint32_t n, uint32_t h, uint32_t w) {
    put32(b, 0x803), put32(b + 4, n), put32(b + 8, h), put32(b + 12, w);
    for (uint32_t i = 0; i < n * h * w; i++) b[16 + i] = (unsigned char)(((i / (h * w)) * 7 + i % (h * w)) % 256);
    return 16 + (size_t)n * h * w;
}

static size_t idx_labels(unsigned char *b, uint32_t n, int hi) {
    put32(b, 0x801), put32(b + 4, n);
    for (uint32_t i = 0; i < n; i++) b[8 + i] = (unsigned char)(i % (uint32_t)hi);
    return 8 + n;
}

TEST(images_idx_plain_and_gzipped) {
    CHECK(fresh_dir() == 0);
    unsigned char img[16 + 5 * 3 * 4], lab[8 + 5];
    size_t ni = idx_images(img, 5, 3, 4), nl = idx_labels(lab, 5, 3);
    for (int gz = 0; gz < 2; gz++) {
        CHECK(write_bytes(tmp_path("i"), img, ni, gz) == 0 && write_bytes(tmp_path("l"), lab, nl, !gz) == 0);
        tf_images s;
        CHECK(tf_images_read_idx(tmp_path("i"), tmp_path("l"), 0, &s) == 0);
        CHECK(s.n == 5 && s.channels == 1 && s.height == 3 && s.width == 4 && s.n_classes == 3);
        for (int i = 0; i < 5 * 12; i++) CHECK(s.pixels[i] == img[16 + i] / 255.0f);
        for (int i = 0; i < 5; i++) CHECK(s.labels[i] == i % 3);
        tf_images part;
        CHECK(tf_images_take(&s, 1, 3, &part) == 0);
        CHECK(part.n == 3 && part.pixels[0] == s.pixels[12] && part.labels[2] == s.labels[3]);
        tf_images_free(&part);
        CHECK(tf_images_take(&s, 3, 3, &part) == -1 && strstr(tf_error(), "[3,6)"));
        tf_images_free(&s);
        CHECK(tf_images_read_idx(tmp_path("i"), NULL, 0, &s) == 0 && s.labels == NULL && s.n == 5);
        tf_images_free(&s);
    }
    test_rm_rf(g_dir);
}

TEST(images_digits_csv) {
    CHECK(fresh_dir() == 0);
    char text[2][400];
    for (int l = 0; l < 2; l++) {
        size_t k = 0;
        for (int i = 0; i < 64; i++) k += (size_t)snprintf(text[l] + k, sizeof text[l] - k, "%d,", (i + l) % 17);
        snprintf(text[l] + k, sizeof text[l] - k, "%d\n", 7 + l);
    }
    char all[800];
    snprintf(all, sizeof all, "%s%s", text[0], text[1]);
    CHECK(write_bytes(tmp_path("digits.csv.gz"), all, strlen(all), 1) == 0);
    tf_images s;
    CHECK(tf_images_read_digits(tmp_path("digits.csv.gz"), &s) == 0);
    CHECK(s.n == 2 && s.height == 8 && s.width == 8 && s.n_classes == 10 && s.labels[0] == 7 && s.labels[1] == 8);
    CHECK(s.pixels[64 + 16] == 0.0f && s.pixels[64 + 15] == 1.0f && s.pixels[3] == 3.0f / 16);
    tf_images_free(&s);
    test_rm_rf(g_dir);
}

/* ---------------------------------------------------------------- PNG */

/* A w x h PNG of a colour type and depth whose samples follow a pattern;
 * palette images index a 4-colour palette. */
static int write_png(const char *path, int color, int depth, int w, int h, int interlace) {
    FILE *f = fopen(path, "wb");
    png_structp p = png_create_write_struct(PNG_LIBPNG_VER_STRING, NULL, NULL, NULL);
    png_infop info = p ? png_create_info_struct(p) : NULL;
    if (!f || !info || setjmp(png_jmpbuf(p))) return -1;
    png_init_io(p, f);
    png_set_IHDR(p, info, (png_uint_32)w, (png_uint_32)h, depth, color,
                 interlace ? PNG_INTERLACE_ADAM7 : PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
    png_color pal[4] = {{0, 0, 0}, {255, 0, 0}, {0, 255, 0}, {10, 20, 30}};
    if (color == PNG_COLOR_TYPE_PALETTE) png_set_PLTE(p, info, pal, 4);
    png_write_info(p, info);
    int passes = interlace ? png_set_interlace_handling(p) : 1;
    int ch = color == PNG_COLOR_TYPE_GRAY ? 1 : color == PNG_COLOR_TYPE_GRAY_ALPHA ? 2 : color == PNG_COLOR_TYPE_RGB ? 3
           : color == PNG_COLOR_TYPE_RGBA ? 4 : 1;
    unsigned char row[256] = {0};
    for (int pass = 0, y = 0; pass < passes; pass++, y = 0)
    for (; y < h; y++) {
        for (int x = 0; x < w; x++)
            for (int c = 0; c < ch; c++) {
                int v = (y * w + x) * 40 + c * 70, s = (x * ch + c);
                if (depth == 16) row[2 * s] = (unsigned char)(v * 3 % 256), row[2 * s + 1] = (unsigned char)(v % 256);
                else if (depth == 8) row[s] = (unsigned char)(v % 256);
                else if (depth == 2) row[s / 4] |= (unsigned char)((y * w + x) % 4 << (6 - 2 * (s % 4)));
            }
        png_write_row(p, row);
        memset(row, 0, sizeof row);
    }
    png_write_end(p, NULL);
    png_destroy_write_struct(&p, &info);
    return fclose(f);
}

TEST(images_png_every_colour_type) {
    CHECK(fresh_dir() == 0);
    tf_images s;
    /* grey 8-bit, interlaced: the samples back, divided by 255; as RGB, repeated */
    CHECK(write_png(tmp_path("g8.png"), PNG_COLOR_TYPE_GRAY, 8, 3, 2, 1) == 0);
    CHECK(tf_images_read_png(tmp_path("g8.png"), 1, &s) == 0 && s.n == 1 && s.height == 2 && s.width == 3);
    CHECK(s.pixels[4] == 160 / 255.0f && s.labels == NULL);
    tf_images_free(&s);
    CHECK(tf_images_read_png(tmp_path("g8.png"), 3, &s) == 0 && s.channels == 3);
    CHECK(s.pixels[4] == 160 / 255.0f && s.pixels[6 + 4] == s.pixels[4] && s.pixels[12 + 4] == s.pixels[4]);
    tf_images_free(&s);
    /* grey 16-bit: sample / 65535 */
    CHECK(write_png(tmp_path("g16.png"), PNG_COLOR_TYPE_GRAY, 16, 2, 2, 0) == 0);
    CHECK(tf_images_read_png(tmp_path("g16.png"), 1, &s) == 0);
    CHECK(fabsf(s.pixels[1] - (float)(((40 * 3 % 256) << 8 | 40) / 65535.0)) < 1e-7f);
    tf_images_free(&s);
    /* RGB and RGBA (alpha dropped) to grey: PIL's weights */
    for (int a = 0; a < 2; a++) {
        CHECK(write_png(tmp_path("rgb.png"), a ? PNG_COLOR_TYPE_RGBA : PNG_COLOR_TYPE_RGB, 8, 2, 2, 0) == 0);
        CHECK(tf_images_read_png(tmp_path("rgb.png"), 1, &s) == 0);
        float r = 120 / 255.0f, g = 190 / 255.0f, b = 260 % 256 / 255.0f; /* pixel 3: v = 120 */
        CHECK(fabsf(s.pixels[3] - (0.299f * r + 0.587f * g + 0.114f * b)) < 1e-6f);
        tf_images_free(&s);
        CHECK(tf_images_read_png(tmp_path("rgb.png"), 3, &s) == 0 && s.pixels[3] == r && s.pixels[4 + 3] == g);
        tf_images_free(&s);
    }
    /* a palette of 2 bits: pixel 3 is colour 3 = (10,20,30) */
    CHECK(write_png(tmp_path("pal.png"), PNG_COLOR_TYPE_PALETTE, 2, 2, 2, 0) == 0);
    CHECK(tf_images_read_png(tmp_path("pal.png"), 3, &s) == 0);
    CHECK(s.pixels[3] == 10 / 255.0f && s.pixels[4 + 3] == 20 / 255.0f && s.pixels[8 + 1] == 0 && s.pixels[1] == 1);
    tf_images_free(&s);
    /* grey of 2 bits: expanded to 8 (level 3 -> 255) */
    CHECK(write_png(tmp_path("g2.png"), PNG_COLOR_TYPE_GRAY, 2, 2, 2, 0) == 0);
    CHECK(tf_images_read_png(tmp_path("g2.png"), 1, &s) == 0 && s.pixels[3] == 1.0f && s.pixels[1] == 85 / 255.0f);
    tf_images_free(&s);
    test_rm_rf(g_dir);
}

/* ---------------------------------------------------------------- bad inputs */

typedef struct {
    const char *what;
    int kind;               /* 0 idx images + labels, 1 digits, 2 PNG */
    int n_classes;
    const char *expect[2];  /* in the message, besides the file's name */
} bad_case;

static const char *find_bytes(const char *hay, size_t n, const char *needle) {
    size_t m = strlen(needle);
    for (size_t i = 0; i + m <= n; i++)
        if (!memcmp(hay + i, needle, m)) return hay + i;
    return NULL;
}

/* The files of case c: fills img / lab and returns the path the error must name. */
static const char *make_bad(int c, const char **img, const char **lab) {
    unsigned char b[1024];
    size_t n;
    *img = tmp_path("bad_i"), *lab = tmp_path("bad_l");
    write_bytes(*lab, b, idx_labels(b, 4, 3), 0);
    n = idx_images(b, 4, 2, 2);
    switch (c) {
    case 0: put32(b, 0x801); write_bytes(*img, b, n, 0); return *img;             /* wrong magic */
    case 1: write_bytes(*img, b, n - 3, 0); return *img;                           /* truncated */
    case 2: write_bytes(*img, b, n - 3, 1); return *img;                           /* truncated, gzip'ed */
    case 3: write_bytes(*img, b, n, 0); write_bytes(*lab, b, idx_labels(b, 3, 3), 0); return *lab; /* 4 vs 3 */
    case 4: write_bytes(*img, b, n, 0); return *lab;                               /* label 2 of 2 classes */
    case 5: write_bytes(*img, b, n, 0); b[n] = 9; write_bytes(*img, b, n + 1, 0); return *img; /* trailing byte */
    case 6: write_bytes(*img, b, 2, 0); return *img;                               /* no header */
    case 7: { /* a gzip stream cut short */
        write_bytes(*img, b, n, 1);
        size_t len;
        char *z = test_slurp(*img, &len);
        write_bytes(*img, z, len - 10, 0), free(z);
        return *img;
    }
    case 8: write_bytes(*img, "1,2,3\n", 6, 0); return *img;                       /* digits: too few values */
    case 9: { char t[300] = ""; for (int i = 0; i < 64; i++) strcat(t, i == 5 ? "17," : "1,"); strcat(t, "3\n");
              write_bytes(*img, t, strlen(t), 0); return *img; }                   /* digits: 17 */
    case 10: write_bytes(*img, "\x89PNG\r\n\x1a\nxxxxxxxxxxxx", 20, 0); return *img; /* PNG: garbage after the signature */
    case 11: write_bytes(*img, "GIF89a....", 10, 0); return *img;                  /* not a PNG */
    case 12: { /* a PNG whose image data's checksum is wrong */
        write_png(*img, PNG_COLOR_TYPE_RGB, 8, 4, 4, 0);
        size_t len;
        char *z = test_slurp(*img, &len), *idat = z ? (char *)find_bytes(z, len, "IDAT") : NULL;
        if (idat) { /* the chunk's length stands before its type, its CRC after its data */
            const unsigned char *l = (const unsigned char *)idat - 4;
            idat[4 + ((size_t)l[0] << 24 | (size_t)l[1] << 16 | (size_t)l[2] << 8 | l[3])] ^= 0x55;
        }
        write_bytes(*img, z, len, 0), free(z);
        return *img;
    }
    case 13: put32(b + 4, 0x7fffffffu); write_bytes(*img, b, n, 1); return *img; /* 2^31 - 1 images declared */
    case 14: { /* a PNG header of 65535 x 65535 RGBA pixels of 16 bits before 20 bytes of data */
        static const unsigned char ihdr[13] = {0, 0, 255, 255, 0, 0, 255, 255, 16, 6, 0, 0, 0};
        unsigned char p[64] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n', 0, 0, 0, 13, 'I', 'H', 'D', 'R'};
        memcpy(p + 16, ihdr, 13);
        put32(p + 29, (uint32_t)crc32(0, p + 12, 17));
        memcpy(p + 33, "\0\0\0\0IDAT\x35\xaf\x06\x1e", 12); /* an empty chunk (its CRC), then nothing */
        write_bytes(*img, p, 45, 0);
        return *img;
    }
    default: { /* a PNG cut in half */
        write_png(*img, PNG_COLOR_TYPE_RGB, 8, 4, 4, 0);
        size_t len;
        char *z = test_slurp(*img, &len);
        write_bytes(*img, z, len / 2, 0), free(z);
        return *img;
    }
    }
}

static const bad_case BAD[] = {
    {"wrong magic", 0, 0, {"not an idx file of images", "0x00000801"}},
    {"truncated", 0, 0, {"truncated", "4 images need 16 bytes"}},
    {"truncated gzip'ed", 0, 0, {"truncated", "4 images"}},
    {"counts differ", 0, 0, {"has 4 images but", "has 3 labels"}},
    {"label out of range", 0, 2, {"label 2 of image 2", "out of range [0,2)"}},
    {"trailing bytes", 0, 0, {"1 byte after the last of 4 images", NULL}},
    {"no header", 0, 0, {"not an idx file", NULL}},
    {"cut gzip stream", 0, 0, {"not a readable gzip file", NULL}},
    {"digits: short line", 1, 0, {":1: 3 values", "65"}},
    {"digits: pixel 17", 1, 0, {":1: value 6", "0..16"}},
    {"PNG: garbage", 2, 0, {"not a readable PNG", NULL}},
    {"PNG: not a PNG", 2, 0, {"not a PNG file", NULL}},
    {"PNG: changed data", 2, 0, {"not a readable PNG", "CRC error"}},
    {"idx: 2^31 - 1 images declared", 0, 0, {"truncated", "2147483647 images need"}},
    {"PNG: 65535 x 65535 declared", 2, 0, {"not a readable PNG", "need at least 33293304 bytes"}},
    {"PNG: cut short", 2, 0, {"not a readable PNG", NULL}},
};

TEST(images_bad_input_names_the_file) {
    CHECK(fresh_dir() == 0);
    int bad = 0;
    for (int c = 0; c < (int)(sizeof BAD / sizeof BAD[0]); c++) {
        const char *img, *lab, *named = make_bad(c, &img, &lab);
        tf_images s;
        tf_set_error("%s", "");
        int rc = BAD[c].kind == 0 ? tf_images_read_idx(img, lab, BAD[c].n_classes, &s)
               : BAD[c].kind == 1 ? tf_images_read_digits(img, &s) : tf_images_read_png(img, 1, &s);
        const char *m = tf_error();
        int ok = rc == -1 && strstr(m, named) && s.pixels == NULL;
        if (getenv("IMAGES_VERBOSE")) fprintf(stderr, "    %s: %s\n", BAD[c].what, m);
        for (int i = 0; ok && i < 2 && BAD[c].expect[i]; i++) ok = strstr(m, BAD[c].expect[i]) != NULL;
        if (!ok) bad += fprintf(stderr, "    %s: rc %d, \"%s\"\n", BAD[c].what, rc, m) > 0;
    }
    test_rm_rf(g_dir);
    CHECKF(bad == 0, "%d bad inputs were not a clear error", bad);
}

/* ---------------------------------------------------------------- the loader */

TEST(images_loader_batches) {
    CHECK(fresh_dir() == 0);
    unsigned char img[16 + 5 * 3 * 4], lab[8 + 5];
    CHECK(write_bytes(tmp_path("i"), img, idx_images(img, 5, 3, 4), 0) == 0);
    CHECK(write_bytes(tmp_path("l"), lab, idx_labels(lab, 5, 3), 0) == 0);
    tf_images s;
    CHECK(tf_images_read_idx(tmp_path("i"), tmp_path("l"), 0, &s) == 0);
    tf_loader *l = tf_images_loader_new(&s, &s, 1, 42);
    tf_ctx *ctx = tf_ctx_new(1);
    tf_batch a = {0}, b = {0}, v = {0};
    CHECK(l && tf_loader_next(l, ctx, TF_SUBSET_TRAIN, 7, 6, &a) == 0 && tf_loader_next(l, ctx, TF_SUBSET_TRAIN, 7, 6, &b) == 0);
    tf_tensor *x = tf_batch_get(&a, "pixel_values"), *y = tf_batch_get(&a, "labels");
    CHECK(x && y && x->ndim == 4 && x->shape[0] == 6 && x->shape[1] == 1 && x->shape[2] == 3 && x->shape[3] == 4);
    CHECK(memcmp(x->data, tf_batch_get(&b, "pixel_values")->data, 6 * 12 * sizeof(float)) == 0); /* same key, same batch */
    CHECK(tf_loader_next(l, ctx, TF_SUBSET_VAL, 1, 3, &v) == 0); /* images 3, 4, then past the end */
    tf_tensor *vx = tf_batch_get(&v, "pixel_values"), *vy = tf_batch_get(&v, "labels");
    CHECK(tf_i32(vy)[0] == s.labels[3] && tf_i32(vy)[1] == s.labels[4] && tf_i32(vy)[2] == -100);
    CHECK(memcmp(tf_f32(vx) + 12, s.pixels + 4 * 12, 12 * sizeof(float)) == 0); /* unshifted */
    for (int k = 0; k < 12; k++) CHECK(tf_f32(vx)[24 + k] == 0);
    /* the accuracy counts the two images, not the blank row */
    tf_tensor *z = tf_tensor_new(ctx, TF_DTYPE_F32, 2, (int64_t[]){3, 3}, 0);  // (3 rows, 3 classes)
    for (int r = 0; r < 3; r++) tf_f32(z)[r * 3 + (r < 2 ? tf_i32(vy)[r] : 0)] = 1;
    tf_metrics m = {0};
    tf_task_count_hits(z, vy, &m);
    CHECK(m.count[0] == 2 && m.sum[0] == 2);
    tf_ctx_free(ctx);
    tf_loader_free(l);
    tf_images bigger;
    CHECK(tf_images_take(&s, 0, 2, &bigger) == 0);
    bigger.width = 5;
    CHECK(tf_images_loader_new(&s, &bigger, 0, 1) == NULL && strstr(tf_error(), "differ"));
    bigger.width = 4;
    tf_images_free(&bigger);
    tf_images_free(&s);
    test_rm_rf(g_dir);
}
