/* --json of the verbs that print results: one JSON object on standard output, its keys
 * documented in docs/json.md (stable: a key is added, never renamed or removed). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "cli.h"

static void *must(const cli_verb *v, void *p) {
    if (!p) cli_die(v, "out of memory");
    return p;
}

/* item into o (an array: appended, key unused), owned by o from here; item. */
static cJSON *add(const cli_verb *v, cJSON *o, const char *key, cJSON *item) {
    must(v, item);
    if (cJSON_IsArray(o) ? !cJSON_AddItemToArray(o, item) : !cJSON_AddItemToObject(o, key, item)) {
        cJSON_Delete(item);
        cli_die(v, "out of memory");
    }
    return item;
}

cJSON *cli_json_object(const cli_verb *v, cJSON *o, const char *key) {
    return o ? add(v, o, key, cJSON_CreateObject()) : must(v, cJSON_CreateObject());
}

cJSON *cli_json_array(const cli_verb *v, cJSON *o, const char *key) {
    return o ? add(v, o, key, cJSON_CreateArray()) : must(v, cJSON_CreateArray());
}

void cli_json_num(const cli_verb *v, cJSON *o, const char *key, double x) { add(v, o, key, cJSON_CreateNumber(x)); }

void cli_json_str(const cli_verb *v, cJSON *o, const char *key, const char *s) {
    add(v, o, key, s ? cJSON_CreateString(s) : cJSON_CreateNull());
}

void cli_json_bool(const cli_verb *v, cJSON *o, const char *key, int b) { add(v, o, key, cJSON_CreateBool(b)); }

void cli_npy_header(const cli_verb *v, FILE *f, const char *type, const int64_t *shape, int ndim) {
    char h[128], dims[96] = "";
    size_t k = 0;
    for (int d = 0; d < ndim && k < sizeof dims; d++)
        k += (size_t)snprintf(dims + k, sizeof dims - k, "%lld,%s", (long long)shape[d], d + 1 < ndim ? " " : "");
    if (ndim > 1) dims[k - 1] = 0; /* "(3, 16)", but "(3,)" */
    char order = type[0] == 'u' && type[1] == '1' ? '|' : __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__ ? '<' : '>';
    int n = snprintf(h, sizeof h, "\x93NUMPY\x01%c%c%c{'descr': '%c%s', 'fortran_order': False, 'shape': (%s), }", 0, 0,
                     0, order, type, dims);
    if (n < 0 || n >= (int)sizeof h) cli_die(v, ".npy: too many dimensions for its header");
    memset(h + n, ' ', sizeof h - (size_t)n);
    h[127] = '\n';
    h[8] = (char)(sizeof h - 10); /* the dictionary's length with its padding, little-endian */
    if (fwrite(h, 1, sizeof h, f) != sizeof h) cli_die(v, "cannot write the .npy header");
}

void cli_json_print(const cli_verb *v, cJSON *o) {
    char *text = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    if (!text) cli_die(v, "out of memory");
    printf("%s\n", text);
    cJSON_free(text);
}
