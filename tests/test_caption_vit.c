/* The ViT captioner (tformer train --arch caption --encoder vit --decoder transformer): a
 * VisionEncoderDecoderModel (transformers' ViTModel + GPT-2 with cross-attention and the tied head)
 * built from the captioner's settings, its forward the one hf-run runs, saved as that folder
 * (config.json, model.safetensors under transformers' names, preprocessor_config.json, the grammar's
 * words as tokenizer.json); a short training run through tformer train whose folder has the layout
 * of tests/fixtures_caption_hf/captioner_vit_shapes (written by tests/ref/gen_caption_vit_fixture.sh:
 * the same command, then transformers 4.36's logits and greedy caption on it, which
 * caption_hf_run_matches_transformers and this file check); tformer caption on both folders. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "test.h"
#include "tformer.h"

#define FIXTURE "tests/fixtures_caption_hf/captioner_vit_shapes"
/* The run of the fixture (tests/ref/gen_caption_vit_fixture.sh trains with the same flags). */
#define TRAIN_FLAGS                                                                                                    \
    "--encoder vit --decoder transformer --patch-size 8 --cnn-dim 24 --hidden 32 --n-head 4 --n-layer 2 --d-ff 48 "    \
    "--scene-items 1 --steps 40 --batch 8 --lr 3e-3 --warmup 5 --eval-every 40 --eval-batches 1 --scene-valid 8 "      \
    "--scene-export 2 --weight-decay 0 --log-every 40 --seed 5"

static tf_caption_config vit_config(void) {
    tf_caption_config c = tf_caption_config_default();
    c.encoder = TF_CAPTION_VIT, c.decoder = TF_CAPTION_TRANSFORMER, c.patch_size = 8;
    c.cnn_dim = 24, c.hidden = 32, c.n_head = 4, c.n_layer = 2, c.d_ff = 48;
    return c;
}

/* B held-out shapes scenes: pixels (B,1,24,24) in [0,1], input_ids (BOS, the words, padding) and labels
 * (the words, EOS, -100) (B,T). */
static void scenes(tf_ctx *ctx, int B, int T, tf_tensor **x, tf_tensor **ids, tf_tensor **labels) {
    *x = tf_tensor_new(ctx, TF_DTYPE_F32, 4, (int64_t[]){B, 1, 24, 24}, 0);
    *ids = tf_tensor_new(ctx, TF_DTYPE_I32, 2, (int64_t[]){B, T}, 0);
    *labels = tf_tensor_new(ctx, TF_DTYPE_I32, 2, (int64_t[]){B, T}, 0);
    for (int b = 0; b < B; b++) {
        int32_t w[32];
        int n;
        tf_caption_scene s;
        tf_caption_scene_make(3, 9000 + (uint64_t)b, 2, tf_f32(*x) + b * 576, &s, w, T - 1, &n);
        for (int k = 0; k < T; k++) {
            tf_i32(*ids)[b * T + k] = k == 0 ? TF_CAPTION_BOS : k <= n ? w[k - 1] : TF_CAPTION_PAD;
            tf_i32(*labels)[b * T + k] = k < n ? w[k] : k == n ? TF_CAPTION_EOS : -100;
        }
    }
}

static int all_equal(const tf_tensor *t, float v) {
    for (int64_t i = 0; t && i < tf_numel(t); i++)
        if (tf_f32(t)[i] != v) return 0;
    return t != NULL;
}

/* The captioner's logits (no gradient) on x, ids. */
static tf_tensor *own_logits(tf_ctx *ctx, const tf_caption *m, tf_tensor *x, tf_tensor *ids) {
    tf_caption_outputs o;
    return tf_caption_run(ctx, m, &(tf_caption_inputs){.pixel_values = x, .input_ids = ids}, &o) ? NULL : o.logits;
}

/* The settings it refuses, each naming what is wrong. */
static void refused(void) {
    static const struct {
        const char *what;
        int decoder, patch, cnn_dim;
        float dropout;
    } BAD[] = {
        {"encoder vit needs decoder transformer", TF_CAPTION_RNN, 8, 24, 0},
        {"not a multiple of patch_size 5", TF_CAPTION_TRANSFORMER, 5, 24, 0},
        {"cnn_dim 22 (the ViT's width) is not a multiple of n_head 4", TF_CAPTION_TRANSFORMER, 8, 22, 0},
        {"dropout 0.1", TF_CAPTION_TRANSFORMER, 8, 24, 0.1f},
    };
    for (size_t k = 0; k < sizeof BAD / sizeof BAD[0]; k++) {
        tf_caption_config c = vit_config();
        c.decoder = (tf_caption_decoder_kind)BAD[k].decoder, c.patch_size = BAD[k].patch, c.cnn_dim = BAD[k].cnn_dim;
        c.dropout = BAD[k].dropout;
        tf_caption *m = tf_caption_new(&c, 1);
        CHECKF(!m && strstr(tf_error(), BAD[k].what), "%s: %s", BAD[k].what, m ? "built" : tf_error());
        tf_caption_free(m);
    }
}

/* Transformers' tensor names (no pooler, no separate head, nothing of the CNN captioner's) and its
 * initialisation of the cross-attention. */
static void check_names(const tf_caption *m) {
    const tf_params *ps = m->params;
    static const char *const HAS[] = {
        "encoder.embeddings.cls_token", "encoder.embeddings.position_embeddings",
        "encoder.embeddings.patch_embeddings.projection.weight", "encoder.encoder.layer.1.layernorm_after.weight",
        "encoder.layernorm.weight", "enc_to_dec_proj.weight", "decoder.transformer.wte.weight",
        "decoder.transformer.h.1.crossattention.c_attn.weight", "decoder.transformer.ln_f.weight"};
    static const char *const NOT[] = {"decoder.lm_head.weight", "encoder.pooler.dense.weight", "encoder.conv.0.weight",
                                      "decoder.out.bias"};
    for (size_t k = 0; k < sizeof HAS / sizeof HAS[0]; k++) CHECKF(tf_params_get(ps, HAS[k]), "%s missing", HAS[k]);
    for (size_t k = 0; k < sizeof NOT / sizeof NOT[0]; k++) CHECKF(!tf_params_get(ps, NOT[k]), "%s registered", NOT[k]);
    CHECK(tf_params_count(ps) == tf_params_count(m->ved->params));
    CHECK(all_equal(tf_params_get(ps, "decoder.transformer.h.0.ln_cross_attn.weight"), 1.0f) &&
          all_equal(tf_params_get(ps, "decoder.transformer.h.0.crossattention.c_attn.bias"), 0.0f) &&
          !all_equal(tf_params_get(ps, "decoder.transformer.h.0.crossattention.q_attn.weight"), 0.0f));
    CHECK(tf_caption_grid(&m->cfg) == 3);
}

/* Training's forward: logits, loss, the attention maps over the 3x3 patches, and a gradient for every
 * parameter. */
static void check_training_forward(const tf_caption *m) {
    tf_ctx *ctx = tf_ctx_new(0);
    tf_tensor *x, *ids, *labels;
    scenes(ctx, 2, 16, &x, &ids, &labels);
    tf_caption_outputs o;
    CHECKF(tf_caption_run(ctx, m, &(tf_caption_inputs){.pixel_values = x, .input_ids = ids, .labels = labels,
                                                      .output_attentions = 1}, &o) == 0, "%s", tf_error());
    CHECK(o.logits && o.logits->shape[0] == 2 && o.logits->shape[1] == 16 && o.logits->shape[2] == TF_CAPTION_VOCAB);
    CHECK(o.loss && isfinite(tf_f32(o.loss)[0]) && o.attentions && o.attentions->shape[2] == 9);
    double row = 0;
    for (int i = 0; o.attentions && i < 9; i++) row += tf_f32(o.attentions)[9 * 5 + i];
    CHECKF(fabs(row - 1) < 1e-5, "an attention row sums to %g", row);
    CHECK(o.loss && tf_backward(ctx, o.loss, NULL) == 0);
    int no_grad = 0;
    for (int i = 0; i < tf_params_count(m->params); i++) {
        const tf_tensor *t = tf_params_tensor(m->params, i);
        double g = 0;
        for (int64_t k = 0; t->grad && k < tf_numel(t); k++) g += fabs(t->grad[k]);
        if (!(g > 0)) no_grad += fprintf(stderr, "    %s: no gradient\n", tf_params_name(m->params, i)) > 0;
    }
    CHECKF(no_grad == 0, "%d tensors without a gradient", no_grad);
    tf_ctx_free(ctx);
}

/* The folder's files; read back, the same logits to the bit as the captioner's on the same images. */
static void check_folder_logits(const tf_caption *m, const char *dir) {
    static const char *const FILES[] = {"config.json", "model.safetensors", "preprocessor_config.json", "tokenizer.json",
                                        "tokenizer_config.json"};
    for (int k = 0; k < 5; k++) CHECKF(access(test_path_in(dir, FILES[k]), R_OK) == 0, "%s missing", FILES[k]);
    size_t len;
    char *cfg = test_slurp(test_path_in(dir, "config.json"), &len);
    char *pre = test_slurp(test_path_in(dir, "preprocessor_config.json"), &len);
    CHECK(cfg && strstr(cfg, "\"vision-encoder-decoder\"") && strstr(cfg, "\"add_cross_attention\":\ttrue") &&
          strstr(cfg, "\"decoder_start_token_id\":\t14"));
    CHECK(pre && strstr(pre, "\"image_mean\":\t[0.5]") && strstr(pre, "\"image_std\":\t[0.5]"));
    free(cfg), free(pre);
    tf_caption_ved *v = tf_caption_ved_load(dir);
    CHECKF(v != NULL, "%s", tf_error());
    tf_ctx *ctx = tf_ctx_new(0);
    tf_ctx_set_grad(ctx, 0);
    tf_tensor *x, *ids, *labels;
    scenes(ctx, 2, 16, &x, &ids, &labels);
    tf_tensor *mine = own_logits(ctx, m, x, ids);
    tf_tensor *xn = tf_tensor_new(ctx, TF_DTYPE_F32, 4, x->shape, 0);
    for (int64_t i = 0; i < tf_numel(x); i++) tf_f32(xn)[i] = (tf_f32(x)[i] - 0.5f) / 0.5f; /* the processor's */
    tf_caption_ved_outputs vo;
    CHECKF(v && tf_caption_ved_run(ctx, v, &(tf_caption_ved_inputs){.pixel_values = xn, .decoder_input_ids = ids}, &vo) == 0,
           "%s", tf_error());
    CHECKF(mine && v && !memcmp(tf_f32(mine), tf_f32(vo.logits), sizeof(float) * (size_t)tf_numel(mine)),
           "the folder's logits differ from the captioner's (max |diff| %g)",
           mine && v ? test_max_abs_diff(tf_f32(mine), tf_f32(vo.logits), tf_numel(mine)) : -1.0);
    tf_caption_ved_free(v), tf_ctx_free(ctx);
}

/* The captioner's captions (training's validation path) and the folder's (tformer caption's), greedy and
 * beam 3: the same words and attention maps. */
static void check_folder_captions(const tf_caption *m, const char *dir) {
    tf_model *back = tf_model_load(dir, NULL);
    CHECKF(back != NULL, "%s", tf_error());
    tf_ctx *ctx = tf_ctx_new(0);
    tf_tensor *x, *ids, *labels;
    scenes(ctx, 1, 16, &x, &ids, &labels);
    for (int beam = 1; back && beam <= 3; beam += 2) {
        tf_generate_opts go = tf_generate_opts_default();
        go.temperature = 0, go.beam = beam;
        int32_t w[16];
        int n = 0;
        char want[400] = "";
        float att[17 * 9];
        CHECKF(tf_caption_generate(m, tf_f32(x), &go, w, 16, &n, att) == 0, "%s", tf_error());
        for (int k = 0; k < n; k++) strcat(strcat(want, k ? " " : ""), tf_caption_word(w[k]));
        tf_caption_result r;
        CHECKF(tf_model_caption(back, tf_f32(x), &go, &r) == 0, "%s", tf_error());
        CHECKF(!strcmp(r.text, want) && r.grid == 3 && r.n_words == n, "beam %d: \"%s\" against \"%s\"", beam, r.text,
               want);
        CHECK(r.attention && !memcmp(r.attention, att, sizeof(float) * (size_t)((n + 1) * 9)));
        printf("    beam %d: \"%s\" (%d words)\n", beam, r.text, n);
        tf_caption_result_free(&r);
    }
    tf_model_free(back), tf_ctx_free(ctx);
}

/* Built from the settings: transformers' tensor names and initialisation, the VisionEncoderDecoderModel's
 * forward (every parameter reached by the loss), saved as its folder, which tformer reads back
 * (tf_caption_ved_load, tf_model_load) with the same logits to the bit and the same captions, greedy and
 * beam; the settings it refuses. */
TEST(caption_vit_is_a_vision_encoder_decoder_model) {
    refused();
    tf_caption_config c = vit_config();
    tf_caption *m = tf_caption_new(&c, 7);
    CHECKF(m && m->ved, "%s", tf_error());
    if (!m) return;
    check_names(m);
    check_training_forward(m);
    char dir[] = "/tmp/tformer_capvit_XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    CHECKF(tf_caption_save(m, dir) == 0, "%s", tf_error());
    check_folder_logits(m, dir);
    check_folder_captions(m, dir);
    tf_caption_free(m);
    test_rm_rf(dir);
}

/* The two files hold the same tensor names and shapes. */
static int same_tensors(const char *a, const char *b) {
    tf_st_file *f = tf_st_open(a), *g = tf_st_open(b);
    int same = f && g && tf_st_count(f) == tf_st_count(g);
    for (int i = 0; same && i < tf_st_count(f); i++) {
        const tf_st_entry *e = tf_st_entry_at(f, i), *h = tf_st_find(g, e->name);
        same = h && h->ndim == e->ndim && !memcmp(h->shape, e->shape, sizeof(int64_t) * (size_t)e->ndim);
        if (!same) fprintf(stderr, "    %s: %s differs\n", a, e->name);
    }
    tf_st_close(f), tf_st_close(g);
    return same;
}

/* The loss of a folder's VisionEncoderDecoderModel on two scenes. */
static double ved_loss(const char *dir) {
    tf_caption_ved *v = tf_caption_ved_load(dir);
    tf_ctx *ctx = tf_ctx_new(0);
    tf_ctx_set_grad(ctx, 0);
    tf_tensor *x, *ids, *labels;
    scenes(ctx, 2, 16, &x, &ids, &labels);
    for (int64_t i = 0; i < tf_numel(x); i++) tf_f32(x)[i] = (tf_f32(x)[i] - 0.5f) / 0.5f;
    tf_caption_ved_outputs o;
    double loss = v && !tf_caption_ved_run(ctx, v, &(tf_caption_ved_inputs){.pixel_values = x, .decoder_input_ids = ids,
                                                                           .labels = labels}, &o)
                      ? tf_f32(o.loss)[0] : NAN;
    tf_ctx_free(ctx), tf_caption_ved_free(v);
    return loss;
}

/* The run folder has the fixture's layout: the same config.json, image processor and tokenizer files and
 * the same tensors (so transformers reads it as it reads the fixture); with TFORMER_EXPORT_DIR it is left
 * there with the fixture's inputs for transformers (make caption-hf-conformance). */
static void check_fixture_layout(const char *run) {
    char p[600];
    static const char *const SAME[] = {"config.json", "preprocessor_config.json", "tokenizer.json", "tokenizer_config.json"};
    for (int k = 0; k < 4; k++) {
        snprintf(p, sizeof p, "%s/%s", FIXTURE, SAME[k]);
        CHECKF(test_same_bytes(test_path_in(run, SAME[k]), p), "%s differs from the fixture's", SAME[k]);
    }
    snprintf(p, sizeof p, "%s/model.safetensors", FIXTURE);
    CHECK(same_tensors(test_path_in(run, "model.safetensors"), p) && same_tensors(p, test_path_in(run, "model.safetensors")));
    const char *export_dir = getenv("TFORMER_EXPORT_DIR");
    if (!export_dir) return;
    char to[600];
    snprintf(to, sizeof to, "%s/captioner_vit_trained", export_dir);
    static const char *const FILES[] = {"config.json", "model.safetensors", "preprocessor_config.json", "tokenizer.json",
                                        "tokenizer_config.json"};
    static const char *const INPUT[] = {"input.safetensors"};
    CHECK(mkdir(to, 0755) == 0 && test_copy_files(run, to, FILES, 5) == 0 && test_copy_files(FIXTURE, to, INPUT, 1) == 0);
}

/* tformer caption on the run folder (greedy, beam 3, the figure: the grammar's words through the folder's
 * tokenizer) and on the fixture: transformers' greedy caption of its scene, word for word. */
static void check_cli_captions(const char *run, const char *dir) {
    char args[2000], out[16384], p[600];
    snprintf(args, sizeof args, "caption --model %s %s/scenes/00.png %s/scenes/01.png", run, run, run);
    CHECKF(test_run_cli("", args, out, sizeof out) == 0 && strstr(out, "00.png\t") && strstr(out, "01.png\t"), "%s", out);
    printf("    greedy: %s", out);
    snprintf(args, sizeof args, "caption --model %s --beam 3 --attention-png %s/att %s/scenes/00.png", run, dir, run);
    CHECKF(test_run_cli("", args, out, sizeof out) == 0 && strstr(out, "00.png\t"), "%s", out);
    snprintf(p, sizeof p, "%s/att/00.png", dir);
    int w, h;
    CHECK(test_png_size(p, &w, &h) == 0 && w > 100);
    snprintf(p, sizeof p, "%s/captions.txt", FIXTURE);
    size_t len;
    char *want = test_slurp(p, &len), *tab = want ? strchr(want, '\t') : NULL;
    snprintf(args, sizeof args, "caption --model %s %s/scene.png", FIXTURE, FIXTURE);
    CHECKF(tab && test_run_cli("", args, out, sizeof out) == 0 && strstr(out, tab), "tformer: %s transformers: %s", out,
           want ? want : "(no captions.txt)");
    printf("    the fixture's scene: %s", out);
    free(want);
}

/* tformer train with encoder vit: a run that learns, whose folder is a VisionEncoderDecoderModel folder of
 * the fixture's layout, which hf-run runs on the fixture's inputs and tformer caption captions. */
TEST(caption_hf_folder_round_trip_vit_captioner) {
    char dir[] = "/tmp/tformer_capvitt_XXXXXX", args[2000], out[16384], run[300], p[600];
    CHECK(mkdtemp(dir) != NULL);
    snprintf(run, sizeof run, "%s/run", dir), snprintf(p, sizeof p, "%s/untrained", dir);
    tf_caption_config c = vit_config();
    tf_caption *fresh = tf_caption_new(&c, 5);
    CHECKF(fresh && tf_caption_save(fresh, p) == 0, "%s", tf_error());
    double before = ved_loss(p);
    tf_caption_free(fresh);
    snprintf(args, sizeof args, "train --arch caption --out %s " TRAIN_FLAGS " --threads 2", run);
    CHECKF(test_run_cli("", args, out, sizeof out) == 0, "%s", out);
    double after = ved_loss(run);
    printf("    loss on two held-out scenes: %.3f untrained, %.3f after 40 steps\n", before, after);
    CHECKF(after < before - 0.5, "the loss went from %g to %g", before, after);
    check_fixture_layout(run);
    char o[400];
    snprintf(p, sizeof p, "%s/input.safetensors", FIXTURE), snprintf(o, sizeof o, "%s/out.safetensors", dir);
    CHECKF(tf_hf_run(run, p, o, NULL) == 0, "%s", tf_error());
    check_cli_captions(run, dir);
    test_rm_rf(dir);
}
