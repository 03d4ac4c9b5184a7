/* Python's str operations that sacreBLEU's scores depend on, on UTF-8 bytes:
 * split() (whitespace is str.isspace(): more than ASCII's), rstrip() and
 * lower() (full case mapping: U+0130 becomes "i" + U+0307, and a capital
 * sigma at the end of a word becomes the final sigma). */
#include <string.h>
#include <utf8proc.h>

#include "metrics_internal.h"

int tf_py_check_utf8(const char *s, size_t n) {
    for (size_t i = 0; i < n;) {
        utf8proc_int32_t c;
        utf8proc_ssize_t k = utf8proc_iterate((const utf8proc_uint8_t *)s + i, (utf8proc_ssize_t)(n - i), &c);
        if (k <= 0) return tf_set_error("invalid UTF-8 at byte %zu", i + 1);
        i += (size_t)k;
    }
    return 0;
}

/* The code point at s[i] (valid UTF-8) and its length. */
static int32_t code_at(const char *s, size_t n, size_t i, int *len) {
    utf8proc_int32_t c;
    utf8proc_ssize_t k = utf8proc_iterate((const utf8proc_uint8_t *)s + i, (utf8proc_ssize_t)(n - i), &c);
    *len = k > 0 ? (int)k : 1;
    return k > 0 ? c : 0xFFFD;
}

/* The start of the code point that ends just before byte i. */
static size_t prev_start(const char *s, size_t i) {
    do i--;
    while (i > 0 && ((unsigned char)s[i] & 0xC0) == 0x80);
    return i;
}

size_t tf_py_rstrip_len(const char *s, size_t n) {
    while (n > 0) {
        size_t p = prev_start(s, n);
        int len;
        if (!tf_py_isspace(code_at(s, n, p, &len))) break;
        n = p;
    }
    return n;
}

size_t tf_py_lstrip_off(const char *s, size_t n) {
    size_t i = 0;
    for (int len; i < n && tf_py_isspace(code_at(s, n, i, &len));) i += (size_t)len;
    return i;
}

int tf_py_split_join(tf_buf *out, const char *s, size_t n, const char *sep) {
    int first = 1;
    for (size_t i = 0; i < n;) {
        int len;
        if (tf_py_isspace(code_at(s, n, i, &len))) {
            i += (size_t)len;
            continue;
        }
        size_t e = i;
        while (e < n && !tf_py_isspace(code_at(s, n, e, &len))) e += (size_t)len;
        if ((!first && tf_buf_put(out, sep, strlen(sep))) || tf_buf_put(out, s + i, e - i)) return -1;
        first = 0;
        i = e;
    }
    return tf_buf_put(out, "", 0);
}

/* Unicode's Cased and Case_Ignorable, as far as utf8proc's tables tell. */
static int is_cased(int32_t c) {
    utf8proc_category_t k = utf8proc_category(c);
    return k == UTF8PROC_CATEGORY_LU || k == UTF8PROC_CATEGORY_LL || k == UTF8PROC_CATEGORY_LT ||
           utf8proc_tolower(c) != c || utf8proc_toupper(c) != c;
}

static int is_case_ignorable(int32_t c) {
    utf8proc_category_t k = utf8proc_category(c);
    if (k == UTF8PROC_CATEGORY_MN || k == UTF8PROC_CATEGORY_ME || k == UTF8PROC_CATEGORY_CF ||
        k == UTF8PROC_CATEGORY_LM || k == UTF8PROC_CATEGORY_SK)
        return 1;
    static const int32_t MID[] = {0x27, 0x2E, 0x3A, 0xB7, 0x387, 0x55F, 0x5F4, 0x2018, 0x2019, 0x2024,
                                  0x2027, 0xFE13, 0xFE52, 0xFE55, 0xFF07, 0xFF0E, 0xFF1A};
    for (size_t i = 0; i < sizeof MID / sizeof MID[0]; i++)
        if (c == MID[i]) return 1;
    return 0;
}

/* Python's rule for U+03A3 at byte i: final when a cased letter comes before
 * it and none after (case-ignorable characters skipped both ways). */
static int final_sigma(const char *s, size_t n, size_t i, int len) {
    int32_t c = 0;
    size_t j = i;
    int found = 0, l;
    while (j > 0) {
        j = prev_start(s, j);
        c = code_at(s, n, j, &l);
        if (!is_case_ignorable(c)) {
            found = 1;
            break;
        }
    }
    if (!found || !is_cased(c)) return 0;
    for (j = i + (size_t)len; j < n; j += (size_t)l) {
        c = code_at(s, n, j, &l);
        if (!is_case_ignorable(c)) return !is_cased(c);
    }
    return 1;
}

int tf_py_lower(tf_buf *out, const char *s, size_t n) {
    for (size_t i = 0; i < n;) {
        int len;
        int32_t c = code_at(s, n, i, &len), lc;
        uint8_t enc[8];
        if (c == 0x130) { /* the one unconditional multi-character lower case */
            if (tf_buf_put(out, "i\xCC\x87", 3)) return -1;
            i += (size_t)len;
            continue;
        }
        lc = c == 0x3A3 ? (final_sigma(s, n, i, len) ? 0x3C2 : 0x3C3) : utf8proc_tolower(c);
        utf8proc_ssize_t k = utf8proc_encode_char(lc, enc);
        if (tf_buf_put(out, enc, (size_t)k)) return -1;
        i += (size_t)len;
    }
    return tf_buf_put(out, "", 0);
}
