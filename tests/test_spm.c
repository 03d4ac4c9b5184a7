/* SentencePiece unigram models against sentencepiece's answers
 * (tests/fixtures_spm, written by tests/ref/gen_spm_fixtures.py): ids,
 * pieces and decoded text of every case, id for id; a perturbed score makes
 * the comparison fail; malformed files are errors naming the file. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test.h"
#include "tformer.h"
#include "tokenizer/spm.h"

#define FXS "tests/fixtures_spm"

static const char *const MODELS[] = {"en_nfkc.spm", "de_user.spm", "tiny_rules.spm", "tiny_raw.spm"};

/* A field's bytes: the string at key, else the hex string at hex_key (malloc'd). */
static char *field_bytes(const cJSON *c, const char *key, const char *hex_key, size_t *n) {
    const cJSON *s = cJSON_GetObjectItemCaseSensitive(c, key);
    if (cJSON_IsString(s)) return *n = strlen(s->valuestring), strdup(s->valuestring);
    const char *h = cJSON_GetObjectItemCaseSensitive(c, hex_key)->valuestring;
    *n = strlen(h) / 2;
    char *b = malloc(*n + 1);
    for (size_t i = 0; b && i < *n; i++) {
        unsigned v;
        sscanf(h + 2 * i, "%2x", &v);
        b[i] = (char)v;
    }
    return b;
}

/* The i-th element of a list of strings (or of hex strings). */
static char *list_item(const cJSON *c, const char *key, const char *hex_key, int i, size_t *n) {
    const cJSON *l = cJSON_GetObjectItemCaseSensitive(c, key);
    int hex = !l;
    const cJSON *e = cJSON_GetArrayItem(hex ? cJSON_GetObjectItemCaseSensitive(c, hex_key) : l, i);
    cJSON *one = cJSON_CreateObject();
    cJSON_AddStringToObject(one, hex ? "h" : "s", e->valuestring);
    char *b = field_bytes(one, "s", "h", n);
    cJSON_Delete(one);
    return b;
}

static int same(const char *a, size_t na, const char *b, size_t nb) { return na == nb && !memcmp(a, b, na); }

/* One encode case: ids, pieces, decode(ids). 0 when all equal. */
static int check_encode(const tf_spm *m, const cJSON *c) {
    size_t n, dn, k;
    char *text = field_bytes(c, "text", "hex", &n), *dec = field_bytes(c, "decoded", "decoded_hex", &dn);
    const cJSON *ids = cJSON_GetObjectItemCaseSensitive(c, "ids");
    tf_spm_pieces p = {0};
    tf_buf back = {0};
    int bad = tf_spm_encode(m, text, n, &p) || (int)p.n != cJSON_GetArraySize(ids);
    for (size_t i = 0; !bad && i < p.n; i++) {
        char *want = list_item(c, "pieces", "pieces_hex", (int)i, &k);
        bad = p.id[i] != cJSON_GetArrayItem(ids, (int)i)->valueint || !same(p.text.p + p.off[i], p.len[i], want, k);
        free(want);
    }
    const char **pc = malloc((p.n + 1) * sizeof *pc);
    uint32_t *pl = malloc((p.n + 1) * sizeof *pl);
    for (size_t i = 0; !bad && i < p.n; i++) pc[i] = m->piece[p.id[i]], pl[i] = m->len[p.id[i]];
    if (!bad) bad = tf_spm_decode_pieces(m, pc, pl, p.n, &back) || !same(back.p ? back.p : "", back.n, dec, dn);
    free(pc), free(pl), free(back.p), free(text), free(dec);
    tf_spm_pieces_free(&p);
    return bad;
}

/* One decode case: decode_pieces(pieces) == text. */
static int check_decode(const tf_spm *m, const cJSON *c) {
    const cJSON *l = cJSON_GetObjectItemCaseSensitive(c, "pieces");
    int n = cJSON_GetArraySize(l), bad;
    const char **pc = malloc(((size_t)n + 1) * sizeof *pc);
    uint32_t *pl = malloc(((size_t)n + 1) * sizeof *pl);
    for (int i = 0; i < n; i++) pc[i] = cJSON_GetArrayItem(l, i)->valuestring, pl[i] = (uint32_t)strlen(pc[i]);
    tf_buf out = {0};
    const char *want = cJSON_GetObjectItemCaseSensitive(c, "text")->valuestring;
    bad = tf_spm_decode_pieces(m, pc, pl, (size_t)n, &out) || !same(out.p ? out.p : "", out.n, want, strlen(want));
    free(pc), free(pl), free(out.p);
    return bad;
}

/* The long case: n_words words drawn by a 64-bit LCG from words, encoded; the
 * ids' count and the FNV-1a 64 hash of them as decimals joined by spaces. */
static int check_long(const tf_spm *m, const cJSON *c) {
    const cJSON *words = cJSON_GetObjectItemCaseSensitive(c, "words");
    int n = cJSON_GetObjectItemCaseSensitive(c, "n_words")->valueint, nw = cJSON_GetArraySize(words);
    uint64_t x = (uint64_t)cJSON_GetObjectItemCaseSensitive(c, "seed")->valuedouble;
    tf_buf text = {0};
    tf_spm_pieces p = {0};
    for (int i = 0; i < n; i++) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        const char *w = cJSON_GetArrayItem(words, (int)((x >> 33) % (uint64_t)nw))->valuestring;
        tf_buf_put(&text, w, strlen(w));
    }
    int bad = tf_spm_encode(m, text.p, text.n, &p) || (int)p.n != cJSON_GetObjectItemCaseSensitive(c, "n_ids")->valueint;
    uint64_t h = 0xCBF29CE484222325ull;
    for (size_t i = 0; i < p.n; i++) {
        char num[16];
        int k = snprintf(num, sizeof num, i ? " %d" : "%d", p.id[i]);
        for (int j = 0; j < k; j++) h = (h ^ (uint8_t)num[j]) * 0x100000001B3ull;
    }
    char hex[17];
    snprintf(hex, sizeof hex, "%016llx", (unsigned long long)h);
    bad |= strcmp(hex, cJSON_GetObjectItemCaseSensitive(c, "fnv1a64")->valuestring) != 0;
    free(text.p);
    tf_spm_pieces_free(&p);
    return bad;
}

/* Cases of one model that differ (the first described in first). */
static int mismatches(const tf_spm *m, const cJSON *model, char *first, size_t fn) {
    int bad = 0;
    const cJSON *enc = cJSON_GetObjectItemCaseSensitive(model, "encode"), *dec = cJSON_GetObjectItemCaseSensitive(model, "decode");
    for (int i = 0; i < cJSON_GetArraySize(enc); i++)
        if (check_encode(m, cJSON_GetArrayItem(enc, i)) && !bad++) snprintf(first, fn, "encode case %d", i);
    for (int i = 0; i < cJSON_GetArraySize(dec); i++)
        if (check_decode(m, cJSON_GetArrayItem(dec, i)) && !bad++) snprintf(first, fn, "decode case %d", i);
    if (check_long(m, cJSON_GetObjectItemCaseSensitive(model, "long")) && !bad++) snprintf(first, fn, "the long case");
    return bad;
}

TEST(spm_matches_sentencepiece) {
    cJSON *root = test_read_json(FXS "/expected.json");
    CHECKF(root != NULL, "cannot read " FXS "/expected.json");
    int cases = 0;
    for (int k = 0; k < 4; k++) {
        char path[256], first[64] = "";
        snprintf(path, sizeof path, FXS "/%s", MODELS[k]);
        const cJSON *model = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(root, "models"), MODELS[k]);
        tf_spm *m = tf_spm_load(path);
        CHECK(m && model);
        int bad = mismatches(m, model, first, sizeof first);
        cases += cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(model, "encode"));
        tf_spm_free(m);
        CHECKF(bad == 0, "%s: %d cases differ from sentencepiece, the first %s", MODELS[k], bad, first);
    }
    CHECK(cases == 4 * 81);
    cJSON_Delete(root);
}

/* The same through the tokenizer interface: a .spm path gives sentencepiece's ids and decode(ids). */
TEST(spm_tokenizer_interface) {
    cJSON *root = test_read_json(FXS "/expected.json");
    CHECK(root != NULL);
    for (int k = 0; k < 4; k++) {
        char path[256];
        snprintf(path, sizeof path, FXS "/%s", MODELS[k]);
        tf_tokenizer *t = tf_tokenizer_load(path);
        CHECK(t && tf_tokenizer_kind_of(t) == TF_TOKENIZER_SPM);
        CHECK(tf_tokenizer_special_id(t, "unk") == 0 && tf_tokenizer_special_id(t, "bos") == 1 &&
              tf_tokenizer_special_id(t, "eos") == 2 && tf_tokenizer_special_id(t, "pad") == -1);
        const cJSON *enc = cJSON_GetObjectItemCaseSensitive(
            cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(root, "models"), MODELS[k]), "encode");
        for (int i = 0; i < cJSON_GetArraySize(enc); i++) {
            const cJSON *c = cJSON_GetArrayItem(enc, i), *ids = cJSON_GetObjectItemCaseSensitive(c, "ids");
            size_t n, dn, tl;
            char *text = field_bytes(c, "text", "hex", &n), *dec = field_bytes(c, "decoded", "decoded_hex", &dn), *back;
            tf_ids got = {0};
            CHECK(tf_tokenizer_encode(t, text, n, &got) == 0 && (int)got.n == cJSON_GetArraySize(ids));
            for (size_t j = 0; j < got.n; j++) CHECK(got.v[j] == cJSON_GetArrayItem(ids, (int)j)->valueint);
            CHECK(tf_tokenizer_decode(t, got.v, got.n, &back, &tl) == 0 && same(back, tl, dec, dn));
            free(text), free(dec), free(back), tf_ids_free(&got);
        }
        int32_t bad = tf_tokenizer_vocab_size(t);
        char *out;
        CHECK(tf_tokenizer_decode(t, &bad, 1, &out, NULL) != 0 && strstr(tf_error(), "outside the vocabulary"));
        tf_tokenizer_free(t);
    }
    cJSON_Delete(root);
}

/* The comparison can fail: one piece's score lowered changes some segmentation. */
TEST(spm_comparison_can_fail) {
    cJSON *root = test_read_json(FXS "/expected.json");
    tf_spm *m = tf_spm_load(FXS "/en_nfkc.spm");
    CHECK(root && m);
    const cJSON *model = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(root, "models"), "en_nfkc.spm");
    char first[64] = "";
    CHECK(mismatches(m, model, first, sizeof first) == 0);
    int32_t id = tf_spm_piece_id(m, "\xE2\x96\x81man", 4);
    CHECK(id > 0);
    m->score[id] -= 6.0f; /* "▁man" now costs more than "▁ma" + "n" */
    CHECK(mismatches(m, model, first, sizeof first) > 0);
    tf_spm_free(m);
    cJSON_Delete(root);
}

TEST(spm_cli_encode_decode) {
    char out[4096];
    int rc = test_run_cli("printf 'A man in a blue shirt is standing on a ladder.\\n' |", "encode --tokenizer " FXS "/en_nfkc.spm",
                          out, sizeof out);
    CHECKF(rc == 0 && !strcmp(out, "6 13 7 3 52 40 14 50 11 3 744 4\n"), "rc %d: %s", rc, out);
    rc = test_run_cli("echo 6 13 7 3 52 40 14 50 11 3 744 4 2 |", "decode --tokenizer " FXS "/en_nfkc.spm", out, sizeof out);
    CHECKF(rc == 0 && !strcmp(out, "A man in a blue shirt is standing on a ladder."), "rc %d: %s", rc, out);
}
