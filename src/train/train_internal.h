/* Private: shared by the trainer and its tasks. */
#ifndef TF_TRAIN_INTERNAL_H
#define TF_TRAIN_INTERNAL_H

#include "../util/util.h"

/* Copy a tokenizer folder (or a WordPiece vocab.txt) into dir in a layout
 * tf_tokenizer_load reads, or learn the data's characters ("char"). */
int tf_task_tokenizer_install(const char *spec, const char *const *data, int n_data, const char *dir);
/* dir's tokenizer files into the checkpoint's metadata (a checkpoint is complete by itself). */
int tf_task_tokenizer_save(const char *dir, tf_st_writer *w);
/* On resume dir's tokenizer must be the one the checkpoint (path ck) was trained with. */
int tf_task_tokenizer_check(const char *dir, const tf_st_file *f, const char *ck);

#endif
