/* Private to src/models: what the image (ViT) and video (ViViT) families
 * share: a classifier's label names (Hugging Face's id2label, a copied array
 * of n strings or NULL, then "LABEL_<i>", transformers' default names),
 * ViTLayer's tensor names, folders and batched predictions (label names:
 * model_folder.h). */
#ifndef TF_MODEL_VISION_H
#define TF_MODEL_VISION_H

#include <cjson/cJSON.h>

#include "../util/util.h"
#include "model_folder.h"

/* config.json's id2label when present (root's): an object of n names into *labels. */
int tf_vision_read_labels(char ***labels, int n, const cJSON *root, const char *path);
/* ViTConfig's (4.40+) and VivitConfig's (5.x) pooler keys: pooler_act must be
 * tanh and pooler_output_size hidden_size d_model when present (tformer's
 * pooler is BERT's), else an error naming path and the key. */
int tf_vision_read_pooler(const cJSON *root, const char *path, int d_model);
/* A model folder: dir (created if missing) with config.json = {"architectures":
 * [arch], "model_type", the rows of f, then extra's items (extra is freed; may
 * be NULL), and for a classifier (n_labels > 0) "problem_type" and
 * id2label / label2id}, and model.safetensors of ps. */
int tf_vision_save(const char *dir, const char *arch, const char *model_type, const tf_fields *f, cJSON *extra,
                   char *const *labels, int n_labels, const tf_params *ps);
/* The same without model.safetensors (the caller writes it). */
int tf_vision_save_config(const char *dir, const char *arch, const char *model_type, const tf_fields *f, cJSON *extra,
                          char *const *labels, int n_labels);

/* A classifier's labels y (or NULL: 0) for a batch of B items: I32 (B), each
 * in [0,n_labels) or -100; errors start with who ("vit") and name the item
 * ("image", "clip"). */
int tf_vision_check_labels(const tf_tensor *y, int64_t B, int n_labels, const char *who, const char *item);

/* Hugging Face's names for a ViTLayer's (and VivitLayer's) tensors, in its
 * checkpoint order: rows of a tf_block_name array. */
#define TF_VIT_LAYER_NAMES                                                                                  \
    {TF_BP_Q_W, "attention.attention.query.weight"},  {TF_BP_Q_B, "attention.attention.query.bias"},       \
    {TF_BP_K_W, "attention.attention.key.weight"},    {TF_BP_K_B, "attention.attention.key.bias"},         \
    {TF_BP_V_W, "attention.attention.value.weight"},  {TF_BP_V_B, "attention.attention.value.bias"},       \
    {TF_BP_OUT_W, "attention.output.dense.weight"},   {TF_BP_OUT_B, "attention.output.dense.bias"},        \
    {TF_BP_FF_IN_W, "intermediate.dense.weight"},     {TF_BP_FF_IN_B, "intermediate.dense.bias"},          \
    {TF_BP_FF_OUT_W, "output.dense.weight"},          {TF_BP_FF_OUT_B, "output.dense.bias"},               \
    {TF_BP_NORM_ATTN_W, "layernorm_before.weight"},   {TF_BP_NORM_ATTN_B, "layernorm_before.bias"},        \
    {TF_BP_NORM_FF_W, "layernorm_after.weight"},      {TF_BP_NORM_FF_B, "layernorm_after.bias"},           \
    {TF_BP_TEMPERATURE, "attention.attention.temperature"} /* lsa only: tformer's */

/* A model's logits (B,L) for the batch x (B, ...) in ctx. */
typedef int (*tf_logits_fn)(tf_ctx *ctx, const void *model, tf_tensor *x, tf_tensor **logits);
/* Predictions for n items of x, each of shape item (item_ndim dims), `batch`
 * at a time (0: 256), without gradients; hflip: each item's probabilities
 * averaged with its mirror image's (the last dim reversed): as tf_vit_predict. */
int tf_predict_batches(const void *model, tf_logits_fn logits, int n_labels, const float *x, int64_t n, int item_ndim,
                       const int64_t *item, int batch, int hflip, const int32_t *labels, int32_t *pred, float *prob,
                       double *loss, int64_t *correct);

#endif
