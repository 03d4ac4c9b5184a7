/* tformer fill-mask: for each [MASK] of a text, the likeliest tokens and
 * their probabilities (softmax over the vocabulary), as Hugging Face's
 * fill-mask pipeline reports them. */
#include <math.h>
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

/* Softmax of row (V) into p; the indices of the k largest into top, best first. */
static void top_k(const float *row, int64_t V, int k, double *p, int32_t *top) {
    double mx = -INFINITY, sum = 0;
    for (int64_t i = 0; i < V; i++) mx = fmax(mx, row[i]);
    for (int64_t i = 0; i < V; i++) sum += (p[i] = exp((double)row[i] - mx));
    for (int64_t i = 0; i < V; i++) p[i] /= sum;
    for (int j = 0; j < k; j++) {
        int64_t best = -1;
        for (int64_t i = 0; i < V; i++) {
            int taken = 0;
            for (int q = 0; q < j && !taken; q++) taken = top[q] == i;
            if (!taken && (best < 0 || p[i] > p[best])) best = i;
        }
        top[j] = (int32_t)best;
    }
}

static void print_choices(const cli_verb *v, tf_tokenizer *tok, const float *row, int64_t V, int k, int pos) {
    double *p = malloc((size_t)V * sizeof *p);
    int32_t *top = malloc((size_t)k * sizeof *top);
    if (!p || !top) cli_die(v, "out of memory");
    top_k(row, V, k, p, top);
    printf("[MASK] at position %d:\n", pos);
    for (int j = 0; j < k; j++) {
        char *s;
        size_t n;
        if (tf_tokenizer_decode(tok, &top[j], 1, &s, &n)) cli_die(v, tf_error());
        printf("  %.6f  %-16s (id %d)\n", p[top[j]], s, top[j]);
        free(s);
    }
    free(p), free(top);
}

int cmd_fill_mask(const cli_args *a) {
    const cli_verb *v = a->verb;
    const char *dir = a->v[MODEL].text, *text = a->v[TEXT].text;
    if (a->v[TOP_K].i < 1) cli_usage_error(a, "--top-k must be at least 1, got %lld", a->v[TOP_K].i);
    tf_set_threads(cli_threads(&a->v[THREADS]));
    tf_bert *m = tf_bert_load(dir, &(tf_bert_load_opts){TF_BERT_MLM, 0, 0});
    if (!m) cli_die(v, tf_error());
    tf_tokenizer *tok = cli_load_tokenizer(v, dir);
    cli_say(v, &(cli_said){NULL, dir, tok, 0, 0, NULL});
    int32_t mask = tf_tokenizer_special_id(tok, "mask");
    int64_t V = m->cfg.vocab_size;
    int k = a->v[TOP_K].i > V ? (int)V : (int)a->v[TOP_K].i; /* at most the vocabulary */
    tf_ids ids = {0}, types = {0};
    if (mask < 0) cli_die(v, "the tokenizer has no mask token ([MASK])");
    if (tf_tokenizer_encode_pair(tok, text, strlen(text), NULL, 0, 0, &ids, &types)) cli_die(v, tf_error());
    int most = tf_bert_max_tokens(&m->cfg);
    if (ids.n > (size_t)most) { /* cut as sentence-transformers and the pipeline do: [SEP] kept */
        fprintf(stderr, "tformer fill-mask: the text has %zu ids; cut to the model's %d\n", ids.n, most);
        ids.v[most - 1] = ids.v[ids.n - 1];
        ids.n = (size_t)most;
    }
    tf_ctx *ctx = tf_ctx_new(0);
    tf_ctx_set_grad(ctx, 0);
    tf_tensor *x = tf_tensor_new(ctx, TF_DTYPE_I32, 2, (int64_t[]){1, (int64_t)ids.n}, 0);
    memcpy(x->data, ids.v, ids.n * sizeof *ids.v);
    tf_bert_outputs out;
    if (tf_bert_run(ctx, m, &(tf_bert_inputs){.input_ids = x}, &out)) cli_die(v, tf_error());
    int found = 0;
    for (size_t t = 0; t < ids.n; t++)
        if (ids.v[t] == mask) print_choices(v, tok, tf_f32(out.logits) + t * (size_t)V, V, k, (int)t), found++;
    if (!found) cli_die(v, "the text holds no [MASK]");
    tf_ctx_free(ctx);
    tf_ids_free(&ids), tf_ids_free(&types);
    tf_tokenizer_free(tok);
    tf_bert_free(m);
    return 0;
}
