/* The constructor and destructor steps every family shares (family_construct.h). */
#include <stdlib.h>
#include <string.h>

#include "family_construct.h"
#include "tformer/nn.h"

static tf_params **params_of(const tf_family_layout *l, void *m) { return (tf_params **)((char *)m + l->params_at); }

void *tf_family_construct(const tf_family_layout *l, const void *cfg, uint64_t seed) {
    void *m = calloc(1, l->size);
    if (!m || !(*params_of(l, m) = tf_params_new())) {
        tf_family_destroy(l, m);
        return tf_set_error("%s: out of memory", l->family), NULL;
    }
    memcpy((char *)m + l->cfg_at, cfg, l->cfg_size);
    if (l->build(m) || (seed && tf_params_init(*params_of(l, m), seed))) {
        tf_family_destroy(l, m);
        return NULL;
    }
    return m;
}

void tf_family_destroy(const tf_family_layout *l, void *m) {
    if (!m) return;
    if (l->release) l->release(m);
    tf_params_free(*params_of(l, m));
    free(m);
}
