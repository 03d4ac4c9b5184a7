/* Private to src/models/seq2seq: Hugging Face Marian folders (seq2seq_marian.c). */
#ifndef TF_SEQ2SEQ_INTERNAL_H
#define TF_SEQ2SEQ_INTERNAL_H

#include <cjson/cJSON.h>

#include "tformer/seq2seq.h"

/* 1 when dir/config.json names model_type "marian" (0 when unreadable: the caller reports). */
int tf_seq2seq_is_marian(const char *dir);
/* A MarianConfig (root: config.json, read from path) mapped onto a checked tf_seq2seq_config. */
int tf_seq2seq_config_from_marian(const cJSON *root, const char *path, tf_seq2seq_config *c);
/* A MarianMTModel folder: config.json mapped onto tf_seq2seq_config, model.safetensors. */
tf_seq2seq *tf_seq2seq_load_marian(const char *dir);

#endif
