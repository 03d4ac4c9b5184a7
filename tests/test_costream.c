/* A Continual Transformer classifying each token of a stream, through the
 * CLI: `train --arch continual` on two made-up languages (a data file each)
 * learns to tell them apart; `tformer stream` labels a text token by token
 * in step mode, and --recompute (the regular network on each window) gives
 * the same labels and probabilities; bad settings are clear errors. */
#include <stdlib.h>
#include <string.h>

#include "test.h"

/* Lines of words over one alphabet each: "language" 0 uses a-f, 1 uses p-u. */
static int write_language(const char *path, int lang, int lines, unsigned seed) {
    FILE *f = fopen(path, "w");
    if (!f) return -1;
    for (int i = 0; i < lines; i++) {
        int words = 3 + (int)((seed + (unsigned)i * 7u) % 4u);
        for (int w = 0; w < words; w++) {
            int len = 2 + (int)((seed * 31u + (unsigned)(i * 13 + w * 5)) % 4u);
            for (int c = 0; c < len; c++)
                fputc((lang ? 'p' : 'a') + (int)((seed + (unsigned)(i * 3 + w * 11 + c * 7)) % 6u), f);
            fputc(w + 1 < words ? ' ' : '\n', f);
        }
    }
    return fclose(f);
}

#define MODEL_FLAGS "--window 12 --pos-len 12 --d-model 32 --n-head 4 --d-ff 64 --n-layer 2 --threads 1"

TEST(costream_train_then_stream_labels_each_token) {
    char dir[] = "/tmp/tformer_costream_XXXXXX", a[1200], b[1200], args[4096], out[16384];
    CHECK(mkdtemp(dir) != NULL);
    snprintf(a, sizeof a, "%s/abc", dir);
    snprintf(b, sizeof b, "%s/pqr", dir);
    CHECK(write_language(a, 0, 300, 1) == 0 && write_language(b, 1, 300, 2) == 0);
    snprintf(args, sizeof args,
             "train --arch continual --data %s %s --out %s/run --steps 40 --batch 16 --lr 3e-3 --warmup 5 "
             "--log-every 40 --eval-every 40 " MODEL_FLAGS, a, b, dir);
    CHECKF(test_run_cli("", args, out, sizeof out) == 0, "%s", out);
    const char *acc = strstr(out, "accuracy ");
    double accuracy = acc ? atof(acc + 9) : 0;
    printf("    40 steps: validation accuracy %.4f\n", accuracy);
    CHECKF(accuracy > 0.9, "%s", out);
    /* a text: 2 lines of each language; step mode and the regular network label every token alike */
    snprintf(args, sizeof args, "%s/text", dir);
    FILE *f = fopen(args, "w");
    CHECK(f && fputs("abc def fab\need cab bad\nqrs tup spur\nrupt qusp pst\n", f) >= 0 && fclose(f) == 0);
    char step_out[16384], full_out[16384];
    snprintf(args, sizeof args, "stream --model %s/run < %s/text 2>/dev/null", dir, dir);
    int rc = test_run_cli("", args, step_out, sizeof step_out);
    CHECKF(rc == 0, "rc %d: %s", rc, step_out);
    snprintf(args, sizeof args, "stream --model %s/run --recompute < %s/text 2>/dev/null", dir, dir);
    CHECK(test_run_cli("", args, full_out, sizeof full_out) == 0);
    int lines = 0, right = 0, same = 1;
    char *p = step_out, *q = full_out;
    while (*p && *q) {
        char tok[64], lab[64], tok2[64], lab2[64];
        float pr, pr2;
        if (sscanf(p, "%63[^\t]\t%63[^\t]\t%f", tok, lab, &pr) != 3 || sscanf(q, "%63[^\t]\t%63[^\t]\t%f", tok2, lab2, &pr2) != 3)
            break;
        same &= !strcmp(tok, tok2) && !strcmp(lab, lab2) && fabsf(pr - pr2) <= 1e-4f;
        /* output j is step j + 11: steps 0-23 are the first language, 37-50 the second (whole windows of it) */
        right += lines < 12 ? !strcmp(lab, "abc") : lines >= 26 ? !strcmp(lab, "pqr") : 1;
        lines++;
        p = strchr(p, '\n'), q = strchr(q, '\n');
        if (!p || !q) break;
        p++, q++;
    }
    printf("    stream: %d steps labelled, step mode equal to the regular network: %s\n", lines, same ? "yes" : "no");
    CHECKF(lines == 40 && same, "step:\n%s\nregular:\n%s", step_out, full_out);
    CHECKF(right == lines, "%d of %d steps wrong:\n%s", lines - right, lines, step_out);
    /* one class only, a wrong number of names */
    snprintf(args, sizeof args, "train --arch continual --data %s --out %s/bad " MODEL_FLAGS, a, dir);
    CHECKF(test_run_cli("", args, out, sizeof out) != 0 && strstr(out, "a --data file per class"), "%s", out);
    snprintf(args, sizeof args, "train --arch continual --data %s %s --label-names x,y,z --out %s/bad " MODEL_FLAGS, a,
             b, dir);
    CHECKF(test_run_cli("", args, out, sizeof out) != 0 && strstr(out, "3 names for 2 data files"), "%s", out);
    test_rm_rf(dir);
}
