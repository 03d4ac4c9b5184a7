/* An encoder-decoder as a folder: config.json (the configuration table's
 * keys, model_type "tformer-seq2seq") and model.safetensors under the
 * BART / Marian parameter names (model_folder.h); Hugging Face Marian
 * folders are read by seq2seq_marian.c. */
#include "../model_folder.h"
#include "seq2seq_internal.h"

#define MODEL_TYPE "tformer-seq2seq"

tf_seq2seq *tf_seq2seq_load(const char *dir) {
    if (tf_seq2seq_is_marian(dir)) return tf_seq2seq_load_marian(dir);
    tf_seq2seq_config c;
    if (tf_folder_read_config(dir, MODEL_TYPE, &tf_seq2seq_config_table, &c)) return NULL;
    tf_seq2seq *m = tf_seq2seq_new(&c, 0);
    if (m && tf_folder_load_weights(dir, m->params)) {
        tf_seq2seq_free(m);
        return NULL;
    }
    return m;
}

int tf_seq2seq_save(const tf_seq2seq *m, const char *dir) {
    return tf_folder_save(dir, MODEL_TYPE, &tf_seq2seq_config_table, &m->cfg, m->params);
}
