/* libFuzzer target for the Hugging Face tokenizer.json loader. The input is
 * split at its first NUL byte into tokenizer.json and a text: the loader must
 * accept or reject the file with an error, never crash; a loaded tokenizer
 * must encode the text, and a byte-level one decode it back byte for byte
 * unless the file names lstrip / rstrip / add_prefix_space (which drop or
 * add spaces). A Unigram one (normalizers, Metaspace, decoders) must give ids
 * inside its vocabulary, decode them, and encode its pair layout. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tformer.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int has(const uint8_t *p, size_t n, const char *needle) {
    size_t m = strlen(needle);
    for (size_t i = 0; i + m <= n; i++)
        if (!memcmp(p + i, needle, m)) return 1;
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static char dir[64], path[128];
    if (!dir[0]) {
        snprintf(dir, sizeof dir, "/tmp/tformer_fuzz_hfjson_%d", (int)getpid());
        char cmd[128];
        snprintf(cmd, sizeof cmd, "mkdir -p %s", dir);
        if (system(cmd)) return 0;
        snprintf(path, sizeof path, "%s/tokenizer.json", dir);
    }
    const uint8_t *z = memchr(data, 0, size);
    size_t jlen = z ? (size_t)(z - data) : size;
    const uint8_t *text = z ? z + 1 : data + size;
    size_t tlen = size - (size_t)(text - data);
    FILE *f = fopen(path, "wb");
    if (!f) return 0;
    fwrite(data, 1, jlen, f);
    fclose(f);
    tf_tokenizer *t = tf_tokenizer_load(dir);
    if (!t) return 0;
    tf_ids ids = {0};
    char *back = NULL;
    size_t blen = 0;
    int strips = has(data, jlen, "strip\"") || has(data, jlen, "add_prefix_space\"");
    if (tf_tokenizer_encode(t, (const char *)text, tlen, &ids) == 0 &&
        tf_tokenizer_decode(t, ids.v, ids.n, &back, &blen) == 0 && tf_tokenizer_kind_of(t) == TF_TOKENIZER_BYTE_BPE &&
        !strips && (blen != tlen || memcmp(back, text, tlen)))
        abort(); /* a lossless tokenizer lost bytes */
    if (tf_tokenizer_kind_of(t) == TF_TOKENIZER_SPM) {
        for (size_t i = 0; i < ids.n; i++)
            if (ids.v[i] < 0 || ids.v[i] >= tf_tokenizer_vocab_size(t)) abort(); /* an id outside the vocabulary */
        tf_ids p = {0}, ty = {0};
        if (!tf_tokenizer_encode_pair(t, (const char *)text, tlen, (const char *)text, tlen / 2, 9, &p, &ty) && p.n > 9 &&
            tf_tokenizer_special_id(t, "sep") >= 0)
            abort(); /* truncation past max_len */
        tf_ids_free(&p), tf_ids_free(&ty);
    }
    (void)tf_tokenizer_special_id(t, "cls");
    free(back);
    tf_ids_free(&ids);
    tf_tokenizer_free(t);
    return 0;
}
