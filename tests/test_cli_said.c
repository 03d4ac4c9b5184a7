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

/* finetune's start-up line, whole: the family of config.json's model_type (bert for a distilbert), the parameters,
 * vocabulary, data and folder, as train's (above) and the inference verbs' (cli_other_verbs_say_what_they_assumed). */
TEST(cli_finetune_says_what_it_starts) {
    char dir[] = "/tmp/tformer_said_XXXXXX", args[1024], said[1024], want[1024];
    CHECK(mkdtemp(dir) != NULL);
    CHECK(test_write_text(test_path_in(dir, "t.tsv"), "pos\ta fine film\nneg\ta dull film\n") == 0); /* 32 bytes */
    CHECK(test_write_text(test_path_in(dir, "v.tsv"), "pos\tgood\n") == 0);                          /* 9 */
    snprintf(args, sizeof args, "finetune --model tests/fixtures_distilbert_st/tiny_distilbert_mlm --task classify "
             "--train %s/t.tsv --valid %s/v.tsv --out %s/run --steps 1 --batch 2 --eval-every 1 --eval-batches 1 "
             "--threads 1", dir, dir, dir);
    snprintf(want, sizeof want, "tformer finetune: bert, 2502 parameters, vocabulary 217; data %s/t.tsv (32 B), "
             "%s/v.tsv (9 B); writing to %s/run/", dir, dir, dir);
    CHECKF(test_said_line(args, said, sizeof said) == 0 && !strcmp(said, want), "\n    want: %s\n    got:  %s", want,
           said);
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

/* A folder given with a trailing slash ("--model DIR/", as shells complete it) is the folder: the paths made
 * from it read DIR/tokenizer.json, not DIR//tokenizer.json (the slash cut once, in the flag's value and in
 * tf_model_load). */
TEST(cli_folder_with_trailing_slash_names_one_slash) {
    char err[8192], args[600], want[600];
    const char *st = "tests/fixtures_distilbert_st/tiny_distilbert_st";
    snprintf(args, sizeof args, "embed --model %s// --threads 1 < tests/data/serve_sentences.txt", st);
    snprintf(want, sizeof want, "tformer embed: distilbert model from %s/; tokenizer %s/tokenizer.json ", st, st);
    CHECKF(run_err(args, err, sizeof err) == 0 && !strncmp(err, want, strlen(want)) && !strstr(err, "//"), "%s", err);
}

/* Stdout and stderr of "tformer ARGS" apart: the exit status. */
static int run_apart(const char *args, char *out, size_t n_out, char *err, size_t n_err) {
    char cmd[2048], log[] = "/tmp/tformer_said_err_XXXXXX";
    if (test_temp_file(log)) return -1;
    snprintf(cmd, sizeof cmd, "%s %s 2>%s", test_tformer_bin(), args, log);
    int rc = test_popen(cmd, out, n_out);
    FILE *f = fopen(log, "r");
    size_t k = f ? fread(err, 1, n_err - 1, f) : 0;
    err[k] = 0;
    if (f) fclose(f);
    unlink(log);
    return rc;
}

/* Each verb's command (a format of %1$s: the test's folder, %2$s: a sentence-transformers folder, %3$s: a torch-run
 * case) and the start of its start-up line after "tformer VERB: " (the same format), and its exit status. */
static const struct {
    const char *args, *said;
    int rc;
} SAID_CASES[] = {
    {"encode --tokenizer %2$s < %1$s/ref.txt", "tokenizer %2$s/tokenizer.json (WordPiece, 217 tokens); standard "
     "input as one text (--lines: each line on its own), its ids on one line", 0},
    {"encode --tokenizer char --lines < %1$s/ref.txt", "tokenizer char (the 256 bytes: id = byte value); each line "
     "of standard input on its own (--lines), a line of ids per line", 0},
    {"decode --tokenizer %2$s < %1$s/ids.txt", "tokenizer %2$s/tokenizer.json (WordPiece, 217 tokens); the ids on "
     "standard input (between them spaces, commas or newlines) as one text", 0},
    {"bleu --ref %1$s/ref.txt -lc --metrics bleu chrf < %1$s/ref.txt", "BLEU and chrF2 of the lines on standard input "
     "against 1 reference: %1$s/ref.txt (24 B); BLEU's tokenisation 13a (the default, as sacreBLEU's), smoothing exp "
     "(the default); lower-cased (--lowercase)", 0},
    {"bleu --ref %1$s/ref.txt %1$s/ref.txt -tok intl --smooth floor --json < %1$s/ref.txt", "BLEU of the lines on "
     "standard input against 2 references: %1$s/ref.txt (24 B), %1$s/ref.txt (24 B); BLEU's tokenisation intl "
     "(--tokenize), smoothing floor 0.1 (--smooth); case-sensitive (no --lowercase)", 0},
    {"bleu --ref %1$s/ref.txt --metrics chrf -l en-zh < %1$s/ref.txt", "chrF2 of the lines on standard input against "
     "1 reference: %1$s/ref.txt (24 B); case-sensitive (no --lowercase)", 0},
    {"tokenizer-train --type wordpiece --vocab-size 40 --out %1$s/tok/ %1$s/ref.txt %1$s/ids.txt", "wordpiece "
     "(--type: BERT's), 40 tokens at most (--vocab-size), merges of pairs seen 1 times or more (any pair: "
     "--min-frequency 0); text from %1$s/ref.txt (24 B), %1$s/ids.txt (12 B); writing to %1$s/tok/", 0},
    {"inspect %2$s/model.safetensors", "%2$s/model.safetensors: safetensors of 36 tensors; a line per tensor: name, "
     "dtype, (shape) (--json: one JSON object)", 0},
    {"inspect --json %2$s/model.safetensors", "%2$s/model.safetensors: safetensors of 36 tensors; one JSON object "
     "(--json)", 0},
    {"compare %2$s/model.safetensors %2$s/model.safetensors --json", "each tensor of %2$s/model.safetensors (36) "
     "against %2$s/model.safetensors's (36) of the same name: relative L2 error ||a - b|| / ||a||, in double, one "
     "thread; one JSON object (--json)", 0},
    {"convert %1$s/t-images-idx3-ubyte %1$s/one.png", "%1$s/t-images-idx3-ubyte, idx images, to %1$s/one.png, an "
     "8-bit grey PNG: image 0 (--index 0: the first) (the conversion chosen by the names' endings)", 0},
    {"convert %2$s/model.safetensors %1$s/w.json --tensor embeddings.LayerNorm.bias", "%2$s/model.safetensors, "
     "safetensors, to %1$s/w.json, JSON: tensor embeddings.LayerNorm.bias (the conversion chosen by the names' "
     "endings)", 0},
    {"convert %1$s/ids.txt %1$s/in.safetensors", "%1$s/ids.txt, lines of token ids, to %1$s/in.safetensors, "
     "safetensors: an int64 tensor (rows, ids) named input_ids (--name, the default: hf-run's input_ids) (the "
     "conversion chosen by the names' endings)", 0},
    {"torch-run --config tests/fixtures/mha_self_nomask_bf0/config.json --weights %3$s/weights.safetensors --input "
     "%3$s/input.safetensors --output %1$s/o.safetensors --threads 1", "MultiheadAttention (--config "
     "tests/fixtures/mha_self_nomask_bf0/config.json), float32, its state_dict from %3$s/weights.safetensors; the "
     "inputs in %3$s/input.safetensors; writing %1$s/o.safetensors; 1 thread (--threads), ", 0},
    {"serve --model %1$s/none --port 0 --threads 1", "1 model (--model); 127.0.0.1 port 0 (--host, --port); 2 model "
     "calls at once (--parallel), embedding batches of up to 1 (--max-batch), 32 completions stepped together "
     "(--max-rows); no API key (--api-key, $TFORMER_API_KEY); 1 thread (--threads), ", 1},
};

/* The verbs that load no model folder say what they assumed too, in one line on stderr before their work: the
 * tokenizer file and its kind (encode, decode); the metrics, references, tokenisation, smoothing and case
 * (bleu); the algorithm, size, input files and folder (tokenizer-train); the file and what is printed (inspect,
 * compare); the conversion the names chose and its settings (convert); the module and threads (torch-run); the
 * address, limits and threads (serve). Standard output keeps the results alone, --json's object included. */
TEST(cli_other_verbs_say_what_they_assumed) {
    char dir[] = "/tmp/tformer_said_XXXXXX", args[1024], out[16384], err[8192], want[1400];
    CHECK(mkdtemp(dir) != NULL);
    const char *st = "tests/fixtures_distilbert_st/tiny_distilbert_st", *mha = "tests/fixtures/mha_self_nomask_bf0";
    FILE *f = fopen(test_path_in(dir, "ref.txt"), "w");
    CHECK(f && fputs("a man runs\nthe dog sits\n", f) >= 0 && !fclose(f)); /* 24 bytes */
    CHECK((f = fopen(test_path_in(dir, "ids.txt"), "w")) && fputs("1 2 3\n4 5 6\n", f) >= 0 && !fclose(f));
    /* two 4x4 grey images: the idx header, then 32 bytes */
    static const unsigned char IDX[16] = {0, 0, 8, 3, 0, 0, 0, 2, 0, 0, 0, 4, 0, 0, 0, 4}, PIXELS[32] = {0};
    CHECK((f = fopen(test_path_in(dir, "t-images-idx3-ubyte"), "wb")) && fwrite(IDX, 1, 16, f) == 16 &&
          fwrite(PIXELS, 1, 32, f) == 32 && !fclose(f));
    for (size_t i = 0; i < sizeof SAID_CASES / sizeof *SAID_CASES; i++) {
        char said[1200], verb[32];
        snprintf(args, sizeof args, SAID_CASES[i].args, dir, st, mha);
        snprintf(said, sizeof said, SAID_CASES[i].said, dir, st, mha);
        sscanf(args, "%31s", verb);
        snprintf(want, sizeof want, "tformer %s: %s", verb, said);
        int rc = run_apart(args, out, sizeof out, err, sizeof err);
        /* the first line of stderr; nothing of it on standard output */
        CHECKF(rc == SAID_CASES[i].rc && !strncmp(err, want, strlen(want)) && strchr(err, '\n') && !strstr(out, "tformer "),
               "%s: status %d\n    want: %s\n    got:  %s    stdout: %.200s", args, rc, want, err, out);
    }
    /* and more of the verbs that load a model (embed, classify, hf-run: above) */
    static const char *const MODELS[][2] = {
        {"fill-mask --text 'a [MASK]' --threads 1 --model %s", "tests/fixtures_distilbert_st/tiny_distilbert_mlm"},
        {"predict --threads 1 --model %s < /dev/null", "tests/fixtures_serve_textcls/tiny_bert_cls"},
        {"caption --threads 1 /nonexistent.png --model %s", "tests/fixtures_caption_hf/ved_grey12_p3_proj"}};
    for (size_t i = 0; i < sizeof MODELS / sizeof *MODELS; i++) {
        char verb[32];
        snprintf(args, sizeof args, MODELS[i][0], MODELS[i][1]);
        sscanf(args, "%31s", verb);
        snprintf(want, sizeof want, " model from %s/; ", MODELS[i][1]);
        run_apart(args, out, sizeof out, err, sizeof err);
        CHECKF(!strncmp(err, "tformer ", 8) && !strncmp(err + 8, verb, strlen(verb)) && strstr(err, want) &&
               strstr(err, "; 1 thread (--threads); float32, ") && strstr(err, want) < strchr(err, '\n'), "%s: %s",
               args, err);
    }
    test_rm_rf(dir);
}
