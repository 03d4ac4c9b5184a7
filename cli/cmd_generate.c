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

typedef struct {
    tf_tokenizer *tok;
    const char *prompt; /* written before the first token, so that a refused prompt writes nothing */
    tf_ids ids;
    size_t printed; /* bytes of the decoded text already written */
    const char *stop;
    int json;       /* --json: nothing written until the end */
    int stopped;    /* the stop string was met */
    int failed;     /* a token could not be decoded: tf_error() says why */
    int32_t bad_id; /* that token */
} stream;

/* Decode everything generated so far and write the new part; stop at the stop string. */
static int on_token(void *user, int32_t id) {
    stream *s = user;
    char *text;
    size_t len;
    if (s->prompt && !s->json) fputs(s->prompt, stdout);
    s->prompt = NULL;
    if (tf_ids_push(&s->ids, id) || tf_tokenizer_decode(s->tok, s->ids.v, s->ids.n, &text, &len)) return s->bad_id = id, s->failed = 1;
    int stop = 0;
    if (s->stop && *s->stop) {
        char *hit = strstr(text, s->stop);
        if (hit) len = (size_t)(hit - text), stop = s->stopped = 1;
    }
    if (len > s->printed && !s->json) fwrite(text + s->printed, 1, len - s->printed, stdout);
    if (len > s->printed) s->printed = len;
    fflush(stdout);
    free(text);
    return stop;
}

/* --json: {"prompt", "text" (the continuation), "prompt_tokens", "new_tokens", "ids", "stop"} (docs/json.md). */
static void print_json(const cli_verb *v, const stream *s, const char *prompt, size_t n_prompt, const tf_ids *out,
                       int32_t eos) {
    char *text = NULL;
    size_t len = 0;
    if (s->ids.n && tf_tokenizer_decode(s->tok, s->ids.v, s->ids.n, &text, &len)) cli_die(v, tf_error());
    cJSON *j = cli_json_object(v, NULL, NULL), *ids;
    char *cont = strndup(text ? text : "", s->printed); /* up to the stop string */
    if (!cont) cli_die(v, "out of memory");
    cli_json_str(v, j, "prompt", prompt), cli_json_str(v, j, "text", cont);
    cli_json_num(v, j, "prompt_tokens", (double)n_prompt), cli_json_num(v, j, "new_tokens", (double)out->n);
    ids = cli_json_array(v, j, "ids");
    for (size_t i = 0; i < out->n; i++) cli_json_num(v, ids, NULL, out->v[i]);
    cli_json_str(v, j, "stop", s->stopped ? "stop" : out->n && out->v[out->n - 1] == eos ? "eos" : "length");
    cli_json_print(v, j);
    free(cont), free(text);
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
    const char *prompt = a->v[PROMPT].text;
    tf_tokenizer *tok;
    const char *dir = a->v[MODEL].text;
    tf_gpt *m = cli_load_model(v, dir, a->v[TOKENIZER].text, &tok);
    cli_check_weights(v, dir, m);
    cli_set_precision(v, m->params, precision);
    cli_say(v, &(cli_said){NULL, dir, tok, a->v[TOKENIZER].given, precision, NULL});
    /* Every id the model can emit must have a text: a smaller tokenizer would stop the output. */
    if (tf_tokenizer_vocab_size(tok) < m->cfg.vocab_size) {
        fprintf(stderr, "tformer %s: the tokenizer in %s has %d tokens, the model %d: the model's ids %d to %d have no text\n",
                v->name, dir, tf_tokenizer_vocab_size(tok), m->cfg.vocab_size, tf_tokenizer_vocab_size(tok),
                m->cfg.vocab_size - 1);
        exit(1);
    }
    o.eos_id = tf_tokenizer_token_id(tok, "<|endoftext|>");
    tf_ids ids = {0}, out = {0};
    if (tf_tokenizer_encode(tok, prompt, strlen(prompt), &ids)) cli_die(v, tf_error());
    stream s = {tok, prompt, {0}, 0, a->v[STOP].text, a->v[JSON].given, 0, 0, 0};
    if (tf_gpt_generate(m, ids.v, (int)ids.n, &o, on_token, &s, &out, NULL)) {
        if (!s.prompt && !s.json) printf("\n"); /* end the text written so far */
        cli_die(v, tf_error());
    }
    if (s.json && !s.failed) print_json(v, &s, prompt, ids.n, &out, o.eos_id);
    else if (!s.json) printf("%s\n", s.prompt ? s.prompt : ""); /* no token: the prompt alone */
    if (o.beam >= 1 && (int64_t)ids.n + o.max_tokens > m->cfg.context && (int)out.n < o.max_tokens &&
        !(out.n && out.v[out.n - 1] == o.eos_id))
        fprintf(stderr, "tformer generate: note: beam search stops at the model's context of %d tokens (it does not "
                "slide a window): %zu new tokens\n", m->cfg.context, out.n);
    if (s.failed) {
        char msg[1200];
        snprintf(msg, sizeof msg, "cannot decode the generated id %d: %s", (int)s.bad_id, tf_error());
        cli_die(v, msg);
    }
    tf_ids_free(&ids), tf_ids_free(&out), tf_ids_free(&s.ids);
    tf_tokenizer_free(tok);
    tf_gpt_free(m);
    return 0;
}
