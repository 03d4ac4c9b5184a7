/* Private to src/metrics: text operations as Python's str does them, since
 * sacreBLEU's results depend on them (what split() calls whitespace, what
 * lower() maps, rstrip()). */
#ifndef TF_METRICS_INTERNAL_H
#define TF_METRICS_INTERNAL_H

#include "../util/util.h"
#include "tformer/metrics.h"

/* 0, or -1 with tf_error naming the byte offset of the first invalid UTF-8. */
int tf_py_check_utf8(const char *s, size_t n);
/* str.isspace() of one code point: tf_py_isspace (util.h). */
/* The length of s without trailing whitespace: str.rstrip(). */
size_t tf_py_rstrip_len(const char *s, size_t n);
/* The offset of s's first non-whitespace byte: what str.lstrip() drops. */
size_t tf_py_lstrip_off(const char *s, size_t n);
/* out = sep.join(s.split()), with sep " " or "" (str.split(): runs of
 * Unicode whitespace, none at either end). Appends to out. */
int tf_py_split_join(tf_buf *out, const char *s, size_t n, const char *sep);
/* out = s.lower(): full lower-case mapping, Greek final sigma included. */
int tf_py_lower(tf_buf *out, const char *s, size_t n);
/* Bytes of the UTF-8 sequence starting with byte b (valid input). */
static inline int tf_utf8_len(unsigned char b) { return b < 0x80 ? 1 : b < 0xE0 ? 2 : b < 0xF0 ? 3 : 4; }

#endif
