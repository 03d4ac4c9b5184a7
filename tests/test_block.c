/* The one Transformer block: layouts and name maps give the same function,
 * a KV cache gives what a full pass gives, and mistakes in a name map or a
 * registry are errors that name them. */
#include <stdlib.h>
#include <string.h>

#include "nn/nn_internal.h"
#include "test.h"

static const tf_block_name FUSED[] = {
    {TF_BP_QKV_W, "qkv.w"}, {TF_BP_QKV_B, "qkv.b"}, {TF_BP_OUT_W, "o.w"},   {TF_BP_OUT_B, "o.b"},
    {TF_BP_NORM_ATTN_W, "n1.w"}, {TF_BP_NORM_ATTN_B, "n1.b"}, {TF_BP_X_QKV_W, "x.w"}, {TF_BP_X_QKV_B, "x.b"},
    {TF_BP_X_OUT_W, "xo.w"}, {TF_BP_X_OUT_B, "xo.b"}, {TF_BP_NORM_CROSS_W, "n2.w"}, {TF_BP_NORM_CROSS_B, "n2.b"},
    {TF_BP_FF_IN_W, "f1.w"}, {TF_BP_FF_IN_B, "f1.b"}, {TF_BP_FF_OUT_W, "f2.w"}, {TF_BP_FF_OUT_B, "f2.b"},
    {TF_BP_NORM_FF_W, "n3.w"}, {TF_BP_NORM_FF_B, "n3.b"}};
static const tf_block_name APART[] = {
    {TF_BP_Q_W, "q.w"}, {TF_BP_Q_B, "q.b"}, {TF_BP_K_W, "k.w"}, {TF_BP_K_B, "k.b"}, {TF_BP_V_W, "v.w"},
    {TF_BP_V_B, "v.b"}, {TF_BP_OUT_W, "o.w"}, {TF_BP_OUT_B, "o.b"}, {TF_BP_NORM_ATTN_W, "n1.w"},
    {TF_BP_NORM_ATTN_B, "n1.b"}, {TF_BP_FF_IN_W, "f1.w"}, {TF_BP_FF_IN_B, "f1.b"}, {TF_BP_FF_OUT_W, "f2.w"},
    {TF_BP_FF_OUT_B, "f2.b"}, {TF_BP_NORM_FF_W, "n3.w"}, {TF_BP_NORM_FF_B, "n3.b"}};
#define NAMES(rows) ((tf_block_names){rows, (int)(sizeof rows / sizeof *rows)})

static tf_block_config small_config(int norm_first, int in_out) {
    tf_block_config c = tf_block_config_default(12, 3);
    c.d_ff = 20, c.norm_first = norm_first, c.w_in_out = in_out, c.activation = TF_ACT_GELU;
    c.self_attn.kind = TF_ATTN_CAUSAL;
    return c;
}

static tf_tensor *input(tf_ctx *ctx, int64_t B, int64_t T, int64_t C, uint64_t seed) {
    tf_tensor *x = tf_tensor_new(ctx, TF_DTYPE_F32, 3, (int64_t[]){B, T, C}, 0);
    tf_tensor_fill_normal(x, seed, 1.0f);
    return x;
}

/* Largest |a - b| over the largest |b|. */
static double max_rel(const tf_tensor *a, const tf_tensor *b) {
    double d = 0, m = 0;
    for (int64_t i = 0; i < tf_numel(b); i++) {
        double e = fabs((double)tf_f32(a)[i] - tf_f32(b)[i]), v = fabs((double)tf_f32(b)[i]);
        d = e > d ? e : d, m = v > m ? v : m;
    }
    return m > 0 ? d / m : d;
}

/* dst = src transposed (2-D). */
static void transpose_into(tf_tensor *dst, const tf_tensor *src) {
    int64_t r = src->shape[0], c = src->shape[1];
    for (int64_t i = 0; i < r; i++)
        for (int64_t j = 0; j < c; j++) tf_f32(dst)[j * r + i] = tf_f32(src)[i * c + j];
}

TEST(block_layouts_and_name_maps_compute_the_same) {
    /* One set of weights three ways: fused q/k/v in (out,in), fused in (in,out)
     * (GPT-2's Conv1D), and q, k, v apart (BERT): the same outputs. */
    for (int norm_first = 0; norm_first < 2; norm_first++) {
        tf_block_config a = small_config(norm_first, 0), b = small_config(norm_first, 1), c = small_config(norm_first, 0);
        tf_params *pa = tf_params_new(), *pb = tf_params_new(), *pc = tf_params_new();
        tf_block ba, bb, bc;
        tf_block_names fused = NAMES(FUSED), apart = NAMES(APART);
        CHECK(tf_block_register(pa, "", &ba, &a, &fused, (tf_block_init){0.3f, 0.2f, 0}) == 0);
        CHECK(tf_block_register(pb, "", &bb, &b, &fused, (tf_block_init){0.3f, 0.2f, 0}) == 0);
        CHECK(tf_block_register(pc, "", &bc, &c, &apart, (tf_block_init){0.3f, 0.2f, 0}) == 0);
        CHECK(tf_params_init(pa, 3) == 0 && tf_params_init(pb, 4) == 0 && tf_params_init(pc, 5) == 0);
        for (int i = 0; i < tf_params_count(pa); i++) { /* b: every matrix transposed, vectors copied */
            tf_tensor *s = tf_params_tensor(pa, i), *d = tf_params_tensor(pb, i);
            if (s->ndim == 2) transpose_into(d, s);
            else memcpy(d->data, s->data, (size_t)tf_numel(s) * 4);
        }
        const char *same[] = {"o.w", "o.b", "n1.w", "n1.b", "f1.w", "f1.b", "f2.w", "f2.b", "n3.w", "n3.b"};
        for (int i = 0; i < 10; i++)
            memcpy(tf_params_get(pc, same[i])->data, tf_params_get(pa, same[i])->data,
                   (size_t)tf_numel(tf_params_get(pa, same[i])) * 4);
        const char *qkv[3][2] = {{"q.w", "q.b"}, {"k.w", "k.b"}, {"v.w", "v.b"}};
        for (int i = 0; i < 3; i++) { /* rows [12i, 12i+12) of the fused weight and bias */
            memcpy(tf_params_get(pc, qkv[i][0])->data, tf_f32(tf_params_get(pa, "qkv.w")) + i * 144, 144 * 4);
            memcpy(tf_params_get(pc, qkv[i][1])->data, tf_f32(tf_params_get(pa, "qkv.b")) + i * 12, 12 * 4);
        }
        tf_ctx *ctx = tf_ctx_new(0);
        tf_tensor *x = input(ctx, 2, 5, 12, 11);
        tf_tensor *ya = tf_block_forward(ctx, &ba, &a, x, NULL), *yb = tf_block_forward(ctx, &bb, &b, x, NULL);
        tf_tensor *yc = tf_block_forward(ctx, &bc, &c, x, NULL);
        CHECK(ya && yb && yc);
        CHECKF(max_rel(yb, ya) < 1e-6 && max_rel(yc, ya) < 1e-6, "norm_first %d: (in,out) %g, apart %g", norm_first,
               max_rel(yb, ya), max_rel(yc, ya));
        tf_f32(tf_params_get(pc, "k.b"))[0] += 1.0f; /* a key bias shifts every score of a row: no change */
        tf_f32(tf_params_get(pc, "v.b"))[0] += 1e-2f; /* a value bias does change it: the test can fail */
        tf_tensor *yd = tf_block_forward(ctx, &bc, &c, x, NULL);
        CHECK(yd && max_rel(yd, ya) > 1e-4);
        tf_ctx_free(ctx);
        tf_params_free(pa), tf_params_free(pb), tf_params_free(pc);
    }
}

TEST(block_cache_equals_full_pass) {
    /* Two causal blocks with cross-attention over a memory: the positions fed
     * in pieces (3, 1, 4) through a KV cache give the full pass's outputs. */
    tf_block_config c = small_config(1, 0);
    c.cross = 1;
    tf_params *ps = tf_params_new();
    tf_block bl[2];
    tf_block_names n = NAMES(FUSED);
    for (int l = 0; l < 2; l++) {
        char p[16];
        snprintf(p, sizeof p, "l%d.", l);
        CHECK(tf_block_register(ps, p, &bl[l], &c, &n, (tf_block_init){0.3f, 0.2f, 0}) == 0);
    }
    CHECK(tf_params_init(ps, 8) == 0);
    tf_ctx *ctx = tf_ctx_new(0);
    tf_tensor *x = input(ctx, 2, 8, 12, 5), *mem = input(ctx, 2, 6, 12, 6);
    tf_block_args a = {.memory = mem};
    tf_tensor *full = x;
    for (int l = 0; l < 2; l++) a.layer = l, full = tf_block_forward(ctx, &bl[l], &c, full, &a);
    CHECK(full != NULL);
    tf_kv_cache *kv = tf_kv_cache_new(2, 2, 3, 4, 8);
    int pieces[3] = {3, 1, 4}, at = 0;
    double worst = 0;
    for (int k = 0; k < 3; k++) {
        tf_tensor *y = tf_narrow(ctx, x, 1, at, pieces[k]);
        a.cache = kv;
        for (int l = 0; l < 2; l++) a.layer = l, y = tf_block_forward(ctx, &bl[l], &c, y, &a);
        CHECK(y && tf_kv_cache_advance(kv, pieces[k]) == 0);
        worst = fmax(worst, test_max_diff_at(y, full, at));
        at += pieces[k];
    }
    CHECKF(worst < 2e-6, "cached pass differs from the full pass by %g", worst);
    /* a fork holds the same positions and moves on alone; the cache is full */
    tf_kv_cache *f = tf_kv_cache_fork(kv);
    CHECK(f && tf_kv_cache_len(f) == 8 && tf_kv_cache_advance(f, 1) != 0 && strstr(tf_error(), "capacity"));
    tf_kv_cache_reset(f);
    CHECK(tf_kv_cache_len(f) == 0 && tf_kv_cache_len(kv) == 8);
    tf_kv_cache_free(f), tf_kv_cache_free(kv);
    tf_ctx_free(ctx);
    tf_params_free(ps);
}

TEST(block_name_map_and_registry_errors) {
    tf_block_config c = small_config(1, 0);
    tf_params *ps = tf_params_new();
    tf_block b;
    tf_block_names short_map = {FUSED, 3}; /* no out-projection bias, no norms, no FFN */
    CHECK(tf_block_register(ps, "h.0.", &b, &c, &short_map, (tf_block_init){0.02f, 0.02f, 0}) != 0);
    CHECKF(strstr(tf_error(), "h.0.") && strstr(tf_error(), "OUT_B"), "message: %s", tf_error());
    tf_params_free(ps);
    ps = tf_params_new(); /* the same name twice, before any tensor exists */
    tf_tensor *s1, *s2;
    CHECK(tf_params_add(ps, "w", &s1, 1, (int64_t[]){3}, 1.0f) == 0);
    CHECK(tf_params_add(ps, "w", &s2, 1, (int64_t[]){3}, 1.0f) != 0 && strstr(tf_error(), "w registered twice"));
    c.d_model = 10; /* not a multiple of 3 heads */
    tf_block_names n = NAMES(FUSED);
    CHECK(tf_block_register(ps, "", &b, &c, &n, (tf_block_init){0.02f, 0.02f, 0}) != 0 &&
          strstr(tf_error(), "multiple of n_head"));
    tf_params_free(ps);
}

/* A key (value 0) or value (1) of the test below: layer l, the position's id, head h, element d. */
static float kv_value(int value, int l, int id, int h, int d) {
    return (float)(value * 100000 + l * 10000 + id * 100 + h * 10 + d);
}

/* Whether every layer's held keys and values are those of ids[b][t] (row b, position t). */
static int kv_holds(tf_ctx *ctx, tf_kv_cache *kv, int L, int B, int H, int D, int len, int ids[][8]) {
    for (int l = 0; l < L; l++) {
        tf_tensor *t[2];
        if (tf_kv_cache_held(ctx, kv, l, &t[0], &t[1]) || t[0]->shape[0] != B || t[0]->shape[2] != len) return 0;
        for (int v = 0; v < 2; v++)
            for (int b = 0; b < B; b++)
                for (int h = 0; h < H; h++)
                    for (int p = 0; p < len; p++)
                        for (int d = 0; d < D; d++) {
                            const int64_t *st = t[v]->stride;
                            if (tf_f32(t[v])[b * st[0] + h * st[1] + p * st[2] + d] != kv_value(v, l, ids[b][p], h, d)) return 0;
                        }
    }
    return 1;
}

/* Position len of each of the B rows appended on every layer, row b's as id id0 + b (ids[b][len]),
 * then committed: 0, or -1 with the cache's error. */
static int kv_append_ids(tf_ctx *ctx, tf_kv_cache *kv, int L, int B, int H, int D, int id0, int len, int ids[][8]) {
    for (int l = 0; l < L; l++) {
        tf_tensor *t[2], *ka, *va;
        for (int v = 0; v < 2; v++) {
            if (!(t[v] = tf_tensor_new(ctx, TF_DTYPE_F32, 4, (int64_t[]){B, H, 1, D}, 0))) return -1;
            for (int b = 0; b < B; b++)
                for (int h = 0; h < H; h++)
                    for (int d = 0; d < D; d++) tf_f32(t[v])[(b * H + h) * D + d] = kv_value(v, l, id0 + b, h, d);
        }
        if (tf_kv_cache_append(ctx, kv, l, t[0], t[1], &ka, &va)) return -1;
    }
    for (int b = 0; b < B; b++) ids[b][len] = id0 + b;
    return tf_kv_cache_advance(kv, 1);
}

/* A (2 layers, H 2, D 3) cache whose positions name where they were written:
 * after each selection, row i holds what row rows[i] held, whether the rows
 * moved in place (children on their parents' rows, rows dropped), could not
 * (a swap: row 0 would be overwritten before row 1 reads it), or outgrew the
 * buffers; a position appended after a selection lands in the right rows;
 * a fork holds the same. */
TEST(kv_cache_select_moves_rows) {
    enum { L = 2, H = 2, D = 3, CAP = 8 };
    int sel[][8] = {{0, 0, 2, 2}, {0, 1, 3, 3}, {1, 0, 2}, {0, 1, 2, 2, 1, 0, 2}, {6, 5, 4}, {0, 0, 1}};
    int n_sel[] = {4, 4, 3, 7, 3, 3}, ids[8][8], moved[8][8], B = 4, len = 0;
    tf_kv_cache *kv = tf_kv_cache_new(L, B, H, D, CAP);
    tf_ctx *ctx = tf_ctx_new(0);
    CHECK(kv && ctx);
    for (int k = 0; k < 6; k++, len++) {
        CHECK(kv_append_ids(ctx, kv, L, B, H, D, 10 * k, len, ids) == 0); /* position len of row b: id 10 k + b */
        CHECKF(kv_holds(ctx, kv, L, B, H, D, len + 1, ids), "after the append of step %d", k);
        CHECK(tf_kv_cache_select(kv, sel[k], n_sel[k]) == 0);
        for (int i = 0; i < n_sel[k]; i++) memcpy(moved[i], ids[sel[k][i]], sizeof moved[i]);
        memcpy(ids, moved, sizeof ids), B = n_sel[k];
        CHECKF(kv_holds(ctx, kv, L, B, H, D, len + 1, ids), "after selection %d", k);
    }
    tf_kv_cache *f = tf_kv_cache_fork(kv);
    CHECK(f && kv_holds(ctx, f, L, B, H, D, len, ids));
    CHECK(tf_kv_cache_select(kv, (int[]){0, 3}, 2) != 0 && strstr(tf_error(), "row 3 outside [0,3)"));
    tf_kv_cache_free(f), tf_kv_cache_free(kv);
    tf_ctx_free(ctx);
}

/* Selections of any rows, in place within the buffers' 8 slots: cycles (a swap, a rotation, a
 * reversal) through temporaries, rows copied to several children, rows dropped and the rows
 * grown back to 8, between appends; each against the ids the rows must hold. */
TEST(kv_cache_select_moves_any_rows_in_place) {
    enum { L = 2, H = 2, D = 3, CAP = 8, SLOTS = 8 };
    int ids[8][8] = {{0}}, moved[8][8], B = SLOTS, rows[8];
    unsigned seed = 12345;
    tf_kv_cache *kv = tf_kv_cache_new(L, B, H, D, CAP);
    tf_ctx *ctx = tf_ctx_new(0);
    CHECK(kv && ctx);
    for (int len = 0; len < CAP; len++) {
        CHECK(kv_append_ids(ctx, kv, L, B, H, D, 10 * len, len, ids) == 0); /* row b: id 10 len + b */
        for (int k = 0; k < 40; k++) {
            int n = k < 3 ? B : 1 + (int)((seed = seed * 1103515245u + 12345u) >> 16) % SLOTS;
            for (int i = 0; i < n; i++) /* a reversal, a rotation, a swap, then at random */
                rows[i] = k == 0 ? B - 1 - i : k == 1 ? (i + 1) % B : k == 2 ? (i ^ 1) % B
                                              : (int)((seed = seed * 1103515245u + 12345u) >> 16) % B;
            CHECK(tf_kv_cache_select(kv, rows, n) == 0);
            for (int i = 0; i < n; i++) memcpy(moved[i], ids[rows[i]], sizeof moved[i]);
            memcpy(ids, moved, (size_t)n * sizeof moved[0]), B = n;
            CHECKF(kv_holds(ctx, kv, L, B, H, D, len + 1, ids), "after selection %d at length %d", k, len + 1);
        }
        tf_ctx_reset(ctx);
    }
    tf_kv_cache_free(kv);
    tf_ctx_free(ctx);
}
