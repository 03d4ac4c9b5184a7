/* The captioner's configuration: one field table drives its defaults, checks, JSON keys,
 * training flags (tformer train --arch caption) and the checkpoint signature. Defaults:
 * the scene grammar's 24 x 24 grey images, a 3 x 3 grid, a GRU. */
#include "tformer/caption.h"

static const char *const CELLS[] = {"gru", "lstm", NULL}; /* in tf_rnn_kind's order */
static const char *const DECODERS[] = {"rnn", "transformer", NULL}; /* in tf_caption_decoder_kind's order */
static const char *const GRAMMARS[] = {"shapes", "fashion", NULL};   /* in tf_caption_grammar's order */
static const char *const ENCODERS[] = {"cnn", "vit", NULL};          /* in tf_caption_encoder_kind's order */
_Static_assert(sizeof(tf_caption_encoder_kind) == sizeof(int), "enum rows store an int");
_Static_assert(sizeof(tf_caption_grammar) == sizeof(int), "enum rows store an int");
_Static_assert(sizeof(tf_caption_decoder_kind) == sizeof(int), "enum rows store an int");

#define SIG TF_FIELD_SIGNATURE
#define SIG_NEW (TF_FIELD_SIGNATURE | TF_FIELD_SIG_NEW) /* rows added later: checkpoints from before still match */
#define R(m, type, def, range, choices, help, flags) \
    TF_FIELD_ROW(tf_caption_config, m, type, #m, def, range, choices, help, flags, NULL)
static const tf_field ROWS[] = {
    R(image_size, TF_FIELD_INT, "24", "[1,4096]", NULL, "the images' side in pixels (square)", SIG),
    R(channels, TF_FIELD_INT, "1", "[1,3]", NULL, "image channels: 1 (grey) or 3 (RGB)", SIG),
    R(n_conv, TF_FIELD_INT, "3", "[1,8]", NULL, "3x3 stride-2 convolutions of the CNN: a grid of image_size / 2^n_conv a side",
      SIG),
    R(cnn_dim, TF_FIELD_INT, "32", "[1,4096]", NULL, "D: channels of each convolution, the grid's feature width", SIG),
    R(vocab, TF_FIELD_INT, "16", "[4,1000000]", NULL, "words + 3 specials (the scene grammar: 16)", SIG),
    R(context, TF_FIELD_INT, "16", "[2,4096]", NULL, "the longest caption, BOS or EOS included", SIG),
    R(emb_dim, TF_FIELD_INT, "32", "[1,4096]", NULL, "E: word embedding width", SIG),
    R(hidden, TF_FIELD_INT, "64", "[1,4096]", NULL, "H: the decoder's state", SIG),
    R(cell, TF_FIELD_ENUM, "gru", NULL, CELLS, "the recurrent cell: gru or lstm", SIG),
    R(attn_size, TF_FIELD_INT, "64", "[1,4096]", NULL, "A: width of the attention MLP v^T tanh(W_a h + U_a a_i)", SIG),
    R(attention, TF_FIELD_BOOL, "true", NULL, NULL,
      "attend over the grid at each word (Show, Attend and Tell); false: the baseline, the pooled vector starts the RNN "
      "and nothing is attended", SIG),
    R(alpha_c, TF_FIELD_FLOAT, "1", "[0,inf)", NULL,
      "weight of the doubly-stochastic attention regulariser sum_i (1 - sum_t alpha_ti)^2", 0),
    R(dropout, TF_FIELD_FLOAT, "0", "[0,1)", NULL, "dropout on the output layer's input", 0),
    R(decoder, TF_FIELD_ENUM, "rnn", NULL, DECODERS,
      "rnn (the deck's: a GRU or LSTM with additive attention) or transformer (pre-LN blocks with cross-attention over "
      "the grid; d_model = hidden)", SIG),
    R(n_layer, TF_FIELD_INT, "2", "[1,8]", NULL, "transformer: decoder blocks", SIG),
    R(n_head, TF_FIELD_INT, "4", "[1,64]", NULL, "transformer: attention heads (hidden a multiple of it)", SIG),
    R(d_ff, TF_FIELD_INT, "128", "[1,65536]", NULL, "transformer: the feed-forward's width", SIG),
    R(grammar, TF_FIELD_ENUM, "shapes", NULL, GRAMMARS,
      "the words it speaks and the scenes it trains on: shapes (24x24 shapes, vocab 16) or fashion (96x96 "
      "Fashion-MNIST scenes, vocab 31)", SIG),
    R(encoder, TF_FIELD_ENUM, "cnn", NULL, ENCODERS,
      "cnn (n_conv strided convolutions: the grid) or vit (with decoder transformer: a ViT of width cnn_dim, n_layer "
      "blocks, and a GPT-2 decoder with cross-attention and the tied head: transformers' VisionEncoderDecoderModel, "
      "saved as its folder)", SIG_NEW),
    R(patch_size, TF_FIELD_INT, "8", "[1,4096]", NULL, "vit: the patches' side (image_size a multiple of it)", SIG_NEW),
};
#undef R

const tf_field_table tf_caption_config_table = {"captioner", ROWS, (int)(sizeof ROWS / sizeof ROWS[0])};

TF_FIELDS_DEFAULT_FN(tf_caption_config, tf_caption_config_default, tf_caption_config_table)

int tf_caption_grid(const tf_caption_config *c) {
    if (c->encoder == TF_CAPTION_VIT) return c->patch_size >= 1 ? c->image_size / c->patch_size : 0;
    return c->n_conv >= 1 && c->n_conv <= 8 ? c->image_size >> c->n_conv : 0;
}

/* The ViT captioner's settings: a VisionEncoderDecoderModel's (ViT + GPT-2). */
static int check_vit(const tf_caption_config *c) {
    if (c->decoder != TF_CAPTION_TRANSFORMER)
        return tf_set_error("caption: encoder vit needs decoder transformer (a VisionEncoderDecoderModel's GPT-2)");
    if (c->hidden % c->n_head)
        return tf_set_error("caption: hidden %d is not a multiple of n_head %d", c->hidden, c->n_head);
    if (!c->attention) return tf_set_error("caption: the transformer decoder attends: attention false is the rnn's baseline");
    if (c->image_size % c->patch_size)
        return tf_set_error("caption: image_size %d is not a multiple of patch_size %d", c->image_size, c->patch_size);
    if (c->cnn_dim % c->n_head)
        return tf_set_error("caption: cnn_dim %d (the ViT's width) is not a multiple of n_head %d", c->cnn_dim, c->n_head);
    if (c->dropout > 0)
        return tf_set_error("caption: dropout %g: the ViT captioner has none (its folder's GPT-2 would not say it)",
                            (double)c->dropout);
    return 0;
}

int tf_caption_config_check(const tf_caption_config *c) {
    tf_fields f = {&tf_caption_config_table, (void *)c};
    if (tf_fields_check(&f, 1)) return -1;
    if (c->channels != 1 && c->channels != 3) return tf_set_error("caption: channels %d: 1 or 3", c->channels);
    if (c->encoder == TF_CAPTION_VIT) return check_vit(c);
    int g = tf_caption_grid(c);
    if (g < 1 || g << c->n_conv != c->image_size)
        return tf_set_error("caption: image_size %d is not a multiple of 2^n_conv = %d", c->image_size, 1 << c->n_conv);
    if (c->decoder == TF_CAPTION_TRANSFORMER && c->hidden % c->n_head)
        return tf_set_error("caption: hidden %d is not a multiple of n_head %d", c->hidden, c->n_head);
    if (c->decoder == TF_CAPTION_TRANSFORMER && !c->attention)
        return tf_set_error("caption: the transformer decoder attends: attention false is the rnn's baseline");
    return 0;
}
