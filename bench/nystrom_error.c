/* The approximation error of Nystrom attention against exact softmax
 * attention as the number of landmarks L grows (docs/long-sequences.md).
 *   nystrom_error N [N ...]
 * For each data kind, length N, L in 8, 16, ..., 256 and seed 1..3: q, k, v
 * (1,H,N,D), H = 4, D = 64, through tformer's Nystrom attention
 * (tf_nystrom_attend, src/nn/nystrom.c: Hugging Face's, no convolution, no
 * mask) with L landmarks and with L = 0 (its exact branch, the same scaling),
 * and prints "kind,N,L,seed,relative error", the error ||Y_L - Y|| / ||Y||
 * over every head (Frobenius). Data kinds:
 *   random   q, k, v entries N(0,1): scores q.k/sqrt(D) of standard deviation 1;
 *   lowrank  q, k, v = Z W_q, Z W_k, Z W_v + 0.3 noise N(0,1), one latent Z (N,8)
 *            N(0,1) per head, W entries N(0, 3/8): scores of standard deviation
 *            about 3 (peaked rows, as in trained models), rank 8 plus noise;
 *   smooth   lowrank with Z varying slowly along the sequence (each column a
 *            moving average of 64 positions of N(0,1), rescaled to variance 1):
 *            neighbouring tokens alike, the structure segment means summarise.
 * Not a timing: it may run on a busy machine. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../src/nn/nn_internal.h" /* tf_nystrom_attend: the library has no public Nystrom op */
#include "tformer.h"

enum { H = 4, D = 64, R = 8, SEEDS = 3 };

/* x (N,cols) = z (N,R) w (R,cols) + noise e (N,cols) */
static void low_rank(float *x, const float *z, const float *w, const float *e, int64_t N, float noise) {
    for (int64_t i = 0; i < N; i++)
        for (int c = 0; c < D; c++) {
            double s = 0;
            for (int r = 0; r < R; r++) s += (double)z[i * R + r] * w[r * D + c];
            x[i * D + c] = (float)s + noise * e[i * D + c];
        }
}

/* z (N,R): each column's moving average over `width` positions, variance 1 */
static void smooth_rows(float *z, int64_t N, int width) {
    float *tmp = malloc((size_t)N * sizeof *tmp);
    if (!tmp) return;
    for (int r = 0; r < R; r++) {
        double s = 0;
        for (int64_t i = 0; i < N; i++) {
            s += z[i * R + r] - (i >= width ? z[(i - width) * R + r] : 0.0f);
            tmp[i] = (float)(s / sqrt((double)(i + 1 < width ? i + 1 : width)));
        }
        for (int64_t i = 0; i < N; i++) z[i * R + r] = tmp[i];
    }
    free(tmp);
}

/* q, k, v (1,H,N,D) of one kind and seed */
static int make_qkv(tf_ctx *ctx, const char *kind, int64_t N, uint64_t seed, tf_tensor *qkv[3]) {
    int64_t shape[4] = {1, H, N, D};
    for (int i = 0; i < 3; i++)
        if (!(qkv[i] = tf_tensor_new(ctx, TF_DTYPE_F32, 4, shape, 0))) return -1;
    if (!strcmp(kind, "random")) {
        for (int i = 0; i < 3; i++) tf_tensor_fill_normal(qkv[i], seed * 10 + (uint64_t)i, 1.0f);
        return 0;
    }
    tf_tensor *z = tf_tensor_new(ctx, TF_DTYPE_F32, 2, (int64_t[]){N, R}, 0);
    tf_tensor *w = tf_tensor_new(ctx, TF_DTYPE_F32, 2, (int64_t[]){R, D}, 0);
    tf_tensor *e = tf_tensor_new(ctx, TF_DTYPE_F32, 2, (int64_t[]){N, D}, 0);
    if (!z || !w || !e) return -1;
    for (int h = 0; h < H; h++) {
        tf_tensor_fill_normal(z, seed * 1000 + (uint64_t)h, 1.0f);
        if (!strcmp(kind, "smooth")) smooth_rows(tf_f32(z), N, 64);
        for (int i = 0; i < 3; i++) {
            tf_tensor_fill_normal(w, seed * 1000 + 100 + (uint64_t)(h * 3 + i), sqrtf(3.0f / R));
            tf_tensor_fill_normal(e, seed * 1000 + 200 + (uint64_t)(h * 3 + i), 1.0f);
            low_rank(tf_f32(qkv[i]) + h * N * D, tf_f32(z), tf_f32(w), tf_f32(e), N, 0.3f);
        }
    }
    return 0;
}

static double rel_error(const tf_tensor *y, const tf_tensor *ref) {
    double d = 0, n = 0;
    for (int64_t i = 0; i < tf_numel(ref); i++) {
        double a = tf_f32(y)[i], b = tf_f32(ref)[i];
        d += (a - b) * (a - b), n += b * b;
    }
    return sqrt(d / n);
}

static tf_tensor *nystrom(tf_ctx *ctx, tf_tensor *const qkv[3], int L) {
    tf_mha m;
    memset(&m, 0, sizeof m);
    m.cfg.d_model = H * D, m.cfg.n_head = H, m.cfg.nystrom = 1, m.cfg.landmarks = L;
    return tf_nystrom_attend(ctx, &m, qkv, NULL);
}

int main(int argc, char **argv) {
    static const char *const KINDS[] = {"random", "lowrank", "smooth"};
    static const int LS[] = {8, 16, 32, 64, 128, 256};
    if (argc < 2) return fprintf(stderr, "usage: nystrom_error N [N ...]   (N a multiple of 256)\n"), 2;
    tf_ctx *ctx = tf_ctx_new(1);
    tf_ctx_set_grad(ctx, 0);
    printf("kind,N,L,seed,rel_error\n");
    for (int k = 0; k < 3; k++)
        for (int a = 1; a < argc; a++) {
            int64_t N = atoll(argv[a]);
            if (N < 256 || N % 256) return fprintf(stderr, "nystrom_error: N %s is not a multiple of 256\n", argv[a]), 2;
            for (uint64_t seed = 1; seed <= SEEDS; seed++) {
                tf_ctx_reset(ctx);
                tf_tensor *qkv[3], *exact;
                if (make_qkv(ctx, KINDS[k], N, seed, qkv) || !(exact = nystrom(ctx, qkv, 0)))
                    return fprintf(stderr, "nystrom_error: %s\n", tf_error()), 1;
                for (size_t l = 0; l < sizeof LS / sizeof *LS; l++) {
                    tf_tensor *y = nystrom(ctx, qkv, LS[l]);
                    if (!y) return fprintf(stderr, "nystrom_error: %s\n", tf_error()), 1;
                    printf("%s,%lld,%d,%llu,%.6e\n", KINDS[k], (long long)N, LS[l], (unsigned long long)seed,
                           rel_error(y, exact));
                    fflush(stdout);
                }
            }
        }
    tf_ctx_free(ctx);
    return 0;
}
