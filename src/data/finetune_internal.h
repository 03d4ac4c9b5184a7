/* Private: shared by the fine-tuning readers (finetune.c) and encoder (finetune_encode.c). */
#ifndef TF_FINETUNE_INTERNAL_H
#define TF_FINETUNE_INTERNAL_H

#include "../util/util.h"

/* The index of a label in a sorted set, or -1. */
int tf_finetune_label_index(char *const *names, int n, const char *label);

#endif
