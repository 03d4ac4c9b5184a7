/* tformer: the trainer's settings (tf_train_config): below the model families,
 * whose registry rows adjust a task's defaults (model.h), and the trainer (trainer.h). */
#ifndef TFORMER_TRAIN_CONFIG_H
#define TFORMER_TRAIN_CONFIG_H

#include "config.h"
#include "optim.h"
#include "schedule.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------- the trainer's settings */

/* The trainer's settings, whatever the task. */
typedef struct {
    int64_t steps;           /* optimizer steps */
    int batch;               /* sequences per optimizer step: the global batch, over every micro-batch and process */
    int accum;               /* micro-batches per step in each process (gradient accumulation): a micro-batch
                              * holds batch / (processes x accum) sequences (docs/distributed.md) */
    float lr, min_lr;        /* peak learning rate; the cosine's floor */
    int64_t warmup;          /* linear warmup steps */
    tf_schedule schedule;    /* after the warmup */
    float weight_decay, beta1, beta2, grad_clip;
    tf_optim_kind optimizer; /* AdamW (beta1, beta2) or SGD (momentum, nesterov) */
    float momentum;          /* SGD's */
    int nesterov;            /* SGD's Nesterov momentum */
    int64_t eval_every;      /* validation loss every N steps (and at the end) */
    int eval_batches;
    int64_t checkpoint_every;
    int64_t stop_at;         /* 0, or stop after this step with a checkpoint (the schedule stays steps long):
                              * one phase of a run; --resume continues it, with changed settings or not */
    int64_t best_after;      /* best/ is chosen among the evaluations after this step only */
    int keep_checkpoints;    /* the weights of the last N checkpoints stay in run_dir/checkpoints/ */
    int average_last;        /* at the end, their mean (the last N) as the model folder run_dir/averaged/ */
    uint64_t seed;
    tf_precision precision;  /* the training steps' matrix products: float, or bf16 (tf_ctx_set_precision) */
    int zero;                /* ZeRO stage over several processes: 1 shards AdamW's state (each process
                              * keeps and updates 1/N of it), 0 every process holds it all; the
                              * same bits either way, and with one process 1 changes nothing */
} tf_train_config;

/* nanoGPT's character-level Shakespeare settings: 2000 steps, batch 12,
 * lr 1e-3 to 1e-4 (cosine), warmup 100, weight decay 0.1, beta2 0.99, clip 1. */
TF_API tf_train_config tf_train_config_default(void);
/* 0, or -1 with a message naming the field and its allowed range. */
TF_API int tf_train_config_check(const tf_train_config *c);
/* Its field table (config.h): JSON keys are the field names above. */
TF_API extern const tf_field_table tf_train_config_table;

#ifdef __cplusplus
}
#endif
#endif /* TFORMER_TRAIN_CONFIG_H */
