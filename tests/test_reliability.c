/* Hostile input (issue 18): any number of --data files, thread counts bounded and
 * validated (flag, TFORMER_THREADS, tf_set_threads), `compare` reporting NaN, missing,
 * extra and reshaped tensors and empty files, `eval` and `generate` refusing
 * non-finite weights, `generate` refusing a tokenizer that lacks some of the model's
 * ids, outputs that are links, devices, FIFOs or folders, the umask, one writer
 * per run folder, stale temporaries, SIGTERM / SIGHUP, standard output write
 * errors. Every case checks the exit status and the message. */
#define _DEFAULT_SOURCE /* mknod, makedev, mkfifo, symlink, flock */
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "test.h"
#include "util/util.h"

static int run_env(const char *env, const char *args, char *out, size_t n) { return test_run_cli(env, args, out, n); }
static int run(const char *args, char *out, size_t n) { return test_run_cli("", args, out, n); }
static void rm_dir(const char *dir) { test_rm_rf(dir); }

/* A corpus of 5 characters ('\n', ' ', a, b, c): a char model of vocabulary 5. */
static int write_corpus(const char *path, int lines) {
    FILE *f = fopen(path, "w");
    if (!f) return -1;
    for (int i = 0; i < lines; i++) fputs("abcab cabca\n", f);
    return fclose(f);
}

#define TINY "--tokenizer char --steps 1 --layers 1 --heads 2 --width 16 --context 8 --batch 2 --threads 1"

/* A trained tiny char GPT in dir/model (dir from mkdtemp). */
static int tiny_model(const char *dir, char *out, size_t n) {
    char path[256], args[1024];
    snprintf(path, sizeof path, "%s/corpus.txt", dir);
    if (write_corpus(path, 30)) return -1;
    snprintf(args, sizeof args, "train --data %s --out %s/model " TINY, path, dir);
    return run(args, out, n);
}

/* ---------------------------------------------------------------- item 3: --data lists */

TEST(reliability_300_data_files) {
    static char out[16384];
    char dir[] = "/tmp/tformer_rel_XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    CHECKF(tiny_model(dir, out, sizeof out) == 0, "%s", out);
    enum { FILES = 300 };
    size_t cap = (size_t)FILES * (strlen(dir) + 32) + 1024;
    char *args = malloc(cap), *list = malloc(cap);
    CHECK(args && list);
    size_t used = 0;
    for (int i = 0; i < FILES; i++) {
        char path[256];
        snprintf(path, sizeof path, "%s/f%03d.txt", dir, i);
        CHECK(write_corpus(path, 1) == 0);
        used += (size_t)snprintf(list + used, cap - used, " %s", path);
    }
    snprintf(args, cap, "eval --model %s/model --threads 1 --data%s", dir, list);
    int rc = run(args, out, sizeof out);
    const char *over = strstr(out, " over ");
    /* every file read: 300 files of 12 characters, less the first of each window */
    CHECKF(rc == 0 && strstr(out, "perplexity") && over && atoi(over + 6) > 3500, "eval: status %d: %s", rc, out);
    snprintf(args, cap, "train --out %s/run300 " TINY " --data%s", dir, list);
    rc = run(args, out, sizeof out);
    CHECKF(rc == 0 && strstr(out, "step 1/1"), "train: status %d: %s", rc, out);
    printf("    300 --data files: eval and train --steps 1 exit 0\n");
    free(args), free(list);
    rm_dir(dir);
}

/* ---------------------------------------------------------------- item 4: thread counts */

TEST(reliability_thread_counts_bounded) {
    static char out[16384];
    char dir[] = "/tmp/tformer_rel_XXXXXX", args[1024];
    CHECK(mkdtemp(dir) != NULL);
    CHECKF(tiny_model(dir, out, sizeof out) == 0, "%s", out);
    static const char *const verbs[] = {"eval --model %s/model --data %s/corpus.txt",
                                        "generate --model %s/model --prompt ab --max-tokens 2",
                                        ("train --data %s/corpus.txt --out %s/t " TINY)};
    for (int v = 0; v < 3; v++) {
        char base[512];
        snprintf(base, sizeof base, verbs[v], dir, dir);
        /* the flag (train's TINY gives --threads 1 first: the last one counts): above the bound, negative, garbage */
        static const char *const bad[][2] = {{"100000", "--threads expects an integer in [0,256]"},
                                             {"257", "--threads expects an integer in [0,256]"},
                                             {"-1", "--threads expects a non-negative integer, got '-1'"},
                                             {"abc", "--threads expects a non-negative integer, got 'abc'"}};
        for (int i = 0; i < 4; i++) {
            snprintf(args, sizeof args, "%s --threads %s", base, bad[i][0]);
            int rc = run(args, out, sizeof out);
            CHECKF(rc == 2 && strstr(out, bad[i][1]), "%s: status %d: %s", args, rc, out);
        }
        /* the environment variable, named as such */
        static const char *const env[] = {"TFORMER_THREADS=100000", "TFORMER_THREADS=abc", "TFORMER_THREADS=-3",
                                          "TFORMER_THREADS=4x"};
        for (int i = 0; i < 4; i++) {
            if (v == 2) break; /* train's TINY gives --threads, which wins over the variable */
            int rc = run_env(env[i], base, out, sizeof out);
            CHECKF(rc == 2 && strstr(out, "TFORMER_THREADS expects an integer in [0,256]") && strstr(out, env[i] + 16),
                   "%s %s: status %d: %s", env[i], base, rc, out);
        }
        if (v == 2) continue;
        int rc = run_env("TFORMER_THREADS=2", base, out, sizeof out);
        CHECKF(rc == 0, "TFORMER_THREADS=2 %s: status %d: %s", base, rc, out);
        snprintf(args, sizeof args, "%s --threads 3", base);
        CHECKF((rc = run_env("TFORMER_THREADS=junk", args, out, sizeof out)) == 0, "--threads wins: %d: %s", rc, out);
    }
    CHECK(run("eval --help", out, sizeof out) == 0 && strstr(out, "at most 256"));
    rm_dir(dir);
}

TEST(reliability_set_threads_clamps) {
#ifdef _OPENMP
    int cores = omp_get_num_procs(), most = cores > 256 ? cores : 256;
    tf_set_threads(100000);
    int got = omp_get_max_threads();
    tf_set_threads(-7);
    int neg = omp_get_max_threads();
    tf_set_threads(3);
    int three = omp_get_max_threads();
    tf_set_threads(0);
    CHECKF(got == most, "tf_set_threads(100000) gave %d threads (want %d)", got, most);
    CHECKF(neg == cores && three == 3, "tf_set_threads(-7): %d, (3): %d", neg, three);
#endif
}

/* ---------------------------------------------------------------- item 5: compare */

/* A safetensors file of the tensors named in names ("x:2x3", "y:6"), values i * 0.5,
 * with value bad (when not 0) at element 1 of the tensor named nan_in. */
static int write_st(const char *path, const char *const *names, int n, const char *nan_in, float bad) {
    tf_arena *a = tf_arena_new(0);
    tf_st_writer *w = tf_st_writer_new();
    int rc = a && w ? 0 : -1;
    for (int i = 0; !rc && i < n; i++) {
        char name[64];
        int64_t shape[2] = {0, 1};
        int nd = 1;
        const char *colon = strchr(names[i], ':');
        snprintf(name, sizeof name, "%.*s", (int)(colon - names[i]), names[i]);
        if (sscanf(colon + 1, "%lldx%lld", (long long *)&shape[0], (long long *)&shape[1]) == 2) nd = 2;
        else shape[0] = atoll(colon + 1);
        tf_tensor *t = tf_tensor_alloc(a, TF_DTYPE_F32, nd, shape, 0);
        if (!t) rc = -1;
        for (int64_t j = 0; t && j < tf_numel(t); j++) tf_f32(t)[j] = 0.5f * (float)j + 1.0f;
        if (t && nan_in && !strcmp(name, nan_in)) tf_f32(t)[1] = bad;
        rc = rc || tf_st_writer_add(w, name, t);
    }
    rc = rc || tf_st_writer_save(w, path);
    tf_st_writer_free(w);
    tf_arena_free(a);
    return rc;
}

TEST(reliability_compare_reports_every_difference) {
    static char out[16384];
    char dir[] = "/tmp/tformer_rel_XXXXXX", a[256], b[256], args[1024];
    CHECK(mkdtemp(dir) != NULL);
    snprintf(a, sizeof a, "%s/a.safetensors", dir);
    snprintf(b, sizeof b, "%s/b.safetensors", dir);
    static const char *const base[] = {"x:2x3", "y:6"};
    CHECK(write_st(a, base, 2, NULL, 0) == 0);
    /* the same tensors: exit 0 */
    CHECK(write_st(b, base, 2, NULL, 0) == 0);
    snprintf(args, sizeof args, "compare %s %s", a, b);
    int rc = run(args, out, sizeof out);
    CHECKF(rc == 0 && strstr(out, "worst relative error 0.000e+00 over 2 tensors"), "same: %d: %s", rc, out);
    static const struct {
        const char *const names[3];
        int n;
        const char *nan_in;
        float bad;
        int swap; /* the odd file is A */
        const char *expect;
    } cases[] = {
        {{"x:2x3", "y:6"}, 2, "x", NAN, 0, "1 NaN, 0 inf (first at element 1) in"},
        {{"x:2x3", "y:6"}, 2, "y", INFINITY, 0, "0 NaN, 1 inf (first at element 1) in"},
        {{"x:2x3", "y:6"}, 2, "y", -INFINITY, 1, "0 NaN, 1 inf (first at element 1) in"},
        {{"x:2x3", "y:6"}, 2, "x", NAN, 1, "1 NaN, 0 inf"},
        {{"x:2x3"}, 1, NULL, 0, 0, "missing from"},
        {{"x:2x3", "y:6", "z:4"}, 3, NULL, 0, 0, "only in"},
        {{"x:3x2", "y:6"}, 2, NULL, 0, 0, "shape (2,3) in"},
        {{"x:2x3", "y:2x3"}, 2, NULL, 0, 0, "shape (6) in"},
        {{NULL}, 0, NULL, 0, 0, "holds no tensors"},
        {{NULL}, 0, NULL, 0, 1, "holds no tensors"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        CHECK(write_st(b, cases[i].names, cases[i].n, cases[i].nan_in, cases[i].bad) == 0);
        snprintf(args, sizeof args, "compare %s %s", cases[i].swap ? b : a, cases[i].swap ? a : b);
        rc = run(args, out, sizeof out);
        CHECKF(rc == 1 && strstr(out, cases[i].expect) && strstr(out, "problem"), "case %zu: status %d, want 1 and '%s': %s",
               i, rc, cases[i].expect, out);
        if (i == 0) printf("    compare, NaN in B: %.*s\n", (int)strcspn(out, "\n"), out);
    }
    rm_dir(dir);
}

/* ---------------------------------------------------------------- item 2: non-finite weights */

/* dir/model copied to dir/bad, value bad at element 3 of tensor name. */
static int poison(const char *dir, const char *name, float bad) {
    char cmd[1024], path[256];
    snprintf(cmd, sizeof cmd, "rm -rf %s/bad && cp -r %s/model %s/bad", dir, dir, dir);
    if (system(cmd)) return -1;
    snprintf(path, sizeof path, "%s/model/model.safetensors", dir);
    tf_st_file *f = tf_st_open(path);
    tf_arena *a = tf_arena_new(0);
    tf_st_writer *w = tf_st_writer_new();
    int rc = f && a && w ? 0 : -1, hit = 0;
    for (int i = 0; !rc && i < tf_st_count(f); i++) {
        const tf_st_entry *e = tf_st_entry_at(f, i);
        tf_tensor *t = tf_st_to_tensor(f, e, a);
        if (t && !strcmp(e->name, name) && tf_numel(t) > 3) tf_f32(t)[3] = bad, hit = 1;
        rc = !t || tf_st_writer_add(w, e->name, t);
    }
    snprintf(path, sizeof path, "%s/bad/model.safetensors", dir);
    rc = rc || !hit || tf_st_writer_save(w, path);
    tf_st_writer_free(w);
    tf_arena_free(a);
    tf_st_close(f);
    return rc;
}

TEST(reliability_eval_generate_refuse_non_finite_weights) {
    static char out[16384];
    char dir[] = "/tmp/tformer_rel_XXXXXX", args[1024];
    CHECK(mkdtemp(dir) != NULL);
    CHECKF(tiny_model(dir, out, sizeof out) == 0, "%s", out);
    static const struct {
        const char *tensor;
        float bad;
        const char *what;
    } cases[] = {{"transformer.h.0.attn.c_attn.weight", NAN, "NaN"},
                 {"transformer.wte.weight", INFINITY, "inf"},
                 {"transformer.ln_f.bias", -INFINITY, "-inf"}};
    for (int i = 0; i < 3; i++) {
        CHECKF(poison(dir, cases[i].tensor, cases[i].bad) == 0, "cannot write the poisoned model: %s", tf_error());
        char expect[256];
        snprintf(expect, sizeof expect, "tensor '%s' holds %s at element 3 (1 of ", cases[i].tensor, cases[i].what);
        snprintf(args, sizeof args, "eval --model %s/bad --data %s/corpus.txt", dir, dir);
        int rc = run(args, out, sizeof out);
        CHECKF(rc == 1 && strstr(out, expect) && strstr(out, "not finite") && !strstr(out, "loss"), "eval: %d: %s", rc,
               out);
        if (i == 0) printf("    %s", out);
        snprintf(args, sizeof args, "generate --model %s/bad --prompt ab --max-tokens 4 --temperature 0", dir);
        rc = run(args, out, sizeof out);
        CHECKF(rc == 1 && strstr(out, expect), "generate: %d: %s", rc, out);
    }
    /* the library's check, directly */
    tf_params *ps = tf_params_new();
    tf_tensor *w = NULL, *b = NULL;
    CHECK(ps && !tf_params_add(ps, "w", &w, 1, (int64_t[]){4}, 0.02f) && !tf_params_add(ps, "b", &b, 1, (int64_t[]){2}, 0));
    const char *name = "x";
    CHECK(tf_params_check_finite(ps, &name) == 0 && name == NULL); /* nothing allocated yet */
    CHECK(tf_params_init(ps, 1) == 0 && tf_params_check_finite(ps, &name) == 0 && name == NULL);
    tf_f32(b)[1] = NAN;
    CHECK(tf_params_check_finite(ps, &name) == -1 && name && !strcmp(name, "b") &&
          strstr(tf_error(), "tensor 'b' holds NaN at element 1 (1 of 2 values not finite)"));
    CHECK(tf_params_check_finite(ps, NULL) == -1);
    tf_params_free(ps);
    /* a large tensor, checked in chunks on the threads: an inf in its last chunk, and -inf
     * with NaN far apart (the first named, every one counted) */
    ps = tf_params_new();
    tf_tensor *big = NULL;
    const int64_t nbig = 3 * 65536 + 17;
    CHECK(ps && !tf_params_add(ps, "big", &big, 1, (int64_t[]){nbig}, 0.02f) && tf_params_init(ps, 1) == 0);
    tf_set_threads(2);
    CHECK(tf_params_check_finite(ps, NULL) == 0);
    tf_f32(big)[nbig - 1] = INFINITY;
    CHECKF(tf_params_check_finite(ps, &name) == -1 && name && !strcmp(name, "big") &&
               strstr(tf_error(), "holds inf at element 196624 (1 of 196625 values not finite)"),
           "%s", tf_error());
    tf_f32(big)[70000] = -INFINITY, tf_f32(big)[5] = NAN;
    CHECKF(tf_params_check_finite(ps, NULL) == -1 && strstr(tf_error(), "holds NaN at element 5 (3 of 196625"), "%s",
           tf_error());
    tf_set_threads(0);
    tf_params_free(ps);
    rm_dir(dir);
}

/* ---------------------------------------------------------------- item 6: ids without text */

TEST(reliability_generate_refuses_a_smaller_tokenizer) {
    static char out[16384];
    char dir[] = "/tmp/tformer_rel_XXXXXX", args[1024], path[256];
    CHECK(mkdtemp(dir) != NULL);
    CHECKF(tiny_model(dir, out, sizeof out) == 0, "%s", out);
    snprintf(args, sizeof args, "generate --model %s/model --prompt ab --max-tokens 4 --temperature 0", dir);
    CHECKF(run(args, out, sizeof out) == 0 && !strncmp(out, "ab", 2), "%s", out);
    /* the model has 5 ids ('\n', ' ', a, b, c); the tokenizer now lacks 'c' (id 4) */
    snprintf(path, sizeof path, "%s/model/chars.txt", dir);
    CHECK(test_write_text(path, "\n ab") == 0);
    int rc = run(args, out, sizeof out);
    CHECKF(rc == 1 && strstr(out, "has 4 tokens, the model 5: the model's ids 4 to 4 have no text"), "%d: %s", rc, out);
    printf("    %s", out);
    rm_dir(dir);
}

/* ---------------------------------------------------------------- items 1, 10: what an output path names */

static mode_t mode_of(const char *path) {
    struct stat st;
    return stat(path, &st) ? 0 : st.st_mode;
}

TEST(reliability_outputs_never_replace_what_is_not_a_file) {
    char dir[] = "/tmp/tformer_rel_out_XXXXXX", p[256], q[256], cmd[600];
    CHECK(mkdtemp(dir) != NULL);
    /* a regular file gets the umask's permissions */
    snprintf(p, sizeof p, "%s/plain", dir);
    mode_t old = umask(022);
    CHECK(tf_write_file(p, "x", 1) == 0 && (mode_of(p) & 0777) == 0644);
    umask(077);
    CHECK(tf_write_file(p, "y", 1) == 0 && (mode_of(p) & 0777) == 0600);
    umask(old);
    /* a link is followed: its target replaced, the link kept */
    snprintf(q, sizeof q, "%s/link", dir);
    CHECK(symlink("plain", q) == 0 && tf_write_file(q, "new", 3) == 0);
    struct stat st;
    size_t n;
    char *text = test_slurp(p, &n);
    CHECK(lstat(q, &st) == 0 && S_ISLNK(st.st_mode) && text && n == 3 && !memcmp(text, "new", 3));
    free(text);
    /* a link to nothing, a folder: refused, named */
    snprintf(q, sizeof q, "%s/dangling", dir);
    CHECK(symlink("nowhere", q) == 0);
    CHECKF(tf_write_file(q, "z", 1) != 0 && strstr(tf_error(), "symbolic link to nothing") && strstr(tf_error(), q), "%s",
           tf_error());
    CHECKF(tf_write_file(dir, "z", 1) != 0 && strstr(tf_error(), "a directory"), "%s", tf_error());
    /* a FIFO is written through to its reader */
    snprintf(p, sizeof p, "%s/fifo", dir), snprintf(q, sizeof q, "%s/fifo.out", dir);
    CHECK(mkfifo(p, 0600) == 0);
    snprintf(cmd, sizeof cmd, "cat '%s' > '%s' &", p, q);
    CHECK(system(cmd) == 0);
    CHECK(tf_write_file(p, "through", 7) == 0 && S_ISFIFO(mode_of(p)));
    for (int i = 0; i < 50 && !(text = test_slurp(q, &n), text && n == 7); i++) free(text), usleep(100000);
    CHECKF(text && n == 7 && !memcmp(text, "through", 7), "the FIFO's reader got %zu bytes", text ? n : 0);
    free(text);
    /* a character device (a copy of /dev/null; root only) stays one, through the command line too */
    snprintf(p, sizeof p, "%s/devnull", dir);
    if (mknod(p, S_IFCHR | 0666, makedev(1, 3)) == 0) {
        char out[4096], args[600];
        CHECK(tf_write_file(p, "gone", 4) == 0 && S_ISCHR(mode_of(p)));
        snprintf(args, sizeof args, "tokenizer-train --type char --out %s %s/plain", p, dir);
        CHECKF(run(args, out, sizeof out) != 0 && strstr(out, p), "%s", out); /* --out names a folder */
        CHECK(S_ISCHR(mode_of(p)));
    } else
        printf("    (not root: the character device case is skipped)\n");
    rm_dir(dir);
}

/* ---------------------------------------------------------------- items 8, 9, 13 and the signals */

TEST(reliability_one_writer_per_run_and_stale_temporaries_removed) {
    char dir[] = "/tmp/tformer_rel_lock_XXXXXX", p[256], args[1024], out[8192];
    CHECK(mkdtemp(dir) != NULL);
    snprintf(p, sizeof p, "%s/corpus.txt", dir);
    CHECK(write_corpus(p, 30) == 0);
    snprintf(p, sizeof p, "%s/model", dir);
    CHECK(mkdir(p, 0755) == 0);
    snprintf(p, sizeof p, "%s/model/.lock", dir);
    int fd = open(p, O_RDWR | O_CREAT, 0644);
    CHECK(fd >= 0 && flock(fd, LOCK_EX | LOCK_NB) == 0); /* another training holds the folder */
    snprintf(args, sizeof args, "train --data %s/corpus.txt --out %s/model " TINY, dir, dir);
    CHECKF(run(args, out, sizeof out) != 0 && strstr(out, "another training is writing into this folder"), "%s", out);
    close(fd);
    snprintf(p, sizeof p, "%s/model/checkpoint.safetensors.tmp.AbC123", dir); /* a killed run's */
    CHECK(test_write_text(p, "stale") == 0);
    CHECKF(run(args, out, sizeof out) == 0, "%s", out);
    CHECKF(access(p, F_OK) != 0, "%s left behind", p);
    rm_dir(dir);
}

TEST(reliability_sigterm_and_sighup_stop_like_ctrl_c) {
    const int sigs[2] = {SIGTERM, SIGHUP};
    for (int k = 0; k < 2; k++) {
        char dir[] = "/tmp/tformer_rel_sig_XXXXXX", p[256], cmd[1400];
        CHECK(mkdtemp(dir) != NULL);
        snprintf(p, sizeof p, "%s/corpus.txt", dir);
        CHECK(write_corpus(p, 30) == 0);
        snprintf(cmd, sizeof cmd, "%s train --data %s --out %s/model --tokenizer char --steps 100000 --layers 1 "
                 "--heads 2 --width 16 --context 8 --batch 2 --threads 1 --log-every 1 > %s/log 2>&1 & echo $! > %s/pid",
                 test_tformer_bin(), p, dir, dir, dir);
        CHECK(system(cmd) == 0);
        snprintf(p, sizeof p, "%s/log", dir);
        size_t n = 0;
        char *log = NULL;
        for (int i = 0; i < 300 && !(log && strstr(log, "step 2/")); i++) free(log), log = test_slurp(p, &n), usleep(50000);
        free(log);
        snprintf(cmd, sizeof cmd, "kill -%d $(cat %s/pid) && while kill -0 $(cat %s/pid) 2>/dev/null; do sleep 0.1; done",
                 sigs[k], dir, dir);
        CHECK(system(cmd) == 0);
        log = test_slurp(p, &n);
        CHECKF(log && strstr(log, "interrupted: checkpoint written"), "signal %d:\n%s", sigs[k], log ? log : "");
        free(log);
        snprintf(p, sizeof p, "%s/model/checkpoint.safetensors", dir);
        CHECK(access(p, F_OK) == 0);
        rm_dir(dir);
    }
}

TEST(reliability_stdout_write_errors_are_reported) {
    char cmd[600];
    size_t n;
    CHECK(test_write_text("/tmp/tformer_rel_hyp.txt", "a b c\n") == 0);
    snprintf(cmd, sizeof cmd, "%s bleu --ref /tmp/tformer_rel_hyp.txt < /tmp/tformer_rel_hyp.txt > /dev/full "
             "2> /tmp/tformer_rel_err.txt", test_tformer_bin());
    int st = system(cmd);
    char *err = test_slurp("/tmp/tformer_rel_err.txt", &n);
    CHECKF(WIFEXITED(st) && WEXITSTATUS(st) == 1 && err && strstr(err, "tformer bleu: standard output: write error"),
           "status %d: %s", st, err ? err : "");
    free(err);
    /* --help too (it exited 0 with its text lost) */
    const char *helps[][2] = {{"--help", "tformer: standard output: write error"},
                              {"train --help", "tformer train: standard output: write error"},
                              {"help generate", "tformer generate: standard output: write error"}};
    for (int i = 0; i < 3; i++) {
        snprintf(cmd, sizeof cmd, "%s %s > /dev/full 2> /tmp/tformer_rel_err.txt", test_tformer_bin(), helps[i][0]);
        st = system(cmd);
        err = test_slurp("/tmp/tformer_rel_err.txt", &n);
        CHECKF(WIFEXITED(st) && WEXITSTATUS(st) == 1 && err && strstr(err, helps[i][1]), "%s: status %d: %s",
               helps[i][0], st, err ? err : "");
        free(err);
    }
    unlink("/tmp/tformer_rel_hyp.txt"), unlink("/tmp/tformer_rel_err.txt");
}

/* ---------------------------------------------------------------- item 7: the beam */

TEST(reliability_beam_is_bounded_and_a_full_context_is_said) {
    char dir[] = "/tmp/tformer_rel_beam_XXXXXX", args[512], out[8192];
    CHECK(mkdtemp(dir) != NULL);
    CHECKF(tiny_model(dir, out, sizeof out) == 0, "%s", out);
    snprintf(args, sizeof args, "generate --model %s/model --prompt abc --beam 100000000 --max-tokens 5", dir);
    CHECKF(run(args, out, sizeof out) == 2 && strstr(out, "--beam expects an integer in [0,256]"), "%s", out);
    /* the context is 8: a prompt of 8 leaves beam search no room (it gave 0 tokens, exit 0) */
    snprintf(args, sizeof args, "generate --model %s/model --prompt abcabcab --beam 3 --max-tokens 5", dir);
    CHECKF(run(args, out, sizeof out) == 1 && strstr(out, "fill the context of 8"), "%s", out);
    snprintf(args, sizeof args, "generate --model %s/model --prompt abcabc --beam 3 --max-tokens 5", dir);
    CHECKF(run(args, out, sizeof out) == 0 && strstr(out, "stops at the model's context of 8 tokens"), "%s", out);
    /* the library's bound */
    tf_gpt *m = NULL;
    snprintf(args, sizeof args, "%s/model", dir);
    CHECK((m = tf_gpt_load(args)) != NULL);
    tf_generate_opts o = tf_generate_opts_default();
    o.beam = TF_GENERATE_MAX_BEAM + 1, o.max_tokens = 2;
    tf_ids ids = {0};
    int32_t prompt = 1;
    CHECKF(tf_gpt_generate(m, &prompt, 1, &o, NULL, NULL, &ids, NULL) != 0 && strstr(tf_error(), "at most 256"), "%s",
           tf_error());
    tf_ids_free(&ids);
    tf_gpt_free(m);
    rm_dir(dir);
}

/* ---------------------------------------------------------------- item 15: messages */

TEST(reliability_messages_say_what_is_wrong) {
    char dir[] = "/tmp/tformer_rel_msg_XXXXXX", p[256], args[1024], out[8192];
    CHECK(mkdtemp(dir) != NULL);
    /* --resume into a folder without a checkpoint (it said "no tokenizer files") */
    snprintf(p, sizeof p, "%s/corpus.txt", dir);
    CHECK(write_corpus(p, 30) == 0);
    snprintf(args, sizeof args, "train --data %s --out %s/empty --resume " TINY, p, dir);
    CHECKF(run(args, out, sizeof out) == 1 && strstr(out, "nothing to resume: no checkpoint.safetensors"), "%s", out);
    /* a corpus without words names its file */
    snprintf(p, sizeof p, "%s/blank.txt", dir);
    CHECK(test_write_text(p, "\n\n\n") == 0);
    snprintf(args, sizeof args, "tokenizer-train --type bpe --vocab-size 300 --out %s/tok %s", dir, p);
    CHECKF(run(args, out, sizeof out) != 0 && strstr(out, p) && strstr(out, "holds no words"), "%s", out);
    /* an allocation that fails: its cause once, not the message formatted into itself */
    tf_params *ps = tf_params_new();
    tf_tensor *w;
    CHECK(ps && tf_params_add(ps, "huge", &w, 2, (int64_t[]){(int64_t)1 << 40, (int64_t)1 << 20}, 0.1f) == 0);
    CHECK(tf_params_init(ps, 1) != 0);
    const char *e = tf_error(), *again = strstr(e + 1, "params: cannot allocate");
    CHECKF(strstr(e, "params: cannot allocate huge: ") == e && !again, "%s", e);
    tf_params_free(ps);
    rm_dir(dir);
}

/* A folder of another family given to a verb: its model_type and family named, and what it can do (generate
 * and eval said "missing required key \"vocab_size\"", fill-mask and embed the same of a tformer folder). */
TEST(reliability_a_folder_of_another_family_is_named) {
    static const struct {
        const char *type, *verb, *expect;
    } cases[] = {
        {"vit", "generate --prompt a", "model_type \"vit\" (vit) cannot generate; it can: run, classify-image"},
        {"tformer-seq2seq", "eval --data /dev/null", "model_type \"tformer-seq2seq\" (seq2seq) cannot generate; it can: "},
        {"bert", "generate --prompt a", "model_type \"bert\" (bert) cannot generate; it can: "},
        {"tformer-seq2seq", "fill-mask --text [MASK]", "model_type \"tformer-seq2seq\" (seq2seq) cannot fill-mask; it can: "},
        {"vit", "complete-image --input x.png --keep-rows 1 --out g.png", "model_type \"vit\" (vit) cannot complete-image"},
        {"bert", "stream", "model_type \"bert\" (bert) cannot stream; it can: "},
        {"continual", "embed", "model_type \"continual\" (continual) cannot embed; it can: stream"},
        {"gpt2", "predict", "model_type \"gpt2\" (gpt) cannot classify-text, tag, answer; it can: run, generate"},
    };
    char dir[] = "/tmp/tformer_rel_family_XXXXXX", p[256], json[256], args[1024], out[8192];
    CHECK(mkdtemp(dir) != NULL);
    snprintf(p, sizeof p, "%s/config.json", dir);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        snprintf(json, sizeof json, "{\"model_type\": \"%s\", \"hidden_size\": 8, \"image_size\": 4}\n", cases[i].type);
        CHECK(test_write_text(p, json) == 0);
        snprintf(args, sizeof args, "%s --model %s < /dev/null", cases[i].verb, dir);
        int rc = run(args, out, sizeof out);
        CHECKF(rc == 1 && strstr(out, p) && strstr(out, cases[i].expect), "%s on %s: exit %d\n%s", cases[i].verb,
               cases[i].type, rc, out);
    }
    rm_dir(dir);
}

/* ---------------------------------------------------------------- this stop's new flags */

/* --keep-checkpoints, --average-last, --val-bleu, --stop-at, --best-after, --listops-sep, --listops-drop-end, --rope, --rope-base,
 * --learned-positions, --lsa, --conv-kernel, --ssmax, --stem-depth: garbage, negative and NaN are usage errors naming
 * the flag, and nothing is created. */
TEST(reliability_checkpoint_and_bleu_flags_refuse_garbage) {
    static const struct {
        const char *flags, *expect;
    } cases[] = {
        {"--keep-checkpoints abc", "--keep-checkpoints expects an integer in [0,1000], got 'abc'"},
        {"--keep-checkpoints 1001", "--keep-checkpoints expects an integer in [0,1000]"},
        {"--average-last -1", "--average-last expects an integer in [0,1000], got '-1'"},
        {"--arch seq2seq --val-bleu nan", "--val-bleu expects an integer in [0,inf), got 'nan'"},
        {"--arch seq2seq --val-bleu -5", "--val-bleu expects an integer"},
        {"--stop-at abc", "--stop-at expects an integer in [0,inf), got 'abc'"},
        {"--stop-at -1", "--stop-at expects an integer in [0,inf), got '-1'"},
        {"--stop-at nan", "--stop-at expects an integer in [0,inf), got 'nan'"},
        {"--stop-at 1e99", "--stop-at expects an integer in [0,inf), got '1e99'"},
        {"--best-after -5", "--best-after expects an integer in [0,inf), got '-5'"},
        {"--best-after 2.5", "--best-after expects an integer in [0,inf), got '2.5'"},
        {"--arch listops --listops-sep maybe", "--listops-sep expects true or false, got 'maybe'"},
        {"--arch listops --listops-drop-end 2", "--listops-drop-end expects true or false, got '2'"},
        {"--rope bogus", "--rope expects one of none, halves, interleaved, got 'bogus'"},
        {"--rope-base nan", "--rope-base expects a number in (1,inf), got 'nan'"},
        {"--rope-base 1", "--rope-base expects a number in (1,inf), got '1'"},
        {"--rope-base abc", "--rope-base expects a number in (1,inf), got 'abc'"},
        {"--arch bert --learned-positions maybe", "--learned-positions expects true or false, got 'maybe'"},
        {"--arch listops --listops-mask-prob nan", "--listops-mask-prob expects a number in (0,1), got 'nan'"},
        {"--arch listops --listops-mask-prob 1", "--listops-mask-prob expects a number in (0,1), got '1'"},
        {"--arch listops --listops-objective maybe", "--listops-objective expects one of classify, mlm, got 'maybe'"},
        {"--arch vit --lsa maybe", "--lsa expects true or false, got 'maybe'"},
        {"--arch vit --lsa nan", "--lsa expects true or false, got 'nan'"},
        {"--arch bert --conv-kernel -3", "--conv-kernel expects an integer in [0,inf), got '-3'"},
        {"--arch bert --conv-kernel 3.5", "--conv-kernel expects an integer in [0,inf), got '3.5'"},
        {"--ssmax abc", "--ssmax expects a number in [0,inf), got 'abc'"},
        {"--ssmax -1", "--ssmax expects a number in [0,inf), got '-1'"},
        {"--arch bert --ssmax nan", "--ssmax expects a number in [0,inf), got 'nan'"},
        {"--ssmax inf", "--ssmax expects a number in [0,inf), got 'inf'"},
        {"--arch vit --stem conv --stem-depth abc", "--stem-depth expects an integer in [1,8], got 'abc'"},
        {"--arch vit --stem conv --stem-depth 0", "--stem-depth expects an integer in [1,8], got '0'"},
        {"--arch vit --stem conv --stem-depth 9", "--stem-depth expects an integer in [1,8], got '9'"},
        {"--arch vit --stem conv --stem-depth nan", "--stem-depth expects an integer in [1,8], got 'nan'"},
        {"--arch vit --stem conv --stem-depth 2.5", "--stem-depth expects an integer in [1,8], got '2.5'"},
    };
    char dir[] = "/tmp/tformer_rel_flags_XXXXXX", args[2048], out[8192], p[64];
    CHECK(mkdtemp(dir) != NULL);
    snprintf(p, sizeof p, "%s/corpus.txt", dir);
    CHECK(write_corpus(p, 30) == 0);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        snprintf(args, sizeof args, "train --data %s --src %s --tgt %s --valid-src %s --valid-tgt %s --out %s/run %s", p,
                 p, p, p, p, dir, cases[i].flags);
        int rc = run(args, out, sizeof out);
        CHECKF(rc == 2 && strstr(out, cases[i].expect), "%s: exit %d\n%s", cases[i].flags, rc, out);
    }
    snprintf(p, sizeof p, "%s/run", dir);
    CHECKF(access(p, F_OK) != 0, "%s was created", p);
    rm_dir(dir);
}
