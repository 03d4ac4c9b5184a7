/* Shared by the vision tests (tests/hf_cases.c): PyTorch / transformers
 * fixture cases run through tformer and compared. */
#ifndef TF_TEST_HF_CASES_H
#define TF_TEST_HF_CASES_H

#include "test.h"

/* Tensor name of f into a (NULL when absent). */
tf_tensor *test_st_load(const tf_st_file *f, const char *name, tf_arena *a);
/* max |a - b| (NaN when any is NaN). */
double test_max_abs_diff(const float *a, const float *b, int64_t n);
/* A patch / tubelet embedding case (dir/case.safetensors: x, weight, bias, r,
 * out, grad_*): the worst of the output's max |diff| and the gradients'
 * relative L2 errors; -1 when it cannot run. */
double test_patch_case(const char *dir);
/* Max |got - expected| over every field of expected (NaN equal to NaN); the
 * output must hold exactly those fields, of the same shapes; -1 when not. */
double test_compare_outputs(const char *expected_path, const char *out_path);
/* hf-run of model folder dir on case_dir's input, against its expected outputs (out: a scratch path). */
double test_hf_run_case(const char *dir, const char *case_dir, const char *out);
/* Every model case (a folder with config.json) of dir through hf-run against
 * its expected outputs: the failures (each reported on stderr), *cases and
 * *worst (the largest max |diff| of those passing); each(path, arg) is
 * called for every case when not NULL. */
int test_hf_run_dir(const char *dir, double tol, void (*each)(const char *path, void *arg), void *arg, int *cases,
                    double *worst);
/* The loss of model on a batch (NULL on error). */
typedef tf_tensor *(*test_loss_fn)(tf_ctx *ctx, const void *model, tf_tensor *pixels, tf_tensor *labels);
/* The loss's gradient with respect to dir/input.safetensors' pixel_values and
 * every parameter of ps (model's) against dir/gradients.safetensors (by name):
 * the worst relative L2 error (a gradient zero in exact arithmetic, as a key
 * bias's, against the largest norm); -1 when it cannot run. *n_tensors: the
 * tensors compared. */
double test_gradient_case(const char *dir, const void *model, tf_params *ps, test_loss_fn loss, int *n_tensors);
/* dir holds a config.json. */
int test_is_model_case(const char *dir);
/* src's config.json (with `from` replaced by `to` when given) and
 * model.safetensors (element `at` of tensor `name` moved by delta; the tensor
 * `drop` left out) into dst. */
int test_copy_case(const char *src, const char *dst, const char *from, const char *to, const char *name, int64_t at,
                   float delta, const char *drop);

/* One input tensor of a bad-input case: every element `value`. */
typedef struct {
    const char *name;
    tf_st_dtype dtype;
    int ndim;
    int64_t shape[5];
    float value; /* every element */
} test_in_spec;
/* The inputs (up to n, ending at a NULL name) into a safetensors file. */
int test_write_inputs(const test_in_spec *specs, int n, const char *path);

/* dir/<split>-images-idx3-ubyte and -labels-idx1-ubyte: n images of side x
 * side, image i of class i % classes with pixel (y,x) = pixel(i, class, y, x). */
int test_write_idx_set(const char *dir, const char *split, int n, int side, int classes,
                       unsigned char (*pixel)(int i, int c, int y, int x));
/* An 8-bit grey PNG of w x h pixels, row by row. */
int test_write_grey_png(const char *path, const unsigned char *pixels, int w, int h);

#endif
