/* Private: shared by the BERT family's files. */
#ifndef TF_BERT_INTERNAL_H
#define TF_BERT_INTERNAL_H

#include <cjson/cJSON.h>

#include "tformer/bert.h"
#include "tformer/model.h"

/* The encoder's output (B,T,C): embeddings and the blocks (bert.c). */
tf_tensor *tf_bert_encode(tf_ctx *ctx, const tf_bert *m, const tf_bert_inputs *in);
/* The same output (the same bits), in ctx, for inference (ctx records no gradient, or the
 * plain encode): each layer's tensors in work[i % 2], reset before it, so two layers'
 * activations are held at most, not every layer's (a batch of MiniLM's longest texts held
 * 180 MB, faulted in and cleared by the kernel on every call). */
tf_tensor *tf_bert_encode_in(tf_ctx *ctx, tf_ctx *const work[2], const tf_bert *m, const tf_bert_inputs *in);
/* (B,T,C) embeddings LN(word + position + token type) with dropout (bert.c). */
tf_tensor *tf_bert_embed_inputs(tf_ctx *ctx, const tf_bert *m, const tf_bert_inputs *in);
/* The encoder of Hugging Face's block_sparse BigBird on inputs longer than
 * (5 + 2 bigbird_random) bigbird_block tokens (bert_bigbird.c). */
tf_tensor *tf_bert_encode_block_sparse(tf_ctx *ctx, const tf_bert *m, const tf_bert_inputs *in);
/* The head's outputs and loss from out->last_hidden_state / pooler_output (bert_heads.c). */
int tf_bert_heads(tf_ctx *ctx, const tf_bert *m, const tf_bert_inputs *in, tf_bert_outputs *out);

/* A Hugging Face BERT config.json (root, read from path) as a checked
 * configuration with the head o asks for (NULL: the folder's own, in
 * *folder_head; TF_BERT_BODY when it names none) (bert_io.c). */
int tf_bert_config_from_hf(const cJSON *root, const char *path, const tf_bert_load_opts *o, tf_bert_config *c,
                           int *folder_head);

/* RobertaModel, RobertaFor... as a tf_bert_head, or -1 (bert_config.c). */
int tf_bert_roberta_head_from_name(const char *name);
/* DistilBertModel, DistilBertFor... as a tf_bert_head, or -1 (bert_config.c). */
int tf_bert_distil_head_from_name(const char *name);

/* DistilBERT's config.json (model_type distilbert or a DistilBert* class):
 * its own keys read into c, the settings tformer lacks refused by name; the
 * head as tf_bert_config_from_hf (bert_distil.c). */
int tf_bert_distil_config_from_hf(const cJSON *root, const char *path, const tf_bert_load_opts *o, tf_bert_config *c,
                                  int *folder_head);
/* Its config.json for m (bert_distil.c). */
int tf_bert_distil_write_config(const tf_bert *m, const char *path);
/* The labels of a classification head: num_labels (id2label's size when
 * absent) and, with m, the names (bert_io.c). */
int tf_bert_read_labels(const cJSON *root, const char *path, tf_bert *m_or_null, int *n_labels);
/* The head asked for (o's, else the folder's), n_labels and problem_type
 * (multi-label refused), shared by BERT's and DistilBERT's readers (bert_io.c). */
int tf_bert_read_head(const cJSON *root, const char *path, const tf_bert_load_opts *o, tf_bert_config *c, int head);

/* A ListOps run folder's own test set (listops_task.c): the BERT row's test. */
int tf_bert_listops_test(const tf_bert *m, const char *dir, int64_t n, int batch, tf_test_result *r);
/* tformer predict's settings of a folder and its predictions (the BERT row's predict_opts and predict). */
int tf_bert_predict_opts(const tf_bert *m, const char *dir, int max_len, tf_predict_opts *o, const char **from);
int tf_bert_predict(const tf_bert *m, tf_tokenizer *tok, const tf_finetune_set *s, const tf_predict_opts *o,
                    tf_finetune_prediction *p, int *n_truncated);
/* n texts (b NULL) or pairs -> logits (n, n_labels), as `tformer predict` computes them on the folder
 * dir (bert_classify.c; tf_model_classify_texts). */
int tf_bert_classify_texts(const tf_bert *m, tf_tokenizer *tok, const char *dir, const char *const *a,
                           const char *const *b, int n, float *logits);

#endif
