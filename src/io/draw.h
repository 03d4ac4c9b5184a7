/* Private: cairo helpers shared by the PNG plots (png_plot.c,
 * plot_confusion.c, plot_attention.c, plot_image_attention.c). */
#ifndef TF_IO_DRAW_H
#define TF_IO_DRAW_H

#include <cairo.h>
#include <math.h>

/* How far s advances the pen, in user units. */
static inline double tf_draw_text_width(cairo_t *cr, const char *s) {
    cairo_text_extents_t e;
    cairo_text_extents(cr, s, &e);
    return e.x_advance;
}

/* s with its baseline starting at (x, y). */
static inline void tf_draw_text(cairo_t *cr, double x, double y, const char *s) {
    cairo_move_to(cr, x, y);
    cairo_show_text(cr, s);
}

/* matplotlib's viridis through five of its colours; grey for a non-number. */
static inline void tf_draw_viridis(double v, double rgb[3]) {
    static const double c[5][3] = {{0.267, 0.005, 0.329}, {0.229, 0.322, 0.546}, {0.128, 0.567, 0.551},
                                   {0.369, 0.789, 0.383}, {0.993, 0.906, 0.144}};
    if (!isfinite(v)) {
        rgb[0] = rgb[1] = rgb[2] = 0.8;
        return;
    }
    v = v < 0 ? 0 : v > 1 ? 1 : v;
    int k = v >= 1 ? 3 : (int)(v * 4);
    double f = v * 4 - k;
    for (int i = 0; i < 3; i++) rgb[i] = c[k][i] + (c[k + 1][i] - c[k][i]) * f;
}

#endif
