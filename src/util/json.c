/* JSON files through cJSON: read with errors that name the file and byte,
 * written atomically. */
#include <stdlib.h>
#include <string.h>

#include "util.h"

cJSON *tf_json_read_any(const char *path) {
    size_t len;
    char *text = tf_read_file(path, &len);
    if (!text) return NULL;
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithLengthOpts(text, len, &end, 0);
    if (!root) tf_set_error("%s: not valid JSON (error near byte %ld)", path, end ? (long)(end - text) : 0L);
    free(text);
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
