/* tformer: Continual Transformers (Hedegaard & Iosifidis): step inference on
 * a stream with cached state, outputs identical to regular inference on the
 * window of the last n steps. See docs/continual.md. */
#ifndef TFORMER_CONTINUAL_H
#define TFORMER_CONTINUAL_H

#include "nn.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------- continual attention */

/* Retroactive (CoReAtt): each step updates the outputs of all n queries of
 * the window (removes the oldest key, adds the newest). Single-output
 * (CoSiAtt): only the newest query, over the cached keys and values. */
typedef enum { TF_COATT_RETRO, TF_COATT_SINGLE } tf_coatt_kind;

/* The cached state of one self-attention over a batch of streams. */
typedef struct tf_coatt tf_coatt;

/* State for the self-attention m (fused or separate q/k/v projections of width
 * d_model, weights (out,in), no relative positions, no Nyström) over `batch`
 * streams with window n >= 1. Retroactive rows keep a running maximum per
 * row (rescaling when a larger score arrives) and sums in double; a row whose
 * sum loses most of its mass when the oldest key leaves is recomputed. */
TF_API tf_coatt *tf_coatt_new(const tf_mha *m, tf_coatt_kind kind, int batch, int window);
TF_API void tf_coatt_free(tf_coatt *s);
/* Forget the stream (the next step is step 0). */
TF_API void tf_coatt_reset(tf_coatt *s);
/* Steps taken, and how many rows were recomputed to avoid cancellation. */
TF_API int64_t tf_coatt_steps(const tf_coatt *s);
TF_API int64_t tf_coatt_recomputed(const tf_coatt *s);
/* One step: x (B,d_model), each stream's new input. Returns 1 and *out
 * (retroactive: (B,n,d_model), oldest first; single-output: (B,d_model)) once
 * the window is full, 0 (*out NULL) during the first n-1 steps, -1 on an
 * error. The projections run as ops in ctx (no gradient is recorded). */
TF_API int tf_coatt_step(tf_ctx *ctx, tf_coatt *s, tf_tensor *x, tf_tensor **out);

#ifdef __cplusplus
}
#endif
#endif /* TFORMER_CONTINUAL_H */
