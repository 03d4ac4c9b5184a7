/* ViT's convolutional stem (Xiao et al. 2021) against PyTorch
 * (tests/ref/gen_vit_stem_fixtures.py): the conv2d op against
 * torch.nn.functional.conv2d with its gradients; tformer-vit folders through
 * `tformer hf-run` against transformers' ViT with its patch projection
 * replaced by the same stem, outputs and gradients; a perturbed stem weight
 * fails; the folder round-trips and Hugging Face's export refuses it; bad
 * settings are clear errors; 30 training steps through the CLI learn (60
 * with a deeper stem). */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "test.h"

#define TOL 1e-5
#define STEM_DIR "tests/fixtures_vit_stem"
#define CLS_CASE STEM_DIR "/stem_cls_grey28_p4_labels"
#define DEPTH_CASE STEM_DIR "/stem_cls_grey28_p4_depth2" /* stem_depth 2: conv0 s2, conv1 s1, conv2 s2, conv3 s1 */

/* ---------------------------------------------------------------- the conv2d op */

/* Output to 1e-5 absolute, gradients to 1e-5 relative L2 error; a weight
 * moved by 1e-3 (the same file otherwise) fails. */
TEST(vit_stem_conv2d_matches_pytorch) {
    static const char *const CASES[] = {"conv2d_3x3_s2_p1_odd", "conv2d_3x3_s1_p0_nobias", "conv2d_5x5_s3_p2",
                                        "conv2d_1x1"};
    double worst = 0;
    for (int i = 0; i < 4; i++) {
        char dir[256];
        snprintf(dir, sizeof dir, "%s/%s", STEM_DIR, CASES[i]);
        double e = test_unfold_case(dir, 0.0f), moved = test_unfold_case(dir, 1e-3f);
        CHECKF(e >= 0 && e <= TOL, "%s: error %g (%s)", CASES[i], e, tf_error());
        CHECKF(moved > TOL, "%s: a weight moved by 1e-3 passes (%g)", CASES[i], moved);
        if (e > worst) worst = e;
    }
    printf("    4 conv2d cases (strides 1-3, padding 0-2, kernels 1-5, odd sizes, no bias), worst error %.2e\n", worst);
}

/* ---------------------------------------------------------------- the model */

TEST(vit_stem_hf_run_matches_pytorch) {
    int cases;
    double worst;
    const char *dir = test_fixture_dir_or(STEM_DIR); /* make vit-conformance: fresh random cases */
    int failed = test_hf_run_dir(dir, TOL, NULL, NULL, &cases, &worst);
    printf("    %d conv-stem (some with stride-1 convolutions), pooled and LSA ViT cases, %d failed, worst max |diff| %.2e\n",
           cases, failed, worst);
    CHECKF((cases == 10 || (strcmp(dir, STEM_DIR) && cases > 0)) && failed == 0, "%d of %d cases failed (%s)", failed,
           cases, dir);
}

/* The loss's gradient for the pixels and every parameter, the stem's included. */
TEST(vit_stem_gradients_match_pytorch) {
    static const char *const CASES[] = {CLS_CASE, STEM_DIR "/stem_cls_rgb8_p2_relu", DEPTH_CASE};
    double worst = 0;
    int n = 0;
    for (int i = 0; i < 3; i++) {
        tf_vit *m = tf_vit_load(CASES[i]);
        double e = m ? test_gradient_case(CASES[i], m, m->params, test_vit_loss, &n) : -1;
        tf_vit_free(m);
        CHECKF(e >= 0 && e <= 1e-4, "%s: relative gradient error %g (%s)", CASES[i], e, tf_error());
        if (e > worst) worst = e;
    }
    printf("    pixels and every parameter (%d tensors in the last case): worst relative error %.2e\n", n, worst);
}

/* (conv1's channel 3 is negative at every position of the fixture's images:
 * its bias reaches nothing through the ReLU; channel 4 is live.) */
TEST(vit_stem_perturbed_weight_fails_the_comparison) {
    static const test_weight W[] = {{"vit.embeddings.stem.conv0.weight", 5}, {"vit.embeddings.stem.conv0.bias", 1},
                                    {"vit.embeddings.stem.conv1.weight", 7}, {"vit.embeddings.stem.conv1.bias", 4},
                                    {"vit.embeddings.stem.projection.weight", 5}, {"vit.embeddings.stem.projection.bias", 2}};
    const int n = (int)(sizeof W / sizeof *W);
    double same, least;
    int missed = test_hf_perturbed(CLS_CASE, W, n, TOL, &same, &least);
    printf("    unchanged copy %.2e; one element + 1e-3 of each of %d stem tensors: %.2e or more\n", same, n, least);
    CHECK(same >= 0 && same <= TOL);
    CHECKF(missed == 0, "%d perturbed tensors went unnoticed", missed);
    /* stem_depth 2: the stride-1 convolutions are read too */
    static const test_weight D[] = {{"vit.embeddings.stem.conv1.weight", 7}, {"vit.embeddings.stem.conv1.bias", 1},
                                    {"vit.embeddings.stem.conv3.weight", 11}, {"vit.embeddings.stem.conv3.bias", 2}};
    missed = test_hf_perturbed(DEPTH_CASE, D, 4, TOL, &same, &least);
    printf("    stem_depth 2: unchanged copy %.2e; each of its 4 stride-1 tensors moved: %.2e or more\n", same, least);
    CHECK(same >= 0 && same <= TOL);
    CHECKF(missed == 0, "stem_depth 2: %d perturbed tensors went unnoticed", missed);
}

/* ---------------------------------------------------------------- folders and settings */

/* tf_vit_save writes tformer's folder, which loads back to the same outputs;
 * Hugging Face's export refuses; the signature tells the two stems apart. */
TEST(vit_stem_folder_round_trips_and_hf_export_refuses) {
    char tmp[] = "/tmp/tformer_vitstem_XXXXXX", dir[256];
    CHECK(mkdtemp(tmp) != NULL);
    tf_vit_config c = tf_vit_config_default();
    c.image_size = 16, c.patch_size = 4, c.channels = 3, c.d_model = 12, c.n_head = 2, c.n_layer = 1, c.n_labels = 3;
    c.stem = TF_VIT_STEM_CONV;
    tf_vit *m = tf_vit_new(&c, 5);
    CHECK(m != NULL && m->n_stem == 2);
    test_randomize_params(m->params, 9);
    snprintf(dir, sizeof dir, "%s/hf", tmp);
    CHECK(tf_vit_save_hf(m, dir) == -1);
    CHECKF(strstr(tf_error(), "conv stem") && strstr(tf_error(), "no Hugging Face form"), "%s", tf_error());
    CHECK(access(dir, F_OK) != 0); /* nothing written */
    /* the same logits from the folder (hf-run) and from the model in memory */
    tf_vit *back = NULL;
    CHECKF(test_vit_folder_matches(m, tmp, &back) == 0, "%s", tf_error());
    char cfg[300];
    snprintf(cfg, sizeof cfg, "%s/own/config.json", tmp);
    size_t len;
    char *text = test_slurp(cfg, &len);
    CHECKF(text && strstr(text, "\"tformer-vit\"") && strstr(text, "\"conv\""), "%s", text ? text : "");
    free(text);
    CHECK(back && back->cfg.stem == TF_VIT_STEM_CONV && back->n_stem == 2);
    /* a conv-stem checkpoint does not fit a patch-stem model, nor the reverse; the patch stem's signature is
     * the one written before the stem existed (TF_FIELD_SIG_NEW): those checkpoints still resume */
    char s1[1024], s2[1024];
    tf_vit_config p = c;
    p.stem = TF_VIT_STEM_PATCH;
    CHECK(tf_fields_signature(&(tf_fields){&tf_vit_config_table, &c}, 1, s1, sizeof s1) == 0 &&
          tf_fields_signature(&(tf_fields){&tf_vit_config_table, &p}, 1, s2, sizeof s2) == 0);
    CHECKF(strcmp(s1, s2) && strstr(s1, "stem=conv") && !strstr(s2, "stem"), "%s | %s", s1, s2);
    c.stem_width = 3;
    CHECK(tf_fields_signature(&(tf_fields){&tf_vit_config_table, &c}, 1, s2, sizeof s2) == 0);
    CHECKF(strstr(s2, "stem=conv stem_width=3") && !strstr(s2, "stem_depth"), "%s", s2);
    c.stem_depth = 2;
    CHECK(tf_fields_signature(&(tf_fields){&tf_vit_config_table, &c}, 1, s2, sizeof s2) == 0);
    CHECKF(strstr(s2, "stem_width=3 stem_depth=2"), "%s", s2);
    tf_vit_free(back), tf_vit_free(m);
    test_rm_rf(tmp);
}

TEST(vit_stem_bad_settings_are_clear_errors) {
    static const struct {
        int image, patch, stem, width, depth;
        const char *expect;
    } BAD[] = {{24, 6, TF_VIT_STEM_CONV, 0, 1, "patch_size 6 must be a power of two"},
               {28, 1, TF_VIT_STEM_CONV, 0, 1, "patch_size 1 must be a power of two >= 2"},
               {30, 4, TF_VIT_STEM_CONV, 0, 1, "image_size 30 must be a multiple of patch_size 4"},
               {28, 4, TF_VIT_STEM_PATCH, 8, 1, "stem_width 8 goes with stem conv"},
               {28, 4, TF_VIT_STEM_PATCH, 0, 2, "stem_depth 2 goes with stem conv"},
               {28, 4, TF_VIT_STEM_CONV, 0, 0, "stem_depth"},
               {28, 4, TF_VIT_STEM_CONV, 0, 9, "stem_depth"},
               {4096, 4096, TF_VIT_STEM_CONV, 0, 3, "log2(patch_size 4096) x stem_depth 3 = 36 3x3 convolutions, more than 32"}};
    for (size_t i = 0; i < sizeof BAD / sizeof *BAD; i++) {
        tf_vit_config c = tf_vit_config_default();
        c.image_size = BAD[i].image, c.patch_size = BAD[i].patch, c.stem = (tf_vit_stem)BAD[i].stem;
        c.stem_width = BAD[i].width, c.stem_depth = BAD[i].depth;
        tf_vit *m = tf_vit_new(&c, 1);
        CHECKF(!m && strstr(tf_error(), BAD[i].expect), "case %zu: %s", i, tf_error());
        tf_vit_free(m);
    }
    /* a folder: a stem tensor missing, a patch size the stem cannot make */
    static const test_bad_case FOLDERS[] = {
        {"missing stem tensor", NULL, NULL, NULL, "vit.embeddings.stem.conv1.bias",
         {{"pixel_values", TF_ST_F32, 4, {2, 1, 28, 28}, 0.5f}}, {"model.safetensors", "vit.embeddings.stem.conv1.bias"}},
        {"patch 7", NULL, "\"patch_size\": 4", "\"patch_size\": 7", NULL, {{"pixel_values", TF_ST_F32, 4, {2, 1, 28, 28}, 0.5f}},
         {"config.json", "patch_size 7 must be a power of two"}},
        {"unknown stem", NULL, "\"conv\"", "\"cnn\"", NULL, {{"pixel_values", TF_ST_F32, 4, {2, 1, 28, 28}, 0.5f}},
         {"config.json", "stem"}},
    };
    const size_t n = sizeof FOLDERS / sizeof FOLDERS[0];
    int bad = test_hf_run_bad_cases(FOLDERS, n, CLS_CASE, "VIT_VERBOSE");
    CHECKF(bad == 0, "%d of %zu bad folders were not a clear error", bad, n);
}

/* ---------------------------------------------------------------- training */

#define SIDE 12

/* Image i of class c: stripes every third row (0), column (1) or diagonal
 * (2) at a phase drawn from i, over hashed noise (test_vit_train.c's set).
 * The stem's ReLU layers start slower than one patch projection: lr 1e-2. */
static unsigned char pixel(int i, int c, int y, int x) {
    int phase = (i / 3) % 2, noise = (int)((unsigned)(i * 131 + y * 17 + x * 29) * 2654435761u >> 27);
    int on = (c == 0 ? y : c == 1 ? x : x + y) % 3 == phase;
    return (unsigned char)(on ? 200 + noise : noise * 3);
}

/* Column 1 (the training loss) of losses.csv: the first and last values. */
static int train_losses(const char *run, double *first, double *last) {
    char p[512];
    snprintf(p, sizeof p, "%s/losses.csv", run);
    size_t len;
    char *text = test_slurp(p, &len), *line = text ? strchr(text, '\n') : NULL;
    int rows = 0;
    for (; line && line[1]; line = strchr(line + 1, '\n')) {
        const char *f = strchr(line + 1, ',');
        if (!f || f[1] == ',' || f[1] == '\n') continue;
        double v = atof(f + 1);
        if (!rows++) *first = v;
        *last = v;
    }
    free(text);
    return rows;
}

/* 30 steps of run k: 0 the conv stem, 1 the conv stem and sequence pooling;
 * 60 of 2, the conv stem with two 3x3 convolutions per halving (its four
 * ReLU layers start slower: 1.121 -> 1.102 in 30 steps, 0.682 in 60). */
static void train_and_classify(const char *dir, int k) {
    char args[2048], out[8192], run[256];
    int steps = k == 2 ? 60 : 30;
    snprintf(run, sizeof run, "%s/run%d", dir, k);
    snprintf(args, sizeof args, "train --arch vit --stem conv %s --data-dir %s --image-size 12 --patch-size 4 --d-model 16 "
             "--n-layer 1 --n-head 2 --n-labels 3 --threads 1 --steps %d --batch 32 --warmup 5 --lr 1e-2 "
             "--eval-every 15 --log-every 15 --out %s", k == 1 ? "--pooling seq" : k == 2 ? "--stem-depth 2" : "", dir, steps, run);
    int rc = test_run_cli("", args, out, sizeof out);
    CHECKF(rc == 0 && strstr(out, "accuracy"), "train: exit %d\n%s", rc, out);
    double first = 0, last = 0;
    CHECK(train_losses(run, &first, &last) == steps);
    printf("    conv stem 12 -> 6 -> 3 (widths 4, 8)%s: train loss %.3f at step 1, %.3f at step %d\n",
           k == 1 ? ", sequence pooling" : k == 2 ? ", two 3x3 convolutions per halving" : "", first, last, steps);
    CHECKF(last < first - 0.2, "the loss went from %g to %g", first, last);
    char cfg[300];
    snprintf(cfg, sizeof cfg, "%s/config.json", run);
    size_t len;
    char *text = test_slurp(cfg, &len);
    const char *depth = text ? strstr(text, "\"stem_depth\":") : NULL;
    CHECKF(text && strstr(text, "\"tformer-vit\"") && (k != 1 || strstr(text, "\"seq\"")) &&
               (k != 2 || (depth && atoi(depth + strlen("\"stem_depth\":")) == 2)), "%s", text ? text : "(no config.json)");
    free(text);
    snprintf(args, sizeof args, "classify --model %s --data-dir %s --threads 1", run, dir);
    CHECK(test_run_cli("", args, out, sizeof out) == 0);
    CHECKF(strstr(out, "accuracy ") && strstr(out, "of 240 images of"), "%s", out);
    printf("    %.*s", (int)(strchr(out, '\n') ? strchr(out, '\n') - out + 1 : 0), out);
}

TEST(vit_stem_train_learns_and_classifies) {
    char dir[] = "/tmp/tformer_vitst_XXXXXX", args[2048], out[8192];
    CHECK(mkdtemp(dir) != NULL);
    CHECK(test_write_idx_set(dir, "train", 240, SIDE, 3, pixel) == 0 && test_write_idx_set(dir, "t10k", 240, SIDE, 3, pixel) == 0);
    train_and_classify(dir, 0);
    train_and_classify(dir, 1);
    train_and_classify(dir, 2);
    /* the CLI's bad settings (the data are fine) */
    static const char *const BAD[][2] = {{"--stem conv --patch-size 3", "patch_size 3 must be a power of two"},
                                         {"--stem cnn --patch-size 4", "stem"},
                                         {"--stem patch --stem-width 4 --patch-size 4", "stem_width 4 goes with stem conv"},
                                         {"--stem patch --stem-depth 2 --patch-size 4", "stem_depth 2 goes with stem conv"},
                                         {"--pooling max --patch-size 4", "pooling max"}};
    int rc;
    for (int i = 0; i < 5; i++) {
        snprintf(args, sizeof args, "train --arch vit %s --data-dir %s --image-size 12 --n-labels 3 --steps 1 --out %s/bad",
                 BAD[i][0], dir, dir);
        rc = test_run_cli("", args, out, sizeof out);
        CHECKF(rc != 0 && strstr(out, BAD[i][1]), "%s: exit %d: %s", BAD[i][0], rc, out);
    }
    test_rm_rf(dir);
}
