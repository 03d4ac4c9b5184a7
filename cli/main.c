/* tformer: the command-line tool. The only place that exits. */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

#define TF_VERSION "0.1.0"

static int parse_flags(int argc, char **argv, const char *const *keys, const char **vals, int n);

static void usage(FILE *f) {
    fprintf(f,
            "usage: tformer <command> [options]\n"
            "\n"
            "commands:\n"
            "  torch-run --config C.json --weights W.safetensors --input I.safetensors --output O.safetensors\n"
            "            run a torch.nn module (MultiheadAttention, TransformerEncoderLayer,\n"
            "            TransformerDecoderLayer, TransformerEncoder, TransformerDecoder,\n"
            "            Transformer) from its state_dict; see docs/torch-run.md\n"
            "  train --data FILE... --out RUN_DIR [--tokenizer DIR|char] [--config CFG.json] [--resume]\n"
            "            [--steps N --batch N --context N --layers N --heads N --width N --lr X\n"
            "             --eval-every N --seed N --threads N ...]   train a GPT (see docs/gpt.md)\n"
            "  generate --model DIR --prompt TEXT [--max-tokens N --temperature T --top-k K --top-p P\n"
            "            --repetition-penalty R --seed S --stop TEXT --beam N --length-penalty A]\n"
            "  eval --model DIR --data FILE...      loss and perplexity\n"
            "  encode --tokenizer DIR|char          text on stdin -> ids on stdout\n"
            "  decode --tokenizer DIR|char          ids on stdin -> text on stdout\n"
            "  tokenizer-train --type bpe|byte-bpe|wordpiece|char --vocab-size N --out DIR\n"
            "            [--min-frequency N] FILE...  learn a vocabulary\n"
            "  inspect FILE.safetensors\n"
            "            list the tensors of a safetensors file\n"
            "  compare A.safetensors B.safetensors\n"
            "            relative L2 error of every tensor of B against the same name in A\n"
            "  version   print the version\n"
            "  help      this text\n");
}

_Noreturn void cli_die(const char *cmd, const char *msg) {
    fprintf(stderr, "%s: %s\n", cmd, msg);
    exit(1);
}

_Noreturn void cli_usage_die(const char *cmd, const char *flag) {
    fprintf(stderr, "%s: unknown or incomplete option '%s' (see tformer help)\n", cmd, flag);
    exit(2);
}

int cli_threads_default(void) {
    const char *t = getenv("TFORMER_THREADS");
    return t ? atoi(t) : 0;
}

int cli_parse_flags(int argc, char **argv, const char *const *keys, const char **vals, int n) { return parse_flags(argc, argv, keys, vals, n); }

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

static int cmd_inspect(int argc, char **argv) {
    if (argc != 1) {
        fprintf(stderr, "usage: tformer inspect FILE.safetensors\n");
        return 2;
    }
    tf_st_file *f = tf_st_open(argv[0]);
    if (!f) {
        fprintf(stderr, "tformer inspect: %s\n", tf_error());
        return 1;
    }
    for (int i = 0; i < tf_st_count(f); i++) {
        const tf_st_entry *e = tf_st_entry_at(f, i);
        printf("%-50s %-5s (", e->name, tf_st_dtype_name(e->dtype));
        for (int d = 0; d < e->ndim; d++) printf(d ? ",%lld" : "%lld", (long long)e->shape[d]);
        printf(")\n");
    }
    tf_st_close(f);
    return 0;
}

/* Relative L2 error of b against a, in double. */
static double rel_err(const tf_tensor *a, const tf_tensor *b) {
    double d = 0, r = 0;
    for (int64_t i = 0; i < tf_numel(a); i++) {
        double x = a->dtype == TF_DTYPE_F32 ? tf_f32(a)[i] : a->dtype == TF_DTYPE_I32 ? tf_i32(a)[i] : tf_u8(a)[i];
        double y = b->dtype == TF_DTYPE_F32 ? tf_f32(b)[i] : b->dtype == TF_DTYPE_I32 ? tf_i32(b)[i] : tf_u8(b)[i];
        d += (x - y) * (x - y);
        r += x * x;
    }
    return r > 0 ? sqrt(d / r) : sqrt(d);
}

static int cmd_compare(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: tformer compare REFERENCE.safetensors OTHER.safetensors\n");
        return 2;
    }
    tf_st_file *a = tf_st_open(argv[0]), *b = a ? tf_st_open(argv[1]) : NULL;
    tf_arena *ar = tf_arena_new(0);
    int rc = 0;
    if (!a || !b || !ar) {
        fprintf(stderr, "tformer compare: %s\n", tf_error());
        rc = 1;
    }
    double worst = 0;
    for (int i = 0; !rc && i < tf_st_count(b); i++) {
        const tf_st_entry *eb = tf_st_entry_at(b, i), *ea = tf_st_find(a, eb->name);
        if (!ea) {
            printf("%-50s only in %s\n", eb->name, argv[1]);
            continue;
        }
        tf_tensor *ta = tf_st_to_tensor(a, ea, ar), *tb = tf_st_to_tensor(b, eb, ar);
        if (!ta || !tb || tf_numel(ta) != tf_numel(tb)) {
            printf("%-50s %s\n", eb->name, !ta || !tb ? tf_error() : "different sizes");
            rc = 1;
            continue;
        }
        double e = rel_err(ta, tb);
        worst = e > worst ? e : worst;
        printf("%-50s relative error %.3e\n", eb->name, e);
    }
    if (a && b) printf("worst relative error %.3e over %d tensors\n", worst, tf_st_count(b));
    tf_arena_free(ar);
    tf_st_close(a);
    tf_st_close(b);
    return rc;
}

/* All of stdin; exits on a read error. */
static char *read_stdin(size_t *len) {
    size_t cap = 1 << 16, n = 0, got;
    char *buf = malloc(cap);
    while (buf && (got = fread(buf + n, 1, cap - n, stdin)) > 0) {
        n += got;
        if (n == cap) {
            char *nb = realloc(buf, cap *= 2);
            if (!nb) free(buf);
            buf = nb;
        }
    }
    if (!buf || ferror(stdin)) {
        fprintf(stderr, "tformer: cannot read standard input\n");
        exit(1);
    }
    *len = n;
    return buf;
}

static tf_tokenizer *open_tokenizer(int argc, char **argv, const char *cmd) {
    static const char *const keys[] = {"--tokenizer"};
    const char *v[1] = {0};
    if (parse_flags(argc, argv, keys, v, 1) || !v[0]) {
        fprintf(stderr, "usage: tformer %s --tokenizer DIR|char\n", cmd);
        exit(2);
    }
    tf_tokenizer *t = tf_tokenizer_load(v[0]);
    if (!t) {
        fprintf(stderr, "tformer %s: %s\n", cmd, tf_error());
        exit(1);
    }
    return t;
}

static int cmd_encode(int argc, char **argv) {
    tf_tokenizer *t = open_tokenizer(argc, argv, "encode");
    size_t len;
    char *text = read_stdin(&len);
    tf_ids ids = {0};
    int rc = tf_tokenizer_encode(t, text, len, &ids);
    if (rc) fprintf(stderr, "tformer encode: %s\n", tf_error());
    for (size_t i = 0; !rc && i < ids.n; i++) printf(i ? " %d" : "%d", ids.v[i]);
    if (!rc) printf("\n");
    tf_ids_free(&ids);
    free(text);
    tf_tokenizer_free(t);
    return rc ? 1 : 0;
}

static int cmd_decode(int argc, char **argv) {
    tf_tokenizer *t = open_tokenizer(argc, argv, "decode");
    size_t len;
    char *text = read_stdin(&len), *end, *out = NULL;
    text = realloc(text, len + 1);
    if (!text) return 1;
    text[len] = 0;
    tf_ids ids = {0};
    int rc = 0;
    for (char *p = text; !rc;) {
        while (*p == ' ' || *p == '\n' || *p == '\t' || *p == '\r' || *p == ',') p++;
        if (!*p) break;
        long v = strtol(p, &end, 10);
        if (end == p || v < INT32_MIN || v > INT32_MAX) {
            int w = 0;
            while (w < 20 && p[w] && !strchr(" \n\t\r,", p[w])) w++;
            fprintf(stderr, "tformer decode: '%.*s' is not an id\n", w, p);
            rc = 1;
        } else {
            rc = tf_ids_push(&ids, (int32_t)v);
            p = end;
        }
    }
    if (!rc && tf_tokenizer_decode(t, ids.v, ids.n, &out, &len)) {
        fprintf(stderr, "tformer decode: %s\n", tf_error());
        rc = 1;
    }
    if (!rc) fwrite(out, 1, len, stdout);
    free(out);
    free(text);
    tf_ids_free(&ids);
    tf_tokenizer_free(t);
    return rc;
}

static int cmd_tokenizer_train(int argc, char **argv) {
    static const char *const keys[] = {"--type", "--vocab-size", "--out", "--min-frequency"};
    static const char *const kinds[] = {"char", "bpe", "byte-bpe", "wordpiece"};
    const char *v[4] = {0};
    int first_file = 0;
    while (first_file < argc && !strncmp(argv[first_file], "--", 2)) first_file += 2;
    if (first_file > argc || parse_flags(first_file, argv, keys, v, 4)) return 2;
    int k = 0;
    while (k < 4 && (!v[0] || strcmp(v[0], kinds[k]))) k++;
    tf_tokenizer_train_opts o = {(tf_tokenizer_kind)k, v[1] ? atoi(v[1]) : 0, v[3] ? atoll(v[3]) : 0};
    if (k == 4 || !v[2] || first_file >= argc || (k != 0 && o.vocab_size <= 0)) {
        fprintf(stderr, "usage: tformer tokenizer-train --type bpe|byte-bpe|wordpiece|char --vocab-size N "
                        "--out DIR [--min-frequency N] FILE...\n");
        return 2;
    }
    if (tf_tokenizer_train(&o, (const char *const *)argv + first_file, argc - first_file, v[2])) {
        fprintf(stderr, "tformer tokenizer-train: %s\n", tf_error());
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
    if (!strcmp(argv[1], "train")) return cmd_train(argc - 2, argv + 2);
    if (!strcmp(argv[1], "generate")) return cmd_generate(argc - 2, argv + 2);
    if (!strcmp(argv[1], "eval")) return cmd_eval(argc - 2, argv + 2);
    if (!strcmp(argv[1], "inspect")) return cmd_inspect(argc - 2, argv + 2);
    if (!strcmp(argv[1], "encode")) return cmd_encode(argc - 2, argv + 2);
    if (!strcmp(argv[1], "decode")) return cmd_decode(argc - 2, argv + 2);
    if (!strcmp(argv[1], "tokenizer-train")) return cmd_tokenizer_train(argc - 2, argv + 2);
    if (!strcmp(argv[1], "compare")) return cmd_compare(argc - 2, argv + 2);
    fprintf(stderr, "tformer: unknown command '%s'\n", argv[1]);
    usage(stderr);
    return 2;
}
