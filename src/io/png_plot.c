/* Loss curves as PNG images: a white canvas, axes, two polylines and the axis
 * ranges in a 3x5 pixel font. Written through libpng to a temporary file and renamed. */
#include <errno.h>
#include <math.h>
#include <png.h>
#include <stdlib.h>
#include <string.h>

#include "../core/internal.h"

#define W 720
#define H 420
#define L 60 /* margins */
#define R 20
#define T 20
#define B 40

typedef struct {
    unsigned char px[H][W][3];
} canvas;

static void dot(canvas *c, int x, int y, const unsigned char rgb[3]) {
    if (x >= 0 && x < W && y >= 0 && y < H) memcpy(c->px[y][x], rgb, 3);
}

static void line(canvas *c, int x0, int y0, int x1, int y1, const unsigned char rgb[3]) {
    int dx = abs(x1 - x0), dy = -abs(y1 - y0), sx = x0 < x1 ? 1 : -1, sy = y0 < y1 ? 1 : -1, e = dx + dy;
    for (;;) { /* Bresenham, two pixels thick */
        dot(c, x0, y0, rgb), dot(c, x0, y0 + 1, rgb);
        if (x0 == x1 && y0 == y1) break;
        int e2 = 2 * e;
        if (e2 >= dy) e += dy, x0 += sx;
        if (e2 <= dx) e += dx, y0 += sy;
    }
}

/* 3x5 glyphs for "0123456789.-e", one row per 3 bits. */
static const unsigned char GLYPHS[13][5] = {
    {7, 5, 5, 5, 7}, {2, 6, 2, 2, 7}, {7, 1, 7, 4, 7}, {7, 1, 7, 1, 7}, {5, 5, 7, 1, 1}, {7, 4, 7, 1, 7}, {7, 4, 7, 5, 7},
    {7, 1, 1, 1, 1}, {7, 5, 7, 5, 7}, {7, 5, 7, 1, 7}, {0, 0, 0, 0, 2}, {0, 0, 7, 0, 0}, {0, 7, 5, 6, 7}};

static void text(canvas *c, int x, int y, const char *s, const unsigned char rgb[3]) {
    for (; *s; s++, x += 8) {
        const char *set = "0123456789.-e", *p = strchr(set, *s);
        if (!p || !*s) continue;
        for (int r = 0; r < 5; r++)
            for (int k = 0; k < 3; k++)
                if (GLYPHS[p - set][r] >> (2 - k) & 1)
                    for (int dy = 0; dy < 2; dy++)
                        for (int dx = 0; dx < 2; dx++) dot(c, x + 2 * k + dx, y + 2 * r + dy, rgb);
    }
}

static void series(canvas *c, const double *x, const double *y, int n, double x0, double x1, double y0, double y1,
                   const unsigned char rgb[3]) {
    int px = 0, py = 0;
    for (int i = 0; i < n; i++) {
        int qx = L + (int)lround((x[i] - x0) / (x1 - x0) * (W - L - R));
        int qy = H - B - (int)lround((y[i] - y0) / (y1 - y0) * (H - T - B));
        if (i) line(c, px, py, qx, qy, rgb);
        else dot(c, qx, qy, rgb);
        px = qx, py = qy;
    }
}

static int write_png(const char *path, canvas *c) {
    char tmp[4200];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *f = fopen(tmp, "wb");
    if (!f) return tf_set_error("%s: cannot create: %s", tmp, strerror(errno));
    png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, NULL, NULL, NULL);
    png_infop info = png ? png_create_info_struct(png) : NULL;
    if (!info || setjmp(png_jmpbuf(png))) {
        png_destroy_write_struct(&png, &info);
        fclose(f);
        remove(tmp);
        return tf_set_error("%s: PNG encoding failed", path);
    }
    png_init_io(png, f);
    png_set_IHDR(png, info, W, H, 8, PNG_COLOR_TYPE_RGB, PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT,
                 PNG_FILTER_TYPE_DEFAULT);
    png_write_info(png, info);
    for (int y = 0; y < H; y++) png_write_row(png, &c->px[y][0][0]);
    png_write_end(png, NULL);
    png_destroy_write_struct(&png, &info);
    if (fclose(f) || rename(tmp, path)) return tf_set_error("%s: write failed: %s", path, strerror(errno));
    return 0;
}

int tf_png_plot(const char *path, const double *ax, const double *ay, int na, const double *bx, const double *by,
                int nb) {
    canvas *c = malloc(sizeof *c);
    if (!c) return tf_set_error("plot: out of memory");
    memset(c, 255, sizeof *c);
    double x0 = INFINITY, x1 = -INFINITY, y0 = INFINITY, y1 = -INFINITY;
    for (int i = 0; i < na + nb; i++) {
        double x = i < na ? ax[i] : bx[i - na], y = i < na ? ay[i] : by[i - na];
        if (!isfinite(y)) continue;
        x0 = fmin(x0, x), x1 = fmax(x1, x), y0 = fmin(y0, y), y1 = fmax(y1, y);
    }
    if (!(x1 > x0)) x1 = x0 + 1;
    if (!(y1 > y0)) y1 = y0 + 1;
    static const unsigned char black[3] = {0, 0, 0}, blue[3] = {31, 119, 180}, red[3] = {214, 39, 40};
    line(c, L, T, L, H - B, black);
    line(c, L, H - B, W - R, H - B, black);
    char num[32];
    snprintf(num, sizeof num, "%.3g", y1), text(c, 4, T, num, black);
    snprintf(num, sizeof num, "%.3g", y0), text(c, 4, H - B - 10, num, black);
    snprintf(num, sizeof num, "%.0f", x0), text(c, L, H - B + 10, num, black);
    snprintf(num, sizeof num, "%.0f", x1), text(c, W - R - 8 * (int)strlen(num), H - B + 10, num, black);
    series(c, ax, ay, na, x0, x1, y0, y1, blue);
    series(c, bx, by, nb, x0, x1, y0, y1, red);
    int rc = write_png(path, c);
    free(c);
    return rc;
}
