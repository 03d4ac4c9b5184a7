/* The GPT configuration: defaults and checks. */
#include "../../core/internal.h"

tf_gpt_config tf_gpt_config_default(int vocab_size, int context, int n_layer, int n_head, int d_model) {
    tf_gpt_config c = {vocab_size, context, n_layer, n_head, d_model, 0, 0.0f, TF_POS_LEARNED, 1, TF_ACT_GELU_TANH, 1, 1e-5f};
    return c;
}

int tf_gpt_config_check(const tf_gpt_config *c) {
    if (c->vocab_size < 1) return tf_set_error("config: vocab_size %d must be positive", c->vocab_size);
    if (c->context < 1) return tf_set_error("config: context %d must be positive", c->context);
    if (c->n_layer < 1 || c->n_layer > 10000) return tf_set_error("config: n_layer %d outside [1,10000]", c->n_layer);
    if (c->n_head < 1 || c->d_model < 1 || c->d_model % c->n_head)
        return tf_set_error("config: d_model %d must be a positive multiple of n_head %d", c->d_model, c->n_head);
    if (c->d_ff < 0) return tf_set_error("config: d_ff %d must be >= 0", c->d_ff);
    if (!(c->dropout >= 0.0f && c->dropout < 1.0f)) return tf_set_error("config: dropout %g outside [0,1)", c->dropout);
    if (!(c->norm_eps > 0.0f)) return tf_set_error("config: norm_eps must be positive");
    return 0;
}
