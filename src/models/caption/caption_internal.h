/* Private to src/models/caption: the Transformer decoder's pieces (caption_transformer.c). */
#ifndef TF_CAPTION_INTERNAL_H
#define TF_CAPTION_INTERNAL_H

#include <cjson/cJSON.h>

#include "tformer/bert.h"
#include "tformer/caption.h"

/* Its parameters: the grid's projection and positions, the words' positions, the blocks, the norm. */
int tf_caption_transformer_register(tf_caption *m);
/* The memory W_p a + P_grid (B,N,H) from the annotations a (B,N,D). */
tf_tensor *tf_caption_memory(tf_ctx *ctx, const tf_caption *m, tf_tensor *a);
/* The words ids (B,T) after the cache's over out->annotations (the memory): logits (B,T,V) and,
 * with want_alpha, the cross-attention averaged over layers and heads (B,T,N); caches advanced. */
int tf_caption_transformer_decode(tf_ctx *ctx, const tf_caption *m, tf_tensor *ids, tf_kv_cache *cache,
                                  tf_kv_cache *cross_cache, int want_alpha, tf_caption_outputs *out);

/* ---------------------------------------------------------------- the ViT captioner (caption_vit.c) */

/* encoder vit: m->ved built from the settings (a VisionEncoderDecoderModel's config.json object) and its
 * tensors registered in m->params under Hugging Face's names (the same slots: tf_params_add_view). */
int tf_caption_vit_register(tf_caption *m);
/* tf_caption_run for encoder vit: pixels in [0,1] normalised, then VisionEncoderDecoderModel's forward;
 * annotations are its memory (B,N+1,H) (the class token first); attentions (B,T,N) the cross-attention's
 * mean over layers and heads on the patches (the class token's share left out, each row renormalised). */
int tf_caption_vit_run(tf_ctx *ctx, const tf_caption *m, const tf_caption_inputs *in, tf_caption_outputs *out);
/* Its folder: transformers' VisionEncoderDecoderModel (config.json, model.safetensors,
 * preprocessor_config.json) and the grammar's words as a tokenizer (tokenizer.json, tokenizer_config.json). */
int tf_caption_vit_save(const tf_caption *m, const char *dir);
/* A VisionEncoderDecoderModel (ViT + GPT-2) from its config.json object (root, named path in errors):
 * its tensors registered, not allocated (params a view of the parts' registries); the image
 * processor's defaults (0.5, 0.5); no tokenizer. */
tf_caption_ved *tf_caption_ved_new(const cJSON *root, const char *path);

/* One image (C,S,S) in [0,1] as a VisionEncoderDecoderModel reads it (1,C,S,S): normalised as its
 * image processor says. */
tf_tensor *tf_caption_ved_pixels(tf_ctx *ctx, const tf_caption_ved *m, const float *pixels);

/* A decoder's block arguments (caption_ved_run.c): the padding mask over the cache and the new ids, both
 * caches, and room for each layer's cross-attention when asked. 0, or -1 with the error set. */
int tf_caption_ved_block_args(tf_ctx *ctx, const tf_caption_ved_inputs *in, tf_tensor *memory, int n_layer,
                              tf_attn_mask *pad, tf_block_args *args, tf_caption_ved_outputs *out);

/* ---------------------------------------------------------------- BERT decoders (caption_ved_bert.c) */

/* A BertLMHeadModel decoder's cross-attention of one layer, under BERT's names
 * ("crossattention.self.query", ".key", ".value", "crossattention.output.dense", ".LayerNorm"). */
typedef struct {
    tf_linear q, k, v, proj; /* nn.Linear (out,in) */
    tf_layer_norm norm;      /* post-LN: LN(x + cross(x)) */
} tf_caption_bert_xattn;

struct tf_caption_bert_decoder {
    tf_bert *bert;             /* the body and the MLM head (cls.predictions), BERT's family's */
    tf_caption_bert_xattn *x;  /* n_layer */
};

/* What the search and the checks need of either decoder. */
typedef struct {
    int vocab, context, n_layer, n_head, d_model;
} tf_caption_ved_dims;
tf_caption_ved_dims tf_caption_ved_decoder_dims(const tf_caption_ved *m);
/* The decoder's tensors (GPT-2's or BERT's, cross-attention included), under names without "decoder.". */
tf_params *tf_caption_ved_decoder_params(const tf_caption_ved *m);

/* A "bert" decoder config (BertLMHeadModel with is_decoder and add_cross_attention) as tformer's BERT
 * reads it, with the MLM head; what differs from BERT's arithmetic is refused naming path. */
int tf_caption_ved_bert_config(const cJSON *dec, const char *path, tf_bert_config *c);
/* The BERT decoder with its cross-attention registered (weights not read). */
int tf_caption_ved_bert_new(tf_caption_ved *m, const tf_bert_config *c);
/* A tensor of the file's decoder part that BERT leaves out: the tied head's copies, the buffers. */
int tf_caption_ved_bert_extra(const char *name);
/* The decoder's logits (B,T,V) over memory (caption_ved_run.c's decode for GPT-2). */
tf_tensor *tf_caption_ved_bert_decode(tf_ctx *ctx, const tf_caption_ved *m, const tf_caption_ved_inputs *in,
                                      tf_tensor *memory, tf_caption_ved_outputs *out);
void tf_caption_ved_bert_free(struct tf_caption_bert_decoder *d);

#endif
