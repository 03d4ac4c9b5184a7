/* tformer translate --model DIR < src > hyp: one source sentence per line,
 * its translation per line (greedy, or beam search with --beam N); with
 * --attention-png OUT, OUT/0001.png ... draw each sentence's attention. The
 * folder holds the model (config.json, model.safetensors) and either one
 * tokenizer for both languages or source/ and target/ folders with one each
 * (a Hugging Face Marian folder: source.spm and target.spm with vocab.json);
 * ids V, V+1, V+2 after a tokenizer's V are padding, BOS and EOS (Marian:
 * the config's pad, decoder start and eos ids). The
 * folder's family (the model handle: the Transformer, the RNN baseline, Marian)
 * gives the decoders. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cjson/cJSON.h>

#include "cli.h"

enum { MODEL, ATTENTION_PNG, THREADS, JSON, ATTENTION_SCALE, PRECISION };
const cli_flag cmd_translate_flags[] = {
    [MODEL] = {"model", CLI_STRING, "DIR", NULL, "a translation folder (tformer train --arch seq2seq or rnn) or a Hugging Face MarianMTModel folder"},
    [ATTENTION_PNG] = {"attention-png", CLI_STRING, "OUT", "",
                       "write OUT/0001.png ... (one per input line, OUT created if absent): the attention of each translation"},
    [THREADS] = CLI_THREADS_ROW,
    [JSON] = {"json", CLI_SWITCH, NULL, "off",
              "one JSON object per input line, {\"source\", \"translation\"}, instead of the text (JSON Lines; "
              "docs/json.md)"},
    [ATTENTION_SCALE] = CLI_ATTENTION_SCALE_ROW("fixed"),
    [PRECISION] = CLI_PRECISION_ROW,
    CLI_END,
};

/* tf_beam_stop's names, by value. */
static const char *const BEAM_STOPS[] = {"tformer", "hf", "hf-early", "hf-never", NULL};

/* The search's options: ranges and --help from one table (the flag parser's numbers). */
#define R(m, name, type, range, help) TF_FIELD_ROW(tf_translate_opts, m, type, name, NULL, range, NULL, help, 0, NULL)
static const tf_field OPTION_ROWS[] = {
    R(search.beam, "beam", TF_FIELD_INT, "[1,64]",
      "beam width; 1: greedy (a Marian folder: its num_beams unless given)"),
    R(search.length_penalty, "length_penalty", TF_FIELD_FLOAT, "[-10,10]",
      "beam scores are sum(log p) / length^X (a Marian folder: its length_penalty unless given)"),
    R(max_len_a, "max_len_a", TF_FIELD_FLOAT, "[0,100]",
      "at most X * source tokens + --max-len-b target tokens, EOS included (0 and 0: empty translations); a Marian "
      "folder without either flag: its max_length - 1, as generate()"),
    R(max_len_b, "max_len_b", TF_FIELD_INT, "[0,inf)",
      "target tokens beyond --max-len-a's share; the model's context bounds both"),
    R(batch, "batch", TF_FIELD_INT, "[1,1024]",
      "sentences decoded together (sorted by length; output in input order); 1: one at a time"),
    TF_FIELD_ROW(tf_translate_opts, search.beam_stop, TF_FIELD_ENUM, "beam_stop", NULL, NULL, BEAM_STOPS,
                 "when a beam search ends: tformer (each ended hypothesis narrows the beam until none is live), hf "
                 "(transformers' early_stopping=False), hf-early (True: N ended; "
                 "CTranslate2's rule), hf-never (\"never\": hf's bound with the longest length when "
                 "--length-penalty > 0); a Marian folder: its early_stopping unless given",
                 0, NULL),
};
#undef R
static const tf_field_table OPTIONS = {"translation", OPTION_ROWS, (int)(sizeof OPTION_ROWS / sizeof OPTION_ROWS[0])};

static tf_translate_opts g_opts;
static tf_fields g_tables[1];

int cmd_translate_tables(const tf_fields **t) {
    g_opts = tf_translate_opts_default();
    g_tables[0] = (tf_fields){&OPTIONS, &g_opts};
    *t = g_tables;
    return 1;
}

/* id's text as a label: the specials named, a sub-word BPE's word end (its
 * trailing space) dropped and "@@" after a piece that continues a word
 * (subword-nmt's convention), other spaces trimmed, a bare space shown as U+2423. */
static char *token_label(const tf_tokenizer *tok, int32_t id, int32_t eos) {
    char *text = NULL;
    size_t n = 0;
    if (id < 0 || id >= tf_tokenizer_vocab_size(tok)) return strdup(id == eos ? "</s>" : "<special>");
    if (tf_tokenizer_decode(tok, &id, 1, &text, &n)) return strdup("?");
    int word_end = n > 0 && text[n - 1] == ' ', bpe = tf_tokenizer_kind_of(tok) == TF_TOKENIZER_BPE;
    size_t b = 0, e = n;
    while (b < e && (text[b] == ' ' || text[b] == '\t')) b++;
    while (e > b && (text[e - 1] == ' ' || text[e - 1] == '\t' || text[e - 1] == '\n')) e--;
    char *l = malloc(e - b + 4);
    if (!l) return free(text), NULL;
    if (b == e) snprintf(l, e - b + 4, "\xE2\x90\xA3"); /* a visible space */
    else snprintf(l, e - b + 4, "%.*s%s", (int)(e - b), text + b, bpe && !word_end ? "@@" : "");
    free(text);
    return l;
}

/* Labels for ids (n of them), then extra when non-NULL: malloc'd strings. */
static char **labels(const cli_verb *v, const tf_tokenizer *tok, const int32_t *ids, int n, int32_t eos, const char *extra) {
    char **l = calloc((size_t)n + 1, sizeof *l);
    for (int i = 0; l && i < n; i++)
        if (!(l[i] = token_label(tok, ids[i], eos))) cli_die(v, "out of memory");
    if (!l || (extra && !(l[n] = strdup(extra)))) cli_die(v, "out of memory");
    return l;
}

static void free_labels(char **l, int n) {
    for (int i = 0; l && i < n; i++) free(l[i]);
    free(l);
}

/* The shared pieces of every picture of a run. */
typedef struct {
    const tf_translation *m;
    const tf_translator *t;
    const char *out;
    tf_ctx *ctx;
    int auto_scale; /* --attention-scale auto */
} picture_job;

/* OUT/<line>.png: the attention of the chosen translation, from one forward
 * of the model over the source and BOS + the translation (teacher forcing):
 * target rows = the translation's tokens then </s>, source columns = the source's tokens then </s>. */
static int draw_sentence(const cli_verb *v, const picture_job *j, int line_no, const tf_ids *src, const tf_ids *hyp) {
    int S = (int)src->n, T = (int)hyp->n + 1, rc;
    tf_ctx_reset(j->ctx);
    tf_tensor *s = tf_tensor_new(j->ctx, TF_DTYPE_I32, 2, (int64_t[]){1, S}, 0);
    tf_tensor *g = tf_tensor_new(j->ctx, TF_DTYPE_I32, 2, (int64_t[]){1, T}, 0);
    if (!s || !g) return -1;
    memcpy(tf_i32(s), src->v, (size_t)S * sizeof *src->v);
    tf_i32(g)[0] = j->t->bos_id;
    memcpy(tf_i32(g) + 1, hyp->v, hyp->n * sizeof *hyp->v);
    tf_attention_maps a = {0};
    char **sl = labels(v, j->t->src_tok, src->v, S, j->t->src_eos_id, NULL);
    char **tl = labels(v, j->t->tgt_tok, hyp->v, T - 1, j->t->eos_id, "</s>");
    rc = j->m->attend(j->m->model, j->ctx, s, g, &a);
    if (!rc) {
        char path[4200], title[64];
        snprintf(path, sizeof path, "%s/%04d.png", j->out, line_no);
        snprintf(title, sizeof title, "sentence %d", line_no);
        tf_attention_plot p = {title, a.what, (const char *const *)sl, (const char *const *)tl, S, T, a.panel, a.grid,
                               a.rows, a.cols, "layer", "head", j->auto_scale};
        rc = tf_plot_attention(path, &p);
    }
    free(a.panel), free(a.grid);
    free_labels(sl, S), free_labels(tl, T);
    return rc;
}

static _Noreturn void die_line(const cli_verb *v, int line_no) {
    char msg[1200];
    snprintf(msg, sizeof msg, "standard input line %d: %s", line_no, tf_error());
    cli_die(v, msg);
}

static int g_json; /* --json */

/* One translation: its line, or with --json {"source", "translation"} on one line. */
static void emit(const cli_verb *v, const char *src, size_t src_len, const char *text, size_t len) {
    if (!g_json) {
        fwrite(text, 1, len, stdout), putchar('\n');
        return;
    }
    char *s = strndup(src, src_len), *t = strndup(text, len);
    if (!s || !t) cli_die(v, "out of memory");
    cJSON *j = cli_json_object(v, NULL, NULL);
    cli_json_str(v, j, "source", s), cli_json_str(v, j, "translation", t);
    cli_json_print(v, j);
    free(s), free(t);
}

/* Lines read, translated and written at a time (tf_translate_lines batches and sorts them):
 * memory bounded by it, whatever the input's length. */
enum { CHUNK = 1024 };

/* Each line of input translated to standard output and drawn (job): one at a time; the lines. */
static int translate_lines(const cli_verb *v, const tf_translator *t, const tf_translate_opts *o, cli_lines *in,
                           const picture_job *job) {
    tf_ids src = {0}, hyp = {0};
    const char *lines[CHUNK];
    size_t lens[CHUNK];
    int line_no = 0;
    for (int n; (n = cli_lines_next(v, in, CHUNK, lines, lens)) > 0;)
        for (int k = 0; k < n; k++) {
            char *text;
            size_t tl;
            line_no++;
            if (tf_translate_line_ids(t, o, lines[k], lens[k], &text, &tl, &src, &hyp)) die_line(v, line_no);
            emit(v, lines[k], lens[k], text, tl);
            free(text);
            if (draw_sentence(v, job, line_no, &src, &hyp)) die_line(v, line_no);
            cli_flush_or_die(v);
        }
    tf_ids_free(&src), tf_ids_free(&hyp);
    return line_no;
}

/* Where the pictures of n lines went, on stderr. */
static void say_pictures(const cli_verb *v, const char *dir, int n) {
    char last[32] = "";
    if (n > 1) snprintf(last, sizeof last, " to %04d.png", n);
    if (!n) fprintf(stderr, "tformer %s: no input lines, no attention pictures in %s/\n", v->name, dir);
    else fprintf(stderr, "tformer %s: %d attention picture%s in %s/: 0001.png%s\n", v->name, n, n == 1 ? "" : "s", dir,
                 last);
}

/* Lines a chunk at a time through tf_translate_lines (batched), printed in input order. */
static void translate_chunks(const cli_verb *v, const tf_translator *t, const tf_translate_opts *o, cli_lines *in) {
    const char *lines[CHUNK];
    size_t lens[CHUNK], out_len[CHUNK];
    char *out[CHUNK];
    int first = 1; /* the chunk's first line number */
    for (int k, bad; (k = cli_lines_next(v, in, CHUNK, lines, lens)) > 0; first += k) {
        if (tf_translate_lines(t, o, k, lines, lens, out, out_len, &bad)) die_line(v, first + (bad > 0 ? bad : 0));
        for (int j = 0; j < k; j++) emit(v, lines[j], lens[j], out[j], out_len[j]), free(out[j]);
        cli_flush_or_die(v);
    }
}

int cmd_translate(const cli_args *a) {
    const cli_verb *v = a->verb;
    const char *dir = a->v[MODEL].text, *pictures = a->v[ATTENTION_PNG].text;
    tf_set_threads(cli_threads(&a->v[THREADS]));
    cli_apply(a);
    tf_translate_opts o = g_opts;
    g_json = a->v[JSON].given;
    if (pictures) cli_make_folder(v, "--attention-png", pictures);
    tf_model *model = tf_model_load(dir, &(tf_model_opts){.precision = cli_precision(a, PRECISION),
                                                             .require = TF_CAP_TRANSLATE});
    const tf_translator *tp;
    const tf_translation *m;
    tf_translate_opts f; /* the folder's settings (a Marian folder's generate() settings): flags first */
    if (!model || tf_model_translator(model, &tp, &m, &f)) cli_die(v, tf_error());
    tf_translator t = *tp;
    if (!cli_table_given(a, "--beam-stop")) o.search.beam_stop = f.search.beam_stop;
    o.search.forced_eos_id = f.search.forced_eos_id;
    o.search.bad_ids = f.search.bad_ids, o.search.n_bad_ids = f.search.n_bad_ids;
    if (!cli_table_given(a, "--beam")) o.search.beam = f.search.beam;
    if (!cli_table_given(a, "--length-penalty")) o.search.length_penalty = f.search.length_penalty;
    if (!cli_table_given(a, "--max-len-a") && !cli_table_given(a, "--max-len-b"))
        o.max_len_a = f.max_len_a, o.max_len_b = f.max_len_b;
    o.search.renormalize = f.search.renormalize;
    char extra[160];
    snprintf(extra, sizeof extra, "%s %d (%s)", o.search.beam > 1 ? "beam" : "greedy: beam", o.search.beam,
             cli_table_given(a, "--beam") ? "--beam" : "the folder's or the default");
    cli_say(v, &(cli_said){tf_model_family(model)->name, dir, t.src_tok, 0, tf_model_precision(model), extra});
    picture_job job = {m, &t, pictures, pictures ? tf_ctx_new(0) : NULL, cli_attention_scale(a, ATTENTION_SCALE, ATTENTION_PNG)};
    if (pictures && !job.ctx) cli_die(v, tf_error());
    if (job.ctx) tf_ctx_set_grad(job.ctx, 0);
    cli_lines in;
    cli_lines_init(&in, 0);
    if (pictures) say_pictures(v, pictures, translate_lines(v, &t, &o, &in, &job));
    else translate_chunks(v, &t, &o, &in);
    cli_lines_free(&in);
    if (job.ctx) tf_ctx_free(job.ctx);
    tf_model_free(model);
    return fflush(stdout) ? 1 : 0;
}
