/* tformer: configuration field tables.
 *
 * Each configuration struct is described once, by a table of rows (one per
 * field, offsetof its member), and that table drives everything done with it:
 * defaults, checks, JSON files read and written, command-line flags, --help
 * and the signature a checkpoint records. Several tables can fill one JSON
 * object or one command line (training reads the trainer's and the task's). */
#ifndef TFORMER_CONFIG_H
#define TFORMER_CONFIG_H

#include "core.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
    TF_FIELD_INT,    /* int */
    TF_FIELD_INT64,  /* int64_t */
    TF_FIELD_UINT64, /* uint64_t */
    TF_FIELD_FLOAT,  /* float; read as a double, then rounded */
    TF_FIELD_BOOL,   /* int, 0 or 1; text "true" / "false" */
    TF_FIELD_ENUM,   /* an enum (int-sized); text one of the row's choices */
    TF_FIELD_STRING, /* char[size], NUL-terminated */
    TF_FIELD_TABLE   /* the rows of another table, for the struct member at offset, flattened in place */
} tf_field_type;

/* Row flags. */
#define TF_FIELD_SIGNATURE 1u /* part of the checkpoint signature (what makes weights fit) */
#define TF_FIELD_REQUIRED 2u  /* a JSON file must give it */
#define TF_FIELD_NULL_ZERO 4u /* JSON null means 0 (or ""), and 0 is written as null (Hugging Face's n_inner) */
#define TF_FIELD_RESUMABLE 8u /* may change on resume: it does not steer the training (how often to evaluate) */
#define TF_FIELD_SIG_NEW 16u  /* with SIGNATURE: in it only when not at its default (written as the default's text):
                               * a row added after checkpoints were written, which still match */
#define TF_FIELD_RENAMED 32u  /* its alias names are former JSON keys (checkpoints and --config files written before a
                               * rename, read as before): taken from JSON only, never as flags (one name per flag) */

typedef struct tf_field_table tf_field_table;

typedef struct {
    const char *name;        /* the JSON key; the flag is --name with '_' -> '-' */
    tf_field_type type;
    size_t offset, size;     /* offsetof and sizeof the member */
    const char *def;         /* the default as text; NULL: left as it is (required fields, library defaults) */
    const char *range;       /* numbers: "[1,inf)", "(0,1)", "[0,1)": ends closed ([ ]) or open (( )); NULL: any */
    const char *const *choices; /* TF_FIELD_ENUM: names by value, NULL-terminated; "a|b" also accepts b on input */
    const char *help;        /* one line for --help */
    unsigned flags;          /* TF_FIELD_SIGNATURE | TF_FIELD_REQUIRED | TF_FIELD_NULL_ZERO | TF_FIELD_RESUMABLE | TF_FIELD_SIG_NEW
                              * | TF_FIELD_RENAMED */
    const char *alias;       /* other names accepted on input, "a" or "a|b" (as keys and flags; TF_FIELD_RENAMED: as
                              * JSON keys only); NULL: none */
    const tf_field_table *sub; /* TF_FIELD_TABLE */
} tf_field;

struct tf_field_table {
    const char *name; /* what it configures ("trainer", "gpt", ...) */
    const tf_field *rows;
    int n;
};

/* Rows: TF_FIELD_ROW(struct type, member, field type, name, default, range,
 * choices, help, flags, alias); TF_FIELD_SUB(struct type, member, table). */
#define TF_FIELD_ROW(T, m, type, name, def, range, choices, help, flags, alias) \
    {name, type, offsetof(T, m), sizeof(((T *)0)->m), def, range, choices, help, flags, alias, NULL}
#define TF_FIELD_SUB(T, m, table) \
    {#m, TF_FIELD_TABLE, offsetof(T, m), sizeof(((T *)0)->m), NULL, NULL, NULL, NULL, 0, NULL, &(table)}

/* A table with the struct it describes. */
typedef struct {
    const tf_field_table *table;
    void *obj;
} tf_fields;

/* Every row with a default gets it. 0, or -1 when a default does not parse (a bug). */
TF_API int tf_fields_defaults(const tf_fields *s, int n);
/* A configuration's defaults: cfg (size bytes) zeroed, then every row with a default set (a
 * default that does not parse is a table bug, which tests/test_config.c catches). */
TF_API void tf_fields_reset(const tf_field_table *t, void *cfg, size_t size);
/* Defines `T fn(void)`, which returns a T at the defaults of table (tf_fields_reset). */
#define TF_FIELDS_DEFAULT_FN(T, fn, table)            \
    T fn(void) {                                      \
        T c_;                                         \
        tf_fields_reset(&(table), &c_, sizeof c_);    \
        return c_;                                    \
    }
/* Every value within its row's range and choices; -1 with a message naming
 * the field and what it allows. */
TF_API int tf_fields_check(const tf_fields *s, int n);
/* Set the keys of a JSON object file. An unknown key is an error naming it
 * and the file unless lenient (then it is ignored); a value of the wrong type
 * or out of range is an error naming the key and the file. */
TF_API int tf_fields_load(const tf_fields *s, int n, const char *path, int lenient);
/* Write every row as one JSON object, in table order, floats as %.9g, atomically. */
TF_API int tf_fields_save(const tf_fields *s, int n, const char *path);
/* The same object as compact text (malloc'd), or NULL with a message. */
TF_API char *tf_fields_json(const tf_fields *s, int n);
/* Set one field from text. name is a key or an alias ("d_model"), or a flag
 * ("--d-model": '-' for '_'; not a TF_FIELD_RENAMED row's former key); the error names it as
 * given and says what it expects. */
TF_API int tf_fields_set(const tf_fields *s, int n, const char *name, const char *text);
/* The row for a key, alias or flag, named as tf_fields_set takes them (and,
 * in *obj, the struct holding it), or NULL. */
TF_API const tf_field *tf_fields_find(const tf_fields *s, int n, const char *name, void **obj);
/* The value of one row of obj as text (floats the shortest that reads back
 * the same); its length, or -1 when it does not fit in cap. */
TF_API int tf_fields_format(const tf_field *f, const void *obj, char *out, size_t cap);
/* "name=value name=value ..." of the rows flagged TF_FIELD_SIGNATURE; -1 when it does not fit. */
TF_API int tf_fields_signature(const tf_fields *s, int n, char *out, size_t cap);

/* Rows in order, sub-tables expanded: calls fn(user, row, struct) for each
 * until fn returns non-zero, and returns that. */
typedef int (*tf_field_fn)(void *user, const tf_field *f, void *obj);
TF_API int tf_fields_each(const tf_fields *s, int n, tf_field_fn fn, void *user);
/* The first TF_FIELD_REQUIRED row that given(user, row) says is absent, or NULL. */
TF_API const tf_field *tf_fields_missing(const tf_fields *s, int n, int (*given)(void *user, const tf_field *f),
                                         void *user);

#ifdef __cplusplus
}
#endif
#endif /* TFORMER_CONFIG_H */
