/* Generation over the decoder interface: sampling (temperature, top-k,
 * top-p, repetition penalty; greedy at temperature 0) and beam search with a
 * length penalty. Nothing here knows which model is decoding. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../ops/ops_internal.h"
#include "gen_internal.h"

tf_generate_opts tf_generate_opts_default(void) {
    tf_generate_opts o = {100, 1.0f, 0, 1.0f, 1.0f, 1, 0, 1.0f, -1, TF_BEAM_TFORMER, -1, NULL, 0, 0};
    return o;
}

/* ---------------------------------------------------------------- the interface's checks */

int tf_decoder_step(tf_decoder *d, const int32_t *tokens, int n, float *logits) {
    if (n < 1) return tf_set_error("decoder: a step needs at least one token");
    if (n > d->capacity - d->len)
        return tf_set_error("decoder: %d more tokens exceed its capacity of %d (%d held)", n, d->capacity, d->len);
    for (int64_t i = 0; i < (int64_t)n * d->rows; i++)
        if (tokens[i] < 0 || tokens[i] >= d->vocab_size)
            return tf_set_error("decoder: token %d outside the vocabulary of %d", tokens[i], d->vocab_size);
    if (d->vt->step(d, tokens, n, logits)) return -1;
    d->len += n;
    return 0;
}

int tf_decoder_select(tf_decoder *d, const int *rows, int n) {
    if (!d->vt->select) return tf_set_error("decoder: it holds one row and cannot select");
    if (n < 1) return tf_set_error("decoder: select keeps at least one row");
    for (int i = 0; i < n; i++)
        if (rows[i] < 0 || rows[i] >= d->rows) return tf_set_error("decoder: row %d outside [0,%d)", rows[i], d->rows);
    if (d->vt->select(d, rows, n)) return -1;
    d->rows = n;
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
 * from `draw`. order (V) and p (V) are scratch. The logits are ranked as
 * they are (dividing by the temperature keeps their order) and each one's
 * weight is exp((l - l_max) / T) in double: l / T in float overflows to inf
 * for a small T (1e-38 and a logit of 4), and inf - inf made every weight NaN;
 * a logit the repetition penalty made infinite ties with the others there. */
static int32_t sample(float *logits, int32_t V, const tf_generate_opts *o, const tf_ids *seen, uint64_t draw,
                      ranked *order, double *p) {
    if (o->repetition_penalty != 1.0f) penalise(logits, seen, o->repetition_penalty);
    if (o->temperature <= 0.0f) return argmax(logits, V);
    for (int32_t i = 0; i < V; i++) order[i] = (ranked){logits[i], i};
    qsort(order, (size_t)V, sizeof *order, by_value_desc);
    int32_t keep = o->top_k > 0 && o->top_k < V ? o->top_k : V;
    double sum = 0;
    for (int32_t i = 0; i < keep; i++) { /* logits equal to the largest weigh 1, infinite ones too (a penalty 1e-38) */
        double gap = order[i].v == order[0].v ? 0.0 : (double)order[i].v - order[0].v;
        sum += (p[i] = exp(gap / o->temperature));
    }
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
    /* lp: a copy of the step's logits as the model gave them (sample()
     * penalises `logits` in place); ex: their exponentials (log-sum-exp scratch) */
    float *logits = malloc((size_t)V * sizeof *logits), *lp = malloc((size_t)V * sizeof *lp),
          *ex = malloc((size_t)V * sizeof *ex);
    ranked *order = malloc((size_t)V * sizeof *order);
    double *p = malloc((size_t)V * sizeof *p), total = 0;
    tf_ids history = {0};
    int rc = logits && lp && ex && order && p ? tf_decoder_step(d, prompt->v, (int)prompt->n, logits)
                                        : tf_set_error("generate: out of memory");
    for (size_t i = 0; !rc && i < prompt->n; i++) rc = tf_ids_push(&history, prompt->v[i]);
    for (int step = 0; !rc && step < o->max_tokens; step++) {
        memcpy(lp, logits, (size_t)V * sizeof *lp);
        float lse = tf_log_sum_exp(ex, lp, V); /* the vector kernel's exp: 0.43 ms a token in libm's double exp */
        for (int i = 0; i < o->n_bad_ids; i++) logits[o->bad_ids[i]] = -INFINITY;
        int forced = o->forced_eos_id >= 0 && step + 1 == o->max_tokens;
        uint64_t draw = o->seed * 0x9E3779B97F4A7C15ull + (uint64_t)step;
        int32_t id = forced ? o->forced_eos_id : sample(logits, V, o, &history, draw, order, p);
        total += forced ? 0.0 : lp[id] - lse;
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
    free(logits), free(lp), free(ex), free(order), free(p);
    return rc > 0 ? 0 : rc; /* 1: the decoder cannot slide, the sequence ends at its capacity */
}

int tf_gen_check_options(const tf_generate_opts *o) {
    /* a NaN or negative temperature, a NaN length penalty: no arithmetic would notice */
    if (o->max_tokens < 0 || o->beam < 0 || !(o->top_p > 0 && o->top_p <= 1) ||
        !(o->repetition_penalty > 0 && o->repetition_penalty < INFINITY) ||
        !(o->temperature >= 0 && o->temperature < INFINITY) || o->top_k < 0 || !isfinite(o->length_penalty) ||
        o->beam_stop < TF_BEAM_TFORMER || o->beam_stop > TF_BEAM_HF_NEVER)
        return tf_set_error("generate: max_tokens >= 0, beam >= 0, top_p in (0,1], repetition_penalty in (0,inf), "
                            "temperature in [0,inf), top_k >= 0, a finite length_penalty, beam_stop a tf_beam_stop "
                            "(got max_tokens %d, beam %d, top_p %g, repetition_penalty %g, temperature %g, top_k %d, "
                            "length_penalty %g, beam_stop %d)", o->max_tokens, o->beam, o->top_p, o->repetition_penalty,
                            o->temperature, o->top_k, o->length_penalty, (int)o->beam_stop);
    return 0;
}

int tf_gen_check_processors(const tf_generate_opts *o, int32_t V) {
    if (o->forced_eos_id < -1 || o->forced_eos_id >= V)
        return tf_set_error("generate: forced_eos_id %d outside the vocabulary of %d (-1: off)", o->forced_eos_id, V);
    if (o->n_bad_ids < 0 || (o->n_bad_ids > 0 && !o->bad_ids))
        return tf_set_error("generate: %d bad ids without a list", o->n_bad_ids);
    for (int i = 0; i < o->n_bad_ids; i++)
        if (o->bad_ids[i] < 0 || o->bad_ids[i] >= V)
            return tf_set_error("generate: bad id %d outside the vocabulary of %d", o->bad_ids[i], V);
    return 0;
}

int tf_generate(tf_decoder *d, const int32_t *prompt, int n_prompt, const tf_generate_opts *o, tf_token_fn on_token,
                void *user, tf_ids *out, double *score) {
    if (n_prompt < 1) return tf_set_error("generate: the prompt is empty (give at least one token)");
    if (d->rows != 1) return tf_set_error("generate: the decoder holds %d rows (tf_generate_rows searches them)", d->rows);
    /* the searches know only the prompt: a window slid past the capacity
     * would be read before the history's start, beam search would overrun */
    if (d->len != 0)
        return tf_set_error("generate: the decoder already holds %d positions: give a fresh one (tf_decoder_reset "
                            "forgets them) and the whole context as the prompt", d->len);
    if (n_prompt > d->capacity)
        return tf_set_error("generate: the prompt has %d tokens, more than the context of %d", n_prompt, d->capacity);
    if (o->beam > TF_GENERATE_MAX_BEAM) /* each hypothesis holds a decoder and its cache */
        return tf_set_error("generate: beam %d: at most %d hypotheses", o->beam, TF_GENERATE_MAX_BEAM);
    if (tf_gen_check_options(o)) return -1;
    for (int i = 0; i < n_prompt; i++)
        if (prompt[i] < 0 || prompt[i] >= d->vocab_size)
            return tf_set_error("generate: prompt token %d outside the vocabulary", prompt[i]);
    if (tf_gen_check_processors(o, d->vocab_size)) return -1;
    if (o->beam >= 1 && o->max_tokens > 0 && n_prompt >= d->capacity) /* 0 tokens would be silent */
        return tf_set_error("generate: the prompt's %d tokens fill the context of %d: beam search needs room for new "
                            "tokens (it does not slide a window); shorten the prompt", n_prompt, d->capacity);
    tf_ids p = {(int32_t *)prompt, (size_t)n_prompt, (size_t)n_prompt}; /* borrowed, never grown */
    return o->beam >= 1 ? tf_gen_beam(d, &p, o, on_token, user, out, score)
                        : generate_sampled(d, &p, o, on_token, user, out, score);
}
