/* tformer encode: text on standard input -> token ids on standard output. */
#include <stdlib.h>

#include "cli.h"

const cli_flag cmd_encode_flags[] = {
    {"tokenizer", CLI_STRING, "DIR|char", NULL, "a tokenizer folder (tokenizer.json, vocab.txt, source.spm + vocab.json, ...), a tokenizer.json, WordPiece vocab.txt or SentencePiece .spm / .model file, or char"},
    CLI_END,
};

int cmd_encode(const cli_args *a) {
    const cli_verb *v = a->verb;
    tf_tokenizer *t = cli_load_tokenizer(v, a->v[0].text);
    size_t len;
    char *text = cli_read_stdin(v, &len);
    tf_ids ids = {0};
    if (tf_tokenizer_encode(t, text, len, &ids)) cli_die(v, tf_error());
    for (size_t i = 0; i < ids.n; i++) printf(i ? " %d" : "%d", ids.v[i]);
    printf("\n");
    tf_ids_free(&ids);
    free(text);
    tf_tokenizer_free(t);
    return 0;
}
