/* The RNN baseline against PyTorch (fixtures from tests/ref/gen_rnn_fixtures.py,
 * computed in float64): GRUCell and LSTMCell over several steps (the backward
 * through time), bidirectional nn.GRU / nn.LSTM on packed sequences of unequal
 * lengths, and Bahdanau's additive attention with a source padding mask.
 * Outputs to 1e-5 and gradients (inputs, initial states, every parameter) to
 * 1e-4 relative L2 error; a perturbed weight must fail the comparison; shape
 * and padding errors name the module. */
#include <stdlib.h>
#include <string.h>

#include "test.h"

#define FXR "tests/fixtures_rnn"
#define TOL_FORWARD 1e-5
#define TOL_GRAD 1e-4
#define MAX_NAMED 8

typedef struct {
    const char *name;
    tf_tensor *t;
} named;

/* One case's state: the file, the registry, the named leaves and outputs. */
typedef struct {
    tf_st_file *f;
    tf_ctx *c;
    tf_params *ps;
    named in[MAX_NAMED], out[MAX_NAMED];
    int n_in, n_out;
} rnn_case;

static tf_tensor *read_f32(rnn_case *k, const char *name, int grad) {
    const tf_st_entry *e = tf_st_find(k->f, name);
    if (!e) return tf_set_error("fixture lacks '%s'", name), NULL;
    tf_tensor *t = tf_tensor_new(k->c, TF_DTYPE_F32, e->ndim, e->shape, grad);
    return t && !tf_st_read_f32(k->f, e, t) ? t : NULL;
}

static tf_tensor *leaf(rnn_case *k, const char *name) {
    tf_tensor *t = read_f32(k, name, 1);
    if (t && k->n_in < MAX_NAMED) k->in[k->n_in++] = (named){name, t};
    return t;
}

static void output(rnn_case *k, const char *name, tf_tensor *t) {
    if (k->n_out < MAX_NAMED) k->out[k->n_out++] = (named){name, t};
}

/* The fixture's F32 pad (1 = padding) as a U8 mask. */
static tf_tensor *read_pad(rnn_case *k) {
    tf_tensor *p = read_f32(k, "pad", 0);
    tf_tensor *m = p ? tf_tensor_new(k->c, TF_DTYPE_U8, p->ndim, p->shape, 0) : NULL;
    for (int64_t i = 0; m && i < tf_numel(m); i++) tf_u8(m)[i] = tf_f32(p)[i] != 0.0f;
    return m;
}

static int64_t dim_of(rnn_case *k, const char *name, int d) {
    const tf_st_entry *e = tf_st_find(k->f, name);
    return e && d < e->ndim ? e->shape[d] : -1;
}

/* (B,H) tensors stacked along a new first dim: (n,B,H). */
static tf_tensor *stack(tf_ctx *c, tf_tensor **xs, int n) {
    tf_tensor *v[8];
    for (int i = 0; i < n && i < 8; i++)
        v[i] = xs[i] ? tf_reshape(c, xs[i], 3, (int64_t[]){1, xs[i]->shape[0], xs[i]->shape[1]}) : NULL;
    return tf_concat(c, n, v, 0);
}

/* GRUCell / LSTMCell from h0 (c0) over x (T,B,I): out.h (T,B,H) (and out.c). */
static int run_cells(rnn_case *k, int lstm) {
    static tf_rnn r;
    int64_t H = dim_of(k, "weight_hh", 1), I = dim_of(k, "weight_ih", 1);
    if (tf_rnn_register(k->ps, "", "", &r, lstm ? TF_RNN_LSTM : TF_RNN_GRU, I, H, 1, 0) || tf_params_load(k->ps, k->f, 0))
        return -1;
    tf_tensor *x = leaf(k, "x"), *h = leaf(k, "h0"), *cs = lstm ? leaf(k, "c0") : NULL, *hs[8], *cc[8];
    int64_t T = x ? x->shape[0] : 0;
    if (!x || T > 8) return -1;
    for (int64_t t = 0; t < T; t++) {
        tf_tensor *xt = tf_reshape(k->c, tf_narrow(k->c, x, 0, t, 1), 2, (int64_t[]){x->shape[1], I});
        if (lstm) {
            tf_tensor *hc = tf_lstm_cell(k->c, xt, h, cs, r.weight_ih, r.weight_hh, r.bias_ih, r.bias_hh);
            h = tf_lstm_cell_h(k->c, hc), cs = tf_lstm_cell_c(k->c, hc);
        } else {
            h = tf_gru_cell(k->c, xt, h, r.weight_ih, r.weight_hh, r.bias_ih, r.bias_hh);
        }
        hs[t] = h, cc[t] = cs;
    }
    output(k, "h", stack(k->c, hs, (int)T));
    if (lstm) output(k, "c", stack(k->c, cc, (int)T));
    return 0;
}

/* nn.GRU / nn.LSTM(bidirectional=True) on a padded batch: out.y, out.h_n (out.c_n). */
static int run_bi(rnn_case *k, int lstm) {
    static tf_birnn b;
    int64_t H = dim_of(k, "weight_hh_l0", 1), I = dim_of(k, "weight_ih_l0", 1);
    if (tf_birnn_register(k->ps, "", 0, &b, lstm ? TF_RNN_LSTM : TF_RNN_GRU, I, H, 1) ||
        tf_params_load(k->ps, k->f, 0))
        return -1;
    tf_rnn_state fin[2] = {{0}};
    output(k, "y", tf_birnn_forward(k->c, &b, leaf(k, "x"), read_pad(k), fin));
    output(k, "h_n", stack(k->c, (tf_tensor *[]){fin[0].h, fin[1].h}, 2));
    if (lstm) output(k, "c_n", stack(k->c, (tf_tensor *[]){fin[0].c, fin[1].c}, 2));
    return 0;
}

static int run_bahdanau(rnn_case *k) {
    static tf_additive_attn a;
    int64_t A = dim_of(k, "W_a.weight", 0), Hd = dim_of(k, "W_a.weight", 1), He = dim_of(k, "U_a.weight", 1);
    if (tf_additive_attn_register(k->ps, "", &a, Hd, He, A, 1, 0.1f) || tf_params_load(k->ps, k->f, 0)) return -1;
    tf_tensor *s = leaf(k, "s"), *h = leaf(k, "h"), *alpha = NULL;
    tf_tensor *keys = tf_additive_attn_keys(k->c, &a, h); /* once per source, as a decoder would */
    output(k, "context", tf_additive_attn_forward(k->c, &a, s, h, keys, read_pad(k), &alpha));
    output(k, "alpha", alpha);
    return 0;
}

/* The data (out.*) or gradient (grad.*) the expected tensor `name` names, or NULL. */
static const float *lookup(rnn_case *k, const char *name, int64_t *len) {
    tf_tensor *t = NULL;
    int grad = !strncmp(name, "grad.", 5);
    if (grad) t = tf_params_get(k->ps, name + 5);
    for (int i = 0; grad && !t && i < k->n_in; i++)
        if (!strcmp(k->in[i].name, name + 5)) t = k->in[i].t;
    for (int i = 0; !strncmp(name, "out.", 4) && i < k->n_out; i++)
        if (!strcmp(k->out[i].name, name + 4)) t = k->out[i].t;
    if (!t) return NULL;
    *len = tf_numel(t);
    return grad ? t->grad : tf_f32(t);
}

typedef struct {
    double worst_fwd, worst_grad;
    int compared, bad;
} rnn_result;

/* Run case `name` (perturb: add 0.05 to the first parameter first) and compare
 * every out.* and grad.* of the file. -1 when the case cannot run. */
static int check_case(const char *name, int perturb, rnn_result *r) {
    char p[256];
    snprintf(p, sizeof p, FXR "/%s.safetensors", name);
    rnn_case k = {.f = tf_st_open(p), .c = tf_ctx_new(1), .ps = tf_params_new()};
    int rc = -1;
    if (!k.f) goto done;
    int run = !strcmp(name, "bahdanau") ? run_bahdanau(&k)
              : strstr(name, "_bi")     ? run_bi(&k, !strncmp(name, "lstm", 4))
                                        : run_cells(&k, !strncmp(name, "lstm", 4));
    tf_tensor *L = NULL;
    for (int i = 0; !run && i < k.n_out; i++) {
        char key[96];
        snprintf(key, sizeof key, "grad_output.%s", k.out[i].name);
        if (perturb && i == 0) tf_f32(tf_params_tensor(k.ps, 0))[0] += 0.05f, tf_tape_replay(k.c);
        tf_tensor *s = tf_sum(k.c, tf_mul(k.c, k.out[i].t, read_f32(&k, key, 0)), TF_DIM_ALL, 0);
        L = L ? tf_add(k.c, L, s) : s;
    }
    if (run || !L || tf_backward(k.c, L, NULL)) goto done;
    tf_arena *a = tf_arena_new(0);
    for (int i = 0; i < tf_st_count(k.f); i++) {
        const tf_st_entry *e = tf_st_entry_at(k.f, i);
        int is_grad = !strncmp(e->name, "grad.", 5);
        if (!is_grad && strncmp(e->name, "out.", 4)) continue;
        tf_tensor *want = tf_st_to_tensor(k.f, e, a);
        int64_t len = -1;
        const float *got = lookup(&k, e->name, &len);
        if (!want || !got || len != tf_numel(want)) {
            fprintf(stderr, "    %s: '%s' missing or of another size\n", name, e->name);
            r->bad++;
            continue;
        }
        double err = test_rel_err(got, tf_f32(want), (long)len), *worst = is_grad ? &r->worst_grad : &r->worst_fwd;
        if (err > *worst) *worst = err;
        if (err > (is_grad ? TOL_GRAD : TOL_FORWARD)) {
            if (!perturb) fprintf(stderr, "    %s: '%s' relative error %.3g\n", name, e->name, err);
            r->bad++;
        }
        r->compared++;
    }
    tf_arena_free(a);
    rc = 0;
done:
    tf_st_close(k.f);
    tf_params_free(k.ps);
    tf_ctx_free(k.c);
    return rc;
}

static const char *const CASES[] = {"gru_cell", "lstm_cell", "gru_bi", "lstm_bi", "bahdanau"};

TEST(rnn_matches_pytorch) {
    for (int i = 0; i < 5; i++) {
        rnn_result r = {0};
        CHECKF(check_case(CASES[i], 0, &r) == 0, "%s: cannot run: %s", CASES[i], tf_error());
        printf("    %-9s %2d tensors: worst output error %.2e, worst gradient error %.2e\n", CASES[i], r.compared,
               r.worst_fwd, r.worst_grad);
        CHECKF(r.bad == 0 && r.compared >= 7, "%s: %d of %d tensors differ from PyTorch", CASES[i], r.bad, r.compared);
    }
}

TEST(rnn_perturbed_weight_fails) {
    /* the comparison must be able to fail: a weight moved by 0.05 */
    for (int i = 0; i < 5; i++) {
        rnn_result r = {0};
        CHECKF(check_case(CASES[i], 1, &r) == 0, "%s: cannot run: %s", CASES[i], tf_error());
        CHECKF(r.bad > 0, "%s: a perturbed weight still matches PyTorch", CASES[i]);
    }
}

static int error_has(const char *s) { return strstr(tf_error(), s) != NULL; }

TEST(rnn_errors_name_the_module) {
    tf_ctx *c = tf_ctx_new(1);
    tf_tensor *x = tf_tensor_new(c, TF_DTYPE_F32, 2, (int64_t[]){2, 3}, 0);
    tf_tensor *h = tf_tensor_new(c, TF_DTYPE_F32, 2, (int64_t[]){2, 4}, 0);
    tf_tensor *wi = tf_tensor_new(c, TF_DTYPE_F32, 2, (int64_t[]){12, 3}, 0);
    tf_tensor *wh = tf_tensor_new(c, TF_DTYPE_F32, 2, (int64_t[]){12, 4}, 0);
    tf_tensor *bad = tf_tensor_new(c, TF_DTYPE_F32, 1, (int64_t[]){11}, 0);
    CHECK(tf_gru_cell(c, x, h, wi, wh, NULL, NULL) != NULL);
    CHECK(tf_gru_cell(c, x, h, wi, wh, bad, NULL) == NULL && error_has("gru_cell: bias_ih (11) must be F32 (12)"));
    CHECK(tf_lstm_cell(c, x, h, h, wi, wh, NULL, NULL) == NULL && error_has("lstm_cell: weight_ih (12,3) must be F32 (16,3)"));
    CHECK(tf_gru_cell(c, h, h, wi, wh, NULL, NULL) == NULL && error_has("gru_cell: weight_ih"));
    CHECK(tf_gru_cell(c, NULL, h, wi, wh, NULL, NULL) == NULL); /* a NULL input passes through */
    tf_params *ps = tf_params_new();
    tf_rnn r;
    CHECK(tf_rnn_register(ps, "enc.", "_l0", &r, TF_RNN_GRU, 3, 4, 1, 0) == 0 && tf_params_init(ps, 1) == 0);
    CHECK(tf_params_get(ps, "enc.weight_hh_l0") && tf_params_get(ps, "enc.bias_ih_l0"));
    tf_tensor *seq = tf_tensor_new(c, TF_DTYPE_F32, 3, (int64_t[]){2, 3, 3}, 0);
    tf_tensor *pad = tf_tensor_new(c, TF_DTYPE_U8, 2, (int64_t[]){2, 3}, 0);
    tf_u8(pad)[4] = 1; /* row 1: real, padding, real */
    CHECK(tf_rnn_forward(c, &r, seq, pad, NULL, NULL) == NULL && error_has("padding must be trailing"));
    CHECK(tf_rnn_forward(c, &r, x, NULL, NULL, NULL) == NULL && error_has("rnn: input (2,3) must be F32 (B,T,I=3)"));
    tf_additive_attn a;
    CHECK(tf_additive_attn_register(ps, "attn.", &a, 4, 3, 5, 0, 0.1f) == 0 && tf_params_init(ps, 2) == 0);
    CHECK(tf_additive_attn_forward(c, &a, x, seq, NULL, NULL, NULL) == NULL &&
          error_has("additive attention: decoder state (2,3) must be F32 (2,4)"));
    tf_params_free(ps);
    tf_ctx_free(c);
}

/* A padded row gives the same outputs and final state as the row run alone on its real tokens. */
TEST(rnn_padding_leaves_the_state) {
    tf_ctx *c = tf_ctx_new(1);
    tf_params *ps = tf_params_new();
    tf_birnn b;
    CHECK(tf_birnn_register(ps, "", 0, &b, TF_RNN_LSTM, 3, 4, 1) == 0 && tf_params_init(ps, 3) == 0);
    tf_tensor *x = tf_tensor_new(c, TF_DTYPE_F32, 3, (int64_t[]){2, 5, 3}, 0);
    tf_tensor_fill_normal(x, 9, 1.0f);
    tf_tensor *pad = tf_tensor_new(c, TF_DTYPE_U8, 2, (int64_t[]){2, 5}, 0);
    tf_u8(pad)[5 + 3] = tf_u8(pad)[5 + 4] = 1; /* row 1 has 3 tokens */
    tf_rnn_state fa[2], fb[2];
    tf_tensor *ya = tf_birnn_forward(c, &b, x, pad, fa);
    tf_tensor *row = tf_contiguous(c, tf_narrow(c, tf_narrow(c, x, 0, 1, 1), 1, 0, 3)); /* (1,3,3) */
    tf_tensor *yb = tf_birnn_forward(c, &b, row, NULL, fb);
    CHECK(ya && yb);
    for (int t = 0; t < 5; t++)
        for (int j = 0; j < 8; j++) {
            float got = tf_f32(ya)[(5 + t) * 8 + j], want = t < 3 ? tf_f32(yb)[t * 8 + j] : 0.0f;
            CHECKF(fabsf(got - want) <= 1e-6f, "t %d, j %d: %g vs %g", t, j, got, want);
        }
    for (int d = 0; d < 2; d++)
        for (int j = 0; j < 4; j++) {
            CHECK(fabsf(tf_f32(fa[d].h)[4 + j] - tf_f32(fb[d].h)[j]) <= 1e-6f);
            CHECK(fabsf(tf_f32(fa[d].c)[4 + j] - tf_f32(fb[d].c)[j]) <= 1e-6f);
        }
    tf_params_free(ps);
    tf_ctx_free(c);
}
