/* Nyströmformer against Hugging Face transformers (tests/ref/gen_nystrom_fixtures.py):
 * every case of tests/fixtures_nystrom through `tformer hf-run` to 1e-5; the
 * loss's gradients with respect to every parameter against PyTorch's
 * autograd; a perturbed weight fails the comparison; bad folders and inputs
 * are clear errors; the attention kind's own rules (a length that is not a
 * multiple of the landmarks, the max op's ties). */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "test.h"

#define TOL 1e-5
#define NYS_DIR "tests/fixtures_nystrom"
#define SEQ_CASE NYS_DIR "/seqcls_T20_L5_k5_labels_grad"
#define EXACT_CASE NYS_DIR "/model_T8_L8_exact_k3_T6"
#define BODY_CASE NYS_DIR "/model_T16_L4_k3"

TEST(nystrom_hf_run_matches_transformers) {
    int cases, failed = test_hf_run_family(test_fixture_dir_or(NYS_DIR), "Nystromformer", TOL, 0, NULL, NULL, &cases);
    CHECKF(cases > 0 && failed == 0, "%d of %d cases failed", failed, cases);
}

/* ---------------------------------------------------------------- gradients against PyTorch */

static tf_tensor *nystrom_loss(tf_ctx *ctx, const void *m, const tf_st_file *in, tf_arena *a) {
    tf_nystrom_inputs x = {test_st_tensor(in, "input_ids", a), test_st_tensor(in, "attention_mask", a),
                           test_st_tensor(in, "token_type_ids", a), test_st_tensor(in, "position_ids", a),
                           test_st_tensor(in, "labels", a)};
    tf_nystrom_outputs o;
    return tf_nystrom_run(ctx, m, &x, &o) ? NULL : o.loss;
}

static double gradient_case(const char *dir, int *n_tensors) {
    tf_nystrom *m = tf_nystrom_load(dir);
    double e = m ? test_text_gradient_case(dir, m, m->params, nystrom_loss, n_tensors) : -1;
    tf_nystrom_free(m);
    return e;
}

/* Backward through the whole model: the heads, LayerNorms, the feed-forward
 * networks and Nyström attention (the landmarks' means, three softmaxes, the
 * iterative inverse with its max and reciprocal, the convolution on v, the
 * padding mask), against transformers' float64 autograd. */
TEST(nystrom_gradients_match_pytorch) {
    static const char *const CASES[] = {SEQ_CASE, NYS_DIR "/mlm_T12_L4_k3_labels_grad"};
    int bad = test_gradient_cases(CASES, 2, 1e-4, gradient_case);
    CHECKF(bad == 0, "%d of 2 cases' gradients differ", bad);
}

/* The comparison notices a changed weight: one element of each of these
 * tensors moved by 1e-3 fails the tolerance (an unchanged copy passes). */
TEST(nystrom_perturbed_weight_fails_the_comparison) {
    static const test_weight W[] = {{"encoder.layer.0.attention.self.conv.weight", 1}, {"encoder.layer.1.attention.self.conv.weight", 3},
             {"encoder.layer.0.attention.self.query.weight", 5}, {"encoder.layer.1.attention.self.key.weight", 9},
             {"encoder.layer.0.attention.self.value.bias", 2}, {"embeddings.position_embeddings.weight", 2 * 8 + 3},
             {"embeddings.word_embeddings.weight", 9 * 8 + 1}, {"encoder.layer.1.output.LayerNorm.weight", 4},
             {"encoder.layer.1.intermediate.dense.bias", 6}};
    const int n = (int)(sizeof W / sizeof *W);
    double same, least;
    int missed = test_hf_perturbed(BODY_CASE, W, n, TOL, &same, &least);
    printf("    unchanged copy %.2e; one element + 1e-3 of each of %d tensors: %.2e or more\n", same, n, least);
    CHECK(same >= 0 && same <= TOL);
    CHECKF(missed == 0, "%d perturbed tensors went unnoticed", missed);
}

/* ---------------------------------------------------------------- bad folders and inputs */

#define IDS(b, t, v) {"input_ids", TF_ST_I64, 2, {b, t}, v}
static const test_bad_case BAD[] = {
    {"a length other than segment_means_seq_len", NULL, NULL, NULL, NULL, {IDS(2, 16, 1)},
     {"16 tokens; with num_landmarks 5", "takes exactly segment_means_seq_len 20 tokens: pad to 20"}},
    {"num_landmarks not dividing the length", NULL, "\"num_landmarks\": 5", "\"num_landmarks\": 6", NULL,
     {IDS(2, 20, 1)}, {"config.json", "num_landmarks 6 must divide segment_means_seq_len 20"}},
    {"num_landmarks 0", NULL, "\"num_landmarks\": 5", "\"num_landmarks\": 0", NULL, {IDS(2, 20, 1)},
     {"config.json", "num_landmarks"}},
    {"an even convolution", NULL, "\"conv_kernel_size\": 5", "\"conv_kernel_size\": 4", NULL, {IDS(2, 20, 1)},
     {"config.json", "conv_kernel_size 4 must be odd"}},
    {"inv_coeff_init_option", NULL, "\"inv_coeff_init_option\": false", "\"inv_coeff_init_option\": true", NULL,
     {IDS(2, 20, 1)}, {"config.json", "\"inv_coeff_init_option\" must be false"}},
    {"relative positions", NULL, "\"hidden_act\"", "\"position_embedding_type\": \"relative_key\", \"hidden_act\"",
     NULL, {IDS(2, 20, 1)}, {"config.json", "position_embedding_type"}},
    {"multi-label", NULL, "\"hidden_act\"", "\"problem_type\": \"multi_label_classification\", \"hidden_act\"", NULL,
     {IDS(2, 20, 1)}, {"config.json", "multi_label_classification is not implemented"}},
    {"an unknown activation", NULL, "\"hidden_act\": \"gelu\"", "\"hidden_act\": \"gelu_fast\"", NULL,
     {IDS(2, 20, 1)}, {"config.json", "hidden_act"}},
    {"another model type", NULL, "\"model_type\": \"nystromformer\"", "\"model_type\": \"bert\"", NULL,
     {IDS(2, 20, 1)}, {"config.json", "model_type \"bert\""}},
    {"an id past the vocabulary", NULL, NULL, NULL, NULL, {IDS(2, 20, 23)},
     {"input_ids holds 23 at [0,0]", "vocab_size 23"}},
    {"a class past num_labels", NULL, NULL, NULL, NULL, {IDS(2, 20, 1), {"labels", TF_ST_I64, 1, {2}, 3}},
     {"labels hold 3", "[0,3)"}},
    {"a position past the table", NULL, NULL, NULL, NULL, {IDS(2, 20, 1), {"position_ids", TF_ST_I64, 2, {2, 20}, 26}},
     {"position_ids holds 26", "max_position_embeddings + 2 = 26"}},
    {"head_mask", NULL, NULL, NULL, NULL, {IDS(2, 20, 1), {"head_mask", TF_ST_F32, 1, {2}, 1}},
     {"'head_mask'", "not supported by hf-run"}},
    {"a missing convolution", NULL, NULL, NULL, "nystromformer.encoder.layer.1.attention.self.conv.weight",
     {IDS(2, 20, 1)}, {"missing tensor", "layer.1.attention.self.conv.weight"}},
    {"the exact branch past max_position_embeddings", EXACT_CASE, NULL, NULL, NULL, {IDS(1, 25, 1)},
     {"25 tokens exceed max_position_embeddings 24", NULL}},
};
#undef IDS

TEST(nystrom_hf_run_bad_input_is_a_clear_error) {
    const size_t n = sizeof BAD / sizeof BAD[0];
    int bad = test_hf_run_bad_cases(BAD, n, SEQ_CASE, "NYS_VERBOSE");
    CHECKF(bad == 0, "%d of %zu bad inputs were not a clear error", bad, n);
}

/* ---------------------------------------------------------------- the attention kind's rules */

/* A Nyström block over T positions with L landmarks: a T that is not a
 * multiple of L is an error saying so; T == L and L == 0 are exact softmax
 * attention (the same numbers); other kinds refuse the Nyström settings. */
TEST(nystrom_attention_rules) {
    static const tf_block_name ROWS[] = {
        {TF_BP_QKV_W, "in_proj_weight"}, {TF_BP_QKV_B, "in_proj_bias"}, {TF_BP_OUT_W, "out.weight"},
        {TF_BP_OUT_B, "out.bias"}, {TF_BP_NORM_ATTN_W, "n1.weight"}, {TF_BP_NORM_ATTN_B, "n1.bias"},
        {TF_BP_FF_IN_W, "f1.weight"}, {TF_BP_FF_IN_B, "f1.bias"}, {TF_BP_FF_OUT_W, "f2.weight"},
        {TF_BP_FF_OUT_B, "f2.bias"}, {TF_BP_NORM_FF_W, "n2.weight"}, {TF_BP_NORM_FF_B, "n2.bias"},
        {TF_BP_CONV_W, "conv.weight"}};
    tf_block_config c = tf_block_config_default(8, 2);
    c.d_ff = 16, c.self_attn.kind = TF_ATTN_NYSTROM, c.self_attn.landmarks = 3, c.self_attn.conv_kernel = 3;
    tf_params *ps = tf_params_new();
    tf_block b[2];
    tf_block_names names = {ROWS, (int)(sizeof ROWS / sizeof *ROWS)};
    CHECK(tf_block_register(ps, "a.", &b[0], &c, &names, (tf_block_init){0.3f, 0.3f, 0}) == 0);
    tf_block_config exact = c;
    exact.self_attn.landmarks = 0;
    CHECK(tf_block_register(ps, "b.", &b[1], &exact, &names, (tf_block_init){0.3f, 0.3f, 0}) == 0);
    CHECK(tf_params_init(ps, 3) == 0);
    for (int i = 0; i < tf_params_count(ps); i++) /* both blocks the same weights */
        if (!strncmp(tf_params_name(ps, i), "b.", 2)) {
            char a_name[64];
            snprintf(a_name, sizeof a_name, "a.%s", tf_params_name(ps, i) + 2);
            tf_tensor *from = tf_params_get(ps, a_name), *to = tf_params_tensor(ps, i);
            memcpy(to->data, from->data, (size_t)tf_numel(to) * sizeof(float));
        }
    tf_ctx *ctx = tf_ctx_new(1);
    tf_tensor *x7 = tf_tensor_new(ctx, TF_DTYPE_F32, 3, (int64_t[]){2, 7, 8}, 0);
    tf_tensor *x3 = tf_tensor_new(ctx, TF_DTYPE_F32, 3, (int64_t[]){2, 3, 8}, 0);
    tf_tensor_fill_normal(x7, 1, 1.0f), tf_tensor_fill_normal(x3, 2, 1.0f);
    CHECK(tf_block_forward(ctx, &b[0], &c, x7, NULL) == NULL);
    CHECKF(strstr(tf_error(), "over 7 positions needs a multiple of its 3 landmarks"), "%s", tf_error());
    tf_tensor *y = tf_block_forward(ctx, &b[0], &c, x3, NULL), *z = tf_block_forward(ctx, &b[1], &exact, x3, NULL);
    CHECK(y && z && !memcmp(y->data, z->data, (size_t)tf_numel(y) * sizeof(float)));
    tf_attn_mask causal = {.causal = 1};
    CHECK(tf_block_forward(ctx, &b[0], &c, x3, &(tf_block_args){.self_mask = &causal}) == NULL);
    CHECKF(strstr(tf_error(), "Nystrom attention"), "%s", tf_error());
    tf_block_config full = c;
    full.self_attn.kind = TF_ATTN_FULL;
    CHECK(tf_block_config_check(&full) == -1 && strstr(tf_error(), "settings of Nystrom attention"));
    tf_ctx_free(ctx);
    tf_params_free(ps);
}

/* The max op's gradient is shared by tied maxima (PyTorch's max() over all elements). */
TEST(nystrom_max_shares_the_gradient_of_ties) {
    tf_ctx *ctx = tf_ctx_new(1);
    tf_tensor *x = tf_tensor_new(ctx, TF_DTYPE_F32, 2, (int64_t[]){2, 3}, 1);
    const float v[6] = {1, 3, 3, -2, 0.5f, -1};
    memcpy(x->data, v, sizeof v);
    tf_tensor *all = tf_max(ctx, x, TF_DIM_ALL, 0), *rows = tf_max(ctx, x, 1, 0);
    CHECK(all && rows && tf_f32(all)[0] == 3 && tf_f32(rows)[0] == 3 && tf_f32(rows)[1] == 0.5f);
    CHECK(tf_backward(ctx, all, NULL) == 0);
    CHECK(x->grad[1] == 0.5f && x->grad[2] == 0.5f && x->grad[0] == 0 && x->grad[4] == 0);
    tf_ctx_free(ctx);
}

/* nn.Embedding(padding_idx): the row of the padding id takes no gradient from
 * the lookup; its value is looked up as any other row's. */
TEST(nystrom_embedding_padding_row_takes_no_gradient) {
    tf_ctx *ctx = tf_ctx_new(1);
    tf_tensor *table = tf_tensor_new(ctx, TF_DTYPE_F32, 2, (int64_t[]){4, 3}, 1);
    tf_tensor *ids = tf_tensor_new(ctx, TF_DTYPE_I32, 1, (int64_t[]){5}, 0);
    tf_tensor_fill_normal(table, 4, 1.0f);
    const int32_t v[5] = {1, 2, 1, 3, 2};
    memcpy(ids->data, v, sizeof v);
    tf_tensor *y = tf_embedding_padded(ctx, table, ids, 2);
    CHECK(y && tf_f32(y)[3] == tf_f32(table)[6] && tf_backward(ctx, y, NULL) == 0);
    CHECK(table->grad[3] == 2 && table->grad[9] == 1 && table->grad[6] == 0 && table->grad[7] == 0 && table->grad[0] == 0);
    tf_ctx_free(ctx);
}
