/* Sparse attention patterns and the block-sparse flash kernel: the token rule
 * on hand-written masks, the layouts (reproducible, linear in T), and the
 * kernel against dense fused attention under the equivalent boolean mask. */
#include <stdlib.h>
#include <string.h>

#include "test.h"

/* "x" = visible, "." = hidden, row by row. */
static int mask_is(const tf_sparse_pattern *p, int64_t T, const char *want) {
    uint8_t *m = malloc((size_t)(T * T));
    int ok = m && tf_sparse_mask(p, T, m) == 0;
    for (int64_t i = 0; ok && i < T * T; i++) ok = (m[i] ? '.' : 'x') == want[i];
    if (!ok && m) {
        for (int64_t i = 0; i < T; i++) {
            for (int64_t j = 0; j < T; j++) fputc(m[i * T + j] ? '.' : 'x', stderr);
            fputc('\n', stderr);
        }
    }
    free(m);
    return ok;
}

TEST(sparse_pattern_token_rule) {
    tf_sparse_pattern local = {.block = 2, .causal = 1, .window = 1, .dilation = 1};
    CHECK(mask_is(&local, 5, "x...." "xx..." ".xx.." "..xx." "...xx"));
    tf_sparse_pattern two = {.block = 2, .window = 1, .dilation = 2};
    CHECK(mask_is(&two, 5, "x.x.." ".x.x." "x.x.x" ".x.x." "..x.x"));
    tf_sparse_pattern dil3 = {.block = 3, .causal = 1, .window = 2, .dilation = 3};
    CHECK(mask_is(&dil3, 7, "x......" ".x....." "..x...." "x..x..." ".x..x.." "..x..x." "x..x..x"));
    int g[] = {3};
    tf_sparse_pattern glob = {.block = 4, .window = -1, .dilation = 1, .global = g, .n_global = 1};
    CHECK(mask_is(&glob, 5, "...x." "...x." "...x." "xxxxx" "...x."));
    tf_sparse_pattern first = {.block = 2, .causal = 1, .window = 0, .dilation = 1, .global_first = 2};
    CHECK(mask_is(&first, 5, "x...." "xx..." "xxx.." "xx.x." "xx..x"));
    tf_sparse_pattern globc = glob;
    globc.causal = 1;
    CHECK(mask_is(&globc, 5, "....." "....." "....." "xxxx." "...x."));
    /* one random block per query block of 2 beside a window of 0 (the diagonal):
     * the drawn block is visible whole; every row sees 1 + 2 keys (row 4's block is 1 wide) */
    tf_sparse_pattern rnd = {.block = 2, .window = 0, .dilation = 1, .random = 1, .seed = 7};
    uint8_t m[36];
    CHECK(tf_sparse_mask(&rnd, 6, m) == 0);
    for (int i = 0; i < 6; i++) {
        int seen = 0;
        for (int j = 0; j < 6; j++) seen += !m[i * 6 + j];
        CHECKF(seen == 3 && !m[i * 6 + i], "row %d sees %d keys", i, seen);
    }
}

TEST(sparse_layout_reproducible_and_linear) {
    int g[] = {0, 1};
    tf_sparse_pattern bb = {.block = 64, .window = 64, .dilation = 1, .global = g, .n_global = 2, .random = 3, .seed = 1};
    tf_sparse_layout a, b;
    CHECK(tf_sparse_layout_new(&a, &bb, 65536) == 0);
    CHECK(tf_sparse_layout_new(&b, &bb, 65536) == 0);
    CHECK(a.off[a.n_qblocks] == b.off[b.n_qblocks]);
    CHECK(!memcmp(a.kblock, b.kblock, (size_t)a.off[a.n_qblocks] * sizeof *a.kblock));
    /* the global row block sees all 1024 key blocks; every other block: 3 window + 1 global + 3 random */
    CHECKF(a.off[1] == 1024 && a.off[a.n_qblocks] <= 1024 + 1023 * 7, "visited %lld", (long long)a.off[a.n_qblocks]);
    for (int64_t qb = 2; qb < a.n_qblocks - 1; qb++) {
        int rnd = 0;
        for (int64_t t = a.off[qb]; t < a.off[qb + 1]; t++) {
            rnd += a.random[t];
            CHECK(t == a.off[qb] || a.kblock[t] > a.kblock[t - 1]); /* ascending, no repeats */
        }
        CHECKF(rnd == 3 && a.off[qb + 1] - a.off[qb] == 7, "query block %lld: %d random of %lld", (long long)qb, rnd,
               (long long)(a.off[qb + 1] - a.off[qb]));
    }
    tf_sparse_layout_free(&b);
    bb.seed = 2;
    CHECK(tf_sparse_layout_new(&b, &bb, 65536) == 0);
    CHECK(memcmp(a.kblock, b.kblock, (size_t)a.off[a.n_qblocks] * sizeof *a.kblock) != 0);
    tf_sparse_layout_free(&a), tf_sparse_layout_free(&b);
}

TEST(sparse_pattern_bad_input_is_a_clear_error) {
    int g[] = {2, 9};
    tf_sparse_pattern p = {.block = 4, .window = 1, .dilation = 1, .global = g, .n_global = 2};
    CHECK(tf_sparse_check(&p, 8) == -1 && strstr(tf_error(), "global position 9 (entry 1)"));
    p.n_global = 1, p.block = 0;
    CHECK(tf_sparse_check(&p, 8) == -1 && strstr(tf_error(), "block size 0"));
    p.block = 4, p.dilation = 0;
    CHECK(tf_sparse_check(&p, 8) == -1 && strstr(tf_error(), "dilation 0"));
    p.dilation = 1, p.window = -2;
    CHECK(tf_sparse_check(&p, 8) == -1 && strstr(tf_error(), "window -2"));
    p.window = 1, p.global_first = -1;
    CHECK(tf_sparse_check(&p, 8) == -1 && strstr(tf_error(), "global tokens -1"));
    p.global_first = 9; /* more than the sequence: all of it */
    CHECK(tf_sparse_check(&p, 8) == 0);
    tf_ctx *c = tf_ctx_new(1);
    tf_tensor *q = tf_tensor_new(c, TF_DTYPE_F32, 4, (int64_t[]){1, 1, 8, 4}, 0);
    tf_tensor *k = tf_tensor_new(c, TF_DTYPE_F32, 4, (int64_t[]){1, 1, 7, 4}, 0);
    CHECK(!tf_sparse_attention(c, q, k, k, NULL, &p, 1.0f) && strstr(tf_error(), "self-attention"));
    tf_tensor *pad = tf_tensor_new(c, TF_DTYPE_U8, 2, (int64_t[]){1, 7}, 0);
    CHECK(!tf_sparse_attention(c, q, q, q, pad, &p, 1.0f) && strstr(tf_error(), "key padding"));
    tf_ctx_free(c);
}

enum { B_ = 2, H_ = 2, D_ = 8, DV_ = 6 };

/* Output and the gradients of q, k, v of sum(out * R): out[0] output, 1..3 grads.
 * dense: tf_sdpa under the pattern's mask (B,1,T,T) with the padding folded in;
 * flip: that many mask entries of row 5 flipped (a perturbed reference). */
static int run(int dense, const tf_sparse_pattern *p, int64_t T, int padded, int flip, float *out[4]) {
    tf_ctx *c = tf_ctx_new(3);
    tf_tensor *q = tf_tensor_new(c, TF_DTYPE_F32, 4, (int64_t[]){B_, H_, T, D_}, 1);
    tf_tensor *k = tf_tensor_new(c, TF_DTYPE_F32, 4, (int64_t[]){B_, H_, T, D_}, 1);
    tf_tensor *v = tf_tensor_new(c, TF_DTYPE_F32, 4, (int64_t[]){B_, H_, T, DV_}, 1);
    tf_tensor_fill_normal(q, 11, 1.0f), tf_tensor_fill_normal(k, 12, 1.0f), tf_tensor_fill_normal(v, 13, 1.0f);
    tf_tensor *pad = tf_tensor_new(c, TF_DTYPE_U8, 2, (int64_t[]){B_, T}, 0);
    for (int64_t j = 0; j < T; j++) tf_u8(pad)[T + j] = padded && j >= T - 5; /* row 1: 5 padded keys */
    float scale = 1.0f / sqrtf((float)D_);
    tf_tensor *y;
    if (dense) {
        tf_tensor *m = tf_tensor_new(c, TF_DTYPE_U8, 4, (int64_t[]){B_, 1, T, T}, 0);
        if (tf_sparse_mask(p, T, tf_u8(m))) return -1;
        memcpy(tf_u8(m) + T * T, tf_u8(m), (size_t)(T * T));
        for (int b = 0; b < B_; b++)
            for (int64_t i = 0; i < T; i++)
                for (int64_t j = 0; j < T; j++) tf_u8(m)[(b * T + i) * T + j] |= tf_u8(pad)[b * T + j];
        for (int f = 0; f < flip; f++) tf_u8(m)[5 * T + f] ^= 1;
        y = tf_sdpa(c, q, k, v, m, 0, scale);
    } else {
        y = tf_sparse_attention(c, q, k, v, padded ? pad : NULL, p, scale);
    }
    if (!y) return tf_ctx_free(c), -1;
    tf_tensor *R = tf_tensor_new(c, TF_DTYPE_F32, 4, y->shape, 0);
    tf_tensor_fill_normal(R, 5, 1.0f);
    if (tf_backward(c, y, R)) return tf_ctx_free(c), -1;
    const tf_tensor *src[4] = {y, q, k, v};
    for (int i = 0; i < 4; i++) {
        size_t n = (size_t)tf_numel(src[i]) * sizeof(float);
        out[i] = malloc(n);
        memcpy(out[i], i ? src[i]->grad : tf_f32(src[i]), n);
    }
    tf_ctx_free(c);
    return 0;
}

/* The worst relative L2 error of output and gradients, sparse against dense. */
static double compare(const tf_sparse_pattern *p, int64_t T, int padded, int flip) {
    float *a[4], *b[4];
    if (run(0, p, T, padded, 0, a) || run(1, p, T, padded, flip, b)) return INFINITY;
    long n[4] = {B_ * H_ * T * DV_, B_ * H_ * T * D_, B_ * H_ * T * D_, B_ * H_ * T * DV_};
    double worst = 0;
    for (int i = 0; i < 4; i++) {
        double e = test_rel_err(a[i], b[i], n[i]);
        worst = e > worst ? e : worst;
        free(a[i]), free(b[i]);
    }
    return worst;
}

static const int GLOBALS[] = {0, 17};

/* local, dilated, global, random, BigBird (random + window + global). */
static tf_sparse_pattern pattern(int kind, int block, int causal) {
    tf_sparse_pattern p = {.block = block, .causal = causal, .window = -1, .dilation = 1, .seed = 42};
    if (kind == 0 || kind == 4) p.window = 3;
    if (kind == 1) p.window = 2, p.dilation = 3;
    if (kind == 2 || kind == 4) p.global = GLOBALS, p.n_global = 2;
    if (kind == 4) p.global_first = 3;
    if (kind == 2) p.window = 0;
    if (kind == 3 || kind == 4) p.random = 2;
    return p;
}

TEST(sparse_attention_matches_dense_masked) {
    static const char *const names[] = {"local", "dilated", "global", "random", "bigbird"};
    static const int blocks[] = {4, 8, 64};
    static const int64_t lengths[] = {37, 40};
    double worst = 0;
    for (int kind = 0; kind < 5; kind++)
        for (int bi = 0; bi < 3; bi++)
            for (int li = 0; li < 2; li++)
                for (int causal = 0; causal < 2; causal++)
                    for (int padded = 0; padded < 2; padded++) {
                        tf_sparse_pattern p = pattern(kind, blocks[bi], causal);
                        double e = compare(&p, lengths[li], padded, 0);
                        CHECKF(e <= 1e-6, "%s block %d T %lld causal %d padded %d: relative error %g", names[kind],
                               blocks[bi], (long long)lengths[li], causal, padded, e);
                        worst = e > worst ? e : worst;
                    }
    if (getenv("SPARSE_VERBOSE")) fprintf(stderr, "      worst relative error %.3g\n", worst);
}

/* Queries that continue a sequence (a KV cache's new positions, Tq < T): the
 * last Tq rows of the whole sequence's output, for offsets inside a block. */
TEST(sparse_attention_last_queries_equal_full_rows) {
    tf_sparse_pattern p = pattern(4, 4, 1);
    enum { T = 37 };
    tf_ctx *c = tf_ctx_new(1);
    tf_tensor *q = tf_tensor_new(c, TF_DTYPE_F32, 4, (int64_t[]){B_, H_, T, D_}, 0);
    tf_tensor *k = tf_tensor_new(c, TF_DTYPE_F32, 4, (int64_t[]){B_, H_, T, D_}, 0);
    tf_tensor *v = tf_tensor_new(c, TF_DTYPE_F32, 4, (int64_t[]){B_, H_, T, DV_}, 0);
    tf_tensor_fill_normal(q, 1, 1.0f), tf_tensor_fill_normal(k, 2, 1.0f), tf_tensor_fill_normal(v, 3, 1.0f);
    tf_tensor *all = tf_sparse_attention(c, q, k, v, NULL, &p, 0.3f);
    CHECK(all);
    for (int64_t tq = 1; tq <= 11; tq += 5) {
        tf_tensor *last = tf_sparse_attention(c, tf_narrow(c, q, 2, T - tq, tq), k, v, NULL, &p, 0.3f);
        CHECK(last);
        for (int64_t bh = 0; bh < B_ * H_; bh++) {
            double e = test_rel_err(tf_f32(last) + bh * tq * DV_, tf_f32(all) + (bh * T + T - tq) * DV_, tq * DV_);
            CHECKF(e <= 1e-6, "Tq %lld: relative error %g", (long long)tq, e);
        }
    }
    tf_ctx_free(c);
}

/* A causal pattern's query sees the same keys whatever follows it: decoding
 * one position at a time (keys 0..t, query t) gives the full sequence's row
 * t. A dilation beyond the block size with random blocks: the window's marks
 * of a block the sequence ends inside once came from its rows present only,
 * so its random blocks were drawn among other candidates (rows off by O(1)). */
TEST(sparse_attention_causal_rows_do_not_depend_on_what_follows) {
    tf_sparse_pattern p = {.block = 2, .causal = 1, .window = 1, .dilation = 5, .random = 2, .seed = 86};
    enum { T = 19 };
    tf_ctx *c = tf_ctx_new(1);
    tf_tensor *q = tf_tensor_new(c, TF_DTYPE_F32, 4, (int64_t[]){B_, H_, T, D_}, 0);
    tf_tensor *k = tf_tensor_new(c, TF_DTYPE_F32, 4, (int64_t[]){B_, H_, T, D_}, 0);
    tf_tensor *v = tf_tensor_new(c, TF_DTYPE_F32, 4, (int64_t[]){B_, H_, T, DV_}, 0);
    tf_tensor_fill_normal(q, 1, 1.0f), tf_tensor_fill_normal(k, 2, 1.0f), tf_tensor_fill_normal(v, 3, 1.0f);
    tf_tensor *all = tf_sparse_attention(c, q, k, v, NULL, &p, 0.4f);
    CHECK(all);
    double worst = 0;
    for (int64_t t = 1; t <= T; t++) {
        tf_tensor *row = tf_sparse_attention(c, tf_narrow(c, q, 2, t - 1, 1), tf_narrow(c, k, 2, 0, t),
                                             tf_narrow(c, v, 2, 0, t), NULL, &p, 0.4f);
        CHECK(row);
        for (int64_t bh = 0; bh < B_ * H_; bh++) {
            double e = test_rel_err(tf_f32(row) + bh * DV_, tf_f32(all) + (bh * T + t - 1) * DV_, DV_);
            worst = e > worst ? e : worst;
        }
    }
    CHECKF(worst <= 1e-6, "query t over keys 0..t against the full pass: relative error %g", worst);
    tf_ctx_free(c);
}

/* The comparison notices one flipped mask entry, and a different random draw. */
TEST(sparse_attention_perturbed_reference_fails) {
    tf_sparse_pattern p = pattern(4, 4, 0);
    double e = compare(&p, 37, 1, 1);
    CHECKF(e > 1e-4, "one flipped mask entry gives relative error %g", e);
    float *a[4], *b[4];
    tf_sparse_pattern p2 = p;
    p2.seed = 43;
    CHECK(run(0, &p, 37, 0, 0, a) == 0 && run(0, &p2, 37, 0, 0, b) == 0);
    e = test_rel_err(a[0], b[0], B_ * H_ * 37 * DV_);
    for (int i = 0; i < 4; i++) free(a[i]), free(b[i]);
    CHECKF(e > 1e-4, "another seed gives relative error %g", e);
}

/* Query blocks and (batch, head) pairs run on several threads: output and
 * gradients bit for bit the same on one and two threads. */
TEST(sparse_attention_does_not_depend_on_threads) {
    tf_sparse_pattern p = pattern(4, 16, 0);
    float *a[4], *b[4];
    tf_set_threads(1);
    int rc = run(0, &p, 300, 1, 0, a);
    tf_set_threads(2);
    rc |= run(0, &p, 300, 1, 0, b);
    tf_set_threads(0);
    CHECK(rc == 0);
    size_t n[4] = {B_ * H_ * 300 * DV_, B_ * H_ * 300 * D_, B_ * H_ * 300 * D_, B_ * H_ * 300 * DV_};
    int same = 1;
    for (int i = 0; i < 4; i++) same &= !memcmp(a[i], b[i], n[i] * sizeof(float)), free(a[i]), free(b[i]);
    CHECKF(same, "sparse attention differs between one and two threads");
}
