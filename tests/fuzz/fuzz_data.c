/* libFuzzer target for the loaders of the data and vocabulary files the
 * command line reads. The first byte picks the loader, the second its
 * options; the rest is the file (split at NUL bytes where a loader reads
 * two or three):
 *   0  fine-tuning examples (tf_finetune_read, each task, with and without
 *      labels), then their labels and a WordPiece encoding;
 *   1  parallel text (tf_parallel_read: source NUL target), then batches;
 *   2  a character tokenizer's chars.txt;
 *   3  a WordPiece vocab.txt NUL a text to encode;
 *   4  tokenizer.tformer.json NUL vocab.json NUL merges.txt NUL a text
 *      (tformer's own BPE, or what the declaration names);
 *   5  BERT pre-training documents (tf_nsp_loader_new), then batches.
 * A loader must accept the file or say why, never crash; what it accepted
 * must hold together (the properties are in each function's comment). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tformer.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char g_dir[128];
static tf_tokenizer *g_chars, *g_wordpiece; /* 256 bytes; a BERT vocabulary */

static void put(const char *name, const void *p, size_t n) {
    char path[256];
    snprintf(path, sizeof path, "%s/%s", g_dir, name);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(p, 1, n, f) != n || fclose(f)) abort(); /* the fuzzer's own folder */
}

/* The input's part k of those separated by NUL bytes (the last runs to the end). */
static const uint8_t *part(const uint8_t *p, size_t n, int k, size_t *len) {
    for (; k > 0; k--) {
        const uint8_t *z = memchr(p, 0, n);
        if (!z) return *len = 0, p + n;
        n -= (size_t)(z + 1 - p), p = z + 1;
    }
    const uint8_t *z = memchr(p, 0, n);
    *len = z ? (size_t)(z - p) : n;
    return p;
}

/* ---------------------------------------------------------------- fine-tuning */

/* Labels are sorted and distinct, and the set's own labels pass the check. */
static void check_labels(const tf_finetune_set *s, char ***names, int *n) {
    *names = NULL, *n = 0;
    if (!s->labelled || s->kind == TF_FINETUNE_SPAN) return;
    if (tf_finetune_labels(s, names, n)) abort();
    for (int i = 1; i < *n; i++)
        if (strcmp((*names)[i - 1], (*names)[i]) >= 0) abort();
    if (tf_finetune_check_labels(s, "fuzz", *names, *n)) abort();
}

/* Every encoded example fits max_len; labels, tags and answers point inside. */
static void check_encoded(const tf_finetune_data *d, int n_labels, int max_len) {
    for (int i = 0; i < d->n; i++) {
        const tf_finetune_encoded *e = &d->ex[i];
        if (e->len < 2 || e->len > max_len) abort();
        if ((d->kind == TF_FINETUNE_CLASSIFY || d->kind == TF_FINETUNE_PAIRS) && d->labelled &&
            (e->label < 0 || e->label >= n_labels))
            abort();
        for (int t = 0; d->kind == TF_FINETUNE_TAG && d->labelled && t < e->len; t++)
            if (e->tok_labels[t] != -100 && (e->tok_labels[t] < 0 || e->tok_labels[t] >= n_labels)) abort();
        if (d->kind == TF_FINETUNE_SPAN && d->labelled && (e->start < 0 || e->end < e->start || e->end >= e->len))
            abort();
    }
}

static void fuzz_finetune(uint8_t opt, const uint8_t *p, size_t n) {
    tf_finetune_kind kind = (tf_finetune_kind)(opt % 4);
    int labelled = opt / 4 % 2, max_len = 8 + opt / 8 % 32;
    char path[192], **names;
    int n_names;
    tf_finetune_set s;
    put("examples.txt", p, n);
    snprintf(path, sizeof path, "%s/examples.txt", g_dir);
    if (tf_finetune_read(kind, path, labelled, &s)) return;
    if (s.kind != kind || s.labelled != labelled || s.n < 0) abort();
    check_labels(&s, &names, &n_names);
    tf_finetune_data d;
    if (g_wordpiece && !tf_finetune_encode(g_wordpiece, &s, names, n_names, max_len, &d)) {
        check_encoded(&d, n_names, max_len);
        tf_ctx *ctx = tf_ctx_new(1);
        tf_batch b = {0};
        if (ctx && d.n && tf_finetune_batch(&d, ctx, 0, d.n < 8 ? d.n : 8, &b)) abort(); /* encoded: batches */
        tf_ctx_free(ctx);
        tf_finetune_data_free(&d);
    }
    tf_finetune_labels_free(names, n_names);
    tf_finetune_set_free(&s);
}

/* ---------------------------------------------------------------- parallel text */

/* Every pair within max_len with both sides non-empty, ids up to max_id, lines in order. */
static void check_pairs(const tf_parallel_set *s, const tf_parallel_opts *o) {
    for (int i = 0; i < s->n; i++) {
        const tf_parallel_pair *q = &s->pairs[i];
        if (q->src_len < 1 || q->tgt_len < 1 || (i && q->line <= s->pairs[i - 1].line)) abort();
        if (o->max_len && (q->src_len + 1 > o->max_len || q->tgt_len + 1 > o->max_len)) abort();
        for (int k = 0; k < q->src_len; k++)
            if (s->ids[q->src + k] < 0 || s->ids[q->src + k] > s->max_id) abort();
        for (int k = 0; k < q->tgt_len; k++)
            if (s->ids[q->tgt + k] < 0 || s->ids[q->tgt + k] > s->max_id) abort();
    }
}

/* Every pair goes into a batch, directly and through a loader. */
static void parallel_batches(const tf_parallel_set *s, uint8_t opt) {
    tf_ctx *ctx = tf_ctx_new(1);
    int idx[8];
    for (int first = 0; ctx && first < s->n; first += 8) {
        int rows = s->n - first < 8 ? s->n - first : 8;
        tf_batch b = {0};
        for (int r = 0; r < rows; r++) idx[r] = first + r;
        if (tf_parallel_batch(s, ctx, idx, rows, &b)) abort();
        tf_ctx_reset(ctx);
    }
    tf_loader *l = s->n ? tf_parallel_loader_new(s, s, 64 + opt * 4, opt % 8, opt) : NULL;
    for (uint64_t key = 0; ctx && l && key < 3; key++) {
        tf_batch b = {0};
        if (tf_loader_next(l, ctx, key % 2 ? TF_SUBSET_VAL : TF_SUBSET_TRAIN, key, 1, &b)) abort();
        tf_ctx_reset(ctx);
    }
    tf_loader_free(l);
    tf_ctx_free(ctx);
}

static void fuzz_parallel(uint8_t opt, const uint8_t *p, size_t n) {
    size_t ls, lt;
    const uint8_t *src = part(p, n, 0, &ls), *tgt = part(p, n, 1, &lt);
    char sp[192], tp[192];
    put("src.txt", src, ls), put("tgt.txt", tgt, lt);
    snprintf(sp, sizeof sp, "%s/src.txt", g_dir), snprintf(tp, sizeof tp, "%s/tgt.txt", g_dir);
    tf_parallel_opts o = tf_parallel_opts_default();
    o.max_len = opt % 4 ? opt % 64 : 0, o.truncate = opt / 64 % 2, o.skip_empty = opt / 128;
    o.src_eos = 256, o.src_pad = 257, o.tgt_bos = 30522, o.tgt_eos = 30523, o.tgt_pad = 30524;
    tf_tokenizer *tgt_tok = opt % 2 && g_wordpiece ? g_wordpiece : g_chars; /* the same pointer or two */
    tf_parallel_set s;
    if (!g_chars || tf_parallel_read(g_chars, tgt_tok, sp, tp, &o, &s)) return;
    check_pairs(&s, &o);
    parallel_batches(&s, opt);
    tf_parallel_set_free(&s);
}

/* ---------------------------------------------------------------- vocabularies */

static void clear_tokenizer_files(void) {
    static const char *const NAMES[] = {"tokenizer.tformer.json", "chars.txt", "vocab.json", "merges.txt", "vocab.txt"};
    char path[256];
    for (size_t i = 0; i < sizeof NAMES / sizeof NAMES[0]; i++) {
        snprintf(path, sizeof path, "%s/tok/%s", g_dir, NAMES[i]);
        unlink(path);
    }
}

/* A text through a tokenizer and back: ids within the vocabulary; must_match: the
 * text is in a character tokenizer's alphabet, so it encodes and decodes back as it was. */
static void encode_decode(tf_tokenizer *t, const uint8_t *text, size_t n, int must_match) {
    tf_ids ids = {0};
    char *back = NULL;
    size_t blen = 0;
    int rc = tf_tokenizer_encode(t, (const char *)text, n, &ids);
    for (size_t i = 0; !rc && i < ids.n; i++)
        if (ids.v[i] < 0 || ids.v[i] >= tf_tokenizer_vocab_size(t)) abort();
    if (!rc) rc = tf_tokenizer_decode(t, ids.v, ids.n, &back, &blen);
    if (must_match && (rc || blen != n || memcmp(back, text, n))) abort();
    free(back);
    tf_ids_free(&ids);
}

/* 2: chars.txt, whose characters then encode and decode back; 3: vocab.txt NUL a text;
 * 4: tokenizer.tformer.json NUL vocab.json NUL merges.txt NUL a text. */
static void fuzz_vocabulary(int mode, const uint8_t *p, size_t n) {
    char path[256];
    size_t len[4];
    const uint8_t *f[4];
    for (int k = 0; k < 4; k++) f[k] = part(p, n, k, &len[k]);
    clear_tokenizer_files();
    if (mode == 2) put("tok/tokenizer.tformer.json", "{\"type\": \"char\"}", 16), put("tok/chars.txt", p, n);
    if (mode == 3) put("tok/vocab.txt", f[0], len[0]);
    if (mode == 4) {
        put("tok/tokenizer.tformer.json", f[0], len[0]);
        put("tok/vocab.json", f[1], len[1]), put("tok/merges.txt", f[2], len[2]);
    }
    snprintf(path, sizeof path, mode == 3 ? "%s/tok/vocab.txt" : "%s/tok", g_dir);
    tf_tokenizer *t = tf_tokenizer_load(path);
    if (!t) return;
    int text = mode == 2 ? -1 : mode == 3 ? 1 : 3;
    encode_decode(t, text < 0 ? p : f[text], text < 0 ? n : len[text], mode == 2);
    (void)tf_tokenizer_special_id(t, "cls"), (void)tf_tokenizer_token_id(t, "[UNK]");
    tf_tokenizer_free(t);
}

/* ---------------------------------------------------------------- BERT pre-training documents */

/* Batches of pairs within the context, NSP labels 0 or 1, MLM labels -100 or an id. */
static void check_nsp(const tf_batch *b, int rows, int context, int32_t vocab) {
    tf_tensor *ids = tf_batch_get(b, "input_ids"), *labels = tf_batch_get(b, "labels");
    tf_tensor *nsp = tf_batch_get(b, "next_sentence_label");
    if (!ids || !labels || !nsp || ids->ndim != 2 || ids->shape[0] != rows || ids->shape[1] > context) abort();
    for (int64_t i = 0; i < ids->shape[0] * ids->shape[1]; i++)
        if (tf_i32(ids)[i] < 0 || tf_i32(ids)[i] >= vocab ||
            (tf_i32(labels)[i] != -100 && (tf_i32(labels)[i] < 0 || tf_i32(labels)[i] >= vocab)))
            abort();
    for (int r = 0; r < rows; r++)
        if (tf_i32(nsp)[r] != 0 && tf_i32(nsp)[r] != 1) abort();
}

static void fuzz_nsp(uint8_t opt, const uint8_t *p, size_t n) {
    if (!g_wordpiece) return;
    char path[192];
    put("docs.txt", p, n);
    snprintf(path, sizeof path, "%s/docs.txt", g_dir);
    const char *files[] = {path};
    tf_tokenizer *t = g_wordpiece;
    tf_nsp_opts o = {8 + opt % 64, 0.15f, 0.5f, tf_tokenizer_special_id(t, "cls"), tf_tokenizer_special_id(t, "sep"),
                     tf_tokenizer_special_id(t, "mask"), tf_tokenizer_special_id(t, "pad"), tf_tokenizer_vocab_size(t)};
    tf_loader *l = tf_nsp_loader_new(t, files, 1, &o, opt);
    tf_ctx *ctx = l ? tf_ctx_new(1) : NULL;
    for (uint64_t key = 0; ctx && key < 2; key++) {
        tf_batch b = {0};
        if (tf_loader_next(l, ctx, key ? TF_SUBSET_VAL : TF_SUBSET_TRAIN, key, 4, &b)) abort();
        check_nsp(&b, 4, o.context, o.vocab_size);
        tf_ctx_reset(ctx);
    }
    tf_ctx_free(ctx);
    tf_loader_free(l);
}

/* ---------------------------------------------------------------- the input */

static void cleanup(void) {
    char cmd[160];
    snprintf(cmd, sizeof cmd, "rm -rf %s", g_dir);
    if (system(cmd)) return;
}

static int setup(void) {
    struct stat st;
    char sub[192];
    snprintf(g_dir, sizeof g_dir, "/tmp/tformer_fuzz_data_%d", (int)getpid());
    snprintf(sub, sizeof sub, "%s/tok", g_dir);
    (void)mkdir(g_dir, 0755), (void)mkdir(sub, 0755);
    if (stat(sub, &st) || !S_ISDIR(st.st_mode)) return -1;
    atexit(cleanup);
    g_chars = tf_tokenizer_load("char");
    g_wordpiece = tf_tokenizer_load("../shared/data/bert/bert-base-uncased-vocab.txt"); /* when there */
    if (!g_wordpiece) g_wordpiece = tf_tokenizer_load("tests/data/hf_wordpiece");
    return g_chars ? 0 : -1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static int ready;
    if (!ready && (setup() || !(ready = 1))) abort();
    if (size < 2) return 0;
    int mode = data[0] % 6;
    uint8_t opt = data[1];
    const uint8_t *p = data + 2;
    size_t n = size - 2;
    if (mode == 0) fuzz_finetune(opt, p, n);
    else if (mode == 1) fuzz_parallel(opt, p, n);
    else if (mode == 5) fuzz_nsp(opt, p, n);
    else fuzz_vocabulary(mode, p, n);
    return 0;
}
