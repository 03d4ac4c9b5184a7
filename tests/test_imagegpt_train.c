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
    tf_gpt *back = tf_gpt_load_hf(run); /* a GPT-2 folder ... */
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
