/* tformer: output heads shared by the model families. */
#ifndef TFORMER_HEADS_H
#define TFORMER_HEADS_H

#include "nn.h"

#ifdef __cplusplus
extern "C" {
#endif

#ifdef __cplusplus
}
#endif
#endif /* TFORMER_HEADS_H */
