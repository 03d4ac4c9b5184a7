/* Verbs that read standard input work a chunk at a time (issue 54's bounded
 * streaming): the first answer comes before the input ends, memory does not
 * grow with the input's length, and a closed standard output ends the verb
 * at once with its cause. The verbs run as child processes fed through pipes;
 * their peak memory is the child's ru_maxrss (wait4). */
#define _DEFAULT_SOURCE /* wait4 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "test.h"

#define ST_DIR "tests/fixtures_roberta_st/tiny_roberta_st"

/* A child running "tformer <args>" with its standard input and output on our pipes. */
typedef struct {
    pid_t pid;
    int in, out;             /* our ends: we write its input, read its output */
    long long out_bytes;     /* read so far */
    long long out_before_eof; /* read before its input was closed */
    long fed;                 /* lines written to it whole */
    char *got;                /* when set: what it wrote (up to got_max bytes) */
    size_t got_n, got_max;
} child;

static int spawn(child *c, const char *args) {
    int in[2], out[2];
    if (pipe(in) || pipe(out)) return -1;
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "exec %s %s 2>/dev/null", test_tformer_bin(), args);
    c->pid = fork();
    if (c->pid == 0) {
        dup2(in[0], 0), dup2(out[1], 1);
        close(in[0]), close(in[1]), close(out[0]), close(out[1]);
        execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
        _exit(127);
    }
    close(in[0]), close(out[1]);
    c->in = in[1], c->out = out[0], c->out_bytes = c->out_before_eof = 0;
    c->got = NULL, c->got_n = c->got_max = 0;
    fcntl(c->in, F_SETFL, O_NONBLOCK);
    return c->pid > 0 ? 0 : -1;
}

/* Read what the child wrote (waiting at most ms); 0 at its end. */
static ssize_t drain(child *c, int ms) {
    struct pollfd p = {c->out, POLLIN, 0};
    if (poll(&p, 1, ms) <= 0) return -1;
    char buf[65536];
    ssize_t got = read(c->out, buf, sizeof buf);
    if (got > 0) c->out_bytes += got;
    for (ssize_t i = 0; c->got && i < got && c->got_n < c->got_max; i++) c->got[c->got_n++] = buf[i];
    return got;
}

/* Feed n generated lines ("<word> <i mod 100>": a tokenizer cache stays small), reading its output as it comes; then close its input. */
static void feed(child *c, long n, const char *word) {
    char line[128];
    size_t len = 0, off = 0;
    long i = 0;
    for (; i < n || off < len;) {
        if (off == len && i < n) len = (size_t)snprintf(line, sizeof line, "%s %ld\n", word, i++ % 100), off = 0;
        struct pollfd p[2] = {{c->in, POLLOUT, 0}, {c->out, POLLIN, 0}};
        if (poll(p, 2, 10000) <= 0) break;
        if (p[1].revents) drain(c, 0);
        if (p[0].revents & POLLOUT) {
            ssize_t w = write(c->in, line + off, len - off);
            if (w > 0) off += (size_t)w;
            else if (errno != EAGAIN) break;
        } else if (p[0].revents) {
            break; /* the child is gone */
        }
    }
    c->out_before_eof = c->out_bytes;
    c->fed = off == len ? i : i - 1;
    close(c->in);
}

/* Drain to the end, then its exit status (128 + signal) and peak memory in KiB. */
static int finish(child *c, long *maxrss_kb) {
    while (drain(c, 60000) > 0) {}
    close(c->out);
    int st;
    struct rusage ru;
    if (wait4(c->pid, &st, 0, &ru) < 0) return -1;
    *maxrss_kb = ru.ru_maxrss;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

TEST(embed_answers_before_its_input_ends) {
    child c;
    CHECK(!spawn(&c, "embed --model " ST_DIR " --threads 1"));
    CHECK(write(c.in, "a man rides a horse\n", 20) == 20);
    int got = 0;
    for (int t = 0; t < 60 && !got; t++) got = drain(&c, 1000) > 0; /* its input still open */
    close(c.in);
    long rss;
    int rc = finish(&c, &rss);
    CHECKF(got, "no embedding within 60 s of the first line while the input stayed open (exit %d)", rc);
    CHECK(rc == 0);
}

TEST(embed_memory_does_not_grow_with_the_input) {
    long rss[2];
    long long bytes[2];
    for (int k = 0; k < 2; k++) { /* 2,000 lines, then 200,000: the same peak memory within 16 MiB */
        child c;
        CHECK(!spawn(&c, "embed --model " ST_DIR " --threads 1"));
        feed(&c, k ? 200000 : 2000, "two dogs play in the snow");
        CHECK(finish(&c, &rss[k]) == 0);
        bytes[k] = c.out_bytes;
        CHECKF(!k || c.out_before_eof > 0, "200,000 lines: no output before the input ended");
        CHECKF(c.fed == (k ? 200000 : 2000), "run %d: the verb stopped reading after %ld lines", k, c.fed);
    }
    printf("    peak memory %ld KiB after 2,000 lines, %ld KiB after 200,000 (%lld MB written)\n", rss[0], rss[1],
           bytes[1] >> 20);
    /* under the sanitizers freed memory waits in ASan's quarantine (256 MB): peaks say nothing there */
    const char *san = getenv("TFORMER_CFLAGS");
    if (san && strstr(san, "sanitize")) return;
    CHECKF(rss[1] - rss[0] < 16384, "peak memory grew from %ld to %ld KiB with the input", rss[0], rss[1]);
}

TEST(stdin_verbs_stop_when_their_output_is_gone) {
    char out[4096];
    /* standard output closed: the first chunk's write fails, the verb ends with its cause */
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "yes 'a man rides a horse' 2>/dev/null | timeout 60 %s embed --model " ST_DIR " --threads 1 "
             "2>&1 >&- | head -c 1000", test_tformer_bin()); /* the start-up line, then the error */
    FILE *p = popen(cmd, "r");
    size_t k = p ? fread(out, 1, sizeof out - 1, p) : 0;
    out[k] = 0;
    int st = p ? pclose(p) : -1;
    CHECKF(st == 0 && strstr(out, "tformer embed: standard output: write error: Bad file descriptor"),
           "an endless input into a closed standard output: %s", out);
    /* SIGPIPE ignored and the reader gone: EPIPE ends it with exit 1 */
    snprintf(cmd, sizeof cmd, "trap '' PIPE; yes 'a man rides a horse' 2>/dev/null | (timeout 60 %s embed --model " ST_DIR
             " --threads 1 2>/tmp/tf_epipe_err; echo \"exit $?\" > /tmp/tf_epipe_rc) | head -c 10 > /dev/null; "
             "sleep 1; cat /tmp/tf_epipe_rc /tmp/tf_epipe_err", test_tformer_bin());
    p = popen(cmd, "r");
    k = p ? fread(out, 1, sizeof out - 1, p) : 0;
    out[k] = 0;
    if (p) pclose(p);
    unlink("/tmp/tf_epipe_rc"), unlink("/tmp/tf_epipe_err");
    CHECKF(strstr(out, "exit 1") && strstr(out, "write error: Broken pipe"), "reader gone, SIGPIPE ignored: %s", out);
}

/* A seq2seq run folder trained for 2 steps on a few word pairs (its translations are noise; what is
 * tested is when they come). */
static int tiny_translator(char *dir) {
    strcpy(dir, "/tmp/tformer_strm_XXXXXX");
    if (!mkdtemp(dir)) return -1;
    char path[128], args[1024], out[4096];
    for (int f = 0; f < 2; f++) {
        snprintf(path, sizeof path, "%s/%s", dir, f ? "t.tgt" : "t.src");
        FILE *fp = fopen(path, "w");
        for (int i = 0; fp && i < 40; i++) fprintf(fp, f ? "b%d a%d %d\n" : "a%d b%d %d\n", i % 7, i % 5, i % 10);
        if (!fp || fclose(fp)) return -1;
    }
    snprintf(args, sizeof args,
             "train --arch seq2seq --src %s/t.src --tgt %s/t.tgt --valid-src %s/t.src --valid-tgt %s/t.tgt --out %s/run "
             "--steps 2 --d-model 16 --n-head 2 --n-encoder-layers 1 --n-decoder-layers 1 --batch-tokens 64 --context 16 "
             "--max-len 16 --eval-every 2 --threads 1",
             dir, dir, dir, dir, dir);
    return test_run_cli("", args, out, sizeof out);
}

TEST(translate_streams_and_stops_when_its_output_is_gone) {
    char dir[64], args[512];
    CHECK(tiny_translator(dir) == 0);
    child c;
    snprintf(args, sizeof args, "translate --model %s/run --threads 1 --max-len-a 0 --max-len-b 3", dir);
    CHECK(!spawn(&c, args));
    CHECK(write(c.in, "a1 b2\n", 6) == 6);
    int got = 0;
    for (int t = 0; t < 60 && !got; t++) got = drain(&c, 1000) > 0; /* its input still open */
    close(c.in);
    long rss;
    CHECK(finish(&c, &rss) == 0);
    CHECKF(got, "no translation within 60 s of the first line while the input stayed open");
    char cmd[1024], out[2048];
    snprintf(cmd, sizeof cmd, "yes 'a1 b2' 2>/dev/null | timeout 60 %s %s 2>&1 >&- | head -c 300", test_tformer_bin(),
             args);
    FILE *p = popen(cmd, "r");
    size_t k = p ? fread(out, 1, sizeof out - 1, p) : 0;
    out[k] = 0;
    CHECKF(p && pclose(p) == 0 && strstr(out, "tformer translate: standard output: write error: Bad file descriptor"),
           "an endless input into a closed standard output: %s", out);
    test_rm_rf(dir);
}

/* The acceptance's bounded-memory test for translate: 2,000 and 200,000 lines peak at the same memory (within
 * 16 MiB), and translations come before the input ends. */
TEST(translate_memory_does_not_grow_with_the_input) {
    char dir[64], args[512];
    CHECK(tiny_translator(dir) == 0);
    snprintf(args, sizeof args, "translate --model %s/run --threads 1 --max-len-a 0 --max-len-b 3", dir);
    long rss[2];
    for (int k = 0; k < 2; k++) {
        child c;
        CHECK(!spawn(&c, args));
        feed(&c, k ? 200000 : 2000, "a1 b2");
        int rc = finish(&c, &rss[k]);
        CHECKF(rc == 0, "%s, %d lines: exit %d", args, k ? 200000 : 2000, rc);
        CHECKF(!k || c.out_before_eof > 0, "200,000 lines: no translation before the input ended");
        CHECKF(c.fed == (k ? 200000 : 2000), "run %d: the verb stopped reading after %ld lines", k, c.fed);
    }
    printf("    peak memory %ld KiB after 2,000 lines, %ld KiB after 200,000\n", rss[0], rss[1]);
    test_rm_rf(dir);
    const char *san = getenv("TFORMER_CFLAGS"); /* ASan's quarantine: see embed_memory_does_not_grow_with_the_input */
    if (san && strstr(san, "sanitize")) return;
    CHECKF(rss[1] - rss[0] < 16384, "peak memory grew from %ld to %ld KiB with the input", rss[0], rss[1]);
}

/* The first answer of "tformer <args>" comes while its input (one line) stays open: 1, else 0. */
static int answers_before_eof(const char *args, const char *line, int *rc) {
    child c;
    if (spawn(&c, args)) return 0;
    if (write(c.in, line, strlen(line)) != (ssize_t)strlen(line)) return 0;
    int got = 0;
    for (int t = 0; t < 60 && !got; t++) got = drain(&c, 1000) > 0;
    close(c.in);
    long rss;
    *rc = finish(&c, &rss);
    return got;
}

/* An endless input into a closed standard output: the verb's stderr (it must end with the cause). */
static void closed_output(const char *input, const char *args, char *out, size_t n) {
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "yes '%s' 2>/dev/null | timeout 60 %s %s 2>&1 >&- | head -c 300", input,
             test_tformer_bin(), args);
    FILE *p = popen(cmd, "r");
    size_t k = p ? fread(out, 1, n - 1, p) : 0;
    out[k] = 0;
    if (p) pclose(p);
}

/* predict, encode --lines and stream (issue 54 items 3-5): each answers before its input ends and
 * stops at once when its output is gone; --batch is bounded on every verb that has it. */
TEST(predict_encode_stream_answer_before_their_input_ends) {
    char dir[] = "/tmp/tformer_strm_pr_XXXXXX", args[1024], out[4096];
    CHECK(mkdtemp(dir) != NULL);
    snprintf(args, sizeof args, "%s/t.tsv", dir);
    FILE *f = fopen(args, "w");
    CHECK(f && fputs("pos\ta good dog\nneg\ta bad cat\npos\ta nice dog\nneg\ta sad cat\n", f) >= 0 && !fclose(f));
    snprintf(args, sizeof args, "finetune --model " ST_DIR " --train %s/t.tsv --valid %s/t.tsv --out %s/ft --steps 2 "
             "--threads 1", dir, dir, dir);
    CHECKF(test_run_cli("", args, out, sizeof out) == 0, "%s", out);
    snprintf(args, sizeof args, "%s/lang", dir);
    CHECK((f = fopen(args, "w")) != NULL);
    for (int i = 0; i < 40; i++) fputs("abc abd bca\npqr pqs rqp\n", f);
    CHECK(!fclose(f));
    snprintf(args, sizeof args, "train --arch continual --data %s/lang %s/lang --out %s/co --steps 2 --batch 4 "
             "--window 12 --pos-len 12 --d-model 16 --n-head 2 --d-ff 16 --n-layer 1 --threads 1", dir, dir, dir);
    CHECKF(test_run_cli("", args, out, sizeof out) == 0, "%s", out);
    int rc;
    snprintf(args, sizeof args, "predict --model %s/ft --threads 1", dir);
    CHECKF(answers_before_eof(args, "a good dog\n", &rc) && rc == 0, "predict: no answer while the input stayed open "
           "(exit %d)", rc);
    CHECKF(answers_before_eof("encode --tokenizer char --lines", "abc\n", &rc) && rc == 0,
           "encode --lines: no answer while the input stayed open (exit %d)", rc);
    snprintf(args, sizeof args, "stream --model %s/co", dir);
    CHECKF(answers_before_eof(args, "abc pqr abc pqr abc pqr\n", &rc) && rc == 0, "stream: no answer while the input stayed open "
           "(exit %d)", rc);
    /* standard output closed: each ends at once with the cause (stream ran until killed) */
    closed_output("abc pqr", args, out, sizeof out);
    CHECKF(strstr(out, "tformer stream: standard output: write error: Bad file descriptor"), "stream: %s", out);
    snprintf(args, sizeof args, "predict --model %s/ft --threads 1", dir);
    closed_output("a good dog", args, out, sizeof out);
    CHECKF(strstr(out, "tformer predict: standard output: write error: Bad file descriptor"), "predict: %s", out);
    closed_output("abc", "encode --tokenizer char --lines", out, sizeof out);
    CHECKF(strstr(out, "tformer encode: standard output: write error: Bad file descriptor"), "encode: %s", out);
    /* a line's number counts over the whole input, across chunks */
    snprintf(args, sizeof args, "sh -c 'i=0; while [ $i -lt 1499 ]; do printf \"a\\tb\\n\"; i=$((i+1)); done; echo bad' | "
             "%s predict --model %s/ft --task pairs --threads 1 2>&1 >/dev/null", test_tformer_bin(), dir);
    FILE *p = popen(args, "r");
    size_t k = p ? fread(out, 1, sizeof out - 1, p) : 0;
    out[k] = 0;
    if (p) pclose(p);
    CHECKF(strstr(out, "<stdin>:1500: no tab"), "%s", out);
    /* --batch bounded on every verb that takes it */
    static const char *const BIG[] = {"predict --model %s/ft --batch 2000000000 < /dev/null",
                                      "embed --model " ST_DIR " --batch 1025 < /dev/null",
                                      "classify --model tests/fixtures_vit/cls_grey28_p4_labels --batch 2000000000 x.png",
                                      "eval --listops 10 --model %s/ft --batch 2000000000"};
    for (size_t i = 0; i < sizeof BIG / sizeof *BIG; i++) {
        char cmd[512];
        snprintf(cmd, sizeof cmd, BIG[i], dir);
        rc = test_run_cli("", cmd, out, sizeof out);
        CHECKF(rc == 2 && strstr(out, "--batch expects an integer in [1,1024]"), "%s: exit %d: %s", cmd, rc, out);
    }
    /* training's batch is the field table's: bounded too (it tried to allocate 512 GB) */
    static const char *const TRAIN_BIG[] = {"train --data README.md --out %s/big --batch 2000000000",
                                            "finetune --model %s/ft --train README.md --valid README.md --out %s/big2 --batch 2000000000"};
    for (size_t i = 0; i < sizeof TRAIN_BIG / sizeof *TRAIN_BIG; i++) {
        char cmd[512];
        snprintf(cmd, sizeof cmd, TRAIN_BIG[i], dir, dir); /* train takes one %s */
        rc = test_run_cli("", cmd, out, sizeof out);
        CHECKF(rc == 2 && strstr(out, "--batch expects an integer in [1,65536]"), "%s: exit %d: %s", cmd, rc, out);
    }
    test_rm_rf(dir);
}

/* encode, decode and bleu (issue 54 item 4): memory does not grow with the input; encode and decode answer
 * before it ends. */
TEST(encode_decode_bleu_memory_does_not_grow_with_the_input) {
    char dir[] = "/tmp/tformer_strm_tx_XXXXXX", args[512];
    CHECK(mkdtemp(dir) != NULL);
    static const struct {
        const char *args, *word;
    } V[] = {{"encode --tokenizer " ST_DIR, "the quick brown fox jumps over the lazy dog and then sits on the mat"},
             {"decode --tokenizer char", "116 104 101 32 113 117 105 99 107 32 98 114 111 119 110 32 102 111 120 32"},
             {"bleu --ref %s/ref --metrics bleu chrf", "a quick brown fox jumps over a lazy dog and sits on a mat"}};
    for (size_t v = 0; v < sizeof V / sizeof *V; v++) {
        long rss[2];
        for (int k = 0; k < 2; k++) { /* 2,000 lines, then 200,000 */
            long n = k ? 200000 : 2000;
            snprintf(args, sizeof args, "%s/ref", dir);
            FILE *f = fopen(args, "w");
            for (long i = 0; f && i < n; i++) fprintf(f, "the quick brown fox jumps over the lazy dog %ld\n", i % 100);
            CHECK(f && !fclose(f));
            snprintf(args, sizeof args, V[v].args, dir);
            child c;
            CHECK(!spawn(&c, args));
            feed(&c, n, V[v].word);
            int rc = finish(&c, &rss[k]);
            CHECKF(rc == 0, "%s: exit %d", args, rc);
            CHECKF(c.fed == n, "%s: the verb stopped reading after %ld lines", args, c.fed);
            CHECKF(!k || v == 2 || c.out_before_eof > 0, "%s, 200,000 lines: no output before the input ended", args);
        }
        printf("    %s: peak memory %ld KiB after 2,000 lines, %ld KiB after 200,000\n", args, rss[0], rss[1]);
        const char *san = getenv("TFORMER_CFLAGS"); /* ASan's quarantine: see embed_memory_does_not_grow_with_the_input */
        CHECKF((san && strstr(san, "sanitize")) || rss[1] - rss[0] < 16384, "%s: peak memory grew from %ld to %ld KiB "
               "with the input", args, rss[0], rss[1]);
    }
    test_rm_rf(dir);
}

/* A text meant to trip cuts: blank lines, lines that start with spaces, tabs, CRs, punctuation, special tokens
 * or non-ASCII letters. */
static char *tricky_text(size_t *len) {
    static const char *const W[] = {"the", "a", "dog", "\xc3\xa9t\xc3\xa9", "<mask>", "[SEP]", "x.", "3.14",
                                    "don't", "  ", "\t", "\r", "'s", "Hello", "WORLD", "\xe4\xb8\xad", "-", "!!"};
    size_t cap = 1 << 20, n = 0;
    char *s = malloc(cap);
    unsigned r = 7;
    for (int line = 0; s && line < 12000; line++) {
        int k = (int)((r = r * 1103515245u + 12345u) >> 16) % 7;
        for (int i = 0; i < k; i++) {
            const char *w = W[((r = r * 1103515245u + 12345u) >> 16) % (sizeof W / sizeof *W)];
            n += (size_t)snprintf(s + n, cap - n, i ? " %s" : "%s", w);
        }
        s[n++] = '\n';
    }
    *len = n;
    return s;
}

/* Run args on input fed in pieces of 997 bytes with a pause after each (so the verb sees its input wait):
 * what it wrote, NUL-terminated; *early: bytes written before the input ended. */
static char *paced(const char *args, const char *in, size_t n, long long *early, int *rc) {
    child c;
    if (spawn(&c, args)) return NULL;
    c.got_max = 16u << 20, c.got = malloc(c.got_max + 1);
    for (size_t off = 0; c.got && off < n;) {
        struct pollfd p[2] = {{c.in, POLLOUT, 0}, {c.out, POLLIN, 0}};
        if (poll(p, 2, 10000) <= 0) break;
        if (p[1].revents) drain(&c, 0);
        if (p[0].revents & POLLOUT) {
            ssize_t w = write(c.in, in + off, n - off < 997 ? n - off : 997);
            if (w > 0) off += (size_t)w, usleep(200);
            else if (errno != EAGAIN) break;
        } else if (p[0].revents) {
            break;
        }
    }
    *early = c.out_bytes;
    close(c.in);
    long rss;
    *rc = finish(&c, &rss);
    if (c.got) c.got[c.got_n] = 0;
    return c.got;
}

/* encode and decode in pieces give the whole text's ids and text, byte for byte (the library on the whole
 * text), and answer before the input ends where the tokenizer can be cut (tf_tokenizer_encode_cut). */
TEST(encode_decode_in_pieces_keep_the_ids) {
    static const struct {
        const char *tok;
        int cuts;
    } T[] = {{ST_DIR, 1}, {"tests/fixtures_distilbert_st/tiny_distilbert_st", 1}, {"char", 1},
             {"tests/fixtures_xlmr_st/tiny_xlmr_st", 0}};
    size_t n;
    char *text = tricky_text(&n), args[512];
    CHECK(text != NULL);
    for (size_t k = 0; k < sizeof T / sizeof *T; k++) {
        tf_tokenizer *t = tf_tokenizer_load(strcmp(T[k].tok, "char") ? T[k].tok : "char");
        CHECK(t != NULL);
        tf_ids ids = {0};
        CHECK(!tf_tokenizer_encode(t, text, n, &ids));
        size_t cap = ids.n * 12 + 2, m = 0;
        char *want = malloc(cap), *back;
        for (size_t i = 0; want && i < ids.n; i++) m += (size_t)snprintf(want + m, cap - m, i ? " %d" : "%d", ids.v[i]);
        want[m++] = '\n', want[m] = 0;
        size_t back_n;
        CHECK(!tf_tokenizer_decode(t, ids.v, ids.n, &back, &back_n));
        long long early;
        int rc;
        snprintf(args, sizeof args, "encode --tokenizer %s", T[k].tok);
        char *got = paced(args, text, n, &early, &rc);
        CHECKF(got && rc == 0 && !strcmp(got, want), "%s: exit %d, its ids differ from the whole text's", args, rc);
        CHECKF(!T[k].cuts || early > 0, "%s: nothing written before the input ended", args);
        free(got);
        snprintf(args, sizeof args, "decode --tokenizer %s", T[k].tok);
        got = paced(args, want, m, &early, &rc);
        CHECKF(got && rc == 0 && strlen(got) == back_n && !memcmp(got, back, back_n), "%s: exit %d, its text differs "
               "from the whole ids' text", args, rc);
        CHECKF(!T[k].cuts || early > 0, "%s: nothing written before the input ended", args);
        printf("    %s: %zu ids\n", T[k].tok, ids.n);
        free(got), free(want), free(back), tf_ids_free(&ids), tf_tokenizer_free(t);
    }
    free(text);
}

/* encode and decode on an endless input into a closed standard output: the first piece's write fails and the
 * verb ends at once with its cause (the old code read until its memory ran out). */
TEST(encode_decode_stop_when_their_output_is_gone) {
    char out[4096];
    closed_output("a man rides a horse", "encode --tokenizer char", out, sizeof out);
    CHECKF(strstr(out, "tformer encode: standard output: write error: Bad file descriptor"), "encode: %s", out);
    closed_output("65 32 109 97 110", "decode --tokenizer char", out, sizeof out);
    CHECKF(strstr(out, "tformer decode: standard output: write error: Bad file descriptor"), "decode: %s", out);
}
