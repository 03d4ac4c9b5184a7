/* Hostile input, round two (issue 54): a run folder holds one run (a fresh
 * run into a folder that holds one is refused, --overwrite replaces it, a
 * run id keeps another run's kept checkpoints out of the pruning and the
 * average), stale tokenizer files never win (tokenizer-train refuses a folder
 * that holds one, a folder holding two tokenizers is an error naming both),
 * a FIFO or device given where a file is read is refused at once, a
 * resume refuses a checkpoint whose tensors are not finite, and a NUL byte
 * in a text is named as U+0000 with its file and line. The
 * cases run the CLI (TFORMER_BIN); each checks the exit status and the message. */
#define _DEFAULT_SOURCE /* mkfifo */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "test.h"
#include "util/util.h"

static int run(const char *args, char *out, size_t n) { return test_run_cli("", args, out, n); }
/* Under timeout(1): a command that blocks fails the case (status 124) instead of hanging the suite. */
static int run_bounded(const char *args, char *out, size_t n) { return test_run_cli("timeout 20", args, out, n); }

static int write_corpus(const char *path, int lines) {
    FILE *f = fopen(path, "w");
    if (!f) return -1;
    for (int i = 0; i < lines; i++) fputs("abcab cabca\n", f);
    return fclose(f);
}

/* A fresh folder from the template dir (mkdtemp) holding corpus.txt of 30 lines; 0 or -1. */
static int corpus_dir(char *dir) {
    char p[512];
    if (!mkdtemp(dir)) return -1;
    snprintf(p, sizeof p, "%s/corpus.txt", dir);
    return write_corpus(p, 30);
}

#define NET "--layers 1 --heads 2 --context 8 --batch 2 --threads 1"
#define KEEP "--keep-checkpoints 2 --average-last 2 --checkpoint-every 1"

static int exists(const char *dir, const char *name) {
    char p[512];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    return access(p, F_OK) == 0;
}

/* dir/checkpoints' names, space-separated, into out. */
static void kept(const char *dir, char *out, size_t n) {
    char cmd[512];
    snprintf(cmd, sizeof cmd, "ls %s/checkpoints | tr '\\n' ' '", dir);
    FILE *p = popen(cmd, "r");
    size_t k = p ? fread(out, 1, n - 1, p) : 0;
    out[k] = 0;
    if (p) pclose(p);
}

/* The largest difference between tensor name of file c and the mean of files a and b. */
static double mean_error(const char *a, const char *b, const char *c, const char *name) {
    tf_st_file *f[3] = {tf_st_open(a), tf_st_open(b), tf_st_open(c)};
    tf_arena *ar = tf_arena_new(0);
    tf_tensor *t[3] = {NULL, NULL, NULL};
    for (int i = 0; i < 3; i++)
        if (f[i] && tf_st_find(f[i], name)) t[i] = tf_st_to_tensor(f[i], tf_st_find(f[i], name), ar);
    double worst = t[0] && t[1] && t[2] && tf_numel(t[0]) == tf_numel(t[2]) ? 0 : INFINITY;
    for (int64_t i = 0; isfinite(worst) && i < tf_numel(t[0]); i++) {
        double d = fabs(0.5 * ((double)tf_f32(t[0])[i] + tf_f32(t[1])[i]) - tf_f32(t[2])[i]);
        worst = d > worst ? d : worst;
    }
    for (int i = 0; i < 3; i++) tf_st_close(f[i]);
    tf_arena_free(ar);
    return worst;
}

/* ---------------------------------------------------------------- item 1: a run folder holds one run */

TEST(reliability_a_run_folder_holds_one_run) {
    static char out[16384];
    char dir[] = "/tmp/tformer_rel_run_XXXXXX", args[2048], run_dir[256], b[256], names[512], cmd[1024];
    CHECK(corpus_dir(dir) == 0);
    snprintf(run_dir, sizeof run_dir, "%s/run", dir), snprintf(b, sizeof b, "%s/b", dir);
    /* run A: 8 steps, the last 2 kept and averaged */
    snprintf(args, sizeof args, "train --data %s/corpus.txt --out %s --tokenizer char --width 16 --steps 8 " NET " " KEEP,
             dir, run_dir);
    CHECKF(run(args, out, sizeof out) == 0, "%s", out);
    snprintf(cmd, sizeof cmd, "cp -r %s/checkpoints %s/a_kept && cp %s/model.safetensors %s/a_model", run_dir, dir,
             run_dir, dir);
    CHECK(system(cmd) == 0);
    /* a fresh run into it: refused, the model untouched */
    snprintf(args, sizeof args, "train --data %s/corpus.txt --out %s --tokenizer char --width 16 --steps 4 " NET, dir,
             run_dir);
    int rc = run(args, out, sizeof out);
    CHECKF(rc == 1 && strstr(out, run_dir) && strstr(out, "holds a run already") && strstr(out, "--resume") &&
               strstr(out, "--overwrite") && strstr(out, "model.safetensors"),
           "train again: %d: %s", rc, out);
    printf("    %s", out);
    CHECK(test_same_bytes(test_path_in(run_dir, "model.safetensors"), test_path_in(dir, "a_model")));
    /* finetune and tokenizer-train: the same rule, before anything is read */
    snprintf(args, sizeof args, "finetune --model %s/none --train %s/none.tsv --valid %s/none.tsv --out %s", dir, dir,
             dir, run_dir);
    rc = run(args, out, sizeof out);
    CHECKF(rc == 1 && strstr(out, "holds a run already") && strstr(out, "--overwrite"), "finetune: %d: %s", rc, out);
    snprintf(args, sizeof args, "tokenizer-train --type char --out %s %s/corpus.txt", run_dir, dir);
    rc = run(args, out, sizeof out);
    CHECKF(rc == 1 && strstr(out, run_dir) && strstr(out, "--overwrite"), "tokenizer-train: %d: %s", rc, out);
    /* --resume with --overwrite: a usage error */
    snprintf(args, sizeof args, "train --data %s/corpus.txt --out %s --tokenizer char --steps 8 --resume --overwrite " NET,
             dir, run_dir);
    CHECKF(run(args, out, sizeof out) == 2 && strstr(out, "--overwrite and --resume"), "%s", out);
    /* --overwrite: the old run's files go (another width: best/ and checkpoints/ are the new run's); a user's file stays */
    snprintf(args, sizeof args, "%s/notes.txt", run_dir);
    CHECK(test_write_text(args, "mine") == 0);
    snprintf(args, sizeof args, "train --data %s/corpus.txt --out %s --tokenizer char --width 8 --steps 2 --overwrite " NET
             " " KEEP, dir, run_dir);
    CHECKF(run(args, out, sizeof out) == 0, "--overwrite: %s", out);
    kept(run_dir, names, sizeof names);
    CHECKF(!strcmp(names, "step-00000001.safetensors step-00000002.safetensors "), "checkpoints/ after --overwrite: %s",
           names);
    snprintf(args, sizeof args, "%s/best/config.json", run_dir);
    size_t n;
    char *cfg = test_slurp(args, &n);
    CHECKF(cfg && strstr(cfg, "\"n_embd\":\t8,"), "best/ is not the new run's model: %s", cfg ? cfg : "(none)");
    free(cfg);
    CHECK(exists(run_dir, "notes.txt") && exists(run_dir, "run_id"));
    /* run B, stopped at step 2; another run's kept checkpoints (A's steps 7 and 8) put beside its own */
    snprintf(args, sizeof args, "train --data %s/corpus.txt --out %s --tokenizer char --width 16 --steps 4 --stop-at 2 "
             NET " " KEEP, dir, b);
    CHECKF(run(args, out, sizeof out) == 0, "%s", out);
    snprintf(cmd, sizeof cmd, "cp %s/a_kept/step-0000000[78].safetensors %s/checkpoints/", dir, b);
    CHECK(system(cmd) == 0);
    snprintf(args, sizeof args, "train --data %s/corpus.txt --out %s --tokenizer char --width 16 --steps 4 --resume " NET
             " " KEEP, dir, b);
    CHECKF(run(args, out, sizeof out) == 0, "resume: %s", out);
    /* B's last 2 are kept and averaged; A's files are neither pruned nor counted (before: B's own were deleted, and
     * averaged/ was the mean of A's) */
    kept(b, names, sizeof names);
    CHECKF(!strcmp(names, "step-00000003.safetensors step-00000004.safetensors step-00000007.safetensors "
                          "step-00000008.safetensors "),
           "B's checkpoints/: %s", names);
    CHECK(test_same_bytes(test_path_in(b, "checkpoints/step-00000007.safetensors"),
                          test_path_in(dir, "a_kept/step-00000007.safetensors")));
    char p3[512], p4[512], avg[512];
    snprintf(p3, sizeof p3, "%s/checkpoints/step-00000003.safetensors", b);
    snprintf(p4, sizeof p4, "%s/checkpoints/step-00000004.safetensors", b);
    snprintf(avg, sizeof avg, "%s/averaged/model.safetensors", b);
    double e = mean_error(p3, p4, avg, "transformer.wpe.weight");
    CHECKF(e < 1e-6, "averaged/ is not the mean of B's steps 3 and 4: %g", e);
    test_rm_rf(dir);
}

/* ---------------------------------------------------------------- item 2: stale tokenizer files never win */

TEST(reliability_stale_tokenizer_never_wins) {
    static char out[16384], want[4096];
    char dir[] = "/tmp/tformer_rel_tok_XXXXXX", args[2048], d[256], w[256], cmd[1024];
    CHECK(mkdtemp(dir) != NULL);
    snprintf(args, sizeof args, "%s/w.txt", dir);
    FILE *f = fopen(args, "w");
    CHECK(f != NULL);
    for (int i = 0; i < 20; i++) fputs("the cat sat on the mat\nthe dog sat on the log\n", f);
    fclose(f);
    snprintf(args, sizeof args, "%s/in.txt", dir);
    CHECK(test_write_text(args, "the cat sat on the log\n") == 0);
    snprintf(d, sizeof d, "%s/D", dir), snprintf(w, sizeof w, "%s/W", dir);
    /* W: a WordPiece folder; its ids of in.txt are the ones to get */
    snprintf(args, sizeof args, "tokenizer-train --type wordpiece --vocab-size 300 --out %s %s/w.txt", w, dir);
    CHECKF(run(args, out, sizeof out) == 0, "%s", out);
    snprintf(args, sizeof args, "encode --tokenizer %s < %s/in.txt", w, dir);
    CHECKF(run(args, want, sizeof want) == 0, "%s", want);
    /* D: byte-level BPE, then WordPiece into the same folder: refused; with --overwrite, D is WordPiece alone */
    snprintf(args, sizeof args, "tokenizer-train --type byte-bpe --vocab-size 300 --out %s %s/w.txt", d, dir);
    CHECKF(run(args, out, sizeof out) == 0, "%s", out);
    snprintf(args, sizeof args, "tokenizer-train --type wordpiece --vocab-size 300 --out %s %s/w.txt", d, dir);
    int rc = run(args, out, sizeof out);
    CHECKF(rc == 1 && strstr(out, d) && strstr(out, "--overwrite"), "wordpiece over byte-bpe: %d: %s", rc, out);
    printf("    %s", out);
    snprintf(args, sizeof args, "tokenizer-train --type wordpiece --vocab-size 300 --overwrite --out %s %s/w.txt", d, dir);
    CHECKF(run(args, out, sizeof out) == 0, "%s", out);
    CHECK(!exists(d, "vocab.json") && !exists(d, "merges.txt") && !exists(d, "tokenizer.tformer.json"));
    snprintf(args, sizeof args, "encode --tokenizer %s < %s/in.txt", d, dir);
    CHECKF(run(args, out, sizeof out) == 0 && !strcmp(out, want), "D encodes as '%s', W as '%s'", out, want);
    /* a folder holding two tokenizers: an error naming both; naming the file picks one */
    snprintf(cmd, sizeof cmd, "rm -r %s && mkdir %s", d, d);
    CHECK(system(cmd) == 0);
    snprintf(args, sizeof args, "tokenizer-train --type byte-bpe --vocab-size 300 --out %s %s/w.txt", d, dir);
    CHECKF(run(args, out, sizeof out) == 0, "%s", out);
    snprintf(cmd, sizeof cmd, "cp %s/vocab.txt %s/", w, d);
    CHECK(system(cmd) == 0);
    snprintf(args, sizeof args, "encode --tokenizer %s < %s/in.txt", d, dir);
    rc = run(args, out, sizeof out);
    CHECKF(rc == 1 && strstr(out, "holds two tokenizers") && strstr(out, "vocab.json + merges.txt") &&
               strstr(out, "vocab.txt (WordPiece)"),
           "two tokenizers: %d: %s", rc, out);
    printf("    %s", out);
    snprintf(args, sizeof args, "encode --tokenizer %s/vocab.txt < %s/in.txt", d, dir);
    CHECKF(run(args, out, sizeof out) == 0 && !strcmp(out, want), "D/vocab.txt: '%s'", out);
    /* train --tokenizer W into a folder that held a byte-BPE run: refused; with --overwrite, the run's tokenizer is W */
    snprintf(cmd, sizeof cmd, "rm %s/vocab.txt", d);
    CHECK(system(cmd) == 0);
    snprintf(args, sizeof args, "train --data %s/w.txt --tokenizer %s --out %s/R --width 16 --steps 1 " NET, dir, d, dir);
    CHECKF(run(args, out, sizeof out) == 0, "%s", out);
    snprintf(args, sizeof args, "train --data %s/w.txt --tokenizer %s --out %s/R --width 16 --steps 1 " NET, dir, w, dir);
    rc = run(args, out, sizeof out);
    CHECKF(rc == 1 && strstr(out, "holds a run already"), "train --tokenizer W into R: %d: %s", rc, out);
    snprintf(args, sizeof args, "train --data %s/w.txt --tokenizer %s --out %s/R --width 16 --steps 1 --overwrite " NET,
             dir, w, dir);
    CHECKF(run(args, out, sizeof out) == 0, "%s", out);
    snprintf(args, sizeof args, "encode --tokenizer %s/R < %s/in.txt", dir, dir);
    CHECKF(run(args, out, sizeof out) == 0 && !strcmp(out, want), "R encodes as '%s', W as '%s'", out, want);
    snprintf(args, sizeof args, "%s/R", dir);
    CHECK(!exists(args, "vocab.json") && !exists(args, "merges.txt"));
    test_rm_rf(dir);
}

/* ---------------------------------------------------------------- item 13: FIFOs and devices where a file is read */

TEST(reliability_fifo_and_devices_are_refused_when_read) {
    static char out[16384];
    char dir[] = "/tmp/tformer_rel_fifo_XXXXXX", args[2048], p[256];
    CHECK(corpus_dir(dir) == 0);
    snprintf(args, sizeof args, "train --data %s/corpus.txt --out %s/model --tokenizer char --width 16 --steps 1 " NET,
             dir, dir);
    CHECKF(run(args, out, sizeof out) == 0, "%s", out);
    snprintf(p, sizeof p, "%s/fifo", dir);
    CHECK(mkfifo(p, 0600) == 0);
    /* inspect FIFO (it blocked forever) */
    snprintf(args, sizeof args, "inspect %s", p);
    int rc = run_bounded(args, out, sizeof out);
    CHECKF(rc == 1 && strstr(out, p) && strstr(out, "FIFO"), "inspect FIFO: %d: %s", rc, out);
    printf("    %s", out);
    /* --data FIFO, --data a character device */
    snprintf(args, sizeof args, "eval --model %s/model --data %s", dir, p);
    rc = run_bounded(args, out, sizeof out);
    CHECKF(rc == 1 && strstr(out, p) && strstr(out, "FIFO"), "eval --data FIFO: %d: %s", rc, out);
    snprintf(args, sizeof args, "eval --model %s/model --data /dev/zero", dir);
    rc = run_bounded(args, out, sizeof out);
    CHECKF(rc == 1 && strstr(out, "/dev/zero") && strstr(out, "character device"), "eval --data /dev/zero: %d: %s", rc,
           out);
    /* a FIFO named model.safetensors, then one named config.json, in a model folder */
    static const char *const names[] = {"model.safetensors", "config.json", "chars.txt"};
    for (int i = 0; i < 3; i++) {
        char cmd[1024];
        snprintf(cmd, sizeof cmd, "rm -rf %s/m && cp -r %s/model %s/m && rm %s/m/%s && mkfifo %s/m/%s", dir, dir, dir, dir,
                 names[i], dir, names[i]);
        CHECK(system(cmd) == 0);
        snprintf(args, sizeof args, "generate --model %s/m --prompt ab --max-tokens 2", dir);
        rc = run_bounded(args, out, sizeof out);
        CHECKF(rc == 1 && strstr(out, names[i]) && strstr(out, "FIFO"), "generate, %s a FIFO: %d: %s", names[i], rc, out);
    }
    /* the library's readers */
    CHECK(!tf_st_open(p) && strstr(tf_error(), "FIFO"));
    size_t n;
    CHECK(!tf_read_file(p, &n) && strstr(tf_error(), "FIFO"));
    CHECK(tf_open_regular("/dev/null") < 0 && strstr(tf_error(), "character device"));
    test_rm_rf(dir);
}

/* ---------------------------------------------------------------- item 8: a resume from non-finite tensors */

/* value at element 1 of tensor name in the safetensors file path, rewritten in place (header and metadata kept). */
static int poison_in_place(const char *path, const char *name, float value) {
    size_t n;
    char *buf = test_slurp(path, &n);
    tf_st_file *f = buf ? tf_st_open_memory(buf, n, path) : NULL;
    const tf_st_entry *e = f ? tf_st_find(f, name) : NULL;
    int rc = e && e->dtype == TF_ST_F32 && e->nbytes >= 2 * sizeof value ? 0 : -1;
    if (!rc) memcpy(buf + ((const char *)e->data - buf) + sizeof value, &value, sizeof value);
    tf_st_close(f);
    if (!rc) {
        FILE *out = fopen(path, "wb");
        rc = !out || fwrite(buf, 1, n, out) != n;
        if (out && fclose(out)) rc = -1;
    }
    free(buf);
    return rc;
}

TEST(reliability_resume_refuses_a_non_finite_checkpoint) {
    static char out[16384];
    char dir[] = "/tmp/tformer_rel_nan_XXXXXX", args[2048], cmd[1024], ck[512];
    CHECK(corpus_dir(dir) == 0);
    snprintf(args, sizeof args, "train --data %s/corpus.txt --out %s/run --tokenizer char --width 16 --steps 4 --stop-at 2 "
             NET, dir, dir);
    CHECKF(run(args, out, sizeof out) == 0, "%s", out);
    static const struct {
        const char *tensor;
        float value;
        const char *what;
    } cases[] = {{"transformer.h.0.attn.c_attn.weight", NAN, "NaN"},
                 {"adam.v.transformer.wte.weight", INFINITY, "inf"},
                 {"adam.m.transformer.ln_f.bias", -INFINITY, "-inf"}};
    for (int i = 0; i < 3; i++) {
        snprintf(cmd, sizeof cmd, "rm -rf %s/bad && cp -r %s/run %s/bad", dir, dir, dir);
        CHECK(system(cmd) == 0);
        snprintf(ck, sizeof ck, "%s/bad/checkpoint.safetensors", dir);
        CHECKF(poison_in_place(ck, cases[i].tensor, cases[i].value) == 0, "cannot poison %s in %s", cases[i].tensor, ck);
        snprintf(args, sizeof args, "train --data %s/corpus.txt --out %s/bad --tokenizer char --width 16 --steps 4 "
                 "--resume " NET, dir, dir);
        int rc = run(args, out, sizeof out);
        char expect[256];
        snprintf(expect, sizeof expect, "tensor '%s' holds %s at element 1 (1 of ", cases[i].tensor, cases[i].what);
        CHECKF(rc == 1 && strstr(out, ck) && strstr(out, expect) && strstr(out, "refusing to resume") &&
                   !strstr(out, "step 3/4"),
               "%s: %d: %s", cases[i].tensor, rc, out);
        if (i == 0) printf("    %s", out);
    }
    /* the checkpoint as written resumes */
    snprintf(args, sizeof args, "train --data %s/corpus.txt --out %s/run --tokenizer char --width 16 --steps 4 --resume "
             NET, dir, dir);
    CHECKF(run(args, out, sizeof out) == 0 && strstr(out, "step 4/4"), "%s", out);
    test_rm_rf(dir);
}

/* ---------------------------------------------------------------- item 10: a NUL byte in a text */

TEST(reliability_nul_in_text_is_named) {
    static char out[16384];
    char dir[] = "/tmp/tformer_rel_nul_XXXXXX", args[2048], nul[256];
    CHECK(mkdtemp(dir) != NULL);
    snprintf(nul, sizeof nul, "%s/nul.txt", dir);
    FILE *f = fopen(nul, "wb");
    CHECK(f != NULL);
    for (int i = 0; i < 10; i++) fwrite(i == 1 ? "ab\0c abca\n" : "abc abcab\n", 1, 10, f);
    fclose(f);
    /* learning a vocabulary from it, every kind: refused naming the file, the line and U+0000 (the alphabet left NUL
     * out, and encoding the same file then failed) */
    static const char *const kinds[] = {"char", "bpe --vocab-size 40", "byte-bpe --vocab-size 300",
                                        "wordpiece --vocab-size 40"};
    for (int i = 0; i < 4; i++) {
        snprintf(args, sizeof args, "tokenizer-train --type %s --out %s/tok%d %s", kinds[i], dir, i, nul);
        int rc = run(args, out, sizeof out);
        CHECKF(rc == 1 && strstr(out, nul) && strstr(out, "nul.txt:2: a NUL byte (U+0000) at column 3"),
               "tokenizer-train --type %s: %d: %s", kinds[i], rc, out);
        if (i == 0) printf("    %s", out);
    }
    /* train learning its characters from it: the same, and no folder left behind */
    snprintf(args, sizeof args, "train --data %s --out %s/run --tokenizer char --width 16 --steps 1 " NET, nul, dir);
    int rc = run(args, out, sizeof out);
    CHECKF(rc == 1 && strstr(out, "nul.txt:2: a NUL byte (U+0000)"), "train: %d: %s", rc, out);
    CHECK(!exists(dir, "run"));
    /* encoding it with an alphabet without NUL: U+0000 and the line named, never the raw byte */
    snprintf(args, sizeof args, "%s/clean.txt", dir);
    CHECK(write_corpus(args, 3) == 0);
    snprintf(args, sizeof args, "tokenizer-train --type char --out %s/clean %s/clean.txt", dir, dir);
    CHECKF(run(args, out, sizeof out) == 0, "%s", out);
    snprintf(args, sizeof args, "encode --tokenizer %s/clean < %s", dir, nul);
    rc = run(args, out, sizeof out);
    CHECKF(rc == 1 && strstr(out, "character U+0000 at byte 12 (line 2) is not in the alphabet"), "encode: %d: %s", rc,
           out);
    test_rm_rf(dir);
}
