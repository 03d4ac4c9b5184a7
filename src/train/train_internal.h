/* Private: the trainer's parts (resume, the optimizer's shards, snapshots,
 * several processes, ZeRO); what its tasks share is src/task/task_internal.h. */
#ifndef TF_TRAIN_INTERNAL_H
#define TF_TRAIN_INTERNAL_H

#include <stddef.h>

#include "../task/task_internal.h"
#include "../util/util.h"
#include "tformer/optim.h"
#include "tformer/task.h"

/* The settings of now that differ from the checkpoint's (stored: its
 * tformer_config JSON) and steer the training, as "name A -> B, ..." in out;
 * their count, or -1 (tf_error). cosine: steps is one of them. (resume.c) */
int tf_resume_changes(const tf_fields *now, int n, const char *stored, int cosine, char *out, size_t cap);
/* A checkpoint written before batch counted a whole step (it has no
 * tformer_batch) held batch sequences per micro-batch, batch x accum a step:
 * its settings as counted now (batch x accum), malloc'd (cJSON_free), or NULL. */
char *tf_resume_step_batch(const char *stored);

/* ---------------------------------------------------------------- the optimizer's parts (optim.c) */

/* AdamW holding the moments of elements [lo, hi) of the parameters
 * flattened in order (hi < 0: to the end), updating those elements alone:
 * ZeRO-1's shard. Elementwise, so a shard's elements get the bits of the whole update. */
tf_optim *tf_adamw_new_shard(tf_params *ps, tf_adamw_config cfg, int64_t lo, int64_t hi);
/* SGD the same way: its momentum buffer's elements [lo, hi). */
tf_optim *tf_sgd_new_shard(tf_params *ps, tf_sgd_config cfg, int64_t lo, int64_t hi);
/* The bytes of its moments. */
int64_t tf_optim_state_bytes(const tf_optim *o);
/* Collective: every rank's shard (parts[j] elements on rank j, in order) to
 * rank 0, which may then tf_optim_save the whole state; tf_optim_release frees that copy. */
int tf_optim_gather(tf_optim *o, const size_t *parts);
void tf_optim_release(tf_optim *o);

/* The global gradient norm's pieces (tf_clip_grad_norm's order, which the
 * sharded norm repeats): a parameter of n elements is summed in chunks of
 * tf_norm_chunk(n) elements (at most TF_NORM_CHUNKS), each chunk's squares in
 * double in order (tf_squares); then the chunks in order, then the parameters. */
#define TF_NORM_CHUNKS 1024
int64_t tf_norm_chunk(int64_t n);
double tf_squares(const float *x, int64_t n);
/* g (n) *= s */
void tf_grad_scale(float *g, int64_t n, float s);
/* The gradients' scale for global norm `norm` under max_norm (<= 0: none):
 * torch.nn.utils.clip_grad_norm_'s max_norm / (norm + 1e-6) clamped at 1,
 * so a norm within 1e-6 below the limit is scaled too; 1 when none. */
float tf_clip_factor(double norm, double max_norm);
/* The gradients' global norm (tf_clip_grad_norm's, without the scaling). */
double tf_grad_norm(const tf_params *ps);
/* tf_optim_step with every gradient read as g * grad_scale (the clip's factor): the bits of scaling the
 * gradients first (tf_clip_grad_norm), without that pass over them. */
void tf_optim_step_scaled(tf_optim *o, float lr, float grad_scale);

/* ---------------------------------------------------------------- what a run keeps (snapshots.c) */

/* The task's model folder as run_dir/sub, with the run's tokenizer files. */
int tf_run_save_model(tf_task *task, const char *run_dir, const char *sub);
/* ps into run_dir/checkpoints/step-<step>.safetensors (with the run id and
 * step); only the last `keep` files of run run_id stay (another run's files
 * are never counted nor removed). */
int tf_run_keep_weights(const tf_params *ps, const char *run_dir, const char *run_id, int64_t step, int keep);
/* The mean of run run_id's last `last` kept weights as the folder
 * run_dir/averaged; the task's weights are left as they were. *n_used: files averaged. */
int tf_run_average(tf_task *task, const char *run_dir, const char *run_id, int last, int *n_used);

/* ---------------------------------------------------------------- the run folder (run_folder.c) */

/* run_dir's lock (created if missing): taken, or counted once more when this
 * process holds it already; -1 naming the folder when another process does. */
int tf_run_lock(const char *run_dir);
void tf_run_unlock(const char *run_dir);
/* Whether this process's lock on run_dir created the folder (a failed start removes it again). */
int tf_run_created(const char *run_dir);
/* The run's id: the one tf_run_folder_begin wrote; with resume, run_dir/run_id's
 * ("" when missing: a run from before run ids); else a new one, written. */
int tf_run_id(const char *run_dir, int resume, char *id, size_t n);

/* ---------------------------------------------------------------- several processes (dist.c, dist_check.c) */

/* Collective, after a tf_dist_agree that returned 0 (these never fail on
 * one rank alone): root's bytes to every rank; every rank's bytes, in rank
 * order, into recv (size x bytes). -1 only for a size MPI cannot send, on every rank alike. */
int tf_dist_bcast(void *buf, size_t bytes, int root);
int tf_dist_allgather(const void *send, size_t bytes, void *recv);
/* Collective: counts[j] values of elem bytes from rank j (send), in rank
 * order, into recv on every rank (root < 0) or on rank root alone. -1 as above. */
int tf_dist_gatherv(const void *send, void *recv, const size_t *counts, size_t elem, int root);
/* tf_error() is a message every rank has: mark it so (tf_dist_error_shared); returns -1. */
int tf_dist_error_share(void);

/* The sum of a float vector over the ranks, element by element in a fixed
 * order: for each call of add, rank 0's vector, then rank 1's, ... are added
 * one after another onto the running sum (first: the sum starts as rank 0's
 * vector, copied) -- the order of one process adding the same vectors in
 * turn. Fill tf_dist_sum_input's n floats before each add. add and result are collective.
 * Rank j keeps the running sum of elements [parts[0] + ... + parts[j-1], + parts[j])
 * (parts: one count a rank; NULL: n / N each, the first n % N one more). */
typedef struct tf_dist_sum tf_dist_sum;
tf_dist_sum *tf_dist_sum_new(size_t n, const size_t *parts);
float *tf_dist_sum_input(tf_dist_sum *s);
void tf_dist_sum_add(tf_dist_sum *s, int first);
/* This rank's part of the sum after the adds (a reduce-scatter): its first
 * element's index and length. The caller may overwrite it before result. */
float *tf_dist_sum_part(tf_dist_sum *s, size_t *off, size_t *len);
/* Every rank's part as it is now, gathered (n floats, on every rank: an
 * all-gather; after the adds alone, the sum), valid until the next add. */
const float *tf_dist_sum_result(tf_dist_sum *s);
void tf_dist_sum_free(tf_dist_sum *s);

/* ZeRO-1's split of the parameters, flattened in order, into one part a
 * rank, cut on the gradient norm's chunk boundaries (zero.c). */
typedef struct tf_zero tf_zero;
tf_zero *tf_zero_new(const tf_params *ps, int rank, int ranks);
void tf_zero_free(tf_zero *z);
/* Elements per rank (ranks counts), for tf_dist_sum_new and tf_optim_gather. */
const size_t *tf_zero_parts(const tf_zero *z);
/* The norm's chunks rank holds (what its norm contribution sends). */
int tf_zero_units(const tf_zero *z, int rank);
/* This rank's part: elements [lo, hi). */
void tf_zero_range(const tf_zero *z, int64_t *lo, int64_t *hi);
/* Collective: the global norm of the gradient whose part [lo, hi) this rank
 * holds in its parameters' gradients (elsewhere they are not read), with
 * tf_clip_grad_norm's bits, and *scale, its clip factor (the optimizer's step applies it as it reads
 * the gradients: tf_optim_step_scaled). */
int tf_zero_clip(tf_zero *z, const tf_params *ps, double max_norm, double *norm, float *scale);

/* FNV-1a over n bytes, 8 at a time, continuing from h (TF_DIST_HASH_INIT to start). */
#define TF_DIST_HASH_INIT 14695981039346656037ull
uint64_t tf_dist_hash(uint64_t h, const void *p, size_t n);

#endif
