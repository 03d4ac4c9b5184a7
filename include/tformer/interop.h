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

/* ---------------------------------------------------------------- Hugging Face models */

/* Run a Hugging Face model folder (config.json's architectures[0] and
 * model.safetensors, as save_pretrained writes them) on the tensors of
 * input_path, named as that model's forward() arguments, and write the output
 * fields it computes under Hugging Face's names (logits, last_hidden_state, ...)
 * to output_path. An unsupported architecture is an error listing the
 * supported ones. Warnings go to `log` when non-NULL. See docs/hf-run.md. */
TF_API int tf_hf_run(const char *model_dir, const char *input_path, const char *output_path, FILE *log);

#ifdef __cplusplus
}
#endif
#endif /* TFORMER_INTEROP_H */
