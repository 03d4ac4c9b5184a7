/* The ViT captioner (encoder vit, decoder transformer; include/tformer/caption.h): the Transformer
 * captioner as transformers' VisionEncoderDecoderModel, so that its folder is one.
 *
 *   memory = ViT(x)       patches of patch_size, a class token, learned positions, n_layer pre-LN
 *                         blocks of width cnn_dim, a final LayerNorm (ViTModel)           (B,N+1,D)
 *            [enc_to_dec_proj when cnn_dim != hidden]                                      (B,N+1,H)
 *   logits = GPT-2(y, memory)   wte + wpe, n_layer blocks (self-attention, cross-attention,
 *                               MLP), ln_f, the head tied to wte                           (B,T,V)
 *
 * The settings are written as a VisionEncoderDecoderConfig (a ViTConfig and a GPT2Config with
 * add_cross_attention) and the model is built from that object by the code that reads such folders
 * (tf_caption_ved_new), so the folder says what the model computes; one forward (tf_caption_ved_run)
 * serves training, decoding and hf-run. The pixels in [0,1] are normalised as the folder's
 * preprocessor_config.json says: (x - 0.5) / 0.5. The grammar's words are the folder's tokenizer. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <string.h>

#include "../../nn/nn_internal.h"
#include "../../util/util.h"
#include "caption_internal.h"

/* ---------------------------------------------------------------- config.json */

static void add_num(cJSON *o, const char *key, double v) { cJSON_AddNumberToObject(o, key, v); }

/* ViTConfig: ViTModel of the captioner's encoder settings. */
static cJSON *vit_config(const tf_caption_config *c) {
    cJSON *e = cJSON_CreateObject();
    if (!e) return NULL;
    cJSON_AddStringToObject(e, "model_type", "vit");
    add_num(e, "image_size", c->image_size), add_num(e, "patch_size", c->patch_size);
    add_num(e, "num_channels", c->channels), add_num(e, "hidden_size", c->cnn_dim);
    add_num(e, "num_hidden_layers", c->n_layer), add_num(e, "num_attention_heads", c->n_head);
    add_num(e, "intermediate_size", c->d_ff);
    cJSON_AddStringToObject(e, "hidden_act", "gelu");
    add_num(e, "layer_norm_eps", 1e-12), add_num(e, "initializer_range", 0.02);
    add_num(e, "hidden_dropout_prob", 0), add_num(e, "attention_probs_dropout_prob", 0);
    cJSON_AddBoolToObject(e, "qkv_bias", 1);
    return e;
}

/* GPT2Config with cross-attention: GPT2LMHeadModel as a decoder, its head tied to wte. */
static cJSON *gpt2_config(const tf_caption_config *c) {
    int V = c->vocab;
    cJSON *d = cJSON_CreateObject();
    if (!d) return NULL;
    cJSON_AddStringToObject(d, "model_type", "gpt2");
    cJSON_AddItemToObject(d, "architectures", cJSON_CreateStringArray((const char *const[]){"GPT2LMHeadModel"}, 1));
    add_num(d, "vocab_size", V), add_num(d, "n_positions", c->context), add_num(d, "n_embd", c->hidden);
    add_num(d, "n_layer", c->n_layer), add_num(d, "n_head", c->n_head), add_num(d, "n_inner", c->d_ff);
    cJSON_AddStringToObject(d, "activation_function", "gelu_new");
    add_num(d, "layer_norm_epsilon", 1e-5), add_num(d, "initializer_range", 0.02);
    add_num(d, "resid_pdrop", 0), add_num(d, "embd_pdrop", 0), add_num(d, "attn_pdrop", 0);
    cJSON_AddBoolToObject(d, "scale_attn_weights", 1), cJSON_AddBoolToObject(d, "tie_word_embeddings", 1);
    cJSON_AddBoolToObject(d, "is_decoder", 1), cJSON_AddBoolToObject(d, "add_cross_attention", 1);
    add_num(d, "bos_token_id", V - 2), add_num(d, "eos_token_id", V - 1), add_num(d, "pad_token_id", V - 3);
    return d;
}

/* VisionEncoderDecoderConfig: the two, the start (BOS), end (EOS) and padding ids; tie_word_embeddings false
 * at the top as transformers writes it (the decoder ties its own head). */
static cJSON *ved_config(const tf_caption_config *c) {
    int V = c->vocab;
    cJSON *r = cJSON_CreateObject(), *e = vit_config(c), *d = gpt2_config(c);
    if (!r || !e || !d) return cJSON_Delete(r), cJSON_Delete(e), cJSON_Delete(d), NULL;
    cJSON_AddItemToObject(r, "architectures",
                          cJSON_CreateStringArray((const char *const[]){"VisionEncoderDecoderModel"}, 1));
    cJSON_AddStringToObject(r, "model_type", "vision-encoder-decoder");
    cJSON_AddBoolToObject(r, "is_encoder_decoder", 1), cJSON_AddBoolToObject(r, "tie_word_embeddings", 0);
    add_num(r, "decoder_start_token_id", V - 2), add_num(r, "eos_token_id", V - 1), add_num(r, "pad_token_id", V - 3);
    cJSON_AddItemToObject(r, "encoder", e), cJSON_AddItemToObject(r, "decoder", d);
    return r;
}

int tf_caption_vit_register(tf_caption *m) {
    cJSON *root = ved_config(&m->cfg);
    if (!root) return tf_set_error("caption: out of memory");
    m->ved = tf_caption_ved_new(root, "caption (encoder vit)");
    cJSON_Delete(root);
    return m->ved && !tf_params_add_view(m->params, "", m->ved->params) ? 0 : -1;
}

/* ---------------------------------------------------------------- the forward */

/* Pixels (B,C,S,S) in [0,1] as the image processor gives them: (x - mean) / std, as tf_caption_ved_pixels. */
static tf_tensor *normalised(tf_ctx *ctx, const tf_caption_ved *v, tf_tensor *x) {
    int64_t B = x->shape[0], C = x->shape[1], P = x->shape[2] * x->shape[3];
    tf_tensor *c = tf_contiguous(ctx, x), *y = c ? tf_tensor_new(ctx, TF_DTYPE_F32, 4, x->shape, 0) : NULL;
    for (int64_t b = 0; y && b < B; b++)
        for (int64_t ch = 0; ch < C; ch++)
            for (int64_t i = 0; i < P; i++) {
                int64_t k = (b * C + ch) * P + i;
                tf_f32(y)[k] = v->normalize ? (tf_f32(c)[k] - v->mean[ch]) / v->std[ch] : tf_f32(c)[k];
            }
    return y;
}

/* Each layer's cross-attention (B,heads,T,N+1) into (B,T,N): the mean over layers and heads on the
 * patches, the class token's share left out and each row renormalised (as tf_caption_ved_generate's). */
static tf_tensor *patch_maps(tf_ctx *ctx, tf_tensor *const *probs, int layers) {
    int64_t B = probs[0]->shape[0], H = probs[0]->shape[1], T = probs[0]->shape[2], N = probs[0]->shape[3] - 1;
    tf_tensor *a = tf_tensor_new(ctx, TF_DTYPE_F32, 3, (int64_t[]){B, T, N}, 0);
    if (!a) return NULL;
    memset(a->data, 0, (size_t)(B * T * N) * sizeof(float));
    for (int l = 0; l < layers; l++) {
        tf_tensor *p = tf_contiguous(ctx, probs[l]);
        if (!p) return NULL;
        for (int64_t b = 0; b < B; b++)
            for (int64_t t = 0; t < T; t++)
                for (int64_t h = 0; h < H; h++)
                    for (int64_t i = 0; i < N; i++)
                        tf_f32(a)[(b * T + t) * N + i] += tf_f32(p)[((b * H + h) * T + t) * (N + 1) + 1 + i];
    }
    for (int64_t r = 0; r < B * T; r++) {
        float *row = tf_f32(a) + r * N;
        double sum = 0;
        for (int64_t i = 0; i < N; i++) sum += row[i];
        for (int64_t i = 0; i < N; i++) row[i] = sum > 0 ? (float)(row[i] / sum) : 1.0f / (float)N;
    }
    return a;
}

int tf_caption_vit_run(tf_ctx *ctx, const tf_caption *m, const tf_caption_inputs *in, tf_caption_outputs *out) {
    const tf_caption_config *c = &m->cfg;
    tf_tensor *x = in->pixel_values;
    char s[64];
    if (x && (x->dtype != TF_DTYPE_F32 || x->ndim != 4 || x->shape[0] < 1 || x->shape[1] != c->channels ||
              x->shape[2] != c->image_size || x->shape[3] != c->image_size))
        return tf_set_error("caption: pixel_values %s must be F32 (B,%d,%d,%d)", tf_shape_str(x, s, sizeof s),
                            c->channels, c->image_size, c->image_size);
    if (!x && !in->annotations) return tf_set_error("caption: pixel_values missing (or annotations: the memory)");
    tf_caption_ved_inputs vi = {.pixel_values = x ? normalised(ctx, m->ved, x) : NULL,
                                .memory = x ? NULL : in->annotations, .decoder_input_ids = in->input_ids,
                                .labels = in->labels, .output_attentions = in->output_attentions && in->input_ids,
                                .cache = in->cache, .cross_cache = in->cross_cache};
    tf_caption_ved_outputs vo;
    if ((x && !vi.pixel_values) || tf_caption_ved_run(ctx, m->ved, &vi, &vo)) return -1;
    out->annotations = vo.memory, out->logits = vo.logits, out->loss = out->xent = vo.loss;
    if (vi.output_attentions && !(out->attentions = patch_maps(ctx, vo.cross_attentions, c->n_layer))) return -1;
    return 0;
}

/* ---------------------------------------------------------------- the folder */

/* The grammar's words as a WordPiece tokenizer.json (ids as the model's: the words, then <pad>, <s>,
 * </s>), which transformers' PreTrainedTokenizerFast and tformer both decode: words joined by spaces. */
static cJSON *tokenizer_json(const tf_caption_config *c) {
    cJSON *r = cJSON_CreateObject(), *added = cJSON_AddArrayToObject(r, "added_tokens"), *model = cJSON_CreateObject();
    cJSON *vocab = cJSON_AddObjectToObject(model, "vocab"), *pre = cJSON_AddObjectToObject(r, "pre_tokenizer");
    cJSON *dec = cJSON_AddObjectToObject(r, "decoder");
    if (!r || !added || !model || !vocab || !pre || !dec) return cJSON_Delete(r), cJSON_Delete(model), NULL;
    cJSON_AddStringToObject(r, "version", "1.0");
    cJSON_AddNullToObject(r, "truncation"), cJSON_AddNullToObject(r, "padding"), cJSON_AddNullToObject(r, "normalizer");
    cJSON_AddNullToObject(r, "post_processor");
    cJSON_AddStringToObject(pre, "type", "BertPreTokenizer");
    cJSON_AddStringToObject(dec, "type", "WordPiece"), cJSON_AddStringToObject(dec, "prefix", "##");
    cJSON_AddBoolToObject(dec, "cleanup", 0); /* " , " stays: the grammar's comma is a word */
    for (int id = 0; id < c->vocab; id++) {
        const char *w = tf_caption_grammar_word(c->grammar, id);
        cJSON_AddNumberToObject(vocab, w, id);
        if (id < c->vocab - 3) continue;
        cJSON *t = cJSON_CreateObject();
        cJSON_AddItemToArray(added, t);
        add_num(t, "id", id), cJSON_AddStringToObject(t, "content", w);
        cJSON_AddBoolToObject(t, "single_word", 0), cJSON_AddBoolToObject(t, "lstrip", 0);
        cJSON_AddBoolToObject(t, "rstrip", 0), cJSON_AddBoolToObject(t, "normalized", 0);
        cJSON_AddBoolToObject(t, "special", 1);
    }
    cJSON_AddStringToObject(model, "type", "WordPiece");
    cJSON_AddStringToObject(model, "unk_token", tf_caption_grammar_word(c->grammar, c->vocab - 3)); /* <pad> */
    cJSON_AddStringToObject(model, "continuing_subword_prefix", "##");
    add_num(model, "max_input_chars_per_word", 100);
    cJSON_AddItemToObject(r, "model", model);
    return r;
}

static cJSON *tokenizer_config(const tf_caption_config *c) {
    cJSON *r = cJSON_CreateObject();
    if (!r) return NULL;
    cJSON_AddStringToObject(r, "tokenizer_class", "PreTrainedTokenizerFast");
    cJSON_AddStringToObject(r, "bos_token", tf_caption_grammar_word(c->grammar, c->vocab - 2));
    cJSON_AddStringToObject(r, "eos_token", tf_caption_grammar_word(c->grammar, c->vocab - 1));
    cJSON_AddStringToObject(r, "pad_token", tf_caption_grammar_word(c->grammar, c->vocab - 3));
    cJSON_AddStringToObject(r, "unk_token", tf_caption_grammar_word(c->grammar, c->vocab - 3));
    cJSON_AddBoolToObject(r, "clean_up_tokenization_spaces", 0);
    add_num(r, "model_max_length", c->context);
    return r;
}

int tf_caption_vit_save(const tf_caption *m, const char *dir) {
    if (m->cfg.vocab != tf_caption_grammar_vocab(m->cfg.grammar))
        return tf_set_error("%s: a vocabulary of %d words: its grammar's is %d (the folder's tokenizer)", dir,
                            m->cfg.vocab, tf_caption_grammar_vocab(m->cfg.grammar));
    if (tf_caption_ved_save(m->ved, dir)) return -1;
    char path[4200];
    cJSON *tok = tokenizer_json(&m->cfg), *cfg = tokenizer_config(&m->cfg);
    int rc = !tok || !cfg ? tf_set_error("%s: out of memory", dir) : 0;
    rc = rc || tf_path_join(path, sizeof path, dir, "tokenizer.json") || tf_json_write(path, tok);
    rc = rc || tf_path_join(path, sizeof path, dir, "tokenizer_config.json") || tf_json_write(path, cfg);
    cJSON_Delete(tok), cJSON_Delete(cfg);
    return rc ? -1 : 0;
}
