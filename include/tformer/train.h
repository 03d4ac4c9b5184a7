/* tformer: Optimisation and training. */
#ifndef TFORMER_TRAIN_H
#define TFORMER_TRAIN_H

#include "config.h"
#include "data.h"
#include "bert.h"
#include "images.h"
#include "vit.h"
#include "vivit.h"
#include "swin.h"
#include "gpt.h"
#include "rnn_seq2seq.h"
#include "seq2seq.h"
#include "safetensors.h"
#include "tokenizer.h"
#include "continual.h"

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
/* Scale every gradient so that their global L2 norm is at most max_norm (no
 * clipping when max_norm <= 0), as torch.nn.utils.clip_grad_norm_: by
 * max_norm / (norm + 1e-6) when that is below 1; returns the norm before
 * clipping (in double: torch's float32 norm within 1e-7). */
TF_API double tf_clip_grad_norm(tf_params *ps, double max_norm);


/* ---------------------------------------------------------------- training */

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

/* The language-modelling task: a GPT learning the next token of a text. */
typedef struct {
    tf_gpt_config model;     /* vocab_size 0: the tokenizer's size */
    float val_fraction;      /* the last part of the tokens is held out */
} tf_lm_config;

/* nanoGPT's character-level model (tf_gpt_config_table's defaults), val_fraction 0.1. */
TF_API tf_lm_config tf_lm_config_default(void);
TF_API int tf_lm_config_check(const tf_lm_config *c);
/* val_fraction and the model's rows, flat ("n_layer", not "model.n_layer"):
 * a training config file is one JSON object read with both tables,
 * tf_fields_load({{&tf_train_config_table, &train}, {&tf_lm_config_table, &lm}}, 2, path, 0). */
TF_API extern const tf_field_table tf_lm_config_table;

/* ---------------------------------------------------------------- tasks and the trainer */

#define TF_METRICS_MAX 4

/* Validation metrics as sums: metric i is sum[i] / count[i] (accuracy =
 * correct / examples); their names are the task's. */
typedef struct {
    double sum[TF_METRICS_MAX], count[TF_METRICS_MAX];
} tf_metrics;

/* What the trainer needs of a model family's task: batches, a loss, the
 * parameters, a signature that tells models apart, and a save as a Hugging
 * Face folder. A family implements the table (src/train/task_lm.c is the
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
};

TF_API void tf_task_free(tf_task *t);

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

/* The language-modelling task over text files: the tokenizer (a folder, or
 * "char" for the data's characters) is copied into run_dir (unless resuming),
 * the text tokenized and windowed (tf_lm_loader_new), the GPT initialised
 * from seed. */
TF_API tf_task *tf_lm_task_new(const tf_lm_config *c, const char *const *data, int n_data, const char *tokenizer,
                               const char *run_dir, int resume, uint64_t seed);
TF_API const tf_gpt *tf_lm_task_model(const tf_task *t);

/* tf_lm_task_new + tf_train: a GPT on text files, run_dir a Hugging Face
 * GPT-2 folder with its tokenizer at the end. */
TF_API int tf_gpt_train(const tf_train_config *cfg, const tf_lm_config *lm, const char *const *data, int n_data,
                        const char *tokenizer, const char *run_dir, int resume, volatile int *stop,
                        tf_train_report_fn report, void *user);

/* Mean next-token loss of a model on the text of files (windows of the context). */
TF_API int tf_gpt_evaluate(const tf_gpt *m, tf_tokenizer *tok, const char *const *data, int n_data, double *loss,
                    int64_t *tokens);

/* ---------------------------------------------------------------- BERT pre-training */

/* Masked LM + next-sentence prediction (tf_nsp_loader_new) on a
 * BertForPreTraining; its rows flat beside the trainer's, like tf_lm_config. */
typedef struct {
    tf_bert_config model;   /* vocab_size 0: the tokenizer's size; head and pooler are set */
    float val_fraction;     /* documents held out */
    float mask_prob;        /* 0.15 */
} tf_bert_pretrain_config;
TF_API tf_bert_pretrain_config tf_bert_pretrain_config_default(void);
TF_API extern const tf_field_table tf_bert_pretrain_config_table;
/* The task over text files (documents separated by blank lines, a sentence a
 * line); tokenizer: a WordPiece folder or vocab.txt, copied into run_dir
 * (unless resuming). Validation metrics: mlm_accuracy, nsp_accuracy. */
TF_API tf_task *tf_bert_pretrain_task_new(const tf_bert_pretrain_config *c, const char *const *data, int n_data,
                                          const char *tokenizer, const char *run_dir, int resume, uint64_t seed);
TF_API const tf_bert *tf_bert_pretrain_task_model(const tf_task *t);

/* ---------------------------------------------------------------- ListOps (docs/long-sequences.md) */

/* A BERT encoder (BertForSequenceClassification, 10 classes, its attention
 * kind from model.attention) classifying ListOps expressions generated from
 * listops_seed (tf_listops_loader_new); every batch is model.context long, or
 * with bucket > 0 as long as its longest row rounded up to a multiple of it.
 * Self-pretraining (objective TF_LISTOPS_MLM): BertForMaskedLM on the same
 * expressions, a share mask_prob of their tokens masked; a classifier whose
 * init names such a run folder starts from its weights (the encoder: the
 * pooler and classifier are new). With sep, every expression is followed by
 * [SEP] and the vocabulary is TF_LISTOPS_SEP + 1 tokens; with drop_end, the
 * "]" tokens are left out (LRA's inputs). */
typedef enum { TF_LISTOPS_CLASSIFY, TF_LISTOPS_MLM } tf_listops_objective;
typedef struct {
    tf_bert_config model;  /* vocab, head, labels and pooler are set by the task */
    int min_len, max_len, max_depth, max_args;
    int n_train, n_valid;
    uint64_t listops_seed;
    int bucket;            /* 0, or length bucketing (tf_listops_loader_new) */
    int sep;               /* [SEP] after each expression (tf_listops_opts.sep); the vocabulary then has it */
    int drop_end;          /* the "]" tokens left out, as LRA's input pipeline does (tf_listops_opts.drop_end) */
    tf_listops_objective objective;
    float mask_prob;       /* TF_LISTOPS_MLM: the share of an expression's tokens masked */
    char init[1024];       /* "", or a TF_LISTOPS_MLM run folder whose weights start a classifier */
} tf_listops_task_config;
TF_API tf_listops_task_config tf_listops_task_config_default(void);
TF_API extern const tf_field_table tf_listops_task_config_table;
/* Validation metric: accuracy. The run folder (and best/) holds the model as
 * a Hugging Face folder and these settings as TF_LISTOPS_SETTINGS. */
TF_API tf_task *tf_listops_task_new(const tf_listops_task_config *c, const char *run_dir, uint64_t seed);
/* The expressions a task config describes (its generator's and the batches' settings). */
TF_API tf_listops_opts tf_listops_task_opts(const tf_listops_task_config *c);
#define TF_LISTOPS_SETTINGS "listops.json"
/* A run folder's settings (DIR/listops.json); -1 with a message naming the
 * file when it is missing or wrong. */
TF_API int tf_listops_settings_load(const char *dir, tf_listops_task_config *c);
/* Accuracy of a ListOps classifier on examples first..first+n-1 of subset (2:
 * the test set, drawn apart from training and validation; tf_listops_example), in
 * batches of `batch` padded to the model's context (bucket 0) or to their
 * longest row rounded up to a multiple of bucket: the correct answers in
 * *hits; when not NULL, the logits (n,10) and counts by (true, predicted)
 * answer in confusion[10*10]. o->sep must be the model's own (its vocabulary
 * has [SEP] or not). 0, or -1 with a message. */
TF_API int tf_listops_score(const tf_bert *m, const tf_listops_opts *o, int subset, int64_t first, int64_t n,
                            int batch, int bucket, float *logits, int64_t *hits, int64_t *confusion);


/* ---------------------------------------------------------------- translation (docs/translation.md) */

/* The encoder-decoder on line-aligned source and target files. */
typedef struct {
    tf_seq2seq_config model;   /* src_vocab / tgt_vocab 0: the tokenizer's size + 3 (padding, BOS, EOS) */
    int max_tokens;            /* a batch's padded tokens at most (rows x longest row): batches by token count */
    int max_len;               /* ids per sentence at most (tokens + EOS); longer ones are an error */
    float label_smoothing;     /* the paper: 0.1 */
    int val_bleu;              /* validation lines translated (greedy) for BLEU at each evaluation; 0: none.
                                * With BLEU, run_dir/best/ is the model of highest validation BLEU */
} tf_seq2seq_task_config;
TF_API tf_seq2seq_task_config tf_seq2seq_task_config_default(void);
TF_API extern const tf_field_table tf_seq2seq_task_config_table;
/* The task: tokenizer (a folder, or "char": the training files' characters) copied
 * into run_dir unless resuming, used for both languages (a joint vocabulary);
 * batches from tf_parallel_loader_new (key: the trainer's step * 1024 + micro, read
 * with the accumulation count accum: the micro-batches of a step over every
 * process, processes x the trainer's accum). Validation loss: the mean over the validation
 * batches the trainer asks for (tf_seq2seq_task_val_batches: one pass). */
TF_API tf_task *tf_seq2seq_task_new(const tf_seq2seq_task_config *c, const char *src, const char *tgt,
                                    const char *valid_src, const char *valid_tgt, const char *tokenizer,
                                    const char *run_dir, int resume, int accum, uint64_t seed);
TF_API int64_t tf_seq2seq_task_val_batches(const tf_task *t);
TF_API const tf_seq2seq *tf_seq2seq_task_model(const tf_task *t);

/* The RNN baseline (rnn_seq2seq.h) on the same task: the same settings, data,
 * batches and folder (tf_seq2seq_task_val_batches serves its task too). */
typedef struct {
    tf_rnn_seq2seq_config model; /* src_vocab / tgt_vocab 0: the tokenizer's size + 3 (padding, BOS, EOS) */
    int max_tokens, max_len;
    float label_smoothing;
    int val_bleu;
} tf_rnn_seq2seq_task_config;
TF_API tf_rnn_seq2seq_task_config tf_rnn_seq2seq_task_config_default(void);
TF_API extern const tf_field_table tf_rnn_seq2seq_task_config_table;
TF_API tf_task *tf_rnn_seq2seq_task_new(const tf_rnn_seq2seq_task_config *c, const char *src, const char *tgt,
                                        const char *valid_src, const char *valid_tgt, const char *tokenizer,
                                        const char *run_dir, int resume, int accum, uint64_t seed);
TF_API const tf_rnn_seq2seq *tf_rnn_seq2seq_task_model(const tf_task *t);

/* ---------------------------------------------------------------- image classification (docs/vision.md) */

/* Image classification's data handling and DeiT's recipe, shared by the
 * ViT and Swin tasks: its rows flat beside the model's and the trainer's. */
typedef struct {
    float val_fraction;      /* without a validation set: the last part of the training images */
    float label_smoothing;   /* 0.1 (DeiT) */
    int shift;               /* training images moved by up to this many pixels (0: none) */
    float hflip;             /* training images mirrored left-right with this probability (0: none) */
    char label_names[2048];  /* comma-separated class names for the folder's id2label; "": LABEL_<i> */
    /* DeiT's recipe (docs/vision.md), each off by default; DeiT's value in brackets */
    int randaug_ops;         /* RandAugment's ops per image (2); 0: none */
    float randaug_magnitude; /* (9) */
    float randaug_mstd;      /* (0.5) */
    float mixup, cutmix;     /* Beta(alpha, alpha) of mixup (0.8) and cutmix (1); 0: none */
    float mix_prob;          /* a batch is mixed with this probability (1) */
    float switch_prob;       /* with both: cutmix rather than mixup (0.5) */
    float erase_prob;        /* random erasing (0.25) */
    tf_erase_mode erase_mode;/* its values (pixel) */
    int repeats;             /* repeated augmentation (3); 1: none */
    float ema_decay;         /* EMA of the weights, evaluated and saved as the model (0.99996); 0: none */
} tf_image_recipe;
TF_API extern const tf_field_table tf_image_recipe_table;

/* A ViTForImageClassification on labelled images: cross-entropy with label
 * smoothing, validation accuracy. */
typedef struct {
    tf_vit_config model;     /* channels, image_size and n_labels must fit the images */
    tf_image_recipe recipe;
} tf_vit_task_config;
TF_API tf_vit_task_config tf_vit_task_config_default(void);
TF_API extern const tf_field_table tf_vit_task_config_table;
/* The task: *train (and *valid, or NULL: the last val_fraction of train held
 * out) moved into it (the caller's structs are emptied, also on failure); the
 * model initialised from seed; validation metric "accuracy" (run_dir/best/:
 * the highest). The images must be square, of the model's channels and size,
 * labelled in [0,n_labels). */
TF_API tf_task *tf_vit_task_new(const tf_vit_task_config *c, tf_images *train, tf_images *valid, const char *run_dir,
                                uint64_t seed);
TF_API const tf_vit *tf_vit_task_model(const tf_task *t);
/* Images of a subset (of a ViT or a Swin task). */
TF_API int64_t tf_vit_task_images(const tf_task *t, tf_subset subset);

/* A SwinForImageClassification on labelled images: the same task as ViT's. */
typedef struct {
    tf_swin_config model;    /* channels, image_size and n_labels must fit the images */
    tf_image_recipe recipe;
} tf_swin_task_config;
TF_API tf_swin_task_config tf_swin_task_config_default(void);
TF_API extern const tf_field_table tf_swin_task_config_table;
TF_API tf_task *tf_swin_task_new(const tf_swin_task_config *c, tf_images *train, tf_images *valid, const char *run_dir,
                                 uint64_t seed);
TF_API const tf_swin *tf_swin_task_model(const tf_task *t);

/* ---------------------------------------------------------------- video classification (docs/video.md) */

/* A ViViT (VivitForVideoClassification, any model kind and embedding) on
 * moving-object clips made from labelled images (tf_clips_loader_new): the
 * clips' canvas and frames are the model's image_size and num_frames. */
typedef struct {
    tf_vivit_config model;   /* n_labels must be the clip labels' classes */
    float val_fraction;      /* the last part of the images, held out for the validation clips */
    int val_clips;           /* validation clips */
    float label_smoothing;
    int object_size;         /* the image drawn at this size; 0: its own */
    float speed;             /* pixels per frame */
    tf_clip_label labels;    /* direction, or class and direction */
    int shuffle_frames;      /* the control: each clip's frames in a random order */
} tf_vivit_task_config;
TF_API tf_vivit_task_config tf_vivit_task_config_default(void);
TF_API extern const tf_field_table tf_vivit_task_config_table;
/* The task: *images (labelled, one channel or more) moved into it (emptied,
 * also on failure), the last val_fraction held out; validation metric
 * "accuracy". */
TF_API tf_task *tf_vivit_task_new(const tf_vivit_task_config *c, tf_images *images, const char *run_dir, uint64_t seed);
TF_API const tf_vivit *tf_vivit_task_model(const tf_task *t);
TF_API int64_t tf_vivit_task_clips(const tf_task *t, tf_subset subset); /* validation: val_clips; training: 0 */

/* ---------------------------------------------------------------- ImageGPT (docs/vision.md) */

/* A GPT on images as raster-order colour tokens (tf_image_tokens): its
 * vocabulary the clusters plus the start token, its context the pixels;
 * next-pixel cross-entropy; validation metric "bpd", bits per pixel (the
 * mean negative log-likelihood of each pixel's token in nats / ln 2; a
 * grey pixel is one dimension). Saved as a GPT-2 folder with image_tokens.json. */
typedef struct {
    tf_gpt_config model;   /* vocab_size (0: n_clusters + 1) and context (set to the pixels) follow the images */
    float val_fraction;    /* without a validation set: the last part of the training images */
    int n_clusters;        /* k-means colour clusters (16 for grey) */
    int image_size;        /* images resized to image_size x image_size first (box filter); 0: as they are */
    int kmeans_iters;      /* Lloyd rounds at most */
    int64_t kmeans_pixels; /* pixels of the training set the clusters are fitted on (drawn under the seed); 0: all */
    int val_images;        /* validation images evaluated (the first ones); 0: all */
} tf_imagegpt_task_config;
TF_API tf_imagegpt_task_config tf_imagegpt_task_config_default(void);
TF_API extern const tf_field_table tf_imagegpt_task_config_table;
/* The task: *train (and *valid, or NULL: the last val_fraction of train held
 * out) moved into it as with tf_vit_task_new; clusters fitted on the
 * training images under seed; the GPT initialised from seed. */
TF_API tf_task *tf_imagegpt_task_new(const tf_imagegpt_task_config *c, tf_images *train, tf_images *valid,
                                     const char *run_dir, uint64_t seed);
TF_API const tf_gpt *tf_imagegpt_task_model(const tf_task *t);
TF_API const tf_image_tokens *tf_imagegpt_task_tokens(const tf_task *t);
/* Images of a subset (validation: those evaluated). */
TF_API int64_t tf_imagegpt_task_images(const tf_task *t, tf_subset subset);

/* ---------------------------------------------------------------- BERT fine-tuning (docs/bert.md) */

/* The fine-tuning task's settings (its field table: --task, --max-len, ...). */
typedef struct {
    tf_finetune_kind task; /* classify, pairs, tag, span */
    int max_len;           /* ids per example, [CLS]/[SEP] included; 0: the model's context */
    int max_answer;        /* span: the longest answer predicted, in pieces */
} tf_finetune_config;
TF_API tf_finetune_config tf_finetune_config_default(void);
TF_API extern const tf_field_table tf_finetune_config_table;

/* Fine-tune the pre-trained BERT folder model_dir (its tokenizer, a
 * WordPiece vocab.txt, is copied into run_dir) under the task's head:
 * BertForSequenceClassification (classify, pairs; labels = the sorted labels
 * of the training file, saved as id2label), BertForTokenClassification
 * (tag), BertForQuestionAnswering (span); the head initialised from seed.
 * The loss is Hugging Face's for the head; validation metrics: accuracy
 * (classify, pairs), token_accuracy (tag: first pieces), exact_match (span). */
TF_API tf_task *tf_finetune_task_new(const tf_finetune_config *c, const char *model_dir, const char *train,
                                     const char *valid, const char *run_dir, int resume, uint64_t seed);
TF_API const tf_bert *tf_finetune_task_model(const tf_task *t);
/* The encoded validation set (for tf_finetune_predict / tf_finetune_score) and the training set. */
TF_API const tf_finetune_data *tf_finetune_task_data(const tf_task *t, tf_subset subset);

/* One prediction. */
typedef struct {
    int label;        /* classify, pairs: the likeliest label */
    float prob;       /* its softmax probability */
    int *tags;        /* tag: n_tags = the sentence's words; -1 for a word cut away */
    int n_tags;
    int start, end;   /* span: the best span's pieces (start <= end < start + max_answer, in the context) */
    size_t answer_off, answer_len; /* span: its bytes in the context (0, 0 when none) */
} tf_finetune_prediction;

/* Predictions for every example of d (n = d->n), `batch` at a time, in order. */
TF_API int tf_finetune_predict(const tf_bert *m, const tf_finetune_data *d, int batch, int max_answer,
                               tf_finetune_prediction *out);
TF_API void tf_finetune_predictions_free(tf_finetune_prediction *p, int n);

/* Scores of predictions against a labelled set. */
typedef struct {
    tf_finetune_kind kind;
    int n_labels;
    int64_t *confusion;            /* (n_labels, n_labels): [gold][predicted]; tag: words (first pieces) */
    double *precision, *recall, *f1; /* (n_labels) each */
    int64_t *support;              /* (n_labels): gold count */
    double accuracy;               /* classify, pairs: examples; tag: token (word) accuracy */
    double macro_f1;               /* the mean F1 over labels with support or predictions */
    double exact_match, span_f1;   /* span: start and end both right; F1 of the pieces' overlap */
    int64_t n, lost;               /* examples (tag: words) scored; tag: words cut away (counted wrong) */
} tf_finetune_metrics;
TF_API int tf_finetune_score(const tf_finetune_data *gold, const tf_finetune_prediction *p, int n_labels,
                             tf_finetune_metrics *out);
TF_API void tf_finetune_metrics_free(tf_finetune_metrics *m);
/* metrics.json: the task, counts, the metrics, per label precision / recall / F1 / support, the confusion matrix. */
TF_API int tf_finetune_metrics_save(const tf_finetune_metrics *m, const char *const *labels, const char *path);
/* A confusion matrix as a PNG (cairo): label names on the axes, counts in
 * the cells, a colour scale and a title. */
TF_API int tf_plot_confusion(const char *path, const int64_t *confusion, const char *const *labels, int n,
                             const char *title);

/* ---------------------------------------------------------------- stream classification */

/* A Continual Transformer encoder classifying each token of a stream (task_continual.c):
 * one data file a class; the encoder's rows flat beside these. */
typedef struct {
    tf_coenc_config model;   /* vocab_size, n_labels 0: the tokenizer's size, the number of files */
    float val_fraction;      /* the last part of the stream is held out */
} tf_costream_config;
TF_API extern const tf_field_table tf_costream_config_table;
TF_API tf_costream_config tf_costream_config_default(void);
/* Lines of the data files (file i: class i) shuffled by seed into one
 * stream; windows of model.window tokens name their last token's class. */
TF_API tf_task *tf_costream_task_new(const tf_costream_config *c, const char *const *data, int n_data,
                                     const char *tokenizer, const char *run_dir, int resume, uint64_t seed);

#ifdef __cplusplus
}
#endif
#endif /* TFORMER_TRAIN_H */
