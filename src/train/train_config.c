/* The training configuration: the trainer's settings and the language-
 * modelling task's, each one field table (defaults: nanoGPT's character-level
 * Shakespeare run). */
#include "tformer/trainer.h"

static const char *const SCHEDULES[] = {"cosine", "inverse_sqrt", "constant", NULL};
static const char *const OPTIMIZERS[] = {"adamw", "sgd", NULL};
static const char *const PRECISIONS[] = {"f32", "bf16", NULL};
_Static_assert(sizeof(tf_schedule) == sizeof(int) && sizeof(tf_optim_kind) == sizeof(int), "enum rows store an int");
_Static_assert(TF_OPTIM_SGD == 1 && TF_PRECISION_BF16 == 1 && sizeof(tf_precision) == sizeof(int), "choices by enum value");

#define R(m, type, def, range, help) TF_FIELD_ROW(tf_train_config, m, type, #m, def, range, NULL, help, 0, NULL)
/* rows a resume may change (steps too, unless the schedule is cosine: resume.c) */
#define FREE(m, type, def, range, help) \
    TF_FIELD_ROW(tf_train_config, m, type, #m, def, range, NULL, help, TF_FIELD_RESUMABLE, NULL)
static const tf_field TRAIN_ROWS[] = {
    FREE(steps, TF_FIELD_INT64, "2000", "[1,inf)", "optimizer steps"),
    R(batch, TF_FIELD_INT, "12", "[1,65536]", "sequences per step: the global batch, over every micro-batch and process"),
    R(accum, TF_FIELD_INT, "1", "[1,1024]",
      "micro-batches per step in each process (gradient accumulation): each holds batch / (processes x accum)"),
    R(lr, TF_FIELD_FLOAT, "1e-3", "(0,inf)", "peak learning rate"),
    R(min_lr, TF_FIELD_FLOAT, "1e-4", "[0,inf)", "the cosine schedule's final learning rate"),
    TF_FIELD_ROW(tf_train_config, schedule, TF_FIELD_ENUM, "schedule", "cosine", NULL, SCHEDULES,
                 "after the warmup: cosine to min_lr, lr*sqrt(warmup/step), or constant", 0, NULL),
    R(warmup, TF_FIELD_INT64, "100", "[0,inf)", "steps of linear warmup"),
    TF_FIELD_ROW(tf_train_config, optimizer, TF_FIELD_ENUM, "optimizer", "adamw", NULL, OPTIMIZERS,
                 "AdamW (beta1, beta2), or SGD as torch.optim.SGD (momentum, nesterov)", 0, NULL),
    R(weight_decay, TF_FIELD_FLOAT, "0.1", "[0,inf)",
      "matrices only: AdamW's decoupled weight decay; SGD's L2 term added to the gradient"),
    R(beta1, TF_FIELD_FLOAT, "0.9", "[0,1)", "AdamW's beta1"),
    R(beta2, TF_FIELD_FLOAT, "0.99", "[0,1)", "AdamW's beta2"),
    R(momentum, TF_FIELD_FLOAT, "0.9", "[0,1)", "SGD's momentum (0: plain SGD)"),
    R(nesterov, TF_FIELD_BOOL, "false", NULL, "SGD's Nesterov momentum (needs momentum > 0)"),
    R(grad_clip, TF_FIELD_FLOAT, "1.0", "[0,inf)", "largest global gradient norm; 0: no clipping"),
    R(seed, TF_FIELD_UINT64, "1337", NULL, "initial weights, batches and dropout"),
    TF_FIELD_ROW(tf_train_config, precision, TF_FIELD_ENUM, "precision", "f32", NULL, PRECISIONS,
                 "the training steps' matrix products: f32, or bf16 (factors rounded to bfloat16, sums and weights "
                 "float) on AMX or AVX512-BF16 where the CPU has them, float elsewhere",
                 TF_FIELD_RESUMABLE, NULL),
    FREE(eval_every, TF_FIELD_INT64, "250", "[1,inf)", "validation loss every N steps (and at the end)"),
    FREE(eval_batches, TF_FIELD_INT, "200", "[1,inf)", "validation micro-batches per evaluation"),
    FREE(checkpoint_every, TF_FIELD_INT64, "500", "[1,inf)", "a checkpoint every N steps (and at the end)"),
    FREE(stop_at, TF_FIELD_INT64, "0", "[0,inf)",
         "stop after this step with a checkpoint, the schedule still steps long (one phase of a run: continue with "
         "--resume, e.g. with other augmentations and --allow-changes); 0: run to the end"),
    FREE(best_after, TF_FIELD_INT64, "0", "[0,inf)",
         "best/ is chosen among the evaluations after this step only (a later phase on other data, whose validation "
         "figures the earlier ones do not compare with); 0: every evaluation"),
    FREE(keep_checkpoints, TF_FIELD_INT, "0", "[0,1000]", "the weights of the last N checkpoints kept in checkpoints/"),
    FREE(average_last, TF_FIELD_INT, "0", "[0,1000]",
      "at the end, the mean of the last N checkpoints' weights as the model folder averaged/ (keeps N)"),
    FREE(zero, TF_FIELD_INT, "0", "[0,1]",
         "ZeRO stage over several processes: 1 shards AdamW's state over them (the same bits); 0 every process "
         "holds it all; with one process 1 changes nothing"),
};
#undef R
#undef FREE

static const tf_field LM_ROWS[] = {
    TF_FIELD_ROW(tf_lm_config, val_fraction, TF_FIELD_FLOAT, "val_fraction", "0.1", "(0,1)", NULL,
                 "the last part of the tokens, held out for validation", 0, NULL),
    TF_FIELD_SUB(tf_lm_config, model, tf_gpt_config_table),
};

#define COUNT(rows) (int)(sizeof rows / sizeof rows[0])
const tf_field_table tf_train_config_table = {"trainer settings", TRAIN_ROWS, COUNT(TRAIN_ROWS)};
const tf_field_table tf_lm_config_table = {"language-model task", LM_ROWS, COUNT(LM_ROWS)};
#undef COUNT

/* Defaults cannot fail to parse: tests/test_config.c parses every table's. */
static void fill(const tf_field_table *t, void *obj) {
    tf_fields f = {t, obj};
    tf_fields_defaults(&f, 1);
}

static int check(const tf_field_table *t, const void *obj) {
    tf_fields f = {t, (void *)obj};
    return tf_fields_check(&f, 1);
}

tf_train_config tf_train_config_default(void) {
    tf_train_config c = {0};
    fill(&tf_train_config_table, &c);
    return c;
}

int tf_train_config_check(const tf_train_config *c) {
    if (check(&tf_train_config_table, c)) return -1;
    if (c->optimizer == TF_OPTIM_SGD && c->nesterov && c->momentum <= 0.0f)
        return tf_set_error("nesterov needs momentum > 0 (torch.optim.SGD's rule)");
    if (c->schedule == TF_SCHEDULE_COSINE && c->min_lr > c->lr)
        return tf_set_error("min_lr %g is above lr %g: the cosine schedule would raise the learning rate", c->min_lr,
                            c->lr);
    return 0;
}

tf_lm_config tf_lm_config_default(void) {
    tf_lm_config c = {0};
    fill(&tf_lm_config_table, &c);
    return c;
}

int tf_lm_config_check(const tf_lm_config *c) {
    return check(&tf_lm_config_table, c) || tf_gpt_config_check(&c->model) ? -1 : 0;
}
