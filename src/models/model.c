/* The model handle (tformer/model.h): one door to every folder tformer
 * reads. config.json names the family (architectures[0] through the
 * families' hf-run tables, else model_type through their rows); the family's
 * row loads the folder and says what the model can do. The handle holds the
 * loaded model read-only: every call makes its own context. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "../util/util.h"
#include "hf_run.h"
#include "model_impl.h"

/* Every model type the registry reads, for messages. */
static const char *type_list(char *buf, size_t n) {
    size_t k = 0;
    buf[0] = 0;
    const tf_family *const *f = tf_families();
    for (int i = 0; f[i]; i++)
        for (const char *const *t = f[i]->model_types; t && *t && k < n; t++)
            k += (size_t)snprintf(buf + k, n - k, "%s%s", k ? ", " : "", *t);
    return buf;
}

/* The family of dir/config.json (and its architecture, when hf-run reads it). */
static int find_family(tf_model *m) {
    char path[4096], list[1024];
    struct stat st;
    if (tf_path_join(path, sizeof path, m->dir, "config.json")) return -1;
    if (stat(path, &st))
        return tf_set_error("%s: %s (tformer reads a Hugging Face folder or a tformer run folder: config.json and "
                            "model.safetensors)", path, strerror(errno));
    cJSON *root = tf_json_read(path);
    if (!root) return -1;
    const cJSON *mt = cJSON_GetObjectItemCaseSensitive(root, "model_type");
    const cJSON *a = cJSON_GetObjectItemCaseSensitive(root, "architectures");
    const cJSON *first = cJSON_IsArray(a) ? cJSON_GetArrayItem(a, 0) : NULL;
    if (cJSON_IsString(mt)) snprintf(m->type, sizeof m->type, "%s", mt->valuestring);
    const tf_family *by_arch = NULL;
    if (cJSON_IsString(first)) {
        const tf_family *const *f = tf_families();
        for (int i = 0; f[i] && !m->arch; i++)
            for (const hf_arch *r = f[i]->archs; r && r->name && !m->arch; r++)
                if (!strcmp(r->name, first->valuestring)) m->arch = r, by_arch = f[i];
    }
    m->f = by_arch ? by_arch : tf_family_of_type(m->type);
    int rc = 0;
    if (!m->f && cJSON_IsString(first))
        rc = tf_set_error("%s: architecture \"%s\" (model_type \"%s\") is not one tformer reads (model types: %s)", path,
                          first->valuestring, m->type, type_list(list, sizeof list));
    else if (!m->f)
        rc = tf_set_error("%s: model_type %s%s%s is not one tformer reads (supported: %s)", path, *m->type ? "\"" : "",
                          *m->type ? m->type : "missing", *m->type ? "\"" : "", type_list(list, sizeof list));
    cJSON_Delete(root);
    return rc;
}

/* m->dir naming one form of a folder's weights (DIR/model.safetensors, DIR/model.safetensors.index.json) rather
 * than the folder: that form is read (tf_st_pick, where the folder holds both) and m->dir becomes the folder. */
static int weights_named(tf_model *m) {
    struct stat st;
    char *base = strrchr(m->dir, '/');
    base = base ? base + 1 : m->dir;
    if ((strcmp(base, "model.safetensors") && strcmp(base, "model.safetensors.index.json")) || stat(m->dir, &st) ||
        !S_ISREG(st.st_mode))
        return 0;
    if (tf_st_pick(m->dir)) return -1;
    if (base == m->dir) strcpy(m->dir, ".");
    else base[base - 1 == m->dir ? 0 : -1] = 0; /* "/model.safetensors": the root */
    return 0;
}

/* The capabilities that read text through the folder's tokenizer. */
#define TEXT_CAPS                                                                                        \
    (TF_CAP_GENERATE | TF_CAP_EMBED | TF_CAP_FILL_MASK | TF_CAP_CLASSIFY_TEXT | TF_CAP_TAG | TF_CAP_ANSWER)

tf_model *tf_model_load(const char *dir, const tf_model_opts *opts) {
    if (!dir) return tf_set_error("tf_model_load: no folder"), NULL;
    if (opts && opts->threads > 0) tf_set_threads(opts->threads);
    tf_model *m = calloc(1, sizeof *m);
    if (!m || !(m->dir = strdup(dir))) return free(m), tf_set_error("out of memory"), NULL;
    /* "run/" is "run": the paths made from it (run/config.json, its tokenizer's) have one slash */
    for (size_t n = strlen(m->dir); n > 1 && m->dir[n - 1] == '/'; n--) m->dir[n - 1] = 0;
    if (weights_named(m)) return tf_model_free(m), NULL;
    dir = m->dir;
    if (find_family(m)) return tf_model_free(m), NULL;
    if (opts && opts->require && !(m->f->caps & opts->require)) { /* refused by its config, nothing loaded */
        char want[256], list[256], path[4200];
        tf_path_join(path, sizeof path, dir, "config.json");
        tf_caps_list(opts->require, want, sizeof want), tf_caps_list(m->f->caps, list, sizeof list);
        tf_set_error("%s: model_type \"%s\" (%s) cannot %s; it can: %s", path, m->type, m->f->name, want,
                     *list ? list : "nothing");
        return tf_model_free(m), NULL;
    }
    if (!m->f->load)
        return tf_set_error("%s: a %s folder: tformer runs it with %s", dir, m->f->name, m->f->verbs), tf_model_free(m),
               NULL;
    if (!(m->impl = m->f->load(dir, m->arch ? m->arch->name : NULL))) return tf_model_free(m), NULL;
    m->caps = m->f->caps & (m->f->model_caps ? m->f->model_caps(m->impl) : ~0u);
    if (!m->arch || !m->f->run) m->caps &= ~(unsigned)TF_CAP_RUN;
    if (opts && opts->tokenizer && *opts->tokenizer) { /* the caller's: one that cannot be read is an error */
        if (!(m->tok = tf_tokenizer_load(opts->tokenizer))) return tf_model_free(m), NULL;
    } else if (m->caps & TEXT_CAPS && !(m->tok = tf_tokenizer_load(dir))) {
        m->caps &= ~(unsigned)TEXT_CAPS; /* none in the folder */
    }
    if (opts && opts->precision != TF_PRECISION_F32 && tf_model_set_precision(m, opts->precision))
        return tf_model_free(m), NULL;
    return m;
}

int tf_model_set_precision(tf_model *m, tf_precision precision) {
    /* the handle owns its model: its parameters are the handle's to change */
    tf_params *ps = m->f->params ? (tf_params *)m->f->params(m->impl) : NULL;
    if (ps) return tf_params_set_precision(ps, precision);
    if (precision == TF_PRECISION_F32) return 0;
    return tf_set_error("%s: a %s model runs in f32 only (--precision %s)", m->dir, m->f->name,
                        tf_precision_name(precision) ? tf_precision_name(precision) : "?");
}

tf_precision tf_model_precision(const tf_model *m) {
    return m->f->params ? tf_params_precision(m->f->params(m->impl)) : TF_PRECISION_F32;
}

void tf_model_free(tf_model *m) {
    if (!m) return;
    if (m->impl) m->f->free(m->impl);
    tf_tokenizer_free(m->tok);
    if (m->tgt_tok != m->src_tok) tf_tokenizer_free(m->tgt_tok);
    tf_tokenizer_free(m->src_tok);
    free(m->dir);
    free(m);
}

const tf_family *tf_model_family(const tf_model *m) { return m->f; }
const char *tf_model_type(const tf_model *m) { return m->type; }
const char *tf_model_architecture(const tf_model *m) { return m->arch ? m->arch->name : NULL; }
const char *tf_model_dir(const tf_model *m) { return m->dir; }
unsigned tf_model_caps(const tf_model *m) { return m->caps; }
const void *tf_model_impl(const tf_model *m) { return m->impl; }

int tf_model_save(const tf_model *m, const char *dir) {
    if (!m->f->save) return tf_set_error("%s: tformer reads %s folders but does not write them", m->dir, m->f->name);
    return m->f->save(m->impl, dir);
}

int tf_model_check_finite(const tf_model *m) {
    const tf_params *ps = m->f->params ? m->f->params(m->impl) : NULL;
    return ps ? tf_params_check_finite(ps, NULL) : 0;
}

int tf_model_require(const tf_model *m, unsigned cap) {
    if (m->caps & cap) return 0;
    char list[256];
    tf_caps_list(m->caps, list, sizeof list);
    const char *why = m->f->caps & cap && cap & TEXT_CAPS && !m->tok ? " (the folder holds no tokenizer)"
                      : m->f->caps & cap                             ? " (not with this folder's head)"
                                                                     : "";
    return tf_set_error("%s: model %s (%s) cannot %s%s; it can: %s", m->dir, m->arch ? m->arch->name : m->type,
                        m->f->name, tf_cap_name(cap), why, *list ? list : "nothing");
}

/* ---------------------------------------------------------------- capabilities */

int tf_model_run_file(const tf_model *m, const char *input_path, const char *output_path, FILE *log) {
    if (tf_model_require(m, TF_CAP_RUN)) return -1;
    return hf_run_file(m->f, m->arch, m->impl, m->dir, input_path, output_path, log);
}

int tf_model_embed_dim(const tf_model *m) { return m->caps & TF_CAP_EMBED ? m->f->embed_dim(m->impl) : 0; }

int tf_model_context(const tf_model *m) { return m->f->context ? m->f->context(m->impl) : 0; }

int tf_model_embed_tokens(const tf_model *m, const char *text, size_t len, const tf_embed_opts *o, float **out,
                          int *n_tokens) {
    *out = NULL, *n_tokens = 0;
    if (tf_model_require(m, TF_CAP_EMBED)) return -1;
    if (!text && len) return tf_set_error("embed: no text");
    if (!m->f->embed_tokens) return tf_set_error("%s: a %s model gives no token vectors", m->dir, m->f->name);
    tf_embed_opts own;
    if (!o && tf_embed_opts_load(m->dir, &own)) return -1;
    return m->f->embed_tokens(m->impl, m->tok, text ? text : "", len, o ? o : &own, out, n_tokens);
}

int tf_model_embed(const tf_model *m, const char *const *texts, int n, const tf_embed_opts *o, float **out) {
    *out = NULL;
    if (tf_model_require(m, TF_CAP_EMBED)) return -1;
    if (n < 0) return tf_set_error("embed: %d texts", n);
    tf_embed_opts own;
    if (!o && tf_embed_opts_load(m->dir, &own)) return -1;
    size_t d = (size_t)m->f->embed_dim(m->impl), rows = n > 0 ? (size_t)n : 1;
    if (rows > SIZE_MAX / sizeof(float) / d) return tf_set_error("embed: %d texts of %zu floats is too large", n, d);
    float *e = malloc(rows * d * sizeof *e);
    if (!e) return tf_set_error("embed: out of memory");
    if (m->f->embed(m->impl, m->tok, texts, n, o ? o : &own, e)) return free(e), -1;
    *out = e;
    return 0;
}

int tf_model_classify_images(const tf_model *m, const float *pixels, int64_t n, int batch, int hflip,
                             const int32_t *labels, int32_t *pred, float *prob, double *loss, int64_t *correct) {
    if (tf_model_require(m, TF_CAP_CLASSIFY_IMAGE)) return -1;
    return m->f->classify_images(m->impl, pixels, n, batch, hflip, labels, pred, prob, loss, correct);
}

void tf_model_image_shape(const tf_model *m, int *channels, int *size, int *n_labels) {
    *channels = *size = *n_labels = 0;
    if (m->f->image_shape) m->f->image_shape(m->impl, channels, size, n_labels);
}

int tf_model_caption(const tf_model *m, const float *pixels, const tf_generate_opts *o, tf_caption_result *r) {
    memset(r, 0, sizeof *r);
    if (tf_model_require(m, TF_CAP_CAPTION)) return -1;
    if (!pixels) return tf_set_error("%s: caption: no image", m->dir);
    tf_generate_opts greedy = tf_generate_opts_default();
    greedy.temperature = 0, greedy.eos_id = -1, greedy.max_tokens = 0;
    if (o && o->beam < 0) return tf_set_error("caption: beam %d: 1 or more (0: greedy)", o->beam);
    if (m->f->caption(m->impl, pixels, o ? o : &greedy, r)) return tf_caption_result_free(r), -1;
    return 0;
}

void tf_caption_result_free(tf_caption_result *r) {
    if (!r) return;
    for (int i = 0; r->words && i < r->n_words; i++) free(r->words[i]);
    free(r->words), free(r->text), free(r->attention);
    memset(r, 0, sizeof *r);
}

int tf_model_image_logits(const tf_model *m, const float *pixels, float *logits, float *maps) {
    if (tf_model_require(m, TF_CAP_CLASSIFY_IMAGE)) return -1;
    if (maps && tf_model_attention_grid(m, &(int){0}, &(int){0}, &(int){0})) return -1;
    return m->f->image_logits(m->impl, pixels, logits, maps);
}

int tf_model_attention_grid(const tf_model *m, int *g, int *heads, int *patch) {
    *g = *heads = *patch = 0;
    if (!m->f->attention_grid)
        return tf_set_error("%s: the attention rollout follows a class token; a %s model has none", m->dir,
                            m->f->name);
    m->f->attention_grid(m->impl, g, heads, patch);
    return 0;
}

int tf_model_translation(tf_model *m, tf_translation *t) {
    if (tf_model_require(m, TF_CAP_TRANSLATE)) return -1;
    return m->f->translation(m->impl, t);
}

int tf_model_completion_shape(const tf_model *m, int *channels, int *height, int *width) {
    *channels = *height = *width = 0;
    if (tf_model_require(m, TF_CAP_COMPLETE_IMAGE)) return -1;
    return m->f->completion_shape(m->impl, m->dir, channels, height, width);
}

int tf_model_complete_image(const tf_model *m, const float *pixels, int keep_rows, const tf_generate_opts *o,
                            float *out) {
    if (tf_model_require(m, TF_CAP_COMPLETE_IMAGE)) return -1;
    if (!pixels || !out) return tf_set_error("%s: complete-image: no image", m->dir);
    tf_generate_opts sampled = tf_generate_opts_default();
    return m->f->complete_image(m->impl, m->dir, pixels, keep_rows, o ? o : &sampled, out);
}

const char *tf_model_label(const tf_model *m, int i, char *buf, size_t n) {
    if (m->f->label) return m->f->label(m->impl, i, buf, n);
    snprintf(buf, n, "LABEL_%d", i);
    return buf;
}

tf_tokenizer *tf_model_tokenizer(const tf_model *m) { return m->tok; }

/* ---------------------------------------------------------------- fill-mask */

void tf_fill_mask_result_free(tf_fill_mask_result *r) {
    free(r->positions), free(r->ids), free(r->probs);
    memset(r, 0, sizeof *r);
}

/* Softmax of row (V) into p (double, as the pipeline's float64 ranking would); the k likeliest into
 * ids / probs, the lower id first among equals. p is consumed. */
static void top_k(const float *row, int V, int k, double *p, int32_t *ids, double *probs) {
    double mx = -INFINITY, sum = 0;
    for (int i = 0; i < V; i++) mx = fmax(mx, row[i]);
    for (int i = 0; i < V; i++) sum += p[i] = exp((double)row[i] - mx);
    for (int j = 0; j < k; j++) {
        int best = 0;
        for (int i = 1; i < V; i++) best = p[i] > p[best] ? i : best;
        ids[j] = best, probs[j] = p[best] / sum;
        p[best] = -1; /* taken */
    }
}

/* The mask positions of ids into r (allocated for every mask found). */
static int find_masks(const tf_ids *ids, int32_t mask, int k, tf_fill_mask_result *r) {
    for (size_t t = 0; t < ids->n; t++) r->n += ids->v[t] == mask;
    if (!r->n) return 0; /* the caller names the token */
    size_t cells = (size_t)r->n * (size_t)k;
    r->k = k;
    r->positions = malloc((size_t)r->n * sizeof *r->positions);
    r->ids = malloc(cells * sizeof *r->ids), r->probs = malloc(cells * sizeof *r->probs);
    if (!r->positions || !r->ids || !r->probs) return tf_set_error("fill-mask: out of memory");
    for (size_t t = 0, j = 0; t < ids->n; t++)
        if (ids->v[t] == mask) r->positions[j++] = (int)t;
    return 0;
}

int tf_model_fill_mask(const tf_model *m, const char *text, int k, tf_fill_mask_result *r) {
    memset(r, 0, sizeof *r);
    if (tf_model_require(m, TF_CAP_FILL_MASK)) return -1;
    if (!text) return tf_set_error("fill-mask: no text");
    if (k < 1) return tf_set_error("fill-mask: top_k must be at least 1, got %d", k);
    int32_t mask = tf_tokenizer_special_id(m->tok, "mask");
    if (mask < 0) return tf_set_error("%s: the tokenizer has no mask token", m->dir);
    tf_ids ids = {0};
    float *logits = NULL;
    double *p = NULL;
    int V = 0, rc = m->f->mask_logits(m->impl, m->tok, text, &ids, &logits, &V);
    if (!rc) rc = find_masks(&ids, mask, k < V ? k : V, r);
    if (!rc && !r->n) { /* named by its text, as the user writes it */
        char *s = NULL;
        size_t n = 0;
        tf_tokenizer_decode(m->tok, &mask, 1, &s, &n);
        rc = tf_set_error("fill-mask: the text holds no mask token (%.*s, id %d)", (int)n, s ? s : "?", (int)mask);
        free(s);
    }
    if (!rc && !(p = malloc((size_t)V * sizeof *p))) rc = tf_set_error("fill-mask: out of memory");
    for (int j = 0; !rc && j < r->n; j++)
        top_k(logits + (size_t)r->positions[j] * (size_t)V, V, r->k, p, r->ids + (size_t)j * (size_t)r->k,
              r->probs + (size_t)j * (size_t)r->k);
    if (rc) tf_fill_mask_result_free(r);
    free(p), free(logits);
    tf_ids_free(&ids);
    return rc;
}

