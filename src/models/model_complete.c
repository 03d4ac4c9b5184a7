/* TF_CAP_GENERATE through the model handle: tf_model_generate (the family's generate, beam
 * search included) and completions stepped one token at a time (tf_completion over
 * tf_gen_seq), which a server steps together. Both cut their text at the stop strings the same
 * way (gen_text). And a text's attention (tf_model_text_attention), what a page draws of it. */
#include <stdlib.h>
#include <string.h>

#include "model_impl.h"

/* The text of the ids generated so far, cut at the first stop string, its new part passed on as it grows. */
typedef struct {
    tf_tokenizer *tok;
    tf_ids ids;
    char *text;       /* the decoded continuation, cut at a stop */
    size_t len, sent; /* its bytes, and those passed on */
    const char *const *stops;
    int n_stops;
    tf_text_fn on_text;
    void *user;
    int failed;       /* an id could not be decoded (tf_error() says why) */
    int32_t bad_id;
    int stopped;      /* a stop string was seen */
} gen_text;

/* Where the first stop string begins in text, or NULL. */
static char *first_stop(const gen_text *s, char *text) {
    char *first = NULL;
    for (int i = 0; i < s->n_stops; i++) {
        char *hit = s->stops[i] && *s->stops[i] ? strstr(text, s->stops[i]) : NULL;
        if (hit && (!first || hit < first)) first = hit;
    }
    return first;
}

/* One more id: the text decoded again and cut; 1 when it should end (a stop string, on_text). */
static int gen_token(void *user, int32_t id) {
    gen_text *s = user;
    char *text;
    size_t len;
    if (tf_ids_push(&s->ids, id) || tf_tokenizer_decode(s->tok, s->ids.v, s->ids.n, &text, &len))
        return s->bad_id = id, s->failed = 1;
    char *hit = first_stop(s, text);
    if (hit) len = (size_t)(hit - text), *hit = 0, s->stopped = 1;
    int stop = s->stopped;
    free(s->text);
    s->text = text, s->len = len;
    if (len > s->sent && s->on_text) stop |= s->on_text(s->user, text + s->sent, len - s->sent) != 0;
    if (len > s->sent) s->sent = len;
    return stop;
}

/* The error of an id that did not decode. */
static int gen_failed(const gen_text *s) {
    char why[768];
    snprintf(why, sizeof why, "%s", tf_error());
    return tf_set_error("generate: cannot decode the generated id %d: %s", (int)s->bad_id, why);
}

int tf_model_generate(const tf_model *m, const char *prompt, const tf_generate_opts *o, const char *stop,
                      tf_text_fn on_text, void *user, char **text, size_t *len, tf_generation *g) {
    *text = NULL, *len = 0;
    if (g) memset(g, 0, sizeof *g);
    if (tf_model_require(m, TF_CAP_GENERATE)) return -1;
    if (!prompt || !o) return tf_set_error("generate: no prompt or options");
    tf_ids ids = {0}, out = {0};
    int32_t eos = -1;
    gen_text s = {.tok = m->tok, .stops = &stop, .n_stops = 1, .on_text = on_text, .user = user};
    int rc = tf_tokenizer_encode(m->tok, prompt, strlen(prompt), &ids);
    if (!rc) rc = m->f->generate(m->impl, m->tok, ids.v, (int)ids.n, o, gen_token, &s, &out, &eos);
    if (!rc && s.failed) rc = gen_failed(&s);
    if (!rc && !s.text && !(s.text = calloc(1, 1))) rc = tf_set_error("generate: out of memory");
    if (!rc) s.text[s.len] = 0, *text = s.text, *len = s.len, s.text = NULL;
    if (!rc && g) {
        g->prompt_tokens = (int)ids.n, g->ids = out, out = (tf_ids){0};
        int at_eos = eos >= 0 && g->ids.n && g->ids.v[g->ids.n - 1] == eos;
        g->finish = s.stopped ? "stop" : at_eos ? "eos" : "length";
    }
    free(s.text);
    tf_ids_free(&s.ids), tf_ids_free(&ids), tf_ids_free(&out);
    return rc;
}

int tf_model_text_loss(const tf_model *m, const char *const *files, int n, double *loss, int64_t *tokens) {
    *loss = 0, *tokens = 0;
    if (tf_model_require(m, TF_CAP_GENERATE)) return -1;
    if (!m->f->text_loss) return tf_set_error("%s: a %s model gives no loss on text", m->dir, m->f->name);
    if (n < 1 || !files) return tf_set_error("eval: no text files");
    return m->f->text_loss(m->impl, m->tok, files, n, loss, tokens);
}

void tf_generation_free(tf_generation *g) {
    if (!g) return;
    tf_ids_free(&g->ids);
    memset(g, 0, sizeof *g);
}

int tf_model_text_attention(const tf_model *m, const char *text, tf_text_attention *a) {
    memset(a, 0, sizeof *a);
    if (!text) return tf_set_error("attention: no text");
    if (!m->f->text_attention || !m->tok)
        return tf_set_error("attention: the %s family shows no attention over a text%s", m->f->name,
                            m->tok ? "" : " (and the folder holds no tokenizer)");
    tf_ids ids = {0}, types = {0};
    /* a language model reads the text's tokens; an encoder the text as its tokenizer frames it
     * for the model ([CLS] text [SEP]) */
    int rc = m->caps & TF_CAP_GENERATE ? tf_tokenizer_encode(m->tok, text, strlen(text), &ids)
                                       : tf_tokenizer_encode_pair(m->tok, text, strlen(text), NULL, 0, 0, &ids, &types);
    tf_ids_free(&types);
    if (!rc && !ids.n) rc = tf_set_error("attention: the text has no tokens");
    if (!rc) rc = m->f->text_attention(m->impl, ids.v, (int)ids.n, a);
    tf_ids_free(&ids);
    if (rc) tf_text_attention_free(a);
    return rc;
}

void tf_text_attention_free(tf_text_attention *a) {
    free(a->ids), free(a->probs);
    memset(a, 0, sizeof *a);
}

/* ---------------------------------------------------------------- one token at a time */

struct tf_completion {
    const tf_model *m;
    tf_decoder *d;
    tf_gen_seq *seq;
    gen_text t;
    char *stops[TF_MAX_STOPS]; /* copies */
    int prompt_tokens, max_tokens, ended;
    int32_t eos_id, last;
    size_t added;
};

void tf_completion_free(tf_completion *c) {
    if (!c) return;
    tf_gen_seq_free(c->seq);
    tf_decoder_free(c->d);
    for (int i = 0; i < TF_MAX_STOPS; i++) free(c->stops[i]);
    free(c->t.text), tf_ids_free(&c->t.ids);
    free(c);
}

static int copy_stops(tf_completion *c, const char *const *stops, int n_stops) {
    if (n_stops < 0 || n_stops > TF_MAX_STOPS || (n_stops && !stops))
        return tf_set_error("generate: %d stop strings: at most %d", n_stops, TF_MAX_STOPS);
    for (int i = 0; i < n_stops; i++)
        if (stops[i] && *stops[i] && !(c->stops[c->t.n_stops++] = strdup(stops[i])))
            return tf_set_error("generate: out of memory");
    c->t.stops = (const char *const *)c->stops;
    return 0;
}

tf_completion *tf_model_completion_new(const tf_model *m, const char *prompt, const tf_generate_opts *o,
                                       const char *const *stops, int n_stops) {
    if (tf_model_require(m, TF_CAP_GENERATE)) return NULL;
    if (!prompt || !o) return tf_set_error("generate: no prompt or options"), NULL;
    if (!m->f->decoder)
        return tf_set_error("generate: the %s family generates whole sequences only, not a token at a time",
                            m->f->name), NULL;
    tf_completion *c = calloc(1, sizeof *c);
    if (!c) return tf_set_error("generate: out of memory"), NULL;
    c->m = m, c->t.tok = m->tok, c->last = -1, c->max_tokens = o->max_tokens;
    tf_ids ids = {0};
    int rc = copy_stops(c, stops, n_stops) || tf_tokenizer_encode(m->tok, prompt, strlen(prompt), &ids);
    tf_generate_opts g = *o;
    if (!rc && !(c->d = m->f->decoder(m->impl, m->tok, (int)ids.n, o->max_tokens, &g.eos_id))) rc = -1;
    if (!rc && !(c->seq = tf_gen_seq_new(c->d, ids.v, (int)ids.n, &g))) rc = -1;
    c->prompt_tokens = (int)ids.n, c->eos_id = g.eos_id;
    tf_ids_free(&ids);
    if (rc) return tf_completion_free(c), NULL;
    return c;
}

/* The id the step chose through the text's stop strings. */
static int take(tf_completion *c) {
    size_t before = c->t.sent;
    c->added = 0;
    int32_t id = tf_gen_seq_last(c->seq, NULL);
    if (id < 0) return 0;
    c->last = id;
    if (gen_token(&c->t, id)) {
        if (c->t.failed) return gen_failed(&c->t);
        tf_gen_seq_end(c->seq);
    }
    c->added = c->t.sent - before;
    return 0;
}

int tf_model_completions_step(tf_completion *const *c, int n, int *bad) {
    if (n < 0) return tf_set_error("generate: %d completions", n);
    tf_gen_seq *few[64] = {0}, **seqs = n <= 64 ? few : malloc((size_t)n * sizeof *seqs);
    if (!seqs) return tf_set_error("generate: out of memory");
    for (int i = 0; i < n; i++) seqs[i] = c[i]->seq;
    int failed = n, rc = tf_gen_seqs_step(seqs, n, &failed);
    int first = -1; /* a text that failed (an id that does not decode): the first one */
    for (int i = 0; i < failed; i++) /* those before a failed step took it */
        if (take(c[i]) && first < 0) first = i;
    if (first >= 0) failed = first, rc = -1;
    if (rc && bad) *bad = failed;
    if (seqs != few) free(seqs);
    return rc;
}

int tf_completion_done(const tf_completion *c) { return c->ended || tf_gen_seq_done(c->seq); }

void tf_completion_end(tf_completion *c) {
    c->ended = 1;
    tf_gen_seq_end(c->seq);
}

const char *tf_completion_text(const tf_completion *c, size_t *len, size_t *added) {
    if (len) *len = c->t.text ? c->t.len : 0;
    if (added) *added = c->added;
    return c->t.text ? c->t.text : "";
}

int32_t tf_completion_last(const tf_completion *c, double *logprob) { return tf_gen_seq_last(c->seq, logprob); }

const float *tf_completion_logits(const tf_completion *c, float *lse, int *vocab) {
    if (vocab) *vocab = c->d->vocab_size;
    return tf_gen_seq_logits(c->seq, lse);
}

int tf_completion_tokens(const tf_completion *c, int *prompt_tokens) {
    if (prompt_tokens) *prompt_tokens = c->prompt_tokens;
    return tf_gen_seq_steps(c->seq);
}

const char *tf_completion_finish(const tf_completion *c) {
    if (!tf_completion_done(c)) return NULL;
    if (c->ended || c->t.stopped || (c->last >= 0 && c->last == c->eos_id)) return "stop";
    return "length";
}
