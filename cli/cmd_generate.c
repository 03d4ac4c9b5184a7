/* tformer generate: continue a prompt with a trained GPT, streaming the text. */
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "cli.h"

enum { MODEL, PROMPT, STOP, THREADS, PRECISION, TOKENIZER, JSON };
const cli_flag cmd_generate_flags[] = {
    [MODEL] = {"model", CLI_STRING, "DIR", NULL, "a run folder, or a Hugging Face GPT-2 folder with its tokenizer"},
    [PROMPT] = {"prompt", CLI_STRING, "TEXT", NULL, "the text to continue"},
    [STOP] = {"stop", CLI_STRING, "TEXT", "", "end at the first occurrence of TEXT"},
    [THREADS] = CLI_THREADS_ROW,
    [PRECISION] = CLI_PRECISION_ROW,
    [TOKENIZER] = CLI_GPT_TOKENIZER_ROW,
    [JSON] = CLI_JSON_ROW,
    CLI_END,
};

/* The search's options: ranges and --help from one table, defaults the library's. */
#define R(m, type, range, help) TF_FIELD_ROW(tf_generate_opts, m, type, #m, NULL, range, NULL, help, 0, NULL)
static const tf_field OPTION_ROWS[] = {
    TF_FIELD_ROW(tf_generate_opts, max_tokens, TF_FIELD_INT, "max_tokens", NULL, "[0,inf)", NULL,
                 "new tokens at most", 0, "max_new_tokens"), /* Hugging Face's name */
    R(temperature, TF_FIELD_FLOAT, "[0,inf)", "0: greedy"),
    R(top_k, TF_FIELD_INT, "[0,inf)", "draw from the k most likely tokens; 0: all"),
    R(top_p, TF_FIELD_FLOAT, "(0,1]", "draw from the most likely tokens up to this probability; 1: all"),
    R(repetition_penalty, TF_FIELD_FLOAT, "(0,inf)",
      "> 1 discourages tokens already in the context, < 1 favours them: sampling divides a positive logit by it "
      "(multiplies a negative one), beam search multiplies their log-probabilities (transformers' rule in each)"),
    R(seed, TF_FIELD_UINT64, NULL, "the draws' seed"),
    R(beam, TF_FIELD_INT, "[0,256]",
      "beam search of that width (deterministic: temperature, top-k, top-p and the seed ignored; the repetition "
      "penalty applies); 0: sampling"),
    R(length_penalty, TF_FIELD_FLOAT, NULL, "beam scores are sum(log p) / length^length_penalty"),
};
#undef R
static const tf_field_table OPTIONS = {"generation", OPTION_ROWS, (int)(sizeof OPTION_ROWS / sizeof OPTION_ROWS[0])};

/* The text as it comes: the prompt first (written with the first piece, so that a refused prompt writes
 * nothing), then each new piece; --json writes nothing until the end. */
typedef struct {
    const char *prompt; /* not written yet */
    int json;
} stream;

static int on_text(void *user, const char *piece, size_t len) {
    stream *s = user;
    if (s->json) return 0;
    if (s->prompt) fputs(s->prompt, stdout), s->prompt = NULL;
    fwrite(piece, 1, len, stdout);
    fflush(stdout);
    return 0;
}

/* --json: {"prompt", "text" (the continuation), "prompt_tokens", "new_tokens", "ids", "stop"} (docs/json.md). */
static void print_json(const cli_verb *v, const char *prompt, const char *text, const tf_generation *g) {
    cJSON *j = cli_json_object(v, NULL, NULL), *ids;
    cli_json_str(v, j, "prompt", prompt), cli_json_str(v, j, "text", text);
    cli_json_num(v, j, "prompt_tokens", g->prompt_tokens), cli_json_num(v, j, "new_tokens", (double)g->ids.n);
    ids = cli_json_array(v, j, "ids");
    for (size_t i = 0; i < g->ids.n; i++) cli_json_num(v, ids, NULL, g->ids.v[i]);
    cli_json_str(v, j, "stop", g->finish);
    cli_json_print(v, j);
}

static tf_generate_opts g_opts;
static tf_fields g_tables[1];

int cmd_generate_tables(const tf_fields **t) {
    g_opts = tf_generate_opts_default();
    g_tables[0] = (tf_fields){&OPTIONS, &g_opts};
    *t = g_tables;
    return 1;
}

int cmd_generate(const cli_args *a) {
    const cli_verb *v = a->verb;
    cli_apply(a);
    tf_generate_opts o = g_opts;
    tf_set_threads(cli_threads(&a->v[THREADS]));
    tf_precision precision = cli_precision(a, PRECISION);
    const char *prompt = a->v[PROMPT].text, *dir = a->v[MODEL].text;
    tf_model *m = cli_load_lm(v, dir, &a->v[TOKENIZER], precision);
    stream s = {prompt, a->v[JSON].given};
    char *text;
    size_t len;
    tf_generation g;
    if (tf_model_generate(m, prompt, &o, a->v[STOP].text, on_text, &s, &text, &len, &g)) {
        if (!s.prompt && !s.json) printf("\n"); /* end the text written so far */
        cli_die(v, tf_error());
    }
    if (s.json) print_json(v, prompt, text, &g);
    else printf("%s\n", s.prompt ? s.prompt : ""); /* no text: the prompt alone */
    int context = tf_model_context(m);
    if (o.beam >= 1 && (int64_t)g.prompt_tokens + o.max_tokens > context && (int)g.ids.n < o.max_tokens &&
        !strcmp(g.finish, "length"))
        fprintf(stderr, "tformer generate: note: beam search stops at the model's context of %d tokens (it does not "
                "slide a window): %zu new tokens\n", context, g.ids.n);
    free(text), tf_generation_free(&g);
    tf_model_free(m);
    return 0;
}
