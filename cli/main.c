/* tformer: the command-line tool. One table of verbs (verbs.c): each verb
 * lives in cmd_<verb>.c with its flag rows; cli_run (flags.c) parses them and calls it. */
#include <stdio.h>
#include <string.h>

#include "cli.h"

int main(int argc, char **argv) {
    if (argc < 2) return cli_usage_all(stderr), 2;
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) return cli_usage_all(stdout), cli_stdout_status(NULL, 0);
    if (!strcmp(argv[1], "--version")) return cli_run(cli_find_verb("version"), 0, argv + 2);
    const cli_verb *v = cli_find_verb(argv[1]);
    if (!v) {
        fprintf(stderr, "tformer: unknown command '%s'\n", argv[1]);
        cli_usage_all(stderr);
        return 2;
    }
    return cli_run(v, argc - 2, argv + 2);
}
