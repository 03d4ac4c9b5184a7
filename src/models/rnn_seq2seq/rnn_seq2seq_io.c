/* The RNN encoder-decoder as a folder: config.json (the configuration
 * table's keys, model_type "tformer-rnn-seq2seq") and model.safetensors,
 * loaded strictly (model_folder.h). */
#include "../model_folder.h"
#include "tformer/rnn_seq2seq.h"

#define MODEL_TYPE "tformer-rnn-seq2seq"

tf_rnn_seq2seq *tf_rnn_seq2seq_load(const char *dir) {
    tf_rnn_seq2seq_config c;
    if (tf_folder_read_config(dir, MODEL_TYPE, &tf_rnn_seq2seq_config_table, &c)) return NULL;
    tf_rnn_seq2seq *m = tf_rnn_seq2seq_new(&c, 0);
    if (m && tf_folder_load_weights(dir, m->params)) {
        tf_rnn_seq2seq_free(m);
        return NULL;
    }
    return m;
}

int tf_rnn_seq2seq_save(const tf_rnn_seq2seq *m, const char *dir) {
    return tf_folder_save(dir, MODEL_TYPE, &tf_rnn_seq2seq_config_table, &m->cfg, m->params);
}
