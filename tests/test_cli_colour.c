/* The image verbs' --rgb / --grayscale (the colour conversion forced, not the model's channels'
 * automatic one) and --attention-scale on classify and caption (issue 55). */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "test.h"

#define VIT_RGB "tests/fixtures_vit/cls_rgb12_p3_noqkvbias"
#define VIT_GREY "tests/fixtures_vit/cls_grey28_p4_labels"
#define CAP_RGB "tests/fixtures_caption_hf/ved_rgb16_p4"

/* Colours whose luma 0.299 R + 0.587 G + 0.114 B is a whole byte (150, 55, 69, 86): a grey PNG of the
 * lumas holds exactly what --grayscale makes of the colour PNG. */
static const unsigned char COLOURS[4][4] = {{0, 240, 80, 150}, {0, 50, 225, 55}, {5, 115, 0, 69}, {0, 130, 85, 86}};

/* dir/colour.png (RGB, side x side, the colours in a pattern) and dir/grey.png (their lumas). */
static int write_pair(const char *dir, int side) {
    tf_images rgb = {1, 3, side, side, malloc(sizeof(float) * 3 * (size_t)(side * side)), NULL, 0};
    unsigned char *grey = malloc((size_t)(side * side));
    if (!rgb.pixels || !grey) return free(rgb.pixels), free(grey), -1;
    for (int p = 0; p < side * side; p++) {
        const unsigned char *c = COLOURS[(p / side + 3 * (p % side) / side) % 4];
        for (int k = 0; k < 3; k++) rgb.pixels[k * side * side + p] = (float)c[k] / 255.0f;
        grey[p] = c[3];
    }
    int rc = tf_images_write_png(&rgb, 0, test_path_in(dir, "colour.png")) ||
             test_write_grey_png(test_path_in(dir, "grey.png"), grey, side, side);
    free(rgb.pixels), free(grey);
    return rc ? -1 : 0;
}

/* classify --top-k 3 of png: its lines with the file's name dropped, into out. */
static int top3(const char *flags, const char *model, const char *png, char *out, size_t n) {
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "%s classify --model %s --top-k 3 %s %s 2>/dev/null | cut -f2-", test_tformer_bin(), model,
             flags, png);
    return test_popen(cmd, out, n);
}

TEST(cli_grayscale_and_rgb_force_the_colour_conversion) {
    char dir[] = "/tmp/tformer_colour_XXXXXX", cmd[1024], a[2048], b[2048], c[2048], err[4096];
    CHECK(mkdtemp(dir) != NULL);
    CHECK(write_pair(dir, 12) == 0);
    /* an RGB model: --grayscale reads the colour file as its grey one (lumas repeated), unlike the default */
    CHECK(top3("--grayscale", VIT_RGB, test_path_in(dir, "colour.png"), a, sizeof a) == 0);
    CHECK(top3("", VIT_RGB, test_path_in(dir, "grey.png"), b, sizeof b) == 0);
    CHECK(top3("", VIT_RGB, test_path_in(dir, "colour.png"), c, sizeof c) == 0);
    CHECKF(*a && !strcmp(a, b), "--grayscale on colour.png:\n%s\ngrey.png:\n%s", a, b);
    CHECKF(strcmp(a, c), "--grayscale changed nothing:\n%s", a);
    /* --rgb on an RGB model: what the default does */
    CHECK(top3("--rgb", VIT_RGB, test_path_in(dir, "colour.png"), b, sizeof b) == 0);
    CHECKF(!strcmp(b, c), "--rgb:\n%s\ndefault:\n%s", b, c);
    /* said on stderr */
    snprintf(cmd, sizeof cmd, "%s classify --model " VIT_RGB " --grayscale %s 2>&1 >/dev/null", test_tformer_bin(),
             test_path_in(dir, "colour.png"));
    CHECKF(test_popen(cmd, err, sizeof err) == 0 && strstr(err, "; images as grey repeated into RGB (--grayscale)\n"),
           "%s", err);
    /* refused: --rgb for a grey model, both flags, either with a labelled set */
    const char *bad[][2] = {
        {"--model " VIT_GREY " --rgb", "--rgb: the model takes grey images (1 channel); give --grayscale or neither"},
        {"--model " VIT_RGB " --rgb --grayscale", "--rgb and --grayscale: give one"},
    };
    for (int i = 0; i < 2; i++) {
        snprintf(cmd, sizeof cmd, "classify %s %s", bad[i][0], test_path_in(dir, "colour.png"));
        CHECKF(test_run_cli("", cmd, err, sizeof err) == 2 && strstr(err, bad[i][1]), "%s: %s", cmd, err);
    }
    snprintf(cmd, sizeof cmd, "classify --model " VIT_GREY " --grayscale --data-dir %s", dir);
    CHECKF(test_run_cli("", cmd, err, sizeof err) == 2 && strstr(err, "--rgb and --grayscale go with PNG files"), "%s",
           err);
    /* caption: an RGB captioner reads the colour file as the grey one with --grayscale */
    for (int i = 0; i < 2; i++) {
        snprintf(cmd, sizeof cmd, "%s caption --model " CAP_RGB " %s %s 2>/dev/null | cut -f2-", test_tformer_bin(),
                 i ? "" : "--grayscale", test_path_in(dir, i ? "grey16.png" : "colour16.png"));
        if (!i) { /* the same pair at the captioner's 16 x 16 */
            char sub[300];
            snprintf(sub, sizeof sub, "%s/16", dir);
            CHECK(mkdir(sub, 0755) == 0 && write_pair(sub, 16) == 0);
            CHECK(rename(test_path_in(sub, "colour.png"), test_path_in(dir, "colour16.png")) == 0);
            CHECK(rename(test_path_in(sub, "grey.png"), test_path_in(dir, "grey16.png")) == 0);
        }
        CHECK(test_popen(cmd, i ? b : a, sizeof a) == 0);
    }
    CHECKF(*a && !strcmp(a, b), "caption --grayscale: %s; of the grey file: %s", a, b);
    test_rm_rf(dir);
}

/* --attention-scale on classify (as translate's): auto (each map to its own maximum) by default,
 * fixed draws other colours; a bad value or the flag without --attention-png refused. */
TEST(cli_attention_scale_on_image_attention) {
    char dir[] = "/tmp/tformer_ascale_XXXXXX", cmd[1024], out[4096];
    CHECK(mkdtemp(dir) != NULL);
    CHECK(write_pair(dir, 12) == 0);
    const char *how[] = {"", "--attention-scale auto", "--attention-scale fixed"};
    for (int i = 0; i < 3; i++) {
        snprintf(cmd, sizeof cmd, "classify --model " VIT_RGB " --attention-png %s/att%d %s %s", dir, i, how[i],
                 test_path_in(dir, "colour.png"));
        CHECKF(test_run_cli("", cmd, out, sizeof out) == 0, "%s: %s", cmd, out);
    }
    char p0[300], p1[300], p2[300];
    snprintf(p0, sizeof p0, "%s/att0/colour.png", dir);
    snprintf(p1, sizeof p1, "%s/att1/colour.png", dir);
    snprintf(p2, sizeof p2, "%s/att2/colour.png", dir);
    CHECK(test_same_bytes(p0, p1));
    CHECK(!test_same_bytes(p0, p2));
    snprintf(cmd, sizeof cmd, "classify --model " VIT_RGB " --attention-png %s/att3 --attention-scale max %s", dir,
             test_path_in(dir, "colour.png"));
    CHECKF(test_run_cli("", cmd, out, sizeof out) == 2 && strstr(out, "--attention-scale expects fixed or auto, got 'max'"),
           "%s", out);
    snprintf(cmd, sizeof cmd, "caption --model " CAP_RGB " --attention-scale fixed %s", test_path_in(dir, "colour.png"));
    CHECKF(test_run_cli("", cmd, out, sizeof out) == 2 && strstr(out, "--attention-scale goes with --attention-png"),
           "%s", out);
    test_rm_rf(dir);
}
