/* GPT-2 encoding throughput of tformer on one thread: the median of R runs,
 * each with a freshly loaded tokenizer (cold word cache) and, separately,
 * with one tokenizer reused (warm cache). Prints "cold_MBps warm_MBps ids". */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_util.h"
#include "tformer.h"

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: bench_tokenizer TOKENIZER_DIR FILE [RUNS]\n");
        return 2;
    }
    int runs = argc > 3 ? atoi(argv[3]) : 7;
    FILE *f = fopen(argv[2], "rb");
    if (!f) return perror(argv[2]), 1;
    fseek(f, 0, SEEK_END);
    size_t n = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    char *text = malloc(n);
    if (!text || fread(text, 1, n, f) != n) return 1;
    fclose(f);
    double cold[64], warm[64];
    size_t count = 0;
    tf_tokenizer *reused = tf_tokenizer_load(argv[1]);
    if (!reused) return fprintf(stderr, "%s\n", tf_error()), 1;
    for (int r = 0; r < runs && r < 64; r++) {
        tf_tokenizer *t = tf_tokenizer_load(argv[1]);
        tf_ids ids = {0};
        double t0 = bench_now();
        tf_tokenizer_encode(t, text, n, &ids);
        cold[r] = bench_now() - t0;
        count = ids.n;
        ids.n = 0;
        t0 = bench_now();
        tf_tokenizer_encode(reused, text, n, &ids);
        warm[r] = bench_now() - t0;
        tf_ids_free(&ids);
        tf_tokenizer_free(t);
    }
    double cold_s = bench_median(cold, runs), warm_s = bench_median(warm, runs);
    printf("%.2f %.2f %zu\n", n / cold_s / 1e6, n / warm_s / 1e6, count);
    tf_tokenizer_free(reused);
    free(text);
    return 0;
}
