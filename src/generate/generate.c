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
    if (!logits && !d->vt->logits) return tf_set_error("decoder: a step without logits needs a decoder that keeps them");
    if (d->vt->step(d, tokens, n, logits)) return -1;
    d->len += n;
    return 0;
}

const float *tf_decoder_step_view(tf_decoder *d, const int32_t *tokens, int n) {
    if (!d->vt->logits) return tf_set_error("decoder: this decoder keeps no logits (give tf_decoder_step a buffer)"), NULL;
    return tf_decoder_step(d, tokens, n, NULL) ? NULL : d->vt->logits(d);
}

/* Whether decoder d can take one more token, tok, in a step of rows; an error naming it when not. */
static int row_ready(const tf_decoder *d, int i, int32_t tok) {
    if (d->rows != 1) return tf_set_error("decoder %d: %d rows, not one", i, d->rows);
    if (d->len >= d->capacity) return tf_set_error("decoder %d: full (its capacity of %d held)", i, d->capacity);
    if (tok < 0 || tok >= d->vocab_size)
        return tf_set_error("decoder %d: token %d outside the vocabulary of %d", i, tok, d->vocab_size);
    return 0;
}

int tf_decoders_step(tf_decoder *const *d, int n, const int32_t *tokens, float *const *logits, int *bad) {
    if (n < 0 || (n && (!d || !tokens || !logits))) return tf_set_error("decoder: a step of %d decoders", n);
    int together = n > 1 && d[0]->vt->step_rows;
    for (int i = 0; together && i < n; i++) together = d[i]->vt == d[0]->vt && !row_ready(d[i], i, tokens[i]);
    if (together && !d[0]->vt->step_rows(d, n, tokens, logits)) {
        for (int i = 0; i < n; i++) d[i]->len++;
        return 0;
    }
    for (int i = 0; i < n; i++) /* one at a time: a step together that failed changed nothing */
        if (tf_decoder_step(d[i], tokens + i, 1, logits[i])) {
            if (bad) *bad = i;
            return -1;
        }
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

int tf_gen_check_call(const tf_decoder *d, const int32_t *prompt, int n_prompt, const tf_generate_opts *o) {
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
    return tf_gen_check_processors(o, d->vocab_size);
}

int tf_generate(tf_decoder *d, const int32_t *prompt, int n_prompt, const tf_generate_opts *o, tf_token_fn on_token,
                void *user, tf_ids *out, double *score) {
    if (tf_gen_check_call(d, prompt, n_prompt, o)) return -1;
    if (o->beam >= 1 && o->max_tokens > 0 && n_prompt >= d->capacity) /* 0 tokens would be silent */
        return tf_set_error("generate: the prompt's %d tokens fill the context of %d: beam search needs room for new "
                            "tokens (it does not slide a window); shorten the prompt", n_prompt, d->capacity);
    tf_ids p = {(int32_t *)prompt, (size_t)n_prompt, (size_t)n_prompt}; /* borrowed, never grown */
    return o->beam >= 1 ? tf_gen_beam(d, &p, o, on_token, user, out, score)
                        : tf_gen_sampled(d, &p, o, on_token, user, out, score);
}
