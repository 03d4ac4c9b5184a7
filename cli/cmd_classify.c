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

#include <cjson/cJSON.h>

#include "cli.h"

enum { MODEL, DATA_DIR, SPLIT, DATA, BATCH, HFLIP_TTA, TOP_K, ATTENTION_PNG, THREADS, JSON, RESIZE, PRECISION, RGB,
       GRAYSCALE, ATTENTION_SCALE };
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
    [JSON] = CLI_JSON_ROW,
    [RESIZE] = CLI_RESIZE_ROW,
    [PRECISION] = CLI_PRECISION_ROW,
    [RGB] = CLI_RGB_ROW,
    [GRAYSCALE] = CLI_GRAYSCALE_ROW,
    [ATTENTION_SCALE] = CLI_ATTENTION_SCALE_ROW("auto"),
    CLI_END,
};

static const char *opt(const cli_val *v) { return v->text && *v->text ? v->text : NULL; }

/* An image classifier folder (any family with classify-image), its weights checked finite. */
static tf_model *load_classifier(const cli_verb *v, const char *model_dir, tf_precision precision) {
    tf_model *m = tf_model_load(model_dir, &(tf_model_opts){.precision = precision, .require = TF_CAP_CLASSIFY_IMAGE});
    if (!m || tf_model_require(m, TF_CAP_CLASSIFY_IMAGE) || tf_model_check_finite(m)) cli_die(v, tf_error());
    return m;
}

/* The set's scores as one JSON object (docs/json.md). */
static void score_json(const cli_verb *v, const tf_model *m, const tf_images *s, const char *name, int hflip,
                       double loss, int64_t correct, const int64_t *hit, const int64_t *all, int64_t L) {
    cJSON *j = cli_json_object(v, NULL, NULL), *per;
    cli_json_str(v, j, "data", name), cli_json_bool(v, j, "hflip_tta", hflip);
    cli_json_num(v, j, "accuracy", (double)correct / (double)s->n);
    cli_json_num(v, j, "correct", (double)correct), cli_json_num(v, j, "total", (double)s->n);
    cli_json_num(v, j, "loss", loss);
    per = cli_json_array(v, j, "per_class");
    for (int64_t k = 0; k < L; k++) {
        char buf[32];
        if (!all[k]) continue;
        cJSON *c = cli_json_object(v, per, NULL);
        cli_json_str(v, c, "label", tf_model_label(m, (int)k, buf, sizeof buf));
        cli_json_num(v, c, "accuracy", (double)hit[k] / (double)all[k]);
        cli_json_num(v, c, "correct", (double)hit[k]), cli_json_num(v, c, "total", (double)all[k]);
    }
    cli_json_print(v, j);
}

/* Accuracy, loss and per-class accuracy of the model on a labelled set (json: as one JSON object). */
static void score_set(const cli_verb *v, const tf_model *m, const tf_images *s, const char *name, int batch,
                      int hflip, int json) {
    int channels, size, n_labels;
    tf_model_image_shape(m, &channels, &size, &n_labels);
    int32_t *pred = malloc((size_t)s->n * sizeof *pred);
    int64_t L = n_labels, correct = 0, *hit = calloc((size_t)L, sizeof *hit), *all = calloc((size_t)L, sizeof *all);
    double loss;
    if (!pred || !hit || !all) cli_die(v, "out of memory");
    if (tf_model_classify_images(m, s->pixels, s->n, batch, hflip, s->labels, pred, NULL, &loss, &correct))
        cli_die(v, tf_error());
    for (int64_t i = 0; i < s->n; i++) all[s->labels[i]]++, hit[s->labels[i]] += pred[i] == s->labels[i];
    if (json) {
        score_json(v, m, s, name, hflip, loss, correct, hit, all, L);
        free(pred), free(hit), free(all);
        return;
    }
    printf("accuracy %.4f (%lld of %lld images of %s%s) | loss %.4f\n", (double)correct / (double)s->n,
           (long long)correct, (long long)s->n, name, hflip ? ", each averaged with its mirror image" : "", loss);
    for (int64_t k = 0; k < L; k++) {
        char buf[32];
        if (all[k]) printf("  %-16s %.4f (%lld of %lld)\n", tf_model_label(m, (int)k, buf, sizeof buf),
                           (double)hit[k] / (double)all[k], (long long)hit[k], (long long)all[k]);
    }
    free(pred), free(hit), free(all);
}

void cli_score_images(const cli_verb *v, const char *model_dir, const char *dir, const char *split, const char *csv,
                      int batch, int hflip, int json, tf_precision precision) {
    tf_model *m = load_classifier(v, model_dir, precision);
    cli_say(v, &(cli_said){tf_model_family(m)->name, model_dir, NULL, 0, precision, hflip ? "--hflip-tta" : NULL});
    int channels, size, n_labels;
    tf_model_image_shape(m, &channels, &size, &n_labels);
    tf_images s;
    char name[4200];
    if (dir ? tf_images_read_dir(dir, split, n_labels, &s) : tf_images_read_digits(csv, &s)) cli_die(v, tf_error());
    if (s.channels != channels || s.height != size || s.width != size) {
        snprintf(name, sizeof name, "%s: images of %dx%d with %d channel(s); the model takes %dx%d with %d",
                 dir ? dir : csv, s.width, s.height, s.channels, size, size, channels);
        cli_die(v, name);
    }
    snprintf(name, sizeof name, "%s%s%s", dir ? dir : csv, dir ? " " : "", dir ? split : "");
    score_set(v, m, &s, name, batch, hflip, json);
    tf_images_free(&s);
    tf_model_free(m);
}

/* DIR/<file's base name without .png>.png: where the model looked (maps: the rollout, then each head). */
static void attention_png(const cli_args *a, const tf_model *m, const tf_images *im, const float *maps,
                          const char *file, const char *dir, const char *title) {
    const cli_verb *v = a->verb;
    int g, H, patch;
    if (tf_model_attention_grid(m, &g, &H, &patch)) cli_die(v, tf_error());
    const char *base = strrchr(file, '/') ? strrchr(file, '/') + 1 : file;
    size_t n = strlen(base) > 4 && !strcmp(base + strlen(base) - 4, ".png") ? strlen(base) - 4 : strlen(base);
    char path[4200];
    snprintf(path, sizeof path, "%s/%.*s.png", dir, (int)n, base);
    tf_image_attention_plot p = {im->pixels, im->channels, im->height, im->width, maps, g, g, patch,
                                 maps + g * g, H, title, NULL, !cli_attention_scale(a, ATTENTION_SCALE, ATTENTION_PNG)};
    if (tf_plot_image_attention(path, &p)) cli_die(v, tf_error());
    fprintf(stderr, "wrote %s\n", path);
}

/* Image 0's labels by probability, the k likeliest as "label\tprobability" after the file's name
 * (into the JSON array js instead when given: {"file", "top": [{"label", "probability"}]}). */
static void print_top(const cli_verb *v, const tf_model *m, int L, const float *logits, const char *file, int k,
                      cJSON *js, char *title, size_t n) {
    float p[L > 0 ? L : 1], hi = -INFINITY, sum = 0;
    for (int j = 0; j < L; j++) hi = fmaxf(hi, logits[j]);
    for (int j = 0; j < L; j++) sum += p[j] = expf(logits[j] - hi);
    cJSON *img = js ? cli_json_object(v, js, NULL) : NULL, *top = NULL;
    if (img) cli_json_str(v, img, "file", file), top = cli_json_array(v, img, "top");
    else printf("%s", file);
    for (int r = 0; r < k && r < L; r++) {
        int best = 0;
        for (int j = 1; j < L; j++) best = p[j] > p[best] ? j : best;
        char buf[32];
        const char *name = tf_model_label(m, best, buf, sizeof buf);
        if (top) {
            cJSON *e = cli_json_object(v, top, NULL);
            cli_json_str(v, e, "label", name), cli_json_num(v, e, "probability", p[best] / sum);
        } else printf("\t%s\t%.4f", name, p[best] / sum);
        if (r == 0) snprintf(title, n, "%s: %s %.4f", file, name, p[best] / sum);
        p[best] = -1;
    }
    if (!img) printf("\n");
}

/* Each PNG file: its k likeliest labels with their probabilities; with
 * attention_dir, the picture of where the model looked. */
static void classify_pngs(const cli_args *a, const tf_model *m, int k, const char *attention_dir) {
    cJSON *j = a->v[JSON].given ? cli_json_object(a->verb, NULL, NULL) : NULL;
    cJSON *js = j ? cli_json_array(a->verb, j, "images") : NULL;
    int channels, size, L, g = 0, H = 0, patch;
    tf_model_image_shape(m, &channels, &size, &L);
    if (attention_dir && tf_model_attention_grid(m, &g, &H, &patch)) cli_die(a->verb, tf_error());
    float *logits = malloc((size_t)(L > 0 ? L : 1) * sizeof *logits);
    float *maps = attention_dir ? malloc((size_t)g * (size_t)g * (size_t)(H + 1) * sizeof *maps) : NULL;
    if (!logits || (attention_dir && !maps)) cli_die(a->verb, "out of memory");
    for (int i = 0; i < a->n_operands; i++) {
        tf_images im;
        cli_read_png_sized(a->verb, a->operands[i], size, cli_colour(a, RGB, GRAYSCALE, channels), channels,
                           a->v[RESIZE].given, &im);
        if (im.height != size || im.width != size || im.channels != channels) {
            char msg[4200];
            snprintf(msg, sizeof msg, "%s: an image of %dx%d; the model takes %dx%d with %d channel(s)", a->operands[i],
                     im.width, im.height, size, size, channels);
            cli_die(a->verb, msg);
        }
        if (tf_model_image_logits(m, im.pixels, logits, maps)) cli_die(a->verb, tf_error());
        char title[4300];
        print_top(a->verb, m, L, logits, a->operands[i], k, js, title, sizeof title);
        if (attention_dir) attention_png(a, m, &im, maps, a->operands[i], attention_dir, title);
        tf_images_free(&im);
    }
    free(logits), free(maps);
    if (j) cli_json_print(a->verb, j);
}

/* Each clip folder: its frames (PNG files in name order), its likeliest label and that label's probability
 * (tf_model_classify_clips and tf_model_top, the numbers Python's Model.classify gives). */
static void classify_clips(const cli_args *a, const tf_model *m) {
    int frames, channels, size, L = tf_model_n_labels(m);
    int tube = tf_model_clip_tubelet(m);
    tf_model_clip_shape(m, &frames, &channels, &size);
    cJSON *j = a->v[JSON].given ? cli_json_object(a->verb, NULL, NULL) : NULL;
    cJSON *js = j ? cli_json_array(a->verb, j, "clips") : NULL;
    float *logits = malloc((size_t)(L > 0 ? L : 1) * sizeof *logits);
    char msg[4400];
    if (!logits) cli_die(a->verb, "out of memory");
    for (int i = 0; i < a->n_operands; i++) {
        tf_images clip;
        if (tf_images_read_clip(a->operands[i], channels == 1 ? 1 : 3, &clip)) cli_die(a->verb, tf_error());
        msg[0] = 0;
        if (clip.n < tube)
            snprintf(msg, sizeof msg, "%s: %lld frame(s), fewer than one tubelet of %d frames", a->operands[i],
                     (long long)clip.n, tube);
        else if (clip.n != frames)
            snprintf(msg, sizeof msg, "%s: %lld frames; the model takes clips of num_frames %d", a->operands[i],
                     (long long)clip.n, frames);
        else if (clip.height != size || clip.width != size || clip.channels != channels)
            snprintf(msg, sizeof msg, "%s: frames of %dx%d; the model takes %dx%d with %d channel(s)", a->operands[i],
                     clip.width, clip.height, size, size, channels);
        if (*msg) cli_die(a->verb, msg);
        int32_t pred;
        float prob;
        char buf[32];
        if (tf_model_classify_clips(m, clip.pixels, 1, logits)) cli_die(a->verb, tf_error());
        tf_model_top(logits, L, 1, &pred, &prob);
        if (js) {
            cJSON *e = cli_json_object(a->verb, js, NULL);
            cli_json_str(a->verb, e, "clip", a->operands[i]);
            cli_json_str(a->verb, e, "label", tf_model_label(m, pred, buf, sizeof buf));
            cli_json_num(a->verb, e, "probability", prob);
        } else printf("%s\t%s\t%.4f\n", a->operands[i], tf_model_label(m, pred, buf, sizeof buf), prob);
        tf_images_free(&clip);
    }
    free(logits);
    if (j) cli_json_print(a->verb, j);
}

static void classify_video(const cli_args *a, const tf_model *m) {
    if (!a->n_operands)
        cli_usage_error(a, "a video model classifies clips: give clip folders (PNG frames), not --data-dir or --data");
    if (tf_model_require(m, TF_CAP_CLASSIFY_CLIP) || tf_model_check_finite(m)) cli_die(a->verb, tf_error());
    classify_clips(a, m);
}

int cmd_classify(const cli_args *a) {
    tf_set_threads(cli_threads(&a->v[THREADS]));
    const char *dir = opt(&a->v[DATA_DIR]), *csv = opt(&a->v[DATA]), *split = a->v[SPLIT].text;
    if ((dir != NULL) + (csv != NULL) + (a->n_operands > 0) != 1)
        cli_usage_error(a, "give one of --data-dir DIR, --data FILE or PNG files");
    if (a->v[SPLIT].given && !dir) cli_usage_error(a, "--split goes with --data-dir");
    if (strcmp(split, "t10k") && strcmp(split, "train")) cli_usage_error(a, "--split expects t10k or train, got '%s'", split);
    if (a->v[BATCH].i < 1 || a->v[BATCH].i > CLI_BATCH_MAX)
        cli_usage_error(a, "--batch expects an integer in [1,%d], got %lld", CLI_BATCH_MAX, a->v[BATCH].i);
    const char *att = opt(&a->v[ATTENTION_PNG]);
    if (a->v[TOP_K].i < 1) cli_usage_error(a, "--top-k must be at least 1");
    if (a->n_operands && a->v[HFLIP_TTA].given) cli_usage_error(a, "--hflip-tta goes with a labelled set (--data-dir or --data)");
    if (!a->n_operands && (a->v[TOP_K].given || att || a->v[RESIZE].given || a->v[RGB].given || a->v[GRAYSCALE].given))
        cli_usage_error(a, "--top-k, --attention-png, --resize, --rgb and --grayscale go with PNG files, not with a "
                        "labelled set");
    cli_attention_scale(a, ATTENTION_SCALE, ATTENTION_PNG);
    tf_precision precision = cli_precision(a, PRECISION);
    tf_model *m = tf_model_load(a->v[MODEL].text, &(tf_model_opts){.precision = precision,
                                .require = TF_CAP_CLASSIFY_IMAGE | TF_CAP_CLASSIFY_CLIP});
    if (!m) cli_die(a->verb, tf_error());
    if (tf_model_family(m)->caps & TF_CAP_CLASSIFY_CLIP) { /* a video family, whatever its folder's head */
        if (a->v[TOP_K].given || att || a->v[HFLIP_TTA].given || a->v[RESIZE].given || a->v[RGB].given ||
            a->v[GRAYSCALE].given)
            cli_usage_error(a, "--top-k, --attention-png, --hflip-tta, --resize, --rgb and --grayscale are image "
                            "settings, not a video model's");
        cli_say(a->verb, &(cli_said){tf_model_family(m)->name, a->v[MODEL].text, NULL, 0, precision, NULL});
        classify_video(a, m);
        return tf_model_free(m), 0;
    }
    if (tf_model_require(m, TF_CAP_CLASSIFY_IMAGE) || tf_model_check_finite(m)) cli_die(a->verb, tf_error());
    if (!a->n_operands) {
        tf_model_free(m);
        cli_score_images(a->verb, a->v[MODEL].text, dir, split, csv, (int)a->v[BATCH].i, a->v[HFLIP_TTA].given,
                         a->v[JSON].given, precision);
        return 0;
    }
    int channels, size, n_labels, g, heads, patch;
    tf_model_image_shape(m, &channels, &size, &n_labels);
    if (a->v[TOP_K].i > n_labels)
        cli_usage_error(a, "--top-k %lld: the model has %d labels", (long long)a->v[TOP_K].i, n_labels);
    if (att && tf_model_attention_grid(m, &g, &heads, &patch))
        cli_usage_error(a, "--attention-png: %s", tf_error());
    if (att) cli_make_folder(a->verb, "--attention-png", att);
    cli_colour(a, RGB, GRAYSCALE, channels);
    cli_say(a->verb, &(cli_said){tf_model_family(m)->name, a->v[MODEL].text, NULL, 0, precision,
                                 cli_colour_said(a, RGB, GRAYSCALE, channels)});
    classify_pngs(a, m, (int)a->v[TOP_K].i, att);
    tf_model_free(m);
    return 0;
}
