/* Where a vision Transformer looks, as a PNG drawn with cairo: the image,
 * then the same image under each map (the attention rollout, then every head
 * of the last layer), each map a viridis heat overlay over the patches it
 * weighs, scaled to its own maximum and smoothed between patch centres;
 * captions under the panels, a title and the colour scale. Written to a
 * temporary file and renamed into place. */
#include <cairo.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "draw.h"
#include "io_internal.h"
#include "tformer/plot.h"

#define PAD 14.0
#define FONT 13.0
#define TITLE_FONT 15.0
#define PANEL 168.0 /* a panel's longer side in pixels */
#define COLS 6      /* panels in a row */
#define ALPHA 0.6   /* of the heat over the image */

static int check(const char *path, const tf_image_attention_plot *p) {
    if (!p->image || (p->channels != 1 && p->channels != 3) || p->height < 1 || p->width < 1 || p->height > 4096 ||
        p->width > 4096)
        return tf_set_error("%s: an image of 1 or 3 channels and 1 to 4096 pixels a side (%d x %d x %d)", path,
                            p->channels, p->height, p->width);
    if (!p->rollout || p->grid_h < 1 || p->grid_w < 1 || p->patch < 1 || p->grid_h * p->patch > p->height ||
        p->grid_w * p->patch > p->width || p->n_head < 0 || p->n_head > 256 || (p->n_head && !p->heads))
        return tf_set_error("%s: %d x %d patches of %d pixels (and %d heads) do not fit a %d x %d image", path,
                            p->grid_h, p->grid_w, p->patch, p->n_head, p->height, p->width);
    return 0;
}

/* The image as an RGB24 surface, its values stretched from their range to 0-255. */
static cairo_surface_t *image_surface(const tf_image_attention_plot *p) {
    int64_t n = (int64_t)p->height * p->width;
    float lo = INFINITY, hi = -INFINITY;
    for (int64_t i = 0; i < n * p->channels; i++) lo = fminf(lo, p->image[i]), hi = fmaxf(hi, p->image[i]);
    float span = hi > lo ? hi - lo : 1.0f;
    cairo_surface_t *s = cairo_image_surface_create(CAIRO_FORMAT_RGB24, p->width, p->height);
    cairo_surface_flush(s);
    unsigned char *px = cairo_image_surface_get_data(s);
    int stride = cairo_image_surface_get_stride(s);
    for (int y = 0; px && y < p->height; y++)
        for (int x = 0; x < p->width; x++) {
            uint32_t rgb = 0;
            for (int c = 0; c < 3; c++) {
                float v = p->image[(int64_t)(p->channels == 3 ? c : 0) * n + (int64_t)y * p->width + x];
                rgb = rgb << 8 | (uint32_t)lrintf(255.0f * (v - lo) / span);
            }
            ((uint32_t *)(px + (size_t)y * (size_t)stride))[x] = rgb;
        }
    cairo_surface_mark_dirty(s);
    return s;
}

/* One map (grid_h, grid_w) as translucent viridis, premultiplied, scaled to its maximum (fixed: to 1). */
static cairo_surface_t *heat_surface(const float *m, int gh, int gw, int fixed) {
    float hi = fixed ? 1 : 0;
    for (int i = 0; !fixed && i < gh * gw; i++) hi = fmaxf(hi, m[i]);
    cairo_surface_t *s = cairo_image_surface_create(CAIRO_FORMAT_ARGB32, gw, gh);
    cairo_surface_flush(s);
    unsigned char *px = cairo_image_surface_get_data(s);
    int stride = cairo_image_surface_get_stride(s);
    for (int y = 0; px && y < gh; y++)
        for (int x = 0; x < gw; x++) {
            double rgb[3];
            tf_draw_viridis(hi > 0 ? fminf(fmaxf(m[y * gw + x] / hi, 0), 1) : 0, rgb);
            uint32_t a = (uint32_t)lrint(255 * ALPHA), v = a << 24;
            for (int c = 0; c < 3; c++) v |= (uint32_t)lrint(rgb[c] * ALPHA * 255) << (16 - 8 * c);
            ((uint32_t *)(px + (size_t)y * (size_t)stride))[x] = v;
        }
    cairo_surface_mark_dirty(s);
    return s;
}

/* Panel k at (x, y): the image, with map (NULL: none) over its patches. */
static void draw_panel(cairo_t *cr, const tf_image_attention_plot *p, cairo_surface_t *img, const float *map,
                       double x, double y, double scale, const char *caption) {
    cairo_save(cr);
    cairo_translate(cr, x, y);
    cairo_scale(cr, scale, scale);
    cairo_set_source_surface(cr, img, 0, 0);
    cairo_pattern_set_filter(cairo_get_source(cr), CAIRO_FILTER_NEAREST); /* the pixels as they are */
    cairo_paint(cr);
    if (map) {
        cairo_surface_t *h = heat_surface(map, p->grid_h, p->grid_w, p->fixed_scale);
        cairo_rectangle(cr, 0, 0, p->grid_w * p->patch, p->grid_h * p->patch);
        cairo_clip(cr);
        cairo_scale(cr, p->patch, p->patch);
        cairo_set_source_surface(cr, h, 0, 0);
        cairo_pattern_set_filter(cairo_get_source(cr), CAIRO_FILTER_BILINEAR);
        cairo_pattern_set_extend(cairo_get_source(cr), CAIRO_EXTEND_PAD);
        cairo_paint(cr);
        cairo_surface_destroy(h);
    }
    cairo_restore(cr);
    cairo_set_source_rgb(cr, 0, 0, 0);
    cairo_set_font_size(cr, FONT);
    double w = p->width * scale;
    tf_draw_text(cr, x + (w - tf_draw_text_width(cr, caption)) / 2, y + p->height * scale + FONT + 4, caption);
}

/* The colour scale at (x, y), h high: each map from 0 to its own maximum, or (fixed) 0 to 1. */
static void draw_scale(cairo_t *cr, double x, double y, double h, int fixed) {
    for (int k = 0; k < 64; k++) {
        double rgb[3];
        tf_draw_viridis(1 - k / 63.0, rgb);
        cairo_set_source_rgb(cr, rgb[0], rgb[1], rgb[2]);
        cairo_rectangle(cr, x, y + h * k / 64, 14, h / 64 + 0.5);
        cairo_fill(cr);
    }
    cairo_set_source_rgb(cr, 0, 0, 0);
    cairo_set_font_size(cr, FONT - 2);
    tf_draw_text(cr, x + 18, y + FONT - 2, fixed ? "1" : "max");
    tf_draw_text(cr, x + 18, y + h, "0");
}

int tf_plot_image_attention(const char *path, const tf_image_attention_plot *p) {
    if (check(path, p)) return -1;
    int panels = 2 + p->n_head, cols = panels < COLS ? panels : COLS, rows = (panels + COLS - 1) / COLS;
    double scale = PANEL / (p->height > p->width ? p->height : p->width);
    double pw = p->width * scale, ph = p->height * scale, cell_h = ph + FONT + 12;
    double top = PAD + (p->title ? TITLE_FONT + 8 : 0);
    int W = (int)ceil(PAD + cols * (pw + PAD) + 52), H = (int)ceil(top + rows * cell_h + PAD);
    cairo_surface_t *s = cairo_image_surface_create(CAIRO_FORMAT_RGB24, W, H);
    cairo_t *cr = cairo_create(s);
    cairo_set_source_rgb(cr, 1, 1, 1);
    cairo_paint(cr);
    cairo_select_font_face(cr, "sans-serif", CAIRO_FONT_SLANT_NORMAL, CAIRO_FONT_WEIGHT_NORMAL);
    if (p->title) {
        cairo_set_source_rgb(cr, 0, 0, 0);
        cairo_set_font_size(cr, TITLE_FONT);
        tf_draw_text(cr, PAD, PAD + TITLE_FONT - 2, p->title);
    }
    cairo_surface_t *img = image_surface(p);
    int64_t n = (int64_t)p->grid_h * p->grid_w;
    for (int k = 0; k < panels; k++) {
        char caption[64];
        const float *map = k == 0 ? NULL : k == 1 ? p->rollout : p->heads + (k - 2) * n;
        if (k > 0 && p->labels) snprintf(caption, sizeof caption, "%s", p->labels[k - 1]);
        else snprintf(caption, sizeof caption, k == 0 ? "image" : k == 1 ? "rollout" : "last layer, head %d", k - 1);
        draw_panel(cr, p, img, map, PAD + (k % COLS) * (pw + PAD), top + (k / COLS) * cell_h, scale, caption);
    }
    draw_scale(cr, PAD + cols * (pw + PAD), top, ph, p->fixed_scale);
    cairo_surface_destroy(img);
    int rc = tf_png_write(s, (int)cairo_status(cr), path);
    cairo_destroy(cr);
    cairo_surface_destroy(s);
    return rc;
}
