/* Timing helpers shared by the C benchmarks. */
#ifndef TF_BENCH_UTIL_H
#define TF_BENCH_UTIL_H

#include <stdlib.h>
#include <time.h>

static inline double bench_now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static inline int bench_cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The median of n timings (sorts them). */
static inline double bench_median(double *t, int n) {
    qsort(t, (size_t)n, sizeof *t, bench_cmp);
    return t[n / 2];
}

#endif
