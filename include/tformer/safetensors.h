/* tformer: safetensors files: reading (mmap) and atomic writing. */
#ifndef TFORMER_SAFETENSORS_H
#define TFORMER_SAFETENSORS_H

#include "nn.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------- safetensors */

typedef enum {
    TF_ST_F32, TF_ST_F16, TF_ST_BF16, TF_ST_I64, TF_ST_I32, TF_ST_U8, TF_ST_BOOL, TF_ST_COUNT
} tf_st_dtype;

typedef struct {
    const char *name;
    tf_st_dtype dtype;
    int ndim;
    int64_t shape[TF_MAX_DIMS];
    const void *data; /* inside the mapped file; may be unaligned */
    size_t nbytes;
} tf_st_entry;

typedef struct tf_st_file tf_st_file;

/* Parse a safetensors file (mmap) or buffer (borrowed, must outlive the handle).
 * Every malformed header gives NULL and a message naming the problem. */
TF_API tf_st_file *tf_st_open(const char *path);
TF_API tf_st_file *tf_st_open_memory(const void *buf, size_t len, const char *label);
TF_API void tf_st_close(tf_st_file *f);
TF_API int tf_st_count(const tf_st_file *f);
TF_API const tf_st_entry *tf_st_entry_at(const tf_st_file *f, int i);
TF_API const tf_st_entry *tf_st_find(const tf_st_file *f, const char *name);
TF_API const char *tf_st_dtype_name(tf_st_dtype dt);
/* Convert an entry into a new contiguous tensor: float types -> F32, integer
 * types -> I32 (range-checked), U8/BOOL -> U8. */
TF_API tf_tensor *tf_st_to_tensor(const tf_st_file *f, const tf_st_entry *e, tf_arena *a);
/* Copy an F32/F16/BF16 entry into dst (same shape, contiguous F32). */
TF_API int tf_st_read_f32(const tf_st_file *f, const tf_st_entry *e, tf_tensor *dst);

/* Writer: collect named tensors, then write atomically (temporary file + rename). */
typedef struct tf_st_writer tf_st_writer;
TF_API tf_st_writer *tf_st_writer_new(void);
TF_API void tf_st_writer_free(tf_st_writer *w);
/* Copies the tensor's data (any layout) now. F32 is written as F32, U8 as BOOL,
 * I32 as I32. */
TF_API int tf_st_writer_add(tf_st_writer *w, const char *name, const tf_tensor *t);
/* Write gradient of t (F32). */
TF_API int tf_st_writer_add_grad(tf_st_writer *w, const char *name, const tf_tensor *t);
/* Store t converted to dtype: F32 tensors as F32, F16 or BF16 (round to nearest
 * even); I32 tensors as I32 or I64; U8 tensors as U8 or BOOL. */
TF_API int tf_st_writer_add_as(tf_st_writer *w, const char *name, const tf_tensor *t, tf_st_dtype dtype);
/* A __metadata__ string entry (key and value copied). */
TF_API int tf_st_writer_set_metadata(tf_st_writer *w, const char *key, const char *value);
TF_API int tf_st_writer_save(tf_st_writer *w, const char *path);
/* A __metadata__ string of an open file, or NULL. */
TF_API const char *tf_st_metadata(const tf_st_file *f, const char *key);

/* Load every registered parameter from a safetensors file: a missing tensor, a
 * wrong shape or (when strict) an unexpected tensor is an error naming it. */
TF_API int tf_params_load(tf_params *ps, const tf_st_file *f, int strict);
TF_API int tf_params_save(const tf_params *ps, const char *path);

#ifdef __cplusplus
}
#endif
#endif /* TFORMER_SAFETENSORS_H */
