/* tformer: data-parallel training over several processes (docs/distributed.md).
 *
 * Launched by `mpirun -np N`, a program that calls tf_dist_init joins the job
 * as one of N ranks; tf_train then splits each step's micro-batches over the
 * ranks and sums their gradients in a fixed order, so the run is bit for bit
 * the single-process run with N times the accumulation. Without mpirun, or in
 * a build without MPI (Open MPI's libopenmpi-dev absent, or make MPI=0),
 * everything here is the single process: rank 0 of 1, and each collective
 * call returns at once. No MPI type appears in this interface.
 *
 * Collective calls (marked so) must be made by every rank in the same order.
 * tformer's own never hang on an error: a rank that fails calls
 * tf_dist_agree with its failure, which every other rank reaches at its next
 * collective call, so all of them return the same error. */
#ifndef TFORMER_DIST_H
#define TFORMER_DIST_H

#include "config.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Join the mpirun job this process was started by, if any (Open MPI's,
 * PMIx's or PMI's variables name it): MPI is initialised for this process's
 * main thread (threads may run between calls). 0, or -1 with a message:
 * started by mpirun for several processes in a build without MPI. */
TF_API int tf_dist_init(void);
/* Leave the job (MPI_Finalize) after every rank has finished; nothing without one. */
TF_API void tf_dist_finalize(void);
/* End every rank of the job now with this exit status (MPI_Abort), for a
 * failure the others cannot be told of; without a job, exit(code). */
TF_API void tf_dist_abort(int code);
/* This process's rank (0 first) and the number of processes (1 without a job). */
TF_API int tf_dist_rank(void);
TF_API int tf_dist_size(void);
/* 1 when the library was built with MPI. */
TF_API int tf_dist_available(void);

/* Collective. rc is this rank's status (0 ok, non-zero failed, its message
 * in tf_error()). 0 when every rank is ok; else -1 on every rank, tf_error()
 * the message of the lowest failing rank ("rank R: ..." when R > 0). */
TF_API int tf_dist_agree(int rc);
/* 1 when tf_error() is a message tf_dist_agree or tf_dist_same gave every rank
 * (print it once, on rank 0); 0 when it is this rank's own. */
TF_API int tf_dist_error_shared(void);
/* Collective: non-zero on every rank when flag is non-zero on any (a stop request). */
TF_API int tf_dist_any(int flag);

/* One thing every rank must have alike: a setting (name, its value as
 * text), or with file set a file, compared by size and content hash
 * (value: NULL, or the name the message gives it). */
typedef struct {
    const char *name;
    const char *value;
    const char *file;
} tf_dist_item;
/* Collective: 0 when every rank gave the same items (hashes compared);
 * else -1 on every rank with a message naming the lowest differing rank and
 * the first item that differs, with both values. A file that cannot be read
 * counts as a value of its own. */
TF_API int tf_dist_same(const tf_dist_item *items, int n);
/* The same for every row of n field tables (its key and value), then the extra items. Collective. */
TF_API int tf_dist_same_fields(const tf_fields *f, int n, const tf_dist_item *extra, int n_extra);

#ifdef __cplusplus
}
#endif
#endif /* TFORMER_DIST_H */
