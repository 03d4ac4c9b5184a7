/* tformer: The trainer: its settings, the run (checkpoints, resume, reports) over any task. */
#ifndef TFORMER_TRAINER_H
#define TFORMER_TRAINER_H

#include "config.h"
#include "task.h"
#include "train_config.h"
#include "gpt.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    int64_t step, steps;     /* step just done (1-based), total */
    float loss, lr;
    double grad_norm;
    double val_loss;         /* NaN unless evaluated at this step */
    double val_metric[TF_METRICS_MAX]; /* with val_loss: the task's metrics */
    int n_metrics;
    const char *const *metric_names;
    double tokens_per_s, elapsed_s, eta_s;
    const char *notice;      /* non-NULL in a report of its own before the first step: a
                              * message for the user (settings changed on resume) */
    const char *info;        /* non-NULL in a report of its own before the first step: how a run of
                              * several processes (or with zero) splits a step, what it exchanges
                              * and the optimizer state each process holds */
} tf_train_report;

typedef void (*tf_train_report_fn)(void *user, const tf_train_report *r);

/* Train a task and write run_dir: the task's model folder, checkpoint.safetensors
 * (weights, AdamW state, step, seed, the trainer's config, the model's
 * signature, the task's metadata), losses.csv (step, train_loss, val_loss,
 * lr, grad_norm, val_<metric>...) and loss.png. Checkpoints every
 * checkpoint_every steps and at the end, written by streaming the tensors to
 * a temporary file renamed into place. With resume (TF_RESUME_*), the run
 * continues from run_dir's checkpoint. When *stop becomes non-zero the step in
 * progress finishes, a checkpoint is written and the call returns 1; so it
 * does after step cfg->stop_at (when not 0). A loss or
 * gradient that is not finite stops the run with an error naming the step
 * (the last checkpoint stays). Returns 0 when done, -1 on error. */
/* tf_train's resume: none; the checkpoint's run bit for bit (settings that
 * steer the training must be the checkpoint's, else an error lists them);
 * or with changed settings (listed in a notice). */
enum { TF_RESUME_NONE = 0, TF_RESUME_EXACT = 1, TF_RESUME_CHANGED = 2 };

TF_API int tf_train(const tf_train_config *cfg, tf_task *task, const char *run_dir, int resume, volatile int *stop,
                    tf_train_report_fn report, void *user);
/* A run folder holds one run. Call tf_run_folder_begin before making the
 * task (which writes its tokenizer into run_dir): it creates run_dir and
 * takes its lock (this process then holds it until tf_run_folder_end or its
 * exit; tf_train takes it again without conflict; another process is
 * refused), then, unless resume:
 *  - a folder that holds a run (checkpoint, model, config.json, losses,
 *    pictures, tokenizer files, checkpoints/, best/, averaged/...) is
 *    refused naming what it holds and --resume / --overwrite, unless
 *    overwrite, which removes those files first (other files stay);
 *  - kind TF_RUN_FOLDER_TRAIN: a new run id is written to run_dir/run_id.
 *    tf_train records it in every kept checkpoint (checkpoints/step-*,
 *    metadata tformer_run and tformer_step) and counts, keeps, prunes and
 *    averages only the kept checkpoints that carry it (checkpoint.safetensors
 *    stays byte for byte the same for equal runs, so it carries none).
 * kind TF_RUN_FOLDER_TOKENIZER (tokenizer-train): the same rules, no run id.
 * Returns 0, or -1 with tf_error naming the folder. */
enum { TF_RUN_FOLDER_TRAIN = 0, TF_RUN_FOLDER_TOKENIZER = 1 };
TF_API int tf_run_folder_begin(const char *run_dir, int kind, int resume, int overwrite);
TF_API void tf_run_folder_end(const char *run_dir);

/* Under mpirun (tf_dist_init, dist.h) tf_train is collective: every rank
 * calls it with the same settings and a task over the same data; rank 0
 * writes run_dir and reports, the others only read it (the checkpoint on
 * resume), and the run is bit for bit the one process's with accum x the
 * processes (docs/distributed.md). Errors are every rank's (tf_dist_agree).
 * Make the task with tf_dist_task_new: make(arg) on rank 0, then on the
 * others, once rank 0 has prepared the run folder (its tokenizer).
 * Collective; one process: make(arg). When make fails, run_dir is removed
 * again with the files make wrote if it did not exist before (a refused
 * setting or data file leaves no folder behind). */
TF_API tf_task *tf_dist_task_new(tf_task *(*make)(void *arg), void *arg, const char *run_dir);

/* tf_lm_task_new + tf_train: a GPT on text files, run_dir a Hugging Face
 * GPT-2 folder with its tokenizer at the end. */
TF_API int tf_gpt_train(const tf_train_config *cfg, const tf_lm_config *lm, const char *const *data, int n_data,
                        const char *tokenizer, const char *run_dir, int resume, volatile int *stop,
                        tf_train_report_fn report, void *user);

#ifdef __cplusplus
}
#endif
#endif /* TFORMER_TRAINER_H */
