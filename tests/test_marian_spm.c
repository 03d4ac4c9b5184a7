/* Marian's SentencePiece tokenizers against transformers' MarianTokenizer
 * (tests/fixtures_marian_spm, written by tests/ref/gen_marian_spm_fixtures.py):
 * a folder of source.spm + target.spm (copied from tests/fixtures_spm) +
 * vocab.json + the settings files; input_ids of the source and target
 * sentences, batch_decode(skip_special_tokens=True) of id sequences. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test.h"
#include "tformer.h"

#define FXM "tests/fixtures_marian_spm"

static int copy_file(const char *from, const char *dir, const char *name) {
    char to[512];
    snprintf(to, sizeof to, "%s/%s", dir, name);
    size_t n;
    char *data = test_slurp(from, &n);
    FILE *f = data ? fopen(to, "wb") : NULL;
    int ok = f && fwrite(data, 1, n, f) == n;
    if (f) ok &= fclose(f) == 0;
    free(data);
    return ok ? 0 : -1;
}

/* A Marian folder in a new temporary directory dir (a mkdtemp template): the
 * fixture's settings and vocabulary with the two models beside them. */
int test_marian_spm_folder(char *dir);
int test_marian_spm_folder(char *dir) {
    if (!mkdtemp(dir)) return -1;
    return copy_file(FXM "/vocab.json", dir, "vocab.json") || copy_file(FXM "/tokenizer_config.json", dir, "tokenizer_config.json") ||
           copy_file(FXM "/special_tokens_map.json", dir, "special_tokens_map.json") ||
           copy_file("tests/fixtures_spm/en_nfkc.spm", dir, "source.spm") ||
           copy_file("tests/fixtures_spm/de_user.spm", dir, "target.spm") ? -1 : 0;
}

/* Sentences of list through t, then eos (as tf_translate does): count of those whose ids differ. */
static int encode_mismatches(tf_tokenizer *t, const cJSON *list) {
    int bad = 0;
    for (int i = 0; i < cJSON_GetArraySize(list); i++) {
        const cJSON *c = cJSON_GetArrayItem(list, i), *ids = cJSON_GetObjectItemCaseSensitive(c, "ids");
        const char *text = cJSON_GetObjectItemCaseSensitive(c, "text")->valuestring;
        tf_ids got = {0};
        int differ = tf_tokenizer_encode(t, text, strlen(text), &got) || tf_ids_push(&got, tf_tokenizer_special_id(t, "eos")) ||
                     (int)got.n != cJSON_GetArraySize(ids);
        for (size_t j = 0; !differ && j < got.n; j++) differ = got.v[j] != cJSON_GetArrayItem(ids, (int)j)->valueint;
        if (differ && !bad) fprintf(stderr, "    first difference: \"%s\"\n", text);
        bad += differ;
        tf_ids_free(&got);
    }
    return bad;
}

/* Id sequences decoded by t: count of those whose text differs from key's. */
static int decode_mismatches(const tf_tokenizer *t, const cJSON *list, const char *key) {
    int bad = 0;
    for (int i = 0; i < cJSON_GetArraySize(list); i++) {
        const cJSON *c = cJSON_GetArrayItem(list, i), *ids = cJSON_GetObjectItemCaseSensitive(c, "ids");
        const char *want = cJSON_GetObjectItemCaseSensitive(c, key)->valuestring;
        int n = cJSON_GetArraySize(ids);
        int32_t v[64];
        for (int j = 0; j < n && j < 64; j++) v[j] = cJSON_GetArrayItem(ids, j)->valueint;
        char *text = NULL;
        int differ = tf_tokenizer_decode(t, v, (size_t)n, &text, NULL) || strcmp(text, want);
        if (differ && !bad) fprintf(stderr, "    first difference: case %d \"%s\", expected \"%s\"\n", i, text ? text : "", want);
        bad += differ;
        free(text);
    }
    return bad;
}

TEST(marian_spm_tokenizer_matches_transformers) {
    char dir[] = "/tmp/tformer_marian_spm_XXXXXX", path[256];
    cJSON *root = test_read_json(FXM "/tokenizer_cases.json");
    CHECK(root && test_marian_spm_folder(dir) == 0);
    tf_tokenizer *src = tf_tokenizer_load(dir), *tgt;
    snprintf(path, sizeof path, "%s/target.spm", dir);
    CHECK(src && (tgt = tf_tokenizer_load(path)));
    CHECK(tf_tokenizer_kind_of(src) == TF_TOKENIZER_SPM && tf_tokenizer_vocab_size(src) == tf_tokenizer_vocab_size(tgt));
    int32_t pad = tf_tokenizer_vocab_size(src) - 1;
    CHECK(tf_tokenizer_special_id(src, "eos") == 0 && tf_tokenizer_special_id(src, "unk") == 1 &&
          tf_tokenizer_special_id(tgt, "pad") == pad && tf_tokenizer_token_id(src, ">>de<<") == pad - 2);
    int bad_src = encode_mismatches(src, cJSON_GetObjectItemCaseSensitive(root, "source"));
    int bad_tgt = encode_mismatches(tgt, cJSON_GetObjectItemCaseSensitive(root, "target"));
    const cJSON *dec = cJSON_GetObjectItemCaseSensitive(root, "decode");
    int bad_dec = decode_mismatches(tgt, dec, "text"), bad_src_dec = decode_mismatches(src, dec, "source_text");
    CHECKF(!bad_src && !bad_tgt && !bad_dec && !bad_src_dec, "differ: %d source, %d target, %d decoded, %d decoded (source)",
           bad_src, bad_tgt, bad_dec, bad_src_dec);
    CHECK(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(root, "source")) == 20 && cJSON_GetArraySize(dec) == 60);
    int32_t out_of_range = pad + 1;
    char *text;
    CHECK(tf_tokenizer_decode(tgt, &out_of_range, 1, &text, NULL) != 0 && strstr(tf_error(), "outside the vocabulary"));
    tf_tokenizer_free(src), tf_tokenizer_free(tgt);
    test_rm_rf(dir);
    cJSON_Delete(root);
}

/* The comparison can fail: without transformers' clean-up of spaces before punctuation some decoded texts differ. */
TEST(marian_spm_clean_up_setting_matters) {
    char dir[] = "/tmp/tformer_marian_spm_XXXXXX", path[256];
    cJSON *root = test_read_json(FXM "/tokenizer_cases.json");
    CHECK(root && test_marian_spm_folder(dir) == 0);
    snprintf(path, sizeof path, "%s/tokenizer_config.json", dir);
    FILE *f = fopen(path, "wb");
    CHECK(f != NULL);
    fputs("{\"clean_up_tokenization_spaces\": false, \"separate_vocabs\": false}\n", f);
    fclose(f);
    snprintf(path, sizeof path, "%s/target.spm", dir);
    tf_tokenizer *tgt = tf_tokenizer_load(path);
    CHECK(tgt != NULL);
    CHECK(decode_mismatches(tgt, cJSON_GetObjectItemCaseSensitive(root, "decode"), "text") > 0);
    tf_tokenizer_free(tgt);
    test_rm_rf(dir);
    cJSON_Delete(root);
}

/* Folders transformers would refuse, or tformer does not read, are errors naming the file. */
TEST(marian_spm_bad_folders) {
    char dir[] = "/tmp/tformer_marian_spm_XXXXXX", path[256], file[256];
    CHECK(test_marian_spm_folder(dir) == 0);
    snprintf(path, sizeof path, "%s/source.spm", dir);
    snprintf(file, sizeof file, "%s/vocab.json", dir);
    FILE *f = fopen(file, "wb");
    fputs("{\"</s>\": 0, \"<unk>\": 1, \"a\": 2}", f);
    fclose(f);
    CHECK(tf_tokenizer_load(path) == NULL && strstr(tf_error(), "vocab.json") && strstr(tf_error(), "\"<pad>\""));
    f = fopen(file, "wb");
    fputs("{\"</s>\": 0, \"<pad>\": 1, \"a\": 3}", f);
    fclose(f);
    CHECK(tf_tokenizer_load(path) == NULL && strstr(tf_error(), "vocab.json") && strstr(tf_error(), "outside [0,3)"));
    f = fopen(file, "wb");
    fputs("{\"</s>\": 0, \"<pad>\": 1, \"a\": 2}", f);
    fclose(f);
    CHECK(tf_tokenizer_load(path) == NULL && strstr(tf_error(), "unknown token \"<unk>\""));
    snprintf(file, sizeof file, "%s/tokenizer_config.json", dir);
    f = fopen(file, "wb");
    fputs("{\"additional_special_tokens\": [\"<eop>\"]}", f);
    fclose(f);
    CHECK(tf_tokenizer_load(path) == NULL && strstr(tf_error(), "tokenizer_config.json") &&
          strstr(tf_error(), "additional_special_tokens"));
    f = fopen(file, "wb");
    fputs("{\"separate_vocabs\": \"yes\"}", f);
    fclose(f);
    CHECK(tf_tokenizer_load(path) == NULL && strstr(tf_error(), "\"separate_vocabs\" must be true or false"));
    test_rm_rf(dir);
}

/* ---------------------------------------------------------------- end to end */

/* One run of generate.json through tformer translate on the folder: lines that differ from transformers' texts. */
static int translate_run(const char *dir, const cJSON *run, const char *extra, int *lines) {
    char cmd[1024], *got = malloc(65536);
    snprintf(cmd, sizeof cmd, "%s translate --model %s --beam %d --length-penalty %g --max-len-a 0 --max-len-b %d %s < %s/src.txt",
             test_tformer_bin(), dir, cJSON_GetObjectItem(run, "num_beams")->valueint,
             cJSON_GetObjectItem(run, "length_penalty")->valuedouble, cJSON_GetObjectItem(run, "max_length")->valueint - 1,
             extra, dir);
    FILE *p = popen(cmd, "r");
    size_t k = p ? fread(got, 1, 65535, p) : 0;
    got[k] = 0;
    int bad = !p || pclose(p) != 0, i = 0;
    const cJSON *t;
    char *line = got;
    cJSON_ArrayForEach(t, cJSON_GetObjectItem(run, "texts")) {
        char *end = strchr(line, '\n');
        if (!end) return free(got), bad + 1;
        *end = 0;
        if (strcmp(line, t->valuestring) && !bad++)
            fprintf(stderr, "    %s\n    line %d: \"%s\", generate(): \"%s\"\n", cmd, i + 1, line, t->valuestring);
        line = end + 1, i++, (*lines)++;
    }
    bad += *line != 0; /* more lines than sentences */
    free(got);
    return bad;
}

TEST(marian_spm_translate_matches_generate) {
    char dir[] = "/tmp/tformer_marian_spm_XXXXXX", path[256];
    cJSON *root = test_read_json(FXM "/generate.json");
    CHECK(root && test_marian_spm_folder(dir) == 0 && test_marian_generate_config(FXM, dir, NULL) == 0 &&
          copy_file(FXM "/model.safetensors", dir, "model.safetensors") == 0);
    snprintf(path, sizeof path, "%s/src.txt", dir);
    FILE *f = fopen(path, "w");
    const cJSON *s, *run;
    cJSON_ArrayForEach(s, cJSON_GetObjectItem(root, "sentences")) fprintf(f, "%s\n", s->valuestring);
    CHECK(f && fclose(f) == 0);
    int bad = 0, lines = 0, runs = 0;
    cJSON_ArrayForEach(run, cJSON_GetObjectItem(root, "runs")) {
        bad += translate_run(dir, run, "", &lines), runs++;
        bad += translate_run(dir, run, "--batch 1", &lines);
    }
    printf("    tformer translate on a Marian folder with source.spm / target.spm: %d runs x %d sentences (batched and "
           "one at a time), %d texts, %d differ from generate() + batch_decode()\n", runs,
           cJSON_GetArraySize(cJSON_GetObjectItem(root, "sentences")), lines, bad);
    CHECK(runs == 3 && lines == 48 && bad == 0);
    test_rm_rf(dir);
    cJSON_Delete(root);
}
