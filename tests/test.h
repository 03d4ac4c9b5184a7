/* A tiny test harness: TEST(name) registers a test; CHECK fails it. */
#ifndef TF_TEST_H
#define TF_TEST_H

#include <math.h>
#include <stdio.h>

#include "tformer.h"

typedef void (*tf_test_fn)(void);
void test_register(const char *name, tf_test_fn fn);
void test_fail(const char *file, int line, const char *fmt, ...);
int test_failed(void);
/* Directory holding the committed PyTorch fixtures (or fresh ones, --fixtures). */
const char *test_fixture_dir(void);

#define TEST(name)                                                              \
    static void name(void);                                                     \
    __attribute__((constructor)) static void register_##name(void) {           \
        test_register(#name, name);                                             \
    }                                                                           \
    static void name(void)

#define CHECK(cond)                                                             \
    do {                                                                        \
        if (!(cond)) {                                                          \
            test_fail(__FILE__, __LINE__, "%s  [tf_error: %s]", #cond, tf_error()); \
            return;                                                             \
        }                                                                       \
    } while (0)

#define CHECKF(cond, ...)                                                       \
    do {                                                                        \
        if (!(cond)) {                                                          \
            test_fail(__FILE__, __LINE__, __VA_ARGS__);                         \
            return;                                                             \
        }                                                                       \
    } while (0)

/* A whole file, NUL-terminated (NULL if unreadable); free() it. */
char *test_slurp(const char *path, size_t *len);

/* The entries of a directory (not starting with '.'), sorted, at most max,
 * each malloc'ed; -1 when it cannot be opened. */
int test_dir_entries(const char *dir, char **names, int max);

/* A PNG's size in pixels, read back by cairo after its 8-byte signature is
 * checked; 0, or -1 when it is not a readable PNG. */
int test_png_size(const char *path, int *w, int *h);

/* Create an empty file from a mkstemp template ("/tmp/x_XXXXXX", filled in); 0 or -1. */
int test_temp_file(char *path);
/* The tformer binary the CLI tests run: $TFORMER_BIN, else build/tformer. */
const char *test_tformer_bin(void);

/* Run "<env> tformer <args>" through the shell; its exit status (128 + signal
 * when killed), stdout and stderr together in out (cut at n - 1 bytes). */
int test_run_cli(const char *env, const char *args, char *out, size_t n);
/* rm -rf dir (a mkdtemp folder). */
void test_rm_rf(const char *dir);

/* Relative L2 error ||a - b|| / ||b|| (absolute when ||b|| == 0), in double. */
double test_rel_err(const float *a, const float *b, long n);

#endif
