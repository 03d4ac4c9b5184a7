/* tformer torch-run: a torch.nn module run from its state_dict (docs/torch-run.md). */
#include "cli.h"

enum { CONFIG, WEIGHTS, INPUT, OUTPUT, THREADS };
const cli_flag cmd_torch_run_flags[] = {
    [CONFIG] = {"config", CLI_STRING, "C.json", NULL,
                "the module (MultiheadAttention, Transformer, TransformerEncoder[Layer], TransformerDecoder[Layer]) "
                "and its constructor's arguments"},
    [WEIGHTS] = {"weights", CLI_STRING, "W.safetensors", NULL, "the module's state_dict()"},
    [INPUT] = {"input", CLI_STRING, "I.safetensors", NULL, "tensors named as forward()'s arguments (+ grad_output)"},
    [OUTPUT] = {"output", CLI_STRING, "O.safetensors", NULL, "output (and gradients), written atomically"},
    [THREADS] = CLI_THREADS_ROW,
    CLI_END,
};

int cmd_torch_run(const cli_args *a) {
    const cli_val *v = a->v;
    tf_set_threads(cli_threads(&v[THREADS]));
    if (tf_torch_run(v[CONFIG].text, v[WEIGHTS].text, v[INPUT].text, v[OUTPUT].text, stderr)) cli_die(a->verb, tf_error());
    return 0;
}
