/* Applying BPE merges to one word, and GPT-2's pre-tokenizer regex. */
#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <stdlib.h>
#include <string.h>

#include "tok_internal.h"

struct tf_heap_ent {
    int32_t rank, pos;
};
typedef struct tf_heap_ent heap_ent;

static int heap_less(heap_ent a, heap_ent b) { return a.rank < b.rank || (a.rank == b.rank && a.pos < b.pos); }

static void heap_push(heap_ent *h, size_t *n, heap_ent e) {
    size_t i = (*n)++;
    while (i > 0 && heap_less(e, h[(i - 1) / 2])) {
        h[i] = h[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    h[i] = e;
}

static heap_ent heap_pop(heap_ent *h, size_t *n) {
    heap_ent top = h[0], last = h[--(*n)];
    size_t i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= *n) break;
        if (c + 1 < *n && heap_less(h[c + 1], h[c])) c++;
        if (!heap_less(h[c], last)) break;
        h[i] = h[c];
        i = c;
    }
    if (*n) h[i] = last;
    return top;
}

int tf_bpe_scratch_reserve(tf_bpe_scratch *s, size_t n) {
    if (n <= s->cap) return 0;
    size_t cap = n * 2;
    int32_t *ids = realloc(s->ids, cap * sizeof *ids);
    if (ids) s->ids = ids;
    int32_t *prev = ids ? realloc(s->prev, cap * sizeof *prev) : NULL;
    if (prev) s->prev = prev;
    int32_t *next = prev ? realloc(s->next, cap * sizeof *next) : NULL;
    if (next) s->next = next;
    /* the heap holds up to 2n - 2 entries (n - 1 pairs, then at most one more per merge) */
    heap_ent *heap = next ? realloc(s->heap, 2 * cap * sizeof *heap) : NULL;
    if (!heap) return tf_set_error("tokenizer: out of memory for a %zu-symbol word", n);
    s->heap = heap;
    s->cap = cap;
    return 0;
}

void tf_bpe_scratch_free(tf_bpe_scratch *s) {
    free(s->ids), free(s->prev), free(s->next), free(s->heap);
    memset(s, 0, sizeof *s);
}

/* Pop the lowest-ranked adjacent pair (leftmost on ties), merge it, push the
 * two new neighbour pairs: n log n, and the same result as merging all
 * occurrences of the best pair per pass. */
int tf_bpe_merge(const tf_pairmap *merges, tf_bpe_scratch *s, int32_t n, tf_ids *out) {
    int32_t *ids = s->ids, *prev = s->prev, *next = s->next, m, r;
    size_t hn = 0;
    for (int32_t i = 0; i < n; i++) prev[i] = i - 1, next[i] = i + 1;
    for (int32_t i = 0; i + 1 < n; i++)
        if (ids[i] >= 0 && ids[i + 1] >= 0 && (r = tf_pairmap_get(merges, ids[i], ids[i + 1], NULL)) >= 0)
            heap_push(s->heap, &hn, (heap_ent){r, i});
    while (hn) {
        heap_ent e = heap_pop(s->heap, &hn);
        int32_t i = e.pos, j = next[i];
        if (ids[i] < 0 || j >= n || ids[j] < 0 || tf_pairmap_get(merges, ids[i], ids[j], &m) != e.rank) continue;
        ids[i] = m;
        ids[j] = -2; /* merged away */
        next[i] = next[j];
        if (next[j] < n) prev[next[j]] = i;
        if (prev[i] >= 0 && (r = tf_pairmap_get(merges, ids[prev[i]], ids[i], NULL)) >= 0)
            heap_push(s->heap, &hn, (heap_ent){r, prev[i]});
        if (next[i] < n && (r = tf_pairmap_get(merges, ids[i], ids[next[i]], NULL)) >= 0)
            heap_push(s->heap, &hn, (heap_ent){r, i});
    }
    for (int32_t i = 0; i < n; i = next[i])
        if (tf_ids_push(out, ids[i])) return -1;
    return 0;
}

/* ---------------------------------------------------------------- GPT-2 regex */

/* Unicode White_Space, as \s in tiktoken's (Rust) regex. */
#define WS "\\t-\\r \\x{85}\\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}\\x{202F}\\x{205F}\\x{3000}"
static const char GPT2_PATTERN[] = "'(?:[sdmt]|ll|ve|re)| ?\\p{L}+| ?\\p{N}+| ?[^" WS "\\p{L}\\p{N}]+|[" WS
                                   "]+(?![^" WS "])|[" WS "]+";

int tf_gpt2_re_init(tf_gpt2_re *r) {
    int err;
    PCRE2_SIZE off;
    r->md = NULL;
    r->code = pcre2_compile((PCRE2_SPTR)GPT2_PATTERN, PCRE2_ZERO_TERMINATED,
                            PCRE2_UTF | PCRE2_UCP | PCRE2_MATCH_INVALID_UTF, &err, &off, NULL);
    if (!r->code) {
        PCRE2_UCHAR msg[256];
        pcre2_get_error_message(err, msg, sizeof msg);
        return tf_set_error("pre-tokenizer regex: %s at %zu", (char *)msg, (size_t)off);
    }
    pcre2_jit_compile(r->code, PCRE2_JIT_COMPLETE); /* the interpreter serves if JIT is unavailable */
    r->md = pcre2_match_data_create_from_pattern(r->code, NULL);
    return r->md ? 0 : tf_set_error("pre-tokenizer: out of memory");
}

void tf_gpt2_re_free(tf_gpt2_re *r) {
    if (r->md) pcre2_match_data_free(r->md);
    if (r->code) pcre2_code_free(r->code);
    r->md = r->code = NULL;
}

int tf_gpt2_re_next(tf_gpt2_re *r, const char *s, size_t n, size_t off, size_t *ms, size_t *me) {
    int rc = pcre2_match(r->code, (PCRE2_SPTR)s, n, off, 0, r->md, NULL);
    *ms = *me = n;
    if (rc > 0) {
        PCRE2_SIZE *ov = pcre2_get_ovector_pointer(r->md);
        *ms = ov[0], *me = ov[1];
    } else if (rc != PCRE2_ERROR_NOMATCH) {
        return tf_set_error("pre-tokenizer: PCRE2 error %d", rc);
    }
    return 0;
}
