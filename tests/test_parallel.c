/* Parallel text for translation (src/data/parallel.c): errors naming file
 * and line, the exact rows of a hand-made batch (specials, padding, masks,
 * the shift between tgt_in and tgt_out), token-count batches that cover
 * every pair once per epoch, and determinism under the seed. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "test.h"

/* A character tokenizer in a temporary folder: '_' = 0 (pad), '<' = 1
 * (bos), '>' = 2 (eos), 'a'..'z' = 3..28, ' ' = 29. The data files go
 * beside it. */
#define PAD 0
#define BOS 1
#define EOS 2
#define ID(c) ((c) == ' ' ? 29 : (c) - 'a' + 3)

typedef struct {
    char dir[64];
    tf_tokenizer *tok;
} fixture;

static int write_text(const char *dir, const char *name, const char *text, char *path, size_t n) {
    snprintf(path, n, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    if (!f) return -1;
    fputs(text, f);
    return fclose(f);
}

static int fixture_open(fixture *fx) {
    char p[128];
    strcpy(fx->dir, "/tmp/tformer_par_XXXXXX");
    if (!mkdtemp(fx->dir) || write_text(fx->dir, "tokenizer.tformer.json", "{\"type\": \"char\"}\n", p, sizeof p) ||
        write_text(fx->dir, "chars.txt", "_<>abcdefghijklmnopqrstuvwxyz ", p, sizeof p))
        return -1;
    return (fx->tok = tf_tokenizer_load(fx->dir)) ? 0 : -1;
}

static const char *const FILES[] = {"tokenizer.tformer.json", "chars.txt", "a.src", "a.tgt", "b.src", "b.tgt"};

static void fixture_close(fixture *fx) {
    char p[128];
    for (size_t i = 0; i < sizeof FILES / sizeof *FILES; i++)
        snprintf(p, sizeof p, "%s/%s", fx->dir, FILES[i]), unlink(p);
    rmdir(fx->dir);
    tf_tokenizer_free(fx->tok);
}

static tf_parallel_opts char_opts(void) {
    tf_parallel_opts o = tf_parallel_opts_default();
    o.src_eos = o.tgt_eos = EOS, o.tgt_bos = BOS, o.src_pad = o.tgt_pad = PAD;
    return o;
}

/* Read source and target texts through files <prefix>.src / <prefix>.tgt. */
static int read_texts(fixture *fx, const char *prefix, const char *src, const char *tgt, const tf_parallel_opts *o,
                      tf_parallel_set *s, char *sp, char *tp) {
    char a[32], b[32];
    snprintf(a, sizeof a, "%s.src", prefix), snprintf(b, sizeof b, "%s.tgt", prefix);
    if (write_text(fx->dir, a, src, sp, 128) || write_text(fx->dir, b, tgt, tp, 128)) return -2;
    return tf_parallel_read(fx->tok, fx->tok, sp, tp, o, s);
}

/* tf_error() holds every needle. */
static int error_has(const char *a, const char *b, const char *c) {
    const char *e = tf_error();
    return strstr(e, a) && (!b || strstr(e, b)) && (!c || strstr(e, c));
}

TEST(parallel_errors_name_file_and_line) {
    fixture fx;
    CHECK(fixture_open(&fx) == 0);
    tf_parallel_opts o = char_opts();
    tf_parallel_set s;
    char sp[128], tp[128], line[320];
    /* 3 lines (the last without "\n") against 2 */
    CHECK(read_texts(&fx, "a", "ab\ncd\nef", "xy\nzw\n", &o, &s, sp, tp) == -1);
    CHECKF(error_has(sp, "has 3 lines", tp) && error_has(" 2:", NULL, NULL), "%s", tf_error());
    /* an empty target on line 2 (only "\r"); then skipped on request */
    CHECK(read_texts(&fx, "a", "ab\ncd\nef\n", "xy\n\r\nzw\n", &o, &s, sp, tp) == -1);
    snprintf(line, sizeof line, "%s line 2: empty sentence", tp);
    CHECKF(error_has(line, NULL, NULL), "%s", tf_error());
    CHECK(read_texts(&fx, "a", "ab\n\ncd\nef\n", "xy\nzz\n\nzw\n", &o, &s, sp, tp) == -1);
    snprintf(line, sizeof line, "%s line 2: empty sentence", sp);
    CHECKF(error_has(line, NULL, NULL), "%s", tf_error());
    o.skip_empty = 1;
    CHECK(read_texts(&fx, "a", "ab\n\ncd\nef\n", "xy\nzz\n\nzw\n", &o, &s, sp, tp) == 0);
    CHECK(s.n == 2 && s.n_skipped == 2 && s.pairs[0].line == 1 && s.pairs[1].line == 4);
    CHECK(s.pairs[1].src_len == 2 && s.ids[s.pairs[1].src] == ID('e') && s.ids[s.pairs[1].tgt] == ID('z'));
    tf_parallel_set_free(&s);
    o.skip_empty = 0;
    /* a sentence over max_len (ids = tokens + 1): an error naming file, line and length; or cut */
    o.max_len = 4;
    CHECK(read_texts(&fx, "a", "abc\nabcde\n", "xyz\nxy\n", &o, &s, sp, tp) == -1);
    snprintf(line, sizeof line, "%s line 2: 5 tokens + 1 = 6 ids, more than max_len 4", sp);
    CHECKF(error_has(line, NULL, NULL), "%s", tf_error());
    o.truncate = 1;
    CHECK(read_texts(&fx, "a", "abc\nabcde\n", "xyz\nxy\n", &o, &s, sp, tp) == 0);
    CHECK(s.n == 2 && s.n_truncated == 1 && s.pairs[1].src_len == 3 && s.pairs[0].src_len == 3);
    tf_parallel_set_free(&s);
    o = char_opts();
    /* invalid UTF-8, as the tokenizer reports it */
    CHECK(read_texts(&fx, "a", "ab\ncd\n", "xy\nz\xffw\n", &o, &s, sp, tp) == -1);
    snprintf(line, sizeof line, "%s line 2: ", tp);
    CHECKF(error_has(line, "UTF-8", NULL), "%s", tf_error());
    /* a missing file, empty files */
    CHECK(tf_parallel_read(fx.tok, fx.tok, "/nonexistent/x.en", tp, &o, &s) == -1 &&
          error_has("/nonexistent/x.en", NULL, NULL));
    CHECK(read_texts(&fx, "a", "", "", &o, &s, sp, tp) == -1 && error_has("empty", NULL, NULL));
    fixture_close(&fx);
}

TEST(parallel_specials_from_the_tokenizer_or_the_options) {
    char dir[] = "/tmp/tformer_parw_XXXXXX", p[128], sp[128], tp[128];
    CHECK(mkdtemp(dir) != NULL);
    CHECK(write_text(dir, "vocab.txt", "[PAD]\n[UNK]\n<|endoftext|>\nthe\ncat\nsat\n", p, sizeof p) == 0);
    CHECK(write_text(dir, "a.en", "the cat\ncat sat\n", sp, sizeof sp) == 0);
    CHECK(write_text(dir, "a.de", "sat\nthe the cat\n", tp, sizeof tp) == 0);
    tf_tokenizer *wp = tf_tokenizer_load(p), *bytes = tf_tokenizer_load("char");
    CHECK(wp && bytes);
    tf_parallel_opts o = tf_parallel_opts_default();
    tf_parallel_set s;
    CHECK(tf_parallel_read(wp, wp, sp, tp, &o, &s) == 0);
    CHECK(s.src_eos == 2 && s.tgt_bos == 2 && s.tgt_eos == 2 && s.src_pad == 0 && s.tgt_pad == 0 && s.max_id == 5);
    CHECK(s.n == 2 && s.pairs[1].tgt_len == 3 && s.ids[s.pairs[1].tgt + 2] == 4);
    tf_parallel_set_free(&s);
    /* the byte tokenizer has no specials: the error says which option to set; source and
     * target tokenizers may differ */
    CHECK(tf_parallel_read(bytes, wp, sp, tp, &o, &s) == -1 && error_has("source", "eos", "src_eos"));
    o.src_eos = 300, o.src_pad = 301;
    CHECK(tf_parallel_read(bytes, wp, sp, tp, &o, &s) == 0);
    CHECK(s.pairs[0].src_len == 7 && s.ids[s.pairs[0].src] == 't' && s.pairs[0].tgt_len == 1 && s.max_id == 301);
    tf_parallel_set_free(&s);
    tf_tokenizer_free(wp), tf_tokenizer_free(bytes);
    unlink(p), unlink(sp), unlink(tp), rmdir(dir);
}

/* The exact tensors of a two-pair batch: every id, mask and ignore index. */
TEST(parallel_batch_rows_are_exact) {
    fixture fx;
    CHECK(fixture_open(&fx) == 0);
    tf_parallel_opts o = char_opts();
    tf_parallel_set s;
    char sp[128], tp[128];
    CHECK(read_texts(&fx, "a", "ab\r\ncde\n", "xyz\nw", &o, &s, sp, tp) == 0 && s.n == 2);
    tf_ctx *ctx = tf_ctx_new(1);
    tf_batch b = {0};
    CHECK(tf_parallel_batch(&s, ctx, (const int[]){0, 1}, 2, &b) == 0);
    const int a = ID('a'), bb = ID('b'), c = ID('c'), d = ID('d'), e = ID('e');
    const int x = ID('x'), y = ID('y'), z = ID('z'), w = ID('w');
    const int32_t src[2][4] = {{a, bb, EOS, PAD}, {c, d, e, EOS}};
    const uint8_t src_mask[2][4] = {{1, 1, 1, 0}, {1, 1, 1, 1}}, src_kpm[2][4] = {{0, 0, 0, 1}, {0, 0, 0, 0}};
    const int32_t tin[2][4] = {{BOS, x, y, z}, {BOS, w, PAD, PAD}};
    const int32_t tout[2][4] = {{x, y, z, EOS}, {w, EOS, -100, -100}};
    const uint8_t tgt_kpm[2][4] = {{0, 0, 0, 0}, {0, 0, 1, 1}};
    tf_tensor *t_src = tf_batch_get(&b, "src_ids"), *t_mask = tf_batch_get(&b, "src_mask");
    tf_tensor *t_kpm = tf_batch_get(&b, "src_key_padding_mask"), *t_in = tf_batch_get(&b, "tgt_in");
    tf_tensor *t_out = tf_batch_get(&b, "tgt_out"), *t_tkpm = tf_batch_get(&b, "tgt_key_padding_mask");
    tf_tensor *t_n = tf_batch_get(&b, "n_tgt_tokens");
    CHECK(t_src && t_mask && t_kpm && t_in && t_out && t_tkpm && t_n && b.n == 7);
    CHECK(t_src->dtype == TF_DTYPE_I32 && t_mask->dtype == TF_DTYPE_U8 && t_kpm->dtype == TF_DTYPE_U8);
    CHECK(t_src->ndim == 2 && t_src->shape[0] == 2 && t_src->shape[1] == 4 && t_in->shape[1] == 4 &&
          t_out->shape[1] == 4);
    CHECK(!memcmp(tf_i32(t_src), src, sizeof src) && !memcmp(tf_u8(t_mask), src_mask, sizeof src_mask));
    CHECK(!memcmp(tf_u8(t_kpm), src_kpm, sizeof src_kpm) && !memcmp(tf_u8(t_tkpm), tgt_kpm, sizeof tgt_kpm));
    CHECK(!memcmp(tf_i32(t_in), tin, sizeof tin));
    CHECK(!memcmp(tf_i32(t_out), tout, sizeof tout));
    CHECK(t_n->ndim == 0 && tf_i32(t_n)[0] == 6);
    /* one pair alone: padded to its own length */
    memset(&b, 0, sizeof b);
    CHECK(tf_parallel_batch(&s, ctx, (const int[]){1}, 1, &b) == 0);
    CHECK(tf_batch_get(&b, "src_ids")->shape[1] == 4 && tf_batch_get(&b, "tgt_in")->shape[1] == 2);
    CHECK(tf_parallel_batch(&s, ctx, (const int[]){2}, 1, &b) == -1 && error_has("pair 2 of 2", NULL, NULL));
    tf_ctx_free(ctx);
    tf_parallel_set_free(&s);
    fixture_close(&fx);
}

/* ---------------------------------------------------------------- many pairs */

/* n pairs of varied lengths: source line i is letters from i, target line i
 * the source reversed then "z" (so a row tells its pair, and the sides
 * differ in length). */
static int write_many(fixture *fx, int n, tf_parallel_set *s) {
    size_t cap = (size_t)n * 64;
    char *src = malloc(cap), *tgt = malloc(cap), sp[128], tp[128];
    size_t a = 0, b = 0;
    for (int i = 0; src && tgt && i < n; i++) {
        int len = 1 + (i * 7 + i / 3) % 23;
        for (int k = 0; k < len; k++) src[a + (size_t)k] = (char)('a' + (i + k) % 26);
        for (int k = 0; k < len; k++) tgt[b + (size_t)k] = src[a + (size_t)(len - 1 - k)];
        a += (size_t)len, b += (size_t)len;
        src[a++] = '\n', tgt[b++] = 'z', tgt[b++] = '\n';
    }
    if (!src || !tgt) return free(src), free(tgt), -1;
    src[a] = tgt[b] = 0;
    tf_parallel_opts o = char_opts();
    int rc = read_texts(fx, "b", src, tgt, &o, s, sp, tp);
    free(src), free(tgt);
    return rc;
}

/* Row r of a batch is pair p, shifted right: tgt_in = BOS + tokens, tgt_out = tokens + EOS. */
static int row_is_pair(const tf_parallel_set *s, const tf_batch *b, int64_t r, int p) {
    tf_tensor *src = tf_batch_get(b, "src_ids"), *tin = tf_batch_get(b, "tgt_in"), *tout = tf_batch_get(b, "tgt_out");
    const tf_parallel_pair *q = &s->pairs[p];
    int64_t S = src->shape[1], T = tin->shape[1];
    const int32_t *rs = tf_i32(src) + r * S, *ri = tf_i32(tin) + r * T, *ro = tf_i32(tout) + r * T;
    if (memcmp(rs, s->ids + q->src, (size_t)q->src_len * 4) || rs[q->src_len] != EOS) return 0;
    if (ri[0] != BOS || memcmp(ri + 1, s->ids + q->tgt, (size_t)q->tgt_len * 4)) return 0;
    if (memcmp(ro, s->ids + q->tgt, (size_t)q->tgt_len * 4) || ro[q->tgt_len] != EOS) return 0;
    for (int k = 0; k + 1 < q->tgt_len + 1; k++)
        if (ro[k] != ri[k + 1]) return 0;
    /* the target is the source reversed, then z */
    for (int k = 0; k < q->src_len; k++)
        if (s->ids[q->tgt + k] != s->ids[q->src + q->src_len - 1 - k]) return 0;
    return q->tgt_len == q->src_len + 1 && s->ids[q->tgt + q->src_len] == ID('z');
}

TEST(parallel_epochs_cover_every_pair_once_within_batch_tokens) {
    fixture fx;
    CHECK(fixture_open(&fx) == 0);
    tf_parallel_set s;
    CHECK(write_many(&fx, 300, &s) == 0 && s.n == 300);
    const int batch_tokens = 96, max_rows = 7;
    tf_loader *l = tf_parallel_loader_new(&s, &s, batch_tokens, max_rows, 11);
    CHECK(l);
    int64_t nb = tf_parallel_loader_batches(l, TF_SUBSET_TRAIN), nv = tf_parallel_loader_batches(l, TF_SUBSET_VAL);
    CHECK(nb > 300 / max_rows && nb < 300 && nv >= nb);
    tf_ctx *ctx = tf_ctx_new(1);
    int seen[300];
    int64_t padded_train = 0, padded_val = 0, last_W = 0, drops = 0;
    for (uint64_t epoch = 0; epoch < 3; epoch++) {
        memset(seen, 0, sizeof seen);
        for (uint64_t k = epoch * (uint64_t)nb; k < (epoch + 1) * (uint64_t)nb; k++) {
            const int *idx;
            int rows;
            tf_batch b;
            CHECK(tf_parallel_loader_pairs(l, TF_SUBSET_TRAIN, k, &idx, &rows) == 0 && rows >= 1 && rows <= max_rows);
            for (int r = 0; r < rows; r++) seen[idx[r]]++;
            int first = idx[0];
            CHECK(tf_loader_next(l, ctx, TF_SUBSET_TRAIN, k, 1, &b) == 0);
            tf_tensor *src = tf_batch_get(&b, "src_ids"), *tin = tf_batch_get(&b, "tgt_in");
            int64_t W = src->shape[1] > tin->shape[1] ? src->shape[1] : tin->shape[1];
            CHECKF(src->shape[0] == rows && rows * W <= batch_tokens, "batch %d: %d rows of %d", (int)k, rows, (int)W);
            CHECK(row_is_pair(&s, &b, 0, first));
            padded_train += epoch == 0 ? rows * W : 0;
            drops += epoch == 0 && W < last_W, last_W = W;
            tf_ctx_reset(ctx);
        }
        for (int i = 0; i < 300; i++) CHECKF(seen[i] == 1, "epoch %d: pair %d seen %d times", (int)epoch, i, seen[i]);
    }
    /* validation: file order, every pair once, each row the right pair */
    int next = 0;
    for (uint64_t k = 0; k < (uint64_t)nv; k++) {
        tf_batch b;
        CHECK(tf_loader_next(l, ctx, TF_SUBSET_VAL, k, 1, &b) == 0);
        tf_tensor *src = tf_batch_get(&b, "src_ids"), *tin = tf_batch_get(&b, "tgt_in");
        int64_t W = src->shape[1] > tin->shape[1] ? src->shape[1] : tin->shape[1];
        CHECK(src->shape[0] * W <= batch_tokens && src->shape[0] <= max_rows);
        for (int64_t r = 0; r < src->shape[0]; r++) CHECKF(row_is_pair(&s, &b, r, next++), "val row %d", next - 1);
        padded_val += src->shape[0] * W;
        tf_ctx_reset(ctx);
    }
    CHECK(next == 300);
    CHECKF(drops > 0, "the batches come in length order: their order is not shuffled");
    /* the validation batches wrap; length bucketing pads less than file order */
    const int *i0, *i1;
    int r0, r1;
    CHECK(tf_parallel_loader_pairs(l, TF_SUBSET_VAL, 0, &i0, &r0) == 0 &&
          tf_parallel_loader_pairs(l, TF_SUBSET_VAL, (uint64_t)nv, &i1, &r1) == 0);
    CHECK(i0 == i1 && r0 == r1);
    CHECKF(padded_train < padded_val, "padded train %lld, val %lld", (long long)padded_train, (long long)padded_val);
    tf_ctx_free(ctx);
    tf_loader_free(l);
    tf_parallel_set_free(&s);
    fixture_close(&fx);
}

/* The pairs of the first `n` training batches, flattened with -1 between batches. */
static int draw_pairs(tf_loader *l, uint64_t first, int n, int *out, int cap) {
    int k = 0;
    for (int b = 0; b < n; b++) {
        const int *idx;
        int rows;
        if (tf_parallel_loader_pairs(l, TF_SUBSET_TRAIN, first + (uint64_t)b, &idx, &rows)) return -1;
        for (int r = 0; r < rows && k < cap; r++) out[k++] = idx[r];
        if (k < cap) out[k++] = -1;
    }
    return k;
}

TEST(parallel_same_seed_same_batches) {
    fixture fx;
    CHECK(fixture_open(&fx) == 0);
    tf_parallel_set s;
    CHECK(write_many(&fx, 200, &s) == 0);
    tf_loader *a = tf_parallel_loader_new(&s, NULL, 80, 0, 5), *b = tf_parallel_loader_new(&s, NULL, 80, 0, 5);
    tf_loader *c = tf_parallel_loader_new(&s, NULL, 80, 0, 6);
    CHECK(a && b && c);
    int64_t nb = tf_parallel_loader_batches(a, TF_SUBSET_TRAIN);
    CHECK(nb == tf_parallel_loader_batches(c, TF_SUBSET_TRAIN) && tf_parallel_loader_batches(a, TF_SUBSET_VAL) == 0);
    tf_ctx *ctx = tf_ctx_new(1);
    /* bit for bit, over two epochs, b asked in reverse order (the epoch cache must not matter) */
    for (int64_t i = 0; i < 2 * nb; i++) {
        uint64_t ka = (uint64_t)i, kb = (uint64_t)(2 * nb - 1 - i);
        tf_batch x, y;
        CHECK(tf_loader_next(a, ctx, TF_SUBSET_TRAIN, ka, 1, &x) == 0 &&
              tf_loader_next(b, ctx, TF_SUBSET_TRAIN, kb, 1, &y) == 0);
        tf_batch y2;
        CHECK(tf_loader_next(b, ctx, TF_SUBSET_TRAIN, ka, 1, &y2) == 0 && x.n == y2.n);
        for (int t = 0; t < x.n; t++) {
            tf_tensor *u = x.t[t], *v = tf_batch_get(&y2, x.names[t]);
            CHECK(v && tf_numel(u) == tf_numel(v) && u->ndim == v->ndim);
            CHECK(!memcmp(u->data, v->data, (size_t)tf_numel(u) * (u->dtype == TF_DTYPE_U8 ? 1 : 4)));
        }
        tf_ctx_reset(ctx);
    }
    static int pa[4096], pb[4096], pc[4096];
    int na = draw_pairs(a, 0, (int)nb, pa, 4096), nc = draw_pairs(c, 0, (int)nb, pc, 4096);
    int na1 = draw_pairs(a, (uint64_t)nb, (int)nb, pb, 4096);
    CHECK(na > 0 && nc > 0 && na1 > 0);
    /* another seed: another order; another epoch: another order too */
    CHECK(na != nc || memcmp(pa, pc, (size_t)na * sizeof *pa));
    CHECK(na != na1 || memcmp(pa, pb, (size_t)na * sizeof *pa));
    /* and pairs of equal length meet other pairs: a batch's smallest pair index, per pair, per epoch */
    static int mate[2][200];
    for (int e = 0; e < 2; e++) {
        int n = e ? na1 : na, *v = e ? pb : pa;
        for (int i = 0, first = 0; i < n; i++) {
            if (v[i] >= 0) continue;
            int lo = 1 << 30;
            for (int j = first; j < i; j++) lo = v[j] < lo ? v[j] : lo;
            for (int j = first; j < i; j++) mate[e][v[j]] = lo;
            first = i + 1;
        }
    }
    CHECK(memcmp(mate[0], mate[1], sizeof mate[0]));
    tf_ctx_free(ctx);
    tf_loader_free(a), tf_loader_free(b), tf_loader_free(c);
    tf_parallel_set_free(&s);
    fixture_close(&fx);
}

TEST(parallel_loader_rejects_bad_settings) {
    fixture fx;
    CHECK(fixture_open(&fx) == 0);
    tf_parallel_set s;
    CHECK(write_many(&fx, 50, &s) == 0);
    /* the longest pair: 23 letters + z + EOS = 25 ids a row */
    CHECK(!tf_parallel_loader_new(&s, NULL, 24, 0, 1) &&
          error_has("needs 25 ids a row, more than batch_tokens 24", NULL, NULL));
    CHECK(!tf_parallel_loader_new(&s, NULL, 1, 0, 1) && error_has("batch_tokens 1", NULL, NULL));
    tf_loader *l = tf_parallel_loader_new(&s, NULL, 25, 0, 1);
    CHECK(l && tf_parallel_loader_batches(l, TF_SUBSET_TRAIN) >= 1);
    const int *idx;
    int rows;
    CHECK(tf_parallel_loader_pairs(l, TF_SUBSET_VAL, 0, &idx, &rows) == -1 && error_has("no validation", NULL, NULL));
    tf_loader *lm = tf_lm_loader_new((const int32_t[]){1, 2, 3, 4, 5, 6, 7, 8}, 8, 0.5f, 1, 1);
    CHECK(lm && tf_parallel_loader_batches(lm, TF_SUBSET_TRAIN) == -1 && error_has("not a parallel", NULL, NULL));
    tf_loader_free(lm), tf_loader_free(l);
    tf_parallel_set_free(&s);
    fixture_close(&fx);
}
