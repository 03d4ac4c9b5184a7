/* A VisionEncoderDecoderModel's captions (include/tformer/caption.h): the image as its processor
 * normalises it, the shared search over its decoder (caption_decoder.c: the ViT's memory once,
 * the GPT-2's KV caches, forks for beam search), and each word's cross-attention from the full
 * forward. */
#include <stdlib.h>
#include <string.h>

#include "caption_internal.h"

/* One image (C,S,S) in [0,1] as the image processor gives it to the model: (x - mean) / std. */
tf_tensor *tf_caption_ved_pixels(tf_ctx *ctx, const tf_caption_ved *m, const float *pixels) {
    const tf_vit_config *c = &m->encoder->cfg;
    int64_t S = c->image_size, P = S * S;
    tf_tensor *x = tf_tensor_new(ctx, TF_DTYPE_F32, 4, (int64_t[]){1, c->channels, S, S}, 0);
    for (int64_t ch = 0; x && ch < c->channels; ch++)
        for (int64_t i = 0; i < P; i++) {
            float v = pixels[ch * P + i];
            tf_f32(x)[ch * P + i] = m->normalize ? (v - m->mean[ch]) / m->std[ch] : v;
        }
    return x;
}

/* ---------------------------------------------------------------- a caption */

/* Each id's cross-attention (the start's, then the n ids'), the mean over layers and heads, over
 * the patches (the class token's share left out, each row renormalised): (n + 1, N). */
static int attention_maps(const tf_caption_ved *m, const float *pixels, const int32_t *ids, int n, float *attention) {
    tf_caption_ved_dims c = tf_caption_ved_decoder_dims(m);
    int64_t N = tf_vit_patches(&m->encoder->cfg), T = n + 1, H = c.n_head;
    tf_ctx *ctx = tf_ctx_new(0);
    if (!ctx) return tf_set_error("caption: out of memory");
    tf_ctx_set_grad(ctx, 0);
    tf_tensor *x = tf_caption_ved_pixels(ctx, m, pixels);
    tf_tensor *y = tf_tensor_new(ctx, TF_DTYPE_I32, 2, (int64_t[]){1, T}, 0);  // (1,n+1)
    tf_caption_ved_outputs out;
    int rc = -1;
    if (x && y) {
        tf_i32(y)[0] = m->start_id;
        memcpy(tf_i32(y) + 1, ids, (size_t)n * sizeof *ids);
        rc = tf_caption_ved_run(ctx, m, &(tf_caption_ved_inputs){.pixel_values = x, .decoder_input_ids = y,
                                                                 .output_attentions = 1}, &out);
    }
    for (int64_t t = 0; !rc && t < T; t++) {
        float *row = attention + t * N;
        double sum = 0;
        memset(row, 0, (size_t)N * sizeof *row);
        for (int l = 0; l < c.n_layer; l++) {
            tf_tensor *p = tf_contiguous(ctx, out.cross_attentions[l]);  // (1,H,T,N+1)
            if (!p) return tf_ctx_free(ctx), -1;
            for (int64_t h = 0; h < H; h++)
                for (int64_t i = 0; i < N; i++) row[i] += tf_f32(p)[(h * T + t) * (N + 1) + 1 + i];
        }
        for (int64_t i = 0; i < N; i++) sum += row[i];
        for (int64_t i = 0; i < N; i++) row[i] = sum > 0 ? (float)(row[i] / sum) : 1.0f / (float)N;
    }
    tf_ctx_free(ctx);
    return rc;
}

int tf_caption_ved_generate(const tf_caption_ved *m, const float *pixels, const tf_generate_opts *o, int32_t *ids,
                            int cap, int *n, float *attention) {
    tf_generate_opts g = *o;
    if (g.eos_id < 0) g.eos_id = m->eos_id;
    int context = tf_caption_ved_decoder_dims(m).context;
    if (g.max_tokens <= 0 || g.max_tokens > context - 1) g.max_tokens = context - 1;
    tf_decoder *d = tf_caption_ved_decoder_new(m, pixels);
    tf_ids out = {0};
    int32_t start = m->start_id;
    int rc = d ? tf_generate(d, &start, 1, &g, NULL, NULL, &out, NULL) : -1;
    tf_decoder_free(d);
    size_t k = out.n && g.eos_id >= 0 && out.v[out.n - 1] == g.eos_id ? out.n - 1 : out.n;
    if (!rc && k > (size_t)cap) rc = tf_set_error("caption: %zu ids do not fit in %d", k, cap);
    if (!rc) memcpy(ids, out.v, k * sizeof *ids), *n = (int)k;
    tf_ids_free(&out);
    if (!rc && attention) rc = attention_maps(m, pixels, ids, *n, attention);
    return rc;
}
