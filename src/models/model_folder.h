/* Private to src/models. tformer's own model folders (families without a
 * Hugging Face layout to follow): config.json = {"model_type": TYPE, the
 * configuration table's keys} and model.safetensors under the parameters'
 * names, loaded strictly (a missing, misshapen or unknown tensor is refused
 * by name). */
#ifndef TF_MODEL_FOLDER_H
#define TF_MODEL_FOLDER_H

#include "../util/util.h"
#include "tformer/nn.h"

/* cfg (of table t) from dir/config.json, defaults first; another or no model_type is an error. */
int tf_folder_read_config(const char *dir, const char *type, const tf_field_table *t, void *cfg);
/* dir/model.safetensors into ps (registered, not yet allocated). */
int tf_folder_load_weights(const char *dir, tf_params *ps);
/* dir (created if missing): config.json and model.safetensors. */
int tf_folder_save(const char *dir, const char *type, const tf_field_table *t, const void *cfg, const tf_params *ps);

/* A model type T's folder calls (T_config, T_config_table, T_new, T_free; its cfg and params members), of
 * model_type type: `static T *read_folder(const char *dir)` (config.json then model.safetensors; NULL with
 * the error) and T_save (tformer/<family>.h declares it). */
#define TF_FOLDER_CALLS(T, type)                                                                                    \
    static T *read_folder(const char *dir) {                                                                        \
        T##_config c;                                                                                               \
        if (tf_folder_read_config(dir, type, &T##_config_table, &c)) return NULL;                                   \
        T *m = T##_new(&c, 0);                                                                                      \
        if (m && tf_folder_load_weights(dir, m->params)) {                                                          \
            T##_free(m);                                                                                            \
            return NULL;                                                                                            \
        }                                                                                                           \
        return m;                                                                                                   \
    }                                                                                                               \
    int T##_save(const T *m, const char *dir) {                                                                     \
        return tf_folder_save(dir, type, &T##_config_table, &m->cfg, m->params);                                    \
    }

/* ---- pieces every family's Hugging Face folder needs ---- */

/* config.json's model_type, when it names one, is one of types (NULL-ended); else an error
 * naming path, the type and the family (a folder of another family given to this one's loader). */
int tf_folder_check_type(const cJSON *root, const char *path, const char *family, const char *const *types);

/* Finds the file's tensor for parameter `name` (a family's prefixes). */
typedef const tf_st_entry *(*tf_folder_find_fn)(const tf_st_file *f, const char *name);
/* Whether a tensor of the file is known to the family (a parameter under one
 * of its names, or a buffer it may ignore). */
typedef int (*tf_folder_known_fn)(const tf_params *ps, const char *name);
/* Every parameter of ps (allocated here) from f, found by find (NULL: by its
 * own name), of the parameter's shape; every tensor of f known (NULL: a
 * parameter's name). Errors name path and the tensor. */
int tf_folder_read_weights(const tf_st_file *f, const char *path, tf_params *ps, tf_folder_find_fn find,
                           tf_folder_known_fn known);
/* The same from the file at path. */
int tf_folder_load_hf_weights(const char *path, tf_params *ps, tf_folder_find_fn find, tf_folder_known_fn known);
/* The same for inference: each F32 tensor reads the file's mapping in place
 * (no copy; pages come from the page cache as they are first read), others
 * are converted; no gradients; ps keeps the file open. */
int tf_folder_map_hf_weights(const char *path, tf_params *ps, tf_folder_find_fn find, tf_folder_known_fn known);
/* Every parameter of ps into path (safetensors), and `extra` under
 * extra_name when both are given (a tensor transformers reads under a second name). */
int tf_folder_save_weights(const tf_params *ps, const char *path, const char *extra_name, const tf_tensor *extra);

/* Class names (config.json's id2label), n of them, or NULL (Hugging Face's
 * "LABEL_<i>"): *labels replaced by copies of names (the old ones freed). */
int tf_labels_set(char ***labels, int n, const char *const *names);
void tf_labels_free(char ***labels, int n);
const char *tf_labels_name(char *const *labels, int n, int i, char *buf, size_t cap);
/* id2label {"0": name, ...} with every id from 0 to n-1 once into *labels. */
int tf_labels_from_json(char ***labels, int n, const cJSON *map, const char *path);
/* id2label and label2id into root. */
int tf_labels_to_json(char *const *labels, int n, cJSON *root);

/* A classifier's config.json: num_labels (else the size of id2label, else
 * 2, as PretrainedConfig) into *n_labels; problem_type must be
 * single_label_classification or, when regression is not NULL, regression:
 * *regression is 1 when it says so, or when it is absent and n_labels is 1
 * (transformers' rule). Other problem types are refused naming path. */
int tf_folder_read_classes(const cJSON *root, const char *path, int *n_labels, int *regression);
/* A classifier without a regression loss (ViT's, Swin's, ViViT's): num_labels 1 is
 * transformers' regression (mean squared error against float labels) unless
 * problem_type is single_label_classification (always: whatever problem_type
 * says, as ViViT's 4.x forward, which reads num_labels alone); refused naming
 * path rather than run to another loss. 0 for every other num_labels. */
int tf_folder_refuse_regression(const cJSON *root, const char *path, int n_labels, int always);

/* An optional (B,T) I32 id tensor (t NULL: 0): contiguous, each in [0,hi)
 * ("<what> <hi>" in the error), hi 0: any value. */
int tf_check_ids(const char *family, const tf_tensor *t, const char *name, int64_t B, int64_t T, int32_t hi,
                 const char *what);

#endif
