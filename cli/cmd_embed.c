/* tformer embed: one text per line on standard input -> one embedding per
 * line (space-separated floats) on standard output, as sentence-transformers'
 * encode() computes them from the folder's settings (max_seq_length, pooling,
 * normalisation); flags override them. --pooling none writes every token's
 * vector, one per line, with an empty line after each text. Input is read a
 * chunk at a time and each chunk's embeddings written before more is read. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "cli.h"

enum { MODEL, POOLING, NORMALIZE, MAX_LENGTH, BATCH, THREADS, FORMAT, PRECISION };
const cli_flag cmd_embed_flags[] = {
    [MODEL] = {"model", CLI_STRING, "DIR", NULL, "a BERT folder (Hugging Face or sentence-transformers) with its tokenizer"},
    [POOLING] = {"pooling", CLI_STRING, "mean|cls|max|none", "", "pooling over the tokens (default: the folder's, else mean)"},
    [NORMALIZE] = {"normalize", CLI_SWITCH, NULL, "off", "L2-normalise (on anyway when modules.json has Normalize)"},
    [MAX_LENGTH] = {"max-len", CLI_INT, "N", "0", "ids per text with [CLS] and [SEP]; 0: max_seq_length, else the context"},
    [BATCH] = {"batch", CLI_INT, "N", "32", "texts per forward pass"},
    [THREADS] = CLI_THREADS_ROW,
    [FORMAT] = {"format", CLI_STRING, "text|json|npy", "text",
                "text: a line of floats per vector; json: a JSON array per vector (JSON Lines); npy: one (texts, "
                "width) float32 array, numpy's .npy, standard output a file (> out.npy)"},
    [PRECISION] = CLI_PRECISION_ROW,
    CLI_END,
};

enum { TEXT, JSON_LINES, NPY };
static int g_format;

static void print_row(const cli_verb *v, const float *x, int64_t C) {
    if (g_format == NPY) {
        if (fwrite(x, sizeof *x, (size_t)C, stdout) != (size_t)C) cli_flush_or_die(v);
        return;
    }
    if (g_format == JSON_LINES) {
        cJSON *row = cli_json_array(v, NULL, NULL);
        for (int64_t c = 0; c < C; c++) cli_json_num(v, row, NULL, x[c]);
        cli_json_print(v, row);
        return;
    }
    for (int64_t c = 0; c < C; c++) printf(c ? " %.8g" : "%.8g", x[c]);
    putchar('\n');
}

/* --pooling none: each text's token vectors. */
static void embed_tokens(const cli_verb *v, const tf_model *m, const tf_embed_opts *o, const char **lines,
                         size_t *lens, int n) {
    int64_t d = tf_model_embed_dim(m);
    for (int i = 0; i < n; i++) {
        float *h;
        int T;
        if (tf_model_embed_tokens(m, lines[i], lens[i], o, &h, &T)) cli_die(v, tf_error());  // h: (T,d)
        if (g_format == JSON_LINES) { /* the text's vectors as one array of arrays */
            cJSON *rows = cli_json_array(v, NULL, NULL);
            for (int t = 0; t < T; t++) {
                cJSON *row = cli_json_array(v, rows, NULL);
                for (int64_t c = 0; c < d; c++) cli_json_num(v, row, NULL, h[t * d + c]);
            }
            cli_json_print(v, rows);
        } else {
            for (int t = 0; t < T; t++) print_row(v, h + t * d, d);
            putchar('\n');
        }
        free(h);
    }
}

/* Lines of a chunk as NUL-ended texts (tf_model_embed's), in buf; a NUL inside one is an error naming it. */
static void nul_ended(const cli_verb *v, const char **lines, const size_t *lens, int n, int64_t first, char **texts,
                      char **buf, size_t *cap) {
    size_t need = 0;
    for (int i = 0; i < n; i++) need += lens[i] + 1;
    if (need > *cap && !(*buf = realloc(*buf, *cap = need))) cli_die(v, "out of memory");
    char *p = *buf;
    for (int i = 0; i < n; i++) {
        if (memchr(lines[i], 0, lens[i])) {
            char msg[128];
            snprintf(msg, sizeof msg, "standard input line %lld holds a NUL byte: text only", (long long)(first + i + 1));
            cli_die(v, msg);
        }
        memcpy(p, lines[i], lens[i]), p[lens[i]] = 0, texts[i] = p, p += lens[i] + 1;
    }
}

/* Lines read, embedded and written at a time: memory bounded by it, whatever the input's length. */
enum { CHUNK = 1024 };

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
    if (a->v[BATCH].i < 1 || a->v[BATCH].i > CLI_BATCH_MAX)
        cli_usage_error(a, "--batch expects an integer in [1,%d], got %lld", CLI_BATCH_MAX, a->v[BATCH].i);
    o.batch = (int)a->v[BATCH].i;
    static const char *const FORMATS[] = {"text", "json", "npy"};
    for (g_format = 0; g_format < 3 && strcmp(a->v[FORMAT].text, FORMATS[g_format]); g_format++) continue;
    if (g_format == 3) cli_usage_error(a, "--format expects text, json or npy, got '%s'", a->v[FORMAT].text);
    if (g_format == NPY && pool == 3)
        cli_usage_error(a, "--format npy holds one vector per text: not with --pooling none (each token's vector)");
    if (g_format == NPY && (isatty(1) || lseek(1, 0, SEEK_CUR) < 0))
        cli_usage_error(a, "--format npy writes a file: send standard output to one (> out.npy), not to a pipe or "
                        "a terminal (its header, written last, says how many texts)");
    tf_precision precision = cli_precision(a, PRECISION);
    tf_model *m = tf_model_load(dir, &(tf_model_opts){.precision = precision, .require = TF_CAP_EMBED});
    if (!m || tf_model_require(m, TF_CAP_EMBED)) cli_die(v, tf_error());
    cli_check_max_len(v, "--max-len", a->v[MAX_LENGTH].i, tf_model_context(m));
    if (a->v[MAX_LENGTH].i > 0) o.max_len = (int)a->v[MAX_LENGTH].i;
    char extra[160];
    snprintf(extra, sizeof extra, "pooling %s%s%s", POOLS[pool], pooling && *pooling ? "" : " (the folder's)",
             o.normalize ? ", normalized" : "");
    cli_say(v, &(cli_said){NULL, dir, tf_model_tokenizer(m), 0, precision, extra});
    int64_t d = tf_model_embed_dim(m);
    size_t lens[CHUNK], cap = 0;
    const char *lines[CHUNK];
    char *texts[CHUNK], *buf = NULL;
    cli_lines in;
    cli_lines_init(&in, 0);
    int64_t rows = 0;
    if (g_format == NPY) cli_npy_header(v, stdout, "f4", (int64_t[]){0, d}, 2);
    for (int n; (n = cli_lines_next(v, &in, CHUNK, lines, lens)) > 0; cli_flush_or_die(v), rows += n) {
        if (pool == 3) {
            embed_tokens(v, m, &o, lines, lens, n);
            continue;
        }
        float *e;
        nul_ended(v, lines, lens, n, rows, texts, &buf, &cap);
        if (tf_model_embed(m, (const char *const *)texts, n, &o, &e)) cli_die(v, tf_error());
        for (int i = 0; i < n; i++) print_row(v, e + (size_t)i * (size_t)d, d);
        free(e);
    }
    if (g_format == NPY) { /* the rows, now known, into the header */
        if (fflush(stdout) || fseek(stdout, 0, SEEK_SET)) cli_flush_or_die(v);
        cli_npy_header(v, stdout, "f4", (int64_t[]){rows, d}, 2);
    }
    cli_lines_free(&in);
    free(buf);
    tf_model_free(m);
    return 0;
}
