/* tformer fill-mask: for each [MASK] of a text, the likeliest tokens and
 * their probabilities (softmax over the vocabulary), as Hugging Face's
 * fill-mask pipeline reports them. */
#include <stdlib.h>
#include <string.h>

#include "cli.h"

enum { MODEL, TEXT, TOP_K, THREADS };
const cli_flag cmd_fill_mask_flags[] = {
    [MODEL] = {"model", CLI_STRING, "DIR", NULL,
               "a BERT folder with a masked-LM head (BertForMaskedLM, BertForPreTraining, RobertaForMaskedLM, "
               "DistilBertForMaskedLM)"},
    [TEXT] = {"text", CLI_STRING, "TEXT", NULL, "the text, with [MASK] where tokens are to be filled in"},
    [TOP_K] = {"top-k", CLI_INT, "N", "5", "tokens per [MASK]"},
    [THREADS] = CLI_THREADS_ROW,
    CLI_END,
};

int cmd_fill_mask(const cli_args *a) {
    const cli_verb *v = a->verb;
    const char *dir = a->v[MODEL].text, *text = a->v[TEXT].text;
    if (a->v[TOP_K].i < 1) cli_usage_error(a, "--top-k must be at least 1, got %lld", a->v[TOP_K].i);
    tf_set_threads(cli_threads(&a->v[THREADS]));
    tf_model *m = tf_model_load(dir, &(tf_model_opts){.require = TF_CAP_FILL_MASK});
    if (!m || tf_model_require(m, TF_CAP_FILL_MASK)) cli_die(v, tf_error());
    tf_tokenizer *tok = tf_model_tokenizer(m);
    cli_say(v, &(cli_said){NULL, dir, tok, 0, 0, NULL});
    tf_fill_mask_result r;
    int k = a->v[TOP_K].i > 1 << 30 ? 1 << 30 : (int)a->v[TOP_K].i; /* the library keeps at most the vocabulary */
    if (tf_model_fill_mask(m, text, k, &r)) cli_die(v, tf_error());
    for (int j = 0; j < r.n; j++) {
        printf("[MASK] at position %d:\n", r.positions[j]);
        for (int q = 0; q < r.k; q++) {
            int32_t id = r.ids[(size_t)j * (size_t)r.k + q];
            char *s;
            size_t n;
            if (tf_tokenizer_decode(tok, &id, 1, &s, &n)) cli_die(v, tf_error());
            printf("  %.6f  %-16s (id %d)\n", r.probs[(size_t)j * (size_t)r.k + q], s, id);
            free(s);
        }
    }
    tf_fill_mask_result_free(&r);
    tf_model_free(m);
    return 0;
}
