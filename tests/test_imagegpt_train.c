/* ImageGPT on the shared trainer: a tiny GPT on synthetic striped images
 * learns (validation bits per pixel fall), bpd is the validation loss in
 * bits over every validation pixel exactly once, the folder is a GPT-2
 * folder with image_tokens.json, and a resumed run checks the clusters. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "test.h"

#define SIDE 8

/* n grey images SIDE x SIDE: stripes every third row or column (i % 2) at a
 * phase drawn from i, 4 grey levels. */
static tf_images stripes(int64_t n, int offset) {
    tf_images s = {n, 1, SIDE, SIDE, malloc(sizeof(float) * (size_t)(n * SIDE * SIDE)), NULL, 0};
    for (int64_t i = 0; i < n; i++)
        for (int p = 0; p < SIDE * SIDE; p++) {
            int k = (int)i + offset, y = p / SIDE, x = p % SIDE, on = ((k % 2 ? x : y) + k / 2) % 3 == 0;
            s.pixels[i * SIDE * SIDE + p] = on ? 1.0f : (float)((k * 7 + p) % 3) / 6.0f;
        }
    return s;
}

typedef struct {
    double first_bpd, last_bpd, last_loss;
    int n;
} seen;

static void on_report(void *user, const tf_train_report *r) {
    seen *s = user;
    if (r->notice || r->val_loss != r->val_loss) return;
    if (!s->n++) s->first_bpd = r->val_metric[0];
    s->last_bpd = r->val_metric[0], s->last_loss = r->val_loss;
}

static tf_train_config small_run(int64_t steps) {
    tf_train_config t = tf_train_config_default();
    t.steps = steps, t.batch = 16, t.lr = 3e-3f, t.warmup = 5, t.eval_every = 10, t.eval_batches = 4;
    t.checkpoint_every = 1000, t.seed = 7;
    return t;
}

static tf_task *small_task(const char *run) {
    tf_imagegpt_task_config c = tf_imagegpt_task_config_default();
    c.n_clusters = 4, c.model.n_layer = 1, c.model.n_head = 2, c.model.d_model = 16;
    tf_images train = stripes(96, 0), valid = stripes(64, 1000);
    return tf_imagegpt_task_new(&c, &train, &valid, run, 7);
}

TEST(imagegpt_train_bpd_falls) {
    char run[] = "/tmp/tformer_igpt_train_XXXXXX", path[256];
    CHECK(mkdtemp(run));
    tf_set_threads(1);
    tf_task *t = small_task(run);
    CHECK(t);
    const tf_gpt *m = tf_imagegpt_task_model(t);
    CHECK(m->cfg.vocab_size == 5 && m->cfg.context == SIDE * SIDE && tf_imagegpt_task_images(t, TF_SUBSET_VAL) == 64);
    tf_train_config cfg = small_run(60);
    seen s = {0};
    CHECK(tf_train(&cfg, t, run, 0, NULL, on_report, &s) == 0);
    CHECKF(s.n == 6 && s.last_bpd < 0.7 * s.first_bpd, "bpd %g -> %g over %d evaluations", s.first_bpd, s.last_bpd, s.n);
    /* 4 batches of 16 rows cover the 64 images once: bpd is the mean loss in bits */
    CHECKF(fabs(s.last_bpd - s.last_loss / log(2.0)) < 1e-6 * s.last_bpd, "bpd %g, loss %g nats", s.last_bpd, s.last_loss);
    tf_task_free(t);
    tf_gpt *back = tf_gpt_load(run); /* a GPT-2 folder ... */
    CHECK(back && back->cfg.vocab_size == 5 && back->cfg.context == SIDE * SIDE);
    tf_gpt_free(back);
    tf_image_tokens k; /* ... with the clusters */
    CHECK(tf_image_tokens_load(run, &k) == 0 && k.k == 4 && k.height == SIDE && k.width == SIDE);
    tf_image_tokens_free(&k);
    /* a resume on other data (darker: other clusters) is refused by name */
    cfg.steps = 70;
    tf_imagegpt_task_config c = tf_imagegpt_task_config_default();
    c.n_clusters = 4, c.model.n_layer = 1, c.model.n_head = 2, c.model.d_model = 16;
    tf_images train = stripes(96, 0), valid = stripes(64, 1000);
    for (int i = 0; i < 96 * SIDE * SIDE; i++) train.pixels[i] *= 0.9f;
    t = tf_imagegpt_task_new(&c, &train, &valid, run, 7);
    CHECK(t);
    CHECK(tf_train(&cfg, t, run, TF_RESUME_CHANGED, NULL, NULL, NULL) == -1);
    CHECKF(strstr(tf_error(), "colour clusters differ"), "%s", tf_error());
    tf_task_free(t);
    t = small_task(run); /* the run's own clusters resume */
    CHECK(t && tf_train(&cfg, t, run, TF_RESUME_CHANGED, NULL, NULL, NULL) == 0);
    tf_task_free(t);
    snprintf(path, sizeof path, "rm -rf '%s'", run);
    CHECK(system(path) == 0);
}

TEST(imagegpt_task_errors) {
    tf_imagegpt_task_config c = tf_imagegpt_task_config_default();
    c.model.vocab_size = 9;
    tf_images train = stripes(20, 0), valid = stripes(4, 0);
    CHECK(!tf_imagegpt_task_new(&c, &train, &valid, "/tmp/tformer_igpt_err", 1));
    CHECKF(strstr(tf_error(), "vocab_size 9: ImageGPT's is n_clusters + 1 = 17"), "%s", tf_error());
    c = tf_imagegpt_task_config_default();
    train = stripes(20, 0), valid = stripes(4, 0);
    valid.width = 4, valid.height = 16;
    CHECK(!tf_imagegpt_task_new(&c, &train, &valid, "/tmp/tformer_igpt_err", 1));
    CHECKF(strstr(tf_error(), "differ in size"), "%s", tf_error());
    rmdir("/tmp/tformer_igpt_err");
}

/* A trained tiny ImageGPT folder in run (20 steps). */
static int train_small(const char *run) {
    tf_set_threads(1);
    tf_task *t = small_task(run);
    tf_train_config cfg = small_run(20);
    int rc = !t || tf_train(&cfg, t, run, 0, NULL, NULL, NULL);
    tf_task_free(t);
    return rc ? -1 : 0;
}

/* Greedy completion by hand: the whole sequence through tf_gpt_forward (no
 * cache) each step, the start token (past the logits or last) excluded from the argmax. */
static void greedy_by_hand(const tf_gpt *m, int sos, const int32_t *image, int kept, int HW, int32_t *out) {
    tf_ctx *ctx = tf_ctx_new(0);
    tf_ctx_set_grad(ctx, 0);
    memcpy(out, image, (size_t)kept * sizeof *out);
    for (int p = kept; p < HW; p++) {
        tf_ctx_reset(ctx);
        tf_tensor *ids = tf_tensor_new(ctx, TF_DTYPE_I32, 2, (int64_t[]){1, p + 1}, 0), *logits;
        tf_i32(ids)[0] = sos;
        memcpy(tf_i32(ids) + 1, out, (size_t)p * sizeof *out);
        logits = tf_gpt_forward(ctx, m, ids, NULL, NULL);
        const float *z = tf_f32(logits) + (size_t)p * (size_t)logits->shape[2]; /* V - 1 without the start token's logit */
        int best = 0;
        for (int v = 1; v < sos; v++) best = z[v] > z[best] ? v : best;
        out[p] = best;
    }
    tf_ctx_free(ctx);
}

TEST(imagegpt_complete_greedy_matches_forward) {
    char run[] = "/tmp/tformer_igpt_done_XXXXXX";
    CHECK(mkdtemp(run) && train_small(run) == 0);
    tf_image_tokens k;
    tf_gpt *m = tf_imagegpt_load(run, &k);
    CHECK(m);
    tf_images im = stripes(1, 5);
    int32_t img[SIDE * SIDE], got[SIDE * SIDE], want[SIDE * SIDE], again[SIDE * SIDE];
    CHECK(tf_image_tokens_encode(&k, &im, img) == 0);
    tf_generate_opts o = tf_generate_opts_default();
    o.temperature = 0;
    CHECK(tf_imagegpt_complete(m, &k, img, 3, &o, got) == 0);
    greedy_by_hand(m, k.k, img, 3 * SIDE, SIDE * SIDE, want);
    CHECK(!memcmp(got, want, sizeof got) && !memcmp(got, img, 3 * SIDE * sizeof *img));
    o.temperature = 1, o.seed = 4; /* sampling: deterministic under a seed, never the start token */
    CHECK(tf_imagegpt_complete(m, &k, img, 0, &o, got) == 0 && tf_imagegpt_complete(m, &k, img, 0, &o, again) == 0);
    CHECK(!memcmp(got, again, sizeof got));
    for (int p = 0; p < SIDE * SIDE; p++) CHECK(got[p] >= 0 && got[p] < k.k);
    CHECK(tf_imagegpt_complete(m, &k, img, SIDE, &o, got) == -1 && strstr(tf_error(), "keep_rows 8 must lie in [0,8)"));
    /* the model handle: the same completion in the palette's colours, through tf_model_complete_image */
    tf_model *h = tf_model_load(run, NULL);
    int c, hh, w;
    CHECK(h && tf_model_completion_shape(h, &c, &hh, &w) == 0 && c == 1 && hh == SIDE && w == SIDE);
    float px[SIDE * SIDE];
    tf_images want_px;
    o.temperature = 1, o.seed = 9;
    CHECK(tf_imagegpt_complete(m, &k, img, 2, &o, got) == 0 && tf_image_tokens_decode(&k, got, 1, &want_px) == 0);
    CHECK(tf_model_complete_image(h, im.pixels, 2, &o, px) == 0 && !memcmp(px, want_px.pixels, sizeof px));
    CHECK(tf_model_complete_image(h, im.pixels, SIDE, &o, px) == -1 && strstr(tf_error(), "keep_rows 8"));
    tf_images_free(&want_px), tf_model_free(h);
    tf_images_free(&im), tf_image_tokens_free(&k), tf_gpt_free(m);
    test_rm_rf(run);
}

TEST(imagegpt_complete_image_cli) {
    char run[] = "/tmp/tformer_igpt_cli_XXXXXX", args[1024], out[4096], png[300], grid[300];
    CHECK(mkdtemp(run) && train_small(run) == 0);
    tf_images im = stripes(1, 5), g, other = stripes(1, 0);
    snprintf(png, sizeof png, "%s/in.png", run), snprintf(grid, sizeof grid, "%s/grid.png", run);
    CHECK(tf_images_write_png(&im, 0, png) == 0);
    snprintf(args, sizeof args, "complete-image --model %s --input %s --keep-rows 3 --samples 3 --out %s --threads 1", run,
             png, grid);
    CHECKF(test_run_cli("", args, out, sizeof out) == 0, "%s", out);
    /* the start-up line, whole (as cli_other_verbs_say_what_they_assumed checks the other verbs') */
    char said[1024];
    snprintf(said, sizeof said, "tformer complete-image: imagegpt model from %s/; 1 thread (--threads); float32, %s "
             "kernels; images as grey (the model's 1 channel; a colour file as PIL's convert(\"L\"))", run,
             tf_kernels_info());
    CHECKF(test_said_line(args, out, sizeof out) == 0 && !strcmp(out, said), "\n    want: %s\n    got:  %s", said, out);
    CHECK(tf_images_read_png(grid, 1, &g) == 0);
    int cell = SIDE * 4 + 2; /* scale 4, gap 2: 5 panels */
    CHECKF(g.width == 5 * cell + 2 && g.height == cell + 2, "%dx%d", g.width, g.height);
    for (int y = 0; y < SIDE; y++)
        for (int x = 0; x < SIDE; x++) {
            float given = g.pixels[(2 + 4 * y) * g.width + 2 + 4 * x], orig = g.pixels[(2 + 4 * y) * g.width + 2 + 4 * cell + 4 * x];
            float want = im.pixels[y * SIDE + x];
            CHECKF(fabsf(orig - want) < 0.003f, "original (%d,%d): %g, want %g", y, x, orig, want);
            CHECKF(fabsf(given - (y < 3 ? want : 0.5f)) < 0.003f, "given (%d,%d): %g", y, x, given);
        }
    tf_images_free(&g);
    static const struct {
        const char *flags, *msg;
    } BAD[] = {
        {"--input /tmp/tformer_no_such.png --keep-rows 3", "/tmp/tformer_no_such.png: cannot open"},
        {"--input %s --keep-rows 8", "--keep-rows 8 is out of range: the model's images have 8 rows"},
        {"--input %s/small.png --keep-rows 3", "an image of 4x4; the model takes 8x8 (give --resize"},
        {"--input %s --keep-rows 3 --samples 0", "--samples must lie in [1,64]"},
    };
    other.height = other.width = 4; /* a 4x4 image */
    snprintf(png, sizeof png, "%s/small.png", run);
    CHECK(tf_images_write_png(&other, 0, png) == 0);
    snprintf(png, sizeof png, "%s/in.png", run);
    for (size_t i = 0; i < sizeof BAD / sizeof *BAD; i++) {
        char flags[512];
        snprintf(flags, sizeof flags, BAD[i].flags, i == 2 ? run : png);
        snprintf(args, sizeof args, "complete-image --model %s %s --out %s --threads 1", run, flags, grid);
        int rc = test_run_cli("", args, out, sizeof out);
        CHECKF(rc != 0 && strstr(out, BAD[i].msg), "case %zu: rc %d: %s", i, rc, out);
    }
    tf_images_free(&im), tf_images_free(&other);
    test_rm_rf(run);
}
