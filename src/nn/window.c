/* Swin's window self-attention (Liu et al., "Swin Transformer: Hierarchical
 * Vision Transformer using Shifted Windows", 2021), as Hugging Face's
 * SwinLayer computes it between its two LayerNorms:
 *
 *   g = pad(h as (B,Hh,Ww,C))              (B,Hp,Wp,C)   zeros right and bottom
 *   g = roll(g, -shift) on rows and columns
 *   w = windows(g)                         (B*nW,N,C)    N = window^2, row-major windows
 *   w = attention(w, bias + shift mask)    (B*nW,N,C)    the block's projections
 *   y = crop(roll(unwindows(w), +shift))   (B,Hh*Ww,C)
 *
 * Everything is views, narrow/concat and one copy per permutation: the
 * gradients are the ops' own. */
#include <string.h>

#include "nn_internal.h"

tf_tensor *tf_pad_zeros(tf_ctx *ctx, tf_tensor *x, int d, int64_t n) {
    if (!x || x->shape[d] >= n) return x;
    int64_t shape[TF_MAX_DIMS];
    memcpy(shape, x->shape, sizeof shape);
    shape[d] = n - x->shape[d];
    tf_tensor *z = tf_tensor_new(ctx, TF_DTYPE_F32, x->ndim, shape, 0);
    if (!z) return NULL;
    memset(z->data, 0, (size_t)tf_numel(z) * sizeof(float));
    return tf_concat(ctx, 2, (tf_tensor *[]){x, z}, d);
}

/* out[i] = x[(i + k) mod n] along dim d: torch.roll(x, -k, d). */
static tf_tensor *roll_dim(tf_ctx *ctx, tf_tensor *x, int d, int64_t k) {
    if (!x) return NULL;
    int64_t n = x->shape[d];
    k = ((k % n) + n) % n;
    if (!k) return x;
    return tf_concat(ctx, 2, (tf_tensor *[]){tf_narrow(ctx, x, d, k, n - k), tf_narrow(ctx, x, d, 0, k)}, d);
}

/* (B,Hp,Wp,C) -> (B*nW,w*w,C), windows row-major: HF's window_partition. */
static tf_tensor *partition(tf_ctx *ctx, tf_tensor *g, int64_t w) {
    if (!g) return NULL;
    int64_t B = g->shape[0], Hp = g->shape[1], Wp = g->shape[2], C = g->shape[3];
    tf_tensor *v = tf_reshape(ctx, tf_contiguous(ctx, g), 6, (int64_t[]){B, Hp / w, w, Wp / w, w, C});
    v = tf_contiguous(ctx, tf_transpose(ctx, v, 2, 3));  // (B,Hp/w,Wp/w,w,w,C)
    return tf_reshape(ctx, v, 3, (int64_t[]){B * (Hp / w) * (Wp / w), w * w, C});
}

/* (B*nW,w*w,C) -> (B,Hp,Wp,C): HF's window_reverse. */
static tf_tensor *unpartition(tf_ctx *ctx, tf_tensor *x, int64_t B, int64_t Hp, int64_t Wp, int64_t w) {
    if (!x) return NULL;
    int64_t C = x->shape[2];
    tf_tensor *v = tf_reshape(ctx, tf_contiguous(ctx, x), 6, (int64_t[]){B, Hp / w, Wp / w, w, w, C});
    v = tf_contiguous(ctx, tf_transpose(ctx, v, 2, 3));  // (B,Hp/w,w,Wp/w,w,C)
    return tf_reshape(ctx, v, 4, (int64_t[]){B, Hp, Wp, C});
}

void tf_window_relative_index(int32_t *out, int window) {
    int64_t w = window, N = w * w;
    for (int64_t i = 0; i < N; i++)
        for (int64_t j = 0; j < N; j++)
            out[i * N + j] = (int32_t)((i / w - j / w + w - 1) * (2 * w - 1) + (i % w - j % w + w - 1));
}

tf_tensor *tf_window_relative_bias(tf_ctx *ctx, tf_tensor *table, int window) {
    int64_t w = window, N = w * w, L = (2 * w - 1) * (2 * w - 1);
    char s[64];
    if (!table) return NULL;
    if (window < 1 || table->ndim != 2 || table->shape[0] != L)
        return tf_set_error("window attention: relative position table %s should be (%lld,heads) for window %d",
                            tf_shape_str(table, s, sizeof s), (long long)L, window), NULL;
    tf_tensor *ids = tf_tensor_new(ctx, TF_DTYPE_I32, 1, (int64_t[]){N * N}, 0);  // (N*N)
    if (!ids) return NULL;
    tf_window_relative_index(tf_i32(ids), window);
    tf_tensor *b = tf_embedding(ctx, table, ids);  // (N*N,H)
    b = tf_contiguous(ctx, tf_transpose(ctx, b, 0, 1));  // (H,N*N)
    return tf_reshape(ctx, b, 3, (int64_t[]){table->shape[1], N, N});
}

/* Which of the 3x3 regions of the padded grid HF's img_mask gives position i of n. */
static int region(int i, int n, int window, int shift) { return i < n - window ? 0 : i < n - shift ? 1 : 2; }

tf_tensor *tf_window_shift_mask(tf_ctx *ctx, int height, int width, int window, int shift) {
    if (window < 1 || height % window || width % window || shift < 0 || shift >= window)
        return tf_set_error("window attention: grid %dx%d, window %d, shift %d: the grid must be a multiple of the "
                            "window and 0 <= shift < window", height, width, window, shift), NULL;
    int64_t w = window, N = w * w, nh = height / w, nw = width / w;
    tf_tensor *m = tf_tensor_new(ctx, TF_DTYPE_F32, 3, (int64_t[]){nh * nw, N, N}, 0);  // (nW,N,N)
    if (!m) return NULL;
    for (int64_t win = 0; win < nh * nw; win++)
        for (int64_t i = 0; i < N; i++)
            for (int64_t j = 0; j < N; j++) {
                int64_t yi = win / nw * w + i / w, xi = win % nw * w + i % w;
                int64_t yj = win / nw * w + j / w, xj = win % nw * w + j % w;
                int ri = 3 * region((int)yi, height, window, shift) + region((int)xi, width, window, shift);
                int rj = 3 * region((int)yj, height, window, shift) + region((int)xj, width, window, shift);
                tf_f32(m)[(win * N + i) * N + j] = ri == rj ? 0.0f : -100.0f;
            }
    return m;
}

/* The additive scores of every window: (1,H,N,N) without a shift, (B*nW,H,N,N) with. */
static tf_tensor *window_scores_bias(tf_ctx *ctx, const tf_window_attn *a, int64_t B, int64_t H, int64_t Hp,
                                     int64_t Wp) {
    int64_t N = (int64_t)a->window * a->window, nW = (Hp / a->window) * (Wp / a->window);
    tf_tensor *bias = a->bias ? tf_reshape(ctx, a->bias, 4, (int64_t[]){1, H, N, N}) : NULL;
    if (!a->shift) return bias;
    tf_tensor *m = tf_window_shift_mask(ctx, (int)Hp, (int)Wp, a->window, a->shift);  // (nW,N,N)
    tf_tensor *z = tf_tensor_new(ctx, TF_DTYPE_F32, 5, (int64_t[]){B, 1, 1, 1, 1}, 0);
    if (!m || !z) return NULL;
    memset(z->data, 0, (size_t)B * sizeof(float));
    tf_tensor *full = tf_add(ctx, z, tf_reshape(ctx, m, 5, (int64_t[]){1, nW, 1, N, N}));  // (B,nW,1,N,N)
    if (bias) full = tf_add(ctx, full, tf_unsqueeze(ctx, bias, 0));                        // (B,nW,H,N,N)
    return tf_reshape(ctx, tf_contiguous(ctx, full), 4, (int64_t[]){B * nW, bias ? H : 1, N, N});
}

tf_tensor *tf_window_attend(tf_ctx *ctx, const tf_mha *m, tf_tensor *h, const tf_window_attn *a, tf_tensor **probs) {
    if (!h) return NULL;
    int64_t B = h->shape[0], C = h->shape[2], Hh = a->height, Ww = a->width, w = a->window, H = m->cfg.n_head;
    char s[64];
    if (h->ndim != 3 || h->shape[1] != Hh * Ww || w < 1 || a->shift < 0 || a->shift >= w)
        return tf_set_error("window attention: x %s is not a %lldx%lld grid, or window %lld / shift %d is wrong",
                            tf_shape_str(h, s, sizeof s), (long long)Hh, (long long)Ww, (long long)w, a->shift), NULL;
    if (m->cfg.ssmax > 0.0f || m->cfg.lsa)
        return tf_set_error("window attention: no Scalable-Softmax (ssmax) or locality self-attention (lsa)"), NULL;
    int64_t Hp = (Hh + w - 1) / w * w, Wp = (Ww + w - 1) / w * w;
    tf_tensor *g = tf_reshape(ctx, h, 4, (int64_t[]){B, Hh, Ww, C});
    g = tf_pad_zeros(ctx, tf_pad_zeros(ctx, g, 2, Wp), 1, Hp);                       // (B,Hp,Wp,C)
    g = roll_dim(ctx, roll_dim(ctx, g, 1, a->shift), 2, a->shift);
    tf_tensor *x = partition(ctx, g, w);                                   // (B*nW,N,C)
    tf_tensor *bias = window_scores_bias(ctx, a, B, H, Hp, Wp);
    if (!x || (a->bias && !bias) || (a->shift && !bias)) return NULL;
    tf_tensor *mask4 = bias;
    tf_attn_mask mask = {0};
    if (mask4) { /* the attention takes (Tq,Tk) or (B*H,Tq,Tk): broadcast the heads and windows out */
        int64_t nB = x->shape[0], N = w * w;
        if (mask4->shape[0] != nB || mask4->shape[1] != H) {
            tf_tensor *z = tf_tensor_new(ctx, TF_DTYPE_F32, 4, (int64_t[]){nB, H, 1, 1}, 0);
            if (!z) return NULL;
            memset(z->data, 0, (size_t)(nB * H) * sizeof(float));
            mask4 = tf_add(ctx, z, mask4);
        }
        mask.mask = tf_reshape(ctx, tf_contiguous(ctx, mask4), 3, (int64_t[]){nB * H, N, N});
        if (!mask.mask) return NULL;
    }
    tf_tensor *y = tf_mha_attend(ctx, m, x, x, x, mask4 ? &mask : NULL, 0, NULL, 0, NULL, probs);  // (B*nW,N,C)
    g = unpartition(ctx, y, B, Hp, Wp, w);                                 // (B,Hp,Wp,C)
    g = roll_dim(ctx, roll_dim(ctx, g, 1, -a->shift), 2, -a->shift);
    if (g && (Hp > Hh || Wp > Ww)) g = tf_narrow(ctx, tf_narrow(ctx, g, 1, 0, Hh), 2, 0, Ww);
    return tf_reshape(ctx, tf_contiguous(ctx, g), 3, (int64_t[]){B, Hh * Ww, C});  // (B,Hh*Ww,C)
}
