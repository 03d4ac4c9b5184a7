/* Hugging Face's BigBirdModel with attention_type "block_sparse"
 * (tests/ref/gen_bigbird_fixtures.py): every case of tests/fixtures_bigbird
 * through `tformer hf-run` to 1e-5 (transformers' random blocks handed over as
 * rand_attn in the training-mode cases); another random block table fails the
 * comparison; bad tables and settings are clear errors. */
#include <stdlib.h>
#include <string.h>

#include "test.h"

#define TOL 1e-5
#define BB_DIR "tests/fixtures_bigbird"
#define TRAIN_CASE BB_DIR "/train_T64_b4_r2"

TEST(bigbird_block_sparse_matches_transformers) {
    int cases = 0;
    double worst = 0;
    int failed = test_hf_run_dir(test_fixture_dir_or(BB_DIR), TOL, NULL, NULL, &cases, &worst);
    printf("    %d block-sparse BigBird cases, %d failed, worst max |diff| %.2e\n", cases, failed, worst);
    CHECKF(cases > 0 && failed == 0, "%d of %d cases failed", failed, cases);
}

/* max |last_hidden_state - expected| of TRAIN_CASE with its table, entry `at`
 * of it set to `to` (at < 0: unchanged), or no table (drop). */
static double table_case(const tf_bert *m, tf_st_file *in, tf_st_file *exp, int64_t at, int32_t to, int drop) {
    tf_arena *a = tf_arena_new(0);
    tf_ctx *ctx = tf_ctx_new(0);
    tf_bert_inputs x = {.input_ids = test_st_tensor(in, "input_ids", a), .rand_attn = test_st_tensor(in, "rand_attn", a)};
    tf_tensor *want = test_st_tensor(exp, "last_hidden_state", a);
    double d = -1;
    if (x.rand_attn && at >= 0) tf_i32(x.rand_attn)[at] = to;
    if (drop) x.rand_attn = NULL;
    tf_bert_outputs o;
    if (x.input_ids && want && !tf_bert_run(ctx, m, &x, &o) && tf_numel(o.last_hidden_state) == tf_numel(want))
        d = test_max_abs_diff(tf_f32(o.last_hidden_state), tf_f32(want), tf_numel(want));
    tf_ctx_free(ctx);
    tf_arena_free(a);
    return d;
}

/* The random blocks matter: one entry of transformers' table moved to
 * another block, or no table (its evaluation mode), fails the comparison. */
TEST(bigbird_perturbed_random_table_fails) {
    tf_bert *m = tf_bert_load(TRAIN_CASE, NULL);
    tf_st_file *in = tf_st_open(TRAIN_CASE "/input.safetensors"), *exp = tf_st_open(TRAIN_CASE "/expected.safetensors");
    CHECK(m && in && exp);
    double same = table_case(m, in, exp, -1, 0, 0), none = table_case(m, in, exp, -1, 0, 1), least = 1e30;
    /* (layers 2, heads 2, blocks 14, random 2): a middle block of each layer and head, and the last row */
    static const int64_t at[] = {9, 28 + 13, 56 + 20, 84 + 27};
    for (int i = 0; i < 4; i++) {
        double d = table_case(m, in, exp, at[i], 15, 0);  // block 15: the last, global (a repeat)
        if (d < least) least = d;
    }
    printf("    unchanged table %.2e, no table %.2e, one entry moved: least %.2e\n", same, none, least);
    CHECKF(same >= 0 && same <= TOL && none > 1e-4 && least > 1e-4, "same %g, none %g, least %g", same, none, least);
    tf_st_close(in), tf_st_close(exp);
    tf_bert_free(m);
}

#define IDS(T) {"input_ids", TF_ST_I64, 2, {2, T}, 1}
TEST(bigbird_block_sparse_bad_input_is_a_clear_error) {
    static const test_bad_case bad[] = {
        {"table of another shape", NULL, NULL, NULL, NULL, {IDS(64), {"rand_attn", TF_ST_I64, 4, {2, 2, 13, 2}, 0}},
         {"rand_attn", "(2,2,13,2)", "blocks - 2 = 14"}},
        {"table entry outside the blocks", NULL, NULL, NULL, NULL, {IDS(64), {"rand_attn", TF_ST_I64, 4, {2, 2, 14, 2}, 16}},
         {"random block table entry 0", "is 16, outside the 16 key blocks"}},
        {"table for a length run as full attention", NULL, NULL, NULL, NULL,
         {IDS(36), {"rand_attn", TF_ST_I64, 4, {2, 2, 7, 2}, 0}}, {"rand_attn", "more than", "(got 36)"}},
        {"no random blocks", NULL, "\"num_random_blocks\": 2", "\"num_random_blocks\": 0", NULL, {IDS(64)},
         {"config.json", "\"num_random_blocks\"", "transformers fails with 0"}},
        {"block too large", NULL, "\"block_size\": 4", "\"block_size\": 129", NULL, {IDS(64)},
         {"config.json", "\"block_size\"", "[1, 128]"}},
        {"block not an integer", NULL, "\"block_size\": 4", "\"block_size\": 4.5", NULL, {IDS(64)},
         {"config.json", "\"block_size\""}},
    };
    int n = test_hf_run_bad_cases(bad, sizeof bad / sizeof *bad, TRAIN_CASE, "HF_VERBOSE");
    CHECKF(n == 0, "%d of the block-sparse BigBird refusals were not a clear error", n);
    /* no other head, no save: written as BERT it would come back with full attention */
    tf_bert_load_opts o = {TF_BERT_SEQ_CLS, 3, 1};
    CHECK(!tf_bert_load(TRAIN_CASE, &o) && strstr(tf_error(), "read as BigBirdModel only"));
    tf_bert *m = tf_bert_load(TRAIN_CASE, NULL);
    CHECK(m && tf_bert_save(m, "/tmp/tformer_bigbird_never") != 0 && strstr(tf_error(), "cannot be saved"));
    tf_bert_free(m);
}

/* The itc layout's own rules at the library level (tf_sparse_pattern). */
TEST(bigbird_itc_layout_rules) {
    static const int32_t table[] = {0, 3, 3, 1};  // (1 head, 2 rows, 2 random)
    tf_sparse_pattern p = {.block = 4, .window = -1, .dilation = 1, .random = 2, .itc = 1, .itc_random = table,
                           .itc_heads = 1};
    CHECK(tf_sparse_check(&p, 16) == 0);
    CHECK(tf_sparse_check(&p, 14) != 0 && strstr(tf_error(), "multiple of the block size 4"));
    CHECK(tf_sparse_check(&p, 8) != 0 && strstr(tf_error(), "at least 3 blocks"));
    tf_sparse_layout l;
    CHECK(tf_sparse_layout_new(&l, &p, 16) == 0);
    /* rows: 0 and 3 every block; 1: {0,1,2,3} + {0,3}; 2: {0,1,2,3} + {3,1} (repeats counted) */
    static const int32_t want[] = {0, 1, 2, 3, 0, 1, 2, 3, 0, 3, 0, 1, 2, 3, 3, 1, 0, 1, 2, 3};
    CHECK(l.off[4] == 20 && l.max_visit == 6 && !memcmp(l.kblock, want, sizeof want));
    tf_sparse_layout_free(&l);
    uint8_t mask[16 * 16];
    CHECK(tf_sparse_mask(&p, 16, mask) != 0 && strstr(tf_error(), "no boolean mask"));
    p.causal = 1;
    CHECK(tf_sparse_check(&p, 16) != 0 && strstr(tf_error(), "not causal"));
    p.causal = 0, p.global_first = 1;
    CHECK(tf_sparse_check(&p, 16) != 0 && strstr(tf_error(), "global tokens 1"));
}
