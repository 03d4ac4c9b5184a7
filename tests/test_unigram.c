/* Unigram tokenizer.json (XLM-RoBERTa's kind) against Hugging Face: the
 * fixtures of tests/ref/gen_unigram_fixtures.py (tokenizers 0.15,
 * XLMRobertaTokenizerFast 4.36): ids and decoded text of 49 texts per folder
 * (invalid UTF-8 among them), single texts and pairs with <s> </s> and
 * truncation; components tformer lacks refused by name; a changed score or
 * rule makes the comparison fail. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test.h"
#include "tformer.h"
#include "util/util.h"

#define UNI_DIR "tests/fixtures_unigram"

static cJSON *uni_expected(const char *folder) {
    size_t n;
    char *text = tf_read_file(UNI_DIR "/expected.json", &n);
    cJSON *root = text ? cJSON_Parse(text) : NULL;
    free(text);
    cJSON *mine = cJSON_DetachItemFromObject(root, folder);
    cJSON_Delete(root);
    return mine;
}

static int unhex(const char *h, char *out) {
    int n = 0;
    for (; h[0] && h[1]; h += 2) {
        unsigned v;
        sscanf(h, "%2x", &v);
        out[n++] = (char)v;
    }
    return n;
}

static int ids_equal(const cJSON *want, const tf_ids *got) {
    if ((size_t)cJSON_GetArraySize(want) != got->n) return 0;
    size_t i = 0;
    for (const cJSON *e = want->child; e; e = e->next, i++)
        if (e->valueint != got->v[i]) return 0;
    return 1;
}

/* Texts of a folder: ids (no special tokens) and decoded text, as tokenizers. */
static int texts_differ(const char *dir, const char *folder, int *n_out) {
    tf_tokenizer *t = tf_tokenizer_load(dir);
    cJSON *exp = uni_expected(folder);
    if (!t || !exp) {
        printf("    %s\n", t ? "expected.json" : tf_error());
        tf_tokenizer_free(t), cJSON_Delete(exp);
        return -1;
    }
    int bad = 0, n = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, cJSON_GetObjectItem(exp, "texts")) {
        char text[2048];
        int len = unhex(cJSON_GetObjectItem(e, "hex")->valuestring, text);
        tf_ids ids = {0};
        char *back = NULL;
        int ok = tf_tokenizer_encode(t, text, (size_t)len, &ids) == 0 && ids_equal(cJSON_GetObjectItem(e, "ids"), &ids) &&
                 tf_tokenizer_decode(t, ids.v, ids.n, &back, NULL) == 0 &&
                 !strcmp(back, cJSON_GetObjectItem(e, "decoded")->valuestring);
        if (!ok && bad++ < 3) printf("    %s: text %d (%.*s) differs\n", folder, n, len < 30 ? len : 30, text);
        free(back), tf_ids_free(&ids), n++;
    }
    cJSON_Delete(exp);
    tf_tokenizer_free(t);
    *n_out = n;
    return bad;
}

TEST(unigram_tokenizer_json_matches_tokenizers) {
    int n1 = 0, n2 = 0;
    int b1 = texts_differ(UNI_DIR "/xlmr_tiny", "xlmr_tiny", &n1), b2 = texts_differ(UNI_DIR "/trained_bf", "trained_bf", &n2);
    printf("    xlmr_tiny %d texts, %d differ; trained_bf %d texts, %d differ\n", n1, b1, n2, b2);
    CHECK(n1 == 49 && n2 == 49 && b1 == 0 && b2 == 0);
}

/* XLMRobertaTokenizerFast's input_ids: <s> a </s>, <s> a </s> </s> b </s>, truncated longest first. */
TEST(unigram_xlmr_pairs_match_transformers) {
    tf_tokenizer *t = tf_tokenizer_load(UNI_DIR "/xlmr_tiny");
    cJSON *exp = uni_expected("xlmr_tiny");
    CHECKF(t && exp, "%s", tf_error());
    CHECK(tf_tokenizer_special_id(t, "cls") == 0 && tf_tokenizer_special_id(t, "sep") == 2 &&
          tf_tokenizer_special_id(t, "pad") == 1 && tf_tokenizer_special_id(t, "unk") == 3 &&
          tf_tokenizer_special_id(t, "mask") == tf_tokenizer_vocab_size(t) - 1);
    int bad = 0, n = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, cJSON_GetObjectItem(exp, "singles")) {
        char text[2048];
        int len = unhex(cJSON_GetObjectItem(e, "hex")->valuestring, text);
        tf_ids ids = {0}, types = {0};
        CHECK(tf_tokenizer_encode_pair(t, text, (size_t)len, NULL, 0, 0, &ids, &types) == 0);
        bad += !ids_equal(cJSON_GetObjectItem(e, "ids"), &ids), n++;
        tf_ids_free(&ids), tf_ids_free(&types);
    }
    cJSON_ArrayForEach(e, cJSON_GetObjectItem(exp, "pairs")) {
        const char *a = cJSON_GetObjectItem(e, "a")->valuestring, *b = cJSON_GetObjectItem(e, "b")->valuestring;
        tf_ids ids = {0}, types = {0};
        CHECK(tf_tokenizer_encode_pair(t, a, strlen(a), b, strlen(b), (size_t)cJSON_GetObjectItem(e, "max_length")->valueint,
                                       &ids, &types) == 0);
        bad += !ids_equal(cJSON_GetObjectItem(e, "ids"), &ids), n++;
        for (size_t i = 0; i < types.n; i++) bad += types.v[i] != 0;
        tf_ids_free(&ids), tf_ids_free(&types);
    }
    printf("    %d singles and pairs, %d differ from XLMRobertaTokenizerFast\n", n, bad);
    CHECK(n == 55 && bad == 0);
    cJSON_Delete(exp);
    tf_tokenizer_free(t);
}

/* A copy of a fixture with one string replaced (must occur). */
static int edited_copy(const char *folder, const char *from, const char *to, const char *dst) {
    char src[256], path[512], *text;
    size_t n;
    snprintf(src, sizeof src, UNI_DIR "/%s/tokenizer.json", folder);
    if (!(text = tf_read_file(src, &n))) return -1;
    char *at = strstr(text, from);
    test_rm_rf(dst);
    snprintf(path, sizeof path, "mkdir -p %s", dst);
    int rc = at && !system(path) ? 0 : -1;
    snprintf(path, sizeof path, "%s/tokenizer.json", dst);
    FILE *f = rc ? NULL : fopen(path, "wb");
    if (f) fwrite(text, 1, (size_t)(at - text), f), fputs(to, f), fputs(at + strlen(from), f), fclose(f);
    free(text);
    return f ? 0 : -1;
}

/* The comparison can fail: a piece's score changed, the Metaspace prepend scheme changed. */
TEST(unigram_comparison_can_fail) {
    const char *dir = "/tmp/tformer_unigram_mut";
    int n, bad;
    CHECK(edited_copy("trained_bf", "\"prepend_scheme\": \"first\"", "\"prepend_scheme\": \"always\"", dir) == 0);
    bad = texts_differ(dir, "trained_bf", &n);
    CHECKF(bad > 0, "prepend_scheme always: %d differ", bad);
    CHECK(edited_copy("trained_bf", "\"byte_fallback\": true", "\"byte_fallback\": false", dir) == 0);
    bad = texts_differ(dir, "trained_bf", &n);
    CHECKF(bad > 0, "byte_fallback false: %d differ", bad);
    test_rm_rf(dir);
}

TEST(unigram_refuses_components_by_name) {
    static const struct {
        const char *from, *to, *msg;
    } cases[] = {
        {"\"type\": \"Precompiled\"", "\"type\": \"Lowercase\"", "normalizer type \"Lowercase\" is not supported"},
        {"\"type\": \"Metaspace\",\n    \"replacement\"", "\"type\": \"Punctuation\",\n    \"replacement\"",
         "pre_tokenizer type \"Punctuation\" is not supported"},
        {"\"unk_id\": 3", "\"unk_id\": null", "model.unk_id must be the id"},
        {"\"unk_id\": 3", "\"unk_id\": 9999", "model.unk_id must be the id"},
        {"\"precompiled_charsmap\": \"", "\"precompiled_charsmap\": \"!!", "precompiled_charsmap is not base64"},
        {"\"prepend_scheme\": \"always\"", "\"prepend_scheme\": \"sometimes\"", "prepend_scheme \"sometimes\""},
        {"\"vocab\": [", "\"vocab\": [7,", "model.vocab[0] must be [piece, score]"},
        {"{\"type\":\"Regex\"", "{\"type\":\"Regex\"", ""},
    };
    const char *dir = "/tmp/tformer_unigram_bad";
    for (size_t i = 0; i + 1 < sizeof cases / sizeof cases[0]; i++) {
        CHECK(edited_copy("xlmr_tiny", cases[i].from, cases[i].to, dir) == 0);
        tf_tokenizer *t = tf_tokenizer_load(dir);
        CHECKF(!t && strstr(tf_error(), cases[i].msg) && strstr(tf_error(), "tokenizer.json"), "case %zu: %s", i,
               t ? "loaded" : tf_error());
        tf_tokenizer_free(t);
    }
    /* A sequence named twice would break max_len (the fuzzer found a pair longer than its max_len). */
    CHECK(edited_copy("xlmr_tiny", "\"id\": \"B\"", "\"id\": \"A\"", dir) == 0);
    tf_tokenizer *t = tf_tokenizer_load(dir);
    CHECKF(!t && strstr(tf_error(), "post_processor.pair names Sequence A 2 and B 0 times"), "%s",
           t ? "loaded" : tf_error());
    tf_tokenizer_free(t);
    CHECK(edited_copy("xlmr_tiny", "\"Regex\": \" {2,}\"", "\"Regex\": \"( {2,}\"", dir) == 0);
    t = tf_tokenizer_load(dir);
    CHECKF(!t && strstr(tf_error(), "Regex"), "%s", t ? "loaded" : tf_error());
    test_rm_rf(dir);
}
