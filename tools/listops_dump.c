/* ListOps examples as text, for the independent check (tests/ref/listops_eval.py):
 *   listops_dump SEED SUBSET N [MIN_LEN MAX_LEN MAX_DEPTH MAX_ARGS]
 * prints "label<TAB>expression" for examples 0..N-1 of SUBSET (0 train,
 * 1 validation, 2 test), tokens separated by spaces. Defaults: LRA's 500 2000 10 10. */
#include <stdio.h>
#include <stdlib.h>

#include "tformer.h"

int main(int argc, char **argv) {
    if (argc != 4 && argc != 8)
        return fprintf(stderr, "usage: listops_dump SEED SUBSET N [MIN_LEN MAX_LEN MAX_DEPTH MAX_ARGS]\n"), 2;
    tf_listops_opts o = {500, 2000, 10, 10, strtoull(argv[1], NULL, 10), 0, 0};
    if (argc == 8) o.min_len = atoi(argv[4]), o.max_len = atoi(argv[5]), o.max_depth = atoi(argv[6]), o.max_args = atoi(argv[7]);
    int subset = atoi(argv[2]);
    long n = atol(argv[3]);
    int32_t *ids = malloc((size_t)(o.max_len > 1 ? o.max_len : 1) * sizeof *ids);
    if (!ids || tf_listops_check(&o)) return fprintf(stderr, "listops_dump: %s\n", ids ? tf_error() : "out of memory"), 1;
    for (long i = 0; i < n; i++) {
        int len, label;
        if (tf_listops_example(&o, subset, i, ids, o.max_len - 1, &len, &label))
            return fprintf(stderr, "listops_dump: %s\n", tf_error()), 1;
        printf("%d\t", label);
        for (int t = 0; t < len; t++) printf("%s%s", t ? " " : "", tf_listops_token(ids[t]));
        printf("\n");
    }
    free(ids);
    return 0;
}
