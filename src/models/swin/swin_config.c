/* The Swin configuration: one field table for defaults, checks, training
 * flags and the checkpoint signature; Hugging Face's SwinConfig keys are its
 * aliases. depths and heads are comma-separated lists (JSON arrays in
 * config.json: src/models/swin/swin_io.c). */
#include <stdlib.h>
#include <string.h>

#include "swin_internal.h"

static const char *const ACTIVATIONS[] = {"relu", "gelu", "gelu_tanh|gelu_new|gelu_pytorch_tanh", "silu|swish", NULL};
static const char *const HEADS[] = {"SwinModel", "SwinForImageClassification", NULL};
_Static_assert(sizeof(tf_swin_head) == sizeof(int), "enum rows store an int");

#define SIG TF_FIELD_SIGNATURE
#define R(m, type, def, range, choices, help, flags, alias) \
    TF_FIELD_ROW(tf_swin_config, m, type, #m, def, range, choices, help, flags, alias)
static const tf_field ROWS[] = {
    R(image_size, TF_FIELD_INT, "28", "[1,65535]", NULL, "images are image_size x image_size pixels", SIG, NULL),
    R(patch_size, TF_FIELD_INT, "2", "[1,65535]", NULL, "patches are patch_size x patch_size pixels (the image zero-padded to a multiple)", SIG, "patch"),
    R(channels, TF_FIELD_INT, "1", "[1,4]", NULL, "colour channels (1 grey, 3 RGB)", SIG, "num_channels"),
    R(d_model, TF_FIELD_INT, "48", "[1,inf)", NULL, "width of the first stage (embed_dim); stage s is d_model * 2^s", SIG, "embed_dim"),
    R(depths, TF_FIELD_STRING, "2,4", NULL, NULL, "blocks per stage, comma-separated", SIG, NULL),
    R(heads, TF_FIELD_STRING, "3,6", NULL, NULL, "attention heads per stage, comma-separated", SIG, "num_heads"),
    R(window, TF_FIELD_INT, "7", "[1,65535]", NULL, "window side in tokens (window_size)", SIG, "window_size"),
    R(mlp_ratio, TF_FIELD_FLOAT, "4", "(0,inf)", NULL, "feed-forward width over the stage's width", SIG, NULL),
    R(activation, TF_FIELD_ENUM, "gelu", NULL, ACTIVATIONS, "the feed-forward activation", SIG, "hidden_act"),
    R(norm_eps, TF_FIELD_FLOAT, "1e-5", "(0,inf)", NULL, "LayerNorm epsilon of the blocks and the final LayerNorm", SIG, "layer_norm_eps"),
    R(dropout, TF_FIELD_FLOAT, "0", "[0,1)", NULL, "dropout on the embeddings and sub-layer outputs", 0, "hidden_dropout_prob"),
    R(attn_dropout, TF_FIELD_FLOAT, "0", "[0,1)", NULL, "dropout on the attention weights", 0, "attention_probs_dropout_prob"),
    R(drop_path, TF_FIELD_FLOAT, "0", "[0,1)", NULL,
      "stochastic depth: block l of all L blocks drops its sub-layer outputs per image at rate linspace(0, this, L)[l]",
      0, "drop_path_rate"),
    R(qkv_bias, TF_FIELD_BOOL, "true", NULL, NULL, "the query, key and value projections have biases", SIG, NULL),
    R(head, TF_FIELD_ENUM, "SwinForImageClassification", NULL, HEADS, "the head (Hugging Face's architecture)", SIG, NULL),
    R(n_labels, TF_FIELD_INT, "10", "[1,100000]", NULL, "classes of the classifier", SIG, "num_labels"),
    R(init_std, TF_FIELD_FLOAT, "0.02", "(0,inf)", NULL, "std of the initial weights", 0, "initializer_range"),
};
#undef R

const tf_field_table tf_swin_config_table = {"Swin model", ROWS, (int)(sizeof ROWS / sizeof ROWS[0])};

tf_swin_config tf_swin_config_default(void) {
    tf_swin_config c;
    memset(&c, 0, sizeof c);
    tf_fields f = {&tf_swin_config_table, &c};
    tf_fields_defaults(&f, 1);
    return c;
}

int tf_swin_parse_list(const char *s, const char *field, int out[TF_SWIN_MAX_STAGES]) {
    int n = 0;
    const char *p = s;
    while (*p) {
        char *end;
        long v = strtol(p, &end, 10);
        if (end == p || v < 1 || v > 10000 || (*end && *end != ','))
            return tf_set_error("%s \"%s\": a comma-separated list of positive integers", field, s);
        if (n == TF_SWIN_MAX_STAGES) return tf_set_error("%s \"%s\": at most %d stages", field, s, TF_SWIN_MAX_STAGES);
        out[n++] = (int)v;
        p = *end ? end + 1 : end;
        if (*end && !*p) return tf_set_error("%s \"%s\": a trailing comma", field, s);
    }
    if (!n) return tf_set_error("%s: empty (one number per stage)", field);
    return n;
}

int tf_swin_config_check(const tf_swin_config *c) {
    tf_fields f = {&tf_swin_config_table, (void *)c};
    if (tf_fields_check(&f, 1)) return -1;
    int depth[TF_SWIN_MAX_STAGES], heads[TF_SWIN_MAX_STAGES];
    int n = tf_swin_parse_list(c->depths, "depths", depth), nh = n < 0 ? -1 : tf_swin_parse_list(c->heads, "heads", heads);
    if (n < 0 || nh < 0) return -1;
    if (n != nh) return tf_set_error("depths \"%s\" has %d stages, heads \"%s\" %d", c->depths, n, c->heads, nh);
    if (c->patch_size > c->image_size)
        return tf_set_error("patch_size %d is larger than image_size %d", c->patch_size, c->image_size);
    for (int s = 0; s < n; s++) {
        long width = (long)c->d_model << s;
        if (width > 1L << 24) return tf_set_error("d_model %d: stage %d would be %ld wide", c->d_model, s, width);
        if (width % heads[s])
            return tf_set_error("stage %d: width %ld (d_model * 2^%d) is not a multiple of its %d heads", s, width, s,
                                heads[s]);
        if ((int)(c->mlp_ratio * (float)width) < 1) return tf_set_error("mlp_ratio %g gives no feed-forward width", c->mlp_ratio);
    }
    return 0;
}

float tf_swin_drop_path(const tf_swin_config *c, int l, int n_blocks) {
    tf_vit_config v = {.n_layer = n_blocks, .drop_path = c->drop_path}; /* the same linspace as ViT's */
    return tf_vit_drop_path(&v, l);
}

const char *tf_swin_head_name(tf_swin_head h) { return h >= TF_SWIN_BODY && h <= TF_SWIN_IMAGE_CLS ? HEADS[h] : "unknown"; }

int tf_swin_head_from_name(const char *name) {
    for (int i = 0; name && HEADS[i]; i++)
        if (!strcmp(HEADS[i], name)) return i;
    return -1;
}
