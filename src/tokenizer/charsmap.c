/* SentencePiece's precompiled charsmap: a darts-clone double array over UTF-8
 * bytes whose leaves point at NUL-terminated replacement strings. Read from a
 * ModelProto's normalizer_spec (spm_model.c) or tokenizer.json's Precompiled
 * normalizer (base64); every node reachable by any bytes is checked on load,
 * so a match never reads outside the blob. */
#include <stdlib.h>
#include <string.h>

#include "spm.h"

static uint64_t le_bytes(const uint8_t *p, int n) {
    uint64_t v = 0;
    for (int i = n - 1; i >= 0; i--) v = v << 8 | p[i];
    return v;
}

/* ---------------------------------------------------------------- the charsmap's double array */

/* darts-clone's unit: label (bits 0-7, bit 31 marks a value), has_leaf (bit 8),
 * offset (bits 10-31, shifted by 8 more when bit 9 is set), value (bits 0-30). */
static uint32_t unit_offset(uint32_t u) { return (u >> 10) << ((u & (1u << 9)) >> 6); }
static uint32_t unit_label(uint32_t u) { return u & ((1u << 31) | 0xFFu); }
static int unit_has_leaf(uint32_t u) { return (u >> 8) & 1; }

size_t tf_charsmap_match(const tf_charsmap *m, const char *s, size_t n, int longest, const char **rep) {
    if (!m->units) return 0;
    uint32_t pos = unit_offset(m->units[0]);
    size_t best = 0;
    for (size_t i = 0; i < n; i++) { /* every position reached was checked by charsmap_check */
        uint8_t c = (uint8_t)s[i];
        if (!longest && !c) break;
        pos ^= c;
        uint32_t u = m->units[pos];
        if (unit_label(u) != c) break;
        pos ^= unit_offset(u);
        if (unit_has_leaf(u)) {
            best = i + 1, *rep = m->repl + (m->units[pos] & 0x7FFFFFFFu);
            if (!longest) break;
        }
    }
    return best;
}

/* Every node reachable from the root by any bytes: its 256 children's units
 * inside the array, each leaf's value the start of a NUL-terminated string of the blob. */
static int charsmap_check(const tf_charsmap *m, size_t n_text, const char *where) {
    size_t n = m->n_units, top = 0;
    uint8_t *seen = calloc(n, 1);
    uint32_t *stack = malloc(n * sizeof *stack);
    int rc = seen && stack ? 0 : tf_set_error("%s: out of memory", where);
    uint32_t root = unit_offset(m->units[0]);
    if (!rc && root >= n) rc = tf_set_error("%s: precompiled_charsmap: the trie's root offset %u is outside its %zu units", where, root, n);
    if (!rc) seen[root] = 1, stack[top++] = root;
    while (!rc && top) {
        uint32_t s = stack[--top];
        if ((size_t)(s | 0xFFu) >= n) {
            rc = tf_set_error("%s: precompiled_charsmap: trie node %u has children outside its %zu units", where, s, n);
            break;
        }
        for (uint32_t b = 0; !rc && b < 256; b++) {
            uint32_t p = s ^ b, u = m->units[p];
            if (unit_label(u) != b) continue;
            uint32_t c = p ^ unit_offset(u);
            if (c >= n) {
                rc = tf_set_error("%s: precompiled_charsmap: trie offset %u (unit %u) is outside its %zu units", where, c, p, n);
            } else if (unit_has_leaf(u)) {
                uint32_t v = m->units[c] & 0x7FFFFFFFu;
                if (v >= n_text || !memchr(m->repl + v, 0, n_text - v))
                    rc = tf_set_error("%s: precompiled_charsmap: replacement at %u is not a NUL-terminated string of "
                                      "the %zu-byte table", where, v, n_text);
            }
            if (!rc && !seen[c]) seen[c] = 1, stack[top++] = c;
        }
    }
    free(seen), free(stack);
    return rc;
}

/* The blob: trie size (uint32, little-endian), the trie's units, the replacement strings. */
int tf_charsmap_load(tf_charsmap *m, const uint8_t *blob, size_t len, const char *where) {
    if (!len) return 0;
    if (len <= 4) return tf_set_error("%s: precompiled_charsmap of %zu bytes is too short", where, len);
    uint64_t trie = le_bytes(blob, 4);
    if (trie == 0 || trie % 4 || trie > len - 4)
        return tf_set_error("%s: precompiled_charsmap: trie size %llu is not a positive multiple of 4 within its %zu "
                            "bytes", where, (unsigned long long)trie, len);
    m->n_units = (size_t)trie / 4, m->n_repl = len - 4 - (size_t)trie;
    m->units = malloc(m->n_units * sizeof *m->units);
    m->repl = malloc(m->n_repl + 1);
    if (!m->units || !m->repl) return tf_set_error("%s: out of memory", where);
    for (size_t i = 0; i < m->n_units; i++) m->units[i] = (uint32_t)le_bytes(blob + 4 + 4 * i, 4);
    memcpy(m->repl, blob + 4 + trie, m->n_repl);
    m->repl[m->n_repl] = 0;
    return charsmap_check(m, m->n_repl, where);
}

void tf_charsmap_free(tf_charsmap *m) {
    free(m->units), free(m->repl);
    memset(m, 0, sizeof *m);
}

