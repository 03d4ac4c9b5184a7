/* tformer: image captioning — the deck's captioner (Show, Attend and Tell; Xu et al. 2015):
 * a small CNN turns the image into a G x G grid of feature vectors, and a GRU or LSTM
 * decoder attends over the grid at each word (docs/caption.md).
 *
 *   a       = CNN(x)                    n_conv 3x3 stride-2 convolutions + ReLU    (B,N,D), N = G*G
 *   abar    = mean_i a_i                                                             (B,D)
 *   h_0     = tanh(W_h abar)            (LSTM: c_0 = tanh(W_c abar))                 (B,H)
 *   e_ti    = v^T tanh(W_a h_{t-1} + U_a a_i)     alpha_t = softmax_i(e_t)           (B,N)
 *   z_t     = sum_i alpha_ti a_i                                                     (B,D)
 *   h_t     = f(h_{t-1}, [E y_{t-1}; z_t])        a GRU or LSTM cell                 (B,H)
 *   logits  = W_o [h_t; z_t; E y_{t-1}] + b_o                                        (B,V)
 *   loss    = cross-entropy + alpha_c sum_i (1 - sum_t alpha_ti)^2   (the doubly-stochastic
 *             regulariser, averaged over the batch; t over each caption's words)
 *
 * The Transformer captioner (decoder transformer): memory = W_p a + P_grid (B,N,H); the words
 * E y + P_t through n_layer pre-LN decoder blocks (causal self-attention, cross-attention over
 * the memory, ReLU feed-forward), a final LayerNorm, logits = W_o h. Its attention maps are the
 * cross-attention averaged over layers and heads; alpha_c does not apply.
 *
 * With encoder vit, the Transformer captioner is a VisionEncoderDecoderModel (below): a ViT
 * (patches of patch_size, a class token, learned positions, pre-LN blocks, a final LayerNorm;
 * width cnn_dim) and a GPT-2 decoder with cross-attention and the tied head (width hidden), the
 * pixels normalised as (x - 0.5) / 0.5 (ViTImageProcessor's); tf_caption_save writes its folder.
 *
 * The baseline without attention (attention false): nothing is attended, the pooled
 * vector abar starts the RNN alone: h_t = f(h_{t-1}, E y_{t-1}), logits = W_o [h_t; E y_{t-1}].
 *
 * The words are a grammar's (config grammar: the shapes' tf_caption_word, or the Fashion-MNIST
 * scenes'; tf_caption_grammar_word): a fixed vocabulary, then padding, BOS and EOS. */
#ifndef TFORMER_CAPTION_H
#define TFORMER_CAPTION_H

#include "config.h"
#include "generate.h"
#include "heads.h"
#include "images.h"
#include "nn.h"
#include "task.h"
#include "tokenizer.h"
#include "gpt.h"
#include "vit.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------- the scene grammar */

/* Synthetic scenes with known truth: 1 to max_items shapes (square, frame, cross, bar, column,
 * diagonal) in distinct cells of a 3 x 3 grid of 8 x 8 cells (24 x 24 grey pixels), placed with
 * up to 1 pixel of jitter; the caption names them in reading order ("a cross top left and a
 * square centre"). */
enum { TF_CAPTION_WORDS = 13, TF_CAPTION_SHAPES = 6, TF_CAPTION_CELLS = 9, TF_CAPTION_SCENE_SIZE = 24 };
#define TF_CAPTION_PAD TF_CAPTION_WORDS
#define TF_CAPTION_BOS (TF_CAPTION_WORDS + 1)
#define TF_CAPTION_EOS (TF_CAPTION_WORDS + 2)
#define TF_CAPTION_VOCAB (TF_CAPTION_WORDS + 3)

/* Word id's text ("<pad>", "<s>", "</s>" for the specials), or NULL out of range. */
TF_API const char *tf_caption_word(int id);

typedef struct {
    int n;                        /* items */
    int shape[TF_CAPTION_CELLS];  /* in reading order of their cells */
    int cell[TF_CAPTION_CELLS];   /* 0..8, row by row */
} tf_caption_scene;

/* Scene `index` of a seeded stream: pixels (24*24) in [0,1], its items, and its caption's ids
 * (at most cap; EOS not included) with their count in *n_ids. */
TF_API int tf_caption_scene_make(uint64_t seed, uint64_t index, int max_items, float *pixels, tf_caption_scene *s,
                                 int32_t *ids, int cap, int *n_ids);

/* The grammars a captioner speaks (its config's grammar): the shapes above, or Fashion-MNIST
 * scenes (below). Each vocabulary ends with padding, BOS and EOS: vocab - 3, - 2, - 1. */
typedef enum { TF_CAPTION_GRAMMAR_SHAPES, TF_CAPTION_GRAMMAR_FASHION } tf_caption_grammar;
/* The grammar's vocabulary size (words + 3). */
TF_API int tf_caption_grammar_vocab(tf_caption_grammar g);
/* Word id's text in grammar g, or NULL out of range. */
TF_API const char *tf_caption_grammar_word(tf_caption_grammar g, int id);

/* Fashion-MNIST scenes (caption_fashion.c): 1 to max_items Fashion-MNIST items (28 x 28) in
 * distinct cells of a 3 x 3 grid of 32 x 32 cells (96 x 96 grey pixels), each moved by up to 4
 * pixels; training scenes take train-split items only, held-out scenes t10k items only. With
 * brightness, each item is "dark" (its pixels times 0.4) or "light" and the captions say so.
 * Five reference captions a scene (as COCO's), differing in order and phrasing:
 *   0  reading order:                    "a sneaker at the top left and a bag in the centre"
 *   1  reverse order, commas:            "a bag in the centre , a sneaker at the top left"
 *   2  reading order with relations:     "a sneaker above a bag at the bottom"   (adjacent cells)
 *   3  a seeded order, commas
 *   4  reverse order with relations:     "a bag below a sneaker at the top"
 * A relation names the neighbouring cell ("above" / "below": the same column, one row apart;
 * "to the left of" / "to the right of": the same row, one column apart), so every caption
 * determines each item's cell. */
enum { TF_FASHION_CLASSES = 10, TF_FASHION_SIZE = 96, TF_FASHION_REFS = 5, TF_FASHION_ITEM0 = 18 };

typedef struct {
    tf_images train, test; /* the two splits' items (labels 0..9) */
} tf_fashion;

typedef struct {
    tf_caption_scene s;      /* items (class 0..9 in s.shape) and cells, in reading order */
    int dark[TF_CAPTION_CELLS];
} tf_fashion_scene;

/* The splits from dir ("train-images-idx3-ubyte.gz", ... as dataset-fashion-mnist installs them). */
TF_API int tf_fashion_load(const char *dir, tf_fashion *out);
TF_API void tf_fashion_free(tf_fashion *f);
/* Scene `index` of a seeded stream over a split (0: train, 1: t10k): pixels (96*96) in [0,1]. */
TF_API int tf_fashion_scene_make(const tf_fashion *f, int split, uint64_t seed, uint64_t index, int max_items,
                                 int brightness, float *pixels, tf_fashion_scene *s);
/* Reference caption ref (0..4) of a scene: its ids (at most cap) and their count; seed (the
 * scene's own) sets reference 3's order. */
TF_API int tf_fashion_caption(const tf_fashion_scene *s, int ref, int brightness, uint64_t seed, int32_t *ids,
                              int cap, int *n);

/* A caption read back into the items it names: mention k is item[k] (a class, or a shape for the
 * shapes grammar) at cell[k] (0..8), named by the word at word[k]. A caption that stops
 * following the grammar keeps the mentions resolved before; mentions never placed are dropped. */
typedef struct {
    int n;
    int item[32], cell[32], word[32];
} tf_caption_mentions;

TF_API int tf_caption_parse(tf_caption_grammar g, const int32_t *ids, int n, tf_caption_mentions *out);
/* Object F1's counts of one caption against its scene: *tp mentions matching a scene item (each
 * matched once, by item and cell), *pred mentions, *truth items. */
TF_API void tf_caption_object_counts(const tf_caption_mentions *m, const tf_caption_scene *s, int *tp, int *pred,
                                     int *truth);
/* Attention precision against the truth: for each mention whose item is in the scene, the share of
 * its word's attention (att: rows of g*g, g a multiple of 3) on the cell where that item is (the
 * mentioned cell when an item of that class is there, else the first item of the class); with
 * shuffle (a permutation of the 9 cells, or NULL) the share on shuffle[that cell] instead, the
 * control. Adds to *sum and *count. */
TF_API void tf_caption_attention_truth(const tf_caption_mentions *m, const tf_caption_scene *s, const float *att,
                                       int g, const int *shuffle, double *sum, double *count);

/* ---------------------------------------------------------------- the model */

/* The decoder: the deck's RNN, or a Transformer decoder (pre-LN blocks with causal self-attention
 * and cross-attention over the grid, PyTorch's nn.TransformerDecoderLayer). */
typedef enum { TF_CAPTION_RNN, TF_CAPTION_TRANSFORMER } tf_caption_decoder_kind;
/* The encoder: the CNN's grid, or a ViT (with the Transformer decoder only: transformers' ViTModel and
 * a GPT-2 decoder with cross-attention, a VisionEncoderDecoderModel, saved as its folder). */
typedef enum { TF_CAPTION_CNN, TF_CAPTION_VIT } tf_caption_encoder_kind;

typedef struct {
    int image_size;   /* the images' side (square) */
    int channels;     /* 1 (grey) or 3 (RGB) */
    int n_conv;       /* 3x3 stride-2 convolutions: G = image_size / 2^n_conv */
    int cnn_dim;      /* D: each convolution's channels, the grid's feature width */
    int vocab;        /* V: words + 3 specials (TF_CAPTION_VOCAB) */
    int context;      /* the longest caption (BOS or EOS included) */
    int emb_dim;      /* E */
    int hidden;       /* H */
    tf_rnn_kind cell; /* gru or lstm */
    int attn_size;    /* A: the attention MLP's width */
    int attention;    /* 1: attend over the grid at each word; 0: the baseline (pooled vector only) */
    float alpha_c;    /* the doubly-stochastic regulariser's weight (0: none) */
    float dropout;    /* on the output layer's input */
    tf_caption_decoder_kind decoder;
    int n_layer, n_head, d_ff; /* the Transformer decoder's (d_model = hidden) */
    tf_caption_grammar grammar; /* the words it speaks */
    tf_caption_encoder_kind encoder; /* vit: cnn_dim is the ViT's width, n_layer / n_head / d_ff its blocks too */
    int patch_size;             /* vit: the patches' side; G = image_size / patch_size */
} tf_caption_config;

TF_API extern const tf_field_table tf_caption_config_table;
TF_API tf_caption_config tf_caption_config_default(void);
TF_API int tf_caption_config_check(const tf_caption_config *c);
/* G: the grid's side. */
TF_API int tf_caption_grid(const tf_caption_config *c);

typedef struct {
    tf_caption_config cfg;
    tf_params *params;
    tf_tensor *conv_w[8], *conv_b[8]; /* "encoder.conv.<i>.weight" (D,C|D,3,3), ".bias" (D) */
    tf_linear init_h, init_c;         /* "decoder.init_h" (H,D); LSTM: "decoder.init_c" */
    tf_tensor *embed;                 /* "decoder.embed.weight" (V,E) */
    tf_additive_attn attn;            /* "decoder.attention.W_a" (A,H), "U_a" (A,D), "v_a" (1,A) */
    tf_rnn rnn;                       /* "decoder.cell.weight_ih" (G*H, E[+D]), ... */
    tf_linear out;                    /* "decoder.out" (V, H[+D]+E); Transformer: (V,H) */
    /* The Transformer decoder (embed is then (V,H)): */
    tf_linear proj;                   /* "encoder.proj" (H,D): the grid into the decoder's width */
    tf_tensor *grid_pos, *tok_pos;    /* "encoder.pos" (N,H), "decoder.pos" (context,H) */
    tf_block layers[8];               /* "decoder.layers.<i>." (PyTorch's TransformerDecoderLayer names) */
    tf_block_config block;
    tf_layer_norm norm;               /* "decoder.norm" */
    /* encoder vit: the whole model is a VisionEncoderDecoderModel (ViT + GPT-2), params its tensors
     * under Hugging Face's names; the fields above are unused. */
    struct tf_caption_ved *ved;
} tf_caption;

TF_API tf_caption *tf_caption_new(const tf_caption_config *cfg, uint64_t seed);
TF_API void tf_caption_free(tf_caption *m);

typedef struct {
    tf_tensor *pixel_values; /* (B,C,S,S) F32; NULL when annotations are given */
    tf_tensor *input_ids;    /* (B,T) I32: BOS then the caption; NULL: the encoder alone */
    tf_tensor *labels;       /* (B,T) I32: the caption then EOS, -100 = padding: the loss */
    int output_attentions;   /* fill outputs.attentions */
    /* Decoding (from an earlier call's outputs): */
    tf_tensor *annotations;  /* (B,N,D) (Transformer: the memory (B,N,H)) */
    tf_tensor *keys;         /* (B,N,A) U_a a_i, or NULL */
    const tf_rnn_state *state; /* h (and c) before these words; NULL: h_0 from the image */
    tf_kv_cache *cache, *cross_cache; /* Transformer: the words so far, the memory's keys and values */
} tf_caption_inputs;

typedef struct {
    tf_tensor *annotations; /* (B,N,D); Transformer: the memory (B,N,H), projected with positions */
    tf_tensor *keys;        /* (B,N,A); NULL for the baseline */
    tf_rnn_state state;     /* after the last word (before any: h_0, c_0) */
    tf_tensor *logits;      /* (B,T,V) */
    tf_tensor *attentions;  /* (B,T,N) with output_attentions (and for the loss); NULL for the baseline */
    tf_tensor *loss;        /* cross-entropy + the regulariser, with labels */
    tf_tensor *xent;        /* the cross-entropy alone */
} tf_caption_outputs;

TF_API int tf_caption_run(tf_ctx *ctx, const tf_caption *m, const tf_caption_inputs *in, tf_caption_outputs *out);

/* Folders: config.json (model_type "tformer-caption", the table's keys) and model.safetensors. */
TF_API tf_caption *tf_caption_load(const char *dir);
TF_API int tf_caption_save(const tf_caption *m, const char *dir);

/* A decoder over one image (C,S,S) for the shared searches (generate.h); BOS is fed first. */
TF_API tf_decoder *tf_caption_decoder_new(const tf_caption *m, const float *pixels);

/* One image's caption: o's search (beam or greedy; eos and max_tokens set here when -1 / 0),
 * the ids (EOS not included) into ids (room for cap), and, when attention is not NULL and
 * the model attends, each word's attention (n, G, G) (the EOS step's after them: room for
 * (cap + 1) G*G). */
TF_API int tf_caption_generate(const tf_caption *m, const float *pixels, const tf_generate_opts *o, int32_t *ids,
                               int cap, int *n, float *attention);

/* ---------------------------------------------------------------- Hugging Face's captioners */

/* A VisionEncoderDecoderModel folder (transformers' vit-gpt2 layout): a ViT encoder (ViTModel;
 * its pooler is read and ignored, as the decoder reads the last hidden state), optionally
 * enc_to_dec_proj (a Linear from the encoder's width to the decoder's when they differ), and a
 * GPT-2 decoder with cross-attention (GPT2LMHeadModel with add_cross_attention). Each decoder
 * block is GPT-2's, composed from the shared block's sub-layers in GPT-2's order:
 *   x = x + attn(ln_1(x))                              causal self-attention (c_attn: q, k, v)
 *   x = x + crossattention(ln_cross_attn(x), memory)   q = q_attn(x), [k v] = c_attn(memory) (fused)
 *   x = x + mlp(ln_2(x))
 * or a BERT decoder (BertLMHeadModel with is_decoder and add_cross_attention), post-LN:
 *   x = LN(x + attention(x))                    causal self-attention
 *   x = LN(x + crossattention(x, memory))       query, key, value, output.dense, output.LayerNorm
 *   x = LN(x + output(intermediate(x)))         then the MLM head cls.predictions
 * Parameters under Hugging Face's names ("encoder.", "decoder.", "enc_to_dec_proj."). */
typedef struct {
    tf_linear q, kv, proj; /* q_attn (E,E), c_attn (E,2E): k then v, c_proj (E,E); Conv1D's (in,out) */
    tf_layer_norm norm;    /* ln_cross_attn */
} tf_caption_xattn;

typedef struct tf_caption_ved {
    tf_vit *encoder;
    tf_gpt *decoder;            /* a GPT-2 decoder; NULL with a BERT one */
    tf_caption_xattn *xattn;    /* decoder->cfg.n_layer */
    struct tf_caption_bert_decoder *bert; /* a BERT decoder (BertLMHeadModel with cross-attention), or NULL */
    tf_linear enc_to_dec;       /* weight NULL when the widths agree */
    tf_params *proj_params;     /* enc_to_dec_proj's */
    tf_params *params;          /* every tensor above by its folder name (the same tensors) */
    tf_tensor **alias;          /* params' slots */
    int start_id, eos_id, pad_id; /* decoder_start_token_id, eos_token_id (-1: none), pad_token_id */
    int normalize;              /* the image processor's: pixels (x - mean) / std */
    float mean[3], std[3];
    tf_tokenizer *tok;          /* the folder's, or NULL: words are "<id>" */
    char *config, *preprocessor; /* config.json's and preprocessor_config.json's text (or NULL), saved back */
} tf_caption_ved;

/* VisionEncoderDecoderModel.forward()'s arguments. */
typedef struct {
    tf_tensor *pixel_values;           /* (B,C,S,S) F32, normalised; NULL when memory is given */
    tf_tensor *memory;                 /* (B,N+1,E) the decoder's view of the encoder (an earlier call's) */
    tf_tensor *decoder_input_ids;      /* (B,T) I32, or NULL: the encoder alone */
    tf_tensor *decoder_attention_mask; /* (B,T) (or (B,past+T) with a cache): 1 = attend, or NULL */
    tf_tensor *labels;                 /* (B,T) I32, -100 ignored: the mean cross-entropy (no shift) */
    int output_attentions;             /* fill cross_attentions */
    tf_kv_cache *cache, *cross_cache;  /* decoding: the words so far, the memory's keys and values */
} tf_caption_ved_inputs;

typedef struct {
    tf_tensor *encoder_last_hidden_state; /* (B,N+1,D) */
    tf_tensor *memory;                    /* (B,N+1,E): through enc_to_dec_proj when there is one */
    tf_tensor *logits;                    /* (B,T,V) */
    tf_tensor *loss;
    tf_tensor **cross_attentions;         /* n_layer of (B,H,T,N+1) */
} tf_caption_ved_outputs;

TF_API tf_caption_ved *tf_caption_ved_load(const char *dir);
TF_API void tf_caption_ved_free(tf_caption_ved *m);
/* A VisionEncoderDecoderModel folder transformers reads: config.json, model.safetensors and
 * preprocessor_config.json. */
TF_API int tf_caption_ved_save(const tf_caption_ved *m, const char *dir);
TF_API int tf_caption_ved_run(tf_ctx *ctx, const tf_caption_ved *m, const tf_caption_ved_inputs *in,
                              tf_caption_ved_outputs *out);
/* A decoder over one image (C,S,S) in [0,1] (normalised here) for the shared searches; the start
 * token is fed first. */
TF_API tf_decoder *tf_caption_ved_decoder_new(const tf_caption_ved *m, const float *pixels);
/* One image's caption (as tf_caption_generate): ids into ids (room for cap), and with attention
 * (room for (cap + 1) g*g floats, g patches a side) each word's cross-attention over the patches,
 * averaged over the layers and heads (the class token's share left out, the rest renormalised). */
TF_API int tf_caption_ved_generate(const tf_caption_ved *m, const float *pixels, const tf_generate_opts *o,
                                   int32_t *ids, int cap, int *n, float *attention);

/* ---------------------------------------------------------------- caption metrics */

/* CIDEr-D of n images' hypotheses against their references (image i: n_refs[i] >= 1 of refs[i]),
 * on pre-tokenised text (words split at ASCII whitespace, as Python's str.split() on ASCII), as
 * pycocoevalcap's Cider computes it (caption_metrics.c has the formula): each image's score into
 * scores (may be NULL), their mean into *mean. */
TF_API int tf_caption_cider_d(const char *const *hyps, const char *const *const *refs, const int *n_refs, int n,
                              double *scores, double *mean);
/* Corpus BLEU-4 (0..1) with several references: the tformer bleu code without tokenisation or
 * smoothing (clipped counts against the references' most, the closest reference length, the
 * shorter on a tie): pycocoevalcap's Bleu(4) "closest" but for its 1e-9 and 1e-15 guards. */
TF_API int tf_caption_bleu4(const char *const *hyps, const char *const *const *refs, const int *n_refs, int n,
                            double *bleu);

/* ---------------------------------------------------------------- training */

typedef struct {
    int max_items;      /* items a scene, 1 to this */
    int n_train;        /* training scenes (a fixed set, drawn with replacement) */
    int n_valid;        /* validation scenes */
    uint64_t scene_seed;
    int brightness;      /* Fashion-MNIST scenes: "dark" and "light" items */
    int train_refs;      /* Fashion-MNIST scenes: a training row's caption is one of the first this many references */
    int n_export;        /* held-out scenes written to run_dir/scenes/ */
    char fashion_dir[1024]; /* Fashion-MNIST's idx files */
    tf_caption_config model;
} tf_caption_task_config;

TF_API extern const tf_field_table tf_caption_task_config_table;
TF_API tf_caption_task_config tf_caption_task_config_default(void);
/* The task; run_dir/scenes/ gets n_export held-out scenes as PNGs and their references
 * (captions.tsv, and captions.json in COCO's captions layout). */
TF_API tf_task *tf_caption_task_new(const tf_caption_task_config *c, const char *run_dir, uint64_t seed);
TF_API const tf_caption *tf_caption_task_model(const tf_task *t);

#ifdef __cplusplus
}
#endif
#endif /* TFORMER_CAPTION_H */
