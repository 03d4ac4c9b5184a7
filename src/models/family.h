/* Private to src/models: what a family's registry row (src/models/<family>/<family>_family.c)
 * needs besides the public tf_family (tformer/model.h). */
#ifndef TF_FAMILY_H
#define TF_FAMILY_H

#include "tformer/model.h"

/* Validation batches of `rows` rows in one pass over n held-out items (1 when rows is 0). */
int64_t tf_family_one_pass(int64_t n, int64_t rows);

/* A stream (tf_model_stream_new): the family's own struct starts with this one. */
struct tf_stream {
    tf_stream_shape shape;
    int (*step)(tf_stream *s, int32_t id, const float *x, float *out);
    int64_t (*steps)(const tf_stream *s);
    void (*free)(tf_stream *s);
};

/* The typed adapters of a family's row for a model type T with T_load(dir) and T_free(T *):
 * prefix_load (architecture unused: the folder's config and tensors tell the head) and prefix_free. */
#define TF_FAMILY_LOAD_FREE(prefix, T)                                                                  \
    static void *prefix##_load(const char *dir, const char *architecture) {                             \
        (void)architecture;                                                                             \
        return T##_load(dir);                                                                           \
    }                                                                                                   \
    static void prefix##_free(void *model) { T##_free(model); }

/* And for a T with T_save(const T *, dir) whose struct holds its parameters (params):
 * prefix_save and prefix_params. */
#define TF_FAMILY_SAVE_PARAMS(prefix, T)                                                                \
    static int prefix##_save(const void *model, const char *dir) { return T##_save(model, dir); }       \
    static const tf_params *prefix##_params(const void *model) { return ((const T *)model)->params; }

/* All four, for a T with each of them. */
#define TF_FAMILY_MODEL_CALLS(prefix, T) TF_FAMILY_LOAD_FREE(prefix, T) TF_FAMILY_SAVE_PARAMS(prefix, T)
/* The row's fields for them (tf_family's initialisers), with prefix_caps, prefix_run and T_config_table. */
#define TF_FAMILY_MODEL_ROW(prefix, T)                                                                         \
    .load = prefix##_load, .free = prefix##_free, .model_caps = prefix##_caps, .params = prefix##_params,      \
    .config_table = &T##_config_table, .save = prefix##_save, .run = prefix##_run

#endif
