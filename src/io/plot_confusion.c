/* A confusion matrix as a PNG drawn with cairo: gold labels down the left,
 * predicted labels along the bottom (rotated), the count in each cell, a
 * white-to-blue colour scale with its range at the right and a title.
 * Written to a temporary file and renamed into place. */
#include <cairo.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "draw.h"
#include "io_internal.h"
#include "tformer/plot.h"

#define FONT 13.0
#define PAD 16.0
#define SCALE_W 18.0

typedef struct {
    double cell, left, top, grid; /* cell size; the grid's origin and side */
} layout;

/* White (0) to dark blue (1), as matplotlib's Blues. */
static void blues(double v, double rgb[3]) {
    static const double lo[3] = {0.969, 0.984, 1.0}, hi[3] = {0.031, 0.188, 0.420};
    v = v < 0 ? 0 : v > 1 ? 1 : v;
    for (int k = 0; k < 3; k++) rgb[k] = lo[k] + (hi[k] - lo[k]) * v;
}

static void draw_cells(cairo_t *cr, const layout *g, const int64_t *m, int n, int64_t max) {
    char num[32];
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) {
            int64_t c = m[(size_t)i * n + j];
            double rgb[3], v = max ? (double)c / (double)max : 0;
            blues(v, rgb);
            cairo_set_source_rgb(cr, rgb[0], rgb[1], rgb[2]);
            cairo_rectangle(cr, g->left + j * g->cell, g->top + i * g->cell, g->cell, g->cell);
            cairo_fill(cr);
            snprintf(num, sizeof num, "%lld", (long long)c);
            if (v > 0.5) cairo_set_source_rgb(cr, 1, 1, 1);
            else cairo_set_source_rgb(cr, 0, 0, 0);
            double w = tf_draw_text_width(cr, num);
            if (w < g->cell - 2) tf_draw_text(cr, g->left + (j + 0.5) * g->cell - w / 2, g->top + (i + 0.5) * g->cell + FONT / 3, num);
        }
}

static void draw_labels(cairo_t *cr, const layout *g, const char *const *labels, int n) {
    cairo_set_source_rgb(cr, 0, 0, 0);
    for (int i = 0; i < n; i++) { /* gold: right-aligned at the left */
        double w = tf_draw_text_width(cr, labels[i]);
        tf_draw_text(cr, g->left - 6 - w, g->top + (i + 0.5) * g->cell + FONT / 3, labels[i]);
    }
    for (int j = 0; j < n; j++) { /* predicted: rotated under the grid */
        cairo_save(cr);
        cairo_translate(cr, g->left + (j + 0.5) * g->cell + FONT / 3, g->top + g->grid + 6);
        cairo_rotate(cr, 3.14159265358979 / 2);
        tf_draw_text(cr, 0, 0, labels[j]);
        cairo_restore(cr);
    }
}

static void draw_scale(cairo_t *cr, const layout *g, int64_t max) {
    double x = g->left + g->grid + PAD, steps = 64, rgb[3];
    for (int k = 0; k < steps; k++) {
        blues(1 - k / (steps - 1), rgb);
        cairo_set_source_rgb(cr, rgb[0], rgb[1], rgb[2]);
        cairo_rectangle(cr, x, g->top + k * g->grid / steps, SCALE_W, g->grid / steps + 1);
        cairo_fill(cr);
    }
    char num[32];
    cairo_set_source_rgb(cr, 0, 0, 0);
    snprintf(num, sizeof num, "%lld", (long long)max);
    tf_draw_text(cr, x + SCALE_W + 4, g->top + FONT, num);
    tf_draw_text(cr, x + SCALE_W + 4, g->top + g->grid, "0");
}

static void draw_axes_titles(cairo_t *cr, const layout *g, const char *title, double w) {
    cairo_set_source_rgb(cr, 0, 0, 0);
    cairo_set_font_size(cr, FONT + 3);
    tf_draw_text(cr, (w - tf_draw_text_width(cr, title)) / 2 > 4 ? (w - tf_draw_text_width(cr, title)) / 2 : 4, PAD + FONT, title);
    cairo_set_font_size(cr, FONT);
    tf_draw_text(cr, PAD, g->top - 8, "gold \\ predicted");
}

/* Sizes from the longest label. */
static layout plan(cairo_t *cr, const char *const *labels, int n, const char *title, double *w, double *h, int64_t max) {
    double longest = 0;
    for (int i = 0; i < n; i++) longest = tf_draw_text_width(cr, labels[i]) > longest ? tf_draw_text_width(cr, labels[i]) : longest;
    char num[32];
    snprintf(num, sizeof num, "%lld", (long long)max);
    layout g;
    g.cell = n <= 12 ? 48 : n <= 40 ? 600.0 / n : 15;
    g.left = PAD + longest + 8, g.top = PAD * 2 + FONT * 3, g.grid = g.cell * n;
    *w = g.left + g.grid + PAD + SCALE_W + 8 + tf_draw_text_width(cr, num) + PAD;
    *h = g.top + g.grid + 8 + longest + PAD;
    cairo_set_font_size(cr, FONT + 3);
    double tw = tf_draw_text_width(cr, title) + 2 * PAD;
    cairo_set_font_size(cr, FONT);
    if (*w < tw) *w = tw;
    if (*w < 320) *w = 320;
    return g;
}

int tf_plot_confusion(const char *path, const int64_t *m, const char *const *labels, int n, const char *title) {
    if (n < 1 || n > 1000) return tf_set_error("%s: a confusion matrix of %d labels", path, n);
    int64_t max = 0;
    for (size_t i = 0; i < (size_t)n * (size_t)n; i++) max = m[i] > max ? m[i] : max;
    cairo_surface_t *probe = cairo_image_surface_create(CAIRO_FORMAT_RGB24, 1, 1);
    cairo_t *cr = cairo_create(probe);
    cairo_set_font_size(cr, FONT);
    double w, h;
    cairo_select_font_face(cr, "sans-serif", CAIRO_FONT_SLANT_NORMAL, CAIRO_FONT_WEIGHT_NORMAL);
    layout g = plan(cr, labels, n, title ? title : "", &w, &h, max);
    cairo_destroy(cr), cairo_surface_destroy(probe);
    cairo_surface_t *s = cairo_image_surface_create(CAIRO_FORMAT_RGB24, (int)w, (int)h);
    cr = cairo_create(s);
    cairo_set_source_rgb(cr, 1, 1, 1);
    cairo_paint(cr);
    cairo_select_font_face(cr, "sans-serif", CAIRO_FONT_SLANT_NORMAL, CAIRO_FONT_WEIGHT_NORMAL);
    cairo_set_font_size(cr, FONT);
    draw_cells(cr, &g, m, n, max);
    draw_labels(cr, &g, labels, n);
    draw_scale(cr, &g, max);
    draw_axes_titles(cr, &g, title ? title : "", w);
    int rc = tf_png_write(s, (int)cairo_status(cr), path);
    cairo_destroy(cr), cairo_surface_destroy(s);
    return rc;
}
