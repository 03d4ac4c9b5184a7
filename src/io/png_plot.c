/* Loss curves as PNG images drawn with cairo: axes with ticks, the axis
 * titles (step, loss), the training series (blue) and the validation series
 * (red) with a legend. Written to a temporary file and renamed into place. */
#include <cairo.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../util/util.h"
#include "io_internal.h"

#define W 760
#define H 440
#define L 78 /* margins */
#define R 24
#define T 36
#define B 56
#define FONT 13.0

typedef struct {
    double x0, x1, y0, y1; /* data ranges */
} ranges;

static double px(const ranges *r, double x) { return L + (x - r->x0) / (r->x1 - r->x0) * (W - L - R); }
static double py(const ranges *r, double y) { return H - B - (y - r->y0) / (r->y1 - r->y0) * (H - T - B); }

static void text_at(cairo_t *cr, double x, double y, const char *s, double align) {
    cairo_text_extents_t e;
    cairo_text_extents(cr, s, &e);
    cairo_move_to(cr, x - align * e.x_advance, y);
    cairo_show_text(cr, s);
}

/* Axes, 5 ticks on each with their values, the axis titles. */
static void axes(cairo_t *cr, const ranges *r) {
    char num[32];
    cairo_set_source_rgb(cr, 0, 0, 0);
    cairo_set_line_width(cr, 1);
    cairo_move_to(cr, L, T), cairo_line_to(cr, L, H - B), cairo_line_to(cr, W - R, H - B);
    cairo_stroke(cr);
    for (int i = 0; i <= 4; i++) {
        double x = r->x0 + (r->x1 - r->x0) * i / 4, y = r->y0 + (r->y1 - r->y0) * i / 4;
        cairo_move_to(cr, px(r, x), H - B), cairo_line_to(cr, px(r, x), H - B + 5);
        cairo_move_to(cr, L - 5, py(r, y)), cairo_line_to(cr, L, py(r, y));
        cairo_stroke(cr);
        snprintf(num, sizeof num, "%.0f", x), text_at(cr, px(r, x), H - B + 19, num, 0.5);
        snprintf(num, sizeof num, "%.3g", y), text_at(cr, L - 8, py(r, y) + 4, num, 1.0);
    }
    text_at(cr, (L + W - R) / 2.0, H - 12, "step", 0.5);
    cairo_save(cr);
    cairo_translate(cr, 24, (T + H - B) / 2.0);
    cairo_rotate(cr, -1.5707963267948966); /* -pi/2 */
    text_at(cr, 0, 0, "loss", 0.5);
    cairo_restore(cr);
}

static void series(cairo_t *cr, const ranges *r, const double *x, const double *y, int n, double red, double green,
                   double blue) {
    int open = 0;
    cairo_set_source_rgb(cr, red, green, blue);
    cairo_set_line_width(cr, n > 400 ? 1.0 : 1.8);
    for (int i = 0; i < n; i++) {
        if (!isfinite(y[i])) continue;
        if (open) cairo_line_to(cr, px(r, x[i]), py(r, y[i]));
        else cairo_move_to(cr, px(r, x[i]), py(r, y[i])), open = 1;
    }
    if (open) cairo_stroke(cr);
}

static void legend(cairo_t *cr, int with_val) {
    static const char *const names[2] = {"training loss", "validation loss"};
    static const double rgb[2][3] = {{0.122, 0.467, 0.706}, {0.839, 0.153, 0.157}};
    for (int k = 0; k < 1 + with_val; k++) {
        double y = T + 4 + 18 * k;
        cairo_set_source_rgb(cr, rgb[k][0], rgb[k][1], rgb[k][2]);
        cairo_set_line_width(cr, 2.5);
        cairo_move_to(cr, W - R - 170, y), cairo_line_to(cr, W - R - 140, y);
        cairo_stroke(cr);
        cairo_set_source_rgb(cr, 0, 0, 0);
        text_at(cr, W - R - 132, y + 4, names[k], 0);
    }
}

static ranges data_ranges(const double *ax, const double *ay, int na, const double *bx, const double *by, int nb) {
    ranges r = {INFINITY, -INFINITY, INFINITY, -INFINITY};
    for (int i = 0; i < na + nb; i++) {
        double x = i < na ? ax[i] : bx[i - na], y = i < na ? ay[i] : by[i - na];
        if (!isfinite(y)) continue;
        r.x0 = fmin(r.x0, x), r.x1 = fmax(r.x1, x), r.y0 = fmin(r.y0, y), r.y1 = fmax(r.y1, y);
    }
    if (!isfinite(r.x0)) r.x0 = 0, r.y0 = 0;
    if (!(r.x1 > r.x0)) r.x1 = r.x0 + 1;
    if (!(r.y1 > r.y0)) r.y1 = r.y0 + 1;
    return r;
}

int tf_png_plot(const char *path, const double *ax, const double *ay, int na, const double *bx, const double *by,
                int nb) {
    ranges r = data_ranges(ax, ay, na, bx, by, nb);
    cairo_surface_t *s = cairo_image_surface_create(CAIRO_FORMAT_RGB24, W, H);
    cairo_t *cr = cairo_create(s);
    cairo_set_source_rgb(cr, 1, 1, 1);
    cairo_paint(cr);
    cairo_select_font_face(cr, "sans-serif", CAIRO_FONT_SLANT_NORMAL, CAIRO_FONT_WEIGHT_NORMAL);
    cairo_set_font_size(cr, FONT);
    axes(cr, &r);
    series(cr, &r, ax, ay, na, 0.122, 0.467, 0.706);
    series(cr, &r, bx, by, nb, 0.839, 0.153, 0.157);
    legend(cr, nb > 0);
    int rc = tf_png_write(s, (int)cairo_status(cr), path);
    cairo_destroy(cr), cairo_surface_destroy(s);
    return rc;
}

static cairo_status_t to_buf(void *closure, const unsigned char *data, unsigned int n) {
    return tf_buf_put(closure, data, n) ? CAIRO_STATUS_NO_MEMORY : CAIRO_STATUS_SUCCESS;
}

int tf_png_write(struct _cairo_surface *s, int st, const char *path) {
    tf_buf b = {0};
    if (st == CAIRO_STATUS_SUCCESS) st = (int)cairo_surface_write_to_png_stream(s, to_buf, &b);
    int rc = st != CAIRO_STATUS_SUCCESS ? tf_set_error("%s: cannot draw the PNG: %s", path,
                                                       cairo_status_to_string((cairo_status_t)st))
                                        : tf_write_file(path, b.p, b.n);
    free(b.p);
    return rc;
}
