/* tf_gpt_train (trainer.h): a GPT trained on text files in one call, the
 * language-model task (src/models/gpt/gpt_task.c) made on rank 0 first
 * and given to the trainer. */
#include "tformer/dist.h"
#include "tformer/gpt.h"
#include "tformer/trainer.h"

typedef struct {
    const tf_lm_config *c;
    const char *const *data;
    int n_data;
    const char *tokenizer, *run_dir;
    int resume;
    uint64_t seed;
} lm_args;

static tf_task *make_lm(void *arg) {
    const lm_args *a = arg;
    return tf_lm_task_new(a->c, a->data, a->n_data, a->tokenizer, a->run_dir, a->resume, a->seed);
}

int tf_gpt_train(const tf_train_config *cfg, const tf_lm_config *lm, const char *const *data, int n_data,
                 const char *tokenizer, const char *run_dir, int resume, volatile int *stop, tf_train_report_fn report,
                 void *user) {
    lm_args args = {lm, data, n_data, tokenizer, run_dir, resume, cfg->seed};
    if (tf_dist_agree(tf_train_config_check(cfg))) return -1;
    tf_task *t = tf_dist_task_new(make_lm, &args, run_dir);
    if (!t) return -1;
    int rc = tf_train(cfg, t, run_dir, resume, stop, report, user);
    tf_task_free(t);
    return rc;
}
