/* chrF (Popović, 2015) as sacreBLEU 2.x computes it by default: character
 * n-grams of orders 1..6 over the text with its whitespace removed, beta 2.
 *
 *   per order n: hyp_n, ref_n = n-grams counted; match_n = sum of min counts
 *     (hyp_n counts 0 when the reference has no n-gram of that order)
 *   corpus: P = mean over orders with hyp_n, ref_n > 0 of match_n / hyp_n,
 *     R likewise of match_n / ref_n;  chrF = 100 (1 + b^2) P R / (b^2 P + R)
 * With several references, each segment keeps the statistics of the one
 * with the best sentence-level chrF (the first on a tie). */
#include <stdlib.h>
#include <string.h>

#include "metrics_internal.h"

enum { BETA = 2 };

/* Counts of the character n-grams of s (code points), order by order. */
static int count_chars(tf_strmap m[TF_CHRF_ORDER], const char *s, size_t n, int64_t totals[TF_CHRF_ORDER]) {
    size_t cps = 0;
    for (size_t i = 0; i < n; i += (size_t)tf_utf8_len((unsigned char)s[i])) cps++;
    size_t *at = malloc((cps + 1) * sizeof *at), k = 0;
    if (!at) return tf_set_error("chrf: out of memory");
    for (size_t i = 0; i < n; i += (size_t)tf_utf8_len((unsigned char)s[i])) at[k++] = i;
    at[cps] = n;
    int rc = 0;
    for (int o = 0; o < TF_CHRF_ORDER; o++) {
        tf_strmap_clear(&m[o]);
        totals[o] = 0;
        for (size_t i = 0; i + (size_t)o + 1 <= cps && !rc; i++) {
            size_t b = at[i], e = at[i + (size_t)o + 1];
            int32_t c = tf_strmap_get(&m[o], s + b, e - b);
            rc = tf_strmap_put(&m[o], s + b, e - b, c < 0 ? 1 : c + 1);
            totals[o]++;
        }
    }
    free(at);
    return rc;
}

static double f_score(const int64_t hyp[], const int64_t ref[], const int64_t match[]) {
    double p = 0, r = 0, b2 = BETA * BETA;
    int eff = 0;
    for (int o = 0; o < TF_CHRF_ORDER; o++)
        if (hyp[o] > 0 && ref[o] > 0) {
            p += (double)match[o] / (double)hyp[o];
            r += (double)match[o] / (double)ref[o];
            eff++;
        }
    if (eff) p /= eff, r /= eff;
    return p + r > 0 ? 100 * ((1 + b2) * p * r / (b2 * p + r)) : 0.0;
}

double tf_chrf_compute(const tf_chrf_stats *s) { return f_score(s->hyp, s->ref, s->match); }

/* The text as chrF reads it: lower-cased if asked, whitespace removed. */
static char *prepare(int lowercase, const char *s, size_t n, size_t *len) {
    if (tf_py_check_utf8(s, n)) return NULL;
    tf_buf low = {0}, out = {0};
    if (lowercase && tf_py_lower(&low, s, n)) return NULL;
    int rc = tf_py_split_join(&out, lowercase ? low.p : s, lowercase ? low.n : n, "");
    free(low.p);
    if (rc) return free(out.p), NULL;
    *len = out.n;
    return out.p;
}

int tf_chrf_add(tf_chrf_stats *s, int lowercase, const char *hyp, size_t hyp_len, const char *const *refs,
                const size_t *ref_lens, int n_refs) {
    if (n_refs < 1) return tf_set_error("chrf: a segment needs at least one reference");
    tf_strmap h[TF_CHRF_ORDER] = {{0}}, r[TF_CHRF_ORDER] = {{0}};
    int64_t ht[TF_CHRF_ORDER], rt[TF_CHRF_ORDER], best[3][TF_CHRF_ORDER] = {{0}};
    int rc = 0;
    for (int o = 0; o < TF_CHRF_ORDER && !rc; o++) rc = tf_strmap_init(&h[o], 64) || tf_strmap_init(&r[o], 64);
    size_t hn, rn;
    char *ht_text = rc ? NULL : prepare(lowercase, hyp, hyp_len, &hn);
    if (!rc) rc = !ht_text || count_chars(h, ht_text, hn, ht) ? -1 : 0;
    double best_f = -1;
    for (int k = 0; k < n_refs && !rc; k++) {
        char *t = prepare(lowercase, refs[k], ref_lens[k], &rn);
        rc = !t || count_chars(r, t, rn, rt) ? -1 : 0;
        free(t);
        int64_t st[3][TF_CHRF_ORDER] = {{0}};
        for (int o = 0; o < TF_CHRF_ORDER && !rc; o++) {
            for (size_t i = 0; i < h[o].cap; i++)
                if (h[o].keys[i]) {
                    int32_t c = tf_strmap_get(&r[o], h[o].keys[i], h[o].lens[i]);
                    if (c > 0) st[2][o] += h[o].vals[i] < c ? h[o].vals[i] : c;
                }
            st[0][o] = rt[o] ? ht[o] : 0;
            st[1][o] = rt[o];
        }
        double f = rc ? 0 : f_score(st[0], st[1], st[2]);
        if (!rc && f > best_f) best_f = f, memcpy(best, st, sizeof best);
    }
    for (int o = 0; o < TF_CHRF_ORDER && !rc; o++)
        s->hyp[o] += best[0][o], s->ref[o] += best[1][o], s->match[o] += best[2][o];
    free(ht_text);
    for (int o = 0; o < TF_CHRF_ORDER; o++) tf_strmap_free(&h[o]), tf_strmap_free(&r[o]);
    return rc;
}
