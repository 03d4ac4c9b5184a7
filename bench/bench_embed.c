/* Sentence embeddings per second of a BERT folder (tf_bert_embed on the
 * folder's sentence-transformers settings), the model loaded once; the
 * median of reps runs over every line of a text file, on $TFORMER_THREADS
 * threads (unset or 0: every core, as the CLI), in the precision
 * $TFORMER_PRECISION names (f32, bf16 or int8: embed's --precision; unset: f32).
 *     bench_embed MODEL_DIR TEXTS [reps]
 * prints: threads N sentences N tokens_mean X load_s X median_s X sentences_per_s X */
#include <stdio.h>
#include <string.h>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "bench_util.h"
#include "tformer.h"

static char **read_lines(const char *path, int *n) {
    FILE *f = fopen(path, "r");
    char buf[8192], **v = NULL;
    int cap = 0;
    *n = 0;
    while (f && fgets(buf, sizeof buf, f)) {
        buf[strcspn(buf, "\r\n")] = 0;
        if (*n == cap && !(v = realloc(v, (size_t)(cap = cap ? 2 * cap : 1024) * sizeof *v))) return NULL;
        v[(*n)++] = strdup(buf);
    }
    if (f) fclose(f);
    return v;
}

int main(int argc, char **argv) {
    if (argc < 3) return fprintf(stderr, "usage: bench_embed MODEL_DIR TEXTS [reps]\n"), 2;
    int reps = argc > 3 ? atoi(argv[3]) : 5, n;
    const char *threads = getenv("TFORMER_THREADS");
    tf_set_threads(threads ? atoi(threads) : 0);
    double t0 = bench_now();
    tf_bert *m = tf_bert_load(argv[1], &(tf_bert_load_opts){TF_BERT_BODY, 0, 1});
    tf_tokenizer *tok = m ? tf_tokenizer_load(argv[1]) : NULL;
    const char *pname = getenv("TFORMER_PRECISION");
    tf_precision p = TF_PRECISION_F32;
    if (m && pname && *pname && (tf_precision_parse(pname, &p) || tf_params_set_precision(m->params, p)))
        return fprintf(stderr, "bench_embed: TFORMER_PRECISION: %s\n", tf_error()), 2;
    double load = bench_now() - t0;
    tf_embed_opts o;
    char **lines = read_lines(argv[2], &n);
    if (!tok || !lines || tf_embed_opts_load(argv[1], &o)) return fprintf(stderr, "bench_embed: %s\n", tf_error()), 1;
    float *e = malloc((size_t)n * (size_t)m->cfg.d_model * sizeof *e);
    double t[32];
    reps = reps < 1 ? 1 : reps > 32 ? 32 : reps;
    for (int r = 0; r < reps; r++) {
        double s = bench_now();
        if (tf_bert_embed(m, tok, (const char *const *)lines, NULL, n, &o, e)) return fprintf(stderr, "%s\n", tf_error()), 1;
        t[r] = bench_now() - s;
    }
    long tokens = 0;
    for (int i = 0; i < n; i++) {
        tf_ids ids = {0};
        tf_tokenizer_encode(tok, lines[i], strlen(lines[i]), &ids);
        tokens += (long)ids.n + 2;
        tf_ids_free(&ids);
    }
    double med = bench_median(t, reps);
#ifdef _OPENMP
    printf("threads %d ", omp_get_max_threads());
#else
    printf("threads 1 ");
#endif
    printf("sentences %d tokens_mean %.1f load_s %.3f median_s %.4f sentences_per_s %.1f\n", n, (double)tokens / n,
           load, med, n / med);
    for (int i = 0; i < n; i++) free(lines[i]);
    free(lines), free(e);
    tf_tokenizer_free(tok);
    tf_bert_free(m);
    return 0;
}
