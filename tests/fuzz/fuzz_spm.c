/* libFuzzer target for SentencePiece model files (tf_spm_parse: the
 * ModelProto read by hand, the precompiled charsmap's trie checked). The
 * input is the file. A model must load or be refused with an error naming
 * the file, never crash; a model that loads must encode texts (fixed ones
 * and the input's last 64 bytes) into ids inside the vocabulary whose pieces
 * spell the normalised text (byte-fallback pieces as their bytes), and decode
 * them back without error. The input's last 64 bytes also go through a Marian
 * folder's two sides (tests/fixtures_spm's models as source.spm / target.spm
 * with tests/fixtures_marian_spm's vocab.json, copied to /tmp once): encoded
 * ids inside the vocabulary, decoded without error, and the bytes read as
 * ids decoded too.
 *
 * Seeds (tests/fuzz/corpus_spm): tiny_rules.spm and tiny_raw.spm of
 * tests/fixtures_spm (a custom charsmap), a hand-made model of a few pieces
 * (the shape of test_spm_files.c's), and one trained by sentencepiece with
 * byte_fallback and user-defined symbols (vocab 400, "identity", 200 lines). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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

static int mkdir_p(const char *dir) {
    char cmd[128];
    snprintf(cmd, sizeof cmd, "mkdir -p %s", dir);
    return system(cmd);
}

static int copy(const char *from, const char *dir, const char *name) {
    char to[256], buf[65536];
    snprintf(to, sizeof to, "%s/%s", dir, name);
    FILE *in = fopen(from, "rb"), *out = in ? fopen(to, "wb") : NULL;
    size_t n;
    int ok = in && out;
    while (ok && (n = fread(buf, 1, sizeof buf, in)) > 0) ok = fwrite(buf, 1, n, out) == n;
    if (in) fclose(in);
    if (out) ok &= fclose(out) == 0;
    return ok;
}

/* The Marian sides, loaded once (NULL when the fixtures are not there). */
static void marian_sides(tf_tokenizer **src, tf_tokenizer **tgt) {
    static char dir[64];
    static tf_tokenizer *s, *t;
    if (!dir[0]) {
        snprintf(dir, sizeof dir, "/tmp/tformer_fuzz_spm_%d", (int)getpid());
        char path[128];
        int ok = !mkdir_p(dir) && copy("tests/fixtures_spm/en_nfkc.spm", dir, "source.spm") &&
                 copy("tests/fixtures_spm/de_user.spm", dir, "target.spm") &&
                 copy("tests/fixtures_marian_spm/vocab.json", dir, "vocab.json");
        snprintf(path, sizeof path, "%s/target.spm", dir);
        s = ok ? tf_tokenizer_load(dir) : NULL, t = ok ? tf_tokenizer_load(path) : NULL;
    }
    *src = s, *tgt = t;
}

static void check_marian(tf_tokenizer *t, const uint8_t *text, size_t n) {
    tf_ids ids = {0};
    char *back = NULL;
    int32_t v = tf_tokenizer_vocab_size(t), raw[16];
    if (tf_tokenizer_encode(t, (const char *)text, n, &ids)) abort();
    for (size_t i = 0; i < ids.n; i++)
        if (ids.v[i] < 0 || ids.v[i] >= v) abort();
    if (tf_tokenizer_decode(t, ids.v, ids.n, &back, NULL)) abort();
    free(back), tf_ids_free(&ids);
    size_t k = n / 2 < 16 ? n / 2 : 16; /* the bytes as ids, two at a time */
    for (size_t i = 0; i < k; i++) raw[i] = (int32_t)((text[2 * i] | text[2 * i + 1] << 8) % (uint32_t)v);
    if (tf_tokenizer_decode(t, raw, k, &back, NULL)) abort();
    free(back);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static const char *const texts[] = {"", " ", "Hello world", "  two  spaces\tand a tab ",
                                        ("Stra\xC3\x9F" "e \xE2\x91\xA0\xE2\x91\xA1 \xEF\xBD\x81"), "\xF0\x9F\x98\x80 x \xFF\xC3",
                                        "<sep> ss sss \xE2\x96\x81"};
    tf_tokenizer *src, *tgt;
    size_t k = size < 64 ? size : 64;
    marian_sides(&src, &tgt);
    if (src && tgt) check_marian(src, data + size - k, k), check_marian(tgt, data + size - k, k);
    tf_spm *m = tf_spm_parse(data, size, WHERE);
    if (!m) {
        if (!strstr(tf_error(), WHERE)) abort(); /* an error that does not name the file */
        return 0;
    }
    for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++) check_text(m, texts[i], strlen(texts[i]));
    check_text(m, (const char *)data + size - k, k);
    tf_spm_free(m);
    return 0;
}
