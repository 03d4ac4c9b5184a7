/* tformer bleu --ref REF [--ref REF2 ...] < HYP: corpus BLEU (and chrF) of
 * the hypotheses on standard input against line-aligned references, as
 * sacreBLEU 2.x's command line computes them and prints them
 * ("BLEU = 35.21 67.1/42.3/28.9/20.0 (BP = ... ratio = ... hyp_len = ... ref_len = ...)").
 * Lines end at "\n" (a "\r" before it is trailing whitespace, stripped). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

#include <cjson/cJSON.h>

enum { REF, METRICS, TOKENIZE, LOWERCASE, SMOOTH, SMOOTH_VALUE, LANGUAGE_PAIR, JSON };
const cli_flag cmd_bleu_flags[] = {
    [REF] = {"ref", CLI_LIST, "FILE...", NULL, "reference files, line-aligned with the hypotheses (repeatable)"},
    [METRICS] = {"metrics", CLI_LIST, "bleu|chrf...", "bleu", "what to print: bleu, chrf or both"},
    [TOKENIZE] = {"tokenize", CLI_STRING, "13a|intl|zh|none", "13a",
                  "BLEU's tokenisation (sacreBLEU's names; without the flag: zh for --language-pair's target zh)"},
    [LOWERCASE] = {"lowercase", CLI_SWITCH, NULL, "off", "compare lower-cased text (Python's str.lower)"},
    [SMOOTH] = {"smooth", CLI_STRING, "exp|none|floor|add-k", "exp", "BLEU's smoothing of zero n-gram counts"},
    [SMOOTH_VALUE] = {"smooth-value", CLI_STRING, "X", "", "floor: 0.1, add-k: 1 unless given"},
    [LANGUAGE_PAIR] = {"language-pair", CLI_STRING, "SRC-TGT", "",
                       "as sacreBLEU's: the target language picks the tokenisation unless --tokenize is given (zh: "
                       "zh; ja and ko, whose MeCab tokenisers tformer lacks, are refused; others: 13a)"},
    [JSON] = CLI_JSON_ROW,
    CLI_END,
};

static int parse_choice(const cli_args *a, const char *flag, const char *value, const char *const *names, int n) {
    for (int k = 0; k < n; k++)
        if (!strcmp(value, names[k])) return k;
    cli_usage_error(a, "--%s: unknown value '%s'", flag, value);
}

static void options(const cli_args *a, tf_bleu_opts *o, int *bleu, int *chrf) {
    static const char *const TOK[] = {"13a", "none", "intl", "zh"}, *const SM[] = {"exp", "none", "floor", "add-k"};
    memset(o, 0, sizeof *o);
    o->tokenize = (tf_bleu_tokenize)parse_choice(a, "tokenize", a->v[TOKENIZE].text, TOK, 4);
    const char *pair = a->v[LANGUAGE_PAIR].text, *dash = pair ? strchr(pair, '-') : NULL;
    if (pair && (!dash || dash == pair || !dash[1] || strchr(dash + 1, '-')))
        cli_usage_error(a, "--language-pair expects SRC-TGT (en-de), got '%s'", pair);
    if (dash && !a->v[TOKENIZE].given) { /* sacreBLEU's BLEU._TOKENIZER_MAP */
        if (!strcmp(dash + 1, "zh")) o->tokenize = TF_BLEU_TOK_ZH;
        if (!strcmp(dash + 1, "ja") || !strcmp(dash + 1, "ko"))
            cli_usage_error(a, "--language-pair %s: sacreBLEU tokenises %s with %s-mecab (MeCab), which tformer does "
                            "not have; give --tokenize (13a, intl, zh or none) to choose another", pair,
                            !strcmp(dash + 1, "ja") ? "Japanese" : "Korean", dash + 1);
    }
    o->smooth = (tf_bleu_smooth)parse_choice(a, "smooth", a->v[SMOOTH].text, SM, 4);
    o->lowercase = a->v[LOWERCASE].given;
    const char *sv = a->v[SMOOTH_VALUE].text;
    if (sv && *sv) {
        char *end;
        o->smooth_value = strtod(sv, &end);
        if (end == sv || *end || !(o->smooth_value > 0 && o->smooth_value < 1e9))
            cli_usage_error(a, "--smooth-value expects a positive number, got '%s'", sv);
    }
    *bleu = *chrf = 0;
    if (!a->v[METRICS].n) *bleu = 1;
    for (int i = 0; i < a->v[METRICS].n; i++) {
        static const char *const M[] = {"bleu", "chrf"};
        if (parse_choice(a, "metrics", a->v[METRICS].list[i], M, 2)) *chrf = 1;
        else *bleu = 1;
    }
}

/* The lines left in r, counted to its end (for a message). */
static long long rest(const cli_verb *v, cli_lines *r) {
    const char *l[CLI_BATCH_MAX];
    size_t len[CLI_BATCH_MAX];
    long long n = 0;
    for (int k; (k = cli_lines_next(v, r, CLI_BATCH_MAX, l, len)) > 0;) n += k;
    return n;
}

static _Noreturn void unequal(const cli_verb *v, const char *ref, long long n_ref, long long n_hyp) {
    char msg[4400];
    snprintf(msg, sizeof msg, "%s has %lld lines, the hypotheses on standard input %lld", ref, n_ref, n_hyp);
    cli_die(v, msg);
}

/* Line i of the hypotheses and each reference into the statistics; an error names the file that fails alone. */
static void add_line(const cli_args *a, const tf_bleu_opts *o, const int want[2], tf_bleu_stats *bs,
                     tf_chrf_stats *cs, const char *hyp, size_t hyp_len, const char **seg, const size_t *seg_len,
                     long long line) {
    int nr = a->v[REF].n;
    if ((want[0] && tf_bleu_add(bs, o, hyp, hyp_len, seg, seg_len, nr)) ||
        (want[1] && tf_chrf_add(cs, o->lowercase, hyp, hyp_len, seg, seg_len, nr))) {
        char msg[4400], what[1024];
        snprintf(what, sizeof what, "%s", tf_error());
        const char *file = "standard input";
        for (int r = 0; r < nr; r++) {
            size_t tn;
            char *t = tf_bleu_tokenize_text(o, seg[r], seg_len[r], &tn);
            if (!t) file = a->v[REF].list[r];
            free(t);
        }
        snprintf(msg, sizeof msg, "%s line %lld: %s", file, line, what);
        cli_die(a->verb, msg);
    }
}

/* The hypotheses and the references a chunk of lines at a time (the statistics are sums over lines): memory
 * bounded by the chunk, whatever the lengths. */
/* sacreBLEU's lines, or with --json {"bleu": {...}, "chrf": {...}, "sentences": n} (docs/json.md). */
static void report(const cli_args *a, const tf_bleu_opts *o, const tf_bleu_stats *bs, const tf_chrf_stats *cs,
                   long long n) {
    const cli_verb *v = a->verb;
    tf_bleu_score s;
    char out[256];
    if (bs) tf_bleu_compute(bs, o, &s);
    if (!a->v[JSON].given) {
        if (bs) tf_bleu_format(&s, out, sizeof out), printf("%s\n", out);
        if (cs) printf("chrF2 = %.2f\n", tf_chrf_compute(cs));
        return;
    }
    cJSON *j = cli_json_object(v, NULL, NULL);
    if (bs) {
        cJSON *b = cli_json_object(v, j, "bleu"), *p;
        cli_json_num(v, b, "score", s.score);
        p = cli_json_array(v, b, "precisions");
        for (int k = 0; k < TF_BLEU_ORDER; k++) cli_json_num(v, p, NULL, s.precisions[k]);
        cli_json_num(v, b, "bp", s.bp), cli_json_num(v, b, "ratio", s.ratio);
        cli_json_num(v, b, "hyp_len", (double)s.hyp_len), cli_json_num(v, b, "ref_len", (double)s.ref_len);
        static const char *const TOK[] = {"13a", "none", "intl", "zh"};
        cli_json_str(v, b, "tokenize", TOK[o->tokenize]), cli_json_bool(v, b, "lowercase", o->lowercase);
        cli_json_str(v, b, "smooth", a->v[SMOOTH].text);
    }
    if (cs) {
        cJSON *c = cli_json_object(v, j, "chrf");
        cli_json_num(v, c, "score", tf_chrf_compute(cs));
        cli_json_num(v, c, "char_order", 6), cli_json_num(v, c, "beta", 2);
    }
    cli_json_num(v, j, "sentences", (double)n), cli_json_num(v, j, "references", a->v[REF].n);
    cli_json_str(v, j, "language_pair", a->v[LANGUAGE_PAIR].text);
    cli_json_print(v, j);
}

/* The start-up line: the metrics, the references, the tokenisation and case and smoothing, and where each came
 * from (sacreBLEU's defaults unless given). */
static void say(const cli_args *a, const tf_bleu_opts *o, int bleu, int chrf) {
    static const char *const TOK[] = {"13a", "none", "intl", "zh"};
    char refs[1200], how[300] = "", value[40] = "";
    cli_files_said(a->v[REF].list, a->v[REF].n, refs, sizeof refs);
    if (o->smooth == TF_BLEU_SMOOTH_FLOOR || o->smooth == TF_BLEU_SMOOTH_ADD_K)
        snprintf(value, sizeof value, " %g", o->smooth_value > 0 ? o->smooth_value
                                             : o->smooth == TF_BLEU_SMOOTH_FLOOR ? 0.1 : 1.0);
    if (bleu)
        snprintf(how, sizeof how, "; BLEU's tokenisation %s (%s), smoothing %s%s (%s)", TOK[o->tokenize],
                 a->v[TOKENIZE].given ? "--tokenize"
                 : o->tokenize == TF_BLEU_TOK_ZH ? "--language-pair's target"
                                                 : "the default, as sacreBLEU's",
                 a->v[SMOOTH].text, value, a->v[SMOOTH].given ? "--smooth" : "the default");
    cli_say_plain(a->verb, 0, "%s of the lines on standard input against %d reference%s: %s%s; %s", 
                  bleu && chrf ? "BLEU and chrF2" : bleu ? "BLEU" : "chrF2", a->v[REF].n, a->v[REF].n == 1 ? "" : "s",
                  refs, how, o->lowercase ? "lower-cased (--lowercase)" : "case-sensitive (no --lowercase)");
}

int cmd_bleu(const cli_args *a) {
    const cli_verb *v = a->verb;
    tf_bleu_opts o;
    int want[2], nr = a->v[REF].n;
    options(a, &o, &want[0], &want[1]);
    cli_lines hyp, *ref = calloc((size_t)nr, sizeof *ref);
    const char **seg = malloc((size_t)nr * sizeof *seg), **rl = malloc((size_t)nr * CLI_BATCH_MAX * sizeof *rl);
    size_t *seg_len = malloc((size_t)nr * sizeof *seg_len), *rlen = malloc((size_t)nr * CLI_BATCH_MAX * sizeof *rlen);
    if (!ref || !seg || !seg_len || !rl || !rlen) cli_die(v, "out of memory");
    for (int r = 0; r < nr; r++) {
        cli_lines_init(&ref[r], cli_open_file(v, a->v[REF].list[r]));
        ref[r].keep_cr = 1, ref[r].name = a->v[REF].list[r]; /* te.de.gz (gzip'ed, as Multi30k ships it) too */
    }
    say(a, &o, want[0], want[1]);
    cli_lines_init(&hyp, 0);
    hyp.keep_cr = 1; /* a CR is trailing whitespace to the tokenisers, as before */
    tf_bleu_stats bs = {0};
    tf_chrf_stats cs = {0};
    const char *hl[CLI_BATCH_MAX];
    size_t hlen[CLI_BATCH_MAX];
    long long n_hyp = 0;
    for (int n; (n = cli_lines_next(v, &hyp, CLI_BATCH_MAX, hl, hlen)) > 0; n_hyp += n) {
        for (int r = 0; r < nr; r++) {
            int got = cli_lines_next(v, &ref[r], n, rl + (size_t)r * CLI_BATCH_MAX, rlen + (size_t)r * CLI_BATCH_MAX);
            if (got < n) unequal(v, a->v[REF].list[r], n_hyp + got, n_hyp + n + rest(v, &hyp));
        }
        for (int i = 0; i < n; i++) {
            for (int r = 0; r < nr; r++) seg[r] = rl[(size_t)r * CLI_BATCH_MAX + i], seg_len[r] = rlen[(size_t)r * CLI_BATCH_MAX + i];
            add_line(a, &o, want, &bs, &cs, hl[i], hlen[i], seg, seg_len, n_hyp + i + 1);
        }
    }
    if (n_hyp == 0) cli_die(v, "no hypotheses on standard input (one line per reference line)");
    for (int r = 0; r < nr; r++) {
        long long more = rest(v, &ref[r]);
        if (more) unequal(v, a->v[REF].list[r], n_hyp + more, n_hyp);
    }
    report(a, &o, want[0] ? &bs : NULL, want[1] ? &cs : NULL, n_hyp);
    for (int r = 0; r < nr; r++) close(ref[r].fd), cli_lines_free(&ref[r]);
    cli_lines_free(&hyp);
    free(ref), free(seg), free(seg_len), free(rl), free(rlen);
    return fflush(stdout) ? 1 : 0;
}
