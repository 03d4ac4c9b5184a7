/* The ViViT configuration: one field table drives its defaults, checks, the
 * training flags and the checkpoint signature; Hugging Face's VivitConfig
 * keys are its aliases where they exist. */
#include <string.h>

#include "tformer/vivit.h"

static const char *const ACTIVATIONS[] = {"relu", "gelu", "gelu_fast|gelu_tanh|gelu_new|gelu_pytorch_tanh",
                                          "silu|swish", NULL};
static const char *const HEADS[] = {"VivitModel", "VivitForVideoClassification", NULL};
static const char *const EMBEDDINGS[] = {"tubelet", "frame", NULL};
_Static_assert(sizeof(tf_vivit_head) == sizeof(int) && sizeof(tf_vivit_embedding) == sizeof(int),
               "enum rows store an int");

#define SIG TF_FIELD_SIGNATURE
#define R(m, type, def, range, choices, help, flags, alias) \
    TF_FIELD_ROW(tf_vivit_config, m, type, #m, def, range, choices, help, flags, alias)
static const tf_field ROWS[] = {
    R(image_size, TF_FIELD_INT, "32", "[1,65535]", NULL, "frames are image_size x image_size pixels", SIG, NULL),
    R(num_frames, TF_FIELD_INT, "8", "[1,65535]", NULL, "frames per clip", SIG, "frames"),
    R(channels, TF_FIELD_INT, "1", "[1,4]", NULL, "colour channels (1 grey, 3 RGB)", SIG, "num_channels"),
    R(tubelet_t, TF_FIELD_INT, "2", "[1,65535]", NULL, "frames per tubelet (tubelet embedding)", SIG, NULL),
    R(tubelet_h, TF_FIELD_INT, "8", "[1,65535]", NULL, "rows per tubelet or patch", SIG, "patch_size"),
    R(tubelet_w, TF_FIELD_INT, "8", "[1,65535]", NULL, "columns per tubelet or patch", SIG, NULL),
    R(embedding, TF_FIELD_ENUM, "tubelet", NULL, EMBEDDINGS,
      "tubelet: non-overlapping spatio-temporal tubes; frame: uniform frame sampling, each frame's patches "
      "(tubes one frame long)", SIG, NULL),
    R(model_kind, TF_FIELD_INT, "1", "[1,4]", NULL,
      "1 joint space-time attention, 2 factorised encoder (spatial then temporal encoder), 3 factorised "
      "self-attention (spatial then temporal attention in each block), 4 factorised dot-product attention (half "
      "the heads spatial, half temporal; n_head even)", SIG, NULL),
    R(n_layer, TF_FIELD_INT, "4", "[1,10000]", NULL, "Transformer blocks (Model 2: of the spatial encoder)", SIG,
      "layers|num_hidden_layers"),
    R(n_layer_temporal, TF_FIELD_INT, "2", "[1,10000]", NULL, "Model 2: blocks of the temporal encoder", SIG, NULL),
    R(n_head, TF_FIELD_INT, "4", "[1,inf)", NULL, "attention heads", SIG, "heads|num_attention_heads"),
    R(d_model, TF_FIELD_INT, "64", "[1,inf)", NULL, "width, a multiple of n_head", SIG, "hidden_size|width"),
    R(d_ff, TF_FIELD_INT, "0", "[0,inf)", NULL, "feed-forward width; 0: 4 * d_model", SIG, "intermediate_size"),
    R(activation, TF_FIELD_ENUM, "gelu_fast", NULL, ACTIVATIONS, "the feed-forward activation (ViViT: tanh gelu)",
      SIG, "hidden_act"),
    R(norm_eps, TF_FIELD_FLOAT, "1e-6", "(0,inf)", NULL, "LayerNorm epsilon", SIG, "layer_norm_eps"),
    R(dropout, TF_FIELD_FLOAT, "0", "[0,1)", NULL, "dropout on the embeddings and sub-layer outputs", 0,
      "hidden_dropout_prob"),
    R(attn_dropout, TF_FIELD_FLOAT, "0", "[0,1)", NULL, "dropout on the attention weights", 0,
      "attention_probs_dropout_prob"),
    R(qkv_bias, TF_FIELD_BOOL, "true", NULL, NULL, "the query, key and value projections have biases", SIG, NULL),
    R(head, TF_FIELD_ENUM, "VivitForVideoClassification", NULL, HEADS, "the head (Hugging Face's architecture)", SIG,
      NULL),
    R(n_labels, TF_FIELD_INT, "10", "[1,100000]", NULL, "classes of the classifier", SIG, "num_labels"),
    R(pooler, TF_FIELD_BOOL, "false", NULL, NULL, "VivitModel: the tanh pooler over the class token", SIG, NULL),
    R(init_std, TF_FIELD_FLOAT, "0.02", "(0,inf)", NULL, "std of the initial weights", 0, "initializer_range"),
};
#undef R

const tf_field_table tf_vivit_config_table = {"ViViT model", ROWS, (int)(sizeof ROWS / sizeof ROWS[0])};

tf_vivit_config tf_vivit_config_default(void) {
    tf_vivit_config c = {0};
    tf_fields f = {&tf_vivit_config_table, &c};
    tf_fields_defaults(&f, 1); /* cannot fail: tests/test_config.c parses every table's defaults */
    return c;
}

int tf_vivit_tube_t(const tf_vivit_config *c) { return c->embedding == TF_VIVIT_FRAME ? 1 : c->tubelet_t; }

int tf_vivit_spatial_tokens(const tf_vivit_config *c) {
    if (c->tubelet_h < 1 || c->tubelet_w < 1) return 0;
    return (c->image_size / c->tubelet_h) * (c->image_size / c->tubelet_w);
}

int tf_vivit_time_tokens(const tf_vivit_config *c) {
    int t = tf_vivit_tube_t(c);
    return t > 0 ? c->num_frames / t : 0;
}

int tf_vivit_config_check(const tf_vivit_config *c) {
    tf_fields f = {&tf_vivit_config_table, (void *)c};
    if (tf_fields_check(&f, 1)) return -1;
    if (c->d_model % c->n_head) return tf_set_error("d_model %d is not a multiple of n_head %d", c->d_model, c->n_head);
    if (c->tubelet_h > c->image_size || c->tubelet_w > c->image_size)
        return tf_set_error("tubelet %dx%d is larger than image_size %d", c->tubelet_h, c->tubelet_w, c->image_size);
    if (tf_vivit_tube_t(c) > c->num_frames)
        return tf_set_error("tubelet_t %d is more than num_frames %d: a clip needs at least one tubelet of frames",
                            c->tubelet_t, c->num_frames);
    if (c->head == TF_VIVIT_VIDEO_CLS && c->pooler)
        return tf_set_error("pooler: VivitForVideoClassification has none (classifier on the class token)");
    if (c->model_kind >= 3 && c->pooler)
        return tf_set_error("pooler: Model %d has no class token to pool (its classifier takes the mean of the tokens)",
                            c->model_kind);
    if (c->model_kind == 4 && c->n_head % 2)
        return tf_set_error("n_head %d: Model 4 splits the heads in two halves (spatial, temporal), n_head must be "
                            "even", c->n_head);
    return 0;
}

const char *tf_vivit_head_name(tf_vivit_head h) {
    return h >= TF_VIVIT_BODY && h <= TF_VIVIT_VIDEO_CLS ? HEADS[h] : "unknown";
}

int tf_vivit_head_from_name(const char *name) {
    for (int i = 0; name && HEADS[i]; i++)
        if (!strcmp(HEADS[i], name)) return i;
    return -1;
}
