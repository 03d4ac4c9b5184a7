/* The RNN encoder-decoder as a folder: config.json (the configuration
 * table's keys, model_type "tformer-rnn-seq2seq") and model.safetensors,
 * loaded strictly (model_folder.h). */
#include "../model_folder.h"
#include "tformer/rnn_seq2seq.h"

TF_FOLDER_CALLS(tf_rnn_seq2seq, "tformer-rnn-seq2seq")

tf_rnn_seq2seq *tf_rnn_seq2seq_load(const char *dir) { return read_folder(dir); }
