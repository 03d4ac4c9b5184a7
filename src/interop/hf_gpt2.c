/* hf-run's GPT-2 family: GPT2Model and GPT2LMHeadModel folders, and
 * ImageGPT's (ImageGPTModel, ImageGPTForCausalImageModeling: the same
 * network with RMS norms and a head without the start token's logit),
 * through tf_gpt_load_hf / tf_gpt_run. */
#include <math.h>

#include "../util/util.h"
#include "hf_run.h"
#include "tformer/gpt.h"

static void *gpt2_load(const char *dir, const char *architecture) {
    (void)architecture; /* the folder's tensors tell a body from a model with a head */
    return tf_gpt_load_hf(dir); /* which refuses GPT-2 settings it does not compute */
}

static void gpt2_free(void *model) { tf_gpt_free(model); }

/* Hugging Face shifts labels inside the model: the loss is the cross-entropy
 * of logits[:, :-1] against labels[:, 1:], -100 ignored. tf_gpt_run takes the
 * next token at each position (-1 ignored): targets[:, t] = labels[:, t+1]. */
static tf_tensor *shift_labels(tf_ctx *ctx, const tf_tensor *labels) {
    int64_t B = labels->shape[0], T = labels->shape[1];
    tf_tensor *t = tf_tensor_new(ctx, TF_DTYPE_I32, 2, labels->shape, 0);  // (B,T)
    if (!t) return NULL;
    for (int64_t b = 0; b < B; b++)
        for (int64_t i = 0; i < T; i++) {
            int32_t v = i + 1 < T ? tf_i32(labels)[b * T + i + 1] : -100;
            tf_i32(t)[b * T + i] = v == -100 ? -1 : v;
        }
    return t;
}

/* transformers 5.x called with use_cache=False reads position_ids that do not
 * count up by one, given without an attention_mask, as sequences packed in a
 * row (attention within each); its default call and 4.x attend across the
 * whole row, as tformer does. */
static void warn_packed(const hf_job *job) {
    const tf_tensor *pos = hf_get(&job->in, "position_ids");
    if (!job->log || !pos || hf_get(&job->in, "attention_mask")) return;
    int64_t B = pos->shape[0], T = pos->shape[1];
    for (int64_t b = 0; b < B; b++)
        for (int64_t t = 1; t < T; t++)
            if (tf_i32(pos)[b * T + t] != tf_i32(pos)[b * T + t - 1] + 1) {
                fprintf(job->log, "warning: %s: position_ids[%lld,%lld] does not continue its row: attending across "
                        "the row, as transformers' default call (5.x with use_cache=False reads packed sequences)\n",
                        job->input_path, (long long)b, (long long)t);
                return;
            }
}

static int no_targets(const tf_tensor *targets) {
    for (int64_t i = 0; i < tf_numel(targets); i++)
        if (tf_i32(targets)[i] != -1) return 0;
    return 1;
}

static int gpt2_run(hf_job *job) {
    const tf_gpt *m = job->model;
    int V = m->cfg.vocab_size, P = m->cfg.context, n_out = V - !m->cfg.predict_last; /* ImageGPT: no start-token logit */
    tf_tensor *ids = hf_get(&job->in, "input_ids"), *labels = hf_get(&job->in, "labels");
    if (ids->shape[1] > P)
        return tf_set_error("%s: input_ids has %lld positions; the model's n_positions is %d", job->input_path,
                            (long long)ids->shape[1], P);
    if (hf_check_range(job, "input_ids", 0, V, -1, "ids must be below vocab_size") ||
        hf_check_range(job, "token_type_ids", 0, V, -1, "GPT-2 embeds them with the token table: below vocab_size") ||
        hf_check_range(job, "position_ids", 0, P, -1, "positions must be below n_positions") ||
        hf_check_range(job, "labels", 0, n_out, -100,
                       n_out < V ? "labels must be below vocab_size - 1 (the start token is never a label), or -100"
                                 : "labels must be below vocab_size, or -100 (ignored)"))
        return -1;
    warn_packed(job);
    tf_gpt_inputs in = {
        .input_ids = ids,
        .attention_mask = hf_get(&job->in, "attention_mask"),
        .position_ids = hf_get(&job->in, "position_ids"),
        .token_type_ids = hf_get(&job->in, "token_type_ids"),
        .targets = labels ? shift_labels(job->ctx, labels) : NULL,
    };
    tf_gpt_outputs out;
    if ((labels && !in.targets) || tf_gpt_run(job->ctx, m, &in, &out)) return -1;
    if (out.loss && no_targets(in.targets)) tf_f32(out.loss)[0] = NAN; /* PyTorch's mean over no labels: 0/0 */
    return hf_put(&job->out, "last_hidden_state", out.last_hidden_state) || hf_put(&job->out, "logits", out.logits) ||
           hf_put(&job->out, "loss", out.loss);
}

const hf_family hf_gpt2_family = {gpt2_load, gpt2_free, gpt2_run};
