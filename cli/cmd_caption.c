/* tformer caption: a captioner folder (any family with the caption capability: tformer train
 * --arch caption) on PNG files, one caption a line ("FILE<TAB>caption"), greedy or by beam
 * search (--beam N); with --attention-png DIR, the deck's figure for each file: the image,
 * then one panel per generated word with that word's attention over the image's grid. */
#include <stdlib.h>
#include <string.h>

#include "cli.h"

enum { MODEL, BEAM, MAX_TOKENS, ATTENTION_PNG, RESIZE, THREADS, PRECISION, RGB, GRAYSCALE, ATTENTION_SCALE };
const cli_flag cmd_caption_flags[] = {
    [MODEL] = {"model", CLI_STRING, "DIR", NULL, "a captioner folder (a run folder of train --arch caption, or best/)"},
    [BEAM] = {"beam", CLI_INT, "N", "1", "beam search of width N (1: greedy)"},
    [MAX_TOKENS] = {"max-tokens", CLI_INT, "N", "0", "words at most, the end included (0: the model's context - 1)"},
    [ATTENTION_PNG] = {"attention-png", CLI_STRING, "DIR", "",
                       "write DIR/<name>.png: the image, then each word's attention over the image's grid"},
    [RESIZE] = CLI_RESIZE_ROW,
    [THREADS] = CLI_THREADS_ROW,
    [PRECISION] = CLI_PRECISION_ROW,
    [RGB] = CLI_RGB_ROW,
    [GRAYSCALE] = CLI_GRAYSCALE_ROW,
    [ATTENTION_SCALE] = CLI_ATTENTION_SCALE_ROW("auto"),
    CLI_END,
};

/* DIR/<file's base name without .png>.png: the image, then a panel per word (the end's last). */
static void attention_png(const cli_verb *v, const tf_images *im, const tf_caption_result *r, const char *file,
                          const char *dir, int fixed) {
    const char *base = strrchr(file, '/') ? strrchr(file, '/') + 1 : file;
    size_t n = strlen(base) > 4 && !strcmp(base + strlen(base) - 4, ".png") ? strlen(base) - 4 : strlen(base);
    char path[4200], title[4400];
    const char **labels = malloc(((size_t)r->n_words + 1) * sizeof *labels);
    if (!labels) cli_die(v, "out of memory");
    for (int i = 0; i < r->n_words; i++) labels[i] = r->words[i];
    labels[r->n_words] = "</s>";
    snprintf(path, sizeof path, "%s/%.*s.png", dir, (int)n, base);
    snprintf(title, sizeof title, "%s: %s", file, r->text);
    int64_t cells = (int64_t)r->grid * r->grid;
    tf_image_attention_plot p = {im->pixels, im->channels, im->height, im->width, r->attention, r->grid, r->grid,
                                 im->height / r->grid, r->attention + cells, r->n_words, title, labels, fixed};
    if (tf_plot_image_attention(path, &p)) cli_die(v, tf_error());
    free(labels);
    fprintf(stderr, "wrote %s\n", path);
}

int cmd_caption(const cli_args *a) {
    tf_set_threads(cli_threads(&a->v[THREADS]));
    if (a->v[BEAM].i < 1) cli_usage_error(a, "--beam %lld: 1 or more (1: greedy)", a->v[BEAM].i);
    if (a->v[BEAM].i > TF_GENERATE_MAX_BEAM) cli_usage_error(a, "--beam at most %d", TF_GENERATE_MAX_BEAM);
    const char *att = a->v[ATTENTION_PNG].text && *a->v[ATTENTION_PNG].text ? a->v[ATTENTION_PNG].text : NULL;
    tf_model *m = tf_model_load(a->v[MODEL].text,
                                &(tf_model_opts){.precision = cli_precision(a, PRECISION), .require = TF_CAP_CAPTION});
    if (!m || tf_model_require(m, TF_CAP_CAPTION) || tf_model_check_finite(m)) cli_die(a->verb, tf_error());
    int fixed = !cli_attention_scale(a, ATTENTION_SCALE, ATTENTION_PNG);
    if (att) cli_make_folder(a->verb, "--attention-png", att);
    int channels, size, unused;
    tf_model_image_shape(m, &channels, &size, &unused);
    tf_generate_opts o = tf_generate_opts_default();
    o.temperature = 0, o.eos_id = -1, o.max_tokens = (int)(a->v[MAX_TOKENS].i < 1 << 20 ? a->v[MAX_TOKENS].i : 1 << 20);
    o.beam = a->v[BEAM].i > 1 ? (int)a->v[BEAM].i : 0;
    int colour = cli_colour(a, RGB, GRAYSCALE, channels);
    char extra[160];
    snprintf(extra, sizeof extra, "%s; %s", o.beam ? "beam search (--beam)" : "greedy (no --beam)",
             cli_colour_said(a, RGB, GRAYSCALE, channels));
    cli_say(a->verb, &(cli_said){tf_model_family(m)->name, a->v[MODEL].text, tf_model_tokenizer(m), 0, tf_model_precision(m), extra});
    for (int i = 0; i < a->n_operands; i++) {
        tf_images im;
        char msg[4400];
        cli_read_png_sized(a->verb, a->operands[i], size, colour, channels, a->v[RESIZE].given, &im);
        tf_caption_result r;
        if (tf_model_caption(m, im.pixels, &o, &r)) cli_die(a->verb, tf_error());
        printf("%s\t%s\n", a->operands[i], r.text);
        if (att && !r.attention) {
            snprintf(msg, sizeof msg, "--attention-png: %s attends to nothing (the baseline: attention false)",
                     a->v[MODEL].text);
            cli_die(a->verb, msg);
        }
        if (att) attention_png(a->verb, &im, &r, a->operands[i], att, fixed);
        tf_caption_result_free(&r);
        tf_images_free(&im);
    }
    tf_model_free(m);
    return 0;
}
