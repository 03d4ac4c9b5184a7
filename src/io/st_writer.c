/* safetensors writer: tensors are copied when added and written atomically
 * (a temporary file in the same folder, fsync, then rename). */
#include <cjson/cJSON.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../util/util.h"

typedef struct {
    char *name;
    tf_st_dtype dtype;
    int ndim;
    int64_t shape[TF_MAX_DIMS];
    unsigned char *bytes;
    size_t nbytes;
} st_item;

struct tf_st_writer {
    st_item *items;
    int n, cap;
    char **meta; /* key, value, key, value, ... */
    int n_meta;
};

tf_st_writer *tf_st_writer_new(void) { return calloc(1, sizeof(tf_st_writer)); }

void tf_st_writer_free(tf_st_writer *w) {
    if (!w) return;
    for (int i = 0; i < w->n; i++) {
        free(w->items[i].name);
        free(w->items[i].bytes);
    }
    for (int i = 0; i < 2 * w->n_meta; i++) free(w->meta[i]);
    free(w->meta);
    free(w->items);
    free(w);
}

static char *st_strdup(const char *s) {
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d) memcpy(d, s, n);
    return d;
}

int tf_st_writer_set_metadata(tf_st_writer *w, const char *key, const char *value) {
    char **m = realloc(w->meta, (size_t)(2 * w->n_meta + 2) * sizeof *m);
    if (!m) return tf_set_error("safetensors writer: out of memory");
    w->meta = m;
    m[2 * w->n_meta] = st_strdup(key);
    m[2 * w->n_meta + 1] = st_strdup(value);
    if (!m[2 * w->n_meta] || !m[2 * w->n_meta + 1]) {
        free(m[2 * w->n_meta]), free(m[2 * w->n_meta + 1]);
        return tf_set_error("safetensors writer: out of memory");
    }
    w->n_meta++;
    return 0;
}

static uint16_t float_to_bf16(float f) {
    uint32_t b;
    memcpy(&b, &f, 4);
    if ((b & 0x7FFFFFFFu) > 0x7F800000u) return (uint16_t)((b >> 16) | 0x40); /* quiet NaN */
    b += 0x7FFFu + ((b >> 16) & 1u);                                           /* nearest even */
    return (uint16_t)(b >> 16);
}

static uint16_t float_to_half(float f) {
    uint32_t b;
    memcpy(&b, &f, 4);
    uint32_t sign = (b >> 16) & 0x8000u, e = (b >> 23) & 0xFFu, m = b & 0x7FFFFFu;
    if (e == 0xFF) return (uint16_t)(sign | 0x7C00u | (m ? 0x200u : 0));    /* inf, nan */
    int32_t he = (int32_t)e - 127 + 15;
    if (he >= 31) return (uint16_t)(sign | 0x7C00u);                          /* overflow */
    if (he <= 0) {                                                            /* subnormal or 0 */
        if (he < -10) return (uint16_t)sign;
        m |= 0x800000u;
        uint32_t shift = (uint32_t)(14 - he), half = m >> shift, rem = m & ((1u << shift) - 1);
        uint32_t mid = 1u << (shift - 1);
        if (rem > mid || (rem == mid && (half & 1))) half++;
        return (uint16_t)(sign | half);
    }
    uint32_t half = sign | ((uint32_t)he << 10) | (m >> 13), rem = m & 0x1FFFu;
    if (rem > 0x1000u || (rem == 0x1000u && (half & 1))) half++;              /* may carry into e */
    return (uint16_t)half;
}

/* Element i of a strided tensor (data or, when src is the grad, gradient). */
static const unsigned char *element(const tf_tensor *t, const void *src, int64_t i, size_t es) {
    int64_t off = 0;
    for (int d = t->ndim - 1; d >= 0; d--) {
        off += (i % t->shape[d]) * t->stride[d];
        i /= t->shape[d];
    }
    return (const unsigned char *)src + off * (int64_t)es;
}

/* Copy src (any strides, dtype of t) into contiguous bytes of dtype dt. */
static void gather(unsigned char *dst, const tf_tensor *t, const void *src, tf_st_dtype dt, size_t es) {
    size_t in_es = src == (const void *)t->grad ? sizeof(float) : tf_dtype_size(t->dtype);
    for (int64_t i = 0, n = tf_numel(t); i < n; i++) {
        const unsigned char *p = element(t, src, i, in_es);
        unsigned char *q = dst + (size_t)i * es;
        float f;
        int32_t v;
        if (dt == TF_ST_F16 || dt == TF_ST_BF16) {
            memcpy(&f, p, 4);
            uint16_t h = dt == TF_ST_F16 ? float_to_half(f) : float_to_bf16(f);
            memcpy(q, &h, 2);
        } else if (dt == TF_ST_I64) {
            memcpy(&v, p, 4);
            int64_t w64 = v;
            memcpy(q, &w64, 8);
        } else if (dt == TF_ST_BOOL) {
            *q = *p != 0;
        } else {
            memcpy(q, p, es);
        }
    }
}

static int add_item(tf_st_writer *w, const char *name, const tf_tensor *t, const void *src,
                    tf_st_dtype dt) {
    if (!t || !src) return tf_set_error("safetensors writer: tensor '%s' is missing", name);
    for (int i = 0; i < w->n; i++)
        if (!strcmp(w->items[i].name, name)) return tf_set_error("safetensors writer: '%s' added twice", name);
    if (w->n == w->cap) {
        int cap = w->cap ? 2 * w->cap : 16;
        st_item *it = realloc(w->items, (size_t)cap * sizeof *it);
        if (!it) return tf_set_error("safetensors writer: out of memory");
        w->items = it;
        w->cap = cap;
    }
    static const size_t ES[TF_ST_COUNT] = {[TF_ST_F32] = 4, [TF_ST_F16] = 2, [TF_ST_BF16] = 2,
                                           [TF_ST_I64] = 8, [TF_ST_I32] = 4, [TF_ST_U8] = 1, [TF_ST_BOOL] = 1};
    size_t es = ES[dt], n = (size_t)tf_numel(t), len = strlen(name) + 1;
    st_item *it = &w->items[w->n];
    it->name = malloc(len);
    it->bytes = malloc(n * es > 0 ? n * es : 1);
    if (!it->name || !it->bytes) {
        free(it->name);
        free(it->bytes);
        return tf_set_error("safetensors writer: out of memory for '%s'", name);
    }
    memcpy(it->name, name, len);
    gather(it->bytes, t, src, dt, es);
    it->dtype = dt;
    it->ndim = t->ndim;
    memcpy(it->shape, t->shape, sizeof it->shape);
    it->nbytes = n * es;
    w->n++;
    return 0;
}

int tf_st_writer_add(tf_st_writer *w, const char *name, const tf_tensor *t) {
    tf_st_dtype dt = !t ? TF_ST_F32 : t->dtype == TF_DTYPE_F32 ? TF_ST_F32 : t->dtype == TF_DTYPE_I32 ? TF_ST_I32 : TF_ST_BOOL;
    return add_item(w, name, t, t ? t->data : NULL, dt);
}

int tf_st_writer_add_grad(tf_st_writer *w, const char *name, const tf_tensor *t) {
    return add_item(w, name, t, t ? t->grad : NULL, TF_ST_F32);
}

int tf_st_writer_add_as(tf_st_writer *w, const char *name, const tf_tensor *t, tf_st_dtype dtype) {
    if (!t) return tf_set_error("safetensors writer: tensor '%s' is missing", name);
    int ok = t->dtype == TF_DTYPE_F32 ? dtype == TF_ST_F32 || dtype == TF_ST_F16 || dtype == TF_ST_BF16
           : t->dtype == TF_DTYPE_I32 ? dtype == TF_ST_I32 || dtype == TF_ST_I64
                                      : dtype == TF_ST_U8 || dtype == TF_ST_BOOL;
    if (!ok) return tf_set_error("safetensors writer: '%s' cannot be stored as %s", name, tf_st_dtype_name(dtype));
    return add_item(w, name, t, t->data, dtype);
}

/* The JSON header, padded with spaces to a multiple of 8 bytes. */
static char *header_json(const tf_st_writer *w, size_t *len) {
    cJSON *root = cJSON_CreateObject(), *meta = cJSON_AddObjectToObject(root, "__metadata__");
    cJSON_AddStringToObject(meta, "format", "pt");
    for (int i = 0; i < w->n_meta; i++) cJSON_AddStringToObject(meta, w->meta[2 * i], w->meta[2 * i + 1]);
    size_t off = 0;
    for (int i = 0; i < w->n; i++) {
        const st_item *it = &w->items[i];
        cJSON *e = cJSON_AddObjectToObject(root, it->name);
        cJSON_AddStringToObject(e, "dtype", tf_st_dtype_name(it->dtype));
        cJSON *sh = cJSON_AddArrayToObject(e, "shape"), *of = cJSON_AddArrayToObject(e, "data_offsets");
        for (int d = 0; d < it->ndim; d++) cJSON_AddItemToArray(sh, cJSON_CreateNumber((double)it->shape[d]));
        cJSON_AddItemToArray(of, cJSON_CreateNumber((double)off));
        cJSON_AddItemToArray(of, cJSON_CreateNumber((double)(off + it->nbytes)));
        off += it->nbytes;
    }
    char *s = cJSON_PrintUnformatted(root);
    cJSON_Delete(root);
    if (!s) return NULL;
    size_t n = strlen(s), padded = (n + 7) & ~(size_t)7;
    char *out = realloc(s, padded + 1);
    if (!out) {
        free(s);
        return NULL;
    }
    memset(out + n, ' ', padded - n);
    out[padded] = 0;
    *len = padded;
    return out;
}

int tf_st_writer_save(tf_st_writer *w, const char *path) {
    size_t hl;
    char *hdr = header_json(w, &hl);
    if (!hdr) return tf_set_error("%s: cannot build the header (out of memory)", path);
    tf_atomic_file a;
    if (tf_atomic_open(&a, path)) return free(hdr), -1;
    unsigned char len8[8];
    for (int i = 0; i < 8; i++) len8[i] = (unsigned char)((uint64_t)hl >> (8 * i));
    int ok = fwrite(len8, 1, 8, a.f) == 8 && fwrite(hdr, 1, hl, a.f) == hl;
    for (int i = 0; ok && i < w->n; i++) ok = fwrite(w->items[i].bytes, 1, w->items[i].nbytes, a.f) == w->items[i].nbytes;
    free(hdr);
    return tf_atomic_commit(&a, ok);
}
