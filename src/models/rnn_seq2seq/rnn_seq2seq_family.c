/* The RNN translation baseline's registry row (tformer/model.h): a GRU/LSTM
 * encoder-decoder with Bahdanau attention. */
#include <stdlib.h>
#include <string.h>

#include "../family.h"
#include "tformer/rnn_seq2seq.h"

static const char *const RNN_TYPES[] = {"tformer-rnn-seq2seq", NULL};

static void rnn_defaults(void *cfg, tf_train_config *train) {
    (void)train;
    *(tf_rnn_seq2seq_task_config *)cfg = tf_rnn_seq2seq_task_config_default();
}

static tf_task *rnn_task(const void *cfg, const tf_task_args *a) {
    return tf_rnn_seq2seq_task_new(cfg, a->src, a->tgt, a->valid_src, a->valid_tgt, a->tokenizer, a->run_dir,
                                   a->resume, a->accum, a->seed);
}

/* The task's validation batches, counted as the Transformer's task counts them (seq2seq_task.c). */
static int64_t rnn_val(const tf_task *t, const tf_task_args *a) {
    (void)a;
    return tf_seq2seq_task_val_batches(t);
}

TF_FAMILY_LOAD_FREE(rnn, tf_rnn_seq2seq)

static tf_decoder *rnn_decoder(const void *m, const int32_t *src, int n, int cap) {
    return tf_rnn_seq2seq_decoder_new(m, src, n, cap);
}
static tf_decoder *rnn_decoder_batch(const void *m, const int32_t *const *src, const int *n_src, int n, int cap) {
    return tf_rnn_seq2seq_decoder_new_batch(m, src, n_src, n, cap);
}

/* The alignment alpha (1,T,S), the panel alone. */
static int rnn_attend(const void *mv, tf_ctx *ctx, tf_tensor *src, tf_tensor *tgt, tf_attention_maps *a) {
    tf_rnn_seq2seq_inputs in = {.input_ids = src, .decoder_input_ids = tgt, .output_attentions = 1};
    tf_rnn_seq2seq_outputs out;
    if (tf_rnn_seq2seq_run(ctx, mv, &in, &out)) return -1;
    tf_tensor *p = tf_contiguous(ctx, out.attentions);  // p: (1,T,S)
    size_t n = (size_t)(tgt->shape[1] * src->shape[1]);
    a->what = "Bahdanau attention: the alignment \xCE\xB1 (each row sums to 1)";
    if (!p) return -1;
    if (!(a->panel = malloc(n * sizeof *a->panel))) return tf_set_error("out of memory");
    memcpy(a->panel, tf_f32(p), n * sizeof *a->panel);
    return 0;
}

static int rnn_translation(void *model, tf_translation *t) {
    const tf_rnn_seq2seq *m = model;
    const int S = m->cfg.src_vocab, T = m->cfg.tgt_vocab;
    *t = (tf_translation){m, S, T, m->cfg.context,
                          {tf_seq2seq_pad_id(S), tf_seq2seq_bos_id(S), tf_seq2seq_eos_id(S)},
                          {tf_seq2seq_pad_id(T), tf_seq2seq_bos_id(T), tf_seq2seq_eos_id(T)}, 0,
                          rnn_decoder, rnn_decoder_batch, rnn_attend};
    return 0;
}
static int rnn_save(const void *model, const char *dir) { return tf_rnn_seq2seq_save(model, dir); }

const tf_family tf_family_rnn = {
    .name = "rnn", .summary = "RNN translation",
    .model_types = RNN_TYPES, .verbs = "translate", .caps = TF_CAP_TRANSLATE,
    .load = rnn_load, .free = rnn_free,
    .config_table = &tf_rnn_seq2seq_config_table, .save = rnn_save,
    .input = TF_TRAIN_PARALLEL, .task_table = &tf_rnn_seq2seq_task_config_table,
    .task_size = sizeof(tf_rnn_seq2seq_task_config),
    .task_defaults = rnn_defaults, .task_new = rnn_task, .val_batches = rnn_val,
    .translation = rnn_translation,
};
