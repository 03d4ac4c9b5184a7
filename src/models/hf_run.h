/* Private to src/models: `tformer hf-run` and tf_model_run. The driver
 * (hf_run.c) reads config.json, finds architectures[0] in the registry's
 * families (each family's `archs` table, in its <family>_hf.c), checks and
 * converts the named inputs and writes the named outputs; the family's row
 * loads and runs its models. Adding an architecture is one row of its
 * family's table. */
#ifndef TF_HF_RUN_H
#define TF_HF_RUN_H

#include "tformer/core.h"
#include "family.h"

#define HF_MAX_TENSORS 16

/* How an input is checked and converted before the family sees it. */
typedef enum {
    HF_IN_IDS,    /* I64 or I32, values >= 0 -> I32 */
    HF_IN_LABELS, /* I64 or I32, values >= 0 or -100 (ignored) -> I32 */
    HF_IN_MASK,   /* any integer, BOOL or float dtype, values 0 or 1 -> U8 (1 = attend) */
    HF_IN_FLOAT,  /* F32, F16 or BF16 -> F32 (pixel values) */
    HF_IN_INT,    /* any I64 or I32 value -> I32 (positions the model clamps) */
    HF_IN_TARGETS /* class ids as HF_IN_LABELS, or F32/F16/BF16 values -> F32 (regression) */
} hf_in_kind;

/* One forward() argument: its name, kind and shape pattern. Each letter of
 * the pattern is a size shared across the inputs ("B,T": input_ids binds B
 * and T, attention_mask must then match); sizes that depend on the config
 * are the family's to check. */
typedef struct {
    const char *name;
    hf_in_kind kind;
    const char *shape;
    int required;
} hf_input;

/* Named tensors: the checked inputs, then the outputs a family computes. */
typedef struct {
    const char *name[HF_MAX_TENSORS];
    tf_tensor *t[HF_MAX_TENSORS];
    int n;
} hf_tensors;

/* What a family's run function sees. */
typedef struct tf_hf_job {
    tf_ctx *ctx;
    const void *model;      /* from the family's load */
    const char *input_path; /* for messages naming the file */
    FILE *log;              /* warnings, or NULL */
    hf_tensors in;          /* checked inputs, converted as their kind says */
    hf_tensors out;         /* every field computed, by Hugging Face's name */
} hf_job;

/* One row of the architecture table. */
typedef struct tf_hf_arch {
    const char *name;              /* config.json architectures[0]; NULL ends a family's table */
    const hf_input *inputs;        /* forward() arguments hf-run takes, {NULL}-terminated */
    const char *const *refused;    /* forward() arguments hf-run does not take, NULL-terminated */
    const char *const *outputs;    /* output fields written when computed, NULL-terminated */
    const hf_input *head;          /* arguments the architecture adds after inputs (its head's labels, ...),
                                      {NULL}-terminated; NULL: none */
} hf_arch;

/* The input named name, or NULL when not given. */
tf_tensor *hf_get(const hf_tensors *ts, const char *name);
/* Add a named tensor (NULL t is ignored); 0 or -1 when full. */
int hf_put(hf_tensors *ts, const char *name, tf_tensor *t);
/* Check an I32 input against [lo, hi), ignoring the value `skip`; 0 or -1 with
 * a message naming the file, the input and the offending position. */
int hf_check_range(const hf_job *job, const char *name, int32_t lo, int32_t hi, int32_t skip,
                   const char *what);

/* Whether labels are I32 and every one is -100 (ignored): PyTorch's mean over no labels is 0/0 (NaN). */
int hf_all_ignored(const tf_tensor *labels);
/* An error of a forward pass, named after the input file. */
int hf_input_error(const hf_job *job);
/* A classifier's output fields (last_hidden_state, pooler_output, logits,
 * loss); PyTorch's mean over no labels is 0/0: loss NaN when every label is -100. */
int hf_put_classifier_outputs(hf_job *job, const tf_tensor *labels, tf_tensor *last, tf_tensor *pooled,
                              tf_tensor *logits, tf_tensor *loss);

/* An image or video classifier's outputs (ViT's, Swin's, ViViT's alike; NULL where it has none). */
typedef struct {
    tf_tensor *last_hidden_state, *pooler_output, *logits, *loss;
} hf_classifier_out;
/* A classifier's forward on pixels with labels (or NULL) and the loss's label smoothing: its outputs
 * into *o; 0 or -1. */
typedef int (*hf_classifier_fn)(tf_ctx *ctx, const void *model, tf_tensor *pixels, tf_tensor *labels,
                                float smoothing, hf_classifier_out *o);
/* A classifier's run: pixel_values and labels (below n_labels, or -100) through forward, its outputs
 * as hf_put_classifier_outputs. */
int hf_run_classifier(hf_job *job, int n_labels, hf_classifier_fn forward);

/* Output field lists shared by several families. */
extern const char *const hf_out_lm[];   /* logits, loss */
extern const char *const hf_out_body[]; /* last_hidden_state */
extern const char *const hf_out_pooled[]; /* last_hidden_state, pooler_output */
/* Input lists shared by several families' forward(): */
extern const hf_input hf_in_text[];  /* input_ids, attention_mask, token_type_ids, position_ids (B,T): BERT's, GPT-2's */
extern const hf_input hf_in_image[]; /* pixel_values (B,C,H,W): ViT's, Swin's */
/* Head lists (an hf_arch's head) shared by several families: */
extern const hf_input hf_head_token_labels[]; /* labels (B,T): a label per token (LM, token classification) */
extern const hf_input hf_head_class_labels[]; /* labels (B): class ids (image and clip classification) */
extern const hf_input hf_head_targets[];      /* labels (B): class ids or regression values (sequence classification) */
extern const hf_input hf_head_spans[];        /* start_positions, end_positions (B): question answering */

/* The architecture of dir/config.json's architectures[0] and its family (*family), or NULL
 * with an error naming the file and listing what is supported. */
const hf_arch *hf_read_architecture(const char *dir, FILE *log, const tf_family **family);
/* The inputs of input_path through arch's forward (model: loaded, or NULL: loaded from
 * model_dir after the inputs are checked), the output fields into output_path. */
int hf_run_file(const tf_family *family, const hf_arch *arch, const void *model, const char *model_dir,
                const char *input_path, const char *output_path, FILE *log);
/* The same for inputs already opened (tf_st_open_entries: the caller's arrays; messages name label),
 * the outputs handed to emit (job->out, by Hugging Face's names) while the run's context lives. */
typedef int (*hf_emit_fn)(const hf_job *job, const hf_arch *arch, void *user);
int hf_run_entries(const tf_family *family, const hf_arch *arch, const void *model, const char *model_dir,
                   const tf_st_file *inputs, const char *label, hf_emit_fn emit, void *user);

#endif
