/* Private to src/models/caption: the Transformer decoder's pieces (caption_transformer.c). */
#ifndef TF_CAPTION_INTERNAL_H
#define TF_CAPTION_INTERNAL_H

#include "tformer/caption.h"

/* Its parameters: the grid's projection and positions, the words' positions, the blocks, the norm. */
int tf_caption_transformer_register(tf_caption *m);
/* The memory W_p a + P_grid (B,N,H) from the annotations a (B,N,D). */
tf_tensor *tf_caption_memory(tf_ctx *ctx, const tf_caption *m, tf_tensor *a);
/* The words ids (B,T) after the cache's over out->annotations (the memory): logits (B,T,V) and,
 * with want_alpha, the cross-attention averaged over layers and heads (B,T,N); caches advanced. */
int tf_caption_transformer_decode(tf_ctx *ctx, const tf_caption *m, tf_tensor *ids, tf_kv_cache *cache,
                                  tf_kv_cache *cross_cache, int want_alpha, tf_caption_outputs *out);

/* One image (C,S,S) in [0,1] as a VisionEncoderDecoderModel reads it (1,C,S,S): normalised as its
 * image processor says. */
tf_tensor *tf_caption_ved_pixels(tf_ctx *ctx, const tf_caption_ved *m, const float *pixels);

#endif
