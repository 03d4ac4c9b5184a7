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
    FILE *p = popen(cmd, "r");
    if (!p) return -1;
    size_t k = fread(err, 1, n - 1, p);
    err[k] = 0;
    int st = pclose(p);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
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
