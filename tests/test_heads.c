/* The output heads against Hugging Face's own modules (fixtures from
 * tests/ref/gen_heads_fixtures.py, computed in float64): outputs to 1e-5 and
 * gradients (hidden states and every parameter) to 1e-4 relative L2 error;
 * every parameter is shown to matter (perturbing it fails the comparison);
 * shape and registration errors name the head; the tied LM head is GPT's product. */
#include <stdlib.h>
#include <string.h>

#include "test.h"
#include "util/util.h"

#define FXH "tests/fixtures_heads"
#define TOL_FORWARD 1e-5
#define TOL_GRAD 1e-4
#define MAX_OUT 4

/* Every head a case may use, registered under the Hugging Face model's names. */
typedef struct {
    tf_params *ps;
    tf_tensor *table; /* the tied embedding table, registered as the embedding would */
    tf_pooler pooler;
    tf_mlm_head mlm;
    tf_lm_head lm;
    tf_classifier cls;
    tf_span_head span;
} heads;

typedef struct {
    const char *name;
    tf_tensor *t;
} named;

static int act_from_name(const char *s) {
    if (!strcmp(s, "gelu")) return TF_ACT_GELU;
    if (!strcmp(s, "gelu_new")) return TF_ACT_GELU_TANH;
    if (!strcmp(s, "relu")) return TF_ACT_RELU;
    return -1;
}

static const char *json_str(const cJSON *j, const char *k) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, k);
    return cJSON_IsString(v) ? v->valuestring : "";
}

static double json_num(const cJSON *j, const char *k) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, k);
    return cJSON_IsNumber(v) ? v->valuedouble : 0;
}

/* BERT's MLM head (cls.predictions), tied to the word embeddings or with its own decoder. */
static int register_mlm(heads *m, const cJSON *cfg, int64_t d, int64_t V) {
    int tied = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(cfg, "tied"));
    tf_mlm_head_names names = {"cls.predictions.transform.dense", "cls.predictions.transform.LayerNorm",
                               tied ? NULL : "cls.predictions.decoder.weight", "cls.predictions.bias"};
    tf_mlm_head_config mc = {d, V, act_from_name(json_str(cfg, "hidden_act")),
                             (float)json_num(cfg, "layer_norm_eps"), TF_INIT_STD};
    if (tied && tf_params_add(m->ps, "bert.embeddings.word_embeddings.weight", &m->table, 2,
                              (int64_t[]){V, d}, TF_INIT_STD))
        return -1;
    return tf_mlm_head_register(m->ps, &names, &m->mlm, &mc, tied ? &m->table : NULL);
}

/* What a family would do: the heads of config.json's model under its names. */
static int register_case(heads *m, const cJSON *cfg) {
    const char *model = json_str(cfg, "model");
    int64_t d = (int64_t)json_num(cfg, "d_model"), V = (int64_t)json_num(cfg, "vocab");
    int64_t nl = (int64_t)json_num(cfg, "n_labels");
    if (!strcmp(model, "BertForPreTraining"))
        return tf_pooler_register(m->ps, "bert.pooler.dense", &m->pooler, d, TF_INIT_STD) ||
               register_mlm(m, cfg, d, V) ||
               tf_classifier_register(m->ps, "cls.seq_relationship", &m->cls, d, 2, 0.0f, TF_INIT_STD);
    if (!strcmp(model, "BertForMaskedLM")) return register_mlm(m, cfg, d, V);
    if (!strcmp(model, "BertForSequenceClassification"))
        return tf_pooler_register(m->ps, "bert.pooler.dense", &m->pooler, d, TF_INIT_STD) ||
               tf_classifier_register(m->ps, "classifier", &m->cls, d, nl, 0.1f, TF_INIT_STD);
    if (!strcmp(model, "BertForTokenClassification"))
        return tf_classifier_register(m->ps, "classifier", &m->cls, d, nl, 0.1f, TF_INIT_STD);
    if (!strcmp(model, "BertForQuestionAnswering"))
        return tf_span_head_register(m->ps, "qa_outputs", &m->span, d, TF_INIT_STD);
    if (!strcmp(model, "GPT2LMHeadModel")) {
        if (!cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(cfg, "tied")))
            return tf_lm_head_register(m->ps, "lm_head.weight", NULL, &m->lm, NULL, d, V, TF_INIT_STD);
        return tf_params_add(m->ps, "transformer.wte.weight", &m->table, 2, (int64_t[]){V, d}, TF_INIT_STD) ||
               tf_lm_head_register(m->ps, NULL, NULL, &m->lm, &m->table, d, V, TF_INIT_STD);
    }
    return tf_set_error("unknown model '%s'", model);
}

/* The heads' forward on h; the outputs under Hugging Face's names. Returns their count, or -1. */
static int run_case(tf_ctx *c, heads *m, const char *model, tf_tensor *h, named *out) {
    if (!strcmp(model, "BertForPreTraining")) {
        tf_tensor *pooled = tf_pooler_forward(c, &m->pooler, h);
        out[0] = (named){"pooled_output", pooled};
        out[1] = (named){"prediction_logits", tf_mlm_head_forward(c, &m->mlm, h)};
        out[2] = (named){"seq_relationship_logits", tf_classifier_seq_forward(c, &m->cls, pooled)};
        return out[0].t && out[1].t && out[2].t ? 3 : -1;
    }
    out[0].name = "logits";
    if (!strcmp(model, "BertForMaskedLM")) out[0].t = tf_mlm_head_forward(c, &m->mlm, h);
    else if (!strcmp(model, "BertForSequenceClassification"))
        out[0].t = tf_classifier_seq_forward(c, &m->cls, tf_pooler_forward(c, &m->pooler, h));
    else if (!strcmp(model, "BertForTokenClassification")) out[0].t = tf_classifier_token_forward(c, &m->cls, h);
    else if (!strcmp(model, "GPT2LMHeadModel")) out[0].t = tf_lm_head_forward(c, &m->lm, h);
    else {
        out[0].name = "start_logits", out[1].name = "end_logits";
        return tf_span_head_forward(c, &m->span, h, &out[0].t, &out[1].t) ? -1 : 2;
    }
    return out[0].t ? 1 : -1;
}

/* A contiguous copy of a stored tensor in ctx (a gradient when asked). */
static tf_tensor *read_tensor(tf_ctx *c, const tf_st_file *f, const char *name, int grad) {
    const tf_st_entry *e = tf_st_find(f, name);
    if (!e) return tf_set_error("no tensor '%s'", name), NULL;
    tf_tensor *t = tf_tensor_new(c, TF_DTYPE_F32, e->ndim, e->shape, grad);
    return t && !tf_st_read_f32(f, e, t) ? t : NULL;
}

/* The scalar sum_o sum(o * grad_output.o): its gradient is each grad_output. */
static tf_tensor *weighted_loss(tf_ctx *c, const tf_st_file *in, const named *out, int n) {
    tf_tensor *L = NULL;
    char key[96];
    for (int i = 0; i < n; i++) {
        snprintf(key, sizeof key, "grad_output.%s", out[i].name);
        tf_tensor *s = tf_sum(c, tf_mul(c, out[i].t, read_tensor(c, in, key, 0)), TF_DIM_ALL, 0);
        L = L ? tf_add(c, L, s) : s;
    }
    return L;
}

typedef struct {
    int perturb;      /* >= 0: add 0.01 to element 0 of that parameter (registration order) */
    int corrupt_grad; /* add 0.01 to the hidden states' first gradient element */
    double worst_fwd, worst_grad;
    int compared, bad;
} case_result;

static const float *lookup(const heads *m, tf_tensor *h, const named *out, int n, const char *name, int64_t *len) {
    tf_tensor *t = NULL;
    if (!strcmp(name, "grad.hidden_states")) t = h;
    else if (!strncmp(name, "grad.", 5)) t = tf_params_get(m->ps, name + 5);
    for (int i = 0; i < n && !t; i++)
        if (!strcmp(out[i].name, name)) t = out[i].t;
    if (!t) return NULL;
    *len = tf_numel(t);
    return strncmp(name, "grad.", 5) ? tf_f32(t) : t->grad;
}

/* Compare every expected tensor; a missing or extra one counts as bad. */
static void compare(const char *cs, const tf_st_file *exp, const heads *m, tf_tensor *h, const named *out, int n,
                    case_result *r) {
    tf_arena *a = tf_arena_new(0);
    for (int i = 0; i < tf_st_count(exp); i++) {
        const tf_st_entry *e = tf_st_entry_at(exp, i);
        tf_tensor *want = tf_st_to_tensor(exp, e, a);
        int64_t len = -1;
        const float *got = lookup(m, h, out, n, e->name, &len);
        int is_grad = !strncmp(e->name, "grad.", 5);
        if (!want || !got || len != tf_numel(want)) {
            fprintf(stderr, "    %s: '%s' missing or of another size\n", cs, e->name);
            r->bad++;
            continue;
        }
        double err = test_rel_err(got, tf_f32(want), (long)len);
        double *worst = is_grad ? &r->worst_grad : &r->worst_fwd;
        if (err > *worst) *worst = err;
        if (err > (is_grad ? TOL_GRAD : TOL_FORWARD)) r->bad++;
        r->compared++;
    }
    if (tf_st_count(exp) != n + 1 + tf_params_count(m->ps)) r->bad++; /* every output, hidden and parameter */
    tf_arena_free(a);
}

/* Load, run forward and backward, compare. 0, or -1 when the case cannot run. */
static int check_case(const char *cs, case_result *r) {
    char p[512];
    snprintf(p, sizeof p, FXH "/%s/config.json", cs);
    cJSON *cfg = tf_json_read(p);
    heads m = {.ps = tf_params_new()};
    tf_ctx *c = tf_ctx_new(1);
    tf_st_file *w = NULL, *in = NULL, *exp = NULL;
    int rc = -1;
    if (!cfg || register_case(&m, cfg)) goto done;
    snprintf(p, sizeof p, FXH "/%s/weights.safetensors", cs);
    if (!(w = tf_st_open(p)) || tf_params_load(m.ps, w, 1)) goto done;
    if (r->perturb >= 0) tf_f32(tf_params_tensor(m.ps, r->perturb))[0] += 0.01f;
    snprintf(p, sizeof p, FXH "/%s/input.safetensors", cs);
    if (!(in = tf_st_open(p))) goto done;
    tf_tensor *h = read_tensor(c, in, "hidden_states", 1);
    named out[MAX_OUT];
    int n = h ? run_case(c, &m, json_str(cfg, "model"), h, out) : -1;
    tf_tensor *L = n > 0 ? weighted_loss(c, in, out, n) : NULL;
    if (!L || tf_backward(c, L, NULL)) goto done;
    if (r->corrupt_grad) h->grad[0] += 0.01f;
    snprintf(p, sizeof p, FXH "/%s/expected.safetensors", cs);
    if (!(exp = tf_st_open(p))) goto done;
    compare(cs, exp, &m, h, out, n, r);
    rc = 0;
done:
    tf_st_close(w);
    tf_st_close(in);
    tf_st_close(exp);
    tf_ctx_free(c);
    tf_params_free(m.ps);
    cJSON_Delete(cfg);
    return rc;
}

static const char *const CASES[] = {"bert_mlm_relu_gathered", "bert_mlm_untied_gelu_new", "bert_pretraining",
                                    "bert_qa", "bert_seq_cls", "bert_token_cls", "gpt2_lm_tied", "gpt2_lm_untied"};
#define N_CASES (int)(sizeof CASES / sizeof *CASES)

TEST(heads_hf_fixtures) {
    double wf = 0, wg = 0;
    int compared = 0;
    for (int i = 0; i < N_CASES; i++) {
        case_result r = {.perturb = -1};
        CHECKF(check_case(CASES[i], &r) == 0, "%s: %s", CASES[i], tf_error());
        CHECKF(r.bad == 0, "%s: %d tensors differ (worst output %.3g, gradient %.3g)", CASES[i], r.bad,
               r.worst_fwd, r.worst_grad);
        wf = r.worst_fwd > wf ? r.worst_fwd : wf;
        wg = r.worst_grad > wg ? r.worst_grad : wg;
        compared += r.compared;
    }
    printf("    %d head cases, %d tensors: worst output error %.2e, worst gradient error %.2e\n", N_CASES, compared,
           wf, wg);
}

TEST(heads_hf_fixtures_can_fail) {
    /* Each parameter perturbed in turn, then one gradient corrupted: each must fail the comparison. */
    int runs = 0;
    for (int i = 0; i < N_CASES; i++) {
        tf_params *ps = tf_params_new();
        heads m = {.ps = ps};
        char p[256];
        snprintf(p, sizeof p, FXH "/%s/config.json", CASES[i]);
        cJSON *cfg = tf_json_read(p);
        CHECK(cfg && register_case(&m, cfg) == 0);
        int np = tf_params_count(ps);
        cJSON_Delete(cfg);
        tf_params_free(ps);
        for (int k = -1; k < np; k++) {
            case_result r = {.perturb = k, .corrupt_grad = k < 0};
            CHECKF(check_case(CASES[i], &r) == 0, "%s: %s", CASES[i], tf_error());
            CHECKF(r.bad > 0, "%s: %s went unnoticed (worst output %.3g, gradient %.3g)", CASES[i],
                   k < 0 ? "a corrupted gradient" : "a perturbed parameter", r.worst_fwd, r.worst_grad);
            runs++;
        }
    }
    printf("    %d perturbed runs, each caught\n", runs);
}

/* ---------------------------------------------------------------- API behaviour */

static tf_tensor *randn(tf_ctx *c, int ndim, const int64_t *shape, uint64_t seed) {
    tf_tensor *t = tf_tensor_new(c, TF_DTYPE_F32, ndim, shape, 0);
    if (t) tf_tensor_fill_normal(t, seed, 1.0f);
    return t;
}
#define RANDN(c, seed, ...) \
    randn(c, (int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)), (int64_t[]){__VA_ARGS__}, seed)

/* err is the current message and contains every one of the strings. */
static int says(const char *a, const char *b, const char *c) {
    const char *e = tf_error();
    return strstr(e, a) && strstr(e, b) && (!c || strstr(e, c));
}

TEST(heads_tied_lm_head_is_gpts_product) {
    /* Registered before the table exists: the head reads the slot at forward time. */
    tf_params *ps = tf_params_new();
    tf_tensor *wte = NULL;
    tf_lm_head h;
    CHECK(tf_params_add(ps, "transformer.wte.weight", &wte, 2, (int64_t[]){37, 12}, 0.02f) == 0);
    CHECK(tf_lm_head_register(ps, NULL, NULL, &h, &wte, 12, 37, TF_INIT_STD) == 0);
    CHECK(tf_params_count(ps) == 1);
    CHECK(tf_params_init(ps, 3) == 0);
    tf_ctx *c = tf_ctx_new(1);
    tf_tensor *x = RANDN(c, 5, 2, 9, 12);
    tf_tensor *a = tf_lm_head_forward(c, &h, x), *b = tf_matmul(c, x, wte, 0, 1);
    CHECK(a && b && a->ndim == 3 && a->shape[2] == 37);
    CHECK(memcmp(tf_f32(a), tf_f32(b), (size_t)tf_numel(b) * sizeof(float)) == 0);
    tf_ctx_free(c);
    tf_params_free(ps);
}

TEST(heads_init_and_names) {
    /* BERT's initialisation: weights N(0, 0.02^2), biases 0, LayerNorm weights 1. */
    tf_params *ps = tf_params_new();
    tf_mlm_head mlm;
    tf_pooler pool;
    tf_classifier cls;
    tf_span_head span;
    tf_mlm_head_names names = {"p.transform.dense", "p.transform.LayerNorm", "p.decoder.weight", "p.bias"};
    tf_mlm_head_config mc = {64, 500, TF_ACT_GELU, 1e-12f, TF_INIT_STD};
    CHECK(tf_mlm_head_register(ps, &names, &mlm, &mc, NULL) == 0);
    CHECK(tf_pooler_register(ps, "bert.pooler.dense", &pool, 64, TF_INIT_STD) == 0);
    CHECK(tf_classifier_register(ps, "classifier", &cls, 64, 3, 0.1f, 0.5f) == 0);
    CHECK(tf_span_head_register(ps, "qa_outputs", &span, 64, TF_INIT_STD) == 0);
    static const char *const want[] = {"p.transform.dense.weight", "p.transform.dense.bias",
                                       "p.transform.LayerNorm.weight", "p.transform.LayerNorm.bias",
                                       "p.decoder.weight", "p.bias", "bert.pooler.dense.weight",
                                       "bert.pooler.dense.bias", "classifier.weight", "classifier.bias",
                                       "qa_outputs.weight", "qa_outputs.bias"};
    CHECK(tf_params_count(ps) == 12);
    for (int i = 0; i < 12; i++) CHECKF(!strcmp(tf_params_name(ps, i), want[i]), "%s", tf_params_name(ps, i));
    CHECK(tf_params_init(ps, 11) == 0);
    double s2 = 0;
    tf_tensor *dec = tf_params_get(ps, "p.decoder.weight");
    CHECK(dec == mlm.decoder.weight && dec->shape[0] == 500 && dec->shape[1] == 64);
    for (int64_t i = 0; i < tf_numel(dec); i++) s2 += (double)tf_f32(dec)[i] * tf_f32(dec)[i];
    double sd = sqrt(s2 / (double)tf_numel(dec));
    CHECKF(fabs(sd - 0.02) < 0.0005, "decoder weight std %g, not 0.02", sd);
    tf_tensor *cw = tf_params_get(ps, "classifier.weight");
    s2 = 0;
    for (int64_t i = 0; i < tf_numel(cw); i++) s2 += (double)tf_f32(cw)[i] * tf_f32(cw)[i];
    CHECKF(fabs(sqrt(s2 / 192.0) - 0.5) < 0.1, "classifier std %g, not the 0.5 asked", sqrt(s2 / 192.0));
    for (int i = 0; i < 64; i++) {
        CHECK(tf_f32(mlm.norm.weight)[i] == 1.0f && tf_f32(mlm.norm.bias)[i] == 0.0f);
        CHECK(tf_f32(mlm.dense.bias)[i] == 0.0f && tf_f32(pool.dense.bias)[i] == 0.0f);
    }
    for (int i = 0; i < 500; i++) CHECK(tf_f32(mlm.decoder.bias)[i] == 0.0f);
    CHECK(mlm.norm.eps == 1e-12f && span.out.weight->shape[0] == 2 && cls.out.bias->shape[0] == 3);
    tf_params_free(ps);
}

TEST(heads_shape_errors_name_the_head) {
    tf_params *ps = tf_params_new();
    tf_tensor *table = NULL;
    tf_lm_head lm, early;
    tf_mlm_head mlm;
    tf_pooler pool;
    tf_classifier cls;
    tf_span_head span;
    tf_mlm_head_names names = {"t.dense", "t.LayerNorm", NULL, "t.bias"};
    tf_mlm_head_config mc = {6, 7, TF_ACT_GELU, 1e-12f, TF_INIT_STD};
    CHECK(tf_params_add(ps, "emb", &table, 2, (int64_t[]){5, 6}, 0.02f) == 0); /* 5 rows, not 7 */
    CHECK(tf_lm_head_register(ps, NULL, NULL, &early, &table, 6, 5, TF_INIT_STD) == 0);
    tf_ctx *c = tf_ctx_new(1);
    tf_tensor *x = RANDN(c, 1, 2, 3, 6), *bad = RANDN(c, 2, 2, 3, 5), *flat = RANDN(c, 3, 2, 6);
    CHECK(tf_lm_head_forward(c, &early, x) == NULL && says("lm head", "not allocated", NULL));
    CHECK(tf_lm_head_register(ps, NULL, "lm.bias", &lm, &table, 6, 7, TF_INIT_STD) == 0);
    CHECK(tf_mlm_head_register(ps, &names, &mlm, &mc, &table) == 0);
    CHECK(tf_pooler_register(ps, "pool", &pool, 6, TF_INIT_STD) == 0);
    CHECK(tf_classifier_register(ps, "cls", &cls, 6, 3, 0.0f, TF_INIT_STD) == 0);
    CHECK(tf_span_head_register(ps, "qa", &span, 6, TF_INIT_STD) == 0);
    CHECK(tf_params_init(ps, 1) == 0);
    CHECK(tf_lm_head_forward(c, &lm, x) == NULL && says("lm head", "(5,6)", "(V=7,d_model=6)"));
    CHECK(tf_lm_head_forward(c, &early, bad) == NULL && says("lm head", "(2,3,5)", "(...,d_model=6)"));
    CHECK(tf_mlm_head_forward(c, &mlm, bad) == NULL && says("mlm head", "(2,3,5)", "d_model=6"));
    CHECK(tf_pooler_forward(c, &pool, flat) == NULL && says("pooler", "(2,6)", "(B,T,d_model=6)"));
    CHECK(tf_pooler_forward(c, &pool, bad) == NULL && says("pooler", "(2,3,5)", "(B,T,d_model=6)"));
    CHECK(tf_classifier_seq_forward(c, &cls, x) == NULL && says("sequence classifier", "(2,3,6)", "(B,d_model=6)"));
    CHECK(tf_classifier_token_forward(c, &cls, flat) == NULL &&
          says("token classifier", "(2,6)", "(B,T,d_model=6)"));
    tf_tensor *s = x, *e = x;
    CHECK(tf_span_head_forward(c, &span, bad, &s, &e) == -1 && !s && !e && says("span head", "(2,3,5)", "d_model=6"));
    tf_tensor *ids = tf_tensor_new(c, TF_DTYPE_I32, 3, (int64_t[]){2, 3, 6}, 0);
    CHECK(tf_pooler_forward(c, &pool, ids) == NULL && says("pooler", "F32", NULL));
    /* the right shapes work, and a NULL input passes through without a new message */
    tf_tensor *pooled = tf_pooler_forward(c, &pool, x);
    CHECK(pooled && pooled->ndim == 2 && pooled->shape[0] == 2 && pooled->shape[1] == 6);
    CHECK(tf_span_head_forward(c, &span, x, &s, &e) == 0 && s->ndim == 2 && s->shape[1] == 3 && e->shape[0] == 2);
    tf_set_error("earlier failure");
    CHECK(!tf_lm_head_forward(c, &lm, NULL) && !tf_mlm_head_forward(c, &mlm, NULL) &&
          !tf_pooler_forward(c, &pool, NULL) && !tf_classifier_seq_forward(c, &cls, NULL) &&
          !tf_classifier_token_forward(c, &cls, NULL) && tf_span_head_forward(c, &span, NULL, &s, &e) == -1);
    CHECK(!strcmp(tf_error(), "earlier failure"));
    tf_ctx_free(c);
    tf_params_free(ps);
}

TEST(heads_register_errors) {
    tf_params *ps = tf_params_new();
    tf_tensor *table = NULL;
    tf_lm_head lm;
    tf_mlm_head mlm;
    tf_classifier cls;
    tf_pooler pool;
    tf_linear l;
    tf_layer_norm n;
    tf_mlm_head_names names = {"t.dense", "t.LayerNorm", "t.decoder.weight", NULL};
    tf_mlm_head_config mc = {6, 7, TF_ACT_GELU, 1e-12f, TF_INIT_STD};
    CHECK(tf_lm_head_register(ps, "w", NULL, &lm, &table, 6, 7, TF_INIT_STD) == -1 && says("lm head", "both", NULL));
    CHECK(tf_lm_head_register(ps, NULL, "b", &lm, NULL, 6, 7, TF_INIT_STD) == -1 && says("lm head", "neither", NULL));
    CHECK(tf_lm_head_register(ps, "w", NULL, &lm, NULL, 6, 0, TF_INIT_STD) == -1 && says("lm head w", "vocab 0", NULL));
    CHECK(tf_mlm_head_register(ps, &names, &mlm, &mc, &table) == -1 && says("mlm head t.dense", "both", NULL));
    mc.act = (tf_activation)42;
    CHECK(tf_mlm_head_register(ps, &names, &mlm, &mc, NULL) == -1 && says("mlm head", "activation 42", NULL));
    CHECK(tf_classifier_register(ps, "cls", &cls, 6, 3, 1.0f, TF_INIT_STD) == -1 && says("classifier cls", "dropout", NULL));
    CHECK(tf_classifier_register(ps, "cls", &cls, 6, 0, 0.1f, TF_INIT_STD) == -1 && says("classifier cls", "n_labels 0", NULL));
    CHECK(tf_pooler_register(ps, "pool", &pool, -4, TF_INIT_STD) == -1 && says("pooler pool", "d_model -4", NULL));
    CHECK(tf_linear_register(ps, "lin", &l, 4, 3, 1, -1.0f) == -1 && says("linear lin", "init std", NULL));
    CHECK(tf_layer_norm_register(ps, "ln", &n, 4, -1e-5f, 1) == -1 && says("layer norm ln", "eps", NULL));
    char longname[600];
    memset(longname, 'a', sizeof longname - 1);
    longname[sizeof longname - 1] = 0;
    CHECK(tf_linear_register(ps, longname, &l, 4, 3, 1, TF_INIT_STD) == -1 && says("linear", "longer than", NULL));
    CHECK(tf_params_count(ps) == 0);
    CHECK(tf_linear_register(ps, "lin", &l, 4, 3, 0, TF_INIT_STD) == 0 && l.bias == NULL);
    tf_params_free(ps);
}

TEST(heads_classifier_dropout_trains_only) {
    tf_params *ps = tf_params_new();
    tf_classifier cls;
    CHECK(tf_classifier_register(ps, "classifier", &cls, 8, 4, 0.5f, TF_INIT_STD) == 0 && tf_params_init(ps, 2) == 0);
    tf_ctx *c = tf_ctx_new(1);
    tf_tensor *x = RANDN(c, 3, 2, 5, 8);
    tf_tensor *a = tf_classifier_token_forward(c, &cls, x), *ref = tf_linear_forward(c, &cls.out, x);
    CHECK(a && ref && !memcmp(tf_f32(a), tf_f32(ref), 40 * sizeof(float)));
    tf_ctx_set_training(c, 1);
    tf_tensor *b = tf_classifier_token_forward(c, &cls, x);
    CHECK(b && memcmp(tf_f32(b), tf_f32(ref), 40 * sizeof(float)));
    tf_ctx_free(c);
    tf_params_free(ps);
}
