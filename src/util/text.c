/* Python's str.isspace() and str.strip() on UTF-8 bytes: what sacreBLEU's
 * split() and sentence-transformers' strip() call whitespace (more than ASCII's). */
#include <utf8proc.h>

#include "util.h"

int tf_py_isspace(int32_t c) {
    return (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x20) || c == 0x85 || c == 0xA0 || c == 0x1680 ||
           (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000;
}

/* The code point of the UTF-8 sequence at s[i] (n bytes in all) and its
 * length; an invalid sequence is one byte that is not whitespace. */
static int32_t code_at(const char *s, size_t n, size_t i, size_t *len) {
    utf8proc_int32_t c;
    utf8proc_ssize_t k = utf8proc_iterate((const utf8proc_uint8_t *)s + i, (utf8proc_ssize_t)(n - i), &c);
    *len = k > 0 ? (size_t)k : 1;
    return k > 0 ? c : 0xFFFD;
}

size_t tf_py_strip(const char *s, size_t n, size_t *start) {
    size_t b = 0, len;
    while (b < n && tf_py_isspace(code_at(s, n, b, &len))) b += len;
    size_t e = n;
    while (e > b) {
        size_t p = e - 1;
        while (p > b && ((unsigned char)s[p] & 0xC0) == 0x80) p--;
        if (!tf_py_isspace(code_at(s, e, p, &len)) || p + len != e) break;
        e = p;
    }
    *start = b;
    return e - b;
}
