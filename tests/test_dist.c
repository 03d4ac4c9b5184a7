/* Data-parallel training under mpirun (docs/distributed.md): N processes
 * with --accum A write the bytes of one process with --accum N x A (model,
 * checkpoint, losses.csv, loss.png), a checkpoint resumes on another number
 * of processes, and bad starts, a killed rank and a stop end every rank in
 * bounded time with one message and an intact checkpoint. Each mpirun runs
 * under `timeout`; the tests skip (saying so) in a build without MPI or
 * without mpirun. */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "test.h"

/* Every rank of these tiny runs uses one thread: up to 4 ranks on 2 cores. Under
 * AddressSanitizer (make test-sanitize) the ranks do not check for leaks: Open MPI
 * keeps memory until exit in components it has unloaded by then, which no
 * suppression can name; the library's own paths are leak-checked by the other tests. */
#define MPIRUN                                                                                                         \
    "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 ASAN_OPTIONS=detect_leaks=0 timeout 60 mpirun "         \
    "--oversubscribe --bind-to none"
#define TINY                                                                                                           \
    "train --data tests/data/unicode_stress.txt --tokenizer char --layers 1 --heads 2 --width 16 --context 16 "        \
    "--batch 8 --eval-every 3 --eval-batches 3 --dropout 0.1 --log-every 1 --threads 1"

static int skip(void) {
    const char *why = !tf_dist_available() ? "this build has no MPI (libopenmpi-dev absent, or make MPI=0)"
                      : system("command -v mpirun > /dev/null 2>&1") ? "no mpirun (openmpi-bin)"
                                                                     : NULL;
    if (why) printf("    skipped: %s\n", why);
    return why != NULL;
}

static int exists(const char *p) {
    struct stat st;
    return stat(p, &st) == 0;
}

/* How often needle occurs in hay. */
static int count(const char *hay, const char *needle) {
    int n = 0;
    for (const char *p = hay; (p = strstr(p, needle)); p += strlen(needle)) n++;
    return n;
}

/* The progress lines up to their learning rate ("step 3/6 | loss ... | val ..."): speed and time vary. */
static void progress(const char *out, char *lines, size_t cap) {
    size_t n = 0;
    lines[0] = 0;
    for (const char *p = out; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL) {
        const char *eol = strchr(p, '\n'), *lr = strstr(p, " | lr");
        if (strncmp(p, "step ", 5) || !lr || (eol && lr > eol) || n + 1 >= cap) continue;
        n += (size_t)snprintf(lines + n, cap - n, "%.*s\n", (int)(lr - p), p);
    }
}

static const char *const OUTPUTS[] = {"model.safetensors", "checkpoint.safetensors", "losses.csv", "loss.png",
                                      "config.json",       "best/model.safetensors"};
enum { N_OUTPUTS = sizeof OUTPUTS / sizeof *OUTPUTS };

/* Runs "BASE --steps 6 how[i]" under env[i] into dir/<i> (i < 4): each prints
 * its last step once (rank 0 alone), and said[i] once when given; every run
 * writes the bytes and prints the losses of the first. */
static void same_as_first(const char *dir, const char *base, const char *const *env, const char *const *how,
                          const char *const *said) {
    static char out[4][16384], lines[4][4096];
    char args[1024], a[128], x[128];
    for (int i = 0; i < 4; i++) {
        snprintf(args, sizeof args, "%s --steps 6 %s --out %s/%d 2>&1", base, how[i], dir, i);
        int rc = test_run_cli(env[i], args, out[i], sizeof out[i]);
        CHECKF(rc == 0, "%s %s: exit %d\n%s", env[i], how[i], rc, out[i]);
        progress(out[i], lines[i], sizeof lines[i]);
        CHECKF(count(out[i], "step 6/6 |") == 1, "rank 0 alone prints: %s", out[i]);
        CHECKF(!said[i] || count(out[i], said[i]) == 1, "%s %s: not once \"%s\": %s", env[i], how[i], said[i], out[i]);
    }
    snprintf(a, sizeof a, "%s/0", dir);
    for (int i = 1; i < 4; i++) {
        snprintf(x, sizeof x, "%s/%d", dir, i);
        for (int f = 0; f < N_OUTPUTS; f++)
            CHECKF(test_same_file(a, x, OUTPUTS[f]), "%s differs: %s vs %s %s", OUTPUTS[f], how[0], env[i], how[i]);
        CHECKF(!strcmp(lines[0], lines[i]), "progress differs:\n%s\nvs\n%s", lines[0], lines[i]);
    }
}

TEST(dist_processes_write_the_bytes_of_one_process) {
    if (skip()) return;
    char dir[64];
    snprintf(dir, sizeof dir, "/tmp/tformer_dist_%d", (int)getpid());
    CHECK(mkdir(dir, 0755) == 0);
    /* the same 6 steps: 4 micro-batches of 2 sequences a step, dropout on */
    const char *env[4] = {"", MPIRUN " -np 2", MPIRUN " -np 4", MPIRUN " -np 2"};
    const char *how[4] = {"--accum 4", "--accum 2", "--accum 1", "--accum 2 --threads 2"};
    const char *said[4] = {NULL, "2 processes x --accum 2", "4 processes x --accum 1", NULL};
    same_as_first(dir, TINY, env, how, said);
    test_rm_rf(dir);
}

TEST(dist_checkpoint_resumes_on_other_process_counts) {
    if (skip()) return;
    static char out[16384];
    char dir[64], args[1024], a[128], b[128], c[128], cmd[512];
    snprintf(dir, sizeof dir, "/tmp/tformer_dist_resume_%d", (int)getpid());
    CHECK(mkdir(dir, 0755) == 0);
    snprintf(a, sizeof a, "%s/one", dir), snprintf(b, sizeof b, "%s/from2to1", dir),
        snprintf(c, sizeof c, "%s/from2to4", dir);
    /* a constant schedule: the number of steps may grow on resume */
#define R TINY " --schedule constant --checkpoint-every 3"
    snprintf(args, sizeof args, R " --steps 6 --accum 4 --out %s 2>&1", a);
    CHECKF(test_run_cli("", args, out, sizeof out) == 0, "%s", out);
    snprintf(args, sizeof args, R " --steps 3 --accum 2 --out %s 2>&1", b);
    CHECKF(test_run_cli(MPIRUN " -np 2", args, out, sizeof out) == 0, "%s", out);
    snprintf(cmd, sizeof cmd, "cp -r %s %s", b, c);
    CHECK(system(cmd) == 0);
    snprintf(args, sizeof args, R " --steps 6 --accum 4 --resume --out %s 2>&1", b);
    CHECKF(test_run_cli("", args, out, sizeof out) == 0, "2 processes -> 1: %s", out);
    snprintf(args, sizeof args, R " --steps 6 --accum 1 --resume --out %s 2>&1", c);
    CHECKF(test_run_cli(MPIRUN " -np 4", args, out, sizeof out) == 0, "2 processes -> 4: %s", out);
    for (int f = 0; f < N_OUTPUTS; f++) {
        CHECKF(test_same_file(a, b, OUTPUTS[f]), "%s differs: resumed on 1 process", OUTPUTS[f]);
        CHECKF(test_same_file(a, c, OUTPUTS[f]), "%s differs: resumed on 4 processes", OUTPUTS[f]);
    }
    /* 2 micro-batches a step where the checkpoint has 4: a changed setting, named */
    snprintf(args, sizeof args, R " --steps 6 --accum 1 --resume --out %s 2>&1", c);
    CHECKF(test_run_cli(MPIRUN " -np 2", args, out, sizeof out) != 0 && count(out, "accum 4 -> 2") == 1 &&
               strstr(out, "processes x --accum"),
           "%s", out);
#undef R
    test_rm_rf(dir);
}

TEST(dist_bad_starts_fail_on_every_rank_with_one_message) {
    if (skip()) return;
    static char out[16384];
    char dir[64], args[2048], ck[128];
    snprintf(dir, sizeof dir, "/tmp/tformer_dist_bad_%d", (int)getpid());
    snprintf(ck, sizeof ck, "%s/checkpoint.safetensors", dir);
    const char *bin = test_tformer_bin();
    /* a batch that does not split into 4 processes x 1 micro-batch */
    snprintf(args, sizeof args, TINY " --steps 2 --batch 6 --out %s 2>&1", dir);
    CHECKF(test_run_cli(MPIRUN " -np 4", args, out, sizeof out) != 0 &&
               count(out, "--batch 6 (the global batch: sequences per step over every process) does not split into 4 "
                          "processes x --accum 1 = 4 micro-batches") == 1,
           "%s", out);
    CHECK(!exists(ck));
    /* ranks started with other settings, other data */
    snprintf(args, sizeof args,
             TINY " --steps 2 --out %s --lr 0.001 : -np 1 %s " TINY " --steps 2 --out %s --lr 0.002 2>&1", dir, bin,
             dir);
    CHECKF(test_run_cli(MPIRUN " -np 1", args, out, sizeof out) != 0 &&
               count(out, "rank 1 of 2 was not started like rank 0: lr is 0.002 there, 0.001 on rank 0") == 1,
           "%s", out);
    snprintf(args, sizeof args, TINY " --steps 2 --out %s : -np 1 %s %s --steps 2 --out %s 2>&1", dir, bin,
             "train --data tests/data/seed_bpe.txt --tokenizer char --layers 1 --heads 2 --width 16 --context 16 "
             "--batch 8 --eval-every 3 --eval-batches 3 --dropout 0.1 --log-every 1 --threads 1",
             dir);
    CHECKF(test_run_cli(MPIRUN " -np 1", args, out, sizeof out) != 0 &&
               count(out, "rank 1 of 2 was not started like rank 0: --data is tests/data/seed_bpe.txt: 140 bytes") == 1,
           "%s", out);
    CHECK(!exists(ck));
    /* a rank that fails before it joins: the job ends (timeout would exit 124) */
    snprintf(args, sizeof args, TINY " --steps 2 --out %s : -np 1 %s " TINY " --steps 2 --out %s --threads 999 2>&1",
             dir, bin, dir);
    int rc = test_run_cli(MPIRUN " -np 1", args, out, sizeof out);
    CHECKF(rc != 0 && rc != 124 && strstr(out, "--threads expects an integer"), "exit %d: %s", rc, out);
    test_rm_rf(dir);
}

/* ZeRO-1: a model whose MLP matrices (160 x 640) are two gradient-norm chunks
 * each, so ranks' parts end inside a parameter; clipping on (the norm is
 * about 18), weight decay on the matrices. */
#define ZTINY                                                                                                          \
    "train --data tests/data/unicode_stress.txt --tokenizer char --layers 1 --heads 2 --width 160 --context 16 "       \
    "--batch 8 --eval-every 3 --eval-batches 3 --dropout 0.1 --log-every 1 --threads 1 --grad-clip 0.5"

TEST(dist_zero_shards_adamw_with_the_bytes_of_one_process) {
    if (skip()) return;
    char dir[64];
    snprintf(dir, sizeof dir, "/tmp/tformer_dist_zero_%d", (int)getpid());
    CHECK(mkdir(dir, 0755) == 0);
    const char *env[4] = {"", MPIRUN " -np 2", MPIRUN " -np 4", ""};
    const char *how[4] = {"--accum 4", "--accum 2 --zero 1", "--accum 1 --zero 1", "--accum 4 --zero 1"};
    const char *said[4] = {NULL, "ZeRO-1: AdamW state", "ZeRO-1: AdamW state",
                           "--zero 1 with one process: nothing to shard"};
    same_as_first(dir, ZTINY, env, how, said);
    test_rm_rf(dir);
}

/* A ZeRO checkpoint holds the whole AdamW state: it resumes on one process
 * without --zero, and a checkpoint without ZeRO resumes sharded on 4 ranks. */
TEST(dist_zero_checkpoint_resumes_with_or_without_zero) {
    if (skip()) return;
    static char out[16384];
    char dir[64], args[1024], a[128], b[128], c[128];
    snprintf(dir, sizeof dir, "/tmp/tformer_dist_zero_resume_%d", (int)getpid());
    CHECK(mkdir(dir, 0755) == 0);
    snprintf(a, sizeof a, "%s/one", dir), snprintf(b, sizeof b, "%s/zero2to1", dir),
        snprintf(c, sizeof c, "%s/one_to_zero4", dir);
#define R ZTINY " --schedule constant --checkpoint-every 3"
    snprintf(args, sizeof args, R " --steps 6 --accum 4 --out %s 2>&1", a);
    CHECKF(test_run_cli("", args, out, sizeof out) == 0, "%s", out);
    snprintf(args, sizeof args, R " --steps 3 --accum 2 --zero 1 --out %s 2>&1", b);
    CHECKF(test_run_cli(MPIRUN " -np 2", args, out, sizeof out) == 0, "%s", out);
    snprintf(args, sizeof args, R " --steps 6 --accum 4 --resume --out %s 2>&1", b);
    CHECKF(test_run_cli("", args, out, sizeof out) == 0, "ZeRO on 2 processes -> 1: %s", out);
    snprintf(args, sizeof args, R " --steps 3 --accum 4 --out %s 2>&1", c);
    CHECKF(test_run_cli("", args, out, sizeof out) == 0, "%s", out);
    snprintf(args, sizeof args, R " --steps 6 --accum 1 --zero 1 --resume --out %s 2>&1", c);
    CHECKF(test_run_cli(MPIRUN " -np 4", args, out, sizeof out) == 0, "1 process -> ZeRO on 4: %s", out);
    for (int f = 0; f < N_OUTPUTS; f++) {
        CHECKF(test_same_file(a, b, OUTPUTS[f]), "%s differs: ZeRO on 2 processes resumed on 1", OUTPUTS[f]);
        CHECKF(test_same_file(a, c, OUTPUTS[f]), "%s differs: 1 process resumed with ZeRO on 4", OUTPUTS[f]);
    }
#undef R
    test_rm_rf(dir);
}

/* A 2-rank run disturbed after 3 seconds by a shell snippet ($m: mpirun's
 * pid, $d: the run folder); out gets the run's output and "rc=<mpirun's status>". */
static int disturbed_run(const char *dir, const char *action, char *out, size_t n) {
    char cmd[4096];
    snprintf(cmd, sizeof cmd,
             "d=%s; rm -rf $d; " MPIRUN " -np 2 %s " TINY " --steps 1000000 --schedule constant --checkpoint-every 2 "
             "--log-every 1000000 --out $d > $d.log 2>&1 & t=$!; sleep 3; m=$(pgrep -P $t); %s; wait $t; r=$?; "
             /* mpirun may return while a rank it killed still holds the run's lock: wait for it (10 s at most) */
             "for i in $(seq 100); do flock -n $d/.lock true 2>/dev/null && break; sleep 0.1; done; echo rc=$r; "
             "cat $d.log; rm -f $d.log",
             dir, test_tformer_bin(), action);
    FILE *p = popen(cmd, "r");
    if (!p) return -1;
    size_t k = fread(out, 1, n - 1, p);
    out[k] = 0;
    return pclose(p);
}

/* kill -SIGNAL the rank whose OMPI_COMM_WORLD_RANK is 1 */
#define KILL_RANK1(signal)                                                                                             \
    "for p in $(pgrep -P $m); do tr '\\0' '\\n' < /proc/$p/environ | grep -qx OMPI_COMM_WORLD_RANK=1 && "              \
    "kill -" signal " $p; done"

/* The checkpoint a disturbed run left continues on one process (2 micro-batches a step, as 2 ranks had). */
static int resumes(const char *dir, char *out, size_t n) {
    char args[1024], path[256];
    snprintf(path, sizeof path, "%s/checkpoint.safetensors", dir);
    tf_st_file *f = tf_st_open(path);
    if (!f) return snprintf(out, n, "%s", tf_error()), -1;
    const char *step = tf_st_metadata(f, "tformer_step");
    long long s = step ? atoll(step) : -1;
    tf_st_close(f);
    if (s < 2) return snprintf(out, n, "checkpoint step %lld", s), -1;
    snprintf(args, sizeof args, TINY " --schedule constant --accum 2 --resume --steps %lld --out %s 2>&1", s + 2, dir);
    return test_run_cli("", args, out, n);
}

TEST(dist_killed_rank_or_stop_ends_every_rank) {
    if (skip()) return;
    /* make test-variants names its variant; an OPENBLAS_CORETYPE from the environment is not one
     * (this workplace sets it everywhere, which skipped the test in every run) */
    if (getenv("TFORMER_TEST_VARIANT")) {
        printf("    skipped: a kernel-set variant (killing processes does not depend on the kernels; make test runs it)\n");
        return;
    }
    static char out[16384];
    char dir[64];
    snprintf(dir, sizeof dir, "/tmp/tformer_dist_stop_%d", (int)getpid());
    /* rank 1 killed mid-run: mpirun ends the job (not timeout: 124), the checkpoint is whole */
    CHECK(disturbed_run(dir, KILL_RANK1("9"), out, sizeof out) == 0);
    CHECKF(!strstr(out, "rc=0") && !strstr(out, "rc=124") && strstr(out, "exited on signal 9"), "%s", out);
    CHECKF(resumes(dir, out, sizeof out) == 0, "after a killed rank: %s", out);
    /* SIGUSR1 to mpirun (forwarded to every rank): the step finishes, rank 0 writes a checkpoint */
    CHECK(disturbed_run(dir, "kill -USR1 $m", out, sizeof out) == 0);
    CHECKF(strstr(out, "rc=130") && count(out, "interrupted: checkpoint written") == 1 &&
               count(out, "tformer: stop requested") == 1,
           "%s", out);
    CHECKF(resumes(dir, out, sizeof out) == 0, "after SIGUSR1: %s", out);
    /* Ctrl-C at mpirun: it sends SIGTERM to every rank and SIGKILL a second later */
    CHECK(disturbed_run(dir, "kill -INT $m", out, sizeof out) == 0);
    CHECKF(!strstr(out, "rc=0") && !strstr(out, "rc=124"), "%s", out);
    CHECKF(resumes(dir, out, sizeof out) == 0, "after Ctrl-C: %s", out);
    /* rank 0 fails alone mid-run (it cannot write losses.csv): every rank ends with its message, printed once */
    /* (rank 0 may rename a new losses.csv into place between the rm and the mkdir: try again) */
    CHECK(disturbed_run(dir, "i=0; until mkdir $d/losses.csv 2>/dev/null || [ $i -ge 500 ]; do rm -f $d/losses.csv; "
                             "i=$((i+1)); done", out, sizeof out) == 0);
    CHECKF(strstr(out, "rc=1\n") && count(out, "losses.csv") == 1, "%s", out);
    test_rm_rf(dir);
}

/* A build without MPI started by mpirun for several processes says so instead of training N times into one folder. */
TEST(dist_build_without_mpi_refuses_several_processes) {
    if (tf_dist_available() || system("command -v mpirun > /dev/null 2>&1")) {
        printf("    skipped: %s\n", tf_dist_available() ? "this build has MPI" : "no mpirun (openmpi-bin)");
        return;
    }
    static char out[16384];
    char dir[64], args[1024];
    snprintf(dir, sizeof dir, "/tmp/tformer_dist_nompi_%d", (int)getpid());
    snprintf(args, sizeof args, TINY " --steps 2 --out %s 2>&1", dir);
    int rc = test_run_cli(MPIRUN " -np 2", args, out, sizeof out);
    CHECKF(rc != 0 && rc != 124 && strstr(out, "built without MPI: install libopenmpi-dev"), "exit %d: %s", rc, out);
    test_rm_rf(dir);
}
