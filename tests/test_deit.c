/* DeiT's recipe, piece by piece, against timm's own code where it has one
 * (tests/ref/gen_deit_fixtures.py -> tests/fixtures_deit/deit.txt: timm
 * 1.0.29, Pillow 13): RandAugment's operations byte for byte on fixed grey
 * images and arguments, their level functions, Mixup / CutMix (box, lambda
 * correction, images, targets), SoftTargetCrossEntropy, the drop-path rates;
 * and numerically where the reference's draws cannot be shared: drop path
 * zeroes whole samples and scales the rest, random erasing's boxes, the
 * loader's mixup is the convex combination with its lambda, its cutmix box
 * the area its lambda says, repeated augmentation, determinism. */
#include <stdlib.h>
#include <string.h>

#include "data/augment.h"
#include "test.h"

#define FIXTURE "tests/fixtures_deit/deit.txt"

/* The fixture's lines starting with `tag `, each malloc'ed into lines (at most max). */
static int fixture_lines(const char *tag, char **lines, int max) {
    size_t len;
    char *text = test_slurp(FIXTURE, &len);
    int n = 0;
    size_t k = strlen(tag);
    for (char *p = text; p && *p && n < max;) {
        char *e = strchr(p, '\n');
        size_t l = e ? (size_t)(e - p) : strlen(p);
        if (l > k && !strncmp(p, tag, k) && p[k] == ' ' && (lines[n] = malloc(l + 1))) {
            memcpy(lines[n], p, l), lines[n][l] = 0;
            n++;
        }
        p = e ? e + 1 : p + l;
    }
    free(text);
    return n;
}

static void free_lines(char **lines, int n) {
    for (int i = 0; i < n; i++) free(lines[i]);
}

/* n bytes of hex text into b; the end of the hex. */
static const char *unhex(const char *s, uint8_t *b, int n) {
    for (int i = 0; i < n; i++) {
        unsigned v;
        if (sscanf(s + 2 * i, "%2x", &v) != 1) return NULL;
        b[i] = (uint8_t)v;
    }
    return s + 2 * n;
}

static int op_by_name(const char *name) {
    for (int i = 0; i < TF_RA_COUNT; i++)
        if (!strcmp(tf_randaug_name((tf_randaug_op)i), name)) return i;
    return -1;
}

/* ---------------------------------------------------------------- against timm */

TEST(deit_randaug_ops_match_timm) {
    char *img_lines[8], *op_lines[512];
    int n_img = fixture_lines("image", img_lines, 8), n_op = fixture_lines("op", op_lines, 512);
    CHECKF(n_img == 3 && n_op > 100, "%s: %d images, %d ops (run tests/ref/gen_deit_fixtures.py)", FIXTURE, n_img, n_op);
    uint8_t src[3][512], dst[512], want[512];
    int h[3], w[3], bad = 0, cases = 0, seen[TF_RA_COUNT] = {0};
    for (int i = 0; i < n_img; i++) {
        int k, at;
        CHECK(sscanf(img_lines[i], "image %d %d %d %n", &k, &h[i], &w[i], &at) == 3 && k == i && h[i] * w[i] <= 512);
        CHECK(unhex(img_lines[i] + at, src[i], h[i] * w[i]) != NULL);
    }
    for (int i = 0; i < n_op; i++) {
        int k, at;
        char name[32];
        double arg;
        CHECK(sscanf(op_lines[i], "op %d %31s %lf %n", &k, name, &arg, &at) == 3 && k >= 0 && k < n_img);
        int op = op_by_name(name), n = h[k] * w[k], diff = 0, worst = 0;
        CHECKF(op >= 0, "unknown op %s", name);
        CHECK(unhex(op_lines[i] + at, want, n) != NULL);
        tf_randaug_apply((tf_randaug_op)op, arg, src[k], dst, h[k], w[k]);
        for (int p = 0; p < n; p++) {
            int d = abs((int)dst[p] - (int)want[p]);
            diff += d != 0, worst = d > worst ? d : worst;
        }
        if (diff) bad += fprintf(stderr, "    %s(%g) on image %d: %d of %d pixels differ, by up to %d\n", name, arg, k,
                                 diff, n, worst) > 0;
        cases++, seen[op] = 1;
    }
    for (int op = 0; op < TF_RA_COUNT; op++) CHECKF(seen[op], "no case of %s", tf_randaug_name((tf_randaug_op)op));
    printf("    %d cases (14 ops, 3 images of 17x20, 12x12, 2x3): %d differ from timm's\n", cases, bad);
    free_lines(img_lines, n_img), free_lines(op_lines, n_op);
    CHECKF(bad == 0, "%d RandAugment cases differ from timm's", bad);
}

TEST(deit_randaug_levels_match_timm) {
    char *lines[256];
    int n = fixture_lines("level", lines, 256), bad = 0;
    CHECK(n > 50);
    for (int i = 0; i < n; i++) {
        char name[32];
        double m, want;
        int negate;
        CHECK(sscanf(lines[i], "level %31s %lf %d %lf", name, &m, &negate, &want) == 4 && op_by_name(name) >= 0);
        double got = tf_randaug_arg((tf_randaug_op)op_by_name(name), m, negate);
        if (got != want) bad += fprintf(stderr, "    %s at %g (negate %d): %.17g, timm %.17g\n", name, m, negate, got, want) > 0;
    }
    printf("    %d levels, every one equal to timm's\n", n - bad);
    free_lines(lines, n);
    CHECK(bad == 0);
}

/* Numbers after `key` in line into v (at most max); their count. */
static int numbers_after(const char *line, const char *key, double *v, int max) {
    const char *p = strstr(line, key);
    int n = 0;
    if (!p) return 0;
    p += strlen(key);
    for (char *end; n < max; p = end) {
        v[n] = strtod(p, &end);
        if (end == p) break;
        n++;
    }
    return n;
}

TEST(deit_mixup_and_cutmix_match_timm) {
    char *batch[1], *lines[16];
    CHECK(fixture_lines("batch", batch, 1) == 1);
    int n = fixture_lines("mix", lines, 16), B, C, H, W, L;
    CHECK(n == 6 && sscanf(batch[0], "batch %d %d %d %d %d", &B, &C, &H, &W, &L) == 5 && B == 6 && L == 10);
    double xv[120], lab[6], want_x[120], want_t[60];
    int per = C * H * W;
    CHECK(numbers_after(batch[0], "batch 6 1 5 4 10", xv, 120) == B * per && numbers_after(batch[0], "labels", lab, 6) == B);
    int32_t labels[6];
    for (int i = 0; i < B; i++) labels[i] = (int32_t)lab[i];
    double worst = 0;
    for (int c = 0; c < n; c++) {
        double lam, lam_want, box_want[4];
        int cut, cy, cx, box[4] = {0};
        CHECK(sscanf(lines[c], "mix %lf %d %d %d", &lam, &cut, &cy, &cx) == 4);
        CHECK(numbers_after(lines[c], "box", box_want, 4) == 4 && numbers_after(lines[c], " lam", &lam_want, 1) == 1);
        CHECK(numbers_after(lines[c], " x", want_x, 120) == B * per && numbers_after(lines[c], " t", want_t, 60) == B * L);
        float x[120], t[60];
        for (int i = 0; i < B * per; i++) x[i] = (float)xv[i];
        if (cut) {
            lam = tf_aug_cutmix_box(H, W, lam, cy, cx, box);
            for (int k = 0; k < 4; k++) CHECKF(box[k] == (int)box_want[k], "case %d: box[%d] %d, timm %g", c, k, box[k], box_want[k]);
            CHECKF(lam == lam_want, "case %d: lambda %.17g, timm %.17g", c, lam, lam_want);
            tf_aug_cutmix(x, B, C, H, W, box);
        } else {
            tf_aug_mixup(x, B, per, lam);
        }
        tf_aug_mix_targets(labels, B, L, lam, 0.1f, t);
        for (int i = 0; i < B * per; i++) worst = fmax(worst, fabs(x[i] - want_x[i]));
        for (int i = 0; i < B * L; i++) worst = fmax(worst, fabs(t[i] - want_t[i]));
    }
    printf("    6 batches (2 mixup, 4 cutmix): boxes and lambdas equal, images and targets within %.2g\n", worst);
    free_lines(batch, 1), free_lines(lines, n);
    CHECKF(worst == 0, "mixed images or targets differ from timm's by %g", worst);
}

TEST(deit_soft_cross_entropy_matches_timm) {
    char *lines[1];
    CHECK(fixture_lines("softce", lines, 1) == 1);
    double x[28], t[28], loss, grad[28];
    CHECK(numbers_after(lines[0], "softce 4 7", x, 28) == 28 && numbers_after(lines[0], " t", t, 28) == 28);
    CHECK(numbers_after(lines[0], "loss", &loss, 1) == 1 && numbers_after(lines[0], "grad", grad, 28) == 28);
    tf_ctx *ctx = tf_ctx_new(1);
    tf_tensor *logits = tf_tensor_new(ctx, TF_DTYPE_F32, 2, (int64_t[]){4, 7}, 1);
    tf_tensor *targets = tf_tensor_new(ctx, TF_DTYPE_F32, 2, (int64_t[]){4, 7}, 0);
    for (int i = 0; i < 28; i++) tf_f32(logits)[i] = (float)x[i], tf_f32(targets)[i] = (float)t[i];
    tf_tensor *l = tf_soft_cross_entropy(ctx, logits, targets);
    CHECK(l && tf_backward(ctx, l, NULL) == 0);
    double err = fabs(tf_f32(l)[0] - loss), gerr = 0;
    for (int i = 0; i < 28; i++) gerr = fmax(gerr, fabs(logits->grad[i] - grad[i]));
    printf("    loss %.7f (timm %.7f), worst gradient difference %.2g\n", tf_f32(l)[0], loss, gerr);
    CHECK(err < 1e-6 && gerr < 1e-7);
    CHECK(tf_soft_cross_entropy(ctx, logits, logits) == NULL && strstr(tf_error(), "constants"));
    tf_ctx_free(ctx);
    free_lines(lines, 1);
}

TEST(deit_drop_path_rates_match_torch_linspace) {
    char *lines[8];
    int n = fixture_lines("linspace", lines, 8);
    CHECK(n == 5);
    for (int c = 0; c < n; c++) {
        double rate, want[16];
        int layers;
        CHECK(sscanf(lines[c], "linspace %lf %d", &rate, &layers) == 2 && layers <= 16);
        char key[64];
        snprintf(key, sizeof key, "%d ", layers);
        CHECK(numbers_after(strchr(lines[c] + 9, ' '), key, want, 16) == layers);
        tf_vit_config cfg = tf_vit_config_default();
        cfg.n_layer = layers, cfg.drop_path = (float)rate;
        for (int l = 0; l < layers; l++)
            CHECKF(tf_vit_drop_path(&cfg, l) == (float)want[l], "rate %g of %d layers, layer %d: %.9g, torch %.9g", rate,
                   layers, l, tf_vit_drop_path(&cfg, l), want[l]);
    }
    free_lines(lines, n);
}

/* ---------------------------------------------------------------- numerically */

TEST(deit_drop_path_zeroes_whole_samples) {
    tf_ctx *ctx = tf_ctx_new(7);
    tf_tensor *x = tf_tensor_new(ctx, TF_DTYPE_F32, 3, (int64_t[]){400, 3, 5}, 1);
    tf_tensor_fill_normal(x, 3, 1.0f);
    CHECK(tf_drop_path(ctx, x, 0.25f) == x); /* not training: the identity */
    tf_ctx_set_training(ctx, 1);
    CHECK(tf_drop_path(ctx, x, 0.0f) == x && tf_drop_path(ctx, x, 1.0f) == NULL);
    tf_tensor *y = tf_drop_path(ctx, x, 0.25f);
    CHECK(y && tf_backward(ctx, tf_sum(ctx, y, TF_DIM_ALL, 0), NULL) == 0);
    int dropped = 0;
    for (int b = 0; b < 400; b++) {
        int zero = 1, scaled = 1;
        for (int k = 0; k < 15; k++) {
            float xi = tf_f32(x)[b * 15 + k], yi = tf_f32(y)[b * 15 + k], g = x->grad[b * 15 + k];
            zero &= yi == 0.0f && g == 0.0f;
            scaled &= yi == xi * (1.0f / 0.75f) && g == 1.0f / 0.75f;
        }
        CHECKF(zero != scaled, "sample %d is neither dropped whole nor kept whole and scaled by 1/(1-p)", b);
        dropped += zero;
    }
    printf("    %d of 400 samples dropped at p = 0.25 (the rest scaled by 4/3, gradients likewise)\n", dropped);
    CHECK(dropped > 70 && dropped < 130); /* binomial(400, 0.25): 100 +- 8.7 */
    tf_ctx_free(ctx);
}

/* The ViT with drop path: evaluation is unchanged; training drops some images' sub-layers. */
TEST(deit_drop_path_in_the_vit_only_while_training) {
    tf_vit_config c = tf_vit_config_default();
    c.image_size = 8, c.patch_size = 4, c.d_model = 16, c.n_head = 2, c.n_layer = 3, c.n_labels = 3;
    tf_vit *plain = tf_vit_new(&c, 5);
    c.drop_path = 0.5f;
    tf_vit *dp = tf_vit_new(&c, 5);
    tf_ctx *ctx = tf_ctx_new(3);
    tf_tensor *x = tf_tensor_new(ctx, TF_DTYPE_F32, 4, (int64_t[]){16, 1, 8, 8}, 0);
    tf_tensor_fill_uniform(x, 9, 0.0f, 1.0f);
    tf_vit_inputs in = {.pixel_values = x};
    tf_vit_outputs a, b;
    CHECK(plain && dp && tf_vit_run(ctx, plain, &in, &a) == 0 && tf_vit_run(ctx, dp, &in, &b) == 0);
    CHECK(memcmp(a.logits->data, b.logits->data, 16 * 3 * sizeof(float)) == 0);
    tf_ctx_set_training(ctx, 1);
    CHECK(tf_vit_run(ctx, dp, &in, &b) == 0);
    int changed = 0;
    for (int i = 0; i < 16; i++) changed += memcmp(tf_f32(a.logits) + 3 * i, tf_f32(b.logits) + 3 * i, 3 * sizeof(float)) != 0;
    printf("    evaluation equal to the model without drop path; training changed %d of 16 images\n", changed);
    CHECK(changed > 0);
    tf_ctx_free(ctx);
    tf_vit_free(plain), tf_vit_free(dp);
}

TEST(deit_random_erasing_boxes) {
    float mean[1] = {0.3f}, std[1] = {0.2f}, x[24 * 20];
    int erased = 0;
    for (int k = 0; k < 400; k++) {
        for (int i = 0; i < 24 * 20; i++) x[i] = 5.0f; /* outside [0,1]: an erased value never equals it */
        tf_aug_rng r = tf_aug_rng_at(11, (uint64_t)k, 0, 2);
        int box[4];
        tf_aug_erase(&r, 0.25f, k % 2 ? TF_ERASE_PIXEL : TF_ERASE_CONST, mean, std, x, 1, 24, 20, box);
        int inside = 0, distinct = 0;
        for (int y = 0; y < 24; y++)
            for (int xx = 0; xx < 20; xx++) {
                int in = y >= box[0] && y < box[0] + box[2] && xx >= box[1] && xx < box[1] + box[3];
                float v = x[y * 20 + xx];
                CHECKF(in ? v != 5.0f : v == 5.0f, "draw %d: pixel (%d,%d) %s the box", k, y, xx, in ? "inside" : "outside");
                inside += in, distinct += in && v != mean[0];
            }
        if (!box[2]) continue;
        erased++;
        double area = (double)box[2] * box[3] / (24.0 * 20.0), aspect = (double)box[2] / box[3];
        CHECKF(area >= 0.5 * 0.02 && area <= 1.2 / 3.0 && aspect > 0.2 && aspect < 5.0, "box %dx%d", box[2], box[3]);
        CHECK(k % 2 ? distinct > inside / 2 : distinct == 0); /* pixel: mean + std z; const: the mean */
    }
    printf("    %d of 400 images erased at p = 0.25; boxes 0.02..1/3 of the area, aspect 0.3..3.3\n", erased);
    CHECK(erased > 70 && erased < 130);
}

TEST(deit_beta_draws) {
    double sum = 0, sq = 0;
    tf_aug_rng r = tf_aug_rng_at(1, 2, 3, 4);
    for (int i = 0; i < 20000; i++) {
        double b = tf_aug_beta(&r, 0.8);
        CHECK(b >= 0 && b <= 1);
        sum += b, sq += b * b;
    }
    double mean = sum / 20000, var = sq / 20000 - mean * mean; /* Beta(0.8, 0.8): 0.5, 1/(4 (2 a + 1)) = 0.0962 */
    printf("    Beta(0.8, 0.8): mean %.4f (0.5), variance %.4f (0.0962)\n", mean, var);
    CHECK(fabs(mean - 0.5) < 0.01 && fabs(var - 0.0962) < 0.004);
}

/* ---------------------------------------------------------------- the loader */

#define SET_N 10
#define SET_H 6
#define SET_W 5

/* SET_N images of 1 x SET_H x SET_W, every pixel of every image distinct, label i. */
static void make_set(tf_images *s, float *pix, int32_t *lab) {
    for (int i = 0; i < SET_N * SET_H * SET_W; i++) pix[i] = (float)(i + 1) / (SET_N * SET_H * SET_W + 1);
    for (int i = 0; i < SET_N; i++) lab[i] = i;
    *s = (tf_images){SET_N, 1, SET_H, SET_W, pix, lab, SET_N};
}

/* Batch `key` of `rows` from a loader with aug: pixels (and targets) copied out. */
static int batch_of(const tf_images *s, const tf_images_aug *a, uint64_t seed, uint64_t key, int rows, float *x,
                    float *t, int32_t *y) {
    tf_loader *l = tf_images_loader_aug(s, s, a, seed);
    tf_ctx *ctx = tf_ctx_new(1);
    tf_batch b = {0};
    int rc = !l || !ctx || tf_loader_next(l, ctx, TF_SUBSET_TRAIN, key, rows, &b);
    tf_tensor *xt = rc ? NULL : tf_batch_get(&b, "pixel_values"), *tt = rc ? NULL : tf_batch_get(&b, "targets");
    if (xt) memcpy(x, xt->data, (size_t)tf_numel(xt) * sizeof(float));
    if (xt && y) memcpy(y, tf_batch_get(&b, "labels")->data, (size_t)rows * sizeof(int32_t));
    if (t && tt) memcpy(t, tt->data, (size_t)tf_numel(tt) * sizeof(float));
    rc = rc || !xt || (t && !tt);
    tf_ctx_free(ctx);
    tf_loader_free(l);
    return rc ? -1 : 0;
}

TEST(deit_loader_mixup_is_the_convex_combination) {
    float pix[SET_N * SET_H * SET_W], x[8 * 30], m[8 * 30], t[8 * SET_N];
    int32_t lab[SET_N], y[8];
    tf_images s;
    make_set(&s, pix, lab);
    tf_images_aug plain = tf_images_aug_none(), mix = plain;
    mix.mixup_alpha = 0.8f;
    int checked = 0;
    for (uint64_t key = 0; key < 6; key++) {
        CHECK(batch_of(&s, &plain, 5, key, 8, x, NULL, y) == 0 && batch_of(&s, &mix, 5, key, 8, m, t, NULL) == 0);
        for (int i = 0; i < 8; i++) {
            int j = 7 - i;
            if (y[i] == y[j]) continue;
            double lam = t[i * SET_N + y[i]], sum = 0; /* no smoothing: lam on the row's label, 1 - lam on its pair's */
            CHECK(fabs(t[i * SET_N + y[j]] - (1 - lam)) < 1e-6);
            for (int k = 0; k < SET_N; k++) sum += t[i * SET_N + k];
            CHECK(fabs(sum - 1) < 1e-6);
            for (int p = 0; p < 30; p++) CHECK(fabsf(m[i * 30 + p] - (float)(lam * x[i * 30 + p] + (1 - lam) * x[j * 30 + p])) < 1e-6f);
            checked++;
        }
    }
    printf("    %d rows of 6 batches: lam x_i + (1 - lam) x_(7-i), lam read from the targets\n", checked);
    CHECK(checked > 20);
}

TEST(deit_loader_cutmix_box_is_its_lambda) {
    float pix[SET_N * SET_H * SET_W], x[8 * 30], c[8 * 30], t[8 * SET_N];
    int32_t lab[SET_N], y[8];
    tf_images s;
    make_set(&s, pix, lab);
    tf_images_aug plain = tf_images_aug_none(), cut = plain;
    cut.cutmix_alpha = 1.0f, cut.label_smoothing = 0.1f;
    int batches = 0, lo = 30, hi = 0;
    for (uint64_t key = 0; key < 8; key++) {
        CHECK(batch_of(&s, &plain, 9, key, 8, x, NULL, y) == 0 && batch_of(&s, &cut, 9, key, 8, c, t, NULL) == 0);
        int area = 0, y0 = SET_H, y1 = -1, x0 = SET_W, x1 = -1, r = 0;
        while (r < 4 && y[r] == y[7 - r]) r++; /* a row whose pair is another image tells where the box is */
        if (r == 4) continue;
        for (int p = 0; p < 30; p++) { /* from the pair in every row, or from the row itself in every row */
            int from_pair = c[r * 30 + p] != x[r * 30 + p], all = 1;
            for (int i = 0; i < 8; i++) all &= c[i * 30 + p] == (from_pair ? x[(7 - i) * 30 + p] : x[i * 30 + p]);
            CHECKF(all, "key %llu: pixel %d mixes rows unevenly", (unsigned long long)key, p);
            if (from_pair) {
                area++;
                y0 = p / SET_W < y0 ? p / SET_W : y0, y1 = p / SET_W > y1 ? p / SET_W : y1;
                x0 = p % SET_W < x0 ? p % SET_W : x0, x1 = p % SET_W > x1 ? p % SET_W : x1;
            }
        }
        if (area) CHECK(area == (y1 - y0 + 1) * (x1 - x0 + 1)); /* a rectangle */
        lo = area < lo ? area : lo, hi = area > hi ? area : hi;
        for (int i = 0; i < 8; i++) {
            if (y[i] == y[7 - i]) continue;
            double lam = 1.0 - (double)area / 30.0, off = 0.1 / SET_N, on = 0.9 + off;
            CHECKF(fabs(t[i * SET_N + y[i]] - (lam * on + (1 - lam) * off)) < 1e-6, "key %llu: target %g, box area %d / 30",
                   (unsigned long long)key, t[i * SET_N + y[i]], area);
        }
        batches++;
    }
    CHECK(batches >= 6 && hi > lo && hi > 0);
    printf("    %d batches (boxes of %d to %d of 30 pixels): each a rectangle from the reversed batch, lam = 1 - area / (H W) "
           "in the targets\n", batches, lo, hi);
}

TEST(deit_loader_repeats_and_determinism) {
    float pix[SET_N * SET_H * SET_W], a[9 * 30], b[9 * 30], ta[9 * SET_N], tb[9 * SET_N];
    int32_t lab[SET_N], y[9];
    tf_images s;
    make_set(&s, pix, lab);
    tf_images_aug rep = tf_images_aug_none();
    rep.repeats = 3;
    CHECK(batch_of(&s, &rep, 4, 2, 9, a, NULL, y) == 0);
    for (int g = 0; g < 3; g++)
        for (int r = 1; r < 3; r++)
            CHECK(y[3 * g + r] == y[3 * g] && !memcmp(a + (3 * g + r) * 30, a + 3 * g * 30, 30 * sizeof(float)));
    tf_images_aug all = rep; /* the whole recipe */
    all.shift = 1, all.randaug_ops = 2, all.erase_prob = 0.25f, all.mixup_alpha = 0.8f, all.cutmix_alpha = 1.0f;
    all.label_smoothing = 0.1f;
    CHECK(batch_of(&s, &all, 4, 2, 9, a, ta, NULL) == 0 && batch_of(&s, &all, 4, 2, 9, b, tb, NULL) == 0);
    CHECK(!memcmp(a, b, sizeof a) && !memcmp(ta, tb, sizeof ta)); /* the same key: the same batch */
    CHECK(batch_of(&s, &all, 4, 3, 9, b, tb, NULL) == 0 && memcmp(a, b, sizeof a));
    CHECK(batch_of(&s, &all, 5, 2, 9, b, tb, NULL) == 0 && memcmp(a, b, sizeof a));
    all.erase_prob = 0;
    rep.randaug_ops = 2;
    CHECK(batch_of(&s, &rep, 4, 2, 9, a, NULL, NULL) == 0);
    for (int i = 0; i < 9 * 30; i++) CHECK(a[i] * 255.0f == rintf(a[i] * 255.0f) && a[i] >= 0 && a[i] <= 1);
    tf_images rgb = s;
    rgb.channels = 3, rgb.n = 3;
    CHECK(tf_images_loader_aug(&rgb, NULL, &rep, 1) == NULL && strstr(tf_error(), "randaug_ops"));
}

TEST(deit_loader_hflip_mirrors_rows_as_drawn) {
    float pix[SET_N * SET_H * SET_W], plain_x[16 * 30], flip_x[16 * 30];
    int32_t lab[SET_N], y0[16], y1[16];
    tf_images s;
    make_set(&s, pix, lab);
    tf_images_aug plain = tf_images_aug_none(), flip = plain;
    flip.hflip = 1.0f;
    CHECK(batch_of(&s, &plain, 3, 5, 16, plain_x, NULL, y0) == 0 && batch_of(&s, &flip, 3, 5, 16, flip_x, NULL, y1) == 0);
    for (int r = 0; r < 16; r++) { /* hflip 1: every row, the same image, its columns reversed */
        CHECK(y0[r] == y1[r]);
        for (int p = 0; p < 30; p++)
            CHECKF(flip_x[r * 30 + p] == plain_x[r * 30 + (p / SET_W) * SET_W + SET_W - 1 - p % SET_W],
                   "row %d pixel %d", r, p);
    }
    flip.hflip = 0.5f; /* half: each row either as drawn or mirrored, some of both; the same key, the same batch */
    float again[16 * 30];
    CHECK(batch_of(&s, &flip, 3, 5, 16, flip_x, NULL, NULL) == 0 && batch_of(&s, &flip, 3, 5, 16, again, NULL, NULL) == 0);
    CHECK(!memcmp(flip_x, again, sizeof again));
    int mirrored = 0, kept = 0;
    for (int r = 0; r < 16; r++) {
        int same = 1, mir = 1;
        for (int p = 0; p < 30; p++) {
            same &= flip_x[r * 30 + p] == plain_x[r * 30 + p];
            mir &= flip_x[r * 30 + p] == plain_x[r * 30 + (p / SET_W) * SET_W + SET_W - 1 - p % SET_W];
        }
        CHECKF(same || mir, "row %d is neither the image nor its mirror", r);
        kept += same && !mir, mirrored += mir && !same;
    }
    CHECK(kept > 0 && mirrored > 0);
    flip.hflip = 1.5f;
    CHECK(tf_images_loader_aug(&s, NULL, &flip, 1) == NULL && strstr(tf_error(), "hflip"));
    printf("    hflip 1: 16 rows mirrored exactly; hflip 0.5: %d kept, %d mirrored\n", kept, mirrored);
}
