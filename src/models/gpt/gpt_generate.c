/* Generation: sampling (temperature, top-k, top-p, repetition penalty; greedy
 * at temperature 0) and beam search with a length penalty. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../../core/internal.h"

tf_generate_opts tf_generate_opts_default(void) {
    tf_generate_opts o = {100, 1.0f, 0, 1.0f, 1.0f, 1, 0, 1.0f, -1};
    return o;
}

/* Index of the largest value (the lowest index on ties). */
static int32_t argmax(const float *x, int32_t n) {
    int32_t best = 0;
    for (int32_t i = 1; i < n; i++)
        if (x[i] > x[best]) best = i;
    return best;
}

static void log_softmax(float *x, int32_t n) {
    float mx = x[argmax(x, n)];
    double s = 0;
    for (int32_t i = 0; i < n; i++) s += exp((double)x[i] - mx);
    float lse = mx + (float)log(s);
    for (int32_t i = 0; i < n; i++) x[i] -= lse;
}

static const float *g_sort_keys;
static int by_value_desc(const void *a, const void *b) {
    float x = g_sort_keys[*(const int32_t *)a], y = g_sort_keys[*(const int32_t *)b];
    if (x != y) return x < y ? 1 : -1;
    return *(const int32_t *)a - *(const int32_t *)b;
}

/* One id from logits (V): penalty, temperature, top-k, top-p, then a draw. */
static int32_t sample(float *logits, int32_t V, const tf_generate_opts *o, const tf_ids *ctx_ids, uint64_t draw,
                      int32_t *order) {
    if (o->repetition_penalty != 1.0f)
        for (size_t i = 0; i < ctx_ids->n; i++) { /* each distinct id once */
            int32_t t = ctx_ids->v[i];
            size_t j = 0;
            while (j < i && ctx_ids->v[j] != t) j++;
            if (j == i) logits[t] = logits[t] > 0 ? logits[t] / o->repetition_penalty : logits[t] * o->repetition_penalty;
        }
    if (o->temperature <= 0.0f) return argmax(logits, V);
    for (int32_t i = 0; i < V; i++) logits[i] /= o->temperature, order[i] = i;
    g_sort_keys = logits;
    qsort(order, (size_t)V, sizeof *order, by_value_desc);
    int32_t keep = o->top_k > 0 && o->top_k < V ? o->top_k : V;
    double sum = 0, *p = malloc((size_t)keep * sizeof *p);
    if (!p) return order[0];
    for (int32_t i = 0; i < keep; i++) sum += (p[i] = exp((double)logits[order[i]] - logits[order[0]]));
    if (o->top_p < 1.0f) { /* the smallest prefix whose mass reaches top_p */
        double cum = 0;
        for (int32_t i = 0; i < keep; i++)
            if ((cum += p[i] / sum) >= o->top_p) {
                keep = i + 1;
                break;
            }
        sum = 0;
        for (int32_t i = 0; i < keep; i++) sum += p[i];
    }
    uint64_t s = draw;
    double u = (double)(tf_splitmix64(&s) >> 11) * (1.0 / 9007199254740992.0) * sum;
    int32_t pick = keep - 1;
    for (int32_t i = 0; i < keep; i++)
        if ((u -= p[i]) < 0) {
            pick = i;
            break;
        }
    free(p);
    return order[pick];
}

/* Feed the prompt into a cache; logits holds the next token's logits. */
static tf_kv_cache *prefill(const tf_gpt *m, const int32_t *prompt, int n, int extra, float *logits) {
    tf_kv_cache *c = tf_kv_cache_new(m, n + extra, NULL);
    for (int i = 0; c && i < n; i++)
        if (tf_gpt_decode_step(m, c, prompt[i], logits)) return tf_kv_cache_free(c), NULL;
    return c;
}

static int generate_sampled(const tf_gpt *m, const int32_t *prompt, int n_prompt, const tf_generate_opts *o,
                            tf_token_fn on_token, void *user, tf_ids *out, double *score) {
    int32_t V = m->cfg.vocab_size;
    float *logits = malloc((size_t)V * sizeof *logits);
    int32_t *order = malloc((size_t)V * sizeof *order);
    tf_ids history = {0};
    int cap = m->cfg.context; /* the cache never holds more than the context */
    tf_kv_cache *c = logits && order ? prefill(m, prompt, n_prompt, cap - n_prompt, logits) : NULL;
    int rc = c ? 0 : -1;
    double total = 0;
    for (int i = 0; !rc && i < n_prompt; i++) rc = tf_ids_push(&history, prompt[i]);
    for (int step = 0; !rc && step < o->max_tokens; step++) {
        float *lp = malloc((size_t)V * sizeof *lp);
        if (!lp) { rc = tf_set_error("generate: out of memory"); break; }
        memcpy(lp, logits, (size_t)V * sizeof *lp);
        log_softmax(lp, V);
        int32_t id = sample(logits, V, o, &history, o->seed * 0x9E3779B97F4A7C15ull + (uint64_t)step, order);
        total += lp[id];
        free(lp);
        if ((rc = tf_ids_push(out, id) || tf_ids_push(&history, id))) break;
        if ((on_token && on_token(user, id)) || id == o->eos_id || step + 1 == o->max_tokens) break;
        if (tf_kv_cache_len(c) >= m->cfg.context) { /* full: slide, keeping the last 3/4 of the context */
            int keep = m->cfg.context * 3 / 4 > 0 ? m->cfg.context * 3 / 4 : 1;
            tf_kv_cache_free(c);
            c = prefill(m, history.v + history.n - keep, keep - 1, m->cfg.context - keep + 1, logits);
            if (!c) { rc = -1; break; }
        }
        rc = tf_gpt_decode_step(m, c, id, logits);
    }
    if (score) *score = total;
    tf_kv_cache_free(c);
    tf_ids_free(&history);
    free(logits), free(order);
    return rc;
}

/* ---------------------------------------------------------------- beam search */

typedef struct {
    tf_kv_cache *c; /* own positions, on the prompt's shared cache */
    tf_ids toks;
    double score;   /* sum of log-probabilities */
    float *logp;    /* of the next token */
} beam;

typedef struct {
    double score;
    int b;
    int32_t v;
} cand;

/* cand x ranks before y: higher score, then lower beam, then lower token. */
static int cand_before(cand x, cand y) {
    if (x.score != y.score) return x.score > y.score;
    return x.b != y.b ? x.b < y.b : x.v < y.v;
}

/* The n best candidates over every live beam and token (insertion into a sorted list of n). */
static int select_best(const beam *bs, int nb, int32_t V, int n, cand *best) {
    int k = 0;
    for (int b = 0; b < nb; b++)
        for (int32_t v = 0; v < V; v++) {
            cand c = {bs[b].score + bs[b].logp[v], b, v};
            if (k == n && !cand_before(c, best[n - 1])) continue;
            int i = k < n ? k++ : n - 1;
            while (i > 0 && cand_before(c, best[i - 1])) best[i] = best[i - 1], i--;
            best[i] = c;
        }
    return k;
}

static void free_beams(beam *bs, int n) {
    for (int i = 0; i < n; i++) tf_kv_cache_free(bs[i].c), tf_ids_free(&bs[i].toks), free(bs[i].logp);
}

typedef struct {
    tf_ids best;
    double best_score;
    int have;
} finished;

static int finish(finished *f, const tf_ids *toks, double score, float alpha) {
    double s = score / pow((double)(toks->n ? toks->n : 1), alpha);
    if (f->have && !(s > f->best_score)) return 0;
    f->best.n = 0;
    for (size_t i = 0; i < toks->n; i++)
        if (tf_ids_push(&f->best, toks->v[i])) return -1;
    f->best_score = s, f->have = 1;
    return 0;
}

/* Children of the selected candidates: each copies its parent's own positions and feeds its token. */
static int grow(const tf_gpt *m, const tf_kv_cache *prefix, const beam *old, const cand *sel, int ns, int cap,
                const tf_generate_opts *o, beam *next, int *n_next, finished *fin, int last) {
    int32_t V = m->cfg.vocab_size;
    *n_next = 0;
    for (int i = 0; i < ns; i++) {
        const beam *p = &old[sel[i].b];
        beam nb = {NULL, {0}, sel[i].score, NULL};
        for (size_t t = 0; t < p->toks.n; t++)
            if (tf_ids_push(&nb.toks, p->toks.v[t])) return -1;
        if (tf_ids_push(&nb.toks, sel[i].v)) return -1;
        if (last || sel[i].v == o->eos_id) {
            int rc = finish(fin, &nb.toks, nb.score, o->length_penalty);
            tf_ids_free(&nb.toks);
            if (rc) return -1;
            continue;
        }
        if (!(nb.c = tf_kv_cache_new(m, cap, prefix)) || !(nb.logp = malloc((size_t)V * sizeof *nb.logp)) ||
            tf_kv_cache_copy(nb.c, p->c) || tf_gpt_decode_step(m, nb.c, sel[i].v, nb.logp)) {
            free_beams(&nb, 1);
            return -1;
        }
        log_softmax(nb.logp, V);
        next[(*n_next)++] = nb;
    }
    return 0;
}

static int generate_beam(const tf_gpt *m, const int32_t *prompt, int n_prompt, const tf_generate_opts *o,
                         tf_token_fn on_token, void *user, tf_ids *out, double *score) {
    int32_t V = m->cfg.vocab_size;
    int N = o->beam, steps = o->max_tokens;
    if (n_prompt + steps > m->cfg.context) steps = m->cfg.context - n_prompt;
    beam *cur = calloc((size_t)N, sizeof *cur), *next = calloc((size_t)N, sizeof *next);
    cand *sel = malloc((size_t)N * sizeof *sel);
    finished fin = {{0}, 0, 0};
    float *logits = malloc((size_t)V * sizeof *logits);
    tf_kv_cache *prefix = cur && next && sel && logits ? prefill(m, prompt, n_prompt, 0, logits) : NULL;
    int n_cur = 0, rc = prefix ? 0 : -1;
    if (!rc && steps > 0) { /* the first beam: the prompt alone */
        cur[0].c = tf_kv_cache_new(m, steps, prefix);
        cur[0].logp = logits, logits = NULL;
        log_softmax(cur[0].logp, V);
        rc = cur[0].c ? 0 : -1, n_cur = 1;
    }
    for (int step = 0; !rc && step < steps && n_cur > 0; step++) {
        int ns = select_best(cur, n_cur, V, N, sel), n_next;
        rc = grow(m, prefix, cur, sel, ns, steps, o, next, &n_next, &fin, step == steps - 1);
        free_beams(cur, n_cur);
        beam *t = cur;
        cur = next, next = t, n_cur = rc ? 0 : n_next;
    }
    for (size_t i = 0; !rc && i < fin.best.n; i++) {
        rc = tf_ids_push(out, fin.best.v[i]);
        if (on_token && on_token(user, fin.best.v[i])) break;
    }
    if (score) *score = fin.best_score;
    free_beams(cur, n_cur);
    tf_ids_free(&fin.best);
    tf_kv_cache_free(prefix);
    free(cur), free(next), free(sel), free(logits);
    return rc;
}

int tf_gpt_generate(const tf_gpt *m, const int32_t *prompt, int n_prompt, const tf_generate_opts *o,
                    tf_token_fn on_token, void *user, tf_ids *out, double *score) {
    if (n_prompt < 1) return tf_set_error("generate: the prompt is empty (give at least one token)");
    if (n_prompt > m->cfg.context)
        return tf_set_error("generate: the prompt has %d tokens, more than the context of %d", n_prompt, m->cfg.context);
    if (o->max_tokens < 0 || o->beam < 0 || !(o->top_p > 0 && o->top_p <= 1) || !(o->repetition_penalty > 0))
        return tf_set_error("generate: max_tokens >= 0, beam >= 0, top_p in (0,1], repetition_penalty > 0");
    for (int i = 0; i < n_prompt; i++)
        if (prompt[i] < 0 || prompt[i] >= m->cfg.vocab_size)
            return tf_set_error("generate: prompt token %d outside the vocabulary", prompt[i]);
    return o->beam >= 1 ? generate_beam(m, prompt, n_prompt, o, on_token, user, out, score)
                       : generate_sampled(m, prompt, n_prompt, o, on_token, user, out, score);
}
