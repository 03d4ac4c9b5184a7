/* tformer: data — a batch is a set of named tensors; loaders behind one
 * interface fill them, deterministic under a seed. */
#ifndef TFORMER_DATA_H
#define TFORMER_DATA_H

#include "core.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------- batches */

#define TF_BATCH_MAX 12

/* Tensors by name, as a model's forward() takes them ("input_ids",
 * "attention_mask", "targets", "pixel_values", ...). Names are borrowed
 * (string constants); tensors live in the context the loader filled. */
typedef struct {
    int n;
    const char *names[TF_BATCH_MAX];
    tf_tensor *t[TF_BATCH_MAX];
} tf_batch;

/* Add (or replace) a tensor; -1 when full. */
TF_API int tf_batch_set(tf_batch *b, const char *name, tf_tensor *t);
/* The tensor of that name, or NULL. */
TF_API tf_tensor *tf_batch_get(const tf_batch *b, const char *name);

/* ---------------------------------------------------------------- loaders */

typedef enum { TF_SUBSET_TRAIN, TF_SUBSET_VAL } tf_subset;

typedef struct tf_loader tf_loader;

typedef struct {
    /* The batch of `rows` examples for draw `key` of a subset, in ctx. The
     * same (split, key) gives the same batch: draws are counter-based, so a
     * resumed run continues exactly and thread counts do not matter. */
    int (*next)(tf_loader *l, tf_ctx *ctx, tf_subset split, uint64_t key, int rows, tf_batch *out);
    void (*free)(tf_loader *l);
} tf_loader_vt;

struct tf_loader {
    const tf_loader_vt *vt;
};

TF_API int tf_loader_next(tf_loader *l, tf_ctx *ctx, tf_subset split, uint64_t key, int rows, tf_batch *out);
TF_API void tf_loader_free(tf_loader *l);

/* Language-model windows over a token stream: "input_ids" (rows, context)
 * and "targets" (the next tokens), each row a window at a position hashed
 * from (seed, key, row, split). The last val_fraction of the stream is held
 * out for validation; both parts need more than context + 1 tokens (the
 * error says how many). The ids are copied. */
TF_API tf_loader *tf_lm_loader_new(const int32_t *ids, int64_t n, float val_fraction, int context, uint64_t seed);
/* The same on a malloc'ed ids array it takes (freed with the loader, or at once on failure): a large token
 * stream is not held twice. */
TF_API tf_loader *tf_lm_loader_take(int32_t *ids, int64_t n, float val_fraction, int context, uint64_t seed);
/* The same windows over a labelled stream: "input_ids" (rows, context) and
 * "labels" (rows, context), each token's class (labels[i] for ids[i]). */
TF_API tf_loader *tf_stream_loader_new(const int32_t *ids, const int32_t *labels, int64_t n, float val_fraction,
                                       int context, uint64_t seed);

/* BERT pre-training pairs (masked LM + next-sentence prediction) from text
 * files: documents separated by blank lines, one sentence per line. A batch
 * holds "input_ids", "token_type_ids", "attention_mask" (rows,T), T the
 * longest example's length (at most context), "labels" (rows,T: the
 * original ids of the masked positions, -100 elsewhere) and
 * "next_sentence_label" (rows: 0 = B follows A, 1 = B is random). Examples
 * are drawn from (seed, split, key, row); documents are held out whole. */
typedef struct {
    int context;              /* [CLS] A [SEP] B [SEP] fits in it */
    float mask_prob;          /* tokens chosen for the MLM: 0.15 */
    float val_fraction;       /* documents held out */
    int32_t cls, sep, mask, pad, vocab_size;
} tf_nsp_opts;
struct tf_tokenizer;
TF_API tf_loader *tf_nsp_loader_new(struct tf_tokenizer *tok, const char *const *files, int n_files,
                                    const tf_nsp_opts *o, uint64_t seed);


/* ---------------------------------------------------------------- fine-tuning data (docs/bert.md) */

/* The fine-tuning tasks and their file formats (one example a line, fields
 * separated by tabs; the label column is absent in prediction inputs):
 *   classify  label<TAB>text
 *   pairs     label<TAB>text_a<TAB>text_b
 *   tag       token<TAB>tag lines, a blank line between sentences (CoNLL);
 *             prediction inputs: one sentence a line, words separated by spaces
 *   span      JSON lines {"context", "question", "answer_start", "answer"};
 *             answer_start counts characters (code points) into context */
typedef enum { TF_FINETUNE_CLASSIFY, TF_FINETUNE_PAIRS, TF_FINETUNE_TAG, TF_FINETUNE_SPAN } tf_finetune_kind;
/* "classify", "pairs", "tag", "span" and back (-1 when unknown). */
TF_API const char *tf_finetune_kind_name(tf_finetune_kind k);
TF_API int tf_finetune_kind_from_name(const char *name);

/* One example as read. */
typedef struct {
    char *a, *b;            /* classify: a; pairs: a, b; span: a the question, b the context */
    char *label;            /* classify, pairs; NULL without labels */
    char **words, **tags;   /* tag: n_words words and (with labels) their tags */
    int n_words;
    size_t answer_off, answer_len; /* span with labels: the answer's bytes in the context */
    int line;               /* the 1-based line it starts at */
} tf_finetune_example;

typedef struct {
    tf_finetune_kind kind;
    int labelled;
    tf_finetune_example *ex;
    int n;
} tf_finetune_set;

/* Parse text in a task's format (name: the file's name in messages, which
 * give name:line): lines without a tab, a wrong column count, an empty label
 * or tag, bad JSON, an answer not at answer_start are errors. labelled 0:
 * prediction inputs (no label column). */
TF_API int tf_finetune_parse(tf_finetune_kind kind, const char *text, size_t len, const char *name, int labelled,
                             tf_finetune_set *out);
/* The same from a file (gzip'ed or plain), read a line at a time, never whole (a line above 64 MiB is an error
 * naming file and line). */
TF_API int tf_finetune_read(tf_finetune_kind kind, const char *path, int labelled, tf_finetune_set *out);
TF_API void tf_finetune_set_free(tf_finetune_set *s);
/* The sorted distinct labels (classify, pairs) or tags (tag) of a set, malloc'ed. */
TF_API int tf_finetune_labels(const tf_finetune_set *s, char ***names, int *n);
/* Every label of s must be among names: else an error naming the label and its file:line. */
TF_API int tf_finetune_check_labels(const tf_finetune_set *s, const char *name, char *const *names, int n);
TF_API void tf_finetune_labels_free(char **names, int n);

/* One example encoded as BERT inputs. classify/pairs: [CLS] a [SEP] (b
 * [SEP]) by tf_tokenizer_encode_pair; tag: [CLS] pieces of each word [SEP],
 * the word's tag on its first piece and -100 elsewhere; span: [CLS]
 * question [SEP] context [SEP], the context cut first (Hugging Face's
 * only_second), the answer's first / last piece as start / end (0, [CLS],
 * when cut away). */
typedef struct {
    int32_t *ids, *types, *tok_labels; /* (len) each; tok_labels: tag only */
    int32_t *word;      /* (len): tag: the word of a first piece, else -1; span: the context word of a
                         * piece, else -1; classify, pairs: NULL */
    int len;
    int32_t label;      /* classify, pairs: the label's index (-1 without labels) */
    int32_t start, end; /* span: the answer's pieces (with labels) */
    size_t *word_off, *word_end; /* span: (n_words) each: the context words' bytes [off, end) */
    int n_words;        /* tag: the sentence's words; span: the context's */
    int truncated;      /* cut to max_len */
} tf_finetune_encoded;

typedef struct {
    tf_finetune_kind kind;
    int labelled;
    tf_finetune_encoded *ex;
    int n;
    int n_truncated;      /* examples cut to max_len */
    int n_answers_lost;   /* span: answers cut away (start = end = 0) */
    int n_words_lost;     /* tag: words cut away */
    int32_t pad;
} tf_finetune_data;

/* Encode a set with a WordPiece tokenizer; labels (sorted names, n_labels)
 * give the indices (NULL for an unlabelled set). max_len >= 8. */
struct tf_tokenizer;
TF_API int tf_finetune_encode(struct tf_tokenizer *tok, const tf_finetune_set *s, char *const *labels, int n_labels,
                              int max_len, tf_finetune_data *out);
TF_API void tf_finetune_data_free(tf_finetune_data *d);

/* The batch of examples first .. first+rows-1 (wrapping around d's end),
 * padded to the longest: "input_ids", "attention_mask", "token_type_ids"
 * (rows,T) and "labels" (rows) / (rows,T) or "start_positions",
 * "end_positions" (rows) when labelled. */
TF_API int tf_finetune_batch(const tf_finetune_data *d, tf_ctx *ctx, int64_t first, int rows, tf_batch *out);
/* Training batches of rows drawn from (seed, key, row); validation batch
 * `key` is examples key*rows .. in order (wrapping). The data are borrowed. */
TF_API tf_loader *tf_finetune_loader_new(const tf_finetune_data *train, const tf_finetune_data *valid, uint64_t seed);

/* ---------------------------------------------------------------- parallel text (translation) */

/* Line-aligned source and target files, one sentence a line ("\n" ends a
 * line, a trailing "\r" is stripped). Each side is tokenized with its
 * tokenizer (the same pointer for a joint vocabulary) and stored without
 * specials; a batch adds them:
 *   source ids  = tokens + EOS          ("src_ids")
 *   target in   = BOS + tokens          ("tgt_in", the decoder's input)
 *   target out  = tokens + EOS          ("tgt_out", what position t predicts)
 * so every row is tokens + 1 ids long and tgt_out[t] = tgt_in[t + 1]. */
typedef struct {
    int max_len;      /* ids per row (tokens + 1); 0: no limit */
    int truncate;     /* 0: a longer sentence is an error naming file, line and length; 1: cut to max_len */
    int skip_empty;   /* 0: a line without tokens is an error naming file and line; 1: that pair is skipped */
    /* Special ids; -1: the tokenizer's tf_tokenizer_special_id ("eos", "pad" of the source
     * tokenizer, "bos", "eos", "pad" of the target's). Give them for tokenizers without
     * specials (a character tokenizer); an id may lie beyond the tokenizer's vocabulary
     * (the model's vocab_size must then exceed the set's max_id). */
    int32_t src_eos, src_pad, tgt_bos, tgt_eos, tgt_pad;
} tf_parallel_opts;
/* max_len 256, errors on long and empty sentences, every special from the tokenizers. */
TF_API tf_parallel_opts tf_parallel_opts_default(void);

typedef struct {
    int64_t src, tgt;         /* where its source / target tokens start in ids */
    int32_t src_len, tgt_len; /* tokens, specials excluded (>= 1) */
    int32_t line;             /* 1-based line in both files */
} tf_parallel_pair;

typedef struct {
    int32_t *ids;             /* every sentence's tokens, back to back */
    tf_parallel_pair *pairs;  /* (n), in file order */
    int n;
    int n_skipped;            /* pairs with an empty side (skip_empty) */
    int n_truncated;          /* sentences cut to max_len (truncate) */
    int32_t src_eos, src_pad, tgt_bos, tgt_eos, tgt_pad; /* the ids in use */
    int32_t max_id;           /* the largest id a batch can hold, specials included */
} tf_parallel_set;

/* Two line-aligned files (gzip'ed or plain), each read a line at a time, never whole (their lines counted first,
 * then each pair encoded as read; a line above 64 MiB is an error naming file and line). */
TF_API int tf_parallel_read(struct tf_tokenizer *src_tok, struct tf_tokenizer *tgt_tok, const char *src_path,
                            const char *tgt_path, const tf_parallel_opts *o, tf_parallel_set *out);
TF_API void tf_parallel_set_free(tf_parallel_set *s);

/* The pairs idx[0..rows) as a batch, S / T the longest source / target row:
 *   "src_ids"              (rows,S) I32, padded with src_pad
 *   "src_mask"             (rows,S) U8, 1 = a real token (attention_mask's sense)
 *   "src_key_padding_mask" (rows,S) U8, 1 = padding: tf_attn_mask.key_padding_mask's
 *                          (PyTorch's) sense, for the encoder and the cross-attention
 *   "tgt_in"               (rows,T) I32, padded with tgt_pad
 *   "tgt_out"              (rows,T) I32, padded with -100 (tf_cross_entropy's ignore index)
 *   "tgt_key_padding_mask" (rows,T) U8, 1 = padding (the causal mask already hides it
 *                          from real positions)
 *   "n_tgt_tokens"         () I32, the target tokens that count in the loss */
TF_API int tf_parallel_batch(const tf_parallel_set *s, tf_ctx *ctx, const int *idx, int rows, tf_batch *out);

/* Batches by token count: a batch's padded size, rows * max(S, T), is at
 * most batch_tokens, and it holds at most max_rows pairs (0: no limit).
 * Training: pairs sorted by length (ties in an order drawn per epoch) and
 * packed in that order, so a batch holds pairs of similar length; each epoch
 * visits every batch once in an order drawn from (seed, epoch). Validation:
 * pairs packed in file order, the same every time. The `rows` argument of
 * tf_loader_next is ignored (a batch's rows follow from batch_tokens) and
 * `key` counts batches: training batch `key` is batch key % n of epoch
 * key / n (n = tf_parallel_loader_batches), so the caller passes a running
 * counter (step * accum + micro), not the trainer's step * 1024 + micro;
 * validation batch `key` is batch key % n. The sets are borrowed; valid may
 * be NULL (no validation). The loader caches the current epoch's order:
 * calls on one loader must not overlap. */
TF_API tf_loader *tf_parallel_loader_new(const tf_parallel_set *train, const tf_parallel_set *valid, int batch_tokens,
                                         int max_rows, uint64_t seed);
/* Batches per epoch of a subset; -1 when l is not a parallel loader. */
TF_API int64_t tf_parallel_loader_batches(const tf_loader *l, tf_subset split);
/* The set's pair indices of batch `key` (what tf_loader_next fills):
 * *idx points into the loader, valid until its next call. */
TF_API int tf_parallel_loader_pairs(tf_loader *l, tf_subset split, uint64_t key, const int **idx, int *rows);

/* ---------------------------------------------------------------- ListOps */

/* ListOps (Nangia & Bowman 2018) as the Long Range Arena generates it:
 * nested [MIN / [MAX / [MED / [SM (sum mod 10) over digits 0-9, each operator
 * closed by "]"; the answer (a digit) is the class. A node at depth d <
 * max_depth (the root at depth 1) is an operator with probability 0.25 (else a
 * digit), with 2..max_args arguments; an expression is kept when min_len <
 * its tokens < max_len. Example i of a subset comes from a hash of (seed,
 * subset, i): the same on every run, computed when asked (no set stored). */
typedef struct {
    int min_len, max_len;  /* LRA: 500, 2000 (tokens: digits, operators and "]") */
    int max_depth, max_args; /* LRA: 10, 10 */
    uint64_t seed;
    int sep;               /* 0 (LRA), or 1: batches end each expression with [SEP] (BERT's [CLS] x [SEP]) */
    int drop_end;          /* 0: each operator closed by "]" (the text); 1: the "]" left out, as LRA's released
                            * input pipeline does (its tokenizer keeps alphanumeric tokens only); the lengths
                            * min_len and max_len still count them, so the expressions are the same */
} tf_listops_opts;

/* Token ids: padding, a [CLS] the classifier reads, the digits, the operators, "]". */
enum { TF_LISTOPS_PAD, TF_LISTOPS_CLS, TF_LISTOPS_DIGIT0, TF_LISTOPS_MIN = TF_LISTOPS_DIGIT0 + 10, TF_LISTOPS_MAX,
       TF_LISTOPS_MED, TF_LISTOPS_SM, TF_LISTOPS_END, TF_LISTOPS_VOCAB };
/* [MASK]: only in the vocabulary of self-pretraining (masked LM) and of the
 * classifiers it starts, which have TF_LISTOPS_VOCAB + 1 tokens. */
#define TF_LISTOPS_MASK TF_LISTOPS_VOCAB
/* [SEP] after the expression (tf_listops_opts.sep): models that use it have
 * TF_LISTOPS_SEP + 1 tokens, [MASK] among them. */
#define TF_LISTOPS_SEP (TF_LISTOPS_MASK + 1)

/* 0, or -1 with a message naming the setting that cannot work. */
TF_API int tf_listops_check(const tf_listops_opts *o);
/* Example `index` of subset (0 train, 1 validation, 2 test): its tokens
 * (cap >= max_len ids, no [CLS]; no "]" with drop_end) in ids, their count in
 * *len, the answer in *label; 0 or -1. */
TF_API int tf_listops_example(const tf_listops_opts *o, int subset, int64_t index, int32_t *ids, int cap, int *len,
                              int *label);
/* A token's text ("[MAX", "7", "]", ...). */
TF_API const char *tf_listops_token(int32_t id);
/* Batches: "input_ids" (rows, T) = [CLS] + the expression (+ [SEP] with
 * o->sep), padded with TF_LISTOPS_PAD; "attention_mask" (rows, T); "labels"
 * (rows). Training batch `key` draws its rows among examples 0..n_train-1
 * from (seed, key, row); validation batch `key` is validation examples
 * key*rows .. (mod n_valid). T >= max_len + sep (max_len - 1 tokens, [CLS] and [SEP]).
 * bucket > 0: length bucketing. Each batch is as long as its longest row
 * rounded up to a multiple of bucket (at most T), and a training batch is a
 * random window of `rows` examples in order of length (the examples are
 * generated once to sort them), so that rows of a batch are about as long. */
TF_API tf_loader *tf_listops_loader_new(const tf_listops_opts *o, int64_t n_train, int64_t n_valid, int T,
                                        int bucket);

#ifdef __cplusplus
}
#endif
#endif /* TFORMER_DATA_H */
