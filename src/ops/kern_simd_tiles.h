/* The SIMD kernels' small matrix products (kern_simd.h includes this file
 * with its vector vocabulary defined, and KR, KNV: the register block of
 * tile_gemm): axpy_rows and dot_rows (a decoding step's one row by (in,out)
 * or (out,in) weights) with their batched forms, tile_gemm (attention's tiles)
 * and pv_heads (a decoding step's P V over its heads together). */

/* y (n) += a[0..rows) B (rows rows, ldb apart), rows <= 16 (a constant where
 * inlined): each y vector is loaded and stored once for all the rows, its
 * FMAs in row order (the bits of one axpy per row). */
KT __attribute__((always_inline)) void axpy_block(float *y, const float *a, const float *B, int64_t ldb, int rows,
                                                  int64_t n) {
    V va[16];
    for (int r = 0; r < rows; r++) va[r] = v_set(a[r]);
    int64_t i = 0;
    for (; i + VW <= n; i += VW) {
        V acc = v_ld(y + i);
        for (int r = 0; r < rows; r++) acc = v_fma(va[r], v_ld(B + r * ldb + i), acc);
        v_st(y + i, acc);
    }
    if (i < n) {
        V acc = v_ldt(y + i, n - i, 0.0f);
        for (int r = 0; r < rows; r++) acc = v_fma(va[r], v_ldt(B + r * ldb + i, n - i, 0.0f), acc);
        v_stt(y + i, acc, n - i);
    }
}

/* Y rows r0.. (AR of them; a partial block repeats nothing: rows < AR are
 * skipped), columns j0..j0+nv vectors (tail lanes in the last), += a_r B:
 * each element loaded from Y, then one FMA per k in order, then stored: the
 * operations k_axpy_rows does on it (acc = y; acc = fma(a[k], B[k], acc)),
 * so the same bits, with each load of B serving AR rows. */
#define AR 4
KT __attribute__((always_inline)) void axpy_tile(float *Y, int64_t ldy, const float *A, int64_t lda, int64_t rows,
                                                 const float *B, int64_t ldb, int64_t j0, int64_t nv, int64_t tail,
                                                 int64_t k) {
    V acc[AR][KNV];
    for (int r = 0; r < AR && r < rows; r++)
        for (int v = 0; v < nv; v++) {
            const float *y = Y + r * ldy + j0 + v * VW;
            acc[r][v] = v == nv - 1 && tail ? v_ldt(y, tail, 0.0f) : v_ld(y);
        }
    for (int64_t kk = 0; kk < k; kk++) {
        const float *b = B + kk * ldb + j0;
        V bv[KNV];
        for (int v = 0; v < nv; v++) bv[v] = v == nv - 1 && tail ? v_ldt(b + v * VW, tail, 0.0f) : v_ld(b + v * VW);
        for (int r = 0; r < AR && r < rows; r++) {
            V a = v_set(A[r * lda + kk]);
            for (int v = 0; v < nv; v++) acc[r][v] = v_fma(a, bv[v], acc[r][v]);
        }
    }
    for (int r = 0; r < AR && r < rows; r++)
        for (int v = 0; v < nv; v++) {
            float *y = Y + r * ldy + j0 + v * VW;
            if (v == nv - 1 && tail) v_stt(y, acc[r][v], tail);
            else v_st(y, acc[r][v]);
        }
}

/* Y (m,n) += a_r B (rows rows of B, ldb apart), m <= AXPY_FEW (a constant
 * where inlined): each B vector loaded once for the m rows, and each Y vector
 * loaded, given its FMAs in row order and stored, as axpy_block does alone. */
#define AXPY_FEW 8
KT __attribute__((always_inline)) void axpy_block_few(float *Y, int64_t ldy, const float *A, int64_t lda, int m,
                                                      const float *B, int64_t ldb, int rows, int64_t n) {
    int64_t i = 0;
    for (; i + VW <= n; i += VW) {
        V bv[16];
        for (int r = 0; r < rows; r++) bv[r] = v_ld(B + r * ldb + i);
        for (int q = 0; q < m; q++) {
            V acc = v_ld(Y + q * ldy + i);
            for (int r = 0; r < rows; r++) acc = v_fma(v_set(A[q * lda + r]), bv[r], acc);
            v_st(Y + q * ldy + i, acc);
        }
    }
    if (i < n)
        for (int q = 0; q < m; q++) axpy_block(Y + q * ldy + i, A + q * lda, B + i, ldb, rows, n - i);
}

/* Y (m,n) += A (m,k) B (k,n) for m <= AXPY_FEW rows, rows ldb apart: 16 rows
 * of B a pass where the vectors are 16 wide (32 registers), else 8, so B
 * streams in whole row pieces, 16 rows at once, and Y's traffic is a sixteenth
 * of one axpy per row. 16 streams read memory faster than 8: GPT-2-124M's
 * float decoding on one Zen 4 core went from 40-42 to 47-52 tokens/s with the
 * head's twelve rows below; 24 spill and are slower. One row (m 1, a constant
 * where inlined: k_axpy_rows) keeps a pass's broadcasts in registers. */
KT __attribute__((always_inline)) void axpy_rows_few(float *Y, int64_t ldy, const float *A, int64_t lda, int64_t m,
                                                     const float *B, int64_t ldb, int64_t k, int64_t n) {
#define PASS(R)                                                                                      \
    (m == 1 ? axpy_block(Y, A + r, B + r * ldb, ldb, R, n)                                           \
            : axpy_block_few(Y, ldy, A + r, lda, (int)m, B + r * ldb, ldb, R, n))
    int64_t r = 0;
    if (VW == 16)
        for (; r + 16 <= k; r += 16) PASS(16);
    for (; r + 8 <= k; r += 8) PASS(8);
    for (; r + 4 <= k; r += 4) PASS(4);
    for (; r < k; r++) PASS(1);
#undef PASS
}

/* y (n) += a (k) B (k,n), rows ldb apart (axpy_rows_few's passes). */
KT void k_axpy_rows(float *y, const float *a, const float *B, int64_t ldb, int64_t k, int64_t n) {
    axpy_rows_few(y, 0, a, 0, 1, B, ldb, k, n);
}

/* Y (m,n) += A (m,k) B (k,n), rows ldy, lda, ldb apart: each row's bits those
 * of k_axpy_rows on it alone (several decoding steps in one product, each
 * equal to its step alone). A few rows (beams): B in k_axpy_rows' passes, each
 * piece for every row; more: B read once per AR rows of register tiles. */
KT void k_axpy_rows_m(float *Y, int64_t ldy, const float *A, int64_t lda, int64_t m, const float *B, int64_t ldb,
                      int64_t k, int64_t n) {
    if (m <= AXPY_FEW) {
        axpy_rows_few(Y, ldy, A, lda, m, B, ldb, k, n);
        return;
    }
    int64_t m4 = m / AR * AR;
    for (int64_t j0 = 0; j0 < n && m4; j0 += KNV * VW) {
        int64_t cols = n - j0 < KNV * VW ? n - j0 : KNV * VW;
        int64_t nv = (cols + VW - 1) / VW, tail = cols % VW;
        for (int64_t i0 = 0; i0 < m4; i0 += AR) {
            if (cols == KNV * VW) axpy_tile(Y + i0 * ldy, ldy, A + i0 * lda, lda, AR, B, ldb, j0, KNV, 0, k);
            else axpy_tile(Y + i0 * ldy, ldy, A + i0 * lda, lda, AR, B, ldb, j0, nv, tail, k);
        }
    }
    for (int64_t i = m4; i < m; i++) k_axpy_rows(Y + i * ldy, A + i * lda, B, ldb, k, n);
}
#undef AR

/* C (m,n) = A B + beta C for the small tiles of fused attention: A (m,k) at
 * A[r*rs + kk*cs] (either layout, so A^T costs nothing), B (k,n) with rows
 * ldb apart, C (m,n) with rows ldc apart. Register blocks of KR rows x KNV
 * vectors: per step of k, KNV loads of B, KR broadcasts of A, KR*KNV FMAs.
 * Always inlined: called with constant rows / nv / tail for whole blocks, the
 * compiler drops the bounds checks and keeps the accumulators in registers. */
KT __attribute__((always_inline)) void tile_block(float *C, int64_t ldc, const float *A, int64_t rs, int64_t cs, const float *B, int64_t ldb,
                   int64_t rows, int64_t j0, int64_t nv, int64_t tail, int64_t k, float beta) {
    V acc[KR][KNV];
    for (int r = 0; r < KR; r++)
        for (int v = 0; v < KNV; v++) acc[r][v] = v_set(0.0f);
    for (int64_t kk = 0; kk < k; kk++) {
        const float *b = B + kk * ldb + j0;
        V bv[KNV];
        for (int v = 0; v < KNV; v++)
            bv[v] = v < nv ? (v == nv - 1 && tail ? v_ldt(b + v * VW, tail, 0.0f) : v_ld(b + v * VW)) : v_set(0.0f);
        for (int r = 0; r < KR; r++) {
            if (r >= rows) break;
            V a = v_set(A[r * rs + kk * cs]);
            for (int v = 0; v < KNV; v++) acc[r][v] = v_fma(a, bv[v], acc[r][v]);
        }
    }
    for (int r = 0; r < rows; r++)
        for (int v = 0; v < nv; v++) {
            float *c = C + r * ldc + j0 + v * VW;
            int last = v == nv - 1 && tail;
            V old = beta == 0.0f ? v_set(0.0f) : last ? v_ldt(c, tail, 0.0f) : v_ld(c);
            if (last) v_stt(c, v_add(old, acc[r][v]), tail);
            else v_st(c, v_add(old, acc[r][v]));
        }
}

/* A block of rows < KR, or of KR rows whose columns end in a tail, with at most
 * two vectors of columns: the row count and vector count as constants (the
 * accumulators in registers), the tail lanes masked. Attention's tiles of a
 * short sentence (S keys or D columns past the whole blocks: the encoder's, and
 * the 5 beams of a source reading its cross-attention keys) and a decoding
 * step's one row took the general block, its accumulators in memory. */
KT __attribute__((always_inline)) void tile_small(float *C, int64_t ldc, const float *A, int64_t rs, int64_t cs,
                                                  const float *B, int64_t ldb, int64_t rows, int64_t j0, int64_t nv,
                                                  int64_t tail, int64_t k, float beta) {
#define TS(R, NV) tile_block(C, ldc, A, rs, cs, B, ldb, R, j0, NV, tail, k, beta)
    switch (rows * 2 + nv - 1) {
    case 2: TS(1, 1); break;
    case 3: TS(1, 2); break;
    case 4: TS(2, 1); break;
    case 5: TS(2, 2); break;
    case 6: TS(3, 1); break;
    case 7: TS(3, 2); break;
    case 8: TS(4, 1); break;
    case 9: TS(4, 2); break;
#if KR > 4
    case 10: TS(5, 1); break;
    case 11: TS(5, 2); break;
    case 12: TS(6, 1); break;
    case 13: TS(6, 2); break;
    case 14: TS(7, 1); break;
    case 15: TS(7, 2); break;
    case 16: TS(8, 1); break;
    case 17: TS(8, 2); break;
#endif
    default: tile_block(C, ldc, A, rs, cs, B, ldb, rows, j0, nv, tail, k, beta);
    }
#undef TS
}

KT void k_tile_gemm(float *C, int64_t ldc, const float *A, int64_t rs, int64_t cs, const float *B, int64_t ldb,
                    int64_t m, int64_t n, int64_t k, float beta) {
    for (int64_t j0 = 0; j0 < n; j0 += KNV * VW) {
        int64_t cols = n - j0 < KNV * VW ? n - j0 : KNV * VW;
        int64_t nv = (cols + VW - 1) / VW, tail = cols % VW;
        for (int64_t i0 = 0; i0 < m; i0 += KR) {
            /* whole row blocks with constant widths: attention's n = D of 16 or 32
             * (1 or 2 vectors) took the general block, its accumulators not in
             * registers (15% of a small GPT's step was this kernel) */
            int64_t rows = m - i0 < KR ? m - i0 : KR;
            if (rows == KR && cols == KNV * VW)
                tile_block(C + i0 * ldc, ldc, A + i0 * rs, rs, cs, B, ldb, KR, j0, KNV, 0, k, beta);
            else if (rows == KR && KNV > 2 && cols == 2 * VW)
                tile_block(C + i0 * ldc, ldc, A + i0 * rs, rs, cs, B, ldb, KR, j0, 2, 0, k, beta);
            else if (rows == KR && KNV > 1 && cols == VW)
                tile_block(C + i0 * ldc, ldc, A + i0 * rs, rs, cs, B, ldb, KR, j0, 1, 0, k, beta);
            else if (nv <= 2)
                tile_small(C + i0 * ldc, ldc, A + i0 * rs, rs, cs, B, ldb, rows, j0, nv, tail, k, beta);
            else
                tile_block(C + i0 * ldc, ldc, A + i0 * rs, rs, cs, B, ldb, rows, j0, nv, tail, k, beta);
        }
    }
}

/* C_h (1,n) += A_h (1,k) B_h (k,n) for heads h < nh: A_h at A + h sa,
 * B_h at B + h sb (rows ldb apart), C_h at C + h sc. Per head the operations of
 * k_tile_gemm with m = 1 and beta 1 (acc = 0, one FMA per k in order, then C +
 * acc), so its bits; for n <= 2 VW four heads at a time, their chains
 * interleaved: a decoding step's P V, one chain per vector of one row, waited
 * on each FMA's latency. */
#define PH 4
KT __attribute__((always_inline)) void pv_block(float *C, int64_t sc, const float *A, int64_t sa, const float *B,
                                                int64_t sb, int64_t ldb, int nh, int nv, int64_t tail, int64_t k) {
    V acc[PH][2];
    for (int h = 0; h < PH; h++) acc[h][0] = acc[h][1] = v_set(0.0f);
    for (int64_t kk = 0; kk < k; kk++)
        for (int h = 0; h < PH && h < nh; h++) {
            const float *b = B + h * sb + kk * ldb;
            V a = v_set(A[h * sa + kk]);
            for (int v = 0; v < nv; v++)
                acc[h][v] = v_fma(a, v == nv - 1 && tail ? v_ldt(b + v * VW, tail, 0.0f) : v_ld(b + v * VW), acc[h][v]);
        }
    for (int h = 0; h < PH && h < nh; h++)
        for (int v = 0; v < nv; v++) {
            float *c = C + h * sc + v * VW;
            if (v == nv - 1 && tail) v_stt(c, v_add(v_ldt(c, tail, 0.0f), acc[h][v]), tail);
            else v_st(c, v_add(v_ld(c), acc[h][v]));
        }
}

KT void k_pv_heads(float *C, int64_t sc, const float *A, int64_t sa, const float *B, int64_t sb, int64_t ldb,
                   int64_t nh, int64_t n, int64_t k) {
    int64_t tail = n % VW;
    if (n > 2 * VW) { /* wider heads (D 64 on AVX2): head by head, tile_gemm's register blocks */
        for (int64_t h = 0; h < nh; h++) k_tile_gemm(C + h * sc, sc, A + h * sa, k, 1, B + h * sb, ldb, 1, n, k, 1.0f);
        return;
    }
    for (int64_t h = 0; h < nh; h += PH) {
        float *c = C + h * sc;
        const float *a = A + h * sa, *b = B + h * sb;
        if (nh - h >= PH && n == 2 * VW) pv_block(c, sc, a, sa, b, sb, ldb, PH, 2, 0, k); /* D = 2 VW (32 on AVX-512) */
        else if (nh - h >= PH && n == VW) pv_block(c, sc, a, sa, b, sb, ldb, PH, 1, 0, k);
        else if (n > VW) pv_block(c, sc, a, sa, b, sb, ldb, (int)(nh - h < PH ? nh - h : PH), 2, tail, k);
        else pv_block(c, sc, a, sa, b, sb, ldb, (int)(nh - h < PH ? nh - h : PH), 1, tail, k);
    }
}
#undef PH

/* y (R rows) = B x + beta y, R = 4 or 12 (a constant where inlined): each row
 * with two accumulators (even and odd vectors), then one masked tail, reduced
 * by fours. A row's operations do not depend on R: R streams of B at once. */
KT __attribute__((always_inline)) void dot_block(float *y, const float *B, int64_t ldb, const float *x, int64_t k,
                                                 float beta, const int R) {
    int64_t t = k % VW, kv = k - t, k2 = kv / (2 * VW) * (2 * VW), i = 0;
    V a[12], c[12];
    for (int q = 0; q < R; q++) a[q] = v_set(0.0f), c[q] = v_set(0.0f);
    for (; i < k2; i += 2 * VW) {
        V x0 = v_ld(x + i), x1 = v_ld(x + i + VW);
        for (int q = 0; q < R; q++) a[q] = v_fma(v_ld(B + q * ldb + i), x0, a[q]);
        for (int q = 0; q < R; q++) c[q] = v_fma(v_ld(B + q * ldb + i + VW), x1, c[q]);
    }
    if (i < kv) {
        V x0 = v_ld(x + i);
        for (int q = 0; q < R; q++) a[q] = v_fma(v_ld(B + q * ldb + i), x0, a[q]);
    }
    if (t) {
        V xv = v_ldt(x + kv, t, 0.0f);
        for (int q = 0; q < R; q++) c[q] = v_fma(v_ldt(B + q * ldb + kv, t, 0.0f), xv, c[q]);
    }
    for (int q = 0; q < R; q += 4) {
        float s[4];
        v_hsum4(s, v_add(a[q], c[q]), v_add(a[q + 1], c[q + 1]), v_add(a[q + 2], c[q + 2]), v_add(a[q + 3], c[q + 3]));
        for (int l = 0; l < 4; l++) y[q + l] = beta == 0.0f ? s[l] : y[q + l] + s[l];
    }
}

/* y (rows) = B x + beta y: twelve rows at a time where the vectors are 16 wide
 * (24 of the 32 registers accumulate), then fours, then one row at a time with
 * one accumulator. Twelve streams of B read memory faster than four: GPT-2's
 * tied head (50257 rows of 768) went from 1.26x to 1.07x the time per byte of
 * the (in,out) products (decoding on one Zen 4 core, perf). */
KT void k_dot_rows(float *y, const float *B, int64_t ldb, const float *x, int64_t rows, int64_t k, float beta) {
    int64_t r = 0, t = k % VW, kv = k - t;
    if (VW == 16)
        for (; r + 12 <= rows; r += 12) dot_block(y + r, B + r * ldb, ldb, x, k, beta, 12);
    for (; r + 4 <= rows; r += 4) dot_block(y + r, B + r * ldb, ldb, x, k, beta, 4);
    for (; r < rows; r++) {
        const float *b = B + r * ldb;
        V a = v_set(0.0f);
        for (int64_t i = 0; i < kv; i += VW) a = v_fma(v_ld(b + i), v_ld(x + i), a);
        if (t) a = v_fma(v_ldt(b + kv, t, 0.0f), v_ldt(x + kv, t, 0.0f), a);
        y[r] = beta == 0.0f ? v_hsum(a) : y[r] + v_hsum(a);
    }
}

/* y_q (4) += B (4 rows, ldb apart) x_q for xr <= 2 inputs x_q (ldx apart), y_q
 * ldy apart: per input the operations of k_dot_rows' blocks of four rows
 * (beta 1), so the same bits, with each load of B serving xr inputs. */
KT __attribute__((always_inline)) void dot4_rows_x(float *y, int64_t ldy, const float *B, int64_t ldb, const float *X,
                                                   int64_t ldx, int xr, int64_t k) {
    int64_t t = k % VW, kv = k - t, k2 = kv / (2 * VW) * (2 * VW), i = 0;
    V a[2][4], c[2][4];
    for (int q = 0; q < xr; q++)
        for (int l = 0; l < 4; l++) a[q][l] = v_set(0.0f), c[q][l] = v_set(0.0f);
    for (; i < k2; i += 2 * VW)
        for (int l = 0; l < 4; l++) {
            V b = v_ld(B + l * ldb + i), bb = v_ld(B + l * ldb + i + VW);
            for (int q = 0; q < xr; q++)
                a[q][l] = v_fma(b, v_ld(X + q * ldx + i), a[q][l]), c[q][l] = v_fma(bb, v_ld(X + q * ldx + i + VW), c[q][l]);
        }
    if (i < kv)
        for (int l = 0; l < 4; l++)
            for (int q = 0; q < xr; q++) a[q][l] = v_fma(v_ld(B + l * ldb + i), v_ld(X + q * ldx + i), a[q][l]);
    if (t)
        for (int l = 0; l < 4; l++)
            for (int q = 0; q < xr; q++)
                c[q][l] = v_fma(v_ldt(B + l * ldb + kv, t, 0.0f), v_ldt(X + q * ldx + kv, t, 0.0f), c[q][l]);
    for (int q = 0; q < xr; q++) {
        float s[4];
        v_hsum4(s, v_add(a[q][0], c[q][0]), v_add(a[q][1], c[q][1]), v_add(a[q][2], c[q][2]), v_add(a[q][3], c[q][3]));
        for (int l = 0; l < 4; l++) y[q * ldy + l] = y[q * ldy + l] + s[l];
    }
}

/* Y (m,rows) += X (m,k) B^T, B (rows,k) with rows ldb apart, Y and X ldy and
 * ldx apart: each row of Y the bits of k_dot_rows (beta 1) on it alone, two
 * inputs per load of B. */
KT void k_dot_rows_m(float *Y, int64_t ldy, const float *B, int64_t ldb, const float *X, int64_t ldx, int64_t m,
                     int64_t rows, int64_t k) {
    int64_t r4 = rows / 4 * 4, m2 = m / 2 * 2;
    for (int64_t r = 0; r < r4; r += 4) {
        for (int64_t q = 0; q < m2; q += 2) dot4_rows_x(Y + q * ldy + r, ldy, B + r * ldb, ldb, X + q * ldx, ldx, 2, k);
        if (m2 < m) dot4_rows_x(Y + m2 * ldy + r, ldy, B + r * ldb, ldb, X + m2 * ldx, ldx, 1, k);
    }
    if (r4 < rows)
        for (int64_t q = 0; q < m; q++) k_dot_rows(Y + q * ldy + r4, B + r4 * ldb, ldb, X + q * ldx, rows - r4, k, 1.0f);
}
