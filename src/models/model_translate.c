/* Translation through the model handle (tformer/model.h): the folder's
 * translator (its tokenizers beside the model's decoders) and settings, made
 * once by tf_model_translator, then texts translated by any number of
 * threads (tf_model_translate). */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "../util/util.h"
#include "model_impl.h"

/* The tokenizers: a Marian folder's source.spm and target.spm (with vocab.json
 * beside them), else DIR/source and DIR/target when present, else DIR's one for both. */
static int load_tokenizers(tf_model *m) {
    char s[4200], t[4200];
    struct stat st;
    if (tf_path_join(s, sizeof s, m->dir, "source.spm") || tf_path_join(t, sizeof t, m->dir, "target.spm")) return -1;
    int apart = !stat(s, &st) && S_ISREG(st.st_mode) && !stat(t, &st) && S_ISREG(st.st_mode);
    if (!apart) {
        if (tf_path_join(s, sizeof s, m->dir, "source") || tf_path_join(t, sizeof t, m->dir, "target")) return -1;
        apart = !stat(s, &st) && S_ISDIR(st.st_mode);
    }
    m->src_tok = tf_tokenizer_load(apart ? s : m->dir);
    m->tgt_tok = m->src_tok && apart ? tf_tokenizer_load(t) : m->src_tok;
    return m->src_tok && m->tgt_tok ? 0 : -1;
}

/* tformer's folders: the model's vocabulary is the tokenizer's + 3; Marian's: the tokenizer's ids fit in it. */
static int check_vocab(const char *dir, const char *side, const tf_tokenizer *tok, int model_vocab, int inside) {
    int V = (int)tf_tokenizer_vocab_size(tok);
    if (inside ? V <= model_vocab : V + TF_SEQ2SEQ_SPECIALS == model_vocab) return 0;
    if (inside)
        return tf_set_error("%s: the %s tokenizer has %d tokens, more than the model's %s vocabulary of %d", dir, side,
                            V, side, model_vocab);
    return tf_set_error("%s: the %s tokenizer has %d tokens, the model's %s vocabulary %d (expected tokens + %d)", dir,
                        side, V, side, model_vocab, TF_SEQ2SEQ_SPECIALS);
}

int tf_model_translator(tf_model *m, const tf_translator **t, const tf_translation **tr, tf_translate_opts *o) {
    if (!m->translator_ready) {
        int rc = tf_model_translation(m, &m->tr) || load_tokenizers(m) ||
                 check_vocab(m->dir, "source", m->src_tok, m->tr.src_vocab, m->tr.inside) ||
                 check_vocab(m->dir, "target", m->tgt_tok, m->tr.tgt_vocab, m->tr.inside);
        m->topts = tf_translate_opts_default();
        if (!rc && m->f->translate_settings) rc = m->f->translate_settings(m->impl, m->dir, &m->topts, m->bad_ids);
        if (rc) { /* as before the call: a later one tries again */
            if (m->tgt_tok != m->src_tok) tf_tokenizer_free(m->tgt_tok);
            tf_tokenizer_free(m->src_tok);
            m->src_tok = m->tgt_tok = NULL;
            return -1;
        }
        const tf_translation *d = &m->tr;
        m->translator = (tf_translator){d->model, d->decoder_new, d->context, m->src_tok, m->tgt_tok,
                                        d->src_ids.eos, d->tgt_ids.bos, d->tgt_ids.eos, d->decoder_new_batch};
        m->translator_ready = 1;
    }
    if (t) *t = &m->translator;
    if (tr) *tr = &m->tr;
    if (o) *o = m->topts;
    return 0;
}

int tf_model_translate(const tf_model *m, int n, const char *const *texts, const tf_translate_opts *o, char **out,
                       size_t *lens) {
    if (tf_model_require(m, TF_CAP_TRANSLATE)) return -1;
    if (!m->translator_ready) return tf_set_error("%s: translate: tf_model_translator first", m->dir);
    if (n < 0) return tf_set_error("translate: %d texts", n);
    if (n == 0) return 0;
    size_t *own = lens ? NULL : malloc((size_t)n * sizeof *own), *l = lens ? lens : own;
    size_t *in = malloc((size_t)n * sizeof *in);
    if (!l || !in) return free(own), free(in), tf_set_error("translate: out of memory");
    for (int i = 0; i < n; i++) in[i] = strlen(texts[i]);
    int bad = -1;
    int rc = tf_translate_lines(&m->translator, o ? o : &m->topts, n, texts, in, out, l, &bad);
    if (rc && bad >= 0) {
        char why[900];
        snprintf(why, sizeof why, "%s", tf_error());
        tf_set_error("text %d: %s", bad, why);
    }
    free(own), free(in);
    return rc;
}
