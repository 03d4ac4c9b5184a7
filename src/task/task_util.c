/* What every task does with its tokenizer: install it into the run folder,
 * record its files in the checkpoint, check them on resume; and what the
 * image tasks do with their sets. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <unistd.h>

#include "task_internal.h"
#include "tformer/dist.h"

static const char *const TOKENIZER_FILES[] = {"vocab.json", "merges.txt", "vocab.txt", "chars.txt",
                                              "tokenizer.tformer.json", "tokenizer.json", "tokenizer_config.json",
                                              "special_tokens_map.json"};
#define N_TOKENIZER_FILES (sizeof TOKENIZER_FILES / sizeof *TOKENIZER_FILES)

/* ---------------------------------------------------------------- the tokenizer of the run */

int tf_task_tokenizer_prepare(const char *spec, const char *const *data, int n_data, const char *dir, int resume) {
    char path[4200];
    if (tf_path_join(path, sizeof path, dir, "checkpoint.safetensors")) return -1;
    if (resume && access(path, F_OK))
        return tf_set_error("%s: nothing to resume: no checkpoint.safetensors (start without --resume)", dir);
    /* several processes: rank 0 installs it, the others read it (tf_dist_task_new) */
    return resume || tf_dist_rank() > 0 ? 0 : tf_task_tokenizer_install(spec, data, n_data, dir);
}

/* Copy a tokenizer folder (or a WordPiece vocab.txt) into dir in a layout
 * tf_tokenizer_load reads, or learn the data's characters ("char"). */
int tf_task_tokenizer_install(const char *spec, const char *const *data, int n_data, const char *dir) {
    if (!strcmp(spec, "char")) {
        tf_tokenizer_train_opts o = {TF_TOKENIZER_CHAR, 0, 0};
        return tf_tokenizer_train(&o, data, n_data, dir);
    }
    static const char *const pairs[][2] = {{"encoder.json", "vocab.json"}, {"vocab.bpe", "merges.txt"},
                                           {"vocab.json", "vocab.json"},   {"merges.txt", "merges.txt"},
                                           {"vocab.txt", "vocab.txt"},     {"chars.txt", "chars.txt"},
                                           {"tokenizer.tformer.json", "tokenizer.tformer.json"},
                                           {"tokenizer.json", "tokenizer.json"},
                                           {"tokenizer_config.json", "tokenizer_config.json"},
                                           {"special_tokens_map.json", "special_tokens_map.json"}};
    tf_tokenizer *t = tf_tokenizer_load(spec); /* validates it before anything is copied */
    if (!t) return -1;
    tf_tokenizer_free(t);
    char from[4096], to[4096];
    struct stat st;
    if (!stat(spec, &st) && S_ISREG(st.st_mode)) { /* a WordPiece vocab.txt named directly */
        if (tf_path_join(to, sizeof to, dir, "vocab.txt")) return -1;
        return tf_copy_file(spec, to);
    }
    for (size_t i = 0; i < sizeof pairs / sizeof pairs[0]; i++) {
        if (tf_path_join(from, sizeof from, spec, pairs[i][0])) return -1;
        if (tf_path_join(to, sizeof to, dir, pairs[i][1])) return -1;
        if (!stat(from, &st) && tf_copy_file(from, to)) return -1;
    }
    return 0;
}

/* The tokenizer's files: a checkpoint is complete by itself. */
int tf_task_tokenizer_save(const char *dir, tf_st_writer *w) {
    int rc = 0;
    for (size_t i = 0; !rc && i < N_TOKENIZER_FILES; i++) {
        char path[4096], key[128];
        if (tf_path_join(path, sizeof path, dir, TOKENIZER_FILES[i])) return -1;
        struct stat st;
        if (stat(path, &st)) continue;
        size_t n;
        char *text = tf_read_file(path, &n);
        snprintf(key, sizeof key, "tformer_tokenizer/%s", TOKENIZER_FILES[i]);
        rc = !text || tf_st_writer_set_metadata(w, key, text);
        free(text);
    }
    return rc ? -1 : 0;
}

/* On resume the run folder's tokenizer must be the one the checkpoint was trained with. */
int tf_task_tokenizer_check(const char *dir, const tf_st_file *f, const char *ck) {
    for (size_t i = 0; i < N_TOKENIZER_FILES; i++) {
        char path[4096], key[128];
        snprintf(key, sizeof key, "tformer_tokenizer/%s", TOKENIZER_FILES[i]);
        const char *want = tf_st_metadata(f, key);
        if (!want) continue;
        if (tf_path_join(path, sizeof path, dir, TOKENIZER_FILES[i])) return -1;
        size_t n;
        char *have = tf_read_file(path, &n);
        int same = have && n == strlen(want) && !memcmp(have, want, n);
        free(have);
        if (!same) return tf_set_error("%s: %s differs from the tokenizer the checkpoint was trained with", ck, path);
    }
    return 0;
}


/* ---------------------------------------------------------------- what every task does */

int tf_task_make_dir(const char *run_dir) {
    if (mkdir(run_dir, 0755) && errno != EEXIST) return tf_set_error("%s: cannot create: %s", run_dir, strerror(errno));
    return 0;
}

int tf_task_signature_of(const tf_field_table *t, const void *cfg, char *out, size_t n) {
    tf_fields f = {t, (void *)cfg};
    return tf_fields_signature(&f, 1, out, n);
}

int64_t tf_task_argmax(const float *x, int64_t n) {
    int64_t best = 0;
    for (int64_t i = 1; i < n; i++) best = x[i] > x[best] ? i : best;
    return best;
}

void tf_task_use_accuracy(tf_task *t) { t->n_metrics = 1, t->metric_names[0] = "accuracy", t->select_metric = 1; }

/* ---------------------------------------------------------------- classification tasks */

void tf_task_count_hits(const tf_tensor *logits, const tf_tensor *labels, tf_metrics *m) {
    int64_t L = logits->shape[1];
    for (int64_t i = 0; i < labels->shape[0]; i++) {
        int64_t best = tf_task_argmax(tf_f32(logits) + i * L, L);
        if (tf_i32(labels)[i] < 0) continue; /* a padding row (ignore index) */
        m->sum[0] += best == tf_i32(labels)[i], m->count[0] += 1;
    }
}

/* ---------------------------------------------------------------- image sets */

int tf_task_images_split(tf_images *train, tf_images *valid, float val_fraction) {
    if (valid->n) return 0;
    int64_t n_val = (int64_t)((double)train->n * val_fraction);
    if (n_val < 1 || train->n - n_val < 1)
        return tf_set_error("%lld training images are too few to hold out val_fraction %g", (long long)train->n,
                            val_fraction);
    tf_images head;
    if (tf_images_take(train, train->n - n_val, n_val, valid) || tf_images_take(train, 0, train->n - n_val, &head))
        return -1;
    tf_images_free(train);
    *train = head;
    return 0;
}

/* An image task's sets handed to it: moved into *to_train and *to_valid, or freed when to_train is
 * NULL (the task was not made); the caller's are emptied either way. valid may be NULL. */
static void images_move(tf_images *to_train, tf_images *to_valid, tf_images *train, tf_images *valid) {
    if (to_train) {
        *to_train = *train;
        if (valid) *to_valid = *valid;
    } else {
        tf_images_free(train), tf_images_free(valid);
    }
    memset(train, 0, sizeof *train);
    if (valid) memset(valid, 0, sizeof *valid);
}

void *tf_image_task_alloc(size_t size, const tf_task_vt *vt, tf_images *train, tf_images *valid) {
    tf_image_task *t = calloc(1, size);
    images_move(t ? &t->train : NULL, t ? &t->valid : NULL, train, valid);
    if (!t) return tf_set_error("train: out of memory"), NULL;
    t->base.vt = vt;
    return t;
}

int tf_image_task_batch(tf_task *t, tf_ctx *ctx, tf_subset subset, uint64_t key, int rows, tf_batch *b) {
    return tf_loader_next(((tf_image_task *)t)->loader, ctx, subset, key, rows, b);
}

int64_t tf_image_task_images(const tf_task *t, tf_subset subset) {
    const tf_image_task *g = (const tf_image_task *)t;
    return subset == TF_SUBSET_VAL ? g->valid.n : g->train.n;
}

void tf_image_task_set_model(tf_image_task *t, tf_params *ps, const tf_field_table *table, void *cfg) {
    t->params = ps, t->model = (tf_fields){table, cfg};
}

tf_params *tf_image_task_params(tf_task *t) { return ((tf_image_task *)t)->params; }

int tf_image_task_signature(tf_task *t, char *out, size_t n) {
    return tf_fields_signature(&((tf_image_task *)t)->model, 1, out, n);
}

void tf_image_task_free(tf_task *t) {
    tf_image_task *g = (tf_image_task *)t;
    tf_loader_free(g->loader);
    tf_images_free(&g->train), tf_images_free(&g->valid);
    free(g);
}

/* ---------------------------------------------------------------- tasks on text */

int tf_text_task_batch(tf_task *t, tf_ctx *ctx, tf_subset subset, uint64_t key, int rows, tf_batch *b) {
    return tf_loader_next(((tf_text_task *)t)->loader, ctx, subset, key, rows, b);
}

int tf_text_task_save_meta(tf_task *t, tf_st_writer *w) { return tf_task_tokenizer_save(((tf_text_task *)t)->dir, w); }

int tf_text_task_check_meta(tf_task *t, const tf_st_file *f, const char *ck) {
    return tf_task_tokenizer_check(((tf_text_task *)t)->dir, f, ck);
}

tf_params *tf_text_task_params(tf_task *t) { return ((tf_text_task *)t)->params; }

int tf_text_task_signature(tf_task *t, char *out, size_t n) {
    return tf_fields_signature(&((tf_text_task *)t)->model, 1, out, n);
}

int64_t tf_text_task_tokens(tf_task *t, int rows) { return (int64_t)rows * ((tf_text_task *)t)->context; }

void tf_text_task_free(tf_task *t) {
    tf_text_task *x = (tf_text_task *)t;
    tf_tokenizer_free(x->tok);
    tf_loader_free(x->loader);
    free(x->dir);
    free(x);
}

void *tf_text_task_alloc(size_t size, const tf_task_vt *vt, int n_data, const char *run_dir) {
    if (n_data < 1) return tf_set_error("train: no data files"), NULL;
    if (tf_task_make_dir(run_dir)) return NULL;
    tf_text_task *t = calloc(1, size);
    if (!t || !(t->dir = strdup(run_dir))) return free(t), tf_set_error("train: out of memory"), NULL;
    t->base.vt = vt;
    return t;
}

int tf_text_task_tokenizer(tf_text_task *t, const char *spec, const char *const *data, int n_data, int resume,
                           int *vocab_size) {
    if (tf_task_tokenizer_prepare(spec, data, n_data, t->dir, resume)) return -1;
    if (!(t->tok = tf_tokenizer_load(t->dir))) return -1;
    int vocab = tf_tokenizer_vocab_size(t->tok);
    if (*vocab_size && *vocab_size != vocab)
        return tf_set_error("vocab_size %d: the tokenizer has %d tokens", *vocab_size, vocab);
    *vocab_size = vocab;
    return 0;
}

void tf_text_task_set_model(tf_text_task *t, tf_params *ps, const tf_field_table *table, void *cfg, int64_t context) {
    t->params = ps, t->model = (tf_fields){table, cfg}, t->context = context;
}
