/* Private helpers shared by every module: hash maps, growable buffers, whole
 * files (read, and written atomically) and JSON files. */
#ifndef TF_UTIL_H
#define TF_UTIL_H

#include <cjson/cJSON.h>
#include <stdio.h>

#include "tformer/config.h"

/* Byte string -> int32, open addressing; keys are copied into an arena. */
typedef struct {
    const char **keys;
    uint32_t *lens;
    int32_t *vals;
    size_t cap, n;
    tf_arena *arena;
} tf_strmap;

int tf_strmap_init(tf_strmap *m, size_t expect);
void tf_strmap_free(tf_strmap *m);
void tf_strmap_clear(tf_strmap *m);
/* Insert or overwrite; -1 (and tf_error) when out of memory. */
int tf_strmap_put(tf_strmap *m, const char *k, size_t len, int32_t v);
/* The value, or -1 when absent. */
int32_t tf_strmap_get(const tf_strmap *m, const char *k, size_t len);

/* (a,b) int32 pair -> (rank, merged id). */
typedef struct {
    uint64_t *keys; /* (a << 32 | b) + 1, 0 = empty */
    int32_t *rank, *merged;
    size_t cap, n;
} tf_pairmap;

int tf_pairmap_init(tf_pairmap *m, size_t expect);
void tf_pairmap_free(tf_pairmap *m);
int tf_pairmap_put(tf_pairmap *m, int32_t a, int32_t b, int32_t rank, int32_t merged);
/* The rank (and *merged), or -1 when the pair is absent. */
int32_t tf_pairmap_get(const tf_pairmap *m, int32_t a, int32_t b, int32_t *merged);

/* A growable byte buffer, always NUL-terminated. */
typedef struct {
    char *p;
    size_t n, cap;
} tf_buf;
int tf_buf_put(tf_buf *b, const void *data, size_t n);

/* First occurrence of needle in hay, or NULL. */
const char *tf_memfind(const char *hay, size_t n, const char *needle, size_t m);

/* A regular file opened for reading: a descriptor, or -1 + tf_error naming
 * the file; a folder, FIFO, device or socket is refused (checked before the
 * open and again on the descriptor, opened without blocking), never waited on. */
int tf_open_regular(const char *path);
/* The same as a stdio stream ("rb"), or NULL + tf_error. */
FILE *tf_fopen_read(const char *path);
/* The most memory one input may take: a quarter of this machine's memory, or of the address space when a lower
 * limit is set (ulimit -v). A file read whole above it is refused before anything is allocated. */
size_t tf_memory_quarter(void);
/* A whole file (NUL-terminated); NULL + tf_error naming it on failure
 * (not a regular file: refused, tf_open_regular). */
char *tf_read_file(const char *path, size_t *len);
/* The same, gunzipped when it starts with gzip's magic bytes (train.en.gz, idx images): every
 * reader of data files (text, TSV, idx, digits.csv) goes through it. A file (its gunzipped text) above
 * tf_memory_quarter() is refused naming it, its size and the limit, before it is read. */
char *tf_read_data(const char *path, size_t *len);
/* A data file (gunzipped as tf_read_data) a piece at a time, never whole: text holds the bytes read and not yet
 * handed out (about 1 MiB, more when cut finds no place, up to tf_memory_quarter()), and each piece is text[0, cut(ctx, text, n)) (0: read
 * on; as a cut may depend on the 2 bytes before it, a later search starts 2 bytes before where the last one
 * ended: cut sees text + s); at the end of the file the rest is the last piece. fn's failure stops the reading (-1); errors name the
 * file. */
typedef size_t (*tf_data_cut_fn)(void *ctx, const char *text, size_t n);
typedef int (*tf_data_piece_fn)(void *ctx, const char *piece, size_t n);
int tf_read_data_pieces(const char *path, tf_data_cut_fn cut, tf_data_piece_fn fn, void *ctx);

/* Atomic writing: a temporary file beside path, then fsync and rename; the
 * file gets the umask's permissions (0666 & ~umask), as fopen would give.
 * What path names decides (never replace what is not a file): a missing or
 * regular file is replaced; a symbolic link is followed (the file it names
 * is replaced, the link stays; a link to nothing is refused); a character
 * device or a FIFO is written through (no temporary: /dev/null stays
 * /dev/null); a directory, block device or socket is refused. */
typedef struct {
    FILE *f;
    char *tmp;          /* NULL when writing through */
    const char *path;   /* the file written: path, or the link's target */
    char *target;       /* a followed link's target (owned) */
} tf_atomic_file;
int tf_atomic_open(tf_atomic_file *a, const char *path);
/* Rename into place when ok and every write succeeded; else remove it. 0 or -1. */
int tf_atomic_commit(tf_atomic_file *a, int ok);
void tf_atomic_abort(tf_atomic_file *a);
int tf_write_file(const char *path, const void *data, size_t n);
int tf_copy_file(const char *from, const char *to);

/* A text file's lines (without '\n' or a final '\r'): line i is
 * text + start[i], len[i] bytes; a last line without '\n' counts. */
typedef struct {
    char *text;
    size_t *start, *len;
    int n;
} tf_lines;
int tf_lines_read(const char *path, tf_lines *out);
void tf_lines_free(tf_lines *l);
/* A data file (gunzipped as tf_read_data) a line at a time, never whole: memory is a piece of about 1 MiB
 * and the longest line (at most TF_LINE_MAX bytes: a longer one is an error naming the file and line). */
enum { TF_LINE_MAX = 64 << 20 };
typedef struct tf_line_reader tf_line_reader;
tf_line_reader *tf_line_reader_open(const char *path);
/* The next line (without its '\n'; a '\r' before it kept; a last line without '\n' counts) into *line, *n,
 * valid until the next call: 1, 0 at the end, -1 + an error naming the file. */
int tf_line_reader_next(tf_line_reader *r, const char **line, size_t *n);
void tf_line_reader_close(tf_line_reader *r);

/* A JSON object from a file; NULL + an error naming the file (and byte).
 * A key repeated within one object is an error. */
cJSON *tf_json_read(const char *path);
/* Any JSON value (an array: modules.json). */
cJSON *tf_json_read_any(const char *path);
/* -1 + an error naming where (file, line) when an object anywhere in node
 * repeats a key. */
int tf_json_unique_keys(const cJSON *node, const char *where);
/* Pretty-printed with a final newline, atomically. */
int tf_json_write(const char *path, const cJSON *root);

/* ---------------------------------------------------------------- paths (path.c) */

/* dir + "/" + name into out (n bytes): exactly one slash between them whatever slashes end dir
 * ("run//" and "run" give run/name; "/" gives /name; "" gives name) or begin name. 0, or -1 + tf_error
 * naming the path when it does not fit in n bytes with its NUL (out then ""): never cut short. */
int tf_path_join(char *out, size_t n, const char *dir, const char *name);

/* ---------------------------------------------------------------- Python's str (text.c) */

/* str.isspace() of one code point. */
int tf_py_isspace(int32_t c);
/* str.strip(): the length of s without whitespace at either end, *start its first byte. */
size_t tf_py_strip(const char *s, size_t n, size_t *start);

/* ---------------------------------------------------------------- field tables at the cJSON level (fields.c) */

/* Set rows from the keys of a JSON object; path names it in messages. An
 * unknown key is an error unless lenient; a missing TF_FIELD_REQUIRED row is one. */
int tf_fields_from_json(const cJSON *root, const tf_fields *s, int n, const char *path, int lenient);
/* Add every row to a JSON object, in table order (floats %.9g). */
int tf_fields_to_json(cJSON *root, const tf_fields *s, int n);

#endif
