/* tformer inspect: the tensors of a safetensors file. */
#include "cli.h"

const cli_flag cmd_inspect_flags[] = {CLI_END};

int cmd_inspect(const cli_args *a) {
    tf_st_file *f = tf_st_open(a->operands[0]);
    if (!f) cli_die(a->verb, tf_error());
    for (int i = 0; i < tf_st_count(f); i++) {
        const tf_st_entry *e = tf_st_entry_at(f, i);
        printf("%-50s %-5s (", e->name, tf_st_dtype_name(e->dtype));
        for (int d = 0; d < e->ndim; d++) printf(d ? ",%lld" : "%lld", (long long)e->shape[d]);
        printf(")\n");
    }
    tf_st_close(f);
    return 0;
}
