/* Private to src/models: the steps every family's tf_<family>_new and
 * tf_<family>_free share. A family's model struct holds its config (cfg) and
 * its parameters (params); the family says, in a tf_family_layout, how to
 * build the rest and what else to free. */
#ifndef TF_FAMILY_CONSTRUCT_H
#define TF_FAMILY_CONSTRUCT_H

#include <stddef.h>
#include <stdint.h>

typedef struct tf_family_layout {
    const char *family;                       /* names the out-of-memory error: "vit: out of memory" */
    size_t size, cfg_at, cfg_size, params_at; /* TF_FAMILY_LAYOUT(T) */
    /* Called with the config copied into the model and its params empty: derives
     * settings, allocates what the config sizes and registers the parameters;
     * -1 with the error set. */
    int (*build)(void *m);
    /* Frees what the model owns besides params and itself (NULL: nothing); also
     * called on a model that build left half made. */
    void (*release)(void *m);
} tf_family_layout;

/* The layout's fields of a model type T with members cfg and params. */
#define TF_FAMILY_LAYOUT(T)                                                                                            \
    .size = sizeof(T), .cfg_at = offsetof(T, cfg), .cfg_size = sizeof(((T *)0)->cfg), .params_at = offsetof(T, params)

/* A model of layout l: zeroed, *cfg copied in (the caller has checked it), its
 * params created, l->build run, then the parameters initialised from seed (0:
 * left for a loader to fill). NULL with the error set; nothing is left allocated. */
void *tf_family_construct(const tf_family_layout *l, const void *cfg, uint64_t seed);
/* Frees m (NULL: nothing): l->release, its params, m. */
void tf_family_destroy(const tf_family_layout *l, void *m);

/* A family's public pair for a model type T of layout l (T_config, T_config_check):
 * T_new(cfg, seed), cfg checked then tf_family_construct, and T_free(m). */
#define TF_FAMILY_NEW_FREE(T, l)                                                                                       \
    T *T##_new(const T##_config *cfg, uint64_t seed) {                                                                 \
        return T##_config_check(cfg) ? NULL : tf_family_construct(&(l), cfg, seed);                                    \
    }                                                                                                                  \
    void T##_free(T *m) { tf_family_destroy(&(l), m); }

#endif
