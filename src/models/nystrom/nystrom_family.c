/* The Nystromformer's registry row (tformer/model.h): Hugging Face folders run by hf-run. */
#include <math.h>

#include "../family.h"
#include "../hf_run.h"
#include "tformer/nystrom.h"

/* ---------------------------------------------------------------- hf-run: forward()'s arguments */

/* NystromformerModel / NystromformerFor*.forward() (transformers 4.x): BERT's inputs (hf_in_text). */
static const char *const NYSTROM_REFUSED[] = {
    "head_mask", "inputs_embeds", "output_attentions", "output_hidden_states", "return_dict", NULL,
};

static const hf_arch NYSTROM_ARCHS[] = {
    {"NystromformerModel", hf_in_text, NYSTROM_REFUSED, hf_out_body, NULL},
    {"NystromformerForMaskedLM", hf_in_text, NYSTROM_REFUSED, hf_out_lm, hf_head_token_labels},
    {"NystromformerForSequenceClassification", hf_in_text, NYSTROM_REFUSED, hf_out_lm, hf_head_targets},
    {"NystromformerForTokenClassification", hf_in_text, NYSTROM_REFUSED, hf_out_lm, hf_head_token_labels},
    {NULL, NULL, NULL, NULL, NULL},
};

/* ---------------------------------------------------------------- loading and running */

TF_FAMILY_LOAD_FREE(nystrom, tf_nystrom)

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
    if (tf_nystrom_run(job->ctx, m, &in, &out)) return hf_input_error(job);
    if (out.loss && hf_all_ignored(in.labels)) tf_f32(out.loss)[0] = NAN; /* PyTorch's mean over no labels: 0/0 */
    return hf_put(&job->out, "last_hidden_state", out.last_hidden_state) ||
           hf_put(&job->out, "logits", out.logits) || hf_put(&job->out, "loss", out.loss);
}

/* ---------------------------------------------------------------- the rows */

static const char *const NYSTROM_TYPES[] = {"nystromformer", NULL};

const tf_family tf_family_nystrom = {
    .name = "nystromformer", .summary = "Nystromformer: Nystrom attention (hf-run)",
    .model_types = NYSTROM_TYPES, .verbs = "hf-run", .caps = TF_CAP_RUN,
    .load = nystrom_load, .free = nystrom_free,
    .archs = NYSTROM_ARCHS, .run = nystrom_run,
};
