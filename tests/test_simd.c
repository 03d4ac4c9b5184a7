/* The AVX2 and AVX-512 kernels against the portable ones, on sizes that are
 * not multiples of the vector width, and their edge cases. */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ops/kernels.h"
#include "ops/ops_internal.h"
#include "test.h"

static const int64_t sizes[] = {1, 2, 7, 8, 9, 15, 16, 17, 31, 33, 63, 65, 100, 257, 1000, 4099};
#define NSIZES (int)(sizeof sizes / sizeof sizes[0])
#define MAXN 4099

/* Largest |a - b| over the largest |b|: measured worst 2.7e-7 (gelu's
 * gradient), bound 1e-6; a 4e-5 change to one exp coefficient fails it. */
static double max_err(const float *a, const float *b, int64_t n) {
    double d = 0.0, m = 1e-30;
    for (int64_t i = 0; i < n; i++) {
        double e = fabs((double)a[i] - b[i]);
        if (!(e <= d)) d = e; /* NaN wins */
        if (fabs(b[i]) > m) m = fabs(b[i]);
    }
    return d / m;
}

/* Largest |a - b| / |b| element by element (tanh near 0 keeps its digits). */
static double rel_err(const float *a, const float *b, int64_t n) {
    double d = 0.0;
    for (int64_t i = 0; i < n; i++) {
        double e = b[i] ? fabs((double)a[i] - b[i]) / fabs((double)b[i]) : fabs((double)a[i]);
        if (!(e <= d)) d = e; /* NaN wins */
    }
    return d;
}

static void fill(float *x, int64_t n, uint64_t seed, float scale) {
    for (int64_t i = 0; i < n; i++) x[i] = scale * (2.0f * tf_hash_uniform(seed, (uint64_t)i) - 1.0f);
}

typedef struct {
    float x[MAXN], y[MAXN], g[MAXN], w[MAXN], b[MAXN], out0[MAXN], out1[MAXN];
} bufs;

/* One variant's row kernels against the portable ones; returns the worst error. */
static double compare(const tf_kernels *k, const tf_kernels *ref, bufs *s, int64_t n, const char **worst) {
    double e, w = 0.0;
#define TRACK(name, err) (e = (err), e > w || e != e ? (w = e, *worst = name) : 0)
    fill(s->x, n, 1, 6.0f), fill(s->g, n, 2, 1.0f), fill(s->w, n, 3, 1.0f), fill(s->b, n, 4, 1.0f);
    ref->gelu_tanh(s->out0, s->x, n), k->gelu_tanh(s->out1, s->x, n);
    TRACK("gelu_tanh", max_err(s->out1, s->out0, n));
    for (int acc = 0; acc < 2; acc++) {
        memcpy(s->out0, s->w, (size_t)n * 4), memcpy(s->out1, s->w, (size_t)n * 4);
        ref->gelu_tanh_grad(s->out0, s->g, s->x, n, acc), k->gelu_tanh_grad(s->out1, s->g, s->x, n, acc);
        TRACK("gelu_tanh_grad", max_err(s->out1, s->out0, n));
    }
    ref->tanh(s->out0, s->x, n), k->tanh(s->out1, s->x, n);
    TRACK("tanh", rel_err(s->out1, s->out0, n));
    ref->gelu_erf(s->out0, s->x, n), k->gelu_erf(s->out1, s->x, n);
    TRACK("gelu_erf", max_err(s->out1, s->out0, n));
    for (int acc = 0; acc < 2; acc++) {
        memcpy(s->out0, s->w, (size_t)n * 4), memcpy(s->out1, s->w, (size_t)n * 4);
        ref->gelu_erf_grad(s->out0, s->g, s->x, n, acc), k->gelu_erf_grad(s->out1, s->g, s->x, n, acc);
        TRACK("gelu_erf_grad", max_err(s->out1, s->out0, n));
    }
    memcpy(s->y, s->x, (size_t)n * 4);
    for (int64_t i = 3; i < n; i += 5) s->y[i] = -INFINITY; /* masked entries */
    ref->softmax(s->out0, s->y, n), k->softmax(s->out1, s->y, n);
    TRACK("softmax", max_err(s->out1, s->out0, n));
    float e0 = ref->exp_shift(s->out0, s->y, 2.5f, n), e1 = k->exp_shift(s->out1, s->y, 2.5f, n);
    TRACK("exp_shift", max_err(s->out1, s->out0, n));
    TRACK("exp_shift sum", fabs(e1 - e0) / fabs(e0));
    double sx0, sx1;
    float l0 = ref->softmax_lse(s->out0, s->x, n, &sx0), l1 = k->softmax_lse(s->out1, s->x, n, &sx1);
    TRACK("softmax_lse prob", max_err(s->out1, s->out0, n));
    TRACK("softmax_lse lse", fabs(l1 - l0) / (fabs(l0) + 1.0));
    TRACK("softmax_lse sum", fabs(sx1 - sx0) / (fabs(sx0) + (double)n));
    for (int affine = 0; affine < 2; affine++) {
        float m0, r0, m1, r1;
        const float *wt = affine ? s->w : NULL, *bt = affine ? s->b : NULL;
        ref->layernorm(s->out0, &m0, &r0, s->x, wt, bt, n, 1e-5f);
        k->layernorm(s->out1, &m1, &r1, s->x, wt, bt, n, 1e-5f);
        TRACK("layernorm", max_err(s->out1, s->out0, n));
        TRACK("layernorm mean/rstd", fabs(m1 - m0) / 6.0 + fabs(r1 - r0) / r0);
        memcpy(s->out0, s->b, (size_t)n * 4), memcpy(s->out1, s->b, (size_t)n * 4);
        ref->layernorm_grad(s->out0, s->g, s->x, wt, m0, r0, n);
        k->layernorm_grad(s->out1, s->g, s->x, wt, m0, r0, n);
        TRACK("layernorm_grad", n > 1 ? max_err(s->out1, s->out0, n) : 0.0);
    }
    tf_adamw_coef co = {0.9f, 0.95f, 1.0f / 0.1f, 1.0f / 0.05f, 1e-3f, 1e-8f, 1e-4f, 0.37f}; /* a clip factor too */
    float *m[2] = {s->y, s->w}, *v[2] = {s->b, s->g}; /* moments, reused buffers */
    memcpy(s->out0, s->x, (size_t)n * 4), memcpy(s->out1, s->x, (size_t)n * 4);
    fill(s->y, n, 5, 0.1f), fill(s->w, n, 5, 0.1f), fill(s->b, n, 6, 0.01f), fill(s->g, n, 6, 0.01f);
    for (int64_t i = 0; i < n; i++) s->b[i] = s->g[i] = fabsf(s->b[i]);
    float grad[MAXN];
    fill(grad, n + 13 < MAXN ? n + 13 : MAXN, 7, 1.0f); /* past n: axpy_rows below reads up to 13 (its ak) */
    ref->adamw(s->out0, grad, m[0], v[0], n, &co), k->adamw(s->out1, grad, m[1], v[1], n, &co);
    TRACK("adamw", max_err(s->out1, s->out0, n));
    TRACK("adamw moments", max_err(m[1], m[0], n) + max_err(v[1], v[0], n));
    memcpy(s->out0, s->x, (size_t)n * 4), memcpy(s->out1, s->x, (size_t)n * 4);
    ref->acc(s->out0, grad, n), k->acc(s->out1, grad, n);
    TRACK("acc", max_err(s->out1, s->out0, n));
    /* y += a B over 1..13 rows (8-, 4- and 1-row passes), rows padded apart, a column tail */
    int64_t an = n < 300 ? n : 300, ak = n % 13 + 1;
    fill(s->b, ak * (an + 3), 11, 1.0f);
    memcpy(s->out0, s->x, (size_t)an * 4), memcpy(s->out1, s->x, (size_t)an * 4);
    ref->axpy_rows(s->out0, grad, s->b, an + 3, ak, an), k->axpy_rows(s->out1, grad, s->b, an + 3, ak, an);
    TRACK("axpy_rows", max_err(s->out1, s->out0, an));
    /* tile products: m rows, c columns (odd, past one register block), k steps, A either layout;
     * C's rows 2 apart from each other (its gaps must stay as they were) */
    int64_t tm = n < 29 ? n : 29, tc = n % 131 + 1, tk = n % 13 + 1, ldc = tc + 2;
    fill(s->w, tm * tk, 8, 1.0f), fill(s->b, tk * (tc + 3), 9, 1.0f), fill(s->out0, tm * ldc, 10, 1.0f);
    for (int layout = 0; layout < 2; layout++)
        for (int beta = 0; beta < 2; beta++) {
            int64_t rs = layout ? 1 : tk, cs = layout ? tm : 1;
            memcpy(s->out1, s->out0, (size_t)(tm * ldc) * 4), memcpy(s->y, s->out0, (size_t)(tm * ldc) * 4);
            ref->tile_gemm(s->y, ldc, s->w, rs, cs, s->b, tc + 3, tm, tc, tk, (float)beta);
            k->tile_gemm(s->out1, ldc, s->w, rs, cs, s->b, tc + 3, tm, tc, tk, (float)beta);
            TRACK("tile_gemm", max_err(s->out1, s->y, tm * ldc));
            TRACK("tile_gemm gaps", tm > 0 ? max_err(s->out1 + tc, s->out0 + tc, 2) : 0.0);
        }
    /* dot_rows: tm rows (past the 4-row blocks), tk2 columns (whole vectors and a tail) */
    int64_t tk2 = n % 70 + 1;
    fill(s->w, tm * (tk2 + 2), 11, 1.0f), fill(s->b, tk2, 12, 1.0f), fill(s->out0, tm, 13, 1.0f);
    for (int beta = 0; beta < 2; beta++) {
        memcpy(s->out1, s->out0, (size_t)tm * 4), memcpy(s->y, s->out0, (size_t)tm * 4);
        ref->dot_rows(s->y, s->w, tk2 + 2, s->b, tm, tk2, (float)beta);
        k->dot_rows(s->out1, s->w, tk2 + 2, s->b, tm, tk2, (float)beta);
        TRACK("dot_rows", max_err(s->out1, s->y, tm));
    }
    /* gemv_f64: scores of thousands (the sums keep digits a float would lose) */
    int64_t gk = n % 19 + 1, gn = n < 200 ? n : 200;
    static double gx[19], ys[2][200];
    fill(s->w, gk, 14, 40.0f), fill(s->b, gk * (gn + 1), 15, 40.0f);
    for (int64_t i = 0; i < gk; i++) gx[i] = s->w[i] * (1.0 + 1e-9);
    double m0 = ref->gemv_f64(ys[0], gx, s->b, gn + 1, gk, gn), m1 = k->gemv_f64(ys[1], gx, s->b, gn + 1, gk, gn);
    double gw = fabs(m1 - m0), gm = 1e-30; /* the largest sum, returned */
    for (int64_t j = 0; j < gn; j++) {
        double d = fabs(ys[1][j] - ys[0][j]);
        if (!(d <= gw)) gw = d; /* NaN wins */
        gm = fmax(gm, fabs(ys[0][j]));
    }
    TRACK("gemv_f64", gw / gm * 1e8); /* double: 1e-14 of the largest sum */
    /* exp_shift_f64 on those scores (differences to their max of up to thousands: zeros too) */
    float g0 = ref->exp_shift_f64(s->out0, ys[0], m0, gn), g1 = k->exp_shift_f64(s->out1, ys[0], m0, gn);
    TRACK("exp_shift_f64", max_err(s->out1, s->out0, gn));
    TRACK("exp_shift_f64 sum", fabs(g1 - g0) / fabs(g0));
    /* softmax's backward: delta = sum P dP in double, then dS over dP (the same bits as the scalar expression) */
    fill(s->y, n, 16, 1.0f), fill(s->w, n, 17, 3.0f);
    for (int64_t i = 0; i < n; i++) s->y[i] = fabsf(s->y[i]);
    double d0 = ref->dot_f64(s->y, s->w, n), d1 = k->dot_f64(s->y, s->w, n), mag = 0.0;
    for (int64_t i = 0; i < n; i++) mag += fabs((double)s->y[i] * s->w[i]);
    /* summation orders differ by at most n roundings of the terms' magnitude; a lost term is far more */
    TRACK("dot_f64", fabs(d1 - d0) / (mag * (double)n * DBL_EPSILON) * 1e-7);
    memcpy(s->out0, s->w, (size_t)n * 4), memcpy(s->out1, s->w, (size_t)n * 4);
    ref->softmax_ds(s->out0, s->y, d0, 0.125f, n), k->softmax_ds(s->out1, s->y, d0, 0.125f, n);
    TRACK("softmax_ds", memcmp(s->out0, s->out1, (size_t)n * 4) ? 1.0 : 0.0);
    /* transpose: tm x tc2 (8x8 blocks and both edges), rows padded apart on both sides */
    int64_t tc2 = n % 37 + 1, ldt = tm + 3;
    fill(s->w, tm * (tc2 + 2), 18, 1.0f), fill(s->out0, tc2 * ldt, 19, 1.0f);
    memcpy(s->out1, s->out0, (size_t)(tc2 * ldt) * 4);
    ref->transpose(s->out0, ldt, s->w, tc2 + 2, tm, tc2), k->transpose(s->out1, ldt, s->w, tc2 + 2, tm, tc2);
    TRACK("transpose", memcmp(s->out0, s->out1, (size_t)(tc2 * ldt) * 4) ? 1.0 : 0.0);
#undef TRACK
    return w;
}

TEST(simd_variants_match_portable) {
    const tf_kernels *ref = tf_kern_get(TF_ISA_PORTABLE);
    bufs *s = malloc(sizeof *s);
    CHECK(ref && s);
    int tested = 0, bad_n = -1;
    const char *worst = "", *bad_isa = "";
    double bad = 0.0;
    for (int isa = TF_ISA_AVX2; isa < TF_ISA_COUNT && bad_n < 0; isa++) {
        const tf_kernels *k = tf_kern_get((tf_isa)isa);
        if (!k) continue; /* this CPU lacks it */
        tested++;
        for (int i = 0; i < NSIZES && bad_n < 0; i++)
            if (!((bad = compare(k, ref, s, sizes[i], &worst)) < 1e-6)) bad_n = (int)sizes[i], bad_isa = k->name;
    }
    free(s);
    CHECKF(bad_n < 0, "%s %s at n=%d: error %g", bad_isa, worst, bad_n, bad);
#if defined(__x86_64__)
    CHECKF(tested > 0, "no SIMD variant ran on this x86-64 CPU");
#endif
}

TEST(simd_edge_cases) {
    for (int isa = 0; isa < TF_ISA_COUNT; isa++) {
        const tf_kernels *k = tf_kern_get((tf_isa)isa);
        if (!k) continue;
        float x[19], y[19];
        for (int i = 0; i < 19; i++) x[i] = -INFINITY;
        k->softmax(y, x, 19); /* a fully masked row: zeros, not NaN */
        for (int i = 0; i < 19; i++) CHECKF(y[i] == 0.0f, "%s: masked row gave %g", k->name, y[i]);
        x[4] = 1.0f, x[17] = 1.0f;
        k->softmax(y, x, 19);
        for (int i = 0; i < 19; i++)
            CHECKF(y[i] == (i == 4 || i == 17 ? 0.5f : 0.0f), "%s: softmax[%d] = %g", k->name, i, y[i]);
        float big[5] = {-100.0f, -20.0f, 20.0f, 100.0f, NAN}, g[5];
        k->gelu_tanh(g, big, 5);
        CHECKF(g[0] == 0.0f && fabsf(g[1]) < 1e-30f && g[2] == 20.0f && g[3] == 100.0f && isnan(g[4]),
               "%s: gelu of -100 -20 20 100 NaN = %g %g %g %g %g", k->name, g[0], g[1], g[2], g[3], g[4]);
        float tx[8] = {-100.0f, -20.0f, 20.0f, 1e4f, NAN, 0.0f, 1e-20f, -0.625f}, t[8];
        k->tanh(t, tx, 8);
        CHECKF(t[0] == -1.0f && t[1] == -1.0f && t[2] == 1.0f && t[3] == 1.0f && isnan(t[4]) && t[5] == 0.0f &&
                   t[6] == 1e-20f && fabsf(t[7] - tanhf(-0.625f)) <= 2e-7f * 0.56f,
               "%s: tanh of -100 -20 20 1e4 NaN 0 1e-20 -0.625 = %g %g %g %g %g %g %g %.9g", k->name, t[0], t[1], t[2],
               t[3], t[4], t[5], t[6], t[7]);
    }
}

/* One shape of a batched decoding product against the same kernel set's
 * one-row kernel on each row alone (beta 1): axpy_rows_m against axpy_rows
 * ((in,out) weights: Y (m,n) += A (m,k) B), or dot_rows_m against dot_rows
 * ((out,in) weights: Y (m,n) += X (m,k) B^T). 1 when a bit differs (past m
 * and n, Y stays untouched in both). */
enum { RM_M = 11, RM_K = 75, RM_N = 131, RM_LD = RM_N + 5, RM_LA = RM_K + 3 };
static int rows_m_differs(const tf_kernels *k, int dot, int64_t m, int64_t n, int64_t kk, uint64_t seed) {
    static float A[RM_M * RM_LA], B[RM_N * RM_LA], y0[RM_M * RM_LD], y1[RM_M * RM_LD];
    fill(A, RM_M * RM_LA, 31, 1.0f), fill(B, RM_N * RM_LA, 32, 1.0f);
    fill(y0, RM_M * RM_LD, seed, 1.0f), memcpy(y1, y0, sizeof y0);
    for (int64_t i = 0; i < m; i++) {
        if (dot) k->dot_rows(y0 + i * RM_LD, B, RM_LA, A + i * RM_LA, n, kk, 1.0f);
        else k->axpy_rows(y0 + i * RM_LD, A + i * RM_LA, B, RM_LD, kk, n);
    }
    if (dot) k->dot_rows_m(y1, RM_LD, B, RM_LA, A, RM_LA, m, n, kk);
    else k->axpy_rows_m(y1, RM_LD, A, RM_LA, m, B, RM_LD, kk, n);
    return memcmp(y0, y1, sizeof y0) != 0;
}

/* The batched decoding products (serve's rows stepped together) equal each
 * row alone to the bit, in every kernel set: row counts around their blocks
 * (4 for axpy_rows_m, pairs for dot_rows_m), column counts around the vectors
 * and blocks of 4, lengths around the vectors (masked tails). */
TEST(simd_rows_m_equal_each_row_alone) {
    static const int64_t ms[] = {1, 2, 3, 4, 5, 7, 8, 11}, ns[] = {1, 3, 4, 5, 7, 16, 17, 23, 33, 65, 131},
                         ks[] = {1, 2, 7, 16, 17, 33, 64, 75};
    for (int isa = 0; isa < TF_ISA_COUNT; isa++) {
        const tf_kernels *k = tf_kern_get((tf_isa)isa);
        if (!k) continue;
        int bad[2] = {0, 0}, cases = 0;
        for (size_t a = 0; a < sizeof ms / sizeof *ms; a++)
            for (size_t b = 0; b < sizeof ns / sizeof *ns; b++)
                for (size_t c = 0; c < sizeof ks / sizeof *ks; c++, cases++)
                    for (int dot = 0; dot < 2; dot++) bad[dot] += rows_m_differs(k, dot, ms[a], ns[b], ks[c], 33 + cases);
        CHECKF(!bad[0] && !bad[1], "%s: of %d shapes, %d differ from axpy_rows and %d from dot_rows row by row", k->name,
               cases, bad[0], bad[1]);
    }
}

/* tile_gemm's sums in the SIMD sets are one FMA per k in order from 0, then C + the sum
 * (beta 1) or 0 + the sum (beta 0), for every row count and column tail (the register
 * blocks of whole rows and widths, the small blocks of constant rows and the general
 * one give the same bits: a tail that took another order fails); and pv_heads gives
 * each head the bits of tile_gemm's one row on it alone, for any number of heads. */
static int tile_differs(const tf_kernels *k, int64_t m, int64_t n, int64_t kk, int cols_major, int beta, uint64_t seed) {
    int64_t ldc = n + 3, ldb = n + 1, rs = cols_major ? 1 : kk, cs = cols_major ? m : 1;
    float *A = malloc((size_t)(m * kk) * 4), *B = malloc((size_t)(kk * ldb) * 4), *C = malloc((size_t)(m * ldc) * 4),
          *R = malloc((size_t)(m * ldc) * 4);
    fill(A, m * kk, seed, 1.0f), fill(B, kk * ldb, seed + 1, 1.0f), fill(C, m * ldc, seed + 2, 1.0f);
    memcpy(R, C, (size_t)(m * ldc) * 4);
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) {
            float acc = 0.0f;
            for (int64_t t = 0; t < kk; t++) acc = fmaf(A[i * rs + t * cs], B[t * ldb + j], acc);
            R[i * ldc + j] = (beta ? R[i * ldc + j] : 0.0f) + acc;
        }
    k->tile_gemm(C, ldc, A, rs, cs, B, ldb, m, n, kk, (float)beta);
    int bad = memcmp(C, R, (size_t)(m * ldc) * 4) != 0;
    free(A), free(B), free(C), free(R);
    return bad;
}

static int pv_differs(const tf_kernels *k, int64_t nh, int64_t n, int64_t kk, uint64_t seed) {
    int64_t sa = kk + 2, ldb = n + 5, sb = kk * ldb + 7, sc = n + 4;
    float *A = malloc((size_t)(nh * sa) * 4), *B = malloc((size_t)(nh * sb) * 4), *C = malloc((size_t)(nh * sc) * 4),
          *R = malloc((size_t)(nh * sc) * 4);
    fill(A, nh * sa, seed, 1.0f), fill(B, nh * sb, seed + 1, 1.0f), fill(C, nh * sc, seed + 2, 1.0f);
    memcpy(R, C, (size_t)(nh * sc) * 4);
    for (int64_t h = 0; h < nh; h++) k->tile_gemm(R + h * sc, sc, A + h * sa, kk, 1, B + h * sb, ldb, 1, n, kk, 1.0f);
    k->pv_heads(C, sc, A, sa, B, sb, ldb, nh, n, kk);
    int bad = memcmp(C, R, (size_t)(nh * sc) * 4) != 0;
    free(A), free(B), free(C), free(R);
    return bad;
}

TEST(simd_tile_gemm_sums_in_order_and_pv_heads_equal_each_head) {
    static const int64_t ms[] = {1, 2, 3, 5, 7, 8, 9, 13, 17}, ns[] = {1, 5, 8, 16, 20, 31, 32, 37, 48, 64, 70},
                         ks[] = {1, 7, 33, 64};
    int simd = 0;
    for (int isa = TF_ISA_PORTABLE + 1; isa < TF_ISA_COUNT; isa++) {
        const tf_kernels *k = tf_kern_get((tf_isa)isa);
        if (!k) continue;
        simd++;
        int bad = 0, cases = 0, pv_bad = 0, pv_cases = 0;
        for (size_t a = 0; a < sizeof ms / sizeof *ms; a++)
            for (size_t b = 0; b < sizeof ns / sizeof *ns; b++)
                for (size_t c = 0; c < sizeof ks / sizeof *ks; c++)
                    for (int v = 0; v < 4; v++, cases++) bad += tile_differs(k, ms[a], ns[b], ks[c], v & 1, v >> 1, 50 + cases);
        for (int64_t nh = 1; nh <= 9; nh++)
            for (size_t b = 0; b < sizeof ns / sizeof *ns; b++)
                for (size_t c = 0; c < sizeof ks / sizeof *ks; c++, pv_cases++)
                    pv_bad += pv_differs(k, nh, ns[b], ks[c], 900 + pv_cases);
        CHECKF(!bad, "%s: %d of %d tile products differ from FMAs in order", k->name, bad, cases);
        CHECKF(k->pv_heads && !pv_bad, "%s: %d of %d head sets differ from tile_gemm head by head", k->name, pv_bad, pv_cases);
    }
    CHECK(tf_kern_get(TF_ISA_PORTABLE)->pv_heads == NULL); /* the attention's per-head path */
    CHECKF(simd > 0 || !__builtin_cpu_supports("avx2"), "no SIMD kernel set on a CPU with AVX2");
}

/* block_max in every kernel set: tf_max_f32 of each block (NaN left out, -inf for a block of
 * NaNs), equal as floats (a zero's sign may differ), the largest returned; rows with NaNs,
 * infinities and both zeros, blocks of 1 to 64 with a partial last one. */
TEST(simd_block_max_is_each_blocks_max) {
    static const int64_t ns[] = {1, 5, 16, 17, 64, 100, 4099}, bss[] = {1, 7, 16, 64};
    float x[4099], bm[4099];
    for (int64_t i = 0; i < 4099; i++) x[i] = 2.0f * tf_hash_uniform(77, (uint64_t)i) - 1.0f;
    for (int64_t i = 0; i < 4099; i += 13) x[i] = NAN;
    for (int64_t i = 5; i < 4099; i += 29) x[i] = -0.0f;
    for (int64_t i = 8; i < 4099; i += 31) x[i] = 0.0f;
    for (int64_t i = 0; i < 7; i++) x[64 + i] = NAN; /* a block of 7 all NaN */
    x[200] = INFINITY, x[300] = -INFINITY;
    int bad = 0, cases = 0;
    for (int isa = 0; isa < TF_ISA_COUNT; isa++) {
        const tf_kernels *k = tf_kern_get((tf_isa)isa);
        for (size_t a = 0; k && a < sizeof ns / sizeof *ns; a++)
            for (size_t b = 0; b < sizeof bss / sizeof *bss; b++, cases++) {
                int64_t n = ns[a], bs = bss[b], nb = (n + bs - 1) / bs;
                float all = k->block_max(bm, x, n, bs), want = tf_max_f32(x, n);
                int ok = all == want;
                for (int64_t j = 0; j < nb; j++) ok &= bm[j] == tf_max_f32(x + j * bs, j * bs + bs < n ? bs : n - j * bs);
                bad += !ok;
            }
    }
    CHECKF(!bad, "%d of %d rows: a block's largest differs from tf_max_f32's", bad, cases);
}

/* Dropout's mask in every kernel set is the element-by-element rule
 * hash(seed, i0 + j) >= p, bit for bit: forward (dropped elements +0) and the
 * backward's accumulation (dropped elements untouched, a -0 stays -0), over
 * lengths around the vector width, chunk offsets past 2^32 and several p,
 * one of them an element's own draw (kept: the rule is >=); and about a
 * fraction p is dropped. */
TEST(simd_dropout_is_the_hash_rule) {
    static const int64_t ns[] = {1, 7, 15, 16, 17, 33, 100, 4096, 4099};
    static const uint64_t i0s[] = {0, 4096, 12288, (1ull << 33) + 5};
    static const float ps[] = {0.1f, 0.3f, 0.5f, 1.0f / 3.0f, 0.999f, -1.0f}; /* -1: element n/2's draw */
    static float x[4099], y[4099], want[4099];
    fill(x, 4099, 41, 2.0f);
    for (int isa = 0; isa < TF_ISA_COUNT; isa++) {
        const tf_kernels *k = tf_kern_get((tf_isa)isa);
        if (!k) continue;
        int64_t bad = 0, dropped = 0, total = 0;
        for (size_t a = 0; a < sizeof ns / sizeof *ns; a++)
            for (size_t b = 0; b < sizeof i0s / sizeof *i0s; b++)
                for (size_t c = 0; c < sizeof ps / sizeof *ps; c++)
                    for (int acc = 0; acc < 2; acc++) {
                        int64_t n = ns[a];
                        uint64_t seed = 0x1234567ull * (a + 1) + c;
                        float p = ps[c] < 0 ? tf_hash_uniform(seed, i0s[b] + (uint64_t)(n / 2)) : ps[c];
                        float keep = 1.0f / (1.0f - p);
                        for (int64_t j = 0; j < n; j++) {
                            y[j] = j % 3 ? (float)j : -0.0f;
                            int kept = tf_hash_uniform(seed, i0s[b] + (uint64_t)j) >= p;
                            want[j] = acc ? (kept ? y[j] + x[j] * keep : y[j]) : (kept ? x[j] * keep : 0.0f);
                            dropped += !kept && p == 0.3f, total += p == 0.3f;
                        }
                        k->dropout(y, x, n, seed, i0s[b], p, keep, acc);
                        bad += memcmp(y, want, (size_t)n * sizeof *y) != 0;
                    }
        CHECKF(!bad, "%s: %lld cases differ from the hash rule", k->name, (long long)bad);
        CHECKF(fabs((double)dropped / (double)total - 0.3) < 0.01, "%s: p 0.3 dropped %lld of %lld", k->name,
               (long long)dropped, (long long)total);
    }
}
