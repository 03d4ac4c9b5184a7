/* The translation task: an encoder-decoder (any family: the Transformer
 * here, the RNN baseline in rnn_seq2seq_task.c) on line-aligned source and
 * target files, batches by token count (tf_parallel_loader_new), label-
 * smoothed cross-entropy on the target, saved as a translation folder with
 * its tokenizer (tformer translate reads it). One tokenizer serves both
 * languages (a joint vocabulary); its V tokens are followed by padding,
 * BOS and EOS (ids V, V+1, V+2). A family gives its tables, where its task
 * struct keeps the shared settings, and four calls (tf_translation_family).
 *
 *   src_ids (B,S) -> encoder;  tgt_in (B,T) = BOS y  -> decoder;  loss = CE(logits, tgt_out = y EOS) */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "../../task/task_internal.h"
#include "tformer/metrics.h"
#include "tformer/seq2seq.h"

static const tf_field ROWS[] = {TF_TRANSLATION_ROWS(tf_seq2seq_task_config, tf_seq2seq_config_table)};
const tf_field_table tf_seq2seq_task_config_table = {"translation", ROWS, (int)(sizeof ROWS / sizeof ROWS[0])};

TF_FIELDS_DEFAULT_FN(tf_seq2seq_task_config, tf_seq2seq_task_config_default, tf_seq2seq_task_config_table)

/* ---------------------------------------------------------------- the Transformer family */

TF_TRANSLATION_FAMILY(TRANSFORMER, tr, tf_seq2seq);

/* ---------------------------------------------------------------- the task (any family) */

typedef struct {
    tf_task base;
    const tf_translation_family *fam;
    void *cfg; /* the family's task struct (fam->cfg_size bytes) */
    void *m;
    tf_tokenizer *tok;
    tf_parallel_set train, valid;
    tf_loader *loader;
    int accum;
    char *dir;
    tf_lines vsrc, vtgt; /* the validation files' lines, for BLEU */
} s2s_task;

static int *cfg_int(const s2s_task *s, size_t off) { return (int *)((char *)s->cfg + off); }
static int *model_int(const s2s_task *s, size_t off) { return cfg_int(s, s->fam->model_off + off); }
static void *model_cfg(const s2s_task *s) { return (char *)s->cfg + s->fam->model_off; }

static int s2s_batch(tf_task *t, tf_ctx *ctx, tf_subset subset, uint64_t key, int rows, tf_batch *b) {
    s2s_task *s = (s2s_task *)t;
    /* the trainer's training key is step * 1024 + micro: the loader wants a running count */
    uint64_t k = subset == TF_SUBSET_TRAIN ? key / 1024 * (uint64_t)s->accum + key % 1024 : key;
    return tf_loader_next(s->loader, ctx, subset, k, rows, b);
}

static tf_tensor *s2s_loss(tf_task *t, tf_ctx *ctx, const tf_batch *b, tf_metrics *m) {
    (void)m;
    s2s_task *s = (s2s_task *)t;
    return s->fam->loss(ctx, s->m, b, *(const float *)((const char *)s->cfg + s->fam->smoothing_off));
}

static tf_params *s2s_params(tf_task *t) { return ((s2s_task *)t)->fam->params(((s2s_task *)t)->m); }

/* BLEU (sacreBLEU's default) of the first val_bleu validation pairs, the
 * source lines translated greedily as tformer translate does (in batches). */
static int s2s_score(tf_task *t, tf_metrics *m) {
    s2s_task *s = (s2s_task *)t;
    int n = *cfg_int(s, s->fam->val_bleu_off), rc = 0;
    if (n > s->valid.n) n = s->valid.n;
    if (n == 0) return 0;
    tf_translator tr = {s->m, s->fam->decoder_new, *model_int(s, s->fam->context_off), s->tok, s->tok,
                        s->valid.src_eos, s->valid.tgt_bos, s->valid.tgt_eos, s->fam->decoder_new_batch};
    tf_translate_opts o = tf_translate_opts_default();
    tf_bleu_opts bo = {TF_BLEU_TOK_13A, TF_BLEU_SMOOTH_EXP, 0, 0};
    tf_bleu_stats st = {0};
    const char **lines = malloc((size_t)n * sizeof *lines);
    size_t *lens = malloc((size_t)n * sizeof *lens), *hyp_len = malloc((size_t)n * sizeof *hyp_len);
    char **hyp = calloc((size_t)n, sizeof *hyp);
    if (!lines || !lens || !hyp_len || !hyp) rc = tf_set_error("validation BLEU: out of memory");
    for (int i = 0; !rc && i < n; i++) {
        int line = s->valid.pairs[i].line - 1;
        lines[i] = s->vsrc.text + s->vsrc.start[line], lens[i] = s->vsrc.len[line];
    }
    if (!rc) rc = tf_translate_lines(&tr, &o, n, lines, lens, hyp, hyp_len, NULL);
    for (int i = 0; !rc && i < n; i++) {
        int line = s->valid.pairs[i].line - 1;
        const char *ref = s->vtgt.text + s->vtgt.start[line];
        size_t ref_len = s->vtgt.len[line];
        rc = tf_bleu_add(&st, &bo, hyp[i], hyp_len[i], &ref, &ref_len, 1);
    }
    for (int i = 0; hyp && i < n; i++) free(hyp[i]);
    free(lines), free(lens), free(hyp_len), free(hyp);
    tf_bleu_score r;
    tf_bleu_compute(&st, &bo, &r);
    m->sum[0] += r.score, m->count[0] += 1;
    return rc ? -1 : 0;
}

static int s2s_signature(tf_task *t, char *out, size_t n) {
    s2s_task *s = (s2s_task *)t;
    tf_fields f = {s->fam->model_table, model_cfg(s)};
    return tf_fields_signature(&f, 1, out, n);
}

static int s2s_save(tf_task *t, const char *dir) { return ((s2s_task *)t)->fam->save(((s2s_task *)t)->m, dir); }

static int s2s_save_meta(tf_task *t, tf_st_writer *w) { return tf_task_tokenizer_save(((s2s_task *)t)->dir, w); }

static int s2s_check_meta(tf_task *t, const tf_st_file *f, const char *ck) {
    return tf_task_tokenizer_check(((s2s_task *)t)->dir, f, ck);
}

static int64_t s2s_tokens(tf_task *t, int rows) {
    (void)rows; /* a batch holds about batch_tokens padded tokens, whatever the rows */
    s2s_task *s = (s2s_task *)t;
    return *cfg_int(s, s->fam->batch_tokens_off);
}

static void s2s_free(tf_task *t) {
    s2s_task *s = (s2s_task *)t;
    if (s->m) s->fam->model_free(s->m);
    tf_tokenizer_free(s->tok);
    tf_loader_free(s->loader);
    tf_parallel_set_free(&s->train), tf_parallel_set_free(&s->valid);
    tf_lines_free(&s->vsrc), tf_lines_free(&s->vtgt);
    free(s->cfg), free(s->dir);
    free(s);
}

static const tf_task_vt S2S_TASK = {
    .batch = s2s_batch,
    .loss = s2s_loss,
    .params = s2s_params,
    .signature = s2s_signature,
    .save = s2s_save,
    .save_meta = s2s_save_meta,
    .check_meta = s2s_check_meta,
    .tokens = s2s_tokens,
    .free = s2s_free,
    .score = s2s_score,
};

/* ---------------------------------------------------------------- construction */

/* A sentence longer than max_len (tf_parallel_read's error): what to change, by the flags' names. */
static int length_hint(int max_len, int context, int chars) {
    if (!strstr(tf_error(), " ids, more than max_len ")) return -1;
    char msg[1024];
    snprintf(msg, sizeof msg, "%s", tf_error());
    return tf_set_error("%s: raise --max-len (now %d; at most --context, now %d)%s", msg, max_len, context,
                        chars ? ", or give a sub-word --tokenizer (the tokens are now the data's characters)" : "");
}

/* The tokenizer (learned from both training files for "char"; NULL: "char"), the vocabularies, both sets, the loader. */
static int load_data(s2s_task *s, const char *src, const char *tgt, const char *vsrc, const char *vtgt,
                     const char *tokenizer, int resume, uint64_t seed) {
    const tf_translation_family *fam = s->fam;
    const char *files[2] = {src, tgt};
    int chars = !tokenizer || !strcmp(tokenizer, "char");
    if (tf_task_tokenizer_prepare(chars ? "char" : tokenizer, files, 2, s->dir, resume)) return -1;
    if (!(s->tok = tf_tokenizer_load(s->dir))) return -1;
    int *sv = model_int(s, fam->src_vocab_off), *tv = model_int(s, fam->tgt_vocab_off);
    int context = *model_int(s, fam->context_off), max_len = *cfg_int(s, fam->max_len_off);
    int vocab = tf_tokenizer_vocab_size(s->tok) + TF_SEQ2SEQ_SPECIALS;
    if ((*sv && *sv != vocab) || (*tv && *tv != vocab))
        return tf_set_error("src_vocab %d, tgt_vocab %d: the tokenizer has %d tokens + %d specials = %d", *sv, *tv,
                            vocab - TF_SEQ2SEQ_SPECIALS, TF_SEQ2SEQ_SPECIALS, vocab);
    *sv = *tv = vocab;
    if (max_len > context) return tf_set_error("--max-len %d exceeds the model's --context %d", max_len, context);
    tf_parallel_opts o = tf_parallel_opts_default();
    o.max_len = max_len;
    o.src_pad = o.tgt_pad = tf_seq2seq_pad_id(vocab);
    o.tgt_bos = tf_seq2seq_bos_id(vocab);
    o.src_eos = o.tgt_eos = tf_seq2seq_eos_id(vocab);
    if (tf_parallel_read(s->tok, s->tok, src, tgt, &o, &s->train) ||
        tf_parallel_read(s->tok, s->tok, vsrc, vtgt, &o, &s->valid))
        return length_hint(max_len, context, chars);
    if (*cfg_int(s, fam->val_bleu_off) > 0) {
        if (tf_lines_read(vsrc, &s->vsrc) || tf_lines_read(vtgt, &s->vtgt)) return -1;
        s->base.n_metrics = 1, s->base.metric_names[0] = "bleu", s->base.select_metric = 1;
    }
    s->loader = tf_parallel_loader_new(&s->train, &s->valid, *cfg_int(s, fam->batch_tokens_off), 0, seed);
    return s->loader ? 0 : -1;
}

tf_task *tf_translation_task_new(const tf_translation_family *fam, const void *cfg, const char *src, const char *tgt,
                                 const char *valid_src, const char *valid_tgt, const char *tokenizer,
                                 const char *run_dir, int resume, int accum, uint64_t seed) {
    if (!src || !tgt || !valid_src || !valid_tgt)
        return tf_set_error("train: translation needs --src, --tgt, --valid-src and --valid-tgt"), NULL;
    if (accum < 1 || accum > 1024) return tf_set_error("train: accum %d (1 to 1024)", accum), NULL;
    if (mkdir(run_dir, 0755) && errno != EEXIST)
        return tf_set_error("%s: cannot create: %s", run_dir, strerror(errno)), NULL;
    s2s_task *s = calloc(1, sizeof *s);
    size_t n = strlen(run_dir) + 1;
    if (!s || !(s->dir = malloc(n)) || !(s->cfg = malloc(fam->cfg_size))) {
        if (s) free(s->dir), free(s);
        return tf_set_error("train: out of memory"), NULL;
    }
    memcpy(s->dir, run_dir, n);
    memcpy(s->cfg, cfg, fam->cfg_size);
    s->base.vt = &S2S_TASK, s->fam = fam, s->accum = accum, s->base.token_batches = 1;
    s->base.config = (tf_fields){fam->task_table, s->cfg};
    if (load_data(s, src, tgt, valid_src, valid_tgt, tokenizer, resume, seed) ||
        !(s->m = fam->model_new(model_cfg(s), seed ? seed : 1))) {
        s2s_free(&s->base);
        return NULL;
    }
    return &s->base;
}

tf_task *tf_seq2seq_task_new(const tf_seq2seq_task_config *c, const char *src, const char *tgt, const char *valid_src,
                             const char *valid_tgt, const char *tokenizer, const char *run_dir, int resume, int accum,
                             uint64_t seed) {
    return tf_translation_task_new(&TRANSFORMER, c, src, tgt, valid_src, valid_tgt, tokenizer, run_dir, resume, accum,
                                   seed);
}

int64_t tf_seq2seq_task_val_batches(const tf_task *t) {
    return tf_parallel_loader_batches(((const s2s_task *)t)->loader, TF_SUBSET_VAL);
}

const void *tf_translation_task_model(const tf_task *t, const tf_translation_family *fam) {
    const s2s_task *s = (const s2s_task *)t;
    return s && s->base.vt == &S2S_TASK && s->fam == fam ? s->m : NULL;
}

const tf_seq2seq *tf_seq2seq_task_model(const tf_task *t) { return tf_translation_task_model(t, &TRANSFORMER); }
