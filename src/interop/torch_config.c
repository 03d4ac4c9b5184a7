/* The JSON config of `tformer torch-run`: a torch.nn module name plus that
 * class's constructor arguments, with PyTorch's names and defaults, read
 * through field tables onto tformer's configs (tf_mha_config, tf_block_config). */
#include <string.h>

#include "../util/util.h"
#include "torch_run.h"

static const char *const MODULE_NAMES[TR_MODULE_COUNT] = {
    [TR_MHA] = "MultiheadAttention",
    [TR_ENCODER_LAYER] = "TransformerEncoderLayer",
    [TR_DECODER_LAYER] = "TransformerDecoderLayer",
    [TR_ENCODER] = "TransformerEncoder",
    [TR_DECODER] = "TransformerDecoder",
    [TR_TRANSFORMER] = "Transformer",
    [TR_CO_RETRO] = "continual.RetroactiveMultiheadAttention",
    [TR_CO_SINGLE] = "continual.SingleOutputMultiheadAttention",
    [TR_CO_ENCODER] = "continual.TransformerEncoder",
};

const char *tr_module_name(tr_module m) { return MODULE_NAMES[m]; }

static const char *const ACTIVATIONS[] = {"relu", "gelu", NULL}; /* TF_ACT_RELU, TF_ACT_GELU */
_Static_assert(TF_ACT_RELU == 0 && TF_ACT_GELU == 1 && sizeof(tf_activation) == sizeof(int), "activation choices");

#define INT TF_FIELD_INT
#define BOOL TF_FIELD_BOOL
#define FLOAT TF_FIELD_FLOAT
#define REQ TF_FIELD_REQUIRED
#define R(m, type, name, def, range, flags, help) \
    TF_FIELD_ROW(tr_config, m, type, name, def, range, NULL, help, flags, NULL)
/* Every module's. */
static const tf_field COMMON_ROWS[] = {
    R(batch_first, BOOL, "batch_first", "false", NULL, 0, "sequences (B,T,E) rather than (T,B,E)"),
    R(device, TF_FIELD_STRING, "device", "", NULL, TF_FIELD_NULL_ZERO, "ignored"),
    R(dtype, TF_FIELD_STRING, "dtype", "", NULL, TF_FIELD_NULL_ZERO, "ignored: weights are read as float32"),
};
static const tf_field MHA_ROWS[] = {
    R(mha.d_model, INT, "embed_dim", NULL, "[1,inf)", REQ, "width"),
    R(mha.n_head, INT, "num_heads", NULL, "[1,inf)", REQ, "heads"),
    R(dropout, FLOAT, "dropout", "0", "[0,1)", 0, "treated as 0"),
    R(mha.bias, BOOL, "bias", "true", NULL, 0, "projections have biases"),
    R(add_bias_kv, BOOL, "add_bias_kv", "false", NULL, 0, "not supported"),
    R(add_zero_attn, BOOL, "add_zero_attn", "false", NULL, 0, "not supported"),
    R(mha.kdim, INT, "kdim", "0", "[0,inf)", TF_FIELD_NULL_ZERO, "key width; null: embed_dim"),
    R(mha.vdim, INT, "vdim", "0", "[0,inf)", TF_FIELD_NULL_ZERO, "value width; null: embed_dim"),
};
/* A layer's or a stack's width and heads, which they must be given. */
static const tf_field SHAPE_ROWS[] = {
    R(layer.d_model, INT, "d_model", NULL, "[1,inf)", REQ, "width"),
    R(layer.n_head, INT, "nhead", NULL, "[1,inf)", REQ, "heads"),
};
static const tf_field TRANSFORMER_ROWS[] = {
    R(layer.d_model, INT, "d_model", "512", "[1,inf)", 0, "width"),
    R(layer.n_head, INT, "nhead", "8", "[1,inf)", 0, "heads"),
    R(num_encoder_layers, INT, "num_encoder_layers", "6", "[1,inf)", 0, "encoder layers"),
    R(num_decoder_layers, INT, "num_decoder_layers", "6", "[1,inf)", 0, "decoder layers"),
};
static const tf_field LAYER_ROWS[] = {
    R(layer.d_ff, INT, "dim_feedforward", "2048", "[1,inf)", 0, "feed-forward width"),
    R(dropout, FLOAT, "dropout", "0.1", "[0,1)", 0, "treated as 0"),
    TF_FIELD_ROW(tr_config, layer.activation, TF_FIELD_ENUM, "activation", "relu", NULL, ACTIVATIONS,
                 "the feed-forward activation", 0, NULL),
    R(layer.norm_eps, FLOAT, "layer_norm_eps", "1e-5", "(0,inf)", 0, "LayerNorm epsilon"),
    R(layer.norm_first, BOOL, "norm_first", "false", NULL, 0, "pre-LN; false: post-LN"),
    R(layer.bias, BOOL, "bias", "true", NULL, 0, "linear layers and LayerNorms have biases"),
};
static const tf_field STACK_ROWS[] = {
    R(num_layers, INT, "num_layers", NULL, "[1,inf)", REQ, "layers"),
    R(enable_nested_tensor, BOOL, "enable_nested_tensor", "true", NULL, 0, "ignored"),
    R(mask_check, BOOL, "mask_check", "true", NULL, 0, "ignored"),
};
/* continual-inference: its attentions' extra arguments; its encoder's layer factory. */
static const tf_field CO_ATTN_ROWS[] = {
    R(sequence_len, INT, "sequence_len", NULL, "[1,inf)", REQ, "the window n"),
    R(batch_first, BOOL, "batch_first", "true", NULL, 0, "must be true: query (B,T,E)"),
};
static const tf_field CO_ENCODER_ROWS[] = {
    R(sequence_len, INT, "sequence_len", NULL, "[1,inf)", REQ, "the window n"),
    R(num_layers, INT, "num_layers", NULL, "[1,2]", REQ, "layers (continual-inference builds 1 or 2)"),
    R(layer.d_ff, INT, "dim_feedforward", "2048", "[1,inf)", 0, "feed-forward width"),
    R(dropout, FLOAT, "dropout", "0.1", "[0,1)", 0, "treated as 0"),
    TF_FIELD_ROW(tr_config, layer.activation, TF_FIELD_ENUM, "activation", "relu", NULL, ACTIVATIONS,
                 "the feed-forward activation (GELU is GELU here; continual-inference 1.2.4 runs ReLU for \"gelu\")",
                 0, NULL),
    R(layer.norm_eps, FLOAT, "layer_norm_eps", "1e-5", "(0,inf)", 0, "LayerNorm epsilon"),
};
#undef R

#define TABLE(rows) {#rows, rows, (int)(sizeof rows / sizeof rows[0])}
static const tf_field_table COMMON = TABLE(COMMON_ROWS), MHA = TABLE(MHA_ROWS), SHAPE = TABLE(SHAPE_ROWS),
                            TRANSFORMER = TABLE(TRANSFORMER_ROWS), LAYER = TABLE(LAYER_ROWS), STACK = TABLE(STACK_ROWS),
                            CO_ATTN = TABLE(CO_ATTN_ROWS), CO_ENCODER = TABLE(CO_ENCODER_ROWS);
#undef TABLE

/* The keys each module understands; anything else draws a warning. */
static const tf_field_table *const MODULE_TABLES[TR_MODULE_COUNT][4] = {
    [TR_MHA] = {&COMMON, &MHA},
    [TR_ENCODER_LAYER] = {&COMMON, &SHAPE, &LAYER},
    [TR_DECODER_LAYER] = {&COMMON, &SHAPE, &LAYER},
    [TR_ENCODER] = {&COMMON, &SHAPE, &LAYER, &STACK},
    [TR_DECODER] = {&COMMON, &SHAPE, &LAYER, &STACK},
    [TR_TRANSFORMER] = {&COMMON, &TRANSFORMER, &LAYER},
    [TR_CO_RETRO] = {&MHA, &CO_ATTN},
    [TR_CO_SINGLE] = {&MHA, &CO_ATTN},
    [TR_CO_ENCODER] = {&SHAPE, &CO_ENCODER},
};

static int module_kind(const char *path, const cJSON *root, tr_config *c) {
    const cJSON *m = cJSON_GetObjectItemCaseSensitive(root, "module");
    if (!cJSON_IsString(m))
        return tf_set_error("%s: missing \"module\" (one of MultiheadAttention, TransformerEncoderLayer, "
                            "TransformerDecoderLayer, TransformerEncoder, TransformerDecoder, Transformer, "
                            "continual.RetroactiveMultiheadAttention, continual.SingleOutputMultiheadAttention, "
                            "continual.TransformerEncoder)", path);
    for (int k = 0; k < TR_MODULE_COUNT; k++)
        if (!strcmp(m->valuestring, MODULE_NAMES[k])) return c->kind = (tr_module)k, 0;
    return tf_set_error("%s: unknown module \"%s\"", path, m->valuestring);
}

static int read_fields(const char *path, const cJSON *root, tr_config *c, FILE *log) {
    tf_fields s[4];
    int n = 0;
    for (; n < 4 && MODULE_TABLES[c->kind][n]; n++) s[n] = (tf_fields){MODULE_TABLES[c->kind][n], c};
    c->mha = tf_mha_config_default(0, 0); /* what the tables leave: tformer's own settings */
    c->layer = tf_block_config_default(0, 0);
    if (tf_fields_defaults(s, n) || tf_fields_from_json(root, s, n, path, 1)) return -1;
    for (const cJSON *j = root->child; j && log; j = j->next)
        if (strcmp(j->string, "module") && !tf_fields_find(s, n, j->string, NULL))
            fprintf(log, "warning: %s: unknown key \"%s\" for %s ignored\n", path, j->string, MODULE_NAMES[c->kind]);
    if (c->add_bias_kv || c->add_zero_attn)
        return tf_set_error("%s: \"%s\" is not supported", path, c->add_bias_kv ? "add_bias_kv" : "add_zero_attn");
    if ((c->kind == TR_CO_RETRO || c->kind == TR_CO_SINGLE) && !c->batch_first)
        return tf_set_error("%s: %s: only batch_first true (query (B,T,E)) is supported", path, MODULE_NAMES[c->kind]);
    if (!c->mha.kdim) c->mha.kdim = c->mha.d_model;
    if (!c->mha.vdim) c->mha.vdim = c->mha.d_model;
    return 0;
}

int tr_config_load(const char *path, tr_config *c, FILE *log) {
    memset(c, 0, sizeof *c);
    cJSON *root = tf_json_read(path);
    if (!root) return -1;
    int rc = module_kind(path, root, c) || read_fields(path, root, c, log) ? -1 : 0;
    cJSON_Delete(root);
    return rc;
}
