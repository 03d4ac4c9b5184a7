/* The captioner's registry row (tformer/model.h): a CNN encoder and a GRU/LSTM decoder with
 * attention over the image's grid (Show, Attend and Tell), the baseline without, the Transformer
 * captioner; and Hugging Face's VisionEncoderDecoderModel (a ViT and a GPT-2 with cross-attention),
 * which hf-run also runs. A loaded folder is one or the other (cap_model). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../../util/util.h"
#include "../family.h"
#include "../hf_run.h"
#include "caption_internal.h"

static const char *const CAPTION_TYPES[] = {"tformer-caption", "vision-encoder-decoder", NULL};

/* ---------------------------------------------------------------- hf-run: forward()'s arguments */

/* VisionEncoderDecoderModel.forward() (transformers 4.x): pixel values as the image processor gives them. */
static const hf_input VED_INPUTS[] = {
    {"pixel_values", HF_IN_FLOAT, "B,C,H,W", 1},
    {"decoder_input_ids", HF_IN_IDS, "B,T", 1},
    {"decoder_attention_mask", HF_IN_MASK, "B,T", 0},
    {"labels", HF_IN_LABELS, "B,T", 0},
    {NULL, 0, NULL, 0},
};
static const char *const VED_REFUSED[] = {
    "encoder_outputs", "past_key_values", "decoder_inputs_embeds", "use_cache", "output_attentions",
    "output_hidden_states", "return_dict", NULL,
};
static const char *const VED_OUTPUTS[] = {"logits", "loss", "encoder_last_hidden_state", NULL};
static const hf_arch CAPTION_ARCHS[] = {
    {"VisionEncoderDecoderModel", VED_INPUTS, VED_REFUSED, VED_OUTPUTS, NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

/* A loaded folder: tformer's captioner or Hugging Face's. */
typedef struct {
    tf_caption *own;
    tf_caption_ved *ved;
} cap_model;

static int ved_run(hf_job *job) {
    const tf_caption_ved *m = ((const cap_model *)job->model)->ved;
    int V = tf_caption_ved_decoder_dims(m).vocab;
    if (hf_check_range(job, "decoder_input_ids", 0, V, -1, "ids must be below the decoder's vocab_size") ||
        hf_check_range(job, "labels", 0, V, -100, "labels must be below the decoder's vocab_size, or -100 (ignored)"))
        return -1;
    tf_caption_ved_inputs in = {
        .pixel_values = hf_get(&job->in, "pixel_values"),
        .decoder_input_ids = hf_get(&job->in, "decoder_input_ids"),
        .decoder_attention_mask = hf_get(&job->in, "decoder_attention_mask"),
        .labels = hf_get(&job->in, "labels"),
    };
    tf_caption_ved_outputs out;
    if (tf_caption_ved_run(job->ctx, m, &in, &out)) return hf_input_error(job);
    int counted = 0; /* PyTorch's mean over no labels is 0/0 */
    for (int64_t i = 0; in.labels && i < tf_numel(in.labels); i++) counted |= tf_i32(in.labels)[i] != -100;
    if (out.loss && !counted) tf_f32(out.loss)[0] = NAN;
    return hf_put(&job->out, "logits", out.logits) || hf_put(&job->out, "loss", out.loss) ||
           hf_put(&job->out, "encoder_last_hidden_state", out.encoder_last_hidden_state);
}

static void cap_defaults(void *cfg, tf_train_config *train) {
    (void)train;
    *(tf_caption_task_config *)cfg = tf_caption_task_config_default();
}

static const char *cap_check(const void *cfg, const tf_task_args *a, char *buf, size_t n) {
    (void)cfg, (void)buf, (void)n;
    if (a->n_data || a->tokenizer || a->data_dir)
        return "--arch caption makes its scenes (--scene-seed, --scene-items ...): no --data, --data-dir or --tokenizer";
    return NULL;
}

static tf_task *cap_task(const void *cfg, const tf_task_args *a) { return tf_caption_task_new(cfg, a->run_dir, a->seed); }

static int64_t cap_val(const tf_task *t, const tf_task_args *a) {
    return tf_family_one_pass(((const tf_caption_task_config *)t->config.obj)->n_valid, a->rows);
}

/* A VisionEncoderDecoderModel folder: its architecture, or without one its model_type (tformer's own
 * folders name no architecture). */
static int is_ved(const char *dir, const char *architecture) {
    if (architecture) return !strcmp(architecture, CAPTION_ARCHS[0].name);
    char path[4200];
    if (tf_path_join(path, sizeof path, dir, "config.json")) return 0; /* no folder of its name: not one */
    cJSON *root = tf_json_read(path);
    const cJSON *t = root ? cJSON_GetObjectItemCaseSensitive(root, "model_type") : NULL;
    int ved = cJSON_IsString(t) && !strcmp(t->valuestring, CAPTION_TYPES[1]);
    cJSON_Delete(root);
    return ved;
}

static void *cap_load(const char *dir, const char *architecture) {
    cap_model *w = calloc(1, sizeof *w);
    if (!w) return tf_set_error("caption: out of memory"), NULL;
    int hf = is_ved(dir, architecture);
    if (hf ? !(w->ved = tf_caption_ved_load(dir)) : !(w->own = tf_caption_load(dir))) return free(w), NULL;
    return w;
}

static void cap_free(void *model) {
    cap_model *w = model;
    if (w) tf_caption_free(w->own), tf_caption_ved_free(w->ved);
    free(w);
}

static const tf_params *cap_params(const void *model) {
    const cap_model *w = model;
    return w->ved ? w->ved->params : w->own->params;
}

static unsigned cap_caps(const void *model) {
    return ((const cap_model *)model)->ved ? TF_CAP_RUN | TF_CAP_CAPTION : TF_CAP_CAPTION;
}

static void cap_shape(const void *model, int *channels, int *size, int *n_labels) {
    const cap_model *w = model;
    *channels = w->ved ? w->ved->encoder->cfg.channels : w->own->cfg.channels;
    *size = w->ved ? w->ved->encoder->cfg.image_size : w->own->cfg.image_size, *n_labels = 0;
}

/* The words of ids into r (text, words): the scene grammar's, or tok's pieces (trimmed; "<id>" without tok)
 * and the text the ids decode to. */
static int words_of(const int32_t *ids, int n, const tf_tokenizer *tok, int grammar, tf_caption_grammar g,
                    tf_caption_result *r) {
    if (!(r->words = calloc((size_t)n + 1, sizeof *r->words))) return tf_set_error("caption: out of memory");
    size_t len = 1;
    for (int i = 0; i < n; i++, r->n_words++) {
        char *w = NULL, num[32];
        size_t k = 0, at = 0;
        if (grammar || !tok) {
            snprintf(num, sizeof num, "<%d>", (int)ids[i]);
            w = strdup(grammar ? tf_caption_grammar_word(g, ids[i]) : num);
        } else if (!tf_tokenizer_decode(tok, ids + i, 1, &w, &k)) {
            while (at < k && w[at] == ' ') at++;
            memmove(w, w + at, k - at + 1);
        }
        if (!(r->words[i] = w)) return tf_set_error("caption: out of memory");
        len += strlen(w) + 1;
    }
    size_t k = 0, at = 0;
    if (tok && !grammar) { /* the ids' text: pieces of words join without spaces */
        if (tf_tokenizer_decode(tok, ids, (size_t)n, &r->text, &k)) return -1;
        while (at < k && r->text[at] == ' ') at++;
        memmove(r->text, r->text + at, k - at + 1);
        return 0;
    }
    if (!(r->text = malloc(len))) return tf_set_error("caption: out of memory");
    r->text[0] = 0;
    for (int i = 0; i < n; i++) {
        if (i) strcat(r->text, " ");
        strcat(r->text, r->words[i]);
    }
    return 0;
}

/* A VisionEncoderDecoderModel's caption: the attention over its patch grid. */
static int ved_caption(const tf_caption_ved *m, const float *pixels, const tf_generate_opts *o, tf_caption_result *r) {
    int cap = tf_caption_ved_decoder_dims(m).context, n = 0, N = tf_vit_patches(&m->encoder->cfg);
    int32_t *ids = malloc((size_t)cap * sizeof *ids);
    float *att = malloc((size_t)(cap + 1) * (size_t)N * sizeof *att);
    int rc = ids && att ? tf_caption_ved_generate(m, pixels, o, ids, cap, &n, att) : tf_set_error("caption: out of memory");
    if (!rc) rc = words_of(ids, n, m->tok, 0, 0, r);
    r->attention = att, r->grid = m->encoder->cfg.image_size / m->encoder->cfg.patch_size;
    free(ids);
    return rc;
}

static int cap_caption(const void *model, const float *pixels, const tf_generate_opts *o, tf_caption_result *r) {
    if (((const cap_model *)model)->ved) return ved_caption(((const cap_model *)model)->ved, pixels, o, r);
    const tf_caption *m = ((const cap_model *)model)->own;
    int cap = m->cfg.context, n = 0, G = tf_caption_grid(&m->cfg);
    int32_t *ids = malloc((size_t)cap * sizeof *ids);
    float *att = m->cfg.attention ? malloc((size_t)(cap + 1) * (size_t)(G * G) * sizeof *att) : NULL;
    int rc = ids && (att || !m->cfg.attention) ? tf_caption_generate(m, pixels, o, ids, cap, &n, att)
                                               : tf_set_error("caption: out of memory");
    if (!rc) rc = words_of(ids, n, NULL, 1, m->cfg.grammar, r);
    r->attention = att, r->grid = G;
    free(ids);
    return rc;
}
static int cap_save(const void *model, const char *dir) {
    const cap_model *w = model;
    return w->ved ? tf_caption_ved_save(w->ved, dir) : tf_caption_save(w->own, dir);
}


const tf_family tf_family_caption = {
    .name = "caption", .summary = "image captioning: a CNN grid, an RNN with attention or a Transformer decoder",
    .model_types = CAPTION_TYPES, .verbs = "caption or hf-run", .caps = TF_CAP_CAPTION | TF_CAP_RUN,
    .load = cap_load, .free = cap_free, .params = cap_params, .model_caps = cap_caps,
    .archs = CAPTION_ARCHS, .run = ved_run,
    .config_table = &tf_caption_config_table, .save = cap_save,
    .input = TF_TRAIN_GENERATED, .task_table = &tf_caption_task_config_table,
    .task_size = sizeof(tf_caption_task_config),
    .task_defaults = cap_defaults, .task_check = cap_check, .task_new = cap_task, .val_batches = cap_val,
    .image_shape = cap_shape, .caption = cap_caption,
};
