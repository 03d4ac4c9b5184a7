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
    const char *stops[TF_MAX_STOPS];
    int n_stops, n, stream, echo, seeded;
    int logprobs; /* -1: none; else the alternatives per token */
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
    if (!stop || cJSON_IsNull(stop)) return 0;
    if (cJSON_IsArray(stop) && cJSON_GetArraySize(stop) > TF_MAX_STOPS)
        return serve_error(r, 400, "stop", "invalid_value", "%d stop strings: at most %d", cJSON_GetArraySize(stop),
                           TF_MAX_STOPS), -1;
    if (cJSON_IsString(stop)) return serve_check_text(s, stop, "stop", r) ? -1 : (c->stops[c->n_stops++] = stop->valuestring, 0);
    if (!cJSON_IsArray(stop))
        return serve_error(r, 400, "stop", "invalid_type", "\"stop\" must be a string or a list of strings"), -1;
    cJSON_ArrayForEach(e, stop) {
        if (serve_check_text(s, e, "stop", r)) return -1;
        c->stops[c->n_stops++] = e->valuestring;
    }
    return 0;
}

/* Every field of the request into c; 0, or -1 with a 400 in r. */
static int read_request(serve *s, const cJSON *req, completion *c, serve_reply *r) {
    static atomic_uint_fast64_t draws;
    double max_tokens = 16, temperature = 1, top_p = 1, top_k = 0, n = 1, seed = -1, logprobs = -1;
    if (number(req, "logprobs", 0, SERVE_MAX_LOGPROBS, 1, &logprobs, r) ||
        number(req, "max_tokens", 0, s->o.max_tokens, 1, &max_tokens, r) ||
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
    c->o.top_k = (int)top_k, c->n = (int)n, c->seeded = seed >= 0, c->logprobs = (int)logprobs;
    /* Without a seed, each request draws differently. */
    c->o.seed = c->seeded ? (uint64_t)seed : (uint64_t)time(NULL) * 1000003u + atomic_fetch_add(&draws, 1);
    return 0;
}

/* Characters (code points) of n bytes of UTF-8: text_offset counts them, as Python's str does. */
static size_t chars(const char *s, size_t n) {
    size_t k = 0;
    for (size_t i = 0; i < n; i++) k += ((unsigned char)s[i] & 0xC0) != 0x80;
    return k;
}

/* A token's text for logprobs: its bytes when they are UTF-8, else "bytes:\\xNN..." as OpenAI writes them. */
static char *token_text(const tf_model *m, int32_t id, size_t *n) {
    char *t = NULL;
    size_t len = 0;
    if (tf_tokenizer_decode(tf_model_tokenizer(m), &id, 1, &t, &len)) t = NULL, len = 0;
    if (t && serve_utf8_ok(t, len) && strlen(t) == len) return *n = chars(t, len), t;
    char *b = malloc(6 + 4 * len + 1);
    if (b) {
        strcpy(b, "bytes:");
        for (size_t i = 0; i < len; i++) snprintf(b + 6 + 4 * i, 5, "\\x%02x", (unsigned char)t[i]);
    }
    *n = t ? chars(t, len) : 0; /* the characters those bytes begin */
    free(t);
    return b;
}

/* {"tokens", "token_logprobs", "top_logprobs", "text_offset"}, empty. */
static cJSON *logprobs_new(void) {
    cJSON *o = cJSON_CreateObject();
    if (o && cJSON_AddArrayToObject(o, "tokens") && cJSON_AddArrayToObject(o, "token_logprobs") &&
        cJSON_AddArrayToObject(o, "top_logprobs") && cJSON_AddArrayToObject(o, "text_offset"))
        return o;
    return cJSON_Delete(o), NULL;
}

/* The k likeliest ids of logits into top (k <= SERVE_MAX_LOGPROBS; ties: the lower id). */
static int top_ids(const float *logits, int V, int k, int32_t *top) {
    int n = 0;
    for (; n < k && n < V; n++) {
        int32_t best = -1;
        for (int32_t v = 0; v < V; v++) {
            int taken = 0;
            for (int i = 0; i < n && !taken; i++) taken = top[i] == v;
            if (!taken && (best < 0 || logits[v] > logits[best])) best = v;
        }
        top[n] = best;
    }
    return n;
}

int serve_logprobs_add(const tf_model *m, serve_job *j) {
    double lp;
    float lse;
    int V;
    int32_t id = tf_completion_last(j->c, &lp), top[SERVE_MAX_LOGPROBS];
    const float *logits = tf_completion_logits(j->c, &lse, &V);
    if (id < 0 || !logits) return 0;
    if (!j->logprobs && !(j->logprobs = logprobs_new())) return -1;
    size_t len, alt_len;
    char *t = token_text(m, id, &len);
    cJSON *alts = cJSON_CreateObject();
    for (int i = 0, k = top_ids(logits, V, j->top_logprobs, top); alts && i < k; i++) {
        char *a = token_text(m, top[i], &alt_len);
        if (a && !cJSON_GetObjectItemCaseSensitive(alts, a)) cJSON_AddNumberToObject(alts, a, (double)(logits[top[i]] - lse));
        free(a);
    }
    cJSON *tok = cJSON_CreateString(t ? t : ""), *num = cJSON_CreateNumber(lp), *at = cJSON_CreateNumber((double)j->offset);
    free(t);
    j->offset += len;
    if (!tok || !num || !at || !alts) return cJSON_Delete(tok), cJSON_Delete(num), cJSON_Delete(at), cJSON_Delete(alts), -1;
    cJSON_AddItemToArray(cJSON_GetObjectItem(j->logprobs, "tokens"), tok);
    cJSON_AddItemToArray(cJSON_GetObjectItem(j->logprobs, "token_logprobs"), num);
    cJSON_AddItemToArray(cJSON_GetObjectItem(j->logprobs, "top_logprobs"), alts);
    cJSON_AddItemToArray(cJSON_GetObjectItem(j->logprobs, "text_offset"), at);
    return 0;
}

static cJSON *choice(int index, const char *echo, serve_job *j) {
    size_t len, e = echo ? strlen(echo) : 0;
    const char *text = tf_completion_text(j->c, &len, NULL);
    cJSON *c = cJSON_CreateObject();
    char *all = malloc(e + len + 1);
    if (!c || !all) return cJSON_Delete(c), free(all), NULL;
    memcpy(all, echo ? echo : "", e), memcpy(all + e, text, len), all[e + len] = 0;
    cJSON_AddStringToObject(c, "text", all);
    free(all);
    cJSON_AddNumberToObject(c, "index", index);
    if (j->logprobs) cJSON_AddItemToObject(c, "logprobs", j->logprobs), j->logprobs = NULL;
    else cJSON_AddNullToObject(c, "logprobs");
    cJSON_AddStringToObject(c, "finish_reason", tf_completion_finish(j->c));
    return c;
}

/* Completion i of the request (prompt i / n, choice i % n: seed + choice) made into jobs[i]. */
static int make_job(const serve_model *sm, const completion *c, int i, serve_job *j, serve_reply *r) {
    tf_generate_opts o = c->o;
    o.seed += (uint64_t)(i % c->n); /* choice j of a seeded request: seed + j */
    const char *prompt = c->prompts[i / c->n];
    if (!(j->c = tf_model_completion_new(sm->m, prompt, &o, c->stops, c->n_stops)))
        return serve_lib_error(r, 400, sm->m, "model_error"), -1;
    j->top_logprobs = c->logprobs, j->offset = c->echo ? chars(prompt, strlen(prompt)) : 0;
    return 0;
}

static void free_jobs(serve_job *jobs, serve_job **ptrs, int k) {
    for (int i = 0; jobs && i < k; i++) tf_completion_free(jobs[i].c), cJSON_Delete(jobs[i].logprobs);
    free(jobs), free(ptrs);
}

/* Every prompt's n choices, stepped by the model's scheduler, into choices; usage counts into *pt, *ct. */
static int generate_all(serve *s, const serve_model *sm, const completion *c, cJSON *choices, uint64_t *pt, uint64_t *ct,
                        serve_reply *r) {
    int k = c->n_prompts * c->n, rc = 0;
    serve_job *jobs = calloc((size_t)k, sizeof *jobs), **ptrs = calloc((size_t)k, sizeof *ptrs);
    if (!jobs || !ptrs) return free_jobs(jobs, ptrs, 0), serve_error(r, 500, NULL, NULL, "out of memory");
    for (int i = 0; !rc && i < k; i++) ptrs[i] = &jobs[i], rc = make_job(sm, c, i, &jobs[i], r);
    if (!rc && serve_gen_submit(s, sm, ptrs, k))
        rc = serve_error(r, 503, NULL, "queue_full", "the queue of completions is full (--max-queue %d): try again later",
                         s->o.max_queue);
    if (!rc) serve_gen_wait(s, sm, ptrs, k);
    for (int i = 0; !rc && i < k; i++) {
        if (jobs[i].failed) {
            rc = serve_msg_error(r, 400, sm->m, "model_error", jobs[i].err);
            break;
        }
        int prompt_tokens, n = tf_completion_tokens(jobs[i].c, &prompt_tokens);
        *pt += i % c->n == 0 ? (uint64_t)prompt_tokens : 0, *ct += (uint64_t)n;
        cJSON *ch = choice(i, c->echo ? c->prompts[i / c->n] : NULL, &jobs[i]);
        if (!ch) rc = serve_error(r, 500, NULL, NULL, "out of memory");
        else cJSON_AddItemToArray(choices, ch);
    }
    free_jobs(jobs, ptrs, k);
    return rc ? -1 : 0;
}

int serve_api_completions(serve *s, const cJSON *req, serve_reply *r) {
    static atomic_uint_fast64_t ids;
    const serve_model *sm = serve_find_model(s, req, TF_CAP_GENERATE, r);
    completion c = {0};
    if (!sm || read_request(s, req, &c, r)) return free(c.prompts), -1;
    if (c.stream) {
        tf_completion *tc = NULL;
        int rc = c.echo ? serve_error(r, 400, "echo", "unsupported", "echo is not streamed") : 0;
        if (!rc && !(tc = tf_model_completion_new(sm->m, c.prompts[0], &c.o, c.stops, c.n_stops)))
            rc = serve_lib_error(r, 400, sm->m, "model_error");
        if (!rc) rc = serve_stream_start(s, sm, tc, c.logprobs, r);
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
