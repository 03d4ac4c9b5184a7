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

/* --listops's scores as one JSON object (docs/json.md); a recall is null for an answer never true. */
static void listops_json(const cli_verb *v, const tf_listops_task_config *c, int64_t hits, int64_t n, const int64_t *conf) {
    cJSON *j = cli_json_object(v, NULL, NULL), *rec;
    cli_json_num(v, j, "accuracy", (double)hits / (double)n);
    cli_json_num(v, j, "correct", (double)hits), cli_json_num(v, j, "total", (double)n);
    cli_json_num(v, j, "listops_seed", (double)c->listops_seed);
    cli_json_num(v, j, "min_length", c->min_len + 1), cli_json_num(v, j, "max_length", c->max_len - 1);
    rec = cli_json_array(v, j, "recall");
    for (int k = 0; k < 10; k++) {
        int64_t row = 0;
        for (int i = 0; i < 10; i++) row += conf[k * 10 + i];
        if (row) cli_json_num(v, rec, NULL, (double)conf[k * 10 + k] / (double)row);
        else cli_json_str(v, rec, NULL, NULL);
    }
    cli_json_print(v, j);
}

/* --listops: the run's settings, its model, the test set's accuracy and where the errors fall. */
static int eval_listops(const cli_args *a, int64_t n) {
    const char *dir = a->v[MODEL].text;
    if (a->v[BATCH].i < 1 || a->v[BATCH].i > CLI_BATCH_MAX)
        cli_usage_error(a, "--batch expects an integer in [1,%d], got %lld", CLI_BATCH_MAX, a->v[BATCH].i);
    tf_listops_task_config c;
    if (tf_listops_settings_load(dir, &c)) cli_die(a->verb, tf_error());
    tf_bert *m = tf_bert_load(dir, &(tf_bert_load_opts){-1, 0, 0});
    if (!m) cli_die(a->verb, tf_error());
    tf_precision precision = cli_precision(a, PRECISION);
    cli_set_precision(a->verb, m->params, precision);
    cli_say(a->verb, &(cli_said){NULL, dir, NULL, 0, precision, NULL});
    tf_listops_opts o = tf_listops_task_opts(&c);
    int64_t hits, conf[100];
    if (tf_listops_score(m, &o, 2, 0, n, (int)a->v[BATCH].i, c.bucket, NULL, &hits, conf)) cli_die(a->verb, tf_error());
    if (a->v[JSON].given) return listops_json(a->verb, &c, hits, n, conf), tf_bert_free(m), 0;
    printf("accuracy %.4f (%lld of %lld test expressions, listops_seed %llu, lengths %d-%d)\n",
           (double)hits / (double)n, (long long)hits, (long long)n, (unsigned long long)c.listops_seed, c.min_len + 1,
           c.max_len - 1);
    printf("per answer (true 0-9): recall");
    for (int k = 0; k < 10; k++) {
        int64_t row = 0;
        for (int j = 0; j < 10; j++) row += conf[k * 10 + j];
        printf(row ? " %.2f" : " -", row ? (double)conf[k * 10 + k] / (double)row : 0.0);
    }
    printf("\n");
    tf_bert_free(m);
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
        return eval_listops(a, a->v[LISTOPS].i);
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
    tf_tokenizer *tok;
    tf_gpt *m = cli_load_model(a->verb, a->v[MODEL].text, a->v[TOKENIZER].text, &tok);
    cli_check_weights(a->verb, a->v[MODEL].text, m);
    cli_set_precision(a->verb, m->params, precision);
    cli_say(a->verb, &(cli_said){NULL, a->v[MODEL].text, tok, a->v[TOKENIZER].given,
                                 precision, NULL});
    double loss;
    int64_t n;
    if (tf_gpt_evaluate(m, tok, (const char *const *)a->v[DATA].list, a->v[DATA].n, &loss, &n)) cli_die(a->verb, tf_error());
    if (a->v[JSON].given) {
        cJSON *j = cli_json_object(a->verb, NULL, NULL), *files = cli_json_array(a->verb, j, "data");
        for (int i = 0; i < a->v[DATA].n; i++) cli_json_str(a->verb, files, NULL, a->v[DATA].list[i]);
        cli_json_num(a->verb, j, "loss", loss), cli_json_num(a->verb, j, "perplexity", exp(loss));
        cli_json_num(a->verb, j, "tokens", (double)n);
        cli_json_print(a->verb, j);
    } else printf("loss %.4f perplexity %.3f over %lld tokens\n", loss, exp(loss), (long long)n);
    tf_tokenizer_free(tok);
    tf_gpt_free(m);
    return 0;
}
