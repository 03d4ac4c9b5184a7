/* Hash maps, buffers, file reading and UTF-8 helpers for the tokenizers. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "tok_internal.h"

static uint64_t hash_bytes(const char *k, size_t n) {
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)k[i]) * 1099511628211ull;
    return h ^ (h >> 29);
}

static size_t pow2_at_least(size_t n) {
    size_t c = 16;
    while (c < n) c <<= 1;
    return c;
}

int tf_strmap_init(tf_strmap *m, size_t expect) {
    memset(m, 0, sizeof *m);
    m->cap = pow2_at_least(expect * 2);
    m->keys = calloc(m->cap, sizeof *m->keys);
    m->lens = calloc(m->cap, sizeof *m->lens);
    m->vals = calloc(m->cap, sizeof *m->vals);
    m->arena = tf_arena_new(1 << 16);
    if (!m->keys || !m->lens || !m->vals || !m->arena) {
        tf_strmap_free(m);
        return tf_set_error("tokenizer: out of memory");
    }
    return 0;
}

void tf_strmap_free(tf_strmap *m) {
    free(m->keys);
    free(m->lens);
    free(m->vals);
    tf_arena_free(m->arena);
    memset(m, 0, sizeof *m);
}

void tf_strmap_clear(tf_strmap *m) {
    memset(m->keys, 0, m->cap * sizeof *m->keys);
    tf_arena_reset(m->arena);
    m->n = 0;
}

static size_t slot_of(const tf_strmap *m, const char *k, size_t len) {
    size_t i = hash_bytes(k, len) & (m->cap - 1);
    while (m->keys[i] && (m->lens[i] != len || memcmp(m->keys[i], k, len))) i = (i + 1) & (m->cap - 1);
    return i;
}

static int strmap_grow(tf_strmap *m) {
    tf_strmap b = *m;
    b.cap = m->cap * 2;
    b.keys = calloc(b.cap, sizeof *b.keys);
    b.lens = calloc(b.cap, sizeof *b.lens);
    b.vals = calloc(b.cap, sizeof *b.vals);
    if (!b.keys || !b.lens || !b.vals) {
        free(b.keys), free(b.lens), free(b.vals);
        return tf_set_error("tokenizer: out of memory");
    }
    for (size_t i = 0; i < m->cap; i++)
        if (m->keys[i]) {
            size_t j = slot_of(&b, m->keys[i], m->lens[i]);
            b.keys[j] = m->keys[i], b.lens[j] = m->lens[i], b.vals[j] = m->vals[i];
        }
    free(m->keys), free(m->lens), free(m->vals);
    *m = b;
    return 0;
}

int tf_strmap_put(tf_strmap *m, const char *k, size_t len, int32_t v) {
    if (len > UINT32_MAX) return tf_set_error("tokenizer: key too long");
    if ((m->n + 1) * 2 > m->cap && strmap_grow(m)) return -1;
    size_t i = slot_of(m, k, len);
    if (!m->keys[i]) {
        char *copy = tf_arena_alloc(m->arena, len + 1);
        if (!copy) return -1;
        memcpy(copy, k, len);
        m->keys[i] = copy;
        m->lens[i] = (uint32_t)len;
        m->n++;
    }
    m->vals[i] = v;
    return 0;
}

int32_t tf_strmap_get(const tf_strmap *m, const char *k, size_t len) {
    if (!m->cap) return -1;
    size_t i = slot_of(m, k, len);
    return m->keys[i] ? m->vals[i] : -1;
}

/* ---------------------------------------------------------------- pair map */

static uint64_t pair_key(int32_t a, int32_t b) { return (((uint64_t)(uint32_t)a << 32) | (uint32_t)b) + 1; }

static size_t pair_slot(const tf_pairmap *m, uint64_t key) {
    uint64_t h = key * 0x9E3779B97F4A7C15ull;
    size_t i = (size_t)(h ^ (h >> 32)) & (m->cap - 1);
    while (m->keys[i] && m->keys[i] != key) i = (i + 1) & (m->cap - 1);
    return i;
}

int tf_pairmap_init(tf_pairmap *m, size_t expect) {
    m->cap = pow2_at_least(expect * 2);
    m->n = 0;
    m->keys = calloc(m->cap, sizeof *m->keys);
    m->rank = calloc(m->cap, sizeof *m->rank);
    m->merged = calloc(m->cap, sizeof *m->merged);
    if (!m->keys || !m->rank || !m->merged) {
        tf_pairmap_free(m);
        return tf_set_error("tokenizer: out of memory");
    }
    return 0;
}

void tf_pairmap_free(tf_pairmap *m) {
    free(m->keys);
    free(m->rank);
    free(m->merged);
    memset(m, 0, sizeof *m);
}

int tf_pairmap_put(tf_pairmap *m, int32_t a, int32_t b, int32_t rank, int32_t merged) {
    if ((m->n + 1) * 2 > m->cap) {
        tf_pairmap g;
        if (tf_pairmap_init(&g, m->cap)) return -1;
        for (size_t i = 0; i < m->cap; i++)
            if (m->keys[i]) {
                size_t j = pair_slot(&g, m->keys[i]);
                g.keys[j] = m->keys[i], g.rank[j] = m->rank[i], g.merged[j] = m->merged[i];
            }
        g.n = m->n;
        tf_pairmap_free(m);
        *m = g;
    }
    uint64_t key = pair_key(a, b);
    size_t i = pair_slot(m, key);
    if (!m->keys[i]) m->n++;
    m->keys[i] = key, m->rank[i] = rank, m->merged[i] = merged;
    return 0;
}

int32_t tf_pairmap_get(const tf_pairmap *m, int32_t a, int32_t b, int32_t *merged) {
    size_t i = pair_slot(m, pair_key(a, b));
    if (!m->keys[i]) return -1;
    if (merged) *merged = m->merged[i];
    return m->rank[i];
}

/* ---------------------------------------------------------------- buffers, files */

int tf_buf_put(tf_buf *b, const void *data, size_t n) {
    if (n > SIZE_MAX / 2 - b->n) return tf_set_error("buffer too large");
    if (b->n + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->n + n + 1) cap *= 2;
        char *p = realloc(b->p, cap);
        if (!p) return tf_set_error("out of memory");
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->n, data, n);
    b->n += n;
    b->p[b->n] = 0;
    return 0;
}

const char *tf_memfind(const char *hay, size_t n, const char *needle, size_t m) {
    if (m == 0) return hay;
    const char *end = hay + n;
    for (const char *p = hay; (size_t)(end - p) >= m; p++) {
        p = memchr(p, needle[0], (size_t)(end - p) - m + 1);
        if (!p) return NULL;
        if (!memcmp(p, needle, m)) return p;
    }
    return NULL;
}

char *tf_read_file(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return tf_set_error("%s: cannot open: %s", path, strerror(errno)), NULL;
    tf_buf b = {0};
    char chunk[65536];
    size_t n;
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0)
        if (tf_buf_put(&b, chunk, n)) {
            free(b.p);
            fclose(f);
            return NULL;
        }
    int err = ferror(f);
    fclose(f);
    if (err) {
        free(b.p);
        return tf_set_error("%s: read error", path), NULL;
    }
    if (!b.p && tf_buf_put(&b, "", 0)) return NULL;
    *len = b.n;
    return b.p;
}

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

int tf_encode_with_specials(const char *text, size_t len, const tf_specials *sp, tf_encode_fn plain, void *impl,
                            tf_ids *out) {
    size_t pos = 0;
    while (pos < len) {
        size_t best = len; /* the earliest special token at or after pos; longest first on ties */
        int32_t best_id = -1;
        for (int k = 0; k < sp->n; k++) {
            int32_t id = sp->ids[k];
            const char *p = tf_memfind(text + pos, len - pos, sp->tok[id], sp->tok_len[id]);
            if (p && (size_t)(p - text) < best) best = (size_t)(p - text), best_id = id;
        }
        if (plain(impl, text + pos, best - pos, out)) return -1;
        if (best_id < 0) break;
        if (tf_ids_push(out, best_id)) return -1;
        pos = best + sp->tok_len[best_id];
    }
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
