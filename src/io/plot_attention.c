/* A translation's attention as a PNG drawn with cairo: a large panel (target
 * tokens down the left, source tokens rotated along the top, one cell per
 * probability on a fixed 0-1 viridis scale with its legend at the right), a
 * title and, under it, an optional grid of small maps (rows x columns, the
 * Transformer's decoder layers x heads) with their captions. Labels are
 * UTF-8 drawn with cairo's text API in DejaVu Sans (fontconfig's sans-serif:
 * it has a, o, u with umlauts and sharp s); invalid bytes show as U+FFFD.
 * Written to a temporary file and renamed into place. */
#include <cairo.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

#include "draw.h"
#include "io_internal.h"
#include "tformer/plot.h"

#define PAD 16.0
#define TITLE_FONT 16.0
#define FONT 13.0
#define SMALL_FONT 11.0
#define BAR_W 16.0
#define GAP 10.0       /* between small maps */
#define LABEL_MAX 96   /* bytes of a cleaned label */
#define LABEL_CHARS 24 /* code points shown before an ellipsis */
#define MAX_SIDE 32000 /* cairo's image surfaces stop at 32767 pixels */

typedef struct {
    double font, cell, x, y;   /* the panel: label font, cell side, its top-left corner */
    double sc, gx, gy, mw, mh; /* the grid: cell side, first map's corner, a map's size */
    double top;                /* the weight of the top colour (scale_top) */
    double w, h;               /* the picture */
} layout;

typedef char label[LABEL_MAX];

/* s as printable UTF-8: invalid bytes become U+FFFD, control characters a
 * space, at most LABEL_CHARS code points (then an ellipsis). */
static void clean(const char *s, label out) {
    size_t n = strlen(s), o = 0;
    int chars = 0;
    for (size_t i = 0; i < n && o + 8 < LABEL_MAX;) {
        utf8proc_int32_t c;
        utf8proc_ssize_t k = utf8proc_iterate((const utf8proc_uint8_t *)s + i, (utf8proc_ssize_t)(n - i), &c);
        if (++chars > LABEL_CHARS) {
            memcpy(out + o, "\xE2\x80\xA6", 3), o += 3; /* ... */
            break;
        }
        if (k < 1) c = 0xFFFD, k = 1;
        else if (c < 0x20 || c == 0x7F) c = ' ';
        o += (size_t)utf8proc_encode_char(c, (utf8proc_uint8_t *)out + o);
        i += (size_t)k;
    }
    out[o] = 0;
}

static double widest(cairo_t *cr, const label *l, int n) {
    double w = 0;
    for (int i = 0; i < n; i++) w = fmax(w, tf_draw_text_width(cr, l[i]));
    return w;
}

/* The weight drawn as the top colour: 1, or with auto_scale the largest finite one drawn (1 when none is above 0). */
static double scale_top(const tf_attention_plot *p) {
    size_t per = (size_t)p->n_tgt * (size_t)p->n_src, n = per * (p->grid ? (size_t)p->rows * (size_t)p->cols : 0);
    double top = 0;
    for (size_t i = 0; p->auto_scale && i < per + n; i++) {
        double x = i < per ? p->panel[i] : p->grid[i - per];
        if (isfinite(x) && x > top) top = x;
    }
    return top > 0 ? top : 1;
}

/* One map (n_tgt, n_src) with cells of side c at (x, y), its weights over top. */
static void draw_map(cairo_t *cr, const float *m, int n_tgt, int n_src, double x, double y, double c, double top) {
    double rgb[3];
    for (int i = 0; i < n_tgt; i++)
        for (int j = 0; j < n_src; j++) {
            tf_draw_viridis(m[(size_t)i * n_src + j] / top, rgb);
            cairo_set_source_rgb(cr, rgb[0], rgb[1], rgb[2]);
            cairo_rectangle(cr, x + j * c, y + i * c, c + 0.5, c + 0.5); /* +0.5: no seams between cells */
            cairo_fill(cr);
        }
}

/* Sizes from the labels' widths: the panel's cells shrink as sentences grow. */
static layout plan(cairo_t *cr, const tf_attention_plot *p, const label *src, const label *tgt) {
    layout g;
    int n = p->n_src > p->n_tgt ? p->n_src : p->n_tgt;
    g.cell = fmin(32, fmax(8, floor(560.0 / n)));
    g.font = fmin(FONT, fmax(7, g.cell - 3));
    cairo_set_font_size(cr, g.font);
    double left = fmax(widest(cr, tgt, p->n_tgt), tf_draw_text_width(cr, "target \xE2\x86\x93")) + 8;
    double top = widest(cr, src, p->n_src) + 8;
    g.x = PAD + left, g.y = PAD + TITLE_FONT + 8 + FONT + 10 + top;
    double pw = g.cell * p->n_src, ph = g.cell * p->n_tgt, bar_h = fmax(ph, 120);
    g.w = g.x + pw + PAD + BAR_W + 6 + (p->auto_scale ? 8 : 4) * FONT + PAD; /* "0.123 (max)" is wider than "0.75" */
    g.h = g.y + bar_h + PAD;
    cairo_set_font_size(cr, TITLE_FONT);
    g.w = fmax(g.w, tf_draw_text_width(cr, p->title ? p->title : "") + 2 * PAD);
    cairo_set_font_size(cr, FONT);
    g.w = fmax(g.w, tf_draw_text_width(cr, p->panel_title ? p->panel_title : "") + 2 * PAD);
    g.sc = fmax(1, fmin(16, floor(160.0 / n)));
    g.mw = g.sc * p->n_src, g.mh = g.sc * p->n_tgt;
    if (!p->grid) return g;
    cairo_set_font_size(cr, SMALL_FONT);
    char cap[64];
    snprintf(cap, sizeof cap, "%s %d", p->row_name ? p->row_name : "", p->rows);
    g.gx = PAD + tf_draw_text_width(cr, cap) + 8, g.gy = g.h + PAD + 2 * (SMALL_FONT + 6);
    g.w = fmax(g.w, g.gx + p->cols * (g.mw + GAP) + PAD);
    g.h = g.gy + p->rows * (g.mh + GAP) + PAD;
    return g;
}

/* The panel, its labels (target down the left, source rotated along the top), its titles. */
static void draw_panel(cairo_t *cr, const layout *g, const tf_attention_plot *p, const label *src, const label *tgt) {
    draw_map(cr, p->panel, p->n_tgt, p->n_src, g->x, g->y, g->cell, g->top);
    cairo_set_source_rgb(cr, 0, 0, 0);
    cairo_set_font_size(cr, g->font);
    for (int i = 0; i < p->n_tgt; i++)
        tf_draw_text(cr, g->x - 6 - tf_draw_text_width(cr, tgt[i]), g->y + (i + 0.5) * g->cell + g->font / 3, tgt[i]);
    for (int j = 0; j < p->n_src; j++) {
        cairo_save(cr);
        cairo_translate(cr, g->x + (j + 0.5) * g->cell + g->font / 3, g->y - 6);
        cairo_rotate(cr, -1.5707963267948966); /* -pi/2: read upwards */
        tf_draw_text(cr, 0, 0, src[j]);
        cairo_restore(cr);
    }
    tf_draw_text(cr, PAD, g->y - 6, "target \xE2\x86\x93");                /* target (down arrow) */
    tf_draw_text(cr, PAD, g->y - 6 - g->font - 4, "source \xE2\x86\x92"); /* source (right arrow) */
    cairo_set_font_size(cr, TITLE_FONT);
    tf_draw_text(cr, PAD, PAD + TITLE_FONT, p->title ? p->title : "");
    cairo_set_font_size(cr, FONT);
    tf_draw_text(cr, PAD, PAD + TITLE_FONT + 8 + FONT, p->panel_title ? p->panel_title : "");
}

/* The colour scale right of the panel: 0 at the bottom, g->top at the top, ticks every quarter
 * (with auto_scale, "max" after the top one's number). */
static void draw_legend(cairo_t *cr, const layout *g, const tf_attention_plot *p) {
    double x = g->x + g->cell * p->n_src + PAD, h = fmax(g->cell * p->n_tgt, 120), steps = 100, rgb[3];
    for (int k = 0; k < steps; k++) {
        tf_draw_viridis(1 - k / (steps - 1), rgb);
        cairo_set_source_rgb(cr, rgb[0], rgb[1], rgb[2]);
        cairo_rectangle(cr, x, g->y + k * h / steps, BAR_W, h / steps + 1);
        cairo_fill(cr);
    }
    cairo_set_source_rgb(cr, 0, 0, 0);
    cairo_set_font_size(cr, SMALL_FONT);
    cairo_set_line_width(cr, 1);
    char num[16];
    for (int t = 0; t <= 4; t++) {
        double y = g->y + h * (1 - t / 4.0);
        cairo_move_to(cr, x + BAR_W, y), cairo_line_to(cr, x + BAR_W + 4, y);
        cairo_stroke(cr);
        snprintf(num, sizeof num, "%.3g%s", g->top * t / 4.0, p->auto_scale && t == 4 ? " (max)" : "");
        tf_draw_text(cr, x + BAR_W + 6, y + SMALL_FONT / 3, num);
    }
}

/* The small maps, row i column j at (gx + j (mw + GAP), gy + i (mh + GAP)), with their captions. */
static void draw_grid(cairo_t *cr, const layout *g, const tf_attention_plot *p) {
    size_t per = (size_t)p->n_tgt * (size_t)p->n_src;
    char cap[160];
    cairo_set_font_size(cr, SMALL_FONT);
    cairo_set_source_rgb(cr, 0, 0, 0);
    snprintf(cap, sizeof cap, "each %s (rows) and %s (columns), the axes as above", p->row_name ? p->row_name : "row",
             p->col_name ? p->col_name : "column");
    tf_draw_text(cr, PAD, g->gy - SMALL_FONT - 12, cap);
    for (int i = 0; i < p->rows; i++)
        for (int j = 0; j < p->cols; j++) {
            double x = g->gx + j * (g->mw + GAP), y = g->gy + i * (g->mh + GAP);
            draw_map(cr, p->grid + ((size_t)i * p->cols + j) * per, p->n_tgt, p->n_src, x, y, g->sc, g->top);
            cairo_set_source_rgb(cr, 0, 0, 0);
            if (i == 0) {
                snprintf(cap, sizeof cap, "%s %d", p->col_name ? p->col_name : "", j + 1);
                tf_draw_text(cr, x, y - 5, cap);
            }
            if (j == 0) {
                snprintf(cap, sizeof cap, "%s %d", p->row_name ? p->row_name : "", i + 1);
                tf_draw_text(cr, PAD, y + fmin(g->mh, 2 * SMALL_FONT) / 2 + SMALL_FONT / 3, cap);
            }
        }
}

static int check(const char *path, const tf_attention_plot *p) {
    if (!p->panel || !p->src_tokens || !p->tgt_tokens || p->n_src < 1 || p->n_tgt < 1 || p->n_src > 4000 ||
        p->n_tgt > 4000)
        return tf_set_error("%s: an attention picture needs a panel and 1 to 4000 tokens a side (%d source, %d target)",
                            path, p->n_src, p->n_tgt);
    if (p->grid && (p->rows < 1 || p->cols < 1 || p->rows > 64 || p->cols > 64))
        return tf_set_error("%s: a grid of %d x %d maps (1 to 64 each way)", path, p->rows, p->cols);
    return 0;
}

/* Draw on a surface of the planned size; the surface, or NULL with the error set. */
static cairo_surface_t *render(const char *path, const tf_attention_plot *p, const label *src, const label *tgt) {
    cairo_surface_t *probe = cairo_image_surface_create(CAIRO_FORMAT_RGB24, 1, 1);
    cairo_t *cr = cairo_create(probe);
    cairo_select_font_face(cr, "sans-serif", CAIRO_FONT_SLANT_NORMAL, CAIRO_FONT_WEIGHT_NORMAL);
    layout g = plan(cr, p, src, tgt);
    g.top = scale_top(p);
    cairo_destroy(cr), cairo_surface_destroy(probe);
    if (g.w > MAX_SIDE || g.h > MAX_SIDE)
        return tf_set_error("%s: a picture of %.0f x %.0f pixels is too large", path, g.w, g.h), NULL;
    cairo_surface_t *s = cairo_image_surface_create(CAIRO_FORMAT_RGB24, (int)ceil(g.w), (int)ceil(g.h));
    cr = cairo_create(s);
    cairo_set_source_rgb(cr, 1, 1, 1);
    cairo_paint(cr);
    cairo_select_font_face(cr, "sans-serif", CAIRO_FONT_SLANT_NORMAL, CAIRO_FONT_WEIGHT_NORMAL);
    draw_panel(cr, &g, p, src, tgt);
    draw_legend(cr, &g, p);
    if (p->grid) draw_grid(cr, &g, p);
    cairo_status_t st = cairo_status(cr);
    cairo_destroy(cr);
    if (st != CAIRO_STATUS_SUCCESS) {
        cairo_surface_destroy(s);
        return tf_set_error("%s: cannot draw: %s", path, cairo_status_to_string(st)), NULL;
    }
    return s;
}

int tf_plot_attention(const char *path, const tf_attention_plot *p) {
    if (check(path, p)) return -1;
    label *src = malloc(((size_t)p->n_src + (size_t)p->n_tgt) * sizeof *src), *tgt = src ? src + p->n_src : NULL;
    if (!src) return tf_set_error("%s: out of memory", path);
    for (int j = 0; j < p->n_src; j++) clean(p->src_tokens[j] ? p->src_tokens[j] : "", src[j]);
    for (int i = 0; i < p->n_tgt; i++) clean(p->tgt_tokens[i] ? p->tgt_tokens[i] : "", tgt[i]);
    cairo_surface_t *s = render(path, p, (const label *)src, (const label *)tgt);
    free(src);
    if (!s) return -1;
    int rc = tf_png_write(s, (int)cairo_surface_status(s), path);
    cairo_surface_destroy(s);
    return rc;
}
