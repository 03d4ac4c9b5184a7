/* What several verbs share: errors, threads, loading a model or a tokenizer,
 * reading standard input, training progress lines. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <string.h>
#include <signal.h>
#include <stdarg.h>
#include <sys/stat.h>
#include <stdlib.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "cli.h"

/* msg without a leading "<verb>: " (the library names its function, the CLI the verb: said once). */
static const char *without_verb(const cli_verb *v, const char *msg) {
    size_t n = strlen(v->name);
    return !strncmp(msg, v->name, n) && msg[n] == ':' && msg[n + 1] == ' ' ? msg + n + 2 : msg;
}

_Noreturn void cli_die(const cli_verb *v, const char *msg) {
    if (tf_dist_size() > 1) { /* every rank learns the lowest failing rank's message; rank 0 prints it */
        if (msg != tf_error() || !tf_dist_error_shared()) {
            char copy[1024];
            snprintf(copy, sizeof copy, "%s", msg);
            tf_set_error("%s", copy);
            tf_dist_agree(-1);
        }
        if (tf_dist_rank() == 0) fprintf(stderr, "tformer %s: %s\n", v->name, without_verb(v, tf_error()));
        tf_dist_finalize();
        exit(1);
    }
    fprintf(stderr, "tformer %s: %s\n", v->name, without_verb(v, msg));
    tf_dist_finalize(); /* a job of one process (mpirun -np 1) */
    exit(1);
}

/* text as a thread count: digits only, at most CLI_MAX_THREADS; else -1. */
static int parse_threads(const char *text) {
    long long x = 0;
    if (!*text) return -1;
    for (const char *p = text; *p; p++) {
        if (*p < '0' || *p > '9') return -1;
        if ((x = 10 * x + (*p - '0')) > CLI_MAX_THREADS) return -1;
    }
    return (int)x;
}

/* Where cli_threads took its count from, for cli_say: "--threads", "$TFORMER_THREADS", or NULL (the default). */
static const char *g_threads_from;
static int g_threads, g_threads_asked; /* asked: the verb has --threads */

int cli_threads(const cli_val *threads) {
    const char *env = getenv("TFORMER_THREADS");
    const char *what = threads->given || !env || !*env ? "--threads" : "TFORMER_THREADS";
    g_threads_asked = 1;
    g_threads_from = threads->given ? "--threads" : what[0] == 'T' ? "$TFORMER_THREADS" : NULL;
    const char *text = what[0] == '-' ? threads->text : env;
    int n = text ? parse_threads(text) : 0;
    if (n < 0) {
        fprintf(stderr, "tformer: %s expects an integer in [0,%d] (0: all cores), got '%s'\n", what, CLI_MAX_THREADS,
                text);
        exit(2);
    }
    return g_threads = n;
}

static int folder_len(const char *dir);

static const char *said_precision(tf_precision p) {
    return p == TF_PRECISION_INT8   ? "int8 weights (--precision int8)"
           : p == TF_PRECISION_BF16 ? "bf16 products (--precision bf16)"
                                    : "float32";
}

/* "2 threads (--threads)", "4 threads (all cores: no --threads or $TFORMER_THREADS)" into out. */
static void said_threads(char *out, size_t cap) {
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    int n = g_threads > 0 && (cores < 1 || g_threads <= cores) ? g_threads : (int)(cores > 0 ? cores : 1);
    if (g_threads_from && g_threads > 0)
        snprintf(out, cap, "%d thread%s (%s)", n, n == 1 ? "" : "s", g_threads_from);
    else snprintf(out, cap, "%d thread%s (all cores%s)", n, n == 1 ? "" : "s",
                  g_threads_from || !g_threads_asked ? "" : ": no --threads or $TFORMER_THREADS");
}

void cli_say(const cli_verb *v, const cli_said *s) {
    char threads[96], tok[4400] = "", type[64];
    cli_model_type(s->dir, type, sizeof type);
    said_threads(threads, sizeof threads);
    if (s->tok)
        snprintf(tok, sizeof tok, "; tokenizer %s (%d tokens%s)", tf_tokenizer_source(s->tok),
                 tf_tokenizer_vocab_size(s->tok), s->tok_flag ? ", --tokenizer" : "");
    fprintf(stderr, "tformer %s: %s model from %.*s/%s; %s; %s, %s kernels%s%s\n", v->name,
            s->family ? s->family : *type ? type : "a",
            folder_len(s->dir), s->dir, tok, threads, said_precision(s->precision),
            tf_kernels_info(), s->extra ? "; " : "", s->extra ? s->extra : "");
}

void cli_say_plain(const cli_verb *v, int threads, const char *fmt, ...) {
    char what[8192], t[96];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    if (!threads) {
        fprintf(stderr, "tformer %s: %s\n", v->name, what);
        return;
    }
    said_threads(t, sizeof t);
    fprintf(stderr, "tformer %s: %s; %s, %s kernels\n", v->name, what, t, tf_kernels_info());
}

const char *cli_tokenizer_said(const tf_tokenizer *t, char *out, size_t cap) {
    static const char *const KIND[] = {"characters", "BPE", "byte-level BPE", "WordPiece", "SentencePiece unigram"};
    tf_tokenizer_kind k = tf_tokenizer_kind_of(t);
    const char *src = tf_tokenizer_source(t);
    if (!strcmp(src, "char (the 256 bytes)")) snprintf(out, cap, "char (the 256 bytes: id = byte value)");
    else snprintf(out, cap, "%s (%s, %d tokens)", src, (unsigned)k < 5 ? KIND[k] : "?", tf_tokenizer_vocab_size(t));
    return out;
}

tf_tokenizer *cli_load_tokenizer(const cli_verb *v, const char *spec) {
    tf_tokenizer *t = tf_tokenizer_load(spec);
    if (!t) cli_die(v, tf_error());
    return t;
}

void cli_need_tokenizer(const cli_verb *v, const tf_model *m, const char *hint) {
    if (tf_model_tokenizer(m)) return;
    tf_tokenizer *t = tf_tokenizer_load(tf_model_dir(m)); /* fails as the handle's load did: its message */
    if (t) { /* it reads now: the caller's own checks say what else is wrong */
        tf_tokenizer_free(t);
        return;
    }
    char msg[4400];
    snprintf(msg, sizeof msg, "%s%s", tf_error(), hint ? hint : "");
    cli_die(v, msg);
}

tf_model *cli_load_lm(const cli_verb *v, const char *dir, const cli_val *tokenizer, tf_precision precision) {
    tf_model *m = tf_model_load(dir, &(tf_model_opts){.precision = precision, .require = TF_CAP_GENERATE,
                                                      .tokenizer = tokenizer->text});
    if (!m) cli_die(v, tf_error());
    cli_need_tokenizer(v, m, " (a folder without tokenizer files: give one with --tokenizer DIR|FILE)");
    if (tf_model_require(m, TF_CAP_GENERATE)) cli_die(v, tf_error());
    cli_check_model_weights(v, dir, m);
    cli_say(v, &(cli_said){NULL, dir, tf_model_tokenizer(m), tokenizer->given, precision, NULL});
    return m;
}

void cli_check_max_len(const cli_verb *v, const char *flag, long long max_len, int context) {
    if (max_len <= context) return;
    char msg[200];
    snprintf(msg, sizeof msg, "%s %lld exceeds the model's context (max_position_embeddings) %d", flag, max_len,
             context);
    cli_die(v, msg);
}

tf_precision cli_precision(const cli_args *a, int i) {
    tf_precision p;
    if (tf_precision_parse(a->v[i].text, &p)) cli_usage_error(a, "--precision %s: f32, bf16 or int8", a->v[i].text);
    if (p == TF_PRECISION_BF16 && strncmp(tf_bf16_info(), "float", 5) == 0)
        fprintf(stderr, "tformer %s: --precision bf16: the products run in %s\n", a->verb->name, tf_bf16_info());
    return p;
}

void cli_set_precision(const cli_verb *v, tf_params *ps, tf_precision precision) {
    if (precision == TF_PRECISION_F32) return;
    if (!ps) cli_die(v, "--precision: this model runs in f32 only");
    if (tf_params_set_precision(ps, precision)) cli_die(v, tf_error());
}

static void die_not_finite(const cli_verb *v, const char *dir) {
    fprintf(stderr, "tformer %s: the weights in %s are not finite: %s (a diverged training?)\n", v->name, dir, tf_error());
    exit(1);
}

void cli_check_model_weights(const cli_verb *v, const char *dir, const tf_model *m) {
    if (tf_model_check_finite(m)) die_not_finite(v, dir);
}

int cli_open_file(const cli_verb *v, const char *path) {
    /* a regular file only: a FIFO or device is refused, never waited on (checked before the open,
     * which does not block, and again on the descriptor) */
    struct stat st;
    char msg[4200];
    int fd = stat(path, &st) || S_ISREG(st.st_mode) ? open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC) : -2;
    if (fd >= 0 && (fstat(fd, &st) || !S_ISREG(st.st_mode))) close(fd), fd = -2;
    if (fd == -2) {
        snprintf(msg, sizeof msg, "%s: %s, not a regular file: refusing to read it", path,
                 S_ISDIR(st.st_mode) ? "a directory" : S_ISFIFO(st.st_mode) ? "a FIFO (a named pipe)"
                 : S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode) ? "a device" : "not a file");
        cli_die(v, msg);
    }
    int fl = fd >= 0 ? fcntl(fd, F_GETFL) : -1;
    if (fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK)) {
        if (fd >= 0) close(fd);
        snprintf(msg, sizeof msg, "cannot open %s: %s", path, strerror(errno));
        cli_die(v, msg);
    }
    return fd;
}

void cli_pick_operand(const char *path) {
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    if (!strcmp(base, "model.safetensors") || !strcmp(base, "model.safetensors.index.json")) (void)tf_st_pick(path);
}

char *cli_read_file(const cli_verb *v, const char *path, size_t *len) {
    cli_lines in; /* plain or gzip'ed (ids.txt.gz), as standard input is read */
    cli_lines_init(&in, cli_open_file(v, path));
    in.name = path;
    size_t n = 0, cap = 1 << 16;
    char *buf = malloc(cap);
    for (int eof = 0; buf && !eof;) {
        const char *p;
        size_t k = cli_bytes_next(v, &in, &p, &eof);
        if (n + k + 1 > cap) {
            while (n + k + 1 > cap) cap *= 2;
            char *nb = realloc(buf, cap);
            if (!nb) free(buf);
            buf = nb;
        }
        if (buf) memcpy(buf + n, p, k), n += k;
        cli_bytes_take(&in, k);
    }
    close(in.fd);
    cli_lines_free(&in);
    if (!buf) {
        char msg[4200];
        snprintf(msg, sizeof msg, "cannot read %s: out of memory", path);
        cli_die(v, msg);
    }
    buf[n] = 0;
    *len = n;
    return buf;
}

static void fmt_duration(double s, char *out, size_t n) {
    if (!isfinite(s) || s < 0) s = 0;
    long t = (long)(s + 0.5);
    if (t >= 3600) snprintf(out, n, "%ldh%02ldm", t / 3600, t / 60 % 60);
    else snprintf(out, n, "%ldm%02lds", t / 60, t % 60);
}

void cli_train_progress(void *user, const tf_train_report *r) {
    int every = *(int *)user;
    if (r->notice) {
        fprintf(stderr, "warning: %s\n", r->notice);
        return;
    }
    if (r->info) {
        printf("%s\n", r->info);
        fflush(stdout);
        return;
    }
    int val = !isnan(r->val_loss);
    if (!val && r->step % every && r->step != r->steps) return;
    char eta[32];
    fmt_duration(r->eta_s, eta, sizeof eta);
    printf("step %lld/%lld | loss %.4f", (long long)r->step, (long long)r->steps, r->loss);
    if (val) printf(" | val %.4f", r->val_loss);
    for (int i = 0; val && i < r->n_metrics; i++) printf(" %s %.4f", r->metric_names[i], r->val_metric[i]);
    printf(" | lr %.2e | %.1fk tok/s | ETA %s\n", r->lr, r->tokens_per_s / 1000.0, eta);
    fflush(stdout);
}

int cli_resume_mode(const cli_args *a, int resume, int allow_changes) {
    if (a->v[allow_changes].given && !a->v[resume].given) cli_usage_error(a, "--allow-changes goes with --resume");
    return !a->v[resume].given ? TF_RESUME_NONE : a->v[allow_changes].given ? TF_RESUME_CHANGED : TF_RESUME_EXACT;
}

static int make_dirs(const char *flag, const char *out, int parents_only, char *msg, size_t n);

/* A folder's name without trailing slashes ("run/" -> "run"; "/" stays), to add one "/" after it. */
static int folder_len(const char *dir) {
    size_t n = strlen(dir);
    while (n > 1 && dir[n - 1] == '/') n--;
    return n == 1 && dir[0] == '/' ? 0 : (int)n;
}

void cli_run_folder(const cli_args *a, int kind, const char *out, int resume, int overwrite) {
    int replace = a->v[overwrite].given;
    if (replace && resume)
        cli_usage_error(a, "--overwrite and --resume exclude each other: continue the run in --out, or replace it");
    char msg[4400] = "";
    /* the parents as save_pretrained makes them (--out runs/gpt/a: runs/gpt/ too), then the run's own folder */
    int rc = tf_dist_rank() == 0 ? make_dirs("--out", out, 1, msg, sizeof msg) : 0;
    if (!rc) rc = tf_dist_rank() == 0 ? tf_run_folder_begin(out, kind, resume, replace) : 0;
    if (tf_dist_agree(rc)) cli_die(a->verb, *msg ? msg : tf_error());
}

volatile int cli_stop;
static const char *g_stop_notice; /* written at the first signal: rank 0 of several processes */

static void on_sigint(int sig) {
    (void)sig;
    if (!cli_stop && g_stop_notice && write(2, g_stop_notice, strlen(g_stop_notice)) < 0) g_stop_notice = NULL;
    cli_stop = 1;
}

void cli_catch_sigint(void) {
    signal(SIGINT, on_sigint);
    signal(SIGTERM, on_sigint); /* kill, a scheduler's stop; mpirun's on Ctrl-C */
    signal(SIGHUP, on_sigint);  /* the terminal closed */
    signal(SIGUSR1, on_sigint); /* mpirun forwards it to every rank */
    if (tf_dist_size() > 1 && tf_dist_rank() == 0)
        g_stop_notice = "tformer: stop requested (a signal: Ctrl-C, SIGUSR1, or mpirun ending the job): every rank "
                        "finishes its step, then rank 0 writes a checkpoint; if mpirun kills the ranks first, the last "
                        "checkpoint stays (continue with --resume)\n";
}

/* ---------------------------------------------------------------- a run's start and end */

static int cmp_names(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* "12.3 kB", "4.1 MB" */
static void fmt_bytes(double b, char *out, size_t n) {
    static const char *const UNIT[] = {"B", "kB", "MB", "GB", "TB"};
    int u = 0;
    while (b >= 1000 && u < 4) b /= 1000, u++;
    snprintf(out, n, u ? "%.1f %s" : "%.0f %s", b, UNIT[u]);
}

/* " a.txt (12.3 kB)" (", a.txt ..." after the first) at buf + *k; a file that cannot be read: "(?)". */
static void add_file(char *buf, size_t cap, size_t *k, const char *path, int first) {
    struct stat st;
    char size[32] = "?";
    if (!stat(path, &st)) fmt_bytes((double)st.st_size, size, sizeof size);
    if (*k < cap) *k += (size_t)snprintf(buf + *k, cap - *k, "%s %s (%s)", first ? "" : ",", path, size);
}

/* The run's inputs as "data a.txt (1.2 MB), ..." (at most 4 named). */
static void data_list(const tf_task_args *a, char *buf, size_t cap) {
    const char *named[4] = {a->src, a->tgt, a->valid_src, a->valid_tgt};
    size_t k = (size_t)snprintf(buf, cap, "data");
    int n = 0;
    for (int i = 0; i < a->n_data; i++)
        if (n++ < 4) add_file(buf, cap, &k, a->data[i], n == 1);
    for (int i = 0; i < 4; i++)
        if (named[i] && n++ < 4) add_file(buf, cap, &k, named[i], n == 1);
    if (n > 4 && k < cap) k += (size_t)snprintf(buf + k, cap - k, " and %d more", n - 4);
    if (a->data_dir && k < cap) k += (size_t)snprintf(buf + k, cap - k, " %s/ (idx files)", a->data_dir);
    if (!n && !a->data_dir) snprintf(buf, cap, "data generated by the task");
}

void cli_files_said(char *const *files, int n, char *out, size_t cap) {
    size_t k = 0;
    out[0] = 0;
    for (int i = 0; i < n && i < 4; i++) add_file(out, cap, &k, files[i], i == 0);
    if (n > 4 && k < cap) snprintf(out + k, cap - k, " and %d more", n - 4);
    if (out[0] == ' ') memmove(out, out + 1, strlen(out));
}

void cli_train_summary(const cli_verb *v, const char *family, const tf_task_args *a, tf_task *t) {
    int64_t n = 0;
    tf_params *ps = t->vt->params(t);
    for (int i = 0; ps && i < tf_params_count(ps); i++) n += tf_numel(tf_params_tensor(ps, i));
    char vocab[160] = "", data[1200];
    tf_tokenizer *tok = tf_tokenizer_load(a->run_dir); /* the run folder's copy; none for images */
    if (tok) {
        int chars = tf_tokenizer_kind_of(tok) == TF_TOKENIZER_CHAR;
        snprintf(vocab, sizeof vocab, ", vocabulary %d%s", tf_tokenizer_vocab_size(tok),
                 !chars ? "" : a->tokenizer ? " (the data's characters)"
                                            : " (the data's characters: no --tokenizer given)");
    }
    tf_tokenizer_free(tok);
    data_list(a, data, sizeof data);
    fprintf(stderr, "tformer %s: %s, %lld parameters%s; %s; %s %.*s/\n", v->name, family, (long long)n, vocab, data,
            a->resume ? "resuming in" : "writing to", folder_len(a->run_dir), a->run_dir);
}

/* The folder's entries, sorted, as "a, b, c" into buf. */
static void folder_files(const char *dir, char *buf, size_t cap) {
    char *names[64];
    int n = 0;
    DIR *d = opendir(dir);
    for (struct dirent *e; d && n < 64 && (e = readdir(d));)
        if (e->d_name[0] != '.' && !strstr(e->d_name, ".tmp.")) {
            char path[4400];
            struct stat st;
            snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
            int sub = !stat(path, &st) && S_ISDIR(st.st_mode);
            if ((names[n] = malloc(strlen(e->d_name) + 2))) sprintf(names[n++], "%s%s", e->d_name, sub ? "/" : "");
        }
    if (d) closedir(d);
    qsort(names, (size_t)n, sizeof *names, cmp_names);
    size_t k = 0;
    buf[0] = 0;
    for (int i = 0; i < n; i++) {
        if (k < cap) k += (size_t)snprintf(buf + k, cap - k, "%s%s", i ? ", " : "", names[i]);
        free(names[i]);
    }
}

int cli_train_end(int rc, int say, const char *out) {
    int asked = rc == 1 && !cli_stop; /* the run's stop_at, not a signal */
    if (rc == 1 && say)
        printf("%s: checkpoint written to %s/checkpoint.safetensors (continue with --resume)\n",
               asked ? "stopped at --stop-at's step" : "interrupted", out);
    if (rc == 0 && say) {
        char files[2048];
        folder_files(out, files, sizeof files);
        fprintf(stderr, "saved to %.*s/: %s\n", folder_len(out), out, files);
    }
    tf_dist_finalize();
    return rc == 1 && !asked ? 130 : 0;
}

/* config.json's model_type, or "" (cli.h). */
void cli_model_type(const char *dir, char *out, size_t n) {
    char path[4200];
    snprintf(path, sizeof path, "%s/config.json", dir);
    *out = 0;
    FILE *f = fopen(path, "rb");
    if (!f) return;
    char buf[65536];
    size_t k = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[k] = 0;
    cJSON *root = cJSON_Parse(buf);
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(root, "model_type");
    if (cJSON_IsString(t)) snprintf(out, n, "%s", t->valuestring);
    cJSON_Delete(root);
}

/* OUT and its parents, as mkdir -p; a clear message when one cannot be made. */
/* mkdir -p of out (parents_only: of its parent folders, not out itself); -1 with msg naming
 * flag and the folder that could not be made. */
static int make_dirs(const char *flag, const char *out, int parents_only, char *msg, size_t n) {
    char path[4096];
    size_t len = (size_t)snprintf(path, sizeof path, "%s", out);
    while (len > 1 && len < sizeof path && path[len - 1] == '/') path[--len] = 0; /* "run/" is run */
    for (char *p = path + 1;; p++) {
        char c = *p;
        if (c != '/' && c) continue;
        if (!c && parents_only) break;
        *p = 0;
        if (mkdir(path, 0755) && errno != EEXIST)
            return snprintf(msg, n, "%s %s: cannot create %s: %s", flag, out, path, strerror(errno)), -1;
        *p = c;
        if (!c) break;
    }
    return 0;
}

void cli_make_folder(const cli_verb *v, const char *flag, const char *out) {
    char msg[4400];
    struct stat st;
    if (make_dirs(flag, out, 0, msg, sizeof msg)) cli_die(v, msg);
    if (stat(out, &st) || !S_ISDIR(st.st_mode)) {
        snprintf(msg, sizeof msg, "%s %s: not a folder", flag, out);
        cli_die(v, msg);
    }
}

/* ---------------------------------------------------------------- --rgb / --grayscale */

int cli_colour(const cli_args *a, int rgb, int gray, int channels) {
    if (a->v[rgb].given && a->v[gray].given) cli_usage_error(a, "--rgb and --grayscale: give one");
    if (a->v[rgb].given && channels == 1)
        cli_usage_error(a, "--rgb: the model takes grey images (1 channel); give --grayscale or neither");
    return a->v[gray].given ? 1 : channels == 1 ? 1 : 3;
}

const char *cli_colour_said(const cli_args *a, int rgb, int gray, int channels) {
    if (a->v[gray].given) return channels == 1 ? "images as grey (--grayscale)"
                                               : "images as grey repeated into RGB (--grayscale)";
    if (a->v[rgb].given) return "images as RGB (--rgb)";
    return channels == 1 ? "images as grey (the model's 1 channel; a colour file as PIL's convert(\"L\"))"
                         : "images as RGB (the model's 3 channels; a grey file repeated)";
}

void cli_read_png(const cli_verb *v, const char *file, int colour, int channels, tf_images *im) {
    if (tf_images_read_png(file, colour, im)) cli_die(v, tf_error());
    if (colour == channels) return;
    int64_t hw = (int64_t)im->height * im->width; /* grey into the model's three channels */
    float *p = realloc(im->pixels, (size_t)(3 * hw) * sizeof *p);
    if (!p) cli_die(v, "out of memory");
    memcpy(p + hw, p, (size_t)hw * sizeof *p), memcpy(p + 2 * hw, p, (size_t)hw * sizeof *p);
    im->pixels = p, im->channels = 3;
}

int cli_attention_scale(const cli_args *a, int scale, int png) {
    const char *s = a->v[scale].text;
    if (strcmp(s, "fixed") && strcmp(s, "auto")) cli_usage_error(a, "--attention-scale expects fixed or auto, got '%s'", s);
    if (a->v[scale].given && !(a->v[png].text && *a->v[png].text))
        cli_usage_error(a, "--attention-scale goes with --attention-png");
    return !strcmp(s, "auto");
}

void cli_read_png_sized(const cli_verb *v, const char *file, int size, int colour, int channels, int resize,
                        tf_images *im) {
    int w, h;
    char msg[4400];
    if (tf_images_png_size(file, &w, &h)) cli_die(v, tf_error());
    if ((w != size || h != size) && !resize) {
        snprintf(msg, sizeof msg, "%s: an image of %dx%d; the model takes %dx%d with %d channel(s) (--resize scales it)",
                 file, w, h, size, size, channels);
        cli_die(v, msg);
    }
    cli_read_png(v, file, colour, channels, im);
    if (w == size && h == size) return;
    tf_images r;
    if (tf_images_resize(im, size, size, &r)) cli_die(v, tf_error());
    tf_images_free(im);
    *im = r;
    fprintf(stderr, "tformer %s: %s: %dx%d resized to %dx%d (--resize: box filter)\n", v->name, file, w, h, size, size);
}
