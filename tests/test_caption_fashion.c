/* Fashion-MNIST scenes with known truth (docs/caption.md): the seeded generator, its five
 * references, the parser that reads a caption back into items and cells, object F1 and the
 * attention's precision against the truth (with the shuffled-cell control). */
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "test.h"
#include "tformer/caption.h"

/* Ten stand-in items a split, item i of class i: every pixel of a training item 1, of a test item
 * 0.5, so a scene's pixels tell which split its items came from. */
static int fake_fashion(tf_fashion *f) {
    memset(f, 0, sizeof *f);
    for (int k = 0; k < 2; k++) {
        tf_images *s = k ? &f->test : &f->train;
        *s = (tf_images){10, 1, 28, 28, malloc(10 * 784 * sizeof(float)), malloc(10 * sizeof(int32_t)), 10};
        if (!s->pixels || !s->labels) return -1;
        for (int i = 0; i < 10 * 784; i++) s->pixels[i] = k ? 0.5f : 1.0f;
        for (int i = 0; i < 10; i++) s->labels[i] = i;
    }
    return 0;
}

static void text_of(const int32_t *w, int n, char *out) {
    out[0] = 0;
    for (int k = 0; k < n; k++) strcat(strcat(out, k ? " " : ""), tf_caption_grammar_word(TF_CAPTION_GRAMMAR_FASHION, w[k]));
}

/* The ids of a caption's text in the fashion grammar (n words). */
static int ids_of(const char *text, int32_t *w) {
    char buf[512], *save = NULL;
    int n = 0;
    snprintf(buf, sizeof buf, "%s", text);
    for (char *tok = strtok_r(buf, " ", &save); tok; tok = strtok_r(NULL, " ", &save)) {
        int id = -1;
        for (int v = 0; v < tf_caption_grammar_vocab(TF_CAPTION_GRAMMAR_FASHION); v++)
            if (!strcmp(tf_caption_grammar_word(TF_CAPTION_GRAMMAR_FASHION, v), tok)) id = v;
        if (id < 0) return -1;
        w[n++] = id;
    }
    return n;
}

/* Each scene a seed makes again the same; training scenes hold train items only and held-out ones
 * t10k's; each item lies in its own cell (784 lit pixels there, none elsewhere); every reference
 * reads back into exactly the scene's items and cells; the references differ in order and phrasing. */
TEST(caption_fashion_scenes_splits_cells_and_five_references) {
    tf_fashion f;
    CHECK(fake_fashion(&f) == 0);
    static float a[96 * 96], b[96 * 96];
    int relations = 0, differ = 0, dark = 0, light = 0, sizes[5] = {0};
    for (uint64_t i = 0; i < 300; i++) {
        int split = (int)(i % 2), bright = i % 3 == 0;
        tf_fashion_scene s, t;
        CHECK(tf_fashion_scene_make(&f, split, 7, i, 4, bright, a, &s) == 0 &&
              tf_fashion_scene_make(&f, split, 7, i, 4, bright, b, &t) == 0);
        CHECK(!memcmp(a, b, sizeof a) && !memcmp(&s, &t, sizeof s) && s.s.n >= 1 && s.s.n <= 4);
        sizes[s.s.n]++;
        int lit[9] = {0};
        for (int p = 0; p < 96 * 96; p++) {
            float want = split ? 0.5f : 1.0f;
            CHECKF(a[p] == 0 || a[p] == want || a[p] == 0.4f * want, "split %d pixel %g", split, a[p]);
            lit[p / 96 / 32 * 3 + p % 96 / 32] += a[p] > 0;
        }
        for (int k = 0; k < s.s.n; k++) {
            CHECK(k == 0 || s.s.cell[k] > s.s.cell[k - 1]);
            CHECK(lit[s.s.cell[k]] == 784 && s.s.shape[k] >= 0 && s.s.shape[k] < 10);
            dark += s.dark[k], light += bright && !s.dark[k];
            CHECK(bright || !s.dark[k]);
        }
        char first[512] = "";
        for (int r = 0; r < TF_FASHION_REFS; r++) {
            int32_t w[64];
            int n, tp, pred, truth;
            char text[512];
            CHECK(tf_fashion_caption(&s, r, bright, i, w, 64, &n) == 0);
            text_of(w, n, text);
            tf_caption_mentions m;
            CHECK(tf_caption_parse(TF_CAPTION_GRAMMAR_FASHION, w, n, &m) == 0);
            tf_caption_object_counts(&m, &s.s, &tp, &pred, &truth);
            CHECKF(tp == s.s.n && pred == s.s.n && truth == s.s.n, "reference %d \"%s\": %d of %d", r, text, tp, pred);
            CHECK(bright ? strstr(text, "dark") || strstr(text, "light") : !strstr(text, "dark") && !strstr(text, "light"));
            relations += strstr(text, "above") || strstr(text, "below") || strstr(text, " of ");
            if (r == 0) strcpy(first, text);
            else differ += strcmp(first, text) != 0;
        }
    }
    printf("    300 scenes of 1/2/3/4 items: %d/%d/%d/%d; %d references with a relation, %d differing from the "
           "first; %d dark and %d light items\n", sizes[1], sizes[2], sizes[3], sizes[4], relations, differ, dark, light);
    CHECK(sizes[1] && sizes[4] && relations > 50 && differ > 300 && dark > 20 && light > 20);
    tf_fashion_free(&f);
}

/* A scene by hand: the five references' exact text. */
TEST(caption_fashion_reference_texts) {
    tf_fashion_scene s = {{3, {7, 8, 3}, {0, 3, 5}}, {0, 1, 0}}; /* sneaker top left, dark bag left, dress right */
    static const char *const WANT[5] = {
        "a sneaker at the top left and a bag on the left and a dress on the right",
        "a dress on the right , a bag on the left and a sneaker at the top left",
        "a sneaker above a bag on the left and a dress on the right",
        NULL, /* a seeded order */
        "a dress on the right and a bag below a sneaker at the top left",
    };
    for (int r = 0; r < 5; r++) {
        int32_t w[64];
        int n;
        char text[512];
        CHECK(tf_fashion_caption(&s, r, 0, 1, w, 64, &n) == 0);
        text_of(w, n, text);
        CHECKF(!WANT[r] || !strcmp(text, WANT[r]), "reference %d: \"%s\"", r, text);
    }
    int32_t w[64];
    int n;
    char text[512];
    CHECK(tf_fashion_caption(&s, 0, 1, 1, w, 64, &n) == 0);
    text_of(w, n, text);
    CHECKF(!strcmp(text, "a light sneaker at the top left and a dark bag on the left and a light dress on the right"), "%s",
           text);
    CHECK(tf_fashion_caption(&s, 0, 1, 1, w, 10, &n) != 0 && strstr(tf_error(), "more than 10 words"));
    CHECK(tf_fashion_caption(&s, 5, 0, 1, w, 64, &n) != 0 && strstr(tf_error(), "reference 5"));
}

/* Captions read back: a wrong cell, a wrong item, a missing and an extra item, a relation off the
 * grid, a caption that stops following the grammar; object F1's counts; the attention's precision
 * against where the items are and against shuffled cells. */
TEST(caption_parse_object_f1_and_attention_against_truth) {
    tf_caption_scene s = {3, {7, 8, 3}, {0, 3, 5}}; /* sneaker top left, bag left, dress right */
    static const struct {
        const char *text;
        int tp, pred;
    } CASES[] = {
        {"a sneaker at the top left and a bag on the left and a dress on the right", 3, 3},
        {"a dress on the right , a bag below a sneaker at the top left", 3, 3},
        {"a sneaker at the top and a bag on the left", 1, 2},             /* a wrong cell, a missing item */
        {"a coat at the top left and a dark bag on the left and a dress on the right and a bag in the centre", 2, 4},
        {"a sneaker above a bag at the top left", 0, 0},                  /* off the grid: dropped */
        {"a sneaker to the left of a bag at the top left", 0, 0},         /* off the grid: dropped */
        {"a bag to the left of a dress on the right", 1, 2},              /* the bag in the centre, not the left */
        {"a sneaker at the top left and and a bag on the left", 1, 1},    /* stops at the second "and" */
        {"a bag on the left and a bag on the left", 1, 2},               /* one bag there, matched once */
        {"a sneaker at the", 0, 0},
        {"", 0, 0},
    };
    for (size_t c = 0; c < sizeof CASES / sizeof CASES[0]; c++) {
        int32_t w[64];
        int n = ids_of(CASES[c].text, w), tp, pred, truth;
        tf_caption_mentions m;
        CHECK(n >= 0 && tf_caption_parse(TF_CAPTION_GRAMMAR_FASHION, w, n, &m) == 0);
        tf_caption_object_counts(&m, &s, &tp, &pred, &truth);
        CHECKF(tp == CASES[c].tp && pred == CASES[c].pred && truth == 3, "\"%s\": %d of %d", CASES[c].text, tp, pred);
    }
    /* the attention: a 6x6 grid, each item word looking at one cell's 2x2 block */
    int32_t w[64];
    int n = ids_of("a sneaker at the top left and a coat on the left and a dress on the left", w);
    tf_caption_mentions m;
    CHECK(tf_caption_parse(TF_CAPTION_GRAMMAR_FASHION, w, n, &m) == 0 && m.n == 3);
    static float att[64 * 36];
    for (int k = 0; k < 3; k++) { /* the sneaker's word at its cell; the dress's all at the left (not where it is) */
        float *a = att + m.word[k] * 36;
        int cell = k == 0 ? 0 : 3;
        for (int y = 0; y < 2; y++)
            for (int x = 0; x < 2; x++) a[(cell / 3 * 2 + y) * 6 + cell % 3 * 2 + x] = 0.25f;
    }
    double sum = 0, count = 0, ssum = 0, scount = 0;
    int shuffle[9] = {1, 2, 3, 4, 5, 6, 7, 8, 0};
    tf_caption_attention_truth(&m, &s, att, 6, NULL, &sum, &count);
    tf_caption_attention_truth(&m, &s, att, 6, shuffle, &ssum, &scount);
    CHECKF(count == 2 && sum == 1 && scount == 2 && ssum == 0, "%g of %g; shuffled %g of %g", sum, count, ssum, scount);
    /* two sneakers: the one where the caption says, not the first */
    tf_caption_scene two = {2, {7, 7}, {0, 5}};
    n = ids_of("a sneaker on the right", w);
    CHECK(tf_caption_parse(TF_CAPTION_GRAMMAR_FASHION, w, n, &m) == 0 && m.n == 1);
    memset(att, 0, sizeof att);
    for (int y = 2; y < 4; y++)
        for (int x = 4; x < 6; x++) att[m.word[0] * 36 + y * 6 + x] = 0.25f; /* cell 5's block */
    sum = count = 0;
    tf_caption_attention_truth(&m, &two, att, 6, NULL, &sum, &count);
    CHECKF(count == 1 && sum == 1, "%g of %g", sum, count);
    /* the shapes grammar: each shape word and its position words */
    float px[576];
    tf_caption_scene t;
    int32_t v[64];
    CHECK(tf_caption_scene_make(3, 11, 3, px, &t, v, 64, &n) == 0);
    int tp, pred, truth;
    CHECK(tf_caption_parse(TF_CAPTION_GRAMMAR_SHAPES, v, n, &m) == 0);
    tf_caption_object_counts(&m, &t, &tp, &pred, &truth);
    CHECK(tp == t.n && pred == t.n && truth == t.n);
    v[1] = v[1] == 2 ? 3 : 2; /* the first item another shape */
    CHECK(tf_caption_parse(TF_CAPTION_GRAMMAR_SHAPES, v, n, &m) == 0);
    tf_caption_object_counts(&m, &t, &tp, &pred, &truth);
    CHECK(tp == t.n - 1 && pred == t.n);
}

/* The idx files of dataset-fashion-mnist: both splits, or an error naming the file. */
TEST(caption_fashion_loads_the_debian_files) {
    tf_fashion f;
    CHECK(tf_fashion_load("/nonexistent", &f) != 0 && strstr(tf_error(), "/nonexistent/train-images-idx3-ubyte.gz"));
    if (tf_fashion_load("/usr/share/datasets/fashion-mnist", &f)) {
        printf("    skipped: no /usr/share/datasets/fashion-mnist (Debian's dataset-fashion-mnist)\n");
        return;
    }
    CHECK(f.train.n == 60000 && f.test.n == 10000 && f.train.n_classes == 10);
    tf_fashion_free(&f);
}

/* tformer train on the Fashion-MNIST scenes: the held-out scenes written as PNGs with their five
 * references in captions.tsv and COCO's captions.json (the same texts), the new metrics in
 * losses.csv; the settings the scenes need, refused by name. */
TEST(caption_fashion_train_writes_coco_captions) {
    char dir[] = "/tmp/tformer_capf_XXXXXX", args[2000], out[16384], path[600];
    CHECK(mkdtemp(dir) != NULL);
    snprintf(args, sizeof args, "train --arch caption --out %s/x --grammar fashion --steps 1", dir);
    CHECKF(test_run_cli("", args, out, sizeof out) != 0 && strstr(out, "the fashion scenes are 96x96 grey images with 31 words"),
           "%s", out);
    snprintf(args, sizeof args, "train --arch caption --out %s/x --scene-brightness true --steps 1", dir);
    CHECKF(test_run_cli("", args, out, sizeof out) != 0 && strstr(out, "scene_brightness is the fashion scenes'"), "%s", out);
    tf_fashion f;
    if (tf_fashion_load("/usr/share/datasets/fashion-mnist", &f)) {
        printf("    skipped: no /usr/share/datasets/fashion-mnist (Debian's dataset-fashion-mnist)\n");
        test_rm_rf(dir);
        return;
    }
    tf_fashion_free(&f);
    snprintf(args, sizeof args,
             "train --arch caption --out %s/run --grammar fashion --image-size 96 --vocab 31 --n-conv 5 --context 32 "
             "--scene-items 4 --scene-brightness true --steps 2 --batch 4 --eval-every 2 --eval-batches 1 --scene-valid 3 "
             "--scene-export 3 --threads 1", dir);
    CHECKF(test_run_cli("", args, out, sizeof out) == 0, "%s", out);
    snprintf(path, sizeof path, "%s/run/scenes/captions.json", dir);
    size_t len;
    char *json = test_slurp(path, &len), *tsv;
    snprintf(path, sizeof path, "%s/run/scenes/captions.tsv", dir);
    CHECK(json && (tsv = test_slurp(path, &len)));
    cJSON *root = cJSON_Parse(json), *ann = cJSON_GetObjectItem(root, "annotations");
    cJSON *images = cJSON_GetObjectItem(root, "images");
    CHECK(cJSON_GetArraySize(images) == 3 && cJSON_GetArraySize(ann) == 15);
    CHECK(!strcmp(cJSON_GetObjectItem(cJSON_GetArrayItem(images, 2), "file_name")->valuestring, "02.png") &&
          cJSON_GetObjectItem(cJSON_GetArrayItem(images, 2), "width")->valueint == 96);
    char *line = tsv;
    for (int k = 0; k < 15; k++) { /* the TSV's lines are the annotations, in order */
        cJSON *a = cJSON_GetArrayItem(ann, k);
        char want[600];
        snprintf(want, sizeof want, "%02d.png\t%s\n", cJSON_GetObjectItem(a, "image_id")->valueint,
                 cJSON_GetObjectItem(a, "caption")->valuestring);
        CHECKF(!strncmp(line, want, strlen(want)) && cJSON_GetObjectItem(a, "image_id")->valueint == k / 5, "%s", want);
        CHECK(strstr(want, "dark ") || strstr(want, "light "));
        line += strlen(want);
    }
    cJSON_Delete(root), free(json), free(tsv);
    snprintf(path, sizeof path, "%s/run/scenes/02.png", dir);
    int w, h;
    CHECK(test_png_size(path, &w, &h) == 0 && w == 96 && h == 96);
    snprintf(path, sizeof path, "%s/run/losses.csv", dir);
    char *csv = test_slurp(path, &len);
    CHECK(csv && strstr(csv, "val_object_f1,val_attention_precision,val_attention_shuffled\n"));
    free(csv);
    test_rm_rf(dir);
}
