/* Moving-object clips and ViViT training through the CLI: the clip
 * generator is deterministic, moves the object in the labelled direction and
 * shuffles only the frames' order; `tformer train --arch vivit` learns on a
 * tiny synthetic idx set written here (each model kind); `tformer classify`
 * labels a clip folder of PNG frames; bad clips and settings are clear
 * errors. */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "test.h"

#define N_IMAGES 120
#define SIDE 12

/* A bright square on noise, its size telling the class. */
static unsigned char pixel(int i, int c, int y, int x) {
    int half = 2 + c, noise = (int)((unsigned)(i * 131 + y * 17 + x * 29) * 2654435761u >> 28);
    return (unsigned char)(abs(2 * y - SIDE + 1) < 2 * half && abs(2 * x - SIDE + 1) < 2 * half ? 220 : noise * 4);
}

/* n grey side x side images of 3 classes in memory. */
static tf_images tiny_images(int n, int side) {
    tf_images s = {n, 1, side, side, calloc((size_t)n * side * side, sizeof(float)), calloc((size_t)n, sizeof(int32_t)), 3};
    for (int i = 0; s.pixels && s.labels && i < n; i++) {
        s.labels[i] = i % 3;
        for (int p = 0; p < side * side; p++) s.pixels[(size_t)i * side * side + p] = pixel(i, i % 3, p / side, p % side) / 255.0f;
    }
    return s;
}

/* The brightness-weighted centre (y, x) of a frame (S,S). */
static void centre(const float *f, int S, double *y, double *x) {
    double w = 0, sy = 0, sx = 0;
    for (int i = 0; i < S * S; i++) w += f[i], sy += f[i] * (i / S), sx += f[i] * (i % S);
    *y = sy / w, *x = sx / w;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

TEST(vivit_clips_move_as_labelled) {
    tf_images s = tiny_images(12, SIDE);
    CHECK(s.pixels && s.labels);
    tf_clips_config c = {24, 5, 8, 2.0f, TF_CLIP_LABEL_CLASS_DIRECTION, 0};
    enum { T = 5, S = 24, PER = T * S * S };
    float *a = malloc(PER * sizeof *a), *b = malloc(PER * sizeof *b);
    CHECK(a && b);
    int wrong = 0, dirs[4] = {0};
    for (uint64_t k = 0; k < 64; k++) {
        int32_t la, lb;
        CHECK(tf_clip_make(&s, &c, 9, k, a, &la) == 0 && tf_clip_make(&s, &c, 9, k, b, &lb) == 0);
        CHECKF(la == lb && !memcmp(a, b, PER * sizeof *a), "clip %d differs between two draws", (int)k);
        CHECK(la >= 0 && la < 12);
        double y0, x0, y1, x1;
        centre(a, S, &y0, &x0), centre(a + (T - 1) * S * S, S, &y1, &x1); /* the path fits: no bounce */
        int dir = la % 4, right = dir == 0 || dir == 3, down = dir < 2;
        wrong += (x1 > x0) != right || (y1 > y0) != down;
        dirs[dir]++;
        c.shuffle = 1; /* the same clip, its frames in another order */
        CHECK(tf_clip_make(&s, &c, 9, k, b, &lb) == 0 && lb == la);
        c.shuffle = 0;
        double sa[T], sb[T];
        for (int t = 0; t < T; t++) {
            centre(a + t * S * S, S, &y0, &x0), sa[t] = y0 * 1000 + x0;
            centre(b + t * S * S, S, &y1, &x1), sb[t] = y1 * 1000 + x1;
        }
        qsort(sa, T, sizeof *sa, cmp_double), qsort(sb, T, sizeof *sb, cmp_double);
        for (int t = 0; t < T; t++) CHECKF(fabs(sa[t] - sb[t]) < 1e-9, "clip %d: shuffling changed a frame", (int)k);
    }
    CHECK(tf_clip_make(&s, &c, 10, 0, b, &(int32_t){0}) == 0 && memcmp(a, b, PER * sizeof *a)); /* another seed */
    printf("    64 clips: directions %d/%d/%d/%d, %d moving against their label\n", dirs[0], dirs[1], dirs[2], dirs[3],
           wrong);
    CHECK(wrong == 0 && dirs[0] && dirs[1] && dirs[2] && dirs[3]);
    c.object_size = 30;
    CHECK(tf_clip_make(&s, &c, 9, 0, a, &(int32_t){0}) == -1 && strstr(tf_error(), "must fit the canvas"));
    free(a), free(b);
    tf_images_free(&s);
}

#define CLIP_FLAGS "--image-size 18 --object-size 6 --speed 2 --num-frames 4 --tubelet-t 2 --tubelet-h 6 --tubelet-w 6 " \
                   "--d-model 16 --n-head 2 --n-layer 1 --n-layer-temporal 1 --labels direction --n-labels 4 --threads 1"

/* Frames of clip `index` (seed 5 of the set's images) as PNG files dir/f<t>.png; `frames` of them. */
static int write_clip(const char *dir, const char *data, int frames) {
    tf_images s;
    tf_clips_config c = {18, 4, 6, 2.0f, TF_CLIP_LABEL_DIRECTION, 0};
    float *x = malloc(4 * 18 * 18 * sizeof *x);
    int32_t label;
    int rc = !x || mkdir(dir, 0755) || tf_images_read_dir(data, "train", 0, &s) ? -1 : 0;
    if (!rc) rc = tf_clip_make(&s, &c, 5, 0, x, &label), tf_images_free(&s);
    for (int t = 0; !rc && t < frames; t++) {
        unsigned char img[18 * 18];
        for (int p = 0; p < 18 * 18; p++) img[p] = (unsigned char)lrintf(x[t * 18 * 18 + p] * 255.0f);
        char path[600];
        snprintf(path, sizeof path, "%s/f%d.png", dir, t);
        rc = test_write_grey_png(path, img, 18, 18);
    }
    free(x);
    return rc;
}

/* Validation batches of the clips loader: one pass of 5 clips in batches of 3
 * is clips 0-2, then 3, 4 and a blank row labelled -100 (not counted); one
 * batch of 5 gives the same clips 3 and 4. */
TEST(vivit_clips_validation_pass_counts_each_clip_once) {
    tf_images s = tiny_images(12, SIDE);
    CHECK(s.pixels && s.labels);
    tf_clips_config c = {24, 5, 8, 2.0f, TF_CLIP_LABEL_DIRECTION, 0};
    enum { PER = 5 * 24 * 24 };
    tf_loader *l = tf_clips_loader_new(&s, &s, &c, 5, 3);
    tf_ctx *ctx = tf_ctx_new(1);
    CHECKF(l && ctx, "%s", tf_error());
    tf_batch all = {0}, last = {0};
    CHECK(tf_loader_next(l, ctx, TF_SUBSET_VAL, 0, 5, &all) == 0 && tf_loader_next(l, ctx, TF_SUBSET_VAL, 1, 3, &last) == 0);
    const tf_tensor *xa = tf_batch_get(&all, "pixel_values"), *ya = tf_batch_get(&all, "labels");
    const tf_tensor *x = tf_batch_get(&last, "pixel_values"), *y = tf_batch_get(&last, "labels");
    CHECK(xa && ya && x && y && y->shape[0] == 3);
    for (int r = 0; r < 2; r++) {
        CHECKF(tf_i32(y)[r] == tf_i32(ya)[3 + r] && tf_i32(y)[r] >= 0, "row %d: label %d, clip %d's %d", r,
               tf_i32(y)[r], 3 + r, tf_i32(ya)[3 + r]);
        CHECK(memcmp(tf_f32(x) + r * PER, tf_f32(xa) + (3 + r) * PER, PER * sizeof(float)) == 0);
    }
    CHECK(tf_i32(y)[2] == -100);
    int blank = 1;
    for (int64_t k = 0; k < PER; k++) blank &= tf_f32(x)[2 * PER + k] == 0;
    CHECK(blank);
    tf_ctx_free(ctx);
    tf_loader_free(l);
    tf_images_free(&s);
}

TEST(vivit_train_learns_and_classifies_clips) {
    char dir[] = "/tmp/tformer_vivt_XXXXXX", args[2048], out[8192];
    CHECK(mkdtemp(dir) != NULL);
    CHECK(test_write_idx_set(dir, "train", N_IMAGES, SIDE, 3, pixel) == 0);
    for (int kind = 1; kind <= 4; kind++) {
        snprintf(args, sizeof args, "train --arch vivit --data-dir %s " CLIP_FLAGS " --model-kind %d --steps 300 "
                 "--batch 32 --warmup 5 --lr 3e-3 --eval-every 150 --log-every 150 --val-clips 64 --out %s/run%d",
                 dir, kind, dir, kind);
        int rc = test_run_cli("", args, out, sizeof out);
        CHECKF(rc == 0 && strstr(out, "accuracy"), "train: exit %d\n%s", rc, out);
        char p[600];
        snprintf(p, sizeof p, "%s/run%d/losses.csv", dir, kind);
        size_t n;
        char *csv = test_slurp(p, &n), *row2 = csv ? strchr(csv, '\n') : NULL, *last = NULL;
        for (char *q = row2; q && q[1]; q = strchr(q + 1, '\n')) last = q;
        double first = row2 ? atof(strchr(row2 + 1, ',') + 1) : NAN, end = last ? atof(strchr(last + 1, ',') + 1) : NAN;
        free(csv);
        printf("    Model %d: train loss %.3f at step 1, %.3f at step 300\n", kind, first, end);
        CHECKF(end < first - 0.3, "Model %d: the loss went from %g to %g", kind, first, end);
    }
    char clip[600];
    snprintf(clip, sizeof clip, "%s/clip", dir);
    CHECK(write_clip(clip, dir, 4) == 0);
    snprintf(args, sizeof args, "classify --model %s/run3 --threads 1 %s", dir, clip);
    CHECK(test_run_cli("", args, out, sizeof out) == 0);
    CHECKF(strstr(out, clip) && (strstr(out, "right-") || strstr(out, "left-")), "%s", out);
    printf("    classify: %s", out);
    test_rm_rf(dir);
}

/* Each an error naming the clip or the setting to change. */
TEST(vivit_bad_clips_and_settings_are_clear_errors) {
    char dir[] = "/tmp/tformer_vivb_XXXXXX", args[2048], out[8192], p[600];
    CHECK(mkdtemp(dir) != NULL);
    CHECK(test_write_idx_set(dir, "train", N_IMAGES, SIDE, 3, pixel) == 0);
    snprintf(args, sizeof args, "train --arch vivit --data-dir %s " CLIP_FLAGS " --steps 1 --out %s/run", dir, dir);
    CHECKF(test_run_cli("", args, out, sizeof out) == 0, "%s", out);
    struct {
        const char *what;
        int frames;          /* frames written (0: an empty folder, -1: no folder) */
        int odd;             /* 1: frame 0 written 12x12; 2: the last frame not a PNG */
        const char *expect;
    } cases[] = {
        {"empty", 0, 0, "no PNG frames"},
        {"one", 1, 0, "fewer than one tubelet of 2 frames"},
        {"three", 3, 0, "the model takes clips of num_frames 4"},
        {"mixed", 4, 1, "a clip's frames must have one size"},
        {"broken", 4, 2, "not a PNG file"},
        {"missing", -1, 0, "cannot open the clip folder"},
    };
    for (int i = 0; i < 6; i++) {
        snprintf(p, sizeof p, "%s/%s", dir, cases[i].what);
        if (cases[i].frames > 0) CHECK(write_clip(p, dir, cases[i].frames) == 0);
        else if (cases[i].frames == 0) CHECK(mkdir(p, 0755) == 0);
        char f[700];
        snprintf(f, sizeof f, "%s/f%d.png", p, cases[i].odd == 1 ? 0 : 3);
        if (cases[i].odd == 1) { /* the first frame 12x12, the others 18x18 */
            unsigned char img[144] = {0};
            CHECK(test_write_grey_png(f, img, 12, 12) == 0);
        }
        if (cases[i].odd == 2) CHECK(test_write_text(f, "not a PNG") == 0); /* the last frame */
        snprintf(args, sizeof args, "classify --model %s/run --threads 1 %s", dir, p);
        int rc = test_run_cli("", args, out, sizeof out);
        CHECKF(rc != 0 && strstr(out, cases[i].expect) && strstr(out, p), "%s: exit %d: %s", cases[i].what, rc, out);
    }
    snprintf(args, sizeof args, "train --arch vivit --data-dir %s " CLIP_FLAGS " --labels class_direction --steps 1 "
             "--out %s/run2", dir, dir);
    CHECKF(test_run_cli("", args, out, sizeof out) != 0 && strstr(out, "set --n-labels 12"), "%s", out);
    snprintf(args, sizeof args, "train --arch vivit --data-dir %s " CLIP_FLAGS " --object-size 20 --steps 1 "
             "--out %s/run2", dir, dir);
    CHECKF(test_run_cli("", args, out, sizeof out) != 0 && strstr(out, "must fit the canvas"), "%s", out);
    snprintf(args, sizeof args, "train --arch vivit --data-dir %s " CLIP_FLAGS " --tubelet-t 5 --steps 1 "
             "--out %s/run2", dir, dir);
    CHECKF(test_run_cli("", args, out, sizeof out) != 0 && strstr(out, "tubelet_t 5 is more than num_frames 4"), "%s",
           out);
    snprintf(args, sizeof args, "train --arch vivit --data-dir %s " CLIP_FLAGS " --model-kind 4 --n-head 1 --steps 1 "
             "--out %s/run2", dir, dir);
    CHECKF(test_run_cli("", args, out, sizeof out) != 0 && strstr(out, "n_head 1: Model 4") && strstr(out, "even"),
           "%s", out);
    test_rm_rf(dir);
}
