/* hf-run's BERT family: BertModel and the five BertFor* heads (RoBERTa's,
 * BigBird's and RoFormer's classes too) through tf_bert_load_hf / tf_bert_run. */
#include <math.h>

#include "../util/util.h"
#include "hf_run.h"
#include "tformer/bert.h"

static void *bert_load(const char *dir, const char *architecture) {
    (void)architecture; /* config.json's architectures[0] picks the head */
    return tf_bert_load_hf(dir, NULL);
}

static void bert_free(void *model) { tf_bert_free(model); }

/* PyTorch's mean over no labels is 0/0: every label ignored gives NaN. */
static int all_ignored(const tf_tensor *t, int32_t ignore) {
    if (!t || t->dtype != TF_DTYPE_I32) return 0;
    for (int64_t i = 0; i < tf_numel(t); i++)
        if (tf_i32(t)[i] != ignore) return 0;
    return 1;
}

/* Positions outside [0,T) are clamped to T and ignored (Hugging Face). */
static int all_outside(const tf_tensor *t, int64_t T) {
    for (int64_t i = 0; t && i < tf_numel(t); i++)
        if (tf_i32(t)[i] >= 0 && tf_i32(t)[i] < T) return 0;
    return t != NULL;
}

static int no_labels(const hf_job *job, const tf_bert *m, int64_t T) {
    if (m->cfg.head == TF_BERT_QA)
        return all_outside(hf_get(&job->in, "start_positions"), T) || all_outside(hf_get(&job->in, "end_positions"), T);
    return all_ignored(hf_get(&job->in, "labels"), -100);
}

static int bert_run(hf_job *job) {
    const tf_bert *m = job->model;
    tf_tensor *ids = hf_get(&job->in, "input_ids");
    tf_bert_inputs in = {
        .input_ids = ids,
        .attention_mask = hf_get(&job->in, "attention_mask"),
        .token_type_ids = hf_get(&job->in, "token_type_ids"),
        .position_ids = hf_get(&job->in, "position_ids"),
        .labels = hf_get(&job->in, "labels"),
        .next_sentence_label = hf_get(&job->in, "next_sentence_label"),
        .start_positions = hf_get(&job->in, "start_positions"),
        .end_positions = hf_get(&job->in, "end_positions"),
        .rand_attn = hf_get(&job->in, "rand_attn"),
    };
    tf_bert_outputs out;
    if (tf_bert_run(job->ctx, m, &in, &out)) {
        char msg[512];
        snprintf(msg, sizeof msg, "%s", tf_error());
        return tf_set_error("%s: %s", job->input_path, msg);
    }
    if (out.loss && no_labels(job, m, ids->shape[1])) tf_f32(out.loss)[0] = NAN;
    int pre = m->cfg.head == TF_BERT_PRETRAINING;
    return hf_put(&job->out, "last_hidden_state", out.last_hidden_state) ||
           hf_put(&job->out, "pooler_output", out.pooler_output) ||
           hf_put(&job->out, pre ? "prediction_logits" : "logits", out.logits) ||
           hf_put(&job->out, "seq_relationship_logits", out.seq_relationship_logits) ||
           hf_put(&job->out, "start_logits", out.start_logits) || hf_put(&job->out, "end_logits", out.end_logits) ||
           hf_put(&job->out, "loss", out.loss);
}

const hf_family hf_bert_family = {bert_load, bert_free, bert_run};
