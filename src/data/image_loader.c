/* The loader of image batches ("pixel_values", "labels", and with mixup or
 * cutmix "targets") for the shared trainer, with DeiT's augmentation of
 * training batches (augment.h): repeated augmentation, shifts, RandAugment,
 * random erasing, then mixup / cutmix over the batch. Every draw derives
 * from (seed, key, row): a key gives the same batch on any thread count. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../core/core_internal.h"
#include "augment.h"

/* The draws of a row and of a batch: separate streams of one key. */
enum { DRAW_IMAGE = 0, DRAW_RANDAUG = 1, DRAW_ERASE = 2, DRAW_MIX = 3, DRAW_FLIP = 4 };

typedef struct {
    tf_loader base;
    const tf_images *train, *valid;
    tf_images_aug aug;
    uint64_t seed;
    float mean[4], std[4]; /* the training images' per channel: erasing's values */
} images_loader;

tf_images_aug tf_images_aug_none(void) {
    tf_images_aug a;
    memset(&a, 0, sizeof a);
    a.randaug_magnitude = 9.0f, a.randaug_mstd = 0.5f, a.erase_mode = TF_ERASE_PIXEL, a.repeats = 1;
    a.mix_prob = 1.0f, a.switch_prob = 0.5f;
    return a;
}

/* ---------------------------------------------------------------- one row */

/* Image i of s into dst (C,H,W), moved by (dy, dx) pixels; the uncovered border 0. */
static void copy_shifted(const tf_images *s, int64_t i, int dy, int dx, float *dst) {
    int64_t H = s->height, W = s->width, hw = H * W;
    const float *src = s->pixels + i * s->channels * hw;
    for (int64_t c = 0; c < s->channels; c++)
        for (int64_t y = 0; y < H; y++)
            for (int64_t x = 0; x < W; x++) {
                int64_t sy = y - dy, sx = x - dx;
                dst[c * hw + y * W + x] = sy >= 0 && sy < H && sx >= 0 && sx < W ? src[c * hw + sy * W + sx] : 0.0f;
            }
}

/* RandAugment on a grey image as 8-bit values (PIL's), back to [0,1]. */
static void randaugment(const images_loader *m, tf_aug_rng *r, float *x, uint8_t *buf, int H, int W) {
    int64_t n = (int64_t)H * W;
    for (int64_t k = 0; k < n; k++) {
        float v = x[k] * 255.0f;
        buf[k] = (uint8_t)(v <= 0.0f ? 0 : v >= 255.0f ? 255 : (int)lrintf(v));
    }
    tf_randaug_image(r, m->aug.randaug_ops, m->aug.randaug_magnitude, m->aug.randaug_mstd, buf, buf + n, H, W);
    for (int64_t k = 0; k < n; k++) x[k] = buf[k] / 255.0f;
}

/* Training row r of batch `key` into x (C,H,W) and its label. */
static void train_row(const images_loader *m, uint64_t key, int r, float *x, int32_t *label, uint8_t *buf) {
    const tf_images *s = m->train;
    const tf_images_aug *a = &m->aug;
    uint64_t h_img = tf_key(m->seed, key, (uint64_t)(r / a->repeats), DRAW_IMAGE);
    uint64_t h = tf_key(m->seed, key, (uint64_t)r, DRAW_IMAGE); /* the image's own when repeats is 1 */
    int64_t i = (int64_t)(h_img % (uint64_t)s->n);
    int span = 2 * a->shift + 1;
    int dy = (int)((h >> 32) % (uint64_t)span) - a->shift, dx = (int)((h >> 48) % (uint64_t)span) - a->shift;
    copy_shifted(s, i, dy, dx, x);
    *label = s->labels[i];
    if (a->hflip > 0) {
        tf_aug_rng rf = tf_aug_rng_at(m->seed, key, (uint64_t)r, DRAW_FLIP);
        if (tf_aug_uniform(&rf) < a->hflip) tf_aug_mirror(x, (int64_t)s->channels * s->height, s->width);
    }
    if (a->randaug_ops > 0) {
        tf_aug_rng rr = tf_aug_rng_at(m->seed, key, (uint64_t)r, DRAW_RANDAUG);
        randaugment(m, &rr, x, buf, s->height, s->width);
    }
    if (a->erase_prob > 0) {
        tf_aug_rng re = tf_aug_rng_at(m->seed, key, (uint64_t)r, DRAW_ERASE);
        int box[4];
        tf_aug_erase(&re, a->erase_prob, a->erase_mode, m->mean, m->std, x, s->channels, s->height, s->width, box);
    }
}

/* ---------------------------------------------------------------- the batch */

/* timm's Mixup._params_per_batch, then the mix of x and the soft targets. */
static void mix_batch(const images_loader *m, uint64_t key, int rows, float *x, const int32_t *labels, float *t) {
    const tf_images_aug *a = &m->aug;
    const tf_images *s = m->train;
    tf_aug_rng r = tf_aug_rng_at(m->seed, key, 0, DRAW_MIX);
    double lam = 1.0;
    int cutmix = 0;
    if (tf_aug_uniform(&r) < a->mix_prob) {
        cutmix = a->cutmix_alpha > 0 && (a->mixup_alpha <= 0 || tf_aug_uniform(&r) < a->switch_prob);
        lam = tf_aug_beta(&r, cutmix ? a->cutmix_alpha : a->mixup_alpha);
    }
    if (lam != 1.0 && cutmix) {
        int box[4], cy = tf_aug_randint(&r, 0, s->height), cx = tf_aug_randint(&r, 0, s->width);
        lam = tf_aug_cutmix_box(s->height, s->width, lam, cy, cx, box);
        tf_aug_cutmix(x, rows, s->channels, s->height, s->width, box);
    } else if (lam != 1.0) {
        tf_aug_mixup(x, rows, (int64_t)s->channels * s->height * s->width, lam);
    }
    tf_aug_mix_targets(labels, rows, a->n_labels ? a->n_labels : s->n_classes, lam, a->label_smoothing, t);
}

static int images_next(tf_loader *l, tf_ctx *ctx, tf_subset split, uint64_t key, int rows, tf_batch *out) {
    images_loader *m = (images_loader *)l;
    int val = split == TF_SUBSET_VAL, mix = !val && (m->aug.mixup_alpha > 0 || m->aug.cutmix_alpha > 0);
    const tf_images *s = val ? m->valid : m->train;
    if (!s) return tf_set_error("images: no validation set");
    int64_t per = (int64_t)s->channels * s->height * s->width, L = m->aug.n_labels ? m->aug.n_labels : s->n_classes;
    tf_tensor *x = tf_tensor_new(ctx, TF_DTYPE_F32, 4, (int64_t[]){rows, s->channels, s->height, s->width}, 0);
    tf_tensor *y = tf_tensor_new(ctx, TF_DTYPE_I32, 1, (int64_t[]){rows}, 0);  // x: (rows,C,H,W), y: (rows)
    tf_tensor *t = mix ? tf_tensor_new(ctx, TF_DTYPE_F32, 2, (int64_t[]){rows, L}, 0) : NULL; // t: (rows,L)
    uint8_t *buf = !val && m->aug.randaug_ops > 0 ? tf_ctx_alloc(ctx, 2 * (size_t)s->height * (size_t)s->width) : NULL;
    if (!x || !y || (mix && !t) || (!val && m->aug.randaug_ops > 0 && !buf)) return -1;
    for (int64_t r = 0; r < rows; r++) {
        if (val) { /* rows past the set's end: blank, label -100 (neither in the loss nor in the accuracy) */
            int64_t i = (int64_t)((key * (uint64_t)rows) % (uint64_t)s->n) + r;
            if (i < s->n) memcpy(tf_f32(x) + r * per, s->pixels + i * per, (size_t)per * sizeof(float));
            tf_i32(y)[r] = i < s->n ? s->labels[i] : -100;
        } else {
            train_row(m, key, (int)r, tf_f32(x) + r * per, tf_i32(y) + r, buf);
        }
    }
    if (mix) mix_batch(m, key, rows, tf_f32(x), tf_i32(y), tf_f32(t));
    return tf_batch_set(out, "pixel_values", x) || tf_batch_set(out, "labels", y) ||
                   (t && tf_batch_set(out, "targets", t))
               ? -1
               : 0;
}

static void images_free(tf_loader *l) { free(l); }

static const tf_loader_vt IMAGES_LOADER = {images_next, images_free};

/* ---------------------------------------------------------------- construction */

/* Each setting within its range, named as the task's flag. */
static int check_aug(const tf_images_aug *a, const tf_images *train) {
    if (a->shift < 0 || a->shift >= 256) return tf_set_error("images: shift %d must lie in [0,256)", a->shift);
    if (!(a->hflip >= 0 && a->hflip <= 1)) return tf_set_error("hflip %g must lie in [0,1]", a->hflip);
    if (a->randaug_ops < 0 || a->randaug_ops > 64) return tf_set_error("randaug_ops %d must lie in [0,64]", a->randaug_ops);
    if (!(a->randaug_magnitude >= 0 && a->randaug_magnitude <= 10))
        return tf_set_error("randaug_magnitude %g must lie in [0,10]", a->randaug_magnitude);
    if (!(a->randaug_mstd >= 0 && a->randaug_mstd <= 100)) return tf_set_error("randaug_mstd %g must lie in [0,100]", a->randaug_mstd);
    if (a->randaug_ops > 0 && train->channels != 1)
        return tf_set_error("randaug_ops: RandAugment takes grey images (PIL's \"L\" ops); these have %d channels",
                            train->channels);
    if (!(a->erase_prob >= 0 && a->erase_prob <= 1)) return tf_set_error("erase_prob %g must lie in [0,1]", a->erase_prob);
    if (a->erase_mode < TF_ERASE_CONST || a->erase_mode > TF_ERASE_PIXEL) return tf_set_error("erase_mode: unknown mode");
    if (a->repeats < 1 || a->repeats > 1024) return tf_set_error("repeats %d must lie in [1,1024]", a->repeats);
    float f[4] = {a->mixup_alpha, a->cutmix_alpha, a->mix_prob, a->switch_prob};
    const char *names[4] = {"mixup", "cutmix", "mix_prob", "switch_prob"};
    for (int k = 0; k < 4; k++)
        if (!(f[k] >= 0 && f[k] <= (k < 2 ? 100 : 1)))
            return tf_set_error("%s %g must lie in [0,%d]", names[k], f[k], k < 2 ? 100 : 1);
    if (!(a->label_smoothing >= 0 && a->label_smoothing < 1))
        return tf_set_error("label_smoothing %g must lie in [0,1)", a->label_smoothing);
    if (a->n_labels < 0 || (a->n_labels && a->n_labels < train->n_classes))
        return tf_set_error("images: targets of %d labels for %d classes", a->n_labels, train->n_classes);
    return 0;
}

/* The training images' mean and std per channel (erasing's values). */
static void channel_stats(images_loader *m) {
    const tf_images *s = m->train;
    int64_t hw = (int64_t)s->height * s->width;
    for (int c = 0; c < s->channels && c < 4; c++) {
        double sum = 0, sq = 0;
        for (int64_t i = 0; i < s->n; i++)
            for (int64_t k = 0; k < hw; k++) {
                double v = s->pixels[(i * s->channels + c) * hw + k];
                sum += v, sq += v * v;
            }
        double n = (double)s->n * (double)hw, mean = sum / n, var = sq / n - mean * mean;
        m->mean[c] = (float)mean, m->std[c] = (float)sqrt(var > 0 ? var : 0);
    }
}

tf_loader *tf_images_loader_aug(const tf_images *train, const tf_images *valid, const tf_images_aug *aug, uint64_t seed) {
    if (!train || train->n < 1 || !train->labels) return tf_set_error("images: the training set needs labelled images"), NULL;
    if (valid && (valid->n < 1 || !valid->labels)) return tf_set_error("images: the validation set needs labelled images"), NULL;
    if (valid && (valid->channels != train->channels || valid->height != train->height ||
                  valid->width != train->width || valid->n_classes != train->n_classes))
        return tf_set_error("images: validation images %dx%dx%d of %d classes differ from the training images "
                            "%dx%dx%d of %d classes", valid->channels, valid->height, valid->width, valid->n_classes,
                            train->channels, train->height, train->width, train->n_classes), NULL;
    if (train->channels > 4) return tf_set_error("images: %d channels; at most 4", train->channels), NULL;
    if (check_aug(aug, train)) return NULL;
    images_loader *m = calloc(1, sizeof *m);
    if (!m) return tf_set_error("images: out of memory"), NULL;
    *m = (images_loader){{&IMAGES_LOADER}, train, valid, *aug, seed, {0}, {0}};
    if (aug->erase_prob > 0) channel_stats(m);
    return &m->base;
}

tf_loader *tf_images_loader_new(const tf_images *train, const tf_images *valid, int shift, uint64_t seed) {
    tf_images_aug a = tf_images_aug_none();
    a.shift = shift;
    return tf_images_loader_aug(train, valid, &a, seed);
}
