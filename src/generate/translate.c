/* A line through any encoder-decoder: tokenize, append EOS, search (greedy
 * or beam) from BOS within a length bound that grows with the source, drop
 * EOS and whatever is not a target token, detokenize. Many lines: sorted by
 * source length and decoded a batch at a time (one forward per step for all
 * of a batch's hypotheses). tformer translate and the translation task's
 * validation BLEU both go through here. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../core/core_internal.h"
#include "tformer/generate.h"

tf_translate_opts tf_translate_opts_default(void) {
    tf_translate_opts o = {tf_generate_opts_default(), 1.5f, 10, 32};
    o.search.beam = 1, o.search.temperature = 0;
    return o;
}

/* New target ids for a source of n_src ids: a * n_src + b, within the context (BOS takes a position).
 * 0 (a zero budget): an empty translation, nothing decoded. */
static int max_new(const tf_translator *t, const tf_translate_opts *o, int n_src) {
    double want = (double)o->max_len_a * n_src + o->max_len_b;
    int m = want < t->context - 1 ? (int)want : t->context - 1;
    return m < 0 ? 0 : m;
}

static int check_lengths(const tf_translate_opts *o) {
    if (!(o->max_len_a >= 0 && o->max_len_a < INFINITY) || o->max_len_b < 0)
        return tf_set_error("translate: max_len_a in [0,inf) and max_len_b >= 0 (got %g and %d)", o->max_len_a,
                            o->max_len_b);
    return 0;
}

/* EOS, padding or BOS, should a model produce them, are not text: out->v[first..) filtered. */
static void keep_text_ids(const tf_translator *t, tf_ids *out, size_t first) {
    size_t k = first;
    int32_t V = tf_tokenizer_vocab_size(t->tgt_tok);
    for (size_t i = first; i < out->n; i++)
        if (out->v[i] >= 0 && out->v[i] < V && out->v[i] != t->eos_id && out->v[i] != t->bos_id) out->v[k++] = out->v[i];
    out->n = k;
}

int tf_translate_ids(const tf_translator *t, const tf_translate_opts *o, const int32_t *src, int n_src, tf_ids *out) {
    if (n_src > t->context) return tf_set_error("%d source ids, more than the model's context of %d", n_src, t->context);
    if (check_lengths(o)) return -1;
    tf_generate_opts g = o->search;
    g.max_tokens = max_new(t, o, n_src), g.eos_id = t->eos_id;
    if (g.max_tokens == 0) return 0;
    size_t first = out->n;
    tf_decoder *d = t->decoder_new(t->model, src, n_src, g.max_tokens + 1);
    int rc = !d || tf_generate(d, &t->bos_id, 1, &g, NULL, NULL, out, NULL);
    if (d) tf_decoder_free(d);
    if (rc) return -1;
    keep_text_ids(t, out, first);
    return 0;
}

/* A line's source ids: the tokenizer's, then EOS. */
static int source_ids(const tf_translator *t, const char *line, size_t len, tf_ids *ids) {
    int rc = tf_tokenizer_encode(t->src_tok, line, len, ids) || tf_ids_push(ids, t->src_eos_id);
    if (!rc && (int64_t)ids->n > t->context)
        rc = tf_set_error("%zu tokens, more than the model's context of %d", ids->n, t->context);
    return rc ? -1 : 0;
}

/* Target ids -> text without the trailing space a sub-word BPE's last word end leaves. */
static int target_text(const tf_translator *t, const tf_ids *out, char **text, size_t *text_len) {
    if (tf_tokenizer_decode(t->tgt_tok, out->v, out->n, text, text_len)) return -1;
    while (*text_len > 0 && (*text)[*text_len - 1] == ' ') (*text)[--*text_len] = 0;
    return 0;
}

int tf_translate_line_ids(const tf_translator *t, const tf_translate_opts *o, const char *line, size_t len, char **text,
                          size_t *text_len, tf_ids *src, tf_ids *tgt) {
    tf_ids ids = {0}, out = {0};
    *text = NULL, *text_len = 0;
    int rc = source_ids(t, line, len, &ids) || tf_translate_ids(t, o, ids.v, (int)ids.n, &out) ||
             target_text(t, &out, text, text_len);
    if (!rc && src) tf_ids_free(src), *src = ids, ids = (tf_ids){0};
    if (!rc && tgt) tf_ids_free(tgt), *tgt = out, out = (tf_ids){0};
    tf_ids_free(&ids), tf_ids_free(&out);
    return rc ? -1 : 0;
}

int tf_translate_line(const tf_translator *t, const tf_translate_opts *o, const char *line, size_t len, char **text,
                      size_t *text_len) {
    return tf_translate_line_ids(t, o, line, len, text, text_len, NULL, NULL);
}

/* ---------------------------------------------------------------- many lines */

/* Sentences order[0..n) decoded together: one decoder over their sources. */
static int translate_batch(const tf_translator *t, const tf_translate_opts *o, const tf_ids *src, const int *order,
                           int n, tf_ids *out) {
    const int32_t **s = malloc((size_t)n * sizeof *s);
    int *len = malloc((size_t)n * sizeof *len), *steps = malloc((size_t)n * sizeof *steps), most = 0, rc = 0;
    tf_ids *res = calloc((size_t)n, sizeof *res);
    if (!s || !len || !steps || !res) rc = tf_set_error("translate: out of memory");
    for (int i = 0; !rc && i < n; i++) {
        s[i] = src[order[i]].v, len[i] = (int)src[order[i]].n, steps[i] = max_new(t, o, len[i]);
        most = steps[i] > most ? steps[i] : most;
    }
    tf_generate_opts g = o->search;
    g.eos_id = t->eos_id, g.max_tokens = most;
    if (!rc && most == 0) { /* every budget zero: empty translations */
        for (int i = 0; i < n; i++) out[order[i]].n = 0;
        free(s), free(len), free(steps), free(res);
        return 0;
    }
    tf_decoder *d = rc ? NULL : t->decoder_new_batch(t->model, s, len, n, most + 1);
    if (!rc) rc = !d || tf_generate_rows(d, &t->bos_id, 1, &g, steps, res, NULL);
    for (int i = 0; i < n; i++) {
        if (!rc) keep_text_ids(t, &res[i], 0), tf_ids_free(&out[order[i]]), out[order[i]] = res[i];
        else if (res) tf_ids_free(&res[i]);
    }
    if (d) tf_decoder_free(d);
    free(s), free(len), free(steps), free(res);
    return rc ? -1 : 0;
}

typedef struct {
    size_t len;
    int line;
} by_len;

static int shorter(const void *a, const void *b) {
    const by_len *x = a, *y = b;
    return x->len != y->len ? (x->len < y->len ? -1 : 1) : (x->line > y->line) - (x->line < y->line);
}

/* Batch b of n sentences in order, batch at a time: one decoder over them, or one sentence at a time. */
static int translate_chunk(const tf_translator *t, const tf_translate_opts *o, const tf_ids *src, const int *order,
                           int n, int batch, int b, tf_ids *out, int *bad) {
    int k = n - b * batch < batch ? n - b * batch : batch;
    order += b * batch;
    if (t->decoder_new_batch && k > 1) {
        int rc = translate_batch(t, o, src, order, k, out);
        if (rc) *bad = order[0];
        return rc;
    }
    for (int j = 0; j < k; j++)
        if (tf_translate_ids(t, o, src[order[j]].v, (int)src[order[j]].n, &out[order[j]])) return *bad = order[j], -1;
    return 0;
}

/* Every line's target ids into out: batches of similar source lengths, the
 * longest first (memory reaches its size with the first batch and serves
 * the others: growing with each batch cost fresh pages, 2 MiB huge pages
 * cleared for the larger contexts, 15% of greedy decoding). With more
 * batches than threads, each thread decodes whole batches (one thread each,
 * dynamically shared out); a batch's result does not depend on the thread
 * that decodes it. The first error in line order wins. */
static int translate_all(const tf_translator *t, const tf_translate_opts *o, const tf_ids *src, int n, tf_ids *out,
                         int *bad) {
    by_len *key = malloc((size_t)n * sizeof *key);
    int *order = malloc((size_t)n * sizeof *order), rc = key && order ? 0 : tf_set_error("translate: out of memory");
    for (int i = 0; !rc && i < n; i++) key[i] = (by_len){src[i].n, i};
    if (!rc) qsort(key, (size_t)n, sizeof *key, shorter);
    for (int i = 0; !rc && i < n; i++) order[i] = key[i].line;
    int batch = o->batch > 0 ? o->batch : 1, n_batch = (n + batch - 1) / batch, threads = tf_threads_free(), first = n;
    char error[1024] = "";
    if (!rc && threads > 1 && n_batch >= threads) {
#pragma omp parallel for schedule(dynamic, 1)
        for (int b = n_batch - 1; b >= 0; b--) {
            int where = -1;
            if (translate_chunk(t, o, src, order, n, batch, b, out, &where)) {
#pragma omp critical(tf_translate_error)
                if (where < first) first = where, snprintf(error, sizeof error, "%s", tf_error());
            }
        }
        if (first < n) rc = tf_set_error("%s", error);
    } else { /* longest first too: the contexts and buffers reach their size at once, then serve every batch */
        for (int b = n_batch - 1; !rc && b >= 0; b--) rc = translate_chunk(t, o, src, order, n, batch, b, out, &first);
    }
    if (rc && bad) *bad = first < n ? first : -1;
    free(key), free(order);
    return rc ? -1 : 0;
}

int tf_translate_lines(const tf_translator *t, const tf_translate_opts *o, int n, const char *const *lines,
                       const size_t *lens, char **texts, size_t *text_lens, int *bad) {
    if (bad) *bad = -1;
    if (n <= 0) return n < 0 ? tf_set_error("translate: %d lines", n) : 0;
    if (check_lengths(o)) return -1;
    tf_ids *src = calloc((size_t)n + 1, sizeof *src), *out = calloc((size_t)n + 1, sizeof *out);
    int rc = src && out ? 0 : tf_set_error("translate: out of memory"), i = 0;
    for (; !rc && i < n; i++) rc = source_ids(t, lines[i], lens[i], &src[i]);
    if (rc && bad && src && out) *bad = i - 1;
    if (!rc) rc = translate_all(t, o, src, n, out, bad);
    for (i = 0; i < n; i++) texts[i] = NULL, text_lens[i] = 0;
    for (i = 0; !rc && i < n; i++)
        if ((rc = target_text(t, &out[i], &texts[i], &text_lens[i])) && bad) *bad = i;
    for (i = 0; rc && i < n; i++) free(texts[i]), texts[i] = NULL;
    for (i = 0; src && out && i < n; i++) tf_ids_free(&src[i]), tf_ids_free(&out[i]);
    free(src), free(out);
    return rc ? -1 : 0;
}
