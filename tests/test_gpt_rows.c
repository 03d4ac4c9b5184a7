/* A GPT decoding step over rows at different positions (tf_gpt_step_rows, and the decoders'
 * tf_decoders_step over it): its matrix products cover every row at once, each row attends
 * over its own cache, and each row's logits are the bits of the row stepped alone
 * (tf_gpt_run with its cache). Shapes that take each of the row product's paths: small
 * weights (one tile product), larger ones (blocks of columns, axpy_rows and dot_rows, a
 * vocabulary that is no multiple of 4), positions learned and sinusoidal, rotary, post-LN. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "test.h"

enum { ROWS = 5, STEPS = 6, CAP = 48 };
static const int PROMPT[ROWS] = {1, 3, 7, 12, 20}; /* each row's position differs */

/* A deterministic token of row r at position t. */
static int32_t token_at(int r, int t, int V) { return (int32_t)((r * 131 + t * 29 + 7) % V); }

/* Row r's next-token logits (V) alone: tf_gpt_run of one token through its cache. */
static int step_alone(const tf_gpt *m, tf_kv_cache *cache, int32_t tok, float *logits) {
    tf_ctx *ctx = tf_ctx_new(0);
    tf_ctx_set_grad(ctx, 0);
    tf_tensor *ids = tf_tensor_new(ctx, TF_DTYPE_I32, 2, (int64_t[]){1, 1}, 0);
    tf_i32(ids)[0] = tok;
    tf_gpt_inputs in = {.input_ids = ids, .cache = cache};
    tf_gpt_outputs out;
    int rc = tf_gpt_run(ctx, m, &in, &out), V = m->cfg.vocab_size, n = V - !m->cfg.predict_last;
    if (!rc) {
        memcpy(logits, tf_f32(out.logits), (size_t)n * sizeof *logits);
        for (int v = n; v < V; v++) logits[v] = -INFINITY;
    }
    tf_ctx_free(ctx);
    return rc;
}

/* Feed row r's first n tokens into cache, alone. */
static int prefill(const tf_gpt *m, tf_kv_cache *cache, int r, int n, float *scratch) {
    for (int t = 0; t < n; t++)
        if (step_alone(m, cache, token_at(r, t, m->cfg.vocab_size), scratch)) return -1;
    return 0;
}

/* STEPS steps of ROWS rows together against each row alone; *equal: rows equal to the bit.
 * shift >= 0: that row's cache holds one position more than its twin's (a wrong position). */
static int compare(const tf_gpt *m, int shift, int *equal, int *rows_equal) {
    int V = m->cfg.vocab_size, rc = 0;
    tf_kv_cache *alone[ROWS], *together[ROWS];
    float *a = malloc((size_t)V * sizeof *a), *t = malloc((size_t)ROWS * (size_t)V * sizeof *t);
    tf_ctx *ctx = tf_ctx_new(0);
    tf_ctx_set_grad(ctx, 0);
    for (int r = 0; r < ROWS; r++) {
        alone[r] = tf_gpt_cache_new(m, 1, CAP), together[r] = tf_gpt_cache_new(m, 1, CAP);
        rc |= prefill(m, alone[r], r, PROMPT[r], a) | prefill(m, together[r], r, PROMPT[r] + (r == shift), a);
    }
    *equal = 1;
    for (int r = 0; r < ROWS; r++) rows_equal[r] = 1;
    for (int s = 0; !rc && s < STEPS; s++) {
        int32_t tok[ROWS];
        for (int r = 0; r < ROWS; r++) tok[r] = token_at(r, PROMPT[r] + s, V);
        tf_ctx_reset(ctx);
        if ((rc = tf_gpt_step_rows(ctx, m, together, tok, ROWS, t))) break;
        for (int r = 0; r < ROWS && !rc; r++) {
            rc = step_alone(m, alone[r], tok[r], a);
            if (memcmp(a, t + (size_t)r * (size_t)V, (size_t)V * sizeof *a)) rows_equal[r] = *equal = 0;
        }
    }
    for (int r = 0; r < ROWS; r++) tf_kv_cache_free(alone[r]), tf_kv_cache_free(together[r]);
    tf_ctx_free(ctx);
    free(a), free(t);
    return rc;
}

static tf_gpt *model(int variant) {
    tf_gpt_config c = variant == 0 ? tf_gpt_config_default(67, CAP, 2, 4, 32)    /* one tile product each */
                                   : tf_gpt_config_default(1003, CAP, 2, 5, 160); /* blocks of columns */
    if (variant == 1) c.pos = TF_POS_SINUSOIDAL, c.tied = 0, c.activation = TF_ACT_GELU;
    if (variant == 2) c.attention.rope = TF_ROPE_HALVES, c.norm_first = 0, c.pos = TF_POS_SINUSOIDAL;
    return tf_gpt_new(&c, 1234 + (uint64_t)variant);
}

TEST(gpt_step_rows_equals_each_row_alone) {
    for (int v = 0; v < 3; v++) {
        tf_gpt *m = model(v);
        CHECKF(m, "model %d: %s", v, tf_error());
        int equal = 0, rows[ROWS];
        CHECKF(!compare(m, -1, &equal, rows), "model %d: %s", v, tf_error());
        CHECKF(equal, "model %d: rows stepped together differ from the rows alone (row 0..4: %d %d %d %d %d)", v,
               rows[0], rows[1], rows[2], rows[3], rows[4]);
        /* the comparison sees positions: row 2 one position on differs, the others do not */
        CHECKF(!compare(m, 2, &equal, rows), "model %d shifted: %s", v, tf_error());
        CHECKF(!rows[2] && rows[0] && rows[1] && rows[3] && rows[4], "model %d: a row one position off: rows equal "
               "%d %d %d %d %d", v, rows[0], rows[1], rows[2], rows[3], rows[4]);
        tf_gpt_free(m);
    }
    printf("    %d rows at positions 1..20 stepped %d times together: each row's logits bit-equal to its step alone "
           "(3 shapes); a row one position off differs\n", ROWS, STEPS);
}

/* The decoders' step of rows: GPT decoders over one model step together and equal each alone;
 * a token out of the vocabulary is refused with its index, the rows before it stepped alone. */
TEST(gpt_decoders_step_together_equals_alone) {
    tf_gpt *m = model(1);
    CHECKF(m, "%s", tf_error());
    int V = m->cfg.vocab_size;
    tf_decoder *d[ROWS], *solo[ROWS];
    float *buf = malloc((size_t)2 * ROWS * (size_t)V * sizeof *buf), *lg[ROWS];
    for (int r = 0; r < ROWS; r++) {
        d[r] = tf_gpt_decoder_new(m, CAP), solo[r] = tf_gpt_decoder_new(m, CAP), lg[r] = buf + (size_t)r * (size_t)V;
        int32_t p[32];
        for (int t = 0; t < PROMPT[r]; t++) p[t] = token_at(r, t, V);
        CHECKF(!tf_decoder_step(d[r], p, PROMPT[r], lg[r]) && !tf_decoder_step(solo[r], p, PROMPT[r], lg[r]), "%s",
               tf_error());
    }
    float *one = buf + (size_t)ROWS * (size_t)V;
    for (int s = 0; s < 4; s++) {
        int32_t tok[ROWS];
        for (int r = 0; r < ROWS; r++) tok[r] = token_at(r, 40 + s, V);
        int bad = -1;
        CHECKF(!tf_decoders_step(d, ROWS, tok, lg, &bad), "step %d: %s", s, tf_error());
        for (int r = 0; r < ROWS; r++) {
            CHECKF(!tf_decoder_step(solo[r], &tok[r], 1, one), "%s", tf_error());
            CHECKF(!memcmp(one, lg[r], (size_t)V * sizeof *one), "step %d, row %d: together differs from alone", s, r);
            CHECKF(d[r]->len == solo[r]->len, "row %d: %d positions, alone %d", r, d[r]->len, solo[r]->len);
        }
    }
    int32_t tok[ROWS] = {1, 2, V, 4, 5};
    int bad = -1;
    CHECK(tf_decoders_step(d, ROWS, tok, lg, &bad) == -1 && bad == 2);
    CHECKF(strstr(tf_error(), "vocabulary"), "%s", tf_error());
    CHECK(d[0]->len == solo[0]->len + 1 && d[1]->len == solo[1]->len + 1 && d[2]->len == solo[2]->len); /* those before the bad one stepped */
    for (int r = 0; r < ROWS; r++) tf_decoder_free(d[r]), tf_decoder_free(solo[r]);
    free(buf);
    tf_gpt_free(m);
}
