/* Captioning on the scene grammar (tformer/caption.h): scenes made from a seed (n_train for
 * training, drawn with replacement, and n_valid held out), the captioner's loss (cross-entropy
 * + the doubly-stochastic regulariser), validation word accuracy and, after each evaluation,
 * the share of held-out scenes captioned exactly (greedy), their corpus BLEU-4 and CIDEr-D against
 * the scenes' captions, and the attention's precision; saved as tformer's folder. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "../../core/core_internal.h"
#include "tformer/caption.h"

#define R(m, type, name, def, range, help) TF_FIELD_ROW(tf_caption_task_config, m, type, name, def, range, NULL, help, 0, NULL)
static const tf_field TASK_ROWS[] = {
    R(max_items, TF_FIELD_INT, "scene_items", "2", "[1,9]", "scenes: 1 to this many shapes an image"),
    R(n_train, TF_FIELD_INT, "scene_train", "4000", "[1,100000000]", "scenes: training images"),
    R(n_valid, TF_FIELD_INT, "scene_valid", "200", "[1,100000000]", "scenes: held-out images"),
    R(scene_seed, TF_FIELD_UINT64, "scene_seed", "1", NULL, "scenes: the seed they are made from"),
    TF_FIELD_SUB(tf_caption_task_config, model, tf_caption_config_table),
};
#undef R
const tf_field_table tf_caption_task_config_table = {"captioning", TASK_ROWS, (int)(sizeof TASK_ROWS / sizeof TASK_ROWS[0])};

TF_FIELDS_DEFAULT_FN(tf_caption_task_config, tf_caption_task_config_default, tf_caption_task_config_table)

typedef struct {
    tf_task base;
    tf_caption_task_config cfg;
    tf_caption *m;
} cap_task;

/* Scene `index` into row r of pixels (B,1,S,S), input_ids and labels (B,T). */
static int fill_row(const tf_caption_task_config *c, uint64_t index, int64_t r, tf_tensor *x, tf_tensor *ids,
                    tf_tensor *lab) {
    int64_t T = ids->shape[1], S = TF_CAPTION_SCENE_SIZE;
    int32_t w[64], n;
    tf_caption_scene s;
    if (tf_caption_scene_make(c->scene_seed, index, c->max_items, tf_f32(x) + r * S * S, &s, w, (int)T - 1, &n))
        return -1;
    int32_t *in = tf_i32(ids) + r * T, *out = tf_i32(lab) + r * T;
    for (int64_t t = 0; t < T; t++) {
        in[t] = t == 0 ? TF_CAPTION_BOS : t <= n ? w[t - 1] : TF_CAPTION_PAD;
        out[t] = t < n ? w[t] : t == n ? TF_CAPTION_EOS : -100;
    }
    return 0;
}

static int cap_batch(tf_task *t, tf_ctx *ctx, tf_subset subset, uint64_t key, int rows, tf_batch *b) {
    const tf_caption_task_config *c = &((cap_task *)t)->cfg;
    int64_t B = rows, T = c->model.context, S = TF_CAPTION_SCENE_SIZE;
    tf_tensor *x = tf_tensor_new(ctx, TF_DTYPE_F32, 4, (int64_t[]){B, 1, S, S}, 0);  // (B,1,S,S)
    tf_tensor *ids = tf_tensor_new(ctx, TF_DTYPE_I32, 2, (int64_t[]){B, T}, 0);     // (B,T)
    tf_tensor *lab = tf_tensor_new(ctx, TF_DTYPE_I32, 2, (int64_t[]){B, T}, 0);     // (B,T)
    if (!x || !ids || !lab) return -1;
    for (int64_t r = 0; r < B; r++) {
        uint64_t index = subset == TF_SUBSET_TRAIN
                             ? tf_key(key, (uint64_t)r, 11, 0) % (uint64_t)c->n_train
                             : (uint64_t)c->n_train + (key * (uint64_t)rows + (uint64_t)r) % (uint64_t)c->n_valid;
        if (fill_row(c, index, r, x, ids, lab)) return -1;
    }
    return tf_batch_set(b, "pixel_values", x) || tf_batch_set(b, "input_ids", ids) || tf_batch_set(b, "labels", lab);
}

/* Word accuracy: the argmax at each labelled position into metric 0. */
static void count_words(const tf_tensor *logits, const tf_tensor *labels, tf_metrics *m) {
    int64_t V = logits->shape[2];
    for (int64_t i = 0; i < tf_numel(labels); i++) {
        int32_t y = tf_i32(labels)[i];
        if (y == -100) continue;
        const float *z = tf_f32(logits) + i * V;
        int64_t best = 0;
        for (int64_t v = 1; v < V; v++) best = z[v] > z[best] ? v : best;
        m->sum[0] += best == y, m->count[0] += 1;
    }
}

static tf_tensor *cap_loss(tf_task *t, tf_ctx *ctx, const tf_batch *b, tf_metrics *m) {
    tf_caption_inputs in = {.pixel_values = tf_batch_get(b, "pixel_values"), .input_ids = tf_batch_get(b, "input_ids"),
                            .labels = tf_batch_get(b, "labels")};
    tf_caption_outputs out;
    if (tf_caption_run(ctx, ((cap_task *)t)->m, &in, &out)) return NULL;
    if (m) count_words(out.logits, in.labels, m);
    return out.loss;
}

/* The cell (0..8) the words after a shape word name ("top left" ... "bottom right"; none: the centre). */
static int named_cell(const int32_t *w, int n) {
    int row = 1, col = 1;
    for (int k = 0; k < n && w[k] >= 8 && w[k] <= 12; k++) { /* top bottom left right centre */
        if (w[k] == 8 || w[k] == 9) row = w[k] == 8 ? 0 : 2;
        if (w[k] == 10 || w[k] == 11) col = w[k] == 10 ? 0 : 2;
    }
    return row * 3 + col;
}

/* Attention precision: for each shape word, the share of its step's attention on the cell the
 * caption names for it (metric 4; the grid must be the scenes' 3 x 3). */
static void count_precision(const int32_t *w, int n, const float *att, tf_metrics *m) {
    for (int t = 0; t < n; t++)
        if (w[t] >= 2 && w[t] <= 7) m->sum[4] += att[t * 9 + named_cell(w + t + 1, n - t - 1)], m->count[4] += 1;
}

/* ids as words joined by spaces (malloc'd). */
static char *words(const int32_t *ids, int n) {
    size_t len = 1;
    for (int i = 0; i < n; i++) len += strlen(tf_caption_word(ids[i])) + 1;
    char *s = malloc(len);
    if (!s) return tf_set_error("caption: out of memory"), NULL;
    s[0] = 0;
    for (int i = 0; i < n; i++) strcat(strcat(s, i ? " " : ""), tf_caption_word(ids[i]));
    return s;
}

/* Corpus BLEU-4 and CIDEr-D of the greedy captions against the scenes' into metrics 2 and 3. */
static int corpus_scores(char **hyp, char **ref, int n, tf_metrics *m) {
    int *one = malloc((size_t)n * sizeof *one);
    const char *const **refs = malloc((size_t)n * sizeof *refs);
    double bleu = 0, cider = 0;
    int rc = one && refs ? 0 : tf_set_error("caption: out of memory");
    for (int i = 0; !rc && i < n; i++) one[i] = 1, refs[i] = (const char *const *)&ref[i];
    if (!rc) rc = tf_caption_bleu4((const char *const *)hyp, refs, one, n, &bleu) ||
                  tf_caption_cider_d((const char *const *)hyp, refs, one, n, NULL, &cider);
    if (!rc) m->sum[2] += bleu, m->count[2] += 1, m->sum[3] += cider, m->count[3] += 1;
    free(one), free(refs);
    return rc ? -1 : 0;
}

/* The held-out scenes captioned greedily: the share exactly right into metric 1, BLEU-4 and
 * CIDEr-D into 2 and 3, and with attention, its precision into metric 4. */
static int cap_score(tf_task *t, tf_metrics *m) {
    const cap_task *c = (const cap_task *)t;
    float px[TF_CAPTION_SCENE_SIZE * TF_CAPTION_SCENE_SIZE], att[65 * 9];
    int32_t want[64], got[64];
    int nw, ng, maps = c->base.n_metrics > 4, n = c->cfg.n_valid, rc = 0;
    char **hyp = calloc((size_t)n, sizeof *hyp), **ref = calloc((size_t)n, sizeof *ref);
    tf_caption_scene s;
    tf_generate_opts o = tf_generate_opts_default();
    o.temperature = 0, o.beam = 0, o.eos_id = -1, o.max_tokens = 0;
    if (!hyp || !ref) rc = tf_set_error("caption: out of memory");
    for (int i = 0; !rc && i < n; i++) {
        uint64_t index = (uint64_t)c->cfg.n_train + (uint64_t)i;
        if (tf_caption_scene_make(c->cfg.scene_seed, index, c->cfg.max_items, px, &s, want, 64, &nw) ||
            tf_caption_generate(c->m, px, &o, got, 64, &ng, maps ? att : NULL) || !(hyp[i] = words(got, ng)) ||
            !(ref[i] = words(want, nw))) {
            rc = -1;
            break;
        }
        m->sum[1] += ng == nw && !memcmp(want, got, (size_t)nw * sizeof *got), m->count[1] += 1;
        if (maps) count_precision(got, ng, att, m);
    }
    if (!rc) rc = corpus_scores(hyp, ref, n, m);
    for (int i = 0; i < n && hyp && ref; i++) free(hyp[i]), free(ref[i]);
    free(hyp), free(ref);
    return rc;
}

static tf_params *cap_params(tf_task *t) { return ((cap_task *)t)->m->params; }

static int cap_signature(tf_task *t, char *out, size_t n) {
    tf_fields f = {&tf_caption_config_table, &((cap_task *)t)->m->cfg};
    return tf_fields_signature(&f, 1, out, n);
}

static int cap_save(tf_task *t, const char *dir) { return tf_caption_save(((cap_task *)t)->m, dir); }
static int64_t cap_tokens(tf_task *t, int rows) { return (int64_t)rows * ((cap_task *)t)->cfg.model.context; }

static void cap_free(tf_task *t) {
    cap_task *c = (cap_task *)t;
    tf_caption_free(c->m);
    free(c);
}

static const tf_task_vt CAP_TASK = {
    .batch = cap_batch, .loss = cap_loss, .params = cap_params, .signature = cap_signature, .save = cap_save,
    .tokens = cap_tokens, .free = cap_free, .score = cap_score,
};

/* Eight held-out scenes as PNGs (run_dir/scenes/NN.png) and their captions (captions.tsv). */
static int write_samples(const tf_caption_task_config *c, const char *run_dir) {
    char dir[4096], path[4200];
    if (snprintf(dir, sizeof dir, "%s/scenes", run_dir) >= (int)sizeof dir) return tf_set_error("%s: path too long", run_dir);
    if (mkdir(run_dir, 0777) && errno != EEXIST) return tf_set_error("%s: %s", run_dir, strerror(errno));
    if (mkdir(dir, 0777) && errno != EEXIST) return tf_set_error("%s: %s", dir, strerror(errno));
    snprintf(path, sizeof path, "%s/captions.tsv", dir);
    FILE *f = fopen(path, "w");
    if (!f) return tf_set_error("%s: %s", path, strerror(errno));
    float px[TF_CAPTION_SCENE_SIZE * TF_CAPTION_SCENE_SIZE];
    tf_images im = {1, 1, TF_CAPTION_SCENE_SIZE, TF_CAPTION_SCENE_SIZE, px, NULL, 0};
    int rc = 0;
    for (int i = 0; i < 8 && !rc; i++) {
        int32_t w[64];
        int n;
        tf_caption_scene s;
        rc = tf_caption_scene_make(c->scene_seed, (uint64_t)c->n_train + (uint64_t)i, c->max_items, px, &s, w, 64, &n);
        snprintf(path, sizeof path, "%s/%02d.png", dir, i);
        if (!rc) rc = tf_images_write_png(&im, 0, path);
        fprintf(f, "%02d.png\t", i);
        for (int k = 0; k < n; k++) fprintf(f, "%s%s", k ? " " : "", tf_caption_word(w[k]));
        fputc('\n', f);
    }
    if (fclose(f) && !rc) rc = tf_set_error("%s: %s", path, strerror(errno));
    return rc;
}

tf_task *tf_caption_task_new(const tf_caption_task_config *cfg, const char *run_dir, uint64_t seed) {
    tf_caption_task_config c = *cfg;
    if (c.model.vocab != TF_CAPTION_VOCAB || c.model.image_size != TF_CAPTION_SCENE_SIZE || c.model.channels != 1)
        return tf_set_error("caption: the scenes are %dx%d grey images with %d words: vocab %d, image_size %d, "
                            "channels %d", TF_CAPTION_SCENE_SIZE, TF_CAPTION_SCENE_SIZE, TF_CAPTION_VOCAB,
                            c.model.vocab, c.model.image_size, c.model.channels), NULL;
    if (c.model.context < 5 * c.max_items || c.model.context > 64)
        return tf_set_error("caption: context %d: at most 64, and room for captions of %d items (%d words and EOS)",
                            c.model.context, c.max_items, 5 * c.max_items - 1), NULL;
    cap_task *t = calloc(1, sizeof *t);
    if (!t) return tf_set_error("caption: out of memory"), NULL;
    t->cfg = c;
    int maps = c.model.attention && tf_caption_grid(&c.model) == 3; /* the grid's cells are the scenes' */
    t->base = (tf_task){.vt = &CAP_TASK, .config = {&tf_caption_task_config_table, &t->cfg}, .n_metrics = 4 + maps,
                        .metric_names = {"word_accuracy", "exact", "bleu4", "cider_d", "attention_precision"},
                        .select_metric = 2};
    if (!(t->m = tf_caption_new(&c.model, seed ? seed : 1)) || (run_dir && write_samples(&c, run_dir))) {
        cap_free(&t->base);
        return NULL;
    }
    return &t->base;
}

const tf_caption *tf_caption_task_model(const tf_task *t) {
    return t && t->vt == &CAP_TASK ? ((const cap_task *)t)->m : NULL;
}
