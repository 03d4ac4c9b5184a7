
#include "kernels.h"
/* The SIMD kernels, written once over a small vector vocabulary that
 * kern_avx2.c and kern_avx512.c define before including this file:
 *   V, VW (lanes), KT (function attributes), v_ld, v_st, v_ldt(p, n, fill)
 *   and v_stt(p, v, n) (the first n < VW lanes), v_set, v_add, v_sub, v_mul,
 *   v_div, v_max, v_min, v_fma(a, b, c) = a*b + c, v_sqrt, v_hsum, v_hmax,
 *   v_round, v_pow2i(t) = 2^t for integral t, v_zero_below(r, x, lo),
 *   v_pick_small(x, lim, p, q) (p where |x| < lim, else q; NaN x: q),
 *   v_hsum4(s, a0, a1, a2, a3): s[i] = the sum of ai.
 * Every loop walks whole vectors and then one masked tail, so an element's
 * value never depends on where a row starts. */

/* e^x as Cephes' expf: x = t ln2 + r with |r| <= ln2/2, a degree-6
 * polynomial for e^r, then 2^t; within 2 ulp of expf over the normal range,
 * 0 below -87.3 (so -inf gives 0) and NaN stays NaN. */
KT V v_exp(V x) {
    V lo = v_set(-87.3365447f);
    V xc = v_min(v_set(88.0f), x); /* min(c, NaN) is NaN: it propagates */
    V t = v_round(v_mul(xc, v_set(1.44269504088896341f)));
    V r = v_fma(t, v_set(-0.693359375f), xc);
    r = v_fma(t, v_set(2.12194440e-4f), r);
    V p = v_set(1.9875691500e-4f);
    p = v_fma(p, r, v_set(1.3981999507e-3f));
    p = v_fma(p, r, v_set(8.3334519073e-3f));
    p = v_fma(p, r, v_set(4.1665795894e-2f));
    p = v_fma(p, r, v_set(1.6666665459e-1f));
    p = v_fma(p, r, v_set(5.0000001201e-1f));
    p = v_fma(v_mul(p, r), r, v_add(r, v_set(1.0f)));
    return v_zero_below(v_mul(p, v_pow2i(t)), x, lo);
}

/* tanh(x): Cephes' tanhf, x + x^3 P(x^2) for |x| < 0.625, else 1 - 2/(e^(2x)+1)
 * (|tanh| >= 0.55 there, so no cancellation; v_exp's clamps give +-1 far out,
 * NaN stays NaN). */
KT V v_tanh(V x) {
    V z = v_mul(x, x);
    V p = v_fma(v_set(-5.70498872745e-3f), z, v_set(2.06390887954e-2f));
    p = v_fma(p, z, v_set(-5.37397155531e-2f));
    p = v_fma(p, z, v_set(1.33314422036e-1f));
    p = v_fma(p, z, v_set(-3.33332819422e-1f));
    V small = v_fma(v_mul(p, z), x, x);
    V big = v_sub(v_set(1.0f), v_div(v_set(2.0f), v_add(v_exp(v_add(x, x)), v_set(1.0f))));
    return v_pick_small(x, v_set(0.625f), small, big);
}

KT void k_tanh(float *y, const float *x, int64_t n) {
    int64_t i = 0;
    for (; i + VW <= n; i += VW) v_st(y + i, v_tanh(v_ld(x + i)));
    if (i < n) v_stt(y + i, v_tanh(v_ldt(x + i, n - i, 0.0f)), n - i);
}

/* tanh(u) = 1 - 2/(e^(2u)+1) of gelu's u = sqrt(2/pi) (x + 0.044715 x^3) */
KT V v_gelu_t(V x) {
    V u = v_mul(v_set((float)TF_SQRT2_PI), v_fma(v_mul(v_set(0.044715f), v_mul(x, x)), x, x));
    V e = v_exp(v_add(u, u));
    return v_sub(v_set(1.0f), v_div(v_set(2.0f), v_add(e, v_set(1.0f))));
}

KT V v_gelu(V x) { return v_mul(v_mul(v_set(0.5f), x), v_add(v_set(1.0f), v_gelu_t(x))); }

KT V v_gelu_grad(V x, V dy) {
    V t = v_gelu_t(x);
    V du = v_mul(v_set((float)TF_SQRT2_PI), v_fma(v_set(3.0f * 0.044715f), v_mul(x, x), v_set(1.0f)));
    V a = v_mul(v_set(0.5f), v_add(v_set(1.0f), t));
    V b = v_mul(v_mul(v_mul(v_set(0.5f), x), v_sub(v_set(1.0f), v_mul(t, t))), du);
    return v_mul(dy, v_add(a, b));
}

KT void k_gelu_tanh(float *y, const float *x, int64_t n) {
    int64_t i = 0;
    for (; i + VW <= n; i += VW) v_st(y + i, v_gelu(v_ld(x + i)));
    if (i < n) v_stt(y + i, v_gelu(v_ldt(x + i, n - i, 0.0f)), n - i);
}

KT void k_gelu_tanh_grad(float *dx, const float *dy, const float *x, int64_t n, int acc) {
    int64_t i = 0;
    for (; i + VW <= n; i += VW) {
        V d = v_gelu_grad(v_ld(x + i), v_ld(dy + i));
        v_st(dx + i, acc ? v_add(v_ld(dx + i), d) : d);
    }
    if (i < n) {
        int64_t k = n - i;
        V d = v_gelu_grad(v_ldt(x + i, k, 0.0f), v_ldt(dy + i, k, 0.0f));
        v_stt(dx + i, acc ? v_add(v_ldt(dx + i, k, 0.0f), d) : d, k);
    }
}

/* Phi(-t) for t = |x| >= 0 (kernels.h), and *e = e^(-x^2/2); as the portable phi_tail. */
KT V v_phi_tail(V t, V *e) {
    t = v_min(v_set(TF_PHI_TMAX), t); /* NaN propagates */
    V h = v_mul(t, t), l = v_fma(t, t, v_sub(v_set(0.0f), h)); /* t^2 = h + l exactly */
    V ex = v_exp(v_mul(v_set(-0.5f), h));
    ex = v_fma(v_mul(v_set(-0.5f), l), ex, ex);
    V p = v_fma(v_set(TF_PHI_P4), t, v_set(TF_PHI_P3));
    p = v_fma(p, t, v_set(TF_PHI_P2));
    p = v_fma(p, t, v_set(TF_PHI_P1));
    p = v_fma(p, t, v_set(TF_PHI_P0));
    V q = v_fma(v_set(TF_PHI_Q5), t, v_set(TF_PHI_Q4));
    q = v_fma(q, t, v_set(TF_PHI_Q3));
    q = v_fma(q, t, v_set(TF_PHI_Q2));
    q = v_fma(q, t, v_set(TF_PHI_Q1));
    q = v_fma(q, t, v_set(1.0f));
    *e = ex;
    return v_mul(ex, v_div(p, q));
}

/* Phi(x): the tail q where x < 0, else 1 - q, chosen without a blend:
 * (1 - q, zeroed where x < 0) + (q - (q, zeroed where x < 0)) adds an
 * exact 0 to the chosen value (NaN stays NaN). */
KT V v_phi(V x, V *e) {
    V t = v_max(x, v_sub(v_set(0.0f), x)); /* |x|; max(-0, +0) is +0, NaN propagates */
    V q = v_phi_tail(t, e), z = v_set(0.0f);
    return v_add(v_zero_below(v_sub(v_set(1.0f), q), x, z), v_sub(q, v_zero_below(q, x, z)));
}

KT void k_gelu_erf(float *y, const float *x, int64_t n) {
    V e;
    int64_t i = 0;
    for (; i + VW <= n; i += VW) {
        V xv = v_ld(x + i);
        v_st(y + i, v_mul(xv, v_phi(xv, &e)));
    }
    if (i < n) {
        V xv = v_ldt(x + i, n - i, 0.0f);
        v_stt(y + i, v_mul(xv, v_phi(xv, &e)), n - i);
    }
}

KT V v_gelu_erf_grad(V x, V dy) {
    V e, p = v_phi(x, &e);
    return v_mul(dy, v_add(p, v_mul(x, v_mul(e, v_set((float)TF_INV_SQRT_2PI)))));
}

KT void k_gelu_erf_grad(float *dx, const float *dy, const float *x, int64_t n, int acc) {
    int64_t i = 0;
    for (; i + VW <= n; i += VW) {
        V d = v_gelu_erf_grad(v_ld(x + i), v_ld(dy + i));
        v_st(dx + i, acc ? v_add(v_ld(dx + i), d) : d);
    }
    if (i < n) {
        int64_t k = n - i;
        V d = v_gelu_erf_grad(v_ldt(x + i, k, 0.0f), v_ldt(dy + i, k, 0.0f));
        v_stt(dx + i, acc ? v_add(v_ldt(dx + i, k, 0.0f), d) : d, k);
    }
}

KT float row_max(const float *x, int64_t n) {
    V m = v_set(-INFINITY);
    int64_t i = 0;
    for (; i + VW <= n; i += VW) m = v_max(m, v_ld(x + i));
    if (i < n) m = v_max(m, v_ldt(x + i, n - i, -INFINITY));
    return v_hmax(m);
}

/* bm[k] = the largest of block k of x (blocks of bs, the last partial), NaN left out (-inf for
 * none): tf_max_f32's value on each block (max(x, m) keeps m when x is NaN); returns the
 * largest of all: a search's block maxima of a row of logits in one vector pass. */
KT float k_block_max(float *bm, const float *x, int64_t n, int64_t bs) {
    float all = -INFINITY;
    for (int64_t b0 = 0, k = 0; b0 < n; b0 += bs, k++) {
        int64_t e = b0 + bs < n ? b0 + bs : n, i = b0;
        V m = v_set(-INFINITY);
        for (; i + VW <= e; i += VW) m = v_max(v_ld(x + i), m);
        if (i < e) m = v_max(v_ldt(x + i, e - i, -INFINITY), m);
        float v = v_hmax(m);
        bm[k] = v, all = v > all ? v : all;
    }
    return all;
}

/* y = e^(x - mx); returns the sum */
KT float row_exp(float *y, const float *x, float mx, int64_t n) {
    V s = v_set(0.0f), vm = v_set(mx);
    int64_t i = 0;
    for (; i + VW <= n; i += VW) {
        V e = v_exp(v_sub(v_ld(x + i), vm));
        v_st(y + i, e);
        s = v_add(s, e);
    }
    if (i < n) {
        V e = v_exp(v_sub(v_ldt(x + i, n - i, -INFINITY), vm));
        v_stt(y + i, e, n - i);
        s = v_add(s, e);
    }
    return v_hsum(s);
}

KT void row_scale(float *y, float a, int64_t n) {
    int64_t i = 0;
    for (; i + VW <= n; i += VW) v_st(y + i, v_mul(v_ld(y + i), v_set(a)));
    if (i < n) v_stt(y + i, v_mul(v_ldt(y + i, n - i, 0.0f), v_set(a)), n - i);
}

KT float row_sum(const float *x, int64_t n) {
    V s = v_set(0.0f);
    int64_t i = 0;
    for (; i + VW <= n; i += VW) s = v_add(s, v_ld(x + i));
    if (i < n) s = v_add(s, v_ldt(x + i, n - i, 0.0f));
    return v_hsum(s);
}

KT void k_softmax(float *y, const float *x, int64_t n) {
    float mx = row_max(x, n);
    if (mx == -INFINITY) {
        memset(y, 0, (size_t)n * sizeof *y);
        return;
    }
    row_scale(y, 1.0f / row_exp(y, x, mx, n), n);
}

KT float k_softmax_lse(float *prob, const float *x, int64_t n, double *sum_x) {
    float mx = row_max(x, n);
    *sum_x = row_sum(x, n);
    float s = row_exp(prob, x, mx, n);
    row_scale(prob, 1.0f / s, n);
    return mx + logf(s);
}

KT void k_layernorm(float *y, float *mean, float *rstd, const float *x, const float *w, const float *b, int64_t n,
                    float eps) {
    float mu = row_sum(x, n) / (float)n;
    V vm = v_set(mu), s = v_set(0.0f);
    int64_t i = 0;
    for (; i + VW <= n; i += VW) {
        V d = v_sub(v_ld(x + i), vm);
        s = v_fma(d, d, s);
    }
    if (i < n) { /* the tail is filled with the mean: it adds nothing */
        V d = v_sub(v_ldt(x + i, n - i, mu), vm);
        s = v_fma(d, d, s);
    }
    float rs = 1.0f / sqrtf(v_hsum(s) / (float)n + eps);
    *mean = mu, *rstd = rs;
    V vr = v_set(rs);
    for (i = 0; i < n; i += VW) {
        int64_t k = n - i < VW ? n - i : VW;
        V xh = v_mul(v_sub(k == VW ? v_ld(x + i) : v_ldt(x + i, k, 0.0f), vm), vr);
        V wv = w ? (k == VW ? v_ld(w + i) : v_ldt(w + i, k, 0.0f)) : v_set(1.0f);
        V bv = b ? (k == VW ? v_ld(b + i) : v_ldt(b + i, k, 0.0f)) : v_set(0.0f);
        V out = v_fma(xh, wv, bv);
        if (k == VW) v_st(y + i, out);
        else v_stt(y + i, out, k);
    }
}

KT void k_layernorm_grad(float *dx, const float *g, const float *x, const float *w, float mean, float rstd,
                         int64_t n) {
    V vm = v_set(mean), vr = v_set(rstd), s1 = v_set(0.0f), s2 = v_set(0.0f);
    for (int64_t i = 0; i < n; i += VW) {
        int64_t k = n - i < VW ? n - i : VW;
        V xh = v_mul(v_sub(k == VW ? v_ld(x + i) : v_ldt(x + i, k, mean), vm), vr);
        V dxh = v_mul(k == VW ? v_ld(g + i) : v_ldt(g + i, k, 0.0f),
                      w ? (k == VW ? v_ld(w + i) : v_ldt(w + i, k, 0.0f)) : v_set(1.0f));
        s1 = v_add(s1, dxh);
        s2 = v_fma(dxh, xh, s2);
    }
    V a = v_set(v_hsum(s1) / (float)n), c = v_set(v_hsum(s2) / (float)n);
    for (int64_t i = 0; i < n; i += VW) {
        int64_t k = n - i < VW ? n - i : VW;
        V xh = v_mul(v_sub(k == VW ? v_ld(x + i) : v_ldt(x + i, k, mean), vm), vr);
        V dxh = v_mul(k == VW ? v_ld(g + i) : v_ldt(g + i, k, 0.0f),
                      w ? (k == VW ? v_ld(w + i) : v_ldt(w + i, k, 0.0f)) : v_set(1.0f));
        V d = v_mul(vr, v_sub(v_sub(dxh, a), v_mul(xh, c)));
        if (k == VW) v_st(dx + i, v_add(v_ld(dx + i), d));
        else v_stt(dx + i, v_add(v_ldt(dx + i, k, 0.0f), d), k);
    }
}

KT void k_adamw(float *w, const float *g, float *m, float *v, int64_t n, const tf_adamw_coef *c) {
    V b1 = v_set(c->beta1), b2 = v_set(c->beta2), a1 = v_set(1.0f - c->beta1), a2 = v_set(1.0f - c->beta2);
    V i1 = v_set(c->inv_bc1), i2 = v_set(c->inv_bc2), lr = v_set(c->lr), eps = v_set(c->eps), dec = v_set(c->decay);
    V gs = v_set(c->grad_scale);
    for (int64_t i = 0; i < n; i += VW) {
        int64_t k = n - i < VW ? n - i : VW;
        V gv = v_mul(k == VW ? v_ld(g + i) : v_ldt(g + i, k, 0.0f), gs);
        V mv = v_fma(b1, k == VW ? v_ld(m + i) : v_ldt(m + i, k, 0.0f), v_mul(a1, gv));
        V vv = v_fma(b2, k == VW ? v_ld(v + i) : v_ldt(v + i, k, 0.0f), v_mul(v_mul(a2, gv), gv));
        V wv = k == VW ? v_ld(w + i) : v_ldt(w + i, k, 0.0f);
        V step = v_div(v_mul(lr, v_mul(mv, i1)), v_add(v_sqrt(v_mul(vv, i2)), eps));
        wv = v_sub(wv, v_fma(dec, wv, step));
        if (k == VW) v_st(m + i, mv), v_st(v + i, vv), v_st(w + i, wv);
        else v_stt(m + i, mv, k), v_stt(v + i, vv, k), v_stt(w + i, wv, k);
    }
}

KT void k_acc(float *y, const float *x, int64_t n) {
    int64_t i = 0;
    for (; i + VW <= n; i += VW) v_st(y + i, v_add(v_ld(y + i), v_ld(x + i)));
    if (i < n) v_stt(y + i, v_add(v_ldt(y + i, n - i, 0.0f), v_ldt(x + i, n - i, 0.0f)), n - i);
}

#include "kern_simd_tiles.h"

/* y (n) = x B in double, over the double vocabulary (VD, VDW lanes, vd_ldf
 * loads VDW floats as doubles, vd_ld, vd_set, vd_fma, vd_max, vd_sub, vd_st,
 * vd_hmax, and v_cvt2d(lo, hi): the VW floats of two double vectors): four
 * vectors of columns per block, the sums over k in registers, the largest
 * sum kept on the way. */
KT double k_gemv_f64(double *y, const double *x, const float *B, int64_t ldb, int64_t k, int64_t n) {
    VD mx = vd_set(-INFINITY);
    int64_t j = 0;
    for (; j + 4 * VDW <= n; j += 4 * VDW) {
        VD a0 = vd_set(0.0), a1 = vd_set(0.0), a2 = vd_set(0.0), a3 = vd_set(0.0);
        for (int64_t i = 0; i < k; i++) {
            const float *b = B + i * ldb + j;
            VD xi = vd_set(x[i]);
            a0 = vd_fma(xi, vd_ldf(b), a0), a1 = vd_fma(xi, vd_ldf(b + VDW), a1);
            a2 = vd_fma(xi, vd_ldf(b + 2 * VDW), a2), a3 = vd_fma(xi, vd_ldf(b + 3 * VDW), a3);
        }
        vd_st(y + j, a0), vd_st(y + j + VDW, a1), vd_st(y + j + 2 * VDW, a2), vd_st(y + j + 3 * VDW, a3);
        mx = vd_max(a0, vd_max(a1, vd_max(a2, vd_max(a3, mx)))); /* a NaN sum is passed over */
    }
    for (; j + VDW <= n; j += VDW) {
        VD a = vd_set(0.0);
        for (int64_t i = 0; i < k; i++) a = vd_fma(vd_set(x[i]), vd_ldf(B + i * ldb + j), a);
        vd_st(y + j, a);
        mx = vd_max(a, mx);
    }
    double m = vd_hmax(mx);
    for (; j < n; j++) {
        double a = 0.0;
        for (int64_t i = 0; i < k; i++) a = fma(x[i], (double)B[i * ldb + j], a);
        y[j] = a;
        m = a > m ? a : m;
    }
    return m;
}

/* y = e^(float)(x - shift); returns the sum (as row_exp) */
KT float k_exp_shift_f64(float *y, const double *x, double shift, int64_t n) {
    VD sh = vd_set(shift);
    V s = v_set(0.0f);
    int64_t i = 0;
    for (; i + VW <= n; i += VW) {
        V e = v_exp(v_cvt2d(vd_sub(vd_ld(x + i), sh), vd_sub(vd_ld(x + i + VDW), sh)));
        v_st(y + i, e);
        s = v_add(s, e);
    }
    if (i < n) {
        float t[VW];
        for (int64_t j = 0; j < VW; j++) t[j] = i + j < n ? (float)(x[i + j] - shift) : -INFINITY;
        V e = v_exp(v_ld(t));
        v_stt(y + i, e, n - i);
        s = v_add(s, e);
    }
    return v_hsum(s);
}

/* The sum of a b in double: four chains of VDW lanes (the products exact,
 * their sums in lanes), added lane by lane at the end, the tail in order. */
KT double k_dot_f64(const float *a, const float *b, int64_t n) {
    VD s0 = vd_set(0.0), s1 = vd_set(0.0), s2 = vd_set(0.0), s3 = vd_set(0.0);
    int64_t i = 0;
    for (; i + 4 * VDW <= n; i += 4 * VDW) {
        s0 = vd_fma(vd_ldf(a + i), vd_ldf(b + i), s0);
        s1 = vd_fma(vd_ldf(a + i + VDW), vd_ldf(b + i + VDW), s1);
        s2 = vd_fma(vd_ldf(a + i + 2 * VDW), vd_ldf(b + i + 2 * VDW), s2);
        s3 = vd_fma(vd_ldf(a + i + 3 * VDW), vd_ldf(b + i + 3 * VDW), s3);
    }
    for (; i + VDW <= n; i += VDW) s0 = vd_fma(vd_ldf(a + i), vd_ldf(b + i), s0);
    double lane[VDW], s = 0.0;
    vd_st(lane, vd_add(vd_add(s0, s1), vd_add(s2, s3)));
    for (int j = 0; j < VDW; j++) s += lane[j];
    for (; i < n; i++) s += (double)a[i] * b[i];
    return s;
}

/* dS = scale * (float)(p (dp - delta)): VW floats a pass as two double vectors,
 * each lane the scalar expression's operations in its order (the same bits). */
KT void k_softmax_ds(float *dp, const float *p, double delta, float scale, int64_t n) {
    VD d = vd_set(delta);
    V sc = v_set(scale);
    int64_t i = 0;
    for (; i + VW <= n; i += VW) {
        VD lo = vd_mul(vd_ldf(p + i), vd_sub(vd_ldf(dp + i), d));
        VD hi = vd_mul(vd_ldf(p + i + VDW), vd_sub(vd_ldf(dp + i + VDW), d));
        v_st(dp + i, v_mul(sc, v_cvt2d(lo, hi)));
    }
    for (; i < n; i++) dp[i] = scale * (float)((double)p[i] * ((double)dp[i] - delta));
}
