/* tformer: configuration field tables. */
#ifndef TFORMER_CONFIG_H
#define TFORMER_CONFIG_H

#include "core.h"

#ifdef __cplusplus
extern "C" {
#endif

#ifdef __cplusplus
}
#endif
#endif /* TFORMER_CONFIG_H */
