/* tformer: Optimizers (AdamW, SGD) behind one type, and gradient clipping. */
#ifndef TFORMER_OPTIM_H
#define TFORMER_OPTIM_H

#include "nn.h"
#include "safetensors.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------- optimisation */

/* One optimizer type, whatever the algorithm: tf_adamw_new and tf_sgd_new make a tf_optim,
 * and tf_optim_step, _steps, _save, _load and _free serve either. */
typedef struct tf_optim tf_optim;

/* AdamW with decoupled weight decay, applied to parameters of 2+ dims only
 * (no decay on biases and norms). State tensors are named "adam.m.<param>",
 * "adam.v.<param>" in checkpoints. */
typedef struct {
    float beta1, beta2, eps, weight_decay;
} tf_adamw_config;

TF_API tf_optim *tf_adamw_new(tf_params *ps, tf_adamw_config cfg);
TF_API void tf_optim_free(tf_optim *o);
/* One update with learning rate lr from the parameters' gradients. */
TF_API void tf_optim_step(tf_optim *o, float lr);
TF_API int64_t tf_optim_steps(const tf_optim *o);
TF_API int tf_optim_save(const tf_optim *o, tf_st_writer *w);
TF_API int tf_optim_load(tf_optim *o, const tf_st_file *f, int64_t steps);

/* SGD as torch.optim.SGD defines it (dampening 0): d = g + weight_decay w
 * (the L2 term, on parameters of 2+ dims only, as AdamW's decay), with
 * momentum b = d at the first step, then b = momentum b + d; d = b, or
 * d + momentum b with nesterov; w -= lr d. The same object and calls as
 * AdamW (tf_optim_step, _save, _load, _free); its state, the momentum buffer
 * (none when momentum is 0), is named "sgd.momentum.<param>" in checkpoints. */
typedef struct {
    float momentum, weight_decay;
    int nesterov; /* needs momentum > 0 (torch's rule) */
} tf_sgd_config;
TF_API tf_optim *tf_sgd_new(tf_params *ps, tf_sgd_config cfg);

/* The trainer's optimizer (tf_train_config's optimizer). */
typedef enum { TF_OPTIM_ADAMW, TF_OPTIM_SGD } tf_optim_kind;

/* Scale every gradient so that their global L2 norm is at most max_norm (no
 * clipping when max_norm <= 0), as torch.nn.utils.clip_grad_norm_: by
 * max_norm / (norm + 1e-6) when that is below 1; returns the norm before
 * clipping (in double: torch's float32 norm within 1e-7). */
TF_API double tf_clip_grad_norm(tf_params *ps, double max_norm);

#ifdef __cplusplus
}
#endif
#endif /* TFORMER_OPTIM_H */
