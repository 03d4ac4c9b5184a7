/* tformer: Learning-rate schedules. */
#ifndef TFORMER_SCHEDULE_H
#define TFORMER_SCHEDULE_H

#include "core.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Learning-rate schedules: each rises linearly to lr over `warmup` steps
 * (lr * s / warmup at the 1-based step s), then (docs/gpt.md: tested against
 * transformers.optimization's): */
typedef enum {
    TF_SCHEDULE_COSINE,       /* cosine decay from lr at the 0-based step warmup to min_lr at the
                               * 0-based step max_steps, one past a run's last (build-nanogpt's get_lr) */
    TF_SCHEDULE_INVERSE_SQRT, /* lr * sqrt(warmup / s): the Transformer paper's
                               * d_model^-0.5 * min(s^-0.5, s * warmup^-1.5), scaled to peak at lr */
    TF_SCHEDULE_CONSTANT      /* lr */
} tf_schedule;

/* The learning rate of the 0-based step. */
TF_API float tf_lr_schedule(tf_schedule kind, int64_t step, int64_t warmup, int64_t max_steps, float lr, float min_lr);

#ifdef __cplusplus
}
#endif
#endif /* TFORMER_SCHEDULE_H */
