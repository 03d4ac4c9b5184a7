/* tformer serve's endpoints on images: a base64 PNG (or a data: URL of one) through a ViT
 * classifier gives `tformer classify FILE.png`'s labels and probabilities (/v1/classifications),
 * through a captioner `tformer caption FILE.png`'s caption (/v1/captions); bad images are a 400,
 * a model without the capability a 422, and the server answers after each. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "serve_case.h"
#include "test.h"

#define VIT_DIR "tests/fixtures_vit/cls_grey28_p4_labels"

static char *b64(const unsigned char *p, size_t n) {
    static const char A[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    char *o = malloc(n / 3 * 4 + 5), *q = o;
    for (size_t i = 0; o && i < n; i += 3) {
        unsigned v = (unsigned)p[i] << 16 | (i + 1 < n ? (unsigned)p[i + 1] << 8 : 0) | (i + 2 < n ? p[i + 2] : 0);
        *q++ = A[v >> 18 & 63], *q++ = A[v >> 12 & 63];
        *q++ = i + 1 < n ? A[v >> 6 & 63] : '=', *q++ = i + 2 < n ? A[v & 63] : '=';
    }
    if (q) *q = 0;
    return o;
}

/* A size x size grey PNG (a diagonal gradient, shifted by seed) at path, its base64 into *out. */
static int png_b64(const char *path, int size, int seed, char **out) {
    float px[64 * 64];
    for (int i = 0; i < size * size; i++) px[i] = (float)((i / size + i % size + seed) % 29) / 28.0f;
    tf_images im = {1, 1, size, size, px, NULL, 0};
    size_t n;
    if (tf_images_write_png(&im, 0, path)) return -1;
    char *bytes = test_slurp(path, &n);
    *out = bytes ? b64((const unsigned char *)bytes, n) : NULL;
    free(bytes);
    return *out ? 0 : -1;
}

static long classify(const server *sv, const char *model, const char *input, int top_k, char **r) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "model", model), cJSON_AddStringToObject(o, "input", input);
    if (top_k) cJSON_AddNumberToObject(o, "top_k", top_k);
    char *body = cJSON_PrintUnformatted(o);
    long st = post(sv, "/v1/classifications", body, NULL, r);
    cJSON_Delete(o), free(body);
    return st;
}

TEST(serve_classifies_images_as_the_cli) {
    char path[64], *r, *img, cli[1024], args[256];
    snprintf(path, sizeof path, "/tmp/tformer_serve_cls_%d.png", (int)getpid());
    server sv;
    snprintf(args, sizeof args, "--model vit=%s --model st=%s", VIT_DIR, ST_DIR);
    CHECK(!server_start(&sv, args));
    for (int seed = 0; seed < 3; seed++) {
        CHECK(!png_b64(path, 28, seed * 5, &img));
        char cmd[256];
        snprintf(cmd, sizeof cmd, "classify --model " VIT_DIR " --top-k 3 %s", path);
        CHECK(test_run_cli("", cmd, cli, sizeof cli) == 0);
        char *with_url = malloc(strlen(img) + 32);
        sprintf(with_url, "%s%s", seed == 1 ? "data:image/png;base64," : "", img);
        CHECK(classify(&sv, "vit", with_url, 3, &r) == 200);
        cJSON *o = cJSON_Parse(r), *labels = cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(o, "data"), 0), "labels");
        char mine[1024];
        int k = snprintf(mine, sizeof mine, "%s", path);
        for (int i = 0; i < cJSON_GetArraySize(labels); i++) {
            const cJSON *e = cJSON_GetArrayItem(labels, i);
            k += snprintf(mine + k, sizeof mine - (size_t)k, "\t%s\t%.4f", cJSON_GetObjectItem(e, "label")->valuestring,
                          cJSON_GetObjectItem(e, "score")->valuedouble);
        }
        snprintf(mine + k, sizeof mine - (size_t)k, "\n");
        CHECKF(cJSON_GetArraySize(labels) == 3 && !strcmp(mine, cli), "server: %s; the CLI: %s", mine, cli);
        cJSON_Delete(o), free(r), free(with_url), free(img);
    }
    /* bad images: 400; a model that classifies no image: 422; the server answers after each */
    CHECK(!png_b64(path, 20, 0, &img));
    static const char *const NOT_PNG[] = {"bm90IGEgUE5H" /* "not a PNG" */, "@@@", "QUJD=x"};
    for (int i = 0; i < 3; i++) {
        CHECKF(classify(&sv, "vit", NOT_PNG[i], 0, &r) == 400 && is_error(r), "%s: %s", NOT_PNG[i], r);
        free(r);
    }
    CHECKF(classify(&sv, "vit", img, 0, &r) == 400 && strstr(r, "20x20") && strstr(r, "28x28"), "%s", r);
    free(r);
    CHECK(classify(&sv, "vit", img, 99, &r) == 400 && strstr(r, "top_k"));
    free(r);
    CHECK(post(&sv, "/v1/classifications", "{\"model\":\"vit\",\"input\":7}", NULL, &r) == 400 && is_error(r));
    free(r);
    CHECK(classify(&sv, "st", img, 0, &r) == 422 && strstr(r, "cannot classify-image"));
    free(r), free(img);
    CHECK(http(&sv, "/health", NULL, 0, NULL, &r) == 200);
    free(r);
    CHECK(server_stop(&sv) == 0);
    unlink(path);
}

/* /v1/captions: a captioner trained here (4 steps) captions its scenes as `tformer caption` does. */
TEST(serve_captions_as_the_cli) {
    char dir[64], cmd[600], out[4096], png[128], args[256], *r;
    snprintf(dir, sizeof dir, "/tmp/tformer_serve_capt_%d", (int)getpid());
    snprintf(cmd, sizeof cmd, "train --arch caption --out %s --scene-items 1 --steps 4 --batch 4 --cnn-dim 16 --hidden 32 "
             "--emb-dim 16 --attn-size 16 --eval-every 4 --eval-batches 1 --scene-valid 4 --log-every 4 --overwrite", dir);
    CHECKF(test_run_cli("", cmd, out, sizeof out) == 0, "%s", out);
    server sv;
    snprintf(args, sizeof args, "--model capt=%s --model vit=%s", dir, VIT_DIR);
    CHECK(!server_start(&sv, args));
    cJSON *req = cJSON_CreateObject(), *list = cJSON_AddArrayToObject(req, "input");
    cJSON_AddStringToObject(req, "model", "capt");
    char want[3][256];
    for (int i = 0; i < 3; i++) {
        size_t n;
        snprintf(png, sizeof png, "%s/scenes/%02d.png", dir, i);
        snprintf(cmd, sizeof cmd, "caption --model %s %s", dir, png);
        const char *tab;
        CHECK(test_run_cli("", cmd, out, sizeof out) == 0 && (tab = strchr(out, '\t')));
        snprintf(want[i], sizeof want[i], "%.*s", (int)strcspn(tab + 1, "\n"), tab + 1);
        char *bytes = test_slurp(png, &n), *b = b64((const unsigned char *)bytes, n);
        cJSON_AddItemToArray(list, cJSON_CreateString(b));
        free(bytes), free(b);
    }
    char *body = cJSON_PrintUnformatted(req);
    CHECK(post(&sv, "/v1/captions", body, NULL, &r) == 200);
    cJSON *o = cJSON_Parse(r), *data = cJSON_GetObjectItem(o, "data");
    for (int i = 0; i < 3; i++) {
        const cJSON *t = cJSON_GetObjectItem(cJSON_GetArrayItem(data, i), "text");
        CHECKF(cJSON_IsString(t) && !strcmp(t->valuestring, want[i]), "scene %d: '%s', the CLI's '%s'", i,
               cJSON_IsString(t) ? t->valuestring : "-", want[i]);
    }
    printf("    3 scenes captioned as tformer caption does ('%s', ...)\n", want[0]);
    cJSON_Delete(o), free(r), free(body), cJSON_Delete(req);
    CHECK(post(&sv, "/v1/captions", "{\"model\":\"capt\",\"input\":\"@@@\"}", NULL, &r) == 400 && is_error(r));
    free(r);
    CHECK(post(&sv, "/v1/captions", "{\"model\":\"vit\",\"input\":\"QUJD\"}", NULL, &r) == 422 && strstr(r, "cannot caption"));
    free(r);
    CHECK(server_stop(&sv) == 0);
    test_rm_rf(dir);
}
