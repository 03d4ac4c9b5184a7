/* The GPT configuration: one field table drives its defaults, checks, JSON
 * keys, the training flags and the checkpoint signature. */
#include "tformer/gpt.h"

static const char *const POS[] = {"learned", "sinusoidal", NULL};
static const char *const ACTIVATIONS[] = {"relu", "gelu", "gelu_tanh", "silu", "quick_gelu", NULL};
static const char *const NORMS[] = {"layer", "rms", NULL};
_Static_assert(sizeof(tf_pos_kind) == sizeof(int) && sizeof(tf_activation) == sizeof(int) &&
               sizeof(tf_norm_kind) == sizeof(int), "enum rows store an int");
_Static_assert(TF_ACT_QUICK_GELU == 4 && TF_NORM_RMS == 1, "choices by enum value");

#define SIG TF_FIELD_SIGNATURE
#define R(m, type, def, range, choices, help, flags, alias) \
    TF_FIELD_ROW(tf_gpt_config, m, type, #m, def, range, choices, help, flags, alias)
static const tf_field ROWS[] = {
    R(vocab_size, TF_FIELD_INT, "0", "[0,inf)", NULL, "tokens (training: 0 or the tokenizer's size)", SIG, NULL),
    R(context, TF_FIELD_INT, "64", "[1,inf)", NULL, "the longest sequence (positions)", SIG, NULL),
    R(n_layer, TF_FIELD_INT, "4", "[1,10000]", NULL, "Transformer blocks", SIG, "layers"),
    R(n_head, TF_FIELD_INT, "4", "[1,inf)", NULL, "attention heads", SIG, "heads"),
    R(d_model, TF_FIELD_INT, "128", "[1,inf)", NULL, "width, a multiple of n_head", SIG, "n_embd|width"),
    R(d_ff, TF_FIELD_INT, "0", "[0,inf)", NULL, "MLP width; 0: 4 * d_model", SIG, "n_inner|mlp_width"),
    R(dropout, TF_FIELD_FLOAT, "0", "[0,1)", NULL, "dropout on embeddings, attention weights and residuals", 0, NULL),
    R(pos, TF_FIELD_ENUM, "learned", NULL, POS, "positions: a learned table or the sinusoidal one", SIG, NULL),
    R(norm_first, TF_FIELD_BOOL, "true", NULL, NULL, "pre-LN with a final LayerNorm (GPT-2); false: post-LN", SIG, NULL),
    R(activation, TF_FIELD_ENUM, "gelu_tanh", NULL, ACTIVATIONS, "the MLP's activation (GPT-2: gelu_tanh)", SIG, NULL),
    R(tied, TF_FIELD_BOOL, "true", NULL, NULL, "output projection = token embedding (GPT-2)", SIG, NULL),
    R(norm_eps, TF_FIELD_FLOAT, "1e-5", "(0,inf)", NULL, "LayerNorm epsilon", SIG, "layer_norm_eps"),
    R(norm, TF_FIELD_ENUM, "layer", NULL, NORMS, "LayerNorm, or RMS norm: no centring, no bias (ImageGPT)", SIG, NULL),
    R(predict_last, TF_FIELD_BOOL, "true", NULL, NULL,
      "the head predicts every token; false: not the last (a start token): vocab_size - 1 outputs (ImageGPT)", SIG, NULL),
    TF_FIELD_SUB(tf_gpt_config, attention, tf_attention_table),
};
#undef R

const tf_field_table tf_gpt_config_table = {"GPT model", ROWS, (int)(sizeof ROWS / sizeof ROWS[0])};

tf_gpt_config tf_gpt_config_default(int vocab_size, int context, int n_layer, int n_head, int d_model) {
    tf_gpt_config c = {0};
    tf_fields f = {&tf_gpt_config_table, &c};
    tf_fields_defaults(&f, 1); /* cannot fail: tests/test_config.c parses every table's defaults */
    c.vocab_size = vocab_size, c.context = context, c.n_layer = n_layer, c.n_head = n_head, c.d_model = d_model;
    return c;
}

int tf_gpt_config_check(const tf_gpt_config *c) {
    tf_fields f = {&tf_gpt_config_table, (void *)c};
    if (tf_fields_check(&f, 1)) return -1;
    if (c->vocab_size < 1) return tf_set_error("vocab_size 0: the model needs its vocabulary's size");
    if (c->d_model % c->n_head) return tf_set_error("d_model %d is not a multiple of n_head %d", c->d_model, c->n_head);
    if (!c->predict_last && (c->tied || c->vocab_size < 2))
        return tf_set_error("predict_last false needs an untied head (tied false) and vocab_size >= 2");
    tf_block_config b = tf_block_config_default(c->d_model, c->n_head);
    b.self_attn.kind = TF_ATTN_CAUSAL;
    return tf_attention_apply(&c->attention, &b) || tf_block_config_check(&b) ? -1 : 0;
}
