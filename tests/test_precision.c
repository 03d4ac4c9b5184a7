/* Inference in bf16 and int8 (tf_params_set_precision, `--precision`): each
 * path against float on small committed models (the same weights, so the
 * only difference is the products' precision), the same bits on 1 and 2
 * threads, and the portable kernels (TFORMER_ISA=avx2, portable) against the
 * fast ones. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test.h"
#include "tformer/gpt.h"
#include "tformer/model.h"
#include "tformer/nn.h"
#include "tformer/safetensors.h"
#include "tformer/seq2seq.h"

#define ST_DIR "tests/fixtures_distilbert_st/tiny_distilbert_st"
#define MARIAN_DIR "tests/fixtures_marian/separate_tied_gelu_new"
/* 96 lines of English prose and of every script (short and long ones) */
#define PROSE "tests/data/train_ref.txt"
#define SCRIPTS "tests/data/unicode_stress.txt"

/* Whether bf16 products run as bf16 here (else float: AVX512-BF16 and AMX absent, or TFORMER_ISA). */
static int bf16_here(void) { return strncmp(tf_bf16_info(), "float", 5) != 0; }

/* Up to max lines of path (malloc'd each; free with free_lines). */
static int read_lines(const char *path, char **lines, int max) {
    FILE *f = fopen(path, "r");
    char buf[1024];
    int n = 0;
    while (f && n < max && fgets(buf, sizeof buf, f)) {
        buf[strcspn(buf, "\n")] = 0;
        if (*buf) lines[n++] = strdup(buf);
    }
    if (f) fclose(f);
    return n;
}

static void free_lines(char **lines, int n) {
    for (int i = 0; i < n; i++) free(lines[i]);
}

/* The smallest cosine of rows of a and b (n, d). */
static double min_cosine(const float *a, const float *b, int n, int d) {
    double worst = 1;
    for (int i = 0; i < n; i++) {
        double ab = 0, aa = 0, bb = 0;
        for (int k = 0; k < d; k++) {
            double x = a[(size_t)i * d + k], y = b[(size_t)i * d + k];
            ab += x * y, aa += x * x, bb += y * y;
        }
        worst = fmin(worst, ab / sqrt(aa * bb));
    }
    return worst;
}

/* dir's embeddings of texts in precision p on threads threads (malloc'd, n rows of *d), or NULL. */
static float *embed_in(const char *dir, tf_precision p, int threads, const char *const *texts, int n, int *d) {
    tf_model *m = tf_model_load(dir, &(tf_model_opts){.threads = threads, .precision = p});
    float *e = NULL;
    if (m && tf_model_precision(m) == p && !tf_model_embed(m, texts, n, NULL, &e)) *d = tf_model_embed_dim(m);
    tf_model_free(m);
    return e;
}

/* Embeddings (a sentence-transformers folder through the model handle) in bf16 and int8: every text's
 * cosine with the float embedding >= 0.999, and not the float bits (the path ran); the same bits on 1
 * and 2 threads; back to f32, the float bits again. */
TEST(precision_embed_agrees_with_f32) {
    char *lines[128];
    int n = read_lines(PROSE, lines, 64), d = 0;
    n += read_lines(SCRIPTS, lines + n, 64);
    CHECK(n >= 48);
    const char *const *texts = (const char *const *)lines;
    float *f = embed_in(ST_DIR, TF_PRECISION_F32, 2, texts, n, &d);
    CHECK(f);
    double cos[2];
    int same_threads[2], differs[2];
    for (int k = 0; k < 2; k++) {
        tf_precision p = k ? TF_PRECISION_INT8 : TF_PRECISION_BF16;
        float *e2 = embed_in(ST_DIR, p, 2, texts, n, &d), *e1 = embed_in(ST_DIR, p, 1, texts, n, &d);
        CHECK(e1 && e2);
        cos[k] = min_cosine(e2, f, n, d);
        same_threads[k] = !memcmp(e1, e2, (size_t)n * (size_t)d * sizeof *e1);
        differs[k] = memcmp(e2, f, (size_t)n * (size_t)d * sizeof *e2) != 0;
        free(e1), free(e2);
    }
    tf_model *m = tf_model_load(ST_DIR, &(tf_model_opts){.threads = 2, .precision = TF_PRECISION_INT8});
    float *back = NULL;
    int ok = m && !tf_model_set_precision(m, TF_PRECISION_F32) && !tf_model_embed(m, texts, n, NULL, &back);
    ok = ok && !memcmp(back, f, (size_t)n * (size_t)d * sizeof *f);
    tf_model_free(m), free(back), free(f), free_lines(lines, n);
    printf("    %d texts, width %d: smallest cosine with f32: bf16 %.6f (%s), int8 %.6f\n", n, d, cos[0],
           tf_bf16_info(), cos[1]);
    CHECKF(cos[0] >= 0.999 && cos[1] >= 0.999, "smallest cosine bf16 %.6f, int8 %.6f", cos[0], cos[1]);
    CHECKF(differs[1] && (differs[0] || !bf16_here()), "bf16 or int8 gave the float bits: the path did not run");
    CHECKF(same_threads[0] && same_threads[1], "1 and 2 threads differ (bf16 %d, int8 %d same)", same_threads[0],
           same_threads[1]);
    CHECKF(ok, "back to f32: not the float bits [%s]", tf_error());
}

/* The largest |a - b| over the largest |b| (n). */
static double rel_max(const float *a, const float *b, int64_t n) {
    double err = 0, top = 0;
    for (int64_t i = 0; i < n; i++) err = fmax(err, fabs((double)a[i] - b[i])), top = fmax(top, fabs((double)b[i]));
    return top > 0 ? err / top : err;
}

/* A Marian folder's logits (the translation model's forward, as each decoding step) in precision p. */
static float *seq2seq_logits(tf_seq2seq *m, tf_precision p, int64_t *n) {
    tf_st_file *f = tf_st_open(MARIAN_DIR "/input.safetensors");
    tf_ctx *ctx = tf_ctx_new(0);
    tf_arena *a = tf_arena_new(0);
    tf_seq2seq_inputs x = {0};
    tf_seq2seq_outputs y;
    float *out = NULL;
    x.input_ids = f ? tf_st_to_tensor(f, tf_st_find(f, "input_ids"), a) : NULL;
    x.decoder_input_ids = f ? tf_st_to_tensor(f, tf_st_find(f, "decoder_input_ids"), a) : NULL;
    tf_ctx_set_grad(ctx, 0);
    if (x.input_ids && x.decoder_input_ids && !tf_params_set_precision(m->params, p) && !tf_seq2seq_run(ctx, m, &x, &y) &&
        (out = malloc((size_t)tf_numel(y.logits) * sizeof *out))) {
        *n = tf_numel(y.logits);
        memcpy(out, tf_f32(y.logits), (size_t)*n * sizeof *out);
    }
    tf_arena_free(a), tf_ctx_free(ctx), tf_st_close(f);
    return out;
}

/* Translation's model (a Marian folder): logits in bf16 within 2% of the largest float logit, int8
 * within 5%, neither the float bits. */
TEST(precision_seq2seq_logits_within_bound) {
    tf_seq2seq *m = tf_seq2seq_load(MARIAN_DIR);
    CHECK(m);
    int64_t n = 0;
    float *f = seq2seq_logits(m, TF_PRECISION_F32, &n), *b = seq2seq_logits(m, TF_PRECISION_BF16, &n),
          *q = seq2seq_logits(m, TF_PRECISION_INT8, &n);
    int ok = f && b && q;
    double eb = ok ? rel_max(b, f, n) : 1, eq = ok ? rel_max(q, f, n) : 1;
    free(f), free(b), free(q), tf_seq2seq_free(m);
    CHECK(ok);
    printf("    %lld logits: largest error over the largest logit: bf16 %.2e, int8 %.2e\n", (long long)n, eb, eq);
    CHECKF(eb < 0.02 && (eb > 0 || !bf16_here()), "bf16 logits: relative error %g", eb);
    CHECKF(eq < 0.05 && eq > 0, "int8 logits: relative error %g", eq);
}

/* A GPT's logits (generate's model) in each precision, and on 1 and 2 threads. */
static float *gpt_logits(tf_gpt *m, tf_precision p, int threads, int T, int V) {
    tf_set_threads(threads);
    tf_ctx *ctx = tf_ctx_new(1);
    tf_ctx_set_grad(ctx, 0);
    tf_tensor *ids = tf_tensor_new(ctx, TF_DTYPE_I32, 2, (int64_t[]){4, T}, 0), *logits = NULL;
    for (int t = 0; t < 4 * T; t++) tf_i32(ids)[t] = (t * 7 + 3) % V;
    float *out = malloc(sizeof(float) * 4 * (size_t)T * (size_t)V);
    if (out && !tf_params_set_precision(m->params, p) && (tf_gpt_forward(ctx, m, ids, NULL, &logits), logits))
        memcpy(out, tf_f32(logits), sizeof(float) * 4 * (size_t)T * (size_t)V);
    else free(out), out = NULL;
    tf_ctx_free(ctx);
    return out;
}

TEST(precision_gpt_logits_within_bound_on_any_thread_count) {
    const int V = 96, T = 64, L = 2, H = 4, C = 128;
    tf_gpt_config c = tf_gpt_config_default(V, T, L, H, C);
    tf_gpt *m = tf_gpt_new(&c, 5);
    CHECK(m);
    float *f = gpt_logits(m, TF_PRECISION_F32, 2, T, V), *r[2][2];
    int same[2] = {0, 0};
    double err[2] = {1, 1};
    for (int k = 0; k < 2; k++) {
        tf_precision p = k ? TF_PRECISION_INT8 : TF_PRECISION_BF16;
        r[k][0] = gpt_logits(m, p, 1, T, V), r[k][1] = gpt_logits(m, p, 2, T, V);
        if (f && r[k][0] && r[k][1]) {
            same[k] = !memcmp(r[k][0], r[k][1], sizeof(float) * 4 * (size_t)T * (size_t)V);
            err[k] = rel_max(r[k][1], f, 4 * (int64_t)T * V);
        }
        free(r[k][0]), free(r[k][1]);
    }
    free(f), tf_gpt_free(m);
    tf_set_threads(0);
    printf("    largest logit error over the largest logit: bf16 %.2e, int8 %.2e\n", err[0], err[1]);
    CHECKF(err[0] < 0.02 && (err[0] > 0 || !bf16_here()), "bf16 logits: relative error %g", err[0]);
    CHECKF(err[1] < 0.05 && err[1] > 0, "int8 logits: relative error %g", err[1]);
    CHECKF(same[0] && same[1], "1 and 2 threads differ (bf16 %d, int8 %d same)", same[0], same[1]);
}

/* `tformer embed --precision P` under env into out (n floats at most); the floats read. */
static int embed_cli(const char *env, const char *p, float *out, int n) {
    char cmd[600], *text = malloc(1 << 20);
    snprintf(cmd, sizeof cmd, "%s %s embed --model %s --precision %s --threads 2 < %s 2>/dev/null", env,
             test_tformer_bin(), ST_DIR, p, PROSE);
    int got = 0;
    if (text && test_popen(cmd, text, 1 << 20) == 0)
        for (char *s = text, *e; got < n; s = e, got++) {
            out[got] = strtof(s, &e);
            if (e == s) break;
        }
    free(text);
    return got;
}

/* The portable kernels (TFORMER_ISA=avx2: AVX2 float kernels, AVX2's int8 product and bf16 in float;
 * portable: plain C) against the fast ones, through the CLI: each within 1e-3 of the largest value
 * (int8's integer sums are the same on every kernel; the float kernels differ by rounding). */
TEST(precision_portable_kernels_agree_with_fast_ones) {
    enum { MAX = 1 << 16 };
    static float fast[MAX], slow[MAX];
    static const char *const ENVS[] = {"TFORMER_ISA=avx2", "TFORMER_ISA=portable"};
    static const char *const PRECS[] = {"f32", "bf16", "int8"};
    for (int k = 0; k < 3; k++) {
        int n = embed_cli("", PRECS[k], fast, MAX);
        CHECKF(n > 100, "embed --precision %s: %d values", PRECS[k], n);
        for (int e = 0; e < 2; e++) {
            int m = embed_cli(ENVS[e], PRECS[k], slow, MAX);
            CHECKF(m == n, "%s embed --precision %s: %d values, %d fast", ENVS[e], PRECS[k], m, n);
            double err = rel_max(slow, fast, n);
            /* bf16 against float where the fast kernels round to bf16: bf16's own bound */
            double bound = k == 1 && bf16_here() ? 2e-2 : 1e-3;
            printf("    --precision %s, %s: largest difference over the largest value %.2e\n", PRECS[k], ENVS[e], err);
            CHECKF(err <= bound, "%s --precision %s: %g from the fast kernels", ENVS[e], PRECS[k], err);
        }
    }
}
