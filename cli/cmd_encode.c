/* tformer encode: text on standard input -> token ids on standard output
 * (--lines: each line encoded on its own, one line of ids per line). */
#include <stdlib.h>
#include <string.h>

#include "cli.h"

const cli_flag cmd_encode_flags[] = {
    {"tokenizer", CLI_STRING, "DIR|char", NULL, "a tokenizer folder (tokenizer.json, vocab.txt, source.spm + vocab.json, ...), a tokenizer.json, WordPiece vocab.txt or SentencePiece .spm / .model file, or char"},
    {"lines", CLI_SWITCH, NULL, "off", "encode each input line on its own (without its newline): one line of ids per line"},
    CLI_END,
};

static void put_ids(const cli_verb *v, tf_tokenizer *t, const char *text, size_t len) {
    tf_ids ids = {0};
    if (tf_tokenizer_encode(t, text, len, &ids)) cli_die(v, tf_error());
    for (size_t i = 0; i < ids.n; i++) printf(i ? " %d" : "%d", ids.v[i]);
    printf("\n");
    tf_ids_free(&ids);
}

int cmd_encode(const cli_args *a) {
    const cli_verb *v = a->verb;
    tf_tokenizer *t = cli_load_tokenizer(v, a->v[0].text);
    if (a->v[1].given) { /* --lines: a chunk of lines at a time, each chunk's ids written before more is read */
        const char *lines[CLI_BATCH_MAX];
        size_t lens[CLI_BATCH_MAX];
        cli_lines in;
        cli_lines_init(&in, 0);
        in.keep_cr = 1; /* the bytes of the line as they are, as before */
        for (int n; (n = cli_lines_next(v, &in, CLI_BATCH_MAX, lines, lens)) > 0; cli_flush_or_die(v))
            for (int i = 0; i < n; i++) put_ids(v, t, lines[i], lens[i]);
        cli_lines_free(&in);
    } else { /* the whole input is one text */
        size_t len;
        char *text = cli_read_stdin(v, &len);
        put_ids(v, t, text, len);
        free(text);
    }
    tf_tokenizer_free(t);
    return 0;
}
