/* Private: cairo text helpers shared by the PNG plots (png_plot.c,
 * plot_confusion.c, plot_attention.c). */
#ifndef TF_IO_DRAW_H
#define TF_IO_DRAW_H

#include <cairo.h>

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

#endif
