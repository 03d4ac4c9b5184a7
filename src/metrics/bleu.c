/* Corpus BLEU as sacreBLEU 2.x computes it (Papineni et al., 2002; the
 * smoothing methods of Chen and Cherry, 2014):
 *
 *   per segment: tokens = tokenize(rstrip(lower?(text)))
 *     correct[n] += sum over hypothesis n-grams of min(count, max count in any reference)
 *     total[n]   += hypothesis n-grams;  hyp_len += tokens
 *     ref_len    += the reference length closest to hyp_len (the shorter on a tie)
 *   corpus: p_n = 100 correct[n] / total[n] (exp smoothing: the k-th zero
 *     count becomes 100 / (2^k total[n])), BP = exp(1 - ref_len / hyp_len)
 *     when hyp_len < ref_len, BLEU = BP exp(mean_n log p_n); 0 if nothing matched.
 *
 * The 13a tokeniser is mteval-v13a's: the four regular expressions of
 * sacreBLEU's TokenizerRegexp, applied in turn with PCRE2 (the same
 * leftmost, non-overlapping replacement as Python's re.sub); intl is
 * mteval-v14's Unicode punctuation and symbol rules; zh is sacreBLEU's
 * TokenizerZh: each character of its CJK ranges spaced apart, then 13a's
 * four rules (no <skipped>, entities or padding). */
#define PCRE2_CODE_UNIT_WIDTH 8
#include <math.h>
#include <pcre2.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "metrics_internal.h"

/* ---------------------------------------------------------------- tokenisers */

typedef struct {
    const char *pattern, *replacement;
    uint32_t flags;
} rule;

static const rule RULES_13A[] = {
    {"([\\{-\\~\\[-\\` -\\&\\(-\\+\\:-\\@\\/])", " $1 ", 0},
    {"([^0-9])([\\.,])", "$1 $2 ", 0}, /* period and comma unless after a digit */
    {"([\\.,])([^0-9])", " $1 $2", 0}, /* ... unless before one */
    {"([0-9])(-)", "$1 $2 ", 0},       /* a dash after a digit */
};
static const rule RULES_INTL[] = {
    {"(\\P{N})(\\p{P})", "$1 $2 ", PCRE2_UCP},
    {"(\\p{P})(\\P{N})", " $1 $2", PCRE2_UCP},
    {"(\\p{S})", " $1 ", PCRE2_UCP},
};
enum { N_13A = 4, N_INTL = 3 };

static pcre2_code *code_13a[N_13A], *code_intl[N_INTL];
static pthread_once_t compiled = PTHREAD_ONCE_INIT;
static int compile_failed;

static void compile_all(void) {
    for (int k = 0; k < N_13A + N_INTL; k++) {
        const rule *r = k < N_13A ? &RULES_13A[k] : &RULES_INTL[k - N_13A];
        int err;
        PCRE2_SIZE off;
        pcre2_code *c = pcre2_compile((PCRE2_SPTR)r->pattern, PCRE2_ZERO_TERMINATED, PCRE2_UTF | r->flags, &err, &off, NULL);
        if (!c) compile_failed = 1;
        else pcre2_jit_compile(c, PCRE2_JIT_COMPLETE); /* the interpreter serves without JIT */
        if (k < N_13A) code_13a[k] = c;
        else code_intl[k - N_13A] = c;
    }
}

/* b = every match of c in b replaced (Python's re.sub). */
static int substitute(tf_buf *b, pcre2_code *c, const char *replacement) {
    PCRE2_SIZE cap = b->n * 2 + 64;
    for (;;) {
        PCRE2_UCHAR *out = malloc(cap);
        if (!out) return tf_set_error("bleu: out of memory");
        PCRE2_SIZE len = cap;
        int rc = pcre2_substitute(c, (PCRE2_SPTR)b->p, b->n, 0,
                                  PCRE2_SUBSTITUTE_GLOBAL | PCRE2_SUBSTITUTE_OVERFLOW_LENGTH | PCRE2_NO_UTF_CHECK, NULL,
                                  NULL, (PCRE2_SPTR)replacement, PCRE2_ZERO_TERMINATED, out, &len);
        if (rc == PCRE2_ERROR_NOMEMORY) {
            free(out);
            cap = len + 1;
            continue;
        }
        if (rc < 0) {
            free(out);
            PCRE2_UCHAR msg[160];
            pcre2_get_error_message(rc, msg, sizeof msg);
            return tf_set_error("bleu: tokenizer: %s", (const char *)msg);
        }
        b->n = 0;
        int r = tf_buf_put(b, out, len);
        free(out);
        return r;
    }
}

/* mteval-v13a's preprocessing: <skipped> dropped, the four HTML entities
 * sacreBLEU knows decoded in its order, the line padded with spaces. */
static int preprocess_13a(tf_buf *out, const char *s, size_t n) {
    static const char *const FROM[] = {"<skipped>", "&quot;", "&amp;", "&lt;", "&gt;"};
    static const char *const TO[] = {"", "\"", "&", "<", ">"};
    tf_buf cur = {0}, next = {0};
    if (tf_buf_put(&cur, s, n)) return -1;
    for (int k = 0; k < 5; k++) { /* one str.replace after another */
        size_t m = strlen(FROM[k]);
        next.n = 0;
        for (size_t i = 0; i < cur.n;) {
            const char *hit = tf_memfind(cur.p + i, cur.n - i, FROM[k], m);
            size_t stop = hit ? (size_t)(hit - cur.p) : cur.n;
            if (tf_buf_put(&next, cur.p + i, stop - i) || (hit && tf_buf_put(&next, TO[k], strlen(TO[k]))))
                return free(cur.p), free(next.p), -1;
            i = hit ? stop + m : cur.n;
        }
        if (tf_buf_put(&next, "", 0)) return free(cur.p), free(next.p), -1;
        tf_buf t = cur;
        cur = next, next = t;
    }
    int rc = tf_buf_put(out, " ", 1) || tf_buf_put(out, cur.p, cur.n) || tf_buf_put(out, " ", 1) ? -1 : 0;
    free(cur.p), free(next.p);
    return rc;
}

/* TokenizerZh's _UCODE_RANGES as sacreBLEU 2.x compares them: its Extension B
 * and Compatibility Supplement bounds are written '\u20000' and '\u2f800' (two
 * characters each), so a single character falls in [U+2001, U+2A6D] and
 * [U+2F81, U+2FA1] instead. */
static int is_zh_char(int32_t c) {
    static const int32_t R[][2] = {
        {0x3400, 0x4DB5}, {0x4E00, 0x9FA5}, {0x9FA6, 0x9FBB}, {0xF900, 0xFA2D}, {0xFA30, 0xFA6A}, {0xFA70, 0xFAD9},
        {0x2001, 0x2A6D}, {0x2F81, 0x2FA1}, {0xFF00, 0xFFEF}, {0x2E80, 0x2EFF}, {0x3000, 0x303F}, {0x31C0, 0x31EF},
        {0x2F00, 0x2FDF}, {0x2FF0, 0x2FFF}, {0x3100, 0x312F}, {0x31A0, 0x31BF}, {0xFE10, 0xFE1F}, {0xFE30, 0xFE4F},
        {0x2600, 0x26FF}, {0x2700, 0x27BF}, {0x3200, 0x32FF}, {0x3300, 0x33FF},
    };
    for (size_t k = 0; k < sizeof R / sizeof R[0]; k++)
        if (c >= R[k][0] && c <= R[k][1]) return 1;
    return 0;
}

/* TokenizerZh before its 13a rules: s stripped, each CJK character as " c " (valid UTF-8). */
static int space_zh(tf_buf *out, const char *s, size_t n) {
    size_t i = tf_py_lstrip_off(s, n);
    while (i < n) {
        size_t len = (size_t)tf_utf8_len((unsigned char)s[i]);
        unsigned char b0 = (unsigned char)s[i];
        int32_t c = len == 1 ? b0 : len == 2 ? b0 & 0x1F : len == 3 ? b0 & 0x0F : b0 & 0x07;
        for (size_t k = 1; k < len && i + k < n; k++) c = (c << 6) | ((unsigned char)s[i + k] & 0x3F);
        int zh = is_zh_char(c);
        if ((zh && tf_buf_put(out, " ", 1)) || tf_buf_put(out, s + i, len) || (zh && tf_buf_put(out, " ", 1))) return -1;
        i += len;
    }
    return 0;
}

char *tf_bleu_tokenize_text(const tf_bleu_opts *o, const char *text, size_t len, size_t *out_len) {
    if (tf_py_check_utf8(text, len)) return NULL;
    pthread_once(&compiled, compile_all);
    if (compile_failed) return tf_set_error("bleu: the tokenizer's patterns did not compile"), NULL;
    tf_buf low = {0}, b = {0}, out = {0};
    if (o->lowercase && tf_py_lower(&low, text, len)) return NULL;
    const char *s = o->lowercase ? low.p : text;
    size_t n = tf_py_rstrip_len(s, o->lowercase ? low.n : len);
    int rc = 0;
    if (o->tokenize == TF_BLEU_TOK_13A || o->tokenize == TF_BLEU_TOK_ZH) {
        rc = o->tokenize == TF_BLEU_TOK_ZH ? space_zh(&b, s, n) || tf_buf_put(&b, "", 0) : preprocess_13a(&b, s, n);
        for (int k = 0; k < N_13A && !rc; k++) rc = substitute(&b, code_13a[k], RULES_13A[k].replacement);
    } else {
        rc = tf_buf_put(&b, s, n);
        for (int k = 0; k < N_INTL && !rc && o->tokenize == TF_BLEU_TOK_INTL; k++)
            rc = substitute(&b, code_intl[k], RULES_INTL[k].replacement);
    }
    if (!rc) rc = tf_py_split_join(&out, b.p ? b.p : "", b.n, " ");
    free(low.p), free(b.p);
    if (rc) return free(out.p), NULL;
    *out_len = out.n;
    return out.p;
}

/* ---------------------------------------------------------------- n-gram statistics */

/* Every n-gram (n <= 4) of a tokenised segment is the substring from the
 * start of its first token to the end of its last: counted in a map. */
static int count_ngrams(tf_strmap *m, const char *s, size_t n, int64_t *tokens) {
    size_t start[1024], cap = 1024, *st = start, k = 0;
    for (size_t i = 0; i < n; i++)
        if (i == 0 || s[i - 1] == ' ') {
            if (k == cap) {
                size_t *g = malloc(2 * cap * sizeof *g);
                if (!g) return st != start ? (free(st), -1) : -1;
                memcpy(g, st, k * sizeof *g);
                if (st != start) free(st);
                st = g, cap *= 2;
            }
            st[k++] = i;
        }
    *tokens = (int64_t)k;
    int rc = 0;
    for (size_t i = 0; i < k && !rc; i++)
        for (size_t order = 1; order <= TF_BLEU_ORDER && i + order <= k && !rc; order++) {
            size_t end = i + order < k ? st[i + order] - 1 : n;
            int32_t c = tf_strmap_get(m, s + st[i], end - st[i]);
            rc = tf_strmap_put(m, s + st[i], end - st[i], c < 0 ? 1 : c + 1);
        }
    if (st != start) free(st);
    return rc;
}

static int64_t closest_len(int64_t hyp, const int64_t *lens, int n) {
    int64_t best = -1, diff = -1;
    for (int i = 0; i < n; i++) {
        int64_t d = llabs(hyp - lens[i]);
        if (diff < 0 || d < diff) diff = d, best = lens[i];
        else if (d == diff && lens[i] < best) best = lens[i];
    }
    return best;
}

/* The order of an n-gram key: its spaces plus one. */
static int key_order(const char *k, uint32_t len) {
    int o = 1;
    for (uint32_t i = 0; i < len; i++) o += k[i] == ' ';
    return o;
}

int tf_bleu_add(tf_bleu_stats *s, const tf_bleu_opts *o, const char *hyp, size_t hyp_len,
                const char *const *refs, const size_t *ref_lens, int n_refs) {
    if (n_refs < 1) return tf_set_error("bleu: a segment needs at least one reference");
    tf_strmap ref = {0}, one = {0}, h = {0};
    int64_t lens[64], *rl = n_refs <= 64 ? lens : malloc((size_t)n_refs * sizeof *rl);
    int rc = !rl || tf_strmap_init(&ref, 64) || tf_strmap_init(&one, 64) || tf_strmap_init(&h, 64) ? -1 : 0;
    for (int r = 0; r < n_refs && !rc; r++) { /* the largest count of each n-gram in any reference */
        size_t tn;
        char *t = tf_bleu_tokenize_text(o, refs[r], ref_lens[r], &tn);
        tf_strmap_clear(&one);
        rc = !t || count_ngrams(&one, t, tn, &rl[r]) ? -1 : 0;
        for (size_t i = 0; i < one.cap && !rc; i++)
            if (one.keys[i]) {
                int32_t prev = tf_strmap_get(&ref, one.keys[i], one.lens[i]);
                if (one.vals[i] > prev) rc = tf_strmap_put(&ref, one.keys[i], one.lens[i], one.vals[i]);
            }
        free(t);
    }
    size_t tn;
    char *t = rc ? NULL : tf_bleu_tokenize_text(o, hyp, hyp_len, &tn);
    int64_t hl = 0;
    if (!rc) rc = !t || count_ngrams(&h, t, tn, &hl) ? -1 : 0;
    for (size_t i = 0; i < h.cap && !rc; i++)
        if (h.keys[i]) {
            int k = key_order(h.keys[i], h.lens[i]) - 1;
            int32_t rcount = tf_strmap_get(&ref, h.keys[i], h.lens[i]);
            s->total[k] += h.vals[i];
            if (rcount > 0) s->correct[k] += h.vals[i] < rcount ? h.vals[i] : rcount;
        }
    if (!rc) s->hyp_len += hl, s->ref_len += closest_len(hl, rl, n_refs);
    free(t);
    if (rl != lens) free(rl);
    tf_strmap_free(&ref), tf_strmap_free(&one), tf_strmap_free(&h);
    return rc;
}

void tf_bleu_compute(const tf_bleu_stats *s, const tf_bleu_opts *o, tf_bleu_score *out) {
    memset(out, 0, sizeof *out);
    out->hyp_len = s->hyp_len, out->ref_len = s->ref_len;
    out->ratio = s->ref_len ? (double)s->hyp_len / (double)s->ref_len : 0.0;
    out->bp = 1.0;
    if (s->hyp_len < s->ref_len) out->bp = s->hyp_len > 0 ? exp(1.0 - (double)s->ref_len / (double)s->hyp_len) : 0.0;
    int any = 0;
    for (int n = 0; n < TF_BLEU_ORDER; n++) any |= s->correct[n] != 0;
    if (!any) return;
    double k = o->smooth_value > 0 ? o->smooth_value : o->smooth == TF_BLEU_SMOOTH_FLOOR ? 0.1 : 1.0;
    double smooth = 1.0, logs = 0.0;
    for (int n = 0; n < TF_BLEU_ORDER; n++) {
        double correct = (double)s->correct[n], total = (double)s->total[n];
        if (o->smooth == TF_BLEU_SMOOTH_ADD_K && n > 0) correct += k, total += k;
        if (total == 0) break;
        if (correct == 0) {
            if (o->smooth == TF_BLEU_SMOOTH_EXP) out->precisions[n] = 100.0 / ((smooth *= 2) * total);
            else if (o->smooth == TF_BLEU_SMOOTH_FLOOR) out->precisions[n] = 100.0 * k / total;
        } else {
            out->precisions[n] = 100.0 * correct / total;
        }
    }
    for (int n = 0; n < TF_BLEU_ORDER; n++) /* sacreBLEU's my_log: log 0 is -9999999999 */
        logs += out->precisions[n] == 0.0 ? -9999999999.0 : log(out->precisions[n]);
    out->score = out->bp * exp(logs / TF_BLEU_ORDER);
}

int tf_bleu_format(const tf_bleu_score *r, char *buf, size_t n) {
    return snprintf(buf, n, "BLEU = %.2f %.1f/%.1f/%.1f/%.1f (BP = %.3f ratio = %.3f hyp_len = %lld ref_len = %lld)",
                    r->score, r->precisions[0], r->precisions[1], r->precisions[2], r->precisions[3], r->bp, r->ratio,
                    (long long)r->hyp_len, (long long)r->ref_len);
}
