/* Generation over the decoder interface: sampling (temperature, top-k,
 * top-p, repetition penalty; greedy at temperature 0) and beam search with a
 * length penalty. Nothing here knows which model is decoding. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../core/internal.h"

#define TF_BEAM_MAX TF_GENERATE_MAX_BEAM /* Hugging Face's beam search: its ended list is fixed-size */

tf_generate_opts tf_generate_opts_default(void) {
    tf_generate_opts o = {100, 1.0f, 0, 1.0f, 1.0f, 1, 0, 1.0f, -1, TF_BEAM_TFORMER};
    return o;
}

/* ---------------------------------------------------------------- the interface's checks */

int tf_decoder_step(tf_decoder *d, const int32_t *tokens, int n, float *logits) {
    if (n < 1) return tf_set_error("decoder: a step needs at least one token");
    if (n > d->capacity - d->len)
        return tf_set_error("decoder: %d more tokens exceed its capacity of %d (%d held)", n, d->capacity, d->len);
    for (int i = 0; i < n; i++)
        if (tokens[i] < 0 || tokens[i] >= d->vocab_size)
            return tf_set_error("decoder: token %d outside the vocabulary of %d", tokens[i], d->vocab_size);
    if (d->vt->step(d, tokens, n, logits)) return -1;
    d->len += n;
    return 0;
}

tf_decoder *tf_decoder_fork(const tf_decoder *d) {
    tf_decoder *f = d->vt->fork(d);
    if (f) f->len = d->len;
    return f;
}

void tf_decoder_reset(tf_decoder *d) {
    d->vt->reset(d);
    d->len = 0;
}

void tf_decoder_free(tf_decoder *d) {
    if (d) d->vt->free(d);
}

/* ---------------------------------------------------------------- sampling */

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

typedef struct {
    float v;
    int32_t i;
} ranked;

/* Larger value first, then the lower index. */
static int by_value_desc(const void *a, const void *b) {
    const ranked *x = a, *y = b;
    if (x->v != y->v) return x->v < y->v ? 1 : -1;
    return x->i - y->i;
}

/* CTRL's rule on each distinct token of the context. */
static void penalise(float *logits, const tf_ids *seen, float penalty) {
    for (size_t i = 0; i < seen->n; i++) {
        int32_t t = seen->v[i];
        size_t j = 0;
        while (j < i && seen->v[j] != t) j++;
        if (j == i) logits[t] = logits[t] > 0 ? logits[t] / penalty : logits[t] * penalty;
    }
}

/* One id from logits (V): penalty, temperature, top-k, top-p, then a draw
 * from `draw`. order (V) and p (V) are scratch. */
static int32_t sample(float *logits, int32_t V, const tf_generate_opts *o, const tf_ids *seen, uint64_t draw,
                      ranked *order, double *p) {
    if (o->repetition_penalty != 1.0f) penalise(logits, seen, o->repetition_penalty);
    if (o->temperature <= 0.0f) return argmax(logits, V);
    for (int32_t i = 0; i < V; i++) order[i] = (ranked){logits[i] / o->temperature, i};
    qsort(order, (size_t)V, sizeof *order, by_value_desc);
    int32_t keep = o->top_k > 0 && o->top_k < V ? o->top_k : V;
    double sum = 0;
    for (int32_t i = 0; i < keep; i++) sum += (p[i] = exp((double)order[i].v - order[0].v));
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
    for (int32_t i = 0; i < keep; i++)
        if ((u -= p[i]) < 0) return order[i].i;
    return order[keep - 1].i;
}

/* Past the capacity: a window of the latest 3/4 of it, the newest token last. */
static int slide(tf_decoder *d, const tf_ids *history, float *logits) {
    if (!d->can_slide) return 1;
    int keep = d->capacity * 3 / 4 > 0 ? d->capacity * 3 / 4 : 1;
    tf_decoder_reset(d);
    return tf_decoder_step(d, history->v + history->n - keep, keep, logits) ? -1 : 0;
}

static int generate_sampled(tf_decoder *d, const tf_ids *prompt, const tf_generate_opts *o, tf_token_fn on_token,
                            void *user, tf_ids *out, double *score) {
    int32_t V = d->vocab_size;
    float *logits = malloc((size_t)V * sizeof *logits), *lp = malloc((size_t)V * sizeof *lp);
    ranked *order = malloc((size_t)V * sizeof *order);
    double *p = malloc((size_t)V * sizeof *p), total = 0;
    tf_ids history = {0};
    int rc = logits && lp && order && p ? tf_decoder_step(d, prompt->v, (int)prompt->n, logits)
                                        : tf_set_error("generate: out of memory");
    for (size_t i = 0; !rc && i < prompt->n; i++) rc = tf_ids_push(&history, prompt->v[i]);
    for (int step = 0; !rc && step < o->max_tokens; step++) {
        memcpy(lp, logits, (size_t)V * sizeof *lp);
        log_softmax(lp, V);
        int32_t id = sample(logits, V, o, &history, o->seed * 0x9E3779B97F4A7C15ull + (uint64_t)step, order, p);
        total += lp[id];
        if ((rc = tf_ids_push(out, id) || tf_ids_push(&history, id))) break;
        if ((on_token && on_token(user, id)) || id == o->eos_id || step + 1 == o->max_tokens) break;
        if (d->len >= d->capacity) {
            if ((rc = slide(d, &history, logits)) != 0) break;
        } else {
            rc = tf_decoder_step(d, &id, 1, logits);
        }
    }
    if (score) *score = total;
    tf_ids_free(&history);
    free(logits), free(lp), free(order), free(p);
    return rc > 0 ? 0 : rc; /* 1: the decoder cannot slide, the sequence ends at its capacity */
}

/* ---------------------------------------------------------------- beam search */

typedef struct {
    tf_decoder *d; /* after toks */
    tf_ids toks;
    double score;  /* sum of log-probabilities */
    float *logp;   /* of the next token */
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
    for (int i = 0; i < n; i++) tf_decoder_free(bs[i].d), tf_ids_free(&bs[i].toks), free(bs[i].logp);
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

/* The children's decoders: a parent's first live child takes its decoder,
 * the others fork it (before any child steps). */
static int assign(beam *old, int n_old, const cand *sel, int ns, const int *live, tf_decoder **dec) {
    int *taken = calloc((size_t)n_old, sizeof *taken);
    if (!taken) return tf_set_error("generate: out of memory");
    for (int i = 0; i < ns; i++) {
        dec[i] = NULL;
        if (!live[i]) continue;
        int b = sel[i].b;
        dec[i] = taken[b] ? tf_decoder_fork(old[b].d) : old[b].d;
        if (!dec[i]) break;
        taken[b] = 1;
    }
    for (int i = 0; i < ns; i++)
        if (live[i] && !dec[i]) return free(taken), -1;
    for (int b = 0; b < n_old; b++)
        if (taken[b]) old[b].d = NULL; /* moved into a child */
    free(taken);
    return 0;
}

/* Children of the selected candidates: finished ones are scored, the rest
 * step. live and dec are scratch of ns entries. */
static int grow(beam *old, int n_old, const cand *sel, int ns, int32_t V, const tf_generate_opts *o, int last,
                int *live, tf_decoder **dec, beam *next, int *n_next, finished *fin) {
    for (int i = 0; i < ns; i++) live[i] = !last && sel[i].v != o->eos_id;
    if (assign(old, n_old, sel, ns, live, dec)) return -1;
    int rc = 0;
    *n_next = 0;
    for (int i = 0; i < ns; i++) {
        const beam *p = &old[sel[i].b];
        beam nb = {dec[i], {0}, sel[i].score, NULL};
        dec[i] = NULL;
        for (size_t t = 0; !rc && t < p->toks.n; t++) rc = tf_ids_push(&nb.toks, p->toks.v[t]);
        rc = rc || tf_ids_push(&nb.toks, sel[i].v);
        if (!rc && !live[i]) rc = finish(fin, &nb.toks, nb.score, o->length_penalty);
        else if (!rc && !(nb.logp = malloc((size_t)V * sizeof *nb.logp))) rc = tf_set_error("generate: out of memory");
        else if (!rc) rc = tf_decoder_step(nb.d, &sel[i].v, 1, nb.logp);
        if (!rc && live[i]) {
            log_softmax(nb.logp, V);
            next[(*n_next)++] = nb;
        } else {
            free_beams(&nb, 1);
        }
        if (rc) break;
    }
    for (int i = 0; i < ns; i++) tf_decoder_free(dec[i]); /* children not reached after an error */
    return rc ? -1 : 0;
}

static int generate_beam(tf_decoder *d, const tf_ids *prompt, const tf_generate_opts *o, tf_token_fn on_token,
                         void *user, tf_ids *out, double *score) {
    int32_t V = d->vocab_size;
    int N = o->beam, steps = o->max_tokens, n_cur = 0, rc;
    if (steps > d->capacity - (int)prompt->n) steps = d->capacity - (int)prompt->n;
    beam *cur = calloc((size_t)N, sizeof *cur), *next = calloc((size_t)N, sizeof *next);
    cand *sel = malloc((size_t)N * sizeof *sel);
    int *live = malloc((size_t)N * sizeof *live);
    tf_decoder **dec = calloc((size_t)N, sizeof *dec);
    finished fin = {{0}, 0, 0};
    rc = cur && next && sel && live && dec ? 0 : tf_set_error("generate: out of memory");
    if (!rc && steps > 0) { /* the first beam: the prompt alone, on a copy of d */
        cur[0].logp = malloc((size_t)V * sizeof *cur[0].logp);
        rc = cur[0].logp ? tf_decoder_step(d, prompt->v, (int)prompt->n, cur[0].logp) : -1;
        if (!rc && !(cur[0].d = tf_decoder_fork(d))) rc = -1;
        if (!rc) log_softmax(cur[0].logp, V);
        n_cur = 1;
    }
    for (int step = 0; !rc && step < steps && n_cur > 0; step++) {
        int ns = select_best(cur, n_cur, V, N, sel), n_next;
        rc = grow(cur, n_cur, sel, ns, V, o, step == steps - 1, live, dec, next, &n_next, &fin);
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
    free(cur), free(next), free(sel), free(live), free(dec);
    return rc;
}

/* ---------------------------------------------------------------- Hugging Face's beam search */

/* transformers' BeamHypotheses: the N best ended hypotheses in the order
 * added, score = sum / length^penalty; worst starts at 1e9 as theirs. */
typedef struct {
    int n, cap;
    double worst;
    double score[TF_BEAM_MAX + 1];
    tf_ids toks[TF_BEAM_MAX + 1];
} hf_hyps;

static int hyps_add(hf_hyps *h, const tf_ids *prefix, int32_t last, double sum, float penalty) {
    double s = sum / pow((double)(prefix->n + 1), penalty);
    if (h->n >= h->cap && !(s > h->worst)) return 0;
    tf_ids *t = &h->toks[h->n];
    t->n = 0;
    for (size_t i = 0; i < prefix->n; i++)
        if (tf_ids_push(t, prefix->v[i])) return -1;
    if (tf_ids_push(t, last)) return -1;
    h->score[h->n++] = s;
    if (h->n <= h->cap) {
        h->worst = s < h->worst ? s : h->worst;
        return 0;
    }
    int lo = 0, second = -1; /* Python's sorted((score, index)): the lowest goes, the next is the worst */
    for (int i = 1; i < h->n; i++)
        if (h->score[i] < h->score[lo]) lo = i;
    for (int i = 0; i < h->n; i++)
        if (i != lo && (second < 0 || h->score[i] < h->score[second])) second = i;
    h->worst = h->score[second];
    tf_ids gone = h->toks[lo];
    for (int i = lo; i < h->n - 1; i++) h->score[i] = h->score[i + 1], h->toks[i] = h->toks[i + 1];
    h->toks[--h->n] = gone; /* its buffer is reused */
    return 0;
}

/* BeamHypotheses.is_done: best is the best candidate's sum, len the generated length. */
static int hyps_done(const hf_hyps *h, const tf_generate_opts *o, double best, int len) {
    if (h->n < h->cap) return 0;
    if (o->beam_stop == TF_BEAM_HF_EARLY) return 1;
    if (o->beam_stop == TF_BEAM_HF_NEVER && o->length_penalty > 0) len = o->max_tokens;
    return h->worst >= best / pow((double)len, o->length_penalty);
}

/* One step's candidates (the 2N best, in order): an eos among the first N
 * ends its hypothesis; the first N others (kept, ns2 of them) live on. */
static int hf_select(const beam *cur, const cand *sel, int ns, const tf_generate_opts *o, hf_hyps *h, cand *keep,
                     int *n_keep) {
    int k = 0;
    for (int r = 0; r < ns && k < o->beam; r++) {
        if (sel[r].v != o->eos_id) keep[k++] = sel[r];
        else if (r < o->beam && hyps_add(h, &cur[sel[r].b].toks, sel[r].v, sel[r].score, o->length_penalty)) return -1;
    }
    *n_keep = k;
    return 0;
}

static int hf_beam_loop(tf_decoder *d, const tf_ids *prompt, const tf_generate_opts *o, int steps, hf_hyps *h) {
    int32_t V = d->vocab_size;
    int N = o->beam, n_cur = 1, rc = 0;
    beam *cur = calloc((size_t)N, sizeof *cur), *next = calloc((size_t)N, sizeof *next);
    cand *sel = malloc((size_t)2 * N * sizeof *sel), *keep = malloc((size_t)N * sizeof *keep);
    int *live = malloc((size_t)N * sizeof *live);
    tf_decoder **dec = calloc((size_t)N, sizeof *dec);
    finished unused = {{0}, 0, 0};
    if (!cur || !next || !sel || !keep || !live || !dec || !(cur[0].logp = malloc((size_t)V * sizeof *cur[0].logp)))
        rc = tf_set_error("generate: out of memory");
    if (!rc) rc = tf_decoder_step(d, prompt->v, (int)prompt->n, cur[0].logp);
    if (!rc && !(cur[0].d = tf_decoder_fork(d))) rc = -1;
    if (!rc) log_softmax(cur[0].logp, V);
    for (int step = 0; !rc && step < steps; step++) {
        int ns = select_best(cur, n_cur, V, 2 * N, sel), nk, n_next = 0;
        rc = hf_select(cur, sel, ns, o, h, keep, &nk);
        int done = !rc && ns > 0 && hyps_done(h, o, sel[0].score, step + 1);
        if (!rc && !done && step == steps - 1) /* at max_tokens the live beams join the ended */
            for (int i = 0; !rc && i < nk; i++) rc = hyps_add(h, &cur[keep[i].b].toks, keep[i].v, keep[i].score, o->length_penalty);
        if (!rc && !done && step < steps - 1 && nk > 0) /* no eos among keep: every child lives and steps */
            rc = grow(cur, n_cur, keep, nk, V, o, 0, live, dec, next, &n_next, &unused);
        free_beams(cur, n_cur);
        beam *t = cur;
        cur = next, next = t, n_cur = n_next;
        if (done || !n_cur) break;
    }
    free_beams(cur, n_cur);
    tf_ids_free(&unused.best);
    free(cur), free(next), free(sel), free(keep), free(live), free(dec);
    return rc;
}

static int generate_beam_hf(tf_decoder *d, const tf_ids *prompt, const tf_generate_opts *o, tf_token_fn on_token,
                            void *user, tf_ids *out, double *score) {
    int steps = o->max_tokens < d->capacity - (int)prompt->n ? o->max_tokens : d->capacity - (int)prompt->n;
    hf_hyps h;
    memset(&h, 0, sizeof h);
    h.cap = o->beam, h.worst = 1e9;
    int rc = steps > 0 ? hf_beam_loop(d, prompt, o, steps, &h) : 0, best = -1;
    for (int i = 0; i < h.n; i++) /* sorted by score, the last popped: the last of equal bests */
        if (best < 0 || h.score[i] >= h.score[best]) best = i;
    for (size_t i = 0; !rc && best >= 0 && i < h.toks[best].n; i++) {
        rc = tf_ids_push(out, h.toks[best].v[i]);
        if (on_token && on_token(user, h.toks[best].v[i])) break;
    }
    if (score) *score = best >= 0 ? h.score[best] : 0.0;
    for (int i = 0; i <= TF_BEAM_MAX; i++) tf_ids_free(&h.toks[i]);
    return rc;
}

int tf_generate(tf_decoder *d, const int32_t *prompt, int n_prompt, const tf_generate_opts *o, tf_token_fn on_token,
                void *user, tf_ids *out, double *score) {
    if (n_prompt < 1) return tf_set_error("generate: the prompt is empty (give at least one token)");
    if (n_prompt > d->capacity - d->len)
        return tf_set_error("generate: the prompt has %d tokens, more than the context of %d", n_prompt,
                            d->capacity - d->len);
    if (o->beam > TF_GENERATE_MAX_BEAM) /* each hypothesis holds a decoder and its cache */
        return tf_set_error("generate: beam %d: at most %d hypotheses", o->beam, TF_GENERATE_MAX_BEAM);
    if (o->max_tokens < 0 || o->beam < 0 || !(o->top_p > 0 && o->top_p <= 1) || !(o->repetition_penalty > 0) ||
        o->beam_stop < TF_BEAM_TFORMER || o->beam_stop > TF_BEAM_HF_NEVER)
        return tf_set_error("generate: max_tokens >= 0, beam >= 0, top_p in (0,1], repetition_penalty > 0, "
                            "beam_stop a tf_beam_stop");
    for (int i = 0; i < n_prompt; i++)
        if (prompt[i] < 0 || prompt[i] >= d->vocab_size)
            return tf_set_error("generate: prompt token %d outside the vocabulary", prompt[i]);
    if (o->beam >= 1 && o->max_tokens > 0 && n_prompt >= d->capacity - d->len) /* 0 tokens would be silent */
        return tf_set_error("generate: the prompt's %d tokens fill the context of %d: beam search needs room for new "
                            "tokens (it does not slide a window); shorten the prompt", n_prompt, d->capacity - d->len);
    tf_ids p = {(int32_t *)prompt, (size_t)n_prompt, (size_t)n_prompt}; /* borrowed, never grown */
    if (o->beam >= 1 && o->beam_stop != TF_BEAM_TFORMER) return generate_beam_hf(d, &p, o, on_token, user, out, score);
    return o->beam >= 1 ? generate_beam(d, &p, o, on_token, user, out, score)
                        : generate_sampled(d, &p, o, on_token, user, out, score);
}
