/* BLEU and chrF against sacreBLEU's answers (tests/fixtures_bleu, written by
 * tests/ref/bleu_ref.py cases), and the bleu verb's bad input. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "test.h"
#include "tformer.h"

#define FXB "tests/fixtures_bleu/cases.json"

static char *slurp(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *s = malloc((size_t)n + 1);
    if (s && fread(s, 1, (size_t)n, f) != (size_t)n) free(s), s = NULL;
    if (s) s[n] = 0;
    fclose(f);
    return s;
}

static const char *str_at(const cJSON *list, int i) { return cJSON_GetArrayItem(list, i)->valuestring; }

/* One case through the library: BLEU's statistics and score, chrF. */
static int run_case(const cJSON *c, tf_bleu_score *b, double *chrf) {
    const cJSON *hyps = cJSON_GetObjectItem(c, "hyps"), *refs = cJSON_GetObjectItem(c, "refs");
    const char *tok = cJSON_GetObjectItem(c, "tokenize")->valuestring, *sm = cJSON_GetObjectItem(c, "smooth")->valuestring;
    tf_bleu_opts o = {.lowercase = cJSON_IsTrue(cJSON_GetObjectItem(c, "lowercase"))};
    o.tokenize = !strcmp(tok, "13a") ? TF_BLEU_TOK_13A : !strcmp(tok, "intl") ? TF_BLEU_TOK_INTL
               : !strcmp(tok, "zh") ? TF_BLEU_TOK_ZH : TF_BLEU_TOK_NONE;
    o.smooth = !strcmp(sm, "exp") ? TF_BLEU_SMOOTH_EXP : !strcmp(sm, "none") ? TF_BLEU_SMOOTH_NONE
             : !strcmp(sm, "floor") ? TF_BLEU_SMOOTH_FLOOR : TF_BLEU_SMOOTH_ADD_K;
    int nr = cJSON_GetArraySize(refs);
    const char *seg[8];
    size_t len[8];
    tf_bleu_stats bs = {0};
    tf_chrf_stats cs = {0};
    for (int i = 0; i < cJSON_GetArraySize(hyps); i++) {
        for (int r = 0; r < nr && r < 8; r++) seg[r] = str_at(cJSON_GetArrayItem(refs, r), i), len[r] = strlen(seg[r]);
        const char *h = str_at(hyps, i);
        if (tf_bleu_add(&bs, &o, h, strlen(h), seg, len, nr) || tf_chrf_add(&cs, o.lowercase, h, strlen(h), seg, len, nr))
            return -1;
    }
    tf_bleu_compute(&bs, &o, b);
    *chrf = tf_chrf_compute(&cs);
    return 0;
}

TEST(bleu_chrf_equal_sacrebleu) {
    char *text = slurp(FXB);
    cJSON *root = text ? cJSON_Parse(text) : NULL;
    CHECKF(root != NULL, "cannot read %s", FXB);
    const cJSON *cases = cJSON_GetObjectItem(root, "cases");
    double worst = 0;
    int n = 0;
    for (const cJSON *c = cases ? cases->child : NULL; c; c = c->next, n++) {
        tf_bleu_score b;
        double chrf;
        CHECKF(run_case(c, &b, &chrf) == 0, "case %d: %s", n, tf_error());
        const cJSON *prec = cJSON_GetObjectItem(c, "precisions");
        double want[8] = {cJSON_GetObjectItem(c, "bleu")->valuedouble, cJSON_GetObjectItem(c, "bp")->valuedouble,
                          cJSON_GetObjectItem(c, "ratio")->valuedouble, cJSON_GetObjectItem(c, "chrf")->valuedouble};
        double got[8] = {b.score, b.bp, b.ratio, chrf};
        for (int k = 0; k < 4; k++) want[4 + k] = cJSON_GetArrayItem(prec, k)->valuedouble, got[4 + k] = b.precisions[k];
        for (int k = 0; k < 8; k++) {
            double d = fabs(got[k] - want[k]);
            worst = d > worst ? d : worst;
            CHECKF(d <= 1e-9 * (1 + fabs(want[k])), "case %d figure %d: tformer %.12g, sacreBLEU %.12g", n, k, got[k], want[k]);
        }
        CHECKF(b.hyp_len == cJSON_GetObjectItem(c, "hyp_len")->valueint &&
               b.ref_len == cJSON_GetObjectItem(c, "ref_len")->valueint, "case %d: lengths %lld / %lld", n,
               (long long)b.hyp_len, (long long)b.ref_len);
        char line[256];
        tf_bleu_format(&b, line, sizeof line);
        CHECKF(!strcmp(line, cJSON_GetObjectItem(c, "line")->valuestring), "case %d:\n  tformer   %s\n  sacreBLEU %s", n,
               line, cJSON_GetObjectItem(c, "line")->valuestring);
    }
    CHECK(n >= 30);
    printf("    %d cases against sacreBLEU %s, largest difference %.2g\n", n,
           cJSON_GetObjectItem(root, "sacrebleu")->valuestring, worst);
    cJSON_Delete(root);
    free(text);
}

/* A wrong count must show: one changed hypothesis token changes the score. */
TEST(bleu_detects_a_changed_token) {
    tf_bleu_opts o = {0};
    const char *ref[] = {"the cat sat on the mat ."};
    size_t rl[] = {strlen(ref[0])};
    tf_bleu_stats a = {0}, b = {0};
    CHECK(tf_bleu_add(&a, &o, ref[0], rl[0], ref, rl, 1) == 0);
    CHECK(tf_bleu_add(&b, &o, "the cat sat on a mat .", 22, ref, rl, 1) == 0);
    tf_bleu_score sa, sb;
    tf_bleu_compute(&a, &o, &sa), tf_bleu_compute(&b, &o, &sb);
    CHECK(fabs(sa.score - 100) < 1e-12);
    CHECKF(fabs(sb.precisions[0] - 600.0 / 7) < 1e-12 && fabs(sb.precisions[1] - 400.0 / 6) < 1e-12 &&
           fabs(sb.precisions[2] - 40) < 1e-12 && fabs(sb.precisions[3] - 25) < 1e-12,
           "precisions %g %g %g %g", sb.precisions[0], sb.precisions[1], sb.precisions[2], sb.precisions[3]);
    CHECK(fabs(sb.score - 100 * pow(6.0 / 7 * 4.0 / 6 * 0.4 * 0.25, 0.25)) < 1e-9);
}

static int run_cli(const char *args, const char *stdin_text, char *out, size_t n) {
    char cmd[2048];
    FILE *f = fopen("/tmp/tformer_bleu_in", "wb");
    fputs(stdin_text, f);
    fclose(f);
    snprintf(cmd, sizeof cmd, "bleu %s < /tmp/tformer_bleu_in", args);
    return test_run_cli("", cmd, out, n); /* stdout and stderr, less the start-up line (test_cli_said.c checks it) */
}

/* The verb: repeated --ref adds references; bad input names the file and line. */
TEST(bleu_cli_references_and_bad_input) {
    FILE *f = fopen("/tmp/tformer_bleu_r1", "wb");
    fputs("the cat sat on the mat .\nhello world\n", f);
    fclose(f);
    f = fopen("/tmp/tformer_bleu_r2", "wb");
    fputs("a cat sat on a mat .\nhello , world\n", f);
    fclose(f);
    f = fopen("/tmp/tformer_bleu_bad", "wb");
    fputs("fine\nbad \xff byte\n", f);
    fclose(f);
    char a[512], b[512];
    const char *hyp = "a cat sat on the mat .\nhello world !\n";
    CHECK(run_cli("--ref /tmp/tformer_bleu_r1 /tmp/tformer_bleu_r2 --metrics bleu chrf", hyp, a, sizeof a) == 0);
    CHECK(run_cli("--ref /tmp/tformer_bleu_r1 --metrics bleu chrf --ref /tmp/tformer_bleu_r2", hyp, b, sizeof b) == 0);
    CHECKF(!strcmp(a, b) && strstr(a, "BLEU = ") == a && strstr(a, "chrF2 = "), "%s\n%s", a, b);
    static const struct {
        const char *args, *in, *want;
        int status;
    } CASES[] = {
        {"--ref /tmp/tformer_bleu_r1", "one line\n", "tformer_bleu_r1 has 2 lines, the hypotheses on standard input 1", 1},
        {"--ref /tmp/tformer_bleu_bad", "x\ny\n", "tformer_bleu_bad line 2: invalid UTF-8 at byte 5", 1},
        {"--ref /tmp/tformer_bleu_r1", "x\n\xc3\n", "standard input line 2: invalid UTF-8 at byte 1", 1},
        {"--ref /nonexistent/ref", "x\n", "cannot open /nonexistent/ref", 1},
        {"--ref /tmp/tformer_bleu_r1", "", "no hypotheses on standard input", 1},
        {"", "x\n", "missing --ref", 2},
        {"--ref /tmp/tformer_bleu_r1 --tokenize moses", "x\ny\n", "--tokenize: unknown value 'moses'", 2},
        {"--ref /tmp/tformer_bleu_r1 --smooth-value nan", "x\ny\n", "--smooth-value expects a positive number", 2},
        {"--ref /tmp/tformer_bleu_r1 --metrics ter", "x\ny\n", "--metrics: unknown value 'ter'", 2},
    };
    for (size_t i = 0; i < sizeof CASES / sizeof CASES[0]; i++) {
        int st = run_cli(CASES[i].args, CASES[i].in, a, sizeof a);
        CHECKF(st == CASES[i].status && strstr(a, CASES[i].want), "bleu %s: status %d, output: %s", CASES[i].args, st, a);
    }
    CHECK(system("rm -f /tmp/tformer_bleu_r1 /tmp/tformer_bleu_r2 /tmp/tformer_bleu_bad /tmp/tformer_bleu_in /tmp/tformer_bleu_out") == 0);
}

/* sacreBLEU's -l SRC-TGT: a Chinese target takes the zh tokeniser unless -tok is given, Japanese
 * and Korean (MeCab) are refused, any other target keeps 13a (issue 55). */
TEST(bleu_language_pair_picks_sacrebleus_tokenizer) {
    FILE *f = fopen("/tmp/tformer_bleu_r1", "wb");
    fputs("我爱北京天安门。\n今天天气很好，不是吗？\n", f);
    fclose(f);
    const char *hyp = "我爱北京天安门\n今天天气好，是吗？\n";
    char zh[512], tok_zh[512], de[512], tok_13a[512], zh_13a[512], err[512];
    CHECK(run_cli("--ref /tmp/tformer_bleu_r1 -l en-zh", hyp, zh, sizeof zh) == 0);
    CHECK(run_cli("--ref /tmp/tformer_bleu_r1 --tokenize zh", hyp, tok_zh, sizeof tok_zh) == 0);
    CHECK(run_cli("--ref /tmp/tformer_bleu_r1 --language-pair zh-de", hyp, de, sizeof de) == 0);
    CHECK(run_cli("--ref /tmp/tformer_bleu_r1", hyp, tok_13a, sizeof tok_13a) == 0);
    CHECK(run_cli("--ref /tmp/tformer_bleu_r1 -l en-zh -tok 13a", hyp, zh_13a, sizeof zh_13a) == 0);
    /* sacreBLEU 2.6.0: sacrebleu REF -l en-zh -i HYP */
    CHECKF(!strcmp(zh, "BLEU = 60.61 100.0/85.7/66.7/50.0 (BP = 0.829 ratio = 0.842 hyp_len = 16 ref_len = 19)\n"), "%s", zh);
    CHECKF(!strcmp(zh, tok_zh) && !strcmp(de, tok_13a) && !strcmp(zh_13a, tok_13a) && strcmp(zh, de), "%s%s%s%s", zh,
           tok_zh, de, zh_13a);
    CHECKF(run_cli("--ref /tmp/tformer_bleu_r1 -l en-ja", hyp, err, sizeof err) == 2 &&
           strstr(err, "--language-pair en-ja: sacreBLEU tokenises Japanese with ja-mecab (MeCab)"), "%s", err);
    CHECKF(run_cli("--ref /tmp/tformer_bleu_r1 -l ende", hyp, err, sizeof err) == 2 &&
           strstr(err, "--language-pair expects SRC-TGT (en-de), got 'ende'"), "%s", err);
    CHECK(system("rm -f /tmp/tformer_bleu_r1 /tmp/tformer_bleu_in /tmp/tformer_bleu_out") == 0);
}

/* A gzipped reference (te.de.gz, as Multi30k ships it) is read gunzipped, as the other verbs read gzipped text: the
 * same scores as the plain file (it was scored as the compressed bytes, "has 1 lines"); a truncated one is named. */
TEST(bleu_reads_gzipped_references) {
    FILE *f = fopen("/tmp/tformer_bleu_gz", "wb");
    CHECK(f != NULL);
    for (int i = 0; i < 40; i++) fprintf(f, "the cat %d sat on the mat .\n", i % 7);
    CHECK(fclose(f) == 0);
    CHECK(system("gzip -kf /tmp/tformer_bleu_gz && head -c 40 /tmp/tformer_bleu_gz.gz > /tmp/tformer_bleu_cut.gz") == 0);
    char hyp[4096] = "", plain[512], gz[512], err[512];
    for (int i = 0; i < 40; i++)
        snprintf(hyp + strlen(hyp), sizeof hyp - strlen(hyp), "the cat %d sat on a mat .\n", i % 5);
    CHECK(run_cli("--ref /tmp/tformer_bleu_gz --metrics bleu chrf", hyp, plain, sizeof plain) == 0);
    CHECK(run_cli("--ref /tmp/tformer_bleu_gz.gz --metrics bleu chrf", hyp, gz, sizeof gz) == 0);
    CHECKF(!strcmp(plain, gz) && strstr(plain, "BLEU = ") == plain, "plain:\n%s\ngzipped:\n%s", plain, gz);
    CHECKF(run_cli("--ref /tmp/tformer_bleu_cut.gz", hyp, err, sizeof err) == 1 &&
           strstr(err, "cannot gunzip /tmp/tformer_bleu_cut.gz: truncated"), "%s", err);
    CHECK(system("rm -f /tmp/tformer_bleu_gz /tmp/tformer_bleu_gz.gz /tmp/tformer_bleu_cut.gz /tmp/tformer_bleu_in") == 0);
}
