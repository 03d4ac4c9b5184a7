/* Hash maps: byte strings -> int32, and int32 pairs -> (rank, id). */
#include <stdlib.h>
#include <string.h>

#include "util.h"

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
        return tf_set_error("map: out of memory");
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
        return tf_set_error("map: out of memory");
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
    if (len > UINT32_MAX) return tf_set_error("map: key too long");
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
        return tf_set_error("map: out of memory");
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
