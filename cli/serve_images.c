/* The endpoints on images, each given as a base64 PNG or a data: URL of one (its header checked
 * against the model's size before anything is decoded): POST /v1/classifications through an
 * image classifier (TF_CAP_CLASSIFY_IMAGE: each image's top_k labels and their probabilities, as
 * `tformer classify FILE.png` prints them; or, through a text classifier (TF_CAP_CLASSIFY_TEXT), texts
 * as `tformer predict` scores them) and POST /v1/captions through a captioner
 * (TF_CAP_CAPTION: each image's caption, greedy, as `tformer caption FILE.png` writes it). */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "serve.h"

static int b64_value(int c) {
    return c >= 'A' && c <= 'Z' ? c - 'A' : c >= 'a' && c <= 'z' ? c - 'a' + 26 : c >= '0' && c <= '9' ? c - '0' + 52
         : c == '+' ? 62 : c == '/' ? 63 : -1;
}

/* base64 (padded or not) -> bytes (malloc'd); -1 when s is not base64. */
static int b64_decode(const char *s, unsigned char **out, size_t *n) {
    size_t len = strlen(s), k = 0;
    while (len && s[len - 1] == '=') len--;
    if (len % 4 == 1 || !(*out = malloc(len / 4 * 3 + 3))) return -1;
    unsigned acc = 0;
    for (size_t i = 0; i < len; i++) {
        int v = b64_value((unsigned char)s[i]);
        if (v < 0) return free(*out), *out = NULL, -1;
        acc = acc << 6 | (unsigned)v;
        if (i % 4 == 3) (*out)[k++] = (unsigned char)(acc >> 16), (*out)[k++] = (unsigned char)(acc >> 8), (*out)[k++] = (unsigned char)acc;
    }
    if (len % 4 == 2) (*out)[k++] = (unsigned char)(acc >> 4);
    if (len % 4 == 3) (*out)[k++] = (unsigned char)(acc >> 10), (*out)[k++] = (unsigned char)(acc >> 2);
    *n = k;
    return 0;
}

/* The bytes as a PNG file of the library's reader (a private temporary file, removed at once):
 * its size checked against the model's, then decoded into im. 0, or -1 with a 400 in r. */
static int read_png(const serve_model *sm, const unsigned char *png, size_t n, int index, tf_images *im, serve_reply *r) {
    int channels, size, labels, w, h;
    tf_model_image_shape(sm->m, &channels, &size, &labels);
    const char *tmp = getenv("TMPDIR");
    char path[4096];
    snprintf(path, sizeof path, "%s/tformer_serve_XXXXXX", tmp && *tmp ? tmp : "/tmp");
    int fd = mkstemp(path);
    if (fd < 0) return serve_error(r, 500, NULL, NULL, "cannot make a temporary file"), -1;
    int rc = write(fd, png, n) == (ssize_t)n ? 0 : -1;
    close(fd);
    if (rc) serve_error(r, 500, NULL, NULL, "cannot write a temporary file");
    else if (tf_images_png_size(path, &w, &h))
        rc = serve_error(r, 400, "input", "invalid_image", "input %d is not a readable PNG", index);
    else if (w != size || h != size)
        rc = serve_error(r, 400, "input", "invalid_image", "input %d is an image of %dx%d; the model takes %dx%d", index, w,
                         h, size, size);
    else if (tf_images_read_png(path, channels == 1 ? 1 : 3, im))
        rc = serve_error(r, 400, "input", "invalid_image", "input %d is not a readable PNG", index);
    unlink(path);
    return rc ? -1 : 0;
}

/* One image's k likeliest labels: [{"label", "score"}], softmax probabilities. */
static cJSON *top_labels(const tf_model *m, const float *logits, int L, int k) {
    int32_t *ids = malloc((size_t)(L > 0 ? L : 1) * sizeof *ids);
    float *probs = malloc((size_t)(L > 0 ? L : 1) * sizeof *probs);
    cJSON *list = ids && probs ? cJSON_CreateArray() : NULL;
    int got = list ? tf_model_top(logits, L, k, ids, probs) : 0; /* the ranking and numbers the CLI prints */
    for (int t = 0; t < got; t++) {
        char buf[64];
        cJSON *e = cJSON_CreateObject();
        cJSON_AddStringToObject(e, "label", tf_model_label(m, ids[t], buf, sizeof buf));
        cJSON_AddNumberToObject(e, "score", probs[t]);
        cJSON_AddItemToArray(list, e);
    }
    free(ids), free(probs);
    return list;
}

/* Input i (base64, or a data: URL) as the model's image into im; 0, or -1 with a 400 in r. */
static int image_of(const serve_model *sm, const char *text, int i, tf_images *im, serve_reply *r) {
    const char *comma = strncmp(text, "data:", 5) ? NULL : strchr(text, ',');
    unsigned char *png = NULL;
    size_t n = 0;
    if (b64_decode(comma ? comma + 1 : text, &png, &n))
        return serve_error(r, 400, "input", "invalid_value", "input %d is not base64 (a PNG's bytes, or a data: URL)", i), -1;
    int rc = read_png(sm, png, n, i, im, r);
    free(png);
    return rc;
}

/* Input i's top k labels from its logits (L; freed here) appended to data. */
static int append_labels(const tf_model *m, float *logits, int L, int i, int k, cJSON *data) {
    cJSON *item = cJSON_CreateObject();
    cJSON_AddNumberToObject(item, "index", i);
    cJSON_AddItemToObject(item, "labels", top_labels(m, logits, L, k));
    cJSON_AddItemToArray(data, item);
    free(logits);
    return 0;
}

/* Input i: decoded, classified, appended to data. */
static int classify_one(serve *s, const serve_model *sm, const char *text, int i, int k, cJSON *data, serve_reply *r) {
    tf_images im;
    int rc, channels, size, L;
    if (image_of(sm, text, i, &im, r)) return -1;
    tf_model_image_shape(sm->m, &channels, &size, &L);
    float *logits = malloc((size_t)(L > 0 ? L : 1) * sizeof *logits);
    if (logits) {
        serve_compute_begin(s);
        rc = tf_model_image_logits(sm->m, im.pixels, logits, NULL);
        serve_compute_end(s);
    }
    tf_images_free(&im);
    if (!logits || rc) return free(logits), logits ? serve_lib_error(r, 400, sm->m, "model_error") : serve_error(r, 500, NULL, NULL, "out of memory");
    return append_labels(sm->m, logits, L, i, k, data);
}

/* Text i through a text classifier: its top_k labels appended to data. */
static int classify_text(serve *s, const serve_model *sm, const char *text, int i, int L, int k, cJSON *data,
                         serve_reply *r) {
    float *logits = malloc((size_t)L * sizeof *logits);
    if (!logits) return serve_error(r, 500, NULL, NULL, "out of memory");
    serve_compute_begin(s);
    int rc = tf_model_classify_texts(sm->m, &text, NULL, 1, logits); /* as `tformer predict` */
    serve_compute_end(s);
    if (rc) return free(logits), serve_lib_error(r, 400, sm->m, "model_error");
    return append_labels(sm->m, logits, L, i, k, data);
}

/* "input": a string or a list of 1 to --max-inputs; their count, or -1 with a 400 in r. */
static int inputs(serve *s, const cJSON *in, serve_reply *r) {
    int n = cJSON_IsArray(in) ? cJSON_GetArraySize(in) : 1;
    if (!cJSON_IsString(in) && !cJSON_IsArray(in))
        return serve_error(r, 400, "input", "invalid_type", "\"input\" must be a string (a base64 PNG, or a text for a text classifier) or a list of them"), -1;
    if (n < 1 || n > s->o.max_inputs)
        return serve_error(r, 400, "input", "invalid_value", "%d images: 1 to %d are taken", n, s->o.max_inputs), -1;
    for (int i = 0; i < n; i++)
        if (!cJSON_IsString(cJSON_IsArray(in) ? cJSON_GetArrayItem(in, i) : in))
            return serve_error(r, 400, "input", "invalid_type", "input %d is not a string", i), -1;
    return n;
}

static const char *input_at(const cJSON *in, int i) {
    return (cJSON_IsArray(in) ? cJSON_GetArrayItem(in, i) : in)->valuestring;
}

int serve_api_classifications(serve *s, const cJSON *req, serve_reply *r) {
    const serve_model *sm = serve_find_model(s, req, 0, r);
    if (!sm) return -1;
    int channels, size, L, k = 5, texts = tf_model_caps(sm->m) & TF_CAP_CLASSIFY_TEXT ? tf_model_n_labels(sm->m) : 0; /* texts in */
    if (!texts && tf_model_require(sm->m, TF_CAP_CLASSIFY_IMAGE)) return serve_lib_error(r, 422, sm->m, "model_cannot");
    tf_model_image_shape(sm->m, &channels, &size, &L);
    L = texts ? texts : L;
    const cJSON *in = cJSON_GetObjectItemCaseSensitive(req, "input"), *top = cJSON_GetObjectItemCaseSensitive(req, "top_k");
    int n = inputs(s, in, r);
    if (n < 0) return -1;
    for (int i = 0; texts && i < n; i++)
        if (serve_check_text(s, cJSON_IsArray(in) ? cJSON_GetArrayItem(in, i) : in, "input", r)) return -1;
    if (top && !cJSON_IsNull(top)) {
        if (!cJSON_IsNumber(top) || top->valuedouble != floor(top->valuedouble) || top->valuedouble < 1 || top->valuedouble > L)
            return serve_error(r, 400, "top_k", "invalid_value", "\"top_k\" must be an integer in [1, %d]", L), -1;
        k = (int)top->valuedouble;
    }
    cJSON *o = cJSON_CreateObject(), *data = cJSON_AddArrayToObject(o, "data");
    if (!data) return cJSON_Delete(o), serve_error(r, 500, NULL, NULL, "out of memory");
    for (int i = 0; i < n; i++)
        if (texts ? classify_text(s, sm, input_at(in, i), i, L, k, data, r) : classify_one(s, sm, input_at(in, i), i, k, data, r))
            return cJSON_Delete(o), -1;
    cJSON_AddStringToObject(o, "object", "list");
    cJSON_AddStringToObject(o, "model", sm->name);
    return serve_json(r, 200, o);
}

int serve_api_captions(serve *s, const cJSON *req, serve_reply *r) {
    const serve_model *sm = serve_find_model(s, req, TF_CAP_CAPTION, r);
    if (!sm) return -1;
    const cJSON *in = cJSON_GetObjectItemCaseSensitive(req, "input");
    int n = inputs(s, in, r);
    if (n < 0) return -1;
    cJSON *o = cJSON_CreateObject(), *data = cJSON_AddArrayToObject(o, "data");
    if (!data) return cJSON_Delete(o), serve_error(r, 500, NULL, NULL, "out of memory");
    for (int i = 0; i < n; i++) {
        tf_images im;
        tf_caption_result c;
        if (image_of(sm, input_at(in, i), i, &im, r)) return cJSON_Delete(o), -1;
        serve_compute_begin(s);
        int rc = tf_model_caption(sm->m, im.pixels, NULL, &c);
        serve_compute_end(s);
        tf_images_free(&im);
        if (rc) return cJSON_Delete(o), serve_lib_error(r, 400, sm->m, "model_error");
        cJSON *item = cJSON_CreateObject();
        cJSON_AddNumberToObject(item, "index", i);
        cJSON_AddStringToObject(item, "text", c.text);
        cJSON_AddItemToArray(data, item);
        tf_caption_result_free(&c);
    }
    cJSON_AddStringToObject(o, "object", "list");
    cJSON_AddStringToObject(o, "model", sm->name);
    return serve_json(r, 200, o);
}
