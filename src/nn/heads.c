/* Output heads shared by the model families: the (tied) LM head, the masked-LM
 * head, BERT's pooler, sequence and token classifiers, and the span head. */
#include <stdio.h>

#include "nn_internal.h"
#include "tformer/heads.h"

/* Hidden states of a head: F32 with `rank` dims (0: at least 2) and a last
 * dim of d_model; else an error naming the head, the input's shape and the
 * shape wanted. */
static int check_input(const char *head, const char *what, const tf_tensor *x, int rank, int64_t d_model) {
    static const char *const want[] = {"(...,d_model=%lld)", "(d_model=%lld)", "(B,d_model=%lld)",
                                       "(B,T,d_model=%lld)"};
    char got[96], shape[64];
    if (x->dtype != TF_DTYPE_F32) return tf_set_error("%s: %s must be F32", head, what);
    if ((rank ? x->ndim == rank : x->ndim >= 2) && x->shape[x->ndim - 1] == d_model) return 0;
    snprintf(shape, sizeof shape, want[rank], (long long)d_model);
    return tf_set_error("%s: %s %s must be %s", head, what, tf_shape_str(x, got, sizeof got), shape);
}

static int check_size(const char *head, const char *name, const char *what, int64_t v) {
    return v > 0 ? 0 : tf_set_error("%s %s: %s %lld must be positive", head, name ? name : "", what, (long long)v);
}

/* ---------------------------------------------------------------- LM head */

int tf_lm_head_register(tf_params *ps, const char *weight_name, const char *bias_name, tf_lm_head *h,
                        tf_tensor *const *tied, int64_t d_model, int64_t vocab, float init_std) {
    const char *label = weight_name ? weight_name : bias_name ? bias_name : "(tied)";
    if (!ps || !h) return tf_set_error("lm head: registry and head are required");
    if (!tied == !weight_name)
        return tf_set_error("lm head %s: give either a tied table or an own weight's name, not %s", label,
                            tied ? "both" : "neither");
    if (check_size("lm head", label, "d_model", d_model) || check_size("lm head", label, "vocab", vocab)) return -1;
    if (!(init_std >= 0.0f)) return tf_set_error("lm head %s: init std %g must be >= 0", label, (double)init_std);
    *h = (tf_lm_head){.d_model = d_model, .vocab = vocab, .tied = tied};
    if (weight_name && tf_params_add(ps, weight_name, &h->weight, 2, (int64_t[]){vocab, d_model}, init_std))
        return -1;  // (V,d_model)
    return bias_name ? tf_params_add(ps, bias_name, &h->bias, 1, (int64_t[]){vocab}, TF_INIT_ZEROS) : 0;  // (V)
}

tf_tensor *tf_lm_head_forward(tf_ctx *ctx, const tf_lm_head *h, tf_tensor *x) {
    if (!x) return NULL;
    tf_tensor *E = h->tied ? *h->tied : h->weight;  // (V,d_model)
    char s[64];
    if (!E)
        return tf_set_error("lm head: the %s weight is not allocated (tf_params_init or tf_params_load first)",
                            h->tied ? "tied" : "own"), NULL;
    if (E->ndim != 2 || E->shape[0] != h->vocab || E->shape[1] != h->d_model)
        return tf_set_error("lm head: %s weight %s must be (V=%lld,d_model=%lld)", h->tied ? "tied" : "own",
                            tf_shape_str(E, s, sizeof s), (long long)h->vocab, (long long)h->d_model), NULL;
    if (check_input("lm head", "hidden states", x, 0, h->d_model)) return NULL;
    /* int8 weights (tf_params_quantize) run in the dense op */
    if (!h->bias && !E->quant) return tf_matmul(ctx, x, E, 0, 1);  // (...,V) = x E^T, GPT's product
    return tf_dense(ctx, x, E, 0, h->bias, TF_ACT_NONE);            // (...,V) = x E^T + bias
}

/* ---------------------------------------------------------------- masked-LM head */

int tf_mlm_head_register(tf_params *ps, const tf_mlm_head_names *names, tf_mlm_head *h,
                         const tf_mlm_head_config *cfg, tf_tensor *const *tied) {
    if (!ps || !names || !h || !cfg) return tf_set_error("mlm head: registry, names, head and config are required");
    if (!names->dense || !names->norm) return tf_set_error("mlm head: the dense and norm names are required");
    if (!tied == !names->decoder) /* checked before anything is registered */
        return tf_set_error("mlm head %s: give either a tied table or an own decoder's name, not %s", names->dense,
                            tied ? "both" : "neither");
    if (cfg->act < TF_ACT_RELU || cfg->act > TF_ACT_NONE)
        return tf_set_error("mlm head %s: unknown activation %d", names->dense, (int)cfg->act);
    h->cfg = *cfg;
    int64_t d = cfg->d_model;
    if (check_size("mlm head", names->dense, "d_model", d) ||
        tf_linear_register(ps, names->dense, &h->dense, d, d, 1, cfg->init_std) ||
        tf_layer_norm_register(ps, names->norm, &h->norm, d, cfg->norm_eps, 1))
        return -1;
    return tf_lm_head_register(ps, names->decoder, names->bias, &h->decoder, tied, d, cfg->vocab, cfg->init_std);
}

tf_tensor *tf_mlm_head_forward(tf_ctx *ctx, const tf_mlm_head *h, tf_tensor *x) {
    if (!x) return NULL;
    if (check_input("mlm head", "hidden states", x, 0, h->cfg.d_model)) return NULL;
    tf_tensor *t = tf_linear_act_forward(ctx, &h->dense, x, h->cfg.act);  // (...,d_model)
    t = tf_layer_norm_forward(ctx, &h->norm, t);                          // (...,d_model)
    return tf_lm_head_forward(ctx, &h->decoder, t);                       // (...,V)
}

/* ---------------------------------------------------------------- pooler */

int tf_pooler_register(tf_params *ps, const char *name, tf_pooler *p, int64_t d_model, float init_std) {
    if (!p) return tf_set_error("pooler: the head is required");
    if (check_size("pooler", name, "d_model", d_model)) return -1;
    p->d_model = d_model;
    return tf_linear_register(ps, name, &p->dense, d_model, d_model, 1, init_std);
}

tf_tensor *tf_pooler_forward(tf_ctx *ctx, const tf_pooler *p, tf_tensor *x) {
    if (!x) return NULL;
    if (check_input("pooler", "hidden states", x, 3, p->d_model)) return NULL;
    if (x->shape[1] < 1) return tf_set_error("pooler: hidden states have no first token (T = 0)"), NULL;
    int64_t B = x->shape[0];
    tf_tensor *first = tf_reshape(ctx, tf_narrow(ctx, x, 1, 0, 1), 2, (int64_t[]){B, p->d_model});  // (B,d_model)
    return tf_tanh(ctx, tf_linear_forward(ctx, &p->dense, first));                               // (B,d_model)
}

/* A weighted sum (B,d_model) of x (B,T,d_model) over the tokens that mask
 * (B,T, I32 or U8; NULL: none) keeps: weights (B,T,1) with no gradient that
 * hold 1/n at the n kept tokens (last 0), or 1 at the last kept token (last
 * 1). A row with no token kept gives zeros. */
static tf_tensor *pool_tokens(tf_ctx *ctx, tf_tensor *x, const tf_tensor *mask, int last) {
    int64_t B = x->shape[0], T = x->shape[1];
    tf_tensor *pad = mask ? tf_key_padding(ctx, mask, B, T, "pooler") : NULL;  // (B,T) U8, 1 = padding
    if (mask && !pad) return NULL;
    tf_tensor *w = tf_tensor_new(ctx, TF_DTYPE_F32, 3, (int64_t[]){B, T, 1}, 0);  // (B,T,1)
    for (int64_t b = 0; w && b < B; b++) {
        int64_t n = 0, end = -1;
        for (int64_t t = 0; t < T; t++)
            if (!pad || !tf_u8(pad)[b * T + t]) n++, end = t;
        for (int64_t t = 0; t < T; t++) {
            int kept = !pad || !tf_u8(pad)[b * T + t];
            tf_f32(w)[b * T + t] = last ? (float)(t == end) : kept ? 1.0f / (float)n : 0.0f;
        }
    }
    return w ? tf_sum(ctx, tf_mul(ctx, x, w), 1, 0) : NULL;  // (B,d_model)
}

/* tanh(dense(.)) of pool_tokens: the mean (last 0) or the last token (last 1). */
static tf_tensor *pooler_masked(tf_ctx *ctx, const tf_pooler *p, tf_tensor *x, const tf_tensor *mask, int last) {
    if (!x) return NULL;
    if (check_input("pooler", "hidden states", x, 3, p->d_model)) return NULL;
    return tf_tanh(ctx, tf_linear_forward(ctx, &p->dense, pool_tokens(ctx, x, mask, last)));  // (B,d_model)
}

tf_tensor *tf_pooler_forward_mean(tf_ctx *ctx, const tf_pooler *p, tf_tensor *x, const tf_tensor *attention_mask) {
    return pooler_masked(ctx, p, x, attention_mask, 0);
}

tf_tensor *tf_pooler_forward_last(tf_ctx *ctx, const tf_pooler *p, tf_tensor *x, const tf_tensor *attention_mask) {
    return pooler_masked(ctx, p, x, attention_mask, 1);
}

/* ---------------------------------------------------------------- sequence pooling */

int tf_seq_pool_register(tf_params *ps, const char *name, tf_seq_pool *p, int64_t d_model, float init_std) {
    if (!p) return tf_set_error("sequence pooling: the head is required");
    if (check_size("sequence pooling", name, "d_model", d_model)) return -1;
    p->d_model = d_model;
    return tf_linear_register(ps, name, &p->score, d_model, 1, 0, init_std); /* no bias: the softmax ignores it */
}

tf_tensor *tf_seq_pool_forward(tf_ctx *ctx, const tf_seq_pool *p, tf_tensor *x, tf_tensor **weights) {
    if (weights) *weights = NULL;
    if (!x) return NULL;
    if (check_input("sequence pooling", "hidden states", x, 3, p->d_model)) return NULL;
    int64_t B = x->shape[0], T = x->shape[1];
    tf_tensor *s = tf_reshape(ctx, tf_linear_forward(ctx, &p->score, x), 3, (int64_t[]){B, 1, T});  // (B,1,T)
    tf_tensor *a = tf_softmax(ctx, s, NULL);                                                          // (B,1,T)
    if (weights) *weights = tf_reshape(ctx, a, 2, (int64_t[]){B, T});                                // (B,T)
    return tf_reshape(ctx, tf_matmul(ctx, a, x, 0, 0), 2, (int64_t[]){B, p->d_model});                // (B,d_model)
}

/* ---------------------------------------------------------------- classifiers */

int tf_classifier_register(tf_params *ps, const char *name, tf_classifier *c, int64_t d_model, int64_t n_labels,
                           float dropout, float init_std) {
    if (!c) return tf_set_error("classifier: the head is required");
    if (check_size("classifier", name, "d_model", d_model) || check_size("classifier", name, "n_labels", n_labels))
        return -1;
    if (!(dropout >= 0.0f && dropout < 1.0f))
        return tf_set_error("classifier %s: dropout %g outside [0,1)", name ? name : "", (double)dropout);
    *c = (tf_classifier){.d_model = d_model, .n_labels = n_labels, .dropout = dropout};
    return tf_linear_register(ps, name, &c->out, d_model, n_labels, 1, init_std);
}

tf_tensor *tf_classifier_seq_forward(tf_ctx *ctx, const tf_classifier *c, tf_tensor *pooled) {
    if (!pooled) return NULL;
    if (check_input("sequence classifier", "pooled input", pooled, 2, c->d_model)) return NULL;
    return tf_linear_forward(ctx, &c->out, tf_dropout(ctx, pooled, c->dropout));  // (B,n_labels)
}

tf_tensor *tf_classifier_token_forward(tf_ctx *ctx, const tf_classifier *c, tf_tensor *x) {
    if (!x) return NULL;
    if (check_input("token classifier", "hidden states", x, 3, c->d_model)) return NULL;
    return tf_linear_forward(ctx, &c->out, tf_dropout(ctx, x, c->dropout));  // (B,T,n_labels)
}

/* ---------------------------------------------------------------- span head */

int tf_span_head_register(tf_params *ps, const char *name, tf_span_head *h, int64_t d_model, float init_std) {
    if (!h) return tf_set_error("span head: the head is required");
    if (check_size("span head", name, "d_model", d_model)) return -1;
    h->d_model = d_model;
    return tf_linear_register(ps, name, &h->out, d_model, 2, 1, init_std);
}

int tf_span_head_forward(tf_ctx *ctx, const tf_span_head *h, tf_tensor *x, tf_tensor **start, tf_tensor **end) {
    *start = *end = NULL;
    if (!x) return -1;
    if (check_input("span head", "hidden states", x, 3, h->d_model)) return -1;
    int64_t bt[2] = {x->shape[0], x->shape[1]};
    tf_tensor *parts[2];
    tf_tensor *logits = tf_linear_forward(ctx, &h->out, x);  // (B,T,2)
    if (!logits || tf_split(ctx, logits, 2, 2, (int64_t[]){1, 1}, parts)) return -1;  // (B,T,1) each
    tf_tensor *s = tf_reshape(ctx, parts[0], 2, bt), *e = tf_reshape(ctx, parts[1], 2, bt);  // (B,T) each
    if (!s || !e) return -1;
    *start = s;
    *end = e;
    return 0;
}
