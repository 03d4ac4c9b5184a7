/* The JSON endpoints of tformer serve: /health, /metrics, /v1/models, /v1/embeddings,
 * /v1/fill-mask, /v1/translations (completions: serve_complete.c). Every check answers a 4xx;
 * every library error is answered with the library's message. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "serve.h"

/* ---------------------------------------------------------------- checks shared by the endpoints */

int serve_utf8_ok(const char *s, size_t n) {
    const unsigned char *p = (const unsigned char *)s;
    for (size_t i = 0; i < n;) {
        unsigned c = p[i];
        size_t k = c < 0x80 ? 1 : (c & 0xE0) == 0xC0 ? 2 : (c & 0xF0) == 0xE0 ? 3 : (c & 0xF8) == 0xF0 ? 4 : 0;
        if (!k || k > n - i || (k == 2 && c < 0xC2) || (k == 4 && c > 0xF4)) return 0;
        unsigned cp = k == 1 ? c : c & (0x7F >> k);
        for (size_t j = 1; j < k; j++) {
            if ((p[i + j] & 0xC0) != 0x80) return 0;
            cp = cp << 6 | (p[i + j] & 0x3F);
        }
        if ((k == 3 && (cp < 0x800 || (cp >= 0xD800 && cp <= 0xDFFF))) || (k == 4 && (cp < 0x10000 || cp > 0x10FFFF)))
            return 0;
        i += k;
    }
    return 1;
}

const serve_model *serve_find_model(serve *s, const cJSON *req, unsigned cap, serve_reply *r) {
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(req, "model");
    if (!cJSON_IsString(name))
        return serve_error(r, 400, "model", "invalid_type", "\"model\" must be a string: one of GET /v1/models"), NULL;
    for (int i = 0; i < s->n_models; i++) {
        if (strcmp(s->models[i].name, name->valuestring)) continue;
        if (cap && tf_model_require(s->models[i].m, cap)) return serve_lib_error(r, 422, s->models[i].m, "model_cannot"), NULL;
        return &s->models[i];
    }
    return serve_error(r, 404, "model", "model_not_found", "no model named '%.200s' (GET /v1/models lists them)",
                       name->valuestring), NULL;
}

int serve_check_text(serve *s, const cJSON *v, const char *param, serve_reply *r) {
    if (!cJSON_IsString(v)) return serve_error(r, 400, param, "invalid_type", "\"%s\" must be a string", param), -1;
    size_t n = strlen(v->valuestring);
    if (n > s->o.max_input)
        return serve_error(r, 400, param, "input_too_long", "a text of %zu bytes is over the limit of %zu", n,
                           s->o.max_input), -1;
    if (!serve_utf8_ok(v->valuestring, n))
        return serve_error(r, 400, param, "invalid_utf8", "\"%s\" is not valid UTF-8", param), -1;
    return 0;
}

/* "input": a string or a list of strings -> *texts (malloc'd, pointing into req), *n. */
static int texts_of(serve *s, const cJSON *req, const char ***texts, int *n, serve_reply *r) {
    const cJSON *in = cJSON_GetObjectItemCaseSensitive(req, "input");
    *texts = NULL, *n = 0;
    if (cJSON_IsString(in)) {
        if (serve_check_text(s, in, "input", r)) return -1;
        if (!(*texts = malloc(sizeof **texts))) return serve_error(r, 500, NULL, NULL, "out of memory"), -1;
        (*texts)[0] = in->valuestring, *n = 1;
        return 0;
    }
    if (!cJSON_IsArray(in))
        return serve_error(r, 400, "input", "invalid_type", "\"input\" must be a string or a list of strings"), -1;
    int k = cJSON_GetArraySize(in);
    if (k < 1 || k > s->o.max_inputs)
        return serve_error(r, 400, "input", "invalid_value", "\"input\" holds %d texts: 1 to %d are taken", k,
                           s->o.max_inputs), -1;
    if (!(*texts = malloc((size_t)k * sizeof **texts))) return serve_error(r, 500, NULL, NULL, "out of memory"), -1;
    const cJSON *e;
    cJSON_ArrayForEach(e, in) {
        if (serve_check_text(s, e, "input", r)) return free(*texts), *texts = NULL, -1;
        (*texts)[(*n)++] = e->valuestring;
    }
    return 0;
}

/* Tokens of the texts as the model's tokenizer reads them (usage). */
static uint64_t count_tokens(const tf_model *m, const char *const *texts, int n) {
    tf_tokenizer *tok = tf_model_tokenizer(m);
    uint64_t total = 0;
    for (int i = 0; tok && i < n; i++) {
        tf_ids ids = {0};
        if (!tf_tokenizer_encode(tok, texts[i], strlen(texts[i]), &ids)) total += ids.n;
        tf_ids_free(&ids);
    }
    return total;
}

/* ---------------------------------------------------------------- /v1/models */

static int models(serve *s, serve_reply *r) {
    cJSON *o = cJSON_CreateObject(), *data = cJSON_AddArrayToObject(o, "data");
    cJSON_AddStringToObject(o, "object", "list");
    for (int i = 0; data && i < s->n_models; i++) {
        cJSON *m = cJSON_CreateObject(), *caps = cJSON_AddArrayToObject(m, "capabilities");
        cJSON_AddStringToObject(m, "id", s->models[i].name);
        cJSON_AddStringToObject(m, "object", "model");
        cJSON_AddNumberToObject(m, "created", (double)s->created);
        cJSON_AddStringToObject(m, "owned_by", "tformer");
        cJSON_AddStringToObject(m, "family", tf_model_family(s->models[i].m)->name);
        for (unsigned c = 0; caps && c < TF_CAP_COUNT; c++)
            if (tf_model_caps(s->models[i].m) & 1u << c) cJSON_AddItemToArray(caps, cJSON_CreateString(tf_cap_name(1u << c)));
        cJSON_AddItemToArray(data, m);
    }
    return serve_json(r, 200, o);
}

/* ---------------------------------------------------------------- /v1/embeddings */

/* n floats as base64 of their little-endian bytes (OpenAI's encoding_format "base64"). */
static char *base64_floats(const float *x, size_t n) {
    static const char A[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    const unsigned char *b = (const unsigned char *)x; /* x86 and ARM: little-endian */
    size_t len = n * sizeof *x, out_len = (len + 2) / 3 * 4;
    char *o = malloc(out_len + 1), *p = o;
    if (!o) return NULL;
    for (size_t i = 0; i < len; i += 3) {
        unsigned v = (unsigned)b[i] << 16 | (i + 1 < len ? (unsigned)b[i + 1] << 8 : 0) | (i + 2 < len ? b[i + 2] : 0);
        *p++ = A[v >> 18 & 63], *p++ = A[v >> 12 & 63];
        *p++ = i + 1 < len ? A[v >> 6 & 63] : '=';
        *p++ = i + 2 < len ? A[v & 63] : '=';
    }
    *p = 0;
    return o;
}

static cJSON *embedding_list(const float *e, int n, int d, int b64) {
    cJSON *data = cJSON_CreateArray();
    for (int i = 0; data && i < n; i++) {
        const float *row = e + (size_t)i * (size_t)d;
        cJSON *item = cJSON_CreateObject(), *v = NULL;
        cJSON_AddStringToObject(item, "object", "embedding");
        cJSON_AddNumberToObject(item, "index", i);
        if (b64) {
            char *t = base64_floats(row, (size_t)d);
            v = t ? cJSON_CreateString(t) : NULL;
            free(t);
        } else {
            v = cJSON_CreateArray();
            for (int c = 0; v && c < d; c++) cJSON_AddItemToArray(v, cJSON_CreateNumber(row[c]));
        }
        if (!item || !v) return cJSON_Delete(item), cJSON_Delete(v), cJSON_Delete(data), NULL;
        cJSON_AddItemToObject(item, "embedding", v);
        cJSON_AddItemToArray(data, item);
    }
    return data;
}

static int embeddings(serve *s, const cJSON *req, serve_reply *r) {
    const serve_model *sm = serve_find_model(s, req, TF_CAP_EMBED, r);
    if (!sm) return -1;
    const cJSON *fmt = cJSON_GetObjectItemCaseSensitive(req, "encoding_format");
    int b64 = cJSON_IsString(fmt) && !strcmp(fmt->valuestring, "base64");
    if (fmt && !cJSON_IsNull(fmt) && !b64 && !(cJSON_IsString(fmt) && !strcmp(fmt->valuestring, "float")))
        return serve_error(r, 400, "encoding_format", "invalid_value", "\"encoding_format\" is float or base64");
    const cJSON *dims = cJSON_GetObjectItemCaseSensitive(req, "dimensions");
    int d = tf_model_embed_dim(sm->m);
    if (dims && !cJSON_IsNull(dims) && !(cJSON_IsNumber(dims) && dims->valuedouble == d))
        return serve_error(r, 400, "dimensions", "invalid_value", "this model's embeddings have %d dimensions", d);
    const char **texts;
    int n;
    if (texts_of(s, req, &texts, &n, r)) return -1;
    float *e = NULL;
    char err[768];
    if (serve_embed(s, sm, texts, n, &e, err, sizeof err)) return free(texts), serve_msg_error(r, 400, sm->m, "model_error", err);
    uint64_t tokens = count_tokens(sm->m, texts, n);
    serve_metrics_tokens(&s->metrics, 0, 0, (uint64_t)n);
    free(texts);
    cJSON *o = cJSON_CreateObject(), *data = embedding_list(e, n, d, b64), *usage = cJSON_CreateObject();
    free(e);
    cJSON_AddStringToObject(o, "object", "list");
    if (data) cJSON_AddItemToObject(o, "data", data);
    cJSON_AddStringToObject(o, "model", sm->name);
    cJSON_AddNumberToObject(usage, "prompt_tokens", (double)tokens);
    cJSON_AddNumberToObject(usage, "total_tokens", (double)tokens);
    cJSON_AddItemToObject(o, "usage", usage);
    if (!data) return cJSON_Delete(o), serve_error(r, 500, NULL, NULL, "out of memory");
    return serve_json(r, 200, o);
}

/* ---------------------------------------------------------------- /v1/fill-mask */

static cJSON *mask_choices(const tf_model *m, const tf_fill_mask_result *fm, int j) {
    cJSON *c = cJSON_CreateArray();
    for (int i = 0; c && i < fm->k; i++) {
        int32_t id = fm->ids[(size_t)j * (size_t)fm->k + (size_t)i];
        char *tok = NULL;
        size_t len;
        cJSON *e = cJSON_CreateObject();
        cJSON_AddNumberToObject(e, "token_id", id);
        if (!tf_tokenizer_decode(tf_model_tokenizer(m), &id, 1, &tok, &len) && serve_utf8_ok(tok, len))
            cJSON_AddStringToObject(e, "token", tok);
        free(tok);
        cJSON_AddNumberToObject(e, "score", fm->probs[(size_t)j * (size_t)fm->k + (size_t)i]);
        cJSON_AddItemToArray(c, e);
    }
    return c;
}

static int fill_mask(serve *s, const cJSON *req, serve_reply *r) {
    const serve_model *sm = serve_find_model(s, req, TF_CAP_FILL_MASK, r);
    if (!sm) return -1;
    const cJSON *in = cJSON_GetObjectItemCaseSensitive(req, "input"), *k = cJSON_GetObjectItemCaseSensitive(req, "top_k");
    if (serve_check_text(s, in, "input", r)) return -1;
    if (k && !(cJSON_IsNumber(k) && k->valuedouble >= 1 && k->valuedouble <= 100 && k->valuedouble == floor(k->valuedouble)))
        return serve_error(r, 400, "top_k", "invalid_value", "\"top_k\" is an integer in [1,100]");
    tf_fill_mask_result fm;
    serve_compute_begin(s);
    int rc = tf_model_fill_mask(sm->m, in->valuestring, k ? (int)k->valuedouble : 5, &fm);
    serve_compute_end(s);
    if (rc) return serve_lib_error(r, 400, sm->m, "model_error");
    cJSON *o = cJSON_CreateObject(), *data = cJSON_AddArrayToObject(o, "data");
    cJSON_AddStringToObject(o, "object", "list");
    cJSON_AddStringToObject(o, "model", sm->name);
    for (int j = 0; data && j < fm.n; j++) {
        cJSON *e = cJSON_CreateObject();
        cJSON_AddNumberToObject(e, "position", fm.positions[j]);
        cJSON_AddItemToObject(e, "candidates", mask_choices(sm->m, &fm, j));
        cJSON_AddItemToArray(data, e);
    }
    tf_fill_mask_result_free(&fm);
    return serve_json(r, 200, o);
}

/* ---------------------------------------------------------------- /v1/translations */

static int translations(serve *s, const cJSON *req, serve_reply *r) {
    const serve_model *sm = serve_find_model(s, req, TF_CAP_TRANSLATE, r);
    if (!sm) return -1;
    const char **texts;
    int n;
    if (texts_of(s, req, &texts, &n, r)) return -1;
    char **out = calloc((size_t)n, sizeof *out);
    if (!out) return free(texts), serve_error(r, 500, NULL, NULL, "out of memory");
    serve_compute_begin(s);
    int rc = tf_model_translate(sm->m, n, texts, NULL, out, NULL);
    serve_compute_end(s);
    free(texts);
    cJSON *o = rc ? NULL : cJSON_CreateObject(), *data = cJSON_AddArrayToObject(o, "data");
    for (int i = 0; data && i < n; i++) {
        cJSON *e = cJSON_CreateObject();
        cJSON_AddNumberToObject(e, "index", i);
        cJSON_AddStringToObject(e, "text", out[i] ? out[i] : "");
        cJSON_AddItemToArray(data, e);
    }
    for (int i = 0; i < n; i++) free(out[i]);
    free(out);
    if (rc) return serve_lib_error(r, 400, sm->m, "model_error");
    cJSON_AddStringToObject(o, "object", "list");
    cJSON_AddStringToObject(o, "model", sm->name);
    return serve_json(r, 200, o);
}

/* ---------------------------------------------------------------- dispatch */

int serve_api(serve *s, serve_endpoint ep, const char *method, const char *body, size_t len, serve_reply *r) {
    (void)method;
    if (ep == EP_HEALTH) return serve_json(r, 200, cJSON_Parse("{\"status\":\"ok\"}"));
    if (ep == EP_MODELS) return models(s, r);
    if (ep == EP_PAGE) return serve_page(r);
    if (ep == EP_METRICS) {
        r->body = serve_metrics_text(&s->metrics);
        r->status = r->body ? 200 : 500, r->type = "text/plain; version=0.0.4";
        return 0;
    }
    if (!serve_utf8_ok(body, len) || strlen(body) != len)
        return serve_error(r, 400, NULL, "invalid_utf8", "the body is not valid UTF-8 text");
    const char *end = NULL;
    cJSON *req = cJSON_ParseWithLengthOpts(body, len, &end, 0);
    while (req && end && end < body + len && strchr(" \t\r\n", *end)) end++;
    if (req && end != body + len) cJSON_Delete(req), req = NULL; /* something after the value */
    if (!req) return serve_error(r, 400, NULL, "invalid_json", "the body is not valid JSON");
    int rc = !cJSON_IsObject(req)      ? serve_error(r, 400, NULL, "invalid_json", "the body must be a JSON object")
             : ep == EP_EMBEDDINGS   ? embeddings(s, req, r)
             : ep == EP_COMPLETIONS  ? serve_api_completions(s, req, r)
             : ep == EP_FILL_MASK    ? fill_mask(s, req, r)
             : ep == EP_TRANSLATIONS ? translations(s, req, r)
             : ep == EP_CLASSIFICATIONS ? serve_api_classifications(s, req, r)
             : ep == EP_ATTENTION ? serve_api_attention(s, req, r)
             : ep == EP_CAPTIONS ? serve_api_captions(s, req, r)
                                     : serve_error(r, 404, NULL, "unknown_url", "no endpoint here");
    cJSON_Delete(req);
    return rc;
}
