/* Nyströmformer: BERT's embeddings (positions from 2), a stack of the one
 * Transformer block with Nyström attention (post-LN, q/k/v apart, the
 * depthwise convolution on v: Hugging Face's name map) and the heads of the
 * NystromformerFor* classes, with their names.
 *
 *   x = LN(word[ids] + token_type[types] + position[pos])   pos = 2 .. T+1   (B,T,C)
 *       (word's row pad_token_id takes no gradient from the lookup: nn.Embedding's padding_idx)
 *   x = block_l(x)                 l = 0 .. n_layer-1                        (B,T,C)
 *   head: MLM (B,T,V) | classes out_proj(act(dense(x[:, 0]))) (B,L) | tags (B,T,L)
 */
#include <stdlib.h>
#include <string.h>

#include "../../nn/nn_internal.h"
#include "../family_construct.h"
#include "../model_folder.h"
#include "tformer/nystrom.h"

/* Hugging Face's names for a NystromformerLayer's tensors, in its checkpoint order. */
static const tf_block_name NYSTROM_BLOCK[] = {
    {TF_BP_Q_W, "attention.self.query.weight"},          {TF_BP_Q_B, "attention.self.query.bias"},
    {TF_BP_K_W, "attention.self.key.weight"},            {TF_BP_K_B, "attention.self.key.bias"},
    {TF_BP_V_W, "attention.self.value.weight"},          {TF_BP_V_B, "attention.self.value.bias"},
    {TF_BP_CONV_W, "attention.self.conv.weight"},
    {TF_BP_OUT_W, "attention.output.dense.weight"},      {TF_BP_OUT_B, "attention.output.dense.bias"},
    {TF_BP_NORM_ATTN_W, "attention.output.LayerNorm.weight"}, {TF_BP_NORM_ATTN_B, "attention.output.LayerNorm.bias"},
    {TF_BP_FF_IN_W, "intermediate.dense.weight"},        {TF_BP_FF_IN_B, "intermediate.dense.bias"},
    {TF_BP_FF_OUT_W, "output.dense.weight"},             {TF_BP_FF_OUT_B, "output.dense.bias"},
    {TF_BP_NORM_FF_W, "output.LayerNorm.weight"},        {TF_BP_NORM_FF_B, "output.LayerNorm.bias"},
};

static const char *const HEADS[] = {"NystromformerModel", "NystromformerForMaskedLM",
                                    "NystromformerForSequenceClassification", "NystromformerForTokenClassification",
                                    NULL};

const char *tf_nystrom_head_name(tf_nystrom_head h) {
    return h >= TF_NYSTROM_BODY && h <= TF_NYSTROM_TOKEN_CLS ? HEADS[h] : "unknown";
}

int tf_nystrom_head_from_name(const char *name) {
    for (int i = 0; name && HEADS[i]; i++)
        if (!strcmp(HEADS[i], name)) return i;
    return -1;
}

int tf_nystrom_config_check(const tf_nystrom_config *c) {
    if (c->vocab_size < 1 || c->max_positions < 1 || c->type_vocab_size < 1 || c->n_layer < 1 || c->n_head < 1 ||
        c->d_model < 1 || c->d_ff < 1)
        return tf_set_error("vocab_size, max_position_embeddings, type_vocab_size, num_hidden_layers, "
                            "num_attention_heads, hidden_size and intermediate_size must be positive");
    if (c->d_model % c->n_head)
        return tf_set_error("hidden_size %d is not a multiple of num_attention_heads %d", c->d_model, c->n_head);
    if (c->seq_len < 1 || c->landmarks < 1 || (c->landmarks != c->seq_len && c->seq_len % c->landmarks))
        return tf_set_error("num_landmarks %d must divide segment_means_seq_len %d (transformers cuts the sequence "
                            "into num_landmarks segments of segment_means_seq_len / num_landmarks tokens)",
                            c->landmarks, c->seq_len);
    if (c->conv_kernel < 0 || (c->conv_kernel > 0 && c->conv_kernel % 2 == 0))
        return tf_set_error("conv_kernel_size %d must be odd (or null): an even kernel makes transformers' "
                            "convolution one position longer than the sequence", c->conv_kernel);
    if (c->head != TF_NYSTROM_BODY && c->head != TF_NYSTROM_MLM && c->n_labels < 1)
        return tf_set_error("num_labels %d must be positive", c->n_labels);
    if (c->pad_token_id < -1 || c->pad_token_id >= c->vocab_size)
        return tf_set_error("pad_token_id %d must be -1 (none) or below vocab_size %d", c->pad_token_id, c->vocab_size);
    if (c->regression && (c->head != TF_NYSTROM_SEQ_CLS || c->n_labels != 1))
        return tf_set_error("problem_type regression needs a sequence classifier with num_labels 1");
    return 0;
}

static tf_block_config block_config(const tf_nystrom_config *c) {
    tf_block_config b = tf_block_config_default(c->d_model, c->n_head);
    b.d_ff = c->d_ff, b.activation = c->activation, b.norm_eps = c->norm_eps, b.norm_first = 0;
    b.dropout = c->dropout, b.attn_dropout = 0.0f, b.w_in_out = 0;
    b.self_attn.kind = TF_ATTN_NYSTROM;
    b.self_attn.landmarks = c->landmarks == c->seq_len ? 0 : c->landmarks; /* transformers' exact branch */
    b.self_attn.conv_kernel = c->conv_kernel;
    return b;
}

/* "nystromformer." before the body's names when a head sits on it. */
static int body_name(const tf_nystrom *m, char *out, size_t n, const char *name) {
    if ((size_t)snprintf(out, n, "%s%s", m->cfg.head == TF_NYSTROM_BODY ? "" : "nystromformer.", name) >= n)
        return tf_set_error("nystromformer: parameter name %s too long", name);
    return 0;
}

static int register_body(tf_nystrom *m) {
    const tf_nystrom_config *c = &m->cfg;
    tf_params *ps = m->params;
    float std = c->init_std;
    char n[256];
    int rc = body_name(m, n, sizeof n, "embeddings.word_embeddings.weight") ||
             tf_params_add(ps, n, &m->word, 2, (int64_t[]){c->vocab_size, c->d_model}, std) ||
             body_name(m, n, sizeof n, "embeddings.position_embeddings.weight") ||
             tf_params_add(ps, n, &m->position, 2, (int64_t[]){(int64_t)c->max_positions + 2, c->d_model}, std) ||
             body_name(m, n, sizeof n, "embeddings.token_type_embeddings.weight") ||
             tf_params_add(ps, n, &m->token_type, 2, (int64_t[]){c->type_vocab_size, c->d_model}, std) ||
             body_name(m, n, sizeof n, "embeddings.LayerNorm") ||
             tf_layer_norm_register(ps, n, &m->emb_norm, c->d_model, c->norm_eps, 1);
    tf_block_names names = {NYSTROM_BLOCK, (int)(sizeof NYSTROM_BLOCK / sizeof *NYSTROM_BLOCK)};
    for (int i = 0; !rc && i < c->n_layer; i++) {
        char layer[64];
        snprintf(layer, sizeof layer, "encoder.layer.%d.", i);
        rc = body_name(m, n, sizeof n, layer) ||
             tf_block_register(ps, n, &m->layer[i], &m->block, &names, (tf_block_init){std, std, 0});
    }
    return rc;
}

static int register_head(tf_nystrom *m) {
    const tf_nystrom_config *c = &m->cfg;
    tf_params *ps = m->params;
    switch (c->head) {
    case TF_NYSTROM_MLM: {
        tf_mlm_head_names names = {"cls.predictions.transform.dense", "cls.predictions.transform.LayerNorm",
                                   c->tied ? NULL : "cls.predictions.decoder.weight", "cls.predictions.bias"};
        tf_mlm_head_config hc = {c->d_model, c->vocab_size, c->activation, c->norm_eps, c->init_std};
        return tf_mlm_head_register(ps, &names, &m->mlm, &hc, c->tied ? &m->word : NULL);
    }
    case TF_NYSTROM_SEQ_CLS:
        return tf_linear_register(ps, "classifier.dense", &m->cls_dense, c->d_model, c->d_model, 1, c->init_std) ||
               tf_linear_register(ps, "classifier.out_proj", &m->cls_out, c->d_model, c->n_labels, 1, c->init_std);
    case TF_NYSTROM_TOKEN_CLS:
        return tf_classifier_register(ps, "classifier", &m->token, c->d_model, c->n_labels, c->dropout, c->init_std);
    default: return 0;
    }
}

static int build(void *model) {
    tf_nystrom *m = model;
    if (!(m->layer = calloc((size_t)m->cfg.n_layer, sizeof *m->layer)))
        return tf_set_error("nystromformer: out of memory");
    m->block = block_config(&m->cfg);
    return register_body(m) || register_head(m) ? -1 : 0;
}

static void release(void *m) { free(((tf_nystrom *)m)->layer); }

static const tf_family_layout LAYOUT = {
    .family = "nystromformer", TF_FAMILY_LAYOUT(tf_nystrom), .build = build, .release = release};

TF_FAMILY_NEW_FREE(tf_nystrom, LAYOUT)

/* ---------------------------------------------------------------- forward */

/* The lengths transformers runs: any up to max_position_embeddings when
 * num_landmarks == segment_means_seq_len (exact attention), else exactly
 * segment_means_seq_len (its reshape into landmarks' segments). */
static int check_length(const tf_nystrom_config *c, int64_t T, int positions_given) {
    if (c->landmarks != c->seq_len && T != c->seq_len)
        return tf_set_error("nystromformer: %lld tokens; with num_landmarks %d (not segment_means_seq_len) the model "
                            "takes exactly segment_means_seq_len %d tokens: pad to %d with attention_mask 0",
                            (long long)T, c->landmarks, c->seq_len, c->seq_len);
    if (!positions_given && T > c->max_positions)
        return tf_set_error("nystromformer: %lld tokens exceed max_position_embeddings %d", (long long)T,
                            c->max_positions);
    return 0;
}

/* (B,T,C) embeddings: LN(word + token type + position), then dropout. */
static tf_tensor *embed(tf_ctx *ctx, const tf_nystrom *m, const tf_nystrom_inputs *in) {
    const tf_nystrom_config *c = &m->cfg;
    tf_tensor *ids = in->input_ids;
    int64_t B = ids->shape[0], T = ids->shape[1];
    if (check_length(c, T, in->position_ids != NULL) ||
        tf_check_ids("nystromformer", ids, "input_ids", B, T, c->vocab_size, "ids must be below vocab_size") ||
        tf_check_ids("nystromformer", in->token_type_ids, "token_type_ids", B, T, c->type_vocab_size,
                     "must be below type_vocab_size") ||
        tf_check_ids("nystromformer", in->position_ids, "position_ids", B, T, c->max_positions + 2,
                  "must be below max_position_embeddings + 2 ="))
        return NULL;
    tf_tensor *pos = in->position_ids ? tf_embedding(ctx, m->position, in->position_ids)  // (B,T,C)
                                      : tf_posenc_learned(ctx, m->position, 2, T);        // (T,C)
    tf_tensor *types = in->token_type_ids;
    if (!types && !(types = tf_tensor_new(ctx, TF_DTYPE_I32, 2, ids->shape, 0))) return NULL;  // zeros
    tf_tensor *word = tf_embedding_padded(ctx, m->word, ids, c->pad_token_id);  // (B,T,C)
    tf_tensor *x = tf_add(ctx, word, tf_embedding(ctx, m->token_type, types));
    return tf_dropout(ctx, tf_layer_norm_forward(ctx, &m->emb_norm, tf_add(ctx, x, pos)), c->dropout);
}

static tf_tensor *encode(tf_ctx *ctx, const tf_nystrom *m, const tf_nystrom_inputs *in) {
    tf_tensor *ids = in->input_ids;
    if (!ids || ids->dtype != TF_DTYPE_I32 || ids->ndim != 2)
        return tf_set_error("nystromformer: input_ids must be I32 (B,T)"), NULL;
    int64_t B = ids->shape[0], T = ids->shape[1];
    tf_attn_mask mask = {0};
    if (in->attention_mask && !(mask.key_padding_mask = tf_key_padding(ctx, in->attention_mask, B, T, "nystromformer")))
        return NULL;
    tf_tensor *x = embed(ctx, m, in);
    tf_block_args args = {.self_mask = in->attention_mask ? &mask : NULL};
    for (int i = 0; i < m->cfg.n_layer; i++) x = tf_block_forward(ctx, &m->layer[i], &m->block, x, &args);
    return x;  // (B,T,C)
}

/* ---------------------------------------------------------------- heads and losses */

static int check_labels(const tf_tensor *t, int ndim, const int64_t *shape, tf_dtype dtype, int32_t n) {
    char s[64];
    int ok = t->dtype == dtype && t->ndim == ndim && tf_is_contiguous(t);
    for (int d = 0; ok && d < ndim; d++) ok = t->shape[d] == shape[d];
    if (!ok)
        return tf_set_error("nystromformer: labels %s must be %s %s", tf_shape_str(t, s, sizeof s),
                            dtype == TF_DTYPE_F32 ? "F32" : "I32", ndim == 1 ? "(B)" : "(B,T)");
    for (int64_t i = 0; dtype == TF_DTYPE_I32 && i < tf_numel(t); i++) {
        int32_t v = tf_i32(t)[i];
        if (v != -100 && (v < 0 || v >= n))
            return tf_set_error("nystromformer: labels hold %d at %lld; must be in [0,%d) or -100 (ignored)", (int)v,
                                (long long)i, (int)n);
    }
    return 0;
}

/* out_proj(act(dense(x[:, 0]))) with dropout before each Linear. */
static tf_tensor *seq_logits(tf_ctx *ctx, const tf_nystrom *m, tf_tensor *h) {
    int64_t B = h->shape[0], C = h->shape[2];
    tf_tensor *x = tf_reshape(ctx, tf_narrow(ctx, h, 1, 0, 1), 2, (int64_t[]){B, C});  // (B,C)
    x = tf_dense(ctx, tf_dropout(ctx, x, m->cfg.dropout), m->cls_dense.weight, 0, m->cls_dense.bias,
                 m->cfg.activation);
    return tf_dense(ctx, tf_dropout(ctx, x, m->cfg.dropout), m->cls_out.weight, 0, m->cls_out.bias, TF_ACT_NONE);
}

static int heads(tf_ctx *ctx, const tf_nystrom *m, const tf_nystrom_inputs *in, tf_nystrom_outputs *out) {
    tf_tensor *h = out->last_hidden_state, *labels = in->labels;  // h: (B,T,C)
    const tf_nystrom_config *c = &m->cfg;
    int64_t B = h->shape[0];
    switch (c->head) {
    case TF_NYSTROM_MLM: out->logits = tf_mlm_head_forward(ctx, &m->mlm, h); break;     // (B,T,V)
    case TF_NYSTROM_SEQ_CLS: out->logits = seq_logits(ctx, m, h); break;                // (B,L)
    case TF_NYSTROM_TOKEN_CLS: out->logits = tf_classifier_token_forward(ctx, &m->token, h); break;  // (B,T,L)
    default: return labels ? tf_set_error("nystromformer: NystromformerModel takes no labels") : 0;
    }
    if (!out->logits || !labels) return out->logits ? 0 : -1;
    int32_t n = c->head == TF_NYSTROM_MLM ? c->vocab_size : c->n_labels;
    if (c->regression) { /* mean squared error of logits (B,1) against labels (B) */
        if (check_labels(labels, 1, &B, TF_DTYPE_F32, 1)) return -1;
        tf_tensor *d = tf_add(ctx, tf_reshape(ctx, out->logits, 1, &B), tf_scale(ctx, labels, -1.0f));
        out->loss = tf_mean(ctx, tf_mul(ctx, d, d), TF_DIM_ALL, 0);
    } else {
        if (check_labels(labels, c->head == TF_NYSTROM_SEQ_CLS ? 1 : 2, h->shape, TF_DTYPE_I32, n)) return -1;
        out->loss = tf_cross_entropy(ctx, out->logits, labels, -100, 0.0f);
    }
    return out->loss ? 0 : -1;
}

int tf_nystrom_run(tf_ctx *ctx, const tf_nystrom *m, const tf_nystrom_inputs *in, tf_nystrom_outputs *out) {
    memset(out, 0, sizeof *out);
    if (!(out->last_hidden_state = encode(ctx, m, in))) return -1;
    return heads(ctx, m, in, out);
}
