/* Private: shared by the GPT family's files. */
#ifndef TF_GPT_INTERNAL_H
#define TF_GPT_INTERNAL_H

#include <cjson/cJSON.h>

#include "tformer/gpt.h"

/* A model; has_head 0 leaves out the output projection (GPT2Model). */
tf_gpt *tf_gpt_new_body(const tf_gpt_config *cfg, uint64_t seed, int has_head);
/* A Hugging Face GPT-2 config.json (root, read from path) as a checked
 * configuration; *body: a GPT2Model (no output projection). */
int tf_gpt_config_from_hf(const cJSON *root, const char *path, tf_gpt_config *c, int *body);
/* Feed n tokens through the cache; logits (V) of the position after them. */
int tf_gpt_next_logits(tf_ctx *ctx, const tf_gpt *m, tf_kv_cache *cache, const int32_t *tokens, int n,
                       float *logits);
/* A fresh decoder for a prompt of n_prompt ids and max_tokens new ones: their positions, at most
 * the context (sampling slides a window past it); an error when the prompt is past the context. */
tf_decoder *tf_gpt_decoder_for(const tf_gpt *m, int n_prompt, int max_tokens);

/* ImageGPT's registry row (gpt_image.c): the images a folder's model completes (dir/image_tokens.json, read
 * at each call: the handle's model is the GPT alone), and one image completed into the palette's colours. */
int tf_imagegpt_completion_shape(const void *model, const char *dir, int *channels, int *height, int *width);
int tf_imagegpt_complete_pixels(const void *model, const char *dir, const float *pixels, int keep_rows,
                                const tf_generate_opts *o, float *out);

#endif
