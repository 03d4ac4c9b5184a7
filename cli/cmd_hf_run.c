/* tformer hf-run: a Hugging Face model folder run on named inputs (docs/hf-run.md). */
#include "cli.h"

enum { MODEL, INPUT, OUTPUT };
const cli_flag cmd_hf_run_flags[] = {
    [MODEL] = {"model", CLI_STRING, "DIR", NULL, "config.json + model.safetensors, as save_pretrained writes them"},
    [INPUT] = {"input", CLI_STRING, "I.safetensors", NULL, "tensors named as the model's forward() arguments"},
    [OUTPUT] = {"output", CLI_STRING, "O.safetensors", NULL, "the output fields, by Hugging Face's names"},
    CLI_END,
};

int cmd_hf_run(const cli_args *a) {
    if (tf_hf_run(a->v[MODEL].text, a->v[INPUT].text, a->v[OUTPUT].text, stderr)) cli_die(a->verb, tf_error());
    return 0;
}
