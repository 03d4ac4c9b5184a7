/* Field tables (config.h): defaults, checks, JSON both ways, text from flags,
 * aliases and signatures on a table with every type, then the library's own
 * tables (trainer, language-model task, GPT, Hugging Face's config.json,
 * torch-run's configs). Every check is also shown to fail. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "interop/torch_run.h"
#include "test.h"

typedef enum { RED, GREEN, BLUE } color;

typedef struct {
    int depth;
    float eps;
} inner;

typedef struct {
    int count;
    int64_t big;
    uint64_t seed;
    float ratio;
    int flag;
    color hue;
    char name[8];
    int width; /* null in JSON means 0 */
    inner sub;
} demo;

static const char *const COLORS[] = {"red", "green|verdant", "blue", NULL};

static const tf_field INNER_ROWS[] = {
    TF_FIELD_ROW(inner, depth, TF_FIELD_INT, "depth", "3", "[1,10]", NULL, "levels", TF_FIELD_SIGNATURE, NULL),
    TF_FIELD_ROW(inner, eps, TF_FIELD_FLOAT, "eps", "1e-5", "(0,inf)", NULL, "epsilon", 0, "epsilon|tol"),
};
static const tf_field_table INNER = {"inner", INNER_ROWS, 2};

#define R(m, type, def, range, choices, flags, alias) TF_FIELD_ROW(demo, m, type, #m, def, range, choices, #m, flags, alias)
static const tf_field DEMO_ROWS[] = {
    R(count, TF_FIELD_INT, "7", "[1,inf)", NULL, TF_FIELD_SIGNATURE, "n_count"),
    R(big, TF_FIELD_INT64, "-5", NULL, NULL, 0, NULL),
    R(seed, TF_FIELD_UINT64, "1337", NULL, NULL, 0, NULL),
    R(ratio, TF_FIELD_FLOAT, "0.25", "(0,1)", NULL, 0, NULL),
    R(flag, TF_FIELD_BOOL, "true", NULL, NULL, TF_FIELD_SIGNATURE, NULL),
    R(hue, TF_FIELD_ENUM, "green", NULL, COLORS, 0, NULL),
    R(name, TF_FIELD_STRING, "abc", NULL, NULL, 0, NULL),
    R(width, TF_FIELD_INT, "0", "[0,inf)", NULL, TF_FIELD_NULL_ZERO, NULL),
    TF_FIELD_SUB(demo, sub, INNER),
};
#undef R
static const tf_field_table DEMO = {"demo", DEMO_ROWS, (int)(sizeof DEMO_ROWS / sizeof DEMO_ROWS[0])};

static demo demo_default(void) {
    demo d;
    memset(&d, 0xAB, sizeof d);
    tf_fields f = {&DEMO, &d};
    tf_fields_defaults(&f, 1);
    return d;
}

/* Load JSON text into d; returns the status (tf_error holds the message). */
static int load_json(demo *d, const char *text, int lenient) {
    const char *path = "/tmp/tformer_test_config.json";
    tf_fields f = {&DEMO, d};
    if (test_write_text(path, text)) return -2;
    int rc = tf_fields_load(&f, 1, path, lenient);
    unlink(path);
    return rc;
}

TEST(config_defaults_and_every_type) {
    demo d = demo_default();
    CHECK(d.count == 7 && d.big == -5 && d.seed == 1337 && d.ratio == 0.25f && d.flag == 1 && d.hue == GREEN);
    CHECK(!strcmp(d.name, "abc") && d.width == 0 && d.sub.depth == 3 && d.sub.eps == 1e-5f);
    tf_fields f = {&DEMO, &d};
    CHECK(tf_fields_check(&f, 1) == 0);
    char v[64];
    void *obj;
    const tf_field *r = tf_fields_find(&f, 1, "hue", NULL);
    CHECK(r && tf_fields_format(r, &d, v, sizeof v) == 5 && !strcmp(v, "green"));
    CHECK((r = tf_fields_find(&f, 1, "eps", &obj)) && obj == &d.sub);
    CHECK(tf_fields_format(r, obj, v, sizeof v) > 0 && !strcmp(v, "1e-05"));
    CHECK(tf_fields_format(r, obj, v, 3) == -1); /* too small a buffer */
    /* text as flags give it: every type, '-' for '_', aliases */
    CHECK(tf_fields_set(&f, 1, "--count", "12") == 0 && d.count == 12);
    CHECK(tf_fields_set(&f, 1, "--big", "-9000000000000") == 0 && d.big == -9000000000000LL);
    CHECK(tf_fields_set(&f, 1, "--seed", "18446744073709551615") == 0 && d.seed == UINT64_MAX);
    CHECK(tf_fields_set(&f, 1, "--ratio", "0.5") == 0 && d.ratio == 0.5f);
    CHECK(tf_fields_set(&f, 1, "--flag", "false") == 0 && d.flag == 0);
    CHECK(tf_fields_set(&f, 1, "--hue", "verdant") == 0 && d.hue == GREEN); /* an alternative name */
    CHECK(tf_fields_set(&f, 1, "--hue", "blue") == 0 && d.hue == BLUE);
    CHECK(tf_fields_set(&f, 1, "--name", "xyz1234") == 0 && !strcmp(d.name, "xyz1234"));
    CHECK(tf_fields_set(&f, 1, "--n-count", "3") == 0 && d.count == 3); /* an alias as a flag */
    CHECK(tf_fields_set(&f, 1, "--tol", "0.5") == 0 && d.sub.eps == 0.5f);
    CHECK(tf_fields_set(&f, 1, "depth", "10") == 0 && d.sub.depth == 10); /* a key */
    CHECK(tf_fields_set(&f, 1, "n-count", "3") != 0); /* only flags map '-' to '_' */
    CHECK(tf_fields_check(&f, 1) == 0);
}

TEST(config_bad_text_names_the_flag_and_what_it_expects) {
    demo d = demo_default();
    tf_fields f = {&DEMO, &d};
    static const struct {
        const char *flag, *text, *expect;
    } bad[] = {
        {"--count", "x", "--count expects an integer in [1,inf), got 'x'"},
        {"--count", "12abc", "got '12abc'"},
        {"--count", " 5", "got ' 5'"},
        {"--count", "", "got ''"},
        {"--count", "0", "in [1,inf)"},
        {"--count", "3000000000", "an integer"},
        {"--big", "99999999999999999999", "an integer"},
        {"--seed", "-1", "a non-negative integer"},
        {"--ratio", "0", "a number in (0,1), got '0'"},
        {"--ratio", "1", "(0,1)"},
        {"--ratio", "nan", "(0,1)"},
        {"--ratio", "0.5x", "got '0.5x'"},
        {"--flag", "yes", "true or false"},
        {"--hue", "purple", "one of red, green/verdant, blue, got 'purple'"},
        {"--name", "12345678", "text of at most 7 bytes"},
        {"--depth", "11", "[1,10]"},
        {"--eps", "0", "(0,inf)"},
        {"--eps", "1e39", "got '1e39'"}, /* beyond float */
        {"--nope", "1", "--nope: no such field"},
    };
    demo before = d;
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        CHECKF(tf_fields_set(&f, 1, bad[i].flag, bad[i].text) == -1, "%s %s accepted", bad[i].flag, bad[i].text);
        CHECKF(strstr(tf_error(), bad[i].expect), "%s %s: '%s' lacks '%s'", bad[i].flag, bad[i].text, tf_error(), bad[i].expect);
    }
    CHECK(!memcmp(&before, &d, sizeof d)); /* a refused value changes nothing */
}

TEST(config_check_names_the_field_and_range) {
    static const struct {
        size_t off;
        int value;
        const char *expect;
    } bad[] = {
        {offsetof(demo, count), 0, "count = 0 is outside [1,inf)"},
        {offsetof(demo, flag), 2, "flag = 2 is not true or false"},
        {offsetof(demo, hue), 3, "hue = 3 is not one of red, green/verdant, blue"},
        {offsetof(demo, width), -1, "width = -1 is outside [0,inf)"},
        {offsetof(demo, sub.depth), 11, "depth = 11 is outside [1,10]"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        demo d = demo_default();
        tf_fields f = {&DEMO, &d};
        *(int *)((char *)&d + bad[i].off) = bad[i].value;
        CHECKF(tf_fields_check(&f, 1) == -1 && strstr(tf_error(), bad[i].expect), "case %zu: '%s'", i, tf_error());
    }
    demo d = demo_default();
    tf_fields f = {&DEMO, &d};
    d.ratio = 1.0f;
    CHECK(tf_fields_check(&f, 1) == -1 && strstr(tf_error(), "ratio = 1 is outside (0,1)"));
    d = demo_default(), d.sub.eps = NAN;
    CHECK(tf_fields_check(&f, 1) == -1 && strstr(tf_error(), "eps = nan is outside (0,inf)"));
    d = demo_default(), memset(d.name, 'x', sizeof d.name);
    CHECK(tf_fields_check(&f, 1) == -1 && strstr(tf_error(), "name is not terminated"));
}

TEST(config_json_round_trip) {
    const char *path = "/tmp/tformer_test_config_rt.json";
    demo d = demo_default(), e;
    d.big = -((int64_t)1 << 60), d.seed = UINT64_MAX, d.ratio = 0.1f, d.hue = BLUE, d.width = 5, d.sub.eps = 3e-7f;
    snprintf(d.name, sizeof d.name, "q\"\\z");
    tf_fields f = {&DEMO, &d}, g = {&DEMO, &e};
    CHECK(tf_fields_save(&f, 1, path) == 0);
    memset(&e, 0, sizeof e);
    CHECK(tf_fields_load(&g, 1, path, 0) == 0);
    CHECK(d.count == e.count && d.big == e.big && d.seed == e.seed && d.ratio == e.ratio && d.flag == e.flag);
    CHECK(d.hue == e.hue && !strcmp(d.name, e.name) && d.width == e.width && d.sub.depth == e.sub.depth && d.sub.eps == e.sub.eps);
    /* table order, floats %.9g, integers beyond 2^53 as strings, enums by name */
    char *j = tf_fields_json(&f, 1);
    CHECKF(j && !strcmp(j, "{\"count\":7,\"big\":\"-1152921504606846976\",\"seed\":\"18446744073709551615\","
                           "\"ratio\":0.100000001,\"flag\":true,\"hue\":\"blue\",\"name\":\"q\\\"\\\\z\","
                           "\"width\":5,\"depth\":3,\"eps\":3.00000011e-07}"), "%s", j);
    free(j);
    d.width = 0; /* a null-zero row writes 0 as null */
    CHECK((j = tf_fields_json(&f, 1)) && strstr(j, "\"width\":null"));
    free(j);
    d.ratio = INFINITY;
    CHECK(!tf_fields_json(&f, 1) && strstr(tf_error(), "ratio"));
    unlink(path);
}

TEST(config_json_errors_name_the_key_and_file) {
    demo d = demo_default();
    static const struct {
        const char *json, *expect;
    } bad[] = {
        {"{\"count\": 3, \"colour\": 1}", "tformer_test_config.json: unknown key \"colour\""},
        {"{\"count\": 3.5}", "\"count\" expects an integer in [1,inf), got '3.5'"},
        {"{\"count\": 1e300}", "\"count\" expects an integer"},
        {"{\"count\": 12, \"seed\": 9007199254740993}", "\"seed\": 9007199254740992 is too large for a JSON number"},
        {"{\"count\": \"12\"}", "\"count\" expects an integer in [1,inf), got \"12\""}, /* 32-bit: never a string */
        {"{\"count\": 3, \"count\": 4}", "the key \"count\" appears twice"},
        {"{\"count\": true}", "\"count\" expects an integer in [1,inf), got true"},
        {"{\"count\": null}", "got null"},
        {"{\"ratio\": \"0.5\"}", "\"ratio\" expects a number in (0,1), got \"0.5\""},
        {"{\"flag\": 1}", "\"flag\" expects true or false, got 1"},
        {"{\"hue\": \"pink\"}", "\"hue\" expects one of red, green/verdant, blue, got 'pink'"},
        {"{\"name\": [1]}", "got [1]"},
        {"{\"depth\": 0}", "\"depth\" expects an integer in [1,10], got '0'"},
        {"[1, 2]", "not a JSON object"},
        {"{\"count\": ", "not valid JSON"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        CHECKF(load_json(&d, bad[i].json, 0) == -1, "case %zu accepted", i);
        CHECKF(strstr(tf_error(), bad[i].expect), "case %zu: '%s' lacks '%s'", i, tf_error(), bad[i].expect);
    }
    /* lenient: unknown keys ignored, known ones still checked */
    d = demo_default();
    CHECK(load_json(&d, "{\"count\": 4, \"colour\": 1, \"architectures\": [\"X\"]}", 1) == 0 && d.count == 4);
    CHECK(load_json(&d, "{\"count\": 0, \"colour\": 1}", 1) == -1 && strstr(tf_error(), "\"count\""));
    /* strings for integers, null for a null-zero row, aliases as keys */
    CHECK(load_json(&d, "{\"seed\": \"123456789012345678\", \"width\": null, \"n_count\": 9, \"tol\": 0.5}", 0) == 0);
    CHECK(d.seed == 123456789012345678ULL && d.width == 0 && d.count == 9 && d.sub.eps == 0.5f);
}

static const tf_field REQUIRED_ROWS[] = {
    TF_FIELD_ROW(inner, depth, TF_FIELD_INT, "depth", NULL, "[1,10]", NULL, "levels", TF_FIELD_REQUIRED, "levels"),
};
static const tf_field_table REQUIRED = {"required", REQUIRED_ROWS, 1};

TEST(config_required_keys_and_several_tables) {
    const char *path = "/tmp/tformer_test_config_req.json";
    inner in = {0, 0};
    demo d = demo_default();
    tf_fields f[2] = {{&DEMO, &d}, {&REQUIRED, &in}};
    CHECK(test_write_text(path, "{\"count\": 2}") == 0);
    CHECK(tf_fields_load(&f[1], 1, path, 1) == -1 && strstr(tf_error(), "missing required key \"depth\""));
    CHECK(test_write_text(path, "{\"levels\": 4}") == 0); /* an alias counts */
    CHECK(tf_fields_load(&f[1], 1, path, 0) == 0 && in.depth == 4);
    /* one object fills two structs; the first table owning a key takes it */
    CHECK(test_write_text(path, "{\"count\": 2, \"levels\": 5, \"ratio\": 0.75}") == 0);
    CHECK(tf_fields_load(f, 2, path, 0) == 0 && d.count == 2 && d.ratio == 0.75f && in.depth == 5);
    CHECK(tf_fields_set(f, 2, "--levels", "6") == 0 && in.depth == 6);
    unlink(path);
}

TEST(config_signature_follows_the_flagged_rows) {
    demo d = demo_default();
    tf_fields f = {&DEMO, &d};
    char a[256], b[256];
    CHECK(tf_fields_signature(&f, 1, a, sizeof a) == 0 && !strcmp(a, "count=7 flag=true depth=3"));
    d.ratio = 0.5f, d.seed = 1, d.sub.eps = 0.1f, d.hue = RED; /* not flagged: the same signature */
    CHECK(tf_fields_signature(&f, 1, b, sizeof b) == 0 && !strcmp(a, b));
    d.sub.depth = 4; /* flagged: another one */
    CHECK(tf_fields_signature(&f, 1, b, sizeof b) == 0 && strcmp(a, b));
    d = demo_default(), d.flag = 0;
    CHECK(tf_fields_signature(&f, 1, b, sizeof b) == 0 && strcmp(a, b));
    CHECK(tf_fields_signature(&f, 1, b, 10) == -1);
}

/* ---------------------------------------------------------------- the library's tables */

TEST(config_training_tables) {
    tf_train_config t = tf_train_config_default();
    tf_lm_config lm = tf_lm_config_default();
    /* nanoGPT's character-level settings, to the bit */
    CHECK(t.steps == 2000 && t.batch == 12 && t.accum == 1 && t.lr == 1e-3f && t.min_lr == 1e-4f && t.warmup == 100);
    CHECK(t.schedule == TF_SCHEDULE_COSINE && t.weight_decay == 0.1f && t.beta1 == 0.9f && t.beta2 == 0.99f);
    CHECK(t.grad_clip == 1.0f && t.eval_every == 250 && t.eval_batches == 200 && t.checkpoint_every == 500 && t.seed == 1337);
    CHECK(lm.val_fraction == 0.1f && lm.model.vocab_size == 0 && lm.model.context == 64 && lm.model.n_layer == 4);
    CHECK(lm.model.n_head == 4 && lm.model.d_model == 128 && lm.model.d_ff == 0 && lm.model.dropout == 0.0f);
    CHECK(lm.model.pos == TF_POS_LEARNED && lm.model.norm_first == 1 && lm.model.activation == TF_ACT_GELU_TANH);
    CHECK(lm.model.tied == 1 && lm.model.norm_eps == 1e-5f);
    CHECK(tf_train_config_check(&t) == 0);
    CHECK(tf_lm_config_check(&lm) == -1 && strstr(tf_error(), "vocab_size")); /* set from the tokenizer */
    lm.model.vocab_size = 65;
    CHECK(tf_lm_config_check(&lm) == 0);
    lm.model.n_head = 5;
    CHECK(tf_lm_config_check(&lm) == -1 && strstr(tf_error(), "d_model 128 is not a multiple of n_head 5"));
    lm = tf_lm_config_default(), lm.val_fraction = 1.0f;
    CHECK(tf_lm_config_check(&lm) == -1 && strstr(tf_error(), "val_fraction = 1 is outside (0,1)"));
    t.beta2 = 1.0f;
    CHECK(tf_train_config_check(&t) == -1 && strstr(tf_error(), "beta2 = 1 is outside [0,1)"));
    /* one file for both; the old GPT keys still read */
    const char *path = "/tmp/tformer_test_train.json";
    t = tf_train_config_default(), lm = tf_lm_config_default();
    tf_fields f[2] = {{&tf_train_config_table, &t}, {&tf_lm_config_table, &lm}};
    CHECK(test_write_text(path, "{\"steps\": 5, \"schedule\": \"inverse_sqrt\", \"val_fraction\": 0.2, \"n_embd\": 64,"
                           " \"n_inner\": 100, \"layer_norm_eps\": 1e-3, \"pos\": \"sinusoidal\", \"norm_first\": false}") == 0);
    CHECK(tf_fields_load(f, 2, path, 0) == 0 && t.steps == 5 && t.schedule == TF_SCHEDULE_INVERSE_SQRT);
    CHECK(lm.val_fraction == 0.2f && lm.model.d_model == 64 && lm.model.d_ff == 100 && lm.model.norm_eps == 1e-3f);
    CHECK(lm.model.pos == TF_POS_SINUSOIDAL && lm.model.norm_first == 0);
    CHECK(test_write_text(path, "{\"steps\": 5, \"n_embed\": 64}") == 0);
    CHECK(tf_fields_load(f, 2, path, 0) == -1 && strstr(tf_error(), "unknown key \"n_embed\""));
    CHECK(tf_fields_set(f, 2, "--width", "32") == 0 && tf_fields_set(f, 2, "--layers", "2") == 0);
    CHECK(lm.model.d_model == 32 && lm.model.n_layer == 2);
    unlink(path);
    /* the model's signature: its shape, not its dropout */
    char a[512], b[512];
    tf_fields m = {&tf_gpt_config_table, &lm.model};
    CHECK(tf_fields_signature(&m, 1, a, sizeof a) == 0 && strstr(a, "n_layer=2") && strstr(a, "pos=sinusoidal"));
    lm.model.dropout = 0.3f;
    CHECK(tf_fields_signature(&m, 1, b, sizeof b) == 0 && !strcmp(a, b));
    lm.model.n_layer = 3;
    CHECK(tf_fields_signature(&m, 1, b, sizeof b) == 0 && strcmp(a, b));
}

TEST(config_lr_schedules) {
    /* warmup: lr * s / warmup at the 1-based step s, for every kind */
    for (int k = 0; k < 3; k++) CHECK(tf_lr_schedule((tf_schedule)k, 4, 10, 100, 1.0f, 0.1f) == 0.5f);
    CHECK(tf_lr_schedule(TF_SCHEDULE_COSINE, 10, 10, 100, 1.0f, 0.1f) == 1.0f);
    CHECK(fabsf(tf_lr_schedule(TF_SCHEDULE_COSINE, 55, 10, 100, 1.0f, 0.1f) - 0.55f) < 1e-6f);
    CHECK(tf_lr_schedule(TF_SCHEDULE_COSINE, 100, 10, 100, 1.0f, 0.1f) == 0.1f);
    CHECK(tf_lr_schedule(TF_SCHEDULE_CONSTANT, 99, 10, 100, 1.0f, 0.1f) == 1.0f);
    /* inverse_sqrt: lr * sqrt(warmup / s); the paper's formula scaled to peak at lr */
    for (int64_t step = 9; step < 200; step += 17) {
        double s = (double)(step + 1), w = 10, paper = fmin(pow(s, -0.5), s * pow(w, -1.5)) / pow(w, -0.5);
        float got = tf_lr_schedule(TF_SCHEDULE_INVERSE_SQRT, step, 10, 100, 2.0f, 0.1f);
        CHECKF(fabs(got - 2.0 * paper) <= 1e-6 * paper, "step %lld: %g, the paper's %g", (long long)step, got, 2.0 * paper);
    }
    CHECK(tf_lr_schedule(TF_SCHEDULE_INVERSE_SQRT, 39, 10, 100, 1.0f, 0.1f) == 0.5f);
    CHECK(tf_lr_schedule(TF_SCHEDULE_INVERSE_SQRT, 3, 0, 100, 1.0f, 0.1f) == 0.5f); /* no warmup: lr / sqrt(s) */
}

TEST(config_hugging_face_config_json) {
    char dir[64], path[96], cmd[256];
    snprintf(dir, sizeof dir, "/tmp/tformer_test_hfcfg_%d", (int)getpid());
    snprintf(path, sizeof path, "%s/config.json", dir);
    tf_gpt_config c = tf_gpt_config_default(11, 8, 1, 2, 8);
    c.d_ff = 12, c.activation = TF_ACT_RELU, c.norm_eps = 1e-3f, c.tied = 0, c.pos = TF_POS_SINUSOIDAL, c.norm_first = 0;
    tf_gpt *m = tf_gpt_new(&c, 3);
    CHECK(m && tf_gpt_save(m, dir) == 0);
    tf_gpt_free(m);
    size_t n;
    char *text = test_slurp(path, &n);
    CHECKF(text && strstr(text, "\"n_embd\":\t8") && strstr(text, "\"activation_function\":\t\"relu\"") &&
               strstr(text, "\"tformer_position\":\t\"sinusoidal\"") && strstr(text, "\"layer_norm_epsilon\":\t0.00100000005"),
           "%s", text);
    free(text);
    CHECK((m = tf_gpt_load(dir)) && !memcmp(&m->cfg, &c, sizeof c));
    tf_gpt_free(m);
    /* Hugging Face's own keys: null n_inner, the other tanh GELU name, many unknown keys */
    c = tf_gpt_config_default(11, 8, 1, 2, 8);
    m = tf_gpt_new(&c, 3);
    CHECK(m && tf_gpt_save(m, dir) == 0);
    tf_gpt_free(m);
    CHECK(test_write_text(path, "{\"model_type\": \"gpt2\", \"vocab_size\": 11, \"n_positions\": 8, \"n_embd\": 8, \"n_layer\": 1,"
                           " \"n_head\": 2, \"n_inner\": null, \"activation_function\": \"gelu_pytorch_tanh\","
                           " \"resid_pdrop\": 0.1, \"task_specific_params\": {\"x\": 1}}") == 0);
    CHECK((m = tf_gpt_load(dir)) && !memcmp(&m->cfg, &c, sizeof c));
    tf_gpt_free(m);
    CHECK(test_write_text(path, "{\"vocab_size\": 11, \"n_positions\": 8, \"n_layer\": 1, \"n_head\": 2}") == 0);
    CHECK(!tf_gpt_load(dir) && strstr(tf_error(), "config.json: missing required key \"n_embd\""));
    CHECK(test_write_text(path, "{\"vocab_size\": 11, \"n_positions\": 8, \"n_embd\": 8, \"n_layer\": 1, \"n_head\": 3}") == 0);
    CHECK(!tf_gpt_load(dir) && strstr(tf_error(), "config.json: d_model 8 is not a multiple of n_head 3"));
    CHECK(test_write_text(path, "{\"vocab_size\": 11, \"n_positions\": 8, \"n_embd\": 8, \"n_layer\": 1, \"n_head\": 2,"
                           " \"activation_function\": \"gelu_fast\"}") == 0);
    CHECK(!tf_gpt_load(dir) && strstr(tf_error(), "\"activation_function\" expects one of relu, gelu, "
                                                     "gelu_new/gelu_pytorch_tanh, silu/swish, quick_gelu"));
    snprintf(cmd, sizeof cmd, "rm -r %s", dir);
    CHECK(system(cmd) == 0);
}

TEST(config_torch_run_tables) {
    const char *path = "/tmp/tformer_test_torch.json", *log_path = "/tmp/tformer_test_torch.log";
    tr_config c;
    CHECK(test_write_text(path, "{\"module\": \"Transformer\", \"dim_feedforward\": 16, \"batch_first\": true}") == 0);
    CHECK(tr_config_load(path, &c, NULL) == 0 && c.kind == TR_TRANSFORMER && c.batch_first == 1);
    CHECK(c.layer.d_model == 512 && c.layer.n_head == 8 && c.layer.d_ff == 16 && c.num_encoder_layers == 6);
    CHECK(c.num_decoder_layers == 6 && c.layer.activation == TF_ACT_RELU && c.layer.norm_eps == 1e-5f && !c.layer.norm_first);
    CHECK(c.layer.bias == 1 && c.layer.dropout == 0.0f); /* PyTorch's dropout is accepted and not used */
    CHECK(test_write_text(path, "{\"module\": \"MultiheadAttention\", \"embed_dim\": 6, \"num_heads\": 2, \"vdim\": 3,"
                           " \"kdim\": null, \"device\": null, \"dtype\": \"float32\", \"frobnicate\": 1}") == 0);
    FILE *log = fopen(log_path, "w");
    CHECK(log && tr_config_load(path, &c, log) == 0 && c.mha.d_model == 6 && c.mha.kdim == 6 && c.mha.vdim == 3);
    fclose(log);
    size_t n;
    char *text = test_slurp(log_path, &n);
    CHECK(text && strstr(text, "unknown key \"frobnicate\" for MultiheadAttention ignored") && !strstr(text, "dtype"));
    free(text);
    CHECK(test_write_text(path, "{\"module\": \"TransformerEncoder\", \"d_model\": 4, \"nhead\": 2}") == 0);
    CHECK(tr_config_load(path, &c, NULL) == -1 && strstr(tf_error(), "missing required key \"num_layers\""));
    CHECK(test_write_text(path, "{\"module\": \"TransformerEncoderLayer\", \"d_model\": 4, \"nhead\": 2, \"activation\": \"tanh\"}") == 0);
    CHECK(tr_config_load(path, &c, NULL) == -1 && strstr(tf_error(), "\"activation\" expects one of relu, gelu"));
    CHECK(test_write_text(path, "{\"module\": \"MultiheadAttention\", \"embed_dim\": 6, \"num_heads\": 2, \"add_zero_attn\": true}") == 0);
    CHECK(tr_config_load(path, &c, NULL) == -1 && strstr(tf_error(), "\"add_zero_attn\" is not supported"));
    unlink(path), unlink(log_path);
}

/* got (a _default() of table t) as a JSON file equals the table's defaults (tf_fields_defaults on zeros). */
static int holds_table_defaults(const tf_field_table *t, const void *got, size_t size) {
    void *want = calloc(1, size);
    char pa[] = "/tmp/tformer_cfg_got_XXXXXX", pb[] = "/tmp/tformer_cfg_want_XXXXXX";
    tf_fields a = {t, (void *)got}, b = {t, want};
    int same = want && !test_temp_file(pa) && !test_temp_file(pb) && !tf_fields_defaults(&b, 1) &&
               !tf_fields_save(&a, 1, pa) && !tf_fields_save(&b, 1, pb) && test_same_bytes(pa, pb);
    unlink(pa), unlink(pb);
    free(want);
    return same;
}

/* Every task's _default() (TF_FIELDS_DEFAULT_FN: tf_fields_reset) is its table's defaults. */
TEST(config_task_defaults_are_their_tables) {
#define SAME(T, fn, table)                                                                                         \
    do {                                                                                                           \
        T got = fn();                                                                                              \
        CHECKF(holds_table_defaults(&table, &got, sizeof got), #fn "() differs from " #table "'s defaults");      \
    } while (0)
    SAME(tf_bert_pretrain_config, tf_bert_pretrain_config_default, tf_bert_pretrain_config_table);
    SAME(tf_finetune_config, tf_finetune_config_default, tf_finetune_config_table);
    SAME(tf_listops_task_config, tf_listops_task_config_default, tf_listops_task_config_table);
    SAME(tf_continual_task_config, tf_continual_task_config_default, tf_continual_task_config_table);
    SAME(tf_vit_task_config, tf_vit_task_config_default, tf_vit_task_config_table);
    SAME(tf_swin_task_config, tf_swin_task_config_default, tf_swin_task_config_table);
    SAME(tf_vivit_task_config, tf_vivit_task_config_default, tf_vivit_task_config_table);
    SAME(tf_seq2seq_task_config, tf_seq2seq_task_config_default, tf_seq2seq_task_config_table);
    SAME(tf_rnn_seq2seq_task_config, tf_rnn_seq2seq_task_config_default, tf_rnn_seq2seq_task_config_table);
    SAME(tf_caption_task_config, tf_caption_task_config_default, tf_caption_task_config_table);
    SAME(tf_caption_config, tf_caption_config_default, tf_caption_config_table);
#undef SAME
    /* ImageGPT's differs from its table on purpose: ImageGPTConfig's norm, head and activation */
    tf_imagegpt_task_config g = tf_imagegpt_task_config_default();
    CHECK(!holds_table_defaults(&tf_imagegpt_task_config_table, &g, sizeof g));
}
