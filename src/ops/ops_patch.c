/* ViT's patch embedding and ViViT's tubelet embedding as unfold + matmul: the
 * input's non-overlapping Pt x Ph x Pw tubes (Pt = 1: an image's patches)
 * become the rows of cols (M, C*Pt*Ph*Pw) (im2col, kept for the backward),
 * one product with the weight viewed as (D, C*Pt*Ph*Pw) gives every tube's
 * embedding; the bias is the product's starting value. The backward
 * multiplies back into tube rows and scatters them (col2im: the tubes do not
 * overlap, so every pixel receives at most one term). */
#include <string.h>

#include "kernels.h"
#include "ops_internal.h"

typedef struct {
    int64_t B, T, C, H, W;   /* x (B,T,C,H,W); an image (B,C,H,W) is T = 1 */
    int64_t Pt, Ph, Pw, D;   /* w (D,C,Pt,Ph,Pw) */
    int64_t Gt, Gh, Gw;      /* Gt x Gh x Gw tubes */
} tf_patch_params;

/* Tube m = (b, gt, gy, gx) of x into row m of cols, or (back) row m of cols added into x. */
static void patch_row(const tf_patch_params *p, int64_t m, float *x, float *cols, int back) {
    int64_t N = p->Gt * p->Gh * p->Gw, b = m / N, gt = m % N / (p->Gh * p->Gw), gy = m % (p->Gh * p->Gw) / p->Gw;
    int64_t gx = m % p->Gw, K = p->C * p->Pt * p->Ph * p->Pw;
    float *row = cols + m * K;
    for (int64_t c = 0; c < p->C; c++)
        for (int64_t pt = 0; pt < p->Pt; pt++)
            for (int64_t py = 0; py < p->Ph; py++) {
                int64_t t = gt * p->Pt + pt, y = gy * p->Ph + py;
                float *px = x + (((b * p->T + t) * p->C + c) * p->H + y) * p->W + gx * p->Pw;  // Pw pixels of a row
                float *pr = row + ((c * p->Pt + pt) * p->Ph + py) * p->Pw;
                if (back)
                    for (int64_t i = 0; i < p->Pw; i++) px[i] += pr[i];
                else
                    memcpy(pr, px, (size_t)p->Pw * sizeof *pr);
            }
}

static int64_t rows_of(const tf_patch_params *p) { return p->B * p->Gt * p->Gh * p->Gw; }
static int64_t cols_of(const tf_patch_params *p) { return p->C * p->Pt * p->Ph * p->Pw; }

void tf_unfolded_forward(float *rows, const float *cols, const float *w, const float *bias, int64_t M, int64_t N,
                         int64_t K) {
    if (bias)
        for (int64_t m = 0; m < M; m++) memcpy(rows + m * N, bias, (size_t)N * sizeof *rows);
    else
        memset(rows, 0, (size_t)(M * N) * sizeof *rows);
    tf_gemm_acc(rows, cols, w, M, N, K, 0, 1, TF_GEMM_AUTO);  // rows += cols w^T
}

void tf_unfolded_backward(const float *g, const float *cols, const float *w, float *dw, float *db, float *dcols,
                          int64_t M, int64_t N, int64_t K) {
    if (dw) tf_gemm_acc(dw, g, cols, N, K, M, 1, 0, TF_GEMM_AUTO);  // dw (N,K) += g^T cols
    if (db) tf_col_sums(db, g, M, N);
    if (!dcols) return;
    memset(dcols, 0, (size_t)(M * K) * sizeof *dcols);
    tf_gemm_acc(dcols, g, w, M, K, N, 0, 0, TF_GEMM_AUTO);  // dcols = g w
}

void tf_op_patch_embed_forward(tf_node *n) {
    const tf_patch_params *p = n->params;
    int64_t M = rows_of(p), K = cols_of(p);
    float *x = tf_f32(n->in[0]), *cols = n->saved[0];  // cols (M,K)
    TF_PARALLEL_FOR(M * K > 16384, m, M, patch_row(p, m, x, cols, 0));
    tf_unfolded_forward(tf_f32(n->out), cols, tf_f32(n->in[1]), n->in[2] ? tf_f32(n->in[2]) : NULL, M, p->D, K);
}

void tf_op_patch_embed_backward(tf_node *n) {
    const tf_patch_params *p = n->params;
    tf_tensor *X = n->in[0], *Wt = n->in[1], *Bt = n->in[2];
    int64_t M = rows_of(p), K = cols_of(p);
    float *dcols = X->grad ? n->saved[1] : NULL;  // (M,K)
    tf_unfolded_backward(n->out->grad, n->saved[0], tf_f32(Wt), Wt->grad, Bt ? Bt->grad : NULL, dcols, M, p->D, K);
    if (dcols) TF_PARALLEL_FOR(M * K > 16384, m, M, patch_row(p, m, X->grad, dcols, 1));
}

/* x (B,C,H,W) with w (D,C,P,P), or x (B,T,C,H,W) with w (D,C,Pt,Ph,Pw). */
static int check_args(const tf_tensor *x, const tf_tensor *w, const tf_tensor *b, tf_patch_params *p) {
    char sx[64], sw[64];
    int video = x->ndim == 5;
    if (x->dtype != TF_DTYPE_F32 || w->dtype != TF_DTYPE_F32 || (x->ndim != 4 && !video) || w->ndim != x->ndim ||
        w->shape[1] != x->shape[video ? 2 : 1] || (!video && w->shape[2] != w->shape[3]))
        return tf_set_error("patch_embed: input %s must be F32 (B,C,H,W) with weight %s F32 (D,C,P,P), or "
                            "(B,T,C,H,W) with (D,C,Pt,Ph,Pw), of the same C",
                            tf_shape_str(x, sx, sizeof sx), tf_shape_str(w, sw, sizeof sw));
    *p = (tf_patch_params){x->shape[0], video ? x->shape[1] : 1, w->shape[1], x->shape[x->ndim - 2],
                           x->shape[x->ndim - 1], video ? w->shape[2] : 1, w->shape[w->ndim - 2],
                           w->shape[w->ndim - 1], w->shape[0], 0, 0, 0};
    if (p->Pt < 1 || p->Ph < 1 || p->Pw < 1 || p->T < p->Pt || p->H < p->Ph || p->W < p->Pw)
        return tf_set_error("patch_embed: input %s is smaller than one tube of weight %s",
                            tf_shape_str(x, sx, sizeof sx), tf_shape_str(w, sw, sizeof sw));
    if (b && (b->dtype != TF_DTYPE_F32 || b->ndim != 1 || b->shape[0] != w->shape[0]))
        return tf_set_error("patch_embed: bias %s must be F32 of shape (%lld)", tf_shape_str(b, sx, sizeof sx),
                            (long long)w->shape[0]);
    p->Gt = p->T / p->Pt, p->Gh = p->H / p->Ph, p->Gw = p->W / p->Pw;
    return 0;
}

tf_tensor *tf_patch_embed(tf_ctx *ctx, tf_tensor *x, tf_tensor *w, tf_tensor *b) {
    if (!x || !w) return NULL;
    tf_patch_params *p = tf_ctx_alloc(ctx, sizeof *p);
    if (!p || check_args(x, w, b, p)) return NULL;
    size_t M, MK, N = (size_t)(p->Gt * p->Gh * p->Gw);
    if (!tf_mul_size((size_t)p->B, N, &M) || !tf_mul_size(M, (size_t)cols_of(p), &MK))
        return tf_set_error("patch_embed: %lld inputs of %zu patches are too many", (long long)p->B, N), NULL;
    tf_tensor *in[3] = {tf_contiguous(ctx, x), tf_contiguous(ctx, w), b ? tf_contiguous(ctx, b) : NULL};
    if (!in[0] || !in[1] || (b && !in[2])) return NULL;
    tf_tensor *nn_in[3] = {in[0], in[1], in[2] ? in[2] : in[0]}; /* tf_node_new rejects NULL: patched below */
    tf_node *n = tf_node_new(ctx, TF_OP_PATCH_EMBED, 3, nn_in, TF_DTYPE_F32, 3, (int64_t[]){p->B, (int64_t)N, p->D}, p);
    if (!n) return NULL;
    n->in[2] = in[2];
    /* the patches (every element written by the forward) and, with a gradient, their gradient */
    if (!(n->saved[0] = tf_ctx_scratch(ctx, (int64_t)MK))) return NULL;
    if (n->out->grad && in[0]->grad && !(n->saved[1] = tf_ctx_scratch(ctx, (int64_t)MK))) return NULL;
    return tf_node_run(ctx, n);
}
