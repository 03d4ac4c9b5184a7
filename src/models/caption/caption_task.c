/* Captioning on scenes with known truth (tformer/caption.h): the shapes or Fashion-MNIST scenes
 * made from a seed (n_train for training, drawn with replacement, and n_valid held out; a
 * fashion scene's caption drawn from its five references), the captioner's loss (cross-entropy
 * + the doubly-stochastic regulariser), validation word accuracy and, after each evaluation,
 * over the held-out scenes captioned greedily: the share matching a reference exactly, corpus
 * BLEU-4 and CIDEr-D against the references, object F1 (the caption read back into items and
 * cells against the scene's), and the attention's precision against where each named item is,
 * with the control of shuffled cells; saved as tformer's folder. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "../../core/core_internal.h"
#include "../../util/util.h"
#include "caption_internal.h"

#define R(m, type, name, def, range, help) TF_FIELD_ROW(tf_caption_task_config, m, type, name, def, range, NULL, help, 0, NULL)
static const tf_field TASK_ROWS[] = {
    R(max_items, TF_FIELD_INT, "scene_items", "2", "[1,9]", "scenes: 1 to this many items an image"),
    R(n_train, TF_FIELD_INT, "scene_train", "4000", "[1,100000000]", "scenes: training images"),
    R(n_valid, TF_FIELD_INT, "scene_valid", "200", "[1,100000000]", "scenes: held-out images"),
    R(scene_seed, TF_FIELD_UINT64, "scene_seed", "1", NULL, "scenes: the seed they are made from"),
    R(brightness, TF_FIELD_BOOL, "scene_brightness", "false", NULL,
      "fashion scenes: each item dark or light, and the captions say which"),
    R(train_refs, TF_FIELD_INT, "scene_refs", "5", "[1,5]",
      "fashion scenes: a training row's caption is one of the first this many of the five references (held-out "
      "scenes are scored against all five)"),
    R(n_export, TF_FIELD_INT, "scene_export", "8", "[0,100000]",
      "held-out scenes written to RUN/scenes/ (PNGs, captions.tsv, COCO's captions.json)"),
    R(fashion_dir, TF_FIELD_STRING, "fashion_dir", "/usr/share/datasets/fashion-mnist", NULL,
      "fashion scenes: the folder of Fashion-MNIST's idx files (the Debian package dataset-fashion-mnist's)"),
    TF_FIELD_SUB(tf_caption_task_config, model, tf_caption_config_table),
};
#undef R
const tf_field_table tf_caption_task_config_table = {"captioning", TASK_ROWS, (int)(sizeof TASK_ROWS / sizeof TASK_ROWS[0])};

TF_FIELDS_DEFAULT_FN(tf_caption_task_config, tf_caption_task_config_default, tf_caption_task_config_table)

typedef struct {
    tf_task base;
    tf_caption_task_config cfg;
    tf_caption *m;
    tf_fashion data; /* fashion scenes' items */
} cap_task;

enum { M_WORDS, M_EXACT, M_BLEU, M_CIDER, M_F1, M_PRECISION, M_SHUFFLED };
enum { MAX_CONTEXT = 128 };

/* A scene of a split (0: training, 1: held out): its pixels, truth and reference ref's ids. */
static int make_scene(const cap_task *t, int split, uint64_t index, int ref, float *px, tf_caption_scene *truth,
                      int32_t *ids, int cap, int *n) {
    const tf_caption_task_config *c = &t->cfg;
    if (c->model.grammar == TF_CAPTION_GRAMMAR_SHAPES)
        return tf_caption_scene_make(c->scene_seed, split ? (uint64_t)c->n_train + index : index, c->max_items, px,
                                     truth, ids, cap, n);
    tf_fashion_scene s;
    if (tf_fashion_scene_make(&t->data, split, c->scene_seed, index, c->max_items, c->brightness, px, &s) ||
        tf_fashion_caption(&s, ref, c->brightness, tf_key(c->scene_seed, index, 26, (uint64_t)split), ids, cap, n))
        return -1;
    *truth = s.s;
    return 0;
}

static int n_refs(const cap_task *t) { return t->cfg.model.grammar == TF_CAPTION_GRAMMAR_FASHION ? TF_FASHION_REFS : 1; }

/* Scene `index` into row r of pixels (B,1,S,S), input_ids and labels (B,T). */
static int fill_row(const cap_task *t, int split, uint64_t index, int ref, int64_t r, tf_tensor *x, tf_tensor *ids,
                    tf_tensor *lab) {
    int64_t T = ids->shape[1], S = t->cfg.model.image_size, V = t->cfg.model.vocab;
    int32_t w[MAX_CONTEXT];
    int n;
    tf_caption_scene s;
    if (make_scene(t, split, index, ref, tf_f32(x) + r * S * S, &s, w, (int)T - 1, &n)) return -1;
    int32_t *in = tf_i32(ids) + r * T, *out = tf_i32(lab) + r * T;
    for (int64_t k = 0; k < T; k++) {
        in[k] = k == 0 ? (int32_t)V - 2 : k <= n ? w[k - 1] : (int32_t)V - 3; /* BOS, the words, padding */
        out[k] = k < n ? w[k] : k == n ? (int32_t)V - 1 : -100;             /* the words, EOS */
    }
    return 0;
}

static int cap_batch(tf_task *t, tf_ctx *ctx, tf_subset subset, uint64_t key, int rows, tf_batch *b) {
    const cap_task *ct = (const cap_task *)t;
    const tf_caption_task_config *c = &ct->cfg;
    int64_t B = rows, T = c->model.context, S = c->model.image_size;
    tf_tensor *x = tf_tensor_new(ctx, TF_DTYPE_F32, 4, (int64_t[]){B, 1, S, S}, 0);  // (B,1,S,S)
    tf_tensor *ids = tf_tensor_new(ctx, TF_DTYPE_I32, 2, (int64_t[]){B, T}, 0);     // (B,T)
    tf_tensor *lab = tf_tensor_new(ctx, TF_DTYPE_I32, 2, (int64_t[]){B, T}, 0);     // (B,T)
    if (!x || !ids || !lab) return -1;
    for (int64_t r = 0; r < B; r++) {
        int train = subset == TF_SUBSET_TRAIN;
        uint64_t index = train ? tf_key(key, (uint64_t)r, 11, 0) % (uint64_t)c->n_train
                               : (key * (uint64_t)rows + (uint64_t)r) % (uint64_t)c->n_valid;
        int k = train && c->train_refs < n_refs(ct) ? c->train_refs : n_refs(ct);
        int ref = (int)(tf_key(key, (uint64_t)r, 12, (uint64_t)train) % (uint64_t)k);
        if (fill_row(ct, !train, index, ref, r, x, ids, lab)) return -1;
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
        m->sum[M_WORDS] += best == y, m->count[M_WORDS] += 1;
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

/* ids as words joined by spaces (malloc'd). */
static char *words(tf_caption_grammar g, const int32_t *ids, int n) {
    size_t len = 1;
    for (int i = 0; i < n; i++) len += strlen(tf_caption_grammar_word(g, ids[i])) + 1;
    char *s = malloc(len);
    if (!s) return tf_set_error("caption: out of memory"), NULL;
    s[0] = 0;
    for (int i = 0; i < n; i++) strcat(strcat(s, i ? " " : ""), tf_caption_grammar_word(g, ids[i]));
    return s;
}

/* Corpus BLEU-4 and CIDEr-D of the greedy captions against the scenes' k references each. */
static int corpus_scores(char **hyp, char **ref, int n, int k, tf_metrics *m) {
    int *count = malloc((size_t)n * sizeof *count);
    const char *const **refs = malloc((size_t)n * sizeof *refs);
    double bleu = 0, cider = 0;
    int rc = count && refs ? 0 : tf_set_error("caption: out of memory");
    for (int i = 0; !rc && i < n; i++) count[i] = k, refs[i] = (const char *const *)&ref[(size_t)i * (size_t)k];
    if (!rc) rc = tf_caption_bleu4((const char *const *)hyp, refs, count, n, &bleu) ||
                  tf_caption_cider_d((const char *const *)hyp, refs, count, n, NULL, &cider);
    if (!rc) m->sum[M_BLEU] += bleu, m->count[M_BLEU] += 1, m->sum[M_CIDER] += cider, m->count[M_CIDER] += 1;
    free(count), free(refs);
    return rc ? -1 : 0;
}

/* A derangement of the 9 cells for held-out scene i (Sattolo's shuffle: one cycle, no cell fixed). */
static void shuffled_cells(uint64_t seed, uint64_t i, int *p) {
    for (int k = 0; k < TF_CAPTION_CELLS; k++) p[k] = k;
    for (int k = TF_CAPTION_CELLS - 1; k > 0; k--) {
        int j = (int)(tf_key(seed, i, 27, (uint64_t)k) % (uint64_t)k), x = p[k];
        p[k] = p[j], p[j] = x;
    }
}

/* Held-out scene i: its references' texts into ref (k of them), whether got is one of them. */
static int scene_refs(const cap_task *c, int i, float *px, tf_caption_scene *s, const int32_t *got, int ng, char **ref,
                      int *exact) {
    int32_t want[MAX_CONTEXT];
    int nw;
    *exact = 0;
    for (int r = 0; r < n_refs(c); r++) {
        if (make_scene(c, 1, (uint64_t)i, r, px, s, want, MAX_CONTEXT, &nw) ||
            !(ref[r] = words(c->cfg.model.grammar, want, nw)))
            return -1;
        *exact |= ng == nw && !memcmp(want, got, (size_t)nw * sizeof *got);
    }
    return 0;
}

/* One held-out caption scored against its scene: exact, object F1's counts, attention precision
 * against the truth and against shuffled cells. */
static void score_one(const cap_task *c, int i, const tf_caption_scene *s, const int32_t *got, int ng, const float *att,
                      int exact, tf_metrics *m) {
    tf_caption_mentions found;
    int tp, pred, truth, shuffle[TF_CAPTION_CELLS];
    tf_caption_parse(c->cfg.model.grammar, got, ng, &found);
    tf_caption_object_counts(&found, s, &tp, &pred, &truth);
    m->sum[M_EXACT] += exact, m->count[M_EXACT] += 1;
    m->sum[M_F1] += 2 * tp, m->count[M_F1] += pred + truth; /* micro F1 = 2 TP / (predicted + true) */
    if (!att) return;
    shuffled_cells(c->cfg.scene_seed, (uint64_t)i, shuffle);
    int g = tf_caption_grid(&c->cfg.model);
    tf_caption_attention_truth(&found, s, att, g, NULL, &m->sum[M_PRECISION], &m->count[M_PRECISION]);
    tf_caption_attention_truth(&found, s, att, g, shuffle, &m->sum[M_SHUFFLED], &m->count[M_SHUFFLED]);
}

/* The held-out scenes captioned greedily and scored (the metrics above). */
static int cap_score(tf_task *t, tf_metrics *m) {
    const cap_task *c = (const cap_task *)t;
    int S = c->cfg.model.image_size, G = tf_caption_grid(&c->cfg.model), k = n_refs(c), n = c->cfg.n_valid;
    int maps = c->base.n_metrics > M_PRECISION, ng, rc = 0, exact;
    float *px = malloc((size_t)(S * S) * sizeof *px), *att = malloc((size_t)(MAX_CONTEXT + 1) * (size_t)(G * G) * sizeof *att);
    int32_t got[MAX_CONTEXT];
    char **hyp = calloc((size_t)n, sizeof *hyp), **ref = calloc((size_t)n * (size_t)k, sizeof *ref);
    tf_caption_scene s;
    tf_generate_opts o = tf_generate_opts_default();
    o.temperature = 0, o.beam = 0, o.eos_id = -1, o.max_tokens = 0;
    if (!hyp || !ref || !px || !att) rc = tf_set_error("caption: out of memory");
    for (int i = 0; !rc && i < n; i++) {
        if (make_scene(c, 1, (uint64_t)i, 0, px, &s, got, MAX_CONTEXT, &ng) ||
            tf_caption_generate(c->m, px, &o, got, MAX_CONTEXT, &ng, maps ? att : NULL) ||
            !(hyp[i] = words(c->cfg.model.grammar, got, ng)) ||
            scene_refs(c, i, px, &s, got, ng, ref + (size_t)i * (size_t)k, &exact)) {
            rc = -1;
            break;
        }
        score_one(c, i, &s, got, ng, maps ? att : NULL, exact, m);
    }
    if (!rc) rc = corpus_scores(hyp, ref, n, k, m);
    for (int i = 0; i < n && hyp && ref; i++) {
        free(hyp[i]);
        for (int r = 0; r < k; r++) free(ref[(size_t)i * (size_t)k + (size_t)r]);
    }
    free(hyp), free(ref), free(px), free(att);
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
    tf_fashion_free(&c->data);
    free(c);
}

static const tf_task_vt CAP_TASK = {
    .batch = cap_batch, .loss = cap_loss, .params = cap_params, .signature = cap_signature, .save = cap_save,
    .tokens = cap_tokens, .free = cap_free, .score = cap_score,
};

/* Held-out scene i as dir/NN.png, its references into captions.tsv (one a line) and coco (COCO's
 * captions layout: an image entry and an annotation per reference). */
static int export_scene(const cap_task *t, int i, const char *dir, float *px, FILE *tsv, cJSON *images,
                        cJSON *annotations) {
    int S = t->cfg.model.image_size, n;
    int32_t w[MAX_CONTEXT];
    char name[32], path[4200];
    tf_caption_scene s;
    tf_images im = {1, 1, S, S, px, NULL, 0};
    snprintf(name, sizeof name, "%02d.png", i);
    if (tf_path_join(path, sizeof path, dir, name)) return -1;
    cJSON *image = cJSON_CreateObject();
    if (!image || !cJSON_AddItemToArray(images, image) || !cJSON_AddNumberToObject(image, "id", i) ||
        !cJSON_AddStringToObject(image, "file_name", name) || !cJSON_AddNumberToObject(image, "width", S) ||
        !cJSON_AddNumberToObject(image, "height", S))
        return tf_set_error("caption: out of memory");
    for (int r = 0; r < n_refs(t); r++) {
        if (make_scene(t, 1, (uint64_t)i, r, px, &s, w, MAX_CONTEXT, &n)) return -1;
        char *text = words(t->cfg.model.grammar, w, n);
        cJSON *a = text ? cJSON_CreateObject() : NULL;
        int bad = !a || !cJSON_AddItemToArray(annotations, a) ||
                  !cJSON_AddNumberToObject(a, "id", cJSON_GetArraySize(annotations)) ||
                  !cJSON_AddNumberToObject(a, "image_id", i) || !cJSON_AddStringToObject(a, "caption", text);
        if (!bad) fprintf(tsv, "%s\t%s\n", name, text);
        free(text);
        if (bad) return tf_set_error("caption: out of memory");
    }
    return tf_images_write_png(&im, 0, path);
}

/* n_export held-out scenes as PNGs (run_dir/scenes/NN.png), their references in captions.tsv
 * (FILE<TAB>caption, the first reference first) and captions.json (COCO's captions layout). */
static int write_samples(const cap_task *t, const char *run_dir) {
    char dir[4096], path[4200];
    if (tf_path_join(dir, sizeof dir, run_dir, "scenes")) return -1;
    if (mkdir(run_dir, 0777) && errno != EEXIST) return tf_set_error("%s: %s", run_dir, strerror(errno));
    if (mkdir(dir, 0777) && errno != EEXIST) return tf_set_error("%s: %s", dir, strerror(errno));
    if (tf_path_join(path, sizeof path, dir, "captions.tsv")) return -1;
    tf_atomic_file f;
    if (tf_atomic_open(&f, path)) return -1;
    int S = t->cfg.model.image_size, rc = 0;
    float *px = malloc((size_t)(S * S) * sizeof *px);
    cJSON *root = cJSON_CreateObject(), *images = cJSON_AddArrayToObject(root, "images");
    cJSON *annotations = cJSON_AddArrayToObject(root, "annotations");
    if (!px || !root || !images || !annotations) rc = tf_set_error("caption: out of memory");
    for (int i = 0; i < t->cfg.n_export && i < t->cfg.n_valid && !rc; i++)
        rc = export_scene(t, i, dir, px, f.f, images, annotations);
    rc = tf_atomic_commit(&f, !rc) || rc;
    if (!rc) rc = tf_path_join(path, sizeof path, dir, "captions.json") || tf_json_write(path, root);
    cJSON_Delete(root), free(px);
    return rc ? -1 : 0;
}

/* The scenes' sizes: the shapes' 24x24 and 16 words, or the fashion scenes' 96x96 and 31 words. */
static int check_task(const tf_caption_task_config *c) {
    int fashion = c->model.grammar == TF_CAPTION_GRAMMAR_FASHION;
    int size = fashion ? TF_FASHION_SIZE : TF_CAPTION_SCENE_SIZE, vocab = tf_caption_grammar_vocab(c->model.grammar);
    int words = fashion ? 8 * c->max_items : 5 * c->max_items; /* the longest caption and EOS */
    if (c->model.vocab != vocab || c->model.image_size != size || c->model.channels != 1)
        return tf_set_error("caption: the %s scenes are %dx%d grey images with %d words: vocab %d, image_size %d, "
                            "channels %d", fashion ? "fashion" : "shapes", size, size, vocab, c->model.vocab,
                            c->model.image_size, c->model.channels);
    if (c->model.context < words || c->model.context > MAX_CONTEXT)
        return tf_set_error("caption: context %d: at most %d, and room for captions of %d items (%d words and EOS)",
                            c->model.context, MAX_CONTEXT, c->max_items, words - 1);
    if (c->brightness && !fashion) return tf_set_error("caption: scene_brightness is the fashion scenes'");
    return 0;
}

tf_task *tf_caption_task_new(const tf_caption_task_config *cfg, const char *run_dir, uint64_t seed) {
    if (check_task(cfg)) return NULL;
    cap_task *t = calloc(1, sizeof *t);
    if (!t) return tf_set_error("caption: out of memory"), NULL;
    t->cfg = *cfg;
    const tf_caption_config *mc = &t->cfg.model;
    int g = tf_caption_grid(mc), maps = mc->attention && g > 0 && g % 3 == 0; /* the grid covers the scenes' cells */
    t->base = (tf_task){.vt = &CAP_TASK, .config = {&tf_caption_task_config_table, &t->cfg}, .n_metrics = 5 + 2 * maps,
                        .metric_names = {"word_accuracy", "exact", "bleu4", "cider_d", "object_f1",
                                         "attention_precision", "attention_shuffled"},
                        .select_metric = mc->grammar == TF_CAPTION_GRAMMAR_FASHION ? M_F1 + 1 : M_EXACT + 1};
    if ((mc->grammar == TF_CAPTION_GRAMMAR_FASHION && tf_fashion_load(t->cfg.fashion_dir, &t->data)) ||
        !(t->m = tf_caption_new(mc, seed ? seed : 1)) || (run_dir && write_samples(t, run_dir))) {
        cap_free(&t->base);
        return NULL;
    }
    return &t->base;
}

const tf_caption *tf_caption_task_model(const tf_task *t) {
    return t && t->vt == &CAP_TASK ? ((const cap_task *)t)->m : NULL;
}
