/* The GPT family's registry rows (tformer/model.h): the GPT on text, and
 * ImageGPT, a GPT on colour tokens. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../../core/core_internal.h"
#include "../../util/util.h"
#include "../family.h"
#include "../hf_run.h"
#include "gpt_internal.h"

/* ---------------------------------------------------------------- hf-run: forward()'s arguments */

/* GPT2Model.forward() / GPT2LMHeadModel.forward() (transformers 4.x and 5.x):
 * hf_in_text (the LM head's hf_head_token_labels), and the arguments hf-run refuses by name. */
static const char *const GPT2_REFUSED[] = {
    "past_key_values", "head_mask", "inputs_embeds", "encoder_hidden_states", "encoder_attention_mask",
    "cache_position", "logits_to_keep", "use_cache", "output_attentions", "output_hidden_states",
    "return_dict", NULL,
};
/* ImageGPTModel / ImageGPTForCausalImageModeling.forward() (transformers 4.x): GPT-2's
 * arguments; the deprecated pixel_values (token ids under another name) is refused. */
static const char *const IMAGEGPT_REFUSED[] = {
    "pixel_values", "past_key_values", "head_mask", "inputs_embeds", "encoder_hidden_states",
    "encoder_attention_mask", "use_cache", "output_attentions", "output_hidden_states", "return_dict", NULL,
};

static const hf_arch GPT_ARCHS[] = {
    {"GPT2LMHeadModel", hf_in_text, GPT2_REFUSED, hf_out_lm, hf_head_token_labels},
    {"GPT2Model", hf_in_text, GPT2_REFUSED, hf_out_body, NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static const hf_arch IMAGEGPT_ARCHS[] = {
    {"ImageGPTForCausalImageModeling", hf_in_text, IMAGEGPT_REFUSED, hf_out_lm, hf_head_token_labels},
    {"ImageGPTModel", hf_in_text, IMAGEGPT_REFUSED, hf_out_body, NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

/* ---------------------------------------------------------------- loading and running */

/* tf_gpt_load refuses GPT-2 settings it does not compute. A handle's model is read-only: its weights are
 * the file's mapped pages (no copy), as `tformer generate` has always read them. */
static void *gpt2_load(const char *dir, const char *architecture) {
    (void)architecture;
    return tf_gpt_load_mapped(dir);
}
static void gpt2_free(void *model) { tf_gpt_free(model); }
TF_FAMILY_SAVE_PARAMS(gpt2, tf_gpt)
static int gpt2_context(const void *model) { return ((const tf_gpt *)model)->cfg.context; }

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

/* A GPT2Model (no head) only runs. */
static unsigned gpt2_caps(const void *model) {
    return ((const tf_gpt *)model)->has_head ? ~0u : TF_CAP_RUN;
}

/* GPT-2's end of text ends a sequence; every id the model can emit must have a text, and every token an id. */
static int gpt2_checks(const tf_gpt *m, tf_tokenizer *tok) {
    int n = tf_tokenizer_vocab_size(tok), v = m->cfg.vocab_size;
    if (n > v) return tf_set_error("generate: the tokenizer has %d tokens, the model only %d", n, v);
    if (n < v)
        return tf_set_error("generate: the tokenizer has %d tokens, the model %d: the model's ids %d to %d have no text",
                            n, v, n, v - 1);
    return 0;
}

static int gpt2_generate(const void *model, tf_tokenizer *tok, const int32_t *prompt, int n_prompt,
                         const tf_generate_opts *o, tf_token_fn on_token, void *user, tf_ids *out, int32_t *eos_id) {
    const tf_gpt *m = model;
    if (gpt2_checks(m, tok)) return -1;
    tf_generate_opts g = *o;
    *eos_id = g.eos_id = tf_tokenizer_token_id(tok, "<|endoftext|>");
    return tf_gpt_generate(m, prompt, n_prompt, &g, on_token, user, out, NULL);
}

/* Every id of the tokenizer must be one the model has (a smaller tokenizer leaves ids never read). */
static int gpt2_text_loss(const void *model, tf_tokenizer *tok, const char *const *files, int n, double *loss,
                          int64_t *tokens) {
    const tf_gpt *m = model;
    if (tf_tokenizer_vocab_size(tok) > m->cfg.vocab_size)
        return tf_set_error("eval: the tokenizer has %d tokens, the model only %d", tf_tokenizer_vocab_size(tok),
                            m->cfg.vocab_size);
    return tf_gpt_evaluate(m, tok, files, n, loss, tokens);
}

static tf_decoder *gpt2_decoder(const void *model, tf_tokenizer *tok, int n_prompt, int max_tokens, int32_t *eos_id) {
    const tf_gpt *m = model;
    if (gpt2_checks(m, tok)) return NULL;
    *eos_id = tf_tokenizer_token_id(tok, "<|endoftext|>");
    return tf_gpt_decoder_for(m, n_prompt, max_tokens);
}

/* The first context ids through the model, each layer's attention (1,H,n,n) copied out. */
static int gpt2_text_attention(const void *model, const int32_t *ids, int n, tf_text_attention *a) {
    const tf_gpt *m = model;
    const tf_gpt_config *c = &m->cfg;
    n = n < c->context ? n : c->context;
    size_t per = (size_t)c->n_head * (size_t)n * (size_t)n, total;
    if (!tf_mul_size(per, (size_t)c->n_layer, &total) || !tf_mul_size(total, sizeof(float), &total))
        return tf_set_error("attention: %d ids are too many", n);
    tf_ctx *ctx = tf_ctx_new(0);
    tf_tensor *t = ctx ? tf_tensor_new(ctx, TF_DTYPE_I32, 2, (int64_t[]){1, n}, 0) : NULL;
    a->ids = malloc((size_t)n * sizeof *a->ids), a->probs = malloc(total);
    int rc = t && a->ids && a->probs ? 0 : tf_set_error("attention: out of memory");
    tf_gpt_outputs out;
    if (!rc) {
        tf_ctx_set_grad(ctx, 0);
        memcpy(t->data, ids, (size_t)n * sizeof *ids), memcpy(a->ids, ids, (size_t)n * sizeof *ids);
        rc = tf_gpt_run(ctx, m, &(tf_gpt_inputs){.input_ids = t, .output_attentions = 1}, &out);
    }
    for (int l = 0; !rc && l < c->n_layer; l++) {
        if (!out.attentions[l] || tf_numel(out.attentions[l]) != (int64_t)per)
            rc = tf_set_error("attention: layer %d's attention was not kept", l);
        else
            memcpy(a->probs + (size_t)l * per, tf_f32(out.attentions[l]), per * sizeof(float));
    }
    a->n_layer = c->n_layer, a->n_head = c->n_head, a->n = n;
    tf_ctx_free(ctx);
    return rc;
}

/* ---------------------------------------------------------------- the rows */

static const char *const GPT_TYPES[] = {"gpt2", "tformer-gpt2", NULL};
static const char *const IMAGEGPT_TYPES[] = {"imagegpt", "tformer-imagegpt", NULL};

static void gpt_defaults(void *cfg, tf_train_config *train) {
    (void)train;
    *(tf_lm_config *)cfg = tf_lm_config_default();
}

/* A text GPT is saved as GPT-2's layout (gpt_io.c), and every id of its vocabulary is a target: ImageGPT's
 * RMS norms and head without the last id (the start token) are --arch imagegpt's. Refused before training
 * (a GPT with them trained, then failed at its first target or at save). */
static const char *gpt_check(const void *cfg, const tf_task_args *a, char *buf, size_t n) {
    (void)a, (void)buf, (void)n;
    const tf_gpt_config *c = &((const tf_lm_config *)cfg)->model;
    if (c->norm == TF_NORM_RMS || !c->predict_last)
        return "--norm rms and --predict-last false are ImageGPT's layout (train --arch imagegpt); a text GPT is "
               "GPT-2's: --norm layer, every token predicted";
    return NULL;
}

static tf_task *gpt_task(const void *cfg, const tf_task_args *a) {
    return tf_lm_task_new(cfg, a->data, a->n_data, a->tokenizer ? a->tokenizer : "char", a->run_dir, a->resume,
                          a->seed);
}

const tf_family tf_family_gpt = {
    .name = "gpt", .summary = "next token",
    .model_types = GPT_TYPES, .verbs = "generate or eval", .caps = TF_CAP_RUN | TF_CAP_GENERATE,
    TF_FAMILY_MODEL_ROW(gpt2, tf_gpt), .archs = GPT_ARCHS,
    .input = TF_TRAIN_TEXT, .task_table = &tf_lm_config_table, .task_size = sizeof(tf_lm_config),
    .task_defaults = gpt_defaults, .task_check = gpt_check, .task_new = gpt_task,
    .generate = gpt2_generate, .context = gpt2_context, .text_loss = gpt2_text_loss,
    .decoder = gpt2_decoder,
    .text_attention = gpt2_text_attention,
};

static void imagegpt_defaults(void *cfg, tf_train_config *train) {
    *(tf_imagegpt_task_config *)cfg = tf_imagegpt_task_config_default();
    train->eval_batches = 1000; /* at most one pass over the validation images */
}

/* --data-dir's train and t10k splits, or one digits CSV and its tail. */
static tf_task *imagegpt_task(const void *cfg, const tf_task_args *a) {
    tf_images train, test;
    if (!a->data_dir)
        return tf_images_read_digits(a->data[0], &train) ? NULL : tf_imagegpt_task_new(cfg, &train, NULL, a->run_dir, a->seed);
    if (tf_images_read_dir(a->data_dir, "train", 0, &train)) return NULL;
    if (tf_images_read_dir(a->data_dir, "t10k", 0, &test)) return tf_images_free(&train), NULL;
    return tf_imagegpt_task_new(cfg, &train, &test, a->run_dir, a->seed);
}

static int64_t imagegpt_val(const tf_task *t, const tf_task_args *a) {
    return tf_family_one_pass(tf_imagegpt_task_images(t, TF_SUBSET_VAL), a->rows);
}

const tf_family tf_family_imagegpt = {
    .name = "imagegpt", .summary = "next pixel: a GPT on colour tokens",
    .model_types = IMAGEGPT_TYPES, .verbs = "complete-image", .caps = TF_CAP_RUN | TF_CAP_COMPLETE_IMAGE,
    TF_FAMILY_MODEL_ROW(gpt2, tf_gpt), .archs = IMAGEGPT_ARCHS, /* GPT-2's model */
    .input = TF_TRAIN_IMAGES, .task_table = &tf_imagegpt_task_config_table,
    .task_size = sizeof(tf_imagegpt_task_config),
    .task_defaults = imagegpt_defaults, .task_new = imagegpt_task, .val_batches = imagegpt_val,
    .completion_shape = tf_imagegpt_completion_shape, .complete_image = tf_imagegpt_complete_pixels,
};
