/* Private to src/models: what the translation decoders (the Transformer's and
 * the RNN's) share for a batch of R source sentences decoded together: the
 * sources padded to the longest (S) with their mask, and the contexts they
 * live in (two, alternating: a row selection gathers into the other). */
#ifndef TF_SOURCE_BATCH_H
#define TF_SOURCE_BATCH_H

#include "tformer/core.h"

typedef struct {
    tf_ctx *mem_ctx[2]; /* the batch's tensors live in mem_ctx[cur]; select gathers into the other */
    int cur;
    tf_ctx *step_ctx;   /* one decoding step's tensors */
    tf_tensor *src_ids;  /* (R,S) I32, padding id 0 */
    tf_tensor *src_mask; /* (R,S) I32, 1 = token; NULL: no padding */
} tf_source_batch;

/* The longest of n sources (each of 1 to context tokens) into *S. */
int tf_source_batch_check(const int *n_src, int n, int context, int *S);
/* The contexts made (gradients off), then the R sources padded to S (and
 * masked when their lengths differ) into mem_ctx[0]. */
int tf_source_batch_init(tf_source_batch *b, const int32_t *const *src, const int *n_src, int R, int S);
void tf_source_batch_free(tf_source_batch *b);
/* t (contiguous, e.g. an encoder output computed in step_ctx) copied into
 * mem_ctx[cur]: the encoder's intermediate tensors stay in the step context,
 * whose memory the first step reuses, and the memory context holds only what
 * the steps read. */
tf_tensor *tf_source_batch_keep(tf_source_batch *b, const tf_tensor *t);
/* A step's logits y (R,n,V): each row's last position copied into logits (R,V), or,
 * logits NULL, moved to row r of y itself (the decoder then hands y out: no copy). */
void tf_source_batch_last(float *logits, float *y, int64_t R, int n, int64_t V);

#endif
