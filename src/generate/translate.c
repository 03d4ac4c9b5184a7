/* A line through any encoder-decoder: tokenize, append EOS, search (greedy
 * or beam) from BOS within a length bound that grows with the source, drop
 * EOS and whatever is not a target token, detokenize. tformer translate and
 * the translation task's validation BLEU both go through here. */
#include <string.h>

#include "../core/internal.h"
#include "tformer/generate.h"

tf_translate_opts tf_translate_opts_default(void) {
    tf_translate_opts o = {tf_generate_opts_default(), 1.5f, 10};
    o.search.beam = 1, o.search.temperature = 0;
    return o;
}

int tf_translate_ids(const tf_translator *t, const tf_translate_opts *o, const int32_t *src, int n_src, tf_ids *out) {
    if (n_src > t->context) return tf_set_error("%d source ids, more than the model's context of %d", n_src, t->context);
    tf_generate_opts g = o->search;
    double want = (double)o->max_len_a * n_src + o->max_len_b;
    g.max_tokens = want < t->context - 1 ? (int)want : t->context - 1; /* BOS takes a position */
    if (g.max_tokens < 1) g.max_tokens = 1;
    g.eos_id = t->eos_id;
    size_t first = out->n;
    tf_decoder *d = t->decoder_new(t->model, src, n_src, g.max_tokens + 1);
    int rc = !d || tf_generate(d, &t->bos_id, 1, &g, NULL, NULL, out, NULL);
    if (d) tf_decoder_free(d);
    if (rc) return -1;
    size_t k = first; /* EOS, padding or BOS, should a model produce them, are not text */
    int32_t V = tf_tokenizer_vocab_size(t->tgt_tok);
    for (size_t i = first; i < out->n; i++)
        if (out->v[i] >= 0 && out->v[i] < V && out->v[i] != t->eos_id && out->v[i] != t->bos_id) out->v[k++] = out->v[i];
    out->n = k;
    return 0;
}

int tf_translate_line_ids(const tf_translator *t, const tf_translate_opts *o, const char *line, size_t len, char **text,
                          size_t *text_len, tf_ids *src, tf_ids *tgt) {
    tf_ids ids = {0}, out = {0};
    *text = NULL, *text_len = 0;
    int rc = tf_tokenizer_encode(t->src_tok, line, len, &ids) || tf_ids_push(&ids, t->src_eos_id);
    if (!rc && (int64_t)ids.n > t->context)
        rc = tf_set_error("%zu tokens, more than the model's context of %d", ids.n, t->context);
    rc = rc || tf_translate_ids(t, o, ids.v, (int)ids.n, &out) || tf_tokenizer_decode(t->tgt_tok, out.v, out.n, text, text_len);
    while (!rc && *text_len > 0 && (*text)[*text_len - 1] == ' ') (*text)[--*text_len] = 0; /* a sub-word BPE's last word end */
    if (!rc && src) tf_ids_free(src), *src = ids, ids = (tf_ids){0};
    if (!rc && tgt) tf_ids_free(tgt), *tgt = out, out = (tf_ids){0};
    tf_ids_free(&ids), tf_ids_free(&out);
    return rc ? -1 : 0;
}

int tf_translate_line(const tf_translator *t, const tf_translate_opts *o, const char *line, size_t len, char **text,
                      size_t *text_len) {
    return tf_translate_line_ids(t, o, line, len, text, text_len, NULL, NULL);
}
