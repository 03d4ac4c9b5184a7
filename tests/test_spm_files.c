/* SentencePiece model files that are malformed or unsupported: crafted
 * protobuf messages (truncated varints, wrong wire types, lengths past the
 * end, groups, bad pieces, a BPE model, broken charsmap tries) are errors
 * naming the file; every prefix and a corruption at every byte of a real
 * model load or fail cleanly. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test.h"
#include "tformer.h"
#include "tokenizer/spm.h"

#define WHERE "crafted.spm"

/* A protobuf message being written. */
typedef struct {
    uint8_t b[8192];
    size_t n;
} msg;

static void put_varint(msg *w, uint64_t v) {
    do {
        w->b[w->n++] = (uint8_t)((v & 0x7F) | (v > 0x7F ? 0x80 : 0));
        v >>= 7;
    } while (v);
}
static void put_key(msg *w, unsigned field, int wire) { put_varint(w, (uint64_t)field << 3 | (unsigned)wire); }
static void put_bytes(msg *w, unsigned field, const void *p, size_t n) {
    put_key(w, field, 2);
    put_varint(w, n);
    memcpy(w->b + w->n, p, n);
    w->n += n;
}
static void put_uint(msg *w, unsigned field, uint64_t v) { put_key(w, field, 0), put_varint(w, v); }
static void put_float(msg *w, unsigned field, float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    put_key(w, field, 5);
    for (int i = 0; i < 4; i++) w->b[w->n++] = (uint8_t)(u >> (8 * i));
}
static void put_msg(msg *w, unsigned field, const msg *m) { put_bytes(w, field, m->b, m->n); }

static void put_piece(msg *w, const char *text, float score, int type) {
    msg p = {.n = 0};
    if (text) put_bytes(&p, 1, text, strlen(text));
    put_float(&p, 2, score);
    if (type) put_uint(&p, 3, (uint64_t)type);
    put_msg(w, 1, &p);
}

/* <unk>, <s>, </s>, then a b x y, and a trainer_spec with model_type unigram. */
static void base_model(msg *w) {
    w->n = 0;
    put_piece(w, "<unk>", 0, TF_SPM_UNKNOWN), put_piece(w, "<s>", 0, TF_SPM_CONTROL), put_piece(w, "</s>", 0, TF_SPM_CONTROL);
    put_piece(w, "a", -1, 0), put_piece(w, "b", -2, 0), put_piece(w, "x", -3, 0), put_piece(w, "y", -3, 0);
    msg t = {.n = 0};
    put_uint(&t, 3, 1);
    put_msg(w, 2, &t);
}

/* The bytes fail to load with an error naming the file and saying want. */
static int refused(const msg *w, const char *want) {
    tf_spm *m = tf_spm_parse(w->b, w->n, WHERE);
    if (m) {
        tf_spm_free(m);
        fprintf(stderr, "    loaded, expected \"%s\"\n", want);
        return 0;
    }
    if (strstr(tf_error(), WHERE) && strstr(tf_error(), want)) return 1;
    fprintf(stderr, "    error \"%s\", expected \"%s\"\n", tf_error(), want);
    return 0;
}

TEST(spm_malformed_protobuf_is_an_error) {
    msg w = {.n = 0};
    base_model(&w);
    tf_spm *m = tf_spm_parse(w.b, w.n, WHERE);
    CHECK(m && m->n == 7 && m->unk_id == 0 && m->add_dummy_prefix && m->escape_whitespaces && !m->cmap.units);
    tf_spm_free(m);
    msg bad = w;
    bad.b[bad.n++] = 0x0A; /* pieces, length missing */
    CHECK(refused(&bad, "truncated varint"));
    bad = w, bad.b[bad.n++] = 0x0A, bad.b[bad.n++] = 0x05, bad.b[bad.n++] = 'a';
    CHECK(refused(&bad, "runs past the end"));
    bad = w, put_uint(&bad, 1, 7); /* pieces as a varint */
    CHECK(refused(&bad, "pieces (field 1)") && strstr(tf_error(), "wire type 0, expected 2"));
    bad = w, bad.b[bad.n++] = 0x0B; /* a group */
    CHECK(refused(&bad, "wire type 3"));
    bad = w, bad.b[bad.n++] = 0x00;
    CHECK(refused(&bad, "invalid field number 0"));
    bad = w, bad.b[bad.n++] = 0x0D, bad.b[bad.n++] = 1; /* field 1, fixed32, 1 byte of 4 */
    CHECK(refused(&bad, "truncated 4-byte value"));
    bad = w;
    for (int i = 0; i < 11; i++) bad.b[bad.n++] = 0xFF;
    CHECK(refused(&bad, "overflows 64 bits"));
    msg p = {.n = 0};
    put_bytes(&p, 1, "z", 1), put_uint(&p, 2, 5); /* score as a varint */
    bad = w, put_msg(&bad, 1, &p);
    CHECK(refused(&bad, "pieces.score"));
    p.n = 0, put_bytes(&p, 1, "z", 1), put_uint(&p, 3, 9);
    bad = w, put_msg(&bad, 1, &p);
    CHECK(refused(&bad, "type 9 is not a SentencePiece type"));
    msg n = {.n = 0};
    put_bytes(&n, 3, "x", 1); /* add_dummy_prefix as bytes */
    bad = w, put_msg(&bad, 3, &n);
    CHECK(refused(&bad, "normalizer_spec.add_dummy_prefix"));
}

TEST(spm_bad_pieces_and_unsupported_models) {
    msg w, t = {.n = 0};
    base_model(&w);
    msg bad = w;
    put_piece(&bad, "", -1, 0);
    CHECK(refused(&bad, "piece 7 is empty"));
    bad = w, put_piece(&bad, "b", -1, 0);
    CHECK(refused(&bad, "piece 7 \"b\" repeats piece 4"));
    bad = w, put_piece(&bad, "<unk2>", 0, TF_SPM_UNKNOWN);
    CHECK(refused(&bad, "both the unknown piece"));
    bad = w, put_piece(&bad, "<0x41>", 0, TF_SPM_BYTE);
    CHECK(refused(&bad, "without byte_fallback"));
    put_uint(&t, 35, 1); /* byte_fallback */
    bad = w, put_msg(&bad, 2, &t), put_piece(&bad, "<0x4g>", 0, TF_SPM_BYTE);
    CHECK(refused(&bad, "is not <0xXX>"));
    bad = w, put_msg(&bad, 2, &t), put_piece(&bad, "<0x41>", 0, TF_SPM_BYTE);
    tf_spm *m = tf_spm_parse(bad.b, bad.n, WHERE); /* trainer_spec merged: byte fallback on, model unigram */
    CHECK(m && m->byte_fallback && m->byte_id[0x41] == 7);
    tf_spm_free(m);
    bad.n = 0;
    put_piece(&bad, "a", -1, 0);
    CHECK(refused(&bad, "no unknown piece"));
    bad.n = 0;
    CHECK(refused(&bad, "no pieces"));
    t.n = 0, put_uint(&t, 3, 2);
    bad = w, put_msg(&bad, 2, &t);
    CHECK(refused(&bad, "model_type is BPE; only UNIGRAM models are supported"));
    t.n = 0, put_uint(&t, 3, 9);
    bad = w, put_msg(&bad, 2, &t);
    CHECK(refused(&bad, "model_type 9 is not"));
    t.n = 0, put_uint(&t, 24, 1);
    bad = w, put_msg(&bad, 2, &t);
    CHECK(refused(&bad, "treat_whitespace_as_suffix"));
    msg d = {.n = 0};
    put_bytes(&d, 2, "\x04\0\0\0abcdefgh", 12);
    bad = w, put_msg(&bad, 5, &d);
    CHECK(refused(&bad, "denormalizer_spec"));
}

/* A charsmap for "x" -> "y": 512 units, root at 256, 'x' at 256^0x78 whose
 * child (the leaf) is at c; units changed by the caller to break it. */
typedef struct {
    uint32_t u[512];
    size_t n_units;
    char text[8];
    size_t n_text;
} charsmap;

static void good_charsmap(charsmap *c) {
    memset(c, 0, sizeof *c);
    c->n_units = 512;
    uint32_t root = 256, p = root ^ 0x78, leaf = 300;
    c->u[0] = root << 10;
    c->u[p] = 0x78u | (1u << 8) | ((p ^ leaf) << 10);
    c->u[leaf] = (1u << 31) | 0; /* replacement at byte 0 */
    memcpy(c->text, "y\0", 2), c->n_text = 2;
}

static void put_charsmap(msg *w, const charsmap *c) {
    uint8_t blob[4 + 4 * 512 + 8];
    size_t n = 4 * c->n_units;
    for (int i = 0; i < 4; i++) blob[i] = (uint8_t)(n >> (8 * i));
    for (size_t k = 0; k < c->n_units; k++)
        for (int i = 0; i < 4; i++) blob[4 + 4 * k + (size_t)i] = (uint8_t)(c->u[k] >> (8 * i));
    memcpy(blob + 4 + n, c->text, c->n_text);
    msg norm = {.n = 0};
    put_bytes(&norm, 2, blob, 4 + n + c->n_text);
    put_msg(w, 3, &norm);
}

TEST(spm_charsmap_trie_checked) {
    msg w, bad;
    charsmap c;
    base_model(&w);
    good_charsmap(&c);
    bad = w, put_charsmap(&bad, &c);
    tf_spm *m = tf_spm_parse(bad.b, bad.n, WHERE);
    tf_buf out = {0};
    CHECK(m && m->cmap.n_units == 512 && tf_spm_normalize(m, "axbx", 4, &out) == 0);
    CHECKF(!strcmp(out.p, "\xE2\x96\x81" "ayby"), "got %s", out.p);
    free(out.p), tf_spm_free(m);
    good_charsmap(&c), c.u[0] = 600u << 10;
    bad = w, put_charsmap(&bad, &c);
    CHECK(refused(&bad, "root offset 600 is outside its 512 units"));
    good_charsmap(&c), c.u[256 ^ 0x78] = 0x78u | (1u << 8) | (((256u ^ 0x78) ^ 700u) << 10);
    bad = w, put_charsmap(&bad, &c);
    CHECK(refused(&bad, "trie offset 700"));
    good_charsmap(&c), c.u[300] = (1u << 31) | 50;
    bad = w, put_charsmap(&bad, &c);
    CHECK(refused(&bad, "replacement at 50 is not a NUL-terminated string"));
    good_charsmap(&c), c.n_text = 1; /* "y" without its NUL */
    bad = w, put_charsmap(&bad, &c);
    CHECK(refused(&bad, "replacement at 0 is not a NUL-terminated string"));
    good_charsmap(&c), c.n_units = 300; /* the root's children run past the array */
    bad = w, put_charsmap(&bad, &c);
    CHECK(refused(&bad, "children outside its 300 units"));
    msg n = {.n = 0};
    put_bytes(&n, 2, "\x03\0\0\0abcdef", 10);
    bad = w, put_msg(&bad, 3, &n);
    CHECK(refused(&bad, "trie size 3 is not a positive multiple of 4"));
    n.n = 0, put_bytes(&n, 2, "\x40\0\0\0abcdef", 10);
    bad = w, put_msg(&bad, 3, &n);
    CHECK(refused(&bad, "trie size 64"));
    n.n = 0, put_bytes(&n, 2, "\x04\0", 2);
    bad = w, put_msg(&bad, 3, &n);
    CHECK(refused(&bad, "precompiled_charsmap of 2 bytes is too short"));
}

/* Every prefix of a real model and a corruption at every byte: loaded or refused naming the file, never a crash. */
TEST(spm_truncated_and_corrupted_files) {
    size_t n;
    char *data = test_slurp("tests/fuzz/corpus_spm/tiny_rules.spm", &n);
    CHECK(data && n > 1000);
    int loaded = 0, refused_n = 0;
    uint8_t *copy = malloc(n);
    for (size_t cut = 0; cut <= n; cut++) {
        tf_spm *m = tf_spm_parse((const uint8_t *)data, cut, WHERE);
        if (m) {
            tf_spm_pieces p = {0};
            CHECK(tf_spm_encode(m, "Hello \xC3\x9F world", 14, &p) == 0);
            tf_spm_pieces_free(&p);
            loaded++;
        } else {
            CHECKF(strstr(tf_error(), WHERE) != NULL, "prefix %zu: %s", cut, tf_error());
            refused_n++;
        }
        tf_spm_free(m);
    }
    CHECK(loaded > 0 && refused_n > 0);
    for (size_t i = 0; i < n; i++) {
        memcpy(copy, data, n);
        copy[i] ^= (uint8_t)(i % 7 == 0 ? 0x80 : 0xFF);
        tf_spm *m = tf_spm_parse(copy, n, WHERE);
        if (m) {
            tf_spm_pieces p = {0};
            tf_buf b = {0};
            CHECK(tf_spm_encode(m, "Hello \xE2\x91\xA0\xE2\x91\xA1 w\xC3\xB6rld\xFF", 20, &p) == 0);
            CHECK(tf_spm_decode_pieces(m, (const char *const *)m->piece, m->len, (size_t)m->n, &b) == 0);
            tf_spm_pieces_free(&p), free(b.p);
        } else {
            CHECKF(strstr(tf_error(), WHERE) != NULL, "byte %zu: %s", i, tf_error());
        }
        tf_spm_free(m);
    }
    free(copy), free(data);
}

/* Through the tokenizer loader: a missing file, a file that is no model. */
TEST(spm_loader_errors_name_the_file) {
    CHECK(tf_tokenizer_load("tests/fuzz/corpus_spm/missing.spm") == NULL && strstr(tf_error(), "missing.spm"));
    char path[] = "/tmp/tformer_spm_XXXXXX";
    CHECK(test_temp_file(path) == 0);
    char name[64];
    snprintf(name, sizeof name, "%s.spm", path);
    FILE *f = fopen(name, "wb");
    CHECK(f != NULL);
    fputs("{\"not\": \"protobuf\"}", f);
    fclose(f);
    CHECK(tf_tokenizer_load(name) == NULL && strstr(tf_error(), name) && strstr(tf_error(), "wire type 3"));
    remove(name), remove(path);
}
