/* Hugging Face's BigBirdModel with attention_type "block_sparse" on the BERT
 * body: the input padded to a multiple of the block as transformers pads it
 * (ids pad_token_id, attention_mask 0, token types 0, given positions
 * pad_token_id), every layer's self-attention the sparse kernel under the
 * itc layout with that layer's random blocks, the padding cut off the output.
 * Shorter inputs (at most (5 + 2 r) b tokens) never come here: transformers
 * runs them with full attention (bert.c). */
#include <string.h>

#include "../../nn/nn_internal.h"
#include "bert_internal.h"

/* x (B,T) I32 or U8 as I32 (B,Tp), positions T.. set to v; NULL stays NULL
 * unless v_missing >= 0 (then the first T are v_missing). */
static tf_tensor *pad_right(tf_ctx *ctx, tf_tensor *x, int64_t B, int64_t T, int64_t Tp, int32_t v, int v_missing) {
    if (!x && v_missing < 0) return NULL;
    tf_tensor *c = x ? tf_contiguous(ctx, x) : NULL, *o = tf_tensor_new(ctx, TF_DTYPE_I32, 2, (int64_t[]){B, Tp}, 0);
    if ((x && !c) || !o) return NULL;
    if (c && (c->ndim != 2 || c->shape[0] != B || c->shape[1] != T || (c->dtype != TF_DTYPE_I32 && c->dtype != TF_DTYPE_U8)))
        return tf_set_error("bigbird: an input is not (%lld,%lld) I32", (long long)B, (long long)T), NULL;
    for (int64_t b = 0; b < B; b++)
        for (int64_t t = 0; t < Tp; t++)
            tf_i32(o)[b * Tp + t] = t >= T ? v
                                   : !c ? v_missing
                                   : c->dtype == TF_DTYPE_U8 ? tf_u8(c)[b * T + t] : tf_i32(c)[b * T + t];
    return o;
}

static int check_table(const tf_bert *m, const tf_tensor *r, int64_t nb) {
    const tf_bert_config *c = &m->cfg;
    int64_t want[4] = {c->n_layer, c->n_head, nb - 2, c->bigbird_random};
    int ok = r->dtype == TF_DTYPE_I32 && r->ndim == 4 && tf_is_contiguous(r);
    for (int i = 0; ok && i < 4; i++) ok = r->shape[i] == want[i];
    if (ok) return 0;
    char s[64];
    return tf_set_error("bigbird: rand_attn %s must be I32 (num_hidden_layers %d, num_attention_heads %d, blocks - 2 = "
                        "%lld, num_random_blocks %d) for this length", tf_shape_str(r, s, sizeof s), c->n_layer,
                        c->n_head, (long long)(nb - 2), c->bigbird_random);
}

tf_tensor *tf_bert_encode_block_sparse(tf_ctx *ctx, const tf_bert *m, const tf_bert_inputs *in) {
    const tf_bert_config *c = &m->cfg;
    int64_t B = in->input_ids->shape[0], T = in->input_ids->shape[1], b = c->bigbird_block;
    int64_t Tp = (T + b - 1) / b * b, nb = Tp / b, H = c->n_head, per_layer = H * (nb - 2) * c->bigbird_random;
    if (in->rand_attn && check_table(m, in->rand_attn, nb)) return NULL;
    tf_bert_inputs x = *in;
    x.input_ids = pad_right(ctx, in->input_ids, B, T, Tp, c->pad_token_id, -1);
    x.attention_mask = pad_right(ctx, in->attention_mask, B, T, Tp, 0, 1);
    x.token_type_ids = pad_right(ctx, in->token_type_ids, B, T, Tp, 0, -1);
    x.position_ids = pad_right(ctx, in->position_ids, B, T, Tp, c->pad_token_id, -1);
    if (!x.input_ids || !x.attention_mask || (in->token_type_ids && !x.token_type_ids) ||
        (in->position_ids && !x.position_ids))
        return NULL;
    tf_attn_mask mask = {.key_padding_mask = tf_key_padding(ctx, x.attention_mask, B, Tp, "bigbird")};
    tf_tensor *h = mask.key_padding_mask ? tf_bert_embed_inputs(ctx, m, &x) : NULL;  // (B,Tp,C)
    tf_block_args args = {.self_mask = &mask};
    for (int l = 0; h && l < c->n_layer; l++) {
        tf_block layer = m->layer[l];  // this layer's random blocks in its pattern
        layer.self_attn.cfg.sparse = 1;
        layer.self_attn.cfg.pattern = (tf_sparse_pattern){
            .block = (int)b, .window = -1, .dilation = 1, .random = c->bigbird_random, .itc = 1,
            .itc_random = in->rand_attn ? tf_i32(in->rand_attn) + l * per_layer : NULL, .itc_heads = (int)H};
        h = tf_block_forward(ctx, &layer, &m->block, h, &args);
    }
    return h && Tp > T ? tf_narrow(ctx, h, 1, 0, T) : h;  // (B,T,C)
}
