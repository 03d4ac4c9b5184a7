/* libFuzzer target for SentencePiece model files (tf_spm_parse: the
 * ModelProto read by hand, the precompiled charsmap's trie checked). The
 * input is the file. A model must load or be refused with an error naming
 * the file, never crash; a model that loads must encode texts (fixed ones
 * and the input's last 64 bytes) into ids inside the vocabulary whose pieces
 * spell the normalised text (byte-fallback pieces as their bytes), and decode
 * them back without error.
 *
 * Seeds (tests/fuzz/corpus_spm): tiny_rules.spm and tiny_raw.spm of
 * tests/fixtures_spm (a custom charsmap), a hand-made model of a few pieces
 * (the shape of test_spm_files.c's), and one trained by sentencepiece with
 * byte_fallback and user-defined symbols (vocab 400, "identity", 200 lines). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tformer.h"
#include "tokenizer/spm.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define WHERE "fuzz.spm"

static int hex(char c) { return c >= '0' && c <= '9' ? c - '0' : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1; }

/* The pieces' texts joined, byte pieces (and byte-fallback unknowns) as their bytes. */
static void join(const tf_spm *m, const tf_spm_pieces *p, tf_buf *out) {
    for (size_t i = 0; i < p->n; i++) {
        const char *t = p->text.p + p->off[i];
        int32_t id = p->id[i];
        int byte = p->len[i] == 6 && !memcmp(t, "<0x", 3) && t[5] == '>' && hex(t[3]) >= 0 && hex(t[4]) >= 0 &&
                   (m->type[id] == TF_SPM_BYTE || (id == m->unk_id && m->byte_fallback));
        char c = byte ? (char)(hex(t[3]) * 16 + hex(t[4])) : 0;
        if (byte ? tf_buf_put(out, &c, 1) : tf_buf_put(out, t, p->len[i])) abort();
    }
}

static void check_text(const tf_spm *m, const char *s, size_t n) {
    tf_spm_pieces p = {0};
    tf_buf norm = {0}, joined = {0}, back = {0};
    if (tf_spm_encode(m, s, n, &p) || tf_spm_normalize(m, s, n, &norm)) abort();
    const char **pc = malloc((p.n + 1) * sizeof *pc);
    uint32_t *pl = malloc((p.n + 1) * sizeof *pl);
    if (!pc || !pl) abort();
    for (size_t i = 0; i < p.n; i++) {
        if (p.id[i] < 0 || p.id[i] >= m->n) abort(); /* an id outside the vocabulary */
        pc[i] = m->piece[p.id[i]], pl[i] = m->len[p.id[i]];
    }
    join(m, &p, &joined);
    if (joined.n != norm.n || (norm.n && memcmp(joined.p, norm.p, norm.n))) abort(); /* pieces lost text */
    if (tf_spm_decode_pieces(m, pc, pl, p.n, &back)) abort();
    free(pc), free(pl), free(norm.p), free(joined.p), free(back.p);
    tf_spm_pieces_free(&p);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static const char *const texts[] = {"", " ", "Hello world", "  two  spaces\tand a tab ",
                                        "Stra\xC3\x9F" "e \xE2\x91\xA0\xE2\x91\xA1 \xEF\xBD\x81", "\xF0\x9F\x98\x80 x \xFF\xC3",
                                        "<sep> ss sss \xE2\x96\x81"};
    tf_spm *m = tf_spm_parse(data, size, WHERE);
    if (!m) {
        if (!strstr(tf_error(), WHERE)) abort(); /* an error that does not name the file */
        return 0;
    }
    for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++) check_text(m, texts[i], strlen(texts[i]));
    size_t k = size < 64 ? size : 64;
    check_text(m, (const char *)data + size - k, k);
    tf_spm_free(m);
    return 0;
}
