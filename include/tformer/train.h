/* tformer: Optimisation and training. */
#ifndef TFORMER_TRAIN_H
#define TFORMER_TRAIN_H

#include "gpt.h"
#include "safetensors.h"
#include "tokenizer.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------- optimisation */

/* AdamW with decoupled weight decay, applied to parameters of 2+ dims only
 * (no decay on biases and norms). State tensors are named "adam.m.<param>",
 * "adam.v.<param>" in checkpoints. */
typedef struct {
    float beta1, beta2, eps, weight_decay;
} tf_adamw_config;

typedef struct tf_adamw tf_adamw;
TF_API tf_adamw *tf_adamw_new(tf_params *ps, tf_adamw_config cfg);
TF_API void tf_adamw_free(tf_adamw *o);
/* One update with learning rate lr from the parameters' gradients. */
TF_API void tf_adamw_step(tf_adamw *o, float lr);
TF_API int64_t tf_adamw_steps(const tf_adamw *o);
TF_API int tf_adamw_save(const tf_adamw *o, tf_st_writer *w);
TF_API int tf_adamw_load(tf_adamw *o, const tf_st_file *f, int64_t steps);

/* Linear warmup over `warmup` steps, then cosine decay to min_lr at max_steps. */
TF_API float tf_lr_schedule(int64_t step, int64_t warmup, int64_t max_steps, float lr, float min_lr);
/* Scale every gradient so that their global L2 norm is at most max_norm (no
 * clipping when max_norm <= 0); returns the norm before clipping. */
TF_API double tf_clip_grad_norm(tf_params *ps, double max_norm);


/* ---------------------------------------------------------------- training a GPT */

typedef struct {
    tf_gpt_config model;     /* vocab_size is taken from the tokenizer */
    int64_t steps;           /* optimizer steps */
    int batch, accum;        /* sequences per micro-batch; micro-batches per step */
    float lr, min_lr;
    int64_t warmup;          /* linear warmup steps, then cosine decay to min_lr at `steps` */
    float weight_decay, beta1, beta2, grad_clip;
    int64_t eval_every;      /* validation loss every N steps (and at the end) */
    int eval_batches;
    float val_fraction;      /* the last part of the tokens is held out */
    int64_t checkpoint_every;
    uint64_t seed;
} tf_train_config;

/* nanoGPT's character-level Shakespeare settings (4 layers, 4 heads, width 128,
 * context 64, batch 12, 2000 steps, lr 1e-3, warmup 100, dropout 0). */
TF_API tf_train_config tf_train_config_default(void);
/* Overlay the keys of a JSON config file (the field names above; model keys
 * n_layer, n_head, d_model, context, dropout, pos "learned"|"sinusoidal",
 * norm_first, activation "relu"|"gelu"|"gelu_tanh", tied, d_ff, norm_eps). Unknown
 * keys are an error naming them. */
TF_API int tf_train_config_load(tf_train_config *c, const char *path);
TF_API int tf_train_config_check(const tf_train_config *c);

typedef struct {
    int64_t step, steps;     /* step just done (1-based), total */
    float loss, lr;
    double grad_norm;
    double val_loss;         /* NaN unless evaluated at this step */
    double tokens_per_s, elapsed_s, eta_s;
} tf_train_report;

typedef void (*tf_train_report_fn)(void *user, const tf_train_report *r);

/* Train a GPT on the text files and write run_dir: config.json + model.safetensors
 * (a Hugging Face GPT-2 folder), checkpoint.safetensors (weights, AdamW state,
 * step, seed, config), the tokenizer's files, losses.csv and loss.png. The
 * tokenizer is a folder or "char" (the data's characters). With resume, the
 * run continues from run_dir's checkpoint bit for bit. When *stop becomes
 * non-zero the step in progress finishes, a checkpoint is written and the call
 * returns 1. Returns 0 when done, -1 on error. */
TF_API int tf_gpt_train(const tf_train_config *cfg, const char *const *data, int n_data, const char *tokenizer,
                 const char *run_dir, int resume, volatile int *stop, tf_train_report_fn report, void *user);

/* Mean next-token loss of a model on the text of files (windows of the context). */
TF_API int tf_gpt_evaluate(const tf_gpt *m, tf_tokenizer *tok, const char *const *data, int n_data, double *loss,
                    int64_t *tokens);

#ifdef __cplusplus
}
#endif
#endif /* TFORMER_TRAIN_H */
