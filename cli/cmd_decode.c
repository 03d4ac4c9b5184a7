/* tformer decode: token ids on standard input -> text on standard output. */
#include <stdlib.h>
#include <string.h>

#include "cli.h"

const cli_flag cmd_decode_flags[] = {
    {"tokenizer", CLI_STRING, "DIR|char", NULL, "a tokenizer folder (or a tokenizer.json, WordPiece vocab.txt, SentencePiece .spm / .model file), or char"},
    CLI_END,
};

/* Ids separated by spaces, commas or newlines. */
static void read_ids(const cli_verb *v, char *text, tf_ids *ids) {
    for (char *p = text, *end;;) {
        while (*p && strchr(" \n\t\r,", *p)) p++;
        if (!*p) return;
        long x = strtol(p, &end, 10);
        if (end == p || x < INT32_MIN || x > INT32_MAX || (*end && !strchr(" \n\t\r,", *end))) {
            size_t w = strcspn(p, " \n\t\r,");
            fprintf(stderr, "tformer %s: '%.*s' is not an id\n", v->name, (int)(w < 20 ? w : 20), p);
            exit(1);
        }
        if (tf_ids_push(ids, (int32_t)x)) cli_die(v, tf_error());
        p = end;
    }
}

int cmd_decode(const cli_args *a) {
    const cli_verb *v = a->verb;
    tf_tokenizer *t = cli_load_tokenizer(v, a->v[0].text);
    size_t len;
    char *text = cli_read_stdin(v, &len), *out;
    tf_ids ids = {0};
    read_ids(v, text, &ids);
    if (tf_tokenizer_decode(t, ids.v, ids.n, &out, &len)) cli_die(v, tf_error());
    fwrite(out, 1, len, stdout);
    free(out);
    free(text);
    tf_ids_free(&ids);
    tf_tokenizer_free(t);
    return 0;
}
