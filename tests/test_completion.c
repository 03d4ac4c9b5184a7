/* Completions stepped one token at a time (tf_model_completion_new, tf_model_completions_step over
 * tf_gen_seq): many stepped together, joining and leaving at different steps, each give what
 * tf_model_generate gives them alone — the property a server's continuous batching rests on. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "test.h"

/* A GPT trained here on characters: context 16, so 30 new tokens slide its window twice. */
static int train_gpt(char *dir, size_t n) {
    char out[4096], cmd[512];
    snprintf(dir, n, "/tmp/tformer_completion_%d", (int)getpid());
    snprintf(cmd, sizeof cmd, "train --data tests/data/unicode_stress.txt --tokenizer char --out %s --steps 6 --layers 1 "
             "--heads 2 --width 16 --context 16 --batch 4 --eval-every 3 --eval-batches 2 --overwrite", dir);
    int rc = test_run_cli("", cmd, out, sizeof out);
    if (rc) fprintf(stderr, "%s\n", out);
    return rc;
}

typedef struct {
    const char *prompt, *stop;
    float temperature, top_p, penalty;
    int top_k, max_tokens, join; /* join: the step at which it starts */
    uint64_t seed;
} case_t;

static const case_t CASES[] = {
    {"ab", NULL, 0.f, 1.f, 1.f, 0, 30, 0, 0},       {"ab", NULL, 0.9f, 1.f, 1.f, 5, 30, 0, 7},
    {"x", NULL, 1.f, 0.8f, 1.f, 0, 20, 3, 11},      {"hello", NULL, 0.7f, 1.f, 1.3f, 0, 12, 5, 3},
    {"ab", "e", 0.9f, 1.f, 1.f, 0, 25, 1, 5},       {"zz", NULL, 0.f, 1.f, 1.f, 0, 0, 2, 0},
    {"xo", NULL, 1.2f, 0.95f, 1.f, 8, 18, 9, 42},   {"ab", NULL, 0.9f, 1.f, 1.f, 5, 30, 14, 7},
};
enum { N_CASES = sizeof CASES / sizeof *CASES };

static tf_generate_opts opts_of(const case_t *c) {
    tf_generate_opts o = tf_generate_opts_default();
    o.temperature = c->temperature, o.top_p = c->top_p, o.repetition_penalty = c->penalty;
    o.top_k = c->top_k, o.max_tokens = c->max_tokens, o.seed = c->seed;
    return o;
}

TEST(model_completions_match_generate) {
    char dir[64];
    CHECK(train_gpt(dir, sizeof dir) == 0);
    tf_model *m = tf_model_load(dir, NULL);
    CHECKF(m, "%s", tf_error());
    tf_completion *c[N_CASES] = {0}, *live[N_CASES];
    char *pieces[N_CASES] = {0};
    size_t got[N_CASES] = {0};
    int ended[N_CASES] = {0}, left = N_CASES, bad = 0;
    for (int step = 0; left > 0 && step < 200; step++) {
        int n = 0, stepped[N_CASES] = {0};
        for (int i = 0; i < N_CASES; i++) {
            if (!c[i] && CASES[i].join == step) {
                tf_generate_opts o = opts_of(&CASES[i]);
                c[i] = tf_model_completion_new(m, CASES[i].prompt, &o, &CASES[i].stop, 1);
                CHECKF(c[i], "case %d: %s", i, tf_error());
                pieces[i] = calloc(1, 4096);
            }
            if (c[i] && !tf_completion_done(c[i])) live[n++] = c[i], stepped[i] = 1;
        }
        if (n == 0) continue;
        CHECKF(!tf_model_completions_step(live, n, &bad), "step %d, row %d: %s", step, bad, tf_error());
        for (int i = 0; i < N_CASES; i++) {
            size_t len, added;
            const char *t = stepped[i] ? tf_completion_text(c[i], &len, &added) : NULL;
            if (t && added && got[i] + added < 4096) memcpy(pieces[i] + got[i], t + len - added, added), got[i] += added;
            if (c[i] && tf_completion_done(c[i]) && !ended[i]) ended[i] = 1, left--;
        }
    }
    CHECKF(left == 0, "%d completions never ended", left);
    for (int i = 0; i < N_CASES; i++) {
        tf_generate_opts o = opts_of(&CASES[i]);
        char *alone;
        size_t alone_len, len;
        CHECKF(!tf_model_generate(m, CASES[i].prompt, &o, CASES[i].stop, NULL, NULL, &alone, &alone_len, NULL), "%s", tf_error());
        const char *t = tf_completion_text(c[i], &len, NULL);
        CHECKF(len == alone_len && !memcmp(t, alone, len) && t[len] == 0, "case %d: stepped with others '%s', alone '%s'",
               i, t, alone);
        CHECKF(got[i] == len && !memcmp(pieces[i], t, len), "case %d: the pieces do not add up to the text", i);
        int prompt_tokens, k = tf_completion_tokens(c[i], &prompt_tokens);
        const char *why = tf_completion_finish(c[i]);
        CHECKF(prompt_tokens >= 1 && k <= CASES[i].max_tokens && why, "case %d: %d tokens, %s", i, k, why ? why : "-");
        if (!CASES[i].stop) /* no end token in a character vocabulary: only max_tokens ends these */
            CHECKF(!strcmp(why, "length") && k == CASES[i].max_tokens, "case %d: %s after %d tokens", i, why, k);
        else
            CHECKF(k == CASES[i].max_tokens || !strcmp(why, "stop"), "case %d: %s after %d tokens", i, why, k);
        free(alone);
    }
    printf("    %d completions stepped together (joining at steps 0 to 14) equal tf_model_generate's\n", N_CASES);
    for (int i = 0; i < N_CASES; i++) tf_completion_free(c[i]), free(pieces[i]);
    tf_model_free(m);
    test_rm_rf(dir);
}

/* The log-probabilities the steps report are the log-softmax of the logits they report, and a
 * greedy step chooses their largest; a completion ended early says "stop" and takes no more steps. */
TEST(model_completion_logprobs_and_end) {
    char dir[64];
    CHECK(train_gpt(dir, sizeof dir) == 0);
    tf_model *m = tf_model_load(dir, NULL);
    CHECKF(m, "%s", tf_error());
    tf_generate_opts o = tf_generate_opts_default();
    o.temperature = 0, o.max_tokens = 6;
    tf_completion *c = tf_model_completion_new(m, "ab", &o, NULL, 0);
    CHECKF(c, "%s", tf_error());
    CHECK(tf_completion_last(c, NULL) == -1 && !tf_completion_finish(c));
    CHECK(!tf_model_completions_step(&c, 1, NULL));
    double lp;
    float lse;
    int V;
    int32_t id = tf_completion_last(c, &lp);
    const float *logits = tf_completion_logits(c, &lse, &V);
    CHECK(id >= 0 && logits && V > 1);
    for (int v = 0; v < V; v++) CHECKF(logits[v] <= logits[id], "greedy chose %d, but %d is likelier", id, v);
    CHECKF(lp == (double)(logits[id] - lse) && lp <= 0, "logprob %g, logits - lse %g", lp, (double)(logits[id] - lse));
    double sum = 0;
    for (int v = 0; v < V; v++) sum += exp((double)logits[v] - lse);
    CHECKF(fabs(sum - 1) < 1e-5, "the log-softmax sums to %g", sum);
    tf_completion_end(c);
    CHECK(tf_completion_done(c) && !strcmp(tf_completion_finish(c), "stop"));
    CHECK(!tf_model_completions_step(&c, 1, NULL) && tf_completion_tokens(c, NULL) == 1);
    tf_completion_free(c);
    /* refused, each by name: beam search, too many stop strings, a prompt past the context */
    o.beam = 2;
    CHECK(!tf_model_completion_new(m, "ab", &o, NULL, 0) && strstr(tf_error(), "beam"));
    o.beam = 0;
    const char *stops[5] = {"a", "b", "c", "d", "e"};
    CHECK(!tf_model_completion_new(m, "ab", &o, stops, 5) && strstr(tf_error(), "stop strings"));
    CHECK(!tf_model_completion_new(m, "abcdefghijklmnopqrstuvwxyz", &o, NULL, 0) && strstr(tf_error(), "context"));
    tf_model_free(m);
    /* a family that generates no text a token at a time: the capability named */
    m = tf_model_load("tests/fixtures_roberta_st/tiny_roberta_st", NULL);
    CHECK(m && !tf_model_completion_new(m, "ab", &o, NULL, 0) && strstr(tf_error(), "cannot generate"));
    tf_model_free(m);
    test_rm_rf(dir);
}

/* A tensor of the model by its Hugging Face name, with or without "transformer.". */
static const float *weight(const tf_gpt *g, const char *name) {
    char full[128];
    tf_tensor *t = tf_params_get(g->params, name);
    snprintf(full, sizeof full, "transformer.%s", name);
    if (!t) t = tf_params_get(g->params, full);
    return t ? tf_f32(t) : NULL;
}

/* tf_model_text_attention on the GPT trained here: each row a distribution over the ids up to it
 * (causal), and layer 0's maps equal the ones computed here in double from the weights: the
 * embeddings, ln_1, c_attn's query and key, softmax(q k / sqrt(D)) over the positions so far. */
TEST(model_text_attention_as_computed_from_the_weights) {
    char dir[64];
    CHECK(train_gpt(dir, sizeof dir) == 0);
    tf_model *m = tf_model_load(dir, NULL);
    CHECKF(m, "%s", tf_error());
    tf_text_attention a;
    CHECKF(!tf_model_text_attention(m, "hello ab", &a), "%s", tf_error());
    int n = a.n, H = a.n_head;
    CHECK(n == 8 && a.n_layer == 1 && H == 2);
    for (int l = 0; l < a.n_layer; l++)
        for (int h = 0; h < H; h++)
            for (int i = 0; i < n; i++) {
                const float *row = a.probs + (((size_t)l * H + h) * n + i) * n;
                double sum = 0;
                for (int j = 0; j < n; j++) {
                    CHECKF(j <= i || row[j] == 0, "layer %d head %d: query %d sees key %d", l, h, i, j);
                    sum += row[j];
                }
                CHECKF(fabs(sum - 1) < 1e-5, "layer %d head %d row %d sums to %g", l, h, i, sum);
            }
    const tf_gpt *g = tf_model_impl(m);
    int C = g->cfg.d_model, D = C / H;
    const float *wte = weight(g, "wte.weight"), *wpe = weight(g, "wpe.weight"), *lw = weight(g, "h.0.ln_1.weight"),
                *lb = weight(g, "h.0.ln_1.bias"), *W = weight(g, "h.0.attn.c_attn.weight"),
                *b = weight(g, "h.0.attn.c_attn.bias");
    CHECK(wte && wpe && lw && lb && W && b && C <= 64);
    double q[16][64], k[16][64], worst = 0;
    for (int t = 0; t < n; t++) {
        double x[64], mean = 0, var = 0;
        for (int c = 0; c < C; c++) mean += x[c] = (double)wte[a.ids[t] * C + c] + wpe[t * C + c];
        mean /= C;
        for (int c = 0; c < C; c++) var += (x[c] - mean) * (x[c] - mean);
        var /= C;
        for (int c = 0; c < C; c++) x[c] = (x[c] - mean) / sqrt(var + g->cfg.norm_eps) * lw[c] + lb[c];
        for (int o = 0; o < 2 * C; o++) {
            double s = b[o];
            for (int c = 0; c < C; c++) s += x[c] * W[c * 3 * C + o];
            if (o < C) q[t][o] = s;
            else k[t][o - C] = s;
        }
    }
    for (int h = 0; h < H; h++)
        for (int i = 0; i < n; i++) {
            double s[16], top = -INFINITY, sum = 0;
            for (int j = 0; j <= i; j++) {
                s[j] = 0;
                for (int d = 0; d < D; d++) s[j] += q[i][h * D + d] * k[j][h * D + d];
                s[j] /= sqrt(D), top = fmax(top, s[j]);
            }
            for (int j = 0; j <= i; j++) sum += s[j] = exp(s[j] - top);
            for (int j = 0; j <= i; j++)
                worst = fmax(worst, fabs(s[j] / sum - a.probs[((size_t)h * n + i) * n + j]));
        }
    printf("    layer 0: the largest difference from the maps computed in double: %.2e\n", worst);
    CHECKF(worst < 1e-5, "layer 0's attention differs by %g", worst);
    tf_text_attention_free(&a);
    CHECK(tf_model_text_attention(m, "", &a) && strstr(tf_error(), "no tokens"));
    tf_model_free(m);
    m = tf_model_load("tests/fixtures_vit/cls_grey28_p4_labels", NULL);
    CHECK(m && tf_model_text_attention(m, "ab", &a) && strstr(tf_error(), "shows no attention"));
    tf_model_free(m);
    /* an encoder: the text as its tokenizer frames it (<s> a b </s>), each row a distribution */
    m = tf_model_load("tests/fixtures_roberta_st/tiny_roberta_st", NULL);
    CHECKF(m && !tf_model_text_attention(m, "ab", &a), "%s", tf_error());
    CHECKF(a.n == 4 && a.n_layer >= 1 && a.n_head >= 1, "%d ids, %d layers, %d heads", a.n, a.n_layer, a.n_head);
    for (int i = 0; i < a.n_layer * a.n_head * a.n; i++) {
        double row = 0;
        for (int j = 0; j < a.n; j++) row += a.probs[(size_t)i * (size_t)a.n + (size_t)j];
        CHECKF(fabs(row - 1) < 1e-5, "row %d sums to %g", i, row);
    }
    tf_text_attention_free(&a);
    tf_model_free(m);
    test_rm_rf(dir);
}
