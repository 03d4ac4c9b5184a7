/* Private: `tformer hf-run`. The driver (hf_run.c) reads config.json, finds
 * architectures[0] in the architecture table, checks and converts the named
 * inputs and writes the named outputs; a family file (hf_gpt2.c, ...) loads
 * and runs its models. Adding an architecture is one table row (hf_run.c)
 * and, for a new family, one hf_family. */
#ifndef TF_HF_RUN_H
#define TF_HF_RUN_H

#include "tformer/core.h"

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
typedef struct {
    tf_ctx *ctx;
    const void *model;      /* from hf_family.load */
    const char *input_path; /* for messages naming the file */
    FILE *log;              /* warnings, or NULL */
    hf_tensors in;          /* checked inputs, converted as their kind says */
    hf_tensors out;         /* every field computed, by Hugging Face's name */
} hf_job;

/* A model family: how to load a folder and run a forward pass. run puts every
 * field it computes into job->out; the architecture's row picks those written. */
typedef struct {
    void *(*load)(const char *dir, const char *architecture);
    void (*free)(void *model);
    int (*run)(hf_job *job);
} hf_family;

/* One row of the architecture table. */
typedef struct {
    const char *name;              /* config.json architectures[0] */
    const hf_family *family;
    const hf_input *inputs;        /* forward() arguments hf-run takes, {NULL}-terminated */
    const char *const *refused;    /* forward() arguments hf-run does not take, NULL-terminated */
    const char *const *outputs;    /* output fields written when computed, NULL-terminated */
} hf_arch;

/* The input named name, or NULL when not given. */
tf_tensor *hf_get(const hf_tensors *ts, const char *name);
/* Add a named tensor (NULL t is ignored); 0 or -1 when full. */
int hf_put(hf_tensors *ts, const char *name, tf_tensor *t);
/* Check an I32 input against [lo, hi), ignoring the value `skip`; 0 or -1 with
 * a message naming the file, the input and the offending position. */
int hf_check_range(const hf_job *job, const char *name, int32_t lo, int32_t hi, int32_t skip,
                   const char *what);

/* The families. */
extern const hf_family hf_gpt2_family;
extern const hf_family hf_bert_family;
extern const hf_family hf_marian_family;
extern const hf_family hf_vit_family;
extern const hf_family hf_vivit_family;
extern const hf_family hf_swin_family;
extern const hf_family hf_nystrom_family;

#endif
