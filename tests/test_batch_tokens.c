/* One name per setting (issue 55): `--max-tokens` is new tokens on every verb, so a translation
 * batch's token budget, which `train --arch seq2seq | rnn` called --max-tokens, is --batch-tokens
 * (JSON batch_tokens). Its former key stays readable from JSON (TF_FIELD_RENAMED): a --config file,
 * Python's train(max_tokens=...) and a checkpoint's recorded settings, which a resume compares; as
 * a flag it is refused with "did you mean --batch-tokens?", and --help lists it no more. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "test.h"
#include "train/train_internal.h"

TEST(batch_tokens_reads_its_former_key_from_json_only) {
    tf_train_config tc = tf_train_config_default();
    tf_seq2seq_task_config sc = tf_seq2seq_task_config_default();
    tf_fields now[2] = {{&tf_train_config_table, &tc}, {&tf_seq2seq_task_config_table, &sc}};
    CHECK(sc.batch_tokens == 4096);
    /* a key, old or new; a flag, new only */
    CHECK(tf_fields_set(now, 2, "max_tokens", "100") == 0 && sc.batch_tokens == 100);
    CHECK(tf_fields_set(now, 2, "--batch-tokens", "200") == 0 && sc.batch_tokens == 200);
    CHECKF(tf_fields_set(now, 2, "--max-tokens", "300") == -1 && strstr(tf_error(), "--max-tokens: no such field") &&
           sc.batch_tokens == 200, "%s", tf_error());
    /* a checkpoint written before the rename records max_tokens: a resume with another budget is a change, named */
    sc.batch_tokens = 4096;
    char *json = tf_fields_json(now, 2), *at = json ? strstr(json, "\"batch_tokens\":4096") : NULL;
    CHECK(at != NULL);
    char *old = malloc(strlen(json) + 1);
    CHECK(old != NULL);
    snprintf(old, strlen(json) + 1, "%.*s\"max_tokens\":4096%s", (int)(at - json), json, at + strlen("\"batch_tokens\":4096"));
    char changed[512];
    CHECKF(tf_resume_changes(now, 2, old, 0, changed, sizeof changed) == 0, "%s", changed);
    sc.batch_tokens = 2048;
    int n = tf_resume_changes(now, 2, old, 0, changed, sizeof changed);
    CHECKF(n == 1 && !strcmp(changed, "batch_tokens 4096 -> 2048"), "%d: %s", n, changed);
    free(json), free(old);
}

TEST(cli_batch_tokens_is_the_translation_batch_flag) {
    char dir[] = "/tmp/tformer_btok_XXXXXX", cmd[2048], out[16384], data[600];
    CHECK(mkdtemp(dir) != NULL);
    snprintf(data, sizeof data, "--src %s/s.txt --tgt %s/s.txt --valid-src %s/s.txt --valid-tgt %s/s.txt", dir, dir, dir,
             dir);
    snprintf(cmd, sizeof cmd, "%s/s.txt", dir);
    CHECK(test_write_text(cmd, "a man runs\ntwo dogs sit\n") == 0);
    /* --help: the new flag; no --max-tokens line (its help names fairseq's flag) */
    for (int rnn = 0; rnn < 2; rnn++) {
        snprintf(cmd, sizeof cmd, "%s train --arch %s --help", test_tformer_bin(), rnn ? "rnn" : "seq2seq");
        CHECK(test_popen(cmd, out, sizeof out) == 0);
        CHECKF(strstr(out, "\n  --batch-tokens N ") && !strstr(out, "\n  --max-tokens") && !strstr(out, "also --max-tokens"),
               "%s", out);
    }
    /* the former flag: refused, pointing at the new one */
    snprintf(cmd, sizeof cmd, "%s train --arch seq2seq %s --out %s/run --max-tokens 64 2>&1", test_tformer_bin(), data, dir);
    int rc = test_popen(cmd, out, sizeof out);
    CHECKF(rc == 2 && strstr(out, "unknown option '--max-tokens' (did you mean --batch-tokens? see tformer train --help)"),
           "status %d: %s", rc, out);
    /* a --config file of the former key: read as batch_tokens (a budget of 3 ids, less than a pair's row) */
    snprintf(cmd, sizeof cmd, "%s/old.json", dir);
    CHECK(test_write_text(cmd, "{\"max_tokens\": 3, \"steps\": 1}") == 0);
    snprintf(cmd, sizeof cmd, "%s train --arch seq2seq %s --out %s/run --config %s/old.json 2>&1", test_tformer_bin(),
             data, dir, dir);
    rc = test_popen(cmd, out, sizeof out);
    CHECKF(rc == 1 && strstr(out, "ids a row, more than batch_tokens 3"), "status %d: %s", rc, out);
    test_rm_rf(dir);
}
