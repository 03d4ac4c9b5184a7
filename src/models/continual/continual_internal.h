/* Private to src/models/continual: what its registry row takes from its other files. */
#ifndef TF_CONTINUAL_INTERNAL_H
#define TF_CONTINUAL_INTERNAL_H

#include "../../core/core_internal.h"
#include "../family.h"
#include "tformer/continual.h"

/* The row's stream (continual_stream.c): step mode, or recompute. */
tf_stream *tf_continual_stream_new(const void *model, const tf_stream_opts *o);

#endif
