/* safetensors: values written by the reference library, round trips through
 * our writer, and every malformed header rejected with a message. */
#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>
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
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    close(fd);
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
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    close(fd);
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
