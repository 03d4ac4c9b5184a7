/* The one op table: adding an op means one enum value in tformer.h, one line
 * here, and its forward/backward next to its constructor. */
#include "ops_internal.h"

#define TF_OP(e, name) [e] = {#name, tf_op_##name##_forward, tf_op_##name##_backward, 0}
/* An op whose forward writes every element of its output (the arena need not zero it first). */
#define TF_OP_W(e, name) [e] = {#name, tf_op_##name##_forward, tf_op_##name##_backward, 1}

const tf_op_def tf_op_table[TF_OP_COUNT] = {
    TF_OP_W(TF_OP_COPY, copy),
    TF_OP_W(TF_OP_MATMUL, matmul),
    TF_OP_W(TF_OP_ADD, add),
    TF_OP_W(TF_OP_MUL, mul),
    TF_OP_W(TF_OP_SCALE, scale),
    TF_OP_W(TF_OP_BIAS_ADD, bias_add),
    TF_OP_W(TF_OP_SOFTMAX, softmax),
    TF_OP_W(TF_OP_LAYERNORM, layernorm),
    TF_OP_W(TF_OP_RELU, relu),
    TF_OP_W(TF_OP_GELU, gelu),
    TF_OP_W(TF_OP_DROPOUT, dropout),
    TF_OP(TF_OP_EMBEDDING, embedding),
    TF_OP(TF_OP_CONCAT, concat),
    TF_OP(TF_OP_SUM, sum),
    TF_OP(TF_OP_CROSS_ENTROPY, cross_entropy),
    TF_OP_W(TF_OP_SDPA, sdpa),
    TF_OP_W(TF_OP_DENSE, dense),
    TF_OP_W(TF_OP_TANH, tanh),
    TF_OP_W(TF_OP_GRU_CELL, gru_cell),
    TF_OP_W(TF_OP_LSTM_CELL, lstm_cell),
    TF_OP_W(TF_OP_PATCH_EMBED, patch_embed),
    TF_OP_W(TF_OP_MAX, max),
    TF_OP_W(TF_OP_RECIPROCAL, reciprocal),
    TF_OP_W(TF_OP_DEPTHWISE_CONV, depthwise_conv),
    TF_OP(TF_OP_SOFT_CROSS_ENTROPY, soft_cross_entropy),
    TF_OP(TF_OP_SPARSE_ATTENTION, sparse_attention),
    TF_OP_W(TF_OP_RMSNORM, rmsnorm),
    TF_OP_W(TF_OP_CONV2D, conv2d),
    TF_OP_W(TF_OP_ROPE, rope),
};
