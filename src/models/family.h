/* Private to src/models: what a family's registry row (src/models/<family>/<family>_family.c)
 * needs besides the public tf_family (tformer/model.h). */
#ifndef TF_FAMILY_H
#define TF_FAMILY_H

#include "tformer/model.h"

/* Validation batches of `rows` rows in one pass over n held-out items (1 when rows is 0). */
int64_t tf_family_one_pass(int64_t n, int64_t rows);

#endif
