/* JSON files through cJSON: read with errors that name the file and byte,
 * written atomically. */
#include <stdlib.h>
#include <string.h>

#include "util.h"

/* Two equal keys in one object: cJSON keeps both and a lookup finds one of
 * them, so a repeated key would silently change a value (an id, a setting). */
int tf_json_unique_keys(const cJSON *node, const char *path) {
    int n = 0;
    for (const cJSON *c = node->child; c; c = c->next) {
        if (c->child && tf_json_unique_keys(c, path)) return -1;
        n++;
    }
    if (!cJSON_IsObject(node) || n < 2) return 0;
    tf_strmap seen;
    if (tf_strmap_init(&seen, (size_t)n)) return -1;
    int rc = 0;
    for (const cJSON *c = node->child; c && !rc; c = c->next) {
        size_t len = strlen(c->string);
        if (tf_strmap_get(&seen, c->string, len) >= 0)
            rc = tf_set_error("%s: the key \"%.80s\" appears twice in one object (which one counts is ambiguous)", path,
                              c->string);
        else rc = tf_strmap_put(&seen, c->string, len, 0);
    }
    tf_strmap_free(&seen);
    return rc;
}

/* The depth of arrays and objects open at text + at (strings skipped). */
static long depth_at(const char *text, size_t at) {
    long depth = 0;
    for (size_t i = 0, in_str = 0; i < at; i++) {
        char c = text[i];
        if (in_str) {
            if (c == '\\') i++;
            else if (c == '"') in_str = 0;
        } else if (c == '"') {
            in_str = 1;
        } else if (c == '[' || c == '{') {
            depth++;
        } else if (c == ']' || c == '}') {
            depth--;
        }
    }
    return depth;
}

cJSON *tf_json_read_any(const char *path) {
    size_t len;
    char *text = tf_read_file(path, &len);
    if (!text) return NULL;
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithLengthOpts(text, len, &end, 0);
    size_t at = end && end >= text ? (size_t)(end - text) : 0;
    if (!root && at < len && depth_at(text, at + 1) > CJSON_NESTING_LIMIT)
        tf_set_error("%s: arrays and objects nested deeper than %d levels (the JSON reader's limit), at byte %zu", path,
                     CJSON_NESTING_LIMIT, at);
    else if (!root)
        tf_set_error("%s: not valid JSON (error near byte %ld)", path, end ? (long)(end - text) : 0L);
    free(text);
    if (root && tf_json_unique_keys(root, path)) cJSON_Delete(root), root = NULL;
    return root;
}

cJSON *tf_json_read(const char *path) {
    cJSON *root = tf_json_read_any(path);
    if (root && !cJSON_IsObject(root)) tf_set_error("%s: not a JSON object", path), cJSON_Delete(root), root = NULL;
    return root;
}

int tf_json_write(const char *path, const cJSON *root) {
    char *text = cJSON_Print(root);
    if (!text) return tf_set_error("%s: out of memory", path);
    size_t n = strlen(text);
    char *nl = realloc(text, n + 2);
    if (!nl) return free(text), tf_set_error("%s: out of memory", path);
    nl[n] = '\n', nl[n + 1] = 0;
    int rc = tf_write_file(path, nl, n + 1);
    free(nl);
    return rc;
}
