/* tformer tokenizer-train: learn a vocabulary from text files (docs/tokenizers.md). */
#include <string.h>

#include "cli.h"

const cli_flag cmd_tokenizer_train_flags[] = {
    {"out", CLI_STRING, "DIR", NULL, "where the vocabulary is written (created if missing)"},
    CLI_OVERWRITE_ROW,
    CLI_END,
};

static const char *const KINDS[] = {"char", "bpe", "byte-bpe", "wordpiece", NULL}; /* tf_tokenizer_kind */
_Static_assert(TF_TOKENIZER_CHAR == 0 && TF_TOKENIZER_BPE == 1 && TF_TOKENIZER_BYTE_BPE == 2 &&
                   TF_TOKENIZER_WORDPIECE == 3 && sizeof(tf_tokenizer_kind) == sizeof(int), "KINDS by value");
static const tf_field OPTION_ROWS[] = {
    TF_FIELD_ROW(tf_tokenizer_train_opts, kind, TF_FIELD_ENUM, "type", NULL, NULL, KINDS,
                 "char: the corpus' characters; bpe: the lecture decks' sub-words; byte-bpe: GPT-2's; wordpiece: BERT's",
                 TF_FIELD_REQUIRED, NULL),
    TF_FIELD_ROW(tf_tokenizer_train_opts, vocab_size, TF_FIELD_INT, "vocab_size", "0", "[0,inf)", NULL,
                 "the vocabulary's size (bpe, byte-bpe, wordpiece)", 0, NULL),
    TF_FIELD_ROW(tf_tokenizer_train_opts, min_frequency, TF_FIELD_INT64, "min_frequency", "0", "[0,inf)", NULL,
                 "merges need at least this count; 0: any", 0, NULL),
};
static const tf_field_table OPTIONS = {"tokenizer", OPTION_ROWS, (int)(sizeof OPTION_ROWS / sizeof OPTION_ROWS[0])};

static tf_tokenizer_train_opts g_opts;
static tf_fields g_tables[1];

int cmd_tokenizer_train_tables(const tf_fields **t) {
    g_opts = (tf_tokenizer_train_opts){TF_TOKENIZER_CHAR, 0, 0};
    g_tables[0] = (tf_fields){&OPTIONS, &g_opts};
    tf_fields_defaults(g_tables, 1);
    *t = g_tables;
    return 1;
}

/* The size written, on stderr, and why when it is not --vocab-size: the special tokens and
 * the alphabet come first whatever the size asked (Hugging Face's trainers' rule), and merges
 * stop when no pair is left that occurs --min-frequency times. */
static void report_size(const cli_args *a, const tf_tokenizer_train_opts *o) {
    tf_tokenizer *tok = tf_tokenizer_load(a->v[0].text);
    if (!tok) cli_die(a->verb, tf_error());
    int n = (int)tf_tokenizer_vocab_size(tok);
    tf_tokenizer_free(tok);
    if (o->kind == TF_TOKENIZER_CHAR || n == o->vocab_size) {
        fprintf(stderr, "tformer %s: %s: %d tokens\n", a->verb->name, a->v[0].text, n);
        return;
    }
    fprintf(stderr, "tformer %s: %s: %d tokens, not --vocab-size %d: %s\n", a->verb->name, a->v[0].text, n,
            o->vocab_size, n > o->vocab_size ? "the special tokens and the alphabet alone are more"
                                             : "no pair is left that occurs --min-frequency times (at least once)");
}

int cmd_tokenizer_train(const cli_args *a) {
    cli_apply(a);
    const tf_tokenizer_train_opts *o = &g_opts;
    if (o->kind != TF_TOKENIZER_CHAR && o->vocab_size <= 0)
        cli_usage_error(a, "--type %s needs --vocab-size", KINDS[o->kind]);
    cli_run_folder(a, TF_RUN_FOLDER_TOKENIZER, a->v[0].text, 0, 1);
    char files[1200], size[160] = "";
    cli_files_said(a->operands, a->n_operands, files, sizeof files);
    if (o->kind != TF_TOKENIZER_CHAR)
        snprintf(size, sizeof size, ", %d tokens at most (--vocab-size), merges of pairs seen %lld times or more%s",
                 o->vocab_size, (long long)(o->min_frequency > 1 ? o->min_frequency : 1),
                 o->min_frequency > 1 ? " (--min-frequency)" : " (any pair: --min-frequency 0)");
    size_t end = strlen(a->v[0].text);
    while (end > 1 && a->v[0].text[end - 1] == '/') end--;
    cli_say_plain(a->verb, 0, "%s (--type: %s)%s; text from %s; writing to %.*s/", KINDS[o->kind],
                  o->kind == TF_TOKENIZER_CHAR ? "the corpus' characters" : o->kind == TF_TOKENIZER_BPE
                  ? "the lecture decks' sub-words" : o->kind == TF_TOKENIZER_BYTE_BPE ? "GPT-2's" : "BERT's",
                  size, files, (int)end, a->v[0].text);
    if (tf_tokenizer_train(o, (const char *const *)a->operands, a->n_operands, a->v[0].text))
        cli_die(a->verb, tf_error());
    report_size(a, o);
    return 0;
}
