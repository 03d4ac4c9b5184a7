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
/* max |piece - full[:, at:at+Tp, :]| for piece (B,Tp,C) and full (B,T,C), both contiguous:
 * positions fed in pieces through a KV cache against the full pass. */
double test_max_diff_at(const tf_tensor *piece, const tf_tensor *full, int64_t at);
/* Two blocks of config c registered as "l0.", "l1." (short names, every self-attention role,
 * Scalable-Softmax's included) and initialised (seed 8): 0 or -1. */
int test_two_blocks_new(tf_params *ps, tf_block bl[2], const tf_block_config *c);
/* x through the two blocks, with a KV cache or without. */
tf_tensor *test_two_blocks(tf_ctx *ctx, const tf_block bl[2], const tf_block_config *c, tf_tensor *x, tf_kv_cache *kv);
/* x (B,8,d_model) fed to the two blocks in pieces of 3, 1 and 4 positions through a fresh KV
 * cache: the largest difference from full, their full pass; -1 when a step fails. */
double test_two_blocks_cached(tf_ctx *ctx, const tf_block bl[2], const tf_block_config *c, tf_tensor *x,
                              const tf_tensor *full);

/* ---- Hugging Face folders (tests/hf_case.c) ---- */

/* --fixtures DIR when given, else the family's committed fixtures. */
const char *test_fixture_dir_or(const char *family_dir);
/* The named tensor of a safetensors file, or NULL. */
tf_tensor *test_st_tensor(const tf_st_file *f, const char *name, tf_arena *a);
/* max |a - b| (NaN equal to NaN; NaN on one side only: NaN). */
double test_max_abs_diff(const float *a, const float *b, int64_t n);
/* ||a - b|| and ||b|| in double. */
void test_diff_norms(const float *a, const float *b, int64_t n, double *diff, double *norm);
/* Max |got - expected| over every field of expected and (rel not NULL) the
 * worst relative L2 error; -1 when a field is missing or of another shape. */
double test_compare_outputs(const char *expected_path, const char *out_path, double *rel);
/* hf-run of folder dir on case_dir's input.safetensors, compared with its
 * expected.safetensors (out is a scratch path, removed); -1 on failure. */
double test_hf_run_case(const char *dir, const char *case_dir, const char *out, double *rel);
/* n bytes into path; 0 or -1. */
int test_write_file(const char *path, const void *data, size_t n);
/* A NUL-terminated text into path; 0 or -1. */
int test_write_text(const char *path, const char *text);
/* text with its first `from` replaced by `to` (malloc'ed), NULL when absent. */
char *test_replaced(const char *text, const char *from, const char *to);
/* The n files names[] of folder src into folder dst; 0 or -1. */
int test_copy_files(const char *src, const char *dst, const char *const *names, int n);
/* src/config.json into dst, `from` replaced by `to` when from is given. */
int test_copy_config(const char *src, const char *dst, const char *from, const char *to);
/* src into dst: config.json as test_copy_config; model.safetensors with
 * element `at` of tensor `name` moved by delta (name NULL: none; at out of
 * range: -1; an integer tensor by (int)delta) and the tensor `drop` left out. */
int test_copy_case(const char *src, const char *dst, const char *from, const char *to, const char *name, int64_t at,
                   float delta, const char *drop);

/* One input tensor filled with one value. */
typedef struct {
    const char *name; /* NULL ends a list */
    tf_st_dtype dtype;
    int ndim;
    int64_t shape[5];
    float value;
} test_input;
/* Up to max inputs (till a NULL name) into one safetensors file. */
int test_write_inputs(const test_input *specs, int max, const char *path);

/* A folder or input that must be a clear error of tf_hf_run. */
typedef struct {
    const char *what;
    const char *model;       /* the folder (the table's default when NULL) */
    const char *from, *to;   /* config.json patched in a scratch copy */
    const char *drop;        /* a tensor left out of the copy */
    test_input in[3];        /* no tensors: no input file */
    const char *expect[3];   /* in the error message */
} test_bad_case;
/* How many of the n cases were not a clear error (each one said on stderr;
 * every case said when $verbose_env is set). */
int test_hf_run_bad_cases(const test_bad_case *cases, size_t n, const char *default_model, const char *verbose_env);

typedef struct {
    const char *name;
    int64_t at;
} test_weight;
/* How many of the n weights, moved by 1e-3 at one element, still pass
 * case_dir's comparison at tol; *same: an unchanged copy's max |diff|;
 * *least: the smallest perturbed one. */
int test_hf_perturbed(const char *case_dir, const test_weight *w, int n, double tol, double *same, double *least);

/* ---- vision cases (tests/hf_case.c) ---- */

/* A patch / tubelet embedding case (dir/case.safetensors: x, weight, bias, r,
 * out, grad_*; 4-D or 5-D x): the worst of the output's max |diff| and the
 * gradients' relative L2 errors; -1 when it cannot run. */
double test_patch_case(const char *dir);
/* The same for a conv2d case too (stride_padding (2) in the file; bias
 * optional), with the weight's element 0 moved by bump first. */
double test_unfold_case(const char *dir, float bump);
/* Every model case (a folder with config.json) of dir through hf-run against
 * its expected outputs: the failures (each said on stderr), *cases and *worst
 * (the largest max |diff| of those passing); each(path, arg) for every case
 * when not NULL. */
int test_hf_run_dir(const char *dir, double tol, void (*each)(const char *path, void *arg), void *arg, int *cases,
                    double *worst);
/* The loss of model on a batch (NULL on error). */
typedef tf_tensor *(*test_loss_fn)(tf_ctx *ctx, const void *model, tf_tensor *pixels, tf_tensor *labels);
/* The loss's gradient with respect to dir/input.safetensors' pixel_values and
 * every parameter of ps (model's) against dir/gradients.safetensors (by name):
 * the worst relative L2 error (a gradient zero in exact arithmetic, as a key
 * bias's, against the largest norm); -1 when it cannot run. */
double test_gradient_case(const char *dir, const void *model, tf_params *ps, test_loss_fn loss, int *n_tensors);
/* The same comparison for gradients already computed: extra (an input, named
 * extra_name; NULL: none) and every parameter of ps against g's tensors. */
double test_gradient_error(const tf_params *ps, tf_tensor *extra, const char *extra_name, const tf_st_file *g,
                           tf_arena *a, const char *dir);
/* Random images (B,C,S,S) in [0,1] and, when labels, labels (B) below
 * n_labels into an input file (pixel_values, labels I64). */
int test_write_image_input(const char *path, int64_t B, int channels, int size, int n_labels, int labels);
/* m saved by tf_vit_save into dir/own, then `hf-run` on two random images of
 * its shape (dir/input.safetensors): 0 when the folder's logits are m's to
 * the bit; -1 with a message. The folder is read back into *back. */
int test_vit_folder_matches(const tf_vit *m, const char *dir, tf_vit **back);
/* ViTForImageClassification m's loss on pixels and labels (test_gradient_case's loss). */
tf_tensor *test_vit_loss(tf_ctx *ctx, const void *m, tf_tensor *pixels, tf_tensor *labels);
/* Every parameter N(0, 0.4), norms' (a name with "norm") N(0, 0.2) and their
 * weights around 1: outputs that move with every weight. */
void test_randomize_params(tf_params *ps, uint64_t seed);
/* dir/<split>-images-idx3-ubyte and -labels-idx1-ubyte: n images of side x
 * side, image i of class i % classes with pixel (y,x) = pixel(i, class, y, x). */
int test_write_idx_set(const char *dir, const char *split, int n, int side, int classes,
                       unsigned char (*pixel)(int i, int c, int y, int x));
/* An 8-bit grey PNG of w x h pixels, row by row. */
int test_write_grey_png(const char *path, const unsigned char *pixels, int w, int h);

/* ---- sentence-transformers folders (tests/embed_case.c) ---- */

struct cJSON;
/* A JSON file parsed (cJSON_Delete it), or NULL. */
struct cJSON *test_read_json(const char *path);
/* 0 when got holds want's ids (a JSON list); 1, both said on stderr (who, what: the text), when not. */
int test_ids_differ(const struct cJSON *want, const tf_ids *got, const char *who, const char *what);
/* tok's encoding (tf_tokenizer_encode_pair, cut to max_len) of each "text" of
 * root's "texts" against its "ids": how many differ (types: a token type
 * other than 0 counts too), -1 when one cannot be encoded; *n counts the texts. */
int test_texts_differ(tf_tokenizer *tok, const struct cJSON *root, size_t max_len, int types, const char *who, int *n);
typedef struct {
    tf_embed_opts opts;    /* the folder's */
    tf_bert_config cfg;    /* the model's */
    int n;                 /* texts */
    double max_diff, rel;  /* tf_bert_embed against embeddings.safetensors */
    int cli_rc;            /* `tformer embed` on the first three texts: its status (-1: not run) */
    double cli;            /* and the largest gap between its numbers and the library's */
    char cli_out[8192];
} test_embed_result;
/* The texts of dir/answers.json through tf_bert_embed (dir's model, tokenizer
 * and settings) against dir/embeddings.safetensors (SentenceTransformer.encode()),
 * and through the CLI; -1 (tf_error) when it cannot run. */
int test_st_embed(const char *dir, test_embed_result *r);

/* src/config.json (a Marian folder) into dst with one generate() run's
 * forced_eos_token_id and bad_words_ids (null and none when it names none). */
int test_marian_generate_config(const char *src, const char *dst, const struct cJSON *run);

#endif
