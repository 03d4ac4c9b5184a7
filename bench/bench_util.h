/* Timing helpers shared by the C benchmarks. */
#ifndef TF_BENCH_UTIL_H
#define TF_BENCH_UTIL_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Wall time; BENCH_CPU_TIME=1: the process's CPU time instead (a one-thread
 * kernel comparison on a machine shared with other work; never for reports). */
static inline double bench_now(void) {
    struct timespec t;
    static int cpu = -1;
    if (cpu < 0) cpu = getenv("BENCH_CPU_TIME") && !strcmp(getenv("BENCH_CPU_TIME"), "1");
    clock_gettime(cpu ? CLOCK_PROCESS_CPUTIME_ID : CLOCK_MONOTONIC, &t);
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

/* This process' peak resident set in KiB (VmHWM of /proc/self/status; ru_maxrss
 * would carry a parent's over exec), 0 when unreadable. */
static inline long bench_peak_kib(void) {
    long kib = 0;
    char line[256];
    FILE *st = fopen("/proc/self/status", "r");
    while (st && fgets(line, sizeof line, st))
        if (sscanf(line, "VmHWM: %ld", &kib) == 1) break;
    if (st) fclose(st);
    return kib;
}

#endif
