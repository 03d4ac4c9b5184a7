/* The CLI as a user meets it: `tformer torch-run` on good and bad input. Every
 * failure must exit non-zero, name the problem, and leave no output file. */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "test.h"

#define FX "tests/fixtures/"

/* Run the CLI; returns its exit status and fills err with its stderr. */
static int run(const char *args, char *err, size_t n) {
    char cmd[2048], log[] = "/tmp/tformer_cli_err_XXXXXX"; /* its own file: test runs share /tmp */
    if (test_temp_file(log)) return -1;
    if (snprintf(cmd, sizeof cmd, "%s %s 2>%s >/dev/null", test_tformer_bin(), args, log) >= (int)sizeof cmd)
        return unlink(log), -1; /* a command line that does not fit: never run a cut one */
    int st = system(cmd);
    FILE *f = fopen(log, "r");
    size_t k = f ? fread(err, 1, n - 1, f) : 0;
    err[k] = 0;
    if (f) fclose(f);
    unlink(log);
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

TEST(cli_encode_decode_train) {
    char out[4096], cmd[1024];
    snprintf(cmd, sizeof cmd, "printf 'hello world' | %s encode --tokenizer ../shared/data/gpt2", test_tformer_bin());
    CHECK(test_popen(cmd, out, sizeof out) == 0 && !strcmp(out, "31373 995\n"));
    snprintf(cmd, sizeof cmd, "echo '31373 995' | %s decode --tokenizer ../shared/data/gpt2", test_tformer_bin());
    CHECK(test_popen(cmd, out, sizeof out) == 0 && !strcmp(out, "hello world"));
    snprintf(cmd, sizeof cmd, "printf 'Hello, my dog is cute' | %s encode --tokenizer ../shared/data/bert/bert-base-uncased-vocab.txt", test_tformer_bin());
    CHECK(test_popen(cmd, out, sizeof out) == 0 && !strcmp(out, "7592 1010 2026 3899 2003 10140\n"));
    snprintf(cmd, sizeof cmd, "printf 'hi' | %s encode --tokenizer char && echo '104 105' | %s decode --tokenizer char", test_tformer_bin(), test_tformer_bin());
    CHECK(test_popen(cmd, out, sizeof out) == 0 && !strcmp(out, "104 105\nhi"));
    snprintf(cmd, sizeof cmd, "echo '1 99999' | %s decode --tokenizer ../shared/data/gpt2 2>&1", test_tformer_bin());
    CHECK(test_popen(cmd, out, sizeof out) == 1 && strstr(out, "id 99999 at position 1"));
    snprintf(cmd, sizeof cmd, "echo '1 x2' | %s decode --tokenizer char 2>&1", test_tformer_bin());
    CHECK(test_popen(cmd, out, sizeof out) == 1 && strstr(out, "'x2' is not an id"));
    snprintf(cmd, sizeof cmd, "%s tokenizer-train --type bpe --vocab-size 30 --out /tmp/tformer_cli_tok_%d tests/data/seed_bpe.txt 2>/dev/null"
             " && printf 'see the sea' | %s encode --tokenizer /tmp/tformer_cli_tok_%d | %s decode --tokenizer /tmp/tformer_cli_tok_%d"
             " && rm -r /tmp/tformer_cli_tok_%d", test_tformer_bin(), (int)getpid(), test_tformer_bin(), (int)getpid(), test_tformer_bin(), (int)getpid(), (int)getpid());
    CHECK(test_popen(cmd, out, sizeof out) == 0 && !strcmp(out, "see the sea "));
    snprintf(cmd, sizeof cmd, "%s tokenizer-train --type lstm --vocab-size 30 --out /tmp/x f 2>&1", test_tformer_bin());
    CHECK(test_popen(cmd, out, sizeof out) == 2 && strstr(out, "usage"));
    snprintf(cmd, sizeof cmd, "%s tokenizer-train --type bpe --vocab-size 30 --out /tmp/tformer_cli_x /nonexistent 2>&1", test_tformer_bin());
    CHECK(test_popen(cmd, out, sizeof out) == 1 && strstr(out, "/nonexistent: cannot open"));
    /* the size written is said, and why when it is not --vocab-size (it was silently another) */
    const char *sizes[][2] = {{"wordpiece --vocab-size 20", "tokens, not --vocab-size 20: the special tokens and the alphabet"},
                              {"bpe --vocab-size 100000", "tokens, not --vocab-size 100000: no pair is left"},
                              {"bpe --vocab-size 30", ": 30 tokens\n"}};
    for (int i = 0; i < 3; i++) {
        snprintf(cmd, sizeof cmd, "%s tokenizer-train --type %s --out /tmp/tformer_cli_tok_%d tests/data/seed_bpe.txt 2>&1;"
                 " rm -r /tmp/tformer_cli_tok_%d", test_tformer_bin(), sizes[i][0], (int)getpid(), (int)getpid());
        CHECKF(test_popen(cmd, out, sizeof out) == 0 && strstr(out, sizes[i][1]), "%s: %s", sizes[i][0], out);
    }
}

TEST(cli_train_generate_eval) {
    char out[8192], cmd[2048], dir[64];
    snprintf(dir, sizeof dir, "/tmp/tformer_cli_run_%d", (int)getpid());
    const char *tiny = "--steps 6 --layers 1 --heads 2 --width 16 --context 16 --batch 4 --eval-every 3 --eval-batches 2 --log-every 1";
    snprintf(cmd, sizeof cmd, "%s train --data tests/data/unicode_stress.txt --tokenizer char --out %s %s 2>&1", test_tformer_bin(), dir, tiny);
    CHECKF(test_popen(cmd, out, sizeof out) == 0 && strstr(out, "step 6/6 | loss") && strstr(out, "val") && strstr(out, "tok/s | ETA"),
           "train: %s", out);
    const char *files[] = {"config.json", "model.safetensors", "checkpoint.safetensors", "losses.csv", "loss.png", "chars.txt"};
    for (int i = 0; i < 6; i++) {
        char p[256];
        snprintf(p, sizeof p, "%s/%s", dir, files[i]);
        CHECKF(exists(p), "train did not write %s", files[i]);
    }
    char first[256];
    snprintf(cmd, sizeof cmd, "%s generate --model %s --prompt 'ab' --max-tokens 10 --temperature 0", test_tformer_bin(), dir);
    CHECK(test_popen(cmd, first, sizeof first) == 0 && !strncmp(first, "ab", 2) && strlen(first) >= 12);
    CHECK(test_popen(cmd, out, sizeof out) == 0 && !strcmp(out, first)); /* greedy is deterministic */
    snprintf(cmd, sizeof cmd, "%s generate --model %s --prompt 'ab' --max-tokens 10 --beam 3 --length-penalty 0.5 &&"
             " %s generate --model %s --prompt 'ab' --max-tokens 8 --temperature 0.9 --top-k 5 --top-p 0.9"
             " --repetition-penalty 1.3 --seed 4", test_tformer_bin(), dir, test_tformer_bin(), dir);
    CHECK(test_popen(cmd, out, sizeof out) == 0);
    snprintf(cmd, sizeof cmd, "%s generate --model %s --prompt 'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa' 2>&1", test_tformer_bin(), dir);
    /* the verb said once: the library's "generate: " prefix is not repeated after the CLI's */
    CHECKF(test_popen(cmd, out, sizeof out) == 1 && strstr(out, "tformer generate: the prompt has 40 tokens, more than the "
           "context of 16"), "%s", out);
    /* a refused prompt writes nothing on standard output (it wrote the whole prompt, or a newline) */
    const char *refused[] = {"'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa'", "''"};
    for (int i = 0; i < 2; i++) {
        snprintf(cmd, sizeof cmd, "%s generate --model %s --prompt %s 2>/dev/null", test_tformer_bin(), dir, refused[i]);
        CHECKF(test_popen(cmd, out, sizeof out) == 1 && !*out, "prompt %s: stdout '%s'", refused[i], out);
    }
    snprintf(cmd, sizeof cmd, "%s generate --model %s --prompt 'ab' --max-tokens 0", test_tformer_bin(), dir);
    CHECKF(test_popen(cmd, out, sizeof out) == 0 && !strcmp(out, "ab\n"), "--max-tokens 0: '%s'", out);
    /* --threads is honoured and changes nothing */
    snprintf(cmd, sizeof cmd, "%s generate --model %s --prompt 'ab' --max-tokens 10 --temperature 0 --threads 1", test_tformer_bin(), dir);
    CHECK(test_popen(cmd, out, sizeof out) == 0 && !strcmp(out, first));
    /* Hugging Face's name for --max-tokens */
    snprintf(cmd, sizeof cmd, "%s generate --model %s --prompt 'ab' --max-new-tokens 10 --temperature 0", test_tformer_bin(), dir);
    CHECKF(test_popen(cmd, out, sizeof out) == 0 && !strcmp(out, first), "--max-new-tokens: '%s', not '%s'", out, first);
    snprintf(cmd, sizeof cmd, "%s eval --model %s --data tests/data/seed_bpe.txt", test_tformer_bin(), dir);
    CHECK(test_popen(cmd, out, sizeof out) == 0 && strstr(out, "perplexity"));
    /* int8 weights: generation and evaluation run, the loss within a few per cent of the float one's */
    double lf = -1, lq = -1;
    sscanf(out, "loss %lf", &lf);
    snprintf(cmd, sizeof cmd, "%s eval --model %s --data tests/data/seed_bpe.txt --precision int8", test_tformer_bin(), dir);
    CHECKF(test_popen(cmd, out, sizeof out) == 0 && sscanf(out, "loss %lf", &lq) == 1 && lf > 0 &&
           fabs(lq - lf) < 0.02 * lf, "eval --precision int8: %s (float loss %g)", out, lf);
    snprintf(cmd, sizeof cmd, "%s generate --model %s --prompt 'ab' --max-tokens 10 --temperature 0 --precision int8",
             test_tformer_bin(), dir);
    CHECK(test_popen(cmd, out, sizeof out) == 0 && !strncmp(out, "ab", 2) && strlen(out) >= 12);
    snprintf(cmd, sizeof cmd, "%s generate --model %s --prompt 'ab' --precision int4 2>&1", test_tformer_bin(), dir);
    CHECK(test_popen(cmd, out, sizeof out) == 2 && strstr(out, "--precision int4: f32, bf16 or int8"));
    /* an empty file (a device such as /dev/null is refused where a file is read: reliability_fifo_and_devices_...) */
    snprintf(cmd, sizeof cmd, ": > %s/empty.txt && %s train --data %s/empty.txt --out %s.x %s 2>&1", dir,
             test_tformer_bin(), dir, dir, tiny);
    CHECK(test_popen(cmd, out, sizeof out) == 1 && strstr(out, "no words"));
    snprintf(cmd, sizeof cmd, "%s train --data tests/data/seed_bpe.txt --out %s --steps x 2>&1", test_tformer_bin(), dir);
    CHECK(test_popen(cmd, out, sizeof out) == 2 && strstr(out, "--steps expects"));
    /* Ctrl-C: the step finishes, a checkpoint is written, exit status 130 */
    snprintf(cmd, sizeof cmd, "rm -r %s; %s train --data tests/data/unicode_stress.txt --tokenizer char --out %s "
             "--steps 1000000 --layers 1 --heads 2 --width 16 --context 16 --batch 4 --log-every 1000000 > %s.log 2>&1 &"
             " pid=$!; sleep 2; kill -INT $pid; wait $pid; echo rc=$?; cat %s.log; rm -f %s.log",
             dir, test_tformer_bin(), dir, dir, dir, dir);
    CHECKF(test_popen(cmd, out, sizeof out) == 0 && strstr(out, "rc=130") && strstr(out, "interrupted"), "SIGINT: %s", out);
    char ck[256];
    snprintf(ck, sizeof ck, "%s/checkpoint.safetensors", dir);
    CHECK(exists(ck));
    snprintf(cmd, sizeof cmd, "rm -rf %s %s.x", dir, dir);
    CHECK(system(cmd) == 0);
}

/* ---------------------------------------------------------------- the verb table and its flags */

typedef struct {
    char text[16384];
    int missing;
    const char *first_missing;
} help_text;

/* Does the line starting at p (a '\n') give a default or say "required"? */
static int line_has_default(const char *p) {
    const char *end = strchr(p + 1, '\n'), *d = strstr(p, "(default "), *r = strstr(p, "(required)");
    if (!end) end = p + strlen(p);
    return (d && d < end) || (r && r < end); /* on this line, however long (--arch's grows with the registry) */
}

/* Does the help list --flag on a line of its own, with a default or "required"? */
static int lists_flag(const char *help, const char *flag) {
    char want[96];
    snprintf(want, sizeof want, "\n  %s ", flag);
    const char *p = strstr(help, want);
    return p && line_has_default(p);
}

static int table_row_listed(void *user, const tf_field *f, void *obj) {
    (void)obj;
    help_text *h = user;
    char flag[80];
    size_t k = (size_t)snprintf(flag, sizeof flag, "--%s", f->name);
    for (size_t i = 2; i < k; i++) flag[i] = flag[i] == '_' ? '-' : flag[i];
    if (!lists_flag(h->text, flag) && !h->missing++) h->first_missing = f->name;
    return 0;
}

TEST(cli_every_verb_has_help_listing_every_flag) {
    static const struct {
        const char *verb, *flags[14];
    } verbs[] = {
        {"train", {"--data", "--out", "--tokenizer", "--config", "--resume", "--threads", "--log-every", "--norm"}},
        {"generate", {"--model", "--prompt", "--stop", "--threads", "--max-tokens", "--temperature", "--top-k", "--top-p",
                      "--repetition-penalty", "--seed", "--beam", "--length-penalty", "--precision"}},
        {"eval", {"--model", "--data", "--threads", "--precision"}},
        {"torch-run", {"--config", "--weights", "--input", "--output"}},
        {"hf-run", {"--model", "--input", "--output"}},
        {"caption", {"--model", "--beam", "--max-tokens", "--attention-png", "--threads", "--precision"}},
        {"classify", {"--model", "--split", "--batch", "--threads", "--precision"}},
        {"translate", {"--model", "--threads", "--precision"}},
        {"encode", {"--tokenizer"}},
        {"decode", {"--tokenizer"}},
        {"tokenizer-train", {"--out", "--type", "--vocab-size", "--min-frequency"}},
        {"inspect", {NULL}},
        {"compare", {NULL}},
        {"version", {NULL}},
        {"help", {NULL}},
    };
    static help_text h;
    char cmd[256], err[4096];
    for (size_t i = 0; i < sizeof verbs / sizeof verbs[0]; i++) {
        for (int form = 0; form < 2; form++) { /* --help and -h */
            snprintf(cmd, sizeof cmd, "%s %s %s 2>&1", test_tformer_bin(), verbs[i].verb, form ? "-h" : "--help");
            CHECKF(test_popen(cmd, h.text, sizeof h.text) == 0, "%s", cmd);
            CHECKF(!strncmp(h.text, "usage: tformer ", 15) && strstr(h.text, "-h, --help"), "%s: %s", cmd, h.text);
        }
        for (int k = 0; verbs[i].flags[k]; k++)
            CHECKF(lists_flag(h.text, verbs[i].flags[k]), "%s --help lacks %s with a default:\n%s", verbs[i].verb,
                   verbs[i].flags[k], h.text);
        /* every option line has a default (or says it is required) */
        for (const char *p = strstr(h.text, "\n  --"); p; p = strstr(p + 1, "\n  --"))
            CHECKF(line_has_default(p), "%s: a flag without a default: %.80s", verbs[i].verb, p + 1);
        /* an unknown flag names the verb's --help */
        snprintf(cmd, sizeof cmd, "%s --frobnicate 1", verbs[i].verb);
        char want[160];
        snprintf(want, sizeof want, "tformer %s: unknown option '--frobnicate' (see tformer %s --help)", verbs[i].verb,
                 verbs[i].verb);
        CHECKF(run(cmd, err, sizeof err) == 2 && strstr(err, want), "%s: %s", cmd, err);
    }
    /* train's flags are the trainer's, the task's and the model's tables, every row */
    snprintf(cmd, sizeof cmd, "%s train --help", test_tformer_bin());
    CHECK(test_popen(cmd, h.text, sizeof h.text) == 0);
    tf_train_config t = tf_train_config_default();
    tf_lm_config lm = tf_lm_config_default();
    tf_fields f[2] = {{&tf_train_config_table, &t}, {&tf_lm_config_table, &lm}};
    h.missing = 0;
    tf_fields_each(f, 2, table_row_listed, &h);
    CHECKF(h.missing == 0, "train --help lacks %d table rows, the first %s", h.missing, h.first_missing);
    CHECK(strstr(h.text, "--steps N ") && strstr(h.text, "(default 2000)") && strstr(h.text, "also --layers"));
    /* the check itself can fail: a flag no verb has */
    CHECK(!lists_flag(h.text, "--frobnicate") && !lists_flag(h.text, "--step"));
    snprintf(cmd, sizeof cmd, "%s help generate", test_tformer_bin());
    CHECK(test_popen(cmd, h.text, sizeof h.text) == 0 && lists_flag(h.text, "--top-p"));
}

TEST(cli_flags_are_parsed_strictly) {
    char err[4096];
    static const char *const bad[][2] = { /* arguments, what stderr must say */
        {"generate --model x --prompt a --max-tokens 5x", "--max-tokens expects an integer in [0,inf), got '5x'"},
        {"generate --model x --prompt a --top-p 1.5", "--top-p expects a number in (0,1], got '1.5'"},
        {"generate --model x --prompt a --threads -1", "--threads expects a non-negative integer, got '-1'"},
        {"generate --model x", "missing --prompt (see tformer generate --help)"},
        {"generate --model x --prompt", "option '--prompt' needs a value (see tformer generate --help)"},
        {"generate --model x --prompt a extra", "unexpected argument 'extra'"},
        {"train --data a --out b --steps", "option '--steps' needs a value"},
        {"train --data a --out b --steps 0", "--steps expects an integer in [1,inf), got '0'"},
        {"train --data a --out b --threads 2x", "--threads expects a non-negative integer, got '2x'"},
        {"train --data a --out b --norm sideways", "--norm expects one of layer, rms, got 'sideways'"},
        {"train --data a --out b --resume=yes", "option '--resume' takes no value"},
        {"train --data --out b", "option '--data' needs a value"},
        {"train --data a --data --out c", "option '--data' needs a value"},
        {"train --out b", "missing --data"},
        {"tokenizer-train --type bpe --out /tmp/x f", "--type bpe needs --vocab-size"},
        {"tokenizer-train --out /tmp/x f", "missing --type"},
        {"inspect", "missing FILE.safetensors"},
        {"compare a", "missing A.safetensors B.safetensors"},
        {"help frobnicate", "unknown command 'frobnicate'"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int rc = run(bad[i][0], err, sizeof err);
        CHECKF(rc == 2 && strstr(err, bad[i][1]) && strstr(err, "usage: tformer "), "%s: status %d, %s", bad[i][0], rc, err);
    }
    char out[1024], cmd[512];
    snprintf(cmd, sizeof cmd, "%s version && OPENBLAS_CORETYPE=Haswell %s --version", test_tformer_bin(),
             test_tformer_bin());
    CHECK(test_popen(cmd, out, sizeof out) == 0 && !strncmp(out, "tformer ", 8));
    /* what runs the arithmetic, and a BLAS core chosen in the environment named (it can halve the speed) */
    CHECKF(strstr(out, "\nkernels: ") && strstr(out, "\nmatrix products: ") && strstr(out, "\nbf16 products: "), "%s", out);
    CHECKF(!strstr(out, "OpenBLAS") || strstr(out, "Haswell kernels; OPENBLAS_CORETYPE=Haswell)"), "%s", out);
    /* a CBLAS named by TFORMER_BLAS that cannot be loaded: the portable kernel, and why */
    snprintf(cmd, sizeof cmd, "TFORMER_BLAS=/nonexistent/libcblas.so %s --version", test_tformer_bin());
    CHECK(test_popen(cmd, out, sizeof out) == 0);
    CHECKF(strstr(out, "matrix products: none (portable kernel; TFORMER_BLAS=/nonexistent/libcblas.so: "), "%s", out);
    snprintf(cmd, sizeof cmd, "TFORMER_BLAS=/tmp %s --version", test_tformer_bin()); /* a folder */
    CHECK(test_popen(cmd, out, sizeof out) == 0);
    CHECKF(strstr(out, "matrix products: none (portable kernel; TFORMER_BLAS=/tmp: "), "%s", out);
}

/* MKL by default on Intel CPUs (blas.c's mkl_open): an MKL that is not there,
 * or TFORMER_MKL=0, leaves the default BLAS, not the portable kernel; where
 * python3 has PyPI's mkl and the CPU is Intel's, naming it loads it. */
TEST(cli_mkl_on_intel_or_the_default_blas) {
    char out[1024], cmd[768], def[1024];
    snprintf(cmd, sizeof cmd, "TFORMER_MKL=0 %s --version", test_tformer_bin());
    CHECK(test_popen(cmd, def, sizeof def) == 0);
    CHECKF(!strstr(def, "Intel MKL"), "%s", def);
    snprintf(cmd, sizeof cmd, "TFORMER_MKL=/nonexistent/libmkl_rt.so.3 %s --version", test_tformer_bin());
    CHECK(test_popen(cmd, out, sizeof out) == 0);
    const char *a = strstr(out, "matrix products: "), *b = strstr(def, "matrix products: ");
    CHECKF(a && b && strcspn(a, "\n") == strcspn(b, "\n") && !strncmp(a, b, strcspn(a, "\n")), "%s // %s", out, def);
    char lib[512] = "";
    if (test_popen("python3 -c \"import os, sys; p = os.path.join(sys.prefix, 'lib', 'libmkl_rt.so.3'); "
                   "print(p if os.path.exists(p) else '')\" 2>/dev/null",
                   lib, sizeof lib) != 0 || !lib[0] || lib[0] == '\n') {
        printf("  (no PyPI mkl beside python3: MKL itself not loaded)\n");
        return;
    }
    lib[strcspn(lib, "\n")] = 0;
    __builtin_cpu_init();
    /* TFORMER_BLAS (a variant's =0) chooses for itself: MKL is tried only when it is unset */
    snprintf(cmd, sizeof cmd, "env -u TFORMER_BLAS TFORMER_MKL=%s %s --version", lib, test_tformer_bin());
    CHECK(test_popen(cmd, out, sizeof out) == 0);
    CHECKF(__builtin_cpu_is("intel") ? strstr(out, "matrix products: Intel MKL (") != NULL : strstr(out, "Intel MKL") == NULL,
           "%s", out);
}

TEST(cli_misspelt_flag_gets_did_you_mean) {
    char err[4096];
    static const char *const cases[][2] = { /* arguments, what stderr must say */
        {"generate --promt x --model m", "unknown option '--promt' (did you mean --prompt? see tformer generate --help)"},
        {"generate --model m --prompt a --max-token 5", "(did you mean --max-tokens? see"},     /* a table's row */
        {"generate --model m --prompt a --max-new-token 5", "(did you mean --max-new-tokens? see"}, /* its alias */
        {"train --data a --out b --stpes 3", "(did you mean --steps? see"},                    /* two letters swapped */
        {"bleu --ref a --lowercsae", "(did you mean --lowercase? see"},
        {"bleu -lcc --ref a", "unexpected argument '-lcc' (did you mean -lc? see tformer bleu --help)"},
        /* nothing close: no guess */
        {"generate --model m --prompt a --frobnicate 1", "unknown option '--frobnicate' (see tformer generate --help)"},
        {"train --data a --out b --x 1", "unknown option '--x' (see tformer train --help)"},
        {"genrate --prompt x", "tformer: unknown command 'genrate' (did you mean generate?)"}, /* a verb too */
        {"frobnicate", "tformer: unknown command 'frobnicate'\n"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int rc = run(cases[i][0], err, sizeof err);
        CHECKF(rc == 2 && strstr(err, cases[i][1]), "%s: status %d, %s", cases[i][0], rc, err);
    }
}

/* The spellings users bring from other tools: sacreBLEU's short flags, Hugging Face's --max-new-tokens. */
TEST(cli_accepts_the_names_users_bring) {
    char out[16384], cmd[1024], ref[] = "/tmp/tformer_cli_ref_XXXXXX";
    CHECK(test_temp_file(ref) == 0);
    FILE *f = fopen(ref, "w");
    CHECK(f && fputs("The Cat sat on the mat.\nA dog ran in the park today.\n", f) >= 0 && !fclose(f));
    const char *hyp = "printf 'the cat sat on the mat.\\na dog ran in the park today.\\n'";
    static const char *const flags[][2] = {{"--lowercase", "BLEU = 100.00"}, {"-lc", "BLEU = 100.00"},
                                           {"-lc -tok none -s floor -sv 0.2 -m bleu chrf", "BLEU = 100.00"},
                                           {"-m chrf -lc", "chrF2 = 100.00"}, {"", "BLEU = 7"}};
    for (int i = 0; i < 5; i++) {
        snprintf(cmd, sizeof cmd, "%s | %s bleu --ref %s %s 2>&1", hyp, test_tformer_bin(), ref, flags[i][0]);
        CHECKF(test_popen(cmd, out, sizeof out) == 0 && strstr(out, flags[i][1]), "bleu %s: %s", flags[i][0], out);
    }
    unlink(ref);
    snprintf(cmd, sizeof cmd, "%s bleu --help", test_tformer_bin());
    CHECKF(test_popen(cmd, out, sizeof out) == 0 && strstr(out, "also -lc") && strstr(out, "also -tok"), "%s", out);
    snprintf(cmd, sizeof cmd, "%s generate --help", test_tformer_bin());
    CHECKF(test_popen(cmd, out, sizeof out) == 0 && strstr(out, "also --max-new-tokens"), "%s", out);
    CHECK(run("generate --model m --prompt a --max-new-tokens 5x", out, sizeof out) == 2 &&
          strstr(out, "--max-new-tokens expects an integer in [0,inf), got '5x'"));
}

TEST(cli_train_config_file_and_flag_overrides) {
    char out[8192], cmd[2048], dir[64], cfg[80], p[128];
    snprintf(dir, sizeof dir, "/tmp/tformer_cli_cfgrun_%d", (int)getpid());
    snprintf(cfg, sizeof cfg, "%s.json", dir);
    FILE *f = fopen(cfg, "w");
    CHECK(f != NULL);
    fputs("{\"steps\": 3, \"n_layer\": 1, \"n_head\": 2, \"d_model\": 16, \"context\": 16, \"batch\": 4, \"eval_every\": 2,"
          " \"eval_batches\": 2, \"schedule\": \"inverse_sqrt\", \"norm_first\": true}", f);
    fclose(f);
    /* the file sets everything; --steps, --width (an alias of d_model) and --norm-first override it */
    snprintf(cmd, sizeof cmd, "%s train --data tests/data/unicode_stress.txt --out %s --config %s --steps 4 --width 8"
             " --norm-first false --pos sinusoidal --log-every 1 2>&1", test_tformer_bin(), dir, cfg);
    CHECKF(test_popen(cmd, out, sizeof out) == 0 && strstr(out, "step 4/4") && !strstr(out, "/3 "), "%s", out);
    /* --norm is one setting, the table's layer|rms (the older pre|post spelling of --norm-first shadowed it),
     * and a text GPT refuses ImageGPT's rms (it trained, then failed at save) */
    static const char *const NORM_ARGS[] = {"--norm post", "--norm rms", "--norm rms --predict-last false --tied false"};
    for (size_t i = 0; i < sizeof NORM_ARGS / sizeof *NORM_ARGS; i++) {
        char c2[1024];
        snprintf(c2, sizeof c2, "%s train --data tests/data/unicode_stress.txt --out %s/n%zu %s --steps 1 2>&1",
                 test_tformer_bin(), dir, i, NORM_ARGS[i]);
        int rc = test_popen(c2, out, sizeof out);
        CHECKF(rc == 2 && strstr(out, i ? "ImageGPT's layout" : "--norm expects one of layer, rms"), "%s: %d %s",
               NORM_ARGS[i], rc, out);
    }
    snprintf(p, sizeof p, "%s/config.json", dir);
    size_t n;
    char *hf = test_slurp(p, &n);
    CHECKF(hf && strstr(hf, "\"n_embd\":\t8") && strstr(hf, "\"n_layer\":\t1") && strstr(hf, "\"n_positions\":\t16") &&
               strstr(hf, "\"tformer_norm_first\":\tfalse") && strstr(hf, "\"tformer_position\":\t\"sinusoidal\""),
           "%s", hf);
    free(hf);
    /* the checkpoint records both configs as one object that --config reads back */
    snprintf(p, sizeof p, "%s/checkpoint.safetensors", dir);
    tf_st_file *ck = tf_st_open(p);
    const char *meta = ck ? tf_st_metadata(ck, "tformer_config") : NULL;
    CHECKF(meta && strstr(meta, "\"steps\":4") && strstr(meta, "\"schedule\":\"inverse_sqrt\"") && strstr(meta, "\"d_model\":8"),
           "%s", meta ? meta : "no config");
    f = fopen(cfg, "w");
    CHECK(f && fputs(meta, f) >= 0 && fclose(f) == 0);
    tf_st_close(ck);
    snprintf(cmd, sizeof cmd, "%s train --data tests/data/unicode_stress.txt --out %s --config %s --resume 2>&1", test_tformer_bin(), dir, cfg);
    CHECKF(test_popen(cmd, out, sizeof out) == 0, "resume from the recorded config: %s", out);
    /* a bad key in the file names it and the file */
    f = fopen(cfg, "w");
    CHECK(f && fputs("{\"steps\": 3, \"n_embed\": 16}", f) >= 0 && fclose(f) == 0);
    snprintf(cmd, sizeof cmd, "%s train --data tests/data/unicode_stress.txt --out %s --config %s 2>&1", test_tformer_bin(), dir, cfg);
    CHECK(test_popen(cmd, out, sizeof out) == 1 && strstr(out, cfg) && strstr(out, "unknown key \"n_embed\""));
    snprintf(cmd, sizeof cmd, "rm -rf %s %s", dir, cfg);
    CHECK(system(cmd) == 0);
}

TEST(header_example_compiles_and_runs) {
    /* include/tformer.h opens with a program; it must build against the library and run */
    char out[4096], cmd[1024];
    snprintf(cmd, sizeof cmd,
             "d=$(mktemp -d) && { echo '#include <stdio.h>'; echo '#include \"tformer.h\"';"
             " sed -n '/^ \\*     int main/,/^ \\*     }/p' include/tformer.h | sed -e 's/^ \\*     //' -e 's/^ \\*$//'; } > $d/ex.c &&"
             " cc -std=c11 -Wall -Wextra -Wpedantic -Werror %s -Iinclude -o $d/ex $d/ex.c %s/libtformer.a"
             " -lcjson -lpcre2-8 -lutf8proc -lpng -lm -fopenmp -ldl 2>&1 && $d/ex 2>&1; rc=$?; rm -rf $d; exit $rc",
             getenv("TFORMER_CFLAGS") ? getenv("TFORMER_CFLAGS") : "",  /* the library's sanitizer flags */
             getenv("TFORMER_LIB_DIR") ? getenv("TFORMER_LIB_DIR") : "build");
    CHECKF(test_popen(cmd, out, sizeof out) == 0 && strstr(out, "dL/dW[0] = "), "%s", out);
}

TEST(headers_stand_alone_and_link_from_cxx) {
    /* each public header alone in C11 and C++11, and every TF_API function linked from C++
     * against the shared library (a header without extern "C" fails the link) */
    char out[8192], cmd[1024];
    snprintf(cmd, sizeof cmd, "sh tests/check_headers.sh %s '%s' 2>&1",
             getenv("TFORMER_LIB_DIR") ? getenv("TFORMER_LIB_DIR") : "build",
             getenv("TFORMER_CFLAGS") ? getenv("TFORMER_CFLAGS") : "");
    CHECKF(test_popen(cmd, out, sizeof out) == 0 && strstr(out, "functions of the headers link from C++"), "%s", out);
}

TEST(cli_directory_where_a_file_is_expected) {
    char out[4096], cmd[512];
    snprintf(cmd, sizeof cmd, "%s train --data tests --out /tmp/tformer_cli_dir_%d 2>&1; rm -rf /tmp/tformer_cli_dir_%d",
             test_tformer_bin(), (int)getpid(), (int)getpid());
    CHECKF(test_popen(cmd, out, sizeof out) == 0 && strstr(out, "tests: is a directory"), "%s", out);
    snprintf(cmd, sizeof cmd, "%s torch-run --config tests --weights x --input y --output /tmp/tformer_dir.st 2>&1", test_tformer_bin());
    CHECKF(test_popen(cmd, out, sizeof out) == 1 && strstr(out, "tests: is a directory"), "%s", out);
}
