/* tformer eval: a GPT's mean next-token loss and perplexity on text files,
 * or a ViT's accuracy on a split of an idx folder (--data-dir, as classify). */
#include <math.h>
#include <string.h>

#include "cli.h"

enum { MODEL, DATA, THREADS, DATA_DIR, SPLIT };
const cli_flag cmd_eval_flags[] = {
    [MODEL] = {"model", CLI_STRING, "DIR", NULL, "a run folder, or a Hugging Face GPT-2 folder with its tokenizer"},
    [DATA] = {"data", CLI_LIST, "FILE...", "", "text files, read in windows of the model's context (required for a GPT)"},
    [THREADS] = CLI_THREADS_ROW,
    [DATA_DIR] = {"data-dir", CLI_STRING, "DIR", "", "a ViT folder instead: the accuracy on this idx folder's --split"},
    [SPLIT] = {"split", CLI_STRING, "NAME", "t10k", "with --data-dir: t10k (the test set) or train"},
    CLI_END,
};

int cmd_eval(const cli_args *a) {
    tf_set_threads(cli_threads(&a->v[THREADS]));
    const char *dir = a->v[DATA_DIR].text && *a->v[DATA_DIR].text ? a->v[DATA_DIR].text : NULL;
    if (dir && a->v[DATA].n) cli_usage_error(a, "give --data (a GPT) or --data-dir (a ViT), not both");
    if (dir) {
        const char *split = a->v[SPLIT].text;
        if (strcmp(split, "t10k") && strcmp(split, "train")) cli_usage_error(a, "--split expects t10k or train, got '%s'", split);
        cli_vit_score(a->verb, a->v[MODEL].text, dir, split, NULL, 256);
        return 0;
    }
    if (!a->v[DATA].n) cli_usage_error(a, "missing --data (see tformer eval --help)");
    tf_tokenizer *tok;
    tf_gpt *m = cli_load_model(a->verb, a->v[MODEL].text, &tok);
    cli_check_weights(a->verb, a->v[MODEL].text, m);
    double loss;
    int64_t n;
    if (tf_gpt_evaluate(m, tok, (const char *const *)a->v[DATA].list, a->v[DATA].n, &loss, &n)) cli_die(a->verb, tf_error());
    printf("loss %.4f perplexity %.3f over %lld tokens\n", loss, exp(loss), (long long)n);
    tf_tokenizer_free(tok);
    tf_gpt_free(m);
    return 0;
}
