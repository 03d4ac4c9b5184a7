/* `tformer hf-run` against Hugging Face transformers: every case folder of
 * tests/fixtures_hf (tests/ref/gen_hf_fixtures.py, written by transformers
 * 4.x and 5.x) is run through tf_hf_run and its output fields compared to
 * 1e-5 relative L2 error; then bad folders and inputs, each a clear error
 * and no output file. `run_tests --fixtures DIR hf_` runs fresh cases from
 * DIR instead (make hf-conformance). */
#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "test.h"

#define TOL 1e-5
#define HF_DIR "tests/fixtures_hf"
#define LM_CASE HF_DIR "/v4_lm_tanh_labels"  /* GPT2LMHeadModel, input_ids and labels */
#define BODY_CASE HF_DIR "/v4_body_posids_types_int32" /* GPT2Model */


/* Row (b,t) is left out when the query sees only padding: attention_mask is 0
 * at every key j <= t. Hugging Face gives such a row a mean of the values
 * (finfo.min, not -inf), tformer zeros; docs/hf-run.md. keep: (B*T). */
static int64_t kept_rows(const tf_tensor *mask, int64_t B, int64_t T, unsigned char *keep) {
    int64_t n = 0;
    for (int64_t b = 0; b < B; b++) {
        int seen = 0;
        for (int64_t t = 0; t < T; t++) {
            seen |= !mask || tf_u8(mask)[b * T + t] != 0;
            keep[b * T + t] = (unsigned char)seen;
            n += seen;
        }
    }
    return n;
}

/* An encoder (BERT): a padded query still sees its row's tokens, so every
 * row is compared (the fixtures give each row one token at least). */
static int bidirectional(const char *config_path) {
    size_t n;
    char *text = test_slurp(config_path, &n);
    int yes = text && strstr(text, "\"model_type\": \"bert\"") != NULL;
    free(text);
    return yes;
}

/* Relative L2 error of got against exp over the kept rows of (B,T,...). */
static double masked_err(const tf_tensor *got, const tf_tensor *exp, const unsigned char *keep, int64_t rows) {
    int64_t n = tf_numel(exp), w = rows ? n / rows : n;
    double d = 0, r = 0;
    for (int64_t i = 0; i < n; i++) {
        if (rows && !keep[i / w]) continue;
        float g = tf_f32(got)[i], x = tf_f32(exp)[i];
        if (g != g && x != x) continue; /* NaN where transformers gives NaN (a loss with every label ignored) */
        double e = (double)g - x;
        d += e * e;
        r += (double)tf_f32(exp)[i] * tf_f32(exp)[i];
    }
    if (d != d) return INFINITY;
    return r > 0 ? sqrt(d / r) : sqrt(d);
}

/* The input's attention mask as U8 (nonzero = token), NULL when absent. */
static tf_tensor *load_mask(const tf_st_file *in, tf_arena *a) {
    const tf_st_entry *e = tf_st_find(in, "attention_mask");
    tf_tensor *m = e ? tf_st_to_tensor(in, e, a) : NULL;
    if (!m || m->dtype == TF_DTYPE_U8) return m;
    tf_tensor *u = tf_tensor_alloc(a, TF_DTYPE_U8, m->ndim, m->shape, 0);
    if (!u) return NULL;
    for (int64_t i = 0; i < tf_numel(m); i++)
        tf_u8(u)[i] = m->dtype == TF_DTYPE_F32 ? tf_f32(m)[i] != 0 : tf_i32(m)[i] != 0;
    return u;
}

/* A fixture whose loss depended on a left-out row would compare HF's mean-of-values
 * logits: the generator sets those labels to -100. */
static int labels_avoid_dropped_rows(const tf_st_file *in, const unsigned char *keep, int64_t T, tf_arena *a) {
    const tf_st_entry *e = tf_st_find(in, "labels");
    tf_tensor *l = e ? tf_st_to_tensor(in, e, a) : NULL;
    for (int64_t i = 0; l && i < tf_numel(l); i++)
        if (i % T && !keep[i - 1] && tf_i32(l)[i] != -100) return 0;
    return 1;
}

/* Compare every field of expected with the output (which must hold exactly
 * those fields); the worst error goes to *worst. Returns the failures. */
static int compare_case(const char *dir, const char *out_path, double *worst) {
    char p[1200];
    snprintf(p, sizeof p, "%s/expected.safetensors", dir);
    tf_st_file *exp = tf_st_open(p), *got = tf_st_open(out_path);
    snprintf(p, sizeof p, "%s/input.safetensors", dir);
    tf_st_file *in = tf_st_open(p);
    tf_arena *a = tf_arena_new(0);
    int bad = !exp || !got || !in;
    const tf_st_entry *ids = in ? tf_st_find(in, "input_ids") : NULL;
    int64_t B = ids ? ids->shape[0] : 0, T = ids ? ids->shape[1] : 0;
    unsigned char *keep = calloc((size_t)(B * T) + 1, 1);
    tf_tensor *mask = in ? load_mask(in, a) : NULL;
    snprintf(p, sizeof p, "%s/config.json", dir);
    int64_t kept = bidirectional(p) ? (memset(keep, 1, (size_t)(B * T)), B * T) : kept_rows(mask, B, T, keep);
    if (!bad && (kept == 0 || !labels_avoid_dropped_rows(in, keep, T, a)))
        bad = fprintf(stderr, "    %s: fixture compares no row, or its loss reads a left-out row\n", dir) > 0;
    if (!bad && tf_st_count(got) != tf_st_count(exp))
        bad = fprintf(stderr, "    %s: %d output fields, expected %d\n", dir, tf_st_count(got), tf_st_count(exp)) > 0;
    for (int i = 0; !bad && i < tf_st_count(exp); i++) {
        const tf_st_entry *e = tf_st_entry_at(exp, i), *g = tf_st_find(got, e->name);
        tf_tensor *te = tf_st_to_tensor(exp, e, a), *tg = g ? tf_st_to_tensor(got, g, a) : NULL;
        int same = te && tg && te->ndim == tg->ndim;
        for (int d = 0; same && d < te->ndim; d++) same = te->shape[d] == tg->shape[d];
        if (!same) {
            bad += fprintf(stderr, "    %s: '%s' missing or of another shape\n", dir, e->name) > 0;
            continue;
        }
        int per_row = te->ndim == 3 && te->shape[0] == B && te->shape[1] == T;
        double err = masked_err(tg, te, keep, per_row ? B * T : 0);
        if (err > *worst) *worst = err;
        if (err > TOL) bad += fprintf(stderr, "    %s: '%s' relative error %.3g\n", dir, e->name, err) > 0;
    }
    free(keep);
    tf_arena_free(a);
    tf_st_close(exp);
    tf_st_close(got);
    tf_st_close(in);
    return bad;
}

TEST(hf_fixtures) {
    const char *dir = test_fixture_dir_or(HF_DIR);
    char *names[256];
    int n = test_dir_entries(dir, names, 256);
    CHECKF(n >= 0, "cannot open fixture directory %s", dir);
    char tmp[] = "/tmp/tformer_hf_XXXXXX", out[64], path[1200];
    CHECK(mkdtemp(tmp) != NULL);
    snprintf(out, sizeof out, "%s/out.safetensors", tmp);
    int failed = 0;
    double worst = 0;
    for (int i = 0; i < n; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        char input[1300];
        snprintf(input, sizeof input, "%s/input.safetensors", path);
        if (tf_hf_run(path, input, out, NULL)) {
            fprintf(stderr, "    %s: hf-run failed: %s\n", names[i], tf_error());
            failed++;
        } else {
            failed += compare_case(path, out, &worst) != 0;
        }
        unlink(out);
        free(names[i]);
    }
    rmdir(tmp);
    printf("    %d Hugging Face cases, %d failed, worst relative error %.2e\n", n, failed, worst);
    CHECKF(n > 0, "no cases in %s", dir);
    CHECKF(failed == 0, "%d of %d cases failed", failed, n);
}

/* ---------------------------------------------------------------- scratch folders */

/* The comparison notices a changed weight: the same case with one element of
 * the last block's MLP projection bias moved by 1e-3 fails the tolerance. */
TEST(hf_perturbed_weight_fails_the_comparison) {
    char tmp[] = "/tmp/tformer_hfp_XXXXXX", out[64];
    CHECK(mkdtemp(tmp) != NULL);
    snprintf(out, sizeof out, "%s/out.safetensors", tmp);
    double worst = 0;
    CHECK(test_copy_case(LM_CASE, tmp, NULL, NULL, NULL, 0, 0, NULL) == 0);
    CHECK(tf_hf_run(tmp, LM_CASE "/input.safetensors", out, NULL) == 0);
    int bad_same = compare_case(LM_CASE, out, &worst);
    double same = worst;
    CHECK(test_copy_case(LM_CASE, tmp, NULL, NULL, "transformer.h.1.mlp.c_proj.bias", 3, 1e-3f, NULL) == 0);
    CHECK(tf_hf_run(tmp, LM_CASE "/input.safetensors", out, NULL) == 0);
    worst = 0;
    fprintf(stderr, "    (the next lines are the expected failure of a perturbed copy)\n");
    int bad_moved = compare_case(LM_CASE, out, &worst);
    printf("    unchanged copy %.2e, one bias element + 1e-3: %.2e\n", same, worst);
    test_rm_rf(tmp);
    CHECK(bad_same == 0 && same <= TOL);
    CHECK(bad_moved > 0 && worst > TOL);
}

/* ---------------------------------------------------------------- bad folders and inputs */

#define IDS(v) {"input_ids", TF_ST_I64, 2, {2, 5}, v}
static const test_bad_case BAD[] = {
    {"unsupported architecture", NULL, "\"GPT2LMHeadModel\"", "\"BertForMultipleChoice\"", NULL, {IDS(1)},
     {"config.json", "\"BertForMultipleChoice\" is not supported", "supported: GPT2LMHeadModel, GPT2Model, BertModel"}},
    {"no architectures", NULL, "\"architectures\"", "\"archs\"", NULL, {IDS(1)},
     {"config.json", "no \"architectures\"", "GPT2LMHeadModel, GPT2Model"}},
    {"unimplemented config", NULL, "\"scale_attn_weights\": true", "\"scale_attn_weights\": false", NULL, {IDS(1)},
     {"config.json", "\"scale_attn_weights\" must be true"}},
    {"no config", "/nonexistent_hf_dir", NULL, NULL, NULL, {IDS(1)}, {"/nonexistent_hf_dir/config.json"}},
    {"no input file", LM_CASE, NULL, NULL, NULL, {{NULL, 0, 0, {0}, 0}}, {"in.safetensors"}},
    {"unknown input", LM_CASE, NULL, NULL, NULL, {IDS(1), {"input_idz", TF_ST_I64, 2, {2, 5}, 1}},
     {"'input_idz' is not an argument of GPT2LMHeadModel.forward()",
      "takes: input_ids, attention_mask, token_type_ids, position_ids, labels"}},
    {"unsupported input", LM_CASE, NULL, NULL, NULL, {IDS(1), {"past_key_values", TF_ST_F32, 2, {2, 5}, 0}},
     {"'past_key_values'", "is not supported by hf-run", "takes: input_ids"}},
    {"labels to GPT2Model", BODY_CASE, NULL, NULL, NULL, {IDS(1), {"labels", TF_ST_I64, 2, {2, 5}, 1}},
     {"'labels' is not an argument of GPT2Model.forward()", "position_ids"}},
    {"missing input_ids", LM_CASE, NULL, NULL, NULL, {{"attention_mask", TF_ST_I64, 2, {2, 5}, 1}},
     {"missing input 'input_ids'"}},
    {"float input_ids", LM_CASE, NULL, NULL, NULL, {{"input_ids", TF_ST_F32, 2, {2, 5}, 1}},
     {"'input_ids' is F32", "I64 or I32"}},
    {"mask of another length", LM_CASE, NULL, NULL, NULL, {IDS(1), {"attention_mask", TF_ST_I64, 2, {2, 4}, 1}},
     {"'attention_mask' has shape (2,4)", "T = 5 as in 'input_ids'"}},
    {"3-d input_ids", LM_CASE, NULL, NULL, NULL, {{"input_ids", TF_ST_I32, 3, {2, 5, 1}, 1}},
     {"'input_ids' has shape (2,5,1)", "expected (B,T)"}},
    {"id beyond the vocabulary", LM_CASE, NULL, NULL, NULL, {IDS(37)}, {"'input_ids' holds 37 at [0,0]", "vocab_size"}},
    {"negative id", LM_CASE, NULL, NULL, NULL, {IDS(-1)}, {"'input_ids' holds -1 at [0,0]"}},
    {"mask of 2", LM_CASE, NULL, NULL, NULL, {IDS(1), {"attention_mask", TF_ST_F32, 2, {2, 5}, 2}},
     {"'attention_mask' holds 2", "0 (padding) or 1"}},
    {"labels of -5", LM_CASE, NULL, NULL, NULL, {IDS(1), {"labels", TF_ST_I64, 2, {2, 5}, -5}},
     {"'labels' holds -5", "-100"}},
    {"position beyond n_positions", LM_CASE, NULL, NULL, NULL, {IDS(1), {"position_ids", TF_ST_I64, 2, {2, 5}, 16}},
     {"'position_ids' holds 16", "n_positions"}},
    {"longer than n_positions", LM_CASE, NULL, NULL, NULL, {{"input_ids", TF_ST_I64, 2, {1, 17}, 1}},
     {"17 positions", "n_positions is 16"}},
};

TEST(hf_run_bad_input_is_a_clear_error) {
    const size_t n = sizeof BAD / sizeof BAD[0];
    int bad = test_hf_run_bad_cases(BAD, n, LM_CASE, "HF_VERBOSE");
    CHECKF(bad == 0, "%d of %zu bad inputs were not a clear error", bad, n);
}

/* Weights not in model.safetensors: a sharded folder (save_pretrained's
 * max_shard_size) or PyTorch's pickle only; each named, no output written. */
TEST(hf_run_weights_not_in_one_file_is_a_clear_error) {
    char tmp[] = "/tmp/tformer_hfw_XXXXXX", w[64], shard[80], index[80], bin[64], out[64];
    CHECK(mkdtemp(tmp) != NULL);
    snprintf(w, sizeof w, "%s/model.safetensors", tmp);
    snprintf(shard, sizeof shard, "%s/model-00001-of-00001.safetensors", tmp);
    snprintf(index, sizeof index, "%s/model.safetensors.index.json", tmp);
    snprintf(bin, sizeof bin, "%s/pytorch_model.bin", tmp);
    snprintf(out, sizeof out, "%s/out.safetensors", tmp);
    /* a sharded folder is read (tests/fixtures_hf/v4_*_sharded*); one whose index names a shard that is not
     * there is an error naming the shard */
    static const char INDEX[] = "{\"metadata\": {}, \"weight_map\": {\"transformer.wte.weight\": "
                                "\"model-00002-of-00002.safetensors\"}}";
    CHECK(test_copy_case(LM_CASE, tmp, NULL, NULL, NULL, 0, 0, NULL) == 0);
    CHECK(rename(w, shard) == 0 && test_write_file(index, INDEX, sizeof INDEX - 1) == 0);
    int sharded = tf_hf_run(tmp, LM_CASE "/input.safetensors", out, NULL);
    int sharded_named = strstr(tf_error(), "model-00002-of-00002.safetensors") != NULL;
    if (!sharded_named) fprintf(stderr, "    sharded: %s\n", sharded ? tf_error() : "ran");
    CHECK(unlink(index) == 0 && unlink(shard) == 0 && test_write_file(bin, "PK", 2) == 0);
    int pickled = tf_hf_run(tmp, LM_CASE "/input.safetensors", out, NULL);
    int pickle_named = strstr(tf_error(), "only pytorch_model.bin") != NULL;
    if (!pickle_named) fprintf(stderr, "    pytorch_model.bin: %s\n", pickled ? tf_error() : "ran");
    int wrote = access(out, F_OK) == 0;
    test_rm_rf(tmp);
    CHECK(sharded && sharded_named);
    CHECK(pickled && pickle_named);
    CHECK(!wrote);
}

/* Labels that are all -100: transformers' loss is a mean over nothing, NaN. */
TEST(hf_run_loss_without_labels_is_nan) {
    char tmp[] = "/tmp/tformer_hfn_XXXXXX", in[64], out[64];
    CHECK(mkdtemp(tmp) != NULL);
    snprintf(in, sizeof in, "%s/in.safetensors", tmp);
    snprintf(out, sizeof out, "%s/out.safetensors", tmp);
    const test_input specs[3] = {IDS(1), {"labels", TF_ST_I64, 2, {2, 5}, -100}};
    CHECK(test_write_inputs(specs, 3, in) == 0);
    int rc = tf_hf_run(LM_CASE, in, out, NULL);
    tf_st_file *f = rc ? NULL : tf_st_open(out);
    const tf_st_entry *e = f ? tf_st_find(f, "loss") : NULL;
    tf_arena *a = tf_arena_new(0);
    tf_tensor *loss = e ? tf_st_to_tensor(f, e, a) : NULL;
    float v = loss ? tf_f32(loss)[0] : 0.0f;
    tf_arena_free(a);
    tf_st_close(f);
    test_rm_rf(tmp);
    CHECK(rc == 0 && loss != NULL);
    CHECKF(isnan(v), "loss %g, expected NaN", v);
}
