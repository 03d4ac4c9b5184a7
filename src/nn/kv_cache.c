/* The KV cache: each layer's keys and values of the positions seen so far,
 * laid out (B,H,capacity,D) so that the positions [0, n) of one (batch, head)
 * are consecutive rows — the attention op reads them in place. The buffers
 * hold `slots` rows a layer (B <= slots): a selection that only moves some
 * rows (a beam search placing children on their parents' rows) moves those,
 * in place, and leaves the layout as it is. */
#include <stdlib.h>
#include <string.h>

#include "nn_internal.h"

struct tf_kv_cache {
    int L, B, H, D, cap;
    int slots;    /* rows a layer in the buffers: layer l starts at l * slots * H * cap * D */
    int len;      /* committed positions */
    float *k, *v; /* (L,B,H,cap,D) each */
    float *spare; /* select's second buffer like k and v: the rows kept are gathered into
                     it once and it swaps with k (then with v) */
    size_t room;  /* bytes each of k, v and spare hold (B may shrink under tf_kv_cache_select) */
    int *map;     /* (map_n) or NULL: query row i reads row map[i] (tf_kv_cache_share_rows) */
    int map_n;
};

/* Bytes of B rows. */
static int rows_bytes(const tf_kv_cache *c, int B, size_t *out) {
    size_t per_row = (size_t)c->L * (size_t)c->H * (size_t)c->cap * (size_t)c->D;
    return tf_mul_size(per_row, (size_t)B, out) && tf_mul_size(*out, sizeof(float), out);
}

tf_kv_cache *tf_kv_cache_new(int n_layer, int batch, int n_head, int head_dim, int capacity) {
    if (n_layer < 1 || batch < 1 || n_head < 1 || head_dim < 1 || capacity < 1)
        return tf_set_error("kv cache: layers %d, batch %d, heads %d, head size %d and capacity %d must be positive",
                            n_layer, batch, n_head, head_dim, capacity), NULL;
    tf_kv_cache *c = calloc(1, sizeof *c);
    if (!c) return tf_set_error("kv cache: out of memory"), NULL;
    *c = (tf_kv_cache){.L = n_layer, .B = batch, .slots = batch, .H = n_head, .D = head_dim, .cap = capacity};
    size_t n = 1, room_v = 0;
    if (!rows_bytes(c, batch, &n) || !(c->k = tf_buf_take(n, &c->room)) || !(c->v = tf_buf_take(c->room, &room_v))) {
        tf_kv_cache_free(c);
        return tf_set_error("kv cache: cannot allocate %d positions of %d layers", capacity, n_layer), NULL;
    }
    c->room = room_v < c->room ? room_v : c->room; /* v's may be larger: the room both hold */
    return c;
}

void tf_kv_cache_free(tf_kv_cache *c) {
    if (!c) return;
    tf_buf_give(c->k, c->room), tf_buf_give(c->v, c->room), tf_buf_give(c->spare, c->room);
    free(c->map), free(c);
}

int tf_kv_cache_len(const tf_kv_cache *c) { return c->len; }
int tf_kv_cache_capacity(const tf_kv_cache *c) { return c->cap; }
void tf_kv_cache_reset(tf_kv_cache *c) { c->len = 0; }

int tf_kv_cache_advance(tf_kv_cache *c, int n) {
    if (n < 0 || n > c->cap - c->len)
        return tf_set_error("kv cache: %d more positions exceed its capacity of %d (%d held)", n, c->cap, c->len);
    c->len += n;
    return 0;
}

static void gather(float *dst, int slots_dst, const float *src, int slots_src, const tf_kv_cache *c, const int *rows,
                   int n, int first);

tf_kv_cache *tf_kv_cache_fork(const tf_kv_cache *c) {
    tf_kv_cache *f = tf_kv_cache_new(c->L, c->B, c->H, c->D, c->cap);
    if (!f) return NULL;
    f->len = c->len;
    for (int i = 0; i < c->B; i++) { /* only the positions held */
        gather(f->k, f->slots, c->k, c->slots, c, &i, 1, i);
        gather(f->v, f->slots, c->v, c->slots, c, &i, 1, i);
    }
    if (c->map && tf_kv_cache_share_rows(f, c->map, c->map_n)) return tf_kv_cache_free(f), NULL;
    return f;
}

/* The held positions of rows rows[0..n) of src (slots_src rows a layer)
 * into rows first..first+n of dst (slots_dst rows a layer). */
static void gather_layer(float *dst, int slots_dst, const float *src, int slots_src, const tf_kv_cache *c,
                         const int *rows, int n, int first, int l) {
    size_t held = (size_t)c->len * (size_t)c->D, plane = (size_t)c->cap * (size_t)c->D;
    for (int i = 0; i < n; i++)
        for (int h = 0; h < c->H; h++) {
            const float *from = src + (((size_t)l * (size_t)slots_src + (size_t)rows[i]) * (size_t)c->H + (size_t)h) * plane;
            float *to = dst + (((size_t)l * (size_t)slots_dst + (size_t)(first + i)) * (size_t)c->H + (size_t)h) * plane;
            memcpy(to, from, held * sizeof(float));
        }
}

static void gather(float *dst, int slots_dst, const float *src, int slots_src, const tf_kv_cache *c, const int *rows,
                   int n, int first) {
    for (int l = 0; l < c->L; l++) gather_layer(dst, slots_dst, src, slots_src, c, rows, n, first, l);
}

/* Whether rows can move in place, destination by destination in order:
 * each source read before its own row is overwritten (row s is overwritten
 * at s's turn when rows[s] != s, s < n). */
static int in_place(const tf_kv_cache *c, const int *rows, int n) {
    if (n > c->slots) return 0;
    for (int i = 0; i < n; i++)
        if (rows[i] < i && rows[rows[i]] != rows[i]) return 0;
    return 1;
}

int tf_kv_cache_share_rows(tf_kv_cache *c, const int *rows, int n) {
    if (!rows) {
        free(c->map), c->map = NULL, c->map_n = 0;
        return 0;
    }
    if (n < 1) return tf_set_error("kv cache: at least one query row reads it");
    for (int i = 0; i < n; i++)
        if (rows[i] < 0 || rows[i] >= c->B) return tf_set_error("kv cache: row %d outside [0,%d)", rows[i], c->B);
    if (n > c->map_n || !c->map) {
        int *m = realloc(c->map, (size_t)n * sizeof *m);
        if (!m) return tf_set_error("kv cache: out of memory");
        c->map = m;
    }
    memcpy(c->map, rows, (size_t)n * sizeof *rows), c->map_n = n;
    return 0;
}

const int *tf_kv_cache_row_map(const tf_kv_cache *c, int *n) {
    *n = c->map ? c->map_n : 0;
    return c->map;
}

int tf_kv_cache_select(tf_kv_cache *c, const int *rows, int n) {
    if (n < 1) return tf_set_error("kv cache: select keeps at least one row");
    free(c->map), c->map = NULL, c->map_n = 0; /* the rows are new: whatever read them is rethought */
    for (int i = 0; i < n; i++)
        if (rows[i] < 0 || rows[i] >= c->B) return tf_set_error("kv cache: row %d outside [0,%d)", rows[i], c->B);
    if (in_place(c, rows, n)) { /* only the rows that change hands move, in order within a layer */
        int64_t moved = 0;
        for (int i = 0; i < n; i++) moved += rows[i] != i;
        /* the layers on the free threads (serial, a twentieth of beam search's step) */
        TF_PARALLEL_FOR(moved * c->H * c->len * c->D >= (1 << 15), l, c->L, for (int i = 0; i < n; i++) {
            if (rows[i] == i) continue;
            gather_layer(c->k, c->slots, c->k, c->slots, c, &rows[i], 1, i, (int)l);
            gather_layer(c->v, c->slots, c->v, c->slots, c, &rows[i], 1, i, (int)l);
        });
        c->B = n;
        return 0;
    }
    size_t bytes;
    if (!rows_bytes(c, n, &bytes)) return tf_set_error("kv cache: cannot hold %d rows", n);
    if (bytes > c->room) { /* more rows than the buffers hold: new ones, filled straight from the old */
        size_t room_k = 0, room_v = 0;
        float *k = tf_buf_take(bytes, &room_k), *v = k ? tf_buf_take(room_k, &room_v) : NULL;
        if (!k || !v) return tf_buf_give(k, room_k), tf_set_error("kv cache: cannot hold %d rows", n);
        gather(k, n, c->k, c->slots, c, rows, n, 0);
        gather(v, n, c->v, c->slots, c, rows, n, 0);
        tf_buf_give(c->k, c->room), tf_buf_give(c->v, c->room), tf_buf_give(c->spare, c->room);
        c->k = k, c->v = v, c->spare = NULL, c->B = c->slots = n, c->room = room_v < room_k ? room_v : room_k;
        return 0;
    }
    if (!c->spare) { /* one buffer for both: k's rows go in, it becomes k, the old k takes v's rows */
        size_t room_s = 0;
        if (!(c->spare = tf_buf_take(c->room, &room_s))) return tf_set_error("kv cache: out of memory");
        /* room_s >= room: the spare is given back as room, a little of it unaccounted */
    }
    float *t;
    gather(c->spare, n, c->k, c->slots, c, rows, n, 0), t = c->k, c->k = c->spare, c->spare = t;
    gather(c->spare, n, c->v, c->slots, c, rows, n, 0), t = c->v, c->v = c->spare, c->spare = t;
    c->B = c->slots = n;
    return 0;
}

/* Layer l's keys (value 0) or values (1) as a (B,H,n,D) view of the cache. */
static tf_tensor *view(tf_ctx *ctx, const tf_kv_cache *c, int l, int value, int n) {
    tf_tensor *t = tf_ctx_alloc(ctx, sizeof *t);
    if (!t) return NULL;
    int64_t D = c->D, cap = c->cap;
    *t = (tf_tensor){TF_DTYPE_F32, 4, {c->B, c->H, n, D}, {c->H * cap * D, cap * D, D, 1}, NULL, NULL, NULL};
    t->data = (value ? c->v : c->k) + (size_t)l * (size_t)c->slots * (size_t)c->H * (size_t)cap * (size_t)D;
    return t;
}

/* Copy x (B,H,T,D), any strides, into rows [len, len+T) of layer l. */
static void put(float *base, const tf_kv_cache *c, int l, const tf_tensor *x) {
    int64_t T = x->shape[2], D = c->D;
    const float *src = tf_f32(x);
    for (int64_t b = 0; b < c->B; b++)
        for (int64_t h = 0; h < c->H; h++) {
            float *dst = base + ((((int64_t)l * c->slots + b) * c->H + h) * c->cap + c->len) * D;
            for (int64_t t = 0; t < T; t++) {
                const float *from = src + b * x->stride[0] + h * x->stride[1] + t * x->stride[2];
                if (x->stride[3] == 1) { /* a head's row, as the projections leave it */
                    memcpy(dst + t * D, from, (size_t)D * sizeof *dst);
                    continue;
                }
                for (int64_t d = 0; d < D; d++) dst[t * D + d] = from[d * x->stride[3]];
            }
        }
}

int tf_kv_cache_append(tf_ctx *ctx, tf_kv_cache *c, int layer, tf_tensor *k, tf_tensor *v, tf_tensor **k_all,
                       tf_tensor **v_all) {
    if (!k || !v) return -1;
    char a[64];
    int64_t T = k->shape[2];
    if (layer < 0 || layer >= c->L) return tf_set_error("kv cache: layer %d outside [0,%d)", layer, c->L);
    if (k->ndim != 4 || k->shape[0] != c->B || k->shape[1] != c->H || k->shape[3] != c->D ||
        v->ndim != 4 || memcmp(k->shape, v->shape, 4 * sizeof *k->shape))
        return tf_set_error("kv cache: keys %s do not fit its (%d,%d,T,%d)", tf_shape_str(k, a, sizeof a), c->B, c->H,
                            c->D);
    if (c->map) return tf_set_error("kv cache: rows shared by several queries are read, not appended to");
    if (T > c->cap - c->len)
        return tf_set_error("kv cache: %lld more positions exceed its capacity of %d (%d held)", (long long)T, c->cap,
                            c->len);
    put(c->k, c, layer, k);
    put(c->v, c, layer, v);
    *k_all = view(ctx, c, layer, 0, c->len + (int)T);
    *v_all = view(ctx, c, layer, 1, c->len + (int)T);
    return *k_all && *v_all ? 0 : -1;
}

int tf_kv_cache_held(tf_ctx *ctx, const tf_kv_cache *c, int layer, tf_tensor **k_all, tf_tensor **v_all) {
    if (layer < 0 || layer >= c->L) return tf_set_error("kv cache: layer %d outside [0,%d)", layer, c->L);
    if (c->len < 1) return tf_set_error("kv cache: nothing held yet");
    *k_all = view(ctx, c, layer, 0, c->len);
    *v_all = view(ctx, c, layer, 1, c->len);
    return *k_all && *v_all ? 0 : -1;
}
