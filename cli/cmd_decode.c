/* tformer decode: token ids on standard input -> text on standard output. */
#include <stdlib.h>
#include <string.h>

#include "cli.h"

const cli_flag cmd_decode_flags[] = {
    {"tokenizer", CLI_STRING, "DIR|char", NULL, "a tokenizer folder (or a tokenizer.json, WordPiece vocab.txt, SentencePiece .spm / .model file), or char"},
    CLI_END,
};

static int is_sep(char c) { return c == ' ' || c == '\n' || c == '\t' || c == '\r' || c == ','; }

/* The ids of text[0,n) (separated by spaces, commas or newlines; the text ends at a separator or at the end of the
 * input, or at a NUL byte: *stop); each checked against the vocabulary, named by its place in the whole input. */
static void read_ids(const cli_verb *v, const char *text, size_t n, int32_t vocab, size_t *count, tf_ids *ids,
                     int *stop) {
    for (size_t i = 0;;) {
        while (i < n && is_sep(text[i])) i++;
        if (i == n) return;
        if (!text[i]) {
            *stop = 1;
            return;
        }
        size_t w = i;
        while (w < n && text[w] && !is_sep(text[w])) w++;
        char word[64], *end;
        snprintf(word, sizeof word, "%.*s", (int)(w - i < 63 ? w - i : 63), text + i);
        long x = strtol(word, &end, 10);
        if (w - i > 62 || *end || x < INT32_MIN || x > INT32_MAX) {
            fprintf(stderr, "tformer %s: '%.*s' is not an id\n", v->name, (int)(w - i < 20 ? w - i : 20), text + i);
            exit(1);
        }
        if (x < 0 || x >= vocab) {
            char msg[160];
            snprintf(msg, sizeof msg, "id %ld at position %zu outside the vocabulary [0,%d)", x, *count, vocab);
            cli_die(v, msg);
        }
        if (tf_ids_push(ids, (int32_t)x)) cli_die(v, tf_error());
        ++*count, i = w;
    }
}

/* The text of ids, after *last (the last id written, -1: none): what decoding *last and ids adds to *last's text
 * (tf_tokenizer_decode_concatenates). */
static void put_text(const cli_verb *v, tf_tokenizer *t, tf_ids *ids, int32_t *last) {
    size_t skip = 0, len;
    char *out;
    if (!ids->n) return;
    if (*last >= 0) {
        if (tf_tokenizer_decode(t, last, 1, &out, &skip)) cli_die(v, tf_error());
        free(out);
        if (tf_ids_push(ids, 0)) cli_die(v, tf_error());
        memmove(ids->v + 1, ids->v, (ids->n - 1) * sizeof *ids->v);
        ids->v[0] = *last;
    }
    if (tf_tokenizer_decode(t, ids->v, ids->n, &out, &len)) cli_die(v, tf_error());
    if (len > skip) fwrite(out + skip, 1, len - skip, stdout);
    *last = ids->v[ids->n - 1];
    free(out);
    ids->n = 0;
}

/* Ids a chunk at a time (up to the last separator read), each chunk's text written before more is read, where
 * the tokenizer decodes in pieces; else (SentencePiece) the ids are held until the input ends. */
int cmd_decode(const cli_args *a) {
    const cli_verb *v = a->verb;
    tf_tokenizer *t = cli_load_tokenizer(v, a->v[0].text);
    char said[4400];
    cli_say_plain(v, 0, "tokenizer %s; the ids on standard input (between them spaces, commas or newlines) as one text",
                  cli_tokenizer_said(t, said, sizeof said));
    int pieces = tf_tokenizer_decode_concatenates(t), eof = 0, stop = 0;
    int32_t vocab = tf_tokenizer_vocab_size(t), last = -1;
    size_t count = 0;
    tf_ids ids = {0};
    cli_lines in;
    cli_lines_init(&in, 0);
    while (!eof && !stop) {
        const char *p;
        size_t n = cli_bytes_next(v, &in, &p, &eof), end = n;
        while (!eof && end > 0 && !is_sep(p[end - 1]) && p[end - 1]) end--;
        if (!eof && !end && n < (1u << 20)) continue; /* a longer word is no id: read_ids says so */
        read_ids(v, p, end ? end : n, vocab, &count, &ids, &stop);
        cli_bytes_take(&in, end ? end : n);
        if (pieces && ids.n) {
            put_text(v, t, &ids, &last);
            cli_flush_or_die(v);
        }
    }
    if (!pieces) put_text(v, t, &ids, &last);
    cli_lines_free(&in);
    tf_ids_free(&ids);
    tf_tokenizer_free(t);
    return 0;
}
