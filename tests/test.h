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
 * when killed), stdout and stderr together in out (cut at n - 1 bytes), less the start-up line
 * that says what a verb assumed (cli_say; tests/test_cli_said.c checks it). */
int test_run_cli(const char *env, const char *args, char *out, size_t n);
/* A command line the CLI must refuse: args (a format of up to two %s, each the case's folder), the
 * exit status and a piece of what it prints. */
typedef struct {
    const char *args, *expect;
    int rc;
} test_cli_case;
/* Each case run with stdin from /dev/null: 0, or -1 with the first that differs (its command line, exit
 * status and output) in why (cut at n - 1 bytes). */
int test_cli_cases(const test_cli_case *cases, size_t n_cases, const char *dir, char *why, size_t n);
/* rm -rf dir (a mkdtemp folder). */
void test_rm_rf(const char *dir);
/* Run a shell command; its exit status (128 when it did not exit), its stdout in out (cut at n - 1 bytes). */
int test_popen(const char *cmd, char *out, size_t n);
/* The first line of what "tformer ARGS" writes to stderr (its start-up line: what it assumed, cli_say), without the
 * newline, in line (cut at n - 1 bytes); standard output dropped. Its exit status. */
int test_said_line(const char *args, char *line, size_t n);
/* "dir/name" in one of 4 buffers used in turn: valid until the fourth call after. */
const char *test_path_in(const char *dir, const char *name);
/* Whether two files hold the same bytes (both readable). */
int test_same_bytes(const char *path_a, const char *path_b);
/* Whether folders a and b hold the same bytes in their file name. */
int test_same_file(const char *a, const char *b, const char *name);
/* The model.safetensors of folder from_dir copied over dir's (weights that do not fit it); 0 or -1. */
int test_cp_weights(const char *from_dir, const char *dir);
/* dir/config.json with its first "from" replaced by "to", in place; 0 or -1 (none there). */
int test_edit_config(const char *dir, const char *from, const char *to);

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
typedef struct {
    int cases;
    double worst;        /* the largest max |diff| of the cases that pass */
    double worst_rel[2]; /* the largest relative L2 error of the cases not named v5*, of those named v5* */
} test_hf_dir_stats;
/* test_hf_run_dir_stats, its figures said on stdout (family: the cases' kind); the failures, *cases. */
int test_hf_run_family(const char *dir, const char *family, double tol, int by_rel,
                       void (*each)(const char *path, void *arg), void *arg, int *cases);
/* test_hf_run_dir with the relative errors too; by_rel: a case fails on its
 * worst relative L2 error over tol (else on its max |diff|); -1: no folder. */
int test_hf_run_dir_stats(const char *dir, double tol, int by_rel, void (*each)(const char *path, void *arg), void *arg,
                          test_hf_dir_stats *s);
/* The loss of model on a batch (NULL on error). */
typedef tf_tensor *(*test_loss_fn)(tf_ctx *ctx, const void *model, tf_tensor *pixels, tf_tensor *labels);
/* The loss's gradient with respect to dir/input.safetensors' pixel_values and
 * every parameter of ps (model's) against dir/gradients.safetensors (by name):
 * the worst relative L2 error (a gradient zero in exact arithmetic, as a key
 * bias's, against the largest norm); -1 when it cannot run. */
double test_gradient_case(const char *dir, const void *model, tf_params *ps, test_loss_fn loss, int *n_tensors);
/* one(dir, &n_tensors) (a gradient comparison as test_gradient_case's) of each of the n cases within tol: how
 * many were not (each said on stderr); the worst said on stdout. */
int test_gradient_cases(const char *const *cases, int n, double tol, double (*one)(const char *dir, int *n_tensors));
/* The loss of a text model on a case's input file (NULL on error). */
typedef tf_tensor *(*test_text_loss_fn)(tf_ctx *ctx, const void *model, const tf_st_file *in, tf_arena *a);
/* The same for a text model: every parameter of ps (model's), no input's gradient. */
double test_text_gradient_case(const char *dir, const void *model, tf_params *ps, test_text_loss_fn loss,
                               int *n_tensors);
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

/* ---- the BERT family's variants (tests/bert_case.c) ---- */

/* The loss's gradients of a BERT-family case (dir/input.safetensors: input_ids,
 * attention_mask, token_type_ids, position_ids, labels where present) against
 * dir/gradients.safetensors, every parameter: the worst relative L2 error; -1
 * when it cannot run. */
double test_bert_gradient_case(const char *dir, int *n_tensors);
/* 0 when case_dir with `from` replaced by `to` in config.json is refused by
 * tf_bert_load with a message holding expect; -1 (said on stderr) when not. */
int test_bert_refuses(const char *case_dir, const char *from, const char *to, const char *expect);
/* test_hf_run_bad_cases, and the class `lacking` in the place of cls in
 * model's config.json refused by tf_bert_load too with a message holding
 * expect (hf-run refuses it first): how many were not a clear error. */
int test_bert_bad_cases(const test_bad_case *cases, size_t n, const char *model, const char *verbose_env,
                        const char *cls, const char *lacking, const char *expect);
/* tf_bert_new(c, seed) with every parameter N(0, 0.3) (tensor i seeded 200 + i). */
tf_bert *test_bert_random(const tf_bert_config *c, uint64_t seed);
/* m and r (m's folder read back) on (2,6) ids (i * 7 + 1) % ids_mod + ids_add,
 * the second row padded after 4 (m's pad_token_id there), labels for m's head:
 * the same first output and loss, bit for bit, and a loss but for the body;
 * save (not NULL): the inputs into that file. 0, or -1 (said on stderr). */
int test_bert_same_outputs(const tf_bert *m, const tf_bert *r, int ids_mod, int ids_add, const char *save);
/* n lines "pos|neg<TAB><words[0]|words[1]> <animal> the mat" (pairs: the mat
 * as text b), the label from that one word, seeded; 0 or -1. */
int test_sentiment_file(const char *path, int n, uint64_t seed, int pairs, const char *const words[2],
                        const char *const animals[4]);
/* mkdtemp(dir) holding c's model (tf_bert_new's initialisation) and the n
 * tokenizer files names[] of tok_dir; 0 or -1. */
int test_bert_folder(char *dir, const tf_bert_config *c, uint64_t seed, const char *tok_dir, const char *const *files,
                     int n);

/* `tformer finetune --task classify`, `predict` and `--task pairs` on a family's folder. */
typedef struct {
    const char *model;                          /* the folder */
    int steps;                                  /* of the classify run */
    const char *cls, *type;                     /* in the run folder's config.json: its class, its model_type */
    const char *lines;                          /* two texts for predict: pos's, then neg's */
    const char *const *words, *const *animals;  /* test_sentiment_file's */
} test_finetune_spec;
/* classify on test_sentiment_file's lines (200 to train, 40 to validate) into
 * run/c for s->steps steps, a valid accuracy over 0.9, a run folder of s->cls;
 * predict on s->lines, pos then neg; pairs, 2 steps, into run/p. 0, or -1
 * (said on stderr; out holds the last command's output). */
int test_finetune_classify(const test_finetune_spec *s, const char *run, char *out, size_t n);
/* tformer's own folders of every head (tf_bert_config_default(19, 9, 2, 2, 8),
 * d_ff 12, 3 labels, no dropout, one token type, then the family's settings),
 * random weights (test_bert_random, seed 11 + k), saved as <family>_<Class>:
 * config.json and the tensors as the family wants them, read back with the
 * family's settings, to the same outputs and loss bit for bit
 * (test_bert_same_outputs); $TFORMER_EXPORT_DIR: kept there with their inputs. */
typedef struct {
    const char *family;
    void (*configure)(tf_bert_config *c, int k);
    int (*check_files)(const char *dir, const char *config_text, const tf_bert_config *c, int k); /* 0 or -1 */
    int (*check_back)(const tf_bert *back, const tf_bert_config *c);                             /* 0 or -1 */
    int ids_mod, ids_add;                                                                        /* the inputs' ids */
} test_bert_export;
/* How many of the five heads failed (each said on stderr). */
int test_bert_export_heads(const test_bert_export *x);

/* ---- sentence-transformers folders (tests/embed_case.c) ---- */

struct cJSON;
/* A JSON file parsed (cJSON_Delete it), or NULL. */
struct cJSON *test_read_json(const char *path);
/* 0 when got holds want's ids (a JSON list); 1, both said on stderr (who, what: the text), when not. */
int test_ids_differ(const struct cJSON *want, const tf_ids *got, const char *who, const char *what);
/* test_texts_differ of the tokenizer of tok_dir on answers_dir/answers.json; -1 when either cannot be read. */
int test_folder_texts_differ(const char *tok_dir, const char *answers_dir, size_t max_len, int types, const char *who,
                             int *n);
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
