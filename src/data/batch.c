/* Batches of named tensors and the loader interface. */
#include <string.h>

#include "tformer/data.h"

int tf_batch_set(tf_batch *b, const char *name, tf_tensor *t) {
    for (int i = 0; i < b->n; i++)
        if (!strcmp(b->names[i], name)) return b->t[i] = t, 0;
    if (b->n == TF_BATCH_MAX) return tf_set_error("batch: more than %d tensors (adding '%s')", TF_BATCH_MAX, name);
    b->names[b->n] = name, b->t[b->n++] = t;
    return 0;
}

tf_tensor *tf_batch_get(const tf_batch *b, const char *name) {
    for (int i = 0; i < b->n; i++)
        if (!strcmp(b->names[i], name)) return b->t[i];
    return NULL;
}

int tf_loader_next(tf_loader *l, tf_ctx *ctx, tf_subset split, uint64_t key, int rows, tf_batch *out) {
    if (rows < 1) return tf_set_error("loader: %d rows asked for", rows);
    memset(out, 0, sizeof *out);
    return l->vt->next(l, ctx, split, key, rows, out);
}

void tf_loader_free(tf_loader *l) {
    if (l) l->vt->free(l);
}
