/* Continual attention on cached state: retroactive (CoReAtt) and
 * single-output (CoSiAtt), multi-head, a batch of streams.
 *
 * The paper's retroactive update keeps d = A 1 and AV for the n queries of
 * the window and, per step, subtracts exp(q k_old) and adds exp(q k_new).
 * Raw exponentials overflow in float32 once scores are large, and the
 * subtraction cancels when the leaving key carried most of a row's mass. Here
 * every row keeps its own running maximum m (scores enter as exp(s - m); a
 * larger score rescales the row), its sums in double, and the largest sum it
 * has held since it was last computed exactly: when a removal leaves less than
 * CANCEL of that, the row is recomputed from the cached keys (O(n D), rare). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../ops/kernels.h"
#include "nn_internal.h"

#define CANCEL 1e-3 /* recompute a row whose sum fell below this fraction of its peak */
#define KTILE 32    /* keys per tile of a single-output step's transposed keys */

/* One query row of the window: exp-sums relative to its running maximum. */
typedef struct {
    double m, d, peak; /* running max score, sum exp(s - m), largest d since exact */
    double *av;        /* (D): sum exp(s - m) v */
} corow;

struct tf_coatt {
    const tf_mha *m;
    tf_coatt_kind kind;
    int B, H, D, n;
    int64_t t, recomputed;
    float *q, *k, *v; /* (B,H,n,D) rings, slot t % n; q pre-scaled by 1/sqrt(D) */
    /* a single-output step keeps its rings transposed: values (B,H,D,n) in v,
     * keys in tiles of KTILE keys, each a
     * contiguous (D,KTILE) block (rows n apart would share cache sets);
     * q holds the newest query */
    int nt;          /* tiles: ceil(n / KTILE) */
    float *kt;  /* (B,H,nt,D,KTILE) */
    double *qd; /* (B,H,D) the newest query in double */
    corow *rows;      /* (B,H,n) retroactive rows, slot of their query */
    double *av;       /* (B,H,n,D) storage of the rows' av */
    double *sc;       /* (B,H,n) one query's scores, scratch of a single-output step */
    float *p;         /* (B,H,n) their exponentials, the same */
};

tf_coatt *tf_coatt_new(const tf_mha *m, tf_coatt_kind kind, int batch, int window) {
    const tf_mha_config *c = &m->cfg;
    if (batch < 1 || window < 1) return tf_set_error("continual attention: batch %d and window %d must be >= 1", batch, window), NULL;
    if (c->kdim != c->d_model || c->vdim != c->d_model || c->w_in_out || c->nystrom || m->rel_bias)
        return tf_set_error("continual attention: needs self-attention projections of width d_model %d, (out,in) "
                            "weights, no relative positions or Nystrom", c->d_model), NULL;
    tf_coatt *s = calloc(1, sizeof *s);
    if (!s) return tf_set_error("continual attention: out of memory"), NULL;
    s->m = m, s->kind = kind, s->B = batch, s->H = c->n_head, s->D = c->d_model / c->n_head, s->n = window;
    size_t bh, rows, cells;
    if (!tf_mul_size((size_t)batch, (size_t)s->H, &bh) || !tf_mul_size(bh, (size_t)window, &rows) ||
        !tf_mul_size(rows, (size_t)s->D, &cells) || cells > ((size_t)1 << 40)) {
        free(s);
        return tf_set_error("continual attention: batch %d x window %d too large", batch, window), NULL;
    }
    s->q = calloc(kind == TF_COATT_RETRO ? cells : (size_t)batch * s->H * s->D, sizeof *s->q);
    s->v = calloc(cells, sizeof *s->v);
    int ok = s->q && s->v;
    if (kind == TF_COATT_RETRO) s->k = calloc(cells, sizeof *s->k), ok = ok && s->k;
    else {
        s->nt = (window + KTILE - 1) / KTILE;
        s->kt = calloc(bh * (size_t)s->nt * s->D * KTILE, sizeof *s->kt), s->qd = malloc(bh * s->D * sizeof *s->qd);
        s->sc = malloc(rows * sizeof *s->sc), s->p = malloc(rows * sizeof *s->p); /* per (b,h): the heads run in parallel */
        ok = ok && s->kt && s->qd && s->sc && s->p;
    }
    if (ok && kind == TF_COATT_RETRO) {
        s->rows = calloc(rows, sizeof *s->rows), s->av = calloc(cells, sizeof *s->av);
        ok = s->rows && s->av;
        for (size_t i = 0; ok && i < rows; i++) s->rows[i].av = s->av + i * (size_t)s->D;
    }
    if (!ok) return tf_coatt_free(s), tf_set_error("continual attention: out of memory"), NULL;
    return s;
}

void tf_coatt_free(tf_coatt *s) {
    if (!s) return;
    free(s->q), free(s->k), free(s->v), free(s->rows), free(s->av), free(s->sc), free(s->p), free(s->kt), free(s->qd);
    free(s);
}

void tf_coatt_reset(tf_coatt *s) { s->t = 0, s->recomputed = 0; }
int64_t tf_coatt_steps(const tf_coatt *s) { return s->t; }
int64_t tf_coatt_recomputed(const tf_coatt *s) { return s->recomputed; }

/* In double with 4 fixed partial sums: the compiler vectorises it. */
static inline double dot(const float *a, const float *b, int D) {
    double acc[4] = {0.0, 0.0, 0.0, 0.0};
    int i = 0;
    for (; i + 4 <= D; i += 4)
        for (int l = 0; l < 4; l++) acc[l] += (double)a[i + l] * b[i + l];
    double r = (acc[0] + acc[1]) + (acc[2] + acc[3]);
    for (; i < D; i++) r += (double)a[i] * b[i];
    return r;
}

/* Row r exactly over the `len` keys held in k, v (n,D) of one (b,h). */
static void row_exact(corow *r, const float *q, const float *k, const float *v, int len, int D) {
    double m = -INFINITY;
    for (int j = 0; j < len; j++) {
        double sc = dot(q, k + (size_t)j * D, D);
        if (sc > m) m = sc;
    }
    r->m = m, r->d = 0.0;
    memset(r->av, 0, (size_t)D * sizeof *r->av);
    for (int j = 0; j < len; j++) {
        double e = exp(dot(q, k + (size_t)j * D, D) - m);
        r->d += e;
        for (int i = 0; i < D; i++) r->av[i] += e * v[(size_t)j * D + i];
    }
    r->peak = r->d;
}

/* Add key score sc with value v to row r, rescaling when sc is a new maximum. */
static void row_add(corow *r, double sc, const float *v, int D) {
    if (sc > r->m) {
        double f = exp(r->m - sc);
        r->d *= f, r->peak *= f;
        for (int i = 0; i < D; i++) r->av[i] *= f;
        r->m = sc;
    }
    double e = exp(sc - r->m);
    r->d += e;
    for (int i = 0; i < D; i++) r->av[i] += e * v[i];
    if (r->d > r->peak) r->peak = r->d;
}

/* Remove key score sc (already added, so sc <= m) with value v; 1 when the
 * sum lost most of its mass and the row must be recomputed. */
static int row_remove(corow *r, double sc, const float *v, int D) {
    double e = exp(sc - r->m);
    r->d -= e;
    for (int i = 0; i < D; i++) r->av[i] -= e * v[i];
    return !(r->d > CANCEL * r->peak);
}

/* One (b,h) of a retroactive step whose new q, k, v are already in slot s;
 * k_old, v_old: the key and value that left (NULL while the window fills). */
static void retro_head(tf_coatt *st, size_t base, int s, const float *k_old, const float *v_old) {
    int n = st->n, D = st->D, len = st->t + 1 < n ? (int)st->t + 1 : n;
    float *Q = st->q + base * D, *K = st->k + base * D, *V = st->v + base * D;
    const float *kn = K + (size_t)s * D, *vn = V + (size_t)s * D;
    for (int j = 0; j < len; j++) {
        if (j == s) continue;
        corow *r = &st->rows[base + j];
        const float *q = Q + (size_t)j * D;
        if (k_old && row_remove(r, dot(q, k_old, D), v_old, D)) {
            row_exact(r, q, K, V, len, D); /* the new key is in already */
            st->recomputed++;
            continue;
        }
        row_add(r, dot(q, kn, D), vn, D);
    }
    row_exact(&st->rows[base + s], Q + (size_t)s * D, K, V, len, D);
}

/* One (b,h) of a single-output step: softmax of the newest query q (D) over
 * the window, o (D). The keys and values are kept transposed, (D,n): the n
 * scores are one matrix-vector product, summed in double (scores of
 * thousands keep their digits; the differences s - max are then exact enough
 * in float), and so is the values' weighted sum; the exponentials by the
 * kernel set. */
static void single_head(const tf_coatt *st, size_t base, const float *q, float *o) {
    int n = st->n, D = st->D;
    const float *Kt = st->kt + base / n * st->nt * D * KTILE;
    const float *Vt = st->v + base * D;
    const tf_kernels *kern = tf_kern();
    double *qd = st->qd + base / n * D, *sc = st->sc + base;
    for (int i = 0; i < D; i++) qd[i] = q[i];
    double m = -INFINITY;
    for (int j0 = 0; j0 < n; j0 += KTILE) {  // sc (n) = q (D) Kt (D,n), a tile at a time; m = max sc
        double mt = kern->gemv_f64(sc + j0, qd, Kt + (size_t)j0 * D, KTILE, D, n - j0 < KTILE ? n - j0 : KTILE);
        m = mt > m ? mt : m;
    }
    float *p = st->p + base, inv = 1.0f / kern->exp_shift_f64(p, sc, m, n);  // p (n) = e^(sc - m)
    kern->dot_rows(o, Vt, n, p, D, n, 0.0f);  // o (D) = Vt (D,n) p (n)
    for (int i = 0; i < D; i++) o[i] *= inv;
}

/* Where the step's q, k, v are: element (b, h, d) of projection i at
 * base[i] + b * sb[i] + h * sh[i] + d * sd[i]. */
typedef struct {
    const float *base[3];
    int64_t sb[3], sh[3], sd[3];
} step_qkv;

/* q, k, v of the step's rows x (B,E): one product of width 3E with fused
 * weights (no views: a step is a handful of small ops, and each view costs
 * about what a small product does), else the attention's own projections,
 * (B,H,1,D) views. */
static int project(tf_ctx *ctx, const tf_mha *m, tf_tensor *x, step_qkv *p) {
    int64_t B = x->shape[0], E = m->cfg.d_model, H = m->cfg.n_head, D = E / H;
    if (m->in_proj_weight && !m->q_proj_bias) {
        tf_tensor *y = tf_dense(ctx, x, m->in_proj_weight, 0, m->in_proj_bias, TF_ACT_NONE);  // y: (B,3E)
        if (!y) return -1;
        for (int i = 0; i < 3; i++) p->base[i] = tf_f32(y) + i * E, p->sb[i] = 3 * E, p->sh[i] = D, p->sd[i] = 1;
        return 0;
    }
    tf_tensor *x3 = tf_reshape(ctx, x, 3, (int64_t[]){B, 1, E}), *qkv[3] = {NULL, NULL, NULL};
    tf_mha_project(ctx, m, x3, x3, x3, qkv);
    for (int i = 0; i < 3; i++) {
        if (!qkv[i]) return -1;
        p->base[i] = tf_f32(qkv[i]), p->sb[i] = qkv[i]->stride[0], p->sh[i] = qkv[i]->stride[1], p->sd[i] = qkv[i]->stride[3];
    }
    return 0;
}

/* Store the new q (scaled), k, v of every (b,h): retroactive rings in slot s
 * (saving the leaving key and value into k_old, v_old (B,H,D) when the window
 * is full), a single-output step's transposed rings in column s. */
static void store(tf_coatt *st, const step_qkv *p, int s, float *k_old, float *v_old) {
    int D = st->D, n = st->n, retro = st->kind == TF_COATT_RETRO;
    float scale = 1.0f / sqrtf((float)D);
    for (int b = 0; b < st->B; b++)
        for (int h = 0; h < st->H; h++) {
            size_t bh = (size_t)b * st->H + h, slot = (bh * n + s) * D, col = bh * n * D + s;
            size_t kcol = (bh * st->nt + s / KTILE) * D * KTILE + s % KTILE; /* tile s / KTILE, column s % KTILE */
            if (k_old) memcpy(k_old + bh * D, st->k + slot, D * sizeof *k_old), memcpy(v_old + bh * D, st->v + slot, D * sizeof *v_old);
            const float *src[3];
            for (int i = 0; i < 3; i++) src[i] = p->base[i] + b * p->sb[i] + h * p->sh[i];
            int64_t sd = p->sd[0], sk = p->sd[1], sv = p->sd[2];
            float *q = st->q + (retro ? slot : bh * D);
            for (int d = 0; d < D; d++) {
                q[d] = src[0][d * sd] * scale;
                if (retro) st->k[slot + d] = src[1][d * sk], st->v[slot + d] = src[2][d * sv];
                else st->kt[kcol + (size_t)d * KTILE] = src[1][d * sk], st->v[col + (size_t)d * n] = src[2][d * sv];
            }
        }
}

/* The heads' outputs o (B,T,E) from the rows (retroactive, T = n, oldest first). */
static void gather_rows(const tf_coatt *st, float *o, int s) {
    int n = st->n, D = st->D, E = st->H * D;
    for (int b = 0; b < st->B; b++)
        for (int h = 0; h < st->H; h++)
            for (int w = 0; w < n; w++) {
                const corow *r = &st->rows[((size_t)b * st->H + h) * n + (s + 1 + w) % n];
                float *dst = o + ((size_t)b * n + w) * E + (size_t)h * D;
                for (int i = 0; i < D; i++) dst[i] = (float)(r->av[i] / r->d);
            }
}

static int check_step(const tf_coatt *s, const tf_tensor *x) {
    char a[64];
    if (!x) return -1;
    if (x->dtype != TF_DTYPE_F32 || x->ndim != 2 || x->shape[0] != s->B || x->shape[1] != s->m->cfg.d_model)
        return tf_set_error("continual attention: input %s must be F32 (B=%d,d_model=%d)", tf_shape_str(x, a, sizeof a),
                            s->B, s->m->cfg.d_model);
    return 0;
}

int tf_coatt_step(tf_ctx *ctx, tf_coatt *st, tf_tensor *x, tf_tensor **out) {
    *out = NULL;
    if (check_step(st, x)) return -1;
    int B = st->B, H = st->H, D = st->D, E = H * D, n = st->n, s = (int)(st->t % n), full = st->t >= n;
    int grad = ctx->grad_enabled;
    ctx->grad_enabled = 0;
    step_qkv p;
    int retro = st->kind == TF_COATT_RETRO;
    tf_tensor *old = full && retro ? tf_tensor_new(ctx, TF_DTYPE_F32, 3, (int64_t[]){2, B * H, D}, 0) : NULL;
    tf_tensor *o = retro ? tf_tensor_new(ctx, TF_DTYPE_F32, 3, (int64_t[]){B, n, E}, 0)  // o: (B,n,E)
                         : tf_tensor_new(ctx, TF_DTYPE_F32, 2, (int64_t[]){B, E}, 0);     // o: (B,E)
    if (project(ctx, st->m, x, &p) || !o || (full && retro && !old)) return ctx->grad_enabled = grad, -1;
    float *k_old = old ? tf_f32(old) : NULL, *v_old = old ? k_old + (size_t)B * H * D : NULL;
    store(st, &p, s, k_old, v_old);
    if (retro)
        for (size_t i = 0; i < (size_t)B * H; i++)
            retro_head(st, i * n, s, full ? k_old + i * D : NULL, full ? v_old + i * D : NULL);
    else if (st->t >= n - 1) /* (b,h) = i; heads over the threads once the caches outgrow a core's L2 */
        TF_PARALLEL_FOR((int64_t)n * E * B >= (1 << 14) && B * H > 1, i, (int64_t)B * H,
                        single_head(st, (size_t)i * n, st->q + (size_t)i * D, tf_f32(o) + (size_t)i * D));
    st->t++;
    int ready = st->t >= n;
    if (ready && retro) gather_rows(st, tf_f32(o), s);
    tf_tensor *y = ready ? tf_dense(ctx, o, st->m->out_proj.weight, 0, st->m->out_proj.bias, TF_ACT_NONE) : NULL;
    ctx->grad_enabled = grad;
    if (!ready) return 0;
    if (!y) return -1;
    *out = y;  // (B,n,E) retroactive, (B,E) single-output
    return 1;
}
