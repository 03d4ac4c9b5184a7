/* Learning a vocabulary: count words, then repeatedly merge the most frequent
 * adjacent pair. Ties go to the pair of smaller token ids (the first token's
 * id, then the second's) — Hugging Face's rule. Alphabets are numbered in
 * code-point order after the special tokens, so results are deterministic. */
#include <stdlib.h>
#include <string.h>

#include "train_internal.h"

/* ---------------------------------------------------------------- tokens, words, pairs */

int tr_token(tf_trainer *t, const char *s, size_t n) {
    int32_t id = tf_strmap_get(&t->tok_map, s, n);
    if (id >= 0) return id;
    if (t->n_tok == t->cap_tok) {
        int32_t cap = t->cap_tok ? t->cap_tok * 2 : 1024;
        const char **tok = realloc(t->tok, (size_t)cap * sizeof *tok);
        if (!tok) return tf_set_error("train: out of memory");
        t->tok = tok;
        uint32_t *len = realloc(t->tok_len, (size_t)cap * sizeof *len);
        if (!len) return tf_set_error("train: out of memory");
        t->tok_len = len;
        t->cap_tok = cap;
    }
    char *copy = tf_arena_alloc(t->tok_arena, n + 1);
    if (!copy || tf_strmap_put(&t->tok_map, s, n, t->n_tok)) return -1;
    memcpy(copy, s, n);
    t->tok[t->n_tok] = copy;
    t->tok_len[t->n_tok] = (uint32_t)n;
    return t->n_tok++;
}

int tr_count_word(tf_trainer *t, const char *w, size_t n) {
    int32_t i = tf_strmap_get(&t->word_map, w, n);
    if (i >= 0) {
        t->words[i].count++;
        return 0;
    }
    if (t->n_words == t->cap_words) {
        size_t cap = t->cap_words ? t->cap_words * 2 : 4096;
        tr_word *ws = realloc(t->words, cap * sizeof *ws);
        if (!ws) return tf_set_error("train: out of memory");
        t->words = ws;
        t->cap_words = cap;
    }
    if (t->n_words >= INT32_MAX || tf_strmap_put(&t->word_map, w, n, (int32_t)t->n_words)) return -1;
    t->words[t->n_words++] = (tr_word){NULL, 0, 1};
    return 0;
}

/* Index of pair (a,b), created with count 0 when new. */
static int32_t pair_index(tf_trainer *t, int32_t a, int32_t b) {
    int32_t idx = tf_pairmap_get(&t->pairs, a, b, NULL);
    if (idx >= 0) return idx;
    if (t->n_pairs == t->cap_pairs) {
        size_t cap = t->cap_pairs ? t->cap_pairs * 2 : 65536;
        tr_pair *p = realloc(t->pair, cap * sizeof *p);
        if (!p) return tf_set_error("train: out of memory");
        t->pair = p;
        t->cap_pairs = cap;
    }
    idx = (int32_t)t->n_pairs++;
    t->pair[idx] = (tr_pair){a, b, 0, NULL, 0, 0, -1};
    return tf_pairmap_put(&t->pairs, a, b, idx, 0) ? -1 : idx;
}

/* Add count to pair (a,b); a positive change records word w as a place to look. */
static int pair_add(tf_trainer *t, int32_t a, int32_t b, int64_t count, int32_t w) {
    int32_t idx = pair_index(t, a, b);
    if (idx < 0) return -1;
    tr_pair *p = &t->pair[idx];
    p->count += count;
    if (count <= 0 || (p->nw && p->where[p->nw - 1] == w)) return 0;
    if (p->nw == p->capw) {
        int32_t cap = p->capw ? p->capw * 2 : 4;
        int32_t *wh = realloc(p->where, (size_t)cap * sizeof *wh);
        if (!wh) return tf_set_error("train: out of memory");
        p->where = wh;
        p->capw = cap;
    }
    p->where[p->nw++] = w;
    if (p->touched != t->step) { /* pushed again after this merge step */
        p->touched = t->step;
        if (tf_ids_push(&t->touched, idx)) return -1;
    }
    return 0;
}

/* ---------------------------------------------------------------- the max-heap */

static int heap_before(const tf_trainer *t, tr_heap x, tr_heap y) {
    if (x.count != y.count) return x.count > y.count;
    const tr_pair *a = &t->pair[x.idx], *b = &t->pair[y.idx];
    return a->a != b->a ? a->a < b->a : a->b < b->b;
}

static int heap_push(tf_trainer *t, tr_heap e) {
    if (t->hn == t->hcap) {
        size_t cap = t->hcap ? t->hcap * 2 : 65536;
        tr_heap *h = realloc(t->heap, cap * sizeof *h);
        if (!h) return tf_set_error("train: out of memory");
        t->heap = h;
        t->hcap = cap;
    }
    size_t i = t->hn++;
    while (i > 0 && heap_before(t, e, t->heap[(i - 1) / 2])) {
        t->heap[i] = t->heap[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    t->heap[i] = e;
    return 0;
}

static tr_heap heap_pop(tf_trainer *t) {
    tr_heap top = t->heap[0], last = t->heap[--t->hn];
    size_t i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= t->hn) break;
        if (c + 1 < t->hn && heap_before(t, t->heap[c + 1], t->heap[c])) c++;
        if (!heap_before(t, t->heap[c], last)) break;
        t->heap[i] = t->heap[c];
        i = c;
    }
    if (t->hn) t->heap[i] = last;
    return top;
}

/* ---------------------------------------------------------------- merging */

/* Replace each left-to-right occurrence of (a,b) in word w by m and move the
 * neighbouring pairs' counts, as Hugging Face's Word::merge does. */
static int merge_in_word(tf_trainer *t, int32_t w, int32_t a, int32_t b, int32_t m) {
    tr_word *wd = &t->words[w];
    int32_t *s = wd->sym, n = wd->len, k = 0;
    int64_t c = wd->count;
    for (int32_t i = 0; i < n; i++) {
        if (s[i] == a && i + 1 < n && s[i + 1] == b) {
            if (k > 0 && (pair_add(t, s[k - 1], a, -c, w) || pair_add(t, s[k - 1], m, c, w))) return -1;
            if (i + 2 < n && (pair_add(t, b, s[i + 2], -c, w) || pair_add(t, m, s[i + 2], c, w))) return -1;
            s[k++] = m;
            i++;
        } else {
            s[k++] = s[i];
        }
    }
    wd->len = k;
    return 0;
}

/* The merged token's text: a + b, without b's continuation prefix. */
static int32_t merged_token(tf_trainer *t, int32_t a, int32_t b) {
    size_t pl = strlen(t->cont_prefix), bl = t->tok_len[b];
    const char *bs = t->tok[b];
    if (pl && bl >= pl && !memcmp(bs, t->cont_prefix, pl)) bs += pl, bl -= pl;
    tf_buf s = {0};
    int32_t id = tf_buf_put(&s, t->tok[a], t->tok_len[a]) || tf_buf_put(&s, bs, bl) ? -1 : tr_token(t, s.p, s.n);
    free(s.p);
    return id;
}

int tr_learn(tf_trainer *t, int32_t vocab_size, int64_t min_frequency) {
    for (size_t w = 0; w < t->n_words; w++)
        for (int32_t i = 0; i + 1 < t->words[w].len; i++)
            if (pair_add(t, t->words[w].sym[i], t->words[w].sym[i + 1], t->words[w].count, (int32_t)w)) return -1;
    for (size_t p = 0; p < t->n_pairs; p++)
        if (t->pair[p].count > 0 && heap_push(t, (tr_heap){t->pair[p].count, (int32_t)p})) return -1;
    if (min_frequency < 1) min_frequency = 1;
    while (t->n_tok < vocab_size && t->hn) {
        tr_heap top = heap_pop(t);
        tr_pair *p = &t->pair[top.idx];
        if (top.count != p->count) { /* stale: counts only fall, so refresh and retry */
            if (p->count > 0 && heap_push(t, (tr_heap){p->count, top.idx})) return -1;
            continue;
        }
        if (top.count < min_frequency) break;
        int32_t a = p->a, b = p->b, m = merged_token(t, a, b);
        if (m < 0 || tf_ids_push(&t->merges, a) || tf_ids_push(&t->merges, b)) return -1;
        t->step++;
        t->touched.n = 0;
        int32_t nw = t->pair[top.idx].nw, last = -1;
        int32_t *where = t->pair[top.idx].where;
        t->pair[top.idx].where = NULL, t->pair[top.idx].nw = t->pair[top.idx].capw = 0;
        for (int32_t k = 0; k < nw; k++)
            if (where[k] != last && merge_in_word(t, last = where[k], a, b, m)) return free(where), -1;
        free(where);
        t->pair[top.idx].count = 0;
        for (size_t k = 0; k < t->touched.n; k++) {
            int32_t idx = t->touched.v[k];
            if (t->pair[idx].count > 0 && heap_push(t, (tr_heap){t->pair[idx].count, idx})) return -1;
        }
    }
    return 0;
}

void tr_free(tf_trainer *t) {
    for (size_t w = 0; w < t->n_words; w++) free(t->words[w].sym);
    for (size_t p = 0; p < t->n_pairs; p++) free(t->pair[p].where);
    free(t->words), free(t->pair), free(t->heap), free(t->tok), free(t->tok_len);
    tf_ids_free(&t->merges);
    tf_ids_free(&t->touched);
    tf_strmap_free(&t->tok_map);
    tf_strmap_free(&t->word_map);
    tf_pairmap_free(&t->pairs);
    tf_arena_free(t->tok_arena);
}

int tr_init(tf_trainer *t, const char *cont_prefix) {
    memset(t, 0, sizeof *t);
    t->cont_prefix = cont_prefix;
    if (!(t->tok_arena = tf_arena_new(1 << 16)) || tf_strmap_init(&t->tok_map, 4096) ||
        tf_strmap_init(&t->word_map, 65536) || tf_pairmap_init(&t->pairs, 65536))
        return tr_free(t), -1;
    return 0;
}
