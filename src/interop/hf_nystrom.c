/* hf-run's Nyströmformer family: NystromformerModel and the
 * NystromformerFor* heads through tf_nystrom_load_hf / tf_nystrom_run. */
#include <math.h>

#include "hf_run.h"
#include "tformer/nystrom.h"

static void *nystrom_load(const char *dir, const char *architecture) {
    (void)architecture; /* config.json's architectures[0] picks the head */
    return tf_nystrom_load_hf(dir);
}

static void nystrom_free(void *model) { tf_nystrom_free(model); }

static int nystrom_run(hf_job *job) {
    const tf_nystrom *m = job->model;
    tf_nystrom_inputs in = {
        .input_ids = hf_get(&job->in, "input_ids"),
        .attention_mask = hf_get(&job->in, "attention_mask"),
        .token_type_ids = hf_get(&job->in, "token_type_ids"),
        .position_ids = hf_get(&job->in, "position_ids"),
        .labels = hf_get(&job->in, "labels"),
    };
    tf_nystrom_outputs out;
    if (tf_nystrom_run(job->ctx, m, &in, &out)) {
        char msg[512];
        snprintf(msg, sizeof msg, "%s", tf_error());
        return tf_set_error("%s: %s", job->input_path, msg);
    }
    int all_ignored = in.labels && in.labels->dtype == TF_DTYPE_I32; /* PyTorch's mean over no labels is 0/0 */
    for (int64_t i = 0; all_ignored && i < tf_numel(in.labels); i++) all_ignored = tf_i32(in.labels)[i] == -100;
    if (out.loss && all_ignored) tf_f32(out.loss)[0] = NAN;
    return hf_put(&job->out, "last_hidden_state", out.last_hidden_state) ||
           hf_put(&job->out, "logits", out.logits) || hf_put(&job->out, "loss", out.loss);
}

const hf_family hf_nystrom_family = {nystrom_load, nystrom_free, nystrom_run};
