/* Sampling (temperature, top-k, top-p, repetition penalty; greedy at
 * temperature 0) one token at a time: a sequence (tf_gen_seq) is fed, then
 * chooses its next id, step by step. tf_generate's sampling is a loop over one
 * sequence; a server steps many together (tf_gen_seqs_step), each joining and
 * leaving at any step, and each gets what tf_generate gives it alone. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../ops/ops_internal.h"
#include "gen_internal.h"

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

/* ---------------------------------------------------------------- a sequence */

struct tf_gen_seq {
    tf_decoder *d;       /* borrowed */
    tf_generate_opts o;
    tf_ids history;      /* the prompt, then the ids chosen */
    size_t n_prompt;
    /* logits: the step's (sample() penalises them in place); lp: a copy as the model gave them;
     * ex: their exponentials (log-sum-exp scratch); order, p: sample()'s scratch */
    float *logits, *lp, *ex, lse;
    ranked *order;
    double *p, logprob, total;
    int steps;           /* ids chosen */
    int fed, done;
    int primed;          /* fed its last id in a step together (feed_rows), its id not chosen yet */
    int32_t id;          /* the last step's id, -1: none */
};

/* A sequence over a fresh one-row decoder (tf_generate has checked the arguments). */
static tf_gen_seq *seq_make(tf_decoder *d, const int32_t *prompt, int n_prompt, const tf_generate_opts *o) {
    size_t V = (size_t)d->vocab_size;
    tf_gen_seq *s = calloc(1, sizeof *s);
    if (s) *s = (tf_gen_seq){.d = d, .o = *o, .n_prompt = (size_t)n_prompt, .id = -1};
    if (!s || !(s->logits = malloc(V * sizeof *s->logits)) || !(s->lp = malloc(V * sizeof *s->lp)) ||
        !(s->ex = malloc(V * sizeof *s->ex)) || !(s->order = malloc(V * sizeof *s->order)) ||
        !(s->p = malloc(V * sizeof *s->p)))
        return tf_gen_seq_free(s), tf_set_error("generate: out of memory"), NULL;
    for (int i = 0; i < n_prompt; i++)
        if (tf_ids_push(&s->history, prompt[i])) return tf_gen_seq_free(s), tf_set_error("generate: out of memory"), NULL;
    return s;
}

tf_gen_seq *tf_gen_seq_new(tf_decoder *d, const int32_t *prompt, int n_prompt, const tf_generate_opts *o) {
    if (o->beam != 0) return tf_set_error("generate: a sequence stepped one token at a time samples (beam 0, not %d)", o->beam), NULL;
    if (tf_gen_check_call(d, prompt, n_prompt, o)) return NULL;
    return seq_make(d, prompt, n_prompt, o);
}

void tf_gen_seq_free(tf_gen_seq *s) {
    if (!s) return;
    tf_ids_free(&s->history);
    free(s->logits), free(s->lp), free(s->ex), free(s->order), free(s->p);
    free(s);
}

/* Past the capacity: a window of the latest 3/4 of it, the newest token last;
 * 1 when the decoder cannot slide (the sequence ends at its capacity). */
static int slide(tf_decoder *d, const tf_ids *history, float *logits) {
    if (!d->can_slide) return 1;
    int keep = d->capacity * 3 / 4 > 0 ? d->capacity * 3 / 4 : 1;
    tf_decoder_reset(d);
    return tf_decoder_step(d, history->v + history->n - keep, keep, logits) ? -1 : 0;
}

/* The decoder fed what it has not seen: the prompt first, then the last id. */
static int seq_feed(tf_gen_seq *s) {
    if (!s->fed) return s->fed = 1, tf_decoder_step(s->d, s->history.v, (int)s->n_prompt, s->logits);
    if (s->d->len < s->d->capacity) return tf_decoder_step(s->d, &s->id, 1, s->logits);
    int rc = slide(s->d, &s->history, s->logits);
    if (rc > 0) s->done = 1, s->id = -1;
    return rc < 0 ? -1 : 0;
}

/* The next id from the fed step's logits. */
static int seq_choose(tf_gen_seq *s) {
    const tf_generate_opts *o = &s->o;
    int32_t V = s->d->vocab_size;
    if (s->steps >= o->max_tokens) return s->done = 1, s->id = -1, 0;
    memcpy(s->lp, s->logits, (size_t)V * sizeof *s->lp);
    s->lse = tf_log_sum_exp(s->ex, s->lp, V); /* the vector kernel's exp: 0.43 ms a token in libm's double exp */
    for (int i = 0; i < o->n_bad_ids; i++) s->logits[o->bad_ids[i]] = -INFINITY;
    int forced = o->forced_eos_id >= 0 && s->steps + 1 == o->max_tokens;
    uint64_t draw = o->seed * 0x9E3779B97F4A7C15ull + (uint64_t)s->steps;
    int32_t id = forced ? o->forced_eos_id : sample(s->logits, V, o, &s->history, draw, s->order, s->p);
    s->logprob = forced ? 0.0 : s->lp[id] - s->lse;
    s->total += s->logprob;
    if (tf_ids_push(&s->history, id)) return tf_set_error("generate: out of memory");
    s->id = id, s->steps++;
    if (id == o->eos_id || s->steps == o->max_tokens) s->done = 1;
    return 0;
}

/* The sequences whose next feed is their last id alone, room left, fed together
 * (tf_decoders_step): primed, each with its logits. Those from one that failed on are
 * left to step alone, in turn (where the failure is told). */
static void feed_rows(tf_gen_seq *const *seqs, int n) {
    tf_decoder *few_d[64], **d = n <= 64 ? few_d : malloc((size_t)n * sizeof *d);
    float *few_l[64], **logits = n <= 64 ? few_l : malloc((size_t)n * sizeof *logits);
    int32_t few_t[64], *tokens = n <= 64 ? few_t : malloc((size_t)n * sizeof *tokens);
    int few_a[64], *at = n <= 64 ? few_a : malloc((size_t)n * sizeof *at), k = 0;
    for (int i = 0; d && logits && tokens && at && i < n; i++) {
        const tf_gen_seq *s = seqs[i];
        if (!s->done && !s->primed && s->fed && s->d->len < s->d->capacity)
            d[k] = s->d, tokens[k] = s->id, logits[k] = s->logits, at[k++] = i;
    }
    int stepped = k; /* all, or on a failure those before the bad one (tf_decoders_step sets it) */
    if (k < 2 || tf_decoders_step(d, k, tokens, logits, &stepped)) stepped = k < 2 ? 0 : stepped;
    for (int j = 0; j < stepped; j++) seqs[at[j]]->primed = 1;
    if (d != few_d) free(d);
    if (logits != few_l) free(logits);
    if (tokens != few_t) free(tokens);
    if (at != few_a) free(at);
}

int tf_gen_seqs_step(tf_gen_seq *const *seqs, int n, int *bad) {
    /* the one-token feeds together (each row's logits what it computes alone), then each
     * sequence in turn: fed alone when it was not (a prompt, a slide), and its id chosen. A
     * sequence after a failed one stays primed: its next step chooses from these logits. */
    if (n > 1) feed_rows(seqs, n);
    for (int i = 0; i < n; i++) {
        tf_gen_seq *s = seqs[i];
        if (s->done) {
            s->id = -1;
            continue;
        }
        if ((!s->primed && seq_feed(s)) || (!s->done && seq_choose(s))) {
            if (bad) *bad = i;
            return -1;
        }
        s->primed = 0;
    }
    return 0;
}

int32_t tf_gen_seq_last(const tf_gen_seq *s, double *logprob) {
    if (logprob) *logprob = s->id >= 0 ? s->logprob : 0.0;
    return s->id;
}

const float *tf_gen_seq_logits(const tf_gen_seq *s, float *lse) {
    if (lse) *lse = s->lse;
    return s->id >= 0 ? s->lp : NULL;
}

int tf_gen_seq_done(const tf_gen_seq *s) { return s->done; }
void tf_gen_seq_end(tf_gen_seq *s) { s->done = 1; }
int tf_gen_seq_steps(const tf_gen_seq *s) { return s->steps; }
double tf_gen_seq_score(const tf_gen_seq *s) { return s->total; }

/* tf_generate's sampling: one sequence stepped until it ends. */
int tf_gen_sampled(tf_decoder *d, const tf_ids *prompt, const tf_generate_opts *o, tf_token_fn on_token, void *user,
                   tf_ids *out, double *score) {
    tf_gen_seq *s = seq_make(d, prompt->v, (int)prompt->n, o);
    int rc = s ? 0 : -1;
    while (!rc && !s->done) {
        if ((rc = tf_gen_seqs_step(&s, 1, NULL)) || s->id < 0) break;
        if ((rc = tf_ids_push(out, s->id))) break;
        if (on_token && on_token(user, s->id)) break;
    }
    if (score && s) *score = s->total;
    tf_gen_seq_free(s);
    return rc;
}
