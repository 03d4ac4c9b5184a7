/* tformer: the command-line tool. The only place that exits. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tformer.h"

#define TF_VERSION "0.1.0"

static void usage(FILE *f) {
    fprintf(f,
            "usage: tformer <command> [options]\n"
            "\n"
            "commands:\n"
            "  torch-run --config C.json --weights W.safetensors --input I.safetensors --output O.safetensors\n"
            "            run a torch.nn module (MultiheadAttention, TransformerEncoderLayer,\n"
            "            TransformerDecoderLayer, TransformerEncoder, TransformerDecoder,\n"
            "            Transformer) from its state_dict; see docs/torch-run.md\n"
            "  version   print the version\n"
            "  help      this text\n");
}

/* --name VALUE pairs into the slots named in keys; 0 on success. */
static int parse_flags(int argc, char **argv, const char *const *keys, const char **vals, int n) {
    for (int i = 0; i < argc; i++) {
        int k;
        for (k = 0; k < n && strcmp(argv[i], keys[k]); k++) {}
        if (k == n) {
            fprintf(stderr, "tformer: unknown option '%s'\n", argv[i]);
            return -1;
        }
        if (i + 1 >= argc) {
            fprintf(stderr, "tformer: option '%s' needs a value\n", argv[i]);
            return -1;
        }
        vals[k] = argv[++i];
    }
    return 0;
}

static int cmd_torch_run(int argc, char **argv) {
    static const char *const keys[] = {"--config", "--weights", "--input", "--output"};
    const char *v[4] = {0};
    if (parse_flags(argc, argv, keys, v, 4)) return 2;
    for (int i = 0; i < 4; i++)
        if (!v[i]) {
            fprintf(stderr, "tformer torch-run: missing %s\n", keys[i]);
            return 2;
        }
    if (tf_torch_run(v[0], v[1], v[2], v[3], stderr)) {
        fprintf(stderr, "tformer torch-run: %s\n", tf_error());
        return 1;
    }
    return 0;
}

int main(int argc, char **argv) {
    if (argc < 2 || !strcmp(argv[1], "help") || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
        usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    if (!strcmp(argv[1], "version") || !strcmp(argv[1], "--version")) {
        printf("tformer %s\n", TF_VERSION);
        return 0;
    }
    if (!strcmp(argv[1], "torch-run")) return cmd_torch_run(argc - 2, argv + 2);
    fprintf(stderr, "tformer: unknown command '%s'\n", argv[1]);
    usage(stderr);
    return 2;
}
