/* Caption metrics against pycocoevalcap (tests/ref/gen_caption_metric_fixtures.py): CIDEr-D (each
 * image's score and the corpus mean) and BLEU-4 on synthetic corpora, and the metrics the
 * captioner's validation reports. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test.h"
#include "tformer.h"

#define FXM "tests/fixtures_caption_metrics/corpora.json"

typedef struct {
    int n;
    const char **hyps;
    const char ***refs;
    int *n_refs;
} corpus;

static int read_corpus(const cJSON *c, corpus *out) {
    const cJSON *h = cJSON_GetObjectItem(c, "hyps"), *r = cJSON_GetObjectItem(c, "refs");
    out->n = cJSON_GetArraySize(h);
    out->hyps = calloc((size_t)out->n, sizeof *out->hyps);
    out->refs = calloc((size_t)out->n, sizeof *out->refs);
    out->n_refs = calloc((size_t)out->n, sizeof *out->n_refs);
    if (!out->hyps || !out->refs || !out->n_refs || cJSON_GetArraySize(r) != out->n) return -1;
    for (int i = 0; i < out->n; i++) {
        const cJSON *ri = cJSON_GetArrayItem(r, i);
        out->hyps[i] = cJSON_GetArrayItem(h, i)->valuestring;
        out->n_refs[i] = cJSON_GetArraySize(ri);
        if (!(out->refs[i] = calloc((size_t)out->n_refs[i], sizeof **out->refs))) return -1;
        for (int j = 0; j < out->n_refs[i]; j++) out->refs[i][j] = cJSON_GetArrayItem(ri, j)->valuestring;
    }
    return 0;
}

static void corpus_free(corpus *c) {
    for (int i = 0; c->refs && i < c->n; i++) free(c->refs[i]);
    free(c->hyps), free(c->refs), free(c->n_refs);
}

static double rel(double a, double b) { return fabs(a - b) / fmax(fabs(b), 1e-12); }

/* Every corpus of the fixture (or TFORMER_FIXTURE_DIR's corpora.json): CIDEr-D per image and its
 * mean within 1e-9 relative (the same sums in another order), BLEU-4 within 1e-6 relative
 * (pycocoevalcap adds 1e-15 / 1e-9 to each count). */
TEST(caption_cider_d_and_bleu4_match_pycocoevalcap) {
    char path[600];
    const char *dir = test_fixture_dir_or(NULL);
    snprintf(path, sizeof path, "%s", dir ? dir : FXM);
    if (dir) snprintf(path, sizeof path, "%s/corpora.json", dir);
    size_t len;
    char *text = test_slurp(path, &len);
    cJSON *root = text ? cJSON_Parse(text) : NULL;
    const cJSON *all = cJSON_GetObjectItem(root, "corpora");
    int n = cJSON_GetArraySize(all), bleus = 0, images = 0;
    double worst_c = 0, worst_b = 0;
    CHECKF(n >= 20, "%s: %d corpora", path, n);
    for (int k = 0; k < n; k++) {
        const cJSON *c = cJSON_GetArrayItem(all, k);
        corpus cp = {0};
        CHECK(read_corpus(c, &cp) == 0);
        double *scores = calloc((size_t)cp.n, sizeof *scores), mean = -1, b = -1;
        CHECKF(tf_caption_cider_d(cp.hyps, (const char *const *const *)cp.refs, cp.n_refs, cp.n, scores, &mean) == 0,
               "%s", tf_error());
        double e = rel(mean, cJSON_GetObjectItem(c, "cider")->valuedouble);
        for (int i = 0; i < cp.n; i++) {
            double want = cJSON_GetArrayItem(cJSON_GetObjectItem(c, "cider_scores"), i)->valuedouble;
            e = fmax(e, fabs(scores[i] - want) / fmax(fabs(want), 1e-9));
        }
        CHECKF(e <= 1e-9, "corpus %d: CIDEr-D %.12f, pycocoevalcap %.12f (error %.3g)", k, mean,
               cJSON_GetObjectItem(c, "cider")->valuedouble, e);
        worst_c = fmax(worst_c, e), images += cp.n;
        const cJSON *want_b = cJSON_GetObjectItem(c, "bleu4");
        if (want_b) {
            CHECK(tf_caption_bleu4(cp.hyps, (const char *const *const *)cp.refs, cp.n_refs, cp.n, &b) == 0);
            double eb = rel(b, want_b->valuedouble);
            CHECKF(eb <= 1e-6, "corpus %d: BLEU-4 %.9f, pycocoevalcap %.9f", k, b, want_b->valuedouble);
            worst_b = fmax(worst_b, eb), bleus++;
        }
        free(scores), corpus_free(&cp);
    }
    printf("    %d corpora (%d images): CIDEr-D worst relative error %.2e; BLEU-4 in %d, worst %.2e\n", n, images,
           worst_c, bleus, worst_b);
    cJSON_Delete(root), free(text);
}

/* Refused: an image without references. */
TEST(caption_metrics_refuse_an_image_without_references) {
    const char *hyp[1] = {"a bag"}, *const *refs[1] = {NULL};
    int n_refs[1] = {0};
    double mean;
    CHECK(tf_caption_cider_d(hyp, refs, n_refs, 1, NULL, &mean) == -1 && strstr(tf_error(), "image 0 has no reference"));
    CHECK(tf_caption_bleu4(hyp, refs, n_refs, 1, &mean) == -1 && strstr(tf_error(), "image 0 has 0 references"));
}
