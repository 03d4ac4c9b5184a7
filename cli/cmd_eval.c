/* tformer eval: a GPT's mean next-token loss and perplexity on text files,
 * a ViT's accuracy on a split of an idx folder (--data-dir, as classify), or
 * a ListOps classifier's accuracy on its test expressions (--listops N). */
#include <math.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "cli.h"

enum { MODEL, DATA, THREADS, DATA_DIR, SPLIT, HFLIP_TTA, LISTOPS, BATCH, PRECISION, JSON, TOKENIZER };
const cli_flag cmd_eval_flags[] = {
    [MODEL] = {"model", CLI_STRING, "DIR", NULL, "a run folder (GPT, ViT, Swin or ListOps), or a Hugging Face GPT-2 folder with its tokenizer"},
    [DATA] = {"data", CLI_LIST, "FILE...", "", "text files, read in windows of the model's context (required for a GPT)"},
    [THREADS] = CLI_THREADS_ROW,
    [DATA_DIR] = {"data-dir", CLI_STRING, "DIR", "", "a ViT folder instead: the accuracy on this idx folder's --split"},
    [SPLIT] = {"split", CLI_STRING, "NAME", "t10k", "with --data-dir: t10k (the test set) or train"},
    [HFLIP_TTA] = CLI_HFLIP_TTA_ROW,
    [LISTOPS] = {"listops", CLI_INT, "N", "0",
                 "a ListOps run folder instead: the accuracy on its first N test expressions (LRA: 2000), drawn "
                 "apart from training and validation with the run's settings (listops.json)"},
    [BATCH] = {"batch", CLI_INT, "N", "16", "with --listops: expressions per forward pass"},
    [PRECISION] = CLI_PRECISION_ROW,
    [JSON] = CLI_JSON_ROW,
    [TOKENIZER] = CLI_GPT_TOKENIZER_ROW,
    CLI_END,
};

/* The recall of answer k (the row of its true count), or -1 for an answer never true. */
static double recall(const tf_test_result *r, int k) {
    int64_t row = 0;
    for (int i = 0; i < r->n_classes; i++) row += r->confusion[k * r->n_classes + i];
    return row ? (double)r->confusion[k * r->n_classes + k] / (double)row : -1;
}

/* --listops's scores as one JSON object (docs/json.md); a recall is null for an answer never true. */
static void test_json(const cli_verb *v, const tf_test_result *r) {
    cJSON *j = cli_json_object(v, NULL, NULL), *rec;
    cli_json_num(v, j, "accuracy", (double)r->correct / (double)r->total);
    cli_json_num(v, j, "correct", (double)r->correct), cli_json_num(v, j, "total", (double)r->total);
    for (int i = 0; i < r->n_settings; i++) cli_json_num(v, j, r->settings[i].key, r->settings[i].value);
    rec = cli_json_array(v, j, "recall");
    for (int k = 0; k < r->n_classes; k++) {
        double x = recall(r, k);
        if (x >= 0) cli_json_num(v, rec, NULL, x);
        else cli_json_str(v, rec, NULL, NULL);
    }
    cli_json_print(v, j);
}

/* --listops: a run folder's own test set (its settings drew it), its accuracy and where the errors fall. */
static int eval_test(const cli_args *a, int64_t n) {
    const char *dir = a->v[MODEL].text;
    if (a->v[BATCH].i < 1 || a->v[BATCH].i > CLI_BATCH_MAX)
        cli_usage_error(a, "--batch expects an integer in [1,%d], got %lld", CLI_BATCH_MAX, a->v[BATCH].i);
    tf_precision precision = cli_precision(a, PRECISION);
    tf_model *m = tf_model_load(dir, &(tf_model_opts){.precision = precision});
    if (!m) cli_die(a->verb, tf_error());
    cli_say(a->verb, &(cli_said){NULL, dir, NULL, 0, precision, NULL});
    tf_test_result r;
    if (tf_model_test(m, n, (int)a->v[BATCH].i, &r)) cli_die(a->verb, tf_error());
    if (a->v[JSON].given) {
        test_json(a->verb, &r);
    } else {
        printf("accuracy %.4f (%lld of %lld %s, %s)\n", (double)r.correct / (double)r.total, (long long)r.correct,
               (long long)r.total, r.items, r.drawn);
        printf("per answer (true 0-%d): recall", r.n_classes - 1);
        for (int k = 0; k < r.n_classes; k++) {
            double x = recall(&r, k);
            printf(x >= 0 ? " %.2f" : " -", x >= 0 ? x : 0.0);
        }
        printf("\n");
    }
    tf_test_result_free(&r), tf_model_free(m);
    return 0;
}

int cmd_eval(const cli_args *a) {
    tf_set_threads(cli_threads(&a->v[THREADS]));
    tf_precision precision = cli_precision(a, PRECISION);
    const char *dir = a->v[DATA_DIR].text && *a->v[DATA_DIR].text ? a->v[DATA_DIR].text : NULL;
    if (dir && a->v[DATA].n) cli_usage_error(a, "give --data (a GPT) or --data-dir (a ViT), not both");
    if ((dir || a->v[LISTOPS].i > 0) && a->v[TOKENIZER].given)
        cli_usage_error(a, "--tokenizer goes with a GPT (--data), not --data-dir or --listops");
    if (a->v[LISTOPS].i > 0) {
        if (dir || a->v[DATA].n) cli_usage_error(a, "--listops scores a ListOps run folder: no --data or --data-dir");
        if (a->v[HFLIP_TTA].given) cli_usage_error(a, "--hflip-tta goes with an image classifier (--data-dir), not --listops");
        return eval_test(a, a->v[LISTOPS].i);
    }
    if (dir) {
        const char *split = a->v[SPLIT].text;
        if (strcmp(split, "t10k") && strcmp(split, "train")) cli_usage_error(a, "--split expects t10k or train, got '%s'", split);
        cli_score_images(a->verb, a->v[MODEL].text, dir, split, NULL, 256, a->v[HFLIP_TTA].given, a->v[JSON].given,
                         precision);
        return 0;
    }
    if (a->v[HFLIP_TTA].given) cli_usage_error(a, "--hflip-tta goes with an image classifier (--data-dir)");
    if (!a->v[DATA].n) cli_usage_error(a, "missing --data (see tformer eval --help)");
    tf_model *m = cli_load_lm(a->verb, a->v[MODEL].text, &a->v[TOKENIZER], precision);
    double loss;
    int64_t n;
    if (tf_model_text_loss(m, (const char *const *)a->v[DATA].list, a->v[DATA].n, &loss, &n)) cli_die(a->verb, tf_error());
    if (a->v[JSON].given) {
        cJSON *j = cli_json_object(a->verb, NULL, NULL), *files = cli_json_array(a->verb, j, "data");
        for (int i = 0; i < a->v[DATA].n; i++) cli_json_str(a->verb, files, NULL, a->v[DATA].list[i]);
        cli_json_num(a->verb, j, "loss", loss), cli_json_num(a->verb, j, "perplexity", exp(loss));
        cli_json_num(a->verb, j, "tokens", (double)n);
        cli_json_print(a->verb, j);
    } else printf("loss %.4f perplexity %.3f over %lld tokens\n", loss, exp(loss), (long long)n);
    tf_model_free(m);
    return 0;
}
