/* What several verbs share: errors, threads, loading a model or a tokenizer,
 * reading standard input. */
#include <stdlib.h>

#include "cli.h"

_Noreturn void cli_die(const cli_verb *v, const char *msg) {
    fprintf(stderr, "tformer %s: %s\n", v->name, msg);
    exit(1);
}

int cli_threads(const cli_val *threads) {
    const char *env = getenv("TFORMER_THREADS");
    return threads->given || !env ? (int)threads->i : atoi(env);
}

tf_tokenizer *cli_load_tokenizer(const cli_verb *v, const char *spec) {
    tf_tokenizer *t = tf_tokenizer_load(spec);
    if (!t) cli_die(v, tf_error());
    return t;
}

tf_gpt *cli_load_model(const cli_verb *v, const char *dir, tf_tokenizer **tok) {
    tf_gpt *m = tf_gpt_load_hf(dir);
    if (!m) cli_die(v, tf_error());
    *tok = cli_load_tokenizer(v, dir);
    if (tf_tokenizer_vocab_size(*tok) > m->cfg.vocab_size) {
        fprintf(stderr, "tformer %s: the tokenizer in %s has %d tokens, the model only %d\n", v->name, dir,
                tf_tokenizer_vocab_size(*tok), m->cfg.vocab_size);
        exit(1);
    }
    return m;
}

char *cli_read_stdin(const cli_verb *v, size_t *len) {
    size_t cap = 1 << 16, n = 0, got;
    char *buf = malloc(cap);
    while (buf && (got = fread(buf + n, 1, cap - n - 1, stdin)) > 0) {
        n += got;
        if (n + 1 == cap) {
            char *nb = realloc(buf, cap *= 2);
            if (!nb) free(buf);
            buf = nb;
        }
    }
    if (!buf || ferror(stdin)) cli_die(v, "cannot read standard input");
    buf[n] = 0;
    *len = n;
    return buf;
}
