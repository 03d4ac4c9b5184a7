/* The translation task for the RNN baseline (Bahdanau attention,
 * include/tformer/rnn_seq2seq.h): the shared translation task of
 * seq2seq_task.c (tokenizer, parallel loader, label smoothing, folder)
 * with this family's tables and calls. */
#include "../../task/task_internal.h"
#include "tformer/rnn_seq2seq.h"

static const tf_field ROWS[] = {TF_TRANSLATION_ROWS(tf_rnn_seq2seq_task_config, tf_rnn_seq2seq_config_table)};
const tf_field_table tf_rnn_seq2seq_task_config_table = {"RNN translation", ROWS, (int)(sizeof ROWS / sizeof ROWS[0])};

TF_FIELDS_DEFAULT_FN(tf_rnn_seq2seq_task_config, tf_rnn_seq2seq_task_config_default, tf_rnn_seq2seq_task_config_table)

static void *rnn_new(const void *cfg, uint64_t seed) { return tf_rnn_seq2seq_new(cfg, seed); }
static void rnn_free(void *m) { tf_rnn_seq2seq_free(m); }
static tf_params *rnn_params(const void *m) { return ((const tf_rnn_seq2seq *)m)->params; }
static int rnn_save(const void *m, const char *dir) { return tf_rnn_seq2seq_save(m, dir); }
static tf_decoder *rnn_decoder(const void *m, const int32_t *src, int n, int cap) {
    return tf_rnn_seq2seq_decoder_new(m, src, n, cap);
}
static tf_decoder *rnn_decoder_batch(const void *m, const int32_t *const *src, const int *n_src, int n, int cap) {
    return tf_rnn_seq2seq_decoder_new_batch(m, src, n_src, n, cap);
}

static tf_tensor *rnn_loss(tf_ctx *ctx, const void *m, const tf_batch *b, float label_smoothing) {
    tf_rnn_seq2seq_inputs in = {.input_ids = tf_batch_get(b, "src_ids"), .attention_mask = tf_batch_get(b, "src_mask"),
                                .decoder_input_ids = tf_batch_get(b, "tgt_in"), .labels = tf_batch_get(b, "tgt_out"),
                                .label_smoothing = label_smoothing};
    tf_rnn_seq2seq_outputs out;
    return tf_rnn_seq2seq_run(ctx, m, &in, &out) ? NULL : out.loss;
}

static const tf_translation_family RNN = {
    &tf_rnn_seq2seq_task_config_table, &tf_rnn_seq2seq_config_table,
    TF_TRANSLATION_LAYOUT(tf_rnn_seq2seq_task_config, tf_rnn_seq2seq_config),
    rnn_new, rnn_free, rnn_params, rnn_loss, rnn_save, rnn_decoder, rnn_decoder_batch};

tf_task *tf_rnn_seq2seq_task_new(const tf_rnn_seq2seq_task_config *c, const char *src, const char *tgt,
                                 const char *valid_src, const char *valid_tgt, const char *tokenizer,
                                 const char *run_dir, int resume, int accum, uint64_t seed) {
    return tf_translation_task_new(&RNN, c, src, tgt, valid_src, valid_tgt, tokenizer, run_dir, resume, accum, seed);
}

const tf_rnn_seq2seq *tf_rnn_seq2seq_task_model(const tf_task *t) { return tf_translation_task_model(t, &RNN); }
