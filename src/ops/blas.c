/* The BLAS, loaded at run time: OpenBLAS from Debian's libopenblas0 when it is
 * installed, the portable kernel otherwise (the same binary runs on both).
 *
 * Why load it ourselves: OpenBLAS chooses its kernels in a constructor that
 * reads OPENBLAS_CORETYPE, and Debian 12's OpenBLAS (0.3.21) does not know
 * CPUs newer than itself (AMD Zen 4/5): it falls back to its Haswell (AVX2)
 * kernels, half the speed of its AVX-512 ones there (111 vs 208 GFLOP/s for
 * 512x768x3072 on one Zen 5 core, bench/bench_matmul.c). On a CPU with the
 * AVX-512 subsets those kernels use, and when the user has not chosen a core,
 * we ask for SkylakeX before loading and take the variable away again after. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../core/internal.h"

#ifdef TF_BLAS
static tf_sgemm_fn sgemm;
static char info[160] = "none (portable kernel)";
static pthread_once_t once = PTHREAD_ONCE_INIT;

static int cpu_has_avx512(void) {
#if defined(__x86_64__) && defined(__GNUC__)
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") &&
           __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl") &&
           __builtin_cpu_supports("avx512cd");
#else
    return 0;
#endif
}

static void blas_load(void) {
    const char *off = getenv("TFORMER_BLAS");
    if (off && !strcmp(off, "0")) return;
    int chose = !getenv("OPENBLAS_CORETYPE") && cpu_has_avx512();
    /* OpenBLAS runs on one thread inside our tiles (below): with this set
     * when it loads, it starts no thread pool of its own, whose idle
     * threads otherwise spin in sched_yield beside ours (6% of a decoding
     * run's samples on one thread; a core taken from two) */
    int one = !getenv("OPENBLAS_NUM_THREADS");
    if (chose) setenv("OPENBLAS_CORETYPE", "SKYLAKEX", 0);
    if (one) setenv("OPENBLAS_NUM_THREADS", "1", 0);
    void *h = dlopen("libopenblas.so.0", RTLD_NOW | RTLD_LOCAL);
    if (chose) unsetenv("OPENBLAS_CORETYPE");
    if (one) unsetenv("OPENBLAS_NUM_THREADS");
    if (!h) return;
    /* POSIX's way to take a function from dlsym (ISO C has no object-to-function cast) */
    tf_sgemm_fn f;
    void (*set_threads)(int);
    char *(*corename)(void);
    *(void **)&f = dlsym(h, "cblas_sgemm");
    *(void **)&set_threads = dlsym(h, "openblas_set_num_threads");
    *(void **)&corename = dlsym(h, "openblas_get_corename");
    if (!f) return;
    /* our threads share out blocks of the product; OpenBLAS stays on one thread in each */
    if (set_threads) set_threads(1);
    /* a core chosen in the environment is named: Haswell's kernels on an AVX-512
     * CPU run at half the speed of SkylakeX's, and nothing else would show it */
    const char *user = chose ? NULL : getenv("OPENBLAS_CORETYPE");
    if (user && !*user) user = NULL;
    snprintf(info, sizeof info, "OpenBLAS (libopenblas.so.0, %s kernels%s%s)", corename ? corename() : "default",
             user ? "; OPENBLAS_CORETYPE=" : "", user ? user : "");
    sgemm = f;
}

tf_sgemm_fn tf_blas_sgemm(void) {
    pthread_once(&once, blas_load);
    return sgemm;
}

const char *tf_blas_info(void) {
    pthread_once(&once, blas_load);
    return info;
}
#else
tf_sgemm_fn tf_blas_sgemm(void) { return NULL; }
const char *tf_blas_info(void) { return "none (built with BLAS=0)"; }
#endif
