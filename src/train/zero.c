/* ZeRO-1 (docs/distributed.md): AdamW's state sharded over the ranks. The
 * parameters, flattened in order, are cut into one contiguous part a rank.
 * Each rank keeps the step's summed gradient of its part only (the ordered
 * sum's reduce-scatter), updates its part of the weights and moments, and
 * the weights are then gathered to every rank.
 *
 * The parts are cut on the boundaries of the gradient norm's chunks
 * (tf_norm_chunk): a rank sums the squares of whole chunks, and every rank
 * puts the global norm together from all chunk sums in tf_clip_grad_norm's
 * order (chunks in order, then parameters in order), so clipping sees the
 * bits one process sees. */
#include <math.h>
#include <stdlib.h>

#include "train_internal.h"

struct tf_zero {
    int rank, ranks;
    int n_units;          /* the norm's chunks over every parameter */
    int *unit_param;      /* each chunk's parameter (n_units) */
    int64_t *unit_first;  /* its first element inside the parameter (n_units) */
    int64_t *unit_start;  /* its first element in the flattened vector (n_units + 1: the total last) */
    int *first_unit;      /* rank j holds chunks [first_unit[j], first_unit[j + 1]) (ranks + 1) */
    size_t *parts;        /* elements per rank (ranks) */
    size_t *unit_counts;  /* chunks per rank (ranks) */
    double *sums, *mine;  /* every chunk's sum of squares (n_units); this rank's */
};

void tf_zero_free(tf_zero *z) {
    if (!z) return;
    free(z->unit_param), free(z->unit_first), free(z->unit_start), free(z->first_unit);
    free(z->parts), free(z->unit_counts), free(z->sums), free(z->mine);
    free(z);
}

/* The chunks of every parameter, in order. */
static int make_units(tf_zero *z, const tf_params *ps) {
    int n = 0;
    for (int i = 0; i < tf_params_count(ps); i++) {
        int64_t k = tf_numel(tf_params_tensor(ps, i)), size = tf_norm_chunk(k);
        n += (int)((k + size - 1) / size);
    }
    z->n_units = n;
    z->unit_param = malloc(((size_t)n + 1) * sizeof *z->unit_param);
    z->unit_first = malloc(((size_t)n + 1) * sizeof *z->unit_first);
    z->unit_start = malloc(((size_t)n + 1) * sizeof *z->unit_start);
    z->sums = malloc(((size_t)n + 1) * sizeof *z->sums), z->mine = malloc(((size_t)n + 1) * sizeof *z->mine);
    if (!z->unit_param || !z->unit_first || !z->unit_start || !z->sums || !z->mine) return -1;
    int64_t flat = 0;
    for (int i = 0, u = 0; i < tf_params_count(ps); i++) {
        int64_t k = tf_numel(tf_params_tensor(ps, i)), size = tf_norm_chunk(k);
        for (int64_t c = 0; c * size < k; c++, u++) z->unit_param[u] = i, z->unit_first[u] = c * size, z->unit_start[u] = flat + c * size;
        flat += k;
    }
    z->unit_start[n] = flat;
    return 0;
}

/* Rank j's part ends at the chunk boundary nearest to j / ranks of the elements. */
static void cut(tf_zero *z) {
    int U = z->n_units, R = z->ranks;
    int64_t total = z->unit_start[U];
    z->first_unit[0] = 0, z->first_unit[R] = U;
    for (int j = 1; j < R; j++) {
        int64_t target = total * j / R;
        int u = z->first_unit[j - 1];
        while (u < U && z->unit_start[u + 1] <= target) u++;
        if (u < U && z->unit_start[u + 1] - target < target - z->unit_start[u]) u++;
        z->first_unit[j] = u;
    }
    for (int j = 0; j < R; j++) {
        z->parts[j] = (size_t)(z->unit_start[z->first_unit[j + 1]] - z->unit_start[z->first_unit[j]]);
        z->unit_counts[j] = (size_t)(z->first_unit[j + 1] - z->first_unit[j]);
    }
}

tf_zero *tf_zero_new(const tf_params *ps, int rank, int ranks) {
    tf_zero *z = calloc(1, sizeof *z);
    if (z) z->rank = rank, z->ranks = ranks;
    if (!z || make_units(z, ps) || !(z->first_unit = malloc(((size_t)ranks + 1) * sizeof *z->first_unit)) ||
        !(z->parts = malloc((size_t)ranks * sizeof *z->parts)) ||
        !(z->unit_counts = malloc((size_t)ranks * sizeof *z->unit_counts))) {
        tf_zero_free(z);
        return tf_set_error("zero: out of memory"), NULL;
    }
    cut(z);
    return z;
}

const size_t *tf_zero_parts(const tf_zero *z) { return z->parts; }

int tf_zero_units(const tf_zero *z, int rank) { return z->first_unit[rank + 1] - z->first_unit[rank]; }

void tf_zero_range(const tf_zero *z, int64_t *lo, int64_t *hi) {
    *lo = z->unit_start[z->first_unit[z->rank]], *hi = z->unit_start[z->first_unit[z->rank + 1]];
}

int tf_zero_clip(tf_zero *z, const tf_params *ps, double max_norm, double *norm, float *scale) {
    int a = z->first_unit[z->rank], b = z->first_unit[z->rank + 1];
#pragma omp parallel for schedule(static) if (b - a > 1)
    for (int u = a; u < b; u++) {
        const tf_tensor *p = tf_params_tensor(ps, z->unit_param[u]);
        z->mine[u - a] = tf_squares(p->grad + z->unit_first[u], z->unit_start[u + 1] - z->unit_start[u]);
    }
    if (tf_dist_gatherv(z->mine, z->sums, z->unit_counts, sizeof(double), -1)) return -1;
    double ss = 0.0;
    for (int u = 0; u < z->n_units;) { /* tf_clip_grad_norm: ss += each parameter's sum of its chunks */
        double param = 0.0;
        for (int i = z->unit_param[u]; u < z->n_units && z->unit_param[u] == i; u++) param += z->sums[u];
        ss += param;
    }
    *norm = sqrt(ss);
    *scale = tf_clip_factor(*norm, max_norm); /* applied by the optimizer's step as it reads the gradients */
    return 0;
}
