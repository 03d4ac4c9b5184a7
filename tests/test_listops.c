/* ListOps (src/data/listops.c): the generator's expressions and answers
 * against tests/fixtures_listops, whose labels an independent evaluator
 * computed from the text (tests/ref/listops_eval.py; make listops-check runs
 * it on thousands); the settings' errors; the loader's batches; a few steps
 * of `tformer train --arch listops` with each attention kind; the test
 * set's scoring (tformer eval --listops) against one expression at a time. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "test.h"

typedef struct {
    const char *file;
    tf_listops_opts o;
    int subset;
} fixture;

/* How many lines of f's file differ from the generator's text and answer (-1: unreadable). */
static int differing(const fixture *f, int *lines) {
    FILE *fp = fopen(f->file, "r");
    if (!fp) return -1;
    char line[65536], text[65536];
    int32_t ids[4096];
    int bad = 0;
    *lines = 0;
    while (fgets(line, sizeof line, fp)) {
        int len, label;
        if (tf_listops_example(&f->o, f->subset, (*lines)++, ids, 4096, &len, &label)) return fclose(fp), -1;
        size_t k = (size_t)snprintf(text, sizeof text, "%d\t", label);
        for (int t = 0; t < len && k < sizeof text; t++)
            k += (size_t)snprintf(text + k, sizeof text - k, "%s%s", t ? " " : "", tf_listops_token(ids[t]));
        line[strcspn(line, "\n")] = 0;
        bad += strcmp(line, text) != 0;
    }
    fclose(fp);
    return bad;
}

TEST(listops_generator_matches_independent_evaluator) {
    fixture f[] = {{"tests/fixtures_listops/seed5_test.tsv", {20, 200, 6, 5, 5, 0, 0}, 2},
                   {"tests/fixtures_listops/seed1_train_lra.tsv", {500, 2000, 10, 10, 1, 0, 0}, 0}};
    for (int i = 0; i < 2; i++) {
        int lines, bad = differing(&f[i], &lines);
        printf("    %s: %d expressions, %d differ\n", f[i].file, lines, bad);
        CHECKF(bad == 0 && lines >= 5, "%s: %d of %d lines differ", f[i].file, bad, lines);
    }
    f[0].o.seed = 6;  // another seed: other expressions (the comparison can fail)
    int lines, bad = differing(&f[0], &lines);
    CHECKF(bad == lines, "seed 6 reproduced %d of %d lines of seed 5", lines - bad, lines);
}

TEST(listops_settings_are_checked) {
    static const struct {
        tf_listops_opts o;
        const char *expect;
    } bad[] = {
        {{500, 2000, 10, 1, 1, 0, 0}, "max_args 1 must lie in [2, 64]"},
        {{500, 2000, 0, 10, 1, 0, 0}, "max_depth 0 must lie in [1, 64]"},
        {{100, 101, 10, 10, 1, 0, 0}, "leave no length"},
        {{10, 100, 2, 3, 1, 0, 0}, "at most 5 tokens, not more than min_len 10"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        int rc = tf_listops_check(&bad[i].o);
        CHECKF(rc != 0 && strstr(tf_error(), bad[i].expect), "case %zu: rc %d, error '%s'", i, rc, tf_error());
    }
    tf_listops_opts ok = {20, 100, 6, 5, 3, 0, 0};
    int32_t ids[99];
    int len, label;
    CHECK(tf_listops_example(&ok, 0, 0, ids, 50, &len, &label) != 0 && strstr(tf_error(), "room for 50 tokens"));
    CHECK(!tf_listops_loader_new(&ok, 10, 10, 99, 0) && strstr(tf_error(), "cannot hold [CLS] and up to 99 tokens"));
    CHECK(!tf_listops_loader_new(&ok, 0, 10, 100, 0) && strstr(tf_error(), "both need at least 1"));
}

TEST(listops_loader_batches) {
    tf_listops_opts o = {20, 100, 6, 5, 3, 0, 0};
    tf_loader *l = tf_listops_loader_new(&o, 1000, 50, 128, 0);
    tf_ctx *ctx = tf_ctx_new(1);
    tf_batch a, b, v;
    CHECK(l && !tf_loader_next(l, ctx, TF_SUBSET_TRAIN, 7, 4, &a) && !tf_loader_next(l, ctx, TF_SUBSET_TRAIN, 7, 4, &b) &&
          !tf_loader_next(l, ctx, TF_SUBSET_VAL, 1, 4, &v));
    tf_tensor *x = tf_batch_get(&a, "input_ids"), *m = tf_batch_get(&a, "attention_mask"), *y = tf_batch_get(&a, "labels");
    CHECK(x && m && y && x->shape[0] == 4 && x->shape[1] == 128 && y->shape[0] == 4);
    CHECK(!memcmp(tf_i32(x), tf_i32(tf_batch_get(&b, "input_ids")), 4 * 128 * sizeof(int32_t)));  // the same draw
    int32_t ids[128];
    int len, label;
    CHECK(!tf_listops_example(&o, 1, 5, ids, 128, &len, &label));  // validation batch 1 of 4 rows: examples 4..7
    CHECK(tf_i32(tf_batch_get(&v, "labels"))[1] == label && tf_i32(tf_batch_get(&v, "input_ids"))[128 + 1] == ids[0]);
    for (int r = 0; r < 4; r++) {
        int n = 0;
        for (int t = 0; t < 128; t++) n += tf_i32(m)[r * 128 + t];
        CHECKF(tf_i32(x)[r * 128] == TF_LISTOPS_CLS && n > 21 && n < 101 && tf_i32(x)[r * 128 + n] == TF_LISTOPS_PAD &&
               tf_i32(x)[r * 128 + n - 1] == TF_LISTOPS_END && tf_i32(y)[r] >= 0 && tf_i32(y)[r] < 10,
               "row %d: %d tokens", r, n);
    }
    tf_ctx_free(ctx);
    tf_loader_free(l);
}

/* Length bucketing: a training batch holds examples of about one length and
 * is as long as its longest row rounded up to the bucket; the same draw for
 * the same key; validation batches rounded up too (never past T). */
TEST(listops_loader_buckets) {
    tf_listops_opts o = {20, 100, 6, 5, 3, 0, 0};
    tf_loader *l = tf_listops_loader_new(&o, 1000, 50, 128, 16);
    tf_ctx *ctx = tf_ctx_new(1);
    CHECKF(l && ctx, "%s", tf_error());
    CHECK(!tf_listops_loader_new(&o, 10, 10, 128, -1) && strstr(tf_error(), "bucket -1"));
    int spread_sum = 0;
    for (uint64_t key = 0; key < 20; key++) {
        tf_batch a, b;
        CHECK(!tf_loader_next(l, ctx, TF_SUBSET_TRAIN, key, 8, &a) && !tf_loader_next(l, ctx, TF_SUBSET_TRAIN, key, 8, &b));
        tf_tensor *x = tf_batch_get(&a, "input_ids"), *m = tf_batch_get(&a, "attention_mask");
        int64_t T = x->shape[1];
        CHECK(T == tf_batch_get(&b, "input_ids")->shape[1] &&
              !memcmp(tf_i32(x), tf_i32(tf_batch_get(&b, "input_ids")), (size_t)(8 * T) * sizeof(int32_t)));
        int lo = 1 << 30, hi = 0;
        for (int r = 0; r < 8; r++) {
            int n = 0;
            for (int64_t t = 0; t < T; t++) n += tf_i32(m)[r * T + t];
            CHECK(tf_i32(x)[r * T] == TF_LISTOPS_CLS && tf_i32(x)[r * T + n - 1] == TF_LISTOPS_END);
            lo = n < lo ? n : lo, hi = n > hi ? n : hi;
        }
        CHECKF(T % 16 == 0 && T >= hi && T < hi + 16, "batch %d long for rows up to %d", (int)T, hi);
        spread_sum += hi - lo;
        tf_ctx_reset(ctx);
    }
    /* 8 neighbours among 1,000 examples of 21-99 tokens: a length or two apart, not ~60 as random rows */
    CHECKF(spread_sum <= 20 * 4, "rows of a batch differ in length by %.1f on average", spread_sum / 20.0);
    tf_batch v;
    CHECK(!tf_loader_next(l, ctx, TF_SUBSET_VAL, 2, 4, &v));
    int64_t Tv = tf_batch_get(&v, "input_ids")->shape[1];
    CHECK(Tv % 16 == 0 && Tv <= 128);
    tf_ctx_free(ctx);
    tf_loader_free(l);
}

/* --listops-sep: each row is the plain loader's row with [SEP] after the
 * expression, inside the mask and the bucketed length; a length that cannot
 * hold it, and a sep other than 0 or 1, are refused. */
TEST(listops_loader_sep) {
    tf_listops_opts o = {20, 100, 6, 5, 3, 0, 0}, s = o;
    s.sep = 1;
    tf_loader *plain = tf_listops_loader_new(&o, 200, 20, 100, 8), *with = tf_listops_loader_new(&s, 200, 20, 101, 8);
    tf_ctx *ctx = tf_ctx_new(1);
    CHECKF(plain && with && ctx, "%s", tf_error());
    CHECK(!tf_listops_loader_new(&s, 10, 10, 100, 0) && strstr(tf_error(), "cannot hold [CLS], [SEP] and up to 99"));
    s.sep = 2;
    CHECK(tf_listops_check(&s) && strstr(tf_error(), "sep 2 must be 0 or 1"));
    CHECK(!strcmp(tf_listops_token(TF_LISTOPS_SEP), "[SEP]") && !strcmp(tf_listops_token(TF_LISTOPS_SEP + 1), "?"));
    int rows_checked = 0;
    for (uint64_t key = 0; key < 6; key++) {
        tf_subset sub = key % 2 ? TF_SUBSET_VAL : TF_SUBSET_TRAIN;
        tf_batch a, b;
        CHECK(!tf_loader_next(plain, ctx, sub, key, 4, &a) && !tf_loader_next(with, ctx, sub, key, 4, &b));
        tf_tensor *xa = tf_batch_get(&a, "input_ids"), *ma = tf_batch_get(&a, "attention_mask");
        tf_tensor *xb = tf_batch_get(&b, "input_ids"), *mb = tf_batch_get(&b, "attention_mask");
        CHECK(!memcmp(tf_i32(tf_batch_get(&a, "labels")), tf_i32(tf_batch_get(&b, "labels")), 4 * sizeof(int32_t)));
        int64_t Ta = xa->shape[1], Tb = xb->shape[1];
        int hi = 0;
        for (int r = 0; r < 4; r++) {
            int n = 0, nb = 0;
            for (int64_t t = 0; t < Ta; t++) n += tf_i32(ma)[r * Ta + t];
            for (int64_t t = 0; t < Tb; t++) nb += tf_i32(mb)[r * Tb + t];
            const int32_t *ra = tf_i32(xa) + r * Ta, *rb = tf_i32(xb) + r * Tb;
            CHECKF(nb == n + 1 && !memcmp(ra, rb, (size_t)n * sizeof *ra) && rb[n] == TF_LISTOPS_SEP &&
                       (n + 1 == Tb || rb[n + 1] == TF_LISTOPS_PAD),
                   "row %d of batch %d: %d tokens with [SEP] against %d", r, (int)key, nb, n);
            hi = nb > hi ? nb : hi, rows_checked++;
        }
        CHECKF(Tb % 8 == 0 && Tb >= hi && Tb < hi + 8, "batch %d long for rows up to %d", (int)Tb, hi);
        tf_ctx_reset(ctx);
    }
    CHECK(rows_checked == 24);
    tf_ctx_free(ctx);
    tf_loader_free(plain);
    tf_loader_free(with);
}

/* --listops-drop-end (LRA's inputs: its tokenizer keeps alphanumeric tokens
 * only): each example is the plain one without its "]" tokens, the same
 * expression (the lengths still count them: the same draws, answers and
 * operators), and the loader's rows follow; drop_end other than 0 or 1 is refused. */
TEST(listops_drop_end) {
    tf_listops_opts o = {20, 100, 6, 5, 3, 0, 0}, d = o;
    d.drop_end = 1;
    int32_t a[100], b[100];
    int ends = 0;
    for (int subset = 0; subset < 3; subset++)
        for (int64_t i = 0; i < 30; i++) {
            int na, nb, la, lb, k = 0;
            CHECKF(!tf_listops_example(&o, subset, i, a, 100, &na, &la) &&
                       !tf_listops_example(&d, subset, i, b, 100, &nb, &lb), "%s", tf_error());
            for (int t = 0; t < na; t++)
                if (a[t] != TF_LISTOPS_END) CHECK(k < nb && b[k++] == a[t]);
            CHECKF(k == nb && la == lb && nb < na,
                   "example %lld of subset %d: %d tokens kept of %d", (long long)i, subset, nb, na);
            ends += na - nb;
        }
    CHECKF(ends > 90 * 2, "%d \"]\" dropped from 90 expressions", ends);
    tf_loader *l = tf_listops_loader_new(&d, 200, 20, 100, 8);
    tf_ctx *ctx = tf_ctx_new(1);
    CHECKF(l && ctx, "%s", tf_error());
    for (uint64_t key = 0; key < 4; key++) {
        tf_batch x;
        CHECK(!tf_loader_next(l, ctx, key % 2 ? TF_SUBSET_VAL : TF_SUBSET_TRAIN, key, 4, &x));
        const tf_tensor *ids = tf_batch_get(&x, "input_ids");
        for (int64_t t = 0; t < tf_numel(ids); t++) CHECK(tf_i32(ids)[t] != TF_LISTOPS_END);
        tf_ctx_reset(ctx);
    }
    d.drop_end = 2;
    CHECK(tf_listops_check(&d) && strstr(tf_error(), "drop_end 2 must be 0 or 1"));
    tf_ctx_free(ctx);
    tf_loader_free(l);
}

/* The largest |difference| between logits (n,10) of examples [0, n) of
 * subset and each expression run alone and unpadded ([CLS] + its tokens, no
 * mask): what padding to the context must not change (-1: an error). */
static double unpadded_diff(const tf_bert *m, const tf_listops_opts *o, int subset, int64_t n, const float *logits) {
    double worst = 0;
    tf_ctx *ctx = tf_ctx_new(0);
    if (!ctx) return -1;
    tf_ctx_set_grad(ctx, 0);
    for (int64_t i = 0; i < n && worst >= 0; i++) {
        int32_t ids[64];
        int len, label;
        tf_tensor *x = NULL;
        tf_bert_outputs out;
        if (tf_listops_example(o, subset, i, ids + 1, 63, &len, &label) ||
            !(x = tf_tensor_new(ctx, TF_DTYPE_I32, 2, (int64_t[]){1, len + 1}, 0))) {  // (1,len+1)
            worst = -1;
            break;
        }
        ids[0] = TF_LISTOPS_CLS;
        memcpy(x->data, ids, (size_t)(len + 1) * sizeof *ids);
        if (tf_bert_run(ctx, m, &(tf_bert_inputs){.input_ids = x}, &out)) worst = -1;
        for (int k = 0; worst >= 0 && k < 10; k++) {
            double d = fabs((double)tf_f32(out.logits)[k] - logits[i * 10 + k]);  // (1,10) against (n,10)
            worst = d > worst ? d : worst;
        }
        tf_ctx_reset(ctx);
    }
    tf_ctx_free(ctx);
    return worst;
}

/* tformer eval --listops on run0 (full attention): the batched, padded count
 * equals the unpadded one-at-a-time count, the test set is not the validation set, and a
 * folder without listops.json is refused naming the file. */
static void check_test_scoring(const char *dir) {
    char path[512], args[1024], out[4096];
    snprintf(path, sizeof path, "%s/run0", dir);
    tf_listops_task_config c;
    CHECKF(tf_listops_settings_load(path, &c) == 0, "%s", tf_error());
    CHECK(c.min_len == 10 && c.max_len == 40 && c.max_depth == 4 && c.max_args == 4 && c.listops_seed == 1);
    tf_bert *m = tf_bert_load(path, &(tf_bert_load_opts){-1, 0, 0});
    CHECKF(m != NULL, "%s", tf_error());
    tf_listops_opts o = tf_listops_task_opts(&c);
    int64_t hits = -1, conf[100], diag = 0, total = 0;
    float logits[23 * 10];
    CHECKF(tf_listops_score(m, &o, 2, 0, 23, 5, 0, logits, &hits, conf) == 0, "%s", tf_error());
    for (int k = 0; k < 100; k++) total += conf[k], diag += k % 11 == 0 ? conf[k] : 0;
    CHECKF(total == 23 && diag == hits, "confusion sums to %lld, diagonal %lld, hits %lld", (long long)total,
           (long long)diag, (long long)hits);
    double d = unpadded_diff(m, &o, 2, 23, logits);
    CHECKF(d >= 0 && d < 1e-5, "batches of 5 padded to the context against one at a time unpadded: logits differ by %g %s",
           d, d < 0 ? tf_error() : "");
    int64_t hits8 = -1; /* batches padded to their longest row (rounded up to 8): the same answers */
    CHECKF(tf_listops_score(m, &o, 2, 0, 23, 5, 8, logits, &hits8, NULL) == 0, "%s", tf_error());
    d = unpadded_diff(m, &o, 2, 23, logits);
    CHECKF(d >= 0 && d < 1e-5 && hits8 == hits, "bucket 8: logits differ by %g, hits %lld against %lld", d,
           (long long)hits8, (long long)hits);
    int32_t a[64], b[64];
    int la, lb, ya, yb;
    CHECK(tf_listops_example(&o, 2, 0, a, 64, &la, &ya) == 0 && tf_listops_example(&o, 1, 0, b, 64, &lb, &yb) == 0);
    CHECK(la != lb || memcmp(a, b, (size_t)la * sizeof *a));
    tf_bert_free(m);
    snprintf(args, sizeof args, "eval --model %s --listops 23 --batch 5 --threads 1", path);
    int rc = test_run_cli("", args, out, sizeof out);
    char want[64];
    snprintf(want, sizeof want, "(%lld of 23 test expressions, listops_seed 1, lengths 11-39)", (long long)hits);
    CHECKF(rc == 0 && strstr(out, want) && strstr(out, "recall"), "rc %d, want %s\n%s", rc, want, out);
    snprintf(args, sizeof args, "eval --model %s --listops 5", dir);
    rc = test_run_cli("", args, out, sizeof out);
    CHECKF(rc != 0 && strstr(out, "config.json: No such file"), "rc %d\n%s", rc, out); /* not a model folder */
    snprintf(args, sizeof args, "eval --model %s --listops 5 --data-dir %s", path, dir);
    rc = test_run_cli("", args, out, sizeof out);
    CHECKF(rc == 2 && strstr(out, "no --data or --data-dir"), "rc %d\n%s", rc, out);
}

/* --listops-sep true: a run trains and scores (its folder says so, its
 * vocabulary has [SEP]); scoring a model with the other setting is refused.
 * --listops-drop-end true: a run trains, its folder says so, and it scores. */
static void check_sep_run(const char *dir, const char *common) {
    char args[1024], out[4096], path[512];
    snprintf(args, sizeof args, "%s --context 41 --listops-sep true --listops-bucket 8 --out %s/sep", common, dir);
    int rc = test_run_cli("", args, out, sizeof out);
    CHECKF(rc == 0 && strstr(out, "accuracy"), "rc %d\n%s", rc, out);
    snprintf(args, sizeof args, "eval --model %s/sep --listops 23 --batch 5 --threads 1", dir);
    rc = test_run_cli("", args, out, sizeof out);
    CHECKF(rc == 0 && strstr(out, "of 23 test expressions"), "rc %d\n%s", rc, out);
    tf_listops_task_config c;
    snprintf(path, sizeof path, "%s/sep", dir);
    CHECKF(tf_listops_settings_load(path, &c) == 0 && c.sep == 1, "%s", tf_error());
    tf_bert *with = tf_bert_load(path, NULL);
    snprintf(path, sizeof path, "%s/run0", dir);
    tf_bert *plain = tf_bert_load(path, NULL);
    CHECKF(with && plain && with->cfg.vocab_size == TF_LISTOPS_SEP + 1, "%s", tf_error());
    tf_listops_opts o = {c.min_len, c.max_len, c.max_depth, c.max_args, c.listops_seed, 0, 0};
    int64_t hits;
    CHECK(tf_listops_score(with, &o, 2, 0, 5, 5, 0, NULL, &hits, NULL) && strstr(tf_error(), "has [SEP]"));
    o.sep = 1;
    CHECK(tf_listops_score(plain, &o, 2, 0, 5, 5, 0, NULL, &hits, NULL) && strstr(tf_error(), "lacks [SEP]"));
    CHECKF(tf_listops_score(with, &o, 2, 0, 5, 5, 0, NULL, &hits, NULL) == 0, "%s", tf_error());
    tf_bert_free(with), tf_bert_free(plain);
    snprintf(args, sizeof args, "%s --context 40 --listops-drop-end true --out %s/noend", common, dir);
    rc = test_run_cli("", args, out, sizeof out);
    CHECKF(rc == 0 && strstr(out, "accuracy"), "rc %d\n%s", rc, out);
    snprintf(path, sizeof path, "%s/noend", dir);
    CHECKF(tf_listops_settings_load(path, &c) == 0 && c.drop_end == 1 && c.sep == 0, "%s", tf_error());
    snprintf(args, sizeof args, "eval --model %s/noend --listops 9 --batch 4 --threads 1", dir);
    rc = test_run_cli("", args, out, sizeof out);
    CHECKF(rc == 0 && strstr(out, "of 9 test expressions"), "rc %d\n%s", rc, out);
}

/* tformer train --arch listops: 3 steps with full, bigbird and nystrom
 * attention (nystrom with length bucketing); the settings it cannot use are errors. */
TEST(listops_train_smoke) {
    char dir[] = "/tmp/tformer_listops_XXXXXX", args[1024], out[4096];
    CHECK(mkdtemp(dir) != NULL);
    static const char *const kinds[] = {
        "--attention full",
        "--attention bigbird --window 4 --block-size 4 --global-tokens 1 --random-blocks 1",
        "--attention nystrom --landmarks 8 --listops-bucket 16",
    };
    const char *common = "train --arch listops --threads 1 --listops-min-len 10 --listops-max-len 40 --listops-depth 4 "
                         "--listops-args 4 --n-layer 1 --d-model 16 --n-head 2 --batch 4 --steps 3 --eval-every 3 "
                         "--eval-batches 1";
    for (int i = 0; i < 3; i++) {
        snprintf(args, sizeof args, "%s --context 40 %s --out %s/run%d", common, kinds[i], dir, i);
        int rc = test_run_cli("", args, out, sizeof out);
        CHECKF(rc == 0 && strstr(out, "accuracy"), "%s: rc %d\n%s", kinds[i], rc, out);
    }
    check_test_scoring(dir);
    check_sep_run(dir, common);
    static const struct {
        const char *extra, *expect;
    } bad[] = {
        {"--context 32", "context 32 cannot hold [CLS] and expressions of up to 39 tokens"},
        {"--context 40 --listops-sep true", "context 40 cannot hold [CLS], [SEP] and expressions of up to 39 tokens"},
        {"--context 44 --attention nystrom --landmarks 8", "context 44, to be a multiple of its 8 landmarks"},
        {"--context 40 --n-labels 3", "leave head, n_labels, pooler and problem unset"},
        {"--context 40 --attention nystrom --landmarks 8 --listops-bucket 12",
         "multiples of listops_bucket 12, to be multiples of its 8 landmarks"},
        {"--context 40 --listops-bucket -8", "--listops-bucket"},
        {"--context 40 --data x.txt", "generates its data"},
        {"--context 40 --attention nystrom --landmarks 8 --conv-kernel 4", "conv_kernel 4 must be 0 or odd"},
        {"--context 40 --conv-kernel 3", "attention full does not use conv_kernel (set to 3)"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        snprintf(args, sizeof args, "%s %s --out %s/bad", common, bad[i].extra, dir);
        int rc = test_run_cli("", args, out, sizeof out);
        CHECKF(rc != 0 && strstr(out, bad[i].expect), "%s: rc %d\n%s", bad[i].extra, rc, out);
    }
    test_rm_rf(dir);
}

/* ListOps' own defaults train: the context (2048) holds the default expressions (up to 2000 tokens) and
 * [CLS]; with BERT's 128 every run without --context was refused. Small sizes elsewhere, one step. */
TEST(listops_defaults_train) {
    char dir[] = "/tmp/tformer_listops_XXXXXX", args[512], out[4096];
    CHECK(mkdtemp(dir) != NULL);
    snprintf(args, sizeof args, "train --arch listops --threads 1 --listops-train 4 --listops-valid 2 --n-layer 1 "
             "--d-model 16 --n-head 2 --d-ff 32 --batch 2 --steps 1 --eval-batches 1 --out %s/run", dir);
    int rc = test_run_cli("", args, out, sizeof out);
    CHECKF(rc == 0 && strstr(out, "step 1/1") && strstr(out, "accuracy"), "rc %d\n%s", rc, out);
    test_rm_rf(dir);
}

/* Self-pretraining's batches (--listops-objective mlm): the plain loader's batch with about mask_prob of the
 * expression tokens labelled ([CLS] and padding never), 80% of those [MASK], the rest unchanged where not
 * labelled, and the same draw each time; with sep, [SEP] is never chosen either; with drop_end, no "]"
 * comes in as the random token. */
static void check_masking(int sep, int drop_end) {
    tf_listops_task_config c = tf_listops_task_config_default();
    c.min_len = 10, c.max_len = 40, c.max_depth = 4, c.max_args = 4, c.model.context = 40 + sep, c.sep = sep;
    c.drop_end = drop_end;
    c.model.n_layer = 1, c.model.d_model = 16, c.model.n_head = 2;
    tf_listops_opts o = tf_listops_task_opts(&c);
    tf_listops_task_config m = c;
    m.objective = TF_LISTOPS_MLM;
    char dir[] = "/tmp/tformer_lomask_XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    tf_task *t = tf_listops_task_new(&m, dir, 1);
    tf_loader *plain = tf_listops_loader_new(&o, c.n_train, c.n_valid, 40 + sep, 0);
    CHECKF(t && plain, "%s", tf_error());
    tf_ctx *ctx = tf_ctx_new(0);
    int64_t tokens = 0, chosen = 0, masked = 0, changed = 0, bad = 0, again = 0, seps = 0, ends = 0;
    for (uint64_t key = 0; key < 20; key++) {
        tf_batch b = {0}, p = {0}, b2 = {0};
        CHECKF(t->vt->batch(t, ctx, key % 2 ? TF_SUBSET_VAL : TF_SUBSET_TRAIN, key, 8, &b) == 0 &&
                   t->vt->batch(t, ctx, key % 2 ? TF_SUBSET_VAL : TF_SUBSET_TRAIN, key, 8, &b2) == 0 &&
                   tf_loader_next(plain, ctx, key % 2 ? TF_SUBSET_VAL : TF_SUBSET_TRAIN, key, 8, &p) == 0,
               "%s", tf_error());
        const int32_t *x = tf_i32(tf_batch_get(&b, "input_ids")), *y = tf_i32(tf_batch_get(&b, "labels"));
        const int32_t *x0 = tf_i32(tf_batch_get(&p, "input_ids")), *am = tf_i32(tf_batch_get(&p, "attention_mask"));
        int64_t n = tf_numel(tf_batch_get(&b, "labels"));
        CHECK(n == tf_numel(tf_batch_get(&p, "input_ids")));
        again += memcmp(x, tf_i32(tf_batch_get(&b2, "input_ids")), (size_t)n * 4) != 0 ||
                 memcmp(y, tf_i32(tf_batch_get(&b2, "labels")), (size_t)n * 4) != 0;
        for (int64_t i = 0; i < n; i++) {
            int expression = am[i] && x0[i] != TF_LISTOPS_CLS && x0[i] != TF_LISTOPS_SEP;
            seps += x0[i] == TF_LISTOPS_SEP, ends += x[i] == TF_LISTOPS_END;
            tokens += expression;
            if (y[i] == -100) {
                bad += x[i] != x0[i];
                continue;
            }
            bad += !expression || y[i] != x0[i];
            chosen++, masked += x[i] == TF_LISTOPS_MASK, changed += x[i] != x0[i];
        }
        tf_ctx_reset(ctx);
    }
    double share = (double)chosen / (double)tokens, mask_share = (double)masked / (double)chosen;
    CHECKF(bad == 0 && again == 0 && seps == (sep ? 20 * 8 : 0) && (drop_end ? ends == 0 : ends > 0),
           "%lld labels or inputs wrong, %lld batches drawn twice differ, %lld [SEP], %lld \"]\"", (long long)bad,
           (long long)again, (long long)seps, (long long)ends);
    CHECKF(share > 0.12 && share < 0.18 && mask_share > 0.72 && mask_share < 0.88 && changed > masked &&
               changed < chosen,
           "%lld of %lld tokens chosen (%.3f), %.3f of them [MASK], %lld changed", (long long)chosen,
           (long long)tokens, share, mask_share, (long long)changed);
    printf("    masking%s%s: %lld of %lld expression tokens chosen (%.3f), %.3f of those [MASK], %.3f another token\n",
           sep ? " (with [SEP])" : "", drop_end ? " (without \"]\")" : "", (long long)chosen, (long long)tokens, share, mask_share,
           (double)(changed - masked) / (double)chosen);
    tf_ctx_free(ctx);
    tf_loader_free(plain);
    tf_task_free(t);
    test_rm_rf(dir);
}

/* A classifier started from a masked-LM run (--listops-init) holds its encoder's weights (and `extra`, when
 * not NULL), a new pooler. */
static void check_started(const char *mlm_dir, const char *cls_dir, const char *extra) {
    tf_listops_task_config c = tf_listops_task_config_default();
    tf_fields f = {&tf_listops_task_config_table, &c};
    char path[1100];
    snprintf(path, sizeof path, "%s/%s", cls_dir, TF_LISTOPS_SETTINGS);
    CHECKF(tf_fields_load(&f, 1, path, 0) == 0, "%s", tf_error());
    snprintf(c.init, sizeof c.init, "%s", mlm_dir);
    tf_task *t = tf_listops_task_new(&c, cls_dir, 5);
    tf_bert *from = tf_bert_load(mlm_dir, NULL);
    CHECKF(t && from, "%s", tf_error());
    tf_params *ps = t->vt->params(t);
    const char *names[] = {"bert.embeddings.word_embeddings.weight", "bert.encoder.layer.0.attention.self.query.weight",
                           "bert.encoder.LayerNorm.weight", extra};
    for (int i = 0; i < 3 + (extra != NULL); i++) {
        tf_tensor *a = tf_params_get(ps, names[i]), *b = tf_params_get(from->params, names[i]);
        CHECKF(a && b && tf_numel(a) == tf_numel(b) && !memcmp(tf_f32(a), tf_f32(b), (size_t)tf_numel(a) * 4),
               "%s differs from the masked-LM run's", names[i]);
    }
    CHECK(tf_params_get(ps, "bert.pooler.dense.weight") && tf_params_get(ps, "classifier.weight"));
    CHECK(tf_params_get(from->params, "bert.pooler.dense.weight") == NULL);
    tf_bert_free(from);
    tf_task_free(t);
}

/* Self-pretraining: a masked-LM run, a classifier started from it (trained and scored), and the mistakes
 * named: the two together, another model, a classifier's folder, a missing one, scoring a masked LM. */
TEST(listops_self_pretraining) {
    check_masking(0, 0);
    check_masking(1, 0);
    check_masking(0, 1);
    char dir[] = "/tmp/tformer_lopre_XXXXXX", args[1024], out[4096];
    CHECK(mkdtemp(dir) != NULL);
    const char *common = "train --arch listops --threads 1 --listops-min-len 10 --listops-max-len 40 --listops-depth 4 "
                         "--listops-args 4 --context 40 --n-layer 1 --d-model 16 --n-head 2 --norm-first true "
                         "--pooling mean --batch 4 --steps 3 --eval-every 3 --eval-batches 1";
    static const char *const kinds[] = {
        "--attention nystrom --landmarks 8 --listops-bucket 16 --conv-kernel 3",
        "--attention bigbird --window 4 --block-size 4 --global-tokens 1 --random-blocks 1 --rope interleaved",
        "--attention full", /* last: the folders mlm and cls below are its */
    };
    int rc = 0;
    char mlm[512], cls[512];
    snprintf(mlm, sizeof mlm, "%s/mlm", dir), snprintf(cls, sizeof cls, "%s/cls", dir);
    for (int i = 0; i < 3; i++) { /* every attention kind's settings read back from the folder as the flags give them */
        snprintf(args, sizeof args, "%s %s --listops-objective mlm --out %s/mlm", common, kinds[i], dir);
        rc = test_run_cli("", args, out, sizeof out);
        CHECKF(rc == 0 && strstr(out, "mlm_accuracy"), "%s: rc %d\n%s", kinds[i], rc, out);
        snprintf(args, sizeof args, "%s %s --listops-init %s/mlm --dropout 0 --out %s/cls", common, kinds[i], dir, dir);
        rc = test_run_cli("", args, out, sizeof out);
        CHECKF(rc == 0 && strstr(out, "accuracy"), "%s: rc %d\n%s", kinds[i], rc, out);
        if (i == 0) { /* Nystrom's convolution (a tensor per layer) carried over, and a model without it refused */
            check_started(mlm, cls, "bert.encoder.layer.0.attention.self.conv.weight");
            snprintf(args, sizeof args, "%s --attention nystrom --landmarks 8 --listops-bucket 16 --listops-init %s "
                     "--out %s/bad", common, mlm, dir);
            rc = test_run_cli("", args, out, sizeof out);
            CHECKF(rc != 0 && strstr(out, "its model has conv_kernel=3, the flags do not"), "rc %d\n%s", rc, out);
            snprintf(args, sizeof args, "%s --attention nystrom --landmarks 8 --listops-bucket 16 --conv-kernel 5 "
                     "--listops-init %s --out %s/bad", common, mlm, dir);
            rc = test_run_cli("", args, out, sizeof out);
            CHECKF(rc != 0 && strstr(out, "its model has conv_kernel=3"), "rc %d\n%s", rc, out);
        }
        if (i < 2) {
            snprintf(args, sizeof args, "%s/mlm", dir), test_rm_rf(args);
            snprintf(args, sizeof args, "%s/cls", dir), test_rm_rf(args);
        }
    }
    check_started(mlm, cls, NULL);
    snprintf(args, sizeof args, "eval --model %s/cls --listops 7 --batch 4 --threads 1", dir);
    rc = test_run_cli("", args, out, sizeof out);
    CHECKF(rc == 0 && strstr(out, "of 7 test expressions"), "rc %d\n%s", rc, out);
    static const struct {
        const char *extra, *expect;
    } bad[] = {
        {"--listops-objective mlm --listops-init %s/mlm", "starts a classifier: not with listops_objective mlm"},
        {"--d-model 32 --listops-init %s/mlm", "its model has d_model=16"},
        {"--attention nystrom --landmarks 8 --listops-bucket 16 --conv-kernel 3 --listops-init %s/mlm",
         "the flags give conv_kernel=3, its model does not"},
        {"--listops-init %s/cls", "a run of listops_objective classify, not mlm"},
        {"--listops-init %s/none", "not a ListOps run folder"},
        {"--listops-init /dev/null", "not a ListOps run folder"}, /* not a folder at all */
        {"--context 41 --listops-sep true --listops-init %s/mlm", "was trained with listops_sep false"},
        {"--listops-drop-end true --listops-init %s/mlm", "was trained with listops_drop_end false"},
        {"--listops-objective guess", "--listops-objective"},
        {"--listops-mask-prob 1.5", "--listops-mask-prob"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        char extra[600];
        snprintf(extra, sizeof extra, bad[i].extra, dir);
        snprintf(args, sizeof args, "%s %s --out %s/bad", common, extra, dir);
        rc = test_run_cli("", args, out, sizeof out);
        CHECKF(rc != 0 && strstr(out, bad[i].expect), "%s: rc %d\n%s", extra, rc, out);
    }
    snprintf(args, sizeof args, "eval --model %s/mlm --listops 5", dir);
    rc = test_run_cli("", args, out, sizeof out);
    CHECKF(rc != 0 && strstr(out, "not a ListOps classifier"), "rc %d\n%s", rc, out);
    test_rm_rf(dir);
}
