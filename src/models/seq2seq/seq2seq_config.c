/* The encoder-decoder's configuration: one field table drives its defaults,
 * checks, JSON keys, training flags and the checkpoint signature. Defaults:
 * the paper's base layout scaled down for Multi30k on two cores. */
#include "tformer/seq2seq.h"

static const char *const POS[] = {"learned", "sinusoidal", "sinusoidal_halves", NULL};
static const char *const ACTIVATIONS[] = {"relu", "gelu", "gelu_tanh", "silu|swish", NULL};
_Static_assert(TF_POS_SINUSOIDAL_HALVES == 2 && TF_ACT_SILU == 3, "choices by enum value");

#define SIG TF_FIELD_SIGNATURE
#define R(m, type, def, range, choices, help, flags, alias) \
    TF_FIELD_ROW(tf_seq2seq_config, m, type, #m, def, range, choices, help, flags, alias)
static const tf_field ROWS[] = {
    R(src_vocab, TF_FIELD_INT, "0", "[0,inf)", NULL, "source tokens (training: the source tokenizer's size)", SIG, NULL),
    R(tgt_vocab, TF_FIELD_INT, "0", "[0,inf)", NULL, "target tokens (training: the target tokenizer's size)", SIG, NULL),
    R(context, TF_FIELD_INT, "128", "[1,inf)", NULL, "the longest source or target sequence (positions)", SIG,
      "max_position_embeddings"),
    R(n_encoder_layers, TF_FIELD_INT, "3", "[1,10000]", NULL, "encoder blocks", SIG, "encoder_layers"),
    R(n_decoder_layers, TF_FIELD_INT, "3", "[1,10000]", NULL, "decoder blocks", SIG, "decoder_layers"),
    R(n_head, TF_FIELD_INT, "4", "[1,inf)", NULL, "attention heads", SIG, "heads"),
    R(d_model, TF_FIELD_INT, "256", "[1,inf)", NULL, "width, a multiple of n_head", SIG, NULL),
    R(d_ff, TF_FIELD_INT, "0", "[0,inf)", NULL, "feed-forward width; 0: 4 * d_model", SIG, "ffn_dim"),
    R(dropout, TF_FIELD_FLOAT, "0.1", "[0,1)", NULL, "dropout on the embeddings and each sub-layer's output (the paper: 0.1)",
      0, NULL),
    R(attn_dropout, TF_FIELD_FLOAT, "-1", "[-1,1)", NULL, "dropout on the attention weights; -1: --dropout", 0,
      "attention_dropout"),
    R(activation_dropout, TF_FIELD_FLOAT, "-1", "[-1,1)", NULL, "dropout after the feed-forward activation; -1: --dropout",
      0, NULL),
    R(pos, TF_FIELD_ENUM, "sinusoidal", NULL, POS, "positions: the sinusoidal table (the paper) or a learned one", SIG, NULL),
    R(norm_first, TF_FIELD_BOOL, "false", NULL, NULL, "pre-LN with final LayerNorms; false: post-LN (the paper)", SIG, NULL),
    R(activation, TF_FIELD_ENUM, "relu", NULL, ACTIVATIONS, "the feed-forward activation (the paper: relu)", SIG, NULL),
    R(share_embeddings, TF_FIELD_BOOL, "false", NULL, NULL, "one embedding table for source and target (joint vocabulary)", SIG, NULL),
    R(tied, TF_FIELD_BOOL, "true", NULL, NULL, "output projection = target embedding", SIG, NULL),
    R(scale_embedding, TF_FIELD_BOOL, "true", NULL, NULL, "embeddings times sqrt(d_model) (the paper)", SIG, NULL),
    R(norm_eps, TF_FIELD_FLOAT, "1e-5", "(0,inf)", NULL, "LayerNorm epsilon", SIG, NULL),
    /* Hugging Face Marian's settings (tf_seq2seq_load of a Marian folder sets them). Not part of the
     * signature, so that checkpoints written before these rows existed still resume. */
    R(final_logits_bias, TF_FIELD_BOOL, "false", NULL, NULL, "a (1,tgt_vocab) bias added to the logits (Marian's)", 0,
      NULL),
    R(pad_id, TF_FIELD_INT, "-1", "[-1,inf)", NULL, "padding id; -1: tformer's (vocabulary size - 3)", 0, NULL),
    R(bos_id, TF_FIELD_INT, "-1", "[-1,inf)", NULL, "the decoder's start id; -1: tformer's (target vocabulary size - 2)",
      0, NULL),
    R(eos_id, TF_FIELD_INT, "-1", "[-1,inf)", NULL, "end-of-sentence id; -1: tformer's (vocabulary size - 1)", 0, NULL),
};
#undef R

const tf_field_table tf_seq2seq_config_table = {"encoder-decoder model", ROWS, (int)(sizeof ROWS / sizeof ROWS[0])};

tf_seq2seq_config tf_seq2seq_config_default(int src_vocab, int tgt_vocab) {
    tf_seq2seq_config c = {0};
    tf_fields f = {&tf_seq2seq_config_table, &c};
    tf_fields_defaults(&f, 1); /* cannot fail: tests/test_config.c parses every table's defaults */
    c.src_vocab = src_vocab, c.tgt_vocab = tgt_vocab;
    return c;
}

int tf_seq2seq_config_check(const tf_seq2seq_config *c) {
    tf_fields f = {&tf_seq2seq_config_table, (void *)c};
    if (tf_fields_check(&f, 1)) return -1;
    if (c->src_vocab < 1 || c->tgt_vocab < 1)
        return tf_set_error("seq2seq: src_vocab %d, tgt_vocab %d: the model needs both vocabularies' sizes", c->src_vocab,
                            c->tgt_vocab);
    if (c->share_embeddings && c->src_vocab != c->tgt_vocab)
        return tf_set_error("seq2seq: share_embeddings needs one vocabulary, got src_vocab %d and tgt_vocab %d",
                            c->src_vocab, c->tgt_vocab);
    if ((c->attn_dropout < 0 && c->attn_dropout != -1) || (c->activation_dropout < 0 && c->activation_dropout != -1))
        return tf_set_error("seq2seq: attn_dropout %g, activation_dropout %g: a probability in [0,1), or -1 for dropout's",
                            c->attn_dropout, c->activation_dropout);
    if (c->d_model % c->n_head) return tf_set_error("seq2seq: d_model %d is not a multiple of n_head %d", c->d_model, c->n_head);
    const int ids[3] = {c->pad_id, c->bos_id, c->eos_id};
    static const char *const names[3] = {"pad_id", "bos_id", "eos_id"};
    int smaller = c->src_vocab < c->tgt_vocab ? c->src_vocab : c->tgt_vocab;
    for (int i = 0; i < 3; i++) /* one id for both sides (a joint vocabulary's): below both sizes */
        if (ids[i] >= smaller)
            return tf_set_error("seq2seq: %s %d is outside the vocabularies (src_vocab %d, tgt_vocab %d)", names[i],
                                ids[i], c->src_vocab, c->tgt_vocab);
    return 0;
}

/* tformer's own folders (-1): each side's V-3, V-2, V-1; else the configured id. */
tf_seq2seq_special tf_seq2seq_special_ids(const tf_seq2seq_config *c, int target) {
    int V = target ? c->tgt_vocab : c->src_vocab;
    tf_seq2seq_special s = {c->pad_id >= 0 ? c->pad_id : tf_seq2seq_pad_id(V),
                            c->bos_id >= 0 ? c->bos_id : tf_seq2seq_bos_id(V),
                            c->eos_id >= 0 ? c->eos_id : tf_seq2seq_eos_id(V)};
    return s;
}
