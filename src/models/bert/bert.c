/* BERT: token + segment + position embeddings, a LayerNorm, a stack of the
 * one Transformer block (post-LN, bidirectional, separate q/k/v: BERT's name
 * map) and the heads of Hugging Face's BertFor* classes, with their names.
 *
 *   x = LN(word[ids] + position[pos] + token_type[types])   (B,T,C)
 *   x = block_l(x)                 l = 0 .. n_layer-1       (B,T,C)
 *   x = LN(x)                      norm_first only          (B,T,C)
 *   pooled = tanh(dense(x[:, 0]))  (or of the tokens' mean) (B,C)
 *   head: MLM (B,T,V) | NSP (B,2) | classes (B,L) | tags (B,T,L) | span 2 x (B,T)
 *
 * RoBERTa (cfg.roberta) is the same body under "roberta.": positions from
 * the ids (pad_token_id + 1 + the count of non-padding tokens so far, padding
 * at pad_token_id), an MLM head named lm_head.*, the sequence classifier
 * out_proj(tanh(dense(x[:, 0]))) without a pooler.
 *
 * DistilBERT (cfg.distilbert) is the same block under other names
 * ("distilbert.", "transformer.layer.N.": DISTIL_BLOCK), without token types
 * or pooler, the attention's output undropped, its heads vocab_* (MLM) and
 * classifier(relu(pre_classifier(x[:, 0]))).
 */
#include <stdlib.h>
#include <string.h>

#include "../../nn/nn_internal.h"
#include "../family_construct.h"
#include "../model_folder.h"
#include "bert_internal.h"

/* Hugging Face's names for a BertLayer's tensors, in its checkpoint order. */
static const tf_block_name BERT_BLOCK[] = {
    {TF_BP_Q_W, "attention.self.query.weight"},          {TF_BP_Q_B, "attention.self.query.bias"},
    {TF_BP_K_W, "attention.self.key.weight"},            {TF_BP_K_B, "attention.self.key.bias"},
    {TF_BP_V_W, "attention.self.value.weight"},          {TF_BP_V_B, "attention.self.value.bias"},
    {TF_BP_OUT_W, "attention.output.dense.weight"},      {TF_BP_OUT_B, "attention.output.dense.bias"},
    {TF_BP_NORM_ATTN_W, "attention.output.LayerNorm.weight"}, {TF_BP_NORM_ATTN_B, "attention.output.LayerNorm.bias"},
    {TF_BP_FF_IN_W, "intermediate.dense.weight"},        {TF_BP_FF_IN_B, "intermediate.dense.bias"},
    {TF_BP_FF_OUT_W, "output.dense.weight"},             {TF_BP_FF_OUT_B, "output.dense.bias"},
    {TF_BP_NORM_FF_W, "output.LayerNorm.weight"},        {TF_BP_NORM_FF_B, "output.LayerNorm.bias"},
    {TF_BP_CONV_W, "attention.self.conv.weight"}, /* Nystrom's, with conv_kernel: Nystromformer's name */
    {TF_BP_SSMAX, "attention.self.ssmax_scale"},  /* Scalable-Softmax's s, with ssmax (tformer's own) */
};

/* DistilBERT's TransformerBlock: the same roles under its names. */
static const tf_block_name DISTIL_BLOCK[] = {
    {TF_BP_Q_W, "attention.q_lin.weight"},      {TF_BP_Q_B, "attention.q_lin.bias"},
    {TF_BP_K_W, "attention.k_lin.weight"},      {TF_BP_K_B, "attention.k_lin.bias"},
    {TF_BP_V_W, "attention.v_lin.weight"},      {TF_BP_V_B, "attention.v_lin.bias"},
    {TF_BP_OUT_W, "attention.out_lin.weight"},  {TF_BP_OUT_B, "attention.out_lin.bias"},
    {TF_BP_NORM_ATTN_W, "sa_layer_norm.weight"}, {TF_BP_NORM_ATTN_B, "sa_layer_norm.bias"},
    {TF_BP_FF_IN_W, "ffn.lin1.weight"},         {TF_BP_FF_IN_B, "ffn.lin1.bias"},
    {TF_BP_FF_OUT_W, "ffn.lin2.weight"},        {TF_BP_FF_OUT_B, "ffn.lin2.bias"},
    {TF_BP_NORM_FF_W, "output_layer_norm.weight"}, {TF_BP_NORM_FF_B, "output_layer_norm.bias"},
};

static tf_block_config block_config(const tf_bert_config *c) {
    tf_block_config b = tf_block_config_default(c->d_model, c->n_head);
    b.d_ff = c->d_ff ? c->d_ff : 4 * c->d_model;
    b.activation = c->activation, b.norm_eps = c->norm_eps, b.norm_first = c->norm_first;
    b.dropout = c->dropout, b.attn_dropout = c->attn_dropout;
    b.self_attn.kind = TF_ATTN_FULL, b.w_in_out = 0;
    tf_attention_apply(&c->attention, &b); /* checked by tf_bert_config_check */
    return b;
}

/* "bert." ("roberta.", "distilbert.") before the body's names when a head sits on it (Hugging Face's layout). */
static int body_name(const tf_bert *m, char *out, size_t n, const char *name) {
    const char *prefix = m->cfg.head == TF_BERT_BODY ? "" : m->cfg.roberta ? "roberta."
                       : m->cfg.distilbert ? "distilbert." : "bert.";
    if ((size_t)snprintf(out, n, "%s%s", prefix, name) >= n)
        return tf_set_error("bert: parameter name %s too long", name);
    return 0;
}

static int register_body(tf_bert *m) {
    const tf_bert_config *c = &m->cfg;
    tf_params *ps = m->params;
    float std = c->init_std;
    char n[256];
    int rc = body_name(m, n, sizeof n, "embeddings.word_embeddings.weight") ||
             tf_params_add(ps, n, &m->emb.word, 2, (int64_t[]){c->vocab_size, c->d_model}, std) ||
             (c->learned_positions &&
              (body_name(m, n, sizeof n, "embeddings.position_embeddings.weight") ||
               tf_params_add(ps, n, &m->emb.position, 2, (int64_t[]){c->context, c->d_model}, std))) ||
             (!c->distilbert &&
              (body_name(m, n, sizeof n, "embeddings.token_type_embeddings.weight") ||
               tf_params_add(ps, n, &m->emb.token_type, 2, (int64_t[]){c->type_vocab_size, c->d_model}, std))) ||
             body_name(m, n, sizeof n, "embeddings.LayerNorm") ||
             tf_layer_norm_register(ps, n, &m->emb.norm, c->d_model, c->norm_eps, 1);
    tf_block_names names = {BERT_BLOCK, (int)(sizeof BERT_BLOCK / sizeof *BERT_BLOCK)};
    if (c->distilbert) names = (tf_block_names){DISTIL_BLOCK, (int)(sizeof DISTIL_BLOCK / sizeof *DISTIL_BLOCK)};
    tf_block_init init = {std, std, 0};
    for (int i = 0; !rc && i < c->n_layer; i++) {
        char layer[64];
        snprintf(layer, sizeof layer, c->distilbert ? "transformer.layer.%d." : "encoder.layer.%d.", i);
        rc = body_name(m, n, sizeof n, layer) || tf_block_register(ps, n, &m->layer[i], &m->block, &names, init);
    }
    if (!rc && c->norm_first)
        rc = body_name(m, n, sizeof n, "encoder.LayerNorm") ||
             tf_layer_norm_register(ps, n, &m->final_norm, c->d_model, c->norm_eps, 1);
    if (!rc && c->pooler)
        rc = body_name(m, n, sizeof n, "pooler.dense") || tf_pooler_register(ps, n, &m->pooler, c->d_model, std);
    return rc;
}

/* RoBERTa's heads: RobertaLMHead (erf GELU whatever hidden_act says) and
 * RobertaClassificationHead; its token and span heads are BERT's. */
static int register_roberta_head(tf_bert *m, float cls_dropout) {
    const tf_bert_config *c = &m->cfg;
    tf_params *ps = m->params;
    if (c->head == TF_BERT_MLM) {
        tf_mlm_head_names names = {"lm_head.dense", "lm_head.layer_norm", c->tied ? NULL : "lm_head.decoder.weight",
                                   "lm_head.bias"};
        tf_mlm_head_config hc = {c->d_model, c->vocab_size, TF_ACT_GELU, c->norm_eps, c->init_std};
        return tf_mlm_head_register(ps, &names, &m->mlm, &hc, c->tied ? &m->emb.word : NULL);
    }
    return tf_linear_register(ps, "classifier.dense", &m->cls_dense, c->d_model, c->d_model, 1, c->init_std) ||
           tf_classifier_register(ps, "classifier.out_proj", &m->cls, c->d_model, c->n_labels, cls_dropout,
                                  c->init_std);
}

/* DistilBERT's heads: vocab_transform + its activation + vocab_layer_norm +
 * vocab_projector; pre_classifier + ReLU + classifier; the token classifier
 * after `dropout`; qa_outputs (qa_dropout before it: bert_heads.c). */
static int register_distil_head(tf_bert *m, float cls_dropout) {
    const tf_bert_config *c = &m->cfg;
    tf_params *ps = m->params;
    switch (c->head) {
    case TF_BERT_MLM: {
        tf_mlm_head_names names = {"vocab_transform", "vocab_layer_norm", c->tied ? NULL : "vocab_projector.weight",
                                   "vocab_projector.bias"};
        tf_mlm_head_config hc = {c->d_model, c->vocab_size, c->activation, c->norm_eps, c->init_std};
        return tf_mlm_head_register(ps, &names, &m->mlm, &hc, c->tied ? &m->emb.word : NULL);
    }
    case TF_BERT_SEQ_CLS:
        return tf_linear_register(ps, "pre_classifier", &m->cls_dense, c->d_model, c->d_model, 1, c->init_std) ||
               tf_classifier_register(ps, "classifier", &m->cls, c->d_model, c->n_labels, cls_dropout, c->init_std);
    case TF_BERT_TOKEN_CLS:
        return tf_classifier_register(ps, "classifier", &m->cls, c->d_model, c->n_labels, c->dropout, c->init_std);
    case TF_BERT_QA: return tf_span_head_register(ps, "qa_outputs", &m->span, c->d_model, c->init_std);
    default: return 0;
    }
}

static int register_head(tf_bert *m) {
    const tf_bert_config *c = &m->cfg;
    tf_params *ps = m->params;
    float cls_dropout = c->classifier_dropout >= 0 ? c->classifier_dropout : c->dropout;
    if (c->distilbert) return register_distil_head(m, cls_dropout);
    if (c->roberta && (c->head == TF_BERT_MLM || c->head == TF_BERT_SEQ_CLS))
        return register_roberta_head(m, cls_dropout);
    switch (c->head) {
    case TF_BERT_PRETRAINING:
    case TF_BERT_MLM: {
        tf_mlm_head_names names = {"cls.predictions.transform.dense", "cls.predictions.transform.LayerNorm",
                                   c->tied ? NULL : "cls.predictions.decoder.weight", "cls.predictions.bias"};
        tf_mlm_head_config hc = {c->d_model, c->vocab_size, c->activation, c->norm_eps, c->init_std};
        if (tf_mlm_head_register(ps, &names, &m->mlm, &hc, c->tied ? &m->emb.word : NULL)) return -1;
        return c->head == TF_BERT_MLM ? 0
                                      : tf_classifier_register(ps, "cls.seq_relationship", &m->nsp, c->d_model, 2, 0,
                                                               c->init_std);
    }
    case TF_BERT_SEQ_CLS:
    case TF_BERT_TOKEN_CLS:
        return tf_classifier_register(ps, "classifier", &m->cls, c->d_model, c->n_labels, cls_dropout, c->init_std);
    case TF_BERT_QA: return tf_span_head_register(ps, "qa_outputs", &m->span, c->d_model, c->init_std);
    default: return 0;
    }
}

int tf_bert_max_tokens(const tf_bert_config *c) {
    return c->roberta ? c->context - c->pad_token_id - 1 : c->context;
}

static int build(void *model) {
    tf_bert *m = model;
    if (!(m->layer = calloc((size_t)m->cfg.n_layer, sizeof *m->layer))) return tf_set_error("bert: out of memory");
    m->block = block_config(&m->cfg);
    return register_body(m) || register_head(m) ? -1 : 0;
}

static void release(void *model) {
    tf_bert *m = model;
    tf_labels_free(&m->labels, m->cfg.n_labels);
    free(m->layer);
}

static const tf_family_layout LAYOUT = {
    .family = "bert", TF_FAMILY_LAYOUT(tf_bert), .build = build, .release = release};

TF_FAMILY_NEW_FREE(tf_bert, LAYOUT)

/* ---------------------------------------------------------------- forward */

/* RoBERTa's positions (B,T) from the ids: pad + the count of non-padding
 * tokens up to and including t, pad itself at padding (transformers'
 * create_position_ids_from_input_ids). */
static tf_tensor *roberta_positions(tf_ctx *ctx, const tf_bert_config *c, const tf_tensor *ids) {
    int64_t B = ids->shape[0], T = ids->shape[1];
    int32_t pad = c->pad_token_id;
    tf_tensor *pos = tf_tensor_new(ctx, TF_DTYPE_I32, 2, ids->shape, 0);  // (B,T)
    for (int64_t b = 0; pos && b < B; b++) {
        int32_t n = 0;
        for (int64_t t = 0; t < T; t++) {
            int real = tf_i32(ids)[b * T + t] != pad;
            n += real;
            tf_i32(pos)[b * T + t] = real ? pad + n : pad;  // below context: T <= tf_bert_max_tokens
        }
    }
    return pos;
}

/* RoBERTa's embeddings: LN(word + token type + position), rows pad_token_id
 * of the word and position tables without gradient (nn.Embedding's padding_idx). */
static tf_tensor *roberta_embed(tf_ctx *ctx, const tf_bert *m, tf_tensor *ids, tf_tensor *types, tf_tensor *pos) {
    const tf_bert_config *c = &m->cfg;
    if (!pos && !(pos = roberta_positions(ctx, c, ids))) return NULL;
    tf_tensor *x = tf_add(ctx, tf_embedding_padded(ctx, m->emb.word, ids, c->pad_token_id),
                          tf_embedding(ctx, m->emb.token_type, types));
    x = tf_add(ctx, x, tf_embedding_padded(ctx, m->emb.position, pos, c->pad_token_id));  // (B,T,C)
    return tf_dropout(ctx, tf_layer_norm_forward(ctx, &m->emb.norm, x), c->dropout);
}

/* DistilBERT's embeddings: LN(word + position), positions 0..T-1 unless
 * given, the word row pad_token_id without gradient; no token types. */
static tf_tensor *distil_embed(tf_ctx *ctx, const tf_bert *m, const tf_bert_inputs *in) {
    const tf_bert_config *c = &m->cfg;
    int64_t T = in->input_ids->shape[1];
    tf_tensor *x = tf_embedding_padded(ctx, m->emb.word, in->input_ids, c->pad_token_id);  // (B,T,C)
    x = tf_add(ctx, x, in->position_ids ? tf_embedding(ctx, m->emb.position, in->position_ids)  // (B,T,C)
                                        : tf_posenc_learned(ctx, m->emb.position, 0, T));      // (T,C)
    return tf_dropout(ctx, tf_layer_norm_forward(ctx, &m->emb.norm, x), c->dropout);
}

/* Layer i: BERT's block, or DistilBERT's (its TransformerBlock drops out the
 * attention weights and the feed-forward's output, not the attention's output). */
static tf_tensor *layer_forward(tf_ctx *ctx, const tf_bert *m, int i, tf_tensor *x, const tf_block_args *a) {
    if (!m->cfg.distilbert) return tf_block_forward(ctx, &m->layer[i], &m->block, x, a);
    x = tf_block_sublayer(ctx, &m->layer[i], &m->block, TF_SUBLAYER_SELF, x, a, 0.0f);
    return tf_block_sublayer(ctx, &m->layer[i], &m->block, TF_SUBLAYER_FF, x, a, m->block.dropout);
}

/* (B,T,C) embeddings: LN(word + position + token type), then dropout (no
 * position table with learned_positions false). */
tf_tensor *tf_bert_embed_inputs(tf_ctx *ctx, const tf_bert *m, const tf_bert_inputs *in) {
    const tf_bert_config *c = &m->cfg;
    tf_tensor *ids = in->input_ids;
    int64_t B = ids->shape[0], T = ids->shape[1];
    if (T > tf_bert_max_tokens(c) && c->roberta && !in->position_ids)
        return tf_set_error("bert: %lld tokens exceed %d, max_position_embeddings %d - pad_token_id %d - 1 (RoBERTa's "
                            "positions start at pad_token_id + 1)", (long long)T, tf_bert_max_tokens(c), c->context,
                            c->pad_token_id), NULL;
    if (T > c->context)
        return tf_set_error("bert: %lld tokens exceed max_position_embeddings %d", (long long)T, c->context), NULL;
    if (c->distilbert && in->token_type_ids)
        return tf_set_error("bert: token_type_ids given, but DistilBERT has no token types (its forward() takes none)"),
               NULL;
    if (tf_check_ids("bert", ids, "input_ids", B, T, c->vocab_size, "ids must be below vocab_size") ||
        tf_check_ids("bert", in->token_type_ids, "token_type_ids", B, T, c->type_vocab_size,
                     "must be below type_vocab_size") ||
        tf_check_ids("bert", in->position_ids, "position_ids", B, T, c->context,
                     "must be below max_position_embeddings"))
        return NULL;
    if (in->position_ids && !m->emb.position)
        return tf_set_error("bert: position_ids given, but the model has no position table (learned_positions "
                            "false: its positions are rotary)"), NULL;
    if (c->distilbert) return distil_embed(ctx, m, in);
    tf_tensor *types = in->token_type_ids;
    if (!types && (types = tf_tensor_new(ctx, TF_DTYPE_I32, 2, ids->shape, 1)) == NULL) return NULL;  // zeros
    if (c->roberta) return roberta_embed(ctx, m, ids, types, in->position_ids);
    tf_tensor *x = tf_add(ctx, tf_embedding(ctx, m->emb.word, ids), tf_embedding(ctx, m->emb.token_type, types));
    if (m->emb.position)
        x = tf_add(ctx, x, in->position_ids ? tf_embedding(ctx, m->emb.position, in->position_ids)  // (B,T,C)
                                            : tf_posenc_learned(ctx, m->emb.position, 0, T));      // (T,C)
    return tf_dropout(ctx, tf_layer_norm_forward(ctx, &m->emb.norm, x), c->dropout);
}

/* The encoder's output (B,T,C); attentions (n_layer, or NULL): each layer's probabilities. */
static tf_tensor *encode(tf_ctx *ctx, const tf_bert *m, const tf_bert_inputs *in, tf_tensor **attentions,
                         tf_ctx *const *work) {
    tf_tensor *ids = in->input_ids;
    if (!ids || ids->dtype != TF_DTYPE_I32 || ids->ndim != 2) return tf_set_error("bert: input_ids must be I32 (B,T)"), NULL;
    int64_t B = ids->shape[0], T = ids->shape[1];
    const tf_bert_config *c = &m->cfg;
    if (c->bigbird_sparse && T > (int64_t)(5 + 2 * c->bigbird_random) * c->bigbird_block)
        return attentions ? tf_set_error("bert: no attention probabilities of block-sparse BigBird (over %lld "
                                         "tokens)", (long long)T), NULL
                          : tf_bert_encode_block_sparse(ctx, m, in);
    if (in->rand_attn)  // transformers runs these lengths with full attention
        return tf_set_error("bert: rand_attn is for block_sparse BigBird over more than (5 + 2 num_random_blocks) "
                            "block_size tokens (got %lld)", (long long)T), NULL;
    tf_attn_mask mask = {0};
    if (in->attention_mask && !(mask.key_padding_mask = tf_key_padding(ctx, in->attention_mask, B, T, "bert")))
        return NULL;
    tf_tensor *x = tf_bert_embed_inputs(ctx, m, in);
    tf_block_args args = {.self_mask = in->attention_mask ? &mask : NULL};
    tf_ctx *w = ctx;
    for (int i = 0; i < m->cfg.n_layer; i++) {
        if (work) w = work[i % 2], tf_ctx_reset(w); /* it held layer i - 2's tensors; x is layer i - 1's */
        args.self_probs = attentions ? &attentions[i] : NULL;
        x = layer_forward(w, m, i, x, &args);
    }
    x = c->norm_first ? tf_layer_norm_forward(w, &m->final_norm, x) : x;  // (B,T,C)
    if (!work || !x) return x;
    if (!tf_is_contiguous(x) && !(x = tf_contiguous(w, x))) return NULL;
    tf_tensor *kept = tf_tensor_new(ctx, TF_DTYPE_F32, x->ndim, x->shape, 0);
    if (kept) memcpy(kept->data, x->data, (size_t)tf_numel(x) * sizeof(float));
    return kept;
}

tf_tensor *tf_bert_encode(tf_ctx *ctx, const tf_bert *m, const tf_bert_inputs *in) { return encode(ctx, m, in, NULL, NULL); }

tf_tensor *tf_bert_encode_in(tf_ctx *ctx, tf_ctx *const work[2], const tf_bert *m, const tf_bert_inputs *in) {
    return encode(ctx, m, in, NULL, ctx->grad_enabled || m->cfg.bigbird_sparse ? NULL : work);
}

/* The pooler on what cfg.pooling names: [CLS], the tokens' mean or the last token. */
static tf_tensor *pool(tf_ctx *ctx, const tf_bert *m, tf_tensor *h, const tf_tensor *attention_mask) {
    switch (m->cfg.pooling) {
    case TF_POOL_MEAN: return tf_pooler_forward_mean(ctx, &m->pooler, h, attention_mask);  // (B,C)
    case TF_POOL_LAST: return tf_pooler_forward_last(ctx, &m->pooler, h, attention_mask);  // (B,C)
    default: return tf_pooler_forward(ctx, &m->pooler, h);                                 // (B,C)
    }
}

int tf_bert_run(tf_ctx *ctx, const tf_bert *m, const tf_bert_inputs *in, tf_bert_outputs *out) {
    memset(out, 0, sizeof *out);
    if (in->output_attentions &&
        !(out->attentions = tf_ctx_alloc(ctx, (size_t)m->cfg.n_layer * sizeof *out->attentions)))
        return -1;
    if (!(out->last_hidden_state = encode(ctx, m, in, out->attentions, NULL))) return -1;
    if (m->cfg.pooler && !(out->pooler_output = pool(ctx, m, out->last_hidden_state, in->attention_mask))) return -1;
    return tf_bert_heads(ctx, m, in, out);
}
