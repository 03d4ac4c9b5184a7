/* tformer classify: a ViTForImageClassification or SwinForImageClassification
 * folder (from tformer train --arch vit / swin, or any Hugging Face one) on labelled images — a split of an
 * idx folder (--data-dir, --split) or a digits CSV (--data) — printing the
 * accuracy, the loss and each class's accuracy; or on PNG files (operands),
 * printing each file's likeliest labels (--top-k) with their probabilities,
 * and with --attention-png DIR a picture of where the model looked (the
 * attention rollout and the last layer's heads); or a
 * VivitForVideoClassification folder (tformer train --arch vivit) on clips,
 * each a folder of PNG frames (operands): the likeliest label of each. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

enum { MODEL, DATA_DIR, SPLIT, DATA, BATCH, HFLIP_TTA, TOP_K, ATTENTION_PNG, THREADS };
const cli_flag cmd_classify_flags[] = {
    [MODEL] = {"model", CLI_STRING, "DIR", NULL,
               "a ViTForImageClassification, SwinForImageClassification or VivitForVideoClassification folder (a run "
               "folder, or best/)"},
    [DATA_DIR] = {"data-dir", CLI_STRING, "DIR", "", "a folder of MNIST-style idx files (<split>-images-idx3-ubyte(.gz), ...)"},
    [SPLIT] = {"split", CLI_STRING, "NAME", "t10k", "which of --data-dir's sets: t10k (the test set) or train"},
    [DATA] = {"data", CLI_STRING, "FILE", "", "scikit-learn's digits.csv(.gz) instead of --data-dir"},
    [BATCH] = {"batch", CLI_INT, "N", "256", "images per forward pass"},
    [HFLIP_TTA] = CLI_HFLIP_TTA_ROW,
    [TOP_K] = {"top-k", CLI_INT, "K", "1", "PNG files: the K likeliest labels, each with its probability"},
    [ATTENTION_PNG] = {"attention-png", CLI_STRING, "DIR", "",
                       "PNG files: write DIR/<name>.png, the attention rollout from what the classifier reads (the "
                       "class token, or the pooled patches) over the image and each head of the last layer (ViT)"},
    [THREADS] = CLI_THREADS_ROW,
    CLI_END,
};

static const char *opt(const cli_val *v) { return v->text && *v->text ? v->text : NULL; }

/* An image classifier: a ViT or a Swin (config.json's model_type), its shape. */
typedef struct {
    tf_vit *vit;
    tf_swin *swin;
    int channels, size, n_labels;
} classifier;

static classifier load_classifier(const cli_verb *v, const char *model_dir) {
    char type[64];
    cli_model_type(model_dir, type, sizeof type);
    classifier c = {0};
    if (!strcmp(type, "swin")) {
        if (!(c.swin = tf_swin_load_hf(model_dir))) cli_die(v, tf_error());
        if (c.swin->cfg.head != TF_SWIN_IMAGE_CLS)
            cli_die(v, "the folder is a SwinModel: scoring needs SwinForImageClassification");
        if (tf_params_check_finite(c.swin->params, NULL)) cli_die(v, tf_error());
        c.channels = c.swin->cfg.channels, c.size = c.swin->cfg.image_size, c.n_labels = c.swin->cfg.n_labels;
        return c;
    }
    if (!(c.vit = tf_vit_load_hf(model_dir))) cli_die(v, tf_error());
    if (c.vit->cfg.head != TF_VIT_IMAGE_CLS) cli_die(v, "the folder is a ViTModel: scoring needs ViTForImageClassification");
    if (tf_params_check_finite(c.vit->params, NULL)) cli_die(v, tf_error());
    c.channels = c.vit->cfg.channels, c.size = c.vit->cfg.image_size, c.n_labels = c.vit->cfg.n_labels;
    return c;
}

static void free_classifier(classifier *c) { tf_vit_free(c->vit), tf_swin_free(c->swin); }

static const char *class_label(const classifier *c, int i, char *buf, size_t n) {
    return c->vit ? tf_vit_label(c->vit, i, buf, n) : tf_swin_label(c->swin, i, buf, n);
}

/* Accuracy, loss and per-class accuracy of the model on a labelled set. */
static void score_set(const cli_verb *v, const classifier *m, const tf_images *s, const char *name, int batch,
                      int hflip) {
    int32_t *pred = malloc((size_t)s->n * sizeof *pred);
    int64_t L = m->n_labels, correct = 0, *hit = calloc((size_t)L, sizeof *hit), *all = calloc((size_t)L, sizeof *all);
    double loss;
    if (!pred || !hit || !all) cli_die(v, "out of memory");
    int rc = m->vit ? tf_vit_predict(m->vit, s->pixels, s->n, batch, hflip, s->labels, pred, NULL, &loss, &correct)
                    : tf_swin_predict(m->swin, s->pixels, s->n, batch, hflip, s->labels, pred, NULL, &loss, &correct);
    if (rc) cli_die(v, tf_error());
    for (int64_t i = 0; i < s->n; i++) all[s->labels[i]]++, hit[s->labels[i]] += pred[i] == s->labels[i];
    printf("accuracy %.4f (%lld of %lld images of %s%s) | loss %.4f\n", (double)correct / (double)s->n,
           (long long)correct, (long long)s->n, name, hflip ? ", each averaged with its mirror image" : "", loss);
    for (int64_t k = 0; k < L; k++) {
        char buf[32];
        if (all[k]) printf("  %-16s %.4f (%lld of %lld)\n", class_label(m, (int)k, buf, sizeof buf),
                           (double)hit[k] / (double)all[k], (long long)hit[k], (long long)all[k]);
    }
    free(pred), free(hit), free(all);
}

void cli_vit_score(const cli_verb *v, const char *model_dir, const char *dir, const char *split, const char *csv,
                   int batch, int hflip) {
    classifier m = load_classifier(v, model_dir);
    tf_images s;
    char name[4200];
    if (dir ? tf_images_read_dir(dir, split, m.n_labels, &s) : tf_images_read_digits(csv, &s)) cli_die(v, tf_error());
    if (s.channels != m.channels || s.height != m.size || s.width != m.size) {
        snprintf(name, sizeof name, "%s: images of %dx%d with %d channel(s); the model takes %dx%d with %d",
                 dir ? dir : csv, s.width, s.height, s.channels, m.size, m.size, m.channels);
        cli_die(v, name);
    }
    snprintf(name, sizeof name, "%s%s%s", dir ? dir : csv, dir ? " " : "", dir ? split : "");
    score_set(v, &m, &s, name, batch, hflip);
    tf_images_free(&s);
    free_classifier(&m);
}

/* DIR/<file's base name without .png>.png: where the model looked (out.attentions of image 0). */
static void attention_png(const cli_verb *v, const tf_vit *m, const tf_images *im, const tf_vit_outputs *out,
                          const char *file, const char *dir, const char *title) {
    const tf_vit_config *c = &m->cfg;
    int g = c->image_size / c->patch_size, H = c->n_head;
    float *maps = malloc((size_t)g * (size_t)g * (size_t)(H + 1) * sizeof *maps);
    if (!maps) cli_die(v, "out of memory");
    if (tf_vit_attention_rollout(m, out, 0, maps, maps + g * g)) cli_die(v, tf_error());
    const char *base = strrchr(file, '/') ? strrchr(file, '/') + 1 : file;
    size_t n = strlen(base) > 4 && !strcmp(base + strlen(base) - 4, ".png") ? strlen(base) - 4 : strlen(base);
    char path[4200];
    snprintf(path, sizeof path, "%s/%.*s.png", dir, (int)n, base);
    tf_image_attention_plot p = {im->pixels, im->channels, im->height, im->width, maps, g, g, c->patch_size,
                                 maps + g * g, H, title};
    if (tf_plot_image_attention(path, &p)) cli_die(v, tf_error());
    fprintf(stderr, "wrote %s\n", path);
    free(maps);
}

/* Image 0's labels by probability, the k likeliest as "label\tprobability" after the file's name. */
static void print_top(const classifier *m, const tf_tensor *logits, const char *file, int k, char *title, size_t n) {
    int L = m->n_labels;
    float p[L > 0 ? L : 1], hi = -INFINITY, sum = 0;
    for (int j = 0; j < L; j++) hi = fmaxf(hi, tf_f32(logits)[j]);
    for (int j = 0; j < L; j++) sum += p[j] = expf(tf_f32(logits)[j] - hi);
    printf("%s", file);
    for (int r = 0; r < k && r < L; r++) {
        int best = 0;
        for (int j = 1; j < L; j++) best = p[j] > p[best] ? j : best;
        char buf[32];
        const char *name = class_label(m, best, buf, sizeof buf);
        printf("\t%s\t%.4f", name, p[best] / sum);
        if (r == 0) snprintf(title, n, "%s: %s %.4f", file, name, p[best] / sum);
        p[best] = -1;
    }
    printf("\n");
}

/* Each PNG file: its k likeliest labels with their probabilities; with
 * attention_dir, the picture of where the model looked. */
static void classify_pngs(const cli_args *a, const classifier *m, int k, const char *attention_dir) {
    const classifier *c = m;
    tf_ctx *ctx = tf_ctx_new(0);
    if (!ctx) cli_die(a->verb, "out of memory");
    tf_ctx_set_grad(ctx, 0);
    for (int i = 0; i < a->n_operands; i++) {
        tf_images im;
        if (tf_images_read_png(a->operands[i], c->channels == 1 ? 1 : 3, &im)) cli_die(a->verb, tf_error());
        if (im.height != c->size || im.width != c->size || im.channels != c->channels) {
            char msg[4200];
            snprintf(msg, sizeof msg, "%s: an image of %dx%d; the model takes %dx%d with %d channel(s)", a->operands[i],
                     im.width, im.height, c->size, c->size, c->channels);
            cli_die(a->verb, msg);
        }
        tf_ctx_reset(ctx);
        tf_tensor *x = tf_tensor_new(ctx, TF_DTYPE_F32, 4, (int64_t[]){1, c->channels, c->size, c->size}, 0);
        if (!x) cli_die(a->verb, tf_error());
        memcpy(x->data, im.pixels, (size_t)tf_numel(x) * sizeof(float));
        tf_vit_outputs out;
        tf_swin_outputs sout;
        tf_vit_inputs in = {.pixel_values = x, .output_attentions = attention_dir != NULL};
        if (m->vit ? tf_vit_run(ctx, m->vit, &in, &out) : tf_swin_run(ctx, m->swin, &(tf_swin_inputs){.pixel_values = x}, &sout))
            cli_die(a->verb, tf_error());
        char title[4300];
        print_top(m, m->vit ? out.logits : sout.logits, a->operands[i], k, title, sizeof title);
        if (attention_dir) attention_png(a->verb, m->vit, &im, &out, a->operands[i], attention_dir, title);
        tf_images_free(&im);
    }
    tf_ctx_free(ctx);
}

/* Each clip folder: its frames (PNG files in name order), its likeliest label and that label's probability. */
static void classify_clips(const cli_args *a, const tf_vivit *m) {
    const tf_vivit_config *c = &m->cfg;
    char msg[4400];
    for (int i = 0; i < a->n_operands; i++) {
        tf_images clip;
        if (tf_images_read_clip(a->operands[i], c->channels == 1 ? 1 : 3, &clip)) cli_die(a->verb, tf_error());
        msg[0] = 0;
        if (clip.n < tf_vivit_tube_t(c))
            snprintf(msg, sizeof msg, "%s: %lld frame(s), fewer than one tubelet of %d frames", a->operands[i],
                     (long long)clip.n, tf_vivit_tube_t(c));
        else if (clip.n != c->num_frames)
            snprintf(msg, sizeof msg, "%s: %lld frames; the model takes clips of num_frames %d", a->operands[i],
                     (long long)clip.n, c->num_frames);
        else if (clip.height != c->image_size || clip.width != c->image_size || clip.channels != c->channels)
            snprintf(msg, sizeof msg, "%s: frames of %dx%d; the model takes %dx%d with %d channel(s)", a->operands[i],
                     clip.width, clip.height, c->image_size, c->image_size, c->channels);
        if (*msg) cli_die(a->verb, msg);
        int32_t pred;
        float prob;
        char buf[32];
        if (tf_vivit_predict(m, clip.pixels, 1, 1, NULL, &pred, &prob, NULL, NULL)) cli_die(a->verb, tf_error());
        printf("%s\t%s\t%.4f\n", a->operands[i], tf_vivit_label(m, pred, buf, sizeof buf), prob);
        tf_images_free(&clip);
    }
}

static int is_video_model(const char *dir) {
    char type[64];
    cli_model_type(dir, type, sizeof type);
    return !strcmp(type, "vivit") || !strcmp(type, "tformer-vivit");
}

static void classify_video(const cli_args *a) {
    if (!a->n_operands)
        cli_usage_error(a, "a video model classifies clips: give clip folders (PNG frames), not --data-dir or --data");
    tf_vivit *m = tf_vivit_load(a->v[MODEL].text);
    if (!m) cli_die(a->verb, tf_error());
    if (m->cfg.head != TF_VIVIT_VIDEO_CLS) cli_die(a->verb, "the folder is a VivitModel: classifying needs VivitForVideoClassification");
    if (tf_params_check_finite(m->params, NULL)) cli_die(a->verb, tf_error());
    classify_clips(a, m);
    tf_vivit_free(m);
}

int cmd_classify(const cli_args *a) {
    tf_set_threads(cli_threads(&a->v[THREADS]));
    const char *dir = opt(&a->v[DATA_DIR]), *csv = opt(&a->v[DATA]), *split = a->v[SPLIT].text;
    if ((dir != NULL) + (csv != NULL) + (a->n_operands > 0) != 1)
        cli_usage_error(a, "give one of --data-dir DIR, --data FILE or PNG files");
    if (a->v[SPLIT].given && !dir) cli_usage_error(a, "--split goes with --data-dir");
    if (strcmp(split, "t10k") && strcmp(split, "train")) cli_usage_error(a, "--split expects t10k or train, got '%s'", split);
    if (a->v[BATCH].i < 1) cli_usage_error(a, "--batch must be at least 1");
    const char *att = opt(&a->v[ATTENTION_PNG]);
    if (a->v[TOP_K].i < 1) cli_usage_error(a, "--top-k must be at least 1");
    if (a->n_operands && a->v[HFLIP_TTA].given) cli_usage_error(a, "--hflip-tta goes with a labelled set (--data-dir or --data)");
    if (!a->n_operands && (a->v[TOP_K].given || att))
        cli_usage_error(a, "--top-k and --attention-png go with PNG files, not with a labelled set");
    if (is_video_model(a->v[MODEL].text)) {
        if (a->v[TOP_K].given || att || a->v[HFLIP_TTA].given)
            cli_usage_error(a, "--top-k, --attention-png and --hflip-tta are ViT and Swin settings (images)");
        classify_video(a);
        return 0;
    }
    if (!a->n_operands) {
        cli_vit_score(a->verb, a->v[MODEL].text, dir, split, csv, (int)a->v[BATCH].i, a->v[HFLIP_TTA].given);
        return 0;
    }
    classifier m = load_classifier(a->verb, a->v[MODEL].text);
    if (a->v[TOP_K].i > m.n_labels)
        cli_usage_error(a, "--top-k %lld: the model has %d labels", (long long)a->v[TOP_K].i, m.n_labels);
    if (att && !m.vit)
        cli_usage_error(a, "--attention-png: the rollout follows a ViT's class token; a Swin model has none");
    if (att) cli_make_folder(a->verb, "--attention-png", att);
    classify_pngs(a, &m, (int)a->v[TOP_K].i, att);
    free_classifier(&m);
    return 0;
}
