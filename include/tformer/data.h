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

#ifdef __cplusplus
}
#endif
#endif /* TFORMER_DATA_H */
