/* ViT (and Swin) training through the CLI on a tiny synthetic idx set written here:
 * 30 steps on the shared trainer learn (the loss falls, validation accuracy
 * is reported), the same seed gives the same run, `tformer classify` (and
 * `tformer eval --data-dir`) scores the set and classify labels a PNG; bad
 * data are errors naming the file. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "test.h"

#define N_IMAGES 240
#define SIDE 12

/* Pixel (y,x) of image i of class c: stripes every third row (class 0),
 * column (1) or diagonal (2) at a phase drawn from i, over hashed noise:
 * every 3x3 patch tells the class (two phases: linearly). */
static unsigned char pixel(int i, int c, int y, int x) {
    int phase = (i / 3) % 2, noise = (int)((unsigned)(i * 131 + y * 17 + x * 29) * 2654435761u >> 27);
    int on = (c == 0 ? y : c == 1 ? x : x + y) % 3 == phase;
    return (unsigned char)(on ? 200 + noise : noise * 3);
}

static int write_set(const char *dir, const char *split, int classes) {
    return test_write_idx_set(dir, split, N_IMAGES, SIDE, classes, pixel);
}

/* Image 0 of class 0 as an 8-bit grey PNG. */
static int write_png(const char *path) {
    unsigned char img[SIDE * SIDE];
    for (int p = 0; p < SIDE * SIDE; p++) img[p] = pixel(0, 0, p / SIDE, p % SIDE);
    return test_write_grey_png(path, img, SIDE, SIDE);
}

#define MODEL_FLAGS "--image-size 12 --patch-size 3 --d-model 16 --n-layer 1 --n-head 2 --n-labels 3 --threads 1"

/* Column `col` of losses.csv's rows: the first and last values. */
static int losses(const char *run, int col, double *first, double *last) {
    char p[512];
    snprintf(p, sizeof p, "%s/losses.csv", run);
    size_t n;
    char *text = test_slurp(p, &n), *line = text ? strchr(text, '\n') : NULL; /* after the header */
    int rows = 0;
    for (; line && line[1]; line = strchr(line + 1, '\n')) {
        const char *f = line + 1;
        for (int c = 0; c < col && f; c++) f = strchr(f, ',') ? strchr(f, ',') + 1 : NULL;
        if (!f || *f == ',' || *f == '\n') continue;
        double v = atof(f);
        if (!rows++) *first = v;
        *last = v;
    }
    free(text);
    return rows;
}

TEST(vit_train_30_steps_learns_and_classifies) {
    char dir[] = "/tmp/tformer_vitt_XXXXXX", args[2048], out[8192];
    CHECK(mkdtemp(dir) != NULL);
    CHECK(write_set(dir, "train", 3) == 0 && write_set(dir, "t10k", 3) == 0);
    for (int r = 0; r < 2; r++) {
        snprintf(args, sizeof args, "train --arch vit --data-dir %s " MODEL_FLAGS " --steps 30 --batch 32 --warmup 5 "
                 "--lr 3e-3 --eval-every 15 --log-every 15 --label-names rows,columns,diagonals --out %s/run%d", dir, dir, r);
        int rc = test_run_cli("", args, out, sizeof out);
        CHECKF(rc == 0 && strstr(out, "accuracy"), "train: exit %d\n%s", rc, out);
    }
    char run0[256], run1[256], p[300];
    snprintf(run0, sizeof run0, "%s/run0", dir), snprintf(run1, sizeof run1, "%s/run1", dir);
    double first, last, acc0, acc;
    CHECK(losses(run0, 1, &first, &last) == 30);
    printf("    train loss %.3f at step 1, %.3f at step 30\n", first, last);
    CHECKF(last < first - 0.2, "the loss went from %g to %g", first, last);
    CHECK(losses(run0, 5, &acc0, &acc) == 2 && acc > 0.5); /* val_accuracy, 3 classes */
    size_t n0, n1;
    snprintf(p, sizeof p, "%s/losses.csv", run0);
    char *a = test_slurp(p, &n0);
    snprintf(p, sizeof p, "%s/losses.csv", run1);
    char *b = test_slurp(p, &n1);
    int same = a && b && n0 == n1 && !memcmp(a, b, n0);
    free(a), free(b);
    CHECKF(same, "two runs of the same seed differ");
    snprintf(args, sizeof args, "classify --model %s --data-dir %s --threads 1", run0, dir);
    CHECK(test_run_cli("", args, out, sizeof out) == 0);
    CHECKF(strstr(out, "accuracy ") && strstr(out, "of 240 images of") && strstr(out, "t10k") &&
           strstr(out, "diagonals"), "%s", out);
    printf("    %.*s", (int)(strchr(out, '\n') ? strchr(out, '\n') - out + 1 : 0), out);
    char line[256];
    snprintf(line, sizeof line, "%.*s", (int)(strchr(out, '\n') ? strchr(out, '\n') - out : 0), out);
    snprintf(args, sizeof args, "eval --model %s --data-dir %s --threads 1", run0, dir); /* eval says the same */
    CHECK(test_run_cli("", args, out, sizeof out) == 0);
    CHECKF(*line && strstr(out, line), "eval: %s", out);
    snprintf(p, sizeof p, "%s/rows.png", dir);
    CHECK(write_png(p) == 0);
    snprintf(args, sizeof args, "classify --model %s --threads 1 %s", run0, p);
    CHECK(test_run_cli("", args, out, sizeof out) == 0);
    CHECKF(strstr(out, p) && strchr(out, '\t'), "%s", out);
    char top1[256];
    snprintf(top1, sizeof top1, "%s", strchr(out, '\t'));
    *strchr(top1 + 1, '\t') = 0; /* "\tlabel" */
    /* the two likeliest, the first as above; where the model looked */
    snprintf(args, sizeof args, "classify --model %s --threads 1 --top-k 2 --attention-png %s/att %s", run0, dir, p);
    CHECK(test_run_cli("", args, out, sizeof out) == 0);
    char l1[64], l2[64];
    float p1 = 0, p2 = 0;
    const char *row = strstr(out, p);
    CHECKF(row && sscanf(row + strlen(p), "\t%63[^\t]\t%f\t%63[^\t]\t%f", l1, &p1, l2, &p2) == 4, "%s", out);
    CHECKF(!strcmp(l1, top1 + 1) && strcmp(l1, l2) && p1 >= p2 && p2 > 0 && p1 + p2 <= 1.0001f, "%s", out);
    char pic[1100];
    snprintf(pic, sizeof pic, "%s/att/rows.png", dir);
    int w = 0, h = 0;
    CHECKF(test_png_size(pic, &w, &h) == 0 && w > 600 && h > 150, "%s: %d x %d (%s)", pic, w, h, out);
    static const char *const BAD[][2] = {{"--top-k 0 %s", "--top-k must be at least 1"},
                                         {"--top-k 99 %s", "the model has"},
                                         {"--attention-png %s/att2 --data-dir %s", "go with PNG files"}};
    for (int i = 0; i < 3; i++) {
        char flags[1200];
        snprintf(flags, sizeof flags, BAD[i][0], dir, dir);
        if (i < 2) snprintf(flags, sizeof flags, BAD[i][0], p);
        snprintf(args, sizeof args, "classify --model %s --threads 1 %s", run0, flags);
        CHECKF(test_run_cli("", args, out, sizeof out) != 0 && strstr(out, BAD[i][1]), "%s: %s", args, out);
    }
    test_rm_rf(dir);
}

/* The same task with a Swin (--arch swin: windows of 3 on a 6x6 grid,
 * shifted, then a 3x3 stage): 30 steps learn, and classify scores the set
 * and labels a PNG (no attention picture: Swin has no class token). */
TEST(swin_train_30_steps_learns_and_classifies) {
    char dir[] = "/tmp/tformer_swint_XXXXXX", args[2048], out[8192], run[256], p[300];
    CHECK(mkdtemp(dir) != NULL);
    CHECK(write_set(dir, "train", 3) == 0 && write_set(dir, "t10k", 3) == 0);
    snprintf(args, sizeof args, "train --arch swin --data-dir %s --image-size 12 --patch-size 2 --d-model 8 --depths 1,1 "
             "--heads 2,2 --window 3 --n-labels 3 --threads 1 --steps 30 --batch 32 --warmup 5 --lr 3e-3 --eval-every 15 "
             "--log-every 15 --label-names rows,columns,diagonals --out %s/run", dir, dir);
    int rc = test_run_cli("", args, out, sizeof out);
    CHECKF(rc == 0 && strstr(out, "accuracy"), "train: exit %d\n%s", rc, out);
    snprintf(run, sizeof run, "%s/run", dir);
    double first, last, acc0, acc;
    CHECK(losses(run, 1, &first, &last) == 30);
    printf("    train loss %.3f at step 1, %.3f at step 30\n", first, last);
    CHECKF(last < first - 0.2, "the loss went from %g to %g", first, last);
    CHECK(losses(run, 5, &acc0, &acc) == 2 && acc > 0.5);
    snprintf(args, sizeof args, "classify --model %s --data-dir %s --threads 1", run, dir);
    CHECK(test_run_cli("", args, out, sizeof out) == 0);
    CHECKF(strstr(out, "accuracy ") && strstr(out, "of 240 images of") && strstr(out, "diagonals"), "%s", out);
    printf("    %.*s", (int)(strchr(out, '\n') ? strchr(out, '\n') - out + 1 : 0), out);
    snprintf(p, sizeof p, "%s/rows.png", dir);
    CHECK(write_png(p) == 0);
    snprintf(args, sizeof args, "classify --model %s --threads 1 --top-k 2 %s", run, p);
    CHECK(test_run_cli("", args, out, sizeof out) == 0);
    char l1[64], l2[64];
    float p1 = 0, p2 = 0;
    const char *row = strstr(out, p);
    CHECKF(row && sscanf(row + strlen(p), "\t%63[^\t]\t%f\t%63[^\t]\t%f", l1, &p1, l2, &p2) == 4 && p1 >= p2, "%s", out);
    snprintf(args, sizeof args, "classify --model %s --threads 1 --attention-png %s/att %s", run, dir, p);
    CHECKF(test_run_cli("", args, out, sizeof out) != 0 && strstr(out, "the attention rollout follows a class token; a swin model has none"), "%s", out);
    snprintf(args, sizeof args, "train --arch swin --data-dir %s --window 3 --depths 1,1 --heads 2 --out %s/bad", dir, dir);
    CHECKF(test_run_cli("", args, out, sizeof out) != 0 && strstr(out, "heads \"2\" 1"), "%s", out);
    test_rm_rf(dir);
}

/* Data that do not fit: each an error naming what to change or the file. */
TEST(vit_train_bad_data_is_a_clear_error) {
    char dir[] = "/tmp/tformer_vitd_XXXXXX", args[2048], out[8192];
    CHECK(mkdtemp(dir) != NULL);
    CHECK(write_set(dir, "train", 3) == 0);
    struct {
        const char *data, *flags, *expect[2]; /* data NULL: the folder written here */
    } cases[] = {
        {NULL, MODEL_FLAGS " --n-labels 2", {"train-labels-idx1-ubyte", "label 2 of image 2 is out of range [0,2)"}},
        {NULL, "--image-size 28 --patch-size 4 --threads 1", {"12x12", "--image-size 12"}},
        {"/nonexistent_vit", MODEL_FLAGS, {"/nonexistent_vit", "train-images-idx3-ubyte"}},
        {NULL, MODEL_FLAGS " --label-names a,b", {"label_names", "2 names for n_labels 3"}},
        {NULL, MODEL_FLAGS " --head ViTModel", {"ViTForImageClassification", NULL}},
        {NULL, MODEL_FLAGS " --tokenizer char", {"--tokenizer is a text setting", NULL}},
        {NULL, MODEL_FLAGS " --src a.txt", {"--src is a seq2seq setting", NULL}},
    };
    int bad = 0;
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        snprintf(args, sizeof args, "train --arch vit --data-dir %s %s --steps 2 --out %s/run",
                 cases[c].data ? cases[c].data : dir, cases[c].flags, dir);
        int rc = test_run_cli("", args, out, sizeof out), ok = rc != 0;
        for (int i = 0; ok && i < 2 && cases[c].expect[i]; i++) ok = strstr(out, cases[c].expect[i]) != NULL;
        if (!ok) bad += fprintf(stderr, "    %s: exit %d: %s\n", cases[c].flags, rc, out) > 0;
    }
    test_rm_rf(dir);
    CHECKF(bad == 0, "%d bad runs were not a clear error", bad);
}

/* The task's table: Fashion-MNIST's shape by default, flat keys beside the
 * trainer's in one JSON file, Hugging Face's names as aliases, checks naming the field. */
TEST(vit_task_config_table) {
    tf_vit_task_config c = tf_vit_task_config_default();
    tf_train_config t = tf_train_config_default();
    CHECK(c.model.image_size == 28 && c.model.patch_size == 4 && c.model.channels == 1 && c.model.n_labels == 10);
    CHECK(c.model.d_model == 64 && c.model.n_layer == 4 && c.model.n_head == 4 && c.model.d_ff == 0);
    CHECK(c.model.head == TF_VIT_IMAGE_CLS && c.model.qkv_bias == 1 && c.recipe.label_smoothing == 0.1f && c.recipe.shift == 0);
    CHECK(c.recipe.val_fraction == 0.1f && c.recipe.label_names[0] == 0 && tf_vit_config_check(&c.model) == 0);
    CHECK(tf_vit_patches(&c.model) == 49);
    const char *path = "/tmp/tformer_test_vit.json";
    FILE *f = fopen(path, "w");
    CHECK(f && fputs("{\"steps\": 7, \"patch_size\": 7, \"hidden_size\": 32, \"num_hidden_layers\": 2,"
                     " \"label_smoothing\": 0, \"qkv_bias\": false}", f) >= 0 && fclose(f) == 0);
    tf_fields fs[2] = {{&tf_train_config_table, &t}, {&tf_vit_task_config_table, &c}};
    CHECK(tf_fields_load(fs, 2, path, 0) == 0 && t.steps == 7 && c.model.patch_size == 7 && c.model.d_model == 32);
    CHECK(c.model.n_layer == 2 && c.recipe.label_smoothing == 0.0f && c.model.qkv_bias == 0 && tf_vit_patches(&c.model) == 16);
    unlink(path);
    c.model.n_head = 5;
    CHECK(tf_vit_config_check(&c.model) == -1 && strstr(tf_error(), "d_model 32 is not a multiple of n_head 5"));
    c.model.n_head = 4, c.model.patch_size = 29;
    CHECK(tf_vit_config_check(&c.model) == -1 && strstr(tf_error(), "patch_size 29 is larger than image_size 28"));
    CHECK(tf_fields_set(fs, 2, "--label-smoothing", "1") == -1 && strstr(tf_error(), "--label-smoothing expects a number in [0,1)"));
}
