/* hf-run's ViT family: ViTModel and ViTForImageClassification through
 * tf_vit_load_hf / tf_vit_run. */
#include <math.h>

#include "hf_run.h"

static void *vit_load(const char *dir, const char *architecture) {
    (void)architecture; /* config.json's architectures[0] picks the head */
    return tf_vit_load_hf(dir);
}

static void vit_free(void *model) { tf_vit_free(model); }

static int vit_run(hf_job *job) {
    const tf_vit *m = job->model;
    tf_vit_inputs in = {.pixel_values = hf_get(&job->in, "pixel_values"), .labels = hf_get(&job->in, "labels")};
    if (hf_check_range(job, "labels", 0, m->cfg.n_labels, -100, "labels must be below num_labels (or -100)"))
        return -1;
    tf_vit_outputs out;
    if (tf_vit_run(job->ctx, m, &in, &out)) {
        char msg[512];
        snprintf(msg, sizeof msg, "%s", tf_error());
        return tf_set_error("%s: %s", job->input_path, msg);
    }
    int all_ignored = in.labels != NULL; /* PyTorch's mean over no labels is 0/0 */
    for (int64_t i = 0; in.labels && i < tf_numel(in.labels); i++) all_ignored &= tf_i32(in.labels)[i] == -100;
    if (out.loss && all_ignored) tf_f32(out.loss)[0] = NAN;
    return hf_put(&job->out, "last_hidden_state", out.last_hidden_state) ||
           hf_put(&job->out, "pooler_output", out.pooler_output) || hf_put(&job->out, "logits", out.logits) ||
           hf_put(&job->out, "loss", out.loss);
}

const hf_family hf_vit_family = {vit_load, vit_free, vit_run};
