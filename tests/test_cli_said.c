/* What the CLI says of itself: the defaults it assumed, where it wrote, and errors that name
 * the flags to change (issue 55, "a newcomer's first hour"). */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "test.h"

/* Run tformer with args; its exit status, and its stderr alone in err. */
static int run_err(const char *args, char *err, size_t n) {
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "%s %s 2>&1 >/dev/null", test_tformer_bin(), args);
    return test_popen(cmd, err, n);
}

/* lines lines of six words, then one of 50 words when long_line (else of one) */
static int write_lines(const char *path, int lines, int long_line) {
    static const char *const W[] = {"a", "man", "dog", "runs", "ein", "Mann", "Hund", "rennt"};
    FILE *f = fopen(path, "w");
    for (int i = 0; f && i < lines; i++)
        for (int k = 0; k < 6; k++) fprintf(f, "%s%s", W[(i * 7 + k * 3) % 8], k == 5 ? "\n" : " ");
    for (int k = 0; f && k < (long_line ? 50 : 1); k++) fprintf(f, "%s", k == (long_line ? 49 : 0) ? "rennt\n" : "rennt ");
    return f && !fclose(f) ? 0 : -1;
}

static int is_dir(const char *p) {
    struct stat st;
    return !stat(p, &st) && S_ISDIR(st.st_mode);
}

TEST(cli_seq2seq_length_error_names_the_flags_to_change) {
    char dir[64], args[1024], err[4096];
    snprintf(dir, sizeof dir, "/tmp/tformer_said_XXXXXX");
    CHECK(mkdtemp(dir) != NULL);
    const char *names[] = {"s.en", "s.de", "v.en", "v.de"};
    for (int i = 0; i < 4; i++) {
        snprintf(args, sizeof args, "%s/%s", dir, names[i]);
        CHECK(write_lines(args, 12, i == 1) == 0);
    }
    snprintf(args, sizeof args, "train --arch seq2seq --src %s/s.en --tgt %s/s.de --valid-src %s/v.en --valid-tgt %s/v.de "
             "--out %s/run --steps 1", dir, dir, dir, dir, dir);
    int rc = run_err(args, err, sizeof err);
    /* no setting named "truncate" exists: the message names the flags that do */
    CHECKF(rc == 1 && strstr(err, "s.de line 13: 299 tokens + 1 = 300 ids, more than max_len 128: raise --max-len (now "
                                  "128; at most --context, now 128), or give a sub-word --tokenizer (the tokens are "
                                  "now the data's characters)") && !strstr(err, "truncate"), "status %d: %s", rc, err);
    snprintf(args, sizeof args, "%s/run", dir);
    CHECK(!is_dir(args)); /* a refused run leaves no folder */
    snprintf(args, sizeof args, "train --arch seq2seq --src %s/s.en --tgt %s/s.de --valid-src %s/v.en --valid-tgt %s/v.de "
             "--out %s/run --steps 1 --max-len 300", dir, dir, dir, dir, dir);
    CHECKF(run_err(args, err, sizeof err) == 1 && strstr(err, "--max-len 300 exceeds the model's --context 128"), "%s", err);
    test_rm_rf(dir);
}

TEST(cli_train_says_what_it_starts_and_where_it_saved) {
    char dir[64], args[1024], err[8192], want[512];
    snprintf(dir, sizeof dir, "/tmp/tformer_said_XXXXXX");
    CHECK(mkdtemp(dir) != NULL);
    const char *tiny = "--steps 2 --n-layer 1 --n-head 2 --d-model 16 --context 16 --batch 4 --log-every 1";
    snprintf(args, sizeof args, "train --data tests/data/unicode_stress.txt --out %s/run %s", dir, tiny);
    CHECKF(run_err(args, err, sizeof err) == 0, "%s", err);
    /* on stderr: the family, its parameters, the vocabulary and why characters, the data and its size, the folder */
    long long params = 0;
    const char *p = strstr(err, "tformer train: gpt, ");
    CHECKF(p && sscanf(p, "tformer train: gpt, %lld parameters, ", &params) == 1 && params > 1000, "%s", err);
    snprintf(want, sizeof want, "parameters, vocabulary 210 (the data's characters: no --tokenizer given); data "
             "tests/data/unicode_stress.txt (7.6 kB); writing to %s/run/\n", dir);
    CHECKF(strstr(err, want), "no '%s' in:\n%s", want, err);
    snprintf(want, sizeof want, "saved to %s/run/: best/, chars.txt, checkpoint.safetensors, config.json, loss.png, "
             "losses.csv, model.safetensors, run_id, tokenizer.tformer.json\n", dir);
    CHECKF(strstr(err, want), "no '%s' in:\n%s", want, err);
    /* a resumed run says so */
    snprintf(args, sizeof args, "train --data tests/data/unicode_stress.txt --out %s/run %s --steps 3 --resume "
             "--allow-changes", dir, tiny);
    CHECKF(run_err(args, err, sizeof err) == 0 && strstr(err, "; resuming in "), "%s", err);
    test_rm_rf(dir);
}

TEST(cli_finetune_says_first_that_a_folder_is_not_a_bert) {
    char err[4096];
    int rc = run_err("finetune --model tests/fixtures_gpt2/tiny_gelu_new --task classify --train /dev/null --valid "
                     "/dev/null --out /tmp/tformer_said_never", err, sizeof err);
    CHECKF(rc == 1 && strstr(err, "tformer finetune: tests/fixtures_gpt2/tiny_gelu_new is a \"gpt2\" model (the gpt "
                             "family: tformer generate or eval runs it), not a BERT: finetune needs a BERT-family "
                             "folder (model_type bert, "), "status %d: %s", rc, err);
    CHECK(!is_dir("/tmp/tformer_said_never"));
}

/* Each flag's default is said once in --help: a flag whose help explains an empty default
 * ("(default: the folder's, else mean)") does not also say "(default none)" (embed --pooling's
 * two defaults disagreed: "none" is one of its values). */
TEST(cli_help_says_each_default_once) {
    char cmd[1024], line[4096];
    snprintf(cmd, sizeof cmd, "T=%s; for v in $($T --help | awk '/^  [a-z]/ {print $1}'); do $T $v --help; done",
             test_tformer_bin());
    FILE *p = popen(cmd, "r");
    CHECK(p != NULL);
    int lines = 0, twice = 0, pooling = 0;
    while (fgets(line, sizeof line, p)) {
        lines++;
        char *first = strstr(line, "(default");
        if (first && strstr(first + 1, "(default")) twice++, fprintf(stderr, "    said twice: %s", line);
        if (strstr(line, "--pooling mean|cls|max|none") && strstr(line, "(default: the folder's, else mean)\n")) pooling = 1;
    }
    pclose(p);
    CHECKF(lines > 200 && twice == 0 && pooling, "%d lines, %d with two defaults, embed --pooling %s", lines, twice,
           pooling ? "right" : "not found as expected");
}

/* --out a/b/run makes its missing parents, as save_pretrained does (it was "cannot create: No such
 * file or directory"), and says the folder once with one slash; a parent that cannot be made is named. */
/* One step of a tiny GPT into dir/sub; the exit status, stderr in err. */
static int train_one_step(const char *dir, const char *sub, char *err, size_t n) {
    char args[1024];
    snprintf(args, sizeof args, "train --data tests/data/unicode_stress.txt --out %s/%s --steps 1 --n-layer 1 "
             "--n-head 2 --d-model 16 --context 16 --batch 2", dir, sub);
    return run_err(args, err, n);
}

TEST(cli_out_makes_its_parent_folders) {
    char dir[] = "/tmp/tformer_said_XXXXXX", args[1024], err[8192], want[256];
    CHECK(mkdtemp(dir) != NULL);
    CHECKF(train_one_step(dir, "runs/gpt/a/", err, sizeof err) == 0, "%s", err);
    snprintf(want, sizeof want, "writing to %s/runs/gpt/a/\n", dir);
    CHECKF(strstr(err, want), "no '%s' in:\n%s", want, err);
    snprintf(want, sizeof want, "saved to %s/runs/gpt/a/: best/", dir);
    CHECKF(strstr(err, want), "no '%s' in:\n%s", want, err);
    snprintf(args, sizeof args, "%s/runs/gpt/a/model.safetensors", dir);
    CHECK(access(args, F_OK) == 0);
    snprintf(args, sizeof args, "%s/file", dir);
    FILE *f = fopen(args, "w");
    CHECK(f != NULL && fclose(f) == 0);
    snprintf(want, sizeof want, "--out %s/file/x/run: cannot create %s/file/x: Not a directory", dir, dir);
    CHECKF(train_one_step(dir, "file/x/run", err, sizeof err) == 1 && strstr(err, want), "%s", err);
    test_rm_rf(dir);
}

/* One name per setting: embed's input length is --max-len as finetune's and predict's, with
 * --max-length (Hugging Face tokenizers' name) taken as the same flag. */
TEST(cli_embed_max_len_is_the_one_name) {
    char err[4096];
    const char *m = "tests/fixtures_distilbert_st/tiny_distilbert_st";
    char args[512];
    for (int k = 0; k < 2; k++) {
        snprintf(args, sizeof args, "embed --model %s %s 100000 < /dev/null", m, k ? "--max-length" : "--max-len");
        CHECKF(run_err(args, err, sizeof err) == 1 && strstr(err, "--max-len 100000 exceeds the model's context"), "%s",
               err);
    }
    char cmd[512];
    snprintf(cmd, sizeof cmd, "%s embed --help 2>&1", test_tformer_bin());
    FILE *p = popen(cmd, "r");
    CHECK(p != NULL);
    size_t n = fread(err, 1, sizeof err - 1, p);
    err[n] = 0;
    pclose(p);
    CHECKF(strstr(err, "--max-len N ") && strstr(err, "also --max-length)"), "%s", err);
}

/* Every verb that loads a model says on stderr, in one line, what it assumed: the family and the
 * folder, the tokenizer file read, the threads and where their count came from, the precision and
 * kernels, and the defaults it picked (embed's pooling, the images' colours); standard output keeps
 * the results alone. */
TEST(cli_inference_verbs_say_what_they_assumed) {
    char err[8192], out[8192], want[600];
    const char *st = "tests/fixtures_distilbert_st/tiny_distilbert_st";
    CHECKF(run_err("embed --model tests/fixtures_distilbert_st/tiny_distilbert_st --threads 1 "
                   "< tests/data/serve_sentences.txt", err, sizeof err) == 0, "%s", err);
    snprintf(want, sizeof want, "tformer embed: distilbert model from %s/; tokenizer %s/tokenizer.json (217 tokens); "
             "1 thread (--threads); float32, ", st, st);
    CHECKF(!strncmp(err, want, strlen(want)) && strstr(err, " kernels; pooling mean (the folder's)\n"), "%s", err);
    /* $TFORMER_THREADS, and --pooling given */
    char cmd[600];
    snprintf(cmd, sizeof cmd, "TFORMER_THREADS=1 %s embed --model %s --pooling cls < tests/data/serve_sentences.txt "
             "2>&1 >/dev/null", test_tformer_bin(), st);
    CHECKF(test_popen(cmd, err, sizeof err) == 0 && strstr(err, "; 1 thread ($TFORMER_THREADS); ") &&
           strstr(err, "; pooling cls\n"), "%s", err);
    /* standard output: the vectors alone */
    snprintf(cmd, sizeof cmd, "%s embed --model %s --threads 1 < tests/data/serve_sentences.txt 2>/dev/null | grep -c "
             "tformer", test_tformer_bin(), st);
    CHECKF(test_popen(cmd, out, sizeof out) != 0 && !strcmp(out, "0\n"), "%s", out);
    /* an image classifier: no tokenizer; the images' colour conversion */
    CHECKF(run_err("classify --model tests/fixtures_vit/cls_grey28_p4_labels --data-dir /nonexistent", err,
                   sizeof err) == 1 && strstr(err, "tformer classify: vit model from tests/fixtures_vit/cls_grey28_p4_labels/; "),
           "%s", err);
    CHECKF(strstr(err, " threads (all cores: no --threads or $TFORMER_THREADS); float32, ") ||
           strstr(err, " thread (all cores: no --threads or $TFORMER_THREADS); float32, "), "%s", err);
    /* hf-run: --threads as every verb that computes has it (it had none); with --text, the tokenizer it read */
    char dir[] = "/tmp/tformer_said_XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    snprintf(cmd, sizeof cmd, "hf-run --model %s --text 'a man' --output %s/o.safetensors --threads 1", st, dir);
    snprintf(want, sizeof want, "tformer hf-run: distilbert model from %s/; tokenizer %s/tokenizer.json (217 tokens); ",
             st, st);
    CHECKF(run_err(cmd, err, sizeof err) == 0 && !strncmp(err, want, strlen(want)) &&
           strstr(err, " 1 thread (--threads); float32, "), "%s", err);
    /* torch-run and stream take it too */
    static const char *const THREADED[] = {"torch-run", "stream"};
    for (size_t i = 0; i < sizeof THREADED / sizeof *THREADED; i++) {
        snprintf(cmd, sizeof cmd, "%s %s --help 2>&1 | grep -c -- '--threads N'", test_tformer_bin(), THREADED[i]);
        CHECKF(test_popen(cmd, out, sizeof out) == 0 && !strcmp(out, "1\n"), "%s: %s", THREADED[i], out);
    }
    test_rm_rf(dir);
}
