/* Hostile input, issue 18 items 11 and 12: a resume with changed settings is
 * refused (or allowed, and listed), a checkpoint's step must be a whole
 * number; every number a flag or a config.json takes is parsed strictly with
 * its range, a JSON object never repeats a key (config.json, vocabularies),
 * a char tokenizer folder needs its chars.txt. Each case checks the exit
 * status and the message. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "test.h"

static int run(const char *args, char *out, size_t n) { return test_run_cli("", args, out, n); }

/* A corpus of 5 characters: a char model of vocabulary 5. */
static int write_corpus(const char *path) {
    FILE *f = fopen(path, "w");
    if (!f) return -1;
    for (int i = 0; i < 30; i++) fputs("abcab cabca\n", f);
    return fclose(f);
}

#define TINY "--tokenizer char --n-layer 1 --n-head 2 --d-model 16 --context 8 --batch 2 --threads 1"

/* path's safetensors header with the metadata value `"key":"from"` replaced by `"key":"to"`. */
static int patch_metadata(const char *path, const char *key, const char *to) {
    size_t n;
    char *b = test_slurp(path, &n), needle[128];
    if (!b || n < 8) return free(b), -1;
    uint64_t h = 0;
    for (int i = 7; i >= 0; i--) h = h << 8 | (unsigned char)b[i];
    snprintf(needle, sizeof needle, "\"%s\":\"", key);
    char *at = h <= n - 8 ? strstr(b + 8, needle) : NULL;
    char *val = at ? at + strlen(needle) : NULL, *end = val ? strchr(val, '"') : NULL;
    FILE *f = end && end < b + 8 + h ? fopen(path, "wb") : NULL;
    if (!f) return free(b), -1;
    size_t pad = (8 - (h - (size_t)(end - val) + strlen(to)) % 8) % 8;
    uint64_t nh = h - (uint64_t)(end - val) + strlen(to) + pad;
    for (int i = 0; i < 8; i++) fputc((int)(nh >> (8 * i) & 0xff), f);
    fwrite(b + 8, 1, (size_t)(val - b - 8), f);
    fputs(to, f);
    fwrite(end, 1, (size_t)(b + 8 + h - end), f);
    for (size_t i = 0; i < pad; i++) fputc(' ', f);
    fwrite(b + 8 + h, 1, n - 8 - h, f);
    free(b);
    return fclose(f);
}

/* ---------------------------------------------------------------- item 11: --resume */

TEST(strict_resume_refuses_changed_settings_and_bad_steps) {
    char dir[] = "/tmp/tformer_strict_resume_XXXXXX", p[256], args[1024], out[8192], run_dir[300];
    CHECK(mkdtemp(dir) != NULL);
    snprintf(p, sizeof p, "%s/corpus.txt", dir);
    snprintf(run_dir, sizeof run_dir, "%s/run", dir);
    CHECK(write_corpus(p) == 0);
    snprintf(args, sizeof args, "train --data %s --out %s --steps 2 --checkpoint-every 1 " TINY, p, run_dir);
    CHECKF(run(args, out, sizeof out) == 0, "%s", out);
    /* settings that steer the training: refused, each named with both values */
    snprintf(args, sizeof args, "train --data %s --out %s --steps 2 --resume --lr 2e-3 --dropout 0.2 " TINY, p, run_dir);
    CHECKF(run(args, out, sizeof out) == 1 && strstr(out, "resuming with 2 changed settings (lr 0.001 -> 0.002, dropout 0 -> 0.2)") &&
               strstr(out, "--allow-changes"), "%s", out);
    /* the cosine schedule's length is one of them */
    snprintf(args, sizeof args, "train --data %s --out %s --steps 3 --resume " TINY, p, run_dir);
    CHECKF(run(args, out, sizeof out) == 1 && strstr(out, "(steps 2 -> 3)"), "%s", out);
    /* how often to evaluate or keep checkpoints: free to change */
    snprintf(args, sizeof args, "train --data %s --out %s --steps 2 --resume --eval-every 7 --keep-checkpoints 1 " TINY,
             p, run_dir);
    CHECKF(run(args, out, sizeof out) == 0 && !strstr(out, "changed"), "%s", out);
    /* allowed: the run goes on and the changes are listed */
    snprintf(args, sizeof args, "train --data %s --out %s --steps 3 --lr 2e-3 --resume --allow-changes " TINY, p, run_dir);
    CHECKF(run(args, out, sizeof out) == 0 && strstr(out, "warning: resuming with changed settings: steps 2 -> 3, lr 0.001 -> 0.002") &&
               strstr(out, "step 3/3"), "%s", out);
    snprintf(args, sizeof args, "train --data %s --out %s/other --allow-changes " TINY, p, dir);
    CHECKF(run(args, out, sizeof out) == 2 && strstr(out, "--allow-changes goes with --resume"), "%s", out);
    /* a step that is not a whole number (it resumed from 0 or 50) */
    static const char *const bad[] = {"abc", "50.7", "-1", "", " 2", "99999999999999999999"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        snprintf(args, sizeof args, "%s/checkpoint.safetensors", run_dir);
        CHECK(patch_metadata(args, "tformer_step", bad[i]) == 0);
        snprintf(args, sizeof args, "train --data %s --out %s --steps 3 --lr 2e-3 --resume " TINY, p, run_dir);
        char want[128];
        snprintf(want, sizeof want, "its step \"%s\" is not a whole number", bad[i]);
        CHECKF(run(args, out, sizeof out) == 1 && strstr(out, want), "step '%s': %s", bad[i], out);
    }
    test_rm_rf(dir);
}

/* ---------------------------------------------------------------- item 12: numbers */

TEST(strict_numbers_are_refused_naming_the_flag) {
    char dir[] = "/tmp/tformer_strict_num_XXXXXX", p[256], args[1024], out[8192];
    CHECK(mkdtemp(dir) != NULL);
    snprintf(p, sizeof p, "%s/corpus.txt", dir);
    CHECK(write_corpus(p) == 0);
    snprintf(args, sizeof args, "train --data %s --out %s/m --steps 1 " TINY, p, dir);
    CHECKF(run(args, out, sizeof out) == 0, "%s", out);
    static const test_cli_case cases[] = {
        {"generate --model %s/m --prompt a --max-tokens 1e12", "--max-tokens expects an integer in [0,inf), got '1e12'", 2},
        {"generate --model %s/m --prompt a --max-tokens abc", "--max-tokens expects an integer", 2},
        /* whole numbers in the range but past the member's type: its limit said ("expects an integer in
         * [0,inf), got '99999999999'" alone read as a contradiction) */
        {"generate --model %s/m --prompt a --max-tokens 99999999999",
         "--max-tokens expects an integer in [0,inf), got '99999999999': more than the largest it holds (2147483647)", 2},
        {"generate --model %s/m --prompt a --seed 18446744073709551616",
         "got '18446744073709551616': more than the largest it holds (18446744073709551615)", 2},
        {"eval --model %s/m --listops 99999999999",
         "--listops expects a non-negative integer, got '99999999999': more than the largest it holds (2147483647)", 2},
        {"train --data %s/corpus.txt --out %s/x --context 3000000000",
         "--context expects an integer in [1,inf), got '3000000000': more than the largest it holds (2147483647)", 2},
        {"generate --model %s/m --prompt a --temperature nan", "--temperature expects a number in [0,inf), got 'nan'", 2},
        {"generate --model %s/m --prompt a --seed 18446744073709551616", "--seed expects a non-negative integer", 2},
        {"generate --model %s/m --prompt a --top-p 0", "--top-p expects a number in (0,1]", 2},
        {"train --data %s/corpus.txt --out %s/x --pos garbage", "--pos expects one of learned, sinusoidal, got 'garbage'", 2},
        {"train --data %s/corpus.txt --out %s/x --norm garbage", "--norm expects one of layer, rms, got 'garbage'", 2},
        {"train --data %s/corpus.txt --out %s/x --weight-decay -1", "--weight-decay expects a number in [0,inf)", 2},
        {"train --data %s/corpus.txt --out %s/x --grad-clip -1", "--grad-clip expects a number in [0,inf)", 2},
        {"train --data %s/corpus.txt --out %s/x --layer-norm-eps inf", "--layer-norm-eps expects a number in (0,inf)", 2},
        {"train --data %s/corpus.txt --out %s/x --min-lr 1 --lr 0.1", "min_lr 1 is above lr 0.1", 1},
        {"train --data %s/corpus.txt --out %s/x --optimizer sgdx", "--optimizer expects one of adamw, sgd, got 'sgdx'", 2},
        {"train --data %s/corpus.txt --out %s/x --optimizer sgd --momentum nan", "--momentum expects a number in [0,1), got 'nan'", 2},
        {"train --data %s/corpus.txt --out %s/x --optimizer sgd --momentum 1", "--momentum expects a number in [0,1), got '1'", 2},
        {"train --data %s/corpus.txt --out %s/x --optimizer sgd --momentum 0 --nesterov true", "nesterov needs momentum > 0", 1},
        {"train --arch listops --out %s/x --listops-depth 0", "--listops-depth expects an integer in [1,64], got '0'", 2},
        {"train --arch listops --out %s/x --listops-args 1e3", "--listops-args expects an integer in [2,64], got '1e3'", 2},
        {"train --arch listops --out %s/x --listops-train nan", "--listops-train expects an integer in [1,inf), got 'nan'", 2},
        {"train --arch listops --out %s/x --data %s/corpus.txt", "--arch listops generates its data", 2},
        {"train --arch listops --out %s/x --listops-bucket abc", "--listops-bucket expects an integer in [0,inf), got 'abc'", 2},
        {"train --arch listops --out %s/x --listops-bucket -64", "--listops-bucket expects an integer in [0,inf), got '-64'", 2},
        {"train --data %s/corpus.txt --out %s/x --precision nan", "--precision expects one of f32, bf16, got 'nan'", 2},
        {"train --data %s/corpus.txt --out %s/x --precision bf16x", "--precision expects one of f32, bf16, got 'bf16x'", 2},
        {"train --arch swin --out %s/x --data-dir %s/missing", "missing: no train-images-idx3-ubyte.gz", 1},
        {"train --arch vit --out %s/x --data-dir %s/missing --hflip nan", "--hflip expects a number in [0,1], got 'nan'", 2},
        {"train --arch vit --out %s/x --data-dir %s/missing --hflip 1.5", "--hflip expects a number in [0,1], got '1.5'", 2},
        {"train --arch vit --out %s/x --data-dir %s/missing --stem conv2", "--stem expects one of patch, conv, got 'conv2'", 2},
        {"train --arch vit --out %s/x --data-dir %s/missing --stem conv --stem-width -3",
         "--stem-width expects an integer in [0,4096], got '-3'", 2},
        {"train --arch vit --out %s/x --data-dir %s/missing --stem conv --stem-width 1e9",
         "--stem-width expects an integer in [0,4096], got '1e9'", 2},
        {"eval --model %s/m --listops abc", "--listops expects a non-negative integer, got 'abc'", 2},
        {"eval --model %s/m --listops 1e12", "--listops expects a non-negative integer, got '1e12'", 2},
        {"eval --model %s/m --listops 3 --batch 0", "--batch expects an integer in [1,1024], got 0", 2},
        {"eval --model %s/m --listops 3", "m: a gpt model has no test set of its own", 1},
        {"eval --model tests/fixtures_serve_textcls/tiny_bert_cls --listops 3",
         "tiny_bert_cls/listops.json: No such file or directory: not a ListOps run folder", 1},
        {"eval --model %s/m --listops 3 --hflip-tta", "--hflip-tta goes with an image classifier (--data-dir), not --listops", 2},
        {"eval --model %s/m --data %s/corpus.txt --hflip-tta", "--hflip-tta goes with an image classifier (--data-dir)", 2},
        {"classify --model %s/m --hflip-tta %s/x.png", "--hflip-tta goes with a labelled set (--data-dir or --data)", 2},
        {"eval --model %s/lj --listops 3", "lj/listops.json: is a directory, not a file", 1},
        {"eval --model %s/garb --listops 3", "\"listops_depth\" expects an integer in [1,64], got \"x\"", 1},
        {"generate --model %s/m --prompt a --precision nan", "--precision nan: f32, bf16 or int8", 2},
        {"eval --model %s/m --data %s/corpus.txt --precision int8x", "--precision int8x: f32, bf16 or int8", 2},
        {"embed --model %s/m --precision fp16", "--precision fp16: f32, bf16 or int8", 2},
        {"translate --model %s/m --precision INT8", "--precision INT8: f32, bf16 or int8", 2},
        {"predict --model %s/m --precision 8", "--precision 8: f32, bf16 or int8", 2},
        {"classify --model %s/m --precision bf %s/x.png", "--precision bf: f32, bf16 or int8", 2},
        {"caption --model %s/m --precision f64 %s/x.png", "--precision f64: f32, bf16 or int8", 2},
        {"generate --model %s/mdir --prompt a --precision int8", "mdir/model.safetensors: is a directory, not a file", 1},
        {"generate --model %s/mcut --prompt a", "mcut/model.safetensors: header length", 1},
        {"tokenizer-train --out %s/t --type bpe --vocab-size 1e12 %s/corpus.txt", "--vocab-size expects an integer", 2},
        {"tokenizer-train --out %s/t --type bpe --min-frequency abc %s/corpus.txt", "--min-frequency expects an integer", 2},
    };
    /* weights the mapped loading of generate meets: a folder, a file cut short */
    snprintf(args, sizeof args, "mkdir %s/mdir %s/mcut && cp %s/m/config.json %s/m/chars.txt %s/mdir && "
             "cp %s/m/config.json %s/m/chars.txt %s/mcut && mkdir %s/mdir/model.safetensors && "
             "head -c 100 %s/m/model.safetensors > %s/mcut/model.safetensors", dir, dir, dir, dir, dir, dir, dir, dir,
             dir, dir, dir);
    CHECK(system(args) == 0);
    /* ListOps settings beside a BERT that are a folder, and that do not parse */
    snprintf(args, sizeof args, "%s/lj", dir), mkdir(args, 0755);
    snprintf(args, sizeof args, "%s/lj/listops.json", dir), mkdir(args, 0755);
    snprintf(args, sizeof args, "%s/garb", dir), mkdir(args, 0755);
    snprintf(args, sizeof args, "for d in lj garb; do cp tests/fixtures_serve_textcls/tiny_bert_cls/config.json "
             "tests/fixtures_serve_textcls/tiny_bert_cls/model.safetensors %s/$d; done", dir);
    CHECK(system(args) == 0);
    snprintf(args, sizeof args, "%s/garb/listops.json", dir);
    CHECK(test_write_text(args, "{\"listops_depth\": \"x\"}\n") == 0);
    CHECKF(test_cli_cases(cases, sizeof cases / sizeof cases[0], dir, out, sizeof out) == 0, "%s", out);
    /* seeds past 2^63 stay distinct (they collapsed to one value) */
    char *w[2] = {NULL, NULL};
    size_t n[2] = {0, 0};
    for (int k = 0; k < 2; k++) {
        snprintf(args, sizeof args, "train --data %s --out %s/s%d --steps 1 --seed %s " TINY, p, dir, k,
                 k ? "9223372036854775809" : "9223372036854775808");
        CHECKF(run(args, out, sizeof out) == 0, "%s", out);
        snprintf(args, sizeof args, "%s/s%d/model.safetensors", dir, k);
        w[k] = test_slurp(args, &n[k]);
    }
    CHECK(w[0] && w[1] && (n[0] != n[1] || memcmp(w[0], w[1], n[0])));
    free(w[0]), free(w[1]);
    test_rm_rf(dir);
}

/* ---------------------------------------------------------------- item 12: files */

TEST(strict_files_refuse_wrong_types_repeated_keys_and_missing_chars) {
    char dir[] = "/tmp/tformer_strict_files_XXXXXX", p[256], args[1024], out[8192];
    CHECK(mkdtemp(dir) != NULL);
    snprintf(p, sizeof p, "%s/corpus.txt", dir);
    CHECK(write_corpus(p) == 0);
    snprintf(args, sizeof args, "train --data %s --out %s/m --steps 1 " TINY, p, dir);
    CHECKF(run(args, out, sizeof out) == 0, "%s", out);
    size_t len;
    snprintf(args, sizeof args, "%s/m/config.json", dir);
    char *cfg = test_slurp(args, &len), *at = cfg ? strstr(cfg, "\"n_layer\":\t1") : NULL;
    CHECK(at != NULL);
    static const char *const edits[][2] = {
        {"\"n_layer\":\t\"1\"", "\"n_layer\" expects an integer, got \"1\""}, /* was read as 1 */
        {"\"n_layer\":\t1, \"n_layer\": 2", "the key \"n_layer\" appears twice"},          /* was read as 2 */
        {"\"n_layer\":\t1.5", "\"n_layer\" expects an integer"},
    };
    for (size_t i = 0; at && i < sizeof edits / sizeof edits[0]; i++) {
        FILE *f = fopen(args, "w");
        CHECK(f != NULL);
        if (!f) break;
        fprintf(f, "%.*s%s%s", (int)(at - cfg), cfg, edits[i][0], at + strlen("\"n_layer\":\t1"));
        fclose(f);
        char a[512];
        snprintf(a, sizeof a, "eval --model %s/m --data %s", dir, p);
        CHECKF(run(a, out, sizeof out) == 1 && strstr(out, edits[i][1]) && strstr(out, "config.json"), "edit %zu: %s", i, out);
    }
    if (cfg) test_write_text(args, cfg);
    free(cfg);
    /* a char model without chars.txt: it fell back to the 256 bytes */
    snprintf(args, sizeof args, "%s/m/chars.txt", dir);
    CHECK(unlink(args) == 0);
    snprintf(args, sizeof args, "generate --model %s/m --prompt a --max-tokens 2", dir);
    CHECKF(run(args, out, sizeof out) == 1 && strstr(out, "declares a char tokenizer but chars.txt is missing"), "%s", out);
    /* a vocabulary repeating a token: ids stay 0..n-1 each once, yet one token would get two ids */
    static const char *const layouts[][3] = {
        {"encoder.json", "vocab.bpe", "#version: 0.2\n"},
        {"vocab.json", "merges.txt", "#version: 0.2\n"},
    };
    for (int k = 0; k < 2; k++) {
        char sub[300];
        snprintf(sub, sizeof sub, "%s/tok%d", dir, k);
        CHECK(mkdir(sub, 0755) == 0);
        snprintf(args, sizeof args, "%s/%s", sub, layouts[k][0]);
        CHECK(test_write_text(args, "{\"a\": 0, \"b\": 1, \"a\": 2}") == 0);
        snprintf(args, sizeof args, "%s/%s", sub, layouts[k][1]);
        CHECK(test_write_text(args, layouts[k][2]) == 0);
        tf_tokenizer *t = tf_tokenizer_load(sub);
        CHECKF(!t && strstr(tf_error(), "the key \"a\" appears twice") && strstr(tf_error(), layouts[k][0]), "%s: %s",
               layouts[k][0], t ? "loaded" : tf_error());
        tf_tokenizer_free(t);
    }
    test_rm_rf(dir);
}

/* ---------------------------------------------------------------- item 13: decode */

/* A NUL byte is text like any other: decode writes every byte (it stopped at the NUL). */
TEST(strict_decode_writes_nul_bytes) {
    char args[512], out[256];
    snprintf(args, sizeof args, "decode --tokenizer char < /dev/null && printf '65 0 66' | %s decode --tokenizer char | od -An -c",
             test_tformer_bin());
    int rc = test_run_cli("", args, out, sizeof out);
    CHECKF(rc == 0 && strstr(out, "A  \\0   B"), "exit %d: %s", rc, out);
}

/* ---------------------------------------------------------------- convert: hostile input */

/* Each bad input to `tformer convert` is refused with an exit status and a message naming the
 * argument, the file or the line: garbage numbers, missing and non-regular files, cut files. */
TEST(strict_convert_refuses_hostile_input) {
    char dir[] = "/tmp/tformer_strict_convert_XXXXXX", cmd[1024], out[8192];
    CHECK(mkdtemp(dir) != NULL);
    snprintf(cmd, sizeof cmd,
             "cd %s && python3 -c \"import struct; open('t10k-images-idx3-ubyte','wb').write(struct.pack('>IIII',"
             "0x803,2,4,4) + bytes(32))\" && head -c 20 t10k-images-idx3-ubyte > cut-images-idx3-ubyte && "
             "mkdir d-images-idx3-ubyte dir.txt && printf '1 x 3\\n' > g.txt && printf 'nan\\n' > n.txt && "
             "printf '1 99999999999\\n' > big.txt && printf '1 2\\n3\\n' > ragged.txt && "
             "printf 'abc' > cut.safetensors",
             dir);
    CHECK(system(cmd) == 0);
    static const test_cli_case cases[] = {
        {"convert %s/t10k-images-idx3-ubyte %s/o.png --index abc", "--index expects a non-negative integer, got 'abc'", 2},
        {"convert %s/t10k-images-idx3-ubyte %s/o.png --index -1", "--index expects a non-negative integer, got '-1'", 2},
        {"convert %s/t10k-images-idx3-ubyte %s/o.png --index nan", "--index expects a non-negative integer, got 'nan'", 2},
        {"convert %s/t10k-images-idx3-ubyte %s/o.png --index 5", "--index 5: ", 2},
        {"convert %s/t10k-images-idx3-ubyte", "missing IN OUT", 2},
        {"convert %s/x.idx %s/o.png", "no conversion from ", 2},
        {"convert %s/missing-images-idx3-ubyte %s/o.png", "missing-images-idx3-ubyte: cannot open", 1},
        {"convert %s/d-images-idx3-ubyte %s/o.png", "d-images-idx3-ubyte: is a directory, not a file", 1},
        {"convert %s/cut-images-idx3-ubyte %s/o.png", "cut-images-idx3-ubyte: truncated", 1},
        {"convert %s/dir.txt %s/o.safetensors", "dir.txt: a directory, not a regular file", 1},
        {"convert %s/g.txt %s/o.safetensors", "g.txt line 1: 'x 3' is not an id", 1},
        {"convert %s/n.txt %s/o.safetensors", "n.txt line 1: 'nan' is not an id", 1},
        {"convert %s/big.txt %s/o.safetensors", "big.txt line 1: id '99999999999' is out of range", 1},
        {"convert %s/ragged.txt %s/o.safetensors", "ragged.txt line 2: 1 ids", 1},
        {"convert %s/cut.safetensors %s/w.npy", "cut.safetensors: ", 1},
        {"convert %s/t10k-images-idx3-ubyte %s/no/such/o.png", "o.png: cannot create", 1},
    };
    CHECKF(test_cli_cases(cases, sizeof cases / sizeof cases[0], dir, out, sizeof out) == 0, "%s", out);
    test_rm_rf(dir);
}
