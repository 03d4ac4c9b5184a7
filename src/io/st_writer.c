/* safetensors writer: tensors are copied when added and written atomically
 * (a temporary file in the same folder, fsync, then rename). */
#include <cjson/cJSON.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../core/internal.h"

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
};

tf_st_writer *tf_st_writer_new(void) { return calloc(1, sizeof(tf_st_writer)); }

void tf_st_writer_free(tf_st_writer *w) {
    if (!w) return;
    for (int i = 0; i < w->n; i++) {
        free(w->items[i].name);
        free(w->items[i].bytes);
    }
    free(w->items);
    free(w);
}

/* Copy src (any strides) into contiguous bytes. */
static void gather(unsigned char *dst, const tf_tensor *t, const void *src, size_t es) {
    int64_t n = tf_numel(t);
    for (int64_t i = 0; i < n; i++) {
        int64_t off = 0, r = i;
        for (int d = t->ndim - 1; d >= 0; d--) {
            off += (r % t->shape[d]) * t->stride[d];
            r /= t->shape[d];
        }
        memcpy(dst + (size_t)i * es, (const unsigned char *)src + off * (int64_t)es, es);
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
    size_t es = dt == TF_ST_BOOL ? 1 : 4, n = (size_t)tf_numel(t), len = strlen(name) + 1;
    st_item *it = &w->items[w->n];
    it->name = malloc(len);
    it->bytes = malloc(n * es > 0 ? n * es : 1);
    if (!it->name || !it->bytes) {
        free(it->name);
        free(it->bytes);
        return tf_set_error("safetensors writer: out of memory for '%s'", name);
    }
    memcpy(it->name, name, len);
    gather(it->bytes, t, src, es);
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

/* The JSON header, padded with spaces to a multiple of 8 bytes. */
static char *header_json(const tf_st_writer *w, size_t *len) {
    cJSON *root = cJSON_CreateObject(), *meta = cJSON_AddObjectToObject(root, "__metadata__");
    cJSON_AddStringToObject(meta, "format", "pt");
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
    size_t plen = strlen(path);
    char *tmp = malloc(plen + 16);
    if (!tmp) {
        free(hdr);
        return tf_set_error("%s: out of memory", path);
    }
    memcpy(tmp, path, plen);
    memcpy(tmp + plen, ".tmp.XXXXXX", 12);
    int fd = mkstemp(tmp), rc = -1;
    FILE *fp = fd >= 0 ? fdopen(fd, "wb") : NULL;
    if (!fp) {
        tf_set_error("%s: cannot create a temporary file: %s", path, strerror(errno));
        if (fd >= 0) close(fd), unlink(tmp);
        goto out;
    }
    unsigned char len8[8];
    for (int i = 0; i < 8; i++) len8[i] = (unsigned char)((uint64_t)hl >> (8 * i));
    int ok = fwrite(len8, 1, 8, fp) == 8 && fwrite(hdr, 1, hl, fp) == hl;
    for (int i = 0; ok && i < w->n; i++) ok = fwrite(w->items[i].bytes, 1, w->items[i].nbytes, fp) == w->items[i].nbytes;
    ok = ok && fflush(fp) == 0 && fsync(fileno(fp)) == 0;
    ok = (fclose(fp) == 0) && ok;
    if (!ok || rename(tmp, path) != 0) {
        tf_set_error("%s: write failed: %s", path, strerror(errno));
        unlink(tmp);
        goto out;
    }
    rc = 0;
out:
    free(tmp);
    free(hdr);
    return rc;
}
