/* The translation task: the encoder-decoder on line-aligned source and
 * target files, batches by token count (tf_parallel_loader_new), label-
 * smoothed cross-entropy on the target, saved as a translation folder with
 * its tokenizer (tformer translate reads it). One tokenizer serves both
 * languages (a joint vocabulary); its V tokens are followed by padding,
 * BOS and EOS (ids V, V+1, V+2).
 *
 *   src_ids (B,S) -> encoder;  tgt_in (B,T) = BOS y  -> decoder;  loss = CE(logits, tgt_out = y EOS) */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "train_internal.h"

#define R(m, type, def, range, help) TF_FIELD_ROW(tf_seq2seq_task_config, m, type, #m, def, range, NULL, help, 0, NULL)
static const tf_field ROWS[] = {
    R(max_tokens, TF_FIELD_INT, "4096", "[2,inf)", "a batch's padded tokens at most: batches by token count"),
    R(max_len, TF_FIELD_INT, "128", "[2,inf)", "ids per sentence at most (tokens + EOS); longer is an error"),
    R(label_smoothing, TF_FIELD_FLOAT, "0.1", "[0,1)", "label smoothing of the target (the paper: 0.1)"),
    TF_FIELD_SUB(tf_seq2seq_task_config, model, tf_seq2seq_config_table),
};
#undef R
const tf_field_table tf_seq2seq_task_config_table = {"translation", ROWS, (int)(sizeof ROWS / sizeof ROWS[0])};

tf_seq2seq_task_config tf_seq2seq_task_config_default(void) {
    tf_seq2seq_task_config c = {0};
    tf_fields f = {&tf_seq2seq_task_config_table, &c};
    tf_fields_defaults(&f, 1); /* cannot fail: test_seq2seq checks the defaults */
    return c;
}

typedef struct {
    tf_task base;
    tf_seq2seq_task_config cfg;
    tf_seq2seq *m;
    tf_tokenizer *tok;
    tf_parallel_set train, valid;
    tf_loader *loader;
    int accum;
    char *dir;
} s2s_task;

/* ---------------------------------------------------------------- the task's table */

static int s2s_batch(tf_task *t, tf_ctx *ctx, tf_subset subset, uint64_t key, int rows, tf_batch *b) {
    s2s_task *s = (s2s_task *)t;
    /* the trainer's training key is step * 1024 + micro: the loader wants a running count */
    uint64_t k = subset == TF_SUBSET_TRAIN ? key / 1024 * (uint64_t)s->accum + key % 1024 : key;
    return tf_loader_next(s->loader, ctx, subset, k, rows, b);
}

static tf_tensor *s2s_loss(tf_task *t, tf_ctx *ctx, const tf_batch *b, tf_metrics *m) {
    (void)m;
    s2s_task *s = (s2s_task *)t;
    tf_seq2seq_inputs in = {.input_ids = tf_batch_get(b, "src_ids"), .attention_mask = tf_batch_get(b, "src_mask"),
                            .decoder_input_ids = tf_batch_get(b, "tgt_in"), .labels = tf_batch_get(b, "tgt_out"),
                            .label_smoothing = s->cfg.label_smoothing};
    tf_seq2seq_outputs out;
    return tf_seq2seq_run(ctx, s->m, &in, &out) ? NULL : out.loss;
}

static tf_params *s2s_params(tf_task *t) { return ((s2s_task *)t)->m->params; }

static int s2s_signature(tf_task *t, char *out, size_t n) {
    tf_fields f = {&tf_seq2seq_config_table, &((s2s_task *)t)->m->cfg};
    return tf_fields_signature(&f, 1, out, n);
}

static int s2s_save(tf_task *t, const char *dir) { return tf_seq2seq_save(((s2s_task *)t)->m, dir); }

static int s2s_save_meta(tf_task *t, tf_st_writer *w) { return tf_task_tokenizer_save(((s2s_task *)t)->dir, w); }

static int s2s_check_meta(tf_task *t, const tf_st_file *f, const char *ck) {
    return tf_task_tokenizer_check(((s2s_task *)t)->dir, f, ck);
}

static int64_t s2s_tokens(tf_task *t, int rows) {
    (void)rows; /* a batch holds about max_tokens padded tokens, whatever the rows */
    return ((s2s_task *)t)->cfg.max_tokens;
}

static void s2s_free(tf_task *t) {
    s2s_task *s = (s2s_task *)t;
    tf_seq2seq_free(s->m);
    tf_tokenizer_free(s->tok);
    tf_loader_free(s->loader);
    tf_parallel_set_free(&s->train), tf_parallel_set_free(&s->valid);
    free(s->dir);
    free(s);
}

static const tf_task_vt S2S_TASK = {s2s_batch, s2s_loss, s2s_params, s2s_signature, s2s_save,
                                    s2s_save_meta, s2s_check_meta, s2s_tokens, s2s_free};

/* ---------------------------------------------------------------- construction */

/* The tokenizer (learned from both training files for "char"), the vocabularies, both sets, the loader. */
static int load_data(s2s_task *s, const char *src, const char *tgt, const char *vsrc, const char *vtgt,
                     const char *tokenizer, int resume, uint64_t seed) {
    const char *files[2] = {src, tgt};
    if (!resume && tf_task_tokenizer_install(tokenizer, files, 2, s->dir)) return -1;
    if (!(s->tok = tf_tokenizer_load(s->dir))) return -1;
    tf_seq2seq_config *mc = &s->cfg.model;
    int vocab = tf_tokenizer_vocab_size(s->tok) + TF_SEQ2SEQ_SPECIALS;
    if ((mc->src_vocab && mc->src_vocab != vocab) || (mc->tgt_vocab && mc->tgt_vocab != vocab))
        return tf_set_error("src_vocab %d, tgt_vocab %d: the tokenizer has %d tokens + %d specials = %d", mc->src_vocab,
                            mc->tgt_vocab, vocab - TF_SEQ2SEQ_SPECIALS, TF_SEQ2SEQ_SPECIALS, vocab);
    mc->src_vocab = mc->tgt_vocab = vocab;
    if (s->cfg.max_len > mc->context)
        return tf_set_error("max_len %d exceeds the model's context of %d", s->cfg.max_len, mc->context);
    tf_parallel_opts o = tf_parallel_opts_default();
    o.max_len = s->cfg.max_len;
    o.src_pad = o.tgt_pad = tf_seq2seq_pad_id(vocab);
    o.tgt_bos = tf_seq2seq_bos_id(vocab);
    o.src_eos = o.tgt_eos = tf_seq2seq_eos_id(vocab);
    if (tf_parallel_read(s->tok, s->tok, src, tgt, &o, &s->train) ||
        tf_parallel_read(s->tok, s->tok, vsrc, vtgt, &o, &s->valid))
        return -1;
    return (s->loader = tf_parallel_loader_new(&s->train, &s->valid, s->cfg.max_tokens, 0, seed)) ? 0 : -1;
}

tf_task *tf_seq2seq_task_new(const tf_seq2seq_task_config *c, const char *src, const char *tgt, const char *valid_src,
                             const char *valid_tgt, const char *tokenizer, const char *run_dir, int resume, int accum,
                             uint64_t seed) {
    if (!src || !tgt || !valid_src || !valid_tgt)
        return tf_set_error("train: translation needs --src, --tgt, --valid-src and --valid-tgt"), NULL;
    if (accum < 1 || accum > 1024) return tf_set_error("train: accum %d (1 to 1024)", accum), NULL;
    if (mkdir(run_dir, 0755) && errno != EEXIST)
        return tf_set_error("%s: cannot create: %s", run_dir, strerror(errno)), NULL;
    s2s_task *s = calloc(1, sizeof *s);
    size_t n = strlen(run_dir) + 1;
    if (!s || !(s->dir = malloc(n))) return free(s), tf_set_error("train: out of memory"), NULL;
    memcpy(s->dir, run_dir, n);
    s->base.vt = &S2S_TASK, s->cfg = *c, s->accum = accum;
    s->base.config = (tf_fields){&tf_seq2seq_task_config_table, &s->cfg};
    if (load_data(s, src, tgt, valid_src, valid_tgt, tokenizer ? tokenizer : "char", resume, seed) ||
        !(s->m = tf_seq2seq_new(&s->cfg.model, seed ? seed : 1))) {
        s2s_free(&s->base);
        return NULL;
    }
    return &s->base;
}

int64_t tf_seq2seq_task_val_batches(const tf_task *t) {
    return tf_parallel_loader_batches(((const s2s_task *)t)->loader, TF_SUBSET_VAL);
}

const tf_seq2seq *tf_seq2seq_task_model(const tf_task *t) { return ((const s2s_task *)t)->m; }
