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

#endif
