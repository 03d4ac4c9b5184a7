/* Gzip'ed data files read as the plain ones (train.en.gz as Multi30k ships it): the shared
 * reader (src/util/file.c's tf_read_data), parallel text, fine-tuning TSVs, and train / eval
 * --data and tokenizer-train's files through the CLI, each the same ids, loss or merges as the plain file. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "test.h"
#include "util/util.h"

static char g_dir[64];

static const char *tmp_path(const char *name) { return test_path_in(g_dir, name); }

/* text into path, and gzip'ed into path.gz (the first n bytes of the stream only when cut). */
static int write_pair(const char *path, const char *text, size_t cut) {
    char gz[300];
    snprintf(gz, sizeof gz, "%s.gz", path);
    FILE *f = fopen(path, "wb");
    int ok = f && fwrite(text, 1, strlen(text), f) == strlen(text);
    ok = f && !fclose(f) && ok;
    gzFile z = gzopen(gz, "wb");
    ok = ok && z && gzwrite(z, text, (unsigned)strlen(text)) == (int)strlen(text);
    ok = z && gzclose(z) == Z_OK && ok;
    if (ok && cut) ok = truncate(gz, (off_t)cut) == 0;
    return ok ? 0 : -1;
}

static int same_bytes(const char *a, const char *b) {
    size_t na, nb;
    char *x = tf_read_data(a, &na), *y = tf_read_data(b, &nb);
    int same = x && y && na == nb && !memcmp(x, y, na);
    free(x), free(y);
    return same;
}

TEST(gzip_data_files_read_as_the_plain_ones) {
    snprintf(g_dir, sizeof g_dir, "/tmp/tformer_gz_XXXXXX");
    CHECK(mkdtemp(g_dir) != NULL);
    size_t n;
    char *text = test_slurp("tests/data/unicode_stress.txt", &n);
    CHECK(text && write_pair(tmp_path("u.txt"), text, 0) == 0);
    CHECK(same_bytes(tmp_path("u.txt"), tmp_path("u.txt.gz")));
    char *raw = tf_read_file(tmp_path("u.txt.gz"), &n); /* the check can fail: the stream itself differs */
    CHECK(raw && (n != strlen(text) || memcmp(raw, text, n)));
    free(raw), free(text);
    /* a stream cut short is an error naming the file, not a short text */
    CHECK(write_pair(tmp_path("cut.txt"), "a line long enough to be compressed in more than twenty bytes\n", 20) == 0);
    CHECK(!tf_read_data(tmp_path("cut.txt.gz"), &n));
    CHECKF(strstr(tf_error(), "cut.txt.gz: not a readable gzip file"), "%s", tf_error());

    /* parallel text: the same ids and pairs */
    CHECK(write_pair(tmp_path("s.en"), "A man sleeps.\nTwo dogs run in the park.\n", 0) == 0);
    CHECK(write_pair(tmp_path("s.de"), "Ein Mann schläft.\nZwei Hunde rennen im Park.\n", 0) == 0);
    tf_tokenizer *tok = tf_tokenizer_load("char");
    CHECK(tok);
    tf_parallel_opts o = tf_parallel_opts_default();
    o.src_eos = o.tgt_eos = 256, o.tgt_bos = 257, o.src_pad = o.tgt_pad = 258;
    tf_parallel_set p = {0}, z = {0};
    int rc = tf_parallel_read(tok, tok, tmp_path("s.en"), tmp_path("s.de"), &o, &p);
    rc = rc || tf_parallel_read(tok, tok, tmp_path("s.en.gz"), tmp_path("s.de.gz"), &o, &z);
    tf_tokenizer_free(tok);
    int same = !rc && p.n == 2 && z.n == p.n && !memcmp(p.pairs, z.pairs, (size_t)p.n * sizeof *p.pairs);
    int64_t ids = p.n ? p.pairs[p.n - 1].tgt + p.pairs[p.n - 1].tgt_len : 0;
    same = same && !memcmp(p.ids, z.ids, (size_t)ids * sizeof *p.ids);
    tf_parallel_set_free(&p), tf_parallel_set_free(&z);
    CHECK(same);

    /* a fine-tuning TSV: the same examples */
    CHECK(write_pair(tmp_path("t.tsv"), "good film\tpos\nbad film\tneg\n", 0) == 0);
    tf_finetune_set a = {0}, b = {0};
    rc = tf_finetune_read(TF_FINETUNE_CLASSIFY, tmp_path("t.tsv"), 1, &a);
    rc = rc || tf_finetune_read(TF_FINETUNE_CLASSIFY, tmp_path("t.tsv.gz"), 1, &b);
    same = !rc && a.n == 2 && b.n == 2 && !strcmp(a.ex[1].a, b.ex[1].a) && !strcmp(a.ex[1].label, b.ex[1].label);
    tf_finetune_set_free(&a), tf_finetune_set_free(&b);
    CHECK(same);
    test_rm_rf(g_dir);
}

/* The loss lines of a run's stderr ("step N/M | loss X"), joined. */
static void loss_lines(const char *out, char *losses, size_t cap) {
    size_t k = 0;
    losses[0] = 0;
    for (const char *p = strstr(out, "| loss "); p && k + 32 < cap; p = strstr(p + 1, "| loss "))
        k += (size_t)snprintf(losses + k, cap - k, "%.*s;", (int)strcspn(p + 1, "|\n"), p + 1);
}

TEST(gzip_cli_inputs_give_what_the_plain_ones_give) {
    char out[8192], dir[64], cmd[1024], plain[512], gz[512];
    snprintf(dir, sizeof dir, "/tmp/tformer_gzrun_XXXXXX");
    CHECK(mkdtemp(dir) != NULL);
    snprintf(g_dir, sizeof g_dir, "%s", dir);
    size_t n;
    char *text = test_slurp("tests/data/unicode_stress.txt", &n);
    CHECK(text && write_pair(tmp_path("d.txt"), text, 0) == 0);
    free(text);
    const char *tiny = "--tokenizer char --steps 3 --n-layer 1 --n-head 2 --d-model 16 --context 16 --batch 4 "
                       "--eval-every 3 --eval-batches 2 --log-every 1 --threads 1";
    for (int i = 0; i < 2; i++) {
        snprintf(cmd, sizeof cmd, "train --data %s/d.txt%s --out %s/run%d %s", dir, i ? ".gz" : "", dir, i, tiny);
        CHECKF(test_run_cli("", cmd, out, sizeof out) == 0, "%s: %s", cmd, out);
        loss_lines(out, i ? gz : plain, sizeof plain);
    }
    CHECKF(*plain && !strcmp(plain, gz), "plain: %s\ngzip'ed: %s", plain, gz);
    for (int i = 0; i < 2; i++) {
        snprintf(cmd, sizeof cmd, "eval --model %s/run0 --data %s/d.txt%s", dir, dir, i ? ".gz" : "");
        CHECKF(test_run_cli("", cmd, i ? gz : plain, sizeof plain) == 0, "%s: %s", cmd, i ? gz : plain);
    }
    CHECKF(strstr(plain, "loss ") && !strcmp(plain, gz), "eval plain: %s\ngzip'ed: %s", plain, gz);
    /* tokenizer-train: the same merges */
    for (int i = 0; i < 2; i++) {
        snprintf(cmd, sizeof cmd, "tokenizer-train --type bpe --vocab-size 40 --out %s/tok%d %s/d.txt%s", dir, i, dir,
                 i ? ".gz" : "");
        CHECKF(test_run_cli("", cmd, out, sizeof out) == 0, "%s: %s", cmd, out);
    }
    CHECK(same_bytes(tmp_path("tok0/merges.txt"), tmp_path("tok1/merges.txt")));
    test_rm_rf(dir);
}

/* stdout of "tformer ARGS" with standard input from `how` (a shell redirection or a pipe's head, %s: the file),
 * into out; its exit status. */
static int run_in(const char *args, const char *how, const char *file, char *out, size_t n) {
    char in[600], cmd[2048];
    snprintf(in, sizeof in, how, file);
    if (in[0] == '<') snprintf(cmd, sizeof cmd, "%s %s %s 2>/dev/null", test_tformer_bin(), args, in);
    else snprintf(cmd, sizeof cmd, "%s | %s %s 2>/dev/null", in, test_tformer_bin(), args);
    return test_popen(cmd, out, n);
}

/* Gzip'ed text on standard input, a pipe as well as a file (`tformer encode < x.gz`, `zcat x.gz |` no longer
 * needed): every verb that reads text from standard input gunzips it as the data files are, told by gzip's magic
 * bytes, and prints what the plain text gives (it encoded the gzip stream's bytes, or refused them as invalid
 * UTF-8). Concatenated members read as one text; a stream cut short or corrupt is an error naming standard input. */
TEST(gzip_standard_input_reads_as_the_plain_text) {
    snprintf(g_dir, sizeof g_dir, "/tmp/tformer_gzin_XXXXXX");
    CHECK(mkdtemp(g_dir) != NULL);
    size_t n;
    char *text = test_slurp("tests/data/unicode_stress.txt", &n), *sents = test_slurp("tests/data/serve_sentences.txt", &n);
    CHECK(text && sents && write_pair(tmp_path("u.txt"), text, 0) == 0 && write_pair(tmp_path("s.txt"), sents, 0) == 0);
    CHECK(write_pair(tmp_path("ids.txt"), "1 2 3\n4 5 6\n", 0) == 0);
    free(text), free(sents);
    enum { CAP = 1 << 17 };
    char *plain = malloc(CAP), *got = malloc(CAP), args[600];
    CHECK(plain && got);
    snprintf(args, sizeof args, "bleu --ref %s --metrics bleu chrf", tmp_path("s.txt"));
    const char *const VERBS[][2] = {
        {"encode --tokenizer char --lines", "u.txt"}, {"encode --tokenizer char", "u.txt"},
        {"decode --tokenizer char", "ids.txt"}, {args, "s.txt"},
        {"embed --model tests/fixtures_distilbert_st/tiny_distilbert_st --threads 1", "s.txt"},
        {"predict --model tests/fixtures_serve_textcls/tiny_bert_cls --threads 1", "s.txt"}};
    for (size_t i = 0; i < sizeof VERBS / sizeof *VERBS; i++) {
        char file[300], gz[310];
        snprintf(file, sizeof file, "%s", tmp_path(VERBS[i][1]));
        snprintf(gz, sizeof gz, "%s.gz", file);
        CHECKF(run_in(VERBS[i][0], "< %s", file, plain, CAP) == 0 && *plain, "%s < %s: %s", VERBS[i][0], file, plain);
        static const char *const HOW[] = {"< %s", "cat %s"}; /* a file, a pipe */
        for (int k = 0; k < 2; k++) {
            int rc = run_in(VERBS[i][0], HOW[k], gz, got, CAP);
            CHECKF(rc == 0 && !strcmp(plain, got), "%s, standard input from '%s' of %s: status %d\n%.300s\nplain:\n%.300s",
                   VERBS[i][0], HOW[k], gz, rc, got, plain);
        }
    }
    /* two members (cat a.gz b.gz): one text */
    CHECK(write_pair(tmp_path("a.txt"), "first part\n", 0) == 0 && write_pair(tmp_path("b.txt"), "second part\n", 0) == 0);
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "cat %s.gz %s.gz | %s encode --tokenizer char --lines 2>&1", tmp_path("a.txt"),
             tmp_path("b.txt"), test_tformer_bin());
    CHECKF(test_popen(cmd, got, CAP) == 0 && strstr(got, "102 105 114 115 116 32 112 97 114 116\n115 101 99"), "%s", got);
    /* cut short, and corrupt (a byte of the compressed data changed): an error naming standard input */
    CHECK(write_pair(tmp_path("cut.txt"), "a line long enough to be compressed in more than twenty bytes\n", 20) == 0);
    snprintf(cmd, sizeof cmd, "cat %s.gz | %s encode --tokenizer char 2>&1", tmp_path("cut.txt"), test_tformer_bin());
    CHECKF(test_popen(cmd, got, CAP) == 1 && strstr(got, "tformer encode: cannot gunzip standard input: truncated"), "%s",
           got);
    snprintf(cmd, sizeof cmd, "%s.gz", tmp_path("u.txt"));
    FILE *f = fopen(cmd, "r+b");
    CHECK(f && fseek(f, 400, SEEK_SET) == 0 && fputc(0x5a ^ 0xff, f) != EOF && fclose(f) == 0);
    snprintf(cmd, sizeof cmd, "%s encode --tokenizer char < %s.gz 2>&1 >/dev/null", test_tformer_bin(), tmp_path("u.txt"));
    CHECKF(test_popen(cmd, got, CAP) == 1 && strstr(got, "tformer encode: cannot gunzip standard input: "), "%s", got);
    /* a file read whole (convert's ids.txt.gz): as the plain file */
    snprintf(cmd, sizeof cmd, "%s convert %s %s 2>/dev/null && %s convert %s.gz %s 2>/dev/null", test_tformer_bin(),
             tmp_path("ids.txt"), tmp_path("p.safetensors"), test_tformer_bin(), tmp_path("ids.txt"),
             tmp_path("z.safetensors"));
    CHECKF(test_popen(cmd, got, CAP) == 0, "%s", got);
    CHECK(same_bytes(tmp_path("p.safetensors"), tmp_path("z.safetensors")));
    free(plain), free(got);
    test_rm_rf(g_dir);
}
