/* bf16 matrix products (tf_ctx_set_precision, src/ops/bf16.c): the rounding
 * and the dense layer's forward and backward against torch's bfloat16 of the
 * same factors (tests/ref/gen_bf16_fixtures.py), the AVX512-BF16 kernels
 * against the reference bit for bit, the same bits on any thread count, and
 * a GPT's loss and gradients near float's. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/core_internal.h"
#include "ops/bf16.h"
#include "test.h"

#define BF16_DIR "tests/fixtures_bf16"
static const char *CASES[] = {"small", "strips", "odd", "tall"};

static tf_st_file *fixture(void) {
    char path[512];
    snprintf(path, sizeof path, "%s/bf16.safetensors", test_fixture_dir_or(BF16_DIR));
    return tf_st_open(path);
}

TEST(bf16_rounding_matches_torch) {
    tf_st_file *f = fixture();
    CHECK(f);
    tf_arena *a = tf_arena_new(0);
    tf_tensor *x = test_st_tensor(f, "round.x", a), *bits = test_st_tensor(f, "round.bits", a);
    tf_st_close(f);
    CHECK(x && bits && tf_numel(x) == tf_numel(bits) && bits->dtype == TF_DTYPE_I32);
    int64_t n = tf_numel(x);
    uint16_t *got = malloc((size_t)n * 2);
    const tf_bf16_kernels *ks[2] = {tf_bf16_ref(), tf_bf16_avx512()};
    int bad = -1;
    for (int k = 0; k < 2 && bad < 0; k++) {
        if (!ks[k]) continue;
        ks[k]->round_row(got, tf_f32(x), n);
        for (int64_t i = 0; i < n && bad < 0; i++) {
            uint16_t want = (uint16_t)tf_i32(bits)[i];
            /* a NaN stays a NaN; its bits are not torch's (its vector path gives 0xffff, its scalar one 0x7fc0) */
            int nan = (got[i] & 0x7f80) == 0x7f80 && (got[i] & 0x7f) && (want & 0x7f80) == 0x7f80 && (want & 0x7f);
            if ((got[i] != want && !nan) || tf_bf16_round(tf_f32(x)[i]) != got[i]) bad = (int)i;
        }
    }
    float sub = 1e-40f;
    int flushed = tf_bf16_round(sub) == 0 && tf_bf16_round(-sub) == 0x8000;
    free(got);
    CHECKF(bad < 0, "value %d (%g): bf16 bits differ from torch's %04x", bad, bad >= 0 ? tf_f32(x)[bad] : 0.0,
           bad >= 0 ? (unsigned)tf_i32(bits)[bad] : 0u);
    tf_arena_free(a);
    CHECKF(flushed, "subnormals must round to signed zero (AVX512-BF16's DAZ)");
}

/* max over outputs of |got - want| / bound, bound = a float sum's error for
 * |terms| summing to s: (K + 2) 2^-23 (|c| + s) */
static double worst_ratio(const float *got, const float *want, const double *s, int64_t n, int64_t K) {
    double worst = 0;
    for (int64_t i = 0; i < n; i++) {
        double bound = (double)(K + 2) * 0x1p-23 * s[i] + 1e-30, r = fabs((double)got[i] - want[i]) / bound;
        if (!(r <= worst)) worst = r; /* NaN counts as the worst */
    }
    return worst;
}

/* s (R,C) = sum_k |a[r,k] b[c,k]| over K (a (R,K) rows, b (C,K) rows, with strides) plus |c0| */
static void abs_sums(double *s, const float *a, int64_t ars, int64_t acs, const float *b, int64_t brs, int64_t bcs,
                     int64_t R, int64_t C, int64_t K, const float *c0) {
    for (int64_t r = 0; r < R; r++)
        for (int64_t c = 0; c < C; c++) {
            double t = c0 ? fabs(c0[c]) : 0;
            for (int64_t k = 0; k < K; k++) t += fabs((double)a[r * ars + k * acs] * b[c * brs + k * bcs]);
            s[r * C + c] = t;
        }
}

/* The dense op under bf16 (or the reference kernel called directly, op 0):
 * y, dx, dw within a float sum's error of torch's products of the rounded
 * factors, and far from the float products (the bf16 path ran). */
TEST(bf16_dense_matches_torch) {
    tf_st_file *f = fixture();
    CHECK(f);
    tf_arena *a = tf_arena_new(0);
    int native = tf_bf16_best() != NULL;
    for (size_t c = 0; c < sizeof CASES / sizeof *CASES; c++) {
        const char *fields[] = {"x", "w", "b", "g", "y", "dx", "dw", "y32", "dx32", "dw32"};
        tf_tensor *t[10];
        for (int i = 0; i < 10; i++) {
            char nm[64];
            snprintf(nm, sizeof nm, "%s.%s", CASES[c], fields[i]);
            t[i] = test_st_tensor(f, nm, a);
            CHECKF(t[i], "fixture %s missing", nm);
        }
        int64_t M = t[0]->shape[0], K = t[0]->shape[1], N = t[1]->shape[0];
        const float *x = tf_f32(t[0]), *w = tf_f32(t[1]), *b = tf_f32(t[2]), *g = tf_f32(t[3]);
        double *sy = malloc(sizeof(double) * M * N), *sx = malloc(sizeof(double) * M * K),
               *sw = malloc(sizeof(double) * N * K);
        abs_sums(sy, x, K, 1, w, K, 1, M, N, K, b);   /* y (M,N): x rows . w rows */
        abs_sums(sx, g, N, 1, w, 1, K, M, K, N, NULL); /* dx (M,K): g rows . w columns */
        abs_sums(sw, g, 1, N, x, 1, K, N, K, M, NULL); /* dw (N,K): g columns . x columns */
        for (int op = 0; op < 1 + native; op++) {
            float *y = malloc(sizeof(float) * M * N), *dx = malloc(sizeof(float) * M * K),
                  *dw = malloc(sizeof(float) * N * K);
            if (!op) {
                const tf_bf16_kernels *k = tf_bf16_ref();
                for (int64_t i = 0; i < M * N; i++) y[i] = b[i % N];
                memset(dx, 0, sizeof(float) * M * K), memset(dw, 0, sizeof(float) * N * K);
                CHECK(!tf_gemm_bf16_with(k, y, x, w, M, N, K, 0, 1) && !tf_gemm_bf16_with(k, dx, g, w, M, K, N, 0, 0) &&
                      !tf_gemm_bf16_with(k, dw, g, x, N, K, M, 1, 0));
            } else {
                tf_ctx *ctx = tf_ctx_new(1);
                tf_ctx_set_precision(ctx, TF_PRECISION_BF16);
                tf_tensor *xi = tf_tensor_new(ctx, TF_DTYPE_F32, 2, t[0]->shape, 1);
                tf_tensor *wi = tf_tensor_new(ctx, TF_DTYPE_F32, 2, t[1]->shape, 1);
                tf_tensor *bi = tf_tensor_new(ctx, TF_DTYPE_F32, 1, t[2]->shape, 1);
                CHECK(xi && wi && bi);
                memcpy(tf_f32(xi), x, sizeof(float) * M * K), memcpy(tf_f32(wi), w, sizeof(float) * N * K);
                memcpy(tf_f32(bi), b, sizeof(float) * N);
                tf_tensor *yt = tf_dense(ctx, xi, wi, 0, bi, TF_ACT_NONE);
                CHECK(yt && !tf_backward(ctx, yt, t[3]));
                memcpy(y, tf_f32(yt), sizeof(float) * M * N), memcpy(dx, xi->grad, sizeof(float) * M * K);
                memcpy(dw, wi->grad, sizeof(float) * N * K);
                tf_ctx_free(ctx);
            }
            double r[3] = {worst_ratio(y, tf_f32(t[4]), sy, M * N, K), worst_ratio(dx, tf_f32(t[5]), sx, M * K, N),
                           worst_ratio(dw, tf_f32(t[6]), sw, N * K, M)};
            double r32[3] = {worst_ratio(y, tf_f32(t[7]), sy, M * N, K), worst_ratio(dx, tf_f32(t[8]), sx, M * K, N),
                             worst_ratio(dw, tf_f32(t[9]), sw, N * K, M)};
            free(y), free(dx), free(dw);
            for (int i = 0; i < 3; i++) {
                CHECKF(r[i] <= 1.0, "%s %s (%s): error %.3g of the float-sum bound from torch's bf16 product",
                       CASES[c], fields[4 + i], op ? "dense op" : "reference kernel", r[i]);
                CHECKF(r32[i] > 20.0, "%s %s (%s): within %.3g bounds of the float product: bf16 did not run",
                       CASES[c], fields[4 + i], op ? "dense op" : "reference kernel", r32[i]);
            }
        }
        free(sy), free(sx), free(sw);
    }
    tf_st_close(f);
    tf_arena_free(a);
    if (!native) printf("  (no AVX512-BF16 here: the dense op's bf16 runs in float; the reference kernel checked)\n");
}

static void fill(float *v, int64_t n, uint64_t seed, float scale) {
    for (int64_t i = 0; i < n; i++) v[i] = (tf_hash_uniform(seed, (uint64_t)i) * 2.0f - 1.0f) * scale;
}

/* Every shape class of tiles (rows past a tile, columns past a 32-strip, odd
 * K, K past a block of 2,048 pairs) and operand layout: the AVX-512 kernels give the
 * reference's bits, on 1 and 2 threads. */
TEST(bf16_avx512_equals_reference) {
    const tf_bf16_kernels *kv = tf_bf16_avx512();
    if (!kv) {
        printf("  (no AVX512-BF16 on this CPU: bf16 products run in float)\n");
        return;
    }
    const int64_t shapes[][3] = {{1, 1, 1}, {1, 33, 7}, {5, 31, 2}, {6, 32, 64}, {7, 65, 129}, {13, 40, 300},
                                 {97, 70, 513}, {200, 96, 48}, {13, 33, 4099}}; /* the last: two blocks of pairs */
    for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++)
        for (int tr = 0; tr < 4; tr++) {
            int64_t M = shapes[s][0], N = shapes[s][1], K = shapes[s][2];
            int ta = tr & 1, tb = tr >> 1;
            float *A = malloc(sizeof(float) * M * K), *B = malloc(sizeof(float) * K * N);
            float *c[3];
            fill(A, M * K, 100 + s, 3.0f), fill(B, K * N, 200 + s, 0.5f);
            if (s == 3) A[0] = 1e30f, A[1] = -1e-39f, B[0] = 3.0e38f; /* overflow to inf, a subnormal factor */
            for (int i = 0; i < 3; i++) {
                c[i] = malloc(sizeof(float) * M * N);
                fill(c[i], M * N, 300 + s, 10.0f); /* the products add to C */
                if (i == 2) tf_set_threads(1);
                CHECK(!tf_gemm_bf16_with(i ? kv : tf_bf16_ref(), c[i], A, B, M, N, K, ta, tb));
                tf_set_threads(0);
            }
            int same = !memcmp(c[0], c[1], sizeof(float) * M * N) && !memcmp(c[1], c[2], sizeof(float) * M * N);
            free(A), free(B), free(c[0]), free(c[1]), free(c[2]);
            CHECKF(same, "AVX512-BF16 and reference (or 1 and 2 threads) differ at M %lld N %lld K %lld ta %d tb %d",
                   (long long)M, (long long)N, (long long)K, ta, tb);
        }
    uint16_t h[3][70];
    float v[70];
    fill(v, 70, 9, 1e3f);
    v[0] = NAN, v[1] = INFINITY, v[2] = 1e-40f, v[3] = -1e-41f, v[4] = 1.0f + 0x1p-8f, v[5] = 1.0f + 0x1.8p-7f;
    kv->round_row(h[0], v, 70), tf_bf16_ref()->round_row(h[1], v, 70);
    CHECK(!memcmp(h[0], h[1], sizeof h[0]));
}

/* A small GPT's loss and gradients under bf16: near float's (the factors
 * carry 8 bits) and not equal to them. */
TEST(bf16_gpt_loss_and_gradients_near_float) {
    const int V = 40, T = 24, L = 2, H = 2, C = 64, B = 3;
    tf_gpt_config cfg = tf_gpt_config_default(V, T, L, H, C);
    tf_gpt *m = tf_gpt_new(&cfg, 5);
    CHECK(m);
    int64_t np = 0;
    for (int i = 0; i < tf_params_count(m->params); i++) np += tf_numel(tf_params_tensor(m->params, i));
    float *grads[2] = {calloc((size_t)np, 4), calloc((size_t)np, 4)}, loss[2];
    for (int pass = 0; pass < 2; pass++) {
        tf_ctx *ctx = tf_ctx_new(1);
        if (pass) tf_ctx_set_precision(ctx, TF_PRECISION_BF16);
        tf_tensor *ids = tf_tensor_new(ctx, TF_DTYPE_I32, 2, (int64_t[]){B, T}, 0);
        tf_tensor *tg = tf_tensor_new(ctx, TF_DTYPE_I32, 2, (int64_t[]){B, T}, 0);
        for (int i = 0; i < B * T; i++) tf_i32(ids)[i] = (i * 7 + 3) % V, tf_i32(tg)[i] = (i * 7 + 10) % V;
        tf_params_zero_grad(m->params);
        tf_tensor *lt = tf_gpt_forward(ctx, m, ids, tg, NULL);
        CHECK(lt && !tf_backward(ctx, lt, NULL));
        loss[pass] = tf_f32(lt)[0];
        for (int i = 0, off = 0; i < tf_params_count(m->params); i++) {
            tf_tensor *p = tf_params_tensor(m->params, i);
            memcpy(grads[pass] + off, p->grad, sizeof(float) * (size_t)tf_numel(p));
            off += (int)tf_numel(p);
        }
        tf_ctx_free(ctx);
    }
    double rel = test_rel_err(grads[1], grads[0], (long)np);
    free(grads[0]), free(grads[1]);
    tf_gpt_free(m);
    double dl = fabs((double)loss[1] - loss[0]) / loss[0];
    CHECKF(dl < 2e-3, "bf16 loss %.6f, float %.6f", loss[1], loss[0]);
    CHECKF(rel < 0.05, "bf16 gradients %.3g (relative) from float's", rel);
    if (tf_bf16_best()) CHECKF(dl > 0 && rel > 1e-5, "bf16 gave float's result (loss %.8f, gradients %.3g)", loss[1], rel);
}

/* tformer train --precision bf16: trains and says where its products run;
 * its losses near float's run; other precisions refused naming the flag. */
TEST(bf16_cli_train) {
    char out[2][4096], dir[64];
    double loss[2] = {-1, -1};
    for (int i = 0; i < 2; i++) {
        char args[512];
        snprintf(dir, sizeof dir, "/tmp/tformer_bf16_run_%d_%d", (int)getpid(), i);
        snprintf(args, sizeof args,
                 "train --data tests/data/unicode_stress.txt --tokenizer char --out %s --steps 4 --layers 1 --heads 2 "
                 "--width 32 --context 16 --batch 4 --eval-every 4 --eval-batches 2 --log-every 1 --precision %s",
                 dir, i ? "bf16" : "f32");
        int rc = test_run_cli("", args, out[i], sizeof out[i]);
        test_rm_rf(dir);
        CHECKF(rc == 0, "train --precision %s: %s", i ? "bf16" : "f32", out[i]);
        const char *s = strstr(out[i], "step 4/4 | loss ");
        CHECKF(s && sscanf(s, "step 4/4 | loss %lf", &loss[i]) == 1, "no step 4 in: %s", out[i]);
    }
    CHECKF(strstr(out[1], "precision bf16: matrix products on ") && !strstr(out[0], "precision bf16"), "%s", out[1]);
    CHECKF(fabs(loss[1] - loss[0]) < 0.01 * loss[0], "losses f32 %g, bf16 %g", loss[0], loss[1]);
    char msg[2048];
    const char *bad = "train --data tests/data/unicode_stress.txt --out /tmp/tformer_bf16_never --precision fp16";
    CHECK(test_run_cli("", bad, msg, sizeof msg) == 2 &&
          strstr(msg, "--precision"));
}
