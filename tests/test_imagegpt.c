/* ImageGPT's pixel tokens: k-means against scikit-learn's KMeans from the
 * same initial centres (tests/ref/gen_kmeans_fixtures.py ->
 * tests/fixtures_imagegpt/kmeans.txt) and an exact small case; the
 * clusters of a set (deterministic under a seed), images <-> tokens,
 * image_tokens.json and its bad inputs, resizing, and the token loader. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "test.h"

#define FIXTURE "tests/fixtures_imagegpt/kmeans.txt"

/* The numbers after "<key> " on the next line of *p; their count. */
static int read_line(char **p, const char *key, double *v, int cap) {
    size_t n = strlen(key);
    if (strncmp(*p, key, n) || (*p)[n] != ' ') return -1;
    char *s = *p + n, *end = strchr(s, '\n');
    int k = 0;
    while (s < end && k < cap) {
        char *e;
        v[k] = strtod(s, &e);
        if (e == s) break;
        k++, s = e;
    }
    *p = end + 1;
    return k;
}

/* Runs every case of the fixture; perturb: moves the first initial centre, a run that must disagree. */
static int kmeans_cases(int perturb, double *max_diff, int *label_diffs) {
    size_t len;
    char *text = test_slurp(FIXTURE, &len), *p = text;
    if (!text) return -1;
    p = strchr(p, '\n') + 1; /* the header */
    *max_diff = 0, *label_diffs = 0;
    int cases = 0, dim, k, n;
    static double x[4096], init[64], centers[64], labels[1024];
    while (sscanf(p, "case %d %d %d", &dim, &k, &n) == 3) {
        p = strchr(p, '\n') + 1;
        if (read_line(&p, "x", x, 4096) != n * dim || read_line(&p, "init", init, 64) != k * dim ||
            read_line(&p, "centers", centers, 64) != k * dim || read_line(&p, "labels", labels, 1024) != n)
            break;
        float *xf = malloc(sizeof(float) * (size_t)(n * dim)), fi[64], got[64];
        for (int i = 0; i < n * dim; i++) xf[i] = (float)x[i];
        for (int i = 0; i < k * dim; i++) fi[i] = (float)init[i];
        if (perturb) fi[0] += 0.3f;
        int rc = tf_kmeans(xf, n, dim, k, fi, 300, 0, got, NULL);
        for (int i = 0; !rc && i < k * dim; i++) {
            double d = fabs(got[i] - centers[i]);
            *max_diff = d > *max_diff ? d : *max_diff;
        }
        for (int i = 0; !rc && i < n; i++) { /* labels: the nearest of the centres found */
            int best = 0;
            for (int c = 1; c < k; c++) {
                double dc = 0, db = 0;
                for (int j = 0; j < dim; j++)
                    dc += (xf[i * dim + j] - got[c * dim + j]) * (double)(xf[i * dim + j] - got[c * dim + j]),
                        db += (xf[i * dim + j] - got[best * dim + j]) * (double)(xf[i * dim + j] - got[best * dim + j]);
                best = dc < db ? c : best;
            }
            *label_diffs += best != (int)labels[i];
        }
        free(xf);
        if (rc) break;
        cases++;
    }
    free(text);
    return cases;
}

TEST(imagegpt_kmeans_matches_sklearn) {
    double diff;
    int labels;
    CHECK(kmeans_cases(0, &diff, &labels) == 3);
    CHECKF(diff <= 1e-6 && labels == 0, "centres differ by %g, %d labels differ", diff, labels);
    CHECK(kmeans_cases(1, &diff, &labels) == 3); /* another start: another (local) optimum */
    CHECKF(diff > 1e-3 || labels > 0, "a perturbed start still agrees (diff %g): the test cannot fail", diff);
}

TEST(imagegpt_kmeans_exact_and_errors) {
    const float x[] = {0.0f, 0.1f, 0.9f, 1.0f, 0.2f}, init[] = {0.0f, 1.0f};
    float c[2], empty[3];
    int iters;
    CHECK(tf_kmeans(x, 5, 1, 2, init, 100, 0, c, &iters) == 0);
    CHECKF(fabsf(c[0] - 0.1f) < 1e-7f && fabsf(c[1] - 0.95f) < 1e-7f && iters == 1, "%g %g after %d", c[0], c[1], iters);
    const float far_init[] = {0.0f, 0.05f, 5.0f}; /* 5 gets no point: it takes the farthest one (0.9 or 1.0) */
    CHECK(tf_kmeans(x, 5, 1, 3, far_init, 100, 0, empty, NULL) == 0);
    CHECKF(empty[2] >= 0.9f && empty[2] <= 1.0f, "the empty cluster's centre is %g", empty[2]);
    CHECK(tf_kmeans(x, 1, 1, 2, NULL, 10, 1, c, NULL) == -1 && strstr(tf_error(), "cannot make 2 clusters"));
}

/* A set of n grey images h x w with values (i * 7 + p) % 11 / 10. */
static tf_images grey_set(int64_t n, int h, int w) {
    tf_images s = {n, 1, h, w, malloc(sizeof(float) * (size_t)(n * h * w)), NULL, 0};
    for (int64_t i = 0; i < n * h * w; i++) s.pixels[i] = (float)(((i / (h * w)) * 7 + i % (h * w)) % 11) / 10.0f;
    return s;
}

TEST(imagegpt_tokens_round_trip) {
    tf_images s = grey_set(6, 4, 5), back;
    tf_image_tokens t, u;
    CHECK(tf_image_tokens_fit(&s, 11, 100, 0, 3, &t) == 0);
    CHECK(t.k == 11 && t.height == 4 && t.width == 5 && t.channels == 1);
    for (int c = 0; c < 11; c++) CHECKF(fabsf(t.centers[c] - (float)c / 10.0f) < 1e-6f, "centre %d: %g", c, t.centers[c]);
    int32_t tok[120];
    CHECK(tf_image_tokens_encode(&t, &s, tok) == 0);
    for (int i = 0; i < 120; i++) CHECKF(tok[i] == (int)lrintf(s.pixels[i] * 10.0f), "token %d: %d", i, tok[i]);
    CHECK(tf_image_tokens_decode(&t, tok, 6, &back) == 0);
    CHECK(back.n == 6 && back.height == 4 && back.width == 5);
    CHECK(test_rel_err(back.pixels, s.pixels, 120) < 1e-6);
    tf_images_free(&back);
    /* deterministic under a seed, on a sample too */
    CHECK(tf_image_tokens_fit(&s, 4, 100, 50, 9, &u) == 0);
    tf_image_tokens v;
    CHECK(tf_image_tokens_fit(&s, 4, 100, 50, 9, &v) == 0);
    CHECK(!memcmp(u.centers, v.centers, 4 * sizeof(float)));
    for (int c = 1; c < 4; c++) CHECK(u.centers[c] >= u.centers[c - 1]); /* dark to light */
    tf_image_tokens_free(&v);
    tok[3] = 11;
    CHECK(tf_image_tokens_decode(&t, tok, 6, &back) == -1 && strstr(tf_error(), "token 11"));
    tf_images other = grey_set(1, 5, 4);
    CHECK(tf_image_tokens_encode(&t, &other, tok) == -1 && strstr(tf_error(), "the model takes 1 of 5x4"));
    tf_images_free(&other), tf_images_free(&s), tf_image_tokens_free(&t), tf_image_tokens_free(&u);
}

static void write_text(const char *path, const char *text) {
    FILE *f = fopen(path, "w");
    if (f) fputs(text, f), fclose(f);
}

TEST(imagegpt_tokens_json) {
    char dir[] = "/tmp/tformer_igpt_XXXXXX", path[128];
    CHECK(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/image_tokens.json", dir);
    float centers[] = {0.0f, 0.25f, 1.0f};
    tf_image_tokens t = {3, 1, 7, 9, centers}, u;
    CHECK(tf_image_tokens_save(&t, dir) == 0);
    CHECK(tf_image_tokens_load(dir, &u) == 0);
    CHECK(u.k == 3 && u.height == 7 && u.width == 9 && u.channels == 1 && !memcmp(u.centers, centers, sizeof centers));
    tf_image_tokens_free(&u);
    static const struct {
        const char *json, *msg;
    } BAD[] = {
        {"{\"height\":7,\"width\":9,\"channels\":1,\"sos_token\":2,\"clusters\":[[0],[1]]}", NULL},
        {"{\"height\":7,\"width\":9,\"channels\":1,\"sos_token\":3,\"clusters\":[[0],[1]]}", "sos_token 3"},
        {"{\"height\":0,\"width\":9,\"channels\":1,\"sos_token\":2,\"clusters\":[[0],[1]]}", "\"height\" must be"},
        {"{\"height\":7,\"width\":9,\"channels\":1,\"sos_token\":2,\"clusters\":[[0],[2]]}", "cluster 1 holds"},
        {"{\"height\":7,\"width\":9,\"channels\":1,\"sos_token\":2,\"clusters\":[[0],[1,0]]}", "cluster 1 must hold 1"},
        {"{\"height\":7,\"width\":9,\"channels\":1,\"sos_token\":2}", "\"clusters\" must be"},
        {"{\"height\":7,", "image_tokens.json"},
    };
    for (size_t i = 0; i < sizeof BAD / sizeof *BAD; i++) {
        write_text(path, BAD[i].json);
        int rc = tf_image_tokens_load(dir, &u);
        if (!BAD[i].msg) {
            CHECK(rc == 0 && u.k == 2);
            tf_image_tokens_free(&u);
            continue;
        }
        CHECKF(rc == -1 && strstr(tf_error(), BAD[i].msg) && strstr(tf_error(), path), "case %zu: %s", i, tf_error());
    }
    unlink(path), rmdir(dir);
}

TEST(imagegpt_resize_box) {
    tf_images s = grey_set(2, 4, 6), r;
    CHECK(tf_images_resize(&s, 2, 3, &r) == 0);
    CHECK(r.n == 2 && r.height == 2 && r.width == 3);
    for (int i = 0; i < 2; i++) /* whole factors: the means of 2x2 blocks */
        for (int y = 0; y < 2; y++)
            for (int x = 0; x < 3; x++) {
                const float *p = s.pixels + i * 24 + 2 * y * 6 + 2 * x;
                float want = (p[0] + p[1] + p[6] + p[7]) / 4;
                CHECKF(fabsf(r.pixels[i * 6 + y * 3 + x] - want) < 1e-6f, "(%d,%d,%d)", i, y, x);
            }
    tf_images_free(&r);
    CHECK(tf_images_resize(&s, 3, 4, &r) == 0); /* fractional boxes keep the mean */
    double a = 0, b = 0;
    for (int i = 0; i < 24; i++) a += s.pixels[i];
    for (int i = 0; i < 12; i++) b += r.pixels[i];
    CHECKF(fabs(a / 24 - b / 12) < 1e-6, "means %g and %g", a / 24, b / 12);
    tf_images_free(&r), tf_images_free(&s);
}

TEST(imagegpt_tokens_loader) {
    int32_t train[3 * 4] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}, valid[3 * 4];
    for (int i = 0; i < 12; i++) valid[i] = 11 - i;
    tf_loader *l = tf_image_tokens_loader_new(train, 3, valid, 3, 4, 12, 5);
    CHECK(l);
    tf_ctx *ctx = tf_ctx_new(0);
    tf_batch b = {0};
    CHECK(tf_loader_next(l, ctx, TF_SUBSET_VAL, 1, 2, &b) == 0); /* images 2 and (past the end) none */
    const int32_t *x = tf_i32(tf_batch_get(&b, "input_ids")), *y = tf_i32(tf_batch_get(&b, "targets"));
    const int32_t wx[] = {12, 3, 2, 1, 12, 12, 12, 12}, wy[] = {3, 2, 1, 0, -1, -1, -1, -1};
    CHECK(!memcmp(x, wx, sizeof wx) && !memcmp(y, wy, sizeof wy));
    memset(&b, 0, sizeof b);
    CHECK(tf_loader_next(l, ctx, TF_SUBSET_TRAIN, 7, 4, &b) == 0);
    x = tf_i32(tf_batch_get(&b, "input_ids")), y = tf_i32(tf_batch_get(&b, "targets"));
    for (int r = 0; r < 4; r++) {
        CHECK(x[r * 4] == 12 && y[r * 4] % 4 == 0);
        for (int t = 1; t < 4; t++) CHECK(x[r * 4 + t] == y[r * 4 + t - 1] && y[r * 4 + t] == y[r * 4] + t);
    }
    tf_ctx_free(ctx);
    tf_loader_free(l);
}
