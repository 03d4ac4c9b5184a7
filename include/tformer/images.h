/* tformer: images — labelled image sets as float pixels in [0,1], NCHW:
 * Fashion-MNIST / MNIST idx files (gzip'ed or plain), scikit-learn's 8x8
 * digits (digits.csv, gzip'ed or plain), PNG files (libpng); and a loader
 * of batches of them on the shared trainer (docs/vision.md). */
#ifndef TFORMER_IMAGES_H
#define TFORMER_IMAGES_H

#include "data.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    int64_t n;                  /* images */
    int channels, height, width;
    float *pixels;              /* (n,C,H,W), each in [0,1] */
    int32_t *labels;            /* (n), each in [0,n_classes); NULL when unlabelled */
    int n_classes;              /* 0 when unlabelled */
} tf_images;

/* An idx image file (magic 0x00000803: unsigned bytes, n x height x width;
 * pixels / 255, one channel) and its idx label file (0x00000801: n unsigned
 * bytes). Either may be gzip'ed (zlib reads both kinds). labels may be NULL
 * (unlabelled). n_classes: labels must lie in [0,n_classes); 0: the largest
 * label + 1. Errors name the file: a wrong magic, a truncated file, bytes
 * after the data, image and label counts that differ, a label out of range. */
TF_API int tf_images_read_idx(const char *images, const char *labels, int n_classes, tf_images *out);

/* The idx pair of a split in a folder laid out as MNIST / Fashion-MNIST:
 * dir/<split>-images-idx3-ubyte(.gz) and dir/<split>-labels-idx1-ubyte(.gz)
 * (split "train" or "t10k"); a missing file is an error naming both names. */
TF_API int tf_images_read_dir(const char *dir, const char *split, int n_classes, tf_images *out);

/* scikit-learn's digits.csv(.gz): a line per image, 64 values 0..16 (8x8,
 * row by row) and the label 0..9, separated by commas; pixels / 16. Errors
 * name the file and line. */
TF_API int tf_images_read_digits(const char *path, tf_images *out);

/* One PNG file as an unlabelled set of one image with `channels` channels (1
 * or 3): grey, grey + alpha, RGB, RGBA and palette images of 1 to 16 bits;
 * alpha is dropped, 16-bit samples are divided by 65535, others by 255
 * (palette and low-bit grey expanded first); RGB to grey is PIL's
 * L = 0.299 R + 0.587 G + 0.114 B, grey to RGB repeats it. A file that is
 * not a readable PNG is an error naming it and libpng's reason. */
TF_API int tf_images_read_png(const char *path, int channels, tf_images *out);

/* Images [start, start + n) of src, copied (labels too). */
TF_API int tf_images_take(const tf_images *src, int64_t start, int64_t n, tf_images *out);
TF_API void tf_images_free(tf_images *im);

/* Batches of labelled images: "pixel_values" (rows,C,H,W) F32 and "labels"
 * (rows) I32. Training batch `key`: images drawn from (seed, key, row), with
 * replacement, each optionally shifted by up to `shift` pixels in x and y
 * (drawn from the same key; the uncovered border is 0); validation batch
 * `key`: images key*rows .. in order, wrapping around the set's end. The
 * sets are borrowed and must have the same channels, size and classes;
 * valid may be NULL (no validation). */
TF_API tf_loader *tf_images_loader_new(const tf_images *train, const tf_images *valid, int shift, uint64_t seed);

#ifdef __cplusplus
}
#endif
#endif /* TFORMER_IMAGES_H */
