/* ListOps batches as the loader holds them, shared by the loader (src/data/listops.c)
 * and the test-set scoring (src/models/bert/listops_task.c). Private to the library. */
#ifndef TF_LISTOPS_INTERNAL_H
#define TF_LISTOPS_INTERNAL_H

#include "tformer/data.h"

/* Examples idx[0..rows) of subset as one batch: in *ids (rows, Tb) each row
 * [CLS], its tokens, [SEP] with o->sep, then TF_LISTOPS_PAD; in *mask (rows,
 * Tb) 1 on [CLS], the tokens and [SEP], 0 on the padding; the answers in
 * labels (rows). Tb = T, or with bucket > 0 the longest row ([CLS] and [SEP]
 * included) rounded up to a multiple of bucket, at most T. 0, or -1 with a
 * message. */
int tf_listops_batch(tf_ctx *ctx, const tf_listops_opts *o, int subset, const int64_t *idx, int rows, int T,
                     int bucket, tf_tensor **ids, tf_tensor **mask, int32_t *labels);

#endif
