/* What the tests of tformer serve share (test_serve.c, test_serve_batch.c): the server as a child
 * process on a free port of 127.0.0.1, requests through libcurl, a GPT trained for completions. */
#ifndef TF_TEST_SERVE_CASE_H
#define TF_TEST_SERVE_CASE_H

#include <stddef.h>
#include <sys/types.h>

#define ST_DIR "tests/fixtures_roberta_st/tiny_roberta_st"

typedef struct {
    pid_t pid;
    int port, err_fd;
} server;

/* tformer serve ARGS --port 0 in a child; the port from its "listening on" line (30 s at most). */
int server_start(server *sv, const char *args);
/* SIGTERM; the exit status (128 + signal when killed). */
int server_stop(server *sv);
/* METHOD path with body (NULL: GET) and key (NULL: none); the status, the reply in *out (malloc'd). */
long http(const server *sv, const char *path, const char *body, size_t len, const char *key, char **out);
long post(const server *sv, const char *path, const char *body, const char *key, char **out);
/* The reply is OpenAI's error shape. */
int is_error(const char *reply);
/* The text of the events of a stream (each "data: {...}"'s choices[0].text), and whether it ended with [DONE]. */
int stream_text(const char *reply, char *text, size_t n, int *events);
/* A GPT trained here into dir (when *dir is "") and the CLI's continuation of "ab" with flags into text. */
int gpt_and_cli_text(char *dir, size_t n_dir, const char *flags, char *text, size_t n);

/* A request made on its own thread (serve_call_thread): POST path with body (NULL: text) and key. */
typedef struct {
    const server *sv;
    const char *path, *key, *body;
    char text[256];
    long status;
    char *reply;
} serve_call;
void *serve_call_thread(void *arg);
/* gpt_and_cli_text's GPT and text (cli_flags), then a server of it: "--model gpt=DIR " server_flags. */
int gpt_serve(server *sv, char *dir, size_t n_dir, const char *cli_flags, char *cli, size_t n_cli, const char *server_flags);

#endif
