/* The portable kernels (the reference every variant is tested against) and
 * the run-time choice of a variant. */
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "kernels.h"
#include "ops_internal.h"

static void gelu_tanh(float *y, const float *x, int64_t n) {
    for (int64_t i = 0; i < n; i++) {
        /* tanh(u) = 1 - 2 / (e^(2u) + 1): one expf, saturating cleanly at +-1 */
        float xi = x[i], u = (float)TF_SQRT2_PI * (xi + 0.044715f * xi * xi * xi);
        float t = 1.0f - 2.0f / (expf(2.0f * u) + 1.0f);
        y[i] = 0.5f * xi * (1.0f + t);
    }
}

static void gelu_tanh_grad(float *dx, const float *dy, const float *x, int64_t n, int acc) {
    for (int64_t i = 0; i < n; i++) {
        float xi = x[i], u = (float)TF_SQRT2_PI * (xi + 0.044715f * xi * xi * xi);
        float t = 1.0f - 2.0f / (expf(2.0f * u) + 1.0f);
        float du = (float)TF_SQRT2_PI * (1.0f + 3.0f * 0.044715f * xi * xi);
        float d = dy[i] * (0.5f * (1.0f + t) + 0.5f * xi * (1.0f - t * t) * du);
        dx[i] = acc ? dx[i] + d : d;
    }
}

/* Phi(-t) for t = |x| (kernels.h); *e = e^(-x^2/2). NaN stays NaN, and
 * t is capped where e^(-t^2/2) is already 0 (so inf gives 0, not inf/inf). */
static float phi_tail(float t, float *e) {
    t = t > TF_PHI_TMAX ? TF_PHI_TMAX : t;
    float h = t * t, l = fmaf(t, t, -h); /* t^2 = h + l exactly */
    float ex = expf(-0.5f * h);
    ex = fmaf(-0.5f * l, ex, ex); /* e^(-l/2) = 1 - l/2 to float precision */
    float p = (((TF_PHI_P4 * t + TF_PHI_P3) * t + TF_PHI_P2) * t + TF_PHI_P1) * t + TF_PHI_P0;
    float q = ((((TF_PHI_Q5 * t + TF_PHI_Q4) * t + TF_PHI_Q3) * t + TF_PHI_Q2) * t + TF_PHI_Q1) * t + 1.0f;
    *e = ex;
    return ex * (p / q);
}

/* Phi(x) = 1 - Phi(-x) for x >= 0, so neither side cancels. */
static float phi(float x, float *e) {
    float q = phi_tail(fabsf(x), e);
    return x < 0.0f ? q : 1.0f - q;
}

static void gelu_erf(float *y, const float *x, int64_t n) {
    for (int64_t i = 0; i < n; i++) {
        float e, xi = x[i];
        y[i] = xi * phi(xi, &e);
    }
}

static void gelu_erf_grad(float *dx, const float *dy, const float *x, int64_t n, int acc) {
    for (int64_t i = 0; i < n; i++) {
        float e, xi = x[i], p = phi(xi, &e);
        float d = dy[i] * (p + xi * (e * (float)TF_INV_SQRT_2PI));
        dx[i] = acc ? dx[i] + d : d;
    }
}

static void softmax(float *y, const float *x, int64_t n) {
    float mx = -INFINITY;
    for (int64_t j = 0; j < n; j++) mx = x[j] > mx ? x[j] : mx;
    if (mx == -INFINITY) {
        memset(y, 0, (size_t)n * sizeof *y);
        return;
    }
    double s = 0.0;
    for (int64_t j = 0; j < n; j++) s += (y[j] = expf(x[j] - mx));
    float inv = (float)(1.0 / s);
    for (int64_t j = 0; j < n; j++) y[j] *= inv;
}

static float exp_shift(float *y, const float *x, float shift, int64_t n) {
    double s = 0.0;
    for (int64_t j = 0; j < n; j++) s += (y[j] = expf(x[j] - shift));
    return (float)s;
}

static float softmax_lse(float *prob, const float *x, int64_t n, double *sum_x) {
    float mx = -INFINITY;
    for (int64_t j = 0; j < n; j++) mx = x[j] > mx ? x[j] : mx;
    double s = 0.0, sx = 0.0;
    for (int64_t j = 0; j < n; j++) s += (prob[j] = expf(x[j] - mx)), sx += x[j];
    float inv = (float)(1.0 / s);
    for (int64_t j = 0; j < n; j++) prob[j] *= inv;
    *sum_x = sx;
    return mx + (float)log(s);
}

static void layernorm(float *y, float *mean, float *rstd, const float *x, const float *w, const float *b, int64_t n,
                      float eps) {
    double s = 0.0, v = 0.0;
    for (int64_t j = 0; j < n; j++) s += x[j];
    double mu = s / (double)n;
    for (int64_t j = 0; j < n; j++) v += (x[j] - mu) * (x[j] - mu);
    double rs = 1.0 / sqrt(v / (double)n + eps);
    *mean = (float)mu, *rstd = (float)rs;
    for (int64_t j = 0; j < n; j++) {
        float xh = (float)((x[j] - mu) * rs);
        y[j] = xh * (w ? w[j] : 1.0f) + (b ? b[j] : 0.0f);
    }
}

static void layernorm_grad(float *dx, const float *g, const float *x, const float *w, float mean, float rstd,
                           int64_t n) {
    double m1 = 0.0, m2 = 0.0; /* means of dxhat and dxhat * xhat */
    for (int64_t j = 0; j < n; j++) {
        float xh = (x[j] - mean) * rstd, dxh = g[j] * (w ? w[j] : 1.0f);
        m1 += dxh;
        m2 += (double)dxh * xh;
    }
    float a = (float)(m1 / (double)n), c = (float)(m2 / (double)n);
    for (int64_t j = 0; j < n; j++) {
        float xh = (x[j] - mean) * rstd, dxh = g[j] * (w ? w[j] : 1.0f);
        dx[j] += rstd * (dxh - a - xh * c);
    }
}

static void adamw(float *w, const float *g, float *m, float *v, int64_t n, const tf_adamw_coef *c) {
    for (int64_t k = 0; k < n; k++) {
        float gk = g[k] * c->grad_scale;
        m[k] = c->beta1 * m[k] + (1.0f - c->beta1) * gk;
        v[k] = c->beta2 * v[k] + (1.0f - c->beta2) * gk * gk;
        float mh = m[k] * c->inv_bc1, vh = v[k] * c->inv_bc2;
        w[k] -= c->decay * w[k] + c->lr * mh / (sqrtf(vh) + c->eps);
    }
}

static void acc(float *y, const float *x, int64_t n) {
    for (int64_t i = 0; i < n; i++) y[i] += x[i];
}

static void axpy_rows(float *y, const float *a, const float *B, int64_t ldb, int64_t k, int64_t n) {
    for (int64_t r = 0; r < k; r++)
        for (int64_t i = 0; i < n; i++) y[i] += a[r] * B[r * ldb + i];
}

static void axpy_rows_m(float *Y, int64_t ldy, const float *A, int64_t lda, int64_t m, const float *B, int64_t ldb,
                        int64_t k, int64_t n) {
    for (int64_t i = 0; i < m; i++) axpy_rows(Y + i * ldy, A + i * lda, B, ldb, k, n);
}

void tf_col_sums(float *out, const float *g, int64_t R, int64_t N) {
    enum { CB = 64 };
    int64_t blocks = (N + CB - 1) / CB;
#pragma omp parallel for schedule(static) if (tf_threads_free() > 1 && (R * N > 16384 && blocks > 1))
    for (int64_t b = 0; b < blocks; b++) {
        int64_t j0 = b * CB, w = N - j0 < CB ? N - j0 : CB;
        float s[CB] = {0};
        for (int64_t r = 0; r < R; r++)
            for (int64_t j = 0; j < w; j++) s[j] += g[r * N + j0 + j];
        for (int64_t j = 0; j < w; j++) out[j0 + j] += s[j];
    }
}

static void tile_gemm(float *C, int64_t ldc, const float *A, int64_t rs, int64_t cs, const float *B, int64_t ldb,
                      int64_t m, int64_t n, int64_t k, float beta) {
    for (int64_t r = 0; r < m; r++) {
        float *c = C + r * ldc;
        if (beta == 0.0f) memset(c, 0, (size_t)n * sizeof *c);
        for (int64_t kk = 0; kk < k; kk++) {
            float a = A[r * rs + kk * cs];
            const float *b = B + kk * ldb;
            for (int64_t j = 0; j < n; j++) c[j] += a * b[j];
        }
    }
}

/* Each row's sum as tf_dot adds it (8 fixed partial sums). */
static void dot_rows(float *y, const float *B, int64_t ldb, const float *x, int64_t rows, int64_t k, float beta) {
    for (int64_t r = 0; r < rows; r++) {
        float s = tf_dot(B + r * ldb, x, k);
        y[r] = beta == 0.0f ? s : y[r] + s;
    }
}

static void dot_rows_m(float *Y, int64_t ldy, const float *B, int64_t ldb, const float *X, int64_t ldx, int64_t m,
                       int64_t rows, int64_t k) {
    for (int64_t i = 0; i < m; i++) dot_rows(Y + i * ldy, B, ldb, X + i * ldx, rows, k, 1.0f);
}

static double gemv_f64(double *y, const double *x, const float *B, int64_t ldb, int64_t k, int64_t n) {
    double m = -INFINITY;
    for (int64_t j = 0; j < n; j++) y[j] = 0.0;
    for (int64_t i = 0; i < k; i++)
        for (int64_t j = 0; j < n; j++) y[j] += x[i] * B[i * ldb + j];
    for (int64_t j = 0; j < n; j++) m = y[j] > m ? y[j] : m;
    return m;
}

static float exp_shift_f64(float *y, const double *x, double shift, int64_t n) {
    double s = 0.0;
    for (int64_t j = 0; j < n; j++) s += (y[j] = expf((float)(x[j] - shift)));
    return (float)s;
}

static void tanh_rows(float *y, const float *x, int64_t n) {
    for (int64_t i = 0; i < n; i++) y[i] = tanhf(x[i]);
}

static double dot_f64(const float *a, const float *b, int64_t n) {
    double s = 0.0;
    for (int64_t i = 0; i < n; i++) s += (double)a[i] * b[i];
    return s;
}

static void softmax_ds(float *dp, const float *p, double delta, float scale, int64_t n) {
    for (int64_t i = 0; i < n; i++) dp[i] = scale * (float)((double)p[i] * ((double)dp[i] - delta));
}

static void transpose(float *t, int64_t ldt, const float *a, int64_t lda, int64_t rows, int64_t cols) {
    for (int64_t r = 0; r < rows; r++)
        for (int64_t c = 0; c < cols; c++) t[c * ldt + r] = a[r * lda + c];
}

void tf_dropout_scalar(float *y, const float *x, int64_t n, uint64_t seed, uint64_t i0, float p, float keep, int acc) {
    for (int64_t j = 0; j < n; j++) {
        int kept = tf_hash_uniform(seed, i0 + (uint64_t)j) >= p;
        if (acc) {
            if (kept) y[j] += x[j] * keep;
        } else
            y[j] = kept ? x[j] * keep : 0.0f;
    }
}

static float block_max(float *bm, const float *x, int64_t n, int64_t bs) {
    float all = -INFINITY;
    for (int64_t b0 = 0, k = 0; b0 < n; b0 += bs, k++) {
        bm[k] = tf_max_f32(x + b0, b0 + bs < n ? bs : n - b0);
        all = bm[k] > all ? bm[k] : all;
    }
    return all;
}

static const tf_kernels portable = {"portable", gelu_tanh, gelu_tanh_grad, gelu_erf, gelu_erf_grad, softmax, exp_shift, softmax_lse,
                                    layernorm, layernorm_grad, adamw, acc, axpy_rows, tile_gemm, dot_rows, gemv_f64, exp_shift_f64,
                                    tanh_rows, dot_f64, softmax_ds, transpose, axpy_rows_m, dot_rows_m,
                                    tf_dropout_scalar, NULL, block_max};

/* Defined in kern_avx2.c / kern_avx512.c on x86-64 (NULL elsewhere). */
const tf_kernels *tf_kern_avx2_table(void);
const tf_kernels *tf_kern_avx512_table(void);

const tf_kernels *tf_kern_get(tf_isa isa) {
    if (isa == TF_ISA_PORTABLE) return &portable;
#if defined(__x86_64__) && defined(__GNUC__)
    __builtin_cpu_init();
    if (isa == TF_ISA_AVX2 && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
        return tf_kern_avx2_table();
    if (isa == TF_ISA_AVX512 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq"))
        return tf_kern_avx512_table();
#endif
    return NULL;
}

static const tf_kernels *chosen;
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void choose(void) {
    static const char *names[TF_ISA_COUNT] = {"portable", "avx2", "avx512"};
    const char *want = getenv("TFORMER_ISA");
    for (int i = 0; want && i < TF_ISA_COUNT; i++)
        if (!strcmp(want, names[i]) && (chosen = tf_kern_get((tf_isa)i))) return;
    for (int i = TF_ISA_COUNT - 1; i >= 0 && !chosen; i--) chosen = tf_kern_get((tf_isa)i);
}

const tf_kernels *tf_kern(void) {
    pthread_once(&once, choose);
    return chosen;
}

const char *tf_kernels_info(void) { return tf_kern()->name; }
