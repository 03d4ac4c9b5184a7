/* tformer hf-run: a Hugging Face model folder run on named inputs (docs/hf-run.md): a safetensors
 * file of them, or a text (--text) that the folder's tokenizer (or --tokenizer's) turns into
 * input_ids and attention_mask, as the Hugging Face tokenizer's __call__ does. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

enum { MODEL, INPUT, OUTPUT, TEXT, TOKENIZER, THREADS };
const cli_flag cmd_hf_run_flags[] = {
    [MODEL] = {"model", CLI_STRING, "DIR", NULL,
               "config.json + model.safetensors (or a sharded index), as save_pretrained writes them; "
               "DIR/model.safetensors or DIR/model.safetensors.index.json: that form, where the folder holds both"},
    [INPUT] = {"input", CLI_STRING, "I.safetensors", "", "tensors named as the model's forward() arguments (or --text)"},
    [OUTPUT] = {"output", CLI_STRING, "O.safetensors", NULL, "the output fields, by Hugging Face's names"},
    [TEXT] = {"text", CLI_STRING, "TEXT", "",
              "instead of --input: one text, as input_ids and attention_mask (1, T) int64, with [CLS] / [SEP] (or "
              "<s> / </s>) when the tokenizer has them"},
    [TOKENIZER] = {"tokenizer", CLI_STRING, "DIR|FILE", "",
                   "with --text: the tokenizer, for a folder without tokenizer files (a folder or file as encode's "
                   "--tokenizer)"},
    [THREADS] = CLI_THREADS_ROW,
    CLI_END,
};

static int given(const cli_val *v) { return v->text && *v->text; }

/* The start-up line (cli_say): the folder's model_type, and the tokenizer of --text. */
static void say(const cli_args *a, const tf_tokenizer *tok) {
    cli_say(a->verb, &(cli_said){NULL, a->v[MODEL].text, tok, given(&a->v[TOKENIZER]), 0,
                                 "config.json's architectures[0]"});
}

/* --text as a safetensors file of input_ids and attention_mask at path (a temporary name). */
static void text_input(const cli_args *a, const char *path) {
    const cli_verb *v = a->verb;
    const char *spec = given(&a->v[TOKENIZER]) ? a->v[TOKENIZER].text : a->v[MODEL].text, *text = a->v[TEXT].text;
    tf_tokenizer *tok = tf_tokenizer_load(spec);
    if (!tok) {
        fprintf(stderr, "tformer %s: %s%s\n", v->name, tf_error(),
                spec == a->v[MODEL].text ? " (a folder without tokenizer files: give one with --tokenizer DIR|FILE)" : "");
        exit(1);
    }
    say(a, tok);
    tf_ids ids = {0}, types = {0};
    int specials = tf_tokenizer_special_id(tok, "cls") >= 0 && tf_tokenizer_special_id(tok, "sep") >= 0;
    if (specials ? tf_tokenizer_encode_pair(tok, text, strlen(text), NULL, 0, 0, &ids, &types)
                 : tf_tokenizer_encode(tok, text, strlen(text), &ids))
        cli_die(v, tf_error());
    if (!ids.n) cli_die(v, "--text gives no tokens");
    tf_ctx *ctx = tf_ctx_new(0);
    int64_t shape[2] = {1, (int64_t)ids.n};
    tf_tensor *x = ctx ? tf_tensor_new(ctx, TF_DTYPE_I32, 2, shape, 0) : NULL;
    tf_tensor *mask = x ? tf_tensor_new(ctx, TF_DTYPE_I32, 2, shape, 0) : NULL;
    tf_st_writer *w = mask ? tf_st_writer_new() : NULL;
    if (!w) cli_die(v, "out of memory");
    for (size_t i = 0; i < ids.n; i++) tf_i32(x)[i] = ids.v[i], tf_i32(mask)[i] = 1;
    if (tf_st_writer_add_as(w, "input_ids", x, TF_ST_I64) || tf_st_writer_add_as(w, "attention_mask", mask, TF_ST_I64) ||
        tf_st_writer_save(w, path))
        cli_die(v, tf_error());
    fprintf(stderr, "tformer %s: --text as %zu tokens (input_ids, attention_mask)\n", v->name, ids.n);
    tf_st_writer_free(w), tf_ctx_free(ctx), tf_ids_free(&ids), tf_ids_free(&types), tf_tokenizer_free(tok);
}

int cmd_hf_run(const cli_args *a) {
    tf_set_threads(cli_threads(&a->v[THREADS]));
    int text = given(&a->v[TEXT]);
    if (text == given(&a->v[INPUT])) cli_usage_error(a, "give --input FILE or --text TEXT (one of them)");
    if (!text && given(&a->v[TOKENIZER])) cli_usage_error(a, "--tokenizer goes with --text");
    char path[] = "/tmp/tformer_hf_run_XXXXXX";
    if (text) {
        int fd = mkstemp(path);
        if (fd < 0 || close(fd)) cli_die(a->verb, "cannot create a temporary file in /tmp");
        text_input(a, path);
    } else say(a, NULL);
    int rc = tf_hf_run(a->v[MODEL].text, text ? path : a->v[INPUT].text, a->v[OUTPUT].text, stderr);
    if (text) unlink(path);
    if (rc) cli_die(a->verb, tf_error());
    return 0;
}
