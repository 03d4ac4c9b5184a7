/* Layers and ops checked against their definitions: positional encodings,
 * dropout, cross-entropy, fused vs unfused attention, and error messages. */
#include <string.h>

#include "core/core_internal.h"
#include "test.h"

TEST(posenc_sinusoidal_matches_formula) {
    /* PE(pos,2i) = sin(pos/10000^(2i/d)), PE(pos,2i+1) = cos(pos/10000^(2i/d)); odd d too. */
    for (int d = 6; d <= 7; d++) {
        float pe[50 * 7];
        tf_posenc_sinusoidal(pe, 0, 50, d);
        for (int pos = 0; pos < 50; pos++)
            for (int c = 0; c < d; c++) {
                double w = pos / pow(10000.0, (double)(c / 2 * 2) / d);
                double want = c % 2 ? cos(w) : sin(w);
                CHECKF(fabs(pe[pos * d + c] - want) < 1e-6, "PE(%d,%d) = %g, want %g", pos, c, pe[pos * d + c], want);
            }
        CHECK(pe[1 * d + 0] == (float)sin(1.0) && pe[1 * d + 1] == (float)cos(1.0));
        float tail[5 * 7]; /* rows from a later start: the same as the full table's */
        tf_posenc_sinusoidal(tail, 45, 5, d);
        CHECK(!memcmp(tail, pe + 45 * d, (size_t)(5 * d) * sizeof *tail));
    }
}

TEST(posenc_relative_bias_indexing) {
    tf_ctx *c = tf_ctx_new(0);
    int K = 2, H = 3;
    tf_tensor *table = tf_tensor_new(c, TF_DTYPE_F32, 2, (int64_t[]){2 * K + 1, H}, 1);
    for (int r = 0; r < 2 * K + 1; r++)
        for (int h = 0; h < H; h++) tf_f32(table)[r * H + h] = (float)(100 * r + h);
    tf_tensor *b = tf_contiguous(c, tf_posenc_relative_bias(c, table, 4, 6)); /* (1,H,4,6) */
    CHECK(b && b->ndim == 4 && b->shape[1] == H && b->shape[2] == 4 && b->shape[3] == 6);
    for (int h = 0; h < H; h++)
        for (int i = 0; i < 4; i++)
            for (int j = 0; j < 6; j++) {
                int rel = j - (i + 2), cl = rel < -K ? -K : rel > K ? K : rel;
                CHECK(tf_f32(b)[(h * 4 + i) * 6 + j] == (float)(100 * (cl + K) + h));
            }
    /* The gradient of every bias entry lands in its table cell. */
    CHECK(tf_backward(c, b, NULL) == 0);
    double total = 0;
    for (int i = 0; i < (2 * K + 1) * H; i++) total += table->grad[i];
    CHECK(total == 4 * 6 * H);
    tf_ctx_free(c);
}

TEST(posenc_learned_shares_gradient) {
    tf_ctx *c = tf_ctx_new(0);
    tf_tensor *table = tf_tensor_new(c, TF_DTYPE_F32, 2, (int64_t[]){10, 4}, 1);
    tf_tensor *x = tf_tensor_new(c, TF_DTYPE_F32, 3, (int64_t[]){2, 3, 4}, 1);
    tf_tensor *y = tf_add(c, x, tf_posenc_learned(c, table, 5, 3));
    CHECK(tf_backward(c, y, NULL) == 0);
    CHECK(table->grad[4 * 4] == 0 && table->grad[5 * 4] == 2 && table->grad[7 * 4 + 3] == 2 && table->grad[8 * 4] == 0);
    CHECK(tf_posenc_learned(c, table, 8, 3) == NULL && strstr(tf_error(), "exceed"));
    tf_ctx_free(c);
}

TEST(dropout_scaling_and_modes) {
    tf_ctx *c = tf_ctx_new(11);
    tf_tensor *x = tf_tensor_new(c, TF_DTYPE_F32, 1, (int64_t[]){10000}, 0);
    for (int i = 0; i < 10000; i++) tf_f32(x)[i] = 1.0f;
    CHECK(tf_dropout(c, x, 0.3f) == x); /* not training: identity */
    tf_ctx_set_training(c, 1);
    tf_tensor *y = tf_dropout(c, x, 0.3f), *y2 = tf_dropout(c, x, 0.3f);
    int zeros = 0, differ = 0;
    for (int i = 0; i < 10000; i++) {
        float v = tf_f32(y)[i];
        CHECK(v == 0.0f || fabsf(v - 1.0f / 0.7f) < 1e-6f);
        zeros += v == 0.0f;
        differ += v != tf_f32(y2)[i];
    }
    CHECKF(zeros > 2800 && zeros < 3200, "%d of 10000 dropped at p=0.3", zeros);
    CHECK(differ > 0); /* each call draws a fresh mask */
    CHECK(tf_dropout(c, x, 1.0f) == NULL && strstr(tf_error(), "outside"));
    tf_ctx_free(c);
}

TEST(cross_entropy_values) {
    tf_ctx *c = tf_ctx_new(0);
    tf_tensor *logits = tf_tensor_new(c, TF_DTYPE_F32, 2, (int64_t[]){3, 5}, 1);
    tf_tensor *t = tf_tensor_new(c, TF_DTYPE_I32, 1, (int64_t[]){3}, 0);
    tf_i32(t)[0] = 1, tf_i32(t)[1] = -100, tf_i32(t)[2] = 4;
    tf_f32(logits)[2 * 5 + 4] = 3.0f;
    tf_tensor *l = tf_cross_entropy(c, logits, t, -100, 0.0f);
    double row2 = log(4.0 + exp(3.0)) - 3.0;
    CHECK(l && fabs(tf_f32(l)[0] - (log(5.0) + row2) / 2) < 1e-6);
    tf_tensor *ls = tf_cross_entropy(c, logits, t, -100, 0.2f);
    double smooth2 = 0.8 * row2 + 0.2 * (log(4.0 + exp(3.0)) - 3.0 / 5.0);
    CHECK(ls && fabs(tf_f32(ls)[0] - (log(5.0) + smooth2) / 2) < 1e-6);
    tf_i32(t)[0] = 5;
    CHECK(!tf_cross_entropy(c, logits, t, -100, 0.0f) && strstr(tf_error(), "target 5"));
    tf_ctx_free(c);
}

TEST(attention_fused_equals_unfused) {
    tf_mha_config cfg = tf_mha_config_default(10, 2);
    cfg.rel_max_offset = 3;
    tf_params *ps = tf_params_new();
    tf_mha m;
    CHECK(tf_mha_register(ps, "", &m, &cfg) == 0 && tf_params_init(ps, 3) == 0);
    tf_ctx *c = tf_ctx_new(0);
    tf_tensor *x = tf_tensor_new(c, TF_DTYPE_F32, 3, (int64_t[]){2, 7, 10}, 0);
    tf_tensor_fill_normal(x, 8, 1.0f);
    tf_attn_mask am = {.causal = 1};
    tf_tensor *w = NULL;
    tf_tensor *a = tf_mha_forward(c, &m, x, x, x, &am, NULL), *b = tf_mha_forward(c, &m, x, x, x, &am, &w);
    CHECK(a && b && w);
    CHECK(test_rel_err(tf_f32(a), tf_f32(b), 140) < 1e-6);
    CHECK(tf_f32(w)[0 * 7 + 1] == 0.0f && fabsf(tf_f32(w)[0] - 1.0f) < 1e-6f); /* causal row 0 */
    tf_ctx_free(c);
    tf_params_free(ps);
}

TEST(errors_name_the_problem) {
    tf_ctx *c = tf_ctx_new(0);
    tf_tensor *a = tf_tensor_new(c, TF_DTYPE_F32, 2, (int64_t[]){3, 4}, 1);
    tf_tensor *b = tf_tensor_new(c, TF_DTYPE_F32, 2, (int64_t[]){5, 6}, 1);
    CHECK(tf_matmul(c, a, b, 0, 0) == NULL && strstr(tf_error(), "(3,4)") && strstr(tf_error(), "(5,6)"));
    CHECK(tf_add(c, a, b) == NULL && strstr(tf_error(), "broadcast"));
    /* A failed op poisons what follows without a crash or a new message. */
    tf_tensor *y = tf_relu(c, tf_matmul(c, a, b, 0, 0));
    CHECK(y == NULL && strstr(tf_error(), "matmul"));
    CHECK(tf_backward(c, y, NULL) != 0);
    CHECK(tf_reshape(c, a, 2, (int64_t[]){5, -1}) == NULL && strstr(tf_error(), "reshape"));
    tf_tensor *ids = tf_tensor_new(c, TF_DTYPE_I32, 1, (int64_t[]){2}, 0);
    tf_i32(ids)[1] = 3;
    CHECK(tf_embedding(c, a, ids) == NULL && strstr(tf_error(), "id 3"));
    tf_block_config cfg = tf_block_config_default(10, 3);
    tf_params *ps = tf_params_new();
    tf_block l;
    CHECK(tf_encoder_layer_register(ps, "", &l, &cfg) != 0 && strstr(tf_error(), "multiple of n_head"));
    tf_params_free(ps);
    tf_ctx_free(c);
}

TEST(arena_reset_reuses_memory) {
    /* After the first step, a step of the same shape fits in one block: no allocation. */
    tf_arena_trim(); /* no block kept from an earlier test's arena */
    tf_ctx *c = tf_ctx_new(0);
    size_t used[3], reserved[3];
    int blocks[3];
    for (int step = 0; step < 3; step++) {
        tf_tensor *x = tf_tensor_new(c, TF_DTYPE_F32, 2, (int64_t[]){300, 300}, 1);
        tf_tensor *y = tf_gelu(c, tf_matmul(c, x, x, 0, 1), TF_GELU_TANH);
        CHECK(tf_backward(c, y, NULL) == 0);
        used[step] = tf_arena_used(tf_ctx_arena(c));
        reserved[step] = tf_arena_reserved(tf_ctx_arena(c), &blocks[step]);
        tf_ctx_reset(c);
    }
    CHECKF(blocks[0] > 1, "the first step should need several 1 MiB blocks, got %d", blocks[0]);
    CHECK(blocks[1] == 1 && blocks[2] == 1 && reserved[1] == reserved[2] && used[1] == used[2]);
    tf_ctx_free(c);
}

/* A freed arena's mapped block serves the next arena (no page to fault in
 * again), its bytes zeroed as any arena's; tf_arena_trim gives it back. */
TEST(arena_block_kept_for_the_next_arena) {
    enum { BIG = 64 << 20 };
    tf_arena_trim();
    tf_arena *a = tf_arena_new(0);
    unsigned char *p = tf_arena_alloc(a, BIG);
    CHECK(p != NULL);
    if (!p) return;
    memset(p, 0xAB, BIG);
    tf_arena_free(a);
    tf_arena *b = tf_arena_new(0);
    unsigned char *q = tf_arena_alloc(b, 1 << 20);
    int blocks = 0;
    size_t reserved = tf_arena_reserved(b, &blocks);
    CHECKF(reserved >= BIG && blocks == 1, "the second arena holds %zu bytes in %d blocks", reserved, blocks);
    int zeroed = 1;
    for (int i = 0; q && i < 1 << 20; i += 4093) zeroed &= q[i] == 0;
    CHECK(q && zeroed);
    tf_arena_free(b);
    tf_arena_trim();
    tf_arena *c = tf_arena_new(0);
    CHECK(tf_arena_alloc(c, 1 << 20) && tf_arena_reserved(c, NULL) < BIG); /* nothing kept after the trim */
    tf_arena_free(c);
}

TEST(empty_tensors_flow_through) {
    /* Zero-sized dims anywhere: every op gives an empty result, no stray reads. */
    tf_ctx *c = tf_ctx_new(0);
    tf_tensor *x = tf_tensor_new(c, TF_DTYPE_F32, 3, (int64_t[]){2, 0, 3}, 1);
    tf_tensor *b = tf_tensor_new(c, TF_DTYPE_F32, 1, (int64_t[]){3}, 1);
    tf_tensor *y = tf_add(c, tf_contiguous(c, tf_transpose(c, x, 0, 1)), b);
    y = tf_softmax(c, tf_layernorm(c, tf_mul(c, y, b), b, b, 1e-5f), NULL);
    CHECK(y && tf_numel(y) == 0 && y->shape[0] == 0);
    tf_tensor *s = tf_sum(c, y, TF_DIM_ALL, 0);
    CHECK(s && tf_f32(s)[0] == 0.0f && tf_backward(c, s, NULL) == 0 && b->grad[0] == 0.0f);
    tf_ctx_free(c);
}
