/* POST /v1/attention: a text's self-attention at one layer and head (tf_model_text_attention), for
 * the page's heatmap: the tokens' texts and the (n, n) map, row i the query at token i. At most
 * SERVE_MAX_ATTENTION tokens (a map of every layer and head is computed). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "serve.h"

/* An integer field in [0, hi) (absent: 0); -1 with a 400 in r. */
static int index_of(const cJSON *req, const char *name, int hi, serve_reply *r) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(req, name);
    if (!v || cJSON_IsNull(v)) return 0;
    if (!cJSON_IsNumber(v) || v->valuedouble != floor(v->valuedouble) || v->valuedouble < 0 || v->valuedouble >= hi)
        return serve_error(r, 400, name, "invalid_value", "\"%s\" must be an integer in [0, %d]", name, hi - 1), -1;
    return (int)v->valuedouble;
}

/* Each id's text ("bytes:\xNN" escapes where it is not whole UTF-8, as logprobs write them). */
static cJSON *token_list(const tf_model *m, const int32_t *ids, int n) {
    cJSON *list = cJSON_CreateArray();
    for (int i = 0; list && i < n; i++) {
        char *t = NULL, esc[4 * 64 + 8];
        size_t len = 0;
        if (tf_tokenizer_decode(tf_model_tokenizer(m), &ids[i], 1, &t, &len)) t = NULL, len = 0;
        if (t && serve_utf8_ok(t, len) && strlen(t) == len) cJSON_AddItemToArray(list, cJSON_CreateString(t));
        else {
            size_t k = (size_t)snprintf(esc, sizeof esc, "bytes:");
            for (size_t j = 0; t && j < len && k + 5 < sizeof esc; j++) k += (size_t)snprintf(esc + k, 5, "\\x%02x", (unsigned char)t[j]);
            cJSON_AddItemToArray(list, cJSON_CreateString(esc));
        }
        free(t);
    }
    return list;
}

int serve_api_attention(serve *s, const cJSON *req, serve_reply *r) {
    const serve_model *sm = serve_find_model(s, req, ~0u, r);
    if (!sm) return -1;
    const cJSON *in = cJSON_GetObjectItemCaseSensitive(req, "input");
    if (serve_check_text(s, in, "input", r)) return -1;
    tf_tokenizer *tok = tf_model_tokenizer(sm->m);
    tf_ids ids = {0};
    if (!tok) return serve_error(r, 422, "model", "model_cannot", "the model's folder holds no tokenizer"), -1;
    if (tf_tokenizer_encode(tok, in->valuestring, strlen(in->valuestring), &ids)) return serve_lib_error(r, 400, sm->m, "model_error");
    size_t n = ids.n;
    tf_ids_free(&ids);
    if (n < 1 || n > SERVE_MAX_ATTENTION)
        return serve_error(r, 400, "input", "invalid_value", "%zu tokens: the attention endpoint takes 1 to %d", n,
                           SERVE_MAX_ATTENTION), -1;
    tf_text_attention a;
    serve_compute_begin(s);
    int rc = tf_model_text_attention(sm->m, in->valuestring, &a);
    serve_compute_end(s);
    if (rc) return serve_lib_error(r, 422, sm->m, "model_cannot");
    int layer = index_of(req, "layer", a.n_layer, r), head = layer < 0 ? -1 : index_of(req, "head", a.n_head, r);
    if (layer < 0 || head < 0) return tf_text_attention_free(&a), -1;
    cJSON *o = cJSON_CreateObject(), *map = cJSON_CreateArray();
    const float *p = a.probs + ((size_t)layer * a.n_head + head) * a.n * a.n;
    for (int i = 0; map && i < a.n; i++) cJSON_AddItemToArray(map, cJSON_CreateFloatArray(p + (size_t)i * a.n, a.n));
    cJSON_AddStringToObject(o, "object", "attention");
    cJSON_AddStringToObject(o, "model", sm->name);
    cJSON_AddItemToObject(o, "tokens", token_list(sm->m, a.ids, a.n));
    cJSON_AddNumberToObject(o, "layers", a.n_layer), cJSON_AddNumberToObject(o, "heads", a.n_head);
    cJSON_AddNumberToObject(o, "layer", layer), cJSON_AddNumberToObject(o, "head", head);
    cJSON_AddItemToObject(o, "attention", map);
    tf_text_attention_free(&a);
    return serve_json(r, 200, o);
}
