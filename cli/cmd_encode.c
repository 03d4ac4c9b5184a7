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

/* The ids of text, after those already written (*first: none yet); an error names where the text began. */
static void put_ids(const cli_verb *v, tf_tokenizer *t, const char *text, size_t len, int *first, long long line,
                    long long byte) {
    tf_ids ids = {0};
    if (tf_tokenizer_encode(t, text, len, &ids)) {
        if (!byte) cli_die(v, tf_error());
        char msg[1400];
        const char *e = tf_error();
        snprintf(msg, sizeof msg, "standard input, in the text from line %lld (byte %lld) on: %s", line, byte,
                 strncmp(e, "encode: ", 8) ? e : e + 8);
        cli_die(v, msg);
    }
    for (size_t i = 0; i < ids.n; i++, *first = 0) printf(*first ? "%d" : " %d", ids.v[i]);
    tf_ids_free(&ids);
}

/* The whole input is one text, encoded a piece at a time: each piece ends where the tokenizer can cut the text
 * without changing its ids (tf_tokenizer_encode_cut: before a line), once 1 MiB waits or nothing more is ready;
 * each piece's ids are written before more is read. Without such a place (SentencePiece) the text is held
 * until the input ends. */
static void encode_whole(const cli_verb *v, tf_tokenizer *t) {
    cli_lines in;
    cli_lines_init(&in, 0);
    long long line = 1, byte = 0;
    int first = 1, eof = 0;
    size_t seen = 0; /* bytes searched for a cut already, less 2 (a cut depends on the 2 bytes before it) */
    while (!eof) {
        const char *p;
        size_t n = cli_bytes_next(v, &in, &p, &eof), cut = eof ? n : 0;
        if (!eof && (n >= (1u << 20) || !cli_bytes_waiting(&in))) {
            if ((cut = tf_tokenizer_encode_cut(t, p + seen, n - seen))) cut += seen, seen = 0;
            else seen = n > 2 ? n - 2 : 0;
        }
        if (!cut && !eof) continue;
        put_ids(v, t, p, cut, &first, line, byte);
        for (size_t i = 0; i < cut; i++) line += p[i] == '\n';
        byte += (long long)cut;
        cli_bytes_take(&in, cut);
        if (!eof) cli_flush_or_die(v);
    }
    printf("\n");
    cli_lines_free(&in);
}

int cmd_encode(const cli_args *a) {
    const cli_verb *v = a->verb;
    tf_tokenizer *t = cli_load_tokenizer(v, a->v[0].text);
    char said[4400];
    cli_say_plain(v, 0, "tokenizer %s; %s", cli_tokenizer_said(t, said, sizeof said),
                  a->v[1].given ? "each line of standard input on its own (--lines), a line of ids per line"
                                : "standard input as one text (--lines: each line on its own), its ids on one line");
    if (a->v[1].given) { /* --lines: a chunk of lines at a time, each chunk's ids written before more is read */
        const char *lines[CLI_BATCH_MAX];
        size_t lens[CLI_BATCH_MAX];
        cli_lines in;
        cli_lines_init(&in, 0);
        in.keep_cr = 1; /* the bytes of the line as they are, as before */
        for (int n; (n = cli_lines_next(v, &in, CLI_BATCH_MAX, lines, lens)) > 0; cli_flush_or_die(v))
            for (int i = 0, first = 1; i < n; i++, first = 1) put_ids(v, t, lines[i], lens[i], &first, 0, 0), printf("\n");
        cli_lines_free(&in);
    } else {
        encode_whole(v, t);
    }
    tf_tokenizer_free(t);
    return 0;
}
