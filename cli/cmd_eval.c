/* tformer eval: a GPT's mean next-token loss and perplexity on text files. */
#include <math.h>

#include "cli.h"

enum { MODEL, DATA, THREADS };
const cli_flag cmd_eval_flags[] = {
    [MODEL] = {"model", CLI_STRING, "DIR", NULL, "a run folder, or a Hugging Face GPT-2 folder with its tokenizer"},
    [DATA] = {"data", CLI_LIST, "FILE...", NULL, "text files, read in windows of the model's context"},
    [THREADS] = CLI_THREADS_ROW,
    CLI_END,
};

int cmd_eval(const cli_args *a) {
    tf_set_threads(cli_threads(&a->v[THREADS]));
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
