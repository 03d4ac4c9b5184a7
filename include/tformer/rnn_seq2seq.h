/* The RNN translation baseline of the lecture decks: Bahdanau et al. (2015),
 * "Neural machine translation by jointly learning to align and translate"
 * (docs: ../shared/seeds/05-attention-lecture-dl1.txt lines 115-143,
 * 02-attention-and-transformers-vlm.txt lines 145-215).
 *
 *   h_j   = [->h_j; <-h_j]                        bidirectional GRU/LSTM over E_src[x]   (B,S,2H)
 *   s_0   = tanh(W_s <-h_1 + b_s)                  (the paper's appendix; LSTM: c_0 = 0)  (B,H)
 *   e_ij  = v_a^T tanh(W_a s_{i-1} + U_a h_j)      alpha_ij = softmax_j(e_ij)            (B,S)
 *   c_i   = sum_j alpha_ij h_j                                                          (B,2H)
 *   s_i   = f(s_{i-1}, [E_tgt y_{i-1}; c_i])       a GRU or LSTM cell                    (B,H)
 *   o_i   = [s_i; c_i; E_tgt y_{i-1}]                                                  (B,3H+E)
 *   logits_i = W_o o_i + b_o   (the deck's g(y_{i-1}, s_i, c_i); PyTorch practice)      (B,V)
 *     or, with maxout L (the paper's deep output):
 *   t_i   = max over pairs of (U_o o_i + b_u)   (2L -> L)   logits_i = W_o t_i + b_o   (B,V)
 *
 * The output layer runs once over all T positions (B,T,.) after the loop.
 * Vocabularies follow seq2seq.h: V tokens + 3 specials (pad V, BOS V+1,
 * EOS V+2; TF_SEQ2SEQ_SPECIALS, tf_seq2seq_*_id). */
#ifndef TFORMER_RNN_SEQ2SEQ_H
#define TFORMER_RNN_SEQ2SEQ_H

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
    int context;               /* the longest source or target sequence */
    int emb_dim;               /* E: word embedding width */
    int hidden;                /* H: each encoder direction's and the decoder's state */
    tf_rnn_kind cell;          /* gru (the paper) or lstm */
    int attn_size;             /* A: the alignment MLP's width */
    float dropout;             /* on the embeddings and the output layer's input */
    int share_embeddings;      /* one table for source and target */
    int maxout;                /* L > 0: the paper's deep output of L maxout units; 0: one linear layer */
} tf_rnn_seq2seq_config;

TF_API tf_rnn_seq2seq_config tf_rnn_seq2seq_config_default(int src_vocab, int tgt_vocab);
TF_API extern const tf_field_table tf_rnn_seq2seq_config_table;
TF_API int tf_rnn_seq2seq_config_check(const tf_rnn_seq2seq_config *c);

typedef struct {
    tf_rnn_seq2seq_config cfg;
    tf_params *params;
    tf_tensor *src_embed, *tgt_embed; /* (V,E); shared: src_embed only (tgt_embed NULL) */
    tf_birnn encoder;                 /* "encoder.rnn.*_l0", "*_l0_reverse" */
    tf_linear init;                   /* W_s (H,H): "decoder.init" */
    tf_additive_attn attn;            /* "decoder.attention.W_a" (A,H), "U_a" (A,2H), "v_a" (1,A) */
    tf_rnn cell;                      /* "decoder.cell.weight_ih" (G*H, E+2H), ... */
    tf_linear deep_out;               /* maxout: U_o (2L, H+2H+E): "decoder.deep_out" */
    tf_linear out;                    /* W_o (V, H+2H+E), maxout (V, L): "decoder.out" */
} tf_rnn_seq2seq;

TF_API tf_rnn_seq2seq *tf_rnn_seq2seq_new(const tf_rnn_seq2seq_config *cfg, uint64_t seed);
TF_API void tf_rnn_seq2seq_free(tf_rnn_seq2seq *m);

typedef struct {
    tf_tensor *input_ids;         /* (B,S) I32: the source */
    tf_tensor *attention_mask;    /* (B,S) I32 or U8, 1 = token, 0 = trailing padding; NULL: none */
    tf_tensor *decoder_input_ids; /* (B,T) I32: the target shifted right (BOS first); NULL: the encoder alone */
    tf_tensor *labels;            /* (B,T) I32 next target tokens, -100 = ignore: the loss */
    float label_smoothing;
    int output_attentions;        /* fill outputs.attentions */
    /* Decoding (all three from an earlier call's outputs, or NULL): */
    tf_tensor *encoder_output;    /* (B,S,2H) annotations h_j */
    tf_tensor *keys;              /* (B,S,A) U_a h_j */
    const tf_rnn_state *state;    /* s (and c) before these target tokens; NULL: s_0 from the encoder */
} tf_rnn_seq2seq_inputs;

typedef struct {
    tf_tensor *encoder_output; /* (B,S,2H) */
    tf_tensor *keys;           /* (B,S,A) */
    tf_tensor *logits;         /* (B,T,V) */
    tf_tensor *loss;           /* scalar, with labels */
    tf_tensor *attentions;     /* (B,T,S) alpha_ij, with output_attentions: rows sum to 1, 0 on padding */
    tf_rnn_state state;        /* the decoder's state after the last target token (s_0 without a target) */
} tf_rnn_seq2seq_outputs;

/* The one forward pass: training (teacher forcing over the whole target),
 * evaluation and each decoding step (the same per-step function). */
TF_API int tf_rnn_seq2seq_run(tf_ctx *ctx, const tf_rnn_seq2seq *m, const tf_rnn_seq2seq_inputs *in,
                              tf_rnn_seq2seq_outputs *out);

/* A folder: config.json (model_type "tformer-rnn-seq2seq") and model.safetensors. */
TF_API int tf_rnn_seq2seq_save(const tf_rnn_seq2seq *m, const char *dir);
TF_API tf_rnn_seq2seq *tf_rnn_seq2seq_load(const char *dir);

/* A decoder (generate.h) translating one source sentence: the source is
 * encoded once; each step runs tf_rnn_seq2seq_run on the new tokens from the
 * kept state s; fork copies the state. Feed BOS first. */
TF_API tf_decoder *tf_rnn_seq2seq_decoder_new(const tf_rnn_seq2seq *m, const int32_t *src, int n_src, int capacity);
/* The same over n sources at once (row i translates src[i], n_src[i] ids;
 * padded and masked): one encoder pass, every step one forward for all rows;
 * beam search selects rows (tf_generate_rows). */
TF_API tf_decoder *tf_rnn_seq2seq_decoder_new_batch(const tf_rnn_seq2seq *m, const int32_t *const *src,
                                                    const int *n_src, int n, int capacity);
/* The alignment of the last token fed to d (its first row; one of tf_rnn_seq2seq_decoder_new's
 * or their forks): alpha (n_src), or NULL before the first step. */
TF_API const float *tf_rnn_seq2seq_decoder_alpha(const tf_decoder *d);

/* ---------------------------------------------------------------- translation (docs/translation.md) */

/* The RNN baseline (rnn_seq2seq.h) on the same task: the same settings, data,
 * batches and folder (tf_seq2seq_task_val_batches serves its task too). */
typedef struct {
    tf_rnn_seq2seq_config model; /* src_vocab / tgt_vocab 0: the tokenizer's size + 3 (padding, BOS, EOS) */
    int batch_tokens, max_len;
    float label_smoothing;
    int val_bleu;
} tf_rnn_seq2seq_task_config;
TF_API tf_rnn_seq2seq_task_config tf_rnn_seq2seq_task_config_default(void);
TF_API extern const tf_field_table tf_rnn_seq2seq_task_config_table;
TF_API tf_task *tf_rnn_seq2seq_task_new(const tf_rnn_seq2seq_task_config *c, const char *src, const char *tgt,
                                        const char *valid_src, const char *valid_tgt, const char *tokenizer,
                                        const char *run_dir, int resume, int accum, uint64_t seed);
TF_API const tf_rnn_seq2seq *tf_rnn_seq2seq_task_model(const tf_task *t);

#ifdef __cplusplus
}
#endif
#endif /* TFORMER_RNN_SEQ2SEQ_H */
