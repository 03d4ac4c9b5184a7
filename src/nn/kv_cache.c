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
    size_t room;  /* bytes each of k and v hold (B may shrink under tf_kv_cache_select) */
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
    tf_buf_give(c->k, c->room), tf_buf_give(c->v, c->room);
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

/* A selection's moves inside the buffers, row by row: row dst takes row src's held positions, where
 * a row or a src below 0 is temporary -1 - t. Each destination is written only after every row
 * that reads its old contents has read them; a cycle of rows (row 0 takes 1, 1 takes 0) first
 * puts one of its rows in a temporary. Only the rows that change hands move (a beam search's
 * children on their parents' rows), at most n + n / 2 rows in all. */
typedef struct {
    int dst, src;
} move;

/* The moves of rows[0..n) (each in [0,R)) into mv (room 2n); *n_tmp: the temporaries they use.
 * work: R + 2n ints, R >= n. Returns the number of moves. */
static int plan_moves(const int *rows, int n, int R, move *mv, int *n_tmp, int *work) {
    int *readers = work, *src = work + R, *ready = work + R + n, n_mv = 0, n_ready = 0, left = 0;
    for (int r = 0; r < R; r++) readers[r] = 0;
    for (int i = 0; i < n; i++) {
        src[i] = rows[i];
        if (rows[i] != i) readers[rows[i]]++, left++;
    }
    for (int i = 0; i < n; i++)
        if (rows[i] != i && readers[i] == 0) ready[n_ready++] = i;
    *n_tmp = 0;
    while (left > 0) {
        if (n_ready == 0) { /* only cycles left: one of their rows into a temporary */
            int i = 0;
            while (src[i] == i || readers[i] == 0) i++;
            int t = -1 - (*n_tmp)++;
            mv[n_mv++] = (move){t, i};
            for (int j = 0; j < n; j++)
                if (j != i && src[j] == i) src[j] = t;
            readers[i] = 0, ready[n_ready++] = i;
        }
        int i = ready[--n_ready];
        mv[n_mv++] = (move){i, src[i]}, left--;
        if (src[i] >= 0 && --readers[src[i]] == 0 && src[i] < n && src[src[i]] != src[i]) ready[n_ready++] = src[i];
        src[i] = i; /* done */
    }
    return n_mv;
}

/* Layer l's held positions of row r (r < 0: temporary -1 - r of tmp) as H spans of len * D. */
static float *row_head(float *base, float *tmp, const tf_kv_cache *c, int l, int r, int h, int n_tmp) {
    if (r < 0) return tmp + (((size_t)l * (size_t)n_tmp + (size_t)(-1 - r)) * (size_t)c->H + (size_t)h) * (size_t)c->len * (size_t)c->D;
    return base + (((size_t)l * (size_t)c->slots + (size_t)r) * (size_t)c->H + (size_t)h) * (size_t)c->cap * (size_t)c->D;
}

static void apply_moves(float *base, float *tmp, const tf_kv_cache *c, int l, const move *mv, int n_mv, int n_tmp) {
    size_t bytes = (size_t)c->len * (size_t)c->D * sizeof(float);
    for (int m = 0; m < n_mv; m++)
        for (int h = 0; h < c->H; h++)
            memcpy(row_head(base, tmp, c, l, mv[m].dst, h, n_tmp), row_head(base, tmp, c, l, mv[m].src, h, n_tmp), bytes);
}

/* rows[0..n) into the first n rows of the buffers, in place (n <= slots). */
static int select_in_place(tf_kv_cache *c, const int *rows, int n) {
    if (c->len == 0) return c->B = n, 0; /* nothing held to move */
    int R = c->B > n ? c->B : n; /* the rows read or written */
    move *mv = malloc((size_t)2 * (size_t)n * sizeof *mv);
    int *work = malloc(((size_t)R + (size_t)2 * (size_t)n) * sizeof *work), n_tmp = 0;
    float *tmp = NULL;
    if (!mv || !work) return free(mv), free(work), tf_set_error("kv cache: out of memory");
    int n_mv = plan_moves(rows, n, R, mv, &n_tmp, work);
    size_t tmp_n = 0; /* (2, L, n_tmp, H, len, D): keys' temporaries, then values' */
    if (n_tmp && (!tf_mul_size((size_t)2 * (size_t)c->L * (size_t)n_tmp * (size_t)c->H, (size_t)c->len * (size_t)c->D,
                               &tmp_n) ||
                  !(tmp = malloc(tmp_n * sizeof *tmp))))
        return free(mv), free(work), tf_set_error("kv cache: no room for %d temporary rows", n_tmp);
    float *tmp_v = tmp ? tmp + tmp_n / 2 : NULL;
    int64_t moved = (int64_t)n_mv * c->H * c->len * c->D;
    /* the layers on the free threads (serial, a twentieth of beam search's step) */
    TF_PARALLEL_FOR(moved >= (1 << 15), l, c->L, {
        apply_moves(c->k, tmp, c, (int)l, mv, n_mv, n_tmp);
        apply_moves(c->v, tmp_v, c, (int)l, mv, n_mv, n_tmp);
    });
    free(mv), free(work), free(tmp);
    c->B = n;
    return 0;
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
    if (n <= c->slots) return select_in_place(c, rows, n);
    size_t bytes, room_k = 0, room_v = 0; /* more rows than the buffers hold: new ones, filled from the old */
    if (!rows_bytes(c, n, &bytes)) return tf_set_error("kv cache: cannot hold %d rows", n);
    float *k = tf_buf_take(bytes, &room_k), *v = k ? tf_buf_take(room_k, &room_v) : NULL;
    if (!k || !v) return tf_buf_give(k, room_k), tf_set_error("kv cache: cannot hold %d rows", n);
    gather(k, n, c->k, c->slots, c, rows, n, 0);
    gather(v, n, c->v, c->slots, c, rows, n, 0);
    tf_buf_give(c->k, c->room), tf_buf_give(c->v, c->room);
    c->k = k, c->v = v, c->B = c->slots = n, c->room = room_v < room_k ? room_v : room_k;
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
