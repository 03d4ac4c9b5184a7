/* Private: the trainer's state, shared by trainer.c (the run: checkpoints,
 * history, resume) and train_step.c (steps and evaluation, over one process
 * or several). */
#ifndef TF_TRAINER_INTERNAL_H
#define TF_TRAINER_INTERNAL_H

#include "tformer/trainer.h"
#include "train_internal.h"

typedef struct {
    double *x, *y;
    int n, cap;
} tf_series;

int tf_series_add(tf_series *s, double x, double y);

/* One validation batch's loss and metric sums. */
typedef struct {
    double loss, sum[TF_METRICS_MAX], count[TF_METRICS_MAX];
} tf_eval_row;

typedef struct {
    /* The settings of the one process this run is bit for bit: the caller's
     * with accum = processes x accum (micro-batches per step, all processes). */
    tf_train_config cfg;
    tf_task *task;
    const char *dir;
    tf_params *ps;
    tf_optim *opt;
    tf_ctx *ctx;
    int rank, ranks;                   /* this process, the processes (tf_dist) */
    int writer;                        /* rank 0: writes the run folder, reports, scores */
    int rows;                          /* sequences per micro-batch: batch / accum */
    tf_dist_sum *sum;                  /* the step's gradient over its micro-batches (accum > 1) */
    size_t sum_n;                      /* its length: every parameter's elements */
    tf_zero *zero;                     /* ZeRO-1 over several processes: this rank's part; else NULL */
    float *losses, *all_losses;        /* this rank's micro-batch losses; every rank's */
    tf_eval_row *eval_mine, *eval_all; /* the same for validation batches */
    tf_series train, val, lr, gnorm;   /* lr and grad norm share x with train */
    tf_series metric[TF_METRICS_MAX];  /* the task's validation metrics */
    double best;                       /* the selection's best so far (lower is better: metrics negated) */
    int resume;                        /* TF_RESUME_* */
    char changed[1024];                /* settings changed on resume, "name A -> B, ..." */
    char history[5000];                /* losses.csv missing or broken on resume: the notice */
    char run_id[40];                   /* run_dir/run_id: recorded in each kept checkpoint ("" for an older run) */
} tf_trainer;

/* train_step.c: the split of a step over the processes and its buffers
 * (every rank alike; -1 with a message for a batch that does not split). */
int tf_trainer_split(tf_trainer *t, const tf_train_config *cfg);
void tf_trainer_split_free(tf_trainer *t);
/* One optimizer step (collective): the gradient of its micro-batches summed
 * in micro-batch order, clipped, AdamW; the report's loss, lr and norm. */
int tf_trainer_step(tf_trainer *t, int64_t step, tf_train_report *rep);
/* The validation loss and metric sums of eval_batches batches (collective;
 * the task's score is the writer's alone). */
int tf_trainer_evaluate(tf_trainer *t, double *loss, tf_metrics *m);
/* The start-up line of a run of several processes, or of one asked for
 * zero_asked: the split, the bytes a process receives a step, the AdamW
 * state it holds. 1 when there is one (in out), else 0. */
int tf_trainer_describe(const tf_trainer *t, int zero_asked, char *out, size_t cap);

#endif
