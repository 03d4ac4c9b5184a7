/* The normalizers, pre-tokenizers and decoders of a Unigram tokenizer.json,
 * as the `tokenizers` library (0.15 - 0.23) applies them:
 *
 * normalizers  Precompiled (sentencepiece's charsmap, base64: each grapheme
 *              cluster under 6 bytes replaced whole by the first, shortest
 *              match of a prefix, else each character by its own match),
 *              Replace (a String, or a Regex run by PCRE2), Strip, NFC, NFD,
 *              NFKC, NFKD (utf8proc), Prepend, and Sequences of them;
 * pre-tokenizers WhitespaceSplit, Metaspace (replacement, prepend_scheme
 *              always / first / never or the older add_prefix_space, split),
 *              and Sequences of them;
 * decoders     Metaspace, Replace (a String), ByteFallback, Fuse, Strip, and
 *              Sequences of them.
 *
 * Any other type is refused naming it and what is supported. */
#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include "hf_pipe.h"

static const cJSON *item(const cJSON *o, const char *key) { return cJSON_GetObjectItemCaseSensitive(o, key); }

/* ---------------------------------------------------------------- UTF-8 */

/* Bytes of the well-formed sequence a lead byte starts, the allowed range of
 * its second byte; 0 for a byte that starts none (Unicode's Table 3-7). */
static int seq_len(uint8_t c, uint8_t *lo, uint8_t *hi) {
    *lo = 0x80, *hi = 0xBF;
    if (c < 0x80) return 1;
    if (c >= 0xC2 && c <= 0xDF) return 2;
    if (c == 0xE0) return *lo = 0xA0, 3;
    if (c == 0xED) return *hi = 0x9F, 3;
    if (c >= 0xE1 && c <= 0xEF) return 3;
    if (c == 0xF0) return *lo = 0x90, 4;
    if (c == 0xF4) return *hi = 0x8F, 4;
    if (c >= 0xF1 && c <= 0xF3) return 4;
    return 0;
}

int tf_utf8_sanitize(const char *s, size_t n, tf_buf *out) {
    const uint8_t *u = (const uint8_t *)s;
    out->n = 0;
    for (size_t i = 0; i < n;) {
        uint8_t lo, hi;
        int len = seq_len(u[i], &lo, &hi), k = 1;
        while (len && k < len && i + (size_t)k < n && u[i + k] >= (k == 1 ? lo : 0x80) && u[i + k] <= (k == 1 ? hi : 0xBF)) k++;
        int ok = len && k == len;
        if (tf_buf_put(out, ok ? s + i : "\xEF\xBF\xBD", ok ? (size_t)len : 3)) return -1;
        i += (size_t)(len ? k : 1); /* the maximal subpart: one U+FFFD */
    }
    return tf_buf_put(out, "", 0);
}

/* The code point at s (valid UTF-8) and its length. */
static int32_t next_cp(const char *s, size_t n, size_t *len) {
    utf8proc_int32_t c;
    utf8proc_ssize_t k = utf8proc_iterate((const utf8proc_uint8_t *)s, (utf8proc_ssize_t)n, &c);
    *len = k > 0 ? (size_t)k : 1;
    return k > 0 ? c : 0xFFFD;
}

/* ---------------------------------------------------------------- normalizers */

enum { N_PRECOMPILED, N_REPLACE, N_REGEX, N_STRIP, N_NFC, N_NFD, N_NFKC, N_NFKD, N_PREPEND };
static const char *const NORM_TYPES = "Precompiled, Replace, Strip, NFC, NFD, NFKC, NFKD, Prepend, Sequence";

typedef struct {
    int kind;
    tf_charsmap cmap;
    char *pat, *content;       /* Replace; Prepend: content (copies) */
    pcre2_code *re;
    int left, right;           /* Strip */
} norm_step;

struct tf_hf_norm {
    norm_step *step;
    int n, cap;
};

static int b64_value(char c) {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    return c == '+' ? 62 : c == '/' ? 63 : -1;
}

/* Standard base64 with padding (what tokenizers writes); NULL on a bad character. */
static uint8_t *b64_decode(const char *s, size_t *out_n) {
    size_t n = strlen(s), k = 0;
    uint8_t *out = malloc(n / 4 * 3 + 3);
    uint32_t acc = 0;
    int bits = 0;
    for (size_t i = 0; out && i < n; i++) {
        if (s[i] == '=' && i + 2 >= n && n % 4 == 0) break;
        int v = b64_value(s[i]);
        if (v < 0) return free(out), NULL;
        acc = acc << 6 | (uint32_t)v, bits += 6;
        if (bits >= 8) bits -= 8, out[k++] = (uint8_t)(acc >> bits);
    }
    *out_n = k;
    return out;
}

static int read_precompiled(const char *path, const cJSON *o, norm_step *st) {
    const cJSON *c = item(o, "precompiled_charsmap");
    if (!cJSON_IsString(c) || !c->valuestring[0])
        return tf_set_error("%s: normalizer Precompiled: \"precompiled_charsmap\" must be a non-empty base64 string", path);
    size_t n;
    uint8_t *blob = b64_decode(c->valuestring, &n);
    if (!blob) return tf_set_error("%s: normalizer Precompiled: precompiled_charsmap is not base64", path);
    char where[4200];
    snprintf(where, sizeof where, "%s: normalizer Precompiled", path);
    int rc = n ? tf_charsmap_load(&st->cmap, blob, n, where) : tf_set_error("%s: empty precompiled_charsmap", where);
    free(blob);
    for (size_t i = 0; !rc && i < st->cmap.n_repl;) { /* tokenizers reads the strings as UTF-8 */
        int used;
        if (tf_utf8_decode((const unsigned char *)st->cmap.repl + i, st->cmap.n_repl - i, &used) < 0)
            rc = tf_set_error("%s: its replacement strings are not UTF-8 (byte %zu)", where, i);
        i += (size_t)used;
    }
    return rc;
}

static int read_replace(const char *path, const cJSON *o, norm_step *st, const char *what, int regex_ok) {
    const cJSON *p = item(o, "pattern"), *c = item(o, "content");
    const cJSON *str = cJSON_IsObject(p) ? item(p, "String") : NULL, *re = cJSON_IsObject(p) ? item(p, "Regex") : NULL;
    if (!cJSON_IsString(c)) return tf_set_error("%s: %s Replace: \"content\" must be a string", path, what);
    if (!cJSON_IsString(str) && !(cJSON_IsString(re) && regex_ok))
        return tf_set_error("%s: %s Replace: \"pattern\" must be {\"String\": ...}%s", path, what,
                            regex_ok ? " or {\"Regex\": ...}" : "");
    st->content = strdup(c->valuestring);
    st->pat = strdup(cJSON_IsString(str) ? str->valuestring : re->valuestring);
    st->kind = cJSON_IsString(str) ? N_REPLACE : N_REGEX;
    if (!st->content || !st->pat) return tf_set_error("tokenizer: out of memory");
    if (st->kind == N_REPLACE && !st->pat[0])
        return tf_set_error("%s: %s Replace: an empty \"pattern\" is not supported", path, what);
    if (st->kind == N_REPLACE) return 0;
    int err;
    PCRE2_SIZE at;
    st->re = pcre2_compile((PCRE2_SPTR)st->pat, PCRE2_ZERO_TERMINATED, PCRE2_UTF | PCRE2_UCP, &err, &at, NULL);
    if (!st->re) {
        PCRE2_UCHAR msg[128];
        pcre2_get_error_message(err, msg, sizeof msg);
        return tf_set_error("%s: %s Replace: Regex \"%.60s\" at %zu: %s", path, what, st->pat, (size_t)at, (char *)msg);
    }
    return 0;
}

static int add_norm(tf_hf_norm *nm, const char *path, const cJSON *o, int depth) {
    const char *type = tf_hfj_type(path, o, "normalizer");
    if (!type) return -1;
    if (!strcmp(type, "Sequence")) {
        const cJSON *list = item(o, "normalizers");
        if (!cJSON_IsArray(list)) return tf_set_error("%s: normalizer Sequence: \"normalizers\" must be a list", path);
        if (depth > 8) return tf_set_error("%s: normalizer Sequences nested too deep", path);
        for (const cJSON *e = list->child; e; e = e->next)
            if (add_norm(nm, path, e, depth + 1)) return -1;
        return 0;
    }
    if (nm->n == nm->cap) {
        int cap = nm->cap ? nm->cap * 2 : 4;
        norm_step *s = realloc(nm->step, (size_t)cap * sizeof *s);
        if (!s) return tf_set_error("tokenizer: out of memory");
        nm->step = s, nm->cap = cap;
    }
    norm_step *st = &nm->step[nm->n];
    memset(st, 0, sizeof *st);
    nm->n++;
    static const char *const simple[] = {"NFC", "NFD", "NFKC", "NFKD"};
    for (int k = 0; k < 4; k++)
        if (!strcmp(type, simple[k])) return st->kind = N_NFC + k, 0;
    if (!strcmp(type, "Precompiled")) return st->kind = N_PRECOMPILED, read_precompiled(path, o, st);
    if (!strcmp(type, "Replace")) return read_replace(path, o, st, "normalizer", 1);
    if (!strcmp(type, "Strip"))
        return st->kind = N_STRIP, tf_hfj_bool(path, o, "normalizer Strip", "strip_left", 1, &st->left) ||
                                       tf_hfj_bool(path, o, "normalizer Strip", "strip_right", 1, &st->right);
    if (!strcmp(type, "Prepend")) {
        st->kind = N_PREPEND;
        if (!cJSON_IsString(item(o, "prepend"))) return tf_set_error("%s: normalizer Prepend: \"prepend\" must be a string", path);
        st->content = strdup(item(o, "prepend")->valuestring);
        return st->content ? 0 : tf_set_error("tokenizer: out of memory");
    }
    return tf_hfj_unsupported(path, "normalizer", type, NORM_TYPES);
}

tf_hf_norm *tf_hf_norm_read(const cJSON *root, const char *path) {
    tf_hf_norm *nm = calloc(1, sizeof *nm);
    const cJSON *o = item(root, "normalizer");
    if (!nm) return tf_set_error("tokenizer: out of memory"), NULL;
    if (o && !cJSON_IsNull(o) && add_norm(nm, path, o, 0)) return tf_hf_norm_free(nm), NULL;
    return nm;
}

void tf_hf_norm_free(tf_hf_norm *nm) {
    if (!nm) return;
    for (int i = 0; i < nm->n; i++) {
        norm_step *st = &nm->step[i];
        tf_charsmap_free(&st->cmap), pcre2_code_free(st->re), free(st->pat), free(st->content);
    }
    free(nm->step), free(nm);
}

/* spm_precompiled's normalize_string: a grapheme cluster under 6 bytes whose
 * prefix the charsmap maps becomes that replacement whole; otherwise each
 * character becomes its own replacement or stays. */
static int precompiled(const tf_charsmap *cm, const char *s, size_t n, tf_buf *out) {
    utf8proc_int32_t state = 0;
    for (size_t g = 0; g < n;) {
        size_t e = g, len;
        int32_t prev = next_cp(s + e, n - e, &len);
        for (e += len; e < n; e += len) { /* the cluster [g, e) */
            int32_t c = next_cp(s + e, n - e, &len);
            if (utf8proc_grapheme_break_stateful(prev, c, &state)) break;
            prev = c;
        }
        state = 0;
        const char *rep;
        if (e - g < 6 && tf_charsmap_match(cm, s + g, e - g, 0, &rep)) {
            if (tf_buf_put(out, rep, strlen(rep))) return -1;
            g = e;
            continue;
        }
        for (; g < e; g += len) {
            next_cp(s + g, e - g, &len);
            int hit = tf_charsmap_match(cm, s + g, len, 0, &rep) > 0;
            if (hit ? tf_buf_put(out, rep, strlen(rep)) : tf_buf_put(out, s + g, len)) return -1;
        }
    }
    return 0;
}

static int replace_str(const norm_step *st, const char *s, size_t n, tf_buf *out) {
    size_t pl = strlen(st->pat), cl = strlen(st->content), last = 0;
    for (size_t i = 0; i + pl <= n;) {
        if (memcmp(s + i, st->pat, pl)) {
            i++;
            continue;
        }
        if (tf_buf_put(out, s + last, i - last) || tf_buf_put(out, st->content, cl)) return -1;
        i += pl, last = i;
    }
    return tf_buf_put(out, s + last, n - last);
}

/* Every match left to right; after an empty one the next search starts a character later. */
static int replace_re(const norm_step *st, const char *s, size_t n, tf_buf *out) {
    pcre2_match_data *md = pcre2_match_data_create_from_pattern(st->re, NULL);
    if (!md) return tf_set_error("tokenizer: out of memory");
    size_t cl = strlen(st->content), last = 0, at = 0;
    int rc = 0;
    while (!rc && at <= n) {
        int k = pcre2_match(st->re, (PCRE2_SPTR)s, n, at, 0, md, NULL);
        if (k == PCRE2_ERROR_NOMATCH) break;
        if (k < 0) {
            rc = tf_set_error("tokenizer: normalizer Replace: Regex \"%.60s\" failed (PCRE2 error %d)", st->pat, k);
            break;
        }
        PCRE2_SIZE *ov = pcre2_get_ovector_pointer(md);
        rc = tf_buf_put(out, s + last, ov[0] - last) || tf_buf_put(out, st->content, cl);
        last = ov[1];
        size_t len = 1;
        if (ov[1] == ov[0] && ov[0] < n) next_cp(s + ov[0], n - ov[0], &len);
        at = ov[1] > ov[0] ? ov[1] : ov[0] + len;
    }
    pcre2_match_data_free(md);
    return rc || tf_buf_put(out, s + last, n - last) ? -1 : 0;
}

static int strip(const norm_step *st, const char *s, size_t n, tf_buf *out) {
    size_t b = 0, e = n, len;
    while (st->left && b < e && tf_unicode_is_space(next_cp(s + b, e - b, &len))) b += len;
    while (st->right && e > b) {
        size_t p = e - 1;
        while (p > b && ((uint8_t)s[p] & 0xC0) == 0x80) p--;
        if (!tf_unicode_is_space(next_cp(s + p, e - p, &len))) break;
        e = p;
    }
    return tf_buf_put(out, s + b, e - b);
}

static int unicode_form(int kind, const char *s, size_t n, tf_buf *out) {
    static const int flags[4] = {UTF8PROC_COMPOSE, UTF8PROC_DECOMPOSE, UTF8PROC_COMPOSE | UTF8PROC_COMPAT,
                                 UTF8PROC_DECOMPOSE | UTF8PROC_COMPAT};
    utf8proc_uint8_t *dst = NULL;
    utf8proc_ssize_t k = utf8proc_map((const utf8proc_uint8_t *)s, (utf8proc_ssize_t)n, &dst,
                                      (utf8proc_option_t)(UTF8PROC_STABLE | flags[kind - N_NFC]));
    int rc = k < 0 ? tf_set_error("tokenizer: normalizer: %s", utf8proc_errmsg(k)) : tf_buf_put(out, dst, (size_t)k);
    free(dst);
    return rc;
}

static int norm_one(const norm_step *st, const char *s, size_t n, tf_buf *out) {
    switch (st->kind) {
    case N_PRECOMPILED: return precompiled(&st->cmap, s, n, out);
    case N_REPLACE: return replace_str(st, s, n, out);
    case N_REGEX: return replace_re(st, s, n, out);
    case N_STRIP: return strip(st, s, n, out);
    case N_PREPEND: return (n && tf_buf_put(out, st->content, strlen(st->content))) || tf_buf_put(out, s, n);
    default: return unicode_form(st->kind, s, n, out);
    }
}

int tf_hf_normalize(const tf_hf_norm *nm, const char *s, size_t n, tf_buf *out) {
    tf_buf tmp = {0};
    out->n = 0;
    int rc = tf_buf_put(out, s, n);
    for (int i = 0; !rc && i < nm->n; i++) {
        tmp.n = 0;
        rc = norm_one(&nm->step[i], out->p, out->n, &tmp) || tf_buf_put(&tmp, "", 0);
        tf_buf t = *out;
        *out = tmp, tmp = t;
    }
    free(tmp.p);
    return rc;
}

/* ---------------------------------------------------------------- pre-tokenizers */

enum { P_WHITESPACE_SPLIT, P_METASPACE };
enum { PREPEND_NEVER, PREPEND_ALWAYS, PREPEND_FIRST };

typedef struct {
    int kind;
    char rep[8]; /* Metaspace: the replacement character, its length */
    size_t rep_len;
    int prepend, split;
} pre_step;

struct tf_hf_pre {
    pre_step step[8];
    int n;
};

/* Metaspace's settings (pre-tokenizer and decoder): replacement (or str_rep,
 * tokenizers < 0.14), prepend_scheme, else add_prefix_space (true: always). */
static int read_metaspace(const char *path, const cJSON *o, const char *what, pre_step *st) {
    const char *rep, *scheme;
    int add_prefix, split;
    char ctx[64];
    snprintf(ctx, sizeof ctx, "%s Metaspace", what);
    if (tf_hfj_str(path, o, ctx, "replacement", NULL, &rep) || tf_hfj_str(path, o, ctx, "prepend_scheme", NULL, &scheme) ||
        tf_hfj_bool(path, o, ctx, "add_prefix_space", 1, &add_prefix) || tf_hfj_bool(path, o, ctx, "split", 1, &split))
        return -1;
    if (!rep && tf_hfj_str(path, o, ctx, "str_rep", "\xE2\x96\x81", &rep)) return -1;
    size_t len;
    if (!rep[0] || strlen(rep) > 4 || (next_cp(rep, strlen(rep), &len), len != strlen(rep)) ||
        tf_utf8_decode((const unsigned char *)rep, len, &(int){0}) < 0)
        return tf_set_error("%s: %s: \"replacement\" must be one character", path, ctx);
    memcpy(st->rep, rep, len + 1), st->rep_len = len;
    st->kind = P_METASPACE, st->split = split;
    static const char *const schemes[3] = {"never", "always", "first"};
    st->prepend = scheme ? -1 : PREPEND_ALWAYS;
    for (int k = 0; scheme && k < 3; k++)
        if (!strcmp(scheme, schemes[k])) st->prepend = k;
    if (st->prepend < 0)
        return tf_set_error("%s: %s: prepend_scheme \"%.20s\" is not always, first or never", path, ctx, scheme);
    if (!add_prefix) st->prepend = PREPEND_NEVER;
    return 0;
}

static int add_pre(tf_hf_pre *p, const char *path, const cJSON *o, int depth) {
    const char *type = tf_hfj_type(path, o, "pre_tokenizer");
    if (!type) return -1;
    if (!strcmp(type, "Sequence")) {
        const cJSON *list = item(o, "pretokenizers");
        if (!cJSON_IsArray(list)) return tf_set_error("%s: pre_tokenizer Sequence: \"pretokenizers\" must be a list", path);
        if (depth > 8) return tf_set_error("%s: pre_tokenizer Sequences nested too deep", path);
        for (const cJSON *e = list->child; e; e = e->next)
            if (add_pre(p, path, e, depth + 1)) return -1;
        return 0;
    }
    if (p->n == 8) return tf_set_error("%s: more than 8 pre-tokenizers", path);
    pre_step *st = &p->step[p->n];
    memset(st, 0, sizeof *st);
    if (!strcmp(type, "WhitespaceSplit")) st->kind = P_WHITESPACE_SPLIT;
    else if (strcmp(type, "Metaspace")) return tf_hfj_unsupported(path, "pre_tokenizer", type, "Metaspace, WhitespaceSplit, Sequence");
    else if (read_metaspace(path, o, "pre_tokenizer", st)) return -1;
    /* "first" asks whether a piece begins the input in the original text: known
     * here for the whole text only, not for a piece an earlier step split off */
    if (st->kind == P_METASPACE && st->prepend == PREPEND_FIRST && p->n > 0)
        return tf_set_error("%s: pre_tokenizer Metaspace with prepend_scheme \"first\" after another pre-tokenizer is "
                            "not supported", path);
    p->n++;
    return 0;
}

tf_hf_pre *tf_hf_pre_read(const cJSON *root, const char *path) {
    tf_hf_pre *p = calloc(1, sizeof *p);
    const cJSON *o = item(root, "pre_tokenizer");
    if (!p) return tf_set_error("tokenizer: out of memory"), NULL;
    if (o && !cJSON_IsNull(o) && add_pre(p, path, o, 0)) return free(p), NULL;
    return p;
}

void tf_hf_pre_free(tf_hf_pre *p) { free(p); }

static int pre_step_run(const tf_hf_pre *p, int k, const char *s, size_t n, int at_start, tf_hf_piece_fn fn, void *ctx);

/* WhitespaceSplit: the runs between Unicode whitespace, which is dropped. */
static int whitespace_split(const tf_hf_pre *p, int k, const char *s, size_t n, int at_start, tf_hf_piece_fn fn,
                            void *ctx) {
    size_t start = 0, len;
    for (size_t i = 0; i <= n; i += len) {
        len = 1;
        if (i < n && !tf_unicode_is_space(next_cp(s + i, n - i, &len))) continue;
        if (i > start && pre_step_run(p, k + 1, s + start, i - start, at_start && start == 0, fn, ctx)) return -1;
        start = i + len;
    }
    return 0;
}

/* Metaspace: spaces become the replacement, which is put first (prepend_scheme)
 * unless the text starts with it; split: a piece begins at each replacement. */
static int metaspace(const tf_hf_pre *p, int k, const char *s, size_t n, int at_start, tf_hf_piece_fn fn, void *ctx) {
    const pre_step *st = &p->step[k];
    tf_buf t = {0};
    int rc = 0;
    if (n && (st->prepend == PREPEND_ALWAYS || (st->prepend == PREPEND_FIRST && at_start)) &&
        s[0] != ' ' && !(n >= st->rep_len && !memcmp(s, st->rep, st->rep_len))) /* does not start with it once replaced */
        rc = tf_buf_put(&t, st->rep, st->rep_len);
    for (size_t i = 0; !rc && i < n; i++) rc = s[i] == ' ' ? tf_buf_put(&t, st->rep, st->rep_len) : tf_buf_put(&t, s + i, 1);
    size_t start = 0;
    for (size_t i = 0; !rc && st->split && i < t.n; i++) {
        if (i == start || i + st->rep_len > t.n || memcmp(t.p + i, st->rep, st->rep_len)) continue;
        rc = pre_step_run(p, k + 1, t.p + start, i - start, at_start && start == 0, fn, ctx);
        start = i;
    }
    if (!rc && t.n > start) rc = pre_step_run(p, k + 1, t.p + start, t.n - start, at_start && start == 0, fn, ctx);
    free(t.p);
    return rc;
}

static int pre_step_run(const tf_hf_pre *p, int k, const char *s, size_t n, int at_start, tf_hf_piece_fn fn, void *ctx) {
    if (k == p->n) return n ? fn(ctx, s, n) : 0;
    return p->step[k].kind == P_WHITESPACE_SPLIT ? whitespace_split(p, k, s, n, at_start, fn, ctx)
                                                 : metaspace(p, k, s, n, at_start, fn, ctx);
}

int tf_hf_pre_tokenize(const tf_hf_pre *p, const char *s, size_t n, int at_start, tf_hf_piece_fn fn, void *ctx) {
    return pre_step_run(p, 0, s, n, at_start, fn, ctx);
}
