/* The memory's read rate: the limit of a decoding step, which reads every
 * weight once (docs/performance.md, "F32 decoding, second round").
 *   bench_stream [MB] [THREADS]
 * Each thread sums its contiguous share of an MB-megabyte buffer (512 by
 * default) as 64-bit words; prints the best of 5 passes in GB/s. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#ifdef _OPENMP
#include <omp.h>
#endif

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* The sum of w[0..n): four independent sums, so the loads are the limit. */
static uint64_t sum_words(const uint64_t *w, size_t n) {
    uint64_t s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    size_t i = 0;
    for (; i + 4 <= n; i += 4) s0 += w[i], s1 += w[i + 1], s2 += w[i + 2], s3 += w[i + 3];
    for (; i < n; i++) s0 += w[i];
    return s0 + s1 + s2 + s3;
}

int main(int argc, char **argv) {
    long mb = argc > 1 ? strtol(argv[1], NULL, 10) : 512;
    int threads = argc > 2 ? atoi(argv[2]) : 1;
    if (mb < 1 || mb > (1L << 20) || threads < 1 || threads > 1024) {
        fprintf(stderr, "usage: bench_stream [MB (1..1048576)] [THREADS (1..1024)]\n");
        return 2;
    }
    size_t n = (size_t)mb << 17; /* 64-bit words */
    uint64_t *w = malloc(n * sizeof *w);
    if (!w) {
        fprintf(stderr, "bench_stream: cannot allocate %ld MB\n", mb);
        return 1;
    }
    for (size_t i = 0; i < n; i++) w[i] = i; /* every page touched, no zero page */
    double best = 0;
    volatile uint64_t sink = 0; /* the sums are used: the reads stay */
    for (int pass = 0; pass < 5; pass++) {
        double t0 = now();
        uint64_t total = 0;
#pragma omp parallel for num_threads(threads) reduction(+ : total) schedule(static)
        for (int t = 0; t < threads; t++) {
            size_t lo = n / (size_t)threads * (size_t)t, hi = t + 1 == threads ? n : n / (size_t)threads * (size_t)(t + 1);
            total += sum_words(w + lo, hi - lo);
        }
        double gbs = (double)(n * sizeof *w) / (now() - t0) / 1e9;
        if (gbs > best) best = gbs;
        sink = total;
    }
    printf("%.1f\n", best);
    free(w);
    (void)sink;
    return 0;
}
