/* Translation metrics as sacreBLEU 2.x computes them: corpus BLEU (13a,
 * intl or no tokenisation; exponential, floor, add-k or no smoothing) and
 * chrF (character 6-grams, beta 2). Statistics add up sentence by sentence;
 * the score comes from their sums, as sacreBLEU's corpus_score.
 *
 *     tf_bleu_stats s = {0};
 *     for each line: tf_bleu_add(&s, &opts, hyp, hyp_len, refs, ref_lens, n_refs);
 *     tf_bleu_score r; tf_bleu_compute(&s, &opts, &r);
 *     tf_bleu_format(&r, buf, sizeof buf);   // "BLEU = 35.21 67.1/42.3/28.9/20.0 (BP = ...)"
 *
 * Texts are UTF-8 (invalid bytes are an error), one segment each. */
#ifndef TFORMER_METRICS_H
#define TFORMER_METRICS_H

#include <stddef.h>
#include <stdint.h>

#include "core.h"

#ifdef __cplusplus
extern "C" {
#endif

#define TF_BLEU_ORDER 4
#define TF_CHRF_ORDER 6

/* ZH: sacreBLEU's "zh" (each CJK character a token, then 13a's rules without its preprocessing),
 * the tokeniser that sacreBLEU's -l picks for a Chinese target. */
typedef enum { TF_BLEU_TOK_13A, TF_BLEU_TOK_NONE, TF_BLEU_TOK_INTL, TF_BLEU_TOK_ZH } tf_bleu_tokenize;
typedef enum { TF_BLEU_SMOOTH_EXP, TF_BLEU_SMOOTH_NONE, TF_BLEU_SMOOTH_FLOOR, TF_BLEU_SMOOTH_ADD_K } tf_bleu_smooth;

typedef struct {
    tf_bleu_tokenize tokenize;
    tf_bleu_smooth smooth;
    double smooth_value; /* floor: 0.1, add-k: 1 when 0 */
    int lowercase;       /* as Python's str.lower() */
} tf_bleu_opts;

/* Sufficient statistics of a corpus (sums over its segments). */
typedef struct {
    int64_t hyp_len, ref_len;
    int64_t correct[TF_BLEU_ORDER], total[TF_BLEU_ORDER];
} tf_bleu_stats;

typedef struct {
    double score, precisions[TF_BLEU_ORDER], bp, ratio; /* score and precisions in percent */
    int64_t hyp_len, ref_len;
} tf_bleu_score;

/* One segment: the hypothesis against its n_refs references (n_refs >= 1). */
TF_API int tf_bleu_add(tf_bleu_stats *s, const tf_bleu_opts *o, const char *hyp, size_t hyp_len,
                       const char *const *refs, const size_t *ref_lens, int n_refs);
TF_API void tf_bleu_compute(const tf_bleu_stats *s, const tf_bleu_opts *o, tf_bleu_score *out);
/* "BLEU = 35.21 67.1/42.3/28.9/20.0 (BP = 1.000 ratio = 1.000 hyp_len = 9 ref_len = 9)" */
TF_API int tf_bleu_format(const tf_bleu_score *r, char *buf, size_t n);
/* A segment tokenised as BLEU sees it (tokens separated by single spaces),
 * malloc'd; NULL with tf_error on invalid UTF-8 or out of memory. */
TF_API char *tf_bleu_tokenize_text(const tf_bleu_opts *o, const char *text, size_t len, size_t *out_len);

/* chrF statistics: for each character n-gram order, hypothesis n-grams,
 * reference n-grams and matches, summed over segments. */
typedef struct {
    int64_t hyp[TF_CHRF_ORDER], ref[TF_CHRF_ORDER], match[TF_CHRF_ORDER];
} tf_chrf_stats;

/* One segment; with several references the one of best sentence chrF counts. */
TF_API int tf_chrf_add(tf_chrf_stats *s, int lowercase, const char *hyp, size_t hyp_len, const char *const *refs,
                       const size_t *ref_lens, int n_refs);
/* chrF2 in percent. */
TF_API double tf_chrf_compute(const tf_chrf_stats *s);

#ifdef __cplusplus
}
#endif
#endif
