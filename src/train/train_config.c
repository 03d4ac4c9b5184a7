/* Training configuration: defaults (nanoGPT's character-level Shakespeare),
 * a JSON file of overrides, and checks that name the offending field. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../util/util.h"

tf_train_config tf_train_config_default(void) {
    tf_train_config c;
    memset(&c, 0, sizeof c);
    c.model = tf_gpt_config_default(0, 64, 4, 4, 128);
    c.steps = 2000, c.batch = 12, c.accum = 1;
    c.lr = 1e-3f, c.min_lr = 1e-4f, c.warmup = 100;
    c.weight_decay = 0.1f, c.beta1 = 0.9f, c.beta2 = 0.99f, c.grad_clip = 1.0f;
    c.eval_every = 250, c.eval_batches = 200, c.val_fraction = 0.1f;
    c.checkpoint_every = 500, c.seed = 1337;
    return c;
}

int tf_train_config_check(const tf_train_config *c) {
    if (c->steps < 1) return tf_set_error("config: steps %lld must be positive", (long long)c->steps);
    if (c->batch < 1 || c->accum < 1) return tf_set_error("config: batch %d and accum %d must be positive", c->batch, c->accum);
    if (!(c->lr > 0) || !(c->min_lr >= 0)) return tf_set_error("config: lr must be positive and min_lr >= 0");
    if (c->warmup < 0) return tf_set_error("config: warmup must be >= 0");
    if (!(c->beta1 >= 0 && c->beta1 < 1 && c->beta2 >= 0 && c->beta2 < 1)) return tf_set_error("config: betas outside [0,1)");
    if (!(c->val_fraction > 0 && c->val_fraction < 1)) return tf_set_error("config: val_fraction outside (0,1)");
    if (c->eval_every < 1 || c->eval_batches < 1 || c->checkpoint_every < 1)
        return tf_set_error("config: eval_every, eval_batches and checkpoint_every must be positive");
    tf_gpt_config m = c->model;
    if (m.vocab_size < 1) m.vocab_size = 1; /* set from the tokenizer later */
    return tf_gpt_config_check(&m);
}

typedef enum { K_INT, K_I64, K_FLOAT, K_BOOL } kind;

typedef struct {
    const char *name;
    kind k;
    size_t off;
} field;

#define F(n, k, m) {n, k, offsetof(tf_train_config, m)}
static const field FIELDS[] = {
    F("steps", K_I64, steps), F("batch", K_INT, batch), F("accum", K_INT, accum), F("lr", K_FLOAT, lr),
    F("min_lr", K_FLOAT, min_lr), F("warmup", K_I64, warmup), F("weight_decay", K_FLOAT, weight_decay),
    F("beta1", K_FLOAT, beta1), F("beta2", K_FLOAT, beta2), F("grad_clip", K_FLOAT, grad_clip),
    F("eval_every", K_I64, eval_every), F("eval_batches", K_INT, eval_batches),
    F("val_fraction", K_FLOAT, val_fraction), F("checkpoint_every", K_I64, checkpoint_every),
    F("seed", K_I64, seed), F("n_layer", K_INT, model.n_layer), F("n_head", K_INT, model.n_head),
    F("d_model", K_INT, model.d_model), F("d_ff", K_INT, model.d_ff), F("context", K_INT, model.context),
    F("dropout", K_FLOAT, model.dropout), F("norm_first", K_BOOL, model.norm_first), F("tied", K_BOOL, model.tied),
    F("norm_eps", K_FLOAT, model.norm_eps),
};
#undef F

static int set_field(tf_train_config *c, const field *f, const cJSON *j, const char *path) {
    char *p = (char *)c + f->off;
    if (f->k == K_BOOL) {
        if (!cJSON_IsBool(j)) return tf_set_error("%s: \"%s\" must be true or false", path, f->name);
        *(int *)p = cJSON_IsTrue(j);
        return 0;
    }
    double v = j->valuedouble;
    if (!cJSON_IsNumber(j) || !isfinite(v)) return tf_set_error("%s: \"%s\" must be a number", path, f->name);
    if (f->k != K_FLOAT && (floor(v) != v || v < 0 || v > 9e15))
        return tf_set_error("%s: \"%s\" must be a non-negative integer", path, f->name);
    if (f->k == K_INT && v > 2e9) return tf_set_error("%s: \"%s\" is too large", path, f->name);
    if (f->k == K_FLOAT) *(float *)p = (float)v;
    else if (f->k == K_INT) *(int *)p = (int)v;
    else *(int64_t *)p = (int64_t)v;
    return 0;
}

static int set_enum(tf_train_config *c, const cJSON *j, const char *path) {
    const char *v = cJSON_IsString(j) ? j->valuestring : "";
    if (!strcmp(j->string, "pos")) {
        if (strcmp(v, "learned") && strcmp(v, "sinusoidal"))
            return tf_set_error("%s: \"pos\" must be \"learned\" or \"sinusoidal\"", path);
        c->model.pos = strcmp(v, "learned") ? TF_POS_SINUSOIDAL : TF_POS_LEARNED;
        return 0;
    }
    if (!strcmp(v, "relu")) c->model.activation = TF_ACT_RELU;
    else if (!strcmp(v, "gelu")) c->model.activation = TF_ACT_GELU;
    else if (!strcmp(v, "gelu_tanh")) c->model.activation = TF_ACT_GELU_TANH;
    else return tf_set_error("%s: \"activation\" must be \"relu\", \"gelu\" or \"gelu_tanh\"", path);
    return 0;
}

int tf_train_config_load(tf_train_config *c, const char *path) {
    size_t len;
    char *text = tf_read_file(path, &len);
    if (!text) return -1;
    cJSON *root = cJSON_ParseWithLength(text, len);
    free(text);
    int rc = cJSON_IsObject(root) ? 0 : tf_set_error("%s: not a JSON object", path);
    for (const cJSON *j = root ? root->child : NULL; j && !rc; j = j->next) {
        if (!strcmp(j->string, "pos") || !strcmp(j->string, "activation")) {
            rc = set_enum(c, j, path);
            continue;
        }
        size_t k = 0;
        while (k < sizeof FIELDS / sizeof FIELDS[0] && strcmp(FIELDS[k].name, j->string)) k++;
        rc = k < sizeof FIELDS / sizeof FIELDS[0] ? set_field(c, &FIELDS[k], j, path)
                                                  : tf_set_error("%s: unknown key \"%s\"", path, j->string);
    }
    cJSON_Delete(root);
    return rc;
}
