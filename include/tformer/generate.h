/* tformer: generation — one decoder interface under greedy decoding,
 * sampling (temperature, top-k, top-p, repetition penalty) and beam search. */
#ifndef TFORMER_GENERATE_H
#define TFORMER_GENERATE_H

#include "core.h"
#include "tokenizer.h"
#include "plot.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------- the decoder interface */

/* A model that predicts the next token, over one or more rows (hypotheses
 * or sentences stepped together): a GPT with its KV cache, an encoder-decoder
 * with its encoded sources, an RNN with its state. A model family implements
 * the table; the searches below use nothing else. */
typedef struct tf_decoder tf_decoder;

typedef struct {
    /* Feed n >= 1 tokens to every row after those already fed: tokens
     * (rows,n); logits (rows,vocab_size) of each row's next token, or NULL
     * where the table has logits (below): the decoder keeps them. */
    int (*step)(tf_decoder *d, const int32_t *tokens, int n, float *logits);
    /* An independent copy with the same history (a beam's second child). */
    tf_decoder *(*fork)(const tf_decoder *d);
    /* Forget every position (sampling past the capacity re-feeds a window). */
    void (*reset)(tf_decoder *d);
    void (*free)(tf_decoder *d);
    /* Keep rows rows[0..n) (repeats allowed) as the new rows: beam search
     * without copies of the model's state, many sentences in one forward.
     * NULL: one row only (beam search forks instead). */
    int (*select)(tf_decoder *d, const int *rows, int n);
    /* Feed one token to each of n decoders of this table (one row each, over one model)
     * together: tokens (n); logits[i] (vocab_size) decoder i's next token's, the bits of
     * its step alone. NULL: each steps alone (tf_decoders_step). */
    int (*step_rows)(tf_decoder *const *d, int n, const int32_t *tokens, float *const *logits);
    /* The logits (rows,vocab_size) of its last step, when that step was given NULL: the
     * model's own output, so a batch of beams' rows is read where it was computed, not
     * copied each step. Valid until the next call on d (or on a decoder forked from it).
     * NULL: every step writes to the caller's logits. */
    const float *(*logits)(const tf_decoder *d);
} tf_decoder_vt;

struct tf_decoder {
    const tf_decoder_vt *vt;
    int32_t vocab_size;
    int capacity;   /* positions it can hold */
    int can_slide;  /* a window of the latest tokens is a valid context (language models) */
    int len;        /* positions fed so far (kept by tf_decoder_step) */
    int rows;       /* rows stepped together (kept by tf_decoder_select) */
};

/* The calls, with their checks (tokens in the vocabulary, room left, rows). */
TF_API int tf_decoder_step(tf_decoder *d, const int32_t *tokens, int n, float *logits);
/* A step whose logits stay in the decoder: the table's logits() after a step given NULL, or
 * NULL (an error) when the table keeps none. */
TF_API const float *tf_decoder_step_view(tf_decoder *d, const int32_t *tokens, int n);
TF_API tf_decoder *tf_decoder_fork(const tf_decoder *d);
TF_API void tf_decoder_reset(tf_decoder *d);
TF_API void tf_decoder_free(tf_decoder *d);
TF_API int tf_decoder_select(tf_decoder *d, const int *rows, int n);
/* One token fed to each of n one-row decoders: tokens (n), logits[i] (vocab_size) decoder i's.
 * Decoders of one table with step_rows (a GPT's over one model: one forward whose matrix
 * products cover every row) step together, the others alone; either way each decoder's
 * logits are those of tf_decoder_step on it alone, to the bit. On an error every decoder
 * is as it was (*bad: the first that failed), or those before *bad stepped. */
TF_API int tf_decoders_step(tf_decoder *const *d, int n, const int32_t *tokens, float *const *logits, int *bad);

/* ---------------------------------------------------------------- searches */

/* How beam search keeps and ends hypotheses (N = the beam width).
 * TF_BEAM_TFORMER: the N best candidates each step; one that ends (eos)
 * leaves the beam, which narrows, until none is live or max_tokens; the best
 * ended one wins. The others are Hugging Face transformers' (4.x) beam search
 * (BeamSearchScorer) with its early_stopping: N live beams refilled each step
 * from the 2N best candidates; an eos among the first N ends a hypothesis,
 * kept among the N best ended by score / length^length_penalty (length:
 * the tokens generated, eos included); at max_tokens the live beams join the
 * ended. Done when N have ended and: TF_BEAM_HF_HEURISTIC (early_stopping
 * False, transformers' default, Marian's too) the best candidate's sum /
 * current length^length_penalty is no better than the worst ended;
 * TF_BEAM_HF_EARLY (True) at once; TF_BEAM_HF_NEVER ("never") the same
 * bound with max_tokens as the length when length_penalty > 0. */
typedef enum { TF_BEAM_TFORMER, TF_BEAM_HF_HEURISTIC, TF_BEAM_HF_EARLY, TF_BEAM_HF_NEVER } tf_beam_stop;

typedef struct {
    int max_tokens;
    float temperature;        /* 0: greedy */
    int top_k;                /* 0: off */
    float top_p;              /* 1: off */
    float repetition_penalty; /* 1: off; >1 discourages tokens already in the context (the prompt and those
                               * generated), <1 favours them. Sampling: CTRL's rule on the logits (a positive
                               * one divided, a negative one multiplied); beam search: their log-probabilities
                               * multiplied (transformers' RepetitionPenaltyLogitsProcessor on the beam's
                               * log-softmax, before bad_ids and forced_eos_id) */
    uint64_t seed;
    int beam;                 /* >= 1: beam search of that width (deterministic: temperature, top_k, top_p, seed
                               * ignored; repetition_penalty applies); 0: sampling */
    float length_penalty;     /* beam scores are sum(log p) / length^length_penalty */
    int32_t eos_id;           /* ends a sequence (-1: none) */
    tf_beam_stop beam_stop;   /* beam search's rule (default TF_BEAM_TFORMER) */
    int32_t forced_eos_id;    /* the last token allowed (the max_tokens-th) is this one, its log-probability
                               * taken as 0 (transformers' forced_eos_token_id); -1: off */
    const int32_t *bad_ids;   /* n_bad_ids tokens never chosen: their log-probability -inf after the
                               * softmax (transformers' bad_words_ids of one token each) */
    int n_bad_ids;
    int renormalize;          /* beam search: after the processors above, each hypothesis' log-probabilities
                               * are log-softmaxed again (transformers' renormalize_logits, LogitNormalization
                               * last): the mass of the banned ids, and the penalty's change, no longer leave
                               * that hypothesis' scores short of a distribution. 0: off */
} tf_generate_opts;

TF_API tf_generate_opts tf_generate_opts_default(void);
/* The widest beam: each hypothesis holds a decoder with its KV cache, and a
 * wider beam does not change a translation or continuation in practice. */
#define TF_GENERATE_MAX_BEAM 256
/* Called with each new token as it is chosen (beam search: the best sequence
 * at the end); a non-zero return stops generation. */
typedef int (*tf_token_fn)(void *user, int32_t id);

/* Continue the prompt (at least one id) from a fresh decoder d (one that holds
 * positions already is refused: the prompt is the whole context), which is
 * left after the tokens it was fed. The generated ids are appended to out;
 * *score (if asked) gets the sequence's log-probability (beam: the
 * length-penalised score). Sampling past d's capacity slides a window over
 * the latest 3/4 of it (when d can slide); beam search keeps its
 * hypotheses as rows of d when d can select them (d's rows are then the
 * search's last), else as forks of d (a beam taking its parent's decoder
 * without a copy when it is the parent's only child). d holds one row. */
TF_API int tf_generate(tf_decoder *d, const int32_t *prompt, int n_prompt, const tf_generate_opts *o,
                       tf_token_fn on_token, void *user, tf_ids *out, double *score);
/* Beam search (o->beam >= 1) for every row of d at once: each row continues
 * the same prompt, within max_tokens[i] new tokens (NULL: o->max_tokens for
 * all); its ids appended to outs[i], its score in scores[i] (if given). The
 * result of each row is the one tf_generate gives it alone. d must select. */
TF_API int tf_generate_rows(tf_decoder *d, const int32_t *prompt, int n_prompt, const tf_generate_opts *o,
                            const int *max_tokens, tf_ids *outs, double *scores);

/* ---------------------------------------------------------------- one token at a time */

/* A sampled continuation (beam 0) stepped one token at a time: what tf_generate does, its draws
 * and its window past the capacity included, so that a caller can step many sequences together
 * (a server's continuous batching), start one between any two steps and end one at any step.
 * Each sequence's ids are the ones tf_generate gives it alone, whatever else is stepped with it
 * (tested: model_completions_match_generate). The sequence borrows d: a fresh one-row decoder that
 * it alone steps and that outlives it. */
typedef struct tf_gen_seq tf_gen_seq;
/* tf_generate's checks of the arguments (beam must be 0); NULL with a message. */
TF_API tf_gen_seq *tf_gen_seq_new(tf_decoder *d, const int32_t *prompt, int n_prompt, const tf_generate_opts *o);
TF_API void tf_gen_seq_free(tf_gen_seq *s);
/* One step of each sequence not done: its decoder fed (the prompt at its first step, then its
 * last id) and its next id chosen. The sequences fed their last id alone are fed together
 * (tf_decoders_step: a GPT's rows in one forward), each with the logits of its step alone.
 * -1 on error: seqs[*bad] (bad may be NULL) failed, those before it took this step, those
 * after it did not (one fed together keeps its logits and chooses from them at its next step). */
TF_API int tf_gen_seqs_step(tf_gen_seq *const *seqs, int n, int *bad);
/* The id the last step chose, or -1 when it chose none (the sequence was done, or ended at
 * max_tokens 0 or at a capacity it cannot slide past); *logprob (when not NULL) its
 * log-probability under the model (log-softmax of its logits, before any processor). */
TF_API int32_t tf_gen_seq_last(const tf_gen_seq *s, double *logprob);
/* The last step's logits as the model gave them (vocab_size floats) and their log-sum-exp
 * (their log-softmax: logits - lse), or NULL when it chose no id. Valid until the next step. */
TF_API const float *tf_gen_seq_logits(const tf_gen_seq *s, float *lse);
/* 1 once the sequence has ended: eos, max_tokens, its capacity, or tf_gen_seq_end. */
TF_API int tf_gen_seq_done(const tf_gen_seq *s);
/* End it now (a stop string seen, a client gone): later steps skip it. */
TF_API void tf_gen_seq_end(tf_gen_seq *s);
/* Ids chosen so far, and the sum of their log-probabilities. */
TF_API int tf_gen_seq_steps(const tf_gen_seq *s);
TF_API double tf_gen_seq_score(const tf_gen_seq *s);

/* ---------------------------------------------------------------- translation */

/* An encoder-decoder of any family (the Transformer, the RNN baseline, a
 * Marian folder) with its tokenizers and special ids: what turns a source
 * line into a target line. */
typedef struct {
    const void *model;
    /* A decoder over one source sentence (ids, EOS included), room for capacity target ids. */
    tf_decoder *(*decoder_new)(const void *model, const int32_t *src, int n_src, int capacity);
    int context;                    /* the longest source or target the model takes */
    tf_tokenizer *src_tok, *tgt_tok;
    int32_t src_eos_id;             /* appended to the source */
    int32_t bos_id, eos_id;         /* the target's start (fed first) and end */
    /* A decoder over n sources at once, a row each; NULL: one sentence at a time. */
    tf_decoder *(*decoder_new_batch)(const void *model, const int32_t *const *src, const int *n_src, int n,
                                     int capacity);
} tf_translator;

typedef struct {
    tf_generate_opts search;        /* beam (1: greedy), length_penalty; max_tokens and eos_id are set here */
    float max_len_a;                /* at most a * source ids + b target ids (and the context), EOS included;
                                     * a budget under 1 (0 and 0): an empty translation */
    int max_len_b;
    int batch;                      /* tf_translate_lines: sentences decoded together (similar lengths) */
} tf_translate_opts;

/* Greedy (beam 1), max_len 1.5 * source + 10 as fairseq's translate. */
TF_API tf_translate_opts tf_translate_opts_default(void);
/* Source ids (EOS included) -> target ids (EOS and specials dropped) into out. */
TF_API int tf_translate_ids(const tf_translator *t, const tf_translate_opts *o, const int32_t *src, int n_src,
                            tf_ids *out);
/* A source line -> its translation (malloc'd text, no trailing space). */
TF_API int tf_translate_line(const tf_translator *t, const tf_translate_opts *o, const char *line, size_t len,
                             char **text, size_t *text_len);
/* The same, also giving the ids (when src / tgt are non-NULL; their previous
 * contents are freed): the source's, EOS included, and the translation's,
 * EOS dropped (what tformer translate --attention-png draws). */
TF_API int tf_translate_line_ids(const tf_translator *t, const tf_translate_opts *o, const char *line, size_t len,
                                 char **text, size_t *text_len, tf_ids *src, tf_ids *tgt);

/* n lines at once: sorted by source length, decoded o->batch at a time
 * through the translator's batch decoder (one sentence at a time without
 * one); texts[i] (malloc'd) and text_lens[i] get line i's translation, as
 * tf_translate_line gives it. On error, *bad (if given) is the line's index. */
TF_API int tf_translate_lines(const tf_translator *t, const tf_translate_opts *o, int n, const char *const *lines,
                              const size_t *lens, char **texts, size_t *text_lens, int *bad);
/* Give back the memory kept from one batch for the next (a few decoding
 * contexts, KV-cache and logits buffers: up to some hundreds of MB after a
 * large model's batches); a program that is done translating for a while
 * calls it. Not while another thread decodes. */
TF_API void tf_translate_trim(void);

#ifdef __cplusplus
}
#endif
#endif /* TFORMER_GENERATE_H */
