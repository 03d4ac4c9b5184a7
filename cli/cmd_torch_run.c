/* tformer torch-run: a torch.nn module run from its state_dict (docs/torch-run.md). */
#include <stdlib.h>

#include <cjson/cJSON.h>

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

/* The start-up line: the module the config names (the library reports a config it cannot read), the files. */
static void say(const cli_args *a) {
    char module[128] = "the module";
    FILE *f = fopen(a->v[CONFIG].text, "rb");
    char buf[65536];
    size_t k = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
    if (f) fclose(f);
    buf[k] = 0;
    cJSON *root = cJSON_Parse(buf);
    const cJSON *m = cJSON_GetObjectItemCaseSensitive(root, "module");
    if (cJSON_IsString(m)) snprintf(module, sizeof module, "%s", m->valuestring);
    cJSON_Delete(root);
    cli_say_plain(a->verb, 1, "%s (--config %s), float32, its state_dict from %s; the inputs in %s; writing %s",
                  module, a->v[CONFIG].text, a->v[WEIGHTS].text, a->v[INPUT].text, a->v[OUTPUT].text);
}

int cmd_torch_run(const cli_args *a) {
    const cli_val *v = a->v;
    tf_set_threads(cli_threads(&v[THREADS]));
    say(a);
    if (tf_torch_run(v[CONFIG].text, v[WEIGHTS].text, v[INPUT].text, v[OUTPUT].text, stderr)) cli_die(a->verb, tf_error());
    return 0;
}
