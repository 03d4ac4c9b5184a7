/* The token rule of a sparse attention pattern, shared by the dense mask
 * (sparse_pattern.c) and the block-sparse kernel (ops_sparse_attention.c). */
#ifndef TF_OPS_SPARSE_H
#define TF_OPS_SPARSE_H

#include "tformer/ops.h"

/* Does query i see key j? is_global (T) marks the global positions; rnd: j's
 * key block was drawn at random for i's query block. */
static inline int tf_sparse_sees(const tf_sparse_pattern *p, const uint8_t *is_global, int64_t i, int64_t j,
                                 int rnd) {
    if (p->causal && j > i) return 0;
    if (rnd || is_global[i] || is_global[j]) return 1;
    if (p->window < 0) return 0;
    int64_t d = i - j, span = (int64_t)p->window * p->dilation;
    return d >= -span && d <= span && d % p->dilation == 0;
}

/* is_global (T) from the pattern's positions (checked by tf_sparse_check). */
static inline void tf_sparse_globals(uint8_t *is_global, const tf_sparse_pattern *p, int64_t T) {
    for (int64_t i = 0; i < T; i++) is_global[i] = i < p->global_first;
    for (int g = 0; g < p->n_global; g++) is_global[p->global[g]] = 1;
}

#endif
