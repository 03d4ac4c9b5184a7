/* Int8 weights for inference (tf_params_quantize, src/ops/quant.c): the dense
 * product against torch's quantisation of the same layers in blocks of 32
 * (tests/ref/gen_quant_fixtures.py), the AVX2 kernel and the AVX-512
 * quantisation against the reference ones, the quantisation error within its
 * bound, and which products use the copies (views of rows, (in,out) weights,
 * never a product with gradients). */
#include <stdlib.h>
#include <string.h>

#include "ops/kernels.h"
#include "ops/quant.h"
#include "test.h"

#define QUANT_DIR "tests/fixtures_quant"
static const char *CASES[] = {"small", "pad", "gemv", "wide", "ties", "outlier"};

typedef struct {
    tf_params *ps;
    tf_linear l;
} layer;

/* A Linear (N,K) + bias registered as "l", its values copied from w and b;
 * in_out: the weight stored (K,N) (GPT-2's Conv1D layout). */
static int layer_new(layer *L, const tf_tensor *w, const tf_tensor *b, int in_out) {
    int64_t N = w->shape[0], K = w->shape[1];
    L->ps = tf_params_new();
    if (!L->ps || tf_params_add(L->ps, "l.weight", &L->l.weight, 2, in_out ? (int64_t[]){K, N} : (int64_t[]){N, K}, 0.02f) ||
        tf_params_add(L->ps, "l.bias", &L->l.bias, 1, (int64_t[]){N}, 0.0f) || tf_params_init(L->ps, 1))
        return -1;
    float *dw = tf_f32(L->l.weight);
    for (int64_t n = 0; n < N; n++)
        for (int64_t k = 0; k < K; k++) dw[in_out ? k * N + n : n * K + k] = tf_f32(w)[n * K + k];
    memcpy(tf_f32(L->l.bias), tf_f32(b), (size_t)N * sizeof(float));
    return 0;
}

/* tf_dense of x with the layer, gradients off; a contiguous copy of the result in out. */
static int dense(const layer *L, const tf_tensor *x, int in_out, int grad, float *out) {
    tf_ctx *ctx = tf_ctx_new(1);
    tf_ctx_set_grad(ctx, grad);
    tf_tensor *xi = tf_tensor_new(ctx, TF_DTYPE_F32, 2, x->shape, grad);
    if (!xi) return tf_ctx_free(ctx), -1;
    memcpy(tf_f32(xi), tf_f32(x), (size_t)tf_numel(x) * sizeof(float));
    tf_tensor *y = tf_dense(ctx, xi, L->l.weight, in_out, L->l.bias, TF_ACT_NONE);
    if (y) memcpy(out, tf_f32(y), (size_t)tf_numel(y) * sizeof(float));
    tf_ctx_free(ctx);
    return y ? 0 : -1;
}

/* An int8 copy's bytes: N rows of Kp bytes and a 4-byte scale a block of 32;
 * packed for the VNNI product (tf_q8_best()->packed), the rows rounded up to
 * 16 and a 2-byte sum beside each scale. */
static size_t copy_bytes(int64_t N, int64_t Kp) {
    int packed = tf_q8_best()->packed != NULL;
    int64_t n = packed ? (N + 15) / 16 * 16 : N;
    return (size_t)(n * Kp + n * (Kp / 32) * (packed ? 6 : 4));
}

TEST(quant_dense_matches_torch_quantisation) {
    char path[512];
    snprintf(path, sizeof path, "%s/quant.safetensors", test_fixture_dir_or(QUANT_DIR));
    tf_st_file *f = tf_st_open(path);
    CHECK(f);
    tf_arena *a = tf_arena_new(0);
    for (size_t c = 0; c < sizeof CASES / sizeof *CASES; c++) {
        char nm[8][64];
        const char *fields[8] = {"x", "w", "b", "xq", "wq", "sx", "sw", "y"};
        tf_tensor *t[8];
        for (int i = 0; i < 8; i++) {
            snprintf(nm[i], sizeof nm[i], "%s.%s", CASES[c], fields[i]);
            t[i] = test_st_tensor(f, nm[i], a);
            CHECKF(t[i], "%s: missing %s", path, nm[i]);
        }
        int64_t M = t[0]->shape[0], K = t[0]->shape[1], N = t[1]->shape[0], Kp = (K + 63) / 64 * 64;
        int64_t nb = Kp / 32, nbk = t[5]->shape[1]; /* blocks a row: the copy's, torch's (ceil(K / 32)) */
        CHECKF(t[5]->ndim == 2 && nbk == (K + 31) / 32, "%s: sx of %lld blocks a row", CASES[c], (long long)nbk);
        /* the input's integers and block scales, exactly torch's (the blocks past K: scale 0) */
        uint8_t *xq = malloc((size_t)(M * Kp));
        float *sx = malloc((size_t)(M * nb) * sizeof *sx), *y = malloc((size_t)(M * N) * sizeof *y);
        float *y_io = malloc((size_t)(M * N) * sizeof *y);
        tf_quant_rows(xq, sx, tf_f32(t[0]), M, K, Kp);
        int64_t bad = 0;
        for (int64_t m = 0; m < M; m++) {
            for (int64_t b = 0; b < nb; b++) bad += sx[m * nb + b] != (b < nbk ? tf_f32(t[5])[m * nbk + b] : 0.0f);
            for (int64_t k = 0; k < Kp; k++) bad += xq[m * Kp + k] != (k < K ? tf_i32(t[3])[m * K + k] + 128 : 128);
        }
        CHECKF(!bad, "%s: %lld input values or scales quantised unlike torch", CASES[c], (long long)bad);
        /* the layer's output, (out,in) and (in,out) weights */
        for (int io = 0; io < 2; io++) {
            layer L;
            CHECK(!layer_new(&L, t[1], t[2], io) && !tf_params_quantize(L.ps, TF_QUANT_INT8));
            CHECK(!dense(&L, t[0], io, 0, io ? y_io : y));
            CHECKF(tf_params_quant_bytes(L.ps) == copy_bytes(N, Kp), "%s: copy of %zu bytes",
                   CASES[c], tf_params_quant_bytes(L.ps));
            tf_params_free(L.ps);
        }
        double ymax = 0;
        for (int64_t i = 0; i < M * N; i++) ymax = fmax(ymax, fabs(tf_f32(t[7])[i]));
        double d = test_max_abs_diff(y, tf_f32(t[7]), M * N);
        CHECKF(d <= 1e-6 * ymax, "%s (%lldx%lldx%lld): max |y - torch's| %.3g (max |y| %.3g)", CASES[c],
               (long long)M, (long long)K, (long long)N, d, ymax);
        CHECKF(!memcmp(y, y_io, (size_t)(M * N) * sizeof *y), "%s: (in,out) weight differs", CASES[c]);
        free(xq), free(sx), free(y), free(y_io);
    }
    tf_arena_free(a);
    tf_st_close(f);
}

/* Random bytes for the kernels: xq any unsigned byte, q in [-127, 127]; block
 * scales sx (M,Kp/32), sw (N,Kp/32) in (0.01, 1.01), a few of them 0 (a zero
 * block) and, with nan, one NaN (a block holding a NaN). */
static void random_bytes(uint8_t *xq, int8_t *q, float *sx, float *sw, int64_t M, int64_t N, int64_t Kp,
                         uint64_t seed, int with_nan) {
    int64_t nb = Kp / 32;
    for (int64_t i = 0; i < M * Kp; i++) xq[i] = (uint8_t)(tf_hash_uniform(seed, (uint64_t)i) * 256.0f);
    for (int64_t i = 0; i < N * Kp; i++) q[i] = (int8_t)((int)(tf_hash_uniform(seed + 1, (uint64_t)i) * 255.0f) - 127);
    for (int64_t i = 0; i < N * nb; i++) sw[i] = i % 7 == 3 ? 0.0f : 0.01f + tf_hash_uniform(seed + 2, (uint64_t)i);
    for (int64_t i = 0; i < M * nb; i++) sx[i] = i % 5 == 1 ? 0.0f : 0.01f + tf_hash_uniform(seed + 3, (uint64_t)i);
    if (with_nan) sx[(M - 1) * nb] = NAN;
}

/* (M, N, Kp) of the kernels' checks: partial tiles, odd rows, long depths. */
static const int64_t SHAPES[][3] = {{1, 1, 64}, {1, 5, 128}, {3, 7, 64}, {4, 4, 192}, {5, 9, 64}, {9, 13, 256},
                                    {37, 150, 768}, {1, 2304, 768}, {8, 3, 3072}, {2, 6, 1536}, {2, 11, 384},
                                    /* whole tiles of 16 input rows and 16 weight rows, and their edges */
                                    {16, 16, 64}, {17, 33, 128}, {48, 64, 384}, {35, 70, 1536}, {64, 5, 64},
                                    /* one input row (a decoding step) over 2, 3 and 4 + 3 panels */
                                    {1, 20, 64}, {1, 40, 128}, {1, 100, 192}};
enum { N_SHAPES = sizeof SHAPES / sizeof *SHAPES };

/* A kernel's product against the reference's, bit for bit, over SHAPES; 0 when equal. */
static int gemm_differs(tf_q8_gemm_fn f, const char *what) {
    for (size_t s = 0; s < N_SHAPES; s++) {
        int64_t M = SHAPES[s][0], N = SHAPES[s][1], Kp = SHAPES[s][2], nb = Kp / 32;
        uint8_t *xq = malloc((size_t)(M * Kp));
        int8_t *q = malloc((size_t)(N * Kp));
        float *sx = malloc((size_t)(M * nb) * 4), *sw = malloc((size_t)(N * nb) * 4);
        float *y0 = calloc((size_t)(M * N), 4), *y1 = calloc((size_t)(M * N), 4);
        random_bytes(xq, q, sx, sw, M, N, Kp, 10 + s, s % 3 == 2);
        for (int64_t i = 0; i < M * N; i++) y0[i] = y1[i] = (float)i * 0.25f; /* it adds to y */
        tf_q8_ref()->gemm(y0, N, xq, sx, M, q, sw, N, Kp);
        f(y1, N, xq, sx, M, q, sw, N, Kp);
        int same = !memcmp(y0, y1, (size_t)(M * N) * 4);
        free(xq), free(q), free(sx), free(sw), free(y0), free(y1);
        if (!same) {
            printf("  %s and reference differ at M %lld N %lld Kp %lld\n", what, (long long)M, (long long)N,
                   (long long)Kp);
            return 1;
        }
    }
    return 0;
}

/* A product against the reference, or why it was not run (f NULL). */
static void kernel_equals_reference(tf_q8_gemm_fn f, const char *what, const char *absent) {
    if (!f) printf("  (%s: its kernel not run)\n", absent);
    else CHECK(!gemm_differs(f, what));
}

/* The VNNI product of the block scheme (kern_q8_avx512.c) against the
 * reference (in use on AVX-512 VNNI CPUs with avx512 float kernels). */
TEST(quant_vnni_kernel_equals_reference) {
    kernel_equals_reference(tf_q8_vnni_gemm(), "VNNI", "no AVX-512 VNNI on this CPU");
}

/* The VNNI product on packed copies (in use on AVX-512 VNNI CPUs without
 * AMX) against the reference, bit for bit: every shape of SHAPES, over
 * all rows and over a range of them that starts and ends inside a panel of
 * 16, its output rows ldy apart. */
TEST(quant_vnni_packed_equals_reference) {
    tf_q8_packed_fn f = tf_q8_vnni_packed();
    if (!f) {
        printf("  (no AVX-512 VNNI on this CPU: its kernel not run)\n");
        return;
    }
    for (size_t c = 0; c < N_SHAPES; c++) {
        int64_t M = SHAPES[c][0], N = SHAPES[c][1], Kp = SHAPES[c][2], nb = Kp / 32, N16 = tf_q8_packed_rows(N);
        uint8_t *xq = malloc((size_t)(M * Kp));
        int8_t *q = malloc((size_t)(N * Kp)), *pw = aligned_alloc(64, (size_t)(N16 * Kp));
        float *sx = malloc((size_t)(M * nb) * 4), *sw = malloc((size_t)(N * nb) * 4), *ps = malloc((size_t)(N16 * nb) * 4);
        int16_t *sum = malloc((size_t)(N16 * nb) * 2);
        float *y0 = malloc((size_t)(M * N) * 4), *y1 = malloc((size_t)(M * N) * 4), *bias = malloc((size_t)N * 4);
        random_bytes(xq, q, sx, sw, M, N, Kp, 40 + c, c % 3 == 2);
        for (int64_t j = 0; j < N; j++) bias[j] = tf_hash_uniform(50 + c, (uint64_t)j) - 0.5f;
        tf_q8_pack(pw, ps, sum, q, sw, N, Kp);
        tf_q8_packed p = {pw, ps, sum, N, Kp};
        int64_t ranges[2][2] = {{0, N}, {N / 3, N - N / 5}};
        for (int r = 0; r < 2; r++) {
            int64_t r0 = ranges[r][0], r1 = ranges[r][1] > r0 ? ranges[r][1] : r0 + 1, n = r1 - r0;
            for (int64_t i = 0; i < M * N; i++) y0[i] = y1[i] = (float)i * 0.25f; /* it adds to y */
            tf_q8_ref()->gemm(y0, N, xq, sx, M, q + r0 * Kp, sw + r0 * nb, n, Kp);
            f(y1, N, NULL, xq, sx, M, &p, r0, r1);
            CHECKF(!memcmp(y0, y1, (size_t)(M * N) * 4), "packed and reference differ at M %lld N %lld Kp %lld, rows %lld-%lld",
                   (long long)M, (long long)N, (long long)Kp, (long long)r0, (long long)r1);
            /* with a bias: y's own values (NaN here) never read */
            for (int64_t m = 0; m < M; m++)
                for (int64_t j = 0; j < N; j++) y0[m * N + j] = j < n ? bias[j] : NAN, y1[m * N + j] = NAN;
            tf_q8_ref()->gemm(y0, N, xq, sx, M, q + r0 * Kp, sw + r0 * nb, n, Kp);
            f(y1, N, bias, xq, sx, M, &p, r0, r1);
            int64_t same = 0;
            for (int64_t m = 0; m < M; m++) same += !memcmp(y0 + m * N, y1 + m * N, (size_t)n * 4);
            CHECKF(same == M, "packed with a bias differs at M %lld N %lld Kp %lld, rows %lld-%lld", (long long)M,
                   (long long)N, (long long)Kp, (long long)r0, (long long)r1);
        }
        free(xq), free(q), free(pw), free(sx), free(sw), free(ps), free(sum), free(y0), free(y1), free(bias);
    }
}

/* The AMX-INT8 product (kern_q8_amx.c) against the reference: in use, through
 * the AVX-512 set, on CPUs with AMX-INT8 and avx512 float kernels. */
TEST(quant_amx_kernel_equals_reference) {
    kernel_equals_reference(tf_q8_amx_gemm(), "AMX", "no AMX-INT8 on this CPU, or TFORMER_AMX=0");
}

/* The AVX2 kernel (vpmaddwd) against the reference, and which set is in use
 * (quant.c's choose): the AVX-512 one (its quantisation, the VNNI product
 * where the CPU has VNNI) on avx512 float kernels, the AVX2 one on avx2, the
 * reference on portable. */
TEST(quant_avx2_kernel_equals_reference) {
    const tf_q8_kernels *ka = tf_q8_avx2();
    if (!ka) {
        printf("  (no AVX2 on this CPU: its kernel not run)\n");
        return;
    }
    CHECK(!gemm_differs(ka->gemm, "AVX2"));
    const char *isa = tf_kern()->name;
    const tf_q8_kernels *want = !strcmp(isa, "portable")                  ? tf_q8_ref()
                                : !strcmp(isa, "avx512") && tf_q8_avx512() ? tf_q8_avx512()
                                                                           : ka;
    CHECKF(tf_q8_best() == want, "in use: %s, float kernels %s", tf_q8_best()->name, isa);
    /* copies packed exactly where the VNNI product is the AVX-512 set's (no AMX) */
    int packed = want == tf_q8_avx512() && tf_q8_vnni_gemm() && !tf_q8_amx_gemm();
    CHECKF((tf_q8_best()->packed != NULL) == packed, "packed copies %s", tf_q8_best()->packed ? "in use" : "not in use");
}

/* The AVX-512 quantisation against the reference's: random rows with ties,
 * zeros, huge and tiny values, and a column block with NaN and inf lanes
 * (in use on avx512 float kernels: quant.c's choose). */
TEST(quant_avx512_quantisation_equals_reference) {
    const tf_q8_kernels *kv = tf_q8_avx512(), *kr = tf_q8_ref();
    if (!kv) return;
    enum { K = 203, LD = 21 };
    float x[K * LD], s[16], am0[16], am1[16];
    int8_t q0[16 * 256], q1[16 * 256];
    for (int i = 0; i < K * LD; i++) x[i] = (tf_hash_uniform(5, (uint64_t)i) - 0.5f) * 8.0f;
    for (int i = 0; i < K * LD; i += 7) x[i] = (float)(i % 9) - 4.5f; /* halves: ties at scale 1 */
    x[3] = 0.0f, x[11] = 1e-30f, x[13] = -3e30f;
    for (int n = 1; n <= K; n += 29)
        for (int off = 0; off <= 128; off += 128) {
            int b0 = 0, b1 = 0;
            float a0 = kr->amax(x, n, &b0), a1 = kv->amax(x, n, &b1);
            CHECKF(a0 == a1 && b0 == b1, "amax of %d values: %g / %g", n, a0, a1);
            for (float sc = 0.75f; sc < 3e28f; sc *= 1e7f) {
                kr->quant(q0, x, n, sc, off), kv->quant(q1, x, n, sc, off);
                CHECKF(!memcmp(q0, q1, (size_t)n), "quant of %d values, scale %g, offset %d", n, sc, off);
            }
        }
    x[5 * LD + 2] = NAN, x[9 * LD + 4] = INFINITY;
    int bad0[16], bad1[16];
    for (int nb = 1; nb <= 16; nb += 5) {
        kr->amax_cols(am0, bad0, x, LD, K, nb), kv->amax_cols(am1, bad1, x, LD, K, nb);
        CHECKF(!memcmp(am0, am1, sizeof(float) * nb) && !memcmp(bad0, bad1, sizeof(int) * nb), "amax_cols nb %d", nb);
        for (int j = 0; j < nb; j++) s[j] = bad0[j] ? NAN : j == 1 ? 0.0f : am0[j] / 127.0f;
        memset(q0, 0, sizeof q0), memset(q1, 0, sizeof q1);
        kr->quant_cols(q0, 256, x, LD, K, s, nb), kv->quant_cols(q1, 256, x, LD, K, s, nb);
        CHECKF(!memcmp(q0, q1, sizeof q0), "quant_cols nb %d", nb);
    }
    /* whole input rows in one pass (quant_row_u8): partial and padding blocks, a zero block, NaN and inf */
    for (int i = 64; i < 96; i++) x[i] = 0.0f;
    static const int64_t Ks[] = {1, 16, 17, 32, 33, 64, 100, 203, 640};
    for (size_t c = 0; c < sizeof Ks / sizeof *Ks; c++) {
        int64_t Kr = Ks[c], Kp = (Kr + 63) / 64 * 64, M = K * LD / Kr < 6 ? K * LD / Kr : 6;
        uint8_t u0[6 * 640], u1[6 * 640];
        float s0[6 * 20], s1[6 * 20];
        tf_quant_rows_with(kr, u0, s0, x, M, Kr, Kp), tf_quant_rows_with(kv, u1, s1, x, M, Kr, Kp);
        CHECKF(!memcmp(u0, u1, (size_t)(M * Kp)) && !memcmp(s0, s1, sizeof(float) * (size_t)(M * Kp / 32)),
               "rows of %lld values", (long long)Kr);
    }
}

/* Random x (M,K), w (N,K) (std wstd) and b (N) in arena a, from seed. */
static void random_inputs(tf_arena *a, int64_t M, int64_t K, int64_t N, float wstd, uint64_t seed, tf_tensor **x,
                          tf_tensor **w, tf_tensor **b) {
    *x = tf_tensor_alloc(a, TF_DTYPE_F32, 2, (int64_t[]){M, K}, 0);
    *w = tf_tensor_alloc(a, TF_DTYPE_F32, 2, (int64_t[]){N, K}, 0);
    *b = tf_tensor_alloc(a, TF_DTYPE_F32, 1, (int64_t[]){N}, 0);
    tf_tensor_fill_normal(*x, seed, 1.0f), tf_tensor_fill_normal(*w, seed + 1, wstd);
    tf_tensor_fill_normal(*b, seed + 2, 1.0f);
}

/* The rounding bound of one int8 output (row xr, weight row wr, K values)
 * against the float one: over each block of 32, sum |x| sw/2 + |w| sx/2 +
 * sx sw/4 with the block's scales, plus 1e-5 for the float sums. */
static double block_bound(const float *xr, const float *wr, int64_t K) {
    double bound = 1e-5;
    for (int64_t k0 = 0; k0 < K; k0 += 32) {
        int64_t k1 = k0 + 32 < K ? k0 + 32 : K;
        double xa = 0, wa = 0, ax = 0, aw = 0;
        for (int64_t k = k0; k < k1; k++) {
            xa = fmax(xa, fabs(xr[k])), wa = fmax(wa, fabs(wr[k]));
            ax += fabs(xr[k]), aw += fabs(wr[k]);
        }
        double sx = xa / 127, sw = wa / 127;
        bound += ax * sw / 2 + aw * sx / 2 + (double)(k1 - k0) * sx * sw / 4;
    }
    return bound;
}

/* Random x (M,K) and a layer (N,K): the int8 output within the rounding
 * bound of the float one with the block scales, and not equal to it (the
 * int8 path ran). Every input row has a channel 400 times the rest (as a
 * LayerNorm's output of a BERT has a few), and the even weight rows are zero
 * in its block: their outputs' bound is the other blocks', which one scale
 * per token (the scheme before) exceeds (it rounds the rest to 0). */
TEST(quant_error_within_rounding_bound) {
    const int64_t M = 6, K = 300, N = 70;
    tf_arena *a = tf_arena_new(0);
    tf_tensor *x, *w, *b;
    random_inputs(a, M, K, N, 0.05f, 3, &x, &w, &b);
    for (int64_t m = 0; m < M; m++) tf_f32(x)[m * K + 37] = 400.0f;
    for (int64_t n = 0; n < N; n += 2) memset(tf_f32(w) + n * K + 32, 0, 32 * sizeof(float));
    layer L;
    float *yf = malloc((size_t)(M * N) * 4), *yq = malloc((size_t)(M * N) * 4);
    CHECK(!layer_new(&L, w, b, 0) && !dense(&L, x, 0, 0, yf));
    CHECK(!tf_params_quantize(L.ps, TF_QUANT_INT8) && !dense(&L, x, 0, 0, yq));
    int64_t over = 0, differ = 0;
    double worst = 0;
    for (int64_t m = 0; m < M; m++)
        for (int64_t n = 0; n < N; n++) {
            double bound = block_bound(tf_f32(x) + m * K, tf_f32(w) + n * K, K);
            double d = fabs(yq[m * N + n] - yf[m * N + n]);
            over += d > bound, differ += d > 0, worst = fmax(worst, d / bound);
        }
    free(yf), free(yq);
    tf_params_free(L.ps);
    tf_arena_free(a);
    printf("    largest error over its bound %.3f\n", worst);
    CHECKF(!over, "%lld of %lld outputs off by more than the rounding bound", (long long)over, (long long)(M * N));
    CHECKF(differ > M * N / 2, "only %lld of %lld outputs differ from the float ones: the int8 path did not run",
           (long long)differ, (long long)(M * N));
}

/* Which products read the copy: a view of a block of rows does (its rows of
 * the copy); a product with gradients and a dropped copy do not. */
TEST(quant_views_gradients_and_dropping) {
    const int64_t M = 3, K = 40, N = 12;
    tf_arena *a = tf_arena_new(0);
    tf_tensor *x, *w, *b;
    random_inputs(a, M, K, N, 0.1f, 6, &x, &w, &b);
    layer L;
    float yf[M * N], yq[M * N], yg[M * N], yv[M * 4];
    CHECK(!layer_new(&L, w, b, 0) && !dense(&L, x, 0, 0, yf) && !tf_params_quantize(L.ps, TF_QUANT_INT8));
    CHECK(!dense(&L, x, 0, 1, yg) && !memcmp(yg, yf, sizeof yf)); /* with gradients: the float weights */
    CHECK(tf_params_quant_bytes(L.ps) == 0);                       /* ... and no copy built for it */
    CHECK(!dense(&L, x, 0, 0, yq) && memcmp(yq, yf, sizeof yf) && tf_params_quant_bytes(L.ps) > 0);
    /* rows 4..8 of the weight as a view (what attention's q/k/v slices are) */
    tf_ctx *ctx = tf_ctx_new(1);
    tf_ctx_set_grad(ctx, 0);
    tf_tensor *xi = tf_tensor_new(ctx, TF_DTYPE_F32, 2, x->shape, 0);
    memcpy(tf_f32(xi), tf_f32(x), sizeof(float) * M * K);
    tf_tensor *y = tf_dense(ctx, xi, tf_narrow(ctx, L.l.weight, 0, 4, 4), 0, tf_narrow(ctx, L.l.bias, 0, 4, 4),
                            TF_ACT_NONE);
    CHECK(y);
    memcpy(yv, tf_f32(y), sizeof yv);
    tf_ctx_free(ctx);
    int64_t bad = 0;
    for (int64_t m = 0; m < M; m++)
        for (int64_t j = 0; j < 4; j++) bad += yv[m * 4 + j] != yq[m * N + 4 + j];
    CHECKF(!bad, "%lld outputs of the row view differ from the whole copy's", (long long)bad);
    CHECK(!tf_params_quantize(L.ps, TF_QUANT_NONE) && !dense(&L, x, 0, 0, yq) && !memcmp(yq, yf, sizeof yf));
    CHECK(tf_params_quantize(L.ps, (tf_quant_kind)7) == -1 && strstr(tf_error(), "unknown kind"));
    tf_params_free(L.ps);
    tf_arena_free(a);
}

/* A row holding NaN gives NaN outputs (not garbage) and leaves the other rows alone. */
TEST(quant_nan_input_row_gives_nan) {
    const int64_t M = 2, K = 70, N = 5;
    tf_arena *a = tf_arena_new(0);
    tf_tensor *x, *w, *b;
    random_inputs(a, M, K, N, 0.1f, 8, &x, &w, &b);
    tf_f32(x)[K + 3] = NAN;
    layer L;
    float y[M * N];
    CHECK(!layer_new(&L, w, b, 0) && !tf_params_quantize(L.ps, TF_QUANT_INT8) && !dense(&L, x, 0, 0, y));
    int64_t nan0 = 0, nan1 = 0;
    for (int64_t n = 0; n < N; n++) nan0 += isnan(y[n]), nan1 += isnan(y[N + n]);
    tf_params_free(L.ps);
    tf_arena_free(a);
    CHECKF(nan0 == 0 && nan1 == N, "NaN outputs: row 0 %lld, row 1 %lld of %lld", (long long)nan0, (long long)nan1,
           (long long)N);
}

/* A GPT (GPT-2's (in,out) weights, the tied LM head): with int8 weights every
 * matrix product of the forward reads a copy (the position table, only
 * looked up, gets none), and the logits stay close to the float ones. */
TEST(quant_gpt_forward_uses_every_copy) {
    const int V = 50, T = 16, L = 2, H = 2, C = 64;
    tf_gpt_config c = tf_gpt_config_default(V, T, L, H, C);
    tf_gpt *m = tf_gpt_new(&c, 3);
    CHECK(m);
    float *lf = malloc(sizeof(float) * T * V), *lq = malloc(sizeof(float) * T * V);
    for (int pass = 0; pass < 2; pass++) {
        if (pass) CHECK(!tf_params_quantize(m->params, TF_QUANT_INT8));
        tf_ctx *ctx = tf_ctx_new(1);
        tf_ctx_set_grad(ctx, 0);
        tf_tensor *ids = tf_tensor_new(ctx, TF_DTYPE_I32, 2, (int64_t[]){1, T}, 0);
        for (int t = 0; t < T; t++) tf_i32(ids)[t] = (t * 7 + 3) % V;
        tf_tensor *logits = NULL;
        tf_gpt_forward(ctx, m, ids, NULL, &logits);
        CHECK(logits);
        memcpy(pass ? lq : lf, tf_f32(logits), sizeof(float) * T * V);
        tf_ctx_free(ctx);
    }
    /* c_attn (3C), attn c_proj (C), c_fc (4C), mlp c_proj (C, K 4C); wte (V); C = 64 = Kp */
    size_t want = (size_t)L * (copy_bytes(3 * C, C) + copy_bytes(C, C) + copy_bytes(4 * C, C) + copy_bytes(C, 4 * C)) +
                  copy_bytes(V, C);
    size_t got = tf_params_quant_bytes(m->params);
    double rel = test_rel_err(lq, lf, (long)T * V);
    free(lf), free(lq);
    tf_gpt_free(m);
    CHECKF(got == want, "int8 copies of %zu bytes, %zu expected (every product's weight, no position table)", got,
           want);
    CHECKF(rel > 0 && rel < 0.02, "relative error of the int8 logits %.4g", rel);
}

/* The largest error of y (M,N) against x W^T + b computed in double, over
 * the largest |term| sum of its row (the product's own rounding scale). */
static double err_vs_double(const float *y, const tf_tensor *x, const tf_tensor *w, const tf_tensor *b) {
    int64_t M = x->shape[0], K = x->shape[1], N = w->shape[0];
    double worst = 0;
    for (int64_t m = 0; m < M; m++)
        for (int64_t n = 0; n < N; n++) {
            double s = tf_f32(b)[n], scale = fabs(s);
            for (int64_t k = 0; k < K; k++) {
                double t = (double)tf_f32(x)[m * K + k] * tf_f32(w)[n * K + k];
                s += t, scale += fabs(t);
            }
            worst = fmax(worst, fabs(y[m * N + n] - s) / scale);
        }
    return worst;
}

/* tf_dense of x with rows r0..r0+n of the layer's weight (a view, as
 * attention's q/k/v slices), gradients off, into out (M,n). */
static int dense_rows(const layer *L, const tf_tensor *x, int64_t r0, int64_t n, float *out) {
    tf_ctx *ctx = tf_ctx_new(1);
    tf_ctx_set_grad(ctx, 0);
    tf_tensor *xi = tf_tensor_new(ctx, TF_DTYPE_F32, 2, x->shape, 0);
    memcpy(tf_f32(xi), tf_f32(x), sizeof(float) * (size_t)tf_numel(x));
    tf_tensor *y = xi ? tf_dense(ctx, xi, tf_narrow(ctx, L->l.weight, 0, r0, n), 0, tf_narrow(ctx, L->l.bias, 0, r0, n),
                                 TF_ACT_NONE) : NULL;
    if (y) memcpy(out, tf_f32(y), sizeof(float) * (size_t)tf_numel(y));
    tf_ctx_free(ctx);
    return y ? 0 : -1;
}

/* TF_QUANT_F32: a few rows read the transposed float copy through the tile
 * kernel (float accuracy against double, not the BLAS's bits), a row view
 * its columns of the copy; many rows read the whole copy through the BLAS,
 * a row view of many rows the weight itself; a product with gradients and
 * an (in,out) weight (the kernel's layout already) build none. */
TEST(quant_f32_copies_for_few_rows) {
    const int64_t M = 6, K = 130, N = 75, BIG = TF_TILE_MAX_M;
    tf_arena *a = tf_arena_new(0);
    tf_tensor *x, *w, *b, *xb, *wb, *bb;
    random_inputs(a, M, K, N, 0.1f, 11, &x, &w, &b);
    random_inputs(a, BIG, K, N, 0.1f, 11, &xb, &wb, &bb);
    layer L, T;
    float *yf = malloc(sizeof(float) * BIG * N), *yc = malloc(sizeof(float) * BIG * N), yv[BIG * 5];
    int tile = tf_kern() != tf_kern_get(TF_ISA_PORTABLE); /* TFORMER_ISA=portable: no copy, the BLAS */
    size_t copy = tile ? (size_t)(N * K) * sizeof(float) : 0;
    CHECK(!layer_new(&L, w, b, 0) && !dense(&L, x, 0, 0, yf) && !tf_params_quantize(L.ps, TF_QUANT_F32));
    CHECK(!dense(&L, x, 0, 1, yc) && !memcmp(yc, yf, sizeof(float) * M * N) && tf_params_quant_bytes(L.ps) == 0);
    CHECK(!dense_rows(&L, xb, 9, 5, yv) && tf_params_quant_bytes(L.ps) == 0); /* many rows of a view: no copy */
    CHECK(!dense(&L, x, 0, 0, yc) && tf_params_quant_bytes(L.ps) == copy);
    double e = err_vs_double(yc, x, w, b);
    CHECKF(e < 1e-6, "the copy's product is %.3g off double (relative to the sum of |terms|)", e);
    /* another summation order: the tile kernel ran (MKL's small products sum in its order: the same bits) */
    CHECK(!tile || !strncmp(tf_blas_info(), "Intel MKL", 9) || memcmp(yc, yf, sizeof(float) * M * N));
    CHECK(!dense_rows(&L, x, 9, 5, yv));
    int64_t bad = 0;
    for (int64_t m = 0; m < M; m++)
        for (int64_t j = 0; j < 5; j++) bad += yv[m * 5 + j] != yc[m * N + 9 + j];
    CHECKF(!tile || !bad, "%lld outputs of the row view differ from the whole copy's", (long long)bad);
    CHECK(!dense(&L, xb, 0, 0, yc)); /* 192 rows: the BLAS on the whole copy */
    e = err_vs_double(yc, xb, w, b);
    CHECKF(e < 1e-6, "192 rows through the copy: %.3g off double", e);
    /* (in,out): no copy; the product (tf_gemm_acc's tile path) within float accuracy too */
    CHECK(!layer_new(&T, w, b, 1) && !tf_params_quantize(T.ps, TF_QUANT_F32) && !dense(&T, x, 1, 0, yc));
    CHECK(tf_params_quant_bytes(T.ps) == 0);
    e = err_vs_double(yc, x, w, b);
    CHECKF(e < 1e-6, "the (in,out) product is %.3g off double", e);
    free(yf), free(yc);
    tf_params_free(L.ps), tf_params_free(T.ps);
    tf_arena_free(a);
}
