/* Tokenizers: reference ids (tiktoken, Hugging Face; fixtures from
 * tests/ref/tokenizer_ref.py), the lecture decks' BPE tables, round trips of
 * any bytes, and clear errors on bad files. */
#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "test.h"

#define GPT2_DIR "../shared/data/gpt2"
#define BERT_VOCAB "../shared/data/bert/bert-base-uncased-vocab.txt"

static int read_ids(const char *path, tf_ids *ids) {
    size_t len;
    char *text = test_slurp(path, &len), *p = text, *end;
    if (!text) return -1;
    for (long v; (v = strtol(p, &end, 10)), end != p; p = end) tf_ids_push(ids, (int32_t)v);
    free(text);
    return 0;
}

static int same_ids(const tf_ids *a, const int32_t *b, size_t n) {
    return a->n == n && !memcmp(a->v, b, n * sizeof *b);
}

TEST(tokenizer_gpt2_reference_figures) {
    tf_tokenizer *t = tf_tokenizer_load(GPT2_DIR);
    CHECK(t && tf_tokenizer_kind_of(t) == TF_TOKENIZER_BYTE_BPE && tf_tokenizer_vocab_size(t) == 50257);
    tf_ids a = {0}, b = {0};
    CHECK(tf_tokenizer_encode(t, "hello world", 11, &a) == 0 && same_ids(&a, (int32_t[]){31373, 995}, 2));
    CHECK(tf_tokenizer_encode(t, "hello <|endoftext|>", 19, &b) == 0 && same_ids(&b, (int32_t[]){31373, 220, 50256}, 3));
    CHECK(tf_tokenizer_token_id(t, "<|endoftext|>") == 50256 && tf_tokenizer_token_id(t, "\xc4\xa0the") == 262);
    tf_ids_free(&a), tf_ids_free(&b);
    tf_tokenizer_free(t);
}

/* Encode a file, compare with reference ids, and decode back byte for byte. */
static void check_file(tf_tokenizer *t, const char *text_path, const char *ids_path, int roundtrip) {
    size_t len;
    char *text = test_slurp(text_path, &len), *back = NULL;
    tf_ids ids = {0}, ref = {0};
    CHECK(text && read_ids(ids_path, &ref) == 0 && ref.n > 100);
    CHECK(tf_tokenizer_encode(t, text, len, &ids) == 0);
    CHECKF(ids.n == ref.n && !memcmp(ids.v, ref.v, ref.n * 4), "%zu ids, reference %zu", ids.n, ref.n);
    size_t blen;
    if (roundtrip) CHECK(tf_tokenizer_decode(t, ids.v, ids.n, &back, &blen) == 0 && blen == len && !memcmp(back, text, len));
    free(back), free(text);
    tf_ids_free(&ids), tf_ids_free(&ref);
}

TEST(tokenizer_gpt2_unicode_stress) {
    tf_tokenizer *t = tf_tokenizer_load(GPT2_DIR);
    CHECK(t != NULL);
    check_file(t, "tests/data/unicode_stress.txt", "tests/data/stress_gpt2_ids.txt", 1);
    tf_tokenizer_free(t);
}

TEST(tokenizer_gpt2_any_bytes_round_trip) {
    /* Invalid UTF-8 (stray continuations, truncated and overlong sequences,
     * surrogates, 0xFF) encodes to single-byte tokens and decodes exactly. */
    tf_tokenizer *t = tf_tokenizer_load(GPT2_DIR);
    CHECK(t != NULL);
    static const char *cases[] = {"\x80", "ab\xc3", "\xe2\x82 x", "\xc0\xaf", "\xed\xa0\x80z", "\xff\xfe hi",
                                  "caf\xc3\xa9\xff!", "\xf4\x90\x80\x80", " \xe6\x97\xa5\xe6\x9c"};
    char buf[4096];
    uint64_t s = 12345;
    for (int k = 0; k < 200; k++) {
        const char *x = buf;
        size_t n;
        if (k < (int)(sizeof cases / sizeof cases[0])) {
            x = cases[k], n = strlen(x);
        } else { /* random bytes biased towards UTF-8 lead and continuation bytes */
            n = (size_t)(k * 13 % 300);
            for (size_t i = 0; i < n; i++) {
                s = s * 6364136223846793005ull + 1442695040888963407ull;
                unsigned r = (unsigned)(s >> 33);
                buf[i] = (char)(r % 3 == 0 ? 0x80 + r % 64 : r % 3 == 1 ? 0xC0 + r % 64 : 32 + r % 96);
            }
        }
        tf_ids ids = {0};
        char *back = NULL;
        size_t blen;
        CHECK(tf_tokenizer_encode(t, x, n, &ids) == 0 && tf_tokenizer_decode(t, ids.v, ids.n, &back, &blen) == 0);
        CHECKF(blen == n && !memcmp(back, x, n), "case %d does not round-trip", k);
        free(back);
        tf_ids_free(&ids);
    }
    tf_tokenizer_free(t);
}

TEST(tokenizer_gpt2_long_runs) {
    /* 1 MB of one character and a 200 KB whitespace run: merges are n log n. */
    tf_tokenizer *t = tf_tokenizer_load(GPT2_DIR);
    size_t n = 1 << 20;
    char *x = malloc(n);
    memset(x, 'a', n);
    memset(x + 100000, ' ', 200000);
    tf_ids ids = {0};
    char *back = NULL;
    size_t blen;
    CHECK(t && tf_tokenizer_encode(t, x, n, &ids) == 0 && ids.n > 1000 && ids.n < n / 2);
    CHECK(tf_tokenizer_decode(t, ids.v, ids.n, &back, &blen) == 0 && blen == n && !memcmp(back, x, n));
    free(back), free(x);
    tf_ids_free(&ids);
    tf_tokenizer_free(t);
}

TEST(tokenizer_gpt2_hugging_face_layout) {
    /* vocab.json + merges.txt hold the same data as encoder.json + vocab.bpe. */
    char dir[] = "/tmp/tformer_hf_XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    char cmd[512];
    snprintf(cmd, sizeof cmd, "cp " GPT2_DIR "/encoder.json %s/vocab.json && cp " GPT2_DIR "/vocab.bpe %s/merges.txt", dir, dir);
    CHECK(system(cmd) == 0);
    tf_tokenizer *t = tf_tokenizer_load(dir);
    CHECK(t != NULL);
    check_file(t, "tests/data/unicode_stress.txt", "tests/data/stress_gpt2_ids.txt", 1);
    tf_tokenizer_free(t);
    snprintf(cmd, sizeof cmd, "rm -r %s", dir);
    CHECK(system(cmd) == 0);
}

TEST(tokenizer_bert_reference) {
    tf_tokenizer *t = tf_tokenizer_load(BERT_VOCAB);
    CHECK(t && tf_tokenizer_kind_of(t) == TF_TOKENIZER_WORDPIECE && tf_tokenizer_vocab_size(t) == 30522);
    tf_ids ids = {0}, types = {0};
    const char *s = "Hello, my dog is cute";
    CHECK(tf_tokenizer_encode_pair(t, s, strlen(s), NULL, 0, 0, &ids, &types) == 0);
    CHECK(same_ids(&ids, (int32_t[]){101, 7592, 1010, 2026, 3899, 2003, 10140, 102}, 8));
    tf_ids_free(&ids), tf_ids_free(&types);
    check_file(t, "tests/data/unicode_stress.txt", "tests/data/stress_bert_ids.txt", 0);
    /* sentence pairs with truncation, against Hugging Face */
    size_t len;
    char *json = test_slurp("tests/data/bert_pairs.json", &len);
    cJSON *root = cJSON_Parse(json);
    CHECK(cJSON_GetArraySize(root) == 4);
    for (cJSON *c = root->child; c; c = c->next) {
        const cJSON *a = cJSON_GetObjectItem(c, "a"), *b = cJSON_GetObjectItem(c, "b");
        const cJSON *want = cJSON_GetObjectItem(c, "ids"), *wtypes = cJSON_GetObjectItem(c, "type_ids");
        size_t max_len = (size_t)cJSON_GetObjectItem(c, "max_len")->valuedouble;
        tf_ids got = {0}, gtypes = {0};
        const char *bs = cJSON_IsString(b) ? b->valuestring : NULL;
        CHECK(tf_tokenizer_encode_pair(t, a->valuestring, strlen(a->valuestring), bs, bs ? strlen(bs) : 0, max_len,
                                       &got, &gtypes) == 0);
        CHECKF((int)got.n == cJSON_GetArraySize(want), "pair '%s': %zu ids, want %d", a->valuestring, got.n,
               cJSON_GetArraySize(want));
        for (int i = 0; i < (int)got.n; i++)
            CHECK(got.v[i] == cJSON_GetArrayItem(want, i)->valuedouble &&
                  gtypes.v[i] == cJSON_GetArrayItem(wtypes, i)->valuedouble);
        tf_ids_free(&got), tf_ids_free(&gtypes);
    }
    cJSON_Delete(root);
    free(json);
    tf_tokenizer_free(t);
}

/* Token counts after training with k merges, as "tok:count" in count order (ties by text). */
static int seed_counts(int merges, char *out, size_t n) {
    char dir[64], cmd[256];
    snprintf(dir, sizeof dir, "/tmp/tformer_seed_%d_%d", (int)getpid(), merges);
    tf_tokenizer_train_opts o = {TF_TOKENIZER_BPE, 20 + merges, 0}; /* <unk> + 18 letters + </w> */
    const char *files[] = {"tests/data/seed_bpe.txt"};
    if (tf_tokenizer_train(&o, files, 1, dir)) return -1;
    tf_tokenizer *t = tf_tokenizer_load(dir);
    size_t len;
    char *text = test_slurp(files[0], &len);
    tf_ids ids = {0};
    if (!t || tf_tokenizer_encode(t, text, len, &ids)) return -1;
    int32_t V = tf_tokenizer_vocab_size(t), *count = calloc((size_t)V, sizeof *count);
    for (size_t i = 0; i < ids.n; i++) count[ids.v[i]]++;
    size_t off = 0;
    out[0] = 0;
    for (int c = 100; c > 0; c--) /* by count, then id */
        for (int32_t id = 0; id < V; id++)
            if (count[id] == c) {
                char *tok;
                size_t tl;
                tf_tokenizer_decode(t, &id, 1, &tok, &tl);
                if (tl && tok[tl - 1] == ' ') tok[tl - 1] = '_'; /* the decks write </w> as _ */
                off += (size_t)snprintf(out + off, n - off, "%s%s:%d", off ? " " : "", tok, c);
                free(tok);
            }
    free(count), free(text);
    tf_ids_free(&ids);
    tf_tokenizer_free(t);
    snprintf(cmd, sizeof cmd, "rm -r %s", dir);
    return system(cmd);
}

TEST(tokenizer_bpe_lecture_tables) {
    /* Deck 01's worked example, tables (a)-(c): counts before any merge, after
     * merging "se" (13 times), then "e_" (12 times). Its figure shows four
     * "see" on line 3 but its tables count three; tests/data/seed_bpe.txt
     * follows the tables. Ties among equal counts are listed by token id. */
    char got[2048];
    CHECK(seed_counts(0, got, sizeof got) == 0);
    CHECKF(!strcmp(got, "_:33 e:28 s:15 a:12 t:11 o:8 h:6 l:6 u:4 b:3 d:3 w:3 c:2 f:1 i:1 m:1 n:1 p:1 r:1"), "(a) %s", got);
    CHECK(seed_counts(1, got, sizeof got) == 0);
    CHECKF(!strcmp(got, "_:33 e:15 se:13 a:12 t:11 o:8 h:6 l:6 u:4 b:3 d:3 w:3 c:2 s:2 f:1 i:1 m:1 n:1 p:1 r:1"), "(b) %s", got);
    CHECK(seed_counts(2, got, sizeof got) == 0);
    CHECKF(!strcmp(got, "_:21 se:13 a:12 e_:12 t:11 o:8 h:6 l:6 u:4 b:3 d:3 e:3 w:3 c:2 s:2 f:1 i:1 m:1 n:1 p:1 r:1"), "(c) %s", got);
}

TEST(tokenizer_train_and_reload_every_kind) {
    static const tf_tokenizer_kind kinds[] = {TF_TOKENIZER_CHAR, TF_TOKENIZER_BPE, TF_TOKENIZER_BYTE_BPE, TF_TOKENIZER_WORDPIECE};
    const char *files[] = {"tests/data/unicode_stress.txt", "tests/data/seed_bpe.txt"};
    const char *probe = "he could see the deep blue sea";
    for (int k = 0; k < 4; k++) {
        char dir[64], cmd[128];
        snprintf(dir, sizeof dir, "/tmp/tformer_tok_%d_%d", (int)getpid(), k);
        tf_tokenizer_train_opts o = {kinds[k], 600, 2};
        CHECKF(tf_tokenizer_train(&o, files, 2, dir) == 0, "kind %d: %s", k, tf_error());
        tf_tokenizer *t = tf_tokenizer_load(dir);
        CHECKF(t && tf_tokenizer_kind_of(t) == kinds[k], "kind %d reloads as %d", k, t ? (int)tf_tokenizer_kind_of(t) : -1);
        tf_ids ids = {0};
        char *back = NULL;
        size_t blen;
        CHECK(tf_tokenizer_encode(t, probe, strlen(probe), &ids) == 0 && ids.n > 0 && ids.n < 31);
        CHECK(tf_tokenizer_decode(t, ids.v, ids.n, &back, &blen) == 0);
        CHECKF(!strncmp(back, probe, strlen(probe)), "kind %d decodes to '%s'", k, back);
        free(back);
        tf_ids_free(&ids);
        tf_tokenizer_free(t);
        snprintf(cmd, sizeof cmd, "rm -r %s", dir);
        CHECK(system(cmd) == 0);
    }
}

/* Write name=content into dir. */
static void put(const char *dir, const char *name, const char *content, size_t n) {
    char p[256];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    FILE *f = fopen(p, "wb");
    fwrite(content, 1, n, f);
    fclose(f);
}

TEST(tokenizer_bad_files) {
    CHECK(!tf_tokenizer_load("/nonexistent") && strstr(tf_error(), "no tokenizer files"));
    char dir[] = "/tmp/tformer_bad_XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    size_t len;
    char *enc = test_slurp(GPT2_DIR "/encoder.json", &len);
    CHECK(enc != NULL);
    static const struct {
        const char *vocab, *merges, *expect;
        size_t vlen; /* 0: strlen; else a truncated encoder.json */
    } cases[] = {
        {NULL, "#version: 0.2\n", "not a JSON object", 1000},
        {"{\"a\": 0, \"b\": 5}", "", "outside [0,2)", 0},
        {"{\"a\": 0, \"b\": 1}", "", "byte 0x00 has no single-byte token", 0},
        {NULL, "#version: 0.2\n\xc4\xa0 t\nq q q\n", "line 3", 0},
        {NULL, "#version: 0.2\nzzzzqq xq\n", "line 2: token 'zzzzqq' is not in the vocabulary", 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        put(dir, "vocab.json", cases[i].vocab ? cases[i].vocab : enc,
            cases[i].vocab ? strlen(cases[i].vocab) : cases[i].vlen ? cases[i].vlen : len);
        put(dir, "merges.txt", cases[i].merges, strlen(cases[i].merges));
        tf_tokenizer *t = tf_tokenizer_load(dir);
        CHECKF(!t, "case %zu loaded", i);
        CHECKF(strstr(tf_error(), cases[i].expect) && strstr(tf_error(), dir), "case %zu: '%s' lacks '%s'", i,
               tf_error(), cases[i].expect);
    }
    free(enc);
    /* decoding an id out of range, WordPiece without [UNK], unknown characters */
    tf_tokenizer *t = tf_tokenizer_load(GPT2_DIR);
    char *out;
    size_t n;
    CHECK(t && tf_tokenizer_decode(t, (int32_t[]){1, 50257}, 2, &out, &n) != 0 && strstr(tf_error(), "id 50257 at position 1"));
    tf_tokenizer_free(t);
    put(dir, "vocab.txt", "[CLS]\n[SEP]\nhello\n", 18);
    char p[256];
    snprintf(p, sizeof p, "%s/vocab.txt", dir);
    CHECK(!tf_tokenizer_load(p) && strstr(tf_error(), "[UNK]"));
    put(dir, "tokenizer.tformer.json", "{\"type\": \"char\"}", 16);
    put(dir, "chars.txt", "abc", 3);
    t = tf_tokenizer_load(dir);
    tf_ids ids = {0};
    CHECK(t && tf_tokenizer_encode(t, "cab", 3, &ids) == 0 && same_ids(&ids, (int32_t[]){2, 0, 1}, 3));
    CHECK(tf_tokenizer_encode(t, "abz", 3, &ids) != 0 && strstr(tf_error(), "'z' at byte 2"));
    tf_ids_free(&ids);
    tf_tokenizer_free(t);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -r %s", dir);
    CHECK(system(cmd) == 0);
}
