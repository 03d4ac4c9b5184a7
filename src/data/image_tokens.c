/* ImageGPT's pixel tokens: k-means colour clusters (Lloyd's algorithm,
 * k-means++ seeding), images <-> token sequences in raster order, the
 * clusters as image_tokens.json in a model folder, and the loader of token
 * images for the shared trainer. */
#include <cjson/cJSON.h>
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../core/core_internal.h"
#include "../util/util.h"
#include "augment.h"

/* ---------------------------------------------------------------- k-means */

static double dist2(const float *a, const float *b, int dim) {
    double d = 0;
    for (int j = 0; j < dim; j++) d += ((double)a[j] - b[j]) * ((double)a[j] - b[j]);
    return d;
}

/* The nearest centre of point p (the lowest index on a tie) and its squared distance. */
static int nearest(const float *p, const float *centers, int k, int dim, double *best_d) {
    int best = 0;
    double bd = DBL_MAX;
    for (int c = 0; c < k; c++) {
        double d = dist2(p, centers + (size_t)c * dim, dim);
        if (d < bd) bd = d, best = c;
    }
    if (best_d) *best_d = bd;
    return best;
}

/* k-means++: the first centre a uniform draw, each next one drawn with
 * probability proportional to the squared distance to the nearest chosen. */
static void kmeans_pp(const float *x, int64_t n, int dim, int k, uint64_t seed, float *centers, double *d) {
    tf_aug_rng r = tf_aug_rng_at(seed, 0, 0, 0);
    int64_t first = (int64_t)(tf_aug_uniform(&r) * (double)n);
    memcpy(centers, x + (size_t)first * dim, (size_t)dim * sizeof *x);
    for (int64_t i = 0; i < n; i++) d[i] = dist2(x + (size_t)i * dim, centers, dim);
    for (int c = 1; c < k; c++) {
        double total = 0, acc = 0;
        for (int64_t i = 0; i < n; i++) total += d[i];
        double u = tf_aug_uniform(&r) * total;
        int64_t pick = n - 1;
        for (int64_t i = 0; i < n; i++)
            if ((acc += d[i]) > u) {
                pick = i;
                break;
            }
        float *cc = centers + (size_t)c * dim;
        memcpy(cc, x + (size_t)pick * dim, (size_t)dim * sizeof *x);
        for (int64_t i = 0; i < n; i++) {
            double e = dist2(x + (size_t)i * dim, cc, dim);
            if (e < d[i]) d[i] = e;
        }
    }
}

/* Centres = the means of their points; an empty cluster takes the point
 * farthest from its centre (d: each point's squared distance, updated). */
static void update_centers(const float *x, int64_t n, int dim, int k, const int *label, double *d, float *centers,
                           double *sum, int64_t *count) {
    memset(sum, 0, (size_t)k * dim * sizeof *sum), memset(count, 0, (size_t)k * sizeof *count);
    for (int64_t i = 0; i < n; i++) {
        count[label[i]]++;
        for (int j = 0; j < dim; j++) sum[(size_t)label[i] * dim + j] += x[(size_t)i * dim + j];
    }
    for (int c = 0; c < k; c++) {
        if (count[c]) {
            for (int j = 0; j < dim; j++) centers[(size_t)c * dim + j] = (float)(sum[(size_t)c * dim + j] / count[c]);
            continue;
        }
        int64_t far = 0;
        for (int64_t i = 1; i < n; i++) far = d[i] > d[far] ? i : far;
        memcpy(centers + (size_t)c * dim, x + (size_t)far * dim, (size_t)dim * sizeof *x);
        d[far] = 0;
    }
}

int tf_kmeans(const float *x, int64_t n, int dim, int k, const float *init, int max_iter, uint64_t seed,
              float *centers, int *iters) {
    if (k < 1 || dim < 1 || n < k || max_iter < 1)
        return tf_set_error("kmeans: %lld points cannot make %d clusters (dim %d, max_iter %d)", (long long)n, k, dim,
                            max_iter);
    int *label = malloc((size_t)n * sizeof *label);
    double *d = malloc((size_t)n * sizeof *d), *sum = malloc((size_t)k * dim * sizeof *sum);
    int64_t *count = malloc((size_t)k * sizeof *count);
    if (!label || !d || !sum || !count) {
        free(label), free(d), free(sum), free(count);
        return tf_set_error("kmeans: out of memory for %lld points", (long long)n);
    }
    if (init) memcpy(centers, init, (size_t)k * dim * sizeof *init);
    else kmeans_pp(x, n, dim, k, seed, centers, d);
    int it = 0, changed = 1;
    for (int64_t i = 0; i < n; i++) label[i] = -1;
    while (changed && it < max_iter) {
        changed = 0;
        for (int64_t i = 0; i < n; i++) {
            int c = nearest(x + (size_t)i * dim, centers, k, dim, &d[i]);
            changed += c != label[i];
            label[i] = c;
        }
        if (changed) update_centers(x, n, dim, k, label, d, centers, sum, count), it++;
    }
    if (iters) *iters = it;
    free(label), free(d), free(sum), free(count);
    return 0;
}

/* ---------------------------------------------------------------- the clusters of a set */

/* Centres (k,dim) sorted by their first value (insertion sort: k is small; dim <= 16). */
static void sort_centers(float *c, int k, int dim) {
    float tmp[16];
    size_t row = (size_t)dim * sizeof *c;
    for (int i = 1; i < k; i++)
        for (int j = i; j > 0 && c[(size_t)j * dim] < c[(size_t)(j - 1) * dim]; j--) {
            memcpy(tmp, c + (size_t)j * dim, row);
            memcpy(c + (size_t)j * dim, c + (size_t)(j - 1) * dim, row);
            memcpy(c + (size_t)(j - 1) * dim, tmp, row);
        }
}

/* Pixel p of the set (its channels together) into v (C). */
static void pixel_at(const tf_images *s, int64_t p, float *v) {
    int64_t hw = (int64_t)s->height * s->width, i = p / hw, q = p % hw;
    for (int c = 0; c < s->channels; c++) v[c] = s->pixels[((size_t)i * s->channels + c) * hw + q];
}

int tf_image_tokens_fit(const tf_images *s, int k, int max_iter, int64_t max_pixels, uint64_t seed,
                        tf_image_tokens *out) {
    memset(out, 0, sizeof *out);
    int C = s->channels;
    int64_t total = s->n * s->height * s->width, n = max_pixels > 0 && max_pixels < total ? max_pixels : total;
    if (k < 2 || k > 65535 || C < 1 || C > 16)
        return tf_set_error("image tokens: %d clusters of %d channel(s): k must lie in [2,65535], channels in [1,16]", k,
                            C);
    float *x = malloc((size_t)n * C * sizeof *x);
    if (!x || !(out->centers = malloc((size_t)k * C * sizeof *out->centers))) {
        free(x);
        return tf_set_error("image tokens: out of memory for %lld pixels", (long long)n);
    }
    for (int64_t i = 0; i < n; i++) { /* all pixels in order, or n drawn with replacement */
        tf_aug_rng r = tf_aug_rng_at(seed, 1, (uint64_t)i, 0);
        pixel_at(s, n == total ? i : (int64_t)(tf_aug_uniform(&r) * (double)total), x + (size_t)i * C);
    }
    int rc = tf_kmeans(x, n, C, k, NULL, max_iter, seed, out->centers, NULL);
    free(x);
    if (rc) return tf_image_tokens_free(out), -1;
    sort_centers(out->centers, k, C);
    out->k = k, out->channels = C, out->height = s->height, out->width = s->width;
    return 0;
}

int tf_image_tokens_encode(const tf_image_tokens *t, const tf_images *s, int32_t *tokens) {
    if (s->channels != t->channels || s->height != t->height || s->width != t->width)
        return tf_set_error("image tokens: the image is %d channel(s) of %dx%d; the model takes %d of %dx%d",
                            s->channels, s->width, s->height, t->channels, t->width, t->height);
    float v[16];
    for (int64_t p = 0, n = s->n * s->height * s->width; p < n; p++) {
        pixel_at(s, p, v);
        tokens[p] = nearest(v, t->centers, t->k, t->channels, NULL);
    }
    return 0;
}

int tf_image_tokens_decode(const tf_image_tokens *t, const int32_t *tokens, int64_t n, tf_images *out) {
    memset(out, 0, sizeof *out);
    int64_t hw = (int64_t)t->height * t->width;
    size_t bytes;
    if (!tf_mul_size((size_t)n * (size_t)hw * sizeof(float), (size_t)t->channels, &bytes) ||
        !(out->pixels = malloc(bytes)))
        return tf_set_error("image tokens: out of memory for %lld images", (long long)n);
    for (int64_t p = 0; p < n * hw; p++) {
        if (tokens[p] < 0 || tokens[p] >= t->k) {
            tf_images_free(out);
            return tf_set_error("image tokens: token %d at %lld is not a colour (0..%d)", tokens[p], (long long)p,
                                t->k - 1);
        }
        for (int c = 0; c < t->channels; c++)
            out->pixels[((size_t)(p / hw) * t->channels + c) * hw + p % hw] = t->centers[(size_t)tokens[p] * t->channels + c];
    }
    out->n = n, out->channels = t->channels, out->height = t->height, out->width = t->width;
    return 0;
}

/* ---------------------------------------------------------------- image_tokens.json */

int tf_image_tokens_save(const tf_image_tokens *t, const char *dir) {
    char path[4096];
    if (tf_path_join(path, sizeof path, dir, "image_tokens.json")) return -1;
    cJSON *r = cJSON_CreateObject(), *cl = r ? cJSON_AddArrayToObject(r, "clusters") : NULL;
    int rc = !cl;
    if (!rc) {
        cJSON_AddNumberToObject(r, "height", t->height), cJSON_AddNumberToObject(r, "width", t->width);
        cJSON_AddNumberToObject(r, "channels", t->channels), cJSON_AddNumberToObject(r, "sos_token", t->k);
    }
    for (int c = 0; !rc && c < t->k; c++) {
        cJSON *v = cJSON_CreateArray();
        for (int j = 0; v && j < t->channels; j++) cJSON_AddItemToArray(v, cJSON_CreateNumber(t->centers[(size_t)c * t->channels + j]));
        rc = !v || !cJSON_AddItemToArray(cl, v);
    }
    rc = rc ? tf_set_error("%s: out of memory", path) : tf_json_write(path, r);
    cJSON_Delete(r);
    return rc;
}

/* A whole number in [lo,hi] under key of object r; -1 + an error naming the file otherwise. */
static int json_int(const cJSON *r, const char *key, int lo, int hi, const char *path, int *out) {
    const cJSON *j = cJSON_GetObjectItemCaseSensitive(r, key);
    if (!cJSON_IsNumber(j) || !(j->valuedouble >= lo && j->valuedouble <= hi) || j->valuedouble != floor(j->valuedouble))
        return tf_set_error("%s: \"%s\" must be a whole number in [%d,%d]", path, key, lo, hi);
    *out = (int)j->valuedouble;
    return 0;
}

/* The clusters: k arrays of `channels` numbers in [0,1]. */
static int read_clusters(const cJSON *cl, const char *path, tf_image_tokens *t) {
    int k = cJSON_GetArraySize(cl), i = 0;
    if (!cJSON_IsArray(cl) || k < 2) return tf_set_error("%s: \"clusters\" must be an array of 2 or more colours", path);
    if (!(t->centers = malloc((size_t)k * t->channels * sizeof *t->centers))) return tf_set_error("%s: out of memory", path);
    const cJSON *c;
    cJSON_ArrayForEach(c, cl) {
        if (!cJSON_IsArray(c) || cJSON_GetArraySize(c) != t->channels)
            return tf_set_error("%s: cluster %d must hold %d value(s), one per channel", path, i, t->channels);
        for (int j = 0; j < t->channels; j++) {
            const cJSON *v = cJSON_GetArrayItem(c, j);
            if (!cJSON_IsNumber(v) || !(v->valuedouble >= 0 && v->valuedouble <= 1))
                return tf_set_error("%s: cluster %d holds a value that is not a number in [0,1]", path, i);
            t->centers[(size_t)i * t->channels + j] = (float)v->valuedouble;
        }
        i++;
    }
    t->k = k;
    return 0;
}

int tf_image_tokens_load(const char *dir, tf_image_tokens *out) {
    char path[4096];
    memset(out, 0, sizeof *out);
    if (tf_path_join(path, sizeof path, dir, "image_tokens.json")) return -1;
    cJSON *r = tf_json_read(path);
    int sos = 0;
    int rc = !r || json_int(r, "height", 1, 65536, path, &out->height) ||
             json_int(r, "width", 1, 65536, path, &out->width) || json_int(r, "channels", 1, 16, path, &out->channels) ||
             read_clusters(cJSON_GetObjectItemCaseSensitive(r, "clusters"), path, out) ||
             json_int(r, "sos_token", 0, 1 << 30, path, &sos);
    if (!rc && sos != out->k) rc = tf_set_error("%s: sos_token %d must be the number of clusters, %d", path, sos, out->k);
    cJSON_Delete(r);
    if (rc) tf_image_tokens_free(out);
    return rc ? -1 : 0;
}

void tf_image_tokens_free(tf_image_tokens *t) {
    if (!t) return;
    free(t->centers);
    memset(t, 0, sizeof *t);
}
