/* tformer translate --model DIR < src > hyp: one source sentence per line,
 * its translation per line (greedy, or beam search with --beam N). The
 * folder holds the model (config.json, model.safetensors) and either one
 * tokenizer for both languages or source/ and target/ folders with one each;
 * ids V, V+1, V+2 after a tokenizer's V are padding, BOS and EOS. The
 * folder's model_type picks the family: "tformer-seq2seq" (the Transformer)
 * or "tformer-rnn-seq2seq" (the RNN baseline); each gives a decoder. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cjson/cJSON.h>

#include "cli.h"

enum { MODEL, BEAM, LENGTH_PENALTY, MAX_LEN_A, MAX_LEN_B, THREADS };
const cli_flag cmd_translate_flags[] = {
    [MODEL] = {"model", CLI_STRING, "DIR", NULL, "a translation folder (tformer train --arch seq2seq or rnn)"},
    [BEAM] = {"beam", CLI_INT, "N", "1", "beam width; 1: greedy"},
    [LENGTH_PENALTY] = {"length-penalty", CLI_STRING, "A", "1", "beam scores are sum(log p) / length^A"},
    [MAX_LEN_A] = {"max-len-a", CLI_STRING, "A", "1.5", "at most A * source tokens + B target tokens"},
    [MAX_LEN_B] = {"max-len-b", CLI_INT, "B", "10", "(see --max-len-a); the model's context bounds both"},
    [THREADS] = CLI_THREADS_ROW,
    CLI_END,
};

static float parse_float(const cli_args *a, const char *flag, const char *text, float lo, float hi) {
    char *end;
    double v = strtod(text, &end);
    if (end == text || *end || !(v >= lo && v <= hi)) cli_usage_error(a, "--%s expects a number in [%g,%g], got '%s'", flag, lo, hi, text);
    return (float)v;
}

/* A loaded translation model of either family: its sizes and its decoder constructor. */
typedef struct {
    void *m;
    int src_vocab, tgt_vocab, context;
    tf_decoder *(*decoder_new)(const void *m, const int32_t *src, int n_src, int capacity);
    void (*free)(void *m);
} translator;

static tf_decoder *tr_decoder(const void *m, const int32_t *src, int n, int cap) { return tf_seq2seq_decoder_new(m, src, n, cap); }
static void tr_free(void *m) { tf_seq2seq_free(m); }
static tf_decoder *rnn_decoder(const void *m, const int32_t *src, int n, int cap) {
    return tf_rnn_seq2seq_decoder_new(m, src, n, cap);
}
static void rnn_free(void *m) { tf_rnn_seq2seq_free(m); }

/* config.json's model_type, or "" (the Transformer's loader then names what is wrong). */
static void model_type(const char *dir, char *out, size_t n) {
    char path[4200];
    snprintf(path, sizeof path, "%s/config.json", dir);
    *out = 0;
    FILE *f = fopen(path, "rb");
    if (!f) return;
    char buf[65536];
    size_t k = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[k] = 0;
    cJSON *root = cJSON_Parse(buf);
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(root, "model_type");
    if (cJSON_IsString(t)) snprintf(out, n, "%s", t->valuestring);
    cJSON_Delete(root);
}

static void load_model(const cli_verb *v, const char *dir, translator *t) {
    char type[64];
    model_type(dir, type, sizeof type);
    if (!strcmp(type, "tformer-rnn-seq2seq")) {
        tf_rnn_seq2seq *m = tf_rnn_seq2seq_load(dir);
        if (!m) cli_die(v, tf_error());
        *t = (translator){m, m->cfg.src_vocab, m->cfg.tgt_vocab, m->cfg.context, rnn_decoder, rnn_free};
    } else {
        tf_seq2seq *m = tf_seq2seq_load(dir);
        if (!m) cli_die(v, tf_error());
        *t = (translator){m, m->cfg.src_vocab, m->cfg.tgt_vocab, m->cfg.context, tr_decoder, tr_free};
    }
}

/* The tokenizers: DIR/source and DIR/target when present, else DIR's one for both. */
static void load_tokenizers(const cli_verb *v, const char *dir, tf_tokenizer **src, tf_tokenizer **tgt) {
    char s[4200], t[4200];
    struct stat st;
    snprintf(s, sizeof s, "%s/source", dir), snprintf(t, sizeof t, "%s/target", dir);
    int apart = !stat(s, &st) && S_ISDIR(st.st_mode);
    *src = tf_tokenizer_load(apart ? s : dir);
    *tgt = *src && apart ? tf_tokenizer_load(t) : *src;
    if (!*src || !*tgt) cli_die(v, tf_error());
}

static void check_vocab(const cli_verb *v, const char *dir, const char *side, const tf_tokenizer *tok, int model_vocab) {
    if (tf_tokenizer_vocab_size(tok) + TF_SEQ2SEQ_SPECIALS == model_vocab) return;
    char msg[4400];
    snprintf(msg, sizeof msg, "%s: the %s tokenizer has %d tokens, the model's %s vocabulary %d (expected tokens + %d)",
             dir, side, (int)tf_tokenizer_vocab_size(tok), side, model_vocab, TF_SEQ2SEQ_SPECIALS);
    cli_die(v, msg);
}

int cmd_translate(const cli_args *a) {
    const cli_verb *v = a->verb;
    const char *dir = a->v[MODEL].text;
    tf_set_threads(cli_threads(&a->v[THREADS]));
    tf_translate_opts o = tf_translate_opts_default();
    if (a->v[BEAM].i < 1 || a->v[BEAM].i > 64) cli_usage_error(a, "--beam expects 1 to 64, got %lld", a->v[BEAM].i);
    o.search.beam = (int)a->v[BEAM].i;
    o.search.length_penalty = parse_float(a, "length-penalty", a->v[LENGTH_PENALTY].text, -10, 10);
    o.max_len_a = parse_float(a, "max-len-a", a->v[MAX_LEN_A].text, 0, 100);
    o.max_len_b = (int)a->v[MAX_LEN_B].i;
    translator m;
    load_model(v, dir, &m);
    tf_tokenizer *src, *tgt;
    load_tokenizers(v, dir, &src, &tgt);
    check_vocab(v, dir, "source", src, m.src_vocab);
    check_vocab(v, dir, "target", tgt, m.tgt_vocab);
    tf_translator t = {m.m, m.decoder_new, m.context, src, tgt, tf_seq2seq_eos_id(m.src_vocab),
                       tf_seq2seq_bos_id(m.tgt_vocab), tf_seq2seq_eos_id(m.tgt_vocab)};
    size_t n;
    char *input = cli_read_stdin(v, &n);
    int line_no = 0;
    for (size_t i = 0; i < n;) {
        size_t e = i;
        while (e < n && input[e] != '\n') e++;
        size_t len = e > i && input[e - 1] == '\r' ? e - i - 1 : e - i;
        char *text;
        size_t tl;
        line_no++;
        if (tf_translate_line(&t, &o, input + i, len, &text, &tl)) {
            char msg[1200];
            snprintf(msg, sizeof msg, "standard input line %d: %s", line_no, tf_error());
            cli_die(v, msg);
        }
        fwrite(text, 1, tl, stdout), putchar('\n');
        free(text);
        i = e + 1;
    }
    free(input);
    if (tgt != src) tf_tokenizer_free(tgt);
    tf_tokenizer_free(src);
    m.free(m.m);
    return fflush(stdout) ? 1 : 0;
}
