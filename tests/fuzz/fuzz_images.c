/* libFuzzer target for the image readers. The first byte picks the reader,
 * the second its options; the rest is the file (or files):
 *   0  an idx image file and an idx label file (tf_images_read_idx): bytes
 *      2-3 (little-endian) are the length of the image file, the rest is
 *      the label file; option bits: 1 gzip the images, 2 gzip the labels,
 *      4 no label file, the bits above n_classes (0: the largest + 1);
 *   1  scikit-learn's digits.csv (tf_images_read_digits); option bit 1:
 *      gzip it;
 *   2  a PNG file (tf_images_read_png); option bit 1: three channels.
 * The files are written as they come (so a corrupt gzip stream is read as
 * one) or gzip'ed here (so the data behind a valid stream is fuzzed too).
 * A reader must accept the file or say why, never crash. What it accepted
 * holds together: at least one image of a positive size, every pixel in
 * [0,1], the counts those of the file (an idx file is its header and
 * exactly n x height x width bytes; a digits file one image a non-blank
 * line; a PNG one image of the channels asked for), every label in
 * [0,n_classes) and n_classes the one asked for. An accepted labelled set
 * then feeds the loader with the augmentations the option byte turns on
 * (shifts, RandAugment at a magnitude 0..10, random erasing in each mode,
 * mixup, cutmix, repeats, label smoothing), whose batches hold finite
 * pixels, in [0,1] unless erased, labels in range, and soft targets in [0,1]
 * summing to 1 exactly when mixing is on. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "tformer.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char g_dir[128];

/* p[0..n) into g_dir/name, gzip'ed when gz; the path into path. */
static void put(const char *name, const uint8_t *p, size_t n, int gz, char *path, size_t cap) {
    snprintf(path, cap, "%s/%s", g_dir, name);
    if (gz) {
        gzFile f = gzopen(path, "wb");
        if (!f || (n && gzwrite(f, p, (unsigned)n) != (int)n) || gzclose(f) != Z_OK) abort();
        return;
    }
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(p, 1, n, f) != n || fclose(f)) abort(); /* the fuzzer's own folder */
}

/* ---------------------------------------------------------------- what a reader accepted */

static void check_set(const tf_images *s, int channels) {
    if (s->n < 1 || s->channels != channels || s->height < 1 || s->width < 1 || !s->pixels) abort();
    size_t count = (size_t)s->n * (size_t)s->channels * (size_t)s->height * (size_t)s->width;
    for (size_t i = 0; i < count; i++)
        if (!(s->pixels[i] >= 0.0f && s->pixels[i] <= 1.0f)) abort();
    if (!s->labels) {
        if (s->n_classes != 0) abort();
        return;
    }
    if (s->n_classes < 1) abort();
    for (int64_t i = 0; i < s->n; i++)
        if (s->labels[i] < 0 || s->labels[i] >= s->n_classes) abort();
}

/* The augmentation the option byte turns on (its bits mixed: the readers use them too). */
static tf_images_aug aug_of(uint8_t opt) {
    uint8_t b = (uint8_t)(opt * 167 + 13);
    tf_images_aug a = tf_images_aug_none();
    a.shift = b % 3, a.randaug_ops = b & 4 ? 2 : 0, a.erase_prob = b & 8 ? 0.5f : 0.0f;
    a.erase_mode = (tf_erase_mode)(b / 16 % 3), a.mixup_alpha = b & 32 ? 0.8f : 0.0f;
    a.cutmix_alpha = b & 64 ? 1.0f : 0.0f, a.repeats = 1 + (b >> 7) * 2, a.label_smoothing = b & 1 ? 0.1f : 0.0f;
    a.randaug_magnitude = (float)(b % 11);
    return a;
}

/* Batches of the loader over s (as training and validation set), augmented
 * as the option byte says: finite pixels, in [0,1] unless erased, labels in
 * range, soft targets in [0,1] summing to 1. */
static void check_batches(const tf_images *s, uint8_t opt) {
    if (!s->labels) return;
    tf_images_aug a = aug_of(opt);
    tf_loader *l = tf_images_loader_aug(s, s, &a, opt);
    if (!l) abort(); /* a labelled grey set of one shape always makes a loader */
    tf_ctx *ctx = tf_ctx_new(1);
    for (uint64_t key = 0; ctx && key < 3; key++) {
        tf_batch b = {0};
        int rows = 1 + (int)(key + opt) % 4, val = key == 2;
        if (tf_loader_next(l, ctx, val ? TF_SUBSET_VAL : TF_SUBSET_TRAIN, key, rows, &b)) abort();
        tf_tensor *x = tf_batch_get(&b, "pixel_values"), *y = tf_batch_get(&b, "labels"), *t = tf_batch_get(&b, "targets");
        if (!x || !y || x->shape[0] != rows || y->shape[0] != rows) abort();
        for (int64_t i = 0; i < tf_numel(x); i++)
            if (!isfinite(tf_f32(x)[i]) || ((val || a.erase_prob == 0) && !(tf_f32(x)[i] >= 0.0f && tf_f32(x)[i] <= 1.0f)))
                abort();
        for (int r = 0; r < rows; r++) { /* validation rows past the set's end: label -100, not counted */
            int past = val && (int64_t)((key * (uint64_t)rows) % (uint64_t)s->n) + r >= s->n;
            if (past ? tf_i32(y)[r] != -100 : tf_i32(y)[r] < 0 || tf_i32(y)[r] >= s->n_classes) abort();
        }
        if ((t != NULL) != (!val && (a.mixup_alpha > 0 || a.cutmix_alpha > 0))) abort();
        for (int r = 0; t && r < rows; r++) {
            double sum = 0;
            for (int64_t k = 0; k < t->shape[1]; k++) {
                float v = tf_f32(t)[r * t->shape[1] + k];
                if (!(v >= 0.0f && v <= 1.0f)) abort();
                sum += v;
            }
            if (fabs(sum - 1.0) > 1e-5) abort();
        }
        tf_ctx_reset(ctx);
    }
    tf_ctx_free(ctx);
    tf_loader_free(l);
}

/* ---------------------------------------------------------------- the readers */

/* The idx bytes behind the file, as the reader sees them (gunzipped). */
static size_t plain_size(const char *path) {
    gzFile f = gzopen(path, "rb");
    unsigned char buf[4096];
    size_t n = 0;
    int got;
    while (f && (got = gzread(f, buf, sizeof buf)) > 0) n += (size_t)got;
    if (f) gzclose(f);
    return n;
}

static void fuzz_idx(uint8_t opt, const uint8_t *p, size_t n) {
    if (n < 2) return;
    size_t split = (size_t)p[0] | (size_t)p[1] << 8;
    p += 2, n -= 2;
    if (split > n) split = n;
    char images[256], labels[256];
    put("images", p, split, opt & 1, images, sizeof images);
    put("labels", p + split, n - split, opt & 2, labels, sizeof labels);
    int with_labels = !(opt & 4), n_classes = opt >> 3;
    tf_images s;
    if (tf_images_read_idx(images, with_labels ? labels : NULL, n_classes, &s)) {
        if (!strstr(tf_error(), g_dir)) abort(); /* the error names the file */
        return;
    }
    check_set(&s, 1);
    if (16 + (size_t)s.n * (size_t)s.height * (size_t)s.width != plain_size(images)) abort();
    if (with_labels && (8 + (size_t)s.n != plain_size(labels) || (n_classes && s.n_classes != n_classes))) abort();
    if (!with_labels && s.labels) abort();
    check_batches(&s, opt);
    tf_images_free(&s);
}

/* Lines holding more than blanks and a carriage return. */
static int64_t text_lines(const uint8_t *p, size_t n) {
    int64_t lines = 0;
    for (size_t i = 0, start = 0; i <= n; i++)
        if (i == n || p[i] == '\n') {
            lines += i > start && !(i == start + 1 && p[start] == '\r');
            start = i + 1;
        }
    return lines;
}

static void fuzz_digits(uint8_t opt, const uint8_t *p, size_t n) {
    char path[256];
    put("digits.csv", p, n, opt & 1, path, sizeof path);
    tf_images s;
    if (tf_images_read_digits(path, &s)) {
        if (!strstr(tf_error(), g_dir)) abort();
        return;
    }
    check_set(&s, 1);
    if (s.height != 8 || s.width != 8 || s.n_classes != 10 || !s.labels) abort();
    int gz_bytes = n >= 2 && p[0] == 0x1f && p[1] == 0x8b; /* read gunzipped */
    if (!(opt & 1) && !gz_bytes && s.n != text_lines(p, n)) abort(); /* one image a line */
    check_batches(&s, opt);
    tf_images_free(&s);
}

static void fuzz_png(uint8_t opt, const uint8_t *p, size_t n) {
    char path[256];
    int channels = opt & 1 ? 3 : 1;
    put("image.png", p, n, 0, path, sizeof path);
    tf_images s;
    if (tf_images_read_png(path, channels, &s)) {
        if (!strstr(tf_error(), g_dir)) abort();
        return;
    }
    check_set(&s, channels);
    if (s.n != 1 || s.labels) abort();
    tf_images_free(&s);
}

/* ---------------------------------------------------------------- the input */

static void cleanup(void) {
    char cmd[160];
    snprintf(cmd, sizeof cmd, "rm -rf %s", g_dir);
    if (system(cmd)) return;
}

/* A folder of our own, on tmpfs when there is one. */
static int setup(void) {
    struct stat st;
    const char *root = !stat("/dev/shm", &st) && S_ISDIR(st.st_mode) ? "/dev/shm" : "/tmp";
    snprintf(g_dir, sizeof g_dir, "%s/tformer_fuzz_images_%d", root, (int)getpid());
    (void)mkdir(g_dir, 0755);
    if (stat(g_dir, &st) || !S_ISDIR(st.st_mode)) return -1;
    atexit(cleanup);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static int ready;
    if (!ready && (setup() || !(ready = 1))) abort();
    if (size < 2) return 0;
    int mode = data[0] % 3;
    if (mode == 0) fuzz_idx(data[1], data + 2, size - 2);
    else if (mode == 1) fuzz_digits(data[1], data + 2, size - 2);
    else fuzz_png(data[1], data + 2, size - 2);
    return 0;
}
