/* Batched matrix product with either operand transposed. */
#include <string.h>

#include "bf16.h"
#include "kernels.h"
#include "ops_internal.h"

#ifdef _OPENMP
#include <omp.h>
#endif

typedef struct {
    int64_t batch, M, N, K;
    int a_batched, b_batched; /* 0: the operand is one matrix shared by every batch */
    int ta, tb;
    int kernel; /* TF_GEMM_AUTO, or TF_GEMM_BF16 (the context's precision when recorded) */
} tf_matmul_params;

/* The portable kernel of gemm_acc (BLAS-free): loop orders keep the innermost loop contiguous. */
static void gemm_acc_c(float *C, const float *A, const float *B, int64_t M, int64_t N, int64_t K,
                       int ta, int tb) {
    if (!ta && !tb) {
        for (int64_t i = 0; i < M; i++)
            for (int64_t k = 0; k < K; k++) {
                float a = A[i * K + k];
                const float *b = B + k * N;
                float *c = C + i * N;
                for (int64_t j = 0; j < N; j++) c[j] += a * b[j];
            }
    } else if (!ta && tb) {
        const tf_kernels *kern = tf_kern(); /* as a one-row product sums them (gemv_chunk) */
        for (int64_t i = 0; i < M; i++) kern->dot_rows(C + i * N, B, K, A + i * K, N, K, 1.0f);
    } else if (ta && !tb) {
        for (int64_t k = 0; k < K; k++)
            for (int64_t i = 0; i < M; i++) {
                float a = A[k * M + i];
                const float *b = B + k * N;
                float *c = C + i * N;
                for (int64_t j = 0; j < N; j++) c[j] += a * b[j];
            }
    } else {
        for (int64_t i = 0; i < M; i++)
            for (int64_t j = 0; j < N; j++) {
                float s = 0.0f;
                for (int64_t k = 0; k < K; k++) s += A[k * M + i] * B[j * K + k];
                C[i * N + j] += s;
            }
    }
}

/* Below this many multiply-adds the call overhead of a BLAS outweighs it. */
#define TF_BLAS_MIN_WORK (32 * 32 * 32)

static int64_t round16(int64_t x) { return (x + 15) / 16 * 16; }

/* Tiles of C for the threads: halve the longer side (to multiples of 16, the
 * BLAS's register blocking; not below 256) while a tile holds at least 8M
 * multiply-adds and there are fewer than 16 tiles. The tiles depend on the
 * shape alone, so every element is summed the same way on any thread count;
 * large tiles keep the BLAS's repacking of A and B small (bench_matmul,
 * Linear 768->3072 forward+backward on one core: 0.79 of bare sgemm with
 * 64-row blocks, 0.89 with 128-wide tiles, 0.94 with 256-wide ones; 8M
 * rather than 16M lets nanoGPT's 768x128x128 products use two threads). */
static void gemm_tiles(int64_t M, int64_t N, int64_t K, int64_t *rb, int64_t *cb) {
    int64_t r = M, c = N;
    while (r * c * K >= (1 << 23) && (r > 256 || c > 256) && ((M + r - 1) / r) * ((N + c - 1) / c) < 16) {
        if (r <= 256 || c >= 2 * r) c = round16((c + 1) / 2);
        else r = round16((r + 1) / 2);
    }
    /* a product the rule leaves whole but with 2M multiply-adds still halves
     * its longer side once, so that a second thread has half of it: nanoGPT's
     * 128x128 weight gradients over 768 rows and its 768x65 head ran on one
     * thread while the other waited (two threads +2.8%, one the same) */
    if (r == M && c == N && r * c * K >= (1 << 21) && (r >= 128 || c >= 128)) {
        if (r >= c) r = round16((r + 1) / 2);
        else c = round16((c + 1) / 2);
    }
    *rb = r, *cb = c;
}

/* C (1,N) += a (K) op(B): one row (a decoding step). A BLAS would repack all
 * of B for it. Columns go in equal chunks to the threads (B (K,N): of at most
 * GEMV_MAX_CHUNK columns, so the chunk's sums stay in L1); each
 * element sums over k in order, so any chunking and thread count give the
 * same bits. B (K,N): a matrix that fits in L2 through the kernel set's tile
 * product (the chunk's columns stay in registers over k); a larger one 8 rows
 * a pass (axpy_rows: B streams through in whole row pieces). B (N,K): one dot
 * product per column. */
#define GEMV_MAX_CHUNK 4096
static void gemv_chunk(float *C, const float *a, const float *B, int64_t N, int64_t K, int tb, int64_t j0,
                       int64_t j1) {
    const tf_kernels *kern = tf_kern();
    if (tb) {
        kern->dot_rows(C + j0, B + j0 * K, K, a, j1 - j0, K, 1.0f);
    } else if (K * N <= (1 << 16)) {
        kern->tile_gemm(C + j0, j1 - j0, a, K, 1, B + j0, N, 1, j1 - j0, K, 1.0f);
    } else {
        kern->axpy_rows(C + j0, a, B + j0, N, K, j1 - j0);
    }
}

/* How gemv_acc cuts N columns of a (K,N) or (N,K) B: the chunks (returned) of *w columns
 * each (the last fewer), a multiple of the threads when *par (equal shares), each of at most
 * GEMV_MAX_CHUNK columns for (K,N). */
static int64_t gemv_chunks(int64_t N, int64_t K, int tb, int *par, int64_t *w) {
    *par = N * K >= (1 << 18);
    const int64_t nt = *par ? tf_threads_free() : 1;
    int64_t nc = nt;
    while (!tb && round16((N + nc - 1) / nc) > GEMV_MAX_CHUNK) nc += nt;
    *w = round16((N + nc - 1) / nc);
    return (N + *w - 1) / *w;
}

static void gemv_acc(float *C, const float *a, const float *B, int64_t N, int64_t K, int tb) {
    int par;
    int64_t w, nc = gemv_chunks(N, K, tb, &par, &w);
    TF_PARALLEL_FOR(par && nc > 1, c, nc, gemv_chunk(C, a, B, N, K, tb, c * w, (c + 1) * w < N ? (c + 1) * w : N));
}

/* Columns j0..j1 of C (M,N) += A (M,K) op(B), each row as gemv_chunk sums it alone: the
 * piece of B read once from memory, then from cache by every row. */
static void rows_block(float *C, const float *A, const float *B, int64_t M, int64_t N, int64_t K, int tb, int64_t j0,
                       int64_t j1) {
    const tf_kernels *kern = tf_kern();
    /* several rows per load of B, each row's sums as axpy_rows / dot_rows make them */
    if (tb) kern->dot_rows_m(C + j0, N, B + j0 * K, K, A, K, M, j1 - j0, K);
    else kern->axpy_rows_m(C + j0, N, A, K, M, B + j0, N, K, j1 - j0);
}

/* C (M,N) += A (M,K) op(B) with every row's bits those of its one-row product (gemv_acc):
 * several decoding steps in one product, each equal to its step alone. Each element's sum
 * depends on its column alone, not on how the columns are cut: a tile product sums from 0
 * then adds (the one-row one for a small B (K,N)), axpy_rows sums onto C in order, dot_rows
 * sums columns in fours from a multiple of 4 (columns past the last four: one at a time).
 * So the columns go in blocks of a multiple of 16 whose piece of B (at most 256 KiB) stays
 * in cache while each row reads it: B streams from memory once for all rows. */
static void rows_acc(float *C, const float *A, const float *B, int64_t M, int64_t N, int64_t K, int tb) {
    const tf_kernels *kern = tf_kern();
    if (M == 1) {
        gemv_acc(C, A, B, N, K, tb);
        return;
    }
    if (!tb && K * N <= (1 << 16)) {
        kern->tile_gemm(C, N, A, K, 1, B, N, M, N, K, 1.0f);
        return;
    }
    if (!tb && M <= 8) { /* a few rows (beams): B's rows in whole pieces, as gemv_acc cuts them */
        int par;
        int64_t wc, nc = gemv_chunks(N, K, tb, &par, &wc);
        TF_PARALLEL_FOR(par && nc > 1, c, nc, int64_t j0 = c * wc;
                        kern->axpy_rows_m(C + j0, N, A, K, M, B + j0, N, K, ((c + 1) * wc < N ? (c + 1) * wc : N) - j0));
        return;
    }
    int64_t w = (1 << 16) / K / 16 * 16;
    w = w < 16 ? 16 : w;
    int64_t blocks = (N + w - 1) / w;
    TF_PARALLEL_FOR(M * N * K >= (1 << 18) && blocks > 1, c, blocks,
                    rows_block(C, A, B, M, N, K, tb, c * w, (c + 1) * w < N ? (c + 1) * w : N));
}

void tf_tile_acc(float *C, const float *A, const float *B, int64_t ldb, int64_t M, int64_t N, int64_t K) {
    const tf_kernels *kern = tf_kern();
    int64_t nt = M * N * K >= (1 << 20) ? tf_threads_free() : 1, w = ((N + nt - 1) / nt + 63) / 64 * 64;
    TF_PARALLEL_FOR(N > w, c, (N + w - 1) / w, int64_t j0 = c * w; int64_t j1 = j0 + w < N ? j0 + w : N;
                    kern->tile_gemm(C + j0, N, A, K, 1, B + j0, ldb, M, j1 - j0, K, 1.0f));
}

/* C (M,N) += op(A) op(B); A is stored (M,K), or (K,M) when ta; B is stored
 * (K,N), or (N,K) when tb. */
void tf_gemm_acc(float *C, const float *A, const float *B, int64_t M, int64_t N, int64_t K, int ta, int tb,
                 int kernel) {
    if (kernel == TF_GEMM_BF16) {
        const tf_bf16_kernels *k = tf_bf16_best();
        if (k && !tf_gemm_bf16_with(k, C, A, B, M, N, K, ta, tb)) return;
        kernel = TF_GEMM_AUTO; /* float where the CPU has no bf16 products (or no scratch was had) */
    }
    if (kernel == TF_GEMM_ROWS && !ta) {
        rows_acc(C, A, B, M, N, K, tb);
        return;
    }
    if (kernel == TF_GEMM_ROWS) kernel = TF_GEMM_AUTO;
    if (M == 1 && kernel == TF_GEMM_AUTO) { /* A (1,K) and (K,1) are the same vector */
        gemv_acc(C, A, B, N, K, tb);
        return;
    }
    if (kernel == TF_GEMM_AUTO && !ta && !tb && tf_tile_rows(M, N, K) && tf_kern() != tf_kern_get(TF_ISA_PORTABLE)) {
        tf_tile_acc(C, A, B, N, M, N, K); /* the scalar loops would not beat a BLAS */
        return;
    }
    tf_sgemm_fn sgemm = kernel == TF_GEMM_PORTABLE ? NULL : tf_blas_sgemm();
    if (sgemm && (kernel == TF_GEMM_BLAS || M * N * K >= TF_BLAS_MIN_WORK) && M <= INT32_MAX && N <= INT32_MAX &&
        K <= INT32_MAX) {
        enum { ROW_MAJOR = 101, NO_TRANS = 111, TRANS = 112 }; /* CBLAS's values */
        int64_t rb, cb;
        gemm_tiles(M, N, K, &rb, &cb);
        int64_t tr = (M + rb - 1) / rb, tiles = tr * ((N + cb - 1) / cb);
        /* OpenBLAS runs single-threaded inside a tile: one pool serves every kernel */
#pragma omp parallel for schedule(dynamic) if (tf_threads_free() > 1 && (tiles > 1))
        for (int64_t t = 0; t < tiles; t++) {
            int64_t i0 = t % tr * rb, j0 = t / tr * cb;
            int64_t m = M - i0 < rb ? M - i0 : rb, n = N - j0 < cb ? N - j0 : cb;
            sgemm(ROW_MAJOR, ta ? TRANS : NO_TRANS, tb ? TRANS : NO_TRANS, (int)m, (int)n, (int)K, 1.0f,
                  A + (ta ? i0 : i0 * K), (int)(ta ? M : K), B + (tb ? j0 * K : j0), (int)(tb ? K : N), 1.0f,
                  C + i0 * N + j0, (int)N);
        }
        return;
    }
    gemm_acc_c(C, A, B, M, N, K, ta, tb);
}

/* A batch of A with one B (a tied LM head's (B,T,C) x (V,C)^T): the batches
 * fold into one (batch*M)-row product, forward and backward; per batch, T
 * rows went to the few-row tile kernel over all V columns. */
static int folds_batches(const tf_matmul_params *p) {
    return p->batch > 1 && p->a_batched && !p->b_batched && !p->ta;
}

void tf_op_matmul_forward(tf_node *n) {
    const tf_matmul_params *p = n->params;
    const float *A = tf_f32(n->in[0]), *B = tf_f32(n->in[1]);
    float *C = tf_f32(n->out);  // C: (batch, M, N)
    memset(C, 0, (size_t)tf_numel(n->out) * sizeof *C);
    if (folds_batches(p)) { /* (a batch of decoding steps: not one gemv each) */
        tf_gemm_acc(C, A, B, p->batch * p->M, p->N, p->K, 0, p->tb, p->kernel);
        return;
    }
    for (int64_t b = 0; b < p->batch; b++)
        tf_gemm_acc(C + b * p->M * p->N, A + (p->a_batched ? b * p->M * p->K : 0),
                    B + (p->b_batched ? b * p->K * p->N : 0), p->M, p->N, p->K, p->ta, p->tb, p->kernel);
}

void tf_op_matmul_backward(tf_node *n) {
    const tf_matmul_params *p = n->params;
    tf_tensor *TA = n->in[0], *TB = n->in[1];
    const float *A = tf_f32(TA), *B = tf_f32(TB), *dC = n->out->grad;
    int64_t M = p->M, N = p->N, K = p->K;
    if (folds_batches(p)) {
        int64_t R = p->batch * M;
        if (TA->grad) tf_gemm_acc(TA->grad, dC, B, R, K, N, 0, !p->tb, p->kernel);  // dA (R,K) = dC op(B)^T
        if (TB->grad && !p->tb) tf_gemm_acc(TB->grad, A, dC, K, N, R, 1, 0, p->kernel);  // dB (K,N) = A^T dC
        else if (TB->grad) tf_gemm_acc(TB->grad, dC, A, N, K, R, 1, 0, p->kernel);        // dB (N,K) = dC^T A
        return;
    }
    for (int64_t b = 0; b < p->batch; b++) {
        const float *a = A + (p->a_batched ? b * M * K : 0), *bb = B + (p->b_batched ? b * K * N : 0);
        const float *dc = dC + b * M * N;
        if (TA->grad) {
            float *da = TA->grad + (p->a_batched ? b * M * K : 0);
            if (!p->ta) tf_gemm_acc(da, dc, bb, M, K, N, 0, !p->tb, p->kernel);  // dA (M,K) = dC op(B)^T
            else tf_gemm_acc(da, bb, dc, K, M, N, p->tb, 1, p->kernel);          // dA (K,M) = op(B) dC^T
        }
        if (TB->grad) {
            float *db = TB->grad + (p->b_batched ? b * K * N : 0);
            if (!p->tb) tf_gemm_acc(db, a, dc, K, N, M, !p->ta, 0, p->kernel);   // dB (K,N) = op(A)^T dC
            else tf_gemm_acc(db, dc, a, N, K, M, 1, p->ta, p->kernel);           // dB (N,K) = dC^T op(A)
        }
    }
}

tf_tensor *tf_matmul(tf_ctx *ctx, tf_tensor *a, tf_tensor *b, int trans_a, int trans_b) {
    if (!a || !b) return NULL;
    char sa[64], sb[64];
    if (a->dtype != TF_DTYPE_F32 || b->dtype != TF_DTYPE_F32 || a->ndim < 2 || b->ndim < 2)
        return tf_set_error("matmul: inputs must be F32 with at least 2 dims, got %s and %s",
                            tf_shape_str(a, sa, sizeof sa), tf_shape_str(b, sb, sizeof sb)), NULL;
    tf_matmul_params *p = tf_ctx_alloc(ctx, sizeof *p);
    if (!p) return NULL;
    int ra = a->ndim, rb = b->ndim;
    p->ta = trans_a != 0;
    p->tb = trans_b != 0;
    p->kernel = tf_ctx_gemm_kernel(ctx);
    p->M = a->shape[ra - 2 + p->ta];
    p->K = a->shape[ra - 1 - p->ta];
    int64_t kb = b->shape[rb - 2 + p->tb];
    p->N = b->shape[rb - 1 - p->tb];
    p->a_batched = ra > 2;
    p->b_batched = rb > 2;
    int batch_ok = !p->a_batched || !p->b_batched ||
                   (ra == rb && !memcmp(a->shape, b->shape, (size_t)(ra - 2) * sizeof(int64_t)));
    if (kb != p->K || !batch_ok)
        return tf_set_error("matmul: shapes %s%s and %s%s do not multiply",
                            tf_shape_str(a, sa, sizeof sa), p->ta ? "^T" : "",
                            tf_shape_str(b, sb, sizeof sb), p->tb ? "^T" : ""), NULL;
    const tf_tensor *lead = p->a_batched ? a : b;
    int64_t shape[TF_MAX_DIMS];
    p->batch = 1;
    for (int d = 0; d < lead->ndim - 2; d++) p->batch *= (shape[d] = lead->shape[d]);
    int nd = lead->ndim;
    shape[nd - 2] = p->M;
    shape[nd - 1] = p->N;
    tf_tensor *in[2] = {tf_contiguous(ctx, a), tf_contiguous(ctx, b)};
    return tf_node_run(ctx, tf_node_new(ctx, TF_OP_MATMUL, 2, in, TF_DTYPE_F32, nd, shape, p));
}

/* Threads at most, unless the machine has more cores: libgomp crashes when it cannot
 * create the threads asked for (100000), and far more threads than cores only spin.
 * The CLI refuses a --threads above the same bound (cli/cli.h, CLI_MAX_THREADS). */
enum { MAX_THREADS = 256 };

void tf_set_threads(int n) {
#ifdef _OPENMP
    int cores = omp_get_num_procs(), most = cores > MAX_THREADS ? cores : MAX_THREADS;
    omp_set_num_threads(n <= 0 ? cores : n > most ? most : n);
#else
    (void)n;
#endif
}
