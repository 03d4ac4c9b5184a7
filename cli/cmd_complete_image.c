/* tformer complete-image: an ImageGPT folder (tformer train --arch imagegpt)
 * completes a PNG image from its top rows, N times, through the shared
 * decoder interface (sampling); the PNG grid written is the deck's: the
 * given rows (the rest grey) | N completions | the original. */
#include <stdlib.h>
#include <string.h>

#include "cli.h"

enum { MODEL, INPUT, KEEP_ROWS, SAMPLES, OUT, SCALE, RESIZE, THREADS, RGB, GRAYSCALE };
const cli_flag cmd_complete_image_flags[] = {
    [MODEL] = {"model", CLI_STRING, "DIR", NULL, "an ImageGPT folder (config.json, model.safetensors, image_tokens.json)"},
    [INPUT] = {"input", CLI_STRING, "IMG.png", NULL, "the image to complete (grey or RGB, of the model's size)"},
    [KEEP_ROWS] = {"keep-rows", CLI_INT, "K", NULL, "rows kept from the top (0: unconditional samples); the rest are sampled"},
    [SAMPLES] = {"samples", CLI_INT, "N", "4", "completions in the grid"},
    [OUT] = {"out", CLI_STRING, "grid.png", NULL, "the PNG grid: given rows | N completions | original"},
    [SCALE] = {"scale", CLI_INT, "S", "4", "each pixel drawn S x S in the grid"},
    [RESIZE] = {"resize", CLI_SWITCH, NULL, "off", "resize an image of another size to the model's (box filter) instead of refusing it"},
    [THREADS] = CLI_THREADS_ROW,
    [RGB] = CLI_RGB_ROW,
    [GRAYSCALE] = CLI_GRAYSCALE_ROW,
    CLI_END,
};

/* The sampling options: ranges and --help from one table. */
#define R(m, type, range, help) TF_FIELD_ROW(tf_generate_opts, m, type, #m, NULL, range, NULL, help, 0, NULL)
static const tf_field OPTION_ROWS[] = {
    R(temperature, TF_FIELD_FLOAT, "[0,inf)", "0: greedy (every completion the same)"),
    R(top_k, TF_FIELD_INT, "[0,inf)", "draw from the k most likely colours; 0: all"),
    R(top_p, TF_FIELD_FLOAT, "(0,1]", "draw from the most likely colours up to this probability; 1: all"),
    R(seed, TF_FIELD_UINT64, NULL, "the draws' seed; completion i draws with seed + i"),
};
#undef R
static const tf_field_table OPTIONS = {"sampling", OPTION_ROWS, (int)(sizeof OPTION_ROWS / sizeof OPTION_ROWS[0])};

static tf_generate_opts g_opts;
static tf_fields g_tables[1];

int cmd_complete_image_tables(const tf_fields **t) {
    g_opts = tf_generate_opts_default();
    g_tables[0] = (tf_fields){&OPTIONS, &g_opts};
    *t = g_tables;
    return 1;
}

/* The input as the model's size (channels, height, width): refused (or resized with --resize) when it differs. */
static void read_input(const cli_args *a, const int *shape, tf_images *im) {
    const char *path = a->v[INPUT].text;
    int w, h; /* the header's size, checked before anything is decoded */
    if (tf_images_png_size(path, &w, &h)) cli_die(a->verb, tf_error());
    if ((h != shape[1] || w != shape[2]) && !a->v[RESIZE].given) {
        char msg[4300];
        snprintf(msg, sizeof msg, "%s: an image of %dx%d; the model takes %dx%d (give --resize to resize it)", path, w,
                 h, shape[2], shape[1]);
        cli_die(a->verb, msg);
    }
    int channels = shape[0] == 1 ? 1 : 3;
    cli_read_png(a->verb, path, cli_colour(a, RGB, GRAYSCALE, channels), channels, im);
    if (im->height == shape[1] && im->width == shape[2]) return;
    tf_images r;
    if (tf_images_resize(im, shape[1], shape[2], &r)) cli_die(a->verb, tf_error());
    tf_images_free(im);
    *im = r;
}

int cmd_complete_image(const cli_args *a) {
    const cli_verb *v = a->verb;
    cli_apply(a);
    tf_set_threads(cli_threads(&a->v[THREADS]));
    const char *dir = a->v[MODEL].text;
    int n = (int)a->v[SAMPLES].i, keep = (int)a->v[KEEP_ROWS].i, shape[3];
    if (n < 1 || n > 64) cli_usage_error(a, "--samples must lie in [1,64], got %d", n);
    if (a->v[SCALE].i < 1 || a->v[SCALE].i > 64) cli_usage_error(a, "--scale must lie in [1,64]");
    tf_model *m = tf_model_load(dir, &(tf_model_opts){.require = TF_CAP_COMPLETE_IMAGE});
    if (!m || tf_model_completion_shape(m, &shape[0], &shape[1], &shape[2])) cli_die(v, tf_error());
    cli_check_model_weights(v, dir, m);
    if (keep >= shape[1])
        cli_usage_error(a, "--keep-rows %d is out of range: the model's images have %d rows (give 0 to %d)", keep,
                        shape[1], shape[1] - 1);
    cli_say(v, &(cli_said){NULL, dir, NULL, 0, 0, cli_colour_said(a, RGB, GRAYSCALE, shape[0] == 1 ? 1 : 3)});
    tf_images im, row = {n + 2, shape[0], shape[1], shape[2], NULL, NULL, 0}, grid;
    read_input(a, shape, &im);
    int64_t HW = (int64_t)shape[1] * shape[2], per = shape[0] * HW;
    if (!(row.pixels = malloc((size_t)((n + 2) * per) * sizeof(float)))) cli_die(v, "out of memory");
    /* the row of the grid: the given rows (the rest mid-grey), the completions, the original */
    for (int64_t c = 0; c < shape[0]; c++)
        for (int64_t p = 0; p < HW; p++) row.pixels[c * HW + p] = p < (int64_t)keep * shape[2] ? im.pixels[c * HW + p] : 0.5f;
    for (int i = 0; i < n; i++) {
        tf_generate_opts o = g_opts;
        o.seed = g_opts.seed + (uint64_t)i;
        if (tf_model_complete_image(m, im.pixels, keep, &o, row.pixels + (1 + i) * per)) cli_die(v, tf_error());
    }
    memcpy(row.pixels + (n + 1) * per, im.pixels, (size_t)per * sizeof(float));
    if (tf_images_grid(&row, n + 2, (int)a->v[SCALE].i, 2, 1.0f, &grid) || tf_images_write_png(&grid, 0, a->v[OUT].text))
        cli_die(v, tf_error());
    printf("%s: %d completion(s) of %s from its top %d of %d rows (given | completions | original)\n", a->v[OUT].text, n,
           a->v[INPUT].text, keep, shape[1]);
    tf_images_free(&grid), tf_images_free(&row), tf_images_free(&im);
    tf_model_free(m);
    return 0;
}
