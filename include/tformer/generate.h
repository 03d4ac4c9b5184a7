/* tformer: Generation: sampling, greedy and beam search. */
#ifndef TFORMER_GENERATE_H
#define TFORMER_GENERATE_H

#include "gpt.h"
#include "tokenizer.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------- generation */

typedef struct {
    int max_tokens;
    float temperature;        /* 0: greedy */
    int top_k;                /* 0: off */
    float top_p;              /* 1: off */
    float repetition_penalty; /* 1: off; >1 discourages tokens already in the context (CTRL's rule) */
    uint64_t seed;
    int beam;                 /* >= 1: beam search of that width (deterministic; sampling options ignored); 0: sampling */
    float length_penalty;     /* beam scores are sum(log p) / length^length_penalty */
    int32_t eos_id;           /* ends a sequence (-1: none) */
} tf_generate_opts;

TF_API tf_generate_opts tf_generate_opts_default(void);
/* Called with each new token as it is chosen (beam search: the best sequence
 * at the end); a non-zero return stops generation. */
typedef int (*tf_token_fn)(void *user, int32_t id);

/* Continue the prompt (at least one id). The generated ids are appended to
 * out; *score (if asked) gets the sequence's log-probability (beam: the
 * length-penalised score). Decoding is incremental with a KV cache; beam
 * search keeps the prompt's cache once, shared by every beam. */
TF_API int tf_gpt_generate(const tf_gpt *m, const int32_t *prompt, int n_prompt, const tf_generate_opts *o,
                    tf_token_fn on_token, void *user, tf_ids *out, double *score);

/* Incremental decoding, one position at a time: logits (V) of the next token
 * after feeding `token` at the cache's next position. */
typedef struct tf_kv_cache tf_kv_cache;
TF_API tf_kv_cache *tf_kv_cache_new(const tf_gpt *m, int capacity, const tf_kv_cache *shared_prefix);
TF_API void tf_kv_cache_free(tf_kv_cache *c);
TF_API int tf_kv_cache_len(const tf_kv_cache *c); /* positions held, the prefix included */
TF_API int tf_gpt_decode_step(const tf_gpt *m, tf_kv_cache *c, int32_t token, float *logits);

#ifdef __cplusplus
}
#endif
#endif /* TFORMER_GENERATE_H */
