/* hf-run's Marian family: MarianMTModel folders through the encoder-decoder
 * (seq2seq_marian.c maps Marian's config.json and names) and tf_seq2seq_run. */
#include <math.h>
#include <string.h>

#include "../models/seq2seq/seq2seq_internal.h"
#include "../util/util.h"
#include "hf_run.h"

static void *marian_load(const char *dir, const char *architecture) {
    (void)architecture;
    return tf_seq2seq_load_marian(dir);
}

static void marian_free(void *model) { tf_seq2seq_free(model); }

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

static int all_ignored(const tf_tensor *labels) {
    for (int64_t i = 0; i < tf_numel(labels); i++)
        if (tf_i32(labels)[i] != -100) return 0;
    return 1;
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
    if (tf_seq2seq_run(job->ctx, m, &in, &out)) {
        char msg[512];
        snprintf(msg, sizeof msg, "%s", tf_error());
        return tf_set_error("%s: %s", job->input_path, msg);
    }
    if (out.loss && all_ignored(labels)) tf_f32(out.loss)[0] = NAN; /* PyTorch's mean over no labels: 0/0 */
    return hf_put(&job->out, "logits", out.logits) || hf_put(&job->out, "loss", out.loss) ||
           hf_put(&job->out, "encoder_last_hidden_state", out.encoder_last_hidden_state);
}

const hf_family hf_marian_family = {marian_load, marian_free, marian_run};
