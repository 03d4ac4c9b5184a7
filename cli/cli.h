/* The tformer command: a table of verbs (verbs.c), one file per verb
 * (cmd_<verb>.c) and one flag parser (flags.c). Only cli/ prints and exits. */
#ifndef TF_CLI_H
#define TF_CLI_H

#include <stdio.h>

#include "tformer.h"

/* ---------------------------------------------------------------- flags */

typedef enum {
    CLI_STRING, /* --name VALUE (or --name=VALUE) */
    CLI_INT,    /* a non-negative integer, parsed strictly */
    CLI_SWITCH, /* --name alone */
    CLI_LIST    /* --name VALUE... : every value up to the next --flag */
} cli_kind;

typedef struct {
    const char *name; /* without the dashes; NULL ends a verb's list */
    cli_kind kind;
    const char *arg;  /* the value in --help: "DIR", "N", "FILE..." */
    const char *def;  /* the default as text ("off" for a switch, "" for none); NULL: required */
    const char *help;
} cli_flag;

#define CLI_END {NULL, CLI_STRING, NULL, NULL, NULL}

typedef struct {
    const char *text; /* CLI_STRING, CLI_INT: the value given, else the default (NULL when none) */
    long long i;      /* CLI_INT */
    int given;        /* on the command line (a switch: on) */
    char **list;      /* CLI_LIST: the values, in argv */
    int n;
} cli_val;

typedef struct cli_args cli_args;

typedef struct cli_verb {
    const char *name, *summary;
    int (*run)(const cli_args *a); /* the exit status */
    const cli_flag *flags;         /* ended by a row without a name */
    /* The field tables (config.h) whose rows are flags too, bound to the
     * verb's structs holding their defaults; NULL: none. Returns how many. */
    int (*tables)(const tf_fields **t);
    const char *operands;          /* arguments besides the flags ("FILE..."), NULL: none */
    int min_operands, max_operands; /* max -1: any number */
} cli_verb;

enum { CLI_MAX_FLAGS = 24 };

/* A parsed command line. Flags of field tables (config.h) are kept as given,
 * in order, to be set by cli_apply after the verb has read any config file. */
struct cli_args {
    const cli_verb *verb;
    cli_val v[CLI_MAX_FLAGS]; /* one per row of verb->flags */
    char **operands;
    int n_operands;
    const tf_fields *tables;
    int n_tables;
    const char **sets; /* pairs: the flag as typed, its value */
    int n_sets;
    char *err; /* why cli_parse returned -1 (malloc'd; NULL then: out of memory) */
};

/* Parse argv (the words after the verb's name) against the verb's rows and
 * its tables' rows (flags --name with '_' -> '-', aliases too): 0, 1 when
 * --help or -h was asked, -1 with the problem in a->err (an unknown,
 * incomplete or missing flag, a bad number). Prints nothing and never exits
 * (a fuzz target runs it); "--x=v" is split at '=' in argv itself. The
 * table flags are kept in a->sets, not set. cli_args_free(a) after any return. */
int cli_parse(const cli_verb *v, int argc, char **argv, cli_args *a);
void cli_args_free(cli_args *a);
/* "usage: tformer VERB ...", and the whole --help text (the tables'
 * defaults as their structs hold them). */
void cli_usage(const cli_args *a, FILE *f);
void cli_help(const cli_args *a, FILE *f);
/* cli_parse, then the verb. --help / -h prints cli_help and exits 0; a
 * problem prints "tformer VERB: problem" and the usage and exits 2. With
 * TFORMER_CHECK_ARGS set (not "0"), a command line that parses, its table
 * flags' values included, exits 0 without running the verb (tools/docs_run.py
 * checks the docs' commands so). */
int cli_run(const cli_verb *v, int argc, char **argv);
/* rc, or 1 when standard output could not be written (a full disk, a closed pipe), said on
 * stderr as "tformer VERB: standard output: write error: ..." (verb NULL: "tformer: ..."). */
int cli_stdout_status(const char *verb, int rc);
/* The value of --name on the command line being parsed, before parsing
 * (for a verb whose field tables depend on a flag: train --arch), or NULL. */
const char *cli_peek(const char *name);
/* Set the table flags in command-line order; a bad value exits 2 naming the flag. */
void cli_apply(const cli_args *a);
/* "tformer <verb>: message", the usage line, exit 2. */
_Noreturn void cli_usage_error(const cli_args *a, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* ---------------------------------------------------------------- shared by the verbs (common.c) */

/* "tformer <verb>: message", exit 1. In a run of several processes
 * (tf_dist_init) every rank must reach it, or a collective call of the
 * library: the lowest failing rank's message is printed once, by rank 0. */
_Noreturn void cli_die(const cli_verb *v, const char *msg);
/* Threads at most (tf_set_threads clamps to the same bound, or to the cores when there
 * are more): libgomp crashes when it cannot create them, and far more threads than
 * cores only spin. */
#define CLI_MAX_THREADS 256
#define CLI_STR_(x) #x
#define CLI_STR(x) CLI_STR_(x)
/* A verb's --threads row (the help names the bound). */
#define CLI_THREADS_ROW                                                                            \
    {"threads", CLI_INT, "N", "0",                                                                 \
     "threads, 0: all cores, at most " CLI_STR(CLI_MAX_THREADS) " (without the flag: $TFORMER_THREADS if set)"}
/* The --threads value when given, else TFORMER_THREADS, else 0 (all cores). A value
 * above CLI_MAX_THREADS, or a TFORMER_THREADS that is not an integer in
 * [0,CLI_MAX_THREADS], is a usage error naming the flag or the variable (exit 2). */
int cli_threads(const cli_val *threads);

/* What an inference verb assumed, said once on stderr when its model is loaded (issue 55): "tformer VERB:
 * FAMILY (or model_type) model from DIR/; tokenizer FILE (N tokens); T threads (--threads | $TFORMER_THREADS | all cores);
 * float32 | bf16 products | int8 weights (--precision), ISA kernels; EXTRA". Standard output is left to the results. */
typedef struct {
    const char *family;      /* the registry's name of a loaded model's family; NULL: dir's model_type */
    const char *dir;
    const tf_tokenizer *tok; /* NULL: none */
    int tok_flag;            /* the tokenizer came from --tokenizer, not the folder */
    tf_precision precision;  /* --precision */
    const char *extra;       /* other defaults picked (the colour conversion of images...), or NULL */
} cli_said;
void cli_say(const cli_verb *v, const cli_said *s);

/* The start-up line of a verb that reads no model folder (encode, decode, bleu, tokenizer-train, inspect, compare,
 * convert, torch-run, serve), on stderr: "tformer VERB: WHAT", then "; N threads (--threads | $TFORMER_THREADS |
 * all cores), ISA kernels" when threads (a verb computing on threads, after cli_threads). */
void cli_say_plain(const cli_verb *v, int threads, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
/* A tokenizer as the start-up lines name it, into out: "DIR/tokenizer.json (WordPiece, 217 tokens)". */
const char *cli_tokenizer_said(const tf_tokenizer *t, char *out, size_t cap);
/* "a.txt (1.2 kB), b.txt (3.4 kB)" (at most 4 named, then "and N more") into out. */
void cli_files_said(char *const *files, int n, char *out, size_t cap);

/* --rgb and --grayscale of the verbs that read PNG files (classify, caption, complete-image): the colour
 * conversion forced, rather than the automatic one (to the model's channels: RGB to grey as PIL's
 * convert("L"), grey repeated into RGB). */
#define CLI_RGB_ROW                                                                                              \
    {"rgb", CLI_SWITCH, NULL, "off",                                                                             \
     "read each PNG as RGB, PIL's convert(\"RGB\") (grey repeated); a model of grey images refuses it. Without "   \
     "--rgb or --grayscale: converted to the model's channels (docs/vision.md#images-in)"}
#define CLI_GRAYSCALE_ROW                                                                                        \
    {"grayscale", CLI_SWITCH, NULL, "off",                                                                       \
     "read each PNG as grey, PIL's convert(\"L\") (0.299 R + 0.587 G + 0.114 B), repeated into three channels "  \
     "for a model of RGB images"}
/* The colour conversion asked by flags rgb and gray (row numbers) for a model of `channels` channels: 1
 * (grey first) or 3 (RGB); both flags, or --rgb with a grey model, are usage errors naming them. */
int cli_colour(const cli_args *a, int rgb, int gray, int channels);
/* The words cli_say adds for it: "images as grey (--grayscale), ...". */
const char *cli_colour_said(const cli_args *a, int rgb, int gray, int channels);
/* A PNG file read as colour (cli_colour's answer) then given the model's channels; exits naming it. */
void cli_read_png(const cli_verb *v, const char *file, int colour, int channels, tf_images *im);

/* --attention-scale of the verbs that draw attention (--attention-png): translate (default fixed),
 * classify and caption (default auto: their maps over an image, each scaled to its own maximum). */
#define CLI_ATTENTION_SCALE_ROW(def)                                                                             \
    {"attention-scale", CLI_STRING, "fixed|auto", def,                                                           \
     "--attention-png's colours: fixed (0 to 1, pictures comparable) or auto (0 to the largest weight: of each "  \
     "picture for a translation, of each map over an image; said on its colour bar)"}
/* Row scale's value: 1 for auto, 0 for fixed; another value, or the flag without row png given, is a usage error. */
int cli_attention_scale(const cli_args *a, int scale, int png);

/* --resume and --allow-changes of train and finetune, and their TF_RESUME_* mode. */
#define CLI_RESUME_ROW                                                                                           \
    {"resume", CLI_SWITCH, NULL, "off",                                                                          \
     "continue from the run folder's checkpoint, bit for bit (give the same settings; how often to evaluate "     \
     "or keep checkpoints may change, and steps under the inverse_sqrt or constant schedule)"}
#define CLI_ALLOW_CHANGES_ROW                                                                                    \
    {"allow-changes", CLI_SWITCH, NULL, "off",                                                                   \
     "with --resume: continue with changed settings (lr, batch, dropout...), listed on stderr"}
int cli_resume_mode(const cli_args *a, int resume, int allow_changes);
/* --overwrite of train, finetune and tokenizer-train: an --out that holds a run is replaced. */
#define CLI_OVERWRITE_ROW                                                                                        \
    {"overwrite", CLI_SWITCH, NULL, "off",                                                                       \
     "--out holds a run (or a tokenizer) already: remove its files (checkpoints, best/, averaged/, model, "       \
     "tokenizer, losses, pictures) and start afresh; without it such a folder is refused"}
/* Before the task writes into OUT: its lock, and a run already there refused unless
 * --resume or --overwrite (tf_run_folder_begin; kind TF_RUN_FOLDER_*). Collective
 * under mpirun (rank 0 checks the folder); exits with the message on failure. */
void cli_run_folder(const cli_args *a, int kind, const char *out, int resume, int overwrite);
/* A --max-len style flag's value (0: unset) above the model's context: exits naming the flag
 * and both numbers, as finetune's check (inputs are never cut to a length other than asked). */
void cli_check_max_len(const cli_verb *v, const char *flag, long long max_len, int context);
/* --precision of the inference verbs (embed, classify, predict, translate, generate, caption, eval):
 * the products with the weights in f32, bf16 or int8 (tf_params_set_precision; docs/precision.md). */
#define CLI_PRECISION_ROW                                                                                        \
    {"precision", CLI_STRING, "f32|bf16|int8", "f32",                                                            \
     "the products with the weights: f32 as trained; bf16 (AMX / AVX512-BF16; float elsewhere); int8 weights "   \
     "and inputs in blocks of 32 values with a scale each, the inputs quantised per call (AMX / VNNI) "           \
     "(docs/precision.md)"}
/* Flag i's --precision: any other value than f32, bf16 or int8 is a usage error naming the flag
 * (exit 2); bf16 on a CPU without bf16 products says on stderr that they run in float. */
tf_precision cli_precision(const cli_args *a, int i);
/* ps (may be NULL: the family exposes none) set to precision; exits with the error on failure. */
void cli_set_precision(const cli_verb *v, tf_params *ps, tf_precision precision);
/* A language model's folder (TF_CAP_GENERATE; its weights the file's mapped pages) with its tokenizer
 * (--tokenizer when given, else the folder's own), weights checked finite, precision set, and said on
 * stderr; exits with a message on failure (a folder without a tokenizer names --tokenizer). */
tf_model *cli_load_lm(const cli_verb *v, const char *dir, const cli_val *tokenizer, tf_precision precision);
/* The --tokenizer row of the verbs that load a GPT folder. */
#define CLI_GPT_TOKENIZER_ROW                                                                                    \
    {"tokenizer", CLI_STRING, "DIR|FILE", "",                                                                    \
     "the tokenizer, for a model folder without tokenizer files: a folder or file as encode's --tokenizer "     \
     "(docs/tokenizers.md)"}
/* Exit with a message naming the tensor when m's weights hold a NaN or an infinity
 * (a diverged training): the inference verbs refuse such a model. */
void cli_check_model_weights(const cli_verb *v, const char *dir, const tf_model *m);
tf_tokenizer *cli_load_tokenizer(const cli_verb *v, const char *spec);
/* A model opened without a tokenizer (its folder holds none): exits with the tokenizer loader's message,
 * then hint (NULL: none). */
void cli_need_tokenizer(const cli_verb *v, const tf_model *m, const char *hint);
/* Standard input a chunk of lines at a time (lines.c): memory bounded by the chunk, not the input. */
typedef struct {
    int fd;
    char *buf;
    size_t len, cap;
    size_t start, consumed; /* the current chunk's first byte; the first byte after it */
    int eof;
    long long line_no;      /* lines handed out so far */
    int keep_cr;            /* set after cli_lines_init: a CR before the newline stays part of the line */
    const char *name;       /* for messages; NULL: standard input */
    int sniffed;            /* the first bytes were read and looked at */
    void *gz;               /* the gunzip state when they were gzip's magic bytes (1f 8b): what is read is gunzipped */
} cli_lines;
/* Lines of fd (standard input, or a file cli_open_file opened): plain text, or gzip'ed (te.de.gz as Multi30k
 * ships it, `tformer encode < x.gz`, a pipe as well as a file), told by its first two bytes, as the library's data
 * readers do. A gzip stream cut short or corrupt exits naming the input ("cannot gunzip standard input: ..."). */
void cli_lines_init(cli_lines *r, int fd);
/* The most --batch takes on any verb (inputs per forward pass, a chunk of standard input's lines). */
enum { CLI_BATCH_MAX = 1024 };
/* Up to max lines (CR before the newline dropped; the last line may lack its newline) into
 * lines / lens, pointing into r's buffer until the next call; fewer when the input ends or
 * nothing more is ready without waiting (each chunk is answered before more is read); 0 at the
 * end. A line over 64 MiB or a read error exits naming standard input. */
int cli_lines_next(const cli_verb *v, cli_lines *r, int max, const char **lines, size_t *lens);
void cli_lines_free(cli_lines *r);
/* Bytes rather than lines (a text that is one whole, ids): cli_bytes_next reads once more (blocking) unless the
 * input ended, and gives the bytes read and not yet taken (*p valid until the next call; *eof at the end of the
 * input); cli_bytes_take marks the first n of them done with. cli_bytes_waiting: more input is ready at once. */
size_t cli_bytes_next(const cli_verb *v, cli_lines *r, const char **p, int *eof);
void cli_bytes_take(cli_lines *r, size_t n);
int cli_bytes_waiting(const cli_lines *r);
/* Flush standard output after a chunk: a write error (a closed pipe with SIGPIPE ignored, a
 * full disk) exits 1 at once with its cause. */
void cli_flush_or_die(const cli_verb *v);
/* A file named on the command line (inspect, compare) that is one form of a folder's weights beside the other
 * (DIR/model.safetensors and DIR/model.safetensors.index.json) is the form read: tf_st_pick, its error ignored. */
void cli_pick_operand(const char *path);
/* All of a file, NUL-terminated; exits with a message naming it on failure. */
char *cli_read_file(const cli_verb *v, const char *path, size_t *len);
/* A regular file opened for reading (a blocking descriptor; a FIFO or device refused, never waited on); exits
 * with a message naming it on failure. */
int cli_open_file(const cli_verb *v, const char *path);
/* A tf_train_report_fn printing "step N/M | loss ... | val ... | lr ... | tok/s | ETA" every
 * *(int *)user steps, at evaluations and at the end. */
void cli_train_progress(void *user, const tf_train_report *r);
/* On stderr, once the task is made: "tformer train: gpt, 12345 parameters, vocabulary 87 (the
 * data's characters: no --tokenizer given); data a.txt (1.2 MB); writing to run/" (family: its
 * registry name; the vocabulary: the run folder's tokenizer, when it has one). */
void cli_train_summary(const cli_verb *v, const char *family, const tf_task_args *a, tf_task *t);
/* After tf_train's rc 0 or 1: says where a stopped run's checkpoint is, or "saved to DIR/: its
 * files" on stderr when done (when say), ends the processes, and gives the exit status: 130
 * after a signal, 0 when done or stopped at --stop-at. */
int cli_train_end(int rc, int say, const char *out);
/* Set by Ctrl-C, SIGTERM, SIGHUP or SIGUSR1 once cli_catch_sigint is called: the trainer's
 * stop flag (the step finishes, a checkpoint is written). Call it after tf_dist_init. */
extern volatile int cli_stop;
void cli_catch_sigint(void);

/* ---------------------------------------------------------------- the verbs */

#define CLI_VERB(name)                  \
    int cmd_##name(const cli_args *a); \
    extern const cli_flag cmd_##name##_flags[]
CLI_VERB(train);
CLI_VERB(generate);
CLI_VERB(eval);
CLI_VERB(torch_run);
CLI_VERB(hf_run);
CLI_VERB(embed);
CLI_VERB(fill_mask);
CLI_VERB(finetune);
CLI_VERB(predict);
CLI_VERB(classify);
CLI_VERB(caption);
/* dir/config.json's model_type, or "" when it has none or cannot be read (the family's loader then
 * names what is wrong). */
void cli_model_type(const char *dir, char *out, size_t n);
/* Accuracy, loss and per-class accuracy of an image classifier folder (any family with classify-image) on an idx folder's split
 * or a digits CSV (classify, eval), hflip: averaged with the mirror images' predictions; exits with
 * a message on failure; json: as one JSON object (docs/json.md). */
void cli_score_images(const cli_verb *v, const char *model_dir, const char *dir, const char *split, const char *csv,
                      int batch, int hflip, int json, tf_precision precision);
/* The --hflip-tta row of classify and eval. */
#define CLI_HFLIP_TTA_ROW                                                                                          \
    {"hflip-tta", CLI_SWITCH, NULL, "off",                                                                         \
     "with a labelled set: test-time augmentation, each image's class probabilities averaged with its mirror "   \
     "image's (two forward passes)"}
CLI_VERB(complete_image);
CLI_VERB(bleu);
CLI_VERB(translate);
CLI_VERB(encode);
CLI_VERB(decode);
CLI_VERB(tokenizer_train);
CLI_VERB(inspect);
CLI_VERB(compare);
CLI_VERB(convert);
CLI_VERB(stream);
CLI_VERB(serve);
int cmd_train_tables(const tf_fields **t);
int cmd_generate_tables(const tf_fields **t);
int cmd_translate_tables(const tf_fields **t);
int cmd_tokenizer_train_tables(const tf_fields **t);
int cmd_finetune_tables(const tf_fields **t);
int cmd_complete_image_tables(const tf_fields **t);
#undef CLI_VERB

/* Every verb, in the order `tformer --help` lists them (verbs.c); *n: how many. */
const cli_verb *cli_verbs(int *n);
/* Other tools' spellings of a verb's flags, as typed (sacreBLEU's "-lc" for bleu's "lowercase"):
 * the parser takes them as the flag, --help lists them (verbs.c); *n: how many. */
typedef struct {
    const char *verb, *word, *flag;
} cli_alias;
const cli_alias *cli_aliases(int *n);
/* Edits (insert, delete, replace, swap two neighbours) from a to b, leading dashes ignored; and
 * whether d edits are a slip rather than another word: 1 in words up to 4 letters, 2 up to 9,
 * 3 beyond, and fewer than the candidate has letters (the "did you mean" of flags and verbs). */
int cli_edit_distance(const char *a, const char *b);
int cli_is_near(int d, size_t typed_len, size_t candidate_len);
/* The verb named name, or NULL. */
const cli_verb *cli_find_verb(const char *name);
/* "usage: tformer <command> ..." and the list of verbs. */
void cli_usage_all(FILE *f);

/* OUT and its parents, as mkdir -p; a message naming flag when one cannot be made (exits). */
void cli_make_folder(const cli_verb *v, const char *flag, const char *out);
/* A PNG file as a model takes it (read as colour, then given the model's channels: cli_read_png): its
 * header's size checked before anything is decoded (a PNG bomb: 20000x20000 in 389 KB), another size
 * refused or, with resize (--resize), scaled with the box filter (said on stderr). Dies on an error. */
void cli_read_png_sized(const cli_verb *v, const char *file, int size, int colour, int channels, int resize,
                        tf_images *im);
/* The --resize row of the verbs that read PNG files through cli_read_png_sized (classify, caption). */
#define CLI_RESIZE_ROW                                                                                           \
    {"resize", CLI_SWITCH, NULL, "off",                                                                          \
     "PNG files of another size: scaled to the model's, each pixel the mean of the pixels its box covers "        \
     "(PIL's BOX filter), said on stderr; without it such a file is refused"}

/* ---------------------------------------------------------------- --json (json_out.c, docs/json.md) */

/* The --json row of the verbs that print results. */
#define CLI_JSON_ROW                                                                                             \
    {"json", CLI_SWITCH, NULL, "off", "print one JSON object instead of the text (its keys: docs/json.md)"}
struct cJSON;
/* A new object or array (o NULL: the top one, for cli_json_print), or one added to o under key (o
 * an array: appended); out of memory exits, as for every call below. */
struct cJSON *cli_json_object(const cli_verb *v, struct cJSON *o, const char *key);
struct cJSON *cli_json_array(const cli_verb *v, struct cJSON *o, const char *key);
void cli_json_num(const cli_verb *v, struct cJSON *o, const char *key, double x);
void cli_json_str(const cli_verb *v, struct cJSON *o, const char *key, const char *s); /* NULL: null */
void cli_json_bool(const cli_verb *v, struct cJSON *o, const char *key, int b);
/* o on one line of standard output, then freed. */
void cli_json_print(const cli_verb *v, struct cJSON *o);
/* numpy's .npy header (version 1.0, always 128 bytes, so that a count known only at the end can be
 * written over it) of a C-order array of type ("f4", "i4", "u1") and shape, to f; exits on failure. */
void cli_npy_header(const cli_verb *v, FILE *f, const char *type, const int64_t *shape, int ndim);

/* Was the field-table flag ("--beam") given on the command line? */
int cli_table_given(const cli_args *a, const char *flag);

#endif
