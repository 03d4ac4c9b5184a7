/* Private to the library: the io layer's (src/io) PNG writing, for the plots and the trainer's loss curves. */
#ifndef TF_IO_INTERNAL_H
#define TF_IO_INTERNAL_H

#include "tformer/core.h"

/* Everything here is hidden from the shared library: it is built with
 * -fvisibility=hidden and exports only what include/tformer/ marks TF_API. */

/* Loss curves as PNG (cairo): the training series a (blue) and the
 * validation series b (red, may be empty) against the step, with ticks,
 * axis titles and a legend. */
int tf_png_plot(const char *path, const double *ax, const double *ay, int na, const double *bx, const double *by,
                int nb);
/* A cairo surface as a PNG file, written as every output is (tf_atomic_file's
 * rules: atomic replace, links followed, devices written through); cairo's
 * status st of the drawing first (an error there is reported, nothing written). */
struct _cairo_surface;
int tf_png_write(struct _cairo_surface *s, int st, const char *path);

#endif
