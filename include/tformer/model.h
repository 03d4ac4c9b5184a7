/* tformer: one door to every model — the family registry and the model handle.
 *
 * A family is a folder (src/models/<family>/) and one row of the registry
 * (src/models/registry.c): its name, the model types of its folders, how it
 * trains (the task's field table, defaults, constructor and checks) and what
 * a loaded model of it can do (its capabilities). `tformer train --arch`,
 * the verbs and the folder dispatch read the rows; nothing outside
 * src/models/ compares a family's name.
 *
 * Thread-safety: a loaded tf_model is read-only. Every capability call makes
 * its own context, so any number of threads may call one model at once; the
 * results equal serial calls (tested: model_handle_threads_match_serial). */
#ifndef TFORMER_MODEL_H
#define TFORMER_MODEL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "core.h"
#include "config.h"
#include "images.h"
#include "safetensors.h"
#include "bert.h"
#include "generate.h"
#include "seq2seq.h"
#include "tokenizer.h"
#include "task.h"
#include "train_config.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------- capabilities */

typedef enum {
    TF_CAP_RUN = 1u << 0,            /* named tensors in and out, as hf-run */
    TF_CAP_GENERATE = 1u << 1,       /* text from a prompt */
    TF_CAP_TRANSLATE = 1u << 2,      /* a sentence into another language */
    TF_CAP_EMBED = 1u << 3,          /* a vector per text */
    TF_CAP_CLASSIFY_TEXT = 1u << 4,  /* a label per text (or pair) */
    TF_CAP_CLASSIFY_IMAGE = 1u << 5, /* a label per image */
    TF_CAP_CLASSIFY_CLIP = 1u << 6,  /* a label per clip of frames */
    TF_CAP_FILL_MASK = 1u << 7,      /* the likeliest tokens at [MASK] */
    TF_CAP_STREAM = 1u << 8,         /* a label per token of a stream (continual inference) */
    TF_CAP_CAPTION = 1u << 9,        /* a sentence per image */
    TF_CAP_COMPLETE_IMAGE = 1u << 10, /* the rest of an image from its top rows */
    TF_CAP_TAG = 1u << 11,            /* a label per word (token classification) */
    TF_CAP_ANSWER = 1u << 12          /* the span of a context that answers a question */
} tf_cap;
enum { TF_CAP_COUNT = 13 };

/* "generate", "classify-image", ...: the capability's name (one bit of caps). */
TF_API const char *tf_cap_name(unsigned cap);
/* caps as names, comma-separated, into buf. */
TF_API const char *tf_caps_list(unsigned caps, char *buf, size_t n);

/* ---------------------------------------------------------------- training */

/* What a family's task reads (the training command line's inputs). */
typedef enum {
    TF_TRAIN_TEXT,      /* --data text files (with --tokenizer) */
    TF_TRAIN_PARALLEL,  /* --src, --tgt, --valid-src, --valid-tgt: line-aligned sentence pairs */
    TF_TRAIN_IMAGES,    /* --data-dir (idx files) or --data FILE (one digits.csv) */
    TF_TRAIN_CLIPS,     /* --data-dir (idx files the clips are made of) */
    TF_TRAIN_GENERATED  /* none: the task makes its data */
} tf_train_input;

/* The arguments every family's task constructor takes. */
typedef struct {
    const char *const *data;      /* --data files */
    int n_data;
    const char *tokenizer;        /* --tokenizer, or NULL when not given */
    const char *src, *tgt, *valid_src, *valid_tgt; /* translation, or NULL */
    const char *data_dir;         /* images, or NULL */
    const char *run_dir;
    int resume;                   /* tf_train's resume mode */
    int accum;                    /* micro-batches of a step over every process */
    int64_t rows;                 /* rows of a micro-batch (for one validation pass) */
    uint64_t seed;
} tf_task_args;

/* ---------------------------------------------------------------- translation */

/* One sentence's attention, malloc'd: the panel (T,S) and, for a Transformer, every decoder
 * layer's and head's cross-attention (rows = L, cols = H: (L,H,T,S); the panel is then their
 * average; NULL for the RNN); T target rows, S source columns; what: the panel's title. */
typedef struct {
    float *panel, *grid;
    int rows, cols;
    const char *what;
} tf_attention_maps;

/* What translation needs of a model (TF_CAP_TRANSLATE): its sizes, the special ids on each
 * side, the decoders the search steps (generate.h) and its attention over a source (1,S)
 * given the target fed (1,T). */
typedef struct {
    const void *model;                   /* the family's object */
    int src_vocab, tgt_vocab, context;
    tf_seq2seq_special src_ids, tgt_ids; /* padding, start, end on each side */
    int inside;                          /* the specials are tokenizer ids (Marian), not V, V+1, V+2 after them */
    tf_decoder *(*decoder_new)(const void *m, const int32_t *src, int n_src, int capacity);
    tf_decoder *(*decoder_new_batch)(const void *m, const int32_t *const *src, const int *n_src, int n, int capacity);
    int (*attend)(const void *m, tf_ctx *ctx, tf_tensor *src, tf_tensor *tgt, tf_attention_maps *a);
} tf_translation;

/* ---------------------------------------------------------------- captions */

/* One image's caption (TF_CAP_CAPTION): its words and, for a model that attends, each word's
 * attention over the image's grid, then the end's (the row that chose the end of the caption). */
typedef struct {
    char *text;       /* the words joined by spaces (malloc'd) */
    int n_words;
    char **words;     /* (n_words), each malloc'd */
    float *attention; /* (n_words + 1, grid, grid), or NULL when the model attends to nothing */
    int grid;         /* the grid's side (cells a row) */
} tf_caption_result;

/* ---------------------------------------------------------------- a text's attention */

/* Each layer's and head's self-attention over a text's ids (tf_model_text_attention). */
typedef struct {
    int n_layer, n_head, n; /* n ids */
    int32_t *ids;           /* (n), malloc'd */
    float *probs;           /* (n_layer, n_head, n, n), malloc'd: row i, the query at id i; column j, the key */
} tf_text_attention;

/* TF_CAP_STREAM: each step of a stream through the model (a Continual Transformer,
 * docs/continual.md): one output per step once `window` steps were seen, the per-step cost
 * flat however long the stream. A stream holds state: one thread at a time per stream; the
 * streams of one model are independent of each other. */
typedef struct tf_stream tf_stream;
typedef struct {
    int window;    /* > 0: the steps in the receptive field instead of the model's (at most its position table) */
    int recompute; /* the regular network on each window instead of step mode: the same outputs, for timing */
} tf_stream_opts;
typedef struct {
    int window, d_model;
    int vocab_size; /* > 0: each step is a token id, embedded by the model; 0: a vector of d_model floats */
    int n_labels;   /* > 0: each output is the classifier's logits (n_labels); 0: the encoder's vector (d_model) */
} tf_stream_shape;

/* ---------------------------------------------------------------- fine-tuned encoders */

/* How tf_model_predict reads a fine-tuned encoder's inputs (`tformer predict`). */
typedef struct {
    tf_finetune_kind task; /* the inputs' format: classify or pairs (TF_CAP_CLASSIFY_TEXT), tag (TF_CAP_TAG),
                            * span (TF_CAP_ANSWER) */
    int max_len;           /* ids per input, [CLS] and [SEP] included, longer ones cut: at most the model's length */
    int max_answer;        /* span: the longest answer, in pieces */
    int batch;             /* inputs per forward */
} tf_predict_opts;

/* A run folder's own held-out test set scored (tf_model_test): a task that draws its data (ListOps). */
typedef struct {
    int64_t correct, total;
    int n_classes;            /* the answers; confusion is (n_classes, n_classes): [true][predicted] */
    int64_t *confusion;       /* malloc'd */
    const char *items;        /* what was scored: "test expressions" */
    char drawn[160];          /* how the set was drawn, as a line says it: "listops_seed 1, lengths 1-20" */
    int n_settings;           /* the same as numbers (JSON) */
    struct {
        const char *key;
        double value;
    } settings[4];
} tf_test_result;

/* ---------------------------------------------------------------- the registry */

typedef struct tf_family tf_family;
struct tf_hf_arch; /* a Hugging Face architecture the family reads (src/models/hf_run.h) */
struct tf_hf_job;  /* one hf-run forward: named tensors in and out (src/models/hf_run.h) */
struct tf_family {
    const char *name;               /* `train --arch NAME`; the family's one name */
    const char *summary;            /* one line for --help */
    const char *const *model_types; /* config.json model_type values of its folders, NULL-ended (or NULL) */
    const char *verbs;              /* the verbs that run its folders ("generate or eval"), for hints */
    unsigned caps;                  /* what a loaded model may do (a folder's head may narrow it) */

    /* Training (NULL task_new: the family is not trained by `tformer train`). */
    tf_train_input input;
    const tf_field_table *task_table;
    size_t task_size;               /* bytes of the task's configuration */
    /* The task's defaults into cfg, and the family's changes to the trainer's. */
    void (*task_defaults)(void *cfg, tf_train_config *train);
    /* A usage error for this family's arguments (static text or buf), or NULL. */
    const char *(*task_check)(const void *cfg, const tf_task_args *a, char *buf, size_t n);
    tf_task *(*task_new)(const void *cfg, const tf_task_args *a);
    /* Validation batches in one pass over the held-out set, or -1 (no bound). */
    int64_t (*val_batches)(const tf_task *t, const tf_task_args *a);

    /* A folder of the family: load (architecture: config.json's architectures[0], or NULL),
     * free, and the capabilities the loaded model has (its head may narrow caps; NULL: caps). */
    void *(*load)(const char *dir, const char *architecture);
    void (*free)(void *model);
    /* The model's configuration table (its config.json keys, flags and signature), and its
     * folder written into dir (NULL: the family's folders are read, not written). */
    const tf_field_table *config_table;
    int (*save)(const void *model, const char *dir);
    unsigned (*model_caps)(const void *model);
    /* The model's parameters (NULL: none exposed). */
    const tf_params *(*params)(const void *model);
    /* Named tensors in and out (hf-run) for the architectures of archs (name NULL-ended). */
    const struct tf_hf_arch *archs;
    int (*run)(struct tf_hf_job *job);
    /* Capability calls on a loaded model (NULL where the family lacks the capability). */
    int (*embed)(const void *model, tf_tokenizer *tok, const char *const *texts, int n, const tf_embed_opts *o,
                 float *out);
    int (*embed_dim)(const void *model);
    int (*embed_tokens)(const void *model, tf_tokenizer *tok, const char *text, size_t len, const tf_embed_opts *o,
                        float **out, int *n_tokens);
    /* The most tokens one text input may hold (NULL: 0, no text). */
    int (*context)(const void *model);
    int (*classify_images)(const void *model, const float *pixels, int64_t n, int batch, int hflip,
                           const int32_t *labels, int32_t *pred, float *prob, double *loss, int64_t *correct);
    /* The input images' shape (channels, height = width) and the number of labels. */
    void (*image_shape)(const void *model, int *channels, int *size, int *n_labels);
    const char *(*label)(const void *model, int i, char *buf, size_t n);
    /* One image (channels, size, size) -> logits (n_labels); maps (NULL: none) -> where it
     * looked: the attention rollout (g,g) then each head of the last layer (heads,g,g). */
    int (*image_logits)(const void *model, const float *pixels, float *logits, float *maps);
    /* The maps' grid g (patches a side), heads and patch size; NULL: the family draws none. */
    void (*attention_grid)(const void *model, int *g, int *heads, int *patch);
    /* Translation: the model prepared for decoding (its weights' copies for the tile kernel) and described. */
    int (*translation)(void *model, tf_translation *t);
    /* Fill-mask: text -> its ids (cut to the model's length as the family's reference cuts them) and
     * the masked LM's logits at each of them (*logits malloc'd: ids->n rows of *vocab). */
    int (*mask_logits)(const void *model, tf_tokenizer *tok, const char *text, tf_ids *ids, float **logits,
                       int *vocab);
    /* Translation's settings of a folder (NULL: tf_translate_opts_default() for all): *o (the defaults
     * on entry) as the folder's own configuration sets them (a Marian folder's generation settings);
     * banned ids go into bad_ids (room for TF_MARIAN_MAX_BAD), which o->search.bad_ids may point to. */
    int (*translate_settings)(const void *model, const char *dir, tf_translate_opts *o, int32_t *bad_ids);
    /* Generate: the prompt's ids continued (o's eos_id -1: the family sets its tokenizer's end
     * token, which *eos_id gets), each new id through on_token, all of them appended to out. */
    int (*generate)(const void *model, tf_tokenizer *tok, const int32_t *prompt, int n_prompt,
                    const tf_generate_opts *o, tf_token_fn on_token, void *user, tf_ids *out, int32_t *eos_id);
    /* The mean next-token loss on the text of n files, in windows of the context (tf_model_text_loss). */
    int (*text_loss)(const void *model, tf_tokenizer *tok, const char *const *files, int n, double *loss,
                     int64_t *tokens);
    /* Generate one token at a time (tf_model_completion_new): a fresh one-row decoder for a prompt of
     * n_prompt ids and up to max_tokens new ones, sized as generate sizes its own, and *eos_id the
     * family's end token (NULL: the family generates through generate only). */
    tf_decoder *(*decoder)(const void *model, tf_tokenizer *tok, int n_prompt, int max_tokens, int32_t *eos_id);
    /* A text's self-attention: the ids (their first ones when they pass the context; a->n says how
     * many) through the model, each layer's and head's probabilities into a (malloc'd). NULL: none. */
    int (*text_attention)(const void *model, const int32_t *ids, int n, tf_text_attention *a);
    /* Caption: one image (channels, size, size; image_shape) in [0,1] -> r, searched with o
     * (beam >= 1, or greedy with temperature 0; eos_id and max_tokens the family's when -1 / 0). */
    int (*caption)(const void *model, const float *pixels, const tf_generate_opts *o, tf_caption_result *r);
    /* Classify texts: n texts (b NULL) or pairs (a[i], b[i]) -> logits (n, n_labels), encoded, cut and
     * batched as the family's verb does with the folder dir's settings (`tformer predict`). */
    int (*classify_texts)(const void *model, tf_tokenizer *tok, const char *dir, const char *const *a,
                          const char *const *b, int n, float *logits);
    /* Fine-tuned encoders: the folder dir's settings into o (max_len > 0: the caller's), *from what set the
     * task; and the predictions of an unlabelled set s (tf_model_predict). */
    int (*predict_opts)(const void *model, const char *dir, int max_len, tf_predict_opts *o, const char **from);
    int (*predict)(const void *model, tf_tokenizer *tok, const tf_finetune_set *s, const tf_predict_opts *o,
                   tf_finetune_prediction *p, int *n_truncated);
    /* The folder dir's own test set (a task that draws its data): its first n items, batch a forward. */
    int (*test)(const void *model, const char *dir, int64_t n, int batch, tf_test_result *r);
    /* Classify clips: n clips (n, frames, channels, size, size) in [0,1] -> logits (n, n_labels), one
     * clip a forward (`tformer classify` on clip folders); clip_shape: what it takes. */
    int (*classify_clips)(const void *model, const float *pixels, int64_t n, float *logits);
    void (*clip_shape)(const void *model, int *frames, int *channels, int *size);
    /* The frames one token spans (a tubelet; 1: frame by frame; NULL: 1). */
    int (*clip_tubelet)(const void *model);
    /* The labels of a text or clip classifier (images: image_shape); NULL: none. */
    int (*n_labels)(const void *model);
    /* Complete-image: the images the model completes (channels, height, width) and one completed, as
     * tf_model_complete_image (dir: the folder, whose files may describe the images). */
    int (*completion_shape)(const void *model, const char *dir, int *channels, int *height, int *width);
    int (*complete_image)(const void *model, const char *dir, const float *pixels, int keep_rows,
                          const tf_generate_opts *o, float *out);
    /* Stream: a new stream of the model (o not NULL), its calls in the stream (src/models/family.h). */
    tf_stream *(*stream)(const void *model, const tf_stream_opts *o);
};

/* The families, in registry order, NULL-ended. */
TF_API const tf_family *const *tf_families(void);
/* The family named name (`--arch`), or NULL. */
TF_API const tf_family *tf_family_find(const char *name);
/* The family whose folders carry model_type type, or NULL. */
TF_API const tf_family *tf_family_of_type(const char *type);
/* The names of the trainable families whose input is in `inputs` (bits 1 << tf_train_input;
 * ~0u: all) as "a, b or c" into buf. */
TF_API const char *tf_family_train_list(char *buf, size_t n, unsigned inputs);

/* ---------------------------------------------------------------- the model handle */

/* Any folder tformer reads or writes: a Hugging Face folder of a supported
 * architecture, or a tformer run folder (its best/ or averaged/ too). */
typedef struct tf_model tf_model;

typedef struct {
    int threads; /* > 0: tf_set_threads(threads) first; 0: leave the setting as it is */
    tf_precision precision; /* the weights' products (tf_model_set_precision); 0: f32 */
    unsigned require;       /* capabilities the caller needs (TF_CAP_*): a folder whose family has none of
                             * them is refused by its config.json, before its weights are read; 0: any */
    const char *tokenizer;  /* a tokenizer in place of the folder's (a folder or a file, as tf_tokenizer_load
                             * reads them; `--tokenizer`): an error when it cannot be read; NULL or "": the
                             * folder's own, where it holds one */
} tf_model_opts;

/* dir's config.json picks the family: architectures[0] when it names one the
 * registry reads, else model_type. Errors name what was looked for: a folder
 * without config.json, a model type or architecture the registry lacks (with
 * the supported ones). dir may name one form of a folder's weights, DIR/model.safetensors or
 * DIR/model.safetensors.index.json: that form is read where the folder holds both (tf_st_pick; else such a
 * folder is an error naming both). opts may be NULL. */
TF_API tf_model *tf_model_load(const char *dir, const tf_model_opts *opts);
TF_API void tf_model_free(tf_model *m);
TF_API const tf_family *tf_model_family(const tf_model *m);
/* The folder's model_type ("" when config.json names none) and architecture (NULL when none). */
TF_API const char *tf_model_type(const tf_model *m);
TF_API const char *tf_model_architecture(const tf_model *m);
TF_API const char *tf_model_dir(const tf_model *m);
/* What this model can do (TF_CAP_* bits): its family's capabilities as its folder's head narrows them. */
TF_API unsigned tf_model_caps(const tf_model *m);
/* 0 when m has cap, else -1 with "DIR: model (FAMILY) cannot CAP; it can: ..." in tf_error(). */
TF_API int tf_model_require(const tf_model *m, unsigned cap);
/* The family's own object (tf_gpt *, tf_bert *, tf_vit *, ...: the family's header), for what the
 * handle does not wrap yet. */
TF_API const void *tf_model_impl(const tf_model *m);
/* Inference in another precision (`--precision`; docs/precision.md): f32 (as the weights are),
 * bf16 or int8 products with the weights, as tf_params_set_precision. Call it before threads share
 * the model; an error names the family when it exposes no parameters (precision other than f32). */
TF_API int tf_model_set_precision(tf_model *m, tf_precision precision);
TF_API tf_precision tf_model_precision(const tf_model *m);
/* -1 with an error naming the tensor when the weights hold a NaN or an infinity (a diverged
 * training); 0 otherwise, or when the family exposes no parameters. */
TF_API int tf_model_check_finite(const tf_model *m);

/* The model's folder written into dir (config.json and model.safetensors, and what else the
 * family writes; not its tokenizer), as its family saves it; an error naming the family
 * when it writes none. */
TF_API int tf_model_save(const tf_model *m, const char *dir);

/* TF_CAP_RUN: the inputs of a safetensors file, named as forward()'s arguments, through the
 * model; the output fields Hugging Face returns into output_path (hf-run). log: warnings, or NULL. */
TF_API int tf_model_run_file(const tf_model *m, const char *input_path, const char *output_path, FILE *log);
/* TF_CAP_RUN in memory: n named inputs (tf_st_entry: name, dtype, ndim, shape, data, nbytes; the
 * caller's, read only), checked and converted as hf-run checks a file's (messages name "inputs"),
 * through the model -> *out, a malloc'd array of *n_out output fields in Hugging Face's order,
 * each with its own malloc'd data (F32, or I32 ids) that the caller may keep: free a field's data
 * with free(), or everything with tf_run_outputs_free. Threads may run one model at once. */
typedef struct {
    const char *name;   /* Hugging Face's field name ("logits", "last_hidden_state", ...) */
    tf_st_dtype dtype;  /* TF_ST_F32, TF_ST_I32 or TF_ST_U8 */
    int ndim;
    int64_t shape[TF_MAX_DIMS];
    void *data;         /* row-major, malloc'd */
    size_t nbytes;
} tf_run_output;
TF_API int tf_model_run(const tf_model *m, const tf_st_entry *in, int n, tf_run_output **out, int *n_out);
TF_API void tf_run_outputs_free(tf_run_output *out, int n);

/* TF_CAP_EMBED: n texts (NUL-ended) -> *out, n rows of tf_model_embed_dim floats (malloc'd: the
 * caller keeps it and frees it with free()). o NULL: the folder's settings (tf_embed_opts_load). */
TF_API int tf_model_embed(const tf_model *m, const char *const *texts, int n, const tf_embed_opts *o, float **out);
TF_API int tf_model_embed_dim(const tf_model *m);
/* TF_CAP_EMBED: each token's vector of one text of len bytes (sentence-transformers' token_embeddings: the
 * final hidden states) -> *out, *n_tokens rows of tf_model_embed_dim floats (malloc'd, the caller's), the
 * text cut to o's max_len ids (o NULL: the folder's settings). */
TF_API int tf_model_embed_tokens(const tf_model *m, const char *text, size_t len, const tf_embed_opts *o, float **out,
                                 int *n_tokens);
/* The most tokens one text input may hold (the position table: max_position_embeddings); 0 for a model
 * that reads no text. */
TF_API int tf_model_context(const tf_model *m);

/* TF_CAP_CLASSIFY_IMAGE: n images (n, channels, size, size) in [0,1] -> pred[n] and, where not NULL,
 * prob[n] (the predicted label's probability); with labels, *loss (mean cross-entropy) and *correct.
 * hflip: each image's probabilities averaged with its mirror image's. batch: images a forward. */
TF_API int tf_model_classify_images(const tf_model *m, const float *pixels, int64_t n, int batch, int hflip,
                                    const int32_t *labels, int32_t *pred, float *prob, double *loss,
                                    int64_t *correct);
/* The images the classifier takes, and its labels' names (Hugging Face's id2label, else "LABEL_<i>"). */
TF_API void tf_model_image_shape(const tf_model *m, int *channels, int *size, int *n_labels);
TF_API const char *tf_model_label(const tf_model *m, int i, char *buf, size_t n);
/* The number of labels of any classifier (images, texts, clips; 0: not a classifier); tf_model_label
 * names them. */
TF_API int tf_model_n_labels(const tf_model *m);
/* A row of n_labels logits -> the k likeliest labels (ids, likeliest first; equal logits: the lower id
 * first) and their softmax probabilities, each exp(x - max) / sum in double rounded to float: the numbers
 * `tformer predict` and `tformer classify` (clips) print. k is cut to n_labels; the count is returned. */
TF_API int tf_model_top(const float *logits, int n_labels, int k, int32_t *ids, float *probs);

/* TF_CAP_CLASSIFY_TEXT: n texts (b NULL) or text pairs (a[i], b[i]) -> logits (n, tf_model_n_labels),
 * as `tformer predict --task classify|pairs` computes them on the same inputs (the folder's tokenizer
 * and finetune.json's max_len, else the model's length; 16 texts a forward). An error names the text. */
TF_API int tf_model_classify_texts(const tf_model *m, const char *const *a, const char *const *b, int n,
                                   float *logits);
/* A fine-tuned encoder's settings (TF_CAP_CLASSIFY_TEXT, TF_CAP_TAG or TF_CAP_ANSWER): the folder's
 * finetune.json (tformer finetune writes it) where present, else the task of the model's head, ids cut
 * at max_len (0: finetune.json's, else the model's length; never past the model's length), batches of 16;
 * *from (may be NULL): "finetune.json" or "the model's head". An error names a bad finetune.json. */
TF_API int tf_model_predict_opts(const tf_model *m, int max_len, tf_predict_opts *o, const char **from);
/* The inputs s (tf_finetune_parse's, unlabelled; the task o->task's format) encoded with the folder's
 * tokenizer and predicted, o->batch at a time -> p (room for s->n; free their contents with
 * tf_finetune_predictions_free), *n_truncated (may be NULL) the inputs cut to o->max_len. */
TF_API int tf_model_predict(const tf_model *m, const tf_finetune_set *s, const tf_predict_opts *o,
                            tf_finetune_prediction *p, int *n_truncated);

/* A run folder whose task draws its own data (a ListOps run: listops.json beside the model): the accuracy on the
 * first n items of its test set, drawn apart from training and validation with the run's settings, batch a
 * forward (`tformer eval --listops N`). An error names the folder when it holds no such settings. Free r with
 * tf_test_result_free. */
TF_API int tf_model_test(const tf_model *m, int64_t n, int batch, tf_test_result *r);
TF_API void tf_test_result_free(tf_test_result *r);

/* TF_CAP_CLASSIFY_CLIP: n clips (n, frames, channels, size, size) in [0,1] -> logits (n, n_labels), each
 * clip run alone (as `tformer classify` runs clip folders); the clips the model takes. */
TF_API int tf_model_classify_clips(const tf_model *m, const float *pixels, int64_t n, float *logits);
TF_API void tf_model_clip_shape(const tf_model *m, int *frames, int *channels, int *size);
/* The frames one of the clip classifier's tokens spans (ViViT's tubelet; 1: frame by frame; 0: no clips). */
TF_API int tf_model_clip_tubelet(const tf_model *m);

/* One image (channels, size, size) in [0,1] -> logits (n_labels); maps, when not NULL, ->
 * (1 + heads) g x g maps (tf_model_attention_grid): the attention rollout from what the
 * classifier reads, then each head of the last layer. */
TF_API int tf_model_image_logits(const tf_model *m, const float *pixels, float *logits, float *maps);
/* The attention maps' grid (patches a side), heads and patch size; -1 with an error naming
 * the family when it draws none. */
TF_API int tf_model_attention_grid(const tf_model *m, int *g, int *heads, int *patch);

/* TF_CAP_FILL_MASK: the k likeliest tokens at each mask token of a text, as Hugging Face's fill-mask
 * pipeline ranks them (softmax over the vocabulary; equal probabilities: the lower id first). */
typedef struct {
    int n;          /* mask tokens in the text */
    int k;          /* choices per mask: the k asked, at most the vocabulary */
    int *positions; /* (n): each mask's index among the text's ids */
    int32_t *ids;   /* (n, k): the choices' token ids, likeliest first */
    double *probs;  /* (n, k): their probabilities */
} tf_fill_mask_result;
/* text must hold the tokenizer's mask token; r is filled (free it with tf_fill_mask_result_free). */
TF_API int tf_model_fill_mask(const tf_model *m, const char *text, int k, tf_fill_mask_result *r);
TF_API void tf_fill_mask_result_free(tf_fill_mask_result *r);

/* TF_CAP_GENERATE: prompt continued (o: tf_generate_opts_default() and changes; its eos_id is the
 * family's). Each new piece of text, as the ids decode, goes to on_text (NULL: none; a non-zero
 * return stops); stop (NULL or "": none) ends the text before its first occurrence. *text
 * (malloc'd, NUL-ended, *len bytes) gets the continuation, the prompt not included; g (NULL:
 * not wanted) the ids behind it (free them with tf_generation_free). */
typedef int (*tf_text_fn)(void *user, const char *piece, size_t len);
typedef struct {
    int prompt_tokens;  /* the prompt's ids */
    tf_ids ids;         /* the new ids, the end token included when it came */
    const char *finish; /* "stop" (the stop string, or on_text's return), "eos" (the end token) or "length"
                         * (max_tokens, or a context beam search does not slide past) */
} tf_generation;
TF_API int tf_model_generate(const tf_model *m, const char *prompt, const tf_generate_opts *o, const char *stop,
                             tf_text_fn on_text, void *user, char **text, size_t *len, tf_generation *g);
TF_API void tf_generation_free(tf_generation *g);

/* TF_CAP_GENERATE: the mean next-token loss (nats; the perplexity is its exp) over the text of n files,
 * read in windows of the model's context, and the tokens scored (`tformer eval --data`). An error names
 * a file that cannot be read or holds too little text. */
TF_API int tf_model_text_loss(const tf_model *m, const char *const *files, int n, double *loss, int64_t *tokens);

/* TF_CAP_GENERATE one token at a time: a prompt's completion that a caller steps together with
 * others (tf_model_completions_step: a server's continuous batching), starting one between any
 * two steps and ending one at any step. Its ids, text and pieces are tf_model_generate's for the
 * same prompt, options and stop string, whatever else is stepped with it (tested:
 * model_completions_match_generate). o: sampling (beam 0; temperature 0: greedy); stops: up to
 * TF_MAX_STOPS strings (NULL or "" ones ignored), the text ending before the first occurrence of
 * any of them. An error (NULL) names the cause: a model without the capability or whose family
 * does not step (its generate only), a prompt past the context, options out of range. */
#define TF_MAX_STOPS 4
typedef struct tf_completion tf_completion;
TF_API tf_completion *tf_model_completion_new(const tf_model *m, const char *prompt, const tf_generate_opts *o,
                                              const char *const *stops, int n_stops);
TF_API void tf_completion_free(tf_completion *c);
/* One step of each completion not done (tf_gen_seqs_step), then its text. -1 on error: c[*bad]
 * (bad may be NULL) failed (tf_error() says why), those before it took this step, those after
 * it did not; the caller drops the bad one and steps the others again. */
TF_API int tf_model_completions_step(tf_completion *const *c, int n, int *bad);
TF_API int tf_completion_done(const tf_completion *c);
/* End it now (a client gone): later steps skip it; its finish reason is "stop". */
TF_API void tf_completion_end(tf_completion *c);
/* The text so far (the continuation, cut at a stop string; NUL-ended), *len its bytes and
 * *added (when not NULL) the bytes at its end that the last step added: the piece to stream. */
TF_API const char *tf_completion_text(const tf_completion *c, size_t *len, size_t *added);
/* The last step's id (-1: none) and its log-probability; its logits as the model gave them
 * (*vocab of them; NULL when no id) and their log-sum-exp: for the likeliest alternatives. */
TF_API int32_t tf_completion_last(const tf_completion *c, double *logprob);
TF_API const float *tf_completion_logits(const tf_completion *c, float *lse, int *vocab);
/* Ids generated so far; *prompt_tokens (when not NULL) the prompt's ids. */
TF_API int tf_completion_tokens(const tf_completion *c, int *prompt_tokens);
/* Why it ended: "stop" (the end token, a stop string, tf_completion_end) or "length" (max_tokens,
 * or a context it cannot slide past); NULL while it runs. */
TF_API const char *tf_completion_finish(const tf_completion *c);

/* A text's self-attention, each layer and head (a language model's: causal): the tokenizer's ids
 * (the first ones that fit the context), as the model attends while it reads them. An error names
 * the family when it exposes none. Free a with tf_text_attention_free. */
TF_API int tf_model_text_attention(const tf_model *m, const char *text, tf_text_attention *a);
TF_API void tf_text_attention_free(tf_text_attention *a);

/* TF_CAP_CAPTION: one image (tf_model_image_shape's channels, size, size) in [0,1] -> its caption
 * (o: tf_generate_opts_default() and changes, NULL: greedy); free r with tf_caption_result_free. */
TF_API int tf_model_caption(const tf_model *m, const float *pixels, const tf_generate_opts *o, tf_caption_result *r);
TF_API void tf_caption_result_free(tf_caption_result *r);

/* TF_CAP_COMPLETE_IMAGE: the images the model completes (an ImageGPT folder's image_tokens.json):
 * channels (1 or 3), height and width. */
TF_API int tf_model_completion_shape(const tf_model *m, int *channels, int *height, int *width);
/* One image (channels, height, width) in [0,1]: its top keep_rows rows kept, the rest sampled pixel
 * by pixel with o (temperature, top_k, top_p, seed; NULL: tf_generate_opts_default()) -> out
 * (channels, height, width), the whole completion in the model's palette (the kept rows too). */
TF_API int tf_model_complete_image(const tf_model *m, const float *pixels, int keep_rows, const tf_generate_opts *o,
                                   float *out);

/* The folder's tokenizer (encode and decode are safe from several threads), or NULL when it holds none. */
TF_API tf_tokenizer *tf_model_tokenizer(const tf_model *m);

/* TF_CAP_TRANSLATE: the model's decoders and sizes. The first call prepares the weights for
 * decoding (copies for the tile kernel): make it before threads share the model. */
TF_API int tf_model_translation(tf_model *m, tf_translation *t);

/* TF_CAP_TRANSLATE: the folder's translator, made by the first call (which prepares the weights:
 * make it before threads share the model): its tokenizers (a Marian folder's source.spm and
 * target.spm, else DIR/source/ and DIR/target/, else the folder's one for both), checked against the
 * model's vocabularies; *tr (may be NULL) the model's description; *o (may be NULL) the folder's
 * settings: a Marian folder's as transformers' generate() reads them (beam, length penalty, max
 * length, early stopping, forced EOS, banned ids), else tf_translate_opts_default(). The
 * translator belongs to the model. */
TF_API int tf_model_translator(tf_model *m, const tf_translator **t, const tf_translation **tr, tf_translate_opts *o);
/* n texts (NUL-ended) translated with o (NULL: the folder's settings): texts[i] (malloc'd, NUL-ended)
 * and, when lens is not NULL, lens[i]. Needs tf_model_translator first; any number of threads may
 * then translate at once. An error names the text's index. */
TF_API int tf_model_translate(const tf_model *m, int n, const char *const *texts, const tf_translate_opts *o,
                              char **out, size_t *lens);

/* ---------------------------------------------------------------- streams */

/* TF_CAP_STREAM (tf_stream_opts and tf_stream_shape above): a new stream of the model; o NULL:
 * the model's window, step mode. Free with tf_stream_free. */
TF_API tf_stream *tf_model_stream_new(const tf_model *m, const tf_stream_opts *o);
TF_API void tf_stream_free(tf_stream *s);
TF_API tf_stream_shape tf_stream_shape_of(const tf_stream *s);
/* One step, a token id (vocab_size > 0; x unused) or the vector x (vocab_size 0; id unused): 1 and
 * out (n_labels logits, or d_model) once `window` steps were seen, 0 before, -1 on an error (an id
 * outside the vocabulary, a NaN or infinity in x: the stream is then unchanged). */
TF_API int tf_stream_step(tf_stream *s, int32_t id, const float *x, float *out);
/* Steps taken so far. */
TF_API int64_t tf_stream_steps(const tf_stream *s);

#ifdef __cplusplus
}
#endif

#endif /* TFORMER_MODEL_H */
