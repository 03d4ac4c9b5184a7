/* Beam search over the rows of a decoder: every sequence's live hypotheses
 * are rows, stepped together in one call; after each step the rows are
 * re-selected (children of the chosen candidates, ended ones dropped). A
 * decoder that cannot select (one row) is driven through forks instead, one
 * decoder per row. Two rules end hypotheses (generate.h, tf_beam_stop):
 * tformer's (the beam narrows as hypotheses end) and transformers' 4.x
 * BeamSearchScorer (N live beams refilled from the 2N best candidates). */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "../ops/ops_internal.h"
#include "gen_internal.h"

#define TF_BEAM_MAX TF_GENERATE_MAX_BEAM /* Hugging Face's ended list is fixed-size */

/* ---------------------------------------------------------------- rows: one decoder, or one decoder per row */

typedef struct {
    tf_decoder *d;    /* the decoder (it selects), or NULL */
    tf_decoder **one; /* else one single-row decoder per row */
    int n, cap;
} rowset;

/* The rows' logits (rows,V) after one token each: where the decoder computed them when it
 * keeps them (no copy of rows x V floats a step), else written to logits. NULL: an error. */
static const float *rows_step(rowset *r, const int32_t *tokens, float *logits) {
    if (r->d && r->d->vt->logits) return tf_decoder_step_view(r->d, tokens, 1);
    if (r->d) return tf_decoder_step(r->d, tokens, 1, logits) ? NULL : logits;
    /* the forks together (tf_decoders_step: one forward over their rows where the decoders
     * can, a GPT's; each row's logits those of its step alone): one pass over the weights a
     * step rather than one a row */
    int32_t V = r->one[0]->vocab_size;
    float *few[16], **out = r->n <= 16 ? few : malloc((size_t)r->n * sizeof *out);
    if (!out) return tf_set_error("generate: out of memory"), NULL;
    for (int i = 0; i < r->n; i++) out[i] = logits + (size_t)i * (size_t)V;
    int rc = tf_decoders_step(r->one, r->n, tokens, out, NULL);
    if (out != few) free(out);
    return rc ? NULL : logits;
}

/* Row i becomes old row rows[i]: a parent's first child takes its decoder,
 * the others fork it (before any child steps); parents without children go. */
static int rows_select(rowset *r, const int *rows, int n) {
    if (r->d) {
        if (tf_decoder_select(r->d, rows, n)) return -1;
        r->n = n;
        return 0;
    }
    tf_decoder **next = calloc((size_t)n, sizeof *next);
    char *taken = calloc((size_t)r->n, 1);
    if (!next || !taken) return free(next), free(taken), tf_set_error("generate: out of memory");
    int rc = 0;
    for (int i = 0; i < n; i++) {
        next[i] = taken[rows[i]] ? tf_decoder_fork(r->one[rows[i]]) : r->one[rows[i]];
        if (!next[i]) rc = -1; /* rows_free skips the hole */
        taken[rows[i]] = 1;
    }
    for (int i = 0; i < r->n; i++)
        if (!taken[i]) tf_decoder_free(r->one[i]);
    free(taken), free(r->one);
    r->one = next, r->n = n;
    return rc;
}

static void rows_free(rowset *r) {
    for (int i = 0; r->one && i < r->n; i++) tf_decoder_free(r->one[i]);
    free(r->one);
}

/* ---------------------------------------------------------------- one sequence's search */

typedef struct {
    tf_ids toks;  /* generated so far */
    double score; /* sum of log-probabilities */
    int row;      /* its row: logp = logits + row * V */
} hyp;

typedef struct {
    double score;
    int b;     /* the hypothesis (index in cur) */
    int32_t v; /* the token */
} cand;

/* transformers' BeamHypotheses: the N best ended in the order added, score = sum / length^penalty. */
typedef struct {
    int n, cap;
    double worst;
    double score[TF_BEAM_MAX + 1];
    tf_ids toks[TF_BEAM_MAX + 1];
} hf_hyps;

typedef struct {
    hyp *cur, *next;
    int n_cur, n_next;
    int steps, done;
    tf_ids best;       /* tformer's rule: the best ended so far */
    double best_score;
    int have;
    hf_hyps *h;        /* transformers' rule */
} seq;

/* cand x ranks before y: higher score, then lower hypothesis, then lower token. */
static int cand_before(cand x, cand y) {
    if (x.score != y.score) return x.score > y.score;
    return x.b != y.b ? x.b < y.b : x.v < y.v;
}

/* transformers' logits processors on token v's log-probability lp, in the
 * order of 4.36's _get_logits_processor: a token of the sequence (seen:
 * the prompt and the hypothesis' ids) has lp * repetition_penalty
 * (RepetitionPenaltyLogitsProcessor on log-probabilities, all <= 0: a
 * penalty > 1 lowers it, < 1 raises it; in float, as there); a bad id
 * -inf; at the last step every token but forced_eos_id -inf, that one 0. */
static double processed(const tf_generate_opts *o, int last, int32_t v, double lp, int seen) {
    if (seen) lp = (double)((float)lp * o->repetition_penalty);
    for (int i = 0; i < o->n_bad_ids; i++)
        if (o->bad_ids[i] == v) lp = -INFINITY;
    if (last && o->forced_eos_id >= 0) lp = v == o->forced_eos_id ? 0.0 : -INFINITY;
    return lp;
}

/* Insert c into best[0..*k) (sorted, at most n kept) if it ranks there. */
static void insert(cand *best, int *k, int n, cand c) {
    if (*k == n && !cand_before(c, best[n - 1])) return;
    int i = *k < n ? (*k)++ : n - 1;
    while (i > 0 && cand_before(c, best[i - 1])) best[i] = best[i - 1], i--;
    best[i] = c;
}

/* Each row's log-sum-exp and the largest logit of each block of LSE_BLOCK
 * tokens (rows, ceil(V / LSE_BLOCK)), found in one pass (lse_rows); the
 * prompt, and scratch marks of the tokens a hypothesis has seen (V) and of
 * the blocks holding one (ceil(V / LSE_BLOCK)), all zero between calls. */
enum { LSE_BLOCK = 64 };
typedef struct {
    const float *lse, *bmax;
    const int32_t *prompt;
    int n_prompt;
    unsigned char *seen, *seen_block;
} row_stats;

/* Mark (on) or clear the tokens of the prompt and of hypothesis h in st's scratch. */
static void mark_seen(const row_stats *st, const hyp *h, unsigned char on) {
    for (int i = 0; i < st->n_prompt; i++)
        st->seen[st->prompt[i]] = on, st->seen_block[st->prompt[i] / LSE_BLOCK] = on;
    for (size_t i = 0; i < h->toks.n; i++)
        st->seen[h->toks.v[i]] = on, st->seen_block[h->toks.v[i] / LSE_BLOCK] = on;
}

/* The n best candidates over every live hypothesis and token (insertion
 * into a sorted list of n); a token's log-probability is its logit minus
 * its row's log-sum-exp, then processed (the last step is `last`).
 * Unprocessed, a candidate's score score + (lp[v] - l) grows with lp[v] and
 * ties rank the earlier (b,v) first, so once n are held a block of tokens
 * whose largest logit does not beat the n-th is skipped whole, where
 * processing cannot raise a score: not at a forced last step (the forced
 * token's becomes 0), nor, under a repetition penalty below 1, in a block
 * holding a token of the sequence (its score is multiplied towards 0). */
/* renormalize: the log-sum-exp of hypothesis row lp's processed log-probabilities
 * (l its logits' log-sum-exp), which LogitNormalization subtracts from each; 0 when
 * processing changed nothing. In double, from the largest: -inf rows (every token
 * banned) give -inf, which leaves the hypothesis' candidates at -inf. */
static double processed_lse(const tf_generate_opts *o, int last, const float *lp, float l, int32_t V,
                            const row_stats *st, int penalty) {
    double most = -INFINITY, sum = 0.0;
    for (int32_t v = 0; v < V; v++) {
        double x = processed(o, last, v, lp[v] - l, penalty && st->seen[v]);
        if (x > most) sum = sum * exp(most - x) + 1.0, most = x;
        else if (x > -INFINITY) sum += exp(x - most);
    }
    return most == -INFINITY ? -INFINITY : most + log(sum);
}

static int select_best(const seq *s, const float *logits, const row_stats *st, int32_t V, int n, cand *best,
                       const tf_generate_opts *o, int last) {
    int forced = last && o->forced_eos_id >= 0, penalty = o->repetition_penalty != 1.0f;
    int plain = !o->n_bad_ids && !forced && !penalty, nb = (V + LSE_BLOCK - 1) / LSE_BLOCK, k = 0;
    for (int b = 0; b < s->n_cur; b++) {
        const float *lp = logits + (size_t)s->cur[b].row * (size_t)V, l = st->lse[s->cur[b].row];
        const float *bmax = st->bmax + (size_t)s->cur[b].row * (size_t)nb;
        if (penalty) mark_seen(st, &s->cur[b], 1);
        /* renormalized, every candidate of the row moves by -shift: the skip bound moves with it */
        double shift = o->renormalize && !plain ? processed_lse(o, last, lp, l, V, st, penalty) : 0.0;
        double score = s->cur[b].score - (shift == -INFINITY ? 0.0 : shift);
        for (int32_t v0 = 0; v0 < V; v0 += LSE_BLOCK) {
            int32_t v1 = V - v0 < LSE_BLOCK ? V : v0 + LSE_BLOCK;
            int lowers = !forced && !(o->repetition_penalty < 1.0f && st->seen_block[v0 / LSE_BLOCK]);
            if (lowers && k == n && !(score + (bmax[v0 / LSE_BLOCK] - l) > best[n - 1].score)) continue;
            for (int32_t v = v0; v < v1; v++)
                insert(best, &k, n,
                       (cand){score + (plain ? lp[v] - l : processed(o, last, v, lp[v] - l, penalty && st->seen[v])),
                              b, v});
        }
        if (penalty) mark_seen(st, &s->cur[b], 0);
    }
    return k;
}

static int copy_ids(tf_ids *to, const tf_ids *from, int32_t last) {
    to->n = 0;
    for (size_t i = 0; i < from->n; i++)
        if (tf_ids_push(to, from->v[i])) return -1;
    return last >= 0 ? tf_ids_push(to, last) : 0;
}

/* tformer's rule: an ended hypothesis replaces the best only when strictly better. */
static int tformer_finish(seq *s, const tf_ids *prefix, int32_t last, double score, float alpha) {
    double v = score / pow((double)(prefix->n + 1), alpha);
    if (s->have && !(v > s->best_score)) return 0;
    s->best_score = v, s->have = 1;
    return copy_ids(&s->best, prefix, last);
}

static int hyps_add(hf_hyps *h, const tf_ids *prefix, int32_t last, double sum, float penalty) {
    double v = sum / pow((double)(prefix->n + 1), penalty);
    if (h->n >= h->cap && !(v > h->worst)) return 0;
    if (copy_ids(&h->toks[h->n], prefix, last)) return -1;
    h->score[h->n++] = v;
    if (h->n <= h->cap) {
        h->worst = v < h->worst ? v : h->worst;
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

/* A live child of candidate c: appended to s->next (its row set later). */
static int child(seq *s, const cand *c) {
    hyp *n = &s->next[s->n_next];
    if (copy_ids(&n->toks, &s->cur[c->b].toks, c->v)) return -1;
    n->score = c->score, n->row = s->cur[c->b].row; /* the parent's row until selected */
    s->n_next++;
    return 0;
}

/* tformer's rule: the N best candidates; those that end (eos, or the last step) are scored. */
static int step_tformer(seq *s, const float *logp, const row_stats *st, int32_t V, const tf_generate_opts *o, int step,
                        cand *sel) {
    int ns = select_best(s, logp, st, V, o->beam, sel, o, step == s->steps - 1), rc = 0;
    for (int i = 0; !rc && i < ns; i++)
        rc = step == s->steps - 1 || sel[i].v == o->eos_id
                 ? tformer_finish(s, &s->cur[sel[i].b].toks, sel[i].v, sel[i].score, o->length_penalty)
                 : child(s, &sel[i]);
    return rc;
}

/* transformers' rule: of the 2N best, an eos among the first N ends its
 * hypothesis; the first N others live on, or join the ended at the last step. */
static int step_hf(seq *s, const float *logp, const row_stats *st, int32_t V, const tf_generate_opts *o, int step,
                   cand *sel) {
    int N = o->beam, ns = select_best(s, logp, st, V, 2 * N, sel, o, step == s->steps - 1), k = 0, rc = 0,
        keep[2 * TF_BEAM_MAX];
    for (int r = 0; !rc && r < ns && k < N; r++) {
        if (sel[r].v != o->eos_id) keep[k++] = r;
        else if (r < N) rc = hyps_add(s->h, &s->cur[sel[r].b].toks, sel[r].v, sel[r].score, o->length_penalty);
    }
    s->done = !rc && ns > 0 && hyps_done(s->h, o, sel[0].score, step + 1);
    for (int i = 0; !rc && !s->done && i < k; i++)
        rc = step == s->steps - 1 ? hyps_add(s->h, &s->cur[sel[keep[i]].b].toks, sel[keep[i]].v, sel[keep[i]].score,
                                             o->length_penalty)
                                  : child(s, &sel[keep[i]]);
    return rc;
}

/* ---------------------------------------------------------------- the search */

typedef struct {
    seq *s;
    int n_seq;
    int32_t V;
    float *logp;    /* (rows,V): room for the logits */
    size_t logp_room;
    const float *x; /* (rows,V): this round's logits, in logp or the decoder's own */
    float *lse;     /* (rows): their log-sum-exp */
    float *bmax;    /* (rows, ceil(V / LSE_BLOCK)): their blocks' largest logits */
    float *scratch; /* (nt,V): lse_rows' exponentials, one row per thread */
    int nt;
    const int32_t *prompt; /* (n_prompt): every row's, seen by the repetition penalty */
    int n_prompt;
    unsigned char *seen, *seen_block; /* (V), (ceil(V / LSE_BLOCK)): select_best's marks, zero between calls */
    int *parents;   /* (rows) */
    char *taken;    /* (rows): place_children's rows given */
    int *placed;    /* (rows): place_children's row of each child, in order */
    int32_t *toks;  /* (rows) */
    cand *sel;      /* (2N) */
    int logits_only; /* greedy without scores: the largest logit is the largest log-probability */
} search;

/* Each row's log-sum-exp, which turns logits into log-probabilities; 0 when
 * no choice depends on it (one hypothesis a sequence, no score wanted). */
static void lse_rows(search *z, int rows) {
    int nb = (z->V + LSE_BLOCK - 1) / LSE_BLOCK;
    /* rows in parallel (each its own; serial, a tenth of beam search's time on 2 threads) */
#pragma omp parallel for schedule(static) num_threads(z->nt) if (z->nt > 1 && rows > 1 && (int64_t)rows * z->V >= (1 << 16) && tf_threads_free() > 1)
    for (int r = 0; r < rows; r++) {
        int tid = 0;
#ifdef _OPENMP
        tid = omp_get_thread_num();
#endif
        const float *x = z->x + (size_t)r * (size_t)z->V;
        float mx = tf_block_max_f32(z->bmax + (size_t)r * (size_t)nb, x, z->V, LSE_BLOCK);
        z->lse[r] = z->logits_only ? 0.0f : tf_log_sum_exp_at(z->scratch + (size_t)tid * (size_t)z->V, x, z->V, mx);
    }
}

/* The n children (s->next, their parents' rows in .row) get rows [0,n): a
 * parent's first child keeps its parent's row where it can, the others
 * take the rows left free, in order. Rows are where a hypothesis' state
 * lives, not its rank (candidates rank by hypothesis index), so the choice
 * changes no result; it lets a decoder's select move only the rows that
 * change hands, in place: a row a child moves into had no child of its own. */
static void place_children(search *z, int n) {
    memset(z->taken, 0, (size_t)n);
    int k = 0, free_row = 0;
    for (int i = 0; i < z->n_seq; i++) /* first children on their parents' rows */
        for (int c = 0; c < z->s[i].n_next; c++, k++) {
            int p = z->s[i].next[c].row;
            z->placed[k] = p < n && !z->taken[p] ? p : -1;
            if (z->placed[k] >= 0) z->taken[p] = 1;
        }
    k = 0;
    for (int i = 0; i < z->n_seq; i++) /* the others on the rows left free */
        for (int c = 0; c < z->s[i].n_next; c++, k++) {
            hyp *h = &z->s[i].next[c];
            if (z->placed[k] < 0) {
                while (z->taken[free_row]) free_row++;
                z->taken[free_row] = 1, z->placed[k] = free_row;
            }
            int row = z->placed[k];
            z->parents[row] = h->row, z->toks[row] = h->toks.v[h->toks.n - 1], h->row = row;
        }
}

/* One round: every active sequence chooses; the children's rows are selected and stepped. */
static int round_once(search *z, rowset *r, const tf_generate_opts *o, int step, int *any) {
    int n = 0, rc = 0;
    for (int i = 0; !rc && i < z->n_seq; i++) {
        seq *s = &z->s[i];
        s->n_next = 0;
        if (s->done || !s->n_cur || step >= s->steps) continue;
        row_stats st = {z->lse, z->bmax, z->prompt, z->n_prompt, z->seen, z->seen_block};
        rc = o->beam_stop == TF_BEAM_TFORMER ? step_tformer(s, z->x, &st, z->V, o, step, z->sel)
                                             : step_hf(s, z->x, &st, z->V, o, step, z->sel);
        n += s->n_next;
    }
    if (!rc) place_children(z, n);
    for (int i = 0; !rc && i < z->n_seq; i++) { /* next becomes cur (buffers swapped, reused) */
        seq *s = &z->s[i];
        hyp *t = s->cur;
        s->cur = s->next, s->next = t, s->n_cur = s->n_next;
    }
    *any = n > 0;
    if (rc || !n) return rc;
    int same = n == r->n; /* every row goes on as itself (greedy, none ended): nothing to move */
    for (int i = 0; same && i < n; i++) same = z->parents[i] == i;
    if ((!same && rows_select(r, z->parents, n)) || !(z->x = rows_step(r, z->toks, z->logp))) return -1;
    lse_rows(z, n);
    return 0;
}

static int search_alloc(search *z, int n_seq, int32_t V, const tf_generate_opts *o) {
    size_t rows = (size_t)n_seq * (size_t)(o->beam > 1 ? o->beam : 1), n = 1;
    z->n_seq = n_seq, z->V = V, z->nt = 1;
#ifdef _OPENMP
    z->nt = omp_get_max_threads();
#endif
    z->s = calloc((size_t)n_seq, sizeof *z->s);
    if (!tf_mul_size(rows, (size_t)V * sizeof(float), &n) || !z->s || !(z->logp = tf_buf_take(n, &z->logp_room)) ||
        !(z->parents = malloc(rows * sizeof *z->parents)) || !(z->taken = malloc(rows)) ||
        !(z->placed = malloc(rows * sizeof *z->placed)) || !(z->toks = malloc(rows * sizeof *z->toks)) ||
        !(z->lse = malloc(rows * sizeof *z->lse)) ||
        !(z->bmax = malloc(rows * (size_t)((V + LSE_BLOCK - 1) / LSE_BLOCK) * sizeof *z->bmax)) ||
        !(z->scratch = malloc((size_t)z->nt * (size_t)V * sizeof *z->scratch)) || !(z->seen = calloc((size_t)V, 1)) ||
        !(z->seen_block = calloc((size_t)(V + LSE_BLOCK - 1) / LSE_BLOCK, 1)) ||
        !(z->sel = malloc((size_t)2 * (size_t)o->beam * sizeof *z->sel)))
        return tf_set_error("generate: out of memory for a beam of %d over %d sequences", o->beam, n_seq);
    for (int i = 0; i < n_seq; i++) {
        seq *s = &z->s[i];
        s->cur = calloc((size_t)o->beam, sizeof *s->cur), s->next = calloc((size_t)o->beam, sizeof *s->next);
        if (o->beam_stop != TF_BEAM_TFORMER && (s->h = calloc(1, sizeof *s->h))) s->h->cap = o->beam, s->h->worst = 1e9;
        if (!s->cur || !s->next || (o->beam_stop != TF_BEAM_TFORMER && !s->h)) return tf_set_error("generate: out of memory");
    }
    return 0;
}

static void search_free(search *z, int beam) {
    for (int i = 0; z->s && i < z->n_seq; i++) {
        seq *s = &z->s[i];
        for (int b = 0; b < beam; b++) {
            if (s->cur) tf_ids_free(&s->cur[b].toks);
            if (s->next) tf_ids_free(&s->next[b].toks);
        }
        for (int k = 0; s->h && k <= TF_BEAM_MAX; k++) tf_ids_free(&s->h->toks[k]);
        tf_ids_free(&s->best), free(s->cur), free(s->next), free(s->h);
    }
    tf_buf_give(z->logp, z->logp_room);
    free(z->s), free(z->lse), free(z->bmax), free(z->scratch), free(z->seen), free(z->seen_block), free(z->parents),
        free(z->taken), free(z->placed), free(z->toks), free(z->sel);
}

/* The result of sequence s: tformer's best ended, or transformers' best
 * (sorted by score, the last popped: the last of equal bests). */
static int result(const seq *s, const tf_generate_opts *o, tf_ids *out, double *score) {
    const tf_ids *t = &s->best;
    double v = s->best_score;
    if (o->beam_stop != TF_BEAM_TFORMER) {
        int best = -1;
        for (int i = 0; i < s->h->n; i++)
            if (best < 0 || s->h->score[i] >= s->h->score[best]) best = i;
        t = best >= 0 ? &s->h->toks[best] : NULL, v = best >= 0 ? s->h->score[best] : 0.0;
    }
    for (size_t i = 0; t && i < t->n; i++)
        if (tf_ids_push(out, t->v[i])) return -1;
    if (score) *score = v;
    return 0;
}

/* The search over r's rows after the prompt (logits of every row in z->logp). */
static int run(search *z, rowset *r, const tf_generate_opts *o, const int *steps, tf_ids *outs, double *scores) {
    int rc = 0, any = 1, most = 0;
    /* one live hypothesis that ends at its first eos: the rules that look at
     * scores (transformers' early_stopping=False, "never") still need them,
     * and so does the repetition penalty (it multiplies log-probabilities) */
    z->logits_only = o->beam == 1 && !scores && (o->beam_stop == TF_BEAM_TFORMER || o->beam_stop == TF_BEAM_HF_EARLY) &&
                     o->repetition_penalty == 1.0f;
    for (int i = 0; i < z->n_seq; i++) {
        seq *s = &z->s[i];
        s->steps = steps ? steps[i] : o->max_tokens;
        s->n_cur = s->steps > 0, s->cur[0].row = i, s->cur[0].score = 0, s->cur[0].toks.n = 0;
        most = s->steps > most ? s->steps : most;
    }
    z->x = z->logp; /* the prompt's step wrote there */
    lse_rows(z, z->n_seq);
    for (int step = 0; !rc && any && step < most; step++) rc = round_once(z, r, o, step, &any);
    for (int i = 0; !rc && i < z->n_seq; i++) rc = result(&z->s[i], o, &outs[i], scores ? &scores[i] : NULL);
    return rc;
}

/* The prompt fed to every row of d; the room left bounds each row's steps. */
static int prompt_rows(tf_decoder *d, const int32_t *prompt, int n_prompt, float *logits) {
    int32_t *all = malloc((size_t)d->rows * (size_t)n_prompt * sizeof *all);
    if (!all) return tf_set_error("generate: out of memory");
    for (int i = 0; i < d->rows; i++) memcpy(all + (size_t)i * (size_t)n_prompt, prompt, (size_t)n_prompt * sizeof *all);
    int rc = tf_decoder_step(d, all, n_prompt, logits);
    free(all);
    return rc;
}

int tf_generate_rows(tf_decoder *d, const int32_t *prompt, int n_prompt, const tf_generate_opts *o,
                     const int *max_tokens, tf_ids *outs, double *scores) {
    if (!d->vt->select) return tf_set_error("generate: this decoder holds one row (use tf_generate)");
    if (o->beam < 1 || o->beam > TF_BEAM_MAX) return tf_set_error("generate: rows need a beam of 1 to %d", TF_BEAM_MAX);
    if (n_prompt < 1 || n_prompt >= d->capacity - d->len)
        return tf_set_error("generate: a prompt of %d tokens in a context of %d", n_prompt, d->capacity - d->len);
    if (tf_gen_check_options(o) || tf_gen_check_processors(o, d->vocab_size)) return -1;
    search z = {0};
    int n = d->rows, room = d->capacity - d->len - n_prompt, rc = search_alloc(&z, n, d->vocab_size, o);
    int *steps = rc ? NULL : malloc((size_t)n * sizeof *steps);
    if (!rc && !steps) rc = tf_set_error("generate: out of memory");
    for (int i = 0; !rc && i < n; i++) {
        int want = max_tokens ? max_tokens[i] : o->max_tokens;
        steps[i] = want < room ? want : room;
    }
    rowset r = {d, NULL, n, n};
    z.prompt = prompt, z.n_prompt = n_prompt;
    if (!rc) rc = prompt_rows(d, prompt, n_prompt, z.logp) || run(&z, &r, o, steps, outs, scores);
    free(steps);
    search_free(&z, o->beam);
    return rc ? -1 : 0;
}

int tf_gen_beam(tf_decoder *d, const tf_ids *prompt, const tf_generate_opts *o, tf_token_fn on_token, void *user,
                tf_ids *out, double *score) {
    int steps = o->max_tokens < d->capacity - (int)prompt->n ? o->max_tokens : d->capacity - (int)prompt->n;
    search z = {0};
    rowset r = {d->vt->select ? d : NULL, NULL, 1, 1};
    tf_ids best = {0};
    int rc = search_alloc(&z, 1, d->vocab_size, o) || tf_decoder_step(d, prompt->v, (int)prompt->n, z.logp);
    if (!rc && !r.d && !(r.one = malloc(sizeof *r.one))) rc = tf_set_error("generate: out of memory");
    if (!rc && !r.d && !(r.one[0] = tf_decoder_fork(d))) rc = -1; /* d stays after the prompt */
    z.prompt = prompt->v, z.n_prompt = (int)prompt->n;
    if (!rc) rc = run(&z, &r, o, &steps, &best, score);
    for (size_t i = 0; !rc && i < best.n; i++) {
        rc = tf_ids_push(out, best.v[i]);
        if (on_token && on_token(user, best.v[i])) break;
    }
    rows_free(&r);
    tf_ids_free(&best);
    search_free(&z, o->beam);
    return rc ? -1 : 0;
}
