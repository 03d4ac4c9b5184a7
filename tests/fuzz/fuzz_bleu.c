/* libFuzzer target for BLEU and chrF: the input is split at its first NUL
 * byte into a hypothesis and a reference; its first byte picks the
 * tokenisation, smoothing and lower-casing. Invalid UTF-8 must be an error,
 * never a crash; scores stay in [0, 100]; a text scored against itself
 * matches every one of its n-grams. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tformer.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1) return 0;
    tf_bleu_opts o = {.tokenize = (tf_bleu_tokenize)(data[0] % 3), .smooth = (tf_bleu_smooth)(data[0] / 3 % 4),
                      .lowercase = data[0] / 12 % 2};
    const char *text = (const char *)data + 1;
    size_t n = size - 1, cut = 0;
    while (cut < n && text[cut]) cut++;
    const char *hyp = text, *ref = cut < n ? text + cut + 1 : text;
    size_t hl = cut, rl = cut < n ? n - cut - 1 : cut;
    tf_bleu_stats s = {0}, self = {0};
    tf_chrf_stats c = {0};
    int bad = tf_bleu_add(&s, &o, hyp, hl, &ref, &rl, 1);
    if (!bad && tf_chrf_add(&c, o.lowercase, hyp, hl, &ref, &rl, 1)) abort(); /* what BLEU took, chrF takes */
    tf_bleu_score r;
    tf_bleu_compute(&s, &o, &r);
    if (!(r.score >= 0 && r.score <= 100.0000001) || !(tf_chrf_compute(&c) >= 0 && tf_chrf_compute(&c) <= 100.0000001)) abort();
    if (!tf_bleu_add(&self, &o, ref, rl, &ref, &rl, 1))
        for (int k = 0; k < TF_BLEU_ORDER; k++)
            if (self.correct[k] != self.total[k] || self.hyp_len != self.ref_len) abort();
    return 0;
}
