/* The RNN baseline's configuration: one field table drives its defaults,
 * checks, JSON keys, training flags (tformer train --arch rnn) and the
 * checkpoint signature. Defaults: the paper's layout (a GRU, 620-wide
 * embeddings, 1000 hidden units) scaled down for two cores. */
#include "tformer/rnn_seq2seq.h"

static const char *const CELLS[] = {"gru", "lstm", NULL}; /* in tf_rnn_kind's order */

#define SIG TF_FIELD_SIGNATURE
#define R(m, type, def, range, choices, help, flags, alias) \
    TF_FIELD_ROW(tf_rnn_seq2seq_config, m, type, #m, def, range, choices, help, flags, alias)
static const tf_field ROWS[] = {
    R(src_vocab, TF_FIELD_INT, "0", "[0,inf)", NULL, "source tokens (training: the tokenizer's size + 3)", SIG, NULL),
    R(tgt_vocab, TF_FIELD_INT, "0", "[0,inf)", NULL, "target tokens (training: the tokenizer's size + 3)", SIG, NULL),
    R(context, TF_FIELD_INT, "128", "[1,inf)", NULL, "the longest source or target sequence", SIG, NULL),
    R(emb_dim, TF_FIELD_INT, "128", "[1,inf)", NULL, "word embedding width (the paper: 620)", SIG, NULL),
    R(hidden, TF_FIELD_INT, "256", "[1,inf)", NULL, "hidden units per encoder direction and of the decoder (the paper: 1000)",
      SIG, "hidden_size"),
    R(cell, TF_FIELD_ENUM, "gru", NULL, CELLS, "the recurrent cell: gru (the paper) or lstm", SIG, NULL),
    R(attn_size, TF_FIELD_INT, "256", "[1,inf)", NULL, "width of the alignment MLP v_a^T tanh(W_a s + U_a h) (the paper: 1000)",
      SIG, NULL),
    R(dropout, TF_FIELD_FLOAT, "0.1", "[0,1)", NULL, "dropout on the embeddings and the output layer's input", 0, NULL),
    R(share_embeddings, TF_FIELD_BOOL, "false", NULL, NULL, "one embedding table for source and target (joint vocabulary)",
      SIG, NULL),
    R(maxout, TF_FIELD_INT, "0", "[0,inf)", NULL,
      "L > 0: the paper's deep output, L maxout units over pairs of U_o [s; c; E y] (2L) before W_o (V,L); 0: one linear "
      "layer over [s; c; E y] to the vocabulary", SIG, NULL),
};
#undef R

const tf_field_table tf_rnn_seq2seq_config_table = {"RNN encoder-decoder", ROWS, (int)(sizeof ROWS / sizeof ROWS[0])};

tf_rnn_seq2seq_config tf_rnn_seq2seq_config_default(int src_vocab, int tgt_vocab) {
    tf_rnn_seq2seq_config c = {0};
    tf_fields f = {&tf_rnn_seq2seq_config_table, &c};
    tf_fields_defaults(&f, 1); /* cannot fail: tests/test_config.c parses every table's defaults */
    c.src_vocab = src_vocab, c.tgt_vocab = tgt_vocab;
    return c;
}

int tf_rnn_seq2seq_config_check(const tf_rnn_seq2seq_config *c) {
    tf_fields f = {&tf_rnn_seq2seq_config_table, (void *)c};
    if (tf_fields_check(&f, 1)) return -1;
    if (c->src_vocab < 1 || c->tgt_vocab < 1)
        return tf_set_error("rnn seq2seq: src_vocab %d, tgt_vocab %d: the model needs both vocabularies' sizes",
                            c->src_vocab, c->tgt_vocab);
    if (c->share_embeddings && c->src_vocab != c->tgt_vocab)
        return tf_set_error("rnn seq2seq: share_embeddings needs one vocabulary, got src_vocab %d and tgt_vocab %d",
                            c->src_vocab, c->tgt_vocab);
    return 0;
}
