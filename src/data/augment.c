/* Counter-based random draws, random erasing, mixup and cutmix: timm's
 * RandomErasing, Mixup ("batch" mode), rand_bbox, cutmix_bbox_and_lam and
 * mixup_target, with every draw a hash of (seed, key, row, what, i) so a
 * batch repeats bit for bit and a resumed run continues exactly. */
#include <math.h>
#include <string.h>

#include "../core/core_internal.h"
#include "augment.h"

/* ---------------------------------------------------------------- random draws */

tf_aug_rng tf_aug_rng_at(uint64_t seed, uint64_t key, uint64_t row, uint64_t what) {
    return (tf_aug_rng){tf_key(seed, key, row, what), 0};
}

double tf_aug_uniform(tf_aug_rng *r) {
    uint64_t s = r->key ^ (++r->i * 0xD1B54A32D192ED03ull);
    return (double)(tf_splitmix64(&s) >> 11) * 0x1p-53;
}

double tf_aug_normal(tf_aug_rng *r) {
    double u1 = 1.0 - tf_aug_uniform(r), u2 = tf_aug_uniform(r); /* u1 in (0,1] */
    return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

int tf_aug_randint(tf_aug_rng *r, int lo, int hi) {
    int k = lo + (int)(tf_aug_uniform(r) * (double)(hi - lo));
    return k < hi ? k : hi - 1;
}

/* Gamma(a, 1): Marsaglia and Tsang's method; a < 1 through Gamma(a + 1) u^(1/a). */
static double gamma_draw(tf_aug_rng *r, double a) {
    if (a < 1.0) return gamma_draw(r, a + 1.0) * pow(1.0 - tf_aug_uniform(r), 1.0 / a);
    double d = a - 1.0 / 3.0, c = 1.0 / sqrt(9.0 * d);
    for (int tries = 0; tries < 1000; tries++) {
        double x, v;
        do {
            x = tf_aug_normal(r);
            v = 1.0 + c * x;
        } while (v <= 0.0);
        v = v * v * v;
        double u = 1.0 - tf_aug_uniform(r);
        if (u < 1.0 - 0.0331 * x * x * x * x || log(u) < 0.5 * x * x + d * (1.0 - v + log(v))) return d * v;
    }
    return d; /* not reached in practice: each try succeeds with probability > 0.95 */
}

double tf_aug_beta(tf_aug_rng *r, double alpha) {
    double x = gamma_draw(r, alpha), y = gamma_draw(r, alpha);
    if (x + y <= 0.0) return tf_aug_uniform(r) < 0.5 ? 0.0 : 1.0; /* both underflowed: a tiny alpha */
    return x / (x + y);
}

/* ---------------------------------------------------------------- random erasing */

#define ERASE_MIN_AREA 0.02
#define ERASE_MAX_AREA (1.0 / 3.0)
#define ERASE_MIN_ASPECT 0.3

void tf_aug_erase(tf_aug_rng *r, float p, tf_erase_mode mode, const float *mean, const float *std, float *x, int C,
                  int H, int W, int box[4]) {
    box[0] = box[1] = box[2] = box[3] = 0;
    if (tf_aug_uniform(r) > p) return; /* timm: random.random() > probability */
    double area = (double)H * W, lo = log(ERASE_MIN_ASPECT), hi = log(1.0 / ERASE_MIN_ASPECT);
    for (int attempt = 0; attempt < 10; attempt++) {
        double target = (ERASE_MIN_AREA + (ERASE_MAX_AREA - ERASE_MIN_AREA) * tf_aug_uniform(r)) * area;
        double aspect = exp(lo + (hi - lo) * tf_aug_uniform(r));
        int h = (int)nearbyint(sqrt(target * aspect)), w = (int)nearbyint(sqrt(target / aspect)); /* round half even */
        if (w >= W || h >= H) continue;
        int top = tf_aug_randint(r, 0, H - h + 1), left = tf_aug_randint(r, 0, W - w + 1); /* randint: both ends */
        box[0] = top, box[1] = left, box[2] = h, box[3] = w;
        for (int c = 0; c < C; c++) {
            double z = mode == TF_ERASE_RAND ? tf_aug_normal(r) : 0.0;
            for (int y = top; y < top + h; y++)
                for (int xx = left; xx < left + w; xx++) {
                    double v = mode == TF_ERASE_PIXEL ? tf_aug_normal(r) : z;
                    x[((int64_t)c * H + y) * W + xx] = (float)(mean[c] + std[c] * v);
                }
        }
        return;
    }
}

/* ---------------------------------------------------------------- mixup and cutmix */

void tf_aug_mixup(float *x, int rows, int64_t per, double lam) {
    float a = (float)lam, b = (float)(1.0 - lam);
    for (int i = 0; i < rows / 2; i++) { /* rows i and rows-1-i together; an odd batch's middle row is itself */
        float *p = x + (int64_t)i * per, *q = x + (int64_t)(rows - 1 - i) * per;
        for (int64_t k = 0; k < per; k++) {
            float u = p[k], v = q[k];
            p[k] = u * a + v * b, q[k] = v * a + u * b;
        }
    }
}

static int clip(int v, int hi) { return v < 0 ? 0 : v > hi ? hi : v; }

double tf_aug_cutmix_box(int H, int W, double lam, int cy, int cx, int box[4]) {
    double ratio = sqrt(1.0 - lam);
    int cut_h = (int)(H * ratio), cut_w = (int)(W * ratio);
    box[0] = clip(cy - cut_h / 2, H), box[1] = clip(cy + (cut_h + 1) / 2, H);
    box[2] = clip(cx - cut_w / 2, W), box[3] = clip(cx + (cut_w + 1) / 2, W);
    return 1.0 - (double)(box[1] - box[0]) * (box[3] - box[2]) / ((double)H * W);
}

void tf_aug_cutmix(float *x, int rows, int C, int H, int W, const int box[4]) {
    int64_t per = (int64_t)C * H * W;
    for (int i = 0; i < rows / 2; i++) {
        float *p = x + (int64_t)i * per, *q = x + (int64_t)(rows - 1 - i) * per;
        for (int c = 0; c < C; c++)
            for (int y = box[0]; y < box[1]; y++)
                for (int xx = box[2]; xx < box[3]; xx++) {
                    int64_t k = ((int64_t)c * H + y) * W + xx;
                    float u = p[k];
                    p[k] = q[k], q[k] = u;
                }
    }
}

void tf_aug_mix_targets(const int32_t *labels, int rows, int L, double lam, float smoothing, float *t) {
    double off_d = (double)smoothing / L; /* in double, as Python computes them, then float32 */
    float off = (float)off_d, on = (float)(1.0 - smoothing + off_d), a = (float)lam, b = (float)(1.0 - lam);
    for (int i = 0; i < rows; i++) {
        float *ti = t + (int64_t)i * L;
        for (int k = 0; k < L; k++) {
            float y1 = labels[i] == k ? on : off, y2 = labels[rows - 1 - i] == k ? on : off;
            ti[k] = y1 * a + y2 * b;
        }
    }
}

void tf_aug_mirror(float *x, int64_t rows, int64_t W) {
    for (int64_t row = 0; row < rows; row++)
        for (int64_t a = 0, b = W - 1; a < b; a++, b--) {
            float t = x[row * W + a];
            x[row * W + a] = x[row * W + b], x[row * W + b] = t;
        }
}
