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
    CHECK(cJSON_GetArraySize(root) == 9);
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
    /* a folder holds one tokenizer (two are an error: reliability_stale_tokenizer_never_wins) */
    static const char *const others[] = {"vocab.txt", "vocab.json", "merges.txt", "tokenizer.json", "encoder.json"};
    for (int i = 0; i < 5; i++) snprintf(p, sizeof p, "%s/%s", dir, others[i]), unlink(p);
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

/* ---------------------------------------------------------------- tokenizer.json */

#define HF_WP "tests/data/hf_wordpiece"
/* Expected ids from Hugging Face tokenizers 0.15 and 0.23 (Tokenizer.from_file, add_special_tokens=False). */
static const char WP_TEXT[] = "Hello, the quick brown fox jumps! unaffable Caf\xc3\xa9 [MASK]fox   <extra>x na\xc3\xafve";
static const char BPE_TEXT[] = "hello world<|endoftext|>hello caf\xc3\xa9 the\tthe";

static void expect_ids(const char *dir, const char *text, const int32_t *want, size_t n) {
    tf_tokenizer *t = tf_tokenizer_load(dir);
    tf_ids ids = {0};
    CHECKF(t != NULL, "%s: %s", dir, tf_error());
    CHECK(tf_tokenizer_encode(t, text, strlen(text), &ids) == 0);
    CHECKF(same_ids(&ids, want, n), "%s: %zu ids (want %zu), first %d", dir, ids.n, n, ids.n ? ids.v[0] : -1);
    tf_ids_free(&ids);
    tf_tokenizer_free(t);
}

TEST(tokenizer_json_wordpiece) {
    static const int32_t uncased[] = {20, 15, 5, 6, 7, 8, 9, 10, 17, 23, 24, 25, 18, 4, 8, 29, 1, 1};
    static const int32_t cased[] = {26, 15, 5, 6, 7, 8, 9, 10, 17, 23, 24, 25, 27, 4, 8, 1, 1, 1, 1, 1};
    expect_ids(HF_WP, WP_TEXT, uncased, 18);            /* ids out of order in the JSON; <extra> lstrip beyond the vocab */
    expect_ids(HF_WP "/tokenizer.json", WP_TEXT, uncased, 18); /* the file named directly */
    expect_ids(HF_WP "_cased", WP_TEXT, cased, 20);     /* lowercase false, strip_accents true: Café -> Cafe */
    /* the same vocabulary from vocab.txt gives the same ids (no <extra>) */
    const char *plain = "Hello, the quick brown fox jumps! unaffable Caf\xc3\xa9 [MASK]fox";
    expect_ids(HF_WP "/vocab.txt", plain, uncased, 15);
    expect_ids(HF_WP, plain, uncased, 15);
    tf_tokenizer *t = tf_tokenizer_load(HF_WP), *c = tf_tokenizer_load(HF_WP "_cased");
    CHECK(t && c && tf_tokenizer_kind_of(t) == TF_TOKENIZER_WORDPIECE && tf_tokenizer_vocab_size(t) == 30);
    CHECK(tf_tokenizer_max_length(t) == 512 && tf_tokenizer_max_length(c) == 0);
    CHECK(tf_tokenizer_special_id(t, "cls") == 2 && tf_tokenizer_special_id(t, "sep") == 3 &&
          tf_tokenizer_special_id(t, "pad") == 0 && tf_tokenizer_special_id(t, "mask") == 4 &&
          tf_tokenizer_special_id(t, "unk") == 1 && tf_tokenizer_special_id(t, "bos") == -1 &&
          tf_tokenizer_special_id(t, "nonsense") == -1 && tf_tokenizer_special_id(c, "cls") == 2);
    char *text;
    CHECK(tf_tokenizer_decode(t, (int32_t[]){9, 10, 23, 24, 25}, 5, &text, NULL) == 0 && !strcmp(text, "jumps unaffable"));
    free(text);
    tf_tokenizer_free(t), tf_tokenizer_free(c);
}

TEST(tokenizer_json_bytebpe) {
    static const int32_t pairs[] = {257, 259, 111, 267, 270, 257, 259, 111, 32, 99, 97, 102, 268, 258, 9, 116, 257};
    static const int32_t prefix[] = {32, 257, 259, 111, 267, 270, 32, 257, 259, 111, 32, 99, 97, 102, 268, 258, 9, 116, 257};
    expect_ids("tests/data/hf_bytebpe", BPE_TEXT, pairs, 17);         /* merges as ["a", "b"] */
    expect_ids("tests/data/hf_bytebpe_prefix", BPE_TEXT, prefix, 19); /* merges as "a b", add_prefix_space */
    tf_tokenizer *t = tf_tokenizer_load("tests/data/hf_bytebpe");
    CHECK(t && tf_tokenizer_kind_of(t) == TF_TOKENIZER_BYTE_BPE && tf_tokenizer_vocab_size(t) == 271);
    CHECK(tf_tokenizer_max_length(t) == 0 && tf_tokenizer_special_id(t, "eos") == 270 &&
          tf_tokenizer_special_id(t, "cls") == -1 && tf_tokenizer_special_id(t, "unk") == -1);
    char *text;
    size_t n;
    CHECK(tf_tokenizer_decode(t, pairs, 17, &text, &n) == 0 && n == strlen(BPE_TEXT) && !strcmp(text, BPE_TEXT));
    free(text);
    tf_tokenizer_free(t);
}

/* Copy a fixture file into dir with the first `from` replaced by `to`. */
static int put_edited(const char *dir, const char *fixture, const char *name, const char *from, const char *to) {
    size_t len;
    char *s = test_slurp(fixture, &len), *p = s && from ? strstr(s, from) : NULL;
    if (!s || (from && !p)) return free(s), -1;
    char path[256];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (!f) return free(s), -1;
    if (p) fwrite(s, 1, (size_t)(p - s), f), fputs(to, f), fputs(p + strlen(from), f);
    else fwrite(s, 1, len, f);
    fclose(f);
    free(s);
    return 0;
}

TEST(tokenizer_json_settings) {
    char dir[] = "/tmp/tformer_hfcfg_XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    /* do_lower_case false rebuilds the lower-casing normaliser cased (transformers' BertTokenizerFast) */
    CHECK(put_edited(dir, HF_WP "/tokenizer.json", "tokenizer.json", NULL, NULL) == 0);
    const char *lower = "{\"do_lower_case\": false, \"tokenizer_class\": \"BertTokenizerFast\"}";
    put(dir, "tokenizer_config.json", lower, strlen(lower));
    static const int32_t cased[] = {26, 15, 5};
    expect_ids(dir, "Hello, the", cased, 3);
    /* special tokens under other names drive encode_pair */
    const char *cfg = "{\"cls_token\": \"hello\", \"sep_token\": {\"content\": \"world\"}, \"model_max_length\": 1e30}";
    put(dir, "tokenizer_config.json", cfg, strlen(cfg));
    put(dir, "special_tokens_map.json", "{\"pad_token\": \"a\"}", strlen("{\"pad_token\": \"a\"}"));
    tf_tokenizer *t = tf_tokenizer_load(dir);
    tf_ids ids = {0}, types = {0};
    CHECK(t && tf_tokenizer_special_id(t, "cls") == 20 && tf_tokenizer_special_id(t, "sep") == 21 &&
          tf_tokenizer_special_id(t, "pad") == 28 && tf_tokenizer_max_length(t) == 0);
    CHECK(tf_tokenizer_encode_pair(t, "the", 3, "fox", 3, 0, &ids, &types) == 0);
    CHECK(same_ids(&ids, (int32_t[]){20, 5, 21, 8, 21}, 5) && same_ids(&types, (int32_t[]){0, 0, 0, 1, 1}, 5));
    tf_ids_free(&ids), tf_ids_free(&types);
    tf_tokenizer_free(t);
    put(dir, "special_tokens_map.json", "{\"mask_token\": \"<nope>\"}", strlen("{\"mask_token\": \"<nope>\"}"));
    CHECK(!tf_tokenizer_load(dir) && strstr(tf_error(), "mask_token \"<nope>\"") && strstr(tf_error(), "not in the vocabulary"));
    put(dir, "special_tokens_map.json", "{\"mask_token\": ", strlen("{\"mask_token\": "));
    CHECK(!tf_tokenizer_load(dir) && strstr(tf_error(), "special_tokens_map.json: not valid JSON"));
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -r %s", dir);
    CHECK(system(cmd) == 0);
}

TEST(tokenizer_json_refused) {
    static const struct {
        const char *fixture, *from, *to, *expect;
    } cases[] = {
        {HF_WP, "\"type\": \"WordPiece\",\n  \"unk", "\"type\": \"WordLevel\",\n  \"unk",
         "model type \"WordLevel\" is not supported (supported: WordPiece, BPE, Unigram)"},
        {HF_WP, "\"type\": \"BertNormalizer\"", "\"type\": \"NFKC\"", "normalizer type \"NFKC\" is not supported"},
        {HF_WP, "\"type\": \"BertPreTokenizer\"", "\"type\": \"Whitespace\"", "pre_tokenizer type \"Whitespace\" is not supported"},
        {HF_WP, "\"vocab\": {", "\"vocabulary\": {", "missing \"model.vocab\""},
        {HF_WP, "\"model\": {", "\"modelx\": {", "missing \"model\""},
        {HF_WP, "\"fox\": 8,", "\"fox\": 31,", "token \"fox\" has id 31, outside [0,29)"},
        {HF_WP, "\"fox\": 8,", "\"fox\": 7,", "is given to both"},
        {HF_WP, "\"id\": 29,", "\"id\": 31,", "no token has id 29 (ids must continue"},
        {HF_WP, "\"id\": 29,", "\"id\": 3100,", "id 3100 leaves a gap"},
        {HF_WP, "\"id\": 29,", "\"idx\": 29,", "added_tokens[5]: missing \"id\""},
        {HF_WP, "\"single_word\": false", "\"single_word\": true", "single_word true is not supported"},
        {HF_WP, "\"lowercase\": true", "\"lowercase\": 1", "normalizer.lowercase must be true or false"},
        {HF_WP, "\"the\": 5,", "\"the\": 5,,", "tokenizer.json: not valid JSON"},
        {"tests/data/hf_bytebpe", "\"dropout\": null", "\"dropout\": 0.1", "model.dropout is not supported"},
        {"tests/data/hf_bytebpe", "\"normalizer\": null", "\"normalizer\": {\"type\": \"NFC\"}",
         "normalizer type \"NFC\" is not supported"},
        {"tests/data/hf_bytebpe", "\"use_regex\": true", "\"use_regex\": false", "use_regex false is not supported"},
        {"tests/data/hf_bytebpe", "\"merges\": [[\"\xc4\xa0\", \"t\"]", "\"merges\": [[\"\xc4\xa0\", \"zz\"]",
         "model.merges[0]: token 'zz' is not in the vocabulary"},
        {"tests/data/hf_bytebpe_prefix", "\"merges\": [\"\xc4\xa0 t\"", "\"merges\": [\"\xc4\xa0t\"", "model.merges[0]: expected two tokens"},
        {"tests/data/hf_bytebpe", "\"merges\": [", "\"mergesx\": [", "missing \"model.merges\""},
    };
    char dir[] = "/tmp/tformer_hfbad_XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char src[256];
        snprintf(src, sizeof src, "%s/tokenizer.json", cases[i].fixture);
        CHECKF(put_edited(dir, src, "tokenizer.json", cases[i].from, cases[i].to) == 0, "case %zu: no '%s'", i, cases[i].from);
        tf_tokenizer *t = tf_tokenizer_load(dir);
        CHECKF(!t, "case %zu loaded", i);
        CHECKF(strstr(tf_error(), cases[i].expect) && strstr(tf_error(), dir), "case %zu: '%s' lacks '%s'", i, tf_error(),
               cases[i].expect);
    }
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -r %s", dir);
    CHECK(system(cmd) == 0);
}
