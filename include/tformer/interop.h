/* tformer: Running PyTorch and Hugging Face models. */
#ifndef TFORMER_INTEROP_H
#define TFORMER_INTEROP_H

#include <stdio.h>

#include "core.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------- PyTorch modules */

/* Run a torch.nn module (MultiheadAttention, TransformerEncoderLayer, ...)
 * described by a JSON config, with its state_dict weights, on named inputs;
 * write `output` (and gradients when the inputs hold `grad_output`). Warnings
 * (unknown config keys) go to `log` when non-NULL. See docs/torch-run.md. */
TF_API int tf_torch_run(const char *config_path, const char *weights_path, const char *input_path,
                        const char *output_path, FILE *log);

#ifdef __cplusplus
}
#endif
#endif /* TFORMER_INTEROP_H */
