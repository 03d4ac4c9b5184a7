/* tformer: images — labelled image sets as float pixels in [0,1], NCHW:
 * Fashion-MNIST / MNIST idx files (gzip'ed or plain), scikit-learn's 8x8
 * digits (digits.csv, gzip'ed or plain), PNG files (libpng); and a loader
 * of batches of them on the shared trainer (docs/vision.md). */
#ifndef TFORMER_IMAGES_H
#define TFORMER_IMAGES_H

#include "data.h"
#include "plot.h"

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
 * not a readable PNG is an error naming it and libpng's reason. The size is
 * read from the header first: an image above TF_IMAGES_MAX_PIXELS pixels (a
 * small file can declare 20000x20000) is refused before anything is decoded. */
TF_API int tf_images_read_png(const char *path, int channels, tf_images *out);
#define TF_IMAGES_MAX_PIXELS (1LL << 25) /* 33,554,432 pixels: an 8K frame (7680x4320) fits */
/* The width and height a PNG file's header declares, nothing decoded: to
 * check an image against a model before reading it. */
TF_API int tf_images_png_size(const char *path, int *width, int *height);

/* Image i of the set as an 8-bit grey (1 channel) or RGB (3) PNG file,
 * written to a temporary name and renamed. */
TF_API int tf_images_write_png(const tf_images *s, int64_t i, const char *path);
/* The images tiled into one: cols a row, each scaled up scale times
 * (nearest), gap pixels of gap_value around and between them. */
TF_API int tf_images_grid(const tf_images *s, int cols, int scale, int gap, float gap_value, tf_images *out);

/* Images [start, start + n) of src, copied (labels too). */
TF_API int tf_images_take(const tf_images *src, int64_t start, int64_t n, tf_images *out);
TF_API void tf_images_free(tf_images *im);

/* Every image of src resized to height x width, each output pixel the
 * area-weighted mean of the input pixels its box covers (28x28 -> 14x14
 * averages 2x2 blocks, as PIL's BOX filter does for whole factors); labels copied. */
TF_API int tf_images_resize(const tf_images *src, int height, int width, tf_images *out);

/* ---------------------------------------------------------------- ImageGPT's pixel tokens (docs/vision.md) */

/* k-means (Lloyd's algorithm) of n points x (n,dim) into k centres (k,dim):
 * starting from init (k,dim) when given, else k-means++ seeded by seed;
 * each point to its nearest centre (the lowest index on a tie), each centre
 * the mean of its points (an empty cluster takes the point farthest from its
 * centre), until no assignment changes or max_iter rounds. *iters (may be
 * NULL): the rounds run. */
TF_API int tf_kmeans(const float *x, int64_t n, int dim, int k, const float *init, int max_iter, uint64_t seed,
                     float *centers, int *iters);

/* Colour clusters and the image size of an ImageGPT: a pixel (its channels
 * together) is the token of its nearest centre, an image its H*W tokens in
 * raster order (row by row); the start-of-image token is k. */
typedef struct {
    int k, channels, height, width;
    float *centers;             /* (k,channels) in [0,1] */
} tf_image_tokens;

/* k-means on up to max_pixels pixels of the set drawn under seed (all when
 * max_pixels is 0 or the set has fewer), the centres sorted by their first
 * channel (dark to light); height and width the set's. */
TF_API int tf_image_tokens_fit(const tf_images *s, int k, int max_iter, int64_t max_pixels, uint64_t seed,
                               tf_image_tokens *out);
/* Images (their size and channels must be the tokens') -> tokens (n,H*W). */
TF_API int tf_image_tokens_encode(const tf_image_tokens *t, const tf_images *s, int32_t *tokens);
/* Tokens (n,H*W), each in [0,k) -> n images of the centres' colours. */
TF_API int tf_image_tokens_decode(const tf_image_tokens *t, const int32_t *tokens, int64_t n, tf_images *out);
/* dir/image_tokens.json: {"height", "width", "channels", "sos_token", "clusters": [[c...], ...]}. */
TF_API int tf_image_tokens_save(const tf_image_tokens *t, const char *dir);
TF_API int tf_image_tokens_load(const char *dir, tf_image_tokens *out);
TF_API void tf_image_tokens_free(tf_image_tokens *t);

/* Batches of token images for a decoder: "input_ids" (rows,H*W) I32 =
 * the start token then each image's tokens but the last, "targets"
 * (rows,H*W) I32 = its tokens. tokens (n,H*W) are copied. Training batch
 * `key`: images drawn from (seed, key, row) with replacement; validation
 * batch `key`: images key*rows .. in order, rows past the set's end with
 * targets -1 (ignored), so that ceil(n_valid / rows) batches cover the set once. */
TF_API tf_loader *tf_image_tokens_loader_new(const int32_t *train, int64_t n_train, const int32_t *valid,
                                             int64_t n_valid, int pixels, int32_t sos, uint64_t seed);

/* Batches of labelled images: "pixel_values" (rows,C,H,W) F32 and "labels"
 * (rows) I32. Training batch `key`: images drawn from (seed, key, row), with
 * replacement, each optionally shifted by up to `shift` pixels in x and y
 * (drawn from the same key; the uncovered border is 0); validation batch
 * `key`: images s .. s+rows-1 in order, s = key*rows modulo the set's size;
 * rows past the set's end are blank with label -100 (the losses' ignore
 * index: one pass counts each image once). The
 * sets are borrowed and must have the same channels, size and classes;
 * valid may be NULL (no validation). */
TF_API tf_loader *tf_images_loader_new(const tf_images *train, const tf_images *valid, int shift, uint64_t seed);

/* Random erasing's values: timm's modes, in normalised space (0 there is the
 * set's mean), brought back to pixels with the training set's mean and std. */
typedef enum {
    TF_ERASE_CONST, /* the mean */
    TF_ERASE_RAND,  /* mean + std z, one z ~ N(0,1) per channel */
    TF_ERASE_PIXEL  /* mean + std z, one z per pixel (DeiT) */
} tf_erase_mode;

/* DeiT's augmentation of training batches (docs/vision.md), each off at its
 * zero (tf_images_aug_none). In the order applied to an image: */
typedef struct {
    int shift;               /* moved by up to this many pixels in x and y */
    float hflip;             /* mirrored left-right with this probability (DeiT's base transform: 0.5) */
    int randaug_ops;         /* RandAugment (grey images): ops per image; 0: none (DeiT: 2) */
    float randaug_magnitude; /* in [0,10] (DeiT: 9) */
    float randaug_mstd;      /* std of the magnitude's noise (DeiT: 0.5) */
    float erase_prob;        /* random erasing's probability (DeiT: 0.25) */
    tf_erase_mode erase_mode;
    int repeats;             /* repeated augmentation: each drawn image fills this many consecutive
                              * rows, each augmented apart (DeiT: 3); 1: none */
    float mixup_alpha;       /* mixup's Beta(alpha, alpha); 0: none (DeiT: 0.8) */
    float cutmix_alpha;      /* cutmix's; 0: none (DeiT: 1) */
    float mix_prob;          /* a batch is mixed with this probability (DeiT: 1) */
    float switch_prob;       /* with both: cutmix rather than mixup (DeiT: 0.5) */
    float label_smoothing;   /* folded into the mixed targets (DeiT: 0.1) */
    int n_labels;            /* the targets' width; 0: the training set's n_classes */
} tf_images_aug;

TF_API tf_images_aug tf_images_aug_none(void);
/* tf_images_loader_new with augmentation: training batches as above, the
 * image of row r drawn from (seed, key, r / repeats), then shifted,
 * mirrored (hflip), RandAugment'ed (8-bit values, as PIL's) and erased by draws of (seed, key,
 * r); with mixup or cutmix the batch is then mixed with itself flipped (row i
 * with rows-1-i, one lambda a batch, as timm's Mixup in batch mode) and holds
 * "targets" (rows,n_labels) F32 too: the mixed, smoothed one-hot labels (a
 * batch not mixed has them smoothed). Validation batches are never
 * augmented. */
TF_API tf_loader *tf_images_loader_aug(const tf_images *train, const tf_images *valid, const tf_images_aug *aug,
                                       uint64_t seed);

/* ---------------------------------------------------------------- moving-object clips (docs/video.md) */

/* What a clip's label says. Directions: the quadrant of the object's first
 * velocity, 0 right-down, 1 left-down, 2 left-up, 3 right-up (y grows down). */
typedef enum {
    TF_CLIP_LABEL_DIRECTION,      /* 4 classes */
    TF_CLIP_LABEL_CLASS_DIRECTION /* the image's class * 4 + the direction: 4 n_classes classes */
} tf_clip_label;

/* Clips made as Moving MNIST (Srivastava et al. 2015): one labelled image
 * on a black canvas x canvas frame moves with a constant speed in a random
 * direction, bouncing off the edges, for `frames` frames. The start is drawn
 * where the whole path fits when it can: without a bounce the frames taken
 * as a set cannot tell a direction from its opposite, so the shuffled
 * control can only guess between them (a bounce would give it away). */
typedef struct {
    int canvas;          /* frames are canvas x canvas pixels (Moving MNIST: 64) */
    int frames;          /* per clip */
    int object_size;     /* the image drawn at object_size x object_size (nearest pixel); 0: its own size */
    float speed;         /* pixels per frame (Moving MNIST: 2 to 5) */
    tf_clip_label label;
    int shuffle;         /* the control: every clip's frames in a random order (the label unchanged) */
} tf_clips_config;

/* Classes of the labels for images of n_classes classes. */
TF_API int tf_clips_n_labels(const tf_clips_config *c, int n_classes);
/* 0, or -1 with a message naming the setting (the object larger than the canvas, ...). */
TF_API int tf_clips_check(const tf_clips_config *c, const tf_images *src);
/* Clip `index` of the sequence `seed` from the images of src into out
 * (frames, channels, canvas, canvas), its label into *label: every draw
 * (image, start, direction, frame order) a hash of (seed, index). */
TF_API int tf_clip_make(const tf_images *src, const tf_clips_config *c, uint64_t seed, uint64_t index, float *out,
                        int32_t *label);
/* A clip: the PNG files of folder dir (names ending .png, any case, in
 * byte order of their names) as a set of frames (n = frames, unlabelled),
 * each read as tf_images_read_png. Errors name the folder or file: not a
 * folder, no PNG in it, frames of different sizes, a frame that is not a
 * readable PNG. */
TF_API int tf_images_read_clip(const char *dir, int channels, tf_images *out);
/* Batches "pixel_values" (rows, frames, channels, canvas, canvas) F32 and
 * "labels" (rows) I32: training clip (key, row) from the train images,
 * validation batch `key` the clips s .. s+rows-1, s = key*rows modulo
 * val_clips, of a fixed sequence from the valid images (held-out images: no
 * image is in both); rows past val_clips are blank with label -100 (not
 * counted). */
TF_API tf_loader *tf_clips_loader_new(const tf_images *train, const tf_images *valid, const tf_clips_config *c,
                                      int64_t val_clips, uint64_t seed);

#ifdef __cplusplus
}
#endif
#endif /* TFORMER_IMAGES_H */
