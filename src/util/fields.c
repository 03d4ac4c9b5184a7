/* Configuration field tables: one row per struct member (offsetof) drives
 * defaults, checks, JSON read and write, values set from command-line text,
 * --help defaults and checkpoint signatures (include/tformer/config.h). */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

/* JSON numbers are doubles, exact for integers below 2^53: larger ones are
 * written as strings (and read from strings). */
#define EXACT_INT 9007199254740992.0

/* ---------------------------------------------------------------- rows and names */

static int each_row(const tf_field_table *t, char *obj, tf_field_fn fn, void *user) {
    for (int i = 0; i < t->n; i++) {
        const tf_field *f = &t->rows[i];
        int rc = f->type == TF_FIELD_TABLE ? each_row(f->sub, obj + f->offset, fn, user) : fn(user, f, obj);
        if (rc) return rc;
    }
    return 0;
}

int tf_fields_each(const tf_fields *s, int n, tf_field_fn fn, void *user) {
    for (int i = 0; i < n; i++) {
        int rc = each_row(s[i].table, s[i].obj, fn, user);
        if (rc) return rc;
    }
    return 0;
}

/* Is word one of the '|'-separated names of list? */
static int in_list(const char *list, const char *word) {
    size_t n = strlen(word);
    for (const char *p = list; p;) {
        if (!strncmp(p, word, n) && (p[n] == '|' || !p[n])) return 1;
        p = strchr(p, '|');
        if (p) p++;
    }
    return 0;
}

/* Is key the row's name or an alias? A flag (as_flag) is not one of a renamed row's former keys. */
static int is_named(const tf_field *f, const char *key, int as_flag) {
    if (!strcmp(f->name, key)) return 1;
    return f->alias && !(as_flag && f->flags & TF_FIELD_RENAMED) && in_list(f->alias, key);
}

typedef struct {
    const char *key;
    int as_flag;
    const tf_field *f;
    void *obj;
} find_ctx;

static int find_fn(void *user, const tf_field *f, void *obj) {
    find_ctx *c = user;
    if (!is_named(f, c->key, c->as_flag)) return 0;
    c->f = f, c->obj = obj;
    return 1;
}

/* The row named key exactly (a JSON key, or a flag's words when as_flag). */
static const tf_field *find_row(const tf_fields *s, int n, const char *key, int as_flag, void **obj) {
    find_ctx c = {key, as_flag, NULL, NULL};
    tf_fields_each(s, n, find_fn, &c);
    if (obj) *obj = c.obj;
    return c.f;
}

const tf_field *tf_fields_find(const tf_fields *s, int n, const char *name, void **obj) {
    char key[128];
    if (strncmp(name, "--", 2)) return find_row(s, n, name, 0, obj);
    name += 2;
    size_t len = strlen(name);
    if (len >= sizeof key) return NULL;
    for (size_t i = 0; i <= len; i++) key[i] = name[i] == '-' ? '_' : name[i];
    return find_row(s, n, key, 1, obj);
}

/* ---------------------------------------------------------------- values */

typedef struct {
    double lo, hi;
    int lo_open, hi_open;
} range;

/* The row's range ("[1,inf)") within its type's limits. */
static range row_range(const tf_field *f) {
    range r = {-INFINITY, INFINITY, 1, 1};
    if (f->type == TF_FIELD_INT) r.lo = INT_MIN, r.hi = INT_MAX, r.lo_open = r.hi_open = 0;
    if (f->type == TF_FIELD_UINT64) r.lo = 0, r.lo_open = 0;
    if (!f->range) return r;
    char *end;
    double lo = strtod(f->range + 1, &end), hi = *end == ',' ? strtod(end + 1, &end) : INFINITY;
    if (lo >= r.lo) r.lo = lo, r.lo_open = f->range[0] == '(';
    if (hi <= r.hi) r.hi = hi, r.hi_open = *end == ')';
    return r;
}

static int in_range(const tf_field *f, double v) {
    range r = row_range(f);
    return (r.lo_open ? v > r.lo : v >= r.lo) && (r.hi_open ? v < r.hi : v <= r.hi);
}

static double num_value(const tf_field *f, const char *p) {
    switch (f->type) {
    case TF_FIELD_INT64: return (double)*(const int64_t *)p;
    case TF_FIELD_UINT64: return (double)*(const uint64_t *)p;
    case TF_FIELD_FLOAT: return *(const float *)p;
    default: return *(const int *)p;
    }
}

static int n_choices(const tf_field *f) {
    int k = 0;
    while (f->type == TF_FIELD_ENUM && f->choices[k]) k++;
    return f->type == TF_FIELD_BOOL ? 2 : k;
}

/* A member of the size its type stores (a table bug otherwise). */
static int size_ok(const tf_field *f) {
    switch (f->type) {
    case TF_FIELD_INT64:
    case TF_FIELD_UINT64: return f->size == 8;
    case TF_FIELD_FLOAT: return f->size == sizeof(float);
    case TF_FIELD_STRING: return f->size > 0;
    default: return f->size == sizeof(int);
    }
}

/* What a row accepts, for messages: "an integer in [1,inf)", "one of a, b". */
static void expects(const tf_field *f, char *out, size_t cap) {
    const char *in = f->range ? " in " : "", *r = f->range ? f->range : "";
    const char *integer = f->type == TF_FIELD_UINT64 && !f->range ? "a non-negative integer" : "an integer";
    if (f->type == TF_FIELD_FLOAT) snprintf(out, cap, "a number%s%s", in, r);
    else if (f->type == TF_FIELD_BOOL) snprintf(out, cap, "true or false");
    else if (f->type == TF_FIELD_STRING) snprintf(out, cap, "text of at most %zu bytes", f->size - 1);
    else if (f->type != TF_FIELD_ENUM) snprintf(out, cap, "%s%s%s", integer, in, r);
    else {
        size_t n = (size_t)snprintf(out, cap, "one of");
        for (int k = 0; f->choices[k] && n < cap; k++)
            n += (size_t)snprintf(out + n, cap - n, "%s %s", k ? "," : "", f->choices[k]);
        for (char *p = out; (p = strchr(p, '|'));) *p = '/'; /* alternatives: "gelu_new/gelu_pytorch_tanh" */
    }
}

static int bad_value(const tf_field *f, const char *label, const char *got) {
    char what[256];
    expects(f, what, sizeof what);
    return tf_set_error("%s expects %s, got '%.80s'", label, what, got);
}

/* A whole number the row's range admits (its bound that side is inf) but its member cannot
 * hold: the message says the type's limit, not just the range the number is in. */
static int beyond_type(const tf_field *f, const char *label, const char *text, int negative) {
    char *end, what[256];
    double lo = f->range ? strtod(f->range + 1, &end) : -INFINITY;
    double hi = f->range && *end == ',' ? strtod(end + 1, NULL) : INFINITY;
    if (!isinf(negative ? lo : hi)) return bad_value(f, label, text);
    const char *limit = f->type == TF_FIELD_UINT64 ? "18446744073709551615"
                      : f->type == TF_FIELD_INT64 ? (negative ? "-9223372036854775808" : "9223372036854775807")
                      : negative ? "-2147483648" : "2147483647";
    expects(f, what, sizeof what);
    return tf_set_error("%s expects %s, got '%.80s': %s than the %s it holds (%s)", label, what, text,
                        negative ? "less" : "more", negative ? "smallest" : "largest", limit);
}

/* Strict integers: digits with an optional sign, nothing after, within range. */
static int set_integer(const tf_field *f, char *p, const char *text, const char *label) {
    const char *d = text + (text[0] == '-' || text[0] == '+');
    if (!isdigit((unsigned char)*d) || (f->type == TF_FIELD_UINT64 && text[0] == '-')) return bad_value(f, label, text);
    char *end;
    errno = 0;
    long long v = 0;
    unsigned long long u = 0;
    if (f->type == TF_FIELD_UINT64) u = strtoull(text, &end, 10);
    else v = strtoll(text, &end, 10);
    double x = f->type == TF_FIELD_UINT64 ? (double)u : (double)v;
    int beyond = errno == ERANGE || (f->type == TF_FIELD_INT && (v > INT_MAX || v < INT_MIN));
    if (!*end && beyond) return beyond_type(f, label, text, text[0] == '-');
    if (*end || !in_range(f, x)) return bad_value(f, label, text);
    if (f->type == TF_FIELD_INT) *(int *)p = (int)v;
    else if (f->type == TF_FIELD_INT64) *(int64_t *)p = (int64_t)v;
    else *(uint64_t *)p = (uint64_t)u;
    return 0;
}

/* Numbers are read as doubles and rounded once to float (as JSON numbers are). */
static int set_float(const tf_field *f, char *p, const char *text, const char *label) {
    char *end;
    double d = strtod(text, &end);
    float x = (float)d;
    if (end == text || *end || isspace((unsigned char)text[0]) || !isfinite(x) || !in_range(f, x))
        return bad_value(f, label, text);
    *(float *)p = x;
    return 0;
}

static int set_text(const tf_field *f, char *obj, const char *text, const char *label) {
    char *p = obj + f->offset;
    if (!size_ok(f)) return tf_set_error("%s: a %zu-byte member does not fit its type (a table bug)", f->name, f->size);
    switch (f->type) {
    case TF_FIELD_INT:
    case TF_FIELD_INT64:
    case TF_FIELD_UINT64: return set_integer(f, p, text, label);
    case TF_FIELD_FLOAT: return set_float(f, p, text, label);
    case TF_FIELD_BOOL:
        if (strcmp(text, "true") && strcmp(text, "false")) return bad_value(f, label, text);
        *(int *)p = !strcmp(text, "true");
        return 0;
    case TF_FIELD_ENUM:
        for (int k = 0; f->choices[k]; k++)
            if (in_list(f->choices[k], text)) return *(int *)p = k, 0;
        return bad_value(f, label, text);
    case TF_FIELD_STRING:
        if (strlen(text) >= f->size) return bad_value(f, label, text);
        memcpy(p, text, strlen(text) + 1);
        return 0;
    default: return tf_set_error("%s: not a value", f->name);
    }
}

/* The shortest %g that reads back as the same float. */
static int format_float(float x, char *out, size_t cap) {
    int n = 0;
    for (int prec = 1; prec <= 9; prec++) {
        n = snprintf(out, cap, "%.*g", prec, (double)x);
        if ((float)strtod(out, NULL) == x) break;
    }
    return n;
}

int tf_fields_format(const tf_field *f, const void *obj, char *out, size_t cap) {
    const char *p = (const char *)obj + f->offset;
    int n = -1, v = f->type == TF_FIELD_STRING ? 0 : *(const int *)p;
    switch (f->type) {
    case TF_FIELD_INT: n = snprintf(out, cap, "%d", v); break;
    case TF_FIELD_INT64: n = snprintf(out, cap, "%lld", (long long)*(const int64_t *)p); break;
    case TF_FIELD_UINT64: n = snprintf(out, cap, "%llu", (unsigned long long)*(const uint64_t *)p); break;
    case TF_FIELD_FLOAT: n = format_float(*(const float *)p, out, cap); break;
    case TF_FIELD_BOOL: n = snprintf(out, cap, "%s", v ? "true" : "false"); break;
    case TF_FIELD_ENUM:
        if (v >= 0 && v < n_choices(f)) n = snprintf(out, cap, "%.*s", (int)strcspn(f->choices[v], "|"), f->choices[v]);
        else n = snprintf(out, cap, "%d", v);
        break;
    case TF_FIELD_STRING: n = snprintf(out, cap, "%.*s", (int)strnlen(p, f->size), p); break;
    default: break;
    }
    return n < 0 || (size_t)n >= cap ? -1 : n;
}

/* ---------------------------------------------------------------- whole tables */

static int default_fn(void *user, const tf_field *f, void *obj) {
    (void)user;
    char label[160];
    snprintf(label, sizeof label, "the default of %s", f->name);
    return f->def ? set_text(f, obj, f->def, label) : 0;
}

int tf_fields_defaults(const tf_fields *s, int n) { return tf_fields_each(s, n, default_fn, NULL); }

void tf_fields_reset(const tf_field_table *t, void *cfg, size_t size) {
    memset(cfg, 0, size);
    tf_fields f = {t, cfg};
    tf_fields_defaults(&f, 1);
}

static int check_fn(void *user, const tf_field *f, void *obj) {
    (void)user;
    const char *p = (const char *)obj + f->offset;
    char val[256];
    if (!size_ok(f)) return tf_set_error("%s: a %zu-byte member does not fit its type (a table bug)", f->name, f->size);
    if (f->type == TF_FIELD_STRING) return memchr(p, 0, f->size) ? 0 : tf_set_error("%s is not terminated", f->name);
    if (f->type == TF_FIELD_ENUM || f->type == TF_FIELD_BOOL) {
        int v = *(const int *)p;
        if (v >= 0 && v < n_choices(f)) return 0;
        expects(f, val, sizeof val);
        return tf_set_error("%s = %d is not %s", f->name, v, val);
    }
    if (in_range(f, num_value(f, p))) return 0;
    tf_fields_format(f, obj, val, sizeof val);
    return tf_set_error("%s = %s is outside %s", f->name, val, f->range ? f->range : "(-inf,inf)");
}

int tf_fields_check(const tf_fields *s, int n) { return tf_fields_each(s, n, check_fn, NULL); }

int tf_fields_set(const tf_fields *s, int n, const char *name, const char *text) {
    void *obj;
    const tf_field *f = tf_fields_find(s, n, name, &obj);
    return f ? set_text(f, obj, text, name) : tf_set_error("%s: no such field", name);
}

typedef struct {
    char *out;
    size_t len, cap;
} sig_ctx;

static int sig_fn(void *user, const tf_field *f, void *obj) {
    sig_ctx *c = user;
    char val[128];
    if (!(f->flags & TF_FIELD_SIGNATURE)) return 0;
    if (tf_fields_format(f, obj, val, sizeof val) < 0) return tf_set_error("signature: %s does not fit", f->name);
    if (f->flags & TF_FIELD_SIG_NEW && f->def && !strcmp(val, f->def)) return 0;
    int k = snprintf(c->out + c->len, c->cap - c->len, "%s%s=%s", c->len ? " " : "", f->name, val);
    if (k < 0 || (size_t)k >= c->cap - c->len) return tf_set_error("signature: longer than %zu bytes", c->cap - 1);
    c->len += (size_t)k;
    return 0;
}

int tf_fields_signature(const tf_fields *s, int n, char *out, size_t cap) {
    if (!cap) return tf_set_error("signature: no room");
    sig_ctx c = {out, 0, cap};
    out[0] = 0;
    return tf_fields_each(s, n, sig_fn, &c) ? -1 : 0;
}

/* ---------------------------------------------------------------- JSON */

static cJSON *json_value(const tf_field *f, const char *obj) {
    const char *p = obj + f->offset;
    char text[128];
    if (f->type == TF_FIELD_STRING) {
        if (!memchr(p, 0, f->size)) return tf_set_error("%s is not terminated", f->name), NULL;
        return f->flags & TF_FIELD_NULL_ZERO && !p[0] ? cJSON_CreateNull() : cJSON_CreateString(p);
    }
    double v = num_value(f, p);
    if (f->flags & TF_FIELD_NULL_ZERO && v == 0) return cJSON_CreateNull();
    if (f->type == TF_FIELD_BOOL) return cJSON_CreateBool(*(const int *)p);
    if (f->type == TF_FIELD_FLOAT) {
        if (!isfinite(v)) return tf_set_error("%s = %g cannot be written as JSON", f->name, v), NULL;
        snprintf(text, sizeof text, "%.9g", v);
        return cJSON_CreateRaw(text);
    }
    if (tf_fields_format(f, obj, text, sizeof text) < 0) return tf_set_error("%s: cannot format", f->name), NULL;
    return f->type == TF_FIELD_ENUM || fabs(v) >= EXACT_INT ? cJSON_CreateString(text) : cJSON_CreateRaw(text);
}

static int json_fn(void *user, const tf_field *f, void *obj) {
    cJSON *item = json_value(f, obj);
    if (item && cJSON_AddItemToObject(user, f->name, item)) return 0;
    cJSON_Delete(item);
    return item ? tf_set_error("JSON: out of memory") : -1;
}

int tf_fields_to_json(cJSON *root, const tf_fields *s, int n) { return tf_fields_each(s, n, json_fn, root); }

/* A JSON value as the text set_text reads; NULL when its type cannot fit the row. */
static const char *json_text(const tf_field *f, const cJSON *j, char *buf, size_t cap) {
    int integer = f->type == TF_FIELD_INT || f->type == TF_FIELD_INT64 || f->type == TF_FIELD_UINT64;
    if (cJSON_IsNumber(j) && (integer || f->type == TF_FIELD_FLOAT)) {
        double v = j->valuedouble;
        snprintf(buf, cap, integer && v == floor(v) && fabs(v) < EXACT_INT ? "%.0f" : "%.17g", v);
        return buf;
    }
    if (cJSON_IsBool(j) && f->type == TF_FIELD_BOOL) return cJSON_IsTrue(j) ? "true" : "false";
    /* 64-bit integers beyond 2^53 are written as strings; a 32-bit one never is */
    int wide = f->type == TF_FIELD_INT64 || f->type == TF_FIELD_UINT64;
    if (cJSON_IsString(j) && (wide || f->type == TF_FIELD_ENUM || f->type == TF_FIELD_STRING)) return j->valuestring;
    return NULL;
}

static int set_json(const tf_field *f, char *obj, const cJSON *j, const char *path) {
    char label[1024], buf[64], what[256];
    snprintf(label, sizeof label, "%s: \"%s\"", path, j->string);
    if (cJSON_IsNull(j) && f->flags & TF_FIELD_NULL_ZERO) {
        memset(obj + f->offset, 0, f->size);
        return 0;
    }
    /* a 64-bit integer beyond 2^53 may have lost digits on its way through a double */
    int integer = f->type == TF_FIELD_INT || f->type == TF_FIELD_INT64 || f->type == TF_FIELD_UINT64;
    if (integer && cJSON_IsNumber(j) && fabs(j->valuedouble) >= EXACT_INT && fabs(j->valuedouble) <= 0x1p64)
        return tf_set_error("%s: %.17g is too large for a JSON number to hold exactly; write it as a string", label,
                            j->valuedouble);
    const char *text = json_text(f, j, buf, sizeof buf);
    if (text) return set_text(f, obj, text, label);
    char *shown = cJSON_PrintUnformatted(j);
    expects(f, what, sizeof what);
    tf_set_error("%s expects %s, got %.80s", label, what, shown ? shown : "another type");
    free(shown);
    return -1;
}

typedef struct {
    int (*given)(void *user, const tf_field *f);
    void *user;
    const tf_field *missing;
} missing_ctx;

static int missing_fn(void *user, const tf_field *f, void *obj) {
    (void)obj;
    missing_ctx *c = user;
    if (!(f->flags & TF_FIELD_REQUIRED) || c->given(c->user, f)) return 0;
    c->missing = f;
    return 1;
}

const tf_field *tf_fields_missing(const tf_fields *s, int n, int (*given)(void *user, const tf_field *f), void *user) {
    missing_ctx c = {given, user, NULL};
    tf_fields_each(s, n, missing_fn, &c);
    return c.missing;
}

static int has_key(void *root, const tf_field *f) {
    for (const cJSON *j = ((const cJSON *)root)->child; j; j = j->next)
        if (is_named(f, j->string, 0)) return 1;
    return 0;
}

int tf_fields_from_json(const cJSON *root, const tf_fields *s, int n, const char *path, int lenient) {
    for (const cJSON *j = root->child; j; j = j->next) {
        void *obj;
        const tf_field *f = find_row(s, n, j->string, 0, &obj);
        if (!f && !lenient) return tf_set_error("%s: unknown key \"%s\"", path, j->string);
        if (f && set_json(f, obj, j, path)) return -1;
    }
    const tf_field *f = tf_fields_missing(s, n, has_key, (void *)root);
    return f ? tf_set_error("%s: missing required key \"%s\"", path, f->name) : 0;
}

int tf_fields_load(const tf_fields *s, int n, const char *path, int lenient) {
    cJSON *root = tf_json_read(path);
    if (!root) return -1;
    int rc = tf_fields_from_json(root, s, n, path, lenient);
    cJSON_Delete(root);
    return rc;
}

static cJSON *to_json(const tf_fields *s, int n) {
    cJSON *root = cJSON_CreateObject();
    if (!root) return tf_set_error("JSON: out of memory"), NULL;
    if (!tf_fields_to_json(root, s, n)) return root;
    cJSON_Delete(root);
    return NULL;
}

int tf_fields_save(const tf_fields *s, int n, const char *path) {
    cJSON *root = to_json(s, n);
    int rc = root ? tf_json_write(path, root) : -1;
    cJSON_Delete(root);
    return rc;
}

char *tf_fields_json(const tf_fields *s, int n) {
    cJSON *root = to_json(s, n);
    char *text = root ? cJSON_PrintUnformatted(root) : NULL;
    if (root && !text) tf_set_error("JSON: out of memory");
    cJSON_Delete(root);
    return text;
}
