/* Sparse attention patterns (Figure 12.15 of the deck: windows, dilated
 * windows, global tokens; BigBird's random blocks): the key blocks each query
 * block needs, and the equivalent dense boolean mask. */
#include <stdlib.h>
#include <string.h>

#include "../core/core_internal.h"
#include "sparse.h"

/* Hugging Face's layout: whole blocks, the first and last global. T ==
 * INT64_MAX: the settings alone (a block's configuration, before a length). */
static int itc_check(const tf_sparse_pattern *p, int64_t T) {
    if (p->causal || p->global_first || p->n_global)
        return tf_set_error("sparse attention: Hugging Face's BigBird layout (itc) is not causal and has its own global "
                            "blocks (first and last): causal %d, global tokens %d, global positions %d must be 0",
                            p->causal, p->global_first, p->n_global);
    if (p->itc_random && p->itc_heads < 1)
        return tf_set_error("sparse attention: a random block table needs itc_heads >= 1 (got %d)", p->itc_heads);
    if (T == INT64_MAX) return 0;
    if (T % p->block || T / p->block < 3)
        return tf_set_error("sparse attention: Hugging Face's BigBird layout needs a length that is a multiple of the "
                            "block size %d and at least 3 blocks (got %lld: pad the sequence and mask the padding)",
                            p->block, (long long)T);
    int64_t n = (int64_t)p->itc_heads * (T / p->block - 2) * p->random;
    for (int64_t i = 0; p->itc_random && i < n; i++)
        if (p->itc_random[i] < 0 || p->itc_random[i] >= T / p->block)
            return tf_set_error("sparse attention: random block table entry %lld (head %lld, query block %lld) is "
                                "%d, outside the %lld key blocks", (long long)i, (long long)(i / (n / p->itc_heads)),
                                (long long)(i % (n / p->itc_heads) / p->random + 1), p->itc_random[i],
                                (long long)(T / p->block));
    return 0;
}

int tf_sparse_check(const tf_sparse_pattern *p, int64_t T) {
    if (!p) return tf_set_error("sparse attention: no pattern");
    if (T <= 0) return tf_set_error("sparse attention: sequence length %lld must be positive", (long long)T);
    if (p->block < 1 || p->block > TF_SPARSE_MAX_BLOCK)
        return tf_set_error("sparse attention: block size %d must lie in [1, %d]", p->block, TF_SPARSE_MAX_BLOCK);
    if (p->window < -1) return tf_set_error("sparse attention: window %d must be >= 0 (or -1: none)", p->window);
    if (p->dilation < 1) return tf_set_error("sparse attention: dilation %d must be >= 1", p->dilation);
    if (p->random < 0) return tf_set_error("sparse attention: random blocks %d must be >= 0", p->random);
    if (p->global_first < 0) return tf_set_error("sparse attention: global tokens %d must be >= 0", p->global_first);
    if (p->n_global < 0 || (p->n_global > 0 && !p->global))
        return tf_set_error("sparse attention: %d global positions without a list", p->n_global);
    for (int g = 0; g < p->n_global; g++)
        if (p->global[g] < 0 || p->global[g] >= T)
            return tf_set_error("sparse attention: global position %d (entry %d) outside the sequence [0, %lld)",
                                p->global[g], g, (long long)T);
    return p->itc ? itc_check(p, T) : 0;
}

/* Is some multiple of r in [a, c]? */
static int has_multiple(int64_t a, int64_t c, int64_t r) {
    if (a > c) return 0;
    int64_t first = a >= 0 ? (a + r - 1) / r * r : -((-a) / r * r);
    return first <= c;
}

/* mark[kb] = 1 for the key blocks query block qb needs through its global
 * rows, its window and the global keys; last is the last block it may visit;
 * first_global (key blocks): each block's first global position, or T.
 * A causal pattern's window marks are those of the block's whole extent
 * [i0, i0 + b), also when the sequence ends inside it: the unmarked blocks
 * are the random draw's candidates, so a query's random blocks (and its
 * output) must not depend on how many positions follow it (a KV cache's
 * one-at-a-time decoding against the full pass). */
static void structural_blocks(uint8_t *mark, const tf_sparse_pattern *p, const uint8_t *is_global,
                              const int64_t *first_global, int64_t T, int64_t qb, int64_t last) {
    int64_t b = p->block, i0 = qb * b, i1 = i0 + b < T ? i0 + b : T, iw = p->causal ? i0 + b : i1;
    int global_row = 0;
    for (int64_t i = i0; i < i1; i++) global_row |= is_global[i];
    for (int64_t kb = 0; kb <= last; kb++)
        mark[kb] = global_row || first_global[kb] < (p->causal ? i1 : T);
    if (p->window < 0) return;
    int64_t span = (int64_t)p->window * p->dilation;
    int64_t lo = i0 - span < 0 ? 0 : (i0 - span) / b, hi = (iw - 1 + (p->causal ? 0 : span)) / b;
    hi = hi > last ? last : hi;
    for (int64_t kb = lo; kb <= hi; kb++) {  // offsets d = i - j over the block pair, clipped to the window
        int64_t j0 = kb * b, j1 = (j0 + b < T ? j0 + b : T) - 1;
        int64_t dlo = i0 - j1, dhi = iw - 1 - j0;
        dlo = dlo < -span ? -span : dlo;
        dlo = p->causal && dlo < 0 ? 0 : dlo;
        dhi = dhi > span ? span : dhi;
        if (has_multiple(dlo, dhi, p->dilation)) mark[kb] = 1;
    }
}

/* mark[kb] = 2 for up to p->random blocks among kb <= last not yet marked:
 * a partial Fisher-Yates shuffle driven by a hash of (seed, qb). */
static void random_blocks(uint8_t *mark, int32_t *cand, const tf_sparse_pattern *p, int64_t qb, int64_t last) {
    int64_t n = 0;
    for (int64_t kb = 0; kb <= last; kb++)
        if (!mark[kb]) cand[n++] = (int32_t)kb;
    uint64_t s = tf_key(p->seed, (uint64_t)qb, 0x5ba75e, 0);
    for (int64_t t = 0; t < p->random && t < n; t++) {
        int64_t pick = t + (int64_t)(tf_splitmix64(&s) % (uint64_t)(n - t));
        int32_t c = cand[pick];
        cand[pick] = cand[t], cand[t] = c;
        mark[c] = 2;
    }
}

void tf_sparse_layout_free(tf_sparse_layout *l) {
    if (!l) return;
    free(l->off), free(l->kblock), free(l->random);
    memset(l, 0, sizeof *l);
}

/* Hugging Face's order for query block qb of head h (bigbird_block_sparse_attention):
 * the global rows every block; the second {0,1,2,last}, the second-last {0,
 * last-2, last-1, last}, the middle {0, qb-1, qb, qb+1, last}; then the table's. */
static int64_t itc_row(int32_t *kb, uint8_t *rnd, const tf_sparse_pattern *p, int64_t nb, int64_t h, int64_t qb) {
    int64_t n = 0;
    if (qb == 0 || qb == nb - 1) {
        for (int64_t j = 0; j < nb; j++) kb[n] = (int32_t)j, rnd[n++] = 0;
        return n;
    }
    int64_t lo = qb - 1 < 1 ? 1 : qb - 1, hi = qb + 1 > nb - 2 ? nb - 2 : qb + 1;
    kb[n] = 0, rnd[n++] = 0;
    for (int64_t j = lo; j <= hi; j++) kb[n] = (int32_t)j, rnd[n++] = 0;
    kb[n] = (int32_t)(nb - 1), rnd[n++] = 0;
    const int32_t *r = p->itc_random ? p->itc_random + (h * (nb - 2) + qb - 1) * p->random : NULL;
    for (int t = 0; t < p->random; t++) kb[n] = r ? r[t] : 0, rnd[n++] = 1;
    return n;
}

static int itc_layout(tf_sparse_layout *l, const tf_sparse_pattern *p, int64_t T) {
    int64_t nb = T / p->block, H = p->itc_random ? p->itc_heads : 1, most = nb > 5 + p->random ? nb : 5 + p->random;
    l->n_qblocks = l->n_kblocks = nb, l->n_heads = H;
    l->off = malloc((size_t)(H * nb + 1) * sizeof *l->off);
    l->kblock = malloc((size_t)(H * nb * most) * sizeof *l->kblock);
    l->random = malloc((size_t)(H * nb * most));
    if (!l->off || !l->kblock || !l->random) {
        tf_sparse_layout_free(l);
        return tf_set_error("sparse attention: out of memory for %lld blocks", (long long)nb);
    }
    l->off[0] = 0;
    for (int64_t r = 0; r < H * nb; r++) {
        int64_t n = itc_row(l->kblock + l->off[r], l->random + l->off[r], p, nb, r / nb, r % nb);
        l->off[r + 1] = l->off[r] + n;
        if (n > l->max_visit) l->max_visit = n;
    }
    return 0;
}

int tf_sparse_layout_new(tf_sparse_layout *l, const tf_sparse_pattern *p, int64_t T) {
    memset(l, 0, sizeof *l);
    if (tf_sparse_check(p, T)) return -1;
    if (p->itc) return itc_layout(l, p, T);
    l->n_heads = 1;
    int64_t b = p->block, nb = (T + b - 1) / b;
    l->n_qblocks = l->n_kblocks = nb;
    uint8_t *is_global = malloc((size_t)T), *mark = malloc((size_t)nb);
    int32_t *cand = malloc((size_t)nb * sizeof *cand);
    int64_t *first_global = malloc((size_t)nb * sizeof *first_global);
    l->off = malloc((size_t)(nb + 1) * sizeof *l->off);
    /* grown as needed: the pattern may visit from a few blocks per row up to all */
    size_t room = (size_t)nb * 4, used = 0;
    l->kblock = malloc(room * sizeof *l->kblock);
    l->random = malloc(room);
    int rc = -1;
    if (!is_global || !mark || !cand || !first_global || !l->off || !l->kblock || !l->random) goto oom;
    tf_sparse_globals(is_global, p, T);
    for (int64_t kb = 0; kb < nb; kb++) first_global[kb] = T;
    for (int64_t j = T - 1; j >= 0; j--)
        if (is_global[j]) first_global[j / b] = j;
    l->off[0] = 0;
    for (int64_t qb = 0; qb < nb; qb++) {
        int64_t last = p->causal ? qb : nb - 1;
        structural_blocks(mark, p, is_global, first_global, T, qb, last);
        random_blocks(mark, cand, p, qb, last);
        if (used + (size_t)(last + 1) > room) {
            room = used + (size_t)(last + 1) > 2 * room ? used + (size_t)(last + 1) : 2 * room;
            int32_t *k2 = realloc(l->kblock, room * sizeof *k2);
            if (k2) l->kblock = k2;
            uint8_t *r2 = k2 ? realloc(l->random, room) : NULL;
            if (!r2) goto oom;
            l->random = r2;
        }
        for (int64_t kb = 0; kb <= last; kb++)
            if (mark[kb]) l->kblock[used] = (int32_t)kb, l->random[used++] = mark[kb] == 2;
        l->off[qb + 1] = (int64_t)used;
        if ((int64_t)used - l->off[qb] > l->max_visit) l->max_visit = (int64_t)used - l->off[qb];
    }
    rc = 0;
oom:
    free(is_global), free(mark), free(cand), free(first_global);
    if (rc) tf_sparse_layout_free(l), tf_set_error("sparse attention: out of memory for %lld blocks", (long long)nb);
    return rc;
}

int tf_sparse_mask(const tf_sparse_pattern *p, int64_t T, uint8_t *mask) {
    if (p && p->itc)
        return tf_set_error("sparse attention: Hugging Face's BigBird layout counts repeated blocks and differs per "
                            "head: it has no boolean mask");
    tf_sparse_layout l;
    if (tf_sparse_layout_new(&l, p, T)) return -1;
    uint8_t *is_global = malloc((size_t)T), *rnd = malloc((size_t)l.n_kblocks);
    if (!is_global || !rnd) {
        free(is_global), free(rnd), tf_sparse_layout_free(&l);
        return tf_set_error("sparse attention: out of memory for a (%lld,%lld) mask", (long long)T, (long long)T);
    }
    tf_sparse_globals(is_global, p, T);
    for (int64_t i = 0; i < T; i++) {
        int64_t qb = i / p->block;
        memset(rnd, 0, (size_t)l.n_kblocks);
        for (int64_t t = l.off[qb]; t < l.off[qb + 1]; t++) rnd[l.kblock[t]] = l.random[t];
        for (int64_t j = 0; j < T; j++) mask[i * T + j] = !tf_sparse_sees(p, is_global, i, j, rnd[j / p->block]);
    }
    free(is_global), free(rnd), tf_sparse_layout_free(&l);
    return 0;
}
