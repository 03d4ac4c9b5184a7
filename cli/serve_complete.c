/* POST /v1/completions: OpenAI's fields read and checked (each a 400 naming it), then
 * tf_model_generate per prompt and choice, or a stream (serve_stream.c). */
#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "serve.h"

typedef struct {
    tf_generate_opts o;
    const char *stop; /* NULL: none */
    int n, stream, echo, seeded;
    const char **prompts;
    int n_prompts;
} completion;

/* A number field in [lo,hi] (integral when integer); absent or null: *out unchanged. */
static int number(const cJSON *req, const char *name, double lo, double hi, int integer, double *out, serve_reply *r) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(req, name);
    if (!v || cJSON_IsNull(v)) return 0;
    if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble) || (integer && v->valuedouble != floor(v->valuedouble)))
        return serve_error(r, 400, name, "invalid_type", "\"%s\" must be a%s number", name, integer ? "n integer" : ""), -1;
    if (v->valuedouble < lo || v->valuedouble > hi)
        return serve_error(r, 400, name, "invalid_value", "\"%s\" is %g: it must be in [%g, %g]", name, v->valuedouble,
                           lo, hi), -1;
    *out = v->valuedouble;
    return 0;
}

static int flag(const cJSON *req, const char *name, int *out, serve_reply *r) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(req, name);
    if (!v || cJSON_IsNull(v)) return 0;
    if (!cJSON_IsBool(v)) return serve_error(r, 400, name, "invalid_type", "\"%s\" must be true or false", name), -1;
    *out = cJSON_IsTrue(v);
    return 0;
}

/* "prompt": a string or a list of strings; "stop": a string or a list of at most one. */
static int texts(serve *s, const cJSON *req, completion *c, serve_reply *r) {
    const cJSON *p = cJSON_GetObjectItemCaseSensitive(req, "prompt"), *e;
    int k = cJSON_IsArray(p) ? cJSON_GetArraySize(p) : 1;
    if (!cJSON_IsString(p) && !cJSON_IsArray(p))
        return serve_error(r, 400, "prompt", "invalid_type", "\"prompt\" must be a string or a list of strings"), -1;
    if (k < 1 || k > s->o.max_inputs)
        return serve_error(r, 400, "prompt", "invalid_value", "%d prompts: 1 to %d are taken", k, s->o.max_inputs), -1;
    if (!(c->prompts = malloc((size_t)k * sizeof *c->prompts))) return serve_error(r, 500, NULL, NULL, "out of memory"), -1;
    if (cJSON_IsString(p)) {
        if (serve_check_text(s, p, "prompt", r)) return -1;
        c->prompts[c->n_prompts++] = p->valuestring;
    } else
        cJSON_ArrayForEach(e, p) {
            if (serve_check_text(s, e, "prompt", r)) return -1;
            c->prompts[c->n_prompts++] = e->valuestring;
        }
    const cJSON *stop = cJSON_GetObjectItemCaseSensitive(req, "stop");
    if (cJSON_IsArray(stop) && cJSON_GetArraySize(stop) > 1)
        return serve_error(r, 400, "stop", "invalid_value", "tformer takes one stop string"), -1;
    if (cJSON_IsArray(stop)) stop = cJSON_GetArrayItem(stop, 0);
    if (stop && !cJSON_IsNull(stop)) {
        if (serve_check_text(s, stop, "stop", r)) return -1;
        c->stop = *stop->valuestring ? stop->valuestring : NULL;
    }
    return 0;
}

/* Every field of the request into c; 0, or -1 with a 400 in r. */
static int read_request(serve *s, const cJSON *req, completion *c, serve_reply *r) {
    static atomic_uint_fast64_t draws;
    double max_tokens = 16, temperature = 1, top_p = 1, top_k = 0, n = 1, seed = -1;
    const cJSON *lp = cJSON_GetObjectItemCaseSensitive(req, "logprobs");
    if (lp && !cJSON_IsNull(lp) && !cJSON_IsFalse(lp) && !(cJSON_IsNumber(lp) && lp->valuedouble == 0))
        return serve_error(r, 400, "logprobs", "unsupported", "tformer serve does not return logprobs yet"), -1;
    if (number(req, "max_tokens", 0, s->o.max_tokens, 1, &max_tokens, r) ||
        number(req, "temperature", 0, 2, 0, &temperature, r) || number(req, "top_p", 0, 1, 0, &top_p, r) ||
        number(req, "top_k", 0, 1e6, 1, &top_k, r) || number(req, "n", 1, s->o.max_n, 1, &n, r) ||
        number(req, "seed", 0, 9007199254740991.0, 1, &seed, r) || flag(req, "stream", &c->stream, r) ||
        flag(req, "echo", &c->echo, r) || texts(s, req, c, r))
        return -1;
    if (top_p <= 0) return serve_error(r, 400, "top_p", "invalid_value", "\"top_p\" must be above 0"), -1;
    if (c->stream && (n > 1 || c->n_prompts > 1))
        return serve_error(r, 400, "stream", "invalid_value", "a stream carries one prompt and n = 1"), -1;
    c->o = tf_generate_opts_default();
    c->o.max_tokens = (int)max_tokens, c->o.temperature = (float)temperature, c->o.top_p = (float)top_p;
    c->o.top_k = (int)top_k, c->n = (int)n, c->seeded = seed >= 0;
    /* Without a seed, each request draws differently. */
    c->o.seed = c->seeded ? (uint64_t)seed : (uint64_t)time(NULL) * 1000003u + atomic_fetch_add(&draws, 1);
    return 0;
}

static cJSON *choice(int index, const char *echo, const char *text, size_t len, int length_hit) {
    cJSON *c = cJSON_CreateObject();
    size_t e = echo ? strlen(echo) : 0;
    char *all = malloc(e + len + 1);
    if (!c || !all) return cJSON_Delete(c), free(all), NULL;
    memcpy(all, echo ? echo : "", e), memcpy(all + e, text, len), all[e + len] = 0;
    cJSON_AddStringToObject(c, "text", all);
    free(all);
    cJSON_AddNumberToObject(c, "index", index);
    cJSON_AddNullToObject(c, "logprobs");
    cJSON_AddStringToObject(c, "finish_reason", length_hit ? "length" : "stop");
    return c;
}

static uint64_t tokens_of(const tf_model *m, const char *text, size_t len) {
    tf_ids ids = {0};
    uint64_t n = tf_tokenizer_encode(tf_model_tokenizer(m), text, len, &ids) ? 0 : ids.n;
    tf_ids_free(&ids);
    return n;
}

/* Every prompt's n choices into choices; usage counts into *prompt_tokens, *completion_tokens. */
static int generate_all(serve *s, const serve_model *sm, const completion *c, cJSON *choices, uint64_t *pt, uint64_t *ct,
                        serve_reply *r) {
    for (int p = 0; p < c->n_prompts; p++) {
        *pt += tokens_of(sm->m, c->prompts[p], strlen(c->prompts[p]));
        for (int j = 0; j < c->n; j++) {
            tf_generate_opts o = c->o;
            o.seed += (uint64_t)j; /* choice j of a seeded request: seed + j */
            char *text;
            size_t len;
            serve_compute_begin(s);
            int rc = tf_model_generate(sm->m, c->prompts[p], &o, c->stop, NULL, NULL, &text, &len);
            serve_compute_end(s);
            if (rc) return serve_lib_error(r, 400, sm->m, "model_error"), -1;
            uint64_t k = tokens_of(sm->m, text, len);
            *ct += k;
            cJSON *ch = choice(p * c->n + j, c->echo ? c->prompts[p] : NULL, text, len, !c->stop && k >= (uint64_t)o.max_tokens);
            free(text);
            if (!ch) return serve_error(r, 500, NULL, NULL, "out of memory"), -1;
            cJSON_AddItemToArray(choices, ch);
        }
    }
    return 0;
}

int serve_api_completions(serve *s, const cJSON *req, serve_reply *r) {
    static atomic_uint_fast64_t ids;
    const serve_model *sm = serve_find_model(s, req, TF_CAP_GENERATE, r);
    completion c = {0};
    if (!sm || read_request(s, req, &c, r)) return free(c.prompts), -1;
    if (c.stream) {
        int rc = c.echo ? serve_error(r, 400, "echo", "unsupported", "echo is not streamed")
                        : serve_stream_start(s, sm, c.prompts[0], &c.o, c.stop, r);
        return free(c.prompts), rc;
    }
    char id[48];
    snprintf(id, sizeof id, "cmpl-%llu", (unsigned long long)atomic_fetch_add(&ids, 1));
    cJSON *o = cJSON_CreateObject(), *choices = cJSON_AddArrayToObject(o, "choices"), *usage;
    uint64_t pt = 0, ct = 0;
    if (!choices) return free(c.prompts), cJSON_Delete(o), serve_error(r, 500, NULL, NULL, "out of memory");
    int rc = generate_all(s, sm, &c, choices, &pt, &ct, r);
    free(c.prompts);
    if (rc) return cJSON_Delete(o), -1;
    serve_metrics_tokens(&s->metrics, pt, ct, 0);
    cJSON_AddStringToObject(o, "id", id);
    cJSON_AddStringToObject(o, "object", "text_completion");
    cJSON_AddNumberToObject(o, "created", (double)time(NULL));
    cJSON_AddStringToObject(o, "model", sm->name);
    usage = cJSON_AddObjectToObject(o, "usage");
    cJSON_AddNumberToObject(usage, "prompt_tokens", (double)pt);
    cJSON_AddNumberToObject(usage, "completion_tokens", (double)ct);
    cJSON_AddNumberToObject(usage, "total_tokens", (double)(pt + ct));
    return serve_json(r, 200, o);
}
