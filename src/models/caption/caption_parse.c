/* Captions read back into the items they name (tformer/caption.h), scored against the scene:
 * object F1's counts and the attention's precision against where the items are. */
#include <string.h>

#include "caption_internal.h"

/* The fashion grammar's words (caption_fashion.c's order). */
enum { W_A, W_AND, W_COMMA, W_AT, W_THE, W_TOP, W_BOTTOM, W_LEFT, W_RIGHT, W_CENTRE, W_IN, W_ON, W_ABOVE, W_BELOW,
       W_TO, W_OF, W_DARK, W_LIGHT };
/* The shapes grammar's (caption_scenes.c's). */
enum { S_SHAPE0 = 2, S_TOP = 8, S_BOTTOM, S_LEFT, S_RIGHT, S_CENTRE };

/* The words w[i..] are `k` words: advance past them. */
static int take(const int32_t *w, int n, int *i, int k, const int *want) {
    if (*i + k > n) return 0;
    for (int j = 0; j < k; j++)
        if (w[*i + j] != want[j]) return 0;
    *i += k;
    return 1;
}

/* A position ("at the top left", "on the right", "in the centre") into *cell. */
static int parse_cell(const int32_t *w, int n, int *i, int *cell) {
    if (take(w, n, i, 3, (int[]){W_IN, W_THE, W_CENTRE})) return *cell = 4, 1;
    if (take(w, n, i, 3, (int[]){W_ON, W_THE, W_LEFT})) return *cell = 3, 1;
    if (take(w, n, i, 3, (int[]){W_ON, W_THE, W_RIGHT})) return *cell = 5, 1;
    if (!take(w, n, i, 2, (int[]){W_AT, W_THE}) || *i >= n || (w[*i] != W_TOP && w[*i] != W_BOTTOM)) return 0;
    int row = w[(*i)++] == W_TOP ? 0 : 2, col = 1;
    if (*i < n && (w[*i] == W_LEFT || w[*i] == W_RIGHT)) col = w[(*i)++] == W_LEFT ? 0 : 2;
    return *cell = row * 3 + col, 1;
}

/* A relation into *off, the cell's offset from the next item's: above -3, below +3, to the left of
 * -1, to the right of +1. */
static int parse_relation(const int32_t *w, int n, int *i, int *off) {
    if (take(w, n, i, 1, (int[]){W_ABOVE})) return *off = -3, 1;
    if (take(w, n, i, 1, (int[]){W_BELOW})) return *off = 3, 1;
    if (take(w, n, i, 4, (int[]){W_TO, W_THE, W_LEFT, W_OF})) return *off = -1, 1;
    if (take(w, n, i, 4, (int[]){W_TO, W_THE, W_RIGHT, W_OF})) return *off = 1, 1;
    return 0;
}

/* "a [dark|light] ITEM" into *item and *word (the item word's position). */
static int parse_item(const int32_t *w, int n, int *i, int *item, int *word) {
    if (!take(w, n, i, 1, (int[]){W_A})) return 0;
    if (*i < n && (w[*i] == W_DARK || w[*i] == W_LIGHT)) ++*i;
    if (*i >= n || w[*i] < TF_FASHION_ITEM0 || w[*i] >= TF_FASHION_ITEM0 + TF_FASHION_CLASSES) return 0;
    *item = w[*i] - TF_FASHION_ITEM0, *word = (*i)++;
    return 1;
}

/* Clauses "ITEM (RELATION ITEM)* POSITION" joined by "and" or ","; a chain is placed from its
 * last item back, each relation naming a neighbouring cell. */
static void parse_fashion(const int32_t *w, int n, tf_caption_mentions *out) {
    int item[32], word[32], off[32], cell[32], k = 0, i = 0;
    while (i < n && out->n + k < 32) {
        if (!parse_item(w, n, &i, &item[k], &word[k])) return;
        if (parse_relation(w, n, &i, &off[k])) {
            k++;
            continue;
        }
        if (!parse_cell(w, n, &i, &cell[k])) return;
        for (int j = k - 1; j >= 0; j--) {
            cell[j] = cell[j + 1] + off[j];
            int same_row = off[j] == 1 || off[j] == -1 ? cell[j] / 3 == cell[j + 1] / 3 : 1;
            if (cell[j] < 0 || cell[j] >= TF_CAPTION_CELLS || !same_row) return;
        }
        for (int j = 0; j <= k; j++, out->n++)
            out->item[out->n] = item[j], out->cell[out->n] = cell[j], out->word[out->n] = word[j];
        k = 0;
        if (i < n && !take(w, n, &i, 1, (int[]){W_AND}) && !take(w, n, &i, 1, (int[]){W_COMMA})) return;
    }
}

/* Each shape word with the position words after it ("top left" ... ; none: the centre). */
static void parse_shapes(const int32_t *w, int n, tf_caption_mentions *out) {
    for (int t = 0; t < n && out->n < 32; t++) {
        if (w[t] < S_SHAPE0 || w[t] >= S_SHAPE0 + TF_CAPTION_SHAPES) continue;
        int row = 1, col = 1;
        for (int k = t + 1; k < n && w[k] >= S_TOP && w[k] <= S_CENTRE; k++) {
            if (w[k] == S_TOP || w[k] == S_BOTTOM) row = w[k] == S_TOP ? 0 : 2;
            if (w[k] == S_LEFT || w[k] == S_RIGHT) col = w[k] == S_LEFT ? 0 : 2;
        }
        out->item[out->n] = w[t] - S_SHAPE0, out->cell[out->n] = row * 3 + col, out->word[out->n++] = t;
    }
}

int tf_caption_parse(tf_caption_grammar g, const int32_t *ids, int n, tf_caption_mentions *out) {
    memset(out, 0, sizeof *out);
    if (n < 0) return tf_set_error("caption parse: %d words", n);
    if (g == TF_CAPTION_GRAMMAR_FASHION) parse_fashion(ids, n, out);
    else parse_shapes(ids, n, out);
    return 0;
}

void tf_caption_object_counts(const tf_caption_mentions *m, const tf_caption_scene *s, int *tp, int *pred,
                              int *truth) {
    int used[TF_CAPTION_CELLS] = {0};
    *tp = 0, *pred = m->n, *truth = s->n;
    for (int k = 0; k < m->n; k++)
        for (int j = 0; j < s->n; j++)
            if (!used[j] && s->shape[j] == m->item[k] && s->cell[j] == m->cell[k]) {
                used[j] = 1, ++*tp;
                break;
            }
}

/* The scene's cell of mention k's item: where it says when an item of its class is there, else the
 * first of its class; -1 when the scene has none. */
static int true_cell(const tf_caption_mentions *m, int k, const tf_caption_scene *s) {
    int first = -1;
    for (int j = 0; j < s->n; j++) {
        if (s->shape[j] != m->item[k]) continue;
        if (s->cell[j] == m->cell[k]) return s->cell[j];
        if (first < 0) first = s->cell[j];
    }
    return first;
}

void tf_caption_attention_truth(const tf_caption_mentions *m, const tf_caption_scene *s, const float *att, int g,
                                const int *shuffle, double *sum, double *count) {
    int b = g / 3;
    for (int k = 0; k < m->n; k++) {
        int cell = true_cell(m, k, s);
        if (cell < 0) continue;
        if (shuffle) cell = shuffle[cell];
        const float *a = att + (size_t)m->word[k] * (size_t)(g * g);
        double mass = 0;
        for (int y = cell / 3 * b; y < (cell / 3 + 1) * b; y++)
            for (int x = cell % 3 * b; x < (cell % 3 + 1) * b; x++) mass += a[y * g + x];
        *sum += mass, *count += 1;
    }
}
