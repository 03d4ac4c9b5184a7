/* safetensors: an 8-byte little-endian header length, a JSON header, then the
 * raw little-endian tensor bytes. The reader maps the file and checks every
 * header field before any data is touched. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../core/core_internal.h"
#include "../util/util.h"
#include "tformer/safetensors.h"

#define ST_MAX_HEADER (100u << 20) /* the format's own limit: 100 MB */

static const struct {
    const char *name;
    size_t size;
} ST_DTYPES[TF_ST_COUNT] = {
    [TF_ST_F32] = {"F32", 4}, [TF_ST_F16] = {"F16", 2}, [TF_ST_BF16] = {"BF16", 2},
    [TF_ST_I64] = {"I64", 8}, [TF_ST_I32] = {"I32", 4}, [TF_ST_U8] = {"U8", 1},
    [TF_ST_BOOL] = {"BOOL", 1}, [TF_ST_I8] = {"I8", 1},
};

struct tf_st_file {
    char label[256];
    const unsigned char *base; /* whole file */
    size_t len;
    int mapped;
    const unsigned char *data; /* byte buffer after the header */
    size_t data_len;
    tf_st_entry *e;
    int n;
    char *names; /* all names, NUL-separated */
    tf_strmap index; /* name -> entry: duplicates and lookups in O(1), not O(n) (200k tensors) */
    char **meta; /* __metadata__ strings: key, value, ... */
    int n_meta, meta_cap;
    tf_st_file **shards; /* a sharded folder read as one file: the shards its entries point into, */
    char **shard_files;  /* and their file names */
    int n_shards;
};

const char *tf_st_dtype_name(tf_st_dtype dt) {
    return (unsigned)dt < TF_ST_COUNT ? ST_DTYPES[dt].name : "?";
}

static int st_err(const tf_st_file *f, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static int st_err(const tf_st_file *f, const char *fmt, ...) {
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return tf_set_error("%s: %s", f->label, msg);
}

/* A JSON number that is a non-negative integer below 2^53. */
static int json_uint(const cJSON *j, uint64_t *out) {
    if (!cJSON_IsNumber(j)) return 0;
    double v = j->valuedouble;
    if (!(v >= 0 && v <= 9007199254740992.0) || floor(v) != v) return 0;
    *out = (uint64_t)v;
    return 1;
}

/* Fill one entry from its header object; checks dtype, shape and offsets. */
static int parse_entry(tf_st_file *f, const cJSON *obj, tf_st_entry *e) {
    const char *nm = e->name;
    if (!cJSON_IsObject(obj)) return st_err(f, "tensor '%s': header entry is not an object", nm);
    const cJSON *dt = cJSON_GetObjectItemCaseSensitive(obj, "dtype");
    const cJSON *sh = cJSON_GetObjectItemCaseSensitive(obj, "shape");
    const cJSON *off = cJSON_GetObjectItemCaseSensitive(obj, "data_offsets");
    if (!cJSON_IsString(dt)) return st_err(f, "tensor '%s': missing or non-string dtype", nm);
    int k;
    for (k = 0; k < TF_ST_COUNT && strcmp(dt->valuestring, ST_DTYPES[k].name); k++) {}
    if (k == TF_ST_COUNT) return st_err(f, "tensor '%s': unsupported dtype '%s'", nm, dt->valuestring);
    e->dtype = (tf_st_dtype)k;
    if (!cJSON_IsArray(sh)) return st_err(f, "tensor '%s': missing shape", nm);
    int nd = cJSON_GetArraySize(sh);
    if (nd > TF_MAX_DIMS) return st_err(f, "tensor '%s': more dimensions than supported (6)", nm);
    e->ndim = nd;
    size_t numel = 1;
    for (int d = 0; d < nd; d++) {
        uint64_t v;
        if (!json_uint(cJSON_GetArrayItem(sh, d), &v) || !tf_mul_size(numel, (size_t)v, &numel))
            return st_err(f, "tensor '%s': invalid shape entry", nm);
        e->shape[d] = (int64_t)v;
    }
    uint64_t b, end;
    if (!cJSON_IsArray(off) || cJSON_GetArraySize(off) != 2 || !json_uint(cJSON_GetArrayItem(off, 0), &b) ||
        !json_uint(cJSON_GetArrayItem(off, 1), &end) || end < b)
        return st_err(f, "tensor '%s': data_offsets must be [begin, end] with begin <= end", nm);
    if (end > f->data_len) return st_err(f, "tensor '%s': data_offsets run past the end of the file", nm);
    size_t bytes;
    if (!tf_mul_size(numel, ST_DTYPES[k].size, &bytes) || bytes != end - b)
        return st_err(f, "tensor '%s': shape x dtype size differs from the data_offsets span", nm);
    e->data = f->data + b;
    e->nbytes = (size_t)(end - b);
    return 0;
}

static int by_offset(const void *a, const void *b) {
    const tf_st_entry *x = a, *y = b;
    return (x->data > y->data) - (x->data < y->data);
}

static char *st_strdup(const char *s) {
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d) memcpy(d, s, n);
    return d;
}

/* String entries of __metadata__ (others are ignored). */
static int keep_metadata(tf_st_file *f, const cJSON *meta) {
    int n = cJSON_GetArraySize(meta);
    if (f->meta) return st_err(f, "__metadata__ appears twice");
    f->meta_cap = 2 * n + 2;
    if (!(f->meta = calloc((size_t)f->meta_cap, sizeof *f->meta))) return tf_set_error("%s: out of memory", f->label);
    for (const cJSON *m = meta->child; m; m = m->next) {
        if (!cJSON_IsString(m)) continue;
        if (!(f->meta[2 * f->n_meta] = st_strdup(m->string)) || !(f->meta[2 * f->n_meta + 1] = st_strdup(m->valuestring)))
            return tf_set_error("%s: out of memory", f->label);
        f->n_meta++;
    }
    return 0;
}

const char *tf_st_metadata(const tf_st_file *f, const char *key) {
    for (int i = 0; i < f->n_meta; i++)
        if (!strcmp(f->meta[2 * i], key)) return f->meta[2 * i + 1];
    return NULL;
}

/* Names are copied so that the cJSON tree can be dropped. */
static int parse_header(tf_st_file *f, const cJSON *root) {
    int n = 0;
    size_t names_len = 0;
    for (const cJSON *c = root->child; c; c = c->next)
        if (strcmp(c->string, "__metadata__")) n++, names_len += strlen(c->string) + 1;
    f->e = calloc(n ? (size_t)n : 1, sizeof *f->e);
    f->names = malloc(names_len ? names_len : 1);
    if (!f->e || !f->names || tf_strmap_init(&f->index, (size_t)n)) return tf_set_error("%s: out of memory", f->label);
    char *np = f->names;
    for (const cJSON *c = root->child; c; c = c->next) {
        if (!strcmp(c->string, "__metadata__")) {
            if (!cJSON_IsObject(c)) return st_err(f, "__metadata__ is not an object");
            if (keep_metadata(f, c)) return -1;
            continue;
        }
        size_t l = strlen(c->string) + 1;
        if (tf_strmap_get(&f->index, c->string, l - 1) >= 0) return st_err(f, "tensor '%s' appears twice", c->string);
        if (tf_strmap_put(&f->index, c->string, l - 1, f->n)) return -1;
        tf_st_entry *e = &f->e[f->n];
        memcpy(np, c->string, l);
        e->name = np;
        np += l;
        if (parse_entry(f, c, e)) return -1;
        f->n++;
    }
    /* No two tensors may share bytes: check neighbours in offset order. */
    tf_st_entry *sorted = malloc((size_t)(n ? n : 1) * sizeof *sorted);
    if (!sorted) return tf_set_error("%s: out of memory", f->label);
    memcpy(sorted, f->e, (size_t)n * sizeof *sorted);
    qsort(sorted, (size_t)n, sizeof *sorted, by_offset);
    for (int i = 1; i < n; i++)
        if ((const unsigned char *)sorted[i - 1].data + sorted[i - 1].nbytes > (const unsigned char *)sorted[i].data) {
            int rc = st_err(f, "tensors '%s' and '%s' overlap", sorted[i - 1].name, sorted[i].name);
            free(sorted);
            return rc;
        }
    free(sorted);
    return 0;
}

static tf_st_file *parse(tf_st_file *f) {
    if (f->len < 8) {
        st_err(f, "file is shorter than the 8-byte header length");
        goto fail;
    }
    uint64_t hl = 0;
    for (int i = 7; i >= 0; i--) hl = (hl << 8) | f->base[i];
    if (hl > ST_MAX_HEADER || hl > f->len - 8) {
        tf_set_error("%s: header length %llu exceeds the %s", f->label, (unsigned long long)hl,
                     hl > ST_MAX_HEADER ? "100 MB limit" : "file size");
        goto fail;
    }
    f->data = f->base + 8 + hl;
    f->data_len = f->len - 8 - (size_t)hl;
    cJSON *root = cJSON_ParseWithLength((const char *)f->base + 8, (size_t)hl);
    if (!cJSON_IsObject(root)) {
        st_err(f, "header is not a JSON object");
        cJSON_Delete(root);
        goto fail;
    }
    int rc = parse_header(f, root);
    cJSON_Delete(root);
    if (rc) goto fail;
    return f;
fail:
    tf_st_close(f);
    return NULL;
}

tf_st_file *tf_st_open_memory(const void *buf, size_t len, const char *label) {
    tf_st_file *f = calloc(1, sizeof *f);
    if (!f) return tf_set_error("safetensors: out of memory"), NULL;
    snprintf(f->label, sizeof f->label, "%s", label ? label : "<memory>");
    f->base = buf;
    f->len = len;
    return parse(f);
}

/* The caller's entries as a file: each checked as a header entry is (a
 * known dtype, at most TF_MAX_DIMS sizes, nbytes = the shape's elements x
 * the dtype's size, data present), no name twice; names copied, data
 * borrowed. */
tf_st_file *tf_st_open_entries(const tf_st_entry *entries, int n, const char *label) {
    tf_st_file *f = calloc(1, sizeof *f);
    if (!f) return tf_set_error("safetensors: out of memory"), NULL;
    snprintf(f->label, sizeof f->label, "%s", label ? label : "<memory>");
    size_t names_len = 1;
    for (int i = 0; i < n; i++) names_len += strlen(entries[i].name ? entries[i].name : "") + 1;
    f->e = calloc(n > 0 ? (size_t)n : 1, sizeof *f->e), f->names = malloc(names_len);
    int rc = n < 0 ? st_err(f, "%d tensors", n) : 0;
    if (!rc && (!f->e || !f->names || tf_strmap_init(&f->index, n > 0 ? (size_t)n : 1)))
        rc = tf_set_error("%s: out of memory", f->label);
    char *np = f->names;
    for (int i = 0; !rc && i < n; i++) {
        const tf_st_entry *e = &entries[i];
        const char *nm = e->name ? e->name : "";
        size_t l = strlen(nm) + 1, numel = 1, bytes = 0;
        int ok = *nm && (unsigned)e->dtype < TF_ST_COUNT && e->ndim >= 0 && e->ndim <= TF_MAX_DIMS;
        for (int d = 0; ok && d < e->ndim; d++) ok = e->shape[d] >= 0 && tf_mul_size(numel, (size_t)e->shape[d], &numel);
        if (!*nm) rc = st_err(f, "tensor %d has no name", i);
        else if (tf_strmap_get(&f->index, nm, l - 1) >= 0) rc = st_err(f, "tensor '%s' appears twice", nm);
        else if (!ok) rc = st_err(f, "tensor '%s': a dtype of safetensors' and at most %d sizes >= 0", nm, TF_MAX_DIMS);
        else if (!tf_mul_size(numel, ST_DTYPES[e->dtype].size, &bytes) || bytes != e->nbytes || (bytes && !e->data))
            rc = st_err(f, "tensor '%s': %zu bytes of data for a shape and dtype of %zu", nm, e->nbytes, bytes);
        else if (!(rc = tf_strmap_put(&f->index, nm, l - 1, f->n))) {
            memcpy(np, nm, l);
            f->e[f->n] = *e, f->e[f->n++].name = np, np += l;
        }
    }
    if (rc) return tf_st_close(f), NULL;
    return f;
}

/* A missing model.safetensors whose folder holds the weights in another
 * form (item 14 of issue 54: it said only "cannot open"): named, with what
 * tformer reads. Leaves the error as it is otherwise. */
static void name_other_weights(const char *path) {
    size_t n = strlen(path), k = sizeof "model.safetensors" - 1;
    if (n < k || strcmp(path + n - k, "model.safetensors") || (n > k && path[n - k - 1] != '/') || !access(path, F_OK))
        return;
    static const char *const OTHER[][2] = {
        {"pytorch_model.bin.index.json", "sharded PyTorch pickles"},
        {"pytorch_model.bin", "PyTorch's pickle format"},
        {"tf_model.h5", "TensorFlow's HDF5 format"},
        {"flax_model.msgpack", "Flax's msgpack format"},
    };
    char other[4200];
    for (size_t i = 0; i < sizeof OTHER / sizeof *OTHER; i++) {
        snprintf(other, sizeof other, "%.*s%s", (int)(n - k), path, OTHER[i][0]);
        if (access(other, F_OK)) continue;
        tf_set_error("%s: missing; the folder holds %s instead, %s: tformer reads safetensors weights, "
                     "model.safetensors or a sharded model.safetensors.index.json (in Python, transformers' "
                     "model.save_pretrained(dir, safe_serialization=True) writes them)", path, OTHER[i][0], OTHER[i][1]);
        return;
    }
}

/* The shard `file` of a sharded folder (dir: its prefix, "DIR/"), opened once. */
static tf_st_file *shard(tf_st_file *f, const char *dir, size_t dir_len, const char *file, const char *index) {
    char path[4200];
    snprintf(path, sizeof path, "%.*s%s", (int)dir_len, dir, file);
    for (int i = 0; i < f->n_shards; i++)
        if (!strcmp(f->shard_files[i], file)) return f->shards[i];
    if (!*file || strchr(file, '/') || file[0] == '.' || !strcmp(file, "model.safetensors"))
        return tf_set_error("%s: shard \"%.100s\" is not a file name beside the index", index, file), NULL;
    char *name = strdup(file);
    tf_st_file *s = name ? tf_st_open(path) : NULL;
    if (!name) tf_set_error("%s: out of memory", index);
    if (s) f->shards[f->n_shards] = s, f->shard_files[f->n_shards++] = name;
    else free(name);
    return s;
}

/* DIR/model.safetensors.index.json's weight_map (tensor -> shard file) as
 * one file whose entries point into the shards' mappings. */
static tf_st_file *open_sharded(const char *path, const char *index) {
    cJSON *root = tf_json_read(index), *map = root ? cJSON_GetObjectItemCaseSensitive(root, "weight_map") : NULL;
    if (root && !cJSON_IsObject(map)) tf_set_error("%s: no \"weight_map\" object (tensor name -> shard file)", index);
    int n = cJSON_IsObject(map) ? cJSON_GetArraySize(map) : 0;
    tf_st_file *f = cJSON_IsObject(map) ? calloc(1, sizeof *f) : NULL;
    if (cJSON_IsObject(map) && !f) tf_set_error("safetensors: out of memory");
    int rc = f ? 0 : -1;
    if (f) {
        snprintf(f->label, sizeof f->label, "%.255s", index);
        f->e = calloc((size_t)(n ? n : 1), sizeof *f->e), f->shards = calloc((size_t)(n ? n : 1), sizeof *f->shards);
        f->shard_files = calloc((size_t)(n ? n : 1), sizeof *f->shard_files);
        if (!f->e || !f->shards || !f->shard_files || tf_strmap_init(&f->index, (size_t)(n ? n : 1)))
            rc = tf_set_error("%s: out of memory", index);
    }
    size_t dir_len = strlen(path) - (sizeof "model.safetensors" - 1);
    for (const cJSON *c = map ? map->child : NULL; !rc && c; c = c->next) {
        if (!cJSON_IsString(c)) {
            rc = tf_set_error("%s: weight_map[\"%.100s\"] is not a file name", index, c->string);
            break;
        }
        tf_st_file *s = shard(f, path, dir_len, c->valuestring, index);
        const tf_st_entry *e = s ? tf_st_find(s, c->string) : NULL;
        if (!s) rc = -1;
        else if (!e) rc = tf_set_error("%s: tensor '%.100s' is not in %s, where the index puts it", index, c->string, s->label);
        else if (!(rc = tf_strmap_put(&f->index, e->name, strlen(e->name), f->n))) f->e[f->n++] = *e;
    }
    cJSON_Delete(root);
    if (rc) tf_st_close(f), f = NULL;
    return f;
}

/* Folders whose two forms of the weights were told apart by naming one (tf_st_pick): the folder's device and
 * inode, and whether the index (the sharded form) is the one read. */
enum { MAX_PICKS = 64 };
static struct {
    dev_t dev;
    ino_t ino;
    int sharded;
} picks[MAX_PICKS];
static int n_picks;
static pthread_mutex_t picks_lock = PTHREAD_MUTEX_INITIALIZER;

/* The length of path's folder part when its last component is `file` (n: path's length), else -1. */
static long folder_of(const char *path, size_t n, const char *file) {
    size_t k = strlen(file);
    if (n < k || strcmp(path + n - k, file) || (n > k && path[n - k - 1] != '/')) return -1;
    return (long)(n - k);
}

/* The form picked for the folder of path ("DIR/" the first dir_len bytes): 1 one file, 2 the index, 0 none. */
static int picked(const char *path, long dir_len) {
    char dir[4200];
    struct stat st;
    snprintf(dir, sizeof dir, "%.*s", dir_len ? (int)dir_len : 1, dir_len ? path : ".");
    if (stat(dir, &st)) return 0;
    int form = 0;
    pthread_mutex_lock(&picks_lock);
    for (int i = 0; i < n_picks && !form; i++)
        if (picks[i].dev == st.st_dev && picks[i].ino == st.st_ino) form = picks[i].sharded ? 2 : 1;
    pthread_mutex_unlock(&picks_lock);
    return form;
}

int tf_st_pick(const char *path) {
    size_t n = strlen(path);
    long one = folder_of(path, n, "model.safetensors"), index = folder_of(path, n, "model.safetensors.index.json");
    long dir_len = one >= 0 ? one : index;
    char dir[4200];
    struct stat st, f;
    if (dir_len < 0)
        return tf_set_error("%s: not a folder's weights (DIR/model.safetensors or DIR/model.safetensors.index.json)",
                            path);
    snprintf(dir, sizeof dir, "%.*s", dir_len ? (int)dir_len : 1, dir_len ? path : ".");
    errno = 0;
    if (stat(path, &f) || !S_ISREG(f.st_mode) || stat(dir, &st))
        return tf_set_error("%s: %s", path, errno ? strerror(errno) : "not a regular file");
    int rc = 0;
    pthread_mutex_lock(&picks_lock);
    int i = 0;
    while (i < n_picks && (picks[i].dev != st.st_dev || picks[i].ino != st.st_ino)) i++;
    if (i == MAX_PICKS) rc = tf_set_error("%s: more than %d folders with a form of their weights named", path, MAX_PICKS);
    else picks[i].dev = st.st_dev, picks[i].ino = st.st_ino, picks[i].sharded = index >= 0, n_picks += i == n_picks;
    pthread_mutex_unlock(&picks_lock);
    return rc;
}

/* DIR/model.safetensors beside DIR/model.safetensors.index.json: two forms of the weights (save_pretrained
 * leaves the other form's files when it switches between one file and shards), and which one is the model is
 * ambiguous (issue 54 item 2: a stale file never wins) unless one was named (tf_st_pick: *form 1 one file, 2 the
 * index). An error naming both, the newer first; 0 when not so. */
static int two_weight_forms(const char *path, long dir_len, int *form) {
    char index[4200];
    struct stat a, b;
    snprintf(index, sizeof index, "%s.index.json", path);
    if (stat(path, &a) || stat(index, &b) || (*form = picked(path, dir_len))) return 0;
    int index_newer = b.st_mtim.tv_sec != a.st_mtim.tv_sec ? b.st_mtim.tv_sec > a.st_mtim.tv_sec
                                                           : b.st_mtim.tv_nsec > a.st_mtim.tv_nsec;
    return tf_set_error("%.*s holds two forms of the weights: %s (one file) and %s (a sharded checkpoint's index); "
                        "which one is the model is ambiguous (save_pretrained leaves the other form's files behind; "
                        "%s is the newer): remove the stale one, or name the one to read where a verb takes --model "
                        "(--model DIR/model.safetensors.index.json)",
                        (int)(dir_len > 1 ? dir_len - 1 : 1), dir_len ? path : ".", path, index,
                        index_newer ? "the index" : "model.safetensors");
}

tf_st_file *tf_st_open(const char *path) {
    size_t n = strlen(path);
    long dir_len = folder_of(path, n, "model.safetensors"), index_dir = folder_of(path, n, "model.safetensors.index.json");
    char weights[4200];
    int form = 0;
    if (index_dir >= 0) { /* the index named: the sharded form, whatever lies beside it */
        snprintf(weights, sizeof weights, "%.*smodel.safetensors", (int)index_dir, path);
        return open_sharded(weights, path);
    }
    if (dir_len >= 0 && two_weight_forms(path, dir_len, &form)) return NULL;
    if (form == 2) {
        snprintf(weights, sizeof weights, "%s.index.json", path);
        return open_sharded(path, weights);
    }
    int fd = tf_open_regular(path); /* a FIFO or device is refused, never waited on */
    if (fd < 0 && dir_len >= 0 && access(path, F_OK)) { /* a sharded folder: DIR/model.safetensors.index.json and its shards */
        char index[4200];
        snprintf(index, sizeof index, "%s.index.json", path);
        if (!access(index, F_OK)) return open_sharded(path, index);
    }
    if (fd < 0) return name_other_weights(path), NULL;
    struct stat st;
    if (fstat(fd, &st)) {
        close(fd);
        return tf_set_error("%s: cannot read: %s", path, strerror(errno)), NULL;
    }
    tf_st_file *f = calloc(1, sizeof *f);
    if (!f) {
        close(fd);
        return tf_set_error("safetensors: out of memory"), NULL;
    }
    snprintf(f->label, sizeof f->label, "%s", path);
    f->len = (size_t)st.st_size;
    if (f->len > 0) {
        /* writable and private: weights that read the mapping in place
         * (tf_gpt_load_mapped) may be written, into copies of their pages */
        void *m = mmap(NULL, f->len, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
        if (m == MAP_FAILED) {
            close(fd);
            free(f);
            return tf_set_error("%s: mmap failed: %s", path, strerror(errno)), NULL;
        }
        f->base = m;
        f->mapped = 1;
    }
    close(fd);
    return parse(f);
}

void tf_st_close(tf_st_file *f) {
    if (!f) return;
    if (f->mapped) munmap((void *)f->base, f->len);
    for (int i = 0; i < f->meta_cap; i++) free(f->meta[i]);
    free(f->meta);
    free(f->e);
    free(f->names);
    tf_strmap_free(&f->index);
    for (int i = 0; i < f->n_shards; i++) tf_st_close(f->shards[i]), free(f->shard_files[i]);
    free(f->shards), free(f->shard_files);
    free(f);
}

int tf_st_count(const tf_st_file *f) { return f->n; }
const tf_st_entry *tf_st_entry_at(const tf_st_file *f, int i) { return i >= 0 && i < f->n ? &f->e[i] : NULL; }

const tf_st_entry *tf_st_find(const tf_st_file *f, const char *name) {
    int32_t i = tf_strmap_get(&f->index, name, strlen(name));
    return i >= 0 && i < f->n ? &f->e[i] : NULL;
}

/* ---------------------------------------------------------------- conversion */

static float half_to_float(uint16_t h) {
    uint32_t s = (uint32_t)(h >> 15) << 31, e = (h >> 10) & 31, m = h & 1023u, bits;
    if (e == 31) bits = s | 0x7F800000u | (m << 13);         /* inf, nan */
    else if (e) bits = s | ((e + 112) << 23) | (m << 13);     /* normal */
    else if (!m) bits = s;                                    /* zero */
    else {                                                    /* subnormal */
        float v = (float)m * (1.0f / 16777216.0f);            /* m * 2^-24 */
        return s ? -v : v;
    }
    float out;
    memcpy(&out, &bits, 4);
    return out;
}

int tf_st_read_f32(const tf_st_file *f, const tf_st_entry *e, tf_tensor *dst) {
    int64_t n = tf_numel(dst);
    size_t esz = ST_DTYPES[e->dtype].size;
    if (dst->dtype != TF_DTYPE_F32 || !tf_is_contiguous(dst) || (size_t)n * esz != e->nbytes ||
        (e->dtype != TF_ST_F32 && e->dtype != TF_ST_F16 && e->dtype != TF_ST_BF16))
        return tf_set_error("%s: tensor '%s' (%s) cannot be read as %lld F32 values", f->label, e->name,
                            tf_st_dtype_name(e->dtype), (long long)n);
    const unsigned char *p = e->data;
    float *out = tf_f32(dst);
    for (int64_t i = 0; i < n; i++) {
        uint32_t bits = 0;
        uint16_t h;
        if (e->dtype == TF_ST_F32) {
            memcpy(&out[i], p + 4 * i, 4);
            continue;
        }
        memcpy(&h, p + 2 * i, 2);
        if (e->dtype == TF_ST_F16) {
            out[i] = half_to_float(h);
        } else {
            bits = (uint32_t)h << 16;
            memcpy(&out[i], &bits, 4);
        }
    }
    return 0;
}

tf_tensor *tf_st_to_tensor(const tf_st_file *f, const tf_st_entry *e, tf_arena *a) {
    int is_float = e->dtype == TF_ST_F32 || e->dtype == TF_ST_F16 || e->dtype == TF_ST_BF16;
    int is_int = e->dtype == TF_ST_I64 || e->dtype == TF_ST_I32 || e->dtype == TF_ST_I8;
    tf_tensor *t = tf_tensor_alloc(a, is_float ? TF_DTYPE_F32 : is_int ? TF_DTYPE_I32 : TF_DTYPE_U8,
                                   e->ndim, e->shape, 0);
    if (!t) return NULL;
    if (is_float) return tf_st_read_f32(f, e, t) ? NULL : t;
    int64_t n = tf_numel(t);
    const unsigned char *p = e->data;
    for (int64_t i = 0; i < n; i++) {
        if (e->dtype == TF_ST_I64) {
            int64_t v;
            memcpy(&v, p + 8 * i, 8);
            if (v < INT32_MIN || v > INT32_MAX)
                return tf_set_error("%s: tensor '%s' holds %lld, outside the 32-bit range", f->label,
                                    e->name, (long long)v), NULL;
            tf_i32(t)[i] = (int32_t)v;
        } else if (e->dtype == TF_ST_I32) {
            memcpy(&tf_i32(t)[i], p + 4 * i, 4);
        } else if (e->dtype == TF_ST_I8) {
            tf_i32(t)[i] = (int8_t)p[i];
        } else {
            tf_u8(t)[i] = e->dtype == TF_ST_BOOL ? p[i] != 0 : p[i];
        }
    }
    return t;
}
