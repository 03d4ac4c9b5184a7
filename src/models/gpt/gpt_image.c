/* ImageGPT is a GPT whose vocabulary is the colour clusters plus a start
 * token (tf_image_tokens): its folder, its decoder (the GPT's, the start
 * token never sampled) and the completion of an image from its top rows. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "gpt_internal.h"

/* m against dir's image tokens: the clusters plus the start token its vocabulary, the pixels within its
 * positions, an output projection to predict them. 0, or -1 naming the misfit. */
static int fits(const tf_gpt *m, const tf_image_tokens *k, const char *dir) {
    int64_t HW = (int64_t)k->height * k->width;
    if (m->cfg.vocab_size != k->k + 1 || m->cfg.context < HW)
        return tf_set_error("%s: config.json (vocab_size %d, n_positions %d) does not fit image_tokens.json (%d clusters "
                            "+ the start token, %lld pixels)", dir, m->cfg.vocab_size, m->cfg.context, k->k,
                            (long long)HW);
    if (!m->has_head) return tf_set_error("%s: a GPT2Model folder: ImageGPT needs the output projection", dir);
    return 0;
}

tf_gpt *tf_imagegpt_load(const char *dir, tf_image_tokens *tokens) {
    if (tf_image_tokens_load(dir, tokens)) return NULL;
    tf_gpt *m = tf_gpt_load(dir);
    if (m && fits(m, tokens, dir)) tf_gpt_free(m), m = NULL;
    if (!m) tf_image_tokens_free(tokens);
    return m;
}

/* ---------------------------------------------------------------- the decoder */

typedef struct {
    tf_decoder base;
    tf_decoder *gpt;
    int32_t sos;
} image_decoder;

static tf_decoder *wrap(tf_decoder *gpt, int32_t sos);

static int img_step(tf_decoder *d, const int32_t *tokens, int n, float *logits) {
    image_decoder *g = (image_decoder *)d;
    if (tf_decoder_step(g->gpt, tokens, n, logits)) return -1;
    logits[g->sos] = -INFINITY;
    return 0;
}

static tf_decoder *img_fork(const tf_decoder *d) {
    const image_decoder *g = (const image_decoder *)d;
    return wrap(tf_decoder_fork(g->gpt), g->sos);
}

static void img_reset(tf_decoder *d) { tf_decoder_reset(((image_decoder *)d)->gpt); }

static void img_free(tf_decoder *d) {
    tf_decoder_free(((image_decoder *)d)->gpt);
    free(d);
}

static const tf_decoder_vt IMAGE_DECODER = {img_step, img_fork, img_reset, img_free, NULL, NULL, NULL};

static tf_decoder *wrap(tf_decoder *gpt, int32_t sos) {
    if (!gpt) return NULL;
    image_decoder *g = malloc(sizeof *g);
    if (!g) return tf_decoder_free(gpt), tf_set_error("decoder: out of memory"), NULL;
    g->base = *gpt, g->base.vt = &IMAGE_DECODER, g->base.can_slide = 0; /* a window is not an image */
    g->gpt = gpt, g->sos = sos;
    return &g->base;
}

tf_decoder *tf_imagegpt_decoder_new(const tf_gpt *m, const tf_image_tokens *tokens) {
    if (m->cfg.vocab_size != tokens->k + 1)
        return tf_set_error("imagegpt: vocab_size %d is not the %d clusters + the start token", m->cfg.vocab_size,
                            tokens->k), NULL;
    return wrap(tf_gpt_decoder_new(m, m->cfg.context), tokens->k);
}

/* ---------------------------------------------------------------- completion */

int tf_imagegpt_complete(const tf_gpt *m, const tf_image_tokens *tokens, const int32_t *image, int keep_rows,
                         const tf_generate_opts *o, int32_t *out) {
    int H = tokens->height, W = tokens->width, kept = keep_rows * W, HW = H * W;
    if (keep_rows < 0 || keep_rows >= H)
        return tf_set_error("imagegpt: keep_rows %d must lie in [0,%d): the rows kept of %d", keep_rows, H, H);
    int32_t *prompt = malloc((size_t)(kept + 1) * sizeof *prompt);
    tf_decoder *d = prompt ? tf_imagegpt_decoder_new(m, tokens) : NULL;
    tf_ids ids = {0};
    tf_generate_opts g = *o;
    g.max_tokens = HW - kept, g.eos_id = -1, g.beam = 0;
    int rc = d ? 0 : -1;
    if (!prompt) rc = tf_set_error("imagegpt: out of memory");
    if (!rc) {
        prompt[0] = tokens->k;
        memcpy(prompt + 1, image, (size_t)kept * sizeof *image);
        rc = tf_generate(d, prompt, kept + 1, &g, NULL, NULL, &ids, NULL);
    }
    if (!rc && ids.n != (size_t)(HW - kept)) rc = tf_set_error("imagegpt: %zu pixels sampled of %d", ids.n, HW - kept);
    if (!rc) memcpy(out, image, (size_t)kept * sizeof *out), memcpy(out + kept, ids.v, ids.n * sizeof *out);
    tf_ids_free(&ids);
    tf_decoder_free(d);
    free(prompt);
    return rc;
}

/* ---------------------------------------------------------------- the registry row's calls */

/* dir's image_tokens.json, checked against the model as tf_imagegpt_load checks it. */
static int tokens_of(const tf_gpt *m, const char *dir, tf_image_tokens *k) {
    if (tf_image_tokens_load(dir, k)) return -1;
    if (!fits(m, k, dir)) return 0;
    tf_image_tokens_free(k);
    return -1;
}

int tf_imagegpt_completion_shape(const void *model, const char *dir, int *channels, int *height, int *width) {
    tf_image_tokens k;
    *channels = *height = *width = 0;
    if (tokens_of(model, dir, &k)) return -1;
    *channels = k.channels, *height = k.height, *width = k.width;
    tf_image_tokens_free(&k);
    return 0;
}

/* pixels (C,H,W) -> colour tokens, the rest after keep_rows sampled, -> out (C,H,W), the palette's colours. */
int tf_imagegpt_complete_pixels(const void *model, const char *dir, const float *pixels, int keep_rows,
                                const tf_generate_opts *o, float *out) {
    tf_image_tokens k;
    if (tokens_of(model, dir, &k)) return -1;
    size_t HW = (size_t)k.height * (size_t)k.width;
    int32_t *given = malloc(HW * sizeof *given), *done = malloc(HW * sizeof *done);
    tf_images im = {1, k.channels, k.height, k.width, (float *)pixels, NULL, 0}, decoded = {0};
    int rc = given && done ? 0 : tf_set_error("imagegpt: out of memory");
    rc = rc || tf_image_tokens_encode(&k, &im, given) || tf_imagegpt_complete(model, &k, given, keep_rows, o, done) ||
         tf_image_tokens_decode(&k, done, 1, &decoded);
    if (!rc) memcpy(out, decoded.pixels, HW * (size_t)k.channels * sizeof *out);
    tf_images_free(&decoded), tf_image_tokens_free(&k);
    free(given), free(done);
    return rc ? -1 : 0;
}
