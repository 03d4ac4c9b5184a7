/* Moving-object clips (Srivastava et al. 2015's Moving MNIST procedure) from
 * labelled images, generated on demand from (seed, index): a loader of
 * video batches for the shared trainer, with a frame-shuffled control. */
#include <dirent.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <errno.h>
#include <strings.h>

#include "../core/core_internal.h"
#include "../util/util.h"
#include "augment.h"

enum { DRAW_CLIP = 7 };
#define VALID_SEED 0x76616c6964ULL /* "valid": the validation sequence's own stream */
static const double PI = 3.14159265358979323846;

int tf_clips_n_labels(const tf_clips_config *c, int n_classes) {
    return c->label == TF_CLIP_LABEL_DIRECTION ? 4 : 4 * n_classes;
}

int tf_clips_check(const tf_clips_config *c, const tf_images *src) {
    if (!src || src->n < 1 || !src->labels) return tf_set_error("clips: the images must be labelled and not empty");
    int o = c->object_size ? c->object_size : src->height;
    if (c->canvas < 1 || c->canvas > 4096 || c->frames < 1 || c->frames > 4096)
        return tf_set_error("clips: canvas %d and frames %d must lie in [1,4096]", c->canvas, c->frames);
    if (c->object_size < 0 || o > c->canvas)
        return tf_set_error("clips: the object (%dx%d) must fit the canvas (%dx%d): set a smaller object_size or a "
                            "larger canvas", o, o, c->canvas, c->canvas);
    if (!(c->speed >= 0 && c->speed <= c->canvas)) return tf_set_error("clips: speed %g must lie in [0,canvas]", c->speed);
    if (c->label != TF_CLIP_LABEL_DIRECTION && c->label != TF_CLIP_LABEL_CLASS_DIRECTION)
        return tf_set_error("clips: unknown label kind %d", (int)c->label);
    return 0;
}

/* One coordinate moved by v inside [0,lim], reflected at the edges. */
static void bounce(double *p, double *v, double lim) {
    *p += *v;
    for (int k = 0; k < 4 && (*p < 0 || *p > lim); k++) {
        if (*p < 0) *p = -*p, *v = -*v;
        if (*p > lim) *p = 2 * lim - *p, *v = -*v;
    }
    if (*p < 0 || *p > lim) *p = lim / 2; /* a speed far above the room left: park it */
}

/* A start in [0,lim] from which the path of T frames at velocity v stays
 * inside without bouncing when it can (then the frames as a set do not tell
 * the direction from its opposite: the shuffled control's ceiling), else
 * anywhere (it bounces, as in Moving MNIST). */
static double start(tf_aug_rng *r, double v, int T, double lim) {
    double travel = fabs(v) * (T - 1);
    if (travel > lim) return tf_aug_uniform(r) * lim;
    double lo = v < 0 ? travel : 0;
    return lo + tf_aug_uniform(r) * (lim - travel);
}

/* Image i of s drawn (nearest pixel, o x o) at (y0, x0) into frame (C,S,S), the brighter value kept. */
static void draw(const tf_images *s, int64_t i, int o, int y0, int x0, int S, float *frame) {
    int64_t H = s->height, W = s->width;
    for (int c = 0; c < s->channels; c++)
        for (int y = 0; y < o; y++)
            for (int x = 0; x < o; x++) {
                float v = s->pixels[((i * s->channels + c) * H + (int64_t)y * H / o) * W + (int64_t)x * W / o];
                float *d = frame + ((int64_t)c * S + y0 + y) * S + x0 + x;
                if (v > *d) *d = v;
            }
}

int tf_clip_make(const tf_images *src, const tf_clips_config *c, uint64_t seed, uint64_t index, float *out,
                 int32_t *label) {
    if (tf_clips_check(c, src)) return -1;
    tf_aug_rng r = tf_aug_rng_at(seed, index, 0, DRAW_CLIP);
    int64_t i = (int64_t)(tf_aug_uniform(&r) * (double)src->n);
    int o = c->object_size ? c->object_size : src->height, S = c->canvas, T = c->frames;
    int dir = tf_aug_randint(&r, 0, 4);
    double angle = (45.0 + 90.0 * dir + 60.0 * (tf_aug_uniform(&r) - 0.5)) * PI / 180.0;
    double vx = c->speed * cos(angle), vy = c->speed * sin(angle); /* dir 0: right-down, y grows down */
    double lim = S - o, x = start(&r, vx, T, lim), y = start(&r, vy, T, lim);
    int64_t per = (int64_t)src->channels * S * S;
    int *order = malloc((size_t)T * sizeof *order);
    if (!order) return tf_set_error("clips: out of memory");
    for (int t = 0; t < T; t++) order[t] = t;
    for (int t = T - 1; c->shuffle && t > 0; t--) { /* Fisher-Yates */
        int k = tf_aug_randint(&r, 0, t + 1), tmp = order[t];
        order[t] = order[k], order[k] = tmp;
    }
    memset(out, 0, (size_t)(T * per) * sizeof *out);
    for (int t = 0; t < T; t++) {
        int py = (int)lround(y), px = (int)lround(x);
        draw(src, i, o, py < 0 ? 0 : py > (int)lim ? (int)lim : py, px < 0 ? 0 : px > (int)lim ? (int)lim : px, S,
             out + order[t] * per);
        bounce(&y, &vy, lim), bounce(&x, &vx, lim);
    }
    free(order);
    *label = c->label == TF_CLIP_LABEL_DIRECTION ? dir : src->labels[i] * 4 + dir;
    return 0;
}

/* ---------------------------------------------------------------- the loader */

typedef struct {
    tf_loader base;
    const tf_images *train, *valid;
    tf_clips_config cfg;
    int64_t val_clips;
    uint64_t seed;
} clips_loader;

static int clips_next(tf_loader *l, tf_ctx *ctx, tf_subset split, uint64_t key, int rows, tf_batch *out) {
    clips_loader *m = (clips_loader *)l;
    const tf_clips_config *c = &m->cfg;
    int val = split == TF_SUBSET_VAL;
    const tf_images *s = val ? m->valid : m->train;
    if (!s) return tf_set_error("clips: no validation images");
    int64_t per = (int64_t)c->frames * s->channels * c->canvas * c->canvas;
    tf_tensor *x = tf_tensor_new(ctx, TF_DTYPE_F32, 5, (int64_t[]){rows, c->frames, s->channels, c->canvas, c->canvas}, 0);
    tf_tensor *y = tf_tensor_new(ctx, TF_DTYPE_I32, 1, (int64_t[]){rows}, 0);  // x: (rows,T,C,S,S), y: (rows)
    if (!x || !y) return -1;
    for (int64_t r = 0; r < rows; r++) {
        uint64_t seed = val ? m->seed ^ VALID_SEED : m->seed;
        uint64_t index = val ? (key * (uint64_t)rows) % (uint64_t)m->val_clips + (uint64_t)r
                             : tf_key(m->seed, key, (uint64_t)r, DRAW_CLIP);
        if (val && index >= (uint64_t)m->val_clips) { /* past the set's end: blank, not counted (ignore index) */
            tf_i32(y)[r] = -100;
            continue;
        }
        if (tf_clip_make(s, c, seed, index, tf_f32(x) + r * per, tf_i32(y) + r)) return -1;
    }
    return tf_batch_set(out, "pixel_values", x) || tf_batch_set(out, "labels", y) ? -1 : 0;
}

static void clips_free(tf_loader *l) { free(l); }

static const tf_loader_vt CLIPS_LOADER = {clips_next, clips_free};

tf_loader *tf_clips_loader_new(const tf_images *train, const tf_images *valid, const tf_clips_config *c,
                               int64_t val_clips, uint64_t seed) {
    if (tf_clips_check(c, train) || (valid && tf_clips_check(c, valid))) return NULL;
    if (valid && (valid->channels != train->channels || valid->n_classes != train->n_classes))
        return tf_set_error("clips: validation images of %d channel(s) and %d classes differ from the training "
                            "images' %d and %d", valid->channels, valid->n_classes, train->channels, train->n_classes),
               NULL;
    if (valid && val_clips < 1) return tf_set_error("clips: val_clips %lld must be positive", (long long)val_clips), NULL;
    clips_loader *m = calloc(1, sizeof *m);
    if (!m) return tf_set_error("clips: out of memory"), NULL;
    *m = (clips_loader){{&CLIPS_LOADER}, train, valid, *c, val_clips, seed};
    return &m->base;
}

/* ---------------------------------------------------------------- a clip of PNG frames */

static int by_name(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static int is_png(const char *name) {
    size_t n = strlen(name);
    return n > 4 && name[0] != '.' && !strcasecmp(name + n - 4, ".png");
}

/* The PNG names of dir, sorted: *names (free each and it), their count, or -1. */
static int png_names(const char *dir, char ***names) {
    DIR *d = opendir(dir);
    if (!d) return tf_set_error("%s: cannot open the clip folder: %s", dir, strerror(errno));
    int n = 0, cap = 0, rc = 0;
    char **v = NULL;
    for (struct dirent *e; !rc && (e = readdir(d));) {
        if (!is_png(e->d_name)) continue;
        if (n == cap) {
            char **grown = realloc(v, (size_t)(cap = cap ? 2 * cap : 16) * sizeof *v);
            if (!grown) rc = tf_set_error("clips: out of memory");
            else v = grown;
        }
        if (!rc && !(v[n++] = strdup(e->d_name))) rc = tf_set_error("clips: out of memory");
    }
    closedir(d);
    if (!rc && n == 0) rc = tf_set_error("%s: no PNG frames (*.png) in the clip folder", dir);
    if (rc) {
        while (n > 0) free(v[--n]);
        free(v);
        return -1;
    }
    qsort(v, (size_t)n, sizeof *v, by_name);
    *names = v;
    return n;
}

int tf_images_read_clip(const char *dir, int channels, tf_images *out) {
    memset(out, 0, sizeof *out);
    char **names = NULL, path[4200], first[4200] = "";
    int n = png_names(dir, &names), rc = n < 0 ? -1 : 0;
    for (int t = 0; !rc && t < n; t++) {
        tf_images f = {0};
        if ((rc = tf_path_join(path, sizeof path, dir, names[t]))) break;
        int w, h; /* a later frame's size from its header, before it is decoded */
        if (t > 0 && tf_images_png_size(path, &w, &h)) rc = -1;
        else if (t > 0 && (h != out->height || w != out->width))
            rc = tf_set_error("%s: a frame of %dx%d, but %s is %dx%d: a clip's frames must have one size", path, w, h,
                              first, out->width, out->height);
        else if (tf_images_read_png(path, channels, &f)) rc = -1;
        else if (t == 0) snprintf(first, sizeof first, "%s", path);
        if (!rc && t == 0) {
            *out = (tf_images){n, f.channels, f.height, f.width, NULL, NULL, 0};
            size_t bytes;
            if (!tf_mul_size((size_t)n * (size_t)f.channels, (size_t)f.height * (size_t)f.width * sizeof(float), &bytes) ||
                !(out->pixels = malloc(bytes)))
                rc = tf_set_error("%s: %d frames of %dx%d are too many", dir, n, f.width, f.height);
        }
        if (!rc && (f.height != out->height || f.width != out->width))
            rc = tf_set_error("%s: a frame of %dx%d, but %s is %dx%d: a clip's frames must have one size", path, f.width,
                              f.height, first, out->width, out->height);
        int64_t per = (int64_t)f.channels * f.height * f.width;
        if (!rc) memcpy(out->pixels + t * per, f.pixels, (size_t)per * sizeof(float));
        if (f.pixels) tf_images_free(&f);
    }
    for (int t = 0; t < (n > 0 ? n : 0); t++) free(names[t]);
    free(names);
    if (rc) tf_images_free(out);
    return rc;
}
