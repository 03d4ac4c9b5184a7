/* ImageGPT: a GPT (the GPT family, unchanged) on images as raster-order
 * colour tokens. The training images' k-means clusters are the vocabulary
 * plus a start token; each image is [sos, pixel_0 .. pixel_{HW-2}] -> its
 * HW pixels; validation reports bits per pixel. The model is ImageGPT's by
 * default (RMS norms, quick_gelu, an untied head without the start token's
 * logit), so the folder is Hugging Face's ImageGPTForCausalImageModeling
 * (transformers loads it) with image_tokens.json (the clusters and the image
 * size); --norm layer --predict-last true --tied true --activation gelu_tanh
 * gives GPT-2's network and folder instead. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../../task/task_internal.h"
#include "tformer/gpt.h"

#define ROW(m, type, def, range, help) TF_FIELD_ROW(tf_imagegpt_task_config, m, type, #m, def, range, NULL, help, 0, NULL)
static const tf_field IMAGEGPT_ROWS[] = {
    ROW(val_fraction, TF_FIELD_FLOAT, "0.1", "(0,1)", "without a validation set: the last part of the training images, held out"),
    ROW(n_clusters, TF_FIELD_INT, "16", "[2,65535]", "k-means colour clusters: the pixel tokens (ImageGPT: 512 for RGB)"),
    ROW(image_size, TF_FIELD_INT, "0", "[0,4096]",
        "images resized to image_size x image_size first (box filter, e.g. 14 for Fashion-MNIST); 0: as they are"),
    ROW(kmeans_iters, TF_FIELD_INT, "100", "[1,100000]", "k-means: Lloyd rounds at most"),
    ROW(kmeans_pixels, TF_FIELD_INT64, "1000000", "[0,inf)",
        "k-means: training pixels it is fitted on, drawn under the seed; 0: all"),
    ROW(val_images, TF_FIELD_INT, "0", "[0,inf)", "validation images evaluated (the first ones); 0: all"),
    TF_FIELD_SUB(tf_imagegpt_task_config, model, tf_gpt_config_table),
};
#undef ROW
const tf_field_table tf_imagegpt_task_config_table = {"ImageGPT", IMAGEGPT_ROWS,
                                                      (int)(sizeof IMAGEGPT_ROWS / sizeof IMAGEGPT_ROWS[0])};

tf_imagegpt_task_config tf_imagegpt_task_config_default(void) {
    tf_imagegpt_task_config c;
    tf_fields_reset(&tf_imagegpt_task_config_table, &c, sizeof c);
    c.model.norm = TF_NORM_RMS, c.model.predict_last = 0, c.model.tied = 0; /* ImageGPT's (ImageGPTConfig) */
    c.model.activation = TF_ACT_QUICK_GELU;
    return c;
}

typedef struct {
    tf_image_task img; /* base, the sets (resized), the token images' loader */
    tf_imagegpt_task_config cfg;
    tf_gpt *m;
    tf_image_tokens tokens;
    tf_ctx *meta;          /* holds clusters (k,channels): the checkpoint's copy of tokens.centers */
    tf_tensor *clusters;
} igpt_task;

/* ---------------------------------------------------------------- the task's table */

/* Next-pixel cross-entropy (nats); validation adds the batch's bits over its pixels. */
static tf_tensor *ig_loss(tf_task *t, tf_ctx *ctx, const tf_batch *b, tf_metrics *m) {
    tf_gpt_inputs in = {.input_ids = tf_batch_get(b, "input_ids"), .targets = tf_batch_get(b, "targets")};
    tf_gpt_outputs out;
    if (tf_gpt_run(ctx, ((igpt_task *)t)->m, &in, &out)) return NULL;
    int64_t pixels = 0;
    for (int64_t i = 0; m && i < tf_numel(in.targets); i++) pixels += tf_i32(in.targets)[i] >= 0;
    if (m) m->sum[0] += (double)tf_f32(out.loss)[0] * (double)pixels / log(2.0), m->count[0] += (double)pixels;
    return out.loss;
}

static int ig_save(tf_task *t, const char *dir) {
    igpt_task *g = (igpt_task *)t;
    return tf_gpt_save(g->m, dir) || tf_image_tokens_save(&g->tokens, dir) ? -1 : 0;
}

/* The clusters in the checkpoint (g->clusters: alive until the writer saves):
 * a resume must tokenise as the run did. */
static int ig_save_meta(tf_task *t, tf_st_writer *w) { return tf_st_writer_add(w, "imagegpt.clusters", ((igpt_task *)t)->clusters); }

static int ig_check_meta(tf_task *t, const tf_st_file *f, const char *path) {
    igpt_task *g = (igpt_task *)t;
    const tf_image_tokens *k = &g->tokens;
    const tf_st_entry *e = tf_st_find(f, "imagegpt.clusters");
    if (!e || e->ndim != 2 || e->shape[0] != k->k || e->shape[1] != k->channels)
        return tf_set_error("%s: no imagegpt.clusters of %d x %d: not this ImageGPT run", path, k->k, k->channels);
    tf_ctx *ctx = tf_ctx_new(0);
    tf_tensor *c = ctx ? tf_tensor_new(ctx, TF_DTYPE_F32, 2, (int64_t[]){k->k, k->channels}, 0) : NULL;
    int rc = !c || tf_st_read_f32(f, e, c);
    if (!rc && memcmp(c->data, k->centers, (size_t)k->k * k->channels * sizeof(float)))
        rc = tf_set_error("%s: the checkpoint's colour clusters differ from these images' (other data or seed)", path);
    tf_ctx_free(ctx);
    return rc ? -1 : 0;
}

static int64_t ig_tokens(tf_task *t, int rows) { return (int64_t)rows * ((igpt_task *)t)->m->cfg.context; }

static void ig_free(tf_task *t) {
    igpt_task *g = (igpt_task *)t;
    tf_gpt_free(g->m);
    tf_image_tokens_free(&g->tokens);
    tf_ctx_free(g->meta);
    tf_image_task_free(t);
}

static const tf_task_vt IMAGEGPT_TASK = {
    TF_IMAGE_TASK_CALLS(ig_loss, ig_save, ig_tokens, ig_free), .save_meta = ig_save_meta, .check_meta = ig_check_meta,
};

/* ---------------------------------------------------------------- construction */

/* Resized (image_size) and split: the validation set given, or the training set's tail. */
static int prepare_sets(igpt_task *g) {
    const tf_imagegpt_task_config *c = &g->cfg;
    tf_images *sets[2] = {&g->img.train, &g->img.valid};
    for (int i = 0; i < 2 && c->image_size; i++) {
        tf_images r;
        if (!sets[i]->n) continue;
        if (tf_images_resize(sets[i], c->image_size, c->image_size, &r)) return -1;
        tf_images_free(sets[i]);
        *sets[i] = r;
    }
    return tf_task_images_split(&g->img.train, &g->img.valid, c->val_fraction);
}

/* The clusters, both sets as tokens, the loader and the model sized for them. */
static int make_model(igpt_task *t, uint64_t seed) {
    tf_imagegpt_task_config *c = &t->cfg;
    tf_image_task *g = &t->img;
    if (g->valid.channels != g->train.channels || g->valid.height != g->train.height || g->valid.width != g->train.width)
        return tf_set_error("the validation images (%dx%d) differ in size or channels from the training images (%dx%d)",
                            g->valid.width, g->valid.height, g->train.width, g->train.height);
    if (c->model.vocab_size && c->model.vocab_size != c->n_clusters + 1)
        return tf_set_error("vocab_size %d: ImageGPT's is n_clusters + 1 = %d (0 sets it)", c->model.vocab_size,
                            c->n_clusters + 1);
    int64_t HW = (int64_t)g->train.height * g->train.width;
    int64_t n_val = c->val_images && c->val_images < g->valid.n ? c->val_images : g->valid.n;
    c->model.vocab_size = c->n_clusters + 1, c->model.context = (int)HW;
    if (tf_image_tokens_fit(&g->train, c->n_clusters, c->kmeans_iters, c->kmeans_pixels, seed, &t->tokens)) return -1;
    if (!(t->meta = tf_ctx_new(0)) ||
        !(t->clusters = tf_tensor_new(t->meta, TF_DTYPE_F32, 2, (int64_t[]){c->n_clusters, g->train.channels}, 0)))
        return tf_set_error("train: out of memory");
    memcpy(t->clusters->data, t->tokens.centers, (size_t)c->n_clusters * g->train.channels * sizeof(float));
    int32_t *tr = malloc((size_t)(g->train.n * HW) * sizeof *tr), *va = malloc((size_t)(n_val * HW) * sizeof *va);
    int rc = !tr || !va ? tf_set_error("train: out of memory for the token images") : 0;
    tf_images head = g->valid;
    head.n = n_val;
    rc = rc || tf_image_tokens_encode(&t->tokens, &g->train, tr) || tf_image_tokens_encode(&t->tokens, &head, va);
    if (!rc && !(g->loader = tf_image_tokens_loader_new(tr, g->train.n, va, n_val, (int)HW, c->n_clusters, seed))) rc = -1;
    free(tr), free(va);
    if (!rc) g->valid.n = n_val; /* the images evaluated (the rest of the buffer is freed with it) */
    if (rc || !(t->m = tf_gpt_new(&c->model, seed ? seed : 1))) return -1;
    tf_image_task_set_model(g, t->m->params, &tf_gpt_config_table, &t->m->cfg);
    return 0;
}

tf_task *tf_imagegpt_task_new(const tf_imagegpt_task_config *c, tf_images *train, tf_images *valid,
                              const char *run_dir, uint64_t seed) {
    igpt_task *g = tf_image_task_alloc(sizeof *g, &IMAGEGPT_TASK, train, valid); /* the sets are the task's */
    if (!g) return NULL;
    tf_task *base = &g->img.base;
    g->cfg = *c;
    base->config = (tf_fields){&tf_imagegpt_task_config_table, &g->cfg};
    base->n_metrics = 1, base->metric_names[0] = "bpd";
    if (tf_fields_check(&base->config, 1) || tf_task_make_dir(run_dir) || prepare_sets(g) || make_model(g, seed)) {
        ig_free(base);
        return NULL;
    }
    return base;
}

const tf_gpt *tf_imagegpt_task_model(const tf_task *t) { return ((const igpt_task *)t)->m; }
const tf_image_tokens *tf_imagegpt_task_tokens(const tf_task *t) { return &((const igpt_task *)t)->tokens; }

int64_t tf_imagegpt_task_images(const tf_task *t, tf_subset subset) { return tf_image_task_images(t, subset); }
