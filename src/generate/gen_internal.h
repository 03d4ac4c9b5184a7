/* Private: shared by generate.c (the interface's checks, sampling) and search.c (beam search). */
#ifndef TF_GEN_INTERNAL_H
#define TF_GEN_INTERNAL_H

#include "tformer/generate.h"

/* o's numbers in their ranges; 0 or -1 with a message naming them. */
int tf_gen_check_options(const tf_generate_opts *o);
/* forced_eos_id and bad_ids of o inside a vocabulary of V; 0 or -1 with a message. */
int tf_gen_check_processors(const tf_generate_opts *o, int32_t V);
/* tf_generate's checks of a call (all but beam search's own); 0 or -1 with a message. */
int tf_gen_check_call(const tf_decoder *d, const int32_t *prompt, int n_prompt, const tf_generate_opts *o);
/* Sampling from a fresh one-row decoder d (tf_generate's, arguments checked): one tf_gen_seq stepped to its end. */
int tf_gen_sampled(tf_decoder *d, const tf_ids *prompt, const tf_generate_opts *o, tf_token_fn on_token, void *user,
                   tf_ids *out, double *score);
/* Beam search from a fresh one-row decoder d (tf_generate's, arguments checked). */
int tf_gen_beam(tf_decoder *d, const tf_ids *prompt, const tf_generate_opts *o, tf_token_fn on_token, void *user,
                tf_ids *out, double *score);

#endif
