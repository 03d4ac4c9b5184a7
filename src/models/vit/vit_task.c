/* Image classification: a ViTForImageClassification or a
 * SwinForImageClassification (each through the small table of calls below)
 * on labelled images (the images loader: draws with replacement and DeiT's augmentation, each a
 * row of the table below), cross-entropy with label smoothing (against
 * mixup / cutmix's soft targets when they are on), stochastic depth (the
 * model's drop_path), an EMA of the weights; validation accuracy; saved as a
 * Hugging Face folder (a conv-stem ViT: tformer's) with the class names as id2label. */
#include <stdlib.h>
#include <string.h>

#include "../../task/task_internal.h"
#include "../vision_family.h"
#include "tformer/swin.h"

static const char *const ERASE_MODES[] = {"const", "rand", "pixel", NULL};
_Static_assert(sizeof(tf_erase_mode) == sizeof(int), "enum rows store an int");

#define ROW(m, type, def, range, choices, help) TF_FIELD_ROW(tf_image_recipe, m, type, #m, def, range, choices, help, 0, NULL)
static const tf_field RECIPE_ROWS[] = {
    ROW(val_fraction, TF_FIELD_FLOAT, "0.1", "(0,1)", NULL,
        "without a validation set: the last part of the training images, held out"),
    ROW(label_smoothing, TF_FIELD_FLOAT, "0.1", "[0,1)", NULL,
        "label smoothing of the loss (DeiT: 0.1); with mixup or cutmix, of their targets"),
    ROW(shift, TF_FIELD_INT, "0", "[0,255]", NULL, "training images moved by up to this many pixels in x and y"),
    ROW(hflip, TF_FIELD_FLOAT, "0", "[0,1]", NULL,
        "training images mirrored left-right with this probability (DeiT's base transform: 0.5)"),
    ROW(label_names, TF_FIELD_STRING, "", NULL, NULL,
        "the classes' names, comma-separated, for the folder's id2label (\"\": LABEL_<i>)"),
    ROW(randaug_ops, TF_FIELD_INT, "0", "[0,64]", NULL,
        "RandAugment (timm's rand-m9-mstd0.5-inc1 on grey images): ops per training image; 0: none (DeiT: 2)"),
    ROW(randaug_magnitude, TF_FIELD_FLOAT, "9", "[0,10]", NULL, "RandAugment's magnitude (DeiT: 9)"),
    ROW(randaug_mstd, TF_FIELD_FLOAT, "0.5", "[0,100]", NULL,
        "std of the noise added to the magnitude of each op (DeiT: 0.5)"),
    ROW(mixup, TF_FIELD_FLOAT, "0", "[0,100]", NULL,
        "mixup: a batch mixed with itself reversed by lambda ~ Beta(mixup, mixup); 0: none (DeiT: 0.8)"),
    ROW(cutmix, TF_FIELD_FLOAT, "0", "[0,100]", NULL,
        "cutmix: a box of the reversed batch pasted in, lambda ~ Beta(cutmix, cutmix); 0: none (DeiT: 1)"),
    ROW(mix_prob, TF_FIELD_FLOAT, "1", "[0,1]", NULL, "a training batch is mixed (mixup or cutmix) with this probability"),
    ROW(switch_prob, TF_FIELD_FLOAT, "0.5", "[0,1]", NULL, "with mixup and cutmix both: cutmix with this probability"),
    ROW(erase_prob, TF_FIELD_FLOAT, "0", "[0,1]", NULL,
        "random erasing: a box of a training image replaced with this probability (DeiT: 0.25)"),
    ROW(erase_mode, TF_FIELD_ENUM, "pixel", NULL, ERASE_MODES,
        "random erasing's values: the mean (const), mean + std z per channel (rand) or per pixel (pixel, DeiT's)"),
    ROW(repeats, TF_FIELD_INT, "1", "[1,1024]", NULL,
        "repeated augmentation: each drawn training image fills this many rows of a batch, augmented apart (DeiT: 3)"),
    ROW(ema_decay, TF_FIELD_FLOAT, "0", "[0,1)", NULL,
        "EMA of the weights after each step (ema = d ema + (1 - d) w); validation, best/ and the saved model use it; "
        "0: none (DeiT: 0.99996)"),
};
#undef ROW
const tf_field_table tf_image_recipe_table = {"image classification", RECIPE_ROWS,
                                              (int)(sizeof RECIPE_ROWS / sizeof RECIPE_ROWS[0])};

static const tf_field VIT_TASK_ROWS[] = {
    TF_FIELD_SUB(tf_vit_task_config, recipe, tf_image_recipe_table),
    TF_FIELD_SUB(tf_vit_task_config, model, tf_vit_config_table),
};
const tf_field_table tf_vit_task_config_table = {"image classification", VIT_TASK_ROWS, 2};

static const tf_field SWIN_TASK_ROWS[] = {
    TF_FIELD_SUB(tf_swin_task_config, recipe, tf_image_recipe_table),
    TF_FIELD_SUB(tf_swin_task_config, model, tf_swin_config_table),
};
const tf_field_table tf_swin_task_config_table = {"image classification (Swin)", SWIN_TASK_ROWS, 2};

TF_FIELDS_DEFAULT_FN(tf_vit_task_config, tf_vit_task_config_default, tf_vit_task_config_table)

TF_FIELDS_DEFAULT_FN(tf_swin_task_config, tf_swin_task_config_default, tf_swin_task_config_table)

/* ---------------------------------------------------------------- the models it trains */

extern const tf_family tf_family_vit, tf_family_swin; /* vit_family.c, swin_family.c */

/* What the task asks of a classifier besides its registry row; cfg is the family's config. */
typedef struct {
    const char *arch;                   /* its head's Hugging Face name, for messages */
    const tf_family *family;            /* its registry row: free, save, config_table (the signature's rows) */
    void *(*create)(const void *cfg, uint64_t seed);
    tf_params *(*params)(const void *m);
    int (*set_labels)(void *m, const char *const *names, int n);
    hf_classifier_fn run;               /* the forward, as the family's row runs it */
    int64_t (*tokens)(const void *m);   /* per image */
    int (*check)(const void *cfg, int *channels, int *size, int *n_labels); /* the config valid and a classifier */
} image_model;

/* The table of a model type T (ViT's, Swin's) with T_new, T_set_labels, T_config_check, its params and cfg
 * (head cls for arch, the Hugging Face name), its family's row and prefix_tokens. */
#define IMAGE_MODEL(NAME, prefix, T, cls, arch, family)                                                             \
    static void *prefix##_create(const void *cfg, uint64_t seed) { return T##_new(cfg, seed); }                     \
    static tf_params *prefix##_params(const void *m) { return ((const T *)m)->params; }                             \
    static int prefix##_set_labels(void *m, const char *const *names, int n) { return T##_set_labels(m, names, n); } \
    static int prefix##_check(const void *cfg, int *channels, int *size, int *n_labels) {                           \
        const T##_config *c = cfg;                                                                                  \
        if (T##_config_check(c)) return -1;                                                                         \
        if (c->head != (cls)) return tf_set_error("head: training needs " arch);                                    \
        *channels = c->channels, *size = c->image_size, *n_labels = c->n_labels;                                    \
        return 0;                                                                                                   \
    }                                                                                                               \
    static const image_model NAME = {arch, &(family), prefix##_create, prefix##_params, prefix##_set_labels,        \
                                     T##_classifier_forward, prefix##_tokens, prefix##_check}

static int64_t vit_tokens(const void *m) { return tf_vit_patches(&((const tf_vit *)m)->cfg) + 1; }
IMAGE_MODEL(VIT_MODEL, vit, tf_vit, TF_VIT_IMAGE_CLS, "ViTForImageClassification", tf_family_vit);

/* The first stage's tokens (the most attended over). */
static int64_t swin_tokens(const void *m) {
    const tf_swin_stage *st = &((const tf_swin *)m)->stage[0];
    return (int64_t)st->height * st->width;
}
IMAGE_MODEL(SWIN_MODEL, swin, tf_swin, TF_SWIN_IMAGE_CLS, "SwinForImageClassification", tf_family_swin);
#undef IMAGE_MODEL

typedef struct {
    tf_image_task img; /* base, the sets, the augmenting loader */
    const image_model *im;
    tf_vit_task_config vit;   /* the task's config: one of the two, */
    tf_swin_task_config swin; /* as im says */
    const tf_image_recipe *rc;
    void *m;
    void *ema;     /* with ema_decay: the moving average, evaluated and saved */
    int ema_fresh; /* resumed from a checkpoint without one: it starts from the weights at the next step */
} vit_task;

/* ---------------------------------------------------------------- the task's table */

/* Validation (m given) runs the EMA when there is one. A training batch with
 * "targets" (mixup / cutmix) takes the soft-target loss, smoothing inside. */
static tf_tensor *vt_loss(tf_task *t, tf_ctx *ctx, const tf_batch *b, tf_metrics *m) {
    vit_task *v = (vit_task *)t;
    const void *model = m && v->ema ? v->ema : v->m;
    tf_tensor *soft = m ? NULL : tf_batch_get(b, "targets"), *labels = soft ? NULL : tf_batch_get(b, "labels");
    hf_classifier_out o;
    if (v->im->run(ctx, model, tf_batch_get(b, "pixel_values"), labels, v->rc->label_smoothing, &o)) return NULL;
    if (m) tf_task_count_hits(o.logits, labels, m); /* accuracy of the argmax */
    return soft ? tf_soft_cross_entropy(ctx, o.logits, soft) : o.loss;
}

static int vt_save(tf_task *t, const char *dir) {
    vit_task *v = (vit_task *)t;
    return v->im->family->save(v->ema ? v->ema : v->m, dir);
}

/* ---------------------------------------------------------------- the EMA of the weights */

/* ema = ema d + (1 - d) w after each update, in float as timm's ModelEma(V2). */
static int vt_after_step(tf_task *t, int64_t step) {
    vit_task *v = (vit_task *)t;
    (void)step;
    if (!v->ema) return 0;
    float d = v->rc->ema_decay, e = (float)(1.0 - (double)v->rc->ema_decay);
    tf_params *w_ps = v->im->params(v->m), *a_ps = v->im->params(v->ema);
    for (int i = 0; i < tf_params_count(w_ps); i++) {
        const float *w = tf_f32(tf_params_tensor(w_ps, i));
        float *a = tf_f32(tf_params_tensor(a_ps, i));
        for (int64_t k = 0, n = tf_numel(tf_params_tensor(w_ps, i)); k < n; k++)
            a[k] = v->ema_fresh ? w[k] : a[k] * d + e * w[k];
    }
    v->ema_fresh = 0;
    return 0;
}

/* The EMA in the checkpoint as "ema.<name>": a resume continues it exactly. */
static int vt_save_meta(tf_task *t, tf_st_writer *w) {
    vit_task *v = (vit_task *)t;
    tf_params *ps = v->ema ? v->im->params(v->ema) : NULL;
    char name[512];
    for (int i = 0; ps && i < tf_params_count(ps); i++) {
        snprintf(name, sizeof name, "ema.%s", tf_params_name(ps, i));
        if (tf_st_writer_add(w, name, tf_params_tensor(ps, i))) return -1;
    }
    return 0;
}

static int vt_check_meta(tf_task *t, const tf_st_file *f, const char *path) {
    vit_task *v = (vit_task *)t;
    tf_params *ps = v->ema ? v->im->params(v->ema) : NULL;
    char name[512];
    for (int i = 0; ps && i < tf_params_count(ps); i++) {
        snprintf(name, sizeof name, "ema.%s", tf_params_name(ps, i));
        const tf_st_entry *e = tf_st_find(f, name);
        if (!e && i == 0) { /* trained without an EMA (resumed with changed settings) */
            v->ema_fresh = 1;
            return 0;
        }
        if (!e) return tf_set_error("%s: no tensor %s (the EMA of the weights)", path, name);
        if (tf_st_read_f32(f, e, tf_params_tensor(ps, i))) return -1;
    }
    return 0;
}

/* Tokens per image: ViT's patches and class token, Swin's first stage. */
static int64_t vt_tokens(tf_task *t, int rows) { return (int64_t)rows * ((vit_task *)t)->im->tokens(((vit_task *)t)->m); }

static void vt_free(tf_task *t) {
    vit_task *v = (vit_task *)t;
    if (v->im) v->im->family->free(v->m), v->im->family->free(v->ema);
    tf_image_task_free(t);
}

static const tf_task_vt VIT_TASK = {
    TF_IMAGE_TASK_CALLS(vt_loss, vt_save, vt_tokens, vt_free),
    .save_meta = vt_save_meta, .check_meta = vt_check_meta, .after_step = vt_after_step,
};

/* ---------------------------------------------------------------- construction */

/* The images fit the model: square, its channels and size, its labels. */
static int check_images(int channels, int size, int n_labels, const tf_images *s, const char *which) {
    if (s->height != s->width)
        return tf_set_error("%s images are %dx%d: the model takes square images", which, s->width, s->height);
    if (s->channels != channels || s->height != size)
        return tf_set_error("%s images are %d channel(s) of %dx%d: set --channels %d --image-size %d (now %d, %d)", which,
                            s->channels, s->width, s->height, s->channels, s->height, channels, size);
    if (!s->labels || s->n_classes > n_labels)
        return tf_set_error("%s images have %d classes, the model n_labels %d: set --n-labels", which, s->n_classes,
                            n_labels);
    for (int64_t i = 0; i < s->n; i++)
        if (s->labels[i] < 0 || s->labels[i] >= n_labels)
            return tf_set_error("%s image %lld has label %d, outside [0,%d)", which, (long long)i, s->labels[i], n_labels);
    return 0;
}

/* "a,b,c" as the model's label names: exactly n_labels of them. */
static int set_label_names(const image_model *im, void *m, int n, const char *list) {
    if (!*list) return 0;
    int k = 0, rc = 0;
    char *copy = strdup(list), **names = calloc((size_t)n, sizeof *names);
    if (!copy || !names) rc = tf_set_error("train: out of memory");
    for (char *p = copy, *next; !rc && p; p = next, k++) {
        next = strchr(p, ',');
        if (next) *next++ = 0;
        if (k < n) names[k] = p;
    }
    if (!rc && k != n) rc = tf_set_error("label_names: %d names for n_labels %d", k, n);
    if (!rc) rc = im->set_labels(m, (const char *const *)names, n);
    free(copy), free(names);
    return rc;
}

/* The loader with the recipe's augmentation of training batches. */
static tf_loader *make_loader(const vit_task *v, int n_labels, uint64_t seed) {
    const tf_image_recipe *c = v->rc;
    tf_images_aug a = tf_images_aug_none();
    a.shift = c->shift, a.hflip = c->hflip, a.randaug_ops = c->randaug_ops, a.randaug_magnitude = c->randaug_magnitude;
    a.randaug_mstd = c->randaug_mstd, a.erase_prob = c->erase_prob, a.erase_mode = c->erase_mode;
    a.repeats = c->repeats, a.mixup_alpha = c->mixup, a.cutmix_alpha = c->cutmix, a.mix_prob = c->mix_prob;
    a.switch_prob = c->switch_prob, a.label_smoothing = c->label_smoothing, a.n_labels = n_labels;
    return tf_images_loader_aug(&v->img.train, &v->img.valid, &a, seed);
}

/* The model (cfg: the task's, its signature), and its EMA (the same initial weights) with ema_decay. */
static int make_models(vit_task *v, const void *cfg, int n_labels, uint64_t seed) {
    const image_model *im = v->im;
    if (!(v->m = im->create(cfg, seed ? seed : 1)) || set_label_names(im, v->m, n_labels, v->rc->label_names)) return -1;
    tf_image_task_set_model(&v->img, im->params(v->m), im->family->config_table, (void *)cfg);
    if (v->rc->ema_decay <= 0) return 0;
    v->img.base.model_is_ema = 1;
    return !(v->ema = im->create(cfg, seed ? seed : 1)) || set_label_names(im, v->ema, n_labels, v->rc->label_names) ? -1 : 0;
}

/* The task over v's config (set by the caller; v holds the sets). */
static tf_task *task_new(vit_task *v, const void *cfg, const char *run_dir, uint64_t seed) {
    tf_task_use_accuracy(&v->img.base);
    int channels = 0, size = 0, n_labels = 0;
    int rc = tf_fields_check(&v->img.base.config, 1) || v->im->check(cfg, &channels, &size, &n_labels);
    rc = rc || tf_task_make_dir(run_dir);
    rc = rc || check_images(channels, size, n_labels, &v->img.train, "training") ||
         tf_task_images_split(&v->img.train, &v->img.valid, v->rc->val_fraction) ||
         check_images(channels, size, n_labels, &v->img.valid, "validation") || make_models(v, cfg, n_labels, seed) ||
         !(v->img.loader = make_loader(v, n_labels, seed));
    if (rc) {
        vt_free(&v->img.base);
        return NULL;
    }
    return &v->img.base;
}

tf_task *tf_vit_task_new(const tf_vit_task_config *c, tf_images *train, tf_images *valid, const char *run_dir,
                         uint64_t seed) {
    vit_task *v = tf_image_task_alloc(sizeof *v, &VIT_TASK, train, valid);
    if (!v) return NULL;
    v->im = &VIT_MODEL, v->vit = *c, v->rc = &v->vit.recipe;
    v->img.base.config = (tf_fields){&tf_vit_task_config_table, &v->vit};
    return task_new(v, &v->vit.model, run_dir, seed);
}

tf_task *tf_swin_task_new(const tf_swin_task_config *c, tf_images *train, tf_images *valid, const char *run_dir,
                          uint64_t seed) {
    vit_task *v = tf_image_task_alloc(sizeof *v, &VIT_TASK, train, valid);
    if (!v) return NULL;
    v->im = &SWIN_MODEL, v->swin = *c, v->rc = &v->swin.recipe;
    v->img.base.config = (tf_fields){&tf_swin_task_config_table, &v->swin};
    return task_new(v, &v->swin.model, run_dir, seed);
}

const tf_vit *tf_vit_task_model(const tf_task *t) {
    const vit_task *v = (const vit_task *)t;
    return v->im == &VIT_MODEL ? v->m : NULL;
}

const tf_swin *tf_swin_task_model(const tf_task *t) {
    const vit_task *v = (const vit_task *)t;
    return v->im == &SWIN_MODEL ? v->m : NULL;
}

int64_t tf_vit_task_images(const tf_task *t, tf_subset subset) { return tf_image_task_images(t, subset); }
