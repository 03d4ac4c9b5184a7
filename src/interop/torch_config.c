/* The JSON config of `tformer torch-run`: a torch.nn module name plus that
 * class's constructor arguments, with PyTorch's names and defaults. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
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
};

const char *tr_module_name(tr_module m) { return MODULE_NAMES[m]; }

/* Keys each module understands; anything else draws a warning. */
static const char *const MHA_KEYS[] = {"embed_dim", "num_heads", "dropout", "bias", "add_bias_kv",
                                       "add_zero_attn", "kdim", "vdim", "batch_first", "device",
                                       "dtype", NULL};
static const char *const LAYER_KEYS[] = {"d_model", "nhead", "dim_feedforward", "dropout",
                                         "activation", "layer_norm_eps", "batch_first",
                                         "norm_first", "bias", "device", "dtype", NULL};
static const char *const STACK_KEYS[] = {"num_layers", "enable_nested_tensor", "mask_check", NULL};
static const char *const TRANSFORMER_KEYS[] = {"num_encoder_layers", "num_decoder_layers", NULL};

static int in_list(const char *const *list, const char *key) {
    for (; *list; list++)
        if (!strcmp(*list, key)) return 1;
    return 0;
}

static int known_key(tr_module m, const char *key) {
    if (!strcmp(key, "module")) return 1;
    if (m == TR_MHA) return in_list(MHA_KEYS, key);
    if (in_list(LAYER_KEYS, key)) return 1;
    if (m == TR_ENCODER || m == TR_DECODER) return in_list(STACK_KEYS, key);
    return m == TR_TRANSFORMER && in_list(TRANSFORMER_KEYS, key);
}

/* Integer key: absent or null keeps *out (the default); required when *out < 0 on entry. */
static int get_int(const char *path, const cJSON *root, const char *key, int *out, int required) {
    const cJSON *j = cJSON_GetObjectItemCaseSensitive(root, key);
    if (!j || cJSON_IsNull(j)) {
        if (required) return tf_set_error("%s: missing required key \"%s\"", path, key);
        return 0;
    }
    double v = j->valuedouble;
    if (!cJSON_IsNumber(j) || floor(v) != v || v < 0 || v > 1e9)
        return tf_set_error("%s: \"%s\" must be a non-negative integer", path, key);
    *out = (int)v;
    return 0;
}

static int get_float(const char *path, const cJSON *root, const char *key, float *out) {
    const cJSON *j = cJSON_GetObjectItemCaseSensitive(root, key);
    if (!j || cJSON_IsNull(j)) return 0;
    if (!cJSON_IsNumber(j) || !isfinite(j->valuedouble))
        return tf_set_error("%s: \"%s\" must be a number", path, key);
    *out = (float)j->valuedouble;
    return 0;
}

static int get_bool(const char *path, const cJSON *root, const char *key, int *out) {
    const cJSON *j = cJSON_GetObjectItemCaseSensitive(root, key);
    if (!j || cJSON_IsNull(j)) return 0;
    if (!cJSON_IsBool(j)) return tf_set_error("%s: \"%s\" must be true or false", path, key);
    *out = cJSON_IsTrue(j);
    return 0;
}

static int parse_mha(const char *path, const cJSON *root, tr_config *c) {
    int E = 0, H = 0, kdim = -1, vdim = -1, bias = 1, bkv = 0, zero = 0;
    float dropout = 0.0f;
    if (get_int(path, root, "embed_dim", &E, 1) || get_int(path, root, "num_heads", &H, 1) ||
        get_int(path, root, "kdim", &kdim, 0) || get_int(path, root, "vdim", &vdim, 0) ||
        get_bool(path, root, "bias", &bias) || get_bool(path, root, "add_bias_kv", &bkv) ||
        get_bool(path, root, "add_zero_attn", &zero) || get_float(path, root, "dropout", &dropout))
        return -1;
    if (bkv || zero)
        return tf_set_error("%s: \"%s\" is not supported", path, bkv ? "add_bias_kv" : "add_zero_attn");
    c->mha = tf_mha_config_default(E, H);
    c->mha.kdim = kdim >= 0 ? kdim : E;
    c->mha.vdim = vdim >= 0 ? vdim : E;
    c->mha.bias = bias;
    return 0;
}

static int parse_layer(const char *path, const cJSON *root, tr_config *c) {
    int d = c->kind == TR_TRANSFORMER ? 512 : 0, h = c->kind == TR_TRANSFORMER ? 8 : 0;
    int need = c->kind != TR_TRANSFORMER;
    if (get_int(path, root, "d_model", &d, need) || get_int(path, root, "nhead", &h, need)) return -1;
    tf_layer_config *l = &c->layer;
    *l = tf_layer_config_default(d, h);
    float dropout = 0.0f;
    if (get_int(path, root, "dim_feedforward", &l->d_ff, 0) ||
        get_float(path, root, "layer_norm_eps", &l->norm_eps) ||
        get_bool(path, root, "norm_first", &l->norm_first) || get_bool(path, root, "bias", &l->bias) ||
        get_float(path, root, "dropout", &dropout))
        return -1;
    const cJSON *act = cJSON_GetObjectItemCaseSensitive(root, "activation");
    if (act && !cJSON_IsNull(act)) {
        if (cJSON_IsString(act) && !strcmp(act->valuestring, "relu")) l->activation = TF_ACT_RELU;
        else if (cJSON_IsString(act) && !strcmp(act->valuestring, "gelu")) l->activation = TF_ACT_GELU;
        else return tf_set_error("%s: \"activation\" must be \"relu\" or \"gelu\"", path);
    }
    c->num_encoder_layers = c->num_decoder_layers = 6;
    if (c->kind == TR_ENCODER || c->kind == TR_DECODER)
        return get_int(path, root, "num_layers", &c->num_layers, 1);
    if (c->kind == TR_TRANSFORMER)
        return get_int(path, root, "num_encoder_layers", &c->num_encoder_layers, 0) ||
                       get_int(path, root, "num_decoder_layers", &c->num_decoder_layers, 0)
                   ? -1 : 0;
    return 0;
}

int tr_config_load(const char *path, tr_config *c, FILE *log) {
    memset(c, 0, sizeof *c);
    cJSON *root = tf_json_read(path);
    int rc = -1;
    if (!root) return -1;
    const cJSON *m = cJSON_GetObjectItemCaseSensitive(root, "module");
    if (!cJSON_IsString(m)) {
        tf_set_error("%s: missing \"module\" (one of MultiheadAttention, TransformerEncoderLayer, "
                     "TransformerDecoderLayer, TransformerEncoder, TransformerDecoder, Transformer)", path);
        goto out;
    }
    int k;
    for (k = 0; k < TR_MODULE_COUNT && strcmp(m->valuestring, MODULE_NAMES[k]); k++) {}
    if (k == TR_MODULE_COUNT) {
        tf_set_error("%s: unknown module \"%s\"", path, m->valuestring);
        goto out;
    }
    c->kind = (tr_module)k;
    if (get_bool(path, root, "batch_first", &c->batch_first) ||
        (c->kind == TR_MHA ? parse_mha(path, root, c) : parse_layer(path, root, c)))
        goto out;
    for (const cJSON *j = root->child; j; j = j->next)
        if (!known_key(c->kind, j->string) && log)
            fprintf(log, "warning: %s: unknown key \"%s\" for %s ignored\n", path, j->string, MODULE_NAMES[k]);
    rc = 0;
out:
    cJSON_Delete(root);
    return rc;
}
