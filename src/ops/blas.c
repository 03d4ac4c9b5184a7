/* The BLAS, loaded at run time: OpenBLAS from Debian's libopenblas0 when it is
 * installed (or the CBLAS library TFORMER_BLAS names), the portable kernel
 * otherwise (the same binary runs on both).
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

#include "ops_internal.h"

#ifdef TF_BLAS
static tf_sgemm_fn sgemm;
static char info[320] = "none (portable kernel)";
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

/* One thread inside each of our tiles: OpenBLAS's pool, and MKL's threading
 * layer (which must be chosen before any other call into it), set to one. */
static void single_threaded(void *h) {
    void (*set_threads)(int);
    int (*mkl_layer)(int);
    *(void **)&set_threads = dlsym(h, "openblas_set_num_threads");
    *(void **)&mkl_layer = dlsym(h, "MKL_Set_Threading_Layer");
    if (set_threads) set_threads(1);
    if (mkl_layer) mkl_layer(1); /* MKL_THREADING_SEQUENTIAL */
}

/* "OpenBLAS (file, core kernels[; OPENBLAS_CORETYPE=...])", "Intel MKL (file,
 * version)" or "file (cblas_sgemm)": what tf_blas_info reports. */
static void describe(void *h, const char *lib, int chose) {
    char *(*corename)(void);
    void (*mkl_version)(char *, int);
    *(void **)&corename = dlsym(h, "openblas_get_corename");
    *(void **)&mkl_version = dlsym(h, "MKL_Get_Version_String");
    if (mkl_version) {
        char v[200] = ""; /* MKL writes nothing into a buffer shorter than its whole string */
        mkl_version(v, (int)sizeof v - 1);
        const char *num = strstr(v, "Version ");
        int len = num ? (int)strcspn(num + 8, " -") : 0;
        snprintf(info, sizeof info, "Intel MKL (%s, version %.*s)", lib, len, num ? num + 8 : "");
    } else if (corename) {
        /* a core chosen in the environment is named: Haswell's kernels on an AVX-512
         * CPU run at half the speed of SkylakeX's, and nothing else would show it */
        const char *user = chose ? NULL : getenv("OPENBLAS_CORETYPE");
        if (user && !*user) user = NULL;
        snprintf(info, sizeof info, "OpenBLAS (%s, %s kernels%s%s)", lib, corename(), user ? "; OPENBLAS_CORETYPE=" : "",
                 user ? user : "");
    } else {
        snprintf(info, sizeof info, "%s (cblas_sgemm)", lib);
    }
}

/* Whether the CPU is Intel's (CPUID leaf 0's vendor string). */
static int cpu_is_intel(void) {
#if defined(__x86_64__) && defined(__GNUC__)
    __builtin_cpu_init();
    return __builtin_cpu_is("intel");
#else
    return 0;
#endif
}

/* Intel's MKL where the CPU is Intel's and one can be found: TFORMER_MKL (a
 * file; the Python package names its environment's PyPI mkl), then the
 * sonames the loader finds (Debian's libmkl-rt, oneAPI's in
 * LD_LIBRARY_PATH). It is what PyTorch's products use there, and on this
 * project's Xeon (2026-12-03) MiniLM's f32 embeddings ran 14% faster on it
 * than on OpenBLAS at 1 and 2 threads (docs/performance.md). On AMD it runs
 * its AVX2 kernels, half OpenBLAS's speed: not tried. TFORMER_MKL=0: never. */
static void *mkl_open(const char **lib) {
    const char *env = getenv("TFORMER_MKL");
    if ((env && !strcmp(env, "0")) || !cpu_is_intel()) return NULL;
    const char *names[] = {env && *env ? env : NULL, "libmkl_rt.so.3", "libmkl_rt.so.2", "libmkl_rt.so"};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        void *h = names[i] ? dlopen(names[i], RTLD_NOW | RTLD_LOCAL) : NULL;
        if (h && dlsym(h, "cblas_sgemm")) return *lib = names[i], h;
        if (h) dlclose(h);
    }
    return NULL;
}

/* Debian's OpenBLAS, or the CBLAS library TFORMER_BLAS names (a file or a
 * soname: Intel's MKL, BLIS, a newer OpenBLAS); on Intel CPUs MKL first when
 * one is found (mkl_open); TFORMER_BLAS=0: none. One that cannot be loaded
 * leaves the portable kernel, and tf_blas_info says why. */
static void blas_load(void) {
    const char *want = getenv("TFORMER_BLAS");
    if (want && !strcmp(want, "0")) return;
    const char *lib = want && *want ? want : "libopenblas.so.0";
    void *h = want && *want ? NULL : mkl_open(&lib);
    int chose = !h && !getenv("OPENBLAS_CORETYPE") && cpu_has_avx512();
    /* OpenBLAS runs on one thread inside our tiles (below): with this set
     * when it loads, it starts no thread pool of its own, whose idle
     * threads otherwise spin in sched_yield beside ours (6% of a decoding
     * run's samples on one thread; a core taken from two) */
    int one = !h && !getenv("OPENBLAS_NUM_THREADS");
    if (chose) setenv("OPENBLAS_CORETYPE", "SKYLAKEX", 0);
    if (one) setenv("OPENBLAS_NUM_THREADS", "1", 0);
    if (!h) h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
    const char *why = h ? "it has no cblas_sgemm" : dlerror();
    if (chose) unsetenv("OPENBLAS_CORETYPE");
    if (one) unsetenv("OPENBLAS_NUM_THREADS");
    /* POSIX's way to take a function from dlsym (ISO C has no object-to-function cast) */
    tf_sgemm_fn f = NULL;
    if (h) *(void **)&f = dlsym(h, "cblas_sgemm");
    if (!f) {
        if (want && *want) snprintf(info, sizeof info, "none (portable kernel; TFORMER_BLAS=%s: %s)", lib, why);
        if (h) dlclose(h);
        return;
    }
    single_threaded(h);
    describe(h, lib, chose);
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
