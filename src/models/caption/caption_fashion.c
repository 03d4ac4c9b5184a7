/* Fashion-MNIST scenes (tformer/caption.h): seeded 96 x 96 scenes of Fashion-MNIST items in a
 * 3 x 3 grid, five reference captions each, and the fashion grammar's words. */
#include <stdio.h>
#include <string.h>

#include "../../core/core_internal.h"
#include "caption_internal.h"

static const char *const WORDS[] = {
    "a", "and", ",", "at", "the", "top", "bottom", "left", "right", "centre", "in", "on", "above", "below", "to", "of",
    "dark", "light", "t-shirt", "trousers", "pullover", "dress", "coat", "sandal", "shirt", "sneaker", "bag", "boot",
    "<pad>", "<s>", "</s>",
};
enum { N_WORDS = (int)(sizeof WORDS / sizeof WORDS[0]) };
_Static_assert(N_WORDS == TF_FASHION_ITEM0 + TF_FASHION_CLASSES + 3, "the items, then the three specials");

int tf_caption_grammar_vocab(tf_caption_grammar g) { return g == TF_CAPTION_GRAMMAR_FASHION ? N_WORDS : TF_CAPTION_VOCAB; }

const char *tf_caption_grammar_word(tf_caption_grammar g, int id) {
    if (g != TF_CAPTION_GRAMMAR_FASHION) return tf_caption_word(id);
    return id >= 0 && id < N_WORDS ? WORDS[id] : NULL;
}

/* ---------------------------------------------------------------- the data */

int tf_fashion_load(const char *dir, tf_fashion *out) {
    char im[1200], lab[1200];
    memset(out, 0, sizeof *out);
    static const char *const SPLIT[2] = {"train", "t10k"};
    for (int k = 0; k < 2; k++) {
        snprintf(im, sizeof im, "%s/%s-images-idx3-ubyte.gz", dir, SPLIT[k]);
        snprintf(lab, sizeof lab, "%s/%s-labels-idx1-ubyte.gz", dir, SPLIT[k]);
        tf_images *s = k ? &out->test : &out->train;
        if (tf_images_read_idx(im, lab, TF_FASHION_CLASSES, s)) return tf_fashion_free(out), -1;
        if (s->height != 28 || s->width != 28 || s->n < 1)
            return tf_fashion_free(out), tf_set_error("%s: %dx%d images: Fashion-MNIST's are 28x28", im, s->height,
                                                      s->width);
    }
    return 0;
}

void tf_fashion_free(tf_fashion *f) {
    if (f) tf_images_free(&f->train), tf_images_free(&f->test);
}

int tf_fashion_scene_make(const tf_fashion *f, int split, uint64_t seed, uint64_t index, int max_items,
                          int brightness, float *pixels, tf_fashion_scene *s) {
    if (max_items < 1 || max_items > TF_CAPTION_CELLS)
        return tf_set_error("fashion scenes: max_items %d: 1 to %d", max_items, TF_CAPTION_CELLS);
    const tf_images *src = split ? &f->test : &f->train;
    const int S = TF_FASHION_SIZE, CELL = S / 3;
    int order[TF_CAPTION_CELLS], pick[TF_CAPTION_CELLS];
    for (int i = 0; i < TF_CAPTION_CELLS; i++) order[i] = i, pick[i] = -1;
    int n = 1 + (int)(tf_key(seed, index, 21, 0) % (uint64_t)max_items);
    for (int i = 0; i < n; i++) { /* the first n of a partial Fisher-Yates shuffle */
        int j = i + (int)(tf_key(seed, index, 22, (uint64_t)i) % (uint64_t)(TF_CAPTION_CELLS - i));
        int t = order[i];
        order[i] = order[j], order[j] = t;
        pick[order[i]] = (int)(tf_key(seed, index, 23, (uint64_t)i) % (uint64_t)src->n);
    }
    memset(pixels, 0, (size_t)(S * S) * sizeof *pixels);
    memset(s, 0, sizeof *s);
    for (int cell = 0; cell < TF_CAPTION_CELLS; cell++) {
        if (pick[cell] < 0) continue;
        uint64_t r = tf_key(seed, index, 24, (uint64_t)cell);
        int k = s->s.n++, y0 = cell / 3 * CELL + (int)(r % 5), x0 = cell % 3 * CELL + (int)(r / 5 % 5);
        s->s.shape[k] = src->labels[pick[cell]], s->s.cell[k] = cell;
        s->dark[k] = brightness && (r >> 20 & 1);
        float gain = s->dark[k] ? 0.4f : 1.0f;
        const float *item = src->pixels + (int64_t)pick[cell] * 28 * 28;
        for (int y = 0; y < 28; y++)
            for (int x = 0; x < 28; x++) pixels[(y0 + y) * S + x0 + x] = gain * item[y * 28 + x];
    }
    return 0;
}

/* ---------------------------------------------------------------- the captions */

enum { W_A, W_AND, W_COMMA, W_AT, W_THE, W_TOP, W_BOTTOM, W_LEFT, W_RIGHT, W_CENTRE, W_IN, W_ON, W_ABOVE, W_BELOW,
       W_TO, W_OF, W_DARK, W_LIGHT };

typedef struct {
    int32_t *ids;
    int n, cap, full;
} sink;

static void put(sink *k, int n, const int *w) {
    for (int i = 0; i < n; i++) {
        if (k->n >= k->cap) k->full = 1;
        else k->ids[k->n++] = w[i];
    }
}

/* "at the top left", "on the right", "in the centre", ... */
static void put_cell(sink *k, int cell) {
    int r = cell / 3, c = cell % 3;
    if (r == 1) put(k, 3, (int[]){c == 1 ? W_IN : W_ON, W_THE, c == 0 ? W_LEFT : c == 2 ? W_RIGHT : W_CENTRE});
    else {
        put(k, 3, (int[]){W_AT, W_THE, r ? W_BOTTOM : W_TOP});
        if (c != 1) put(k, 1, (int[]){c ? W_RIGHT : W_LEFT});
    }
}

static void put_item(sink *k, const tf_fashion_scene *s, int i, int brightness) {
    put(k, 1, (int[]){W_A});
    if (brightness) put(k, 1, (int[]){s->dark[i] ? W_DARK : W_LIGHT});
    put(k, 1, (int[]){TF_FASHION_ITEM0 + s->s.shape[i]});
}

/* Whether cells a and b are neighbours: one row apart in a column, or one column apart in a row. */
static int neighbours(int a, int b) { return b == a + 3 || b == a - 3 || (a / 3 == b / 3 && (b == a + 1 || b == a - 1)); }

/* The relation of cell a to its neighbour b: "above", "below", "to the left of", "to the right of". */
static void put_relation(sink *k, int a, int b) {
    if (b == a + 3 || b == a - 3) put(k, 1, (int[]){b > a ? W_ABOVE : W_BELOW});
    else put(k, 4, (int[]){W_TO, W_THE, b > a ? W_LEFT : W_RIGHT, W_OF});
}

int tf_fashion_caption(const tf_fashion_scene *s, int ref, int brightness, uint64_t seed, int32_t *ids, int cap,
                       int *n) {
    if (ref < 0 || ref >= TF_FASHION_REFS) return tf_set_error("fashion scenes: reference %d: 0 to 4", ref);
    int m = s->s.n, order[TF_CAPTION_CELLS];
    for (int i = 0; i < m; i++) order[i] = ref == 1 || ref == 4 ? m - 1 - i : i;
    for (int i = 0; ref == 3 && i < m - 1; i++) { /* a seeded order */
        int j = i + (int)(tf_key(seed, 25, (uint64_t)i, 0) % (uint64_t)(m - i));
        int t = order[i];
        order[i] = order[j], order[j] = t;
    }
    int relations = ref == 2 || ref == 4, commas = ref == 1 || ref == 3, clauses = 0, starts[TF_CAPTION_CELLS];
    sink k = {ids, 0, cap, 0};
    for (int i = 0; i < m; clauses++) { /* the clauses, each one item or two related ones */
        starts[clauses] = i;
        i += relations && i + 1 < m && neighbours(s->s.cell[order[i]], s->s.cell[order[i + 1]]) ? 2 : 1;
    }
    starts[clauses] = m;
    for (int c = 0; c < clauses; c++) {
        if (c) put(&k, 1, (int[]){commas && c < clauses - 1 ? W_COMMA : W_AND});
        int a = order[starts[c]], last = order[starts[c + 1] - 1];
        put_item(&k, s, a, brightness);
        if (last != a) {
            put_relation(&k, s->s.cell[a], s->s.cell[last]);
            put_item(&k, s, last, brightness);
        }
        put_cell(&k, s->s.cell[last]);
    }
    if (k.full) return tf_set_error("fashion scenes: a caption of more than %d words", cap);
    *n = k.n;
    return 0;
}
