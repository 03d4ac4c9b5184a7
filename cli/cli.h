/* Shared helpers of the CLI's command files. */
#ifndef TF_CLI_H
#define TF_CLI_H

#include "tformer.h"

_Noreturn void cli_die(const char *cmd, const char *msg);
_Noreturn void cli_usage_die(const char *cmd, const char *flag);
/* --name VALUE pairs into the slots named in keys; 0 on success. */
int cli_parse_flags(int argc, char **argv, const char *const *keys, const char **vals, int n);
/* TFORMER_THREADS, else 0 (all cores). */
int cli_threads_default(void);

int cmd_train(int argc, char **argv);
int cmd_generate(int argc, char **argv);
int cmd_eval(int argc, char **argv);

#endif
