/* The captioner (Show, Attend and Tell, and its baseline without attention): the forward,
 * the doubly-stochastic regulariser and every gradient against PyTorch
 * (tests/ref/gen_caption_fixtures.py), the decoder's steps against the full forward, the
 * scene grammar, the folder round trip, a short training run through tformer train that
 * learns, tformer caption (greedy, beam, --attention-png) and the inputs it refuses. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "test.h"
#include "tformer.h"

#define FXC "tests/fixtures_caption"

/* The fixtures' configuration (gen_caption_fixtures.py's CFG). */
static tf_caption_config fixture_config(int channels, tf_rnn_kind cell, int attention) {
    tf_caption_config c = tf_caption_config_default();
    c.image_size = 8, c.channels = channels, c.n_conv = 2, c.cnn_dim = 4, c.vocab = 7, c.context = 8;
    c.emb_dim = 3, c.hidden = 5, c.attn_size = 4, c.cell = cell, c.attention = attention, c.alpha_c = 0.7f;
    return c;
}

/* The Transformer fixture's (TCFG). */
static tf_caption_config transformer_config(void) {
    tf_caption_config c = fixture_config(1, TF_RNN_GRU, 1);
    c.decoder = TF_CAPTION_TRANSFORMER, c.hidden = 8, c.n_head = 2, c.d_ff = 12, c.n_layer = 2;
    return c;
}

/* A float tensor of the file as I32 (the fixture stores ids as F32). */
static tf_tensor *as_ids(tf_ctx *ctx, const tf_tensor *f) {
    tf_tensor *t = tf_tensor_new(ctx, TF_DTYPE_I32, f->ndim, f->shape, 0);
    for (int64_t i = 0; t && i < tf_numel(f); i++) tf_i32(t)[i] = (int32_t)lrintf(tf_f32(f)[i]);
    return t;
}

static double compare(const tf_st_file *f, tf_arena *a, const char *name, const float *got, int64_t n, int *bad) {
    tf_tensor *want = test_st_tensor(f, name, a);
    if (!want || tf_numel(want) != n) {
        fprintf(stderr, "    %s missing or of another size\n", name);
        return ++*bad, 1.0;
    }
    double err = test_rel_err(got, tf_f32(want), (long)n);
    if (err > 1e-5) fprintf(stderr, "    %s: relative error %.3g\n", name, err), ++*bad;
    return err;
}

/* One fixture case: logits, attentions and loss, then the gradient of every parameter and of the pixels. */
static int check_case(const char *name, tf_caption_config c, double *worst) {
    char path[256];
    int attention = c.attention;
    snprintf(path, sizeof path, FXC "/%s.safetensors", name);
    tf_st_file *f = tf_st_open(path);
    tf_caption *m = tf_caption_new(&c, 0);
    tf_ctx *ctx = tf_ctx_new(1);
    tf_arena *a = tf_arena_new(0);
    int bad = 0;
    if (!f || !m || tf_params_load(m->params, f, 0)) return -1;
    tf_tensor *x = test_st_tensor(f, "pixel_values", a);
    tf_tensor *px = tf_tensor_new(ctx, TF_DTYPE_F32, 4, x->shape, 1);  // (B,C,S,S), a leaf with a gradient
    memcpy(px->data, x->data, (size_t)tf_numel(x) * sizeof(float));
    tf_caption_inputs in = {.pixel_values = px, .input_ids = as_ids(ctx, test_st_tensor(f, "input_ids", a)),
                            .labels = as_ids(ctx, test_st_tensor(f, "labels", a)), .output_attentions = 1};
    tf_caption_outputs out;
    if (tf_caption_run(ctx, m, &in, &out) || tf_backward(ctx, out.loss, NULL)) return -1;
    double e[4] = {compare(f, a, "out.logits", tf_f32(out.logits), tf_numel(out.logits), &bad),
                   compare(f, a, "out.loss", tf_f32(out.loss), 1, &bad),
                   attention ? compare(f, a, "out.attentions", tf_f32(out.attentions), tf_numel(out.attentions), &bad)
                             : 0, compare(f, a, "grad.pixel_values", px->grad, tf_numel(px), &bad)};
    for (int i = 0; i < 4; i++) *worst = fmax(*worst, e[i]);
    for (int i = 0; i < tf_params_count(m->params); i++) {
        char g[128];
        tf_tensor *p = tf_params_tensor(m->params, i);
        snprintf(g, sizeof g, "grad.%s", tf_params_name(m->params, i));
        *worst = fmax(*worst, compare(f, a, g, p->grad, tf_numel(p), &bad));
    }
    if (!attention && out.attentions) bad++; /* the baseline attends to nothing */
    tf_arena_free(a), tf_ctx_free(ctx), tf_caption_free(m), tf_st_close(f);
    return bad;
}

TEST(caption_matches_pytorch_forward_regulariser_and_gradients) {
    struct { const char *name; tf_caption_config c; } cases[] = {
        {"gru_att", fixture_config(1, TF_RNN_GRU, 1)}, {"lstm_att", fixture_config(3, TF_RNN_LSTM, 1)},
        {"gru_base", fixture_config(1, TF_RNN_GRU, 0)}, {"transformer", transformer_config()}};
    for (int i = 0; i < 4; i++) {
        double worst = 0;
        int bad = check_case(cases[i].name, cases[i].c, &worst);
        CHECKF(bad == 0, "%s: %d tensors differ from PyTorch (%s)", cases[i].name, bad, bad < 0 ? tf_error() : "");
        printf("    %-9s worst relative error %.2e\n", cases[i].name, worst);
    }
}

/* The decoder fed one word (or two) at a time gives the teacher-forced forward's logits. */
TEST(caption_step_decoding_equals_full_forward) {
    for (int variant = 0; variant < 4; variant++) {
        tf_caption_config c = variant == 3 ? transformer_config()
                                           : fixture_config(variant == 1 ? 3 : 1, variant == 1 ? TF_RNN_LSTM : TF_RNN_GRU, variant != 2);
        tf_caption *m = tf_caption_new(&c, 7 + (uint64_t)variant);
        tf_ctx *ctx = tf_ctx_new(0);
        tf_ctx_set_grad(ctx, 0);
        float px[3 * 64];
        for (int i = 0; i < 3 * 64; i++) px[i] = (float)((i * 37) % 17) / 16.0f;
        const int32_t words[6] = {5, 1, 2, 3, 4, 0};
        tf_tensor *x = tf_tensor_new(ctx, TF_DTYPE_F32, 4, (int64_t[]){1, c.channels, 8, 8}, 0);
        tf_tensor *y = tf_tensor_new(ctx, TF_DTYPE_I32, 2, (int64_t[]){1, 6}, 0);
        memcpy(x->data, px, (size_t)tf_numel(x) * sizeof(float)), memcpy(y->data, words, sizeof words);
        tf_caption_outputs out;
        CHECKF(m && tf_caption_run(ctx, m, &(tf_caption_inputs){.pixel_values = x, .input_ids = y}, &out) == 0, "%s",
               tf_error());
        tf_decoder *d = tf_caption_decoder_new(m, px);
        CHECK(d != NULL);
        double worst = 0;
        float logits[7];
        for (int t = 0; t < 6;) {
            int n = t == 2 ? 2 : 1;
            CHECK(tf_decoder_step(d, words + t, n, logits) == 0);
            t += n;
            worst = fmax(worst, test_max_abs_diff(logits, tf_f32(out.logits) + (t - 1) * 7, 7));
        }
        tf_decoder *fork = tf_decoder_fork(d); /* a fork continues as the original does */
        float a[7], b[7];
        CHECK(fork && tf_decoder_step(d, words, 1, a) == 0 && tf_decoder_step(fork, words, 1, b) == 0 && !memcmp(a, b, sizeof a));
        CHECKF(worst < 1e-5, "variant %d: steps differ from the full forward by %.3g", variant, worst);
        tf_decoder_free(fork), tf_decoder_free(d), tf_ctx_free(ctx), tf_caption_free(m);
    }
}

/* Beam search over the captioner's decoder (forks: RNN state, Transformer caches) equals
 * exhaustive search: every 3-word caption of a 7-word vocabulary scored by one teacher-forced
 * forward of all 343 at once. */
TEST(caption_beam_equals_exhaustive_search) {
    for (int variant = 0; variant < 2; variant++) {
        tf_caption_config c = variant ? transformer_config() : fixture_config(1, TF_RNN_LSTM, 1);
        tf_caption *m = tf_caption_new(&c, 21 + (uint64_t)variant);
        tf_ctx *ctx = tf_ctx_new(0);
        tf_ctx_set_grad(ctx, 0);
        enum { K = 7 * 7 * 7 };
        float px[64];
        for (int i = 0; i < 64; i++) px[i] = (float)((i * 29) % 13) / 12.0f;
        tf_tensor *x = tf_tensor_new(ctx, TF_DTYPE_F32, 4, (int64_t[]){K, 1, 8, 8}, 0);
        tf_tensor *y = tf_tensor_new(ctx, TF_DTYPE_I32, 2, (int64_t[]){K, 3}, 0);
        for (int k = 0; k < K; k++) {
            memcpy(tf_f32(x) + k * 64, px, sizeof px);
            int32_t *r = tf_i32(y) + k * 3;
            r[0] = 5, r[1] = k / 49, r[2] = k / 7 % 7; /* BOS (5 here), then the first two words */
        }
        tf_caption_outputs out;
        CHECKF(m && tf_caption_run(ctx, m, &(tf_caption_inputs){.pixel_values = x, .input_ids = y}, &out) == 0, "%s",
               tf_error());
        double best = -INFINITY;
        int best_k = -1;
        for (int k = 0; k < K; k++) {
            int32_t w[3] = {k / 49, k / 7 % 7, k % 7};
            double total = 0;
            for (int t = 0; t < 3; t++) {
                const float *z = tf_f32(out.logits) + (k * 3 + t) * 7;
                double mx = -1e30, sum = 0;
                for (int v = 0; v < 7; v++) mx = fmax(mx, z[v]);
                for (int v = 0; v < 7; v++) sum += exp(z[v] - mx);
                total += z[w[t]] - mx - log(sum);
            }
            if (total > best) best = total, best_k = k;
        }
        tf_decoder *d = tf_caption_decoder_new(m, px);
        tf_generate_opts o = tf_generate_opts_default();
        o.max_tokens = 3, o.beam = 49, o.length_penalty = 0, o.eos_id = -1;
        tf_ids ids = {0};
        double score;
        int32_t bos = 5;
        CHECKF(d && tf_generate(d, &bos, 1, &o, NULL, NULL, &ids, &score) == 0 && ids.n == 3, "%s", tf_error());
        CHECKF(ids.n == 3 && ids.v[0] * 49 + ids.v[1] * 7 + ids.v[2] == best_k && fabs(score - best) < 1e-4,
               "variant %d: beam %d (%.6f), exhaustive %d (%.6f)", variant,
               ids.n == 3 ? ids.v[0] * 49 + ids.v[1] * 7 + ids.v[2] : -1, score, best_k, best);
        tf_ids_free(&ids), tf_decoder_free(d), tf_ctx_free(ctx), tf_caption_free(m);
    }
}

TEST(caption_scene_grammar_is_seeded_and_names_the_cells) {
    float a[576], b[576];
    int32_t w[64], v[64];
    int n, k, lit = 0;
    tf_caption_scene s, t;
    CHECK(tf_caption_scene_make(3, 10, 3, a, &s, w, 64, &n) == 0 && tf_caption_scene_make(3, 10, 3, b, &t, v, 64, &k) == 0);
    CHECK(n == k && !memcmp(w, v, (size_t)n * sizeof *w) && !memcmp(a, b, sizeof a) && s.n >= 1 && s.n <= 3);
    for (int i = 0; i < 576; i++) lit += a[i] > 0;
    CHECK(lit > 0);
    for (int i = 1; i < s.n; i++) CHECK(s.cell[i] > s.cell[i - 1]); /* reading order */
    CHECK(!strcmp(tf_caption_word(w[0]), "a") && tf_caption_word(-1) == NULL && tf_caption_word(TF_CAPTION_VOCAB) == NULL);
    CHECK(tf_caption_scene_make(3, 10, 10, a, &s, w, 64, &n) != 0 && strstr(tf_error(), "max_items 10"));
    CHECK(tf_caption_scene_make(3, 10, 3, a, &s, w, 2, &n) != 0 && strstr(tf_error(), "more than 2 words"));
}

TEST(caption_folder_round_trip_and_bad_inputs) {
    char dir[] = "/tmp/tformer_cap_XXXXXX", cmd[600];
    CHECK(mkdtemp(dir) != NULL);
    tf_caption_config c = fixture_config(1, TF_RNN_LSTM, 1);
    tf_caption *m = tf_caption_new(&c, 3);
    CHECK(m && tf_caption_save(m, dir) == 0);
    tf_caption *r = tf_caption_load(dir);
    CHECKF(r && r->cfg.cell == TF_RNN_LSTM && r->cfg.hidden == 5 && r->cfg.attention, "%s", tf_error());
    for (int i = 0; r && i < tf_params_count(m->params); i++) {
        tf_tensor *p = tf_params_tensor(m->params, i), *q = tf_params_get(r->params, tf_params_name(m->params, i));
        CHECK(q && !memcmp(p->data, q->data, (size_t)tf_numel(p) * sizeof(float)));
    }
    tf_caption_config tc = transformer_config(); /* the Transformer captioner's folder too */
    tf_caption *t = tf_caption_new(&tc, 5), *t2 = NULL;
    snprintf(cmd, sizeof cmd, "%s/transformer", dir);
    CHECKF(t && tf_caption_save(t, cmd) == 0 && (t2 = tf_caption_load(cmd)) && t2->cfg.decoder == TF_CAPTION_TRANSFORMER &&
           tf_params_count(t2->params) == tf_params_count(t->params), "%s", tf_error());
    tf_caption_free(t), tf_caption_free(t2);
    tc.hidden = 9;
    CHECK(tf_caption_new(&tc, 1) == NULL && strstr(tf_error(), "hidden 9 is not a multiple of n_head 2"));
    tf_ctx *ctx = tf_ctx_new(0);
    tf_caption_outputs out;
    tf_tensor *x = tf_tensor_new(ctx, TF_DTYPE_F32, 4, (int64_t[]){1, 1, 9, 9}, 0);
    CHECK(tf_caption_run(ctx, m, &(tf_caption_inputs){.pixel_values = x}, &out) != 0 && strstr(tf_error(), "pixel_values"));
    x = tf_tensor_new(ctx, TF_DTYPE_F32, 4, (int64_t[]){1, 1, 8, 8}, 0);
    tf_tensor *y = tf_tensor_new(ctx, TF_DTYPE_I32, 2, (int64_t[]){1, 2}, 0);
    tf_i32(y)[0] = 9;
    CHECK(tf_caption_run(ctx, m, &(tf_caption_inputs){.pixel_values = x, .input_ids = y}, &out) != 0 &&
          strstr(tf_error(), "input_ids holds id 9"));
    CHECK(tf_caption_run(ctx, m, &(tf_caption_inputs){.input_ids = y}, &out) != 0 && strstr(tf_error(), "pixel_values missing"));
    c.image_size = 10;
    CHECK(tf_caption_new(&c, 1) == NULL && strstr(tf_error(), "image_size 10"));
    c = fixture_config(1, TF_RNN_GRU, 1);
    c.cell = TF_RNN_GRU;
    tf_caption *other = tf_caption_new(&c, 1);
    snprintf(cmd, sizeof cmd, "%s/other", dir);
    CHECK(other && tf_caption_save(other, cmd) == 0);
    CHECK(test_cp_weights(cmd, dir) == 0);
    CHECKF(tf_caption_load(dir) == NULL && strstr(tf_error(), "decoder."), "%s", tf_error());
    CHECK(test_edit_config(dir, "tformer-caption", "tformer-rnn-seq2seq") == 0);
    CHECK(tf_caption_load(dir) == NULL && strstr(tf_error(), "model_type \"tformer-rnn-seq2seq\""));
    tf_ctx_free(ctx), tf_caption_free(m), tf_caption_free(r), tf_caption_free(other);
    test_rm_rf(dir);
}

/* Field `col` (0-based) of a CSV line. */
static double csv_field(const char *line, int col) {
    for (int i = 0; i < col && line; i++) line = strchr(line, ',') ? strchr(line, ',') + 1 : NULL;
    return line ? atof(line) : NAN;
}

/* The column of name in a CSV header line, or -1. */
static int csv_column(const char *header, const char *name) {
    size_t k = strlen(name);
    int col = 0;
    for (const char *p = header; p; p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL, col++)
        if (!strncmp(p, name, k) && (p[k] == ',' || p[k] == '\n' || p[k] == 0)) return col;
    return -1;
}

typedef struct {
    double first, last_val, bleu, f1, precision, shuffled;
} cap_losses;

/* losses.csv: the first step's training loss, the last line's validation loss and metrics (their
 * columns found by name in the header; NaN when absent). */
static int losses(const char *path, cap_losses *l) {
    FILE *f = fopen(path, "r");
    char line[1024];
    int n = 0, col[4] = {-1, -1, -1, -1};
    static const char *const NAMES[4] = {"val_bleu4", "val_object_f1", "val_attention_precision", "val_attention_shuffled"};
    if (!f) return -1;
    while (fgets(line, sizeof line, f)) {
        for (int k = 0; n == 0 && k < 4; k++) col[k] = csv_column(line, NAMES[k]);
        if (n++ == 1) sscanf(line, "%*d,%lf", &l->first);
        sscanf(line, "%*d,%*f,%lf", &l->last_val);
        double *at[4] = {&l->bleu, &l->f1, &l->precision, &l->shuffled};
        for (int k = 0; n > 1 && k < 4; k++) *at[k] = col[k] >= 0 ? csv_field(line, col[k]) : NAN;
    }
    fclose(f);
    return n > 2 && col[0] >= 0 ? 0 : -1;
}

/* tformer train --arch caption on one-item scenes (without the regulariser, which spreads the
 * attention of a short caption over the 9 cells): the loss falls, the held-out scenes are
 * captioned right, each shape word looks at its cell; tformer caption reads the folder (greedy, beam, the attention figure). */
TEST(caption_train_learns_then_caption_cli) {
    char dir[] = "/tmp/tformer_capt_XXXXXX", args[2000], out[16384];
    CHECK(mkdtemp(dir) != NULL);
    snprintf(args, sizeof args,
             "train --arch caption --out %s/run --alpha-c 0 --scene-items 1 --steps 800 --batch 16 --cnn-dim 16 --hidden 32 "
             "--emb-dim 16 --attn-size 16 --lr 5e-3 --warmup 20 --eval-every 800 --eval-batches 4 --scene-valid 50 "
             "--weight-decay 0 --log-every 800 --threads 2", dir);
    CHECKF(test_run_cli("", args, out, sizeof out) == 0, "%s", out);
    char csv[600];
    cap_losses l;
    snprintf(csv, sizeof csv, "%s/run/losses.csv", dir);
    CHECK(losses(csv, &l) == 0);
    double first = l.first, last_val = l.last_val, precision = l.precision, bleu = l.bleu;
    tf_model *m = NULL;
    snprintf(csv, sizeof csv, "%s/run", dir);
    CHECKF((m = tf_model_load(csv, NULL)) != NULL && tf_model_caps(m) == TF_CAP_CAPTION, "%s", tf_error());
    int right = 0;
    for (int i = 0; i < 50; i++) { /* the held-out scenes (after the 4000 training ones), through the model handle */
        float px[576];
        int32_t w[64];
        int n;
        tf_caption_scene s;
        tf_caption_result r;
        char want[256] = "";
        CHECK(tf_caption_scene_make(1, 4000 + (uint64_t)i, 1, px, &s, w, 64, &n) == 0);
        for (int k = 0; k < n; k++) strcat(strcat(want, k ? " " : ""), tf_caption_word(w[k]));
        CHECKF(tf_model_caption(m, px, NULL, &r) == 0 && r.attention && r.grid == 3, "%s", tf_error());
        right += !strcmp(r.text, want);
        tf_caption_result_free(&r);
    }
    printf("    loss %.3f -> validation %.3f; %d of 50 held-out scenes captioned exactly; BLEU-4 %.3f; object F1 %.3f; "
           "attention precision %.3f (shuffled cells %.3f)\n", first, last_val, right, bleu, l.f1, precision, l.shuffled);
    CHECK(last_val < first / 10 && right >= 45 && precision > 0.5 && l.shuffled < 0.2); /* a uniform map: 1/9 */
    CHECK(l.f1 >= right / 50.0 && l.f1 <= 1);
    CHECKF(right < 50 ? bleu > 0.5 && bleu < 1 : bleu == 1, "BLEU-4 %g with %d of 50 exact", bleu, right);
    tf_model_free(m);
    snprintf(args, sizeof args, "caption --model %s/run --beam 3 --attention-png %s/att %s/run/scenes/00.png "
             "%s/run/scenes/01.png", dir, dir, dir, dir);
    CHECKF(test_run_cli("", args, out, sizeof out) == 0 && strstr(out, "00.png\ta ") && strstr(out, "wrote "), "%s", out);
    snprintf(csv, sizeof csv, "%s/att/01.png", dir);
    int w, h;
    CHECK(test_png_size(csv, &w, &h) == 0 && w > 600 && h > 200);
    tf_images rgb; /* an RGB PNG for a grey model: converted (PIL's L), the same caption */
    char grey[600], colour[600], *tab;
    snprintf(grey, sizeof grey, "%s/run/scenes/00.png", dir), snprintf(colour, sizeof colour, "%s/rgb.png", dir);
    CHECK(tf_images_read_png(grey, 3, &rgb) == 0 && rgb.channels == 3 && tf_images_write_png(&rgb, 0, colour) == 0);
    tf_images_free(&rgb);
    snprintf(args, sizeof args, "caption --model %s/run %s %s", dir, grey, colour);
    CHECKF(test_run_cli("", args, out, sizeof out) == 0 && (tab = strchr(out, '\t')) && strchr(tab, '\n'), "%s", out);
    *strchr(tab, '\n') = 0;
    CHECKF(strstr(tab + strlen(tab) + 1, tab), "%s", out);
    snprintf(args, sizeof args, "caption --model %s/run --beam 0 %s/run/scenes/00.png", dir, dir);
    CHECKF(test_run_cli("", args, out, sizeof out) == 2 && strstr(out, "--beam 0"), "%s", out);
    snprintf(args, sizeof args, "caption --model %s/run %s/att/01.png", dir, dir); /* an image of another size */
    CHECKF(test_run_cli("", args, out, sizeof out) == 1 && strstr(out, "att/01.png: an image of"), "%s", out);
    snprintf(args, sizeof args, "caption --model %s/run --resize %s/att/01.png", dir, dir); /* scaled */
    CHECKF(test_run_cli("", args, out, sizeof out) == 0 && strstr(out, "resized to 24x24") && strstr(out, "01.png\t"),
           "%s", out);
    snprintf(args, sizeof args, "train --arch caption --out %s/x --data foo.txt", dir);
    CHECKF(test_run_cli("", args, out, sizeof out) == 2 && strstr(out, "--arch caption makes its scenes"), "%s", out);
    test_rm_rf(dir);
}
