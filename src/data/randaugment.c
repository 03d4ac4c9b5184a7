/* RandAugment on 8-bit grey images, operation for operation as timm's
 * rand-increasing policy runs them on PIL "L" images (Pillow 13): the
 * lookup tables of ImageOps (autocontrast, equalize, posterize, solarize),
 * ImageEnhance's blends in float (contrast against the rounded mean,
 * brightness against black, sharpness against the SMOOTH filter), and the
 * affine transforms (rotate, shear, translate) sampled bicubically at pixel
 * centres as Pillow's Geometry.c does, with fill 0 (the datasets' black
 * background; timm fills ImageNet's mean colour). tests/ref/gen_deit_fixtures.py
 * runs timm's functions on fixed images and arguments; tests/test_deit.c
 * compares byte for byte. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "augment.h"

static const char *const NAMES[TF_RA_COUNT] = {
    "identity", "autocontrast", "equalize",   "rotate",     "posterize",  "solarize",    "solarize_add",
    "contrast", "brightness",   "sharpness", "shear_x",    "shear_y",    "translate_x", "translate_y"};

const char *tf_randaug_name(tf_randaug_op op) { return op >= 0 && op < TF_RA_COUNT ? NAMES[op] : "unknown"; }

/* ---------------------------------------------------------------- levels (timm's _*_level_to_arg) */

#define LEVEL_DENOM 10.0

double tf_randaug_arg(tf_randaug_op op, double m, int negate) {
    double s = negate ? -1.0 : 1.0, level;
    switch (op) {
    case TF_RA_ROTATE: return s * (m / LEVEL_DENOM) * 30.0;
    case TF_RA_POSTERIZE: return 4 - (int)((m / LEVEL_DENOM) * 4); /* increasing: 4 bits down to 0 */
    case TF_RA_SOLARIZE: {
        int t = (int)((m / LEVEL_DENOM) * 256);
        return 256 - (t < 256 ? t : 256);
    }
    case TF_RA_SOLARIZE_ADD: {
        int a = (int)((m / LEVEL_DENOM) * 110);
        return a < 128 ? a : 128;
    }
    case TF_RA_CONTRAST:
    case TF_RA_BRIGHTNESS:
    case TF_RA_SHARPNESS: /* increasing: 1 is no change, the sign picks the side */
        level = 1.0 + s * (m / LEVEL_DENOM) * 0.9;
        return level > 0.1 ? level : 0.1;
    case TF_RA_SHEAR_X:
    case TF_RA_SHEAR_Y: return s * (m / LEVEL_DENOM) * 0.3;
    case TF_RA_TRANSLATE_X:
    case TF_RA_TRANSLATE_Y: return s * (m / LEVEL_DENOM) * 0.45;
    default: return 0.0;
    }
}

/* ---------------------------------------------------------------- lookup tables (ImageOps) */

static void histogram(const uint8_t *src, int64_t n, int64_t h[256]) {
    memset(h, 0, 256 * sizeof *h);
    for (int64_t i = 0; i < n; i++) h[src[i]]++;
}

static void lut_autocontrast(const int64_t h[256], uint8_t lut[256]) {
    int lo = 0, hi = 255;
    while (lo < 256 && !h[lo]) lo++;
    while (hi >= 0 && !h[hi]) hi--;
    for (int i = 0; i < 256; i++) lut[i] = (uint8_t)i;
    if (hi <= lo) return;
    double scale = 255.0 / (hi - lo), offset = -lo * scale;
    for (int i = 0; i < 256; i++) {
        double v = i * scale + offset; /* Python's int(): towards zero */
        int k = (int)v;
        lut[i] = (uint8_t)(k < 0 ? 0 : k > 255 ? 255 : k);
    }
}

/* Pillow 13: step = (pixels - the last bin's) // 255; values past 255 clipped by point(). */
static void lut_equalize(const int64_t h[256], uint8_t lut[256]) {
    int64_t total = 0, last = 0;
    int bins = 0;
    for (int i = 0; i < 256; i++)
        if (h[i]) total += h[i], last = h[i], bins++;
    int64_t step = bins > 1 ? (total - last) / 255 : 0;
    for (int i = 0; i < 256; i++) lut[i] = (uint8_t)i;
    if (!step) return;
    for (int64_t i = 0, n = step / 2; i < 256; n += h[i], i++) {
        int64_t v = n / step;
        lut[i] = (uint8_t)(v > 255 ? 255 : v);
    }
}

static void lut_point(tf_randaug_op op, double arg, uint8_t lut[256]) {
    int a = (int)arg;
    for (int i = 0; i < 256; i++) {
        int v = i;
        if (op == TF_RA_POSTERIZE && a < 8) v = i & ~((1 << (8 - a)) - 1); /* 0 bits: black */
        if (op == TF_RA_SOLARIZE) v = i < a ? i : 255 - i;
        if (op == TF_RA_SOLARIZE_ADD) v = i < 128 ? (i + a < 255 ? i + a : 255) : i;
        lut[i] = (uint8_t)v;
    }
}

/* ---------------------------------------------------------------- blends (ImageEnhance) */

/* Image.blend(degenerate, image, f) in Pillow's float arithmetic, clipped and truncated. */
static uint8_t blend(int a, int b, float f) {
    float v = (float)a + f * (float)(b - a);
    return v <= 0.0f ? 0 : v >= 255.0f ? 255 : (uint8_t)v;
}

/* ImageFilter.SMOOTH (3x3, 1 1 1 / 1 5 1 / 1 1 1, / 13) as Filter.c: the border copied. */
static void smooth(const uint8_t *src, uint8_t *dst, int h, int w) {
    memcpy(dst, src, (size_t)h * (size_t)w);
    if (h < 3 || w < 3) return;
    const float k1 = 1.0f / 13.0f, k5 = 5.0f / 13.0f;
    for (int y = 1; y < h - 1; y++)
        for (int x = 1; x < w - 1; x++) {
            const uint8_t *up = src + (size_t)(y - 1) * w, *mid = src + (size_t)y * w, *dn = src + (size_t)(y + 1) * w;
            float ss = 0.5f; /* rounding */
            ss += (float)dn[x - 1] * k1 + (float)dn[x] * k1 + (float)dn[x + 1] * k1;
            ss += (float)mid[x - 1] * k1 + (float)mid[x] * k5 + (float)mid[x + 1] * k1;
            ss += (float)up[x - 1] * k1 + (float)up[x] * k1 + (float)up[x + 1] * k1;
            dst[(size_t)y * w + x] = ss <= 0.0f ? 0 : ss >= 255.0f ? 255 : (uint8_t)ss;
        }
}

static void enhance(tf_randaug_op op, float f, const uint8_t *src, uint8_t *dst, int h, int w) {
    int64_t n = (int64_t)h * w, hist[256];
    int degenerate = 0;
    if (op == TF_RA_CONTRAST) { /* the mean, rounded: int(mean + 0.5) */
        histogram(src, n, hist);
        double sum = 0.0;
        for (int i = 0; i < 256; i++) sum += (double)i * (double)hist[i];
        degenerate = (int)(sum / (double)n + 0.5);
    }
    if (op == TF_RA_SHARPNESS) smooth(src, dst, h, w);
    for (int64_t i = 0; i < n; i++)
        dst[i] = blend(op == TF_RA_SHARPNESS ? dst[i] : degenerate, src[i], f);
}

/* ---------------------------------------------------------------- affine transforms (Geometry.c) */

static int floor_int(double x) { return x < 0.0 ? (int)floor(x) : (int)x; }

/* The cubic convolution of Pillow's BICUBIC macro (a = -1) at d in [0,1). */
static double cubic(double v1, double v2, double v3, double v4, double d) {
    double p1 = v2, p2 = -v1 + v3, p3 = 2 * (v1 - v2) + v3 - v4, p4 = -v1 + v2 - v3 + v4;
    return p1 + d * (p2 + d * (p3 + d * p4));
}

static double cubic_row(const uint8_t *row, int w, int x, double dx) {
    int c[4];
    for (int k = 0; k < 4; k++) c[k] = x + k < 0 ? 0 : x + k < w ? x + k : w - 1;
    return cubic(row[c[0]], row[c[1]], row[c[2]], row[c[3]], dx);
}

/* bicubic_filter8: the value at (xin, yin), or fill 0 outside the image. */
static uint8_t bicubic(const uint8_t *src, int h, int w, double xin, double yin) {
    if (xin < 0.0 || xin >= w || yin < 0.0 || yin >= h) return 0;
    xin -= 0.5, yin -= 0.5;
    int x = floor_int(xin), y = floor_int(yin);
    double dx = xin - x, dy = yin - y, v[4];
    x--, y--;
    v[0] = cubic_row(src + (size_t)(y < 0 ? 0 : y < h ? y : h - 1) * w, w, x, dx);
    for (int k = 1; k < 4; k++) v[k] = y + k >= 0 && y + k < h ? cubic_row(src + (size_t)(y + k) * w, w, x, dx) : v[k - 1];
    double out = cubic(v[0], v[1], v[2], v[3], dy);
    return out <= 0.0 ? 0 : out >= 255.0 ? 255 : (uint8_t)out;
}

/* Python's round(v, 15): the nearest double to v's decimal rounding. */
static double round15(double v) {
    char s[64];
    snprintf(s, sizeof s, "%.15f", v);
    return strtod(s, NULL);
}

/* Image.rotate's matrix (destination to source) about the centre, as Pillow computes it. */
static void rotate_matrix(double degrees, int h, int w, double a[6]) {
    double angle = fmod(degrees, 360.0); /* Python's %: the sign of the divisor */
    if (angle != 0.0 && angle < 0.0) angle += 360.0;
    double cx = w / 2.0, cy = h / 2.0, r = -(angle * (3.14159265358979323846 / 180.0));
    a[0] = round15(cos(r)), a[1] = round15(sin(r)), a[3] = round15(-sin(r)), a[4] = round15(cos(r));
    a[2] = a[0] * -cx + a[1] * -cy + 0.0;
    a[5] = a[3] * -cx + a[4] * -cy + 0.0;
    a[2] += cx, a[5] += cy;
}

static void affine(const double a[6], const uint8_t *src, uint8_t *dst, int h, int w) {
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) {
            double xin = x + 0.5, yin = y + 0.5;
            dst[(size_t)y * w + x] = bicubic(src, h, w, a[0] * xin + a[1] * yin + a[2], a[3] * xin + a[4] * yin + a[5]);
        }
}

static void geometric(tf_randaug_op op, double arg, const uint8_t *src, uint8_t *dst, int h, int w) {
    double a[6] = {1, 0, 0, 0, 1, 0};
    if (op == TF_RA_ROTATE) {
        double mod = fmod(arg, 360.0);
        if (mod == 0.0) { /* Pillow's fast path: a copy */
            memcpy(dst, src, (size_t)h * (size_t)w);
            return;
        }
        rotate_matrix(arg, h, w, a);
    }
    if (op == TF_RA_SHEAR_X) a[1] = arg;
    if (op == TF_RA_SHEAR_Y) a[3] = arg;
    if (op == TF_RA_TRANSLATE_X) a[2] = arg * w;
    if (op == TF_RA_TRANSLATE_Y) a[5] = arg * h;
    affine(a, src, dst, h, w);
}

/* ---------------------------------------------------------------- the ops and the policy */

void tf_randaug_apply(tf_randaug_op op, double arg, const uint8_t *src, uint8_t *dst, int h, int w) {
    int64_t n = (int64_t)h * w, hist[256];
    uint8_t lut[256];
    switch (op) {
    case TF_RA_AUTOCONTRAST:
    case TF_RA_EQUALIZE:
        histogram(src, n, hist);
        if (op == TF_RA_AUTOCONTRAST) lut_autocontrast(hist, lut);
        else lut_equalize(hist, lut);
        break;
    case TF_RA_POSTERIZE:
    case TF_RA_SOLARIZE:
    case TF_RA_SOLARIZE_ADD: lut_point(op, arg, lut); break;
    case TF_RA_CONTRAST:
    case TF_RA_BRIGHTNESS:
    case TF_RA_SHARPNESS: enhance(op, (float)arg, src, dst, h, w); return;
    case TF_RA_ROTATE:
    case TF_RA_SHEAR_X:
    case TF_RA_SHEAR_Y:
    case TF_RA_TRANSLATE_X:
    case TF_RA_TRANSLATE_Y: geometric(op, arg, src, dst, h, w); return;
    default: memcpy(dst, src, (size_t)n); return;
    }
    for (int64_t i = 0; i < n; i++) dst[i] = lut[src[i]];
}

static int has_sign(tf_randaug_op op) {
    return op == TF_RA_ROTATE || op == TF_RA_CONTRAST || op == TF_RA_BRIGHTNESS || op == TF_RA_SHARPNESS ||
           op == TF_RA_SHEAR_X || op == TF_RA_SHEAR_Y || op == TF_RA_TRANSLATE_X || op == TF_RA_TRANSLATE_Y;
}

void tf_randaug_image(tf_aug_rng *r, int n, double magnitude, double mstd, uint8_t *img, uint8_t *scratch, int h,
                      int w) {
    for (int k = 0; k < n; k++) {
        tf_randaug_op op = (tf_randaug_op)tf_aug_randint(r, 0, TF_RA_COUNT);
        if (tf_aug_uniform(r) > 0.5) continue; /* AugmentOp's prob 0.5 */
        double m = mstd > 0 ? magnitude + mstd * tf_aug_normal(r) : magnitude;
        m = m < 0.0 ? 0.0 : m > LEVEL_DENOM ? LEVEL_DENOM : m;
        int negate = has_sign(op) && tf_aug_uniform(r) > 0.5;
        tf_randaug_apply(op, tf_randaug_arg(op, m, negate), img, scratch, h, w);
        memcpy(img, scratch, (size_t)h * (size_t)w);
    }
}
