/* The translation task for the RNN baseline (Bahdanau attention,
 * include/tformer/rnn_seq2seq.h): the shared translation task of
 * seq2seq_task.c (tokenizer, parallel loader, label smoothing, folder)
 * with this family's tables and calls. */
#include "../../task/task_internal.h"
#include "tformer/rnn_seq2seq.h"

static const tf_field ROWS[] = {TF_TRANSLATION_ROWS(tf_rnn_seq2seq_task_config, tf_rnn_seq2seq_config_table)};
const tf_field_table tf_rnn_seq2seq_task_config_table = {"RNN translation", ROWS, (int)(sizeof ROWS / sizeof ROWS[0])};

TF_FIELDS_DEFAULT_FN(tf_rnn_seq2seq_task_config, tf_rnn_seq2seq_task_config_default, tf_rnn_seq2seq_task_config_table)

TF_TRANSLATION_FAMILY(RNN, rnn, tf_rnn_seq2seq);

tf_task *tf_rnn_seq2seq_task_new(const tf_rnn_seq2seq_task_config *c, const char *src, const char *tgt,
                                 const char *valid_src, const char *valid_tgt, const char *tokenizer,
                                 const char *run_dir, int resume, int accum, uint64_t seed) {
    return tf_translation_task_new(&RNN, c, src, tgt, valid_src, valid_tgt, tokenizer, run_dir, resume, accum, seed);
}

const tf_rnn_seq2seq *tf_rnn_seq2seq_task_model(const tf_task *t) { return tf_translation_task_model(t, &RNN); }
