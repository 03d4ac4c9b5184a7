/* Private: DeiT's data augmentation for the images loader (image_loader.c),
 * each piece a function the tests call on fixed inputs and parameters:
 * RandAugment's operations on 8-bit grey images as timm runs them on PIL
 * "L" images (randaugment.c), random erasing, mixup and cutmix as timm's
 * RandomErasing and Mixup (augment.c), and the counter-based random draws
 * they all take, so a batch is a function of (seed, key, row). */
#ifndef TF_DATA_AUGMENT_H
#define TF_DATA_AUGMENT_H

#include <stdint.h>

#include "tformer/images.h"

/* ---------------------------------------------------------------- random draws */

/* A stream of draws: the i-th is a hash of (key, i). */
typedef struct {
    uint64_t key, i;
} tf_aug_rng;

tf_aug_rng tf_aug_rng_at(uint64_t seed, uint64_t key, uint64_t row, uint64_t what);
double tf_aug_uniform(tf_aug_rng *r);               /* [0,1), 53 bits */
double tf_aug_normal(tf_aug_rng *r);                /* N(0,1) (Box-Muller) */
int tf_aug_randint(tf_aug_rng *r, int lo, int hi);  /* [lo,hi) */
double tf_aug_beta(tf_aug_rng *r, double alpha);    /* Beta(alpha, alpha), from two gammas */

/* ---------------------------------------------------------------- RandAugment (randaugment.c) */

/* timm's rand-increasing operations that mean something on a grey image
 * ("Color" is the identity there; "Invert" is left out: the datasets' black
 * backgrounds would become white, unlike any test image). */
typedef enum {
    TF_RA_IDENTITY,
    TF_RA_AUTOCONTRAST,
    TF_RA_EQUALIZE,
    TF_RA_ROTATE,      /* arg: degrees, counter-clockwise */
    TF_RA_POSTERIZE,   /* arg: bits kept (0 to 4; 0 gives black) */
    TF_RA_SOLARIZE,    /* arg: threshold (0 to 256) */
    TF_RA_SOLARIZE_ADD,/* arg: added below 128 (0 to 110) */
    TF_RA_CONTRAST,    /* arg: blend factor (0.1 to 1.9) */
    TF_RA_BRIGHTNESS,
    TF_RA_SHARPNESS,
    TF_RA_SHEAR_X,     /* arg: shear factor (-0.3 to 0.3) */
    TF_RA_SHEAR_Y,
    TF_RA_TRANSLATE_X, /* arg: fraction of the width (-0.45 to 0.45) */
    TF_RA_TRANSLATE_Y,
    TF_RA_COUNT
} tf_randaug_op;

const char *tf_randaug_name(tf_randaug_op op);
/* The op's argument at magnitude m in [0,10], negated when negate and the op
 * has a sign: timm's level functions (_rotate_level_to_arg, ...). */
double tf_randaug_arg(tf_randaug_op op, double magnitude, int negate);
/* dst (h,w) = op(src) with argument arg, as timm's op on a PIL "L" image
 * (Pillow 13: bicubic resampling, fill 0); src and dst must differ. */
void tf_randaug_apply(tf_randaug_op op, double arg, const uint8_t *src, uint8_t *dst, int h, int w);
/* RandAugment on img (h,w) in place, scratch of h*w bytes: n ops chosen
 * uniformly with replacement, each applied with probability 1/2 at a
 * magnitude drawn from N(magnitude, mstd^2) clipped to [0,10], a signed
 * op's sign drawn too; as timm's RandAugment + AugmentOp. */
void tf_randaug_image(tf_aug_rng *r, int n, double magnitude, double mstd, uint8_t *img, uint8_t *scratch, int h,
                      int w);

/* ---------------------------------------------------------------- erasing, mixup, cutmix (augment.c) */

/* timm's RandomErasing (min_area 0.02, max_area 1/3, aspect ratios
 * log-uniform in [0.3, 1/0.3], one box, 10 attempts) on x (C,H,W): with
 * probability p a box is filled with values mean_c + std_c z, z ~ N(0,1)
 * per pixel (TF_ERASE_PIXEL), per channel (RAND) or 0 (CONST): timm's
 * values in normalised space, brought back to pixels. The box into box
 * (top, left, height, width; height 0: nothing erased). */
/* x (rows,W) mirrored left-right in place: rows = C*H for one image (C,H,W),
 * B*C*H for a batch. */
void tf_aug_mirror(float *x, int64_t rows, int64_t W);

void tf_aug_erase(tf_aug_rng *r, float p, tf_erase_mode mode, const float *mean, const float *std, float *x, int C,
                  int H, int W, int box[4]);

/* Mixup of a batch x (rows, per) with itself flipped (row i with rows-1-i):
 * x = lam x + (1 - lam) flip(x), as timm's Mixup in "batch" mode. */
void tf_aug_mixup(float *x, int rows, int64_t per, double lam);
/* timm's rand_bbox + cutmix_bbox_and_lam (timm 1.0): the box (y0, y1, x0,
 * x1) of side int(H sqrt(1-lam)) x int(W sqrt(1-lam)) around (cy, cx),
 * clipped to the image; returns lam corrected to 1 - box area / (H W). */
double tf_aug_cutmix_box(int H, int W, double lam, int cy, int cx, int box[4]);
/* The box of every image of x (rows,C,H,W) from the flipped batch. */
void tf_aug_cutmix(float *x, int rows, int C, int H, int W, const int box[4]);
/* timm's mixup_target: one-hot targets smoothed (off = s / L, on = 1 - s + off)
 * of labels and of the flipped labels, mixed lam : 1 - lam, into t (rows, L). */
void tf_aug_mix_targets(const int32_t *labels, int rows, int L, double lam, float smoothing, float *t);

#endif
