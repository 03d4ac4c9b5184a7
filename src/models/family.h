/* Private to src/models: what a family's registry row (src/models/<family>/<family>_family.c)
 * needs besides the public tf_family (tformer/model.h). */
#ifndef TF_FAMILY_H
#define TF_FAMILY_H

#include "tformer/model.h"

/* Validation batches of `rows` rows in one pass over n held-out items (1 when rows is 0). */
int64_t tf_family_one_pass(int64_t n, int64_t rows);

/* The rows, each defined in its family's folder and listed once in registry.c. */
extern const tf_family tf_family_gpt, tf_family_imagegpt;
extern const tf_family tf_family_bert, tf_family_listops, tf_family_roformer, tf_family_bigbird;
extern const tf_family tf_family_seq2seq, tf_family_rnn;
extern const tf_family tf_family_vit, tf_family_swin, tf_family_vivit;
extern const tf_family tf_family_continual, tf_family_nystrom;

#endif
