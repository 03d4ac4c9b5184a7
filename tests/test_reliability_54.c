/* Issue 54, reliability round two: PNG bombs refused from their header,
 * --resume checks its data, a broken losses.csv kept beside a fresh one,
 * invalid UTF-8 labels refused when read. The CLI runs as a child process
 * (TFORMER_BIN); its time and peak memory come from wait4. */
#define _DEFAULT_SOURCE /* wait4, mkdtemp */
#include <fcntl.h>
#include <png.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "test.h"
#include "util/util.h"

/* "tformer <args>" with stdout and stderr into out; its exit status, wall
 * seconds and peak memory (KiB). */
static int run_measured(const char *args, char *out, size_t n, double *secs, long *maxrss_kb) {
    int pipefd[2];
    if (pipe(pipefd)) return -1;
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "exec %s %s 2>&1", test_tformer_bin(), args);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    pid_t pid = fork();
    if (pid == 0) {
        dup2(pipefd[1], 1);
        close(pipefd[0]), close(pipefd[1]);
        execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
        _exit(127);
    }
    close(pipefd[1]);
    size_t k = 0;
    for (ssize_t got; (got = read(pipefd[0], out + k, n - 1 - k)) > 0 && k + (size_t)got < n - 1;) k += (size_t)got;
    out[k] = 0;
    close(pipefd[0]);
    int st;
    struct rusage ru;
    if (wait4(pid, &st, 0, &ru) < 0) return -1;
    clock_gettime(CLOCK_MONOTONIC, &t1);
    *secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    *maxrss_kb = ru.ru_maxrss;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* A valid grey 8-bit PNG of w x h, all zero, written a row at a time (the file stays small). */
static int write_zero_png(const char *path, int w, int h) {
    FILE *f = fopen(path, "wb");
    if (!f) return -1;
    png_structp p = png_create_write_struct(PNG_LIBPNG_VER_STRING, NULL, NULL, NULL);
    png_infop info = p ? png_create_info_struct(p) : NULL;
    png_bytep row = calloc((size_t)w, 1);
    int rc = -1;
    if (info && row && !setjmp(png_jmpbuf(p))) {
        png_init_io(p, f);
        png_set_IHDR(p, info, (png_uint_32)w, (png_uint_32)h, 8, PNG_COLOR_TYPE_GRAY, PNG_INTERLACE_NONE,
                     PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
        png_set_filter(p, 0, PNG_FILTER_NONE);
        png_set_compression_level(p, 9);
        png_write_info(p, info);
        for (int y = 0; y < h; y++) png_write_row(p, row);
        png_write_end(p, NULL);
        rc = 0;
    }
    png_destroy_write_struct(&p, info ? &info : NULL);
    free(row);
    return fclose(f) || rc ? -1 : 0;
}

#define VIT_28 "tests/fixtures_vit/cls_grey28_p4_labels"
#define VIVIT "tests/fixtures_vivit/m2_cls_grey12_t2p4_labels"

/* Item 6: a 20000x20000 PNG of a few hundred KB (1.96 GB and 4-5 s to decode)
 * is refused from its header, naming its size, in well under a second. */
TEST(reliability_png_bomb_refused_from_its_header) {
    char dir[] = "/tmp/tf_pngbomb_XXXXXX", png[128], clip[128], frame[160], out[8192];
    CHECK(mkdtemp(dir) != NULL);
    snprintf(png, sizeof png, "%s/bomb.png", dir);
    CHECK(write_zero_png(png, 20000, 20000) == 0);
    struct stat st;
    CHECK(stat(png, &st) == 0 && st.st_size < 1 << 20);
    double secs;
    long rss;
    char args[512];
    snprintf(args, sizeof args, "classify --model " VIT_28 " --threads 1 %s", png);
    int rc = run_measured(args, out, sizeof out, &secs, &rss);
    printf("    classify on a %lld-byte 20000x20000 PNG: exit %d in %.2f s, peak %ld KiB\n", (long long)st.st_size, rc,
           secs, rss);
    CHECKF(rc == 1 && strstr(out, "bomb.png: an image of 20000x20000; the model takes 28x28"), "exit %d: %s", rc, out);
    /* against the same verb on a 28x28 image (the sanitizers' shadow memory raises both alike) */
    char small[160], small_out[4096];
    double small_secs;
    long small_rss;
    snprintf(small, sizeof small, "%s/small.png", dir);
    CHECK(write_zero_png(small, 28, 28) == 0);
    snprintf(args, sizeof args, "classify --model " VIT_28 " --threads 1 %s", small);
    CHECKF(run_measured(args, small_out, sizeof small_out, &small_secs, &small_rss) == 0, "%s", small_out);
    CHECKF(secs < 1.0 && rss < small_rss + 64 * 1024, "%.2f s, %ld KiB (a 28x28 image: %ld KiB)", secs, rss,
           small_rss);

    /* the library alone: the pixel limit, before anything is allocated */
    tf_images im;
    CHECK(tf_images_read_png(png, 1, &im) != 0 && strstr(tf_error(), "above the limit of 33554432 pixels"));
    int w = 0, h = 0;
    CHECK(tf_images_png_size(png, &w, &h) == 0 && w == 20000 && h == 20000);

    /* a clip folder whose second frame is the bomb: refused from the frame's header */
    snprintf(clip, sizeof clip, "%s/clip", dir);
    CHECK(mkdir(clip, 0755) == 0);
    for (int t = 0; t < 2; t++) {
        snprintf(frame, sizeof frame, "%s/f%d.png", clip, t);
        if (t == 0) CHECK(write_zero_png(frame, 12, 12) == 0);
        else CHECK(rename(png, frame) == 0);
    }
    snprintf(args, sizeof args, "classify --model " VIVIT " --threads 1 %s", clip);
    rc = run_measured(args, out, sizeof out, &secs, &rss);
    printf("    classify on a clip with a 20000x20000 frame: exit %d in %.2f s, peak %ld KiB\n", rc, secs, rss);
    CHECKF(rc == 1 && strstr(out, "f1.png: a frame of 20000x20000, but") && strstr(out, "is 12x12"), "exit %d: %s", rc,
           out);
    CHECKF(secs < 1.0 && rss < small_rss + 64 * 1024, "%.2f s, %ld KiB (a 28x28 image: %ld KiB)", secs, rss, small_rss);
    /* a clip whose first frame is the bomb: the pixel limit */
    snprintf(frame, sizeof frame, "%s/f0.png", clip);
    CHECK(unlink(frame) == 0);
    rc = run_measured(args, out, sizeof out, &secs, &rss);
    CHECKF(rc == 1 && strstr(out, "f1.png: an image of 20000x20000 (400000000 pixels) is above the limit"), "exit %d: %s",
           rc, out);
    CHECKF(secs < 1.0 && rss < small_rss + 64 * 1024, "%.2f s, %ld KiB (a 28x28 image: %ld KiB)", secs, rss, small_rss);
    test_rm_rf(dir);
}

static int write_text(const char *dir, const char *name, const char *line, int times) {
    char p[512];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    FILE *f = fopen(p, "w");
    if (!f) return -1;
    for (int i = 0; i < times; i++) fprintf(f, "%s %d\n", line, i % 10);
    return fclose(f);
}

#define NET "--layers 1 --heads 2 --context 8 --batch 2 --threads 1 --width 16 --tokenizer char"

/* Item 7: the checkpoint records each data file's size and content hash; a
 * resume with other data (another file, the same file three times) is
 * refused naming the file, --allow-changes lets it through with a warning. */
TEST(reliability_resume_checks_the_data) {
    static char out[16384];
    char dir[] = "/tmp/tf_resume_data_XXXXXX", args[2048];
    CHECK(mkdtemp(dir) != NULL);
    CHECK(write_text(dir, "a.txt", "the cat sat on the mat", 40) == 0);
    CHECK(write_text(dir, "b.txt", "the mat sat on the cat", 40) == 0);
    snprintf(args, sizeof args, "cp %s/a.txt %s/copy.txt", dir, dir);
    CHECK(system(args) == 0);
    double secs;
    long rss;
    snprintf(args, sizeof args, "train --data %s/a.txt --out %s/run --steps 6 --stop-at 2 " NET, dir, dir);
    CHECKF(run_measured(args, out, sizeof out, &secs, &rss) == 0, "%s", out);
    /* another file */
    snprintf(args, sizeof args, "train --data %s/b.txt --out %s/run --steps 6 --resume " NET, dir, dir);
    int rc = run_measured(args, out, sizeof out, &secs, &rss);
    CHECKF(rc == 1 && strstr(out, "resuming with other data: data file 1, ") && strstr(out, "b.txt (") &&
               strstr(out, "is not the checkpoint's ") && strstr(out, "a.txt (") && strstr(out, "--allow-changes"),
           "another file: exit %d: %s", rc, out);
    /* the same file three times */
    snprintf(args, sizeof args, "train --data %s/a.txt %s/a.txt %s/a.txt --out %s/run --steps 6 --resume " NET, dir, dir,
             dir, dir);
    rc = run_measured(args, out, sizeof out, &secs, &rss);
    CHECKF(rc == 1 && strstr(out, "3 data files where the checkpoint was trained on 1 (added: ") && strstr(out, "a.txt)"),
           "the file three times: exit %d: %s", rc, out);
    /* the same bytes under another name: resumes */
    snprintf(args, sizeof args, "train --data %s/copy.txt --out %s/run --steps 6 --stop-at 4 --resume " NET, dir, dir);
    rc = run_measured(args, out, sizeof out, &secs, &rss);
    CHECKF(rc == 0 && !strstr(out, "warning"), "a copy: exit %d: %s", rc, out);
    /* --allow-changes: through, with a warning naming the file */
    snprintf(args, sizeof args, "train --data %s/b.txt --out %s/run --steps 6 --resume --allow-changes " NET, dir, dir);
    rc = run_measured(args, out, sizeof out, &secs, &rss);
    CHECKF(rc == 0 && strstr(out, "warning: resuming with changed settings: data file 1, ") && strstr(out, "b.txt ("),
           "--allow-changes: exit %d: %s", rc, out);
    test_rm_rf(dir);
}

/* The text of dir/name ("" when unreadable), into out. */
static void slurp_into(const char *dir, const char *name, char *out, size_t n) {
    char p[512];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    size_t len;
    char *s = test_slurp(p, &len);
    snprintf(out, n, "%s", s ? s : "");
    free(s);
}

/* Item 12: --resume after losses.csv was filled with garbage, cut short or
 * deleted: said on stderr, the broken file kept beside a fresh one. */
TEST(reliability_resume_keeps_a_broken_history) {
    static char out[16384], text[8192];
    char dir[] = "/tmp/tf_resume_hist_XXXXXX", run_dir[128], args[2048];
    CHECK(mkdtemp(dir) != NULL);
    CHECK(write_text(dir, "a.txt", "the cat sat on the mat", 40) == 0);
    snprintf(run_dir, sizeof run_dir, "%s/run", dir);
    double secs;
    long rss;
    snprintf(args, sizeof args, "train --data %s/a.txt --out %s --steps 8 --stop-at 2 " NET, dir, run_dir);
    CHECKF(run_measured(args, out, sizeof out, &secs, &rss) == 0, "%s", out);
    /* garbage */
    snprintf(args, sizeof args, "printf 'garbage\\n1,2,3\\n' > %s/losses.csv", run_dir);
    CHECK(system(args) == 0);
    snprintf(args, sizeof args, "train --data %s/a.txt --out %s --steps 8 --stop-at 4 --resume " NET, dir, run_dir);
    int rc = run_measured(args, out, sizeof out, &secs, &rss);
    CHECKF(rc == 0 && strstr(out, "warning: ") && strstr(out, "losses.csv: not a history: line 1 is not") &&
               strstr(out, "kept as ") && strstr(out, "losses.csv.broken-1"),
           "garbage: exit %d: %s", rc, out);
    slurp_into(run_dir, "losses.csv.broken-1", text, sizeof text);
    CHECKF(!strcmp(text, "garbage\n1,2,3\n"), "the garbage kept: %s", text);
    slurp_into(run_dir, "losses.csv", text, sizeof text);
    CHECKF(!strncmp(text, "step,train_loss", 15) && strstr(text, "\n3,") && strstr(text, "\n4,") && !strstr(text, "\n2,"),
           "a fresh history from step 3: %s", text);
    /* cut short: rows up to step 3, the checkpoint at 4 */
    char *row4 = strstr(text, "\n4,");
    CHECK(row4 != NULL);
    row4[1] = 0;
    char p[256];
    snprintf(p, sizeof p, "%s/losses.csv", run_dir);
    FILE *f = fopen(p, "w");
    CHECK(f && fputs(text, f) >= 0 && fclose(f) == 0);
    snprintf(args, sizeof args, "train --data %s/a.txt --out %s --steps 8 --stop-at 6 --resume " NET, dir, run_dir);
    rc = run_measured(args, out, sizeof out, &secs, &rss);
    CHECKF(rc == 0 && strstr(out, "losses.csv: cut short: its rows end at step 3, the checkpoint is at step 4") &&
               strstr(out, "losses.csv.broken-2") && strstr(out, "holds the 1 step read"),
           "cut short: exit %d: %s", rc, out);
    slurp_into(run_dir, "losses.csv", text, sizeof text);
    CHECKF(strstr(text, "\n3,") && !strstr(text, "\n4,") && strstr(text, "\n5,") && strstr(text, "\n6,"), "%s", text);
    /* a row cut in its middle */
    size_t len = strlen(text);
    text[len - 4] = 0;
    f = fopen(p, "w");
    CHECK(f && fputs(text, f) >= 0 && fclose(f) == 0);
    snprintf(args, sizeof args, "train --data %s/a.txt --out %s --steps 8 --stop-at 7 --resume " NET, dir, run_dir);
    rc = run_measured(args, out, sizeof out, &secs, &rss);
    CHECKF(rc == 0 && strstr(out, "losses.csv: line 4 is not a row of a step after 5 (the file ends inside it)") &&
               strstr(out, "losses.csv.broken-3"),
           "a row cut: exit %d: %s", rc, out);
    /* deleted */
    CHECK(unlink(p) == 0);
    snprintf(args, sizeof args, "train --data %s/a.txt --out %s --steps 8 --resume " NET, dir, run_dir);
    rc = run_measured(args, out, sizeof out, &secs, &rss);
    CHECKF(rc == 0 && strstr(out, "losses.csv: missing (") && strstr(out, "the history of steps 1 to 7 is lost"),
           "deleted: exit %d: %s", rc, out);
    slurp_into(run_dir, "losses.csv", text, sizeof text);
    CHECKF(strstr(text, "\n8,") && !strstr(text, "\n7,"), "%s", text);
    test_rm_rf(dir);
}

/* Item 9: a TSV whose label is not UTF-8 is refused when read, naming file
 * and line, before any step (it trained fully, wrote a config.json JSON
 * parsers reject, then failed on the confusion picture). */
TEST(reliability_finetune_refuses_a_label_that_is_not_utf8) {
    static char out[16384];
    char dir[] = "/tmp/tf_utf8_label_XXXXXX", args[2048], p[256];
    CHECK(mkdtemp(dir) != NULL);
    static const char *const CASES[][2] = {
        {"pos\ta good dog\nneg\ta bad cat\n\xff\xfe\tan odd mat\npos\ta nice dog\n",
         "t.tsv:3: not valid UTF-8 in the label: byte 0xFF at column 1"},
        {"pos\ta good dog\nne\xc3\tan odd mat\n", "t.tsv:2: not valid UTF-8 in the label: byte 0xC3 at column 3"},
        {"pos\ta good dog\nneg\ta \xed\xa0\x80 cat\n", "t.tsv:2: not valid UTF-8: byte 0xED at column 7"},
        {"pos\ta good dog\n\xc0\xafneg\ta cat\n", "t.tsv:2: not valid UTF-8 in the label: byte 0xC0 at column 1"},
    };
    for (size_t i = 0; i < sizeof CASES / sizeof *CASES; i++) {
        snprintf(p, sizeof p, "%s/t.tsv", dir);
        FILE *f = fopen(p, "w");
        CHECK(f && fputs(CASES[i][0], f) >= 0 && fclose(f) == 0);
        snprintf(args, sizeof args, "finetune --model tests/fixtures_roberta_st/tiny_roberta_st --train %s --valid %s "
                 "--out %s/o --steps 2 --threads 1", p, p, dir);
        double secs;
        long rss;
        int rc = run_measured(args, out, sizeof out, &secs, &rss);
        CHECKF(rc == 1 && strstr(out, CASES[i][1]) && !strstr(out, "step "), "case %zu: exit %d: %s", i, rc, out);
        snprintf(p, sizeof p, "%s/o/config.json", dir);
        CHECKF(access(p, F_OK) != 0, "case %zu: %s written", i, p);
    }
    test_rm_rf(dir);
}

/* Item 14: errors name their real cause. A full disk while writing a PNG
 * said "Input/output error" (the failed fwrite's errno was lost); JSON
 * nested a million deep said "not valid JSON"; translate onto a full disk
 * names the cause too (tests/test_streaming.c writes to a closed pipe). */
TEST(reliability_errors_name_their_cause) {
    /* a PNG larger than stdio's buffer, so the write itself fails, onto /dev/full */
    tf_images im = {1, 1, 128, 128, NULL, NULL, 0};
    CHECK((im.pixels = malloc(128 * 128 * sizeof(float))) != NULL);
    unsigned x = 1;
    for (int i = 0; i < 128 * 128; i++) x = x * 1103515245u + 12345u, im.pixels[i] = (float)(x >> 16 & 255) / 255.0f;
    CHECK(tf_images_write_png(&im, 0, "/dev/full") != 0);
    CHECKF(strstr(tf_error(), "/dev/full: write failed: No space left on device"), "%s", tf_error());
    free(im.pixels);
    static const char big[70000] = {0};
    CHECK(tf_write_file("/dev/full", big, sizeof big) != 0 && strstr(tf_error(), "No space left on device"));
    /* JSON nested a million deep, and one level past the limit */
    char dir[] = "/tmp/tf_cause_XXXXXX", p[128], args[512];
    static char out[8192];
    CHECK(mkdtemp(dir) != NULL);
    for (int k = 0; k < 2; k++) {
        snprintf(p, sizeof p, "%s/deep.json", dir);
        FILE *f = fopen(p, "w");
        int n = k ? 1001 : 1000000;
        CHECK(f != NULL);
        fputs("{\"a\": ", f);
        for (int i = 0; i < n; i++) fputc('[', f);
        for (int i = 0; i < n; i++) fputc(']', f);
        fputs("}\n", f);
        CHECK(fclose(f) == 0);
        snprintf(args, sizeof args, "train --config %s --data %s --out %s/o", p, p, dir);
        double secs;
        long rss;
        int rc = run_measured(args, out, sizeof out, &secs, &rss);
        CHECKF(rc == 1 && strstr(out, "deep.json: arrays and objects nested deeper than 1000 levels (the JSON reader's "
                                      "limit), at byte "),
               "nested %d deep: exit %d: %s", n, rc, out);
    }
    test_rm_rf(dir);
}

/* Item 14: a folder whose weights are a PyTorch pickle said
 * "model.safetensors: cannot open"; it names what is there. */
TEST(reliability_other_weight_formats_are_named) {
    static char out[8192];
    char dir[] = "/tmp/tf_shards_XXXXXX", args[1024];
    CHECK(mkdtemp(dir) != NULL);
    double secs;
    long rss;
    int rc;
    snprintf(args, sizeof args, "cp tests/fixtures_gpt2/gelu_untied/config.json %s/ && touch %s/pytorch_model.bin",
             dir, dir);
    CHECK(system(args) == 0);
    snprintf(args, sizeof args, "eval --model %s --data README.md", dir);
    rc = run_measured(args, out, sizeof out, &secs, &rss);
    CHECKF(rc == 1 && strstr(out, "the folder holds pytorch_model.bin instead, PyTorch's pickle format"),
           "eval: exit %d: %s", rc, out);
    test_rm_rf(dir);
}

/* Item 14: a sharded safetensors folder (model.safetensors.index.json and
 * its shards, as save_pretrained writes past max_shard_size) reads as one
 * file: the same tensors, byte for byte. */
TEST(reliability_sharded_safetensors_folders_load) {
    static char out[8192];
    char dir[] = "/tmp/tf_sharded_XXXXXX", args[1024], p[256];
    CHECK(mkdtemp(dir) != NULL);
    const char *src = "tests/fixtures_gpt2/gelu_untied";
    tf_st_file *f = tf_st_open("tests/fixtures_gpt2/gelu_untied/model.safetensors");
    CHECK(f != NULL);
    tf_arena *ar = tf_arena_new(0);
    tf_st_writer *w[2] = {tf_st_writer_new(), tf_st_writer_new()};
    snprintf(p, sizeof p, "%s/model.safetensors.index.json", dir);
    FILE *idx = fopen(p, "w");
    CHECK(idx && ar && w[0] && w[1]);
    fprintf(idx, "{\"metadata\": {\"total_size\": 0}, \"weight_map\": {");
    int n = tf_st_count(f);
    for (int i = 0; i < n; i++) {
        const tf_st_entry *e = tf_st_entry_at(f, i);
        tf_tensor *t = tf_st_to_tensor(f, e, ar);
        CHECK(t && tf_st_writer_add(w[i % 2], e->name, t) == 0);
        fprintf(idx, "%s\"%s\": \"model-0000%d-of-00002.safetensors\"", i ? ", " : "", e->name, i % 2 + 1);
    }
    fprintf(idx, "}}\n");
    CHECK(fclose(idx) == 0);
    for (int k = 0; k < 2; k++) {
        snprintf(p, sizeof p, "%s/model-0000%d-of-00002.safetensors", dir, k + 1);
        CHECK(tf_st_writer_save(w[k], p) == 0);
        tf_st_writer_free(w[k]);
    }
    tf_arena_free(ar);
    snprintf(p, sizeof p, "%s/model.safetensors", dir);
    tf_st_file *g = tf_st_open(p);
    CHECKF(g != NULL, "%s", tf_error());
    CHECK(tf_st_count(g) == n);
    for (int i = 0; i < n; i++) {
        const tf_st_entry *a = tf_st_entry_at(f, i), *b = tf_st_find(g, a->name);
        CHECKF(b && b->nbytes == a->nbytes && !memcmp(a->data, b->data, a->nbytes), "tensor %s", a->name);
    }
    tf_st_close(g), tf_st_close(f);
    /* the CLI: compare, and eval of the folder beside the single file's */
    snprintf(args, sizeof args, "compare %s/model.safetensors %s/model.safetensors", src, dir);
    double secs;
    long rss;
    int rc = run_measured(args, out, sizeof out, &secs, &rss);
    CHECKF(rc == 0, "compare: exit %d: %s", rc, out);
    snprintf(args, sizeof args, "inspect %s/model.safetensors", dir);
    rc = run_measured(args, out, sizeof out, &secs, &rss);
    CHECKF(rc == 0 && strstr(out, "transformer.h.0.attn.c_attn.weight"), "inspect: exit %d: %s", rc, out);
    /* a shard the index names but that is missing: named */
    snprintf(p, sizeof p, "%s/model-00002-of-00002.safetensors", dir);
    CHECK(unlink(p) == 0);
    snprintf(p, sizeof p, "%s/model.safetensors", dir);
    CHECK(tf_st_open(p) == NULL && strstr(tf_error(), "model-00002-of-00002.safetensors"));
    test_rm_rf(dir);
}

/* Item 11: a --data file too large for memory (a 2 GB sparse file under a 1.5 GB address-space limit) said
 * "out of memory" without naming it; the message names the file and its size, or the NUL byte that makes it no
 * text. (Skipped under the sanitizers, whose shadow memory needs the address space.) */
TEST(reliability_a_file_too_large_to_read_is_named) {
    const char *san = getenv("TFORMER_CFLAGS");
    if (san && strstr(san, "sanitize")) return;
    char dir[] = "/tmp/tf_bigdata_XXXXXX", cmd[1024], out[4096];
    CHECK(mkdtemp(dir) != NULL);
    /* 2 GB of NUL bytes: learning the characters refuses the first NUL from the first piece read; with a
     * tokenizer given, the text has no place to cut (no newline) and its size is named when what is held reaches
     * the limit (a quarter of ulimit -v) */
    static const char *const TOK[] = {"char", "tests/fixtures_roberta_st/tiny_roberta_st"};
    static const char *const WANT[] = {"big.txt:1: a NUL byte (U+0000) at column 1 (byte 0)",
                                       "big.txt (2147483648 bytes): 268435456 bytes without a place to cut the text (a "
                                       "line too long, or a tokenizer that encodes a text whole?) reach the limit of 366 MB"};
    for (int i = 0; i < 2; i++) {
        snprintf(cmd, sizeof cmd, "truncate -s 2G %s/big.txt && ulimit -v 1500000 && %s train --data %s/big.txt "
                 "--out %s/run%d --tokenizer %s --steps 1 2>&1", dir, test_tformer_bin(), dir, dir, i, TOK[i]);
        FILE *p = popen(cmd, "r");
        size_t k = p ? fread(out, 1, sizeof out - 1, p) : 0;
        out[k] = 0;
        int st = p ? pclose(p) : -1;
        CHECKF(WIFEXITED(st) && WEXITSTATUS(st) == 1 && strstr(out, WANT[i]), "--tokenizer %s: exit %d: %s", TOK[i],
               st, out);
    }
    test_rm_rf(dir);
}

/* Item 11: train's text data is read a piece at a time (never whole, tf_read_data_pieces) and its token ids are
 * held once: 8 MB of text (char tokenizer, 4 bytes an id) add under 6 bytes of peak memory per byte of text to
 * what a 200 KB text takes (the old code held the text, the ids and the loader's copy of them: 9 bytes). */
TEST(reliability_train_reads_its_text_in_pieces) {
    const char *san = getenv("TFORMER_CFLAGS");
    if (san && strstr(san, "sanitize")) return; /* ASan's shadow and quarantine: peaks say nothing there */
    char dir[] = "/tmp/tf_pieces_XXXXXX", path[128], args[1024], out[4096];
    CHECK(mkdtemp(dir) != NULL);
    long rss[2];
    static const long SIZE[2] = {200000, 8000000};
    for (int k = 0; k < 2; k++) {
        snprintf(path, sizeof path, "%s/t%d.txt", dir, k);
        FILE *f = fopen(path, "w");
        for (long n = 0, i = 0; f && n < SIZE[k]; i++) n += fprintf(f, "the cat %ld sat on a mat by dog %ld\n", i % 97, i % 13);
        CHECK(f && !fclose(f));
        snprintf(args, sizeof args, "train --data %s --out %s/run%d --tokenizer char --steps 1 --context 32 --n-layer 1 "
                 "--d-model 32 --n-head 2 --batch 4 --threads 1 --warmup 2", path, dir, k);
        double secs;
        int rc = run_measured(args, out, sizeof out, &secs, &rss[k]);
        CHECKF(rc == 0, "%s: exit %d: %s", args, rc, out);
    }
    double per_byte = (double)(rss[1] - rss[0]) * 1024 / (double)(SIZE[1] - SIZE[0]);
    printf("    peak memory %ld KiB on 200 KB of text, %ld KiB on 8 MB: %.2f bytes per byte of text\n", rss[0], rss[1],
           per_byte);
    CHECKF(per_byte < 6, "%.2f bytes of peak memory per byte of text", per_byte);
    test_rm_rf(dir);
}

/* Item 2, two model formats: model.safetensors beside a sharded checkpoint's index (save_pretrained leaves the
 * other form's files behind when it switches) is an error naming both and the newer; the old code read
 * model.safetensors silently (hf-run exit 0). Naming one form where a verb takes --model (or as inspect's
 * file, or to tf_model_load) reads that one, as naming a tokenizer's file does; the old code refused
 * D/model.safetensors as ambiguous and could not read D/model.safetensors.index.json at all. */
TEST(reliability_two_weight_forms_are_refused_unless_one_is_named) {
    static char out[8192];
    char dir[] = "/tmp/tf_twoforms_XXXXXX", cmd[1024], p[256];
    CHECK(mkdtemp(dir) != NULL);
    snprintf(cmd, sizeof cmd, "cp tests/fixtures_hf/v4_lm_sharded_labels/* %s/", dir);
    CHECK(system(cmd) == 0);
    /* hf-run's output from the sharded fixture alone, then a stale model.safetensors beside it: its weights
     * doubled (the same shapes, another model) */
    snprintf(cmd, sizeof cmd, "hf-run --model %s --input %s/input.safetensors --output %s/sharded.safetensors", dir,
             dir, dir);
    CHECKF(test_run_cli("", cmd, out, sizeof out) == 0, "%s", out);
    snprintf(p, sizeof p, "%s/model.safetensors", dir);
    tf_st_file *f = tf_st_open(p);
    CHECKF(f != NULL, "%s", tf_error());
    tf_arena *ar = tf_arena_new(0);
    tf_st_writer *w = tf_st_writer_new();
    for (int i = 0; i < tf_st_count(f); i++) {
        const tf_st_entry *e = tf_st_entry_at(f, i);
        tf_tensor *t = tf_st_to_tensor(f, e, ar);
        CHECK(t && t->dtype == TF_DTYPE_F32);
        for (int64_t k = 0; k < tf_numel(t); k++) tf_f32(t)[k] *= 2;
        CHECK(tf_st_writer_add(w, e->name, t) == 0);
    }
    CHECK(tf_st_writer_save(w, p) == 0);
    tf_st_writer_free(w), tf_arena_free(ar), tf_st_close(f);
    static const char *const VERB[] = {"hf-run --model %s --input %s/input.safetensors --output %s/out.safetensors",
                                       "hf-run --model %s/ --input %s/input.safetensors --output %s/out.safetensors"};
    for (int i = 0; i < 2; i++) {
        char args[1024];
        snprintf(args, sizeof args, VERB[i], dir, dir, dir);
        int rc = test_run_cli("", args, out, sizeof out);
        CHECKF(rc == 1 && strstr(out, "holds two forms of the weights") && strstr(out, "/model.safetensors (one file)") &&
                   strstr(out, "model.safetensors.index.json (a sharded") && strstr(out, "model.safetensors is the newer") &&
                   strstr(out, "--model DIR/model.safetensors.index.json"),
               "%s: exit %d: %s", args, rc, out);
    }
    snprintf(p, sizeof p, "%s/out.safetensors", dir);
    CHECKF(access(p, F_OK) != 0, "hf-run wrote an output");
    /* the index named: the sharded model's output, byte for byte; model.safetensors named: the other model's */
    static const char *const FORM[] = {"model.safetensors.index.json", "model.safetensors"};
    for (int i = 0; i < 2; i++) {
        snprintf(cmd, sizeof cmd, "hf-run --model %s/%s --input %s/input.safetensors --output %s/out%d.safetensors", dir,
                 FORM[i], dir, dir, i);
        CHECKF(test_run_cli("", cmd, out, sizeof out) == 0, "%s: %s", cmd, out);
        snprintf(cmd, sizeof cmd, "cmp -s %s/sharded.safetensors %s/out%d.safetensors", dir, dir, i);
        CHECKF((system(cmd) == 0) == (i == 0), "--model %s: the output %s the sharded model's", FORM[i],
               i ? "is" : "is not");
    }
    /* inspect names a file: that one is read */
    snprintf(cmd, sizeof cmd, "inspect %s/model.safetensors", dir);
    CHECKF(test_run_cli("", cmd, out, sizeof out) == 0 && strstr(out, "transformer.h.0.attn.c_attn.weight"), "%s", out);
    /* the library's door: tf_model_load of the folder refused, of the index read */
    tf_model *m = tf_model_load(dir, NULL);
    CHECKF(m == NULL && strstr(tf_error(), "holds two forms of the weights"), "%s", m ? "loaded" : tf_error());
    snprintf(p, sizeof p, "%s/model.safetensors.index.json", dir);
    CHECKF((m = tf_model_load(p, NULL)) != NULL, "%s", tf_error());
    CHECK(!strcmp(tf_model_dir(m), dir));
    tf_model_free(m);
    test_rm_rf(dir);
}

/* Item 11, the inputs that were held whole: parallel text, a fine-tuning TSV, the Continual task's and BERT
 * pre-training's files are now read a line at a time (a line above 64 MiB named, the file never held); a text
 * for a tokenizer that encodes it whole (SentencePiece) is still held whole, and a file above a quarter of the
 * machine's memory is refused from its size, naming it, before anything is allocated. The file is sparse, a
 * megabyte above that quarter (its size from sysconf). The old binary allocated and read it whole (under ulimit
 * -v 3000000: "out of memory after reading 2147418112 of its ... bytes"). */
TEST(reliability_files_once_held_whole_are_bounded) {
    static char out[8192];
    const char *cflags = getenv("TFORMER_CFLAGS");
    int san = cflags && strstr(cflags, "sanitize"); /* ASan's shadow and quarantine add to the peak */
    char dir[] = "/tmp/tf_wholebound_XXXXXX", p[256], args[2048];
    CHECK(mkdtemp(dir) != NULL);
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    CHECK(pages > 0 && page > 0);
    long long size = (long long)pages * page / 4 + (1 << 20);
    snprintf(p, sizeof p, "%s/big.txt", dir);
    int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    CHECK(fd >= 0 && ftruncate(fd, (off_t)size) == 0 && close(fd) == 0);
    snprintf(p, sizeof p, "%s/s.txt", dir);
    FILE *f = fopen(p, "w");
    CHECK(f && fputs("a b\n", f) >= 0 && fclose(f) == 0);
    snprintf(p, sizeof p, "%s/t.tsv", dir);
    CHECK((f = fopen(p, "w")) && fputs("a b\tx\n", f) >= 0 && fclose(f) == 0);
    static const char *const CASE[] = {
        "train --arch seq2seq --tokenizer tests/data/hf_bytebpe --src D/big.txt --tgt D/s.txt --valid-src D/s.txt "
        "--valid-tgt D/s.txt --out D/r0 --steps 1",
        "finetune --model tests/fixtures_roberta_st/tiny_roberta_st --train D/t.tsv --valid D/big.txt --out D/r1 --steps 1",
        "train --arch continual --tokenizer tests/data/hf_bytebpe --data D/big.txt D/s.txt --out D/r2 --steps 1",
        "train --arch bert --data D/big.txt --tokenizer tests/data/hf_wordpiece --out D/r3 --steps 1",
        "train --data D/big.txt --tokenizer tests/fixtures_xlmr_st/tiny_xlmr_st --out D/r4 --steps 1"};
    for (int i = 0; i < 5; i++) {
        size_t k = 0;
        for (const char *c = CASE[i]; *c && k < sizeof args - 64; c++)
            k += *c == 'D' && c[1] == '/' ? (size_t)snprintf(args + k, sizeof args - k, "%s", dir) : (args[k] = *c, 1);
        args[k] = 0;
        double secs;
        long rss;
        char want[256];
        if (i < 4) snprintf(want, sizeof want, "%s/big.txt line 1: longer than 64 MiB", dir); /* read by lines */
        else snprintf(want, sizeof want, "%s/big.txt (%lld bytes): ", dir, size);
        int rc = run_measured(args, out, sizeof out, &secs, &rss);
        CHECKF(rc == 1 && strstr(out, want) && (i < 4 || strstr(out, "MB, the limit for a file")), "%s: exit %d: %s",
               args, rc, out);
        CHECKF(rss < (san ? 1024 : 300) * 1024, "%s: peak memory %ld KiB", args, rss); /* the file: over 1 GB */
    }
    test_rm_rf(dir);
}
