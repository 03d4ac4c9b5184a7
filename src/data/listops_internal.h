/* ListOps rows as the batches hold them, shared by the loader (src/data/listops.c)
 * and the test-set scoring (src/train/task_listops.c). Private to the library. */
#ifndef TF_LISTOPS_INTERNAL_H
#define TF_LISTOPS_INTERNAL_H

#include "tformer/data.h"

/* Example `index` of subset as a row of T positions: [CLS], its tokens, then
 * TF_LISTOPS_PAD in ids (T); 1 on [CLS] and the tokens, 0 on the padding, in
 * mask (T); its answer in *label. 0, or -1 with a message (T too short). */
int tf_listops_row(const tf_listops_opts *o, int subset, int64_t index, int T, int32_t *ids, int32_t *mask,
                   int32_t *label);

/* Examples idx[0..rows) of subset as one batch: *ids and *mask (rows, Tb)
 * rows as tf_listops_row writes them, labels (rows). Tb = T, or with bucket >
 * 0 the longest row ([CLS] included) rounded up to a multiple of bucket, at
 * most T. 0, or -1 with a message. */
int tf_listops_batch(tf_ctx *ctx, const tf_listops_opts *o, int subset, const int64_t *idx, int rows, int T,
                     int bucket, tf_tensor **ids, tf_tensor **mask, int32_t *labels);

#endif
