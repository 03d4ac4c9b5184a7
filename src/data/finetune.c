/* Fine-tuning data as read from files: classification lines (label<TAB>text),
 * pairs (label<TAB>a<TAB>b), CoNLL tagging (token<TAB>tag, a blank line
 * between sentences) and span JSON lines ({"context", "question",
 * "answer_start", "answer"}); each error names file:line. The label set of
 * a task is the sorted labels of its training file. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../core/core_internal.h"
#include "finetune_internal.h"
#include "tformer/data.h"

static const char *const KIND_NAMES[] = {"classify", "pairs", "tag", "span"};

const char *tf_finetune_kind_name(tf_finetune_kind k) {
    return (unsigned)k < 4 ? KIND_NAMES[k] : "?";
}

int tf_finetune_kind_from_name(const char *name) {
    for (int i = 0; i < 4; i++)
        if (!strcmp(name, KIND_NAMES[i])) return i;
    return -1;
}

static char *dup_n(const char *s, size_t n) {
    char *d = malloc(n + 1);
    if (!d) return tf_set_error("finetune: out of memory"), NULL;
    memcpy(d, s, n);
    d[n] = 0;
    return d;
}

/* A new zeroed example at the end of s. */
static tf_finetune_example *push_example(tf_finetune_set *s, int *cap, int line) {
    if (s->n == *cap) {
        int nc = *cap ? *cap * 2 : 64;
        size_t bytes;
        if (nc < *cap || !tf_mul_size((size_t)nc, sizeof *s->ex, &bytes)) return tf_set_error("finetune: too many examples"), NULL;
        tf_finetune_example *ne = realloc(s->ex, bytes);
        if (!ne) return tf_set_error("finetune: out of memory"), NULL;
        s->ex = ne, *cap = nc;
    }
    tf_finetune_example *e = &s->ex[s->n++];
    memset(e, 0, sizeof *e);
    e->line = line;
    return e;
}

/* ---------------------------------------------------------------- tab-separated lines */

/* Split a line at tabs into at most max fields; the count (max + 1 when more). */
static int split_tabs(const char *p, size_t n, const char **f, size_t *fl, int max) {
    int k = 0;
    const char *start = p, *end = p + n;
    for (const char *q = p;; q++) {
        if (q == end || *q == '\t') {
            if (k == max) return max + 1;
            f[k] = start, fl[k++] = (size_t)(q - start);
            if (q == end) break;
            start = q + 1;
        }
    }
    return k;
}

/* classify / pairs: one labelled (or unlabelled) example from a line. */
static int text_line(tf_finetune_set *s, int *cap, const char *p, size_t n, const char *name, int line) {
    int want = (s->kind == TF_FINETUNE_PAIRS ? 2 : 1) + s->labelled;
    const char *f[3];
    size_t fl[3];
    if (want > 1 && !memchr(p, '\t', n))
        return tf_set_error("%s:%d: no tab: expected %s", name, line,
                            s->kind == TF_FINETUNE_PAIRS ? (s->labelled ? "label<TAB>text_a<TAB>text_b" : "text_a<TAB>text_b")
                                                         : "label<TAB>text");
    int k = want == 1 ? (f[0] = p, fl[0] = n, 1) : split_tabs(p, n, f, fl, want);
    if (k != want) return tf_set_error("%s:%d: %s%d tab-separated fields, expected %d", name, line, k > want ? "more than " : "",
                                       k > want ? want : k, want);
    if (s->labelled && !fl[0]) return tf_set_error("%s:%d: empty label", name, line);
    tf_finetune_example *e = push_example(s, cap, line);
    int o = s->labelled;
    if (!e || (s->labelled && !(e->label = dup_n(f[0], fl[0]))) || !(e->a = dup_n(f[o], fl[o])) ||
        (s->kind == TF_FINETUNE_PAIRS && !(e->b = dup_n(f[o + 1], fl[o + 1]))))
        return -1;
    return 0;
}

/* ---------------------------------------------------------------- tagging */

typedef struct {
    tf_finetune_example *e;
    int cap;
} sentence;

static int add_word(sentence *st, const char *w, size_t wn, const char *t, size_t tn, int labelled) {
    tf_finetune_example *e = st->e;
    if (e->n_words == st->cap) {
        int nc = st->cap ? st->cap * 2 : 16;
        char **nw = realloc(e->words, (size_t)nc * sizeof *nw);
        if (nw) e->words = nw;
        char **nt = nw && labelled ? realloc(e->tags, (size_t)nc * sizeof *nt) : NULL;
        if (nt) e->tags = nt;
        if (!nw || (labelled && !nt)) return tf_set_error("finetune: out of memory");
        st->cap = nc;
    }
    if (!(e->words[e->n_words] = dup_n(w, wn))) return -1;
    if (labelled && !(e->tags[e->n_words] = dup_n(t, tn))) return free(e->words[e->n_words]), -1;
    e->n_words++;
    return 0;
}

/* A CoNLL line token<TAB>tag into the sentence in progress (started on its first word). */
static int tag_line(tf_finetune_set *s, int *cap, sentence *st, const char *p, size_t n, const char *name, int line) {
    const char *f[2];
    size_t fl[2];
    if (!memchr(p, '\t', n)) return tf_set_error("%s:%d: no tab: expected token<TAB>tag", name, line);
    int k = split_tabs(p, n, f, fl, 2);
    if (k != 2) return tf_set_error("%s:%d: more than 2 tab-separated fields, expected token<TAB>tag", name, line);
    if (!fl[0]) return tf_set_error("%s:%d: empty token", name, line);
    if (!fl[1]) return tf_set_error("%s:%d: empty tag", name, line);
    if (!st->e && !(st->e = push_example(s, cap, line))) return -1;
    return add_word(st, f[0], fl[0], f[1], fl[1], 1);
}

/* A prediction input: one sentence a line, words separated by spaces. */
static int words_line(tf_finetune_set *s, int *cap, const char *p, size_t n, int line) {
    sentence st = {push_example(s, cap, line), 0};
    if (!st.e) return -1;
    for (size_t i = 0; i < n;) {
        while (i < n && (p[i] == ' ' || p[i] == '\t')) i++;
        size_t j = i;
        while (j < n && p[j] != ' ' && p[j] != '\t') j++;
        if (j > i && add_word(&st, p + i, j - i, NULL, 0, 0)) return -1;
        i = j;
    }
    return 0;
}

/* ---------------------------------------------------------------- span JSON lines */

static const char *json_string(const cJSON *o, const char *key) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* The byte offset of code point `chars` of s, or -1 past its end. */
static long long char_offset(const char *s, double chars) {
    long long k = 0, want = (long long)chars;
    size_t i = 0;
    while (s[i] && k < want) {
        i++;
        while (s[i] && ((unsigned char)s[i] & 0xC0) == 0x80) i++; /* UTF-8 continuation bytes */
        k++;
    }
    return k == want ? (long long)i : -1;
}

static int span_answer(tf_finetune_example *e, const cJSON *o, const char *name, int line) {
    const cJSON *st = cJSON_GetObjectItemCaseSensitive(o, "answer_start");
    const char *ans = json_string(o, "answer");
    if (!cJSON_IsNumber(st) || !ans)
        return tf_set_error("%s:%d: \"answer_start\" (a number) and \"answer\" (a string) are required", name, line);
    double at = st->valuedouble; /* a whole number a long long holds (a larger one is past any context) */
    long long off = at >= 0 && at < 9e15 && at == floor(at) ? char_offset(e->b, at) : -1;
    size_t len = strlen(ans);
    if (off < 0 || !len || strncmp(e->b + off, ans, len))
        return tf_set_error("%s:%d: the answer \"%.60s\" is not in the context at answer_start %g", name, line, ans,
                            st->valuedouble);
    e->answer_off = (size_t)off, e->answer_len = len;
    return 0;
}

static int span_line(tf_finetune_set *s, int *cap, const char *p, size_t n, const char *name, int line) {
    cJSON *o = cJSON_ParseWithLength(p, n);
    if (!cJSON_IsObject(o)) return cJSON_Delete(o), tf_set_error("%s:%d: not a JSON object", name, line);
    char where[600];
    snprintf(where, sizeof where, "%s:%d", name, line);
    if (tf_json_unique_keys(o, where)) return cJSON_Delete(o), -1;
    const char *ctx = json_string(o, "context"), *q = json_string(o, "question");
    int rc = 0;
    if (!ctx || !q) rc = tf_set_error("%s:%d: \"context\" and \"question\" (strings) are required", name, line);
    tf_finetune_example *e = rc ? NULL : push_example(s, cap, line);
    if (!rc && (!e || !(e->a = dup_n(q, strlen(q))) || !(e->b = dup_n(ctx, strlen(ctx))))) rc = -1;
    if (!rc && s->labelled) rc = span_answer(e, o, name, line);
    cJSON_Delete(o);
    return rc;
}

/* ---------------------------------------------------------------- files */

static int parse_line(tf_finetune_set *s, int *cap, sentence *st, const char *p, size_t n, const char *name, int line) {
    if (s->kind == TF_FINETUNE_TAG && s->labelled) {
        if (!n) return st->e = NULL, st->cap = 0, 0; /* a blank line ends the sentence */
        return tag_line(s, cap, st, p, n, name, line);
    }
    if (!n) return 0;
    if (s->kind == TF_FINETUNE_TAG) return words_line(s, cap, p, n, line);
    if (s->kind == TF_FINETUNE_SPAN) return span_line(s, cap, p, n, name, line);
    return text_line(s, cap, p, n, name, line);
}

/* The length of the valid UTF-8 sequence at s (strict: no overlong forms,
 * surrogates or code points above U+10FFFF), 0 when it is not one. */
static size_t utf8_len(const unsigned char *s, size_t n) {
    unsigned c = s[0];
    size_t k = c < 0x80 ? 1 : c >= 0xC2 && c <= 0xDF ? 2 : c >= 0xE0 && c <= 0xEF ? 3 : c >= 0xF0 && c <= 0xF4 ? 4 : 0;
    if (!k || k > n) return 0;
    for (size_t j = 1; j < k; j++)
        if ((s[j] & 0xC0) != 0x80) return 0;
    if ((c == 0xE0 && s[1] < 0xA0) || (c == 0xED && s[1] > 0x9F) || (c == 0xF0 && s[1] < 0x90) ||
        (c == 0xF4 && s[1] > 0x8F))
        return 0;
    return k;
}

/* A line's bytes as UTF-8: labels and texts go into config.json and the tokenizer. */
static int check_utf8(const tf_finetune_set *s, const char *p, size_t n, const char *name, int line) {
    for (size_t i = 0, k; i < n; i += k)
        if (!(k = utf8_len((const unsigned char *)p + i, n - i))) {
            const char *tab = memchr(p, '\t', n);
            int in_label = s->labelled && (s->kind == TF_FINETUNE_CLASSIFY || s->kind == TF_FINETUNE_PAIRS) &&
                           (!tab || p + i < tab);
            int in_tag = s->labelled && s->kind == TF_FINETUNE_TAG && tab && p + i > tab;
            return tf_set_error("%s:%d: not valid UTF-8%s: byte 0x%02X at column %zu; a text file must be UTF-8", name,
                                line, in_label ? " in the label" : in_tag ? " in the tag" : "",
                                (unsigned char)p[i], i + 1);
        }
    return 0;
}

/* Line `line` (1-based) of name, without its '\n', into out. */
static int parse_one(tf_finetune_set *out, int *cap, sentence *st, const char *p, size_t n, const char *name,
                     int line) {
    if (n && p[n - 1] == '\r') n--;
    return check_utf8(out, p, n, name, line) || parse_line(out, cap, st, p, n, name, line) ? -1 : 0;
}

static int begin(tf_finetune_kind kind, int labelled, tf_finetune_set *out) {
    memset(out, 0, sizeof *out);
    if ((unsigned)kind > TF_FINETUNE_SPAN) return tf_set_error("finetune: unknown task kind %d", (int)kind);
    out->kind = kind, out->labelled = labelled;
    return 0;
}

static int end(int rc, const char *name, tf_finetune_set *out) {
    if (!rc && !out->n) rc = tf_set_error("%s: no examples", name);
    if (rc) tf_finetune_set_free(out);
    return rc ? -1 : 0;
}

int tf_finetune_parse(tf_finetune_kind kind, const char *text, size_t len, const char *name, int labelled,
                      tf_finetune_set *out) {
    if (begin(kind, labelled, out)) return -1;
    int cap = 0, line = 0, rc = 0;
    sentence st = {NULL, 0};
    for (size_t i = 0; !rc && i < len; line++) {
        const char *p = text + i, *nl = memchr(p, '\n', len - i);
        size_t n = nl ? (size_t)(nl - p) : len - i;
        i += n + (nl != NULL);
        rc = parse_one(out, &cap, &st, p, n, name, line + 1);
    }
    return end(rc, name, out);
}

/* The file a line at a time (tf_line_reader), never whole: memory is the examples. */
int tf_finetune_read(tf_finetune_kind kind, const char *path, int labelled, tf_finetune_set *out) {
    if (begin(kind, labelled, out)) return -1;
    tf_line_reader *r = tf_line_reader_open(path);
    int cap = 0, rc = r ? 0 : -1, got = 1;
    sentence st = {NULL, 0};
    const char *p;
    size_t n;
    for (int line = 1; !rc && (got = tf_line_reader_next(r, &p, &n)) > 0; line++)
        rc = line == INT32_MAX ? tf_set_error("%s: more than %d lines", path, INT32_MAX - 1)
                               : parse_one(out, &cap, &st, p, n, path, line);
    tf_line_reader_close(r);
    return end(rc || got < 0 ? -1 : 0, path, out);
}

void tf_finetune_set_free(tf_finetune_set *s) {
    for (int i = 0; s->ex && i < s->n; i++) {
        tf_finetune_example *e = &s->ex[i];
        free(e->a), free(e->b), free(e->label);
        for (int w = 0; w < e->n_words; w++) free(e->words[w]), free(e->tags ? e->tags[w] : NULL);
        free(e->words), free(e->tags);
    }
    free(s->ex);
    memset(s, 0, sizeof *s);
}

/* ---------------------------------------------------------------- label sets */

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

int tf_finetune_labels(const tf_finetune_set *s, char ***names, int *n) {
    *names = NULL, *n = 0;
    if (!s->labelled || s->kind == TF_FINETUNE_SPAN) return tf_set_error("finetune: this set has no labels");
    size_t total = 0;
    for (int i = 0; i < s->n; i++) total += s->kind == TF_FINETUNE_TAG ? (size_t)s->ex[i].n_words : 1;
    char **all = malloc((total ? total : 1) * sizeof *all);
    if (!all) return tf_set_error("finetune: out of memory");
    size_t k = 0;
    for (int i = 0; i < s->n; i++) {
        if (s->kind != TF_FINETUNE_TAG) all[k++] = s->ex[i].label;
        for (int w = 0; s->kind == TF_FINETUNE_TAG && w < s->ex[i].n_words; w++) all[k++] = s->ex[i].tags[w];
    }
    qsort(all, k, sizeof *all, cmp_str);
    size_t u = 0;
    for (size_t i = 0; i < k; i++)
        if (!u || strcmp(all[u - 1], all[i])) all[u++] = all[i];
    int rc = u > 1000000 ? tf_set_error("finetune: %zu labels are too many", u) : 0;
    for (size_t i = 0; !rc && i < u; i++)
        if (!(all[i] = dup_n(all[i], strlen(all[i])))) {
            tf_finetune_labels_free(all, (int)i);
            return -1;
        }
    if (rc) return free(all), -1;
    *names = all, *n = (int)u;
    return 0;
}

void tf_finetune_labels_free(char **names, int n) {
    for (int i = 0; names && i < n; i++) free(names[i]);
    free(names);
}

static int find_label(char *const *names, int n, const char *label) {
    int lo = 0, hi = n - 1;
    while (lo <= hi) {
        int mid = lo + (hi - lo) / 2, c = strcmp(names[mid], label);
        if (!c) return mid;
        if (c < 0) lo = mid + 1;
        else hi = mid - 1;
    }
    return -1;
}

int tf_finetune_check_labels(const tf_finetune_set *s, const char *name, char *const *names, int n) {
    for (int i = 0; s->labelled && s->kind != TF_FINETUNE_SPAN && i < s->n; i++) {
        const tf_finetune_example *e = &s->ex[i];
        for (int w = 0; w < (s->kind == TF_FINETUNE_TAG ? e->n_words : 1); w++) {
            const char *l = s->kind == TF_FINETUNE_TAG ? e->tags[w] : e->label;
            if (find_label(names, n, l) < 0)
                return tf_set_error("%s:%d: label \"%s\" does not occur in the training file", name, e->line + w, l);
        }
    }
    return 0;
}

/* The index of a label in a sorted set (for the encoder), or -1. */
int tf_finetune_label_index(char *const *names, int n, const char *label) { return find_label(names, n, label); }
