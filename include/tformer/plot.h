/* tformer: pictures as PNG files (cairo): a translation's attention, a vision
 * Transformer's attention over its image, a confusion matrix. */
#ifndef TFORMER_PLOT_H
#define TFORMER_PLOT_H

#include <stdint.h>

#include "core.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------- pictures (PNG, cairo) */

/* One sentence's attention as a picture: a large panel (target tokens down,
 * source tokens across, each cell a probability on a fixed 0-1 colour scale
 * shown beside it) and optionally, under it, a grid of small maps (rows x
 * cols: the Transformer's decoder layers x heads). Labels are UTF-8 text. */
typedef struct {
    const char *title;               /* at the top ("sentence 3") */
    const char *panel_title;         /* over the panel ("cross-attention, average of 4 layers x 4 heads") */
    const char *const *src_tokens;   /* n_src labels: the columns */
    const char *const *tgt_tokens;   /* n_tgt labels: the rows */
    int n_src, n_tgt;
    const float *panel;              /* (n_tgt, n_src) */
    const float *grid;               /* (rows, cols, n_tgt, n_src), or NULL: the panel alone */
    int rows, cols;
    const char *row_name, *col_name; /* the grid's captions: "layer 1", "head 1" */
    int auto_scale;                  /* 0: the colours span 0 to 1; 1: 0 to the largest weight drawn (panel and
                                      * grid; a flat map is then not one dark block), the colour bar's ticks say so */
} tf_attention_plot;

/* A PNG at path (cairo; written to path.tmp, then renamed). */
TF_API int tf_plot_attention(const char *path, const tf_attention_plot *p);

/* Where a vision Transformer looks: the image, then the image under each map
 * (the attention rollout, then each head), maps over the patches grid. */
typedef struct {
    const float *image;      /* (channels, height, width), any range: stretched for display */
    int channels, height, width;
    const float *rollout;    /* (grid_h, grid_w) */
    int grid_h, grid_w, patch; /* the maps cover grid_h*patch x grid_w*patch pixels from the top left */
    const float *heads;      /* (n_head, grid_h, grid_w), or NULL with n_head 0 */
    int n_head;
    const char *title;       /* or NULL */
    const char *const *labels; /* the maps' captions, 1 + n_head (a caption's words), or NULL:
                                * "rollout", then "last layer, head <i>" */
    int fixed_scale;         /* 0: each map's colours from 0 to its own maximum; 1: every map on 0 to 1
                              * (maps and pictures comparable), the colour bar's ticks say which */
} tf_image_attention_plot;

/* A PNG at path (cairo; written to path.tmp, then renamed). */
TF_API int tf_plot_image_attention(const char *path, const tf_image_attention_plot *p);

/* A confusion matrix as a PNG (cairo): label names on the axes, counts in
 * the cells, a colour scale and a title. */
TF_API int tf_plot_confusion(const char *path, const int64_t *confusion, const char *const *labels, int n,
                             const char *title);

#ifdef __cplusplus
}
#endif
#endif /* TFORMER_PLOT_H */
