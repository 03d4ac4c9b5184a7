/* Private to the library: the helpers a model family's task needs besides the
 * task interface (include/tformer/task.h): its tokenizer in the run folder and the
 * checkpoint, an image task's validation split, the translation task shared by the
 * encoder-decoder families, classification hits. The task layer, below the families,
 * so that a family's task beside its model may include it; implemented today in
 * src/task/task_util.c and src/models/seq2seq/seq2seq_task.c. */
#ifndef TF_TASK_INTERNAL_H
#define TF_TASK_INTERNAL_H

#include <stddef.h>

#include "../util/util.h"
#include "tformer/generate.h"
#include "tformer/images.h"
#include "tformer/task.h"

/* Copy a tokenizer folder (or a WordPiece vocab.txt) into dir in a layout
 * tf_tokenizer_load reads, or learn the data's characters ("char"). */
int tf_task_tokenizer_install(const char *spec, const char *const *data, int n_data, const char *dir);
/* A run's start: install as above; with resume, check there is a checkpoint to resume instead. */
int tf_task_tokenizer_prepare(const char *spec, const char *const *data, int n_data, const char *dir, int resume);
/* dir's tokenizer files into the checkpoint's metadata (a checkpoint is complete by itself). */
int tf_task_tokenizer_save(const char *dir, tf_st_writer *w);
/* On resume dir's tokenizer must be the one the checkpoint (path ck) was trained with. */
int tf_task_tokenizer_check(const char *dir, const tf_st_file *f, const char *ck);

/* ---------------------------------------------------------------- what every task does (task_util.c) */

/* The run folder made (one that exists is fine). */
int tf_task_make_dir(const char *run_dir);
/* A model configuration's signature: a task's signature call. */
int tf_task_signature_of(const tf_field_table *t, const void *cfg, char *out, size_t n);
/* The index of the largest of x[0..n), the first of equals. */
int64_t tf_task_argmax(const float *x, int64_t n);
/* One validation metric, "accuracy", of which the highest selects best/. */
void tf_task_use_accuracy(tf_task *t);

/* ---------------------------------------------------------------- tasks on text (task_util.c) */

/* What a task on the run folder's tokenizer holds besides its model and settings: its first
 * member, so that the calls below fill its table (batch, save_meta, check_meta). */
typedef struct {
    tf_task base;
    tf_tokenizer *tok;
    tf_loader *loader;
    char *dir;          /* the run folder, holding the tokenizer the checkpoint carries */
    tf_params *params;  /* the model's, set once it is made */
    tf_fields model;    /* the model's configuration: the checkpoint's signature */
    int64_t context;    /* tokens a row */
} tf_text_task;
int tf_text_task_batch(tf_task *t, tf_ctx *ctx, tf_subset subset, uint64_t key, int rows, tf_batch *b);
int tf_text_task_save_meta(tf_task *t, tf_st_writer *w);
int tf_text_task_check_meta(tf_task *t, const tf_st_file *f, const char *ck);
tf_params *tf_text_task_params(tf_task *t);
int tf_text_task_signature(tf_task *t, char *out, size_t n);
int64_t tf_text_task_tokens(tf_task *t, int rows);
/* A text task's struct freed with its tokenizer, loader and folder's name (its model freed first by
 * the task's own free). */
void tf_text_task_free(tf_task *t);
/* A task struct of size bytes whose first member is a tf_text_task, zeroed, with its table vt: there is
 * data to train on (n_data), the run folder is made and named in dir. NULL with the error. */
void *tf_text_task_alloc(size_t size, const tf_task_vt *vt, int n_data, const char *run_dir);
/* The run folder's tokenizer into t->tok: spec installed there, or on resume the one there
 * (tf_task_tokenizer_prepare); its size into *vocab_size, which when set must equal it. */
int tf_text_task_tokenizer(tf_text_task *t, const char *spec, const char *const *data, int n_data, int resume,
                           int *vocab_size);
/* With its model made: the model's parameters, its configuration (table t, cfg) and tokens a row. */
void tf_text_task_set_model(tf_text_task *t, tf_params *ps, const tf_field_table *table, void *cfg, int64_t context);
/* The table of a task whose calls are the text task's but for its loss, save and free. */
#define TF_TEXT_TASK_VT(loss_fn, save_fn, free_fn)                                                                \
    {.batch = tf_text_task_batch, .loss = (loss_fn), .params = tf_text_task_params,                               \
     .signature = tf_text_task_signature, .save = (save_fn), .save_meta = tf_text_task_save_meta,                 \
     .check_meta = tf_text_task_check_meta, .tokens = tf_text_task_tokens, .free = (free_fn)}

/* An image task's validation set: *valid when it holds images, else the
 * last val_fraction of *train moved into it (train keeps the rest). */
int tf_task_images_split(tf_images *train, tf_images *valid, float val_fraction);
/* What an image task holds besides its model and settings: its first member, so that the calls
 * below serve it. */
typedef struct {
    tf_task base;
    tf_images train, valid;
    tf_loader *loader;
    tf_params *params; /* the model's, set once it is made (tf_image_task_set_model) */
    tf_fields model;   /* the model's configuration: the checkpoint's signature */
} tf_image_task;
/* A task struct of size bytes whose first member is a tf_image_task, zeroed, with its table vt and
 * the sets moved into it (valid may be NULL); the caller's are emptied either way. NULL with the error. */
void *tf_image_task_alloc(size_t size, const tf_task_vt *vt, tf_images *train, tf_images *valid);
int tf_image_task_batch(tf_task *t, tf_ctx *ctx, tf_subset subset, uint64_t key, int rows, tf_batch *b);
/* Images in a subset: the validation set's, else the training set's. */
int64_t tf_image_task_images(const tf_task *t, tf_subset subset);
/* An image task's struct freed with its loader and both sets (its model freed first by the task's own free). */
void tf_image_task_free(tf_task *t);
/* With its model made: the model's parameters and its configuration (table, cfg). */
void tf_image_task_set_model(tf_image_task *t, tf_params *ps, const tf_field_table *table, void *cfg);
tf_params *tf_image_task_params(tf_task *t);
int tf_image_task_signature(tf_task *t, char *out, size_t n);
/* The calls of an image task's table (tf_task_vt's initialisers) that are the image task's, with its loss,
 * save, tokens and free. */
#define TF_IMAGE_TASK_CALLS(loss_fn, save_fn, tokens_fn, free_fn)                                                  \
    .batch = tf_image_task_batch, .loss = (loss_fn), .params = tf_image_task_params,                               \
    .signature = tf_image_task_signature, .save = (save_fn), .tokens = (tokens_fn), .free = (free_fn)

/* ---------------------------------------------------------------- translation families */

/* A translation task's settings shared by every family (seq2seq_task.c):
 * the rows of a task struct T with members batch_tokens, max_len,
 * label_smoothing, val_bleu, and model (the family's configuration, whose table is mt). */
#define TF_TRANSLATION_ROWS(T, mt)                                                                                  \
    TF_FIELD_ROW(T, batch_tokens, TF_FIELD_INT, "batch_tokens", "4096", "[2,inf)", NULL,                             \
                 "a batch's padded tokens at most (rows x longest row): batches by token count (fairseq's "       \
                 "--max-tokens; max_tokens in older run folders' JSON)",                                            \
                 TF_FIELD_RENAMED, "max_tokens"),                                                                  \
    TF_FIELD_ROW(T, max_len, TF_FIELD_INT, "max_len", "128", "[2,inf)", NULL,                                        \
                 "ids per sentence at most (tokens + EOS); longer is an error", 0, NULL),                          \
    TF_FIELD_ROW(T, label_smoothing, TF_FIELD_FLOAT, "label_smoothing", "0.1", "[0,1)", NULL,                       \
                 "label smoothing of the target (the paper: 0.1)", 0, NULL),                                        \
    TF_FIELD_ROW(T, val_bleu, TF_FIELD_INT, "val_bleu", "1000", "[0,inf)", NULL,                                    \
                 "validation lines translated (greedy) for BLEU at each evaluation; 0: none. With BLEU the "       \
                 "best model (best/) is the one of highest BLEU", TF_FIELD_RESUMABLE, NULL),                                         \
    TF_FIELD_SUB(T, model, mt)

/* A model family under the translation task: where its task struct T keeps
 * the shared settings and its model struct M the vocabularies and context
 * (TF_TRANSLATION_LAYOUT(T, M) fills the first nine members), and the model's calls. */
typedef struct {
    const tf_field_table *task_table, *model_table;
    size_t cfg_size, model_off, batch_tokens_off, max_len_off, smoothing_off, val_bleu_off;
    size_t src_vocab_off, tgt_vocab_off, context_off;   /* inside the model's struct */
    void *(*model_new)(const void *model_cfg, uint64_t seed);
    void (*model_free)(void *m);
    tf_params *(*params)(const void *m);
    /* batch "src_ids", "src_mask", "tgt_in", "tgt_out" -> the scalar loss */
    tf_tensor *(*loss)(tf_ctx *ctx, const void *m, const tf_batch *b, float label_smoothing);
    int (*save)(const void *m, const char *dir);
    /* A decoder over one source sentence (tf_translator's) */
    tf_decoder *(*decoder_new)(const void *m, const int32_t *src, int n_src, int capacity);
    /* ... and over a batch of sources (NULL: none) */
    tf_decoder *(*decoder_new_batch)(const void *m, const int32_t *const *src, const int *n_src, int n, int capacity);
} tf_translation_family;
#define TF_TRANSLATION_LAYOUT(T, M)                                                                                 \
    sizeof(T), offsetof(T, model), offsetof(T, batch_tokens), offsetof(T, max_len), offsetof(T, label_smoothing),    \
        offsetof(T, val_bleu), offsetof(M, src_vocab), offsetof(M, tgt_vocab), offsetof(M, context)

/* A translation family's table NAME and its calls (prefix_new, ...) for a model type T with T_new,
 * T_free, T_save, T_decoder_new(_batch), T_run on T_inputs (input_ids, attention_mask,
 * decoder_input_ids, labels, label_smoothing) giving T_outputs' loss, and its params; its task's
 * settings T_task_config (table T_task_config_table) and configuration T_config (T_config_table). */
#define TF_TRANSLATION_FAMILY(NAME, prefix, T)                                                                      \
    static void *prefix##_new(const void *cfg, uint64_t seed) { return T##_new(cfg, seed); }                        \
    static void prefix##_free(void *m) { T##_free(m); }                                                             \
    static tf_params *prefix##_params(const void *m) { return ((const T *)m)->params; }                             \
    static int prefix##_save(const void *m, const char *dir) { return T##_save(m, dir); }                           \
    static tf_decoder *prefix##_decoder(const void *m, const int32_t *src, int n, int cap) {                        \
        return T##_decoder_new(m, src, n, cap);                                                                     \
    }                                                                                                               \
    static tf_decoder *prefix##_decoder_batch(const void *m, const int32_t *const *src, const int *n_src, int n,    \
                                              int cap) {                                                            \
        return T##_decoder_new_batch(m, src, n_src, n, cap);                                                        \
    }                                                                                                               \
    static tf_tensor *prefix##_loss(tf_ctx *ctx, const void *m, const tf_batch *b, float label_smoothing) {         \
        T##_inputs in = {.input_ids = tf_batch_get(b, "src_ids"), .attention_mask = tf_batch_get(b, "src_mask"),    \
                         .decoder_input_ids = tf_batch_get(b, "tgt_in"), .labels = tf_batch_get(b, "tgt_out"),      \
                         .label_smoothing = label_smoothing};                                                       \
        T##_outputs out;                                                                                            \
        return T##_run(ctx, m, &in, &out) ? NULL : out.loss;                                                        \
    }                                                                                                               \
    static const tf_translation_family NAME = {                                                                     \
        &T##_task_config_table, &T##_config_table, TF_TRANSLATION_LAYOUT(T##_task_config, T##_config),              \
        prefix##_new, prefix##_free, prefix##_params, prefix##_loss, prefix##_save, prefix##_decoder,               \
        prefix##_decoder_batch}

/* The task of tf_seq2seq_task_new for any family; cfg a family's task struct. */
tf_task *tf_translation_task_new(const tf_translation_family *fam, const void *cfg, const char *src, const char *tgt,
                                 const char *valid_src, const char *valid_tgt, const char *tokenizer,
                                 const char *run_dir, int resume, int accum, uint64_t seed);
/* The task's model when it is of family fam, else NULL. */
const void *tf_translation_task_model(const tf_task *t, const tf_translation_family *fam);

/* ---------------------------------------------------------------- classification tasks (src/task/task_util.c) */

/* Hits of the argmax of logits (B,L) against labels (B) into metric 0 of m. */
void tf_task_count_hits(const tf_tensor *logits, const tf_tensor *labels, tf_metrics *m);

#endif
