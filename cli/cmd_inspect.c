/* tformer inspect: the tensors of a safetensors file. */
#include <string.h>

#include <cjson/cJSON.h>

#include "cli.h"

enum { JSON };
const cli_flag cmd_inspect_flags[] = {[JSON] = CLI_JSON_ROW, CLI_END};

/* {"file", "tensors": [{"name", "dtype", "shape"}]} (docs/json.md) */
static void print_json(const cli_verb *v, const tf_st_file *f, const char *path) {
    cJSON *j = cli_json_object(v, NULL, NULL), *ts;
    cli_json_str(v, j, "file", path);
    ts = cli_json_array(v, j, "tensors");
    for (int i = 0; i < tf_st_count(f); i++) {
        const tf_st_entry *e = tf_st_entry_at(f, i);
        cJSON *t = cli_json_object(v, ts, NULL), *shape;
        cli_json_str(v, t, "name", e->name), cli_json_str(v, t, "dtype", tf_st_dtype_name(e->dtype));
        shape = cli_json_array(v, t, "shape");
        for (int d = 0; d < e->ndim; d++) cli_json_num(v, shape, NULL, (double)e->shape[d]);
    }
    cli_json_print(v, j);
}

int cmd_inspect(const cli_args *a) {
    cli_pick_operand(a->operands[0]);
    tf_st_file *f = tf_st_open(a->operands[0]);
    if (!f) cli_die(a->verb, tf_error());
    size_t n = strlen(a->operands[0]);
    int index = n >= 5 && !strcmp(a->operands[0] + n - 5, ".json");
    cli_say_plain(a->verb, 0, "%s: %s of %d tensor%s; %s", a->operands[0],
                  index ? "a sharded checkpoint's index (its shards read)" : "safetensors", tf_st_count(f),
                  tf_st_count(f) == 1 ? "" : "s",
                  a->v[JSON].given ? "one JSON object (--json)" : "a line per tensor: name, dtype, (shape) (--json: one JSON object)");
    if (a->v[JSON].given) print_json(a->verb, f, a->operands[0]);
    for (int i = 0; !a->v[JSON].given && i < tf_st_count(f); i++) {
        const tf_st_entry *e = tf_st_entry_at(f, i);
        printf("%-50s %-5s (", e->name, tf_st_dtype_name(e->dtype));
        for (int d = 0; d < e->ndim; d++) printf(d ? ",%lld" : "%lld", (long long)e->shape[d]);
        printf(")\n");
    }
    tf_st_close(f);
    return 0;
}
