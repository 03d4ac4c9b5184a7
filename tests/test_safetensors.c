/* safetensors: values written by the reference library, round trips through
 * our writer, and every malformed header rejected with a message. */
#include <cjson/cJSON.h>
#include <dirent.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "test.h"

TEST(safetensors_reads_reference_file) {
    size_t len;
    char *json = test_slurp("tests/data/all_dtypes.json", &len);
    CHECK(json != NULL);
    cJSON *root = cJSON_Parse(json);
    tf_st_file *f = tf_st_open("tests/data/all_dtypes.safetensors");
    CHECK(root && f);
    tf_arena *a = tf_arena_new(0);
    int checked = 0;
    for (cJSON *c = root->child; c; c = c->next) {
        const tf_st_entry *e = tf_st_find(f, c->string);
        CHECKF(e != NULL, "tensor %s missing", c->string);
        tf_tensor *t = tf_st_to_tensor(f, e, a);
        CHECKF(t != NULL, "%s: %s", c->string, tf_error());
        cJSON *shape = cJSON_GetObjectItem(c, "shape"), *vals = cJSON_GetObjectItem(c, "values");
        CHECK(cJSON_GetArraySize(shape) == t->ndim);
        for (int d = 0; d < t->ndim; d++) CHECK(cJSON_GetArrayItem(shape, d)->valuedouble == t->shape[d]);
        CHECK(cJSON_GetArraySize(vals) == tf_numel(t));
        for (int i = 0; i < tf_numel(t); i++) {
            cJSON *v = cJSON_GetArrayItem(vals, i);
            double want = cJSON_IsString(v) ? (v->valuestring[0] == '-' ? -INFINITY : INFINITY) : v->valuedouble;
            double got = t->dtype == TF_DTYPE_F32   ? (double)tf_f32(t)[i]
                         : t->dtype == TF_DTYPE_I32 ? (double)tf_i32(t)[i]
                                                    : (double)tf_u8(t)[i];
            CHECKF(got == want, "%s[%d]: got %.10g, want %.10g", c->string, i, got, want);
        }
        checked++;
    }
    CHECK(checked == 9 && tf_st_count(f) == 9);
    tf_arena_free(a);
    tf_st_close(f);
    cJSON_Delete(root);
    free(json);
}

TEST(safetensors_writer_round_trip) {
    tf_ctx *ctx = tf_ctx_new(0);
    tf_tensor *x = tf_tensor_new(ctx, TF_DTYPE_F32, 3, (int64_t[]){2, 3, 5}, 1);
    tf_tensor_fill_normal(x, 3, 1.0f);
    for (int i = 0; i < 30; i++) x->grad[i] = (float)i;
    tf_tensor *xt = tf_transpose(ctx, x, 0, 2); /* strided: written in its own row-major order */
    tf_tensor *m = tf_tensor_new(ctx, TF_DTYPE_U8, 1, (int64_t[]){4}, 0);
    tf_u8(m)[2] = 1;
    tf_tensor *ids = tf_tensor_new(ctx, TF_DTYPE_I32, 2, (int64_t[]){1, 2}, 0);
    tf_i32(ids)[1] = -7;
    tf_st_writer *w = tf_st_writer_new();
    CHECK(tf_st_writer_add(w, "x.t", xt) == 0 && tf_st_writer_add(w, "mask", m) == 0 &&
          tf_st_writer_add(w, "ids", ids) == 0 && tf_st_writer_add_grad(w, "grad.x", x) == 0);
    CHECK(tf_st_writer_add(w, "mask", m) != 0 && strstr(tf_error(), "twice"));
    char path[] = "/tmp/tformer_st_XXXXXX";
    CHECK(test_temp_file(path) == 0);
    CHECK(tf_st_writer_save(w, path) == 0);
    tf_st_writer_free(w);
    tf_st_file *f = tf_st_open(path);
    CHECK(f != NULL);
    tf_arena *a = tf_arena_new(0);
    tf_tensor *r = tf_st_to_tensor(f, tf_st_find(f, "x.t"), a);
    CHECK(r && r->ndim == 3 && r->shape[0] == 5 && r->shape[2] == 2);
    for (int i = 0; i < 5; i++)
        for (int k = 0; k < 2; k++) CHECK(tf_f32(r)[i * 6 + 1 * 2 + k] == tf_f32(x)[k * 15 + 1 * 5 + i]);
    CHECK(tf_st_find(f, "mask")->dtype == TF_ST_BOOL && ((const uint8_t *)tf_st_find(f, "mask")->data)[2] == 1);
    CHECK(tf_st_find(f, "ids")->dtype == TF_ST_I32);
    tf_tensor *g = tf_st_to_tensor(f, tf_st_find(f, "grad.x"), a);
    CHECK(g && tf_f32(g)[29] == 29.0f);
    tf_st_close(f);
    tf_arena_free(a);
    unlink(path);
    tf_ctx_free(ctx);
}

TEST(safetensors_writer_every_dtype) {
    /* Read the reference file, write each tensor back in its own dtype, and
     * compare the bytes: conversions both ways must be exact on these values. */
    tf_st_file *ref = tf_st_open("tests/data/all_dtypes.safetensors");
    CHECK(ref != NULL);
    tf_arena *a = tf_arena_new(0);
    tf_st_writer *w = tf_st_writer_new();
    for (int i = 0; i < tf_st_count(ref); i++) {
        const tf_st_entry *e = tf_st_entry_at(ref, i);
        CHECKF(tf_st_writer_add_as(w, e->name, tf_st_to_tensor(ref, e, a), e->dtype) == 0, "%s: %s", e->name, tf_error());
    }
    char path[] = "/tmp/tformer_st_XXXXXX";
    CHECK(test_temp_file(path) == 0);
    CHECK(tf_st_writer_save(w, path) == 0);
    tf_st_file *back = tf_st_open(path);
    CHECK(back != NULL);
    for (int i = 0; i < tf_st_count(ref); i++) {
        const tf_st_entry *e = tf_st_entry_at(ref, i), *b = tf_st_find(back, e->name);
        CHECKF(b && b->dtype == e->dtype && b->nbytes == e->nbytes && !memcmp(b->data, e->data, e->nbytes),
               "%s differs after a round trip", e->name);
    }
    /* Rounding: 1 + 2^-11 is a tie in F16 (to even: 1.0); 1 + 3*2^-11 rounds up. */
    tf_tensor *t = tf_tensor_alloc(a, TF_DTYPE_F32, 1, (int64_t[]){3}, 0);
    tf_f32(t)[0] = 1.0f + 1.0f / 2048, tf_f32(t)[1] = 1.0f + 3.0f / 2048, tf_f32(t)[2] = 1e6f;
    CHECK(tf_st_writer_add_as(w, "h", t, TF_ST_F16) == 0 && tf_st_writer_add_as(w, "h", t, TF_ST_I64) != 0);
    CHECK(tf_st_writer_save(w, path) == 0);
    tf_st_close(back);
    back = tf_st_open(path);
    tf_tensor *h = back ? tf_st_to_tensor(back, tf_st_find(back, "h"), a) : NULL;
    CHECK(h && tf_f32(h)[0] == 1.0f && tf_f32(h)[1] == 1.0f + 4.0f / 2048 && isinf(tf_f32(h)[2]));
    tf_st_close(back);
    tf_st_close(ref);
    tf_st_writer_free(w);
    tf_arena_free(a);
    unlink(path);
}

/* ---------------------------------------------------------------- writer: bytes and streaming */

/* Deterministic 32-bit patterns (splitmix64 of i). */
static uint32_t bits32(uint64_t i) {
    uint64_t z = i * 0x9E3779B97F4A7C15u + 0x632BE59BD9B4E019u;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9u;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBu;
    return (uint32_t)(z ^ (z >> 31));
}

/* Floats for the F16/BF16 conversions: every fourth a raw bit pattern (NaN,
 * inf, subnormals), the rest with exponents around F16's range (2^-26..2^17:
 * subnormal halves, overflow), then the rounding cases at the front. */
static void fill_bits(tf_tensor *t, uint64_t seed, int near_half) {
    float *x = tf_f32(t);
    int64_t n = tf_numel(t);
    for (int64_t i = 0; i < n; i++) {
        uint32_t b = bits32(seed * 1000003u + (uint64_t)i);
        if (near_half && i % 4)
            b = (b & 0x807FFFFFu) | (uint32_t)(127 - 26 + (int)((b >> 23) & 0xFF) % 44) << 23;
        memcpy(&x[i], &b, 4);
    }
    static const float special[] = {1.0f + 1.0f / 2048, 1.0f + 3.0f / 2048, 65519.0f, 65520.0f, -65520.0f,
                                    0x1p-24f, 0x1p-25f, 0x1.8p-25f, 0x1p-26f, -0.0f, 1.0f + 0x1p-8f,
                                    1.0f + 0x1.8p-8f, 3.3895314e38f, 0x1.ffp-15f, 0x1.ff8p-15f};
    for (size_t i = 0; near_half && i < sizeof special / sizeof special[0] && (int64_t)i < n; i++) x[i] = special[i];
}

/* A view of t with dims d0 and d1 swapped (gradient too). */
static tf_tensor swapped(const tf_tensor *t, int d0, int d1) {
    tf_tensor v = *t;
    v.shape[d0] = t->shape[d1], v.shape[d1] = t->shape[d0];
    v.stride[d0] = t->stride[d1], v.stride[d1] = t->stride[d0];
    return v;
}

/* As tf_optim_save does: a header on the stack that is gone before the save. */
static int add_stack_header(tf_st_writer *w, const tf_tensor *t) {
    tf_tensor v = *t;
    v.shape[0] = 3, v.shape[1] = 2, v.stride[0] = 1, v.stride[1] = 3; /* (2,3) read as its transpose */
    return tf_st_writer_add(w, "stack.header", &v);
}

/* Every kind of entry the writer knows, views in a (caller-freed) array. */
static int golden_set(tf_st_writer *w, tf_arena *a, tf_tensor *views, int *nv) {
#define T(dt, nd, ...) tf_tensor_alloc(a, dt, nd, (int64_t[]){__VA_ARGS__}, 0)
    int rc = tf_st_writer_set_metadata(w, "note", "quote \" backslash \\ newline \n tab \t \xC3\xA9 \xE2\x9C\x93") ||
             tf_st_writer_set_metadata(w, "empty", "") || tf_st_writer_set_metadata(w, "pad", "x"); /* header: 1762 + 6 spaces */
    tf_tensor *f = T(TF_DTYPE_F32, 2, 3, 5), *cube = T(TF_DTYPE_F32, 3, 4, 6, 8), *big = T(TF_DTYPE_F32, 2, 131, 130);
    tf_tensor *half = T(TF_DTYPE_F32, 2, 16501, 2), *bf = T(TF_DTYPE_F32, 2, 64, 64), *sl = T(TF_DTYPE_F32, 2, 8, 7);
    tf_tensor *i32 = T(TF_DTYPE_I32, 2, 3, 4), *u8 = T(TF_DTYPE_U8, 2, 4, 3), *sc = T(TF_DTYPE_F32, 0, 0);
    tf_tensor *e1 = T(TF_DTYPE_F32, 1, 0), *e3 = T(TF_DTYPE_F32, 3, 2, 0, 3);
    tf_tensor *g = tf_tensor_alloc(a, TF_DTYPE_F32, 2, (int64_t[]){5, 7}, 1);
    if (rc || !f || !cube || !big || !half || !bf || !sl || !i32 || !u8 || !sc || !e1 || !e3 || !g) return -1;
    fill_bits(f, 1, 0), fill_bits(cube, 2, 0), fill_bits(big, 3, 0), fill_bits(half, 4, 1);
    fill_bits(bf, 5, 1), fill_bits(sl, 6, 0), fill_bits(g, 7, 0), tf_f32(sc)[0] = 3.5f;
    for (int i = 0; i < 35; i++) memcpy(&g->grad[i], &(uint32_t){bits32(800 + (uint64_t)i)}, 4);
    static const int32_t ints[12] = {INT32_MIN, INT32_MAX, -1, 0, 1, 7, -7, 123456789, -2, 2, 65536, -65536};
    memcpy(tf_i32(i32), ints, sizeof ints);
    static const uint8_t bytes[12] = {0, 1, 2, 255, 0, 0, 17, 1, 128, 0, 3, 0};
    memcpy(tf_u8(u8), bytes, sizeof bytes);
    tf_tensor *v = views;
    v[0] = swapped(cube, 0, 2);                       /* (8,6,4) */
    v[1] = swapped(big, 0, 1);                        /* (130,131): 68 KB, more than one chunk */
    v[2] = swapped(half, 0, 1);                       /* (2,16501) as F16: 66 KB */
    v[3] = *sl, v[3].shape[0] = 4, v[3].shape[1] = 3; /* rows 2..5, columns 1..3 */
    v[3].data = tf_f32(sl) + 2 * 7 + 1;
    v[4] = *f, v[4].shape[0] = 4, v[4].stride[0] = 0; /* row 0 broadcast to (4,5) */
    v[4].shape[1] = 5;
    v[5] = swapped(i32, 0, 1), v[6] = swapped(u8, 0, 1), v[7] = swapped(g, 0, 1);
    *nv = 8;
    rc = tf_st_writer_add(w, "f32", f) || tf_st_writer_add(w, "f32.transposed", &v[0]) ||
         tf_st_writer_add_as(w, "f16.strided", &v[2], TF_ST_F16) || tf_st_writer_add(w, "f32.chunks", &v[1]) ||
         tf_st_writer_add_as(w, "bf16", bf, TF_ST_BF16) || tf_st_writer_add_as(w, "f16", bf, TF_ST_F16) ||
         tf_st_writer_add(w, "f32.slice", &v[3]) || tf_st_writer_add(w, "f32.broadcast", &v[4]) ||
         tf_st_writer_add(w, "i32", i32) || tf_st_writer_add_as(w, "i64.strided", &v[5], TF_ST_I64) ||
         tf_st_writer_add_as(w, "i64", i32, TF_ST_I64) || tf_st_writer_add(w, "mask.strided", &v[6]) ||
         tf_st_writer_add_as(w, "u8", u8, TF_ST_U8) || tf_st_writer_add_as(w, "bool", u8, TF_ST_BOOL) ||
         tf_st_writer_add_grad(w, "grad.g", g) || tf_st_writer_add_grad(w, "grad.g.t", &v[7]) ||
         tf_st_writer_add_as(w, "bf16.strided", &v[0], TF_ST_BF16) || tf_st_writer_add(w, "empty", e1) ||
         tf_st_writer_add_as(w, "empty.f16", e3, TF_ST_F16) || tf_st_writer_add(w, "scalar", sc) ||
         tf_st_writer_add(w, "name \"quoted\" \xC3\xA9", f) || add_stack_header(w, f) ||
         tf_st_writer_add_as(w, "a.f32.as", sl, TF_ST_F32);
    return rc;
#undef T
}

/* The bytes must stay those of the writer that copied every tensor when it was
 * added (tests/data/st_writer_golden.safetensors, written by it from this set). */
TEST(safetensors_writer_golden_bytes) {
    tf_arena *a = tf_arena_new(0);
    tf_st_writer *w = tf_st_writer_new();
    tf_tensor views[8];
    int nv;
    CHECK(a && w && golden_set(w, a, views, &nv) == 0);
    char path[] = "/tmp/tformer_golden_XXXXXX";
    CHECK(test_temp_file(path) == 0);
    CHECK(tf_st_writer_save(w, path) == 0);
    size_t n, m;
    char *got = test_slurp(path, &n), *want = test_slurp("tests/data/st_writer_golden.safetensors", &m);
    CHECKF(got && want, "no golden file: this run wrote %s", path);
    size_t i = 0;
    while (i < n && i < m && got[i] == want[i]) i++;
    CHECKF(n == m && i == n, "%s differs from tests/data/st_writer_golden.safetensors at byte %zu (%zu vs %zu bytes)",
           path, i, n, m);
    unlink(path);
    free(got), free(want);
    tf_st_writer_free(w);
    tf_arena_free(a);
}

/* Tensors are read at save time, not when added: a change in between is saved. */
TEST(safetensors_writer_reads_tensors_at_save) {
    tf_arena *a = tf_arena_new(0);
    tf_tensor *x = tf_tensor_alloc(a, TF_DTYPE_F32, 1, (int64_t[]){3}, 1);
    tf_st_writer *w = tf_st_writer_new();
    CHECK(x && w && tf_st_writer_add(w, "x", x) == 0 && tf_st_writer_add_grad(w, "g", x) == 0 &&
          tf_st_writer_add_as(w, "h", x, TF_ST_F16) == 0);
    tf_f32(x)[1] = 2.5f, x->grad[2] = -4.0f;
    char path[] = "/tmp/tformer_st_XXXXXX";
    CHECK(test_temp_file(path) == 0);
    CHECK(tf_st_writer_save(w, path) == 0);
    tf_st_file *f = tf_st_open(path);
    tf_tensor *r = f ? tf_st_to_tensor(f, tf_st_find(f, "x"), a) : NULL, *g = f ? tf_st_to_tensor(f, tf_st_find(f, "g"), a) : NULL;
    tf_tensor *h = f ? tf_st_to_tensor(f, tf_st_find(f, "h"), a) : NULL;
    CHECK(r && g && h && tf_f32(r)[1] == 2.5f && tf_f32(g)[2] == -4.0f && tf_f32(h)[1] == 2.5f);
    tf_st_close(f);
    unlink(path);
    tf_st_writer_free(w);
    tf_arena_free(a);
}

/* The names in a folder other than "keep", or -1 (with how many in *n). */
static int others_in(const char *dir, int *n) {
    DIR *d = opendir(dir);
    if (!d) return -1;
    *n = 0;
    for (struct dirent *e; (e = readdir(d));)
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..") && strcmp(e->d_name, "keep")) (*n)++;
    closedir(d);
    return 0;
}

TEST(safetensors_writer_errors_name_tensor_and_file) {
    tf_arena *a = tf_arena_new(0);
    tf_tensor *x = tf_tensor_alloc(a, TF_DTYPE_F32, 1, (int64_t[]){1 << 18}, 0); /* 1 MiB */
    tf_st_writer *w = tf_st_writer_new();
    CHECK(x && w);
    CHECK(tf_st_writer_add(w, "gone", NULL) != 0 && strstr(tf_error(), "'gone' is missing"));
    CHECK(tf_st_writer_add_grad(w, "nograd", x) != 0 && strstr(tf_error(), "'nograd'"));
    CHECK(tf_st_writer_add_as(w, "i", x, TF_ST_I64) != 0 && strstr(tf_error(), "'i' cannot be stored as I64"));
    CHECK(tf_st_writer_add(w, "big", x) == 0);
    CHECK(tf_st_writer_add_as(w, "big", x, TF_ST_F16) != 0 && strstr(tf_error(), "'big' added twice"));
    CHECK(tf_st_writer_save(w, "/nonexistent/dir/x.safetensors") != 0 && strstr(tf_error(), "/nonexistent/dir/x.safetensors"));
    /* A write that fails half-way (a file size limit of 64 KiB): an error naming
     * the file and the tensor, the previous file untouched, no temporary left. */
    char dir[] = "/tmp/tformer_stdir_XXXXXX", path[64];
    CHECK(mkdtemp(dir) != NULL);
    snprintf(path, sizeof path, "%s/keep", dir);
    FILE *keep = fopen(path, "wb");
    CHECK(keep && fwrite("old", 1, 3, keep) == 3 && fclose(keep) == 0);
    struct rlimit old;
    CHECK(getrlimit(RLIMIT_FSIZE, &old) == 0);
    void (*prev)(int) = signal(SIGXFSZ, SIG_IGN);
    struct rlimit small = {65536, old.rlim_max};
    int set = setrlimit(RLIMIT_FSIZE, &small), rc = set ? 0 : tf_st_writer_save(w, path);
    char msg[512];
    snprintf(msg, sizeof msg, "%s", tf_error());
    setrlimit(RLIMIT_FSIZE, &old);
    signal(SIGXFSZ, prev);
    CHECK(set == 0);
    CHECKF(rc != 0 && strstr(msg, path) && strstr(msg, "'big'"), "rc %d, message '%s'", rc, msg);
    size_t n;
    char *kept = test_slurp(path, &n);
    int others = -1;
    CHECK(kept && n == 3 && !memcmp(kept, "old", 3) && others_in(dir, &others) == 0);
    CHECKF(others == 0, "%d files left in %s", others, dir);
    free(kept);
    unlink(path);
    rmdir(dir);
    tf_st_writer_free(w);
    tf_arena_free(a);
}

/* A file image: 8-byte length, header, then `data` bytes of zeros. */
static size_t image(unsigned char *buf, const char *header, size_t data) {
    uint64_t n = strlen(header);
    for (int i = 0; i < 8; i++) buf[i] = (unsigned char)(n >> (8 * i));
    memcpy(buf + 8, header, n);
    memset(buf + 8 + n, 0, data);
    return 8 + n + data;
}

TEST(safetensors_rejects_malformed_headers) {
    static const struct {
        const char *header;
        size_t data;
        const char *expect;
    } cases[] = {
        {"[1,2]", 0, "not a JSON object"},
        {"{\"a\":", 0, "not a JSON object"},
        {"{\"a\":{\"shape\":[1],\"data_offsets\":[0,4]}}", 4, "dtype"},
        {"{\"a\":{\"dtype\":\"F64\",\"shape\":[1],\"data_offsets\":[0,8]}}", 8, "unsupported dtype"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[-1],\"data_offsets\":[0,4]}}", 4, "invalid shape"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[1.5],\"data_offsets\":[0,4]}}", 4, "invalid shape"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[4294967296,4294967296,4294967296],\"data_offsets\":[0,4]}}", 4, "invalid shape"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[1,1,1,1,1,1,1],\"data_offsets\":[0,4]}}", 4, "more dimensions"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}", 4, "past the end"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,0]}}", 4, "begin <= end"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0]}}", 4, "data_offsets"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,4]}}", 8, "differs"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
         "\"b\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}", 8, "overlap"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
         "\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}", 8, "twice"},
        {"{\"__metadata__\":[1]}", 0, "__metadata__"},
        {"{\"a\":3}", 0, "not an object"},
    };
    unsigned char buf[512];
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        size_t n = image(buf, cases[i].header, cases[i].data);
        tf_st_file *f = tf_st_open_memory(buf, n, "case");
        CHECKF(f == NULL, "case %zu accepted: %s", i, cases[i].header);
        CHECKF(strstr(tf_error(), cases[i].expect) != NULL, "case %zu: message '%s' lacks '%s'", i,
               tf_error(), cases[i].expect);
    }
    /* Lengths: too short, beyond the file, beyond the format's limit. */
    CHECK(!tf_st_open_memory(buf, 5, "short") && strstr(tf_error(), "shorter"));
    size_t n = image(buf, "{}", 0);
    buf[0] = 200;
    CHECK(!tf_st_open_memory(buf, n, "long") && strstr(tf_error(), "file size"));
    buf[0] = 0, buf[4] = 1;
    CHECK(!tf_st_open_memory(buf, n, "huge") && strstr(tf_error(), "100 MB"));
    CHECK(!tf_st_open("/nonexistent/x.safetensors") && strstr(tf_error(), "cannot open"));
    /* A valid empty file and an out-of-range I64. */
    n = image(buf, "{}      ", 0);
    tf_st_file *f = tf_st_open_memory(buf, n, "empty");
    CHECK(f && tf_st_count(f) == 0);
    tf_st_close(f);
    n = image(buf, "{\"i\":{\"dtype\":\"I64\",\"shape\":[1],\"data_offsets\":[0,8]}}", 8);
    buf[n - 1] = 1; /* 2^56 */
    f = tf_st_open_memory(buf, n, "i64");
    CHECK(f != NULL);
    tf_arena *a = tf_arena_new(0);
    CHECK(!tf_st_to_tensor(f, tf_st_entry_at(f, 0), a) && strstr(tf_error(), "32-bit"));
    tf_arena_free(a);
    tf_st_close(f);
}

/* Many tensors (issue 18 item 14: the duplicate check and lookups were
 * quadratic): 20,000 names, each found where it is, a name that is absent
 * not found, a duplicate last of all refused by name. */
TEST(safetensors_many_tensors_found_and_duplicates_refused) {
    enum { N = 20000 };
    size_t cap = (size_t)N * 80 + 256, k = 0;
    char *hdr = malloc(cap);
    unsigned char *buf = malloc(cap + 8 + 4 * (N + 1));
    CHECK(hdr && buf);
    for (int dup = 0; dup <= 1; dup++) {
        k = (size_t)snprintf(hdr, cap, "{");
        for (int i = 0; i < N + dup; i++)
            k += (size_t)snprintf(hdr + k, cap - k, "%s\"w.%d\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[%d,%d]}",
                                  i ? "," : "", i < N ? i : 777, 4 * i, 4 * i + 4);
        snprintf(hdr + k, cap - k, "}");
        size_t n = image(buf, hdr, 4 * (size_t)(N + dup));
        tf_st_file *f = tf_st_open_memory(buf, n, "many");
        if (dup) {
            CHECKF(!f && strstr(tf_error(), "tensor 'w.777' appears twice"), "%s", tf_error());
            continue;
        }
        CHECK(f && tf_st_count(f) == N);
        int found = 0;
        char name[32];
        for (int i = 0; f && i < N; i++) {
            snprintf(name, sizeof name, "w.%d", i);
            const tf_st_entry *e = tf_st_find(f, name);
            found += e && !strcmp(e->name, name) && e == tf_st_entry_at(f, i);
        }
        CHECK(found == N && f && !tf_st_find(f, "w.20000") && !tf_st_find(f, "w.") && !tf_st_find(f, ""));
        tf_st_close(f);
    }
    free(hdr), free(buf);
}

/* tf_st_open_entries: the caller's arrays read as a file's entries (tf_st_to_tensor converts an I64 entry
 * as it does a file's), and every entry a header would refuse refused, naming the label and the tensor. */
TEST(safetensors_entries_are_checked_as_a_header) {
    int64_t ids[3] = {4, 5, 6};
    float x[2] = {1.5f, -2.0f};
    tf_st_entry e[2] = {{.name = "ids", .dtype = TF_ST_I64, .ndim = 2, .shape = {1, 3}, .data = ids, .nbytes = 24},
                        {.name = "x", .dtype = TF_ST_F32, .ndim = 1, .shape = {2}, .data = x, .nbytes = 8}};
    tf_st_file *f = tf_st_open_entries(e, 2, "inputs");
    CHECK(f && tf_st_count(f) == 2 && tf_st_find(f, "x") && tf_st_find(f, "x")->data == x);
    tf_arena *a = tf_arena_new(1 << 16);
    tf_tensor *t = f && a ? tf_st_to_tensor(f, tf_st_find(f, "ids"), a) : NULL;
    CHECK(t && t->dtype == TF_DTYPE_I32 && t->ndim == 2 && tf_i32(t)[2] == 6);
    tf_arena_free(a), tf_st_close(f);
    tf_st_entry bad[2] = {e[0], e[0]};
    CHECK(!tf_st_open_entries(bad, 2, "inputs") && strstr(tf_error(), "inputs: tensor 'ids' appears twice"));
    bad[1].name = "y", bad[1].nbytes = 16;
    CHECK(!tf_st_open_entries(bad, 2, "inputs") && strstr(tf_error(), "tensor 'y': 16 bytes of data"));
    bad[1].nbytes = 24, bad[1].dtype = TF_ST_COUNT;
    CHECK(!tf_st_open_entries(bad, 2, "inputs") && strstr(tf_error(), "tensor 'y': a dtype"));
    bad[1].dtype = TF_ST_I64, bad[1].data = NULL;
    CHECK(!tf_st_open_entries(bad, 2, "inputs") && strstr(tf_error(), "tensor 'y'"));
    bad[1].data = ids, bad[1].name = "";
    CHECK(!tf_st_open_entries(bad, 2, "inputs") && strstr(tf_error(), "tensor 1 has no name"));
}
