/* safetensors writer: adding a tensor records a reference to it (its header
 * and which buffer, data or gradient); saving streams every tensor into the
 * file, so a checkpoint costs no second copy of the weights in memory. The
 * file is written atomically (a temporary file in the same folder, fsync,
 * then rename). */
#include <cjson/cJSON.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../core/core_internal.h"
#include "../util/util.h"
#include "tformer/safetensors.h"

/* Output chunk for tensors that are converted or strided (64 KiB). */
enum { ST_CHUNK = 1 << 16 };

static const size_t ST_ES[TF_ST_COUNT] = {[TF_ST_F32] = 4, [TF_ST_F16] = 2, [TF_ST_BF16] = 2, [TF_ST_I64] = 8,
                                          [TF_ST_I32] = 4, [TF_ST_U8] = 1, [TF_ST_BOOL] = 1, [TF_ST_I8] = 1};

typedef struct {
    char *name;
    tf_tensor t;       /* a copy of the header: dtype, shape, strides, data and grad pointers */
    const void *src;   /* t.data or t.grad: the buffer written, read at save time */
    size_t in_es;      /* bytes per element of src */
    tf_st_dtype dtype; /* stored dtype */
    size_t nbytes;     /* bytes in the file */
} st_item;

struct tf_st_writer {
    st_item *items;
    int n, cap;
    size_t total; /* data bytes of every item so far */
    char **meta;  /* key, value, key, value, ... */
    int n_meta;
};

tf_st_writer *tf_st_writer_new(void) { return calloc(1, sizeof(tf_st_writer)); }

void tf_st_writer_free(tf_st_writer *w) {
    if (!w) return;
    for (int i = 0; i < w->n; i++) free(w->items[i].name);
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

/* Element src[0] (float, int32 or byte as the conversion reads it) stored as dt at q. */
static void convert_one(unsigned char *q, const unsigned char *p, tf_st_dtype dt, size_t es) {
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

/* Stream a strided or converted tensor through buf (ST_CHUNK bytes): its
 * elements in row-major order of its shape, each converted to it->dtype. */
static int write_chunked(FILE *f, const st_item *it, unsigned char *buf) {
    const tf_tensor *t = &it->t;
    const unsigned char *src = it->src;
    size_t es = ST_ES[it->dtype], per = ST_CHUNK / es, left = it->nbytes / es;
    int64_t idx[TF_MAX_DIMS] = {0}, off = 0; /* multi-index and its offset in elements */
    while (left > 0) {
        size_t k = left < per ? left : per;
        for (size_t j = 0; j < k; j++) {
            convert_one(buf + j * es, src + off * (int64_t)it->in_es, it->dtype, es);
            for (int d = t->ndim - 1; d >= 0; d--) { /* next index, last dimension fastest */
                off += t->stride[d];
                if (++idx[d] < t->shape[d]) break;
                off -= t->stride[d] * t->shape[d];
                idx[d] = 0;
            }
        }
        if (fwrite(buf, 1, k * es, f) != k * es) return -1;
        left -= k;
    }
    return 0;
}

/* One tensor's bytes: straight from its memory when it is contiguous and
 * stored as it is held (F32 data or gradient, I32, U8), else chunk by chunk. */
static int write_item(FILE *f, const st_item *it, unsigned char *buf) {
    if (it->nbytes == 0) return 0;
    int raw = (it->dtype == TF_ST_F32 || it->dtype == TF_ST_I32 || it->dtype == TF_ST_U8) && tf_is_contiguous(&it->t);
    if (raw) return fwrite(it->src, 1, it->nbytes, f) == it->nbytes ? 0 : -1;
    return write_chunked(f, it, buf);
}

static int add_item(tf_st_writer *w, const char *name, const tf_tensor *t, const void *src,
                    tf_st_dtype dt) {
    if (!t) return tf_set_error("safetensors writer: tensor '%s' is missing", name);
    if (!src) return tf_set_error("safetensors writer: tensor '%s' has no %s", name, t->data ? "gradient" : "data");
    for (int i = 0; i < w->n; i++)
        if (!strcmp(w->items[i].name, name)) return tf_set_error("safetensors writer: '%s' added twice", name);
    size_t nbytes, total;
    if (tf_numel(t) < 0 || !tf_mul_size((size_t)tf_numel(t), ST_ES[dt], &nbytes) || nbytes > SIZE_MAX - w->total)
        return tf_set_error("safetensors writer: '%s' is too large", name);
    total = w->total + nbytes;
    if (w->n == w->cap) {
        int cap = w->cap ? 2 * w->cap : 16;
        st_item *it = realloc(w->items, (size_t)cap * sizeof *it);
        if (!it) return tf_set_error("safetensors writer: out of memory");
        w->items = it;
        w->cap = cap;
    }
    st_item *it = &w->items[w->n];
    if (!(it->name = st_strdup(name))) return tf_set_error("safetensors writer: out of memory for '%s'", name);
    it->t = *t;
    it->src = src;
    it->in_es = src == (const void *)t->grad ? sizeof(float) : tf_dtype_size(t->dtype);
    it->dtype = dt;
    it->nbytes = nbytes;
    w->total = total;
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
        for (int d = 0; d < it->t.ndim; d++) cJSON_AddItemToArray(sh, cJSON_CreateNumber((double)it->t.shape[d]));
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
    unsigned char *buf = malloc(ST_CHUNK); /* the only buffer: tensors go from their memory to the file */
    if (!hdr || !buf) return free(hdr), free(buf), tf_set_error("%s: out of memory for the header", path);
    tf_atomic_file a;
    if (tf_atomic_open(&a, path)) return free(hdr), free(buf), -1;
    unsigned char len8[8];
    for (int i = 0; i < 8; i++) len8[i] = (unsigned char)((uint64_t)hl >> (8 * i));
    errno = 0;
    int failed = fwrite(len8, 1, 8, a.f) == 8 && fwrite(hdr, 1, hl, a.f) == hl ? -1 : -2; /* item, -2 header */
    for (int i = 0; failed == -1 && i < w->n; i++)
        if (write_item(a.f, &w->items[i], buf)) failed = i;
    free(hdr);
    free(buf);
    if (failed != -1) { /* name what was being written; the temporary file is removed */
        int err = errno ? errno : EIO;
        tf_atomic_abort(&a);
        if (failed == -2) return tf_set_error("%s: cannot write the header: %s", path, strerror(err));
        return tf_set_error("%s: cannot write tensor '%s': %s", path, w->items[failed].name, strerror(err));
    }
    return tf_atomic_commit(&a, 1);
}
