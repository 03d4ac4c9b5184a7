/* tformer: The task interface: what the trainer needs of a model family (batches, a loss,
 * the parameters, a signature, a save). A family implements it beside its model. */
#ifndef TFORMER_TASK_H
#define TFORMER_TASK_H

#include "config.h"
#include "data.h"
#include "nn.h"
#include "safetensors.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------- tasks */

#define TF_METRICS_MAX 8

/* Validation metrics as sums: metric i is sum[i] / count[i] (accuracy =
 * correct / examples); their names are the task's. */
typedef struct {
    double sum[TF_METRICS_MAX], count[TF_METRICS_MAX];
} tf_metrics;

/* What the trainer needs of a model family's task: batches, a loss, the
 * parameters, a signature that tells models apart, and a save as a Hugging
 * Face folder. A family implements the table (src/models/gpt/gpt_task.c is the
 * worked example); the trainer knows nothing else. */
typedef struct tf_task tf_task;

typedef struct {
    /* The batch of `rows` examples for draw `key` of a subset (a loader's next). */
    int (*batch)(tf_task *t, tf_ctx *ctx, tf_subset subset, uint64_t key, int rows, tf_batch *b);
    /* The forward pass: a scalar loss; metric sums added into m (NULL while training). */
    tf_tensor *(*loss)(tf_task *t, tf_ctx *ctx, const tf_batch *b, tf_metrics *m);
    tf_params *(*params)(tf_task *t);
    /* The model's configuration as text: a checkpoint resumes only into an equal one. */
    int (*signature)(tf_task *t, char *out, size_t n);
    /* The model (config.json + model.safetensors, and what else it needs) into dir. */
    int (*save)(tf_task *t, const char *dir);
    /* Extra checkpoint metadata (the task's config, its tokenizer) and its check on resume; may be NULL. */
    int (*save_meta)(tf_task *t, tf_st_writer *w);
    int (*check_meta)(tf_task *t, const tf_st_file *f, const char *path);
    /* Tokens (or examples) in a batch of `rows`, for the throughput. */
    int64_t (*tokens)(tf_task *t, int rows);
    void (*free)(tf_task *t);
    /* Metrics of the whole validation set after the loss batches (a
     * translation's BLEU needs decoding); added into m; may be NULL. */
    int (*score)(tf_task *t, tf_metrics *m);
    /* After each optimizer update (step: the steps done, 1-based), before any
     * evaluation of that step: an EMA of the weights; may be NULL. */
    int (*after_step)(tf_task *t, int64_t step);
} tf_task_vt;

struct tf_task {
    const tf_task_vt *vt;
    tf_fields config;                            /* the task's settings: with the trainer's, one JSON object */
    int n_metrics;                               /* validation metrics besides the loss */
    const char *metric_names[TF_METRICS_MAX];    /* "accuracy", ...: losses.csv columns val_<name> */
    int select_metric;                           /* run_dir/best/ is the model of lowest validation loss
                                                  * (0) or of highest metric select_metric - 1 */
    int token_batches;                           /* batches by token count: the rows asked for are ignored,
                                                  * so the trainer's batch need not split into micro-batches */
    int model_is_ema;                            /* the task evaluates and saves an EMA of the weights it
                                                  * trains: average_last (an average of the trained
                                                  * weights) is refused */
    char *data_digest;                           /* the data files' names, sizes and content hashes
                                                  * (tf_task_set_data): recorded in each checkpoint,
                                                  * compared on resume; NULL: not checked */
};

/* Record the files a task trains on (name, size and content hash of each, in
 * order): checkpoints keep them and a resume with other data (another file,
 * the same file repeated) is refused naming the file, unless the resume
 * allows changes (TF_RESUME_CHANGED: a notice). 0, or -1 naming the file. */
TF_API int tf_task_set_data(tf_task *t, const char *const *paths, int n);
TF_API void tf_task_free(tf_task *t);

#ifdef __cplusplus
}
#endif
#endif /* TFORMER_TASK_H */
