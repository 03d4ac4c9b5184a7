/* What the tests of sentence-transformers folders share (test_roberta.c,
 * test_distilbert.c: the RoBERTa, XLM-RoBERTa and DistilBERT folders of
 * tests/ref/gen_*_embed_fixture.py): answers.json, a tokenizer's ids against
 * transformers', tf_bert_embed and `tformer embed` against
 * SentenceTransformer.encode(). */
#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "test.h"

cJSON *test_read_json(const char *path) {
    size_t n;
    char *text = test_slurp(path, &n);
    cJSON *root = text ? cJSON_Parse(text) : NULL;
    free(text);
    return root;
}

int test_ids_differ(const cJSON *want, const tf_ids *got, const char *who, const char *what) {
    int n = cJSON_GetArraySize(want), bad = n != (int)got->n;
    for (int i = 0; !bad && i < n; i++) bad = cJSON_GetArrayItem(want, i)->valueint != got->v[i];
    if (bad) {
        fprintf(stderr, "    %s '%s': transformers", who, what);
        for (int i = 0; i < n; i++) fprintf(stderr, " %d", cJSON_GetArrayItem(want, i)->valueint);
        fprintf(stderr, "; tformer");
        for (size_t i = 0; i < got->n; i++) fprintf(stderr, " %d", got->v[i]);
        fprintf(stderr, "\n");
    }
    return bad;
}

int test_texts_differ(tf_tokenizer *tok, const cJSON *root, size_t max_len, int types, const char *who, int *n) {
    int bad = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, cJSON_GetObjectItem(root, "texts")) {
        const char *text = cJSON_GetObjectItem(e, "text")->valuestring;
        tf_ids ids = {0}, ty = {0};
        if (tf_tokenizer_encode_pair(tok, text, strlen(text), NULL, 0, max_len, &ids, &ty)) return -1;
        bad += test_ids_differ(cJSON_GetObjectItem(e, "ids"), &ids, who, text);
        for (size_t i = 0; types && i < ty.n; i++) bad += ty.v[i] != 0;
        tf_ids_free(&ids), tf_ids_free(&ty), ++*n;
    }
    return bad;
}

int test_folder_texts_differ(const char *tok_dir, const char *answers_dir, size_t max_len, int types, const char *who,
                             int *n) {
    char path[600];
    snprintf(path, sizeof path, "%s/answers.json", answers_dir);
    tf_tokenizer *tok = tf_tokenizer_load(tok_dir);
    cJSON *root = tok ? test_read_json(path) : NULL;
    int bad = root ? test_texts_differ(tok, root, max_len, types, who, n) : -1;
    if (tok && !root) fprintf(stderr, "    %s: unreadable\n", path);
    cJSON_Delete(root);
    tf_tokenizer_free(tok);
    return bad;
}

/* `tformer embed --model dir` on the first three texts: its status, and
 * the largest gap between the numbers it prints and got's (3, C). */
static int embed_cli(const char *dir, const char *const *texts, const float *got, int64_t C, test_embed_result *r) {
    char cmd[600], lines[] = "/tmp/tformer_stemb_XXXXXX", body[600];
    snprintf(body, sizeof body, "%s\n%s\n%s\n", texts[0], texts[1], texts[2]);
    int rc = test_temp_file(lines) || test_write_text(lines, body);
    snprintf(cmd, sizeof cmd, "embed --model %s < %s", dir, lines);
    rc = rc || test_run_cli("", cmd, r->cli_out, sizeof r->cli_out);
    unlink(lines);
    char *s = r->cli_out;
    r->cli = 0;
    for (int64_t i = 0; !rc && i < 3 * C; i++) r->cli = fmax(r->cli, fabs(strtod(s, &s) - got[i]));
    return rc;
}

/* tf_bert_embed of n texts against dir's embeddings.safetensors (n, C); -1 when it cannot run. */
static int embed_lib(const char *dir, const tf_bert *m, tf_tokenizer *tok, const char *const *texts, int n,
                     float *got, test_embed_result *r) {
    char path[600];
    snprintf(path, sizeof path, "%s/embeddings.safetensors", dir);
    tf_arena *a = tf_arena_new(0);
    tf_st_file *f = tf_st_open(path);
    tf_tensor *want = f ? test_st_tensor(f, "embeddings", a) : NULL;
    int64_t all = (int64_t)n * m->cfg.d_model;
    int rc = !want || tf_numel(want) != all || tf_bert_embed(m, tok, texts, NULL, n, &r->opts, got) ? -1 : 0;
    if (!rc) r->max_diff = test_max_abs_diff(got, tf_f32(want), all), r->rel = test_rel_err(got, tf_f32(want), all);
    tf_st_close(f);
    tf_arena_free(a);
    return rc;
}

int test_st_embed(const char *dir, test_embed_result *r) {
    char path[600];
    snprintf(path, sizeof path, "%s/answers.json", dir);
    memset(r, 0, sizeof *r);
    cJSON *root = test_read_json(path);
    tf_bert *m = root && !tf_embed_opts_load(dir, &r->opts)
                     ? tf_bert_load(dir, &(tf_bert_load_opts){TF_BERT_BODY, 0, 1})
                     : NULL;
    tf_tokenizer *tok = m ? tf_tokenizer_load(dir) : NULL;
    int n = root ? cJSON_GetArraySize(cJSON_GetObjectItem(root, "texts")) : 0, rc = -1;
    const char **texts = calloc((size_t)n + 1, sizeof *texts);
    float *got = m ? calloc((size_t)n * (size_t)m->cfg.d_model + 1, sizeof *got) : NULL;
    if (tok && texts && got && n >= 3) {
        const cJSON *e;
        cJSON_ArrayForEach(e, cJSON_GetObjectItem(root, "texts")) texts[r->n++] =
            cJSON_GetObjectItem(e, "text")->valuestring;
        r->cfg = m->cfg;
        rc = embed_lib(dir, m, tok, texts, n, got, r);
        r->cli_rc = rc ? -1 : embed_cli(dir, texts, got, m->cfg.d_model, r);
    }
    if (!root) tf_set_error("%s: unreadable", path);
    free(got), free(texts);
    tf_tokenizer_free(tok);
    tf_bert_free(m);
    cJSON_Delete(root);
    return rc;
}
