/* The encoder-decoder Transformer's registry row (tformer/model.h): tformer's
 * translation folders and Hugging Face's Marian. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../family.h"
#include "seq2seq_internal.h"
#include "../../util/util.h"
#include "../hf_run.h"

/* ---------------------------------------------------------------- hf-run: forward()'s arguments */

/* MarianMTModel.forward() (transformers 4.x): the source, the target (or
 * labels, shifted right into it as transformers does). */
static const hf_input MARIAN_INPUTS[] = {
    {"input_ids", HF_IN_IDS, "B,T", 1},
    {"attention_mask", HF_IN_MASK, "B,T", 0},
    {"decoder_input_ids", HF_IN_IDS, "B,U", 0},
    {"decoder_attention_mask", HF_IN_MASK, "B,U", 0},
    {"labels", HF_IN_LABELS, "B,U", 0},
    {NULL, 0, NULL, 0},
};
static const char *const MARIAN_REFUSED[] = {
    "head_mask", "decoder_head_mask", "cross_attn_head_mask", "encoder_outputs", "past_key_values",
    "inputs_embeds", "decoder_inputs_embeds", "use_cache", "output_attentions", "output_hidden_states",
    "return_dict", NULL,
};
static const char *const OUT_SEQ2SEQ_LM[] = {"logits", "loss", "encoder_last_hidden_state", NULL};

static const hf_arch SEQ2SEQ_ARCHS[] = {
    {"MarianMTModel", MARIAN_INPUTS, MARIAN_REFUSED, OUT_SEQ2SEQ_LM, NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

/* ---------------------------------------------------------------- loading and running */

/* A MarianMTModel folder (architecture given) or tformer's own. */
static void *marian_load(const char *dir, const char *architecture) {
    return architecture ? tf_seq2seq_load_marian(dir) : tf_seq2seq_load(dir);
}

static void marian_free(void *model) { tf_seq2seq_free(model); }
static const tf_params *marian_params(const void *model) { return ((const tf_seq2seq *)model)->params; }

/* transformers' shift_tokens_right: decoder_input_ids from labels when not
 * given, (B,U): the start token, then labels[:, :-1] with -100 as padding. */
static tf_tensor *shift_right(tf_ctx *ctx, const tf_tensor *labels, int32_t start, int32_t pad) {
    int64_t B = labels->shape[0], U = labels->shape[1];
    tf_tensor *t = tf_tensor_new(ctx, TF_DTYPE_I32, 2, labels->shape, 0);  // (B,U)
    for (int64_t b = 0; t && b < B; b++)
        for (int64_t u = 0; u < U; u++) {
            int32_t v = u ? tf_i32(labels)[b * U + u - 1] : start;
            tf_i32(t)[b * U + u] = v == -100 ? pad : v;
        }
    return t;
}

static int check_inputs(const hf_job *job, const tf_seq2seq_config *c) {
    const tf_tensor *ids = hf_get(&job->in, "input_ids"), *dec = hf_get(&job->in, "decoder_input_ids");
    const tf_tensor *labels = hf_get(&job->in, "labels");
    if (!dec && !labels)
        return tf_set_error("%s: MarianMTModel.forward() needs decoder_input_ids or labels", job->input_path);
    int64_t U = dec ? dec->shape[1] : labels->shape[1];
    if (ids->shape[1] > c->context || U > c->context)
        return tf_set_error("%s: %lld source and %lld target positions; the model's max_position_embeddings is %d",
                            job->input_path, (long long)ids->shape[1], (long long)U, c->context);
    return hf_check_range(job, "input_ids", 0, c->src_vocab, -1, "ids must be below vocab_size") ||
           hf_check_range(job, "decoder_input_ids", 0, c->tgt_vocab, -1, "ids must be below the decoder's vocabulary") ||
           hf_check_range(job, "labels", 0, c->tgt_vocab, -100, "labels must be below the decoder's vocabulary, or -100");
}

static int marian_run(hf_job *job) {
    const tf_seq2seq *m = job->model;
    tf_tensor *labels = hf_get(&job->in, "labels"), *dec = hf_get(&job->in, "decoder_input_ids");
    if (check_inputs(job, &m->cfg)) return -1;
    if (!dec && !(dec = shift_right(job->ctx, labels, m->cfg.bos_id, m->cfg.pad_id))) return -1;
    tf_seq2seq_inputs in = {
        .input_ids = hf_get(&job->in, "input_ids"),
        .attention_mask = hf_get(&job->in, "attention_mask"),
        .decoder_input_ids = dec,
        .decoder_attention_mask = hf_get(&job->in, "decoder_attention_mask"),
        .labels = labels,
    };
    tf_seq2seq_outputs out;
    if (tf_seq2seq_run(job->ctx, m, &in, &out)) return hf_input_error(job);
    if (out.loss && hf_all_ignored(labels)) tf_f32(out.loss)[0] = NAN; /* PyTorch's mean over no labels: 0/0 */
    return hf_put(&job->out, "logits", out.logits) || hf_put(&job->out, "loss", out.loss) ||
           hf_put(&job->out, "encoder_last_hidden_state", out.encoder_last_hidden_state);
}

/* ---------------------------------------------------------------- translation */

static tf_decoder *tr_decoder(const void *m, const int32_t *src, int n, int cap) { return tf_seq2seq_decoder_new(m, src, n, cap); }
static tf_decoder *tr_decoder_batch(const void *m, const int32_t *const *src, const int *n_src, int n, int cap) {
    return tf_seq2seq_decoder_new_batch(m, src, n_src, n, cap);
}

/* The cross-attentions, one forward with output_attentions: each layer's (1,H,T,S) into the
 * grid, their mean over layers and heads the panel. */
static int tr_attend(const void *mv, tf_ctx *ctx, tf_tensor *src, tf_tensor *tgt, tf_attention_maps *a) {
    const tf_seq2seq *m = mv;
    tf_seq2seq_inputs in = {.input_ids = src, .decoder_input_ids = tgt, .output_attentions = 1};
    tf_seq2seq_outputs out;
    if (tf_seq2seq_run(ctx, m, &in, &out)) return -1;
    int L = m->cfg.n_decoder_layers, H = m->cfg.n_head;
    size_t per = (size_t)H * (size_t)(tgt->shape[1] * src->shape[1]), maps = (size_t)L * (size_t)H;
    a->rows = L, a->cols = H, a->what = "cross-attention: the average of every layer and head";
    a->grid = malloc(L * per * sizeof *a->grid), a->panel = calloc(per / (size_t)H, sizeof *a->panel);
    if (!a->grid || !a->panel) return tf_set_error("out of memory");
    for (int l = 0; l < L; l++) {
        tf_tensor *p = tf_contiguous(ctx, out.cross_attentions[l]);  // p: (1,H,T,S)
        if (!p) return -1;
        memcpy(a->grid + l * per, tf_f32(p), per * sizeof *a->grid);
    }
    for (size_t k = 0; k < maps; k++)
        for (size_t i = 0; i < per / (size_t)H; i++) a->panel[i] += a->grid[k * (per / (size_t)H) + i] / (float)maps;
    return 0;
}

/* Decoding steps read (in,out) copies of the weights through the tile kernel (nn.h), unless the
 * weights run in another precision (tf_params_set_precision). */
static int tr_translation(void *model, tf_translation *t) {
    tf_seq2seq *m = model;
    if (tf_params_precision(m->params) == TF_PRECISION_F32 && tf_params_quantize(m->params, TF_QUANT_F32)) return -1;
    *t = (tf_translation){m, m->cfg.src_vocab, m->cfg.tgt_vocab, m->cfg.context, tf_seq2seq_special_ids(&m->cfg, 0),
                          tf_seq2seq_special_ids(&m->cfg, 1), m->cfg.eos_id >= 0, tr_decoder, tr_decoder_batch,
                          tr_attend};
    return 0;
}

/* A Marian folder translates as transformers' generate() with its generation settings; tformer's
 * folders with the defaults. */
static int tr_settings(const void *model, const char *dir, tf_translate_opts *o, int32_t *bad_ids) {
    const tf_seq2seq *m = model;
    if (m->cfg.eos_id < 0) return 0; /* tformer's: the specials after the vocabulary */
    tf_marian_generation gen;
    if (tf_seq2seq_marian_generation(dir, &gen)) return -1;
    memcpy(bad_ids, gen.bad_ids, (size_t)gen.n_bad_ids * sizeof *bad_ids);
    o->search.beam_stop = gen.beam_stop, o->search.forced_eos_id = gen.forced_eos_id;
    o->search.bad_ids = bad_ids, o->search.n_bad_ids = gen.n_bad_ids;
    o->search.beam = gen.num_beams, o->search.length_penalty = gen.length_penalty;
    o->max_len_a = 0, o->max_len_b = gen.max_new_tokens; /* max_length, as generate() */
    o->search.renormalize = gen.renormalize_logits;
    return 0;
}

static int marian_save(const void *model, const char *dir) { return tf_seq2seq_save(model, dir); }

/* ---------------------------------------------------------------- the rows */

static const char *const SEQ2SEQ_TYPES[] = {"tformer-seq2seq", "marian", NULL};

static void seq2seq_defaults(void *cfg, tf_train_config *train) {
    (void)train;
    *(tf_seq2seq_task_config *)cfg = tf_seq2seq_task_config_default();
}

static tf_task *seq2seq_task(const void *cfg, const tf_task_args *a) {
    return tf_seq2seq_task_new(cfg, a->src, a->tgt, a->valid_src, a->valid_tgt, a->tokenizer, a->run_dir, a->resume,
                               a->accum, a->seed);
}

static int64_t seq2seq_val(const tf_task *t, const tf_task_args *a) {
    (void)a;
    return tf_seq2seq_task_val_batches(t);
}

const tf_family tf_family_seq2seq = {
    .name = "seq2seq", .summary = "translation",
    .model_types = SEQ2SEQ_TYPES, .verbs = "translate", .caps = TF_CAP_RUN | TF_CAP_TRANSLATE,
    .load = marian_load, .free = marian_free, .params = marian_params,
    .config_table = &tf_seq2seq_config_table, .save = marian_save,
    .archs = SEQ2SEQ_ARCHS, .run = marian_run,
    .input = TF_TRAIN_PARALLEL, .task_table = &tf_seq2seq_task_config_table,
    .task_size = sizeof(tf_seq2seq_task_config),
    .task_defaults = seq2seq_defaults, .task_new = seq2seq_task, .val_batches = seq2seq_val,
    .translation = tr_translation, .translate_settings = tr_settings,
};
