/* Sentence embeddings as sentence-transformers computes them: each text
 * stripped of whitespace at both ends (str.strip(), as sentence-transformers'
 * tokenize(): byte-level BPE would see it) and encoded as [CLS] text [SEP]
 * (RoBERTa's <s> text </s>; truncated to max_len), run through the
 * encoder in batches of similar lengths (padding masked), pooled over its
 * tokens (mean, [CLS] or max) and optionally L2-normalised.
 *
 *   h = encoder(ids, mask)                     (B,T,C)
 *   mean: sum_t mask h / max(sum_t mask, 1e-9)  (B,C)
 *   cls:  h[:, 0]                               (B,C)
 *   max:  max_t over the tokens                 (B,C)
 *   normalize: e / max(||e||, 1e-12) */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../util/util.h"
#include "bert_internal.h"

typedef struct {
    tf_ids ids;
    int index;
} encoded;

static int by_length(const void *a, const void *b) {
    const encoded *x = a, *y = b;
    if (x->ids.n != y->ids.n) return x->ids.n < y->ids.n ? 1 : -1; /* longest first: the peak memory is seen at once */
    return x->index - y->index;
}

static void pool(const float *h, const int32_t *len, int64_t B, int64_t T, int64_t C, tf_pooling p, float *out,
                 const encoded *rows) {
    for (int64_t b = 0; b < B; b++) {
        float *e = out + (int64_t)rows[b].index * C;
        const float *hb = h + b * T * C;
        int64_t n = len[b];
        for (int64_t c = 0; c < C; c++) {
            double acc = p == TF_POOL_MAX ? -INFINITY : 0.0;
            if (p == TF_POOL_CLS) acc = hb[c];
            for (int64_t t = 0; p != TF_POOL_CLS && t < n; t++)
                acc = p == TF_POOL_MAX ? fmax(acc, hb[t * C + c]) : acc + hb[t * C + c];
            e[c] = (float)(p == TF_POOL_MEAN ? acc / (double)(n > 0 ? n : 1) : acc);
        }
    }
}

static void normalize(float *e, int64_t C) {
    double ss = 0;
    for (int64_t c = 0; c < C; c++) ss += (double)e[c] * e[c];
    double s = 1.0 / fmax(sqrt(ss), 1e-12);
    for (int64_t c = 0; c < C; c++) e[c] = (float)(e[c] * s);
}

/* One batch of rows[0..B): padded ids and mask, the encoder, the pooling. */
static int embed_batch(tf_ctx *ctx, tf_ctx *const work[2], const tf_bert *m, const encoded *rows, int64_t B,
                       const tf_embed_opts *o, float *out) {
    int64_t T = (int64_t)rows[0].ids.n, C = m->cfg.d_model;
    tf_tensor *ids = tf_tensor_new(ctx, TF_DTYPE_I32, 2, (int64_t[]){B, T}, 1);   // (B,T), 0 = [PAD] where padded
    tf_tensor *mask = tf_tensor_new(ctx, TF_DTYPE_U8, 2, (int64_t[]){B, T}, 1);   // (B,T)
    int32_t *len = malloc((size_t)B * sizeof *len);
    if (!ids || !mask || !len) return free(len), -1;
    for (int64_t i = 0; m->cfg.roberta && i < B * T; i++) tf_i32(ids)[i] = m->cfg.pad_token_id;  // RoBERTa's <pad>
    for (int64_t b = 0; b < B; b++) {
        len[b] = (int32_t)rows[b].ids.n;
        memcpy(tf_i32(ids) + b * T, rows[b].ids.v, rows[b].ids.n * sizeof(int32_t));
        memset(tf_u8(mask) + b * T, 1, rows[b].ids.n);
    }
    tf_bert_inputs in = {.input_ids = ids, .attention_mask = mask};
    tf_tensor *h = tf_bert_encode_in(ctx, work, m, &in);  // (B,T,C)
    if (h) pool(tf_f32(h), len, B, T, C, o->pooling, out, rows);
    free(len);
    return h ? 0 : -1;
}

/* Batches of `batch` rows, whole batches shared out to the threads: each
 * runs its batches alone on a context of its own (the ops inside see no
 * free thread), which keeps both cores busy on short sentences where
 * splitting every product in two would not. A batch's result does not depend
 * on which thread ran it. Errors are thread-local: the first is carried out. */
static int run_batches(const tf_bert *m, const encoded *rows, int n, int batch, const tf_embed_opts *o, float *out) {
    int64_t nb = ((int64_t)n + batch - 1) / batch;
    int rc = 0;
    char msg[1024] = "";
#pragma omp parallel if (nb > 1)
    {
        tf_ctx *ctx = tf_ctx_new(0), *work[2] = {tf_ctx_new(0), tf_ctx_new(0)}; /* the layers' activations */
        for (int i = 0; i < 2; i++)
            if (work[i]) tf_ctx_set_grad(work[i], 0);
#pragma omp for schedule(dynamic, 1)
        for (int64_t b = 0; b < nb; b++) {
            int bad;
#pragma omp atomic read
            bad = rc;
            if (bad) continue;
            int i = (int)(b * batch);
            if (ctx) {
                tf_ctx_reset(ctx);
                tf_ctx_set_grad(ctx, 0);
            }
            int made = ctx && work[0] && work[1];
            if (!made || embed_batch(ctx, work, m, rows + i, n - i < batch ? n - i : batch, o, out)) {
#pragma omp critical(tf_embed_error)
                if (!rc) {
                    snprintf(msg, sizeof msg, "%s", made ? tf_error() : "embed: out of memory");
#pragma omp atomic write
                    rc = -1;
                }
            }
        }
        tf_ctx_free(ctx), tf_ctx_free(work[0]), tf_ctx_free(work[1]);
    }
    return rc ? tf_set_error("%s", msg) : 0;
}

/* Every text encoded, truncated to max_len; sorted by length. */
static encoded *encode_all(tf_tokenizer *tok, const char *const *texts, const size_t *lens, int n, size_t max_len) {
    encoded *rows = calloc((size_t)n, sizeof *rows);
    if (!rows) return tf_set_error("embed: out of memory"), NULL;
    int rc = 0;
    for (int i = 0; i < n && !rc; i++) {
        tf_ids types = {0};
        rows[i].index = i;
        size_t start,
            n_bytes = tf_py_strip(texts[i], lens ? lens[i] : strlen(texts[i]), &start); /* as s-t's tokenize() */
        rc = tf_tokenizer_encode_pair(tok, texts[i] + start, n_bytes, NULL, 0, max_len, &rows[i].ids, &types);
        tf_ids_free(&types);
        if (rc) {
            char msg[400];
            snprintf(msg, sizeof msg, "%s", tf_error());
            tf_set_error("embed: text %d: %s", i + 1, msg);
        }
    }
    if (!rc) qsort(rows, (size_t)n, sizeof *rows, by_length);
    for (int i = 0; rc && i < n; i++) tf_ids_free(&rows[i].ids);
    if (rc) free(rows), rows = NULL;
    return rows;
}

int tf_bert_embed(const tf_bert *m, tf_tokenizer *tok, const char *const *texts, const size_t *lens, int n,
                  const tf_embed_opts *o, float *out) {
    if (o->pooling < TF_POOL_MEAN || o->pooling > TF_POOL_MAX) return tf_set_error("embed: unknown pooling %d", o->pooling);
    int most = tf_bert_max_tokens(&m->cfg);
    size_t max_len = o->max_len > 0 && o->max_len < most ? (size_t)o->max_len : (size_t)most;
    encoded *rows = n > 0 ? encode_all(tok, texts, lens, n, max_len) : NULL;
    if (n > 0 && !rows) return -1;
    int batch = o->batch > 0 ? o->batch : 32;
    int rc = n > 0 ? run_batches(m, rows, n, batch, o, out) : 0;
    for (int i = 0; !rc && o->normalize && i < n; i++) normalize(out + (int64_t)i * m->cfg.d_model, m->cfg.d_model);
    for (int i = 0; i < n; i++) tf_ids_free(&rows[i].ids);
    free(rows);
    return rc;
}

/* ---------------------------------------------------------------- sentence-transformers' folder */

/* modules.json: the Pooling module's folder, and whether Normalize follows. */
static int read_modules(const char *dir, char *pool_dir, size_t n, int *normalize) {
    char path[4096];
    if (tf_path_join(path, sizeof path, dir, "modules.json")) return -1;
    if (tf_path_join(pool_dir, n, dir, "1_Pooling")) return -1;
    if (access(path, F_OK)) return 0;
    cJSON *root = tf_json_read_any(path);
    if (!root) return -1;
    if (!cJSON_IsArray(root)) return cJSON_Delete(root), tf_set_error("%s: not a JSON list of modules", path);
    const cJSON *mod;
    cJSON_ArrayForEach(mod, root) {
        const cJSON *type = cJSON_GetObjectItemCaseSensitive(mod, "type");
        const cJSON *sub = cJSON_GetObjectItemCaseSensitive(mod, "path");
        if (!cJSON_IsString(type)) continue;
        if (strstr(type->valuestring, "Normalize")) *normalize = 1;
        if (strstr(type->valuestring, "Pooling") && cJSON_IsString(sub) &&
            tf_path_join(pool_dir, n, dir, sub->valuestring))
            return cJSON_Delete(root), -1;
    }
    cJSON_Delete(root);
    return 0;
}

static int read_pooling(const char *pool_dir, tf_pooling *p) {
    char path[4200];
    if (tf_path_join(path, sizeof path, pool_dir, "config.json")) return -1;
    if (access(path, F_OK)) return 0;
    cJSON *root = tf_json_read(path);
    if (!root) return -1;
    static const char *const KEYS[] = {"pooling_mode_mean_tokens", "pooling_mode_cls_token", "pooling_mode_max_tokens"};
    int found = 0, rc = 0;
    for (int k = 0; k < 3; k++)
        if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(root, KEYS[k]))) *p = (tf_pooling)k, found++;
    if (found != 1 || cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(root, "pooling_mode_mean_sqrt_len_tokens")))
        rc = tf_set_error("%s: one of pooling_mode_mean_tokens, _cls_token, _max_tokens must be true (and no other "
                          "mode: tformer pools one way)", path);
    cJSON_Delete(root);
    return rc;
}

int tf_embed_opts_load(const char *dir, tf_embed_opts *o) {
    *o = (tf_embed_opts){TF_POOL_MEAN, 0, 0, 32};
    char path[4096], pool_dir[4096];
    if (tf_path_join(path, sizeof path, dir, "sentence_bert_config.json")) return -1;
    if (!access(path, F_OK)) {
        cJSON *root = tf_json_read(path);
        if (!root) return -1;
        const cJSON *len = cJSON_GetObjectItemCaseSensitive(root, "max_seq_length");
        int lower = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(root, "do_lower_case"));
        if (cJSON_IsNumber(len)) o->max_len = len->valueint;
        cJSON_Delete(root);
        if (lower) return tf_set_error("%s: do_lower_case true is not supported (the tokenizer's own lower-casing is)", path);
    }
    return read_modules(dir, pool_dir, sizeof pool_dir, &o->normalize) || read_pooling(pool_dir, &o->pooling) ? -1 : 0;
}
