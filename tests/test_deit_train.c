/* DeiT's recipe in the ViT task on the shared trainer: the EMA of the
 * weights after k steps is the closed form of the weights each step left
 * (kept checkpoints) and is the saved model; a run with every ingredient on
 * repeats bit for bit under its seed and resumes exactly after a stop; the
 * flags are in --help and bad settings are clear errors. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "test.h"

#define N 96
#define SIDE 8

/* N images of SIDE x SIDE in 3 classes: stripes along rows, columns or diagonals, over noise. */
static void make_images(tf_images *s) {
    s->n = N, s->channels = 1, s->height = s->width = SIDE, s->n_classes = 3;
    s->pixels = malloc(N * SIDE * SIDE * sizeof(float)), s->labels = malloc(N * sizeof(int32_t));
    for (int i = 0; s->pixels && s->labels && i < N; i++) {
        int c = i % 3;
        s->labels[i] = c;
        for (int y = 0; y < SIDE; y++)
            for (int x = 0; x < SIDE; x++) {
                int on = (c == 0 ? y : c == 1 ? x : x + y) % 3 == i / 3 % 2;
                unsigned noise = (unsigned)(i * 131 + y * 17 + x * 29) * 2654435761u >> 27;
                s->pixels[(i * SIDE + y) * SIDE + x] = (float)(on ? 200 + noise : noise * 3) / 255.0f;
            }
    }
}

static tf_vit_task_config small_task(void) {
    tf_vit_task_config c = tf_vit_task_config_default();
    c.model.image_size = SIDE, c.model.patch_size = 4, c.model.d_model = 16, c.model.n_head = 2, c.model.n_layer = 2;
    c.model.n_labels = 3;
    return c;
}

static tf_train_config small_train(int steps) {
    tf_train_config t = tf_train_config_default();
    t.steps = steps, t.batch = 12, t.warmup = 2, t.lr = 3e-3f, t.eval_every = 3, t.eval_batches = 1;
    t.checkpoint_every = 1000, t.seed = 21;
    return t;
}

static void stop_at_4(void *user, const tf_train_report *r) {
    if (r->step == 4) *(volatile int *)user = 1;
}

static int train(const tf_vit_task_config *c, const tf_train_config *t, const char *dir, int resume, volatile int *stop) {
    tf_images s;
    make_images(&s);
    tf_task *task = tf_vit_task_new(c, &s, NULL, dir, t->seed);
    int rc = task ? tf_train(t, task, dir, resume, stop, stop ? stop_at_4 : NULL, (void *)stop) : -1;
    tf_task_free(task);
    return rc;
}

TEST(deit_ema_is_the_closed_form_and_the_saved_model) {
    char dir[] = "/tmp/tformer_deit_ema_XXXXXX", path[512];
    CHECK(mkdtemp(dir) != NULL);
    tf_vit_task_config c = small_task();
    c.recipe.ema_decay = 0.8f;
    tf_train_config t = small_train(4);
    t.checkpoint_every = 1, t.keep_checkpoints = 4;
    CHECK(train(&c, &t, dir, 0, NULL) == 0);
    tf_vit *w0 = tf_vit_new(&c.model, t.seed); /* the task's initial weights: the same seed */
    tf_st_file *step[4], *ck, *saved;
    for (int k = 0; k < 4; k++) {
        snprintf(path, sizeof path, "%s/checkpoints/step-%08d.safetensors", dir, k + 1);
        CHECK((step[k] = tf_st_open(path)) != NULL);
    }
    snprintf(path, sizeof path, "%s/checkpoint.safetensors", dir);
    CHECK((ck = tf_st_open(path)) != NULL);
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    CHECK((saved = tf_st_open(path)) != NULL);
    double worst = 0, moved = 0, d = 0.8;
    tf_arena *arena = tf_arena_new(0);
    for (int i = 0; w0 && i < tf_params_count(w0->params); i++) {
        const char *name = tf_params_name(w0->params, i);
        const tf_tensor *p0 = tf_params_tensor(w0->params, i);
        char ema_name[300];
        snprintf(ema_name, sizeof ema_name, "ema.%s", name);
        tf_tensor *e = tf_st_to_tensor(ck, tf_st_find(ck, ema_name), arena), *m = tf_st_to_tensor(saved, tf_st_find(saved, name), arena);
        tf_tensor *w[4];
        for (int k = 0; k < 4; k++) CHECK((w[k] = tf_st_to_tensor(step[k], tf_st_find(step[k], name), arena)) != NULL);
        CHECKF(e && m, "%s: no EMA in the checkpoint or no tensor in the model", name);
        for (int64_t j = 0; j < tf_numel(p0); j++) {
            double want = pow(d, 4) * tf_f32(p0)[j]; /* e_k = d^k w_0 + (1 - d) sum_j d^(k-j) w_j */
            for (int k = 0; k < 4; k++) want += (1 - d) * pow(d, 3 - k) * tf_f32(w[k])[j];
            worst = fmax(worst, fabs(tf_f32(e)[j] - want));
            moved = fmax(moved, fabs(tf_f32(w[3])[j] - want));
            CHECKF(tf_f32(m)[j] == tf_f32(e)[j], "%s[%lld]: the saved model is not the EMA", name, (long long)j);
        }
    }
    printf("    EMA after 4 steps (d 0.8) against the closed form: %.2g (the last weights differ from it by %.2g)\n",
           worst, moved);
    CHECK(worst < 1e-6 && moved > 1e-3);
    tf_arena_free(arena);
    for (int k = 0; k < 4; k++) tf_st_close(step[k]);
    tf_st_close(ck), tf_st_close(saved);
    tf_vit_free(w0);
    test_rm_rf(dir);
}

TEST(deit_full_recipe_repeats_and_resumes_bit_for_bit) {
    char a[] = "/tmp/tformer_deit_a_XXXXXX", b[] = "/tmp/tformer_deit_b_XXXXXX", cdir[] = "/tmp/tformer_deit_c_XXXXXX";
    CHECK(mkdtemp(a) && mkdtemp(b) && mkdtemp(cdir));
    tf_vit_task_config c = small_task();
    c.recipe.randaug_ops = 2, c.recipe.mixup = 0.8f, c.recipe.cutmix = 1.0f, c.recipe.erase_prob = 0.25f, c.recipe.repeats = 3, c.recipe.shift = 1;
    c.recipe.ema_decay = 0.9f, c.model.drop_path = 0.1f, c.model.dropout = 0.1f;
    tf_train_config t = small_train(8);
    volatile int stop = 0;
    CHECK(train(&c, &t, a, 0, NULL) == 0 && train(&c, &t, b, 0, NULL) == 0);
    CHECK(test_same_file(a, b, "losses.csv") && test_same_file(a, b, "model.safetensors") &&
          test_same_file(a, b, "checkpoint.safetensors"));
    CHECK(train(&c, &t, cdir, 0, &stop) == 1); /* stopped after step 4, then resumed */
    CHECK(train(&c, &t, cdir, TF_RESUME_EXACT, NULL) == 0);
    CHECK(test_same_file(a, cdir, "losses.csv") && test_same_file(a, cdir, "model.safetensors"));
    CHECK(test_same_file(a, cdir, "checkpoint.safetensors") && test_same_file(a, cdir, "best/model.safetensors"));
    tf_train_config other = t;
    other.seed = 22;
    test_rm_rf(b);
    CHECK(mkdtemp(strcpy(b, "/tmp/tformer_deit_b_XXXXXX")) && train(&c, &other, b, 0, NULL) == 0);
    CHECK(!test_same_file(a, b, "losses.csv"));
    printf("    8 steps with every ingredient: two runs and a run stopped at step 4 and resumed give the same files\n");
    test_rm_rf(a), test_rm_rf(b), test_rm_rf(cdir);
}

TEST(deit_flags_in_help_and_bad_settings) {
    char out[16384];
    CHECK(test_run_cli("", "train --arch vit --help", out, sizeof out) == 0);
    static const char *const FLAGS[] = {"--randaug-ops", "--randaug-magnitude", "--randaug-mstd", "--mixup", "--cutmix",
                                        "--mix-prob", "--switch-prob", "--erase-prob", "--erase-mode const|rand|pixel",
                                        "--repeats", "--ema-decay", "--drop-path", "--label-smoothing", "--dropout"};
    for (size_t i = 0; i < sizeof FLAGS / sizeof *FLAGS; i++) CHECKF(strstr(out, FLAGS[i]), "--help lacks %s", FLAGS[i]);
    CHECK(test_run_cli("", "train --arch vit --data-dir /nonexistent --out /tmp/x --mixup -1", out, sizeof out) == 2 &&
          strstr(out, "--mixup"));
    CHECK(test_run_cli("", "train --arch vit --data-dir /nonexistent --out /tmp/x --erase-mode blank", out, sizeof out) == 2 &&
          strstr(out, "const, rand, pixel"));
    CHECK(test_run_cli("", "train --arch vit --data-dir /nonexistent --out /tmp/x --drop-path 1", out, sizeof out) == 2 &&
          strstr(out, "--drop-path"));
    char dir[] = "/tmp/tformer_deit_bad_XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    tf_vit_task_config c = small_task();
    c.recipe.ema_decay = 0.9f;
    tf_train_config t = small_train(2);
    t.average_last = 2;
    CHECK(train(&c, &t, dir, 0, NULL) == -1 && strstr(tf_error(), "average_last") && strstr(tf_error(), "EMA"));
    test_rm_rf(dir);
}
