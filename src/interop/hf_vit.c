/* hf-run's vision families: ViTModel / ViTForImageClassification through
 * tf_vit_load_hf / tf_vit_run, SwinModel / SwinForImageClassification through
 * tf_swin_load_hf / tf_swin_run, VivitModel / VivitForVideoClassification
 * through tf_vivit_load / tf_vivit_run (Hugging Face's Vivit is ViViT's
 * Model 1 with tubelet embedding; tformer's Models 2 and 3 run here too). */
#include <math.h>

#include "hf_run.h"
#include "tformer/swin.h"
#include "tformer/vivit.h"

static void *vit_load(const char *dir, const char *architecture) {
    (void)architecture; /* config.json's architectures[0] picks the head */
    return tf_vit_load_hf(dir);
}

static void vit_free(void *model) { tf_vit_free(model); }

/* An error of the forward, named after the input file. */
static int input_error(const hf_job *job) {
    char msg[512];
    snprintf(msg, sizeof msg, "%s", tf_error());
    return tf_set_error("%s: %s", job->input_path, msg);
}

/* The output fields of a classifier's forward; PyTorch's mean over no labels is 0/0. */
static int put_outputs(hf_job *job, const tf_tensor *labels, tf_tensor *last, tf_tensor *pooled, tf_tensor *logits,
                       tf_tensor *loss) {
    int all_ignored = labels != NULL;
    for (int64_t i = 0; labels && i < tf_numel(labels); i++) all_ignored &= tf_i32(labels)[i] == -100;
    if (loss && all_ignored) tf_f32(loss)[0] = NAN;
    return hf_put(&job->out, "last_hidden_state", last) || hf_put(&job->out, "pooler_output", pooled) ||
           hf_put(&job->out, "logits", logits) || hf_put(&job->out, "loss", loss);
}

static int vit_run(hf_job *job) {
    const tf_vit *m = job->model;
    tf_vit_inputs in = {.pixel_values = hf_get(&job->in, "pixel_values"), .labels = hf_get(&job->in, "labels")};
    if (hf_check_range(job, "labels", 0, m->cfg.n_labels, -100, "labels must be below num_labels (or -100)"))
        return -1;
    tf_vit_outputs out;
    if (tf_vit_run(job->ctx, m, &in, &out)) return input_error(job);
    return put_outputs(job, in.labels, out.last_hidden_state, out.pooler_output, out.logits, out.loss);
}

const hf_family hf_vit_family = {vit_load, vit_free, vit_run};

static void *vivit_load(const char *dir, const char *architecture) {
    (void)architecture;
    return tf_vivit_load(dir);
}

static void vivit_free(void *model) { tf_vivit_free(model); }

static int vivit_run(hf_job *job) {
    const tf_vivit *m = job->model;
    tf_vivit_inputs in = {.pixel_values = hf_get(&job->in, "pixel_values"), .labels = hf_get(&job->in, "labels")};
    if (hf_check_range(job, "labels", 0, m->cfg.n_labels, -100, "labels must be below num_labels (or -100)"))
        return -1;
    tf_vivit_outputs out;
    if (tf_vivit_run(job->ctx, m, &in, &out)) return input_error(job);
    return put_outputs(job, in.labels, out.last_hidden_state, out.pooler_output, out.logits, out.loss);
}

const hf_family hf_vivit_family = {vivit_load, vivit_free, vivit_run};

static void *swin_load(const char *dir, const char *architecture) {
    (void)architecture;
    return tf_swin_load_hf(dir);
}

static void swin_free(void *model) { tf_swin_free(model); }

static int swin_run(hf_job *job) {
    const tf_swin *m = job->model;
    tf_swin_inputs in = {.pixel_values = hf_get(&job->in, "pixel_values"), .labels = hf_get(&job->in, "labels")};
    if (hf_check_range(job, "labels", 0, m->cfg.n_labels, -100, "labels must be below num_labels (or -100)"))
        return -1;
    tf_swin_outputs out;
    if (tf_swin_run(job->ctx, m, &in, &out)) return input_error(job);
    if (out.logits) out.last_hidden_state = out.pooler_output = NULL; /* SwinForImageClassification: logits, loss */
    return put_outputs(job, in.labels, out.last_hidden_state, out.pooler_output, out.logits, out.loss);
}

const hf_family hf_swin_family = {swin_load, swin_free, swin_run};
