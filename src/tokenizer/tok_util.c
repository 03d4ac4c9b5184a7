/* UTF-8, whitespace, special tokens and merges files for the tokenizers. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "tok_internal.h"

/* ---------------------------------------------------------------- UTF-8 */

int32_t tf_utf8_decode(const unsigned char *s, size_t n, int *used) {
    *used = 1;
    if (n == 0) return -1;
    unsigned c = s[0];
    if (c < 0x80) return (int32_t)c;
    int len = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC2 ? 2 : 0;
    if (!len || c > 0xF4 || (size_t)len > n) return -1;
    uint32_t cp = c & (0x3Fu >> (len - 1));
    for (int i = 1; i < len; i++) {
        if ((s[i] & 0xC0) != 0x80) return -1;
        cp = (cp << 6) | (s[i] & 0x3F);
    }
    if ((len == 3 && cp < 0x800) || (len == 4 && (cp < 0x10000 || cp > 0x10FFFF)) ||
        (cp >= 0xD800 && cp <= 0xDFFF))
        return -1;
    *used = len;
    return (int32_t)cp;
}

int tf_utf8_encode(uint32_t cp, char *out) {
    unsigned char *o = (unsigned char *)out;
    if (cp < 0x80) return o[0] = (unsigned char)cp, 1;
    if (cp < 0x800) return o[0] = (unsigned char)(0xC0 | cp >> 6), o[1] = (unsigned char)(0x80 | (cp & 0x3F)), 2;
    if (cp < 0x10000) {
        o[0] = (unsigned char)(0xE0 | cp >> 12), o[1] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
        o[2] = (unsigned char)(0x80 | (cp & 0x3F));
        return 3;
    }
    o[0] = (unsigned char)(0xF0 | cp >> 18), o[1] = (unsigned char)(0x80 | ((cp >> 12) & 0x3F));
    o[2] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F)), o[3] = (unsigned char)(0x80 | (cp & 0x3F));
    return 4;
}

void tf_bytes_to_unicode(uint32_t table[256]) {
    /* Printable bytes map to themselves; the other 68 to 256, 257, ... in byte order. */
    uint32_t next = 256;
    for (int b = 0; b < 256; b++) {
        int printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
        table[b] = printable ? (uint32_t)b : next++;
    }
}

/* ---------------------------------------------------------------- splitting */

int tf_unicode_is_space(int32_t c) { /* Unicode White_Space */
    return c == ' ' || (c >= 9 && c <= 13) || c == 0x85 || c == 0xA0 || c == 0x1680 ||
           (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000;
}

int tf_split_whitespace(const char *s, size_t n, tf_span_fn fn, void *ctx) {
    size_t start = 0;
    for (size_t i = 0; i <= n;) {
        int used = 1;
        int32_t c = i < n ? tf_utf8_decode((const unsigned char *)s + i, n - i, &used) : ' ';
        if (c < 0) return tf_set_error("invalid UTF-8 at byte %zu", i);
        if (tf_unicode_is_space(c)) {
            if (i > start && fn(ctx, s + start, i - start)) return -1;
            start = i + (size_t)used;
        }
        i += (size_t)used;
    }
    return 0;
}

void tf_sort_longest_first(int32_t *ids, uint8_t *flags, int n, const uint32_t *tok_len) {
    for (int i = 1; i < n; i++)
        for (int j = i; j > 0 && tok_len[ids[j]] > tok_len[ids[j - 1]]; j--) {
            int32_t t = ids[j];
            ids[j] = ids[j - 1], ids[j - 1] = t;
            if (flags) {
                uint8_t f = flags[j];
                flags[j] = flags[j - 1], flags[j - 1] = f;
            }
        }
}

/* Whitespace before end (not before lo) / after start: its first / last byte. */
static size_t space_back(const char *s, size_t lo, size_t end) {
    while (end > lo) {
        size_t b = end - 1;
        while (b > lo && ((unsigned char)s[b] & 0xC0) == 0x80 && end - b < 4) b--;
        int used;
        int32_t c = tf_utf8_decode((const unsigned char *)s + b, end - b, &used);
        if (c < 0 || (size_t)used != end - b || !tf_unicode_is_space(c)) break;
        end = b;
    }
    return end;
}

static size_t space_fwd(const char *s, size_t start, size_t n) {
    while (start < n) {
        int used;
        int32_t c = tf_utf8_decode((const unsigned char *)s + start, n - start, &used);
        if (c < 0 || !tf_unicode_is_space(c)) break;
        start += (size_t)used;
    }
    return start;
}

static int ascii_alnum(char c) { return (c >= '0' && c <= '9') || ((c | 0x20) >= 'a' && (c | 0x20) <= 'z'); }

size_t tf_cut_before_line(const char *s, size_t n) {
    for (size_t b = n; b >= 2; b--)
        if (b < n && s[b - 1] == '\n' && ascii_alnum(s[b]) && s[b - 2] > ' ' && s[b - 2] < 0x7f) return b;
    return 0;
}

int tf_specials_allow_cut(const tf_specials *sp) {
    for (int k = 0; k < sp->n; k++) {
        const char *t = sp->tok[sp->ids[k]];
        uint32_t l = sp->tok_len[sp->ids[k]];
        if (!l || memchr(t, '\n', l) || ascii_alnum(t[0])) return 0;
    }
    return 1;
}

int tf_encode_with_specials(const char *text, size_t len, const tf_specials *sp, tf_encode_fn plain, void *impl,
                            tf_ids *out) {
    size_t pos = 0;
    while (pos < len) {
        size_t best = len; /* the earliest special token at or after pos; longest first on ties */
        int32_t best_id = -1;
        uint8_t fl = 0;
        for (int k = 0; k < sp->n; k++) {
            int32_t id = sp->ids[k];
            const char *p = tf_memfind(text + pos, len - pos, sp->tok[id], sp->tok_len[id]);
            if (p && (size_t)(p - text) < best) best = (size_t)(p - text), best_id = id, fl = sp->flags ? sp->flags[k] : 0;
        }
        size_t seg_end = best_id >= 0 && (fl & TF_SPECIAL_LSTRIP) ? space_back(text, pos, best) : best;
        if (plain(impl, text + pos, seg_end - pos, out)) return -1;
        if (best_id < 0) break;
        if (tf_ids_push(out, best_id)) return -1;
        pos = best + sp->tok_len[best_id];
        if (fl & TF_SPECIAL_RSTRIP) pos = space_fwd(text, pos, len);
    }
    return 0;
}

int tf_vocab_by_id(const cJSON *obj, const char *where, int32_t extra, const char ***tok, int32_t *n_out) {
    int n = cJSON_GetArraySize(obj);
    if (!cJSON_IsObject(obj) || n == 0) return tf_set_error("%s: not a JSON object of token -> id", where);
    const char **t = calloc((size_t)n + (size_t)extra + 1, sizeof *t);
    if (!t) return tf_set_error("tokenizer: out of memory");
    for (const cJSON *e = obj->child; e; e = e->next) {
        double v = cJSON_IsNumber(e) ? e->valuedouble : -1;
        if (v < 0 || v >= n || (int32_t)v != v) {
            free(t);
            return tf_set_error("%s: token \"%.40s\" has id %g, outside [0,%d) or not an integer (ids must be "
                                "0..%d without gaps or repeats)", where, e->string, v, n, n - 1);
        }
        if (t[(int32_t)v]) {
            tf_set_error("%s: id %d is given to both \"%.40s\" and \"%.40s\"", where, (int32_t)v, t[(int32_t)v], e->string);
            free(t);
            return -1;
        }
        t[(int32_t)v] = e->string;
    }
    *tok = t;
    *n_out = n;
    return 0;
}

int tf_for_each_merge(const char *path, tf_merge_fn fn, void *ctx) {
    size_t len;
    char *text = tf_read_file(path, &len);
    if (!text) return -1;
    int rc = 0, line_no = 0;
    for (char *line = text, *end; !rc && line < text + len; line = end + 1) {
        end = memchr(line, '\n', (size_t)(text + len - line));
        if (!end) end = text + len;
        *end = 0;
        line_no++;
        if (end > line && end[-1] == '\r') end[-1] = 0;
        if (!*line || (line_no == 1 && !strncmp(line, "#version", 8))) continue;
        char *sp = strchr(line, ' ');
        if (!sp || strchr(sp + 1, ' ')) rc = tf_set_error("expected two tokens separated by one space");
        else *sp = 0, rc = fn(ctx, line, sp + 1);
        if (rc) {
            char msg[512];
            snprintf(msg, sizeof msg, "%s", tf_error());
            rc = tf_set_error("%s line %d: %s", path, line_no, msg);
        }
    }
    free(text);
    return rc;
}
