/*
 * tformer — a Transformer toolkit in C11.
 *
 * A runnable example: one pre-LN Transformer block (PyTorch's encoder layer
 * names) on a random batch, then the gradient of sum(output) with respect to
 * every weight. (docs/design.md shows how a model family builds on it.)
 *
 *     #include <stdio.h>
 *     #include "tformer.h"
 *
 *     int main(void) {
 *         tf_block_config cfg = tf_block_config_default(16, 4);   // d_model 16, 4 heads
 *         cfg.d_ff = 32;
 *         cfg.norm_first = 1;
 *         tf_params *ps = tf_params_new();
 *         tf_block layer;
 *         tf_encoder_layer_register(ps, "layer.", &layer, &cfg);
 *         if (tf_params_init(ps, 42) != 0) { fprintf(stderr, "%s\n", tf_error()); return 1; }
 *
 *         tf_ctx *ctx = tf_ctx_new(7);
 *         int64_t shape[3] = {2, 5, 16};                          // x: (B,T,C)
 *         tf_tensor *x = tf_tensor_new(ctx, TF_DTYPE_F32, 3, shape, 0);
 *         tf_tensor_fill_normal(x, 1, 1.0f);
 *         cfg.self_attn.kind = TF_ATTN_CAUSAL;                     // a decoder's self-attention
 *         tf_tensor *y = tf_block_forward(ctx, &layer, &cfg, x, NULL);
 *         if (!y || tf_backward(ctx, y, NULL) != 0) { fprintf(stderr, "%s\n", tf_error()); return 1; }
 *         printf("y[0] = %f, dL/dW[0] = %f\n", tf_f32(y)[0],
 *                tf_params_get(ps, "layer.linear1.weight")->grad[0]);
 *         tf_ctx_free(ctx);
 *         tf_params_free(ps);
 *         return 0;
 *     }
 *
 * Conventions: every tensor is row-major with explicit strides; views
 * (reshape, transpose, narrow) share both data and gradient memory with their
 * base, so a view needs no backward of its own. Operations record themselves on
 * the context's tape; tf_backward() walks it in reverse. An operation that fails
 * returns NULL and leaves a message in tf_error(); an operation given a NULL
 * input returns NULL silently, so a whole forward pass can be checked once at the end.
 */
#ifndef TFORMER_H
#define TFORMER_H

/* Every public header, lowest layer first (tools/check_layers.py holds the map). */
#include "tformer/core.h"
#include "tformer/config.h"
#include "tformer/ops.h"
#include "tformer/safetensors.h"
#include "tformer/plot.h"
#include "tformer/nn.h"
#include "tformer/heads.h"
#include "tformer/tokenizer.h"
#include "tformer/metrics.h"
#include "tformer/data.h"
#include "tformer/images.h"
#include "tformer/generate.h"
#include "tformer/task.h"
#include "tformer/dist.h"
#include "tformer/optim.h"
#include "tformer/schedule.h"
#include "tformer/train_config.h"
#include "tformer/gpt.h"
#include "tformer/bert.h"
#include "tformer/vit.h"
#include "tformer/vivit.h"
#include "tformer/swin.h"
#include "tformer/nystrom.h"
#include "tformer/continual.h"
#include "tformer/seq2seq.h"
#include "tformer/rnn_seq2seq.h"
#include "tformer/caption.h"
#include "tformer/model.h"
#include "tformer/interop.h"
#include "tformer/trainer.h"
#include "tformer/train.h"

#endif /* TFORMER_H */
