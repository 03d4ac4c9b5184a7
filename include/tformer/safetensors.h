/* tformer: safetensors files: reading (mmap) and atomic writing. */
#ifndef TFORMER_SAFETENSORS_H
#define TFORMER_SAFETENSORS_H

#include "core.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------- safetensors */

typedef enum {
    TF_ST_F32, TF_ST_F16, TF_ST_BF16, TF_ST_I64, TF_ST_I32, TF_ST_U8, TF_ST_BOOL, TF_ST_I8, TF_ST_COUNT
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
/* A folder holding both forms of its weights, DIR/model.safetensors and a sharded checkpoint's
 * DIR/model.safetensors.index.json, is an error for tf_st_open(DIR/model.safetensors) (a stale file never
 * wins) until one is named: path, one of the two, is the form every later tf_st_open of DIR/model.safetensors
 * in this process reads (the folder is known by its device and inode). tf_st_open of the index itself reads the
 * sharded form. 0, or -1 when path is neither such a file nor there. */
TF_API int tf_st_pick(const char *path);
TF_API tf_st_file *tf_st_open_memory(const void *buf, size_t len, const char *label);
/* A file made of the caller's n entries (name, dtype, ndim, shape, data, nbytes; the data borrowed,
 * it must outlive the handle), each checked as a header's: a dtype of the enum, nbytes equal to the
 * shape's elements times the dtype's size, no name twice. Messages name label. */
TF_API tf_st_file *tf_st_open_entries(const tf_st_entry *e, int n, const char *label);
TF_API void tf_st_close(tf_st_file *f);
TF_API int tf_st_count(const tf_st_file *f);
TF_API const tf_st_entry *tf_st_entry_at(const tf_st_file *f, int i);
TF_API const tf_st_entry *tf_st_find(const tf_st_file *f, const char *name);
TF_API const char *tf_st_dtype_name(tf_st_dtype dt);
/* Convert an entry into a new contiguous tensor: float types -> F32, integer
 * types (I64, I32, I8) -> I32 (range-checked), U8/BOOL -> U8. */
TF_API tf_tensor *tf_st_to_tensor(const tf_st_file *f, const tf_st_entry *e, tf_arena *a);
/* Copy an F32/F16/BF16 entry into dst (same shape, contiguous F32). */
TF_API int tf_st_read_f32(const tf_st_file *f, const tf_st_entry *e, tf_tensor *dst);

/* Writer: collect named tensors, then write atomically (temporary file + rename).
 *
 * Adding a tensor records a reference, not a copy: the tensor header (dtype,
 * shape, strides, data and grad pointers) is copied, so the tf_tensor struct
 * itself may be a temporary, but the memory it points to must stay alive and
 * unchanged until tf_st_writer_save returns (or the writer is freed). Save
 * reads each tensor then and streams it into the file: contiguous tensors
 * stored as they are held (F32, I32, U8) straight from their memory, any
 * other (strided, or converted) through one 64 KiB buffer. */
typedef struct tf_st_writer tf_st_writer;
TF_API tf_st_writer *tf_st_writer_new(void);
TF_API void tf_st_writer_free(tf_st_writer *w);
/* Record t (any layout). F32 is written as F32, U8 as BOOL (nonzero -> 1),
 * I32 as I32. A NULL tensor or a name already added is an error naming it.
 * Only t's header and data pointer are kept: t and its data must live until
 * tf_st_writer_save (the bytes are read then). */
TF_API int tf_st_writer_add(tf_st_writer *w, const char *name, const tf_tensor *t);
/* Record the gradient of t (F32, t's layout); t without a gradient is an error. */
TF_API int tf_st_writer_add_grad(tf_st_writer *w, const char *name, const tf_tensor *t);
/* Record t to be stored converted to dtype: F32 tensors as F32, F16 or BF16
 * (round to nearest even); I32 tensors as I32 or I64; U8 tensors as U8 or BOOL. */
TF_API int tf_st_writer_add_as(tf_st_writer *w, const char *name, const tf_tensor *t, tf_st_dtype dtype);
/* A __metadata__ string entry (key and value copied). */
TF_API int tf_st_writer_set_metadata(tf_st_writer *w, const char *key, const char *value);
/* Header (tensors in the order added, 8-byte padded) and data, to a temporary
 * file renamed to path. A failed write is an error naming the file and the
 * tensor being written, and leaves no file behind (a previous one stays).
 * May be called again: the tensors are read anew. */
TF_API int tf_st_writer_save(tf_st_writer *w, const char *path);
/* A __metadata__ string of an open file, or NULL. */
TF_API const char *tf_st_metadata(const tf_st_file *f, const char *key);

#ifdef __cplusplus
}
#endif
#endif /* TFORMER_SAFETENSORS_H */
