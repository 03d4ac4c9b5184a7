/* tformer convert IN OUT: files as people have them into what the verbs and numpy read, chosen by
 * the names' endings (docs/overview.md):
 *   IMAGES-idx3-ubyte(.gz) -> OUT.png     image --index N, an 8-bit grey PNG (classify's input)
 *   IN.safetensors         -> OUT.npy     one tensor (--tensor NAME; or the file's only one)
 *   IN.safetensors         -> OUT.json    {name: {"dtype", "shape", "values"}} (all, or --tensor)
 *   IDS.txt                -> OUT.safetensors  a line of ids per row, as int64 --name (hf-run's input) */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "cli.h"

enum { INDEX, TENSOR, NAME };
const cli_flag cmd_convert_flags[] = {
    [INDEX] = {"index", CLI_INT, "N", "0", "idx to PNG: which image (0: the first)"},
    [TENSOR] = {"tensor", CLI_STRING, "NAME", "", "safetensors to .npy or .json: the tensor (.npy: needed unless the file holds one)"},
    [NAME] = {"name", CLI_STRING, "NAME", "input_ids", "ids to safetensors: the tensor's name (hf-run: a forward() argument)"},
    CLI_END,
};

static int ends(const char *s, const char *tail) {
    size_t n = strlen(s), k = strlen(tail);
    return n >= k && !strcmp(s + n - k, tail);
}

static void idx_to_png(const cli_args *a, const char *in, const char *out) {
    tf_images im;
    if (tf_images_read_idx(in, NULL, 0, &im)) cli_die(a->verb, tf_error());
    if (a->v[INDEX].i >= im.n)
        cli_usage_error(a, "--index %lld: %s holds %lld images", a->v[INDEX].i, in, (long long)im.n);
    if (tf_images_write_png(&im, a->v[INDEX].i, out)) cli_die(a->verb, tf_error());
    fprintf(stderr, "tformer %s: image %lld of %s (%dx%d) written to %s\n", a->verb->name, a->v[INDEX].i, in, im.width,
            im.height, out);
    tf_images_free(&im);
}

/* The tensor named by --tensor, or the file's only one (need: refuse a file of several without it). */
static const tf_st_entry *pick(const cli_args *a, const tf_st_file *f, const char *in, int need) {
    const char *name = a->v[TENSOR].text;
    if (name && *name) {
        const tf_st_entry *e = tf_st_find(f, name);
        if (!e) cli_usage_error(a, "--tensor %s: no such tensor in %s (tformer inspect lists them)", name, in);
        return e;
    }
    if (need && tf_st_count(f) != 1)
        cli_usage_error(a, "%s holds %d tensors: name one with --tensor (tformer inspect lists them)", in, tf_st_count(f));
    return need ? tf_st_entry_at(f, 0) : NULL;
}

/* {"dtype", "shape", "values"} of one tensor under its name in j. */
static void tensor_json(const cli_verb *v, cJSON *j, const tf_st_file *f, const tf_st_entry *e, tf_arena *ar) {
    tf_tensor *t = tf_st_to_tensor(f, e, ar);
    if (!t) cli_die(v, tf_error());
    cJSON *o = cli_json_object(v, j, e->name), *shape, *vals;
    cli_json_str(v, o, "dtype", tf_st_dtype_name(e->dtype));
    shape = cli_json_array(v, o, "shape");
    for (int d = 0; d < e->ndim; d++) cli_json_num(v, shape, NULL, (double)e->shape[d]);
    vals = cli_json_array(v, o, "values");
    for (int64_t i = 0; i < tf_numel(t); i++)
        cli_json_num(v, vals, NULL, t->dtype == TF_DTYPE_F32 ? tf_f32(t)[i] : t->dtype == TF_DTYPE_I32 ? tf_i32(t)[i] : tf_u8(t)[i]);
}

/* A tensor as .npy (float32, int32 or uint8: how tformer holds it), or tensors as JSON, into out. */
static void from_safetensors(const cli_args *a, const char *in, const char *out, int npy) {
    const cli_verb *v = a->verb;
    tf_st_file *f = tf_st_open(in);
    tf_arena *ar = f ? tf_arena_new(0) : NULL;
    if (!f || !ar) cli_die(v, tf_error());
    const tf_st_entry *one = pick(a, f, in, npy);
    char tmp[4200], msg[4400];
    snprintf(tmp, sizeof tmp, "%s.tmp", out); /* written, then renamed: never half a file under out's name */
    FILE *o = fopen(tmp, "wb");
    if (!o) snprintf(msg, sizeof msg, "%s: cannot create: %s", tmp, strerror(errno)), cli_die(v, msg);
    if (npy) {
        tf_tensor *t = tf_st_to_tensor(f, one, ar);
        if (!t) cli_die(v, tf_error());
        int64_t shape[8];
        for (int d = 0; d < one->ndim && d < 8; d++) shape[d] = one->shape[d];
        const char *type = t->dtype == TF_DTYPE_F32 ? "f4" : t->dtype == TF_DTYPE_I32 ? "i4" : "u1";
        cli_npy_header(v, o, type, shape, one->ndim);
        size_t size = t->dtype == TF_DTYPE_U8 ? 1 : 4;
        if (fwrite(t->data, size, (size_t)tf_numel(t), o) != (size_t)tf_numel(t)) cli_die(v, "cannot write the .npy data");
    } else {
        cJSON *j = cli_json_object(v, NULL, NULL);
        for (int i = 0; i < tf_st_count(f); i++)
            if (!one || tf_st_entry_at(f, i) == one) tensor_json(v, j, f, tf_st_entry_at(f, i), ar);
        char *text = cJSON_PrintUnformatted(j);
        cJSON_Delete(j);
        if (!text || fprintf(o, "%s\n", text) < 0) cli_die(v, "cannot write the JSON");
        cJSON_free(text);
    }
    if (fclose(o) || rename(tmp, out)) {
        snprintf(msg, sizeof msg, "%s: cannot write: %s", out, strerror(errno));
        remove(tmp);
        cli_die(v, msg);
    }
    fprintf(stderr, "tformer %s: %s written to %s\n", v->name, one ? one->name : "every tensor", out);
    tf_arena_free(ar), tf_st_close(f);
}

/* Lines of whitespace-separated ids (all of one length) as an int64 (rows, T) tensor named --name. */
static void ids_to_safetensors(const cli_args *a, const char *in, const char *out) {
    const cli_verb *v = a->verb;
    size_t len;
    char *text = cli_read_file(v, in, &len), *line = text, msg[4400];
    tf_ids ids = {0};
    int64_t rows = 0, T = -1;
    for (char *next; line && *line; line = next) {
        next = strchr(line, '\n');
        if (next) *next++ = 0;
        int64_t n = 0;
        for (char *p = line, *end; *p; p = end) {
            long long x = strtoll(p, &end, 10);
            if (end == p) {
                if (*p == ' ' || *p == '\t' || *p == '\r') { end = p + 1; continue; }
                snprintf(msg, sizeof msg, "%s line %lld: '%.20s' is not an id", in, (long long)rows + 1, p);
                cli_die(v, msg);
            }
            if (x < 0 || x > INT32_MAX) {
                const char *id = p + strspn(p, " \t\r"); /* strtoll skipped these */
                snprintf(msg, sizeof msg, "%s line %lld: id '%.*s' is out of range [0, %d]", in, (long long)rows + 1,
                         (int)(end - id < 20 ? end - id : 20), id, INT32_MAX);
                cli_die(v, msg);
            }
            if (tf_ids_push(&ids, (int32_t)x)) cli_die(v, "out of memory");
            n++;
        }
        if (!n) continue;
        if (T >= 0 && n != T) {
            snprintf(msg, sizeof msg, "%s line %lld: %lld ids, the lines before %lld (rows must be of one length)", in,
                     (long long)rows + 1, (long long)n, (long long)T);
            cli_die(v, msg);
        }
        T = n, rows++;
    }
    if (!rows) cli_die(v, "no ids in the input");
    tf_ctx *ctx = tf_ctx_new(0);
    tf_tensor *x = ctx ? tf_tensor_new(ctx, TF_DTYPE_I32, 2, (int64_t[]){rows, T}, 0) : NULL;
    tf_st_writer *w = x ? tf_st_writer_new() : NULL;
    if (!w) cli_die(v, "out of memory");
    memcpy(x->data, ids.v, ids.n * sizeof *ids.v);
    if (tf_st_writer_add_as(w, a->v[NAME].text, x, TF_ST_I64) || tf_st_writer_save(w, out)) cli_die(v, tf_error());
    fprintf(stderr, "tformer %s: %s (%lld, %lld) int64 written to %s\n", v->name, a->v[NAME].text, (long long)rows,
            (long long)T, out);
    tf_st_writer_free(w), tf_ctx_free(ctx), tf_ids_free(&ids), free(text);
}

/* The start-up line: the conversion the names' endings chose, and its settings. */
static void say(const cli_args *a, const char *in, const char *out, int kind) {
    const char *tensor = a->v[TENSOR].text && *a->v[TENSOR].text ? a->v[TENSOR].text : NULL;
    if (kind == 0)
        cli_say_plain(a->verb, 0, "%s, idx images%s, to %s, an 8-bit grey PNG: image %lld (--index%s) (the conversion "
                      "chosen by the names' endings)", in, ends(in, ".gz") ? " (gzipped)" : "", out, a->v[INDEX].i,
                      a->v[INDEX].given ? "" : " 0: the first");
    else if (kind == 1)
        cli_say_plain(a->verb, 0, "%s, safetensors, to %s, %s: %s%s (the conversion chosen by the names' endings)", in,
                      out, ends(out, ".npy") ? "numpy's .npy" : "JSON", tensor ? "tensor " : "",
                      tensor ? tensor : ends(out, ".npy") ? "the file's only tensor (no --tensor)"
                                                          : "every tensor (no --tensor)");
    else
        cli_say_plain(a->verb, 0, "%s, lines of token ids, to %s, safetensors: an int64 tensor (rows, ids) named %s "
                      "(--name%s) (the conversion chosen by the names' endings)", in, out, a->v[NAME].text,
                      a->v[NAME].given ? "" : ", the default: hf-run's input_ids");
}

int cmd_convert(const cli_args *a) {
    const char *in = a->operands[0], *out = a->operands[1];
    if ((ends(in, "idx3-ubyte") || ends(in, "idx3-ubyte.gz")) && ends(out, ".png")) say(a, in, out, 0), idx_to_png(a, in, out);
    else if (ends(in, ".safetensors") && (ends(out, ".npy") || ends(out, ".json")))
        say(a, in, out, 1), from_safetensors(a, in, out, ends(out, ".npy"));
    else if (ends(out, ".safetensors") && !ends(in, ".safetensors")) say(a, in, out, 2), ids_to_safetensors(a, in, out);
    else
        cli_usage_error(a, "no conversion from %s to %s: IMAGES-idx3-ubyte(.gz) to .png, .safetensors to .npy or "
                        ".json, a text of ids to .safetensors", in, out);
    return 0;
}
