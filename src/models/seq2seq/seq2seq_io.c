/* An encoder-decoder as a folder: config.json (the configuration table's
 * keys, model_type "tformer-seq2seq") and model.safetensors under the
 * BART / Marian parameter names (model_folder.h); Hugging Face Marian
 * folders are read by seq2seq_marian.c. */
#include "../model_folder.h"
#include "seq2seq_internal.h"

TF_FOLDER_CALLS(tf_seq2seq, "tformer-seq2seq")

tf_seq2seq *tf_seq2seq_load(const char *dir) {
    return tf_seq2seq_is_marian(dir) ? tf_seq2seq_load_marian(dir) : read_folder(dir);
}
