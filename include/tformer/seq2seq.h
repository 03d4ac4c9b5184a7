/* The encoder-decoder Transformer of the lecture decks (Vaswani et al., 2017)
 * for translation: the encoder reads the source sentence; the decoder gets
 * the target shifted right, runs masked self-attention and, in every layer,
 * cross-attention to the encoder's output.
 *
 *   memory = Encoder(E_src[src] sqrt(d) + P)                 (B,S,C)
 *   h      = Decoder(E_tgt[tgt_in] sqrt(d) + P, memory)      (B,T,C)
 *   logits = h E_tgt^T  (tied)  or  h W_out^T                (B,T,V)
 *
 * Post-LN as in the paper or pre-LN (with a final LayerNorm on each stack);
 * sinusoidal (interleaved or in halves) or learned positions; source and
 * target embeddings shared (a joint vocabulary) or separate. Parameters
 * carry Hugging Face's BART / Marian names
 * ("model.encoder.layers.0.self_attn.q_proj.weight", ...), and
 * tf_seq2seq_load reads Hugging Face MarianMTModel folders too. */
#ifndef TFORMER_SEQ2SEQ_H
#define TFORMER_SEQ2SEQ_H

#include "config.h"
#include "generate.h"
#include "heads.h"
#include "nn.h"
#include "task.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    int src_vocab, tgt_vocab;  /* with share_embeddings both are the joint vocabulary's size */
    int context;               /* the longest source or target sequence (positions) */
    int n_encoder_layers, n_decoder_layers, n_head, d_model;
    int d_ff;                  /* 0: 4 * d_model */
    float dropout;             /* embeddings, residual branches */
    float attn_dropout;        /* attention weights; -1: dropout */
    float activation_dropout;  /* after the feed-forward activation; -1: dropout */
    tf_pos_kind pos;           /* sinusoidal (the paper) or learned */
    int norm_first;            /* 0: post-LN (the paper); 1: pre-LN, final LayerNorms */
    tf_activation activation;  /* relu (the paper) */
    int share_embeddings;      /* one table for source and target */
    int tied;                  /* output projection = target embedding */
    int scale_embedding;       /* embeddings times sqrt(d_model), as the paper */
    float norm_eps;
    int final_logits_bias;     /* a (1,tgt_vocab) bias on the logits (Hugging Face Marian's) */
    int pad_id, bos_id, eos_id; /* special ids (bos: the decoder's start); -1: tformer's V+k convention below */
} tf_seq2seq_config;

/* tformer's translation folders reserve three ids after each side's tokenizer
 * vocabulary of V tokens: V padding, V+1 start of the target (BOS), V+2 end
 * of a sentence (EOS); a side's model vocabulary is V + 3. */
#define TF_SEQ2SEQ_SPECIALS 3
static inline int32_t tf_seq2seq_pad_id(int vocab) { return vocab - 3; }
static inline int32_t tf_seq2seq_bos_id(int vocab) { return vocab - 2; }
static inline int32_t tf_seq2seq_eos_id(int vocab) { return vocab - 1; }

/* A model's special ids on one side (target 0: the source, src_vocab; 1: the
 * target, tgt_vocab): the config's pad_id, bos_id, eos_id where set (a
 * Marian folder: pad_token_id, decoder_start_token_id, eos_token_id, the
 * same ids on both sides), else tformer's V-3, V-2, V-1 of that side. */
typedef struct {
    int32_t pad, bos, eos;
} tf_seq2seq_special;
TF_API tf_seq2seq_special tf_seq2seq_special_ids(const tf_seq2seq_config *c, int target);

TF_API tf_seq2seq_config tf_seq2seq_config_default(int src_vocab, int tgt_vocab);
TF_API extern const tf_field_table tf_seq2seq_config_table;
TF_API int tf_seq2seq_config_check(const tf_seq2seq_config *c);

typedef struct {
    tf_seq2seq_config cfg;
    tf_block_config enc_block, dec_block; /* derived from cfg; dec_block has cross-attention */
    tf_params *params;
    tf_tensor *src_embed, *tgt_embed;     /* (V,C); shared: src_embed only (tgt_embed NULL) */
    tf_tensor *src_pos, *tgt_pos;         /* (context,C) learned tables, NULL with sinusoidal positions */
    tf_block *encoder, *decoder;          /* n_encoder_layers, n_decoder_layers blocks */
    tf_layer_norm enc_norm, dec_norm;     /* pre-LN only */
    tf_lm_head head;
    tf_tensor *logits_bias;               /* (1,V) "final_logits_bias", NULL unless cfg.final_logits_bias */
} tf_seq2seq;

TF_API tf_seq2seq *tf_seq2seq_new(const tf_seq2seq_config *cfg, uint64_t seed);
TF_API void tf_seq2seq_free(tf_seq2seq *m);

typedef struct {
    tf_tensor *input_ids;              /* (B,S) I32: the source */
    tf_tensor *attention_mask;         /* (B,S) I32 or U8, 1 = token, 0 = padding; NULL: none */
    tf_tensor *decoder_input_ids;      /* (B,T) I32: the target shifted right (BOS first); NULL: the encoder alone */
    tf_tensor *decoder_attention_mask; /* (B,T) 1 = token; NULL: none (the causal mask hides what follows anyway) */
    tf_tensor *encoder_output;         /* (B,S,C): the memory, when already computed (decoding) */
    tf_tensor *labels;                 /* (B,T) I32 next target tokens, -100 = ignore (Hugging Face's): the loss */
    float label_smoothing;             /* the paper: 0.1 */
    tf_kv_cache *cache;                /* the decoder's self-attention over the positions before these */
    tf_kv_cache *cross_cache;          /* the cross-attentions' keys and values of the memory: filled when
                                        * empty, read after (decoding); capacity S. Rows shared through a
                                        * row map (beams of one source) let the targets outnumber the sources */
    int output_attentions;             /* fill outputs.cross_attentions (costs the fused attention kernel) */
} tf_seq2seq_inputs;

typedef struct {
    tf_tensor *encoder_last_hidden_state; /* (B,S,C) */
    tf_tensor *last_hidden_state;         /* (B,T,C): the decoder's */
    tf_tensor *logits;                    /* (B,T,V) */
    tf_tensor *loss;                      /* scalar, with labels */
    tf_tensor **cross_attentions;         /* with output_attentions: n_decoder_layers tensors (B,H,T,S), each
                                           * head's cross-attention probabilities (Hugging Face's
                                           * cross_attentions): rows sum to 1, 0 on source padding */
} tf_seq2seq_outputs;

/* The one forward pass: training, evaluation and each decoding step. */
TF_API int tf_seq2seq_run(tf_ctx *ctx, const tf_seq2seq *m, const tf_seq2seq_inputs *in, tf_seq2seq_outputs *out);

/* A folder: config.json (model_type "tformer-seq2seq", the table's keys) and
 * model.safetensors; load refuses missing, misshapen or unknown tensors by name.
 * load also reads a Hugging Face Marian folder (config.json with model_type
 * "marian" and model.safetensors; docs/translation.md, "Marian"): its
 * settings map onto the config (Marian's sinusoidal halves, SiLU, final
 * logits bias, special ids inside the vocabulary), and those tformer does
 * not compute are refused by name. */
TF_API int tf_seq2seq_save(const tf_seq2seq *m, const char *dir);
TF_API tf_seq2seq *tf_seq2seq_load(const char *dir);

/* The decoding settings a Hugging Face Marian folder gives transformers'
 * generate() (4.x): generation_config.json when the folder has one, else
 * config.json with MarianConfig's defaults for what it leaves out (and
 * GenerationConfig's for the rest). A setting that changes generate()'s
 * ids and that tformer does not apply (no_repeat_ngram_size, min_length,
 * repetition_penalty, do_sample, ...: docs/translation.md) is an error
 * naming the file and the key, not left out silently. */
#define TF_MARIAN_MAX_BAD 64
typedef struct {
    int32_t forced_eos_id;               /* forced_eos_token_id (MarianConfig's default 0; -1: null) */
    int32_t bad_ids[TF_MARIAN_MAX_BAD];  /* bad_words_ids, each of one token (Helsinki-NLP's: [[pad]]) */
    int n_bad_ids;
    int num_beams;                       /* 1 when not given */
    int max_new_tokens;                  /* target ids after the start token: max_new_tokens when given, else
                                          * max_length - 1 (GenerationConfig's max_length 20; Helsinki-NLP's 512) */
    float length_penalty;                /* 1 when not given */
    tf_beam_stop beam_stop;              /* early_stopping: false (default) TF_BEAM_HF_HEURISTIC, true
                                          * TF_BEAM_HF_EARLY, "never" TF_BEAM_HF_NEVER */
    int renormalize_logits;              /* renormalize_logits true: beam scores log-softmaxed again after the
                                          * processors (tf_generate_opts.renormalize) */
} tf_marian_generation;
TF_API int tf_seq2seq_marian_generation(const char *dir, tf_marian_generation *g);

/* A decoder (generate.h) translating one source sentence: the source is
 * encoded once; each step feeds target tokens through the self-attention
 * KV cache. Feed the start token (BOS) first. */
TF_API tf_decoder *tf_seq2seq_decoder_new(const tf_seq2seq *m, const int32_t *src, int n_src, int capacity);
/* The same over n sources at once (row i translates src[i], n_src[i] ids):
 * one encoder pass over the padded batch, every step one forward for all
 * rows; beam search selects rows (tf_generate_rows). */
TF_API tf_decoder *tf_seq2seq_decoder_new_batch(const tf_seq2seq *m, const int32_t *const *src, const int *n_src, int n,
                                                int capacity);

/* ---------------------------------------------------------------- translation (docs/translation.md) */

/* The encoder-decoder on line-aligned source and target files. */
typedef struct {
    tf_seq2seq_config model;   /* src_vocab / tgt_vocab 0: the tokenizer's size + 3 (padding, BOS, EOS) */
    int batch_tokens;          /* a batch's padded tokens at most (rows x longest row): batches by token count */
    int max_len;               /* ids per sentence at most (tokens + EOS); longer ones are an error */
    float label_smoothing;     /* the paper: 0.1 */
    int val_bleu;              /* validation lines translated (greedy) for BLEU at each evaluation; 0: none.
                                * With BLEU, run_dir/best/ is the model of highest validation BLEU */
} tf_seq2seq_task_config;
TF_API tf_seq2seq_task_config tf_seq2seq_task_config_default(void);
TF_API extern const tf_field_table tf_seq2seq_task_config_table;
/* The task: tokenizer (a folder, or "char": the training files' characters) copied
 * into run_dir unless resuming, used for both languages (a joint vocabulary);
 * batches from tf_parallel_loader_new (key: the trainer's step * 1024 + micro, read
 * with the accumulation count accum: the micro-batches of a step over every
 * process, processes x the trainer's accum). Validation loss: the mean over the validation
 * batches the trainer asks for (tf_seq2seq_task_val_batches: one pass). */
TF_API tf_task *tf_seq2seq_task_new(const tf_seq2seq_task_config *c, const char *src, const char *tgt,
                                    const char *valid_src, const char *valid_tgt, const char *tokenizer,
                                    const char *run_dir, int resume, int accum, uint64_t seed);
TF_API int64_t tf_seq2seq_task_val_batches(const tf_task *t);
TF_API const tf_seq2seq *tf_seq2seq_task_model(const tf_task *t);

#ifdef __cplusplus
}
#endif
#endif /* TFORMER_SEQ2SEQ_H */
