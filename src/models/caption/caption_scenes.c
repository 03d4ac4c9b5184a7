/* The scene grammar (tformer/caption.h): seeded synthetic scenes with known truth, a caption
 * each. Shapes are drawn in a 6 x 6 box inside their 8 x 8 cell, moved by up to one pixel. */
#include <string.h>

#include "../../core/core_internal.h"
#include "tformer/caption.h"

static const char *const WORDS[TF_CAPTION_VOCAB] = {
    "a", "and", "square", "frame", "cross", "bar", "column", "diagonal", "top", "bottom", "left", "right", "centre",
    "<pad>", "<s>", "</s>",
};
enum { W_A, W_AND, W_SHAPE0, W_TOP = 8, W_BOTTOM, W_LEFT, W_RIGHT, W_CENTRE };

const char *tf_caption_word(int id) { return id >= 0 && id < TF_CAPTION_VOCAB ? WORDS[id] : NULL; }

/* Whether pixel (y,x) of the 6 x 6 box belongs to the shape. */
static int inside(int shape, int y, int x) {
    switch (shape) {
    case 0: return 1;                                      /* square */
    case 1: return y == 0 || y == 5 || x == 0 || x == 5;  /* frame */
    case 2: return (y == 2 || y == 3) || (x == 2 || x == 3); /* cross */
    case 3: return y == 2 || y == 3;                       /* bar */
    case 4: return x == 2 || x == 3;                       /* column */
    default: return x == y || x == y + 1;                  /* diagonal */
    }
}

/* The words of a cell's position, row by row: "top left" ... "bottom right". */
static int cell_words(int cell, int32_t *w) {
    int r = cell / 3, c = cell % 3, n = 0;
    if (r != 1) w[n++] = r == 0 ? W_TOP : W_BOTTOM;
    if (c != 1) w[n++] = c == 0 ? W_LEFT : W_RIGHT;
    if (r == 1 && c == 1) w[n++] = W_CENTRE;
    return n;
}

int tf_caption_scene_make(uint64_t seed, uint64_t index, int max_items, float *pixels, tf_caption_scene *s,
                          int32_t *ids, int cap, int *n_ids) {
    if (max_items < 1 || max_items > TF_CAPTION_CELLS)
        return tf_set_error("caption scenes: max_items %d: 1 to %d", max_items, TF_CAPTION_CELLS);
    const int S = TF_CAPTION_SCENE_SIZE;
    int order[TF_CAPTION_CELLS], used[TF_CAPTION_CELLS] = {0};
    for (int i = 0; i < TF_CAPTION_CELLS; i++) order[i] = i;
    s->n = 1 + (int)(tf_key(seed, index, 1, 0) % (uint64_t)max_items);
    for (int i = 0; i < s->n; i++) { /* the first n of a partial Fisher-Yates shuffle */
        int j = i + (int)(tf_key(seed, index, 2, (uint64_t)i) % (uint64_t)(TF_CAPTION_CELLS - i));
        int t = order[i];
        order[i] = order[j], order[j] = t;
        used[order[i]] = 1 + (int)(tf_key(seed, index, 3, (uint64_t)i) % TF_CAPTION_SHAPES);
    }
    memset(pixels, 0, (size_t)(S * S) * sizeof *pixels);
    int k = 0, n = 0;
    for (int cell = 0; cell < TF_CAPTION_CELLS; cell++) {
        if (!used[cell]) continue;
        int shape = used[cell] - 1;
        s->shape[k] = shape, s->cell[k++] = cell;
        uint64_t r = tf_key(seed, index, 4, (uint64_t)cell);
        int y0 = cell / 3 * 8 + (int)(r % 3), x0 = cell % 3 * 8 + (int)(r / 3 % 3); /* 0..2: the box at 1 +- 1 */
        for (int y = 0; y < 6; y++)
            for (int x = 0; x < 6; x++)
                if (inside(shape, y, x)) pixels[(y0 + y) * S + x0 + x] = 1.0f;
        int32_t w[8], m = 0;
        if (n) w[m++] = W_AND;
        w[m++] = W_A, w[m++] = W_SHAPE0 + shape;
        m += cell_words(cell, w + m);
        if (n + m > cap) return tf_set_error("caption scenes: a caption of more than %d words", cap);
        memcpy(ids + n, w, (size_t)m * sizeof *w);
        n += m;
    }
    *n_ids = n;
    return 0;
}
