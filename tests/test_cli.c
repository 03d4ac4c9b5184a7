/* The CLI as a user meets it: `tformer torch-run` on good and bad input. Every
 * failure must exit non-zero, name the problem, and leave no output file. */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "test.h"

#define FX "tests/fixtures/"

static const char *bin(void) {
    const char *b = getenv("TFORMER_BIN");
    return b ? b : "build/tformer";
}

/* Run the CLI; returns its exit status and fills err with its stderr. */
static int run(const char *args, char *err, size_t n) {
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "%s %s 2>/tmp/tformer_cli_err >/dev/null", bin(), args);
    int st = system(cmd);
    FILE *f = fopen("/tmp/tformer_cli_err", "r");
    size_t k = f ? fread(err, 1, n - 1, f) : 0;
    err[k] = 0;
    if (f) fclose(f);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

static int exists(const char *p) {
    struct stat st;
    return stat(p, &st) == 0;
}

/* The inputs of mha_self_nomask_bf0 plus an attn_mask of shape (4,4). */
static int bad_mask_input(const char *path) {
    tf_st_file *f = tf_st_open(FX "mha_self_nomask_bf0/input.safetensors");
    tf_arena *a = tf_arena_new(0);
    tf_st_writer *w = tf_st_writer_new();
    int rc = f && a && w ? 0 : -1;
    for (int i = 0; !rc && i < tf_st_count(f); i++)
        rc = tf_st_writer_add(w, tf_st_entry_at(f, i)->name, tf_st_to_tensor(f, tf_st_entry_at(f, i), a));
    tf_tensor *m = rc ? NULL : tf_tensor_alloc(a, TF_DTYPE_U8, 2, (int64_t[]){4, 4}, 0);
    rc = rc || !m || tf_st_writer_add(w, "attn_mask", m) || tf_st_writer_save(w, path);
    tf_st_writer_free(w);
    tf_arena_free(a);
    tf_st_close(f);
    return rc;
}

#define CASE(c) "--config " FX c "/config.json --weights " FX c "/weights.safetensors --input " FX c "/input.safetensors"

TEST(cli_torch_run_good_and_bad_input) {
    char err[4096];
    const char *out = "/tmp/tformer_cli_out.safetensors";
    unlink(out);
    CHECKF(run("torch-run " CASE("mha_self_nomask_bf0") " --output /tmp/tformer_cli_out.safetensors", err, sizeof err) == 0,
           "good run failed: %s", err);
    tf_st_file *f = tf_st_open(out);
    CHECK(f && tf_st_find(f, "output") && tf_st_find(f, "attn_output_weights") && tf_st_find(f, "grad.query"));
    tf_st_close(f);
    unlink(out);

    static const struct {
        const char *args, *expect;
    } bad[] = {
        /* a missing input tensor: the weights file holds no 'query' */
        {"--config " FX "mha_self_nomask_bf0/config.json --weights " FX "mha_self_nomask_bf0/weights.safetensors"
         " --input " FX "mha_self_nomask_bf0/weights.safetensors", "missing input tensor 'query'"},
        /* a wrong shape: key of width kdim=7 where embed_dim 15 is expected */
        {"--config " FX "mha_self_nomask_bf0/config.json --weights " FX "mha_self_nomask_bf0/weights.safetensors"
         " --input " FX "mha_kvdim_boolkpm_bf0/input.safetensors", "input 'key' has shape"},
        /* weights of another module */
        {"--config " FX "enclayer_post_relu_v0_bf0/config.json --weights " FX "mha_self_nomask_bf0/weights.safetensors"
         " --input " FX "enclayer_post_relu_v0_bf0/input.safetensors", "missing tensor 'self_attn.in_proj_weight'"},
        /* a mask of the wrong shape (written by bad_mask_input below) */
        {"--config " FX "mha_self_nomask_bf0/config.json --weights " FX "mha_self_nomask_bf0/weights.safetensors"
         " --input /tmp/tformer_cli_badmask.safetensors", "'attn_mask' has shape (4,4)"},
        {"--config /nonexistent.json --weights x --input y", "/nonexistent.json: cannot open"},
        {"--config tests/data/unknown_module.json --weights " FX "mha_self_nomask_bf0/weights.safetensors"
         " --input " FX "mha_self_nomask_bf0/input.safetensors", "unknown module \"Conv2d\""},
        {"--config tests/data/all_dtypes.json --weights x --input y", "missing \"module\""},
        {"--config " FX "mha_self_nomask_bf0/config.json --weights tests/data/all_dtypes.json"
         " --input y", "header length"},
    };
    char args[2048];
    CHECK(bad_mask_input("/tmp/tformer_cli_badmask.safetensors") == 0);
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        snprintf(args, sizeof args, "torch-run %s --output %s", bad[i].args, out);
        int rc = run(args, err, sizeof err);
        CHECKF(rc == 1, "case %zu: exit status %d (want 1); stderr: %s", i, rc, err);
        CHECKF(strstr(err, bad[i].expect) != NULL, "case %zu: stderr '%s' lacks '%s'", i, err, bad[i].expect);
        CHECKF(!exists(out), "case %zu left an output file", i);
    }
    unlink("/tmp/tformer_cli_badmask.safetensors");
    CHECK(run("torch-run --config a --weights b", err, sizeof err) == 2 && strstr(err, "missing --input"));
    CHECK(run("frobnicate", err, sizeof err) == 2 && strstr(err, "unknown command"));
}

TEST(cli_warns_on_unknown_config_keys) {
    char err[4096];
    FILE *f = fopen("/tmp/tformer_cli_cfg.json", "w");
    CHECK(f != NULL);
    fputs("{\"module\": \"MultiheadAttention\", \"embed_dim\": 15, \"num_heads\": 3, \"frobnicate\": 1}", f);
    fclose(f);
    CHECK(run("torch-run --config /tmp/tformer_cli_cfg.json --weights " FX "mha_self_nomask_bf0/weights.safetensors"
              " --input " FX "mha_self_nomask_bf0/input.safetensors --output /tmp/tformer_cli_out2.safetensors",
              err, sizeof err) == 0);
    CHECK(strstr(err, "unknown key \"frobnicate\"") != NULL);
    unlink("/tmp/tformer_cli_out2.safetensors");
    unlink("/tmp/tformer_cli_cfg.json");
}

/* Run a shell pipeline; returns its exit status and fills out with stdout. */
static int pipe_run(const char *cmd, char *out, size_t n) {
    FILE *p = popen(cmd, "r");
    if (!p) return -1;
    size_t k = fread(out, 1, n - 1, p);
    out[k] = 0;
    int st = pclose(p);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

TEST(cli_encode_decode_train) {
    char out[4096], cmd[1024];
    snprintf(cmd, sizeof cmd, "printf 'hello world' | %s encode --tokenizer ../shared/data/gpt2", bin());
    CHECK(pipe_run(cmd, out, sizeof out) == 0 && !strcmp(out, "31373 995\n"));
    snprintf(cmd, sizeof cmd, "echo '31373 995' | %s decode --tokenizer ../shared/data/gpt2", bin());
    CHECK(pipe_run(cmd, out, sizeof out) == 0 && !strcmp(out, "hello world"));
    snprintf(cmd, sizeof cmd, "printf 'Hello, my dog is cute' | %s encode --tokenizer ../shared/data/bert/bert-base-uncased-vocab.txt", bin());
    CHECK(pipe_run(cmd, out, sizeof out) == 0 && !strcmp(out, "7592 1010 2026 3899 2003 10140\n"));
    snprintf(cmd, sizeof cmd, "printf 'hi' | %s encode --tokenizer char && echo '104 105' | %s decode --tokenizer char", bin(), bin());
    CHECK(pipe_run(cmd, out, sizeof out) == 0 && !strcmp(out, "104 105\nhi"));
    snprintf(cmd, sizeof cmd, "echo '1 99999' | %s decode --tokenizer ../shared/data/gpt2 2>&1", bin());
    CHECK(pipe_run(cmd, out, sizeof out) == 1 && strstr(out, "id 99999 at position 1"));
    snprintf(cmd, sizeof cmd, "echo '1 x2' | %s decode --tokenizer char 2>&1", bin());
    CHECK(pipe_run(cmd, out, sizeof out) == 1 && strstr(out, "'x2' is not an id"));
    snprintf(cmd, sizeof cmd, "%s tokenizer-train --type bpe --vocab-size 30 --out /tmp/tformer_cli_tok_%d tests/data/seed_bpe.txt"
             " && printf 'see the sea' | %s encode --tokenizer /tmp/tformer_cli_tok_%d | %s decode --tokenizer /tmp/tformer_cli_tok_%d"
             " && rm -r /tmp/tformer_cli_tok_%d", bin(), (int)getpid(), bin(), (int)getpid(), bin(), (int)getpid(), (int)getpid());
    CHECK(pipe_run(cmd, out, sizeof out) == 0 && !strcmp(out, "see the sea "));
    snprintf(cmd, sizeof cmd, "%s tokenizer-train --type lstm --vocab-size 30 --out /tmp/x f 2>&1", bin());
    CHECK(pipe_run(cmd, out, sizeof out) == 2 && strstr(out, "usage"));
    snprintf(cmd, sizeof cmd, "%s tokenizer-train --type bpe --vocab-size 30 --out /tmp/tformer_cli_x /nonexistent 2>&1", bin());
    CHECK(pipe_run(cmd, out, sizeof out) == 1 && strstr(out, "/nonexistent: cannot open"));
}

TEST(cli_train_generate_eval) {
    char out[8192], cmd[2048], dir[64];
    snprintf(dir, sizeof dir, "/tmp/tformer_cli_run_%d", (int)getpid());
    const char *tiny = "--steps 6 --layers 1 --heads 2 --width 16 --context 16 --batch 4 --eval-every 3 --eval-batches 2 --log-every 1";
    snprintf(cmd, sizeof cmd, "%s train --data tests/data/unicode_stress.txt --tokenizer char --out %s %s 2>&1", bin(), dir, tiny);
    CHECKF(pipe_run(cmd, out, sizeof out) == 0 && strstr(out, "step 6/6 | loss") && strstr(out, "val") && strstr(out, "tok/s | ETA"),
           "train: %s", out);
    const char *files[] = {"config.json", "model.safetensors", "checkpoint.safetensors", "losses.csv", "loss.png", "chars.txt"};
    for (int i = 0; i < 6; i++) {
        char p[256];
        snprintf(p, sizeof p, "%s/%s", dir, files[i]);
        CHECKF(exists(p), "train did not write %s", files[i]);
    }
    char first[256];
    snprintf(cmd, sizeof cmd, "%s generate --model %s --prompt 'ab' --max-tokens 10 --temperature 0", bin(), dir);
    CHECK(pipe_run(cmd, first, sizeof first) == 0 && !strncmp(first, "ab", 2) && strlen(first) >= 12);
    CHECK(pipe_run(cmd, out, sizeof out) == 0 && !strcmp(out, first)); /* greedy is deterministic */
    snprintf(cmd, sizeof cmd, "%s generate --model %s --prompt 'ab' --max-tokens 10 --beam 3 --length-penalty 0.5 &&"
             " %s generate --model %s --prompt 'ab' --max-tokens 8 --temperature 0.9 --top-k 5 --top-p 0.9"
             " --repetition-penalty 1.3 --seed 4", bin(), dir, bin(), dir);
    CHECK(pipe_run(cmd, out, sizeof out) == 0);
    snprintf(cmd, sizeof cmd, "%s generate --model %s --prompt 'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa' 2>&1", bin(), dir);
    CHECK(pipe_run(cmd, out, sizeof out) == 1 && strstr(out, "more than the context of 16"));
    snprintf(cmd, sizeof cmd, "%s eval --model %s --data tests/data/seed_bpe.txt", bin(), dir);
    CHECK(pipe_run(cmd, out, sizeof out) == 0 && strstr(out, "perplexity"));
    snprintf(cmd, sizeof cmd, "%s train --data /dev/null --out %s.x %s 2>&1", bin(), dir, tiny);
    CHECK(pipe_run(cmd, out, sizeof out) == 1 && strstr(out, "no words"));
    snprintf(cmd, sizeof cmd, "%s train --data tests/data/seed_bpe.txt --out %s --steps x 2>&1", bin(), dir);
    CHECK(pipe_run(cmd, out, sizeof out) == 2 && strstr(out, "--steps expects"));
    /* Ctrl-C: the step finishes, a checkpoint is written, exit status 130 */
    snprintf(cmd, sizeof cmd, "rm -r %s; %s train --data tests/data/unicode_stress.txt --tokenizer char --out %s "
             "--steps 1000000 --layers 1 --heads 2 --width 16 --context 16 --batch 4 --log-every 1000000 > %s.log 2>&1 &"
             " pid=$!; sleep 2; kill -INT $pid; wait $pid; echo rc=$?; cat %s.log; rm -f %s.log",
             dir, bin(), dir, dir, dir, dir);
    CHECKF(pipe_run(cmd, out, sizeof out) == 0 && strstr(out, "rc=130") && strstr(out, "interrupted"), "SIGINT: %s", out);
    char ck[256];
    snprintf(ck, sizeof ck, "%s/checkpoint.safetensors", dir);
    CHECK(exists(ck));
    snprintf(cmd, sizeof cmd, "rm -rf %s %s.x", dir, dir);
    CHECK(system(cmd) == 0);
}
