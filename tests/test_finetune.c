/* BERT fine-tuning: each reader's errors name file:line; tagging and span
 * labels land on the right pieces ("playing" -> play ##ing: the tag on
 * play, -100 on ##ing; answers by character offset, cut-away answers on
 * [CLS]); validation batches cover the set in order; a tiny random BERT
 * learns a synthetic classification set; the CLI fine-tunes and predicts. */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "test.h"

static const char *const VOCAB[] = {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "good", "bad", "the", "a", "cat",
                                    "dog", "is", "was", "very", "not", "play", "##ing", "who", ".", ",",
                                    "w0", "w1", "w2", "w3", "w4", "w5", "w6", "w7", "w8", "w9"};
#define N_VOCAB (int)(sizeof VOCAB / sizeof *VOCAB)

/* A temp file holding text; path is filled in. */
static int temp_text(char *path, const char *text) { return test_temp_file(path) || test_write_text(path, text) ? -1 : 0; }

/* A random BERT folder (config.json, model.safetensors, vocab.txt) in a new temp dir. */
static int tiny_bert(char *dir) {
    if (!mkdtemp(dir)) return -1;
    char path[256];
    snprintf(path, sizeof path, "%s/vocab.txt", dir);
    FILE *f = fopen(path, "w");
    if (!f) return -1;
    for (int i = 0; i < N_VOCAB; i++) fprintf(f, "%s\n", VOCAB[i]);
    if (fclose(f)) return -1;
    tf_bert_config c = tf_bert_config_default(N_VOCAB, 32, 2, 2, 32);
    c.dropout = c.attn_dropout = 0.0f, c.head = TF_BERT_MLM;
    tf_bert *m = tf_bert_new(&c, 3);
    int rc = !m || tf_bert_save(m, dir);
    tf_bert_free(m);
    return rc ? -1 : 0;
}

static void rm_dir(const char *dir) {
    char cmd[512];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd)) fprintf(stderr, "cannot remove %s\n", dir);
}

/* ---------------------------------------------------------------- readers */

/* Reading text as kind fails with a message holding "<file>:<want>". */
static int fails_with(tf_finetune_kind kind, const char *text, const char *want) {
    char path[] = "/tmp/tformer_ft_XXXXXX", expect[256];
    if (temp_text(path, text)) return 0;
    tf_finetune_set s;
    int rc = tf_finetune_read(kind, path, 1, &s);
    snprintf(expect, sizeof expect, "%s:%s", path, want);
    int ok = rc == -1 && strstr(tf_error(), expect);
    if (!ok) fprintf(stderr, "    expected \"%s\", got rc %d \"%s\"\n", expect, rc, rc ? tf_error() : "");
    if (!rc) tf_finetune_set_free(&s);
    unlink(path);
    return ok;
}

TEST(finetune_reader_errors_name_file_and_line) {
    CHECK(fails_with(TF_FINETUNE_CLASSIFY, "pos\tgood\nno tab here\n", "2: no tab"));
    CHECK(fails_with(TF_FINETUNE_CLASSIFY, "pos\tgood\npos\ta\tb\n", "2: more than 2 tab-separated fields"));
    CHECK(fails_with(TF_FINETUNE_CLASSIFY, "pos\tgood\n\tbad\n", "2: empty label"));
    CHECK(fails_with(TF_FINETUNE_PAIRS, "yes\ta\tb\nyes\tonly a\n", "2: 2 tab-separated fields, expected 3"));
    CHECK(fails_with(TF_FINETUNE_TAG, "the\tO\ncat\tB\n\ndog\n", "4: no tab"));
    CHECK(fails_with(TF_FINETUNE_TAG, "the\tO\ncat\t\n", "2: empty tag"));
    CHECK(fails_with(TF_FINETUNE_SPAN, "{\"context\": \"a cat\", \"question\": \"q\", \"answer_start\": 2, \"answer\": \"cat\"}\n{oops\n",
                     "2: not a JSON object"));
    CHECK(fails_with(TF_FINETUNE_SPAN, "{\"context\": \"a cat\", \"question\": \"q\", \"answer_start\": 1, \"answer\": \"cat\"}\n",
                     "1: the answer \"cat\" is not in the context at answer_start 1"));
    /* a validation label the training file lacks */
    char train[] = "/tmp/tformer_ft_XXXXXX", valid[] = "/tmp/tformer_ft_XXXXXX";
    CHECK(temp_text(train, "pos\tgood\nneg\tbad\n") == 0 && temp_text(valid, "pos\tgood\nmaybe\tw1\n") == 0);
    tf_finetune_set ts, vs;
    char **names;
    int n;
    CHECK(tf_finetune_read(TF_FINETUNE_CLASSIFY, train, 1, &ts) == 0 && tf_finetune_read(TF_FINETUNE_CLASSIFY, valid, 1, &vs) == 0);
    CHECK(tf_finetune_labels(&ts, &names, &n) == 0 && n == 2 && !strcmp(names[0], "neg") && !strcmp(names[1], "pos"));
    char expect[128];
    snprintf(expect, sizeof expect, "%s:2: label \"maybe\"", valid);
    CHECKF(tf_finetune_check_labels(&vs, valid, names, n) == -1 && strstr(tf_error(), expect), "got %s", tf_error());
    tf_finetune_labels_free(names, n), tf_finetune_set_free(&ts), tf_finetune_set_free(&vs);
    unlink(train), unlink(valid);
}

/* ---------------------------------------------------------------- alignment */

static tf_tokenizer *vocab_tokenizer(char *dir) {
    return tiny_bert(dir) ? NULL : tf_tokenizer_load(dir);
}

TEST(finetune_tag_labels_on_first_pieces) {
    char dir[] = "/tmp/tformer_ftm_XXXXXX";
    tf_tokenizer *tok = vocab_tokenizer(dir);
    CHECK(tok);
    const char *text = "the\tO\ncat\tB-X\nplaying\tI-X\n";
    tf_finetune_set s;
    tf_finetune_data d;
    char *names[] = {"B-X", "I-X", "O"};
    CHECK(tf_finetune_parse(TF_FINETUNE_TAG, text, strlen(text), "t", 1, &s) == 0 && s.n == 1);
    CHECK(tf_finetune_encode(tok, &s, names, 3, 32, &d) == 0);
    static const int32_t ids[] = {2, 7, 9, 15, 16, 3}, labels[] = {-100, 2, 0, 1, -100, -100};
    CHECKF(d.ex[0].len == 6, "len %d", d.ex[0].len);
    for (int i = 0; i < 6; i++) CHECKF(d.ex[0].ids[i] == ids[i] && d.ex[0].tok_labels[i] == labels[i], "position %d", i);
    tf_finetune_data_free(&d);
    CHECK(tf_finetune_encode(tok, &s, names, 3, 8, &d) == 0); /* max_len 8 fits */
    CHECK(d.n_truncated == 0);
    tf_finetune_data_free(&d);
    tf_finetune_set_free(&s);
    tf_tokenizer_free(tok);
    rm_dir(dir);
}

TEST(finetune_span_positions_by_character_offset) {
    char dir[] = "/tmp/tformer_ftm_XXXXXX";
    tf_tokenizer *tok = vocab_tokenizer(dir);
    CHECK(tok);
    /* "é" is two bytes but one character: the answer starts at character 12, byte 13 */
    const char *text = "{\"context\": \"a caté dog, playing w1\", \"question\": \"who\", \"answer_start\": 12, "
                       "\"answer\": \"playing\"}\n"
                       "{\"context\": \"w0 w1 w2 w3 w4 w5 w6 w7 w8 w9 the cat\", \"question\": \"who\", \"answer_start\": 30, "
                       "\"answer\": \"the cat\"}\n";
    tf_finetune_set s;
    tf_finetune_data d;
    CHECK(tf_finetune_parse(TF_FINETUNE_SPAN, text, strlen(text), "s", 1, &s) == 0 && s.n == 2);
    CHECK(s.ex[0].answer_off == 13 && s.ex[0].answer_len == 7);
    CHECK(tf_finetune_encode(tok, &s, NULL, 0, 32, &d) == 0);
    /* [CLS] who [SEP] a [UNK] dog , play ##ing w1 [SEP] */
    const tf_finetune_encoded *e = &d.ex[0];
    CHECKF(e->start == 7 && e->end == 8 && e->ids[7] == 15 && e->ids[8] == 16, "start %d end %d", e->start, e->end);
    CHECK(e->types[2] == 0 && e->types[3] == 1 && e->ids[e->len - 1] == 3);
    CHECK(d.ex[1].start == 13 && d.ex[1].end == 14 && d.n_answers_lost == 0);
    tf_finetune_data_free(&d);
    CHECK(tf_finetune_encode(tok, &s, NULL, 0, 14, &d) == 0); /* the second answer cut away: [CLS] */
    CHECKF(d.ex[1].start == 0 && d.ex[1].end == 0 && d.n_answers_lost == 1 && d.n_truncated == 1 && d.ex[1].len == 14,
           "start %d lost %d truncated %d", d.ex[1].start, d.n_answers_lost, d.n_truncated);
    tf_finetune_data_free(&d);
    tf_finetune_set_free(&s);
    tf_tokenizer_free(tok);
    rm_dir(dir);
}

/* A question over half the room beside a context longer than the whole room (found by fuzz_data:
 * the question's share was computed as room - context, below zero). */
TEST(finetune_span_long_question_and_longer_context_fit) {
    char dir[] = "/tmp/tformer_ftm_XXXXXX";
    tf_tokenizer *tok = vocab_tokenizer(dir);
    CHECK(tok);
    const char *text = "{\"context\": \"w0 w1 w2 w3 w4 w5 w6 w7 w8 w9 w0 w1\", \"question\": \"w0 w1 w2 w3 w4 w5 w6 w7\", "
                       "\"answer_start\": 3, \"answer\": \"w1\"}\n"
                       "{\"context\": \"w8 w9\", \"question\": \"w0 w1 w2 w3 w4 w5 w6 w7\", \"answer_start\": 3, "
                       "\"answer\": \"w9\"}\n";
    tf_finetune_set s;
    tf_finetune_data d;
    CHECK(tf_finetune_parse(TF_FINETUNE_SPAN, text, strlen(text), "s", 1, &s) == 0 && s.n == 2);
    CHECK(tf_finetune_encode(tok, &s, NULL, 0, 10, &d) == 0);
    /* room 7: the first keeps half of it for the question (3) and the context's first 4; the second
     * keeps the whole context (2) and 5 of the question */
    const tf_finetune_encoded *a = &d.ex[0], *b = &d.ex[1];
    CHECKF(a->len == 10 && a->ids[4] == 3 && a->types[5] == 1 && a->ids[9] == 3, "len %d", a->len);
    CHECKF(a->start == 6 && a->end == 6, "start %d end %d", a->start, a->end);
    CHECKF(b->len == 10 && b->ids[6] == 3 && b->types[7] == 1 && b->start == 8 && b->end == 8, "len %d start %d",
           b->len, b->start);
    CHECK(d.n_truncated == 2 && d.n_answers_lost == 0);
    tf_finetune_data_free(&d);
    tf_finetune_set_free(&s);
    tf_tokenizer_free(tok);
    rm_dir(dir);
}

/* ---------------------------------------------------------------- learning */

/* Sentences of filler words holding "good" (label pos) or "bad" (neg). */
static int write_sentiment(const char *path, int n, uint64_t seed) {
    FILE *f = fopen(path, "w");
    if (!f) return -1;
    for (int i = 0; i < n; i++) {
        seed = seed * 6364136223846793005ull + 1442695040888963407ull;
        int pos = (seed >> 33) & 1, k = (int)(seed >> 40) % 4;
        fprintf(f, "%s\tw%d w%d %s w%d\n", pos ? "pos" : "neg", k, (k + 3) % 10, pos ? "good" : "bad", (k + 5) % 10);
    }
    return fclose(f);
}

TEST(finetune_classifier_learns_and_validation_in_order) {
    char dir[] = "/tmp/tformer_ftm_XXXXXX", run[] = "/tmp/tformer_ftr_XXXXXX";
    char train[] = "/tmp/tformer_ft_XXXXXX", valid[] = "/tmp/tformer_ft_XXXXXX";
    CHECK(tiny_bert(dir) == 0 && mkdtemp(run) && !test_temp_file(train) && !test_temp_file(valid));
    CHECK(write_sentiment(train, 200, 1) == 0 && write_sentiment(valid, 40, 2) == 0);
    tf_finetune_config c = tf_finetune_config_default();
    tf_task *t = tf_finetune_task_new(&c, dir, train, valid, run, 0, 5);
    CHECK(t);
    const tf_finetune_data *va = tf_finetune_task_data(t, TF_SUBSET_VAL);
    tf_ctx *ctx = tf_ctx_new(0);
    tf_batch b = {0};
    CHECK(t->vt->batch(t, ctx, TF_SUBSET_VAL, 1, 8, &b) == 0); /* validation draw 1: examples 8..15 */
    tf_tensor *y = tf_batch_get(&b, "labels"), *x = tf_batch_get(&b, "input_ids");
    for (int r = 0; r < 8; r++) CHECK(tf_i32(y)[r] == va->ex[8 + r].label && tf_i32(x)[r * x->shape[1] + 1] == va->ex[8 + r].ids[1]);
    tf_ctx_free(ctx);
    tf_train_config tc = tf_train_config_default();
    tc.steps = 30, tc.batch = 16, tc.lr = 5e-3f, tc.min_lr = 1e-4f, tc.warmup = 3, tc.eval_every = 30, tc.eval_batches = 3;
    CHECK(tf_train(&tc, t, run, 0, NULL, NULL, NULL) == 0);
    tf_finetune_prediction p[40];
    tf_finetune_metrics m;
    CHECK(va->n == 40 && tf_finetune_predict(tf_finetune_task_model(t), va, 16, 30, p) == 0);
    CHECK(tf_finetune_score(va, p, 2, &m) == 0);
    printf("    valid accuracy %.3f, macro-F1 %.3f\n", m.accuracy, m.macro_f1);
    CHECKF(m.accuracy > 0.9 && m.n == 40, "accuracy %.3f", m.accuracy);
    int64_t sum = 0;
    for (int i = 0; i < 4; i++) sum += m.confusion[i];
    CHECK(sum == 40);
    tf_finetune_metrics_free(&m);
    tf_task_free(t);
    rm_dir(dir), rm_dir(run), unlink(train), unlink(valid);
}

/* ---------------------------------------------------------------- the CLI */

/* tformer ARGS: its status, and stdout and stderr in out, less the start-up line (test_run_cli). */
static int run_cli(const char *args, char *out, size_t n) {
    /* fontconfig, which cairo loads for text, keeps its caches until exit (tests/lsan.supp) */
    return test_run_cli("LSAN_OPTIONS=suppressions=tests/lsan.supp", args, out, n);
}

TEST(finetune_cli_help_train_and_predict) {
    static char out[16384];
    char args[1536];
    CHECKF(run_cli("finetune --help", out, sizeof out) == 0 && strstr(out, "--task classify|pairs|tag|span") &&
               strstr(out, "--lr X") && strstr(out, "--max-len N"), "%s", out);
    CHECK(run_cli("predict --help", out, sizeof out) == 0 && strstr(out, "--model DIR"));
    char dir[] = "/tmp/tformer_ftm_XXXXXX", run[] = "/tmp/tformer_ftr_XXXXXX";
    char train[] = "/tmp/tformer_ft_XXXXXX", valid[] = "/tmp/tformer_ft_XXXXXX";
    CHECK(tiny_bert(dir) == 0 && mkdtemp(run) && !test_temp_file(train) && !test_temp_file(valid));
    CHECK(write_sentiment(train, 200, 3) == 0 && write_sentiment(valid, 30, 4) == 0);
    snprintf(args, sizeof args, "finetune --model %s --train %s --valid %s --out %s --steps 30 --batch 16 --lr 5e-3 "
             "--min-lr 1e-4 --warmup 3 --eval-every 15 --threads 1", dir, train, valid, run);
    CHECKF(run_cli(args, out, sizeof out) == 0, "%s", out);
    printf("%s", out);
    CHECKF(strstr(out, "train: 200 examples, 0 truncated") && strstr(out, "valid: accuracy"), "%s", out);
    /* what it starts (as train's line) and where it saved */
    char said[600];
    snprintf(said, sizeof said, " parameters, vocabulary 30; data %s (", train);
    CHECKF(strstr(out, "tformer finetune: bert, ") && strstr(out, said), "%s", out);
    snprintf(said, sizeof said, " kB), %s (", valid);
    CHECKF(strstr(out, said), "%s", out);
    snprintf(said, sizeof said, "saved to %s/: best/, checkpoint.safetensors, config.json, confusion.png, ", run);
    CHECKF(strstr(out, said) && strstr(out, "metrics.json"), "%s", out);
    char path[256];
    struct stat st;
    snprintf(path, sizeof path, "%s/confusion.png", run);
    CHECK(stat(path, &st) == 0 && st.st_size > 1000);
    snprintf(path, sizeof path, "%s/metrics.json", run);
    size_t mlen;
    char *metrics = test_slurp(path, &mlen);
    CHECK(metrics && strstr(metrics, "\"macro_f1\"") && strstr(metrics, "\"confusion_matrix\""));
    free(metrics);
    snprintf(args, sizeof args, "predict --model %s < /dev/null", run);
    CHECKF(run_cli(args, out, sizeof out) != 0 && strstr(out, "<stdin>: no examples"), "%s", out);
    char inputs[] = "/tmp/tformer_ft_XXXXXX";
    CHECK(temp_text(inputs, "w1 good w2\nw3 w4 bad w0\n") == 0);
    snprintf(args, sizeof args, "predict --model %s --threads 1 < %s", run, inputs);
    CHECKF(run_cli(args, out, sizeof out) == 0, "%s", out);
    printf("    predict: %s", out);
    CHECKF(!strncmp(out, "pos\t", 4) && strstr(out, "\nneg\t"), "%s", out);
    /* --json: one object per input line (JSON Lines), read by Python's json module, the text's figures */
    snprintf(args, sizeof args, "%s predict --model %s --threads 1 --json < %s | python3 -c \"import json, sys; "
             "rows = [json.loads(l) for l in sys.stdin]; want = [l.split() for l in sys.argv[1].splitlines()]; "
             "assert [[r['label'], '%%.4f' %% r['probability']] for r in rows] == want, (rows, want)\" '%.200s'",
             test_tformer_bin(), run, inputs, out);
    CHECKF(system(args) == 0, "%s", args);
    rm_dir(dir), rm_dir(run), unlink(train), unlink(valid), unlink(inputs);
}
