/* The searches over the decoder interface, with a decoder that is not a
 * Transformer: a bigram table (the next token's logits depend on the last
 * token only). Beam search equals exhaustive search on it, forks are all
 * freed, and a decoder that cannot slide ends a sample at its capacity. */
#include <stdlib.h>
#include <string.h>

#include "test.h"

#define V 5

typedef struct {
    tf_decoder base;
    int32_t last;
    int *live; /* decoders alive, shared with the test */
} bigram;

static float table(int32_t a, int32_t b) { return (float)((a * 7 + b * 3) % 11) * 0.37f - (float)(a == b); }

static int bg_step(tf_decoder *d, const int32_t *tokens, int n, float *logits) {
    bigram *g = (bigram *)d;
    g->last = tokens[n - 1];
    for (int v = 0; v < V; v++) logits[v] = table(g->last, v);
    return 0;
}

static tf_decoder *bg_fork(const tf_decoder *d) {
    bigram *f = malloc(sizeof *f);
    *f = *(const bigram *)d;
    ++*f->live;
    return &f->base;
}

static void bg_reset(tf_decoder *d) { ((bigram *)d)->last = -1; }
static void bg_free(tf_decoder *d) {
    --*((bigram *)d)->live;
    free(d);
}

static const tf_decoder_vt BIGRAM = {bg_step, bg_fork, bg_reset, bg_free, NULL, NULL, NULL};

static tf_decoder *bigram_new(int capacity, int *live) {
    bigram *g = calloc(1, sizeof *g);
    g->base = (tf_decoder){&BIGRAM, V, capacity, 0, 0, 1};
    g->last = -1, g->live = live;
    ++*live;
    return &g->base;
}

static double log_p(int32_t a, int32_t b) {
    double mx = -1e30, z = 0;
    for (int v = 0; v < V; v++) mx = table(a, v) > mx ? table(a, v) : mx;
    for (int v = 0; v < V; v++) z += exp((double)table(a, v) - mx);
    return (double)(float)(table(a, b) - (float)(mx + log(z)));
}

TEST(generate_beam_equals_exhaustive_on_any_decoder) {
    int live = 0;
    int32_t prompt[2] = {3, 1};
    double best = -INFINITY;
    int best_seq = -1;
    for (int s = 0; s < V * V * V; s++) { /* every 3-token continuation */
        int32_t prev = prompt[1], seq[3] = {s / 25, s / 5 % 5, s % 5};
        double total = 0;
        for (int k = 0; k < 3; k++) total += log_p(prev, seq[k]), prev = seq[k];
        if (total > best) best = total, best_seq = s;
    }
    tf_decoder *d = bigram_new(10, &live);
    tf_generate_opts o = tf_generate_opts_default();
    o.max_tokens = 3, o.beam = V * V, o.length_penalty = 0;
    tf_ids out = {0};
    double score;
    CHECK(tf_generate(d, prompt, 2, &o, NULL, NULL, &out, &score) == 0 && out.n == 3);
    CHECKF(out.v[0] * 25 + out.v[1] * 5 + out.v[2] == best_seq, "beam %d %d %d, exhaustive %d", out.v[0], out.v[1],
           out.v[2], best_seq);
    CHECKF(fabs(score - best) < 1e-6, "score %.9g, exhaustive %.9g", score, best);
    CHECKF(live == 1, "%d decoders alive after beam search (only the caller's should be)", live);
    tf_ids_free(&out);
    tf_decoder_free(d);
    CHECK(live == 0);
}

/* The repetition penalty in beam search, as transformers' on the beam's
 * log-probabilities: a token of the prompt or of the hypothesis has
 * log p * penalty (in float). With a beam as wide as every continuation,
 * both rules find the best sum of penalised log-probabilities that
 * exhaustive search finds, for a penalty above 1 and one below (which
 * raises a seen token's score). Beam search ignored the penalty. */
TEST(generate_beam_repetition_penalty_equals_exhaustive) {
    int live = 0, changed = 0;
    int32_t prompt[2] = {1, 2};
    const float penalties[] = {1.8f, 0.4f};
    for (int p = 0; p < 2; p++)
        for (int rule = 0; rule < 2; rule++) {
            double best = -INFINITY, plain_best = -INFINITY;
            int best_seq = -1, plain_seq = -1;
            for (int s = 0; s < V * V * V; s++) { /* every 3-token continuation */
                int32_t prev = prompt[1], seq[3] = {s / 25, s / 5 % 5, s % 5};
                double total = 0, plain = 0;
                for (int k = 0; k < 3; k++) {
                    int seen = seq[k] == prompt[0] || seq[k] == prompt[1];
                    for (int j = 0; j < k; j++) seen |= seq[j] == seq[k];
                    double lp = log_p(prev, seq[k]);
                    total += seen ? (double)((float)lp * penalties[p]) : lp, plain += lp, prev = seq[k];
                }
                if (total > best) best = total, best_seq = s;
                if (plain > plain_best) plain_best = plain, plain_seq = s;
            }
            changed += best_seq != plain_seq;
            tf_decoder *d = bigram_new(10, &live);
            tf_generate_opts o = tf_generate_opts_default();
            o.max_tokens = 3, o.beam = V * V * V, o.length_penalty = 0, o.repetition_penalty = penalties[p];
            o.beam_stop = rule ? TF_BEAM_HF_HEURISTIC : TF_BEAM_TFORMER;
            tf_ids out = {0};
            double score;
            CHECK(tf_generate(d, prompt, 2, &o, NULL, NULL, &out, &score) == 0 && out.n == 3);
            CHECKF(out.v[0] * 25 + out.v[1] * 5 + out.v[2] == best_seq, "penalty %g, rule %d: beam %d %d %d, exhaustive %d",
                   penalties[p], rule, out.v[0], out.v[1], out.v[2], best_seq);
            CHECKF(fabs(score - best) < 1e-6, "penalty %g, rule %d: score %.9g, exhaustive %.9g", penalties[p], rule,
                   score, best);
            tf_ids_free(&out);
            tf_decoder_free(d);
        }
    CHECKF(changed == 4, "the penalty changes the best of %d of 4 searches: the test could pass without it", changed);
    CHECK(live == 0);
}

TEST(generate_stops_at_the_capacity_of_a_decoder_that_cannot_slide) {
    int live = 0;
    tf_decoder *d = bigram_new(6, &live); /* room for the prompt and 4 tokens */
    int32_t prompt[2] = {0, 4};
    tf_generate_opts o = tf_generate_opts_default();
    o.max_tokens = 20, o.temperature = 0.9f, o.seed = 3;
    tf_ids out = {0};
    CHECK(tf_generate(d, prompt, 2, &o, NULL, NULL, &out, NULL) == 0);
    CHECKF(out.n == 5, "%zu tokens: the last chosen after the capacity is reached", out.n);
    int32_t bad = V; /* a token outside the vocabulary is an error of the interface */
    float logits[V];
    tf_decoder_reset(d);
    CHECK(tf_decoder_step(d, &bad, 1, logits) != 0 && strstr(tf_error(), "outside the vocabulary of 5"));
    tf_ids_free(&out);
    tf_decoder_free(d);
    CHECK(live == 0);
}

/* A temperature near 0 samples the most likely token, as temperature 0
 * does: each logit divided by 1e-38 in float overflowed to inf (the table's
 * largest is 3.7), inf - inf made every weight NaN and the draw fell through
 * to the least likely token. */
TEST(generate_tiny_temperature_is_greedy) {
    int live = 0;
    int32_t prompt[2] = {2, 4};
    tf_generate_opts o = tf_generate_opts_default();
    o.max_tokens = 12, o.temperature = 0;
    tf_ids greedy = {0};
    tf_decoder *d = bigram_new(16, &live);
    CHECK(tf_generate(d, prompt, 2, &o, NULL, NULL, &greedy, NULL) == 0 && greedy.n == 12);
    tf_decoder_free(d);
    const float tiny[] = {1e-30f, 1e-38f, 1e-45f};
    for (int t = 0; t < 3; t++)
        for (uint64_t seed = 1; seed <= 3; seed++) {
            tf_ids out = {0};
            o.temperature = tiny[t], o.seed = seed, o.top_k = (int)seed - 1; /* top-k 0 (off), 1, 2 */
            d = bigram_new(16, &live);
            CHECK(tf_generate(d, prompt, 2, &o, NULL, NULL, &out, NULL) == 0);
            CHECKF(out.n == greedy.n && !memcmp(out.v, greedy.v, out.n * sizeof *out.v),
                   "temperature %g, seed %d: sampled %d %d %d ..., greedy %d %d %d ...", tiny[t], (int)seed, out.v[0],
                   out.v[1], out.v[2], greedy.v[0], greedy.v[1], greedy.v[2]);
            tf_ids_free(&out);
            tf_decoder_free(d);
        }
    tf_ids_free(&greedy);
    CHECK(live == 0);
}

/* A repetition penalty below 1 favours the tokens already in the context;
 * at 1e-38 (in the CLI's range) it turns a seen token's logit above 3.4
 * into inf, and the draw's weights exp(inf - inf) were NaN: the least
 * likely token came out, one never seen. Now only seen tokens come out. */
TEST(generate_tiny_repetition_penalty_repeats_the_context) {
    int live = 0;
    CHECKF(isinf(table(3, 0) / 1e-38f), "the table's logit %g does not overflow: the test cannot fail", table(3, 0));
    for (uint64_t seed = 1; seed <= 8; seed++) {
        int32_t prompt[3] = {0, (int32_t)seed % V, 3}; /* after 3, token 0's logit 3.7 overflows */
        tf_generate_opts o = tf_generate_opts_default();
        o.max_tokens = 10, o.temperature = 1, o.seed = seed, o.repetition_penalty = 1e-38f;
        tf_ids out = {0};
        tf_decoder *d = bigram_new(16, &live);
        CHECK(tf_generate(d, prompt, 3, &o, NULL, NULL, &out, NULL) == 0 && out.n == 10);
        for (size_t i = 0; i < out.n; i++) {
            int seen = 0;
            for (int k = 0; k < 3; k++) seen |= prompt[k] == out.v[i];
            for (size_t k = 0; k < i; k++) seen |= out.v[k] == out.v[i];
            CHECKF(seen, "seed %d: token %zu is %d, not in the context", (int)seed, i, out.v[i]);
        }
        tf_ids_free(&out);
        tf_decoder_free(d);
    }
    CHECK(live == 0);
}

/* The searches know only the prompt: a decoder that already holds
 * positions is refused. Sampling used to slide its window over the latest
 * 3/4 of the capacity from a history shorter than that (read before the
 * buffer's start: "token 1041 outside the vocabulary of 50" on a GPT), and
 * beam search counted its steps from the prompt alone and overran the
 * capacity half-way. After a reset the same decoder generates. */
TEST(generate_refuses_a_decoder_that_holds_positions) {
    int live = 0;
    int32_t held[3] = {1, 2, 3}, prompt[2] = {0, 4};
    float logits[V];
    for (int beam = 0; beam <= 2; beam += 2) {
        tf_decoder *d = bigram_new(6, &live);
        d->can_slide = 1; /* a language model's window */
        tf_generate_opts o = tf_generate_opts_default();
        o.max_tokens = 10, o.temperature = 0, o.beam = beam;
        tf_ids out = {0};
        CHECK(tf_decoder_step(d, held, 3, logits) == 0);
        CHECKF(tf_generate(d, prompt, 2, &o, NULL, NULL, &out, NULL) == -1 &&
               strstr(tf_error(), "already holds 3 positions"), "beam %d: %zu tokens [%s]", beam, out.n, tf_error());
        tf_decoder_reset(d);
        CHECK(tf_generate(d, prompt, 2, &o, NULL, NULL, &out, NULL) == 0 && out.n == (beam ? 4u : 10u)); /* beam: the capacity */
        tf_ids_free(&out);
        tf_decoder_free(d);
    }
    CHECK(live == 0);
}

/* Options no flag parser checked (a program calling the library): a NaN
 * temperature sampled garbage (every weight NaN: the last token kept), a
 * negative one was greedy, a NaN length penalty made every beam score NaN;
 * each is an error naming the values. */
TEST(generate_refuses_options_out_of_range) {
    int live = 0;
    int32_t prompt[2] = {1, 2};
    for (int k = 0; k < 4; k++) {
        tf_generate_opts o = tf_generate_opts_default();
        o.max_tokens = 4;
        if (k == 0) o.temperature = NAN;
        if (k == 1) o.temperature = -0.5f;
        if (k == 2) o.beam = 2, o.length_penalty = NAN;
        if (k == 3) o.top_k = -1;
        tf_ids out = {0};
        tf_decoder *d = bigram_new(16, &live);
        CHECKF(tf_generate(d, prompt, 2, &o, NULL, NULL, &out, NULL) == -1 && strstr(tf_error(), "temperature in [0,inf)"),
               "case %d: %zu tokens [%s]", k, out.n, tf_error());
        tf_ids_free(&out);
        tf_decoder_free(d);
    }
    CHECK(live == 0);
}
