/* Rotary position embedding (Su et al. 2021, "RoFormer"): each row t of x's
 * last two dims (T,D) is at position p = start + t, and each of its D/2 pairs
 * (a, b) is turned by the angle p * theta_i, theta_i = base^(-2i/D):
 *
 *   y_a = x_a cos - x_b sin        y_b = x_a sin + x_b cos
 *
 * so that q_m . k_n depends on m - n only. Two pairings are in use:
 * TF_ROPE_HALVES pairs x[i] with x[i + D/2] (GPT-NeoX, LLaMA: transformers'
 * rotate_half), TF_ROPE_INTERLEAVED pairs x[2i] with x[2i+1] (RoFormer,
 * GPT-J). The backward turns the gradient back by -p * theta_i (a rotation's
 * inverse is its transpose). The angles are computed in double and rounded
 * once: transformers forms p * theta_i in float32, which differs by about
 * p * 6e-8 radians (below 1e-5 for p < 160). */
#include <math.h>

#include "kernels.h"
#include "tformer/ops.h"

typedef struct {
    int64_t R, T, D;  /* x viewed as (R,T,D), R the leading dims' product */
    tf_rope_kind kind;
} tf_rope_params;

/* Indices of pair i of a row of D. */
static void pair(const tf_rope_params *p, int64_t i, int64_t *a, int64_t *b) {
    if (p->kind == TF_ROPE_HALVES) *a = i, *b = i + p->D / 2;
    else *a = 2 * i, *b = 2 * i + 1;
}

/* Rows [r*T, (r+1)*T) of x turned by sign * angle into y: cs (T, D/2) cosines then (T, D/2) sines. */
static void rotate(const tf_rope_params *p, int64_t r, const float *x, float *y, const float *cs, float sign,
                   int acc) {
    int64_t T = p->T, D = p->D, half = D / 2;
    for (int64_t t = 0; t < T; t++) {
        const float *xr = x + (r * T + t) * D, *c = cs + t * half, *s = cs + (T + t) * half;
        float *yr = y + (r * T + t) * D;
        for (int64_t i = 0; i < half; i++) {
            int64_t a, b;
            pair(p, i, &a, &b);
            float sn = sign * s[i], ya = xr[a] * c[i] - xr[b] * sn, yb = xr[a] * sn + xr[b] * c[i];
            if (acc) yr[a] += ya, yr[b] += yb;
            else yr[a] = ya, yr[b] = yb;
        }
    }
}

void tf_op_rope_forward(tf_node *n) {
    const tf_rope_params *p = n->params;
    const float *x = tf_f32(n->in[0]);  // (R,T,D)
    float *y = tf_f32(n->out);          // (R,T,D)
    TF_PARALLEL_FOR(p->R * p->T * p->D > 16384, r, p->R, rotate(p, r, x, y, n->saved[0], 1.0f, 0));
}

void tf_op_rope_backward(tf_node *n) {
    const tf_rope_params *p = n->params;
    float *gx = n->in[0]->grad;  // (R,T,D)
    if (gx) TF_PARALLEL_FOR(p->R * p->T * p->D > 16384, r, p->R, rotate(p, r, n->out->grad, gx, n->saved[0], -1.0f, 1));
}

tf_tensor *tf_rope(tf_ctx *ctx, tf_tensor *x, int64_t start, float base, tf_rope_kind kind) {
    if (!x) return NULL;
    char s[64];
    if (x->dtype != TF_DTYPE_F32 || x->ndim < 2 || x->shape[x->ndim - 1] % 2 || x->shape[x->ndim - 1] < 2)
        return tf_set_error("rope: input %s must be F32 (..., T, D) with D even", tf_shape_str(x, s, sizeof s)), NULL;
    if (kind != TF_ROPE_HALVES && kind != TF_ROPE_INTERLEAVED)
        return tf_set_error("rope: unknown pairing %d (halves or interleaved)", (int)kind), NULL;
    if (!(base > 1.0f) || !isfinite(base) || start < 0)
        return tf_set_error("rope: base %g must be a finite number > 1 and start %lld >= 0", base, (long long)start),
               NULL;
    tf_rope_params *p = tf_ctx_alloc(ctx, sizeof *p);
    x = tf_contiguous(ctx, x);
    if (!p || !x) return NULL;
    p->T = x->shape[x->ndim - 2], p->D = x->shape[x->ndim - 1], p->kind = kind;
    p->R = p->T ? tf_numel(x) / (p->T * p->D) : 0;
    tf_node *n = tf_node_new(ctx, TF_OP_ROPE, 1, &x, TF_DTYPE_F32, x->ndim, x->shape, p);
    if (!n) return NULL;
    int64_t half = p->D / 2;
    float *cs = tf_ctx_scratch(ctx, 2 * p->T * half + 1);  // (2,T,D/2): cosines, sines
    if (!(n->saved[0] = cs)) return NULL;
    for (int64_t i = 0; i < half; i++) {
        double theta = pow((double)base, -2.0 * (double)i / (double)p->D);
        for (int64_t t = 0; t < p->T; t++) {
            double angle = (double)(start + t) * theta;
            cs[t * half + i] = (float)cos(angle), cs[(p->T + t) * half + i] = (float)sin(angle);
        }
    }
    return tf_node_run(ctx, n);
}

int tf_rope_check(tf_rope_kind kind, float base, int head_dim) {
    if (kind != TF_ROPE_NONE && kind != TF_ROPE_HALVES && kind != TF_ROPE_INTERLEAVED)
        return tf_set_error("rope: unknown pairing %d (none, halves or interleaved)", (int)kind);
    if (kind != TF_ROPE_NONE && head_dim % 2)
        return tf_set_error("rope: rotary positions turn pairs of a head's values: head dim %d is odd", head_dim);
    if (base != 0.0f && !(base > 1.0f && isfinite(base)))
        return tf_set_error("rope: base %g must be a finite number > 1 (0: 10000)", base);
    return 0;
}
