/* tformer embed: one text per line on standard input -> one embedding per
 * line (space-separated floats) on standard output, as sentence-transformers'
 * encode() computes them from the folder's settings (max_seq_length, pooling,
 * normalisation); flags override them. --pooling none writes every token's
 * vector, one per line, with an empty line after each text. */
#include <stdlib.h>
#include <string.h>

#include "cli.h"

enum { MODEL, POOLING, NORMALIZE, MAX_LENGTH, BATCH, THREADS };
const cli_flag cmd_embed_flags[] = {
    [MODEL] = {"model", CLI_STRING, "DIR", NULL, "a BERT folder (Hugging Face or sentence-transformers) with its tokenizer"},
    [POOLING] = {"pooling", CLI_STRING, "mean|cls|max|none", "", "pooling over the tokens (default: the folder's, else mean)"},
    [NORMALIZE] = {"normalize", CLI_SWITCH, NULL, "off", "L2-normalise (on anyway when modules.json has Normalize)"},
    [MAX_LENGTH] = {"max-length", CLI_INT, "N", "0", "ids per text with [CLS] and [SEP]; 0: max_seq_length, else the context"},
    [BATCH] = {"batch", CLI_INT, "N", "32", "texts per forward pass"},
    [THREADS] = CLI_THREADS_ROW,
    CLI_END,
};

/* The lines of standard input (CR stripped): pointers into text. */
static int split_lines(char *text, size_t len, char ***lines, size_t **lens) {
    int n = 0, cap = 64;
    *lines = malloc((size_t)cap * sizeof **lines), *lens = malloc((size_t)cap * sizeof **lens);
    for (size_t i = 0; i < len && *lines && *lens;) {
        size_t e = i;
        while (e < len && text[e] != '\n') e++;
        if (n == cap) {
            cap *= 2;
            char **nl = realloc(*lines, (size_t)cap * sizeof *nl);
            size_t *ns = nl ? realloc(*lens, (size_t)cap * sizeof *ns) : NULL;
            if (nl) *lines = nl;
            if (!ns) return -1;
            *lens = ns;
        }
        (*lines)[n] = text + i;
        (*lens)[n++] = e > i && text[e - 1] == '\r' ? e - i - 1 : e - i;
        i = e + 1;
    }
    return *lines && *lens ? n : -1;
}

static void print_row(const float *x, int64_t C) {
    for (int64_t c = 0; c < C; c++) printf(c ? " %.8g" : "%.8g", x[c]);
    putchar('\n');
}

/* --pooling none: each text's token vectors. */
static void embed_tokens(const cli_verb *v, const tf_bert *m, tf_tokenizer *tok, char **lines, size_t *lens, int n,
                         size_t max_len) {
    tf_ctx *ctx = tf_ctx_new(0);
    for (int i = 0; i < n; i++) {
        tf_ids ids = {0}, types = {0};
        tf_ctx_reset(ctx);
        tf_ctx_set_grad(ctx, 0);
        if (tf_tokenizer_encode_pair(tok, lines[i], lens[i], NULL, 0, max_len, &ids, &types)) cli_die(v, tf_error());
        tf_tensor *x = tf_tensor_new(ctx, TF_DTYPE_I32, 2, (int64_t[]){1, (int64_t)ids.n}, 0);
        memcpy(x->data, ids.v, ids.n * sizeof *ids.v);
        tf_bert_outputs out;
        tf_bert_inputs in = {.input_ids = x};
        if (tf_bert_run(ctx, m, &in, &out)) cli_die(v, tf_error());
        for (size_t t = 0; t < ids.n; t++) print_row(tf_f32(out.last_hidden_state) + t * (size_t)m->cfg.d_model, m->cfg.d_model);
        putchar('\n');
        tf_ids_free(&ids), tf_ids_free(&types);
    }
    tf_ctx_free(ctx);
}

int cmd_embed(const cli_args *a) {
    const cli_verb *v = a->verb;
    const char *dir = a->v[MODEL].text, *pooling = a->v[POOLING].text;
    tf_set_threads(cli_threads(&a->v[THREADS]));
    tf_embed_opts o;
    if (tf_embed_opts_load(dir, &o)) cli_die(v, tf_error());
    static const char *const POOLS[] = {"mean", "cls", "max", "none"};
    int pool = pooling && *pooling ? -1 : (int)o.pooling;
    for (int k = 0; k < 4 && pool < 0; k++) pool = strcmp(pooling, POOLS[k]) ? -1 : k;
    if (pool < 0) cli_usage_error(a, "--pooling expects mean, cls, max or none, got '%s'", pooling);
    o.pooling = (tf_pooling)(pool < 3 ? pool : 0);
    o.normalize |= a->v[NORMALIZE].given;
    if (a->v[BATCH].i < 1) cli_usage_error(a, "--batch must be at least 1");
    o.batch = (int)a->v[BATCH].i;
    tf_bert *m = tf_bert_load_hf(dir, &(tf_bert_load_opts){TF_BERT_BODY, 0, 1});
    if (!m) cli_die(v, tf_error());
    cli_check_max_len(v, "--max-length", a->v[MAX_LENGTH].i, m->cfg.context);
    if (a->v[MAX_LENGTH].i > 0) o.max_len = (int)a->v[MAX_LENGTH].i;
    tf_tokenizer *tok = cli_load_tokenizer(v, dir);
    size_t len, *lens = NULL;
    char *text = cli_read_stdin(v, &len), **lines = NULL;
    int n = split_lines(text, len, &lines, &lens);
    if (n < 0) cli_die(v, "out of memory");
    if (pool == 3) {
        embed_tokens(v, m, tok, lines, lens, n,
                     o.max_len > 0 ? (size_t)o.max_len : (size_t)tf_bert_max_tokens(&m->cfg));
    } else {
        float *e = malloc(((size_t)n + 1) * (size_t)m->cfg.d_model * sizeof *e);
        if (!e || tf_bert_embed(m, tok, (const char *const *)lines, lens, n, &o, e)) cli_die(v, e ? tf_error() : "out of memory");
        for (int i = 0; i < n; i++) print_row(e + (size_t)i * (size_t)m->cfg.d_model, m->cfg.d_model);
        free(e);
    }
    free(lines), free(lens), free(text);
    tf_tokenizer_free(tok);
    tf_bert_free(m);
    return 0;
}
