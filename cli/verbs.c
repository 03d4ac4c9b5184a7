/* The table of verbs: each verb lives in cmd_<verb>.c with its flag rows;
 * main.c dispatches on it, and tests/fuzz/fuzz_cli.c parses against it. */
#include <stdio.h>
#include <string.h>

#include "cli.h"

#define TF_VERSION "0.1.0"

static int cmd_version(const cli_args *a);
static int cmd_help(const cli_args *a);
static const cli_flag no_flags[] = {CLI_END};

static const cli_verb VERBS[] = {
    {"train", "Train a GPT, pre-train a BERT, a translation model, a ViT or Swin, an ImageGPT, a ViViT, a Continual Transformer or a ListOps classifier (docs/gpt.md, bert.md, translation.md, vision.md, video.md, continual.md, long-sequences.md)", cmd_train, cmd_train_flags, cmd_train_tables, NULL, 0, 0},
    {"generate", "Continue a prompt with a trained GPT", cmd_generate, cmd_generate_flags, cmd_generate_tables, NULL, 0, 0},
    {"eval", "Loss and perplexity of a GPT on text files, a ViT's accuracy on idx images, or a ListOps classifier's on its test set", cmd_eval, cmd_eval_flags, NULL, NULL, 0, 0},
    {"torch-run", "Run a torch.nn Transformer module from its state_dict (docs/torch-run.md)", cmd_torch_run,
     cmd_torch_run_flags, NULL, NULL, 0, 0},
    {"hf-run", "Run a Hugging Face model folder on inputs named as its forward() arguments (docs/hf-run.md)",
     cmd_hf_run, cmd_hf_run_flags, NULL, NULL, 0, 0},
    {"embed", "Sentence embeddings of a BERT, one text per line (docs/bert.md)", cmd_embed, cmd_embed_flags, NULL, NULL,
     0, 0},
    {"fill-mask", "The likeliest tokens for each [MASK] of a text (docs/bert.md)", cmd_fill_mask, cmd_fill_mask_flags,
     NULL, NULL, 0, 0},
    {"finetune", "Fine-tune a BERT folder: classify, pairs, tag or span (docs/bert.md)", cmd_finetune, cmd_finetune_flags,
     cmd_finetune_tables, NULL, 0, 0},
    {"predict", "Labels, tags or answers of a fine-tuned BERT for inputs on standard input (docs/bert.md)", cmd_predict,
     cmd_predict_flags, NULL, NULL, 0, 0},
    {"classify", "Accuracy of a ViT on labelled images, the labels of PNG files, or of clips for a ViViT (docs/vision.md, video.md)",
     cmd_classify, cmd_classify_flags, NULL, "[FILE.png... | CLIP_DIR...]", 0, -1},
    {"caption", "Caption PNG images with a captioner folder, and draw where each word looked (docs/caption.md)",
     cmd_caption, cmd_caption_flags, NULL, "FILE.png...", 1, -1},
    {"complete-image", "Complete an image from its top rows with an ImageGPT folder: a PNG grid (docs/vision.md)",
     cmd_complete_image, cmd_complete_image_flags, cmd_complete_image_tables, NULL, 0, 0},
    {"translate", "Translate sentences on standard input with an encoder-decoder folder (docs/translation.md)",
     cmd_translate, cmd_translate_flags, cmd_translate_tables, NULL, 0, 0},
    {"bleu", "Corpus BLEU / chrF of hypotheses on standard input, as sacreBLEU (docs/translation.md)", cmd_bleu,
     cmd_bleu_flags, NULL, NULL, 0, 0},
    {"encode", "Text on standard input -> token ids on standard output", cmd_encode, cmd_encode_flags, NULL, NULL, 0, 0},
    {"decode", "Token ids on standard input -> text on standard output", cmd_decode, cmd_decode_flags, NULL, NULL, 0, 0},
    {"tokenizer-train", "Learn a vocabulary from text files (docs/tokenizers.md)", cmd_tokenizer_train,
     cmd_tokenizer_train_flags, cmd_tokenizer_train_tables, "FILE...", 1, -1},
    {"stream", "Run a continual model on a stream: one feature vector per line in, one output per step out "
     "(docs/continual.md)", cmd_stream, cmd_stream_flags, NULL, NULL, 0, 0},
    {"serve", "Serve models over HTTP: an OpenAI-compatible API (embeddings, completions, ...) (docs/serve.md)",
     cmd_serve, cmd_serve_flags, NULL, NULL, 0, 0},
    {"inspect", "List the tensors of a safetensors file", cmd_inspect, cmd_inspect_flags, NULL, "FILE.safetensors", 1, 1},
    {"compare", "Relative L2 error of every tensor of B against the tensor of the same name in A", cmd_compare,
     cmd_compare_flags, NULL, "A.safetensors B.safetensors", 2, 2},
    {"convert", "Convert files: idx images to PNG, a safetensors tensor to .npy or JSON, a text of ids to "
     "safetensors (hf-run's input)", cmd_convert, cmd_convert_flags, NULL, "IN OUT", 2, 2},
    {"version", "Print the version", cmd_version, no_flags, NULL, NULL, 0, 0},
    {"help", "This text; help VERB: the verb's flags", cmd_help, no_flags, NULL, "[VERB]", 0, 1},
};
enum { N_VERBS = sizeof VERBS / sizeof VERBS[0] };

/* sacreBLEU's short flags (its smoothing and tokeniser names are bleu's values too); the length
 * limit's other names (one name per setting: --max-len for inputs, --max-tokens for new tokens). */
static const cli_alias ALIASES[] = {
    {"embed", "--max-length", "max-len"}, /* Hugging Face tokenizers' max_length */
    {"bleu", "-lc", "lowercase"}, {"bleu", "-tok", "tokenize"}, {"bleu", "-m", "metrics"},
    {"bleu", "-s", "smooth"},     {"bleu", "-sv", "smooth-value"}, {"bleu", "-l", "language-pair"},
};

const cli_alias *cli_aliases(int *n) {
    *n = (int)(sizeof ALIASES / sizeof ALIASES[0]);
    return ALIASES;
}

const cli_verb *cli_verbs(int *n) {
    *n = N_VERBS;
    return VERBS;
}

const cli_verb *cli_find_verb(const char *name) {
    for (int i = 0; i < N_VERBS; i++)
        if (!strcmp(VERBS[i].name, name)) return &VERBS[i];
    return NULL;
}

void cli_usage_all(FILE *f) {
    fprintf(f, "usage: tformer <command> [options]   (tformer <command> --help: its options)\n\ncommands:\n");
    for (int i = 0; i < N_VERBS; i++) fprintf(f, "  %-16s %s\n", VERBS[i].name, VERBS[i].summary);
}

static int cmd_version(const cli_args *a) {
    (void)a;
    printf("tformer %s\n", TF_VERSION);
    /* what runs the arithmetic on this machine (docs/performance.md) */
    printf("kernels: %s\nmatrix products: %s\nbf16 products: %s\n", tf_kernels_info(), tf_blas_info(), tf_bf16_info());
    return 0;
}

static int cmd_help(const cli_args *a) {
    const cli_verb *about = a->n_operands ? cli_find_verb(a->operands[0]) : NULL;
    if (a->n_operands && !about) cli_usage_error(a, "unknown command '%s'", a->operands[0]);
    if (!about) return cli_usage_all(stdout), 0;
    char help_flag[] = "--help", *args[] = {help_flag, NULL};
    return cli_run(about, 1, args);
}

