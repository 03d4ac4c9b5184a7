/* libFuzzer target for the tokenizers. The input is split at NUL bytes into
 * vocab.json, merges.txt and a text: the loaders must accept or reject the
 * files with an error, never crash; a loaded byte-level tokenizer must encode
 * the text and decode it back byte for byte. The text is also run through
 * the real GPT-2 (round trip checked) and BERT tokenizers when ../shared is there. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tformer.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void put(const char *dir, const char *name, const uint8_t *p, size_t n) {
    char path[256];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (f) fwrite(p, 1, n, f), fclose(f);
}

static void roundtrip(tf_tokenizer *t, const uint8_t *text, size_t n, int must_match) {
    tf_ids ids = {0};
    char *back = NULL;
    size_t blen = 0;
    if (tf_tokenizer_encode(t, (const char *)text, n, &ids) == 0 &&
        tf_tokenizer_decode(t, ids.v, ids.n, &back, &blen) == 0 && must_match &&
        (blen != n || memcmp(back, text, n)))
        abort(); /* a lossless tokenizer lost bytes */
    free(back);
    tf_ids_free(&ids);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static char dir[64];
    static tf_tokenizer *gpt2, *bert;
    static int init;
    if (!init) {
        init = 1;
        snprintf(dir, sizeof dir, "/tmp/tformer_fuzz_tok_%d", (int)getpid());
        char cmd[128];
        snprintf(cmd, sizeof cmd, "mkdir -p %s", dir);
        if (system(cmd)) return 0;
        gpt2 = tf_tokenizer_load("../shared/data/gpt2");
        bert = tf_tokenizer_load("../shared/data/bert/bert-base-uncased-vocab.txt");
    }
    const uint8_t *z1 = memchr(data, 0, size);
    const uint8_t *z2 = z1 ? memchr(z1 + 1, 0, size - (size_t)(z1 + 1 - data)) : NULL;
    const uint8_t *text = z2 ? z2 + 1 : data;
    size_t tlen = size - (size_t)(text - data);
    if (z2) {
        put(dir, "vocab.json", data, (size_t)(z1 - data));
        put(dir, "merges.txt", z1 + 1, (size_t)(z2 - z1 - 1));
        tf_tokenizer *t = tf_tokenizer_load(dir);
        if (t) {
            roundtrip(t, text, tlen, 1);
            tf_tokenizer_free(t);
        }
    }
    if (gpt2) roundtrip(gpt2, text, tlen, 1);
    if (bert) roundtrip(bert, text, tlen, 0);
    return 0;
}
