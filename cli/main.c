/* tformer: the command-line tool. One table of verbs (verbs.c): each verb
 * lives in cmd_<verb>.c with its flag rows; cli_run (flags.c) parses them and calls it. */
#include <stdio.h>
#include <string.h>

#include "cli.h"

/* The verb nearest to a misspelt name (cli_is_near), or NULL. */
static const char *closest_verb(const char *name) {
    int n, best = 99;
    const cli_verb *verbs = cli_verbs(&n), *near = NULL;
    for (int i = 0; i < n; i++) {
        int d = cli_edit_distance(name, verbs[i].name);
        if (cli_is_near(d, strlen(name), strlen(verbs[i].name)) && d < best) best = d, near = &verbs[i];
    }
    return near ? near->name : NULL;
}

int main(int argc, char **argv) {
    if (argc < 2) return cli_usage_all(stderr), 2;
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) return cli_usage_all(stdout), cli_stdout_status(NULL, 0);
    if (!strcmp(argv[1], "--version")) return cli_run(cli_find_verb("version"), 0, argv + 2);
    const cli_verb *v = cli_find_verb(argv[1]);
    if (!v) {
        const char *near = closest_verb(argv[1]);
        fprintf(stderr, "tformer: unknown command '%s'%s%s%s\n", argv[1], near ? " (did you mean " : "", near ? near : "",
                near ? "?)" : "");
        cli_usage_all(stderr);
        return 2;
    }
    return cli_run(v, argc - 2, argv + 2);
}
