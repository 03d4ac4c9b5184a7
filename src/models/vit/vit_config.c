/* The ViT configuration: one field table drives its defaults, checks, the
 * training flags and the checkpoint signature; Hugging Face's ViTConfig keys
 * are its aliases (hidden_size for d_model, ...) and the head names its
 * architectures. */
#include <string.h>

#include "tformer/vit.h"

static const char *const ACTIVATIONS[] = {"relu", "gelu", "gelu_tanh|gelu_new|gelu_pytorch_tanh", "silu|swish", NULL};
static const char *const HEADS[] = {"ViTModel", "ViTForImageClassification", NULL};
static const char *const STEMS[] = {"patch", "conv", NULL};
static const char *const POOLINGS[] = {"mean", "cls", "max", "seq", NULL}; /* tf_pooling's order; max is refused */
_Static_assert(sizeof(tf_vit_head) == sizeof(int), "enum rows store an int");
_Static_assert(sizeof(tf_vit_stem) == sizeof(int), "enum rows store an int");
_Static_assert(sizeof(tf_pooling) == sizeof(int), "enum rows store an int");

#define SIG TF_FIELD_SIGNATURE
#define SIG_NEW (TF_FIELD_SIGNATURE | TF_FIELD_SIG_NEW) /* the patch stem's checkpoints keep their signature */
#define R(m, type, def, range, choices, help, flags, alias) \
    TF_FIELD_ROW(tf_vit_config, m, type, #m, def, range, choices, help, flags, alias)
static const tf_field ROWS[] = {
    R(image_size, TF_FIELD_INT, "28", "[1,65535]", NULL, "images are image_size x image_size pixels", SIG, NULL),
    R(patch_size, TF_FIELD_INT, "4", "[1,65535]", NULL, "patches are patch_size x patch_size pixels", SIG, "patch"),
    R(stem, TF_FIELD_ENUM, "patch", NULL, STEMS,
      "pixels to tokens: patch (one patch_size x patch_size convolution of that stride, Hugging Face's) or conv "
      "(Xiao et al. 2021: log2(patch_size) 3x3 convolutions of stride 2 with ReLUs, then a 1x1 to d_model; "
      "no normalisation; tformer folders only)", SIG_NEW, NULL),
    R(stem_width, TF_FIELD_INT, "0", "[0,4096]", NULL,
      "conv stem: outputs of its first 3x3 convolution, doubled by each next halving; 0: max(1, d_model / patch_size)",
      SIG_NEW, NULL),
    R(stem_depth, TF_FIELD_INT, "1", "[1,8]", NULL,
      "conv stem: 3x3 convolutions (with ReLUs) per halving of the grid, the first of stride 2, the others of "
      "stride 1 at its width; 1: Xiao et al.'s stem", SIG_NEW, NULL),
    R(channels, TF_FIELD_INT, "1", "[1,4]", NULL, "colour channels (1 grey, 3 RGB)", SIG, "num_channels"),
    R(n_layer, TF_FIELD_INT, "4", "[1,10000]", NULL, "Transformer blocks", SIG, "layers|num_hidden_layers"),
    R(n_head, TF_FIELD_INT, "4", "[1,inf)", NULL, "attention heads", SIG, "heads|num_attention_heads"),
    R(d_model, TF_FIELD_INT, "64", "[1,inf)", NULL, "width, a multiple of n_head", SIG, "hidden_size|width"),
    R(d_ff, TF_FIELD_INT, "0", "[0,inf)", NULL, "feed-forward width; 0: 4 * d_model", SIG, "intermediate_size"),
    R(activation, TF_FIELD_ENUM, "gelu", NULL, ACTIVATIONS, "the feed-forward activation (ViT: erf gelu)", SIG, "hidden_act"),
    R(norm_eps, TF_FIELD_FLOAT, "1e-12", "(0,inf)", NULL, "LayerNorm epsilon", SIG, "layer_norm_eps"),
    R(dropout, TF_FIELD_FLOAT, "0", "[0,1)", NULL, "dropout on the embeddings and sub-layer outputs", 0, "hidden_dropout_prob"),
    R(attn_dropout, TF_FIELD_FLOAT, "0", "[0,1)", NULL, "dropout on the attention weights", 0, "attention_probs_dropout_prob"),
    R(drop_path, TF_FIELD_FLOAT, "0", "[0,1)", NULL,
      "stochastic depth (DeiT: 0.1): while training each block's two sub-layer outputs are dropped per image with a "
      "rate rising linearly from 0 at the first block to this at the last, the kept ones scaled by 1/(1-rate)", 0,
      "drop_path_rate"),
    R(qkv_bias, TF_FIELD_BOOL, "true", NULL, NULL, "the query, key and value projections have biases", SIG, NULL),
    R(head, TF_FIELD_ENUM, "ViTForImageClassification", NULL, HEADS, "the head (Hugging Face's architecture)", SIG, NULL),
    R(n_labels, TF_FIELD_INT, "10", "[1,100000]", NULL, "classes of the classifier", SIG, "num_labels"),
    R(pooling, TF_FIELD_ENUM, "cls", NULL, POOLINGS,
      "what the classifier reads: cls (the class token, Hugging Face's), mean (the patch tokens' mean) or seq (their "
      "mean weighted by a learned score: sequence pooling, Hassani et al. 2021); mean and seq: tformer folders only",
      SIG_NEW, NULL),
    R(pooler, TF_FIELD_BOOL, "false", NULL, NULL, "ViTModel: the tanh pooler over the class token", SIG, NULL),
    R(init_std, TF_FIELD_FLOAT, "0.02", "(0,inf)", NULL, "std of the initial weights", 0, "initializer_range"),
    R(lsa, TF_FIELD_BOOL, "false", NULL, NULL,
      "locality self-attention (Lee et al. 2021, for small datasets): each head's scores multiplied by a learned "
      "temperature (initially 1) and each token's own key hidden; tformer folders only", SIG_NEW, NULL),
};
#undef R

const tf_field_table tf_vit_config_table = {"ViT model", ROWS, (int)(sizeof ROWS / sizeof ROWS[0])};

tf_vit_config tf_vit_config_default(void) {
    tf_vit_config c = {0};
    tf_fields f = {&tf_vit_config_table, &c};
    tf_fields_defaults(&f, 1); /* cannot fail: tests/test_config.c parses every table's defaults */
    return c;
}

float tf_vit_drop_path(const tf_vit_config *c, int l) {
    int n = c->n_layer;
    if (n < 2 || l < 0 || l >= n) return 0.0f; /* linspace of one value is its start */
    float step = c->drop_path / (float)(n - 1); /* PyTorch's linspace: from both ends, meeting halfway */
    return l < n / 2 ? step * (float)l : c->drop_path - step * (float)(n - 1 - l);
}

/* stem_depth, 1 where unset (a struct not from tf_vit_config_default, before the check refuses it). */
static int stem_depth(const tf_vit_config *c) { return c->stem_depth > 1 ? c->stem_depth : 1; }

int tf_vit_stem_convs(const tf_vit_config *c) {
    int k = 0;
    while (c->stem == TF_VIT_STEM_CONV && (2 << k) <= c->patch_size) k++;
    return k * stem_depth(c);
}

int tf_vit_stem_channels(const tf_vit_config *c, int i) {
    int first = c->stem_width ? c->stem_width : c->d_model / c->patch_size;
    return (first > 1 ? first : 1) << (i / stem_depth(c));
}

int tf_vit_patches(const tf_vit_config *c) {
    int side = c->patch_size > 0 ? c->image_size / c->patch_size : 0;
    return side * side;
}

int tf_vit_config_check(const tf_vit_config *c) {
    tf_fields f = {&tf_vit_config_table, (void *)c};
    if (tf_fields_check(&f, 1)) return -1;
    if (c->d_model % c->n_head) return tf_set_error("d_model %d is not a multiple of n_head %d", c->d_model, c->n_head);
    if (c->patch_size > c->image_size)
        return tf_set_error("patch_size %d is larger than image_size %d", c->patch_size, c->image_size);
    if (c->stem == TF_VIT_STEM_PATCH && c->stem_width)
        return tf_set_error("stem_width %d goes with stem conv (the stem is patch)", c->stem_width);
    if (c->stem == TF_VIT_STEM_PATCH && c->stem_depth != 1)
        return tf_set_error("stem_depth %d goes with stem conv (the stem is patch)", c->stem_depth);
    if (c->stem == TF_VIT_STEM_CONV && (c->patch_size < 2 || (c->patch_size & (c->patch_size - 1))))
        return tf_set_error("stem conv: patch_size %d must be a power of two >= 2 (one stride-2 3x3 convolution "
                            "per halving)", c->patch_size);
    if (tf_vit_stem_convs(c) > TF_VIT_MAX_STEM)
        return tf_set_error("stem conv: log2(patch_size %d) x stem_depth %d = %d 3x3 convolutions, more than %d",
                            c->patch_size, c->stem_depth, tf_vit_stem_convs(c), TF_VIT_MAX_STEM);
    if (c->stem == TF_VIT_STEM_CONV && c->image_size % c->patch_size)
        return tf_set_error("stem conv: image_size %d must be a multiple of patch_size %d (the padded convolutions "
                            "would not give the patch grid)", c->image_size, c->patch_size);
    if (c->pooling == TF_POOL_MAX || c->pooling == TF_POOL_LAST)
        return tf_set_error("pooling %s: the classifier reads cls, mean or seq", c->pooling == TF_POOL_MAX ? "max" : "last");
    if (c->pooling != TF_POOL_CLS && c->head != TF_VIT_IMAGE_CLS)
        return tf_set_error("pooling %s: only ViTForImageClassification pools (ViTModel's pooler reads the class token)",
                            c->pooling == TF_POOL_MEAN ? "mean" : "seq");
    if (c->head == TF_VIT_IMAGE_CLS && c->pooler)
        return tf_set_error("pooler: ViTForImageClassification has none (classifier on the class token)");
    return 0;
}

const char *tf_vit_head_name(tf_vit_head h) { return h >= TF_VIT_BODY && h <= TF_VIT_IMAGE_CLS ? HEADS[h] : "unknown"; }

int tf_vit_head_from_name(const char *name) {
    for (int i = 0; name && HEADS[i]; i++)
        if (!strcmp(HEADS[i], name)) return i;
    return -1;
}
