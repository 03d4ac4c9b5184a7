/* BERT decoders of VisionEncoderDecoderModel folders (include/tformer/caption.h): transformers'
 * BertLMHeadModel with is_decoder and add_cross_attention. The body and the MLM head are the BERT
 * family's (tf_bert with the MLM head: "bert.embeddings.", "bert.encoder.layer.<i>.", "cls.predictions.");
 * each layer's cross-attention ("crossattention.self.query", ".key", ".value",
 * "crossattention.output.dense", "crossattention.output.LayerNorm") is registered beside them.
 * Each layer is composed from the shared block's post-LN sub-layers in BERT's order:
 *
 *   x = LN(x + attention(x))                 causal self-attention (BERT's block, made causal)
 *   x = LN(x + crossattention(x, memory))    the memory: ViT's last hidden state (or enc_to_dec_proj's)
 *   x = LN(x + output(act(intermediate(x))))
 *   logits = cls.predictions(x)              dense + act + LayerNorm + the (tied) decoder + bias
 *
 * The embeddings are BERT's: LN(word + position (past .. past+T) + token type 0), the word row
 * pad_token_id without gradient (nn.Embedding's padding_idx). */
#include <stdlib.h>
#include <string.h>

#include "../../nn/nn_internal.h"
#include "../bert/bert_internal.h"
#include "caption_internal.h"

/* ---------------------------------------------------------------- config.json's "decoder" */

static int refuse_own(const tf_bert_config *c, const char *path) {
    if (c->norm_first || !c->learned_positions || c->roberta || c->distilbert || c->bigbird_sparse ||
        c->attention.kind != TF_ATTENTION_FULL || c->attention.rope != TF_ROPE_NONE || c->attention.ssmax != 0)
        return tf_set_error("%s: the decoder must be Hugging Face's BERT (post-LN, a position table, full attention): "
                            "tformer's own BERT settings are not read in a VisionEncoderDecoderModel", path);
    return 0;
}

int tf_caption_ved_bert_config(const cJSON *dec, const char *path, tf_bert_config *c) {
    const cJSON *x = cJSON_GetObjectItemCaseSensitive(dec, "add_cross_attention");
    const cJSON *d = cJSON_GetObjectItemCaseSensitive(dec, "is_decoder");
    const cJSON *w = cJSON_GetObjectItemCaseSensitive(dec, "cross_attention_hidden_size");
    if (!cJSON_IsTrue(x))
        return tf_set_error("%s: decoder \"add_cross_attention\" must be true: a decoder without cross-attention does "
                            "not read the image", path);
    if (!cJSON_IsTrue(d))
        return tf_set_error("%s: decoder \"is_decoder\" must be true: a BERT decoder's self-attention is causal", path);
    if (w && !cJSON_IsNull(w))
        return tf_set_error("%s: decoder \"cross_attention_hidden_size\" must be null: BERT's cross-attention reads "
                            "its own width", path);
    cJSON *copy = cJSON_Duplicate(dec, 1);
    if (!copy) return tf_set_error("%s: out of memory", path);
    static const char *const OURS[] = {"add_cross_attention", "is_decoder", "architectures"};
    for (int i = 0; i < 3; i++) cJSON_DeleteItemFromObjectCaseSensitive(copy, OURS[i]);
    tf_bert_load_opts o = {.head = TF_BERT_MLM};
    int folder_head = 0, rc = tf_bert_config_from_hf(copy, path, &o, c, &folder_head);
    cJSON_Delete(copy);
    c->pooler = 0; /* BertLMHeadModel's body has none (add_pooling_layer=False) */
    /* nn.Embedding's padding_idx: the word row pad_token_id (BertConfig's 0 when absent) takes no gradient */
    const cJSON *pad = cJSON_GetObjectItemCaseSensitive(dec, "pad_token_id");
    c->pad_token_id = !pad ? 0 : cJSON_IsNumber(pad) ? pad->valueint : -1;
    if (!rc && (pad && !cJSON_IsNull(pad) && !cJSON_IsNumber(pad)))
        return tf_set_error("%s: decoder \"pad_token_id\" must be an id or null", path);
    if (!rc && (c->pad_token_id < -1 || c->pad_token_id >= c->vocab_size))
        return tf_set_error("%s: decoder \"pad_token_id\" %d must be below vocab_size %d", path, c->pad_token_id,
                            c->vocab_size);
    return rc || refuse_own(c, path);
}

/* ---------------------------------------------------------------- the model */

static int add_linear(tf_params *ps, const char *prefix, const char *name, tf_linear *l, int64_t E) {
    char full[256];
    snprintf(full, sizeof full, "%s%s", prefix, name);
    return tf_linear_register(ps, full, l, E, E, 1, 0.02f);
}

/* Every layer's cross-attention beside the body's tensors. */
static int register_xattn(struct tf_caption_bert_decoder *d) {
    const tf_bert_config *c = &d->bert->cfg;
    tf_params *ps = d->bert->params;
    if (!(d->x = calloc((size_t)c->n_layer, sizeof *d->x))) return tf_set_error("caption: out of memory");
    for (int i = 0; i < c->n_layer; i++) {
        tf_caption_bert_xattn *x = &d->x[i];
        char p[96], n[160];
        snprintf(p, sizeof p, "bert.encoder.layer.%d.crossattention.", i);
        snprintf(n, sizeof n, "%soutput.LayerNorm", p);
        if (add_linear(ps, p, "self.query", &x->q, c->d_model) || add_linear(ps, p, "self.key", &x->k, c->d_model) ||
            add_linear(ps, p, "self.value", &x->v, c->d_model) || add_linear(ps, p, "output.dense", &x->proj, c->d_model) ||
            tf_layer_norm_register(ps, n, &x->norm, c->d_model, c->norm_eps, 1))
            return -1;
    }
    return 0;
}

int tf_caption_ved_bert_new(tf_caption_ved *m, const tf_bert_config *c) {
    if (!(m->bert = calloc(1, sizeof *m->bert))) return tf_set_error("caption: out of memory");
    return !(m->bert->bert = tf_bert_new(c, 0)) || register_xattn(m->bert) ? -1 : 0;
}

int tf_caption_ved_bert_extra(const char *name) {
    static const char *const EXTRA[] = {"cls.predictions.decoder.weight", "cls.predictions.decoder.bias",
                                        "bert.embeddings.position_ids", "bert.embeddings.token_type_ids"};
    for (int i = 0; i < 4; i++)
        if (!strcmp(name, EXTRA[i])) return 1;
    return 0;
}

void tf_caption_ved_bert_free(struct tf_caption_bert_decoder *d) {
    if (!d) return;
    tf_bert_free(d->bert);
    free(d->x), free(d);
}

/* ---------------------------------------------------------------- the forward */

/* Layer i's cross-attention as a block of the shared kind (its sub-layer CROSS only). */
static void cross_block(const struct tf_caption_bert_decoder *d, int i, tf_block *b) {
    const tf_caption_bert_xattn *x = &d->x[i];
    const tf_bert_config *c = &d->bert->cfg;
    memset(b, 0, sizeof *b);
    tf_mha *a = &b->cross_attn;
    a->cfg = tf_mha_config_default(c->d_model, c->n_head);
    a->cfg.w_in_out = 0, a->cfg.bias = 1, a->cfg.dropout = c->attn_dropout;
    a->q_proj_weight = x->q.weight, a->q_proj_bias = x->q.bias;
    a->k_proj_weight = x->k.weight, a->k_proj_bias = x->k.bias;
    a->v_proj_weight = x->v.weight, a->v_proj_bias = x->v.bias;
    a->out_proj = x->proj;
    b->norm_cross = x->norm;
}

/* LN(word + position + token type 0) of the ids after the cache's: (B,T,E). */
static tf_tensor *embed(tf_ctx *ctx, const tf_bert *b, tf_tensor *ids, int64_t start) {
    tf_tensor *types = tf_tensor_new(ctx, TF_DTYPE_I32, 2, ids->shape, 1);  // zeros
    if (!types) return NULL;
    tf_tensor *x = tf_add(ctx, tf_embedding_padded(ctx, b->emb.word, ids, b->cfg.pad_token_id),
                          tf_embedding(ctx, b->emb.token_type, types));
    x = tf_add(ctx, x, tf_posenc_learned(ctx, b->emb.position, start, ids->shape[1]));
    return tf_dropout(ctx, tf_layer_norm_forward(ctx, &b->emb.norm, x), b->cfg.dropout);
}

tf_tensor *tf_caption_ved_bert_decode(tf_ctx *ctx, const tf_caption_ved *m, const tf_caption_ved_inputs *in,
                                      tf_tensor *memory, tf_caption_ved_outputs *out) {
    const tf_bert *b = m->bert->bert;
    const tf_bert_config *c = &b->cfg;
    tf_tensor *ids = in->decoder_input_ids;
    int64_t T = ids->shape[1], start = in->cache ? tf_kv_cache_len(in->cache) : 0;
    tf_block_config causal = b->block;
    causal.self_attn.kind = TF_ATTN_CAUSAL;
    tf_attn_mask pad;
    tf_block_args args;
    if (tf_caption_ved_block_args(ctx, in, memory, c->n_layer, &pad, &args, out)) return NULL;
    int fill = in->cross_cache && tf_kv_cache_len(in->cross_cache) == 0;
    tf_tensor *x = embed(ctx, b, ids, start);
    for (int i = 0; i < c->n_layer && x; i++) {
        tf_block xb;
        cross_block(m->bert, i, &xb);
        args.layer = i, args.cross_probs = in->output_attentions ? &out->cross_attentions[i] : NULL;
        x = tf_block_sublayer(ctx, &b->layer[i], &causal, TF_SUBLAYER_SELF, x, &args, c->dropout);
        x = tf_block_sublayer(ctx, &xb, &causal, TF_SUBLAYER_CROSS, x, &args, c->dropout);
        x = tf_block_sublayer(ctx, &b->layer[i], &causal, TF_SUBLAYER_FF, x, &args, c->dropout);
    }
    if (x && in->cache && tf_kv_cache_advance(in->cache, (int)T)) return NULL;
    if (x && fill && tf_kv_cache_advance(in->cross_cache, (int)memory->shape[1])) return NULL;
    return x ? tf_mlm_head_forward(ctx, &b->mlm, x) : NULL;
}

/* ---------------------------------------------------------------- either decoder */

tf_caption_ved_dims tf_caption_ved_decoder_dims(const tf_caption_ved *m) {
    if (m->bert) {
        const tf_bert_config *c = &m->bert->bert->cfg;
        return (tf_caption_ved_dims){c->vocab_size, c->context, c->n_layer, c->n_head, c->d_model};
    }
    const tf_gpt_config *c = &m->decoder->cfg;
    return (tf_caption_ved_dims){c->vocab_size, c->context, c->n_layer, c->n_head, c->d_model};
}

tf_params *tf_caption_ved_decoder_params(const tf_caption_ved *m) {
    return m->bert ? m->bert->bert->params : m->decoder->params;
}
