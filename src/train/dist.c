/* Data-parallel runs (include/tformer/dist.h): who this process is, status
 * agreement, broadcasts and gathers, and the sum of a float vector over the
 * ranks in a fixed order. Compiled against Open MPI when the Makefile finds
 * it (TF_HAVE_MPI), else for the single process, where every collective
 * returns at once. The only file that calls MPI. */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#ifdef TF_HAVE_MPI
#include <mpi.h>
#endif

#include "tformer/dist.h"
#include "train_internal.h"

static struct {
    int rank, size;
    int active;        /* tf_dist_init joined a job */
    int owns;          /* ... and initialised MPI (so finalises it) */
    char shared[1024]; /* the last message every rank was given */
#ifdef TF_HAVE_MPI
    MPI_Comm comm;
#endif
} g = {.rank = 0, .size = 1};

/* ---------------------------------------------------------------- joining a job */

/* Was this process started by a launcher (mpirun, srun)? *size: the job's
 * size when the variables say it, else 0. */
static int launched(int *size) {
    static const char *const SIZE_VARS[] = {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE"};
    *size = 0;
    for (size_t i = 0; i < sizeof SIZE_VARS / sizeof *SIZE_VARS; i++) {
        const char *v = getenv(SIZE_VARS[i]);
        if (v && *v) return *size = atoi(v), 1;
    }
    return getenv("PMIX_RANK") != NULL;
}

int tf_dist_available(void) {
#ifdef TF_HAVE_MPI
    return 1;
#else
    return 0;
#endif
}

int tf_dist_init(void) {
    int size;
    if (g.active || !launched(&size)) return 0;
#ifndef TF_HAVE_MPI
    if (size > 1)
        return tf_set_error("started by mpirun as one of %d processes, but this tformer was built without MPI: install "
                            "libopenmpi-dev (tools/install-deps.sh) and rebuild to train on several processes",
                            size);
    return 0;
#else
    int inited = 0, provided;
    MPI_Initialized(&inited);
    if (!inited && MPI_Init_thread(NULL, NULL, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS)
        return tf_set_error("MPI_Init failed");
    if (MPI_Comm_dup(MPI_COMM_WORLD, &g.comm) != MPI_SUCCESS) return tf_set_error("MPI_Comm_dup failed");
    MPI_Comm_rank(g.comm, &g.rank);
    MPI_Comm_size(g.comm, &g.size);
    g.active = 1, g.owns = !inited;
    return 0;
#endif
}

void tf_dist_finalize(void) {
#ifdef TF_HAVE_MPI
    if (!g.active) return;
    MPI_Comm_free(&g.comm);
    if (g.owns) MPI_Finalize();
#endif
    g.active = 0, g.rank = 0, g.size = 1;
}

void tf_dist_abort(int code) {
#ifdef TF_HAVE_MPI
    if (g.active) MPI_Abort(g.comm, code);
#endif
    exit(code);
}

int tf_dist_rank(void) { return g.rank; }
int tf_dist_size(void) { return g.size; }

/* ---------------------------------------------------------------- agreement */

int tf_dist_error_shared(void) { return g.shared[0] && !strcmp(g.shared, tf_error()); }

int tf_dist_error_share(void) {
    snprintf(g.shared, sizeof g.shared, "%s", tf_error());
    return -1;
}

#ifdef TF_HAVE_MPI
/* msg as every rank's error (prefixed "rank R of N: " when R > 0). */
static int shared_error(int rank, const char *msg) {
    if (rank > 0)
        tf_set_error("rank %d of %d: %s", rank, g.size, msg);
    else
        tf_set_error("%s", msg);
    return tf_dist_error_share();
}
#endif

int tf_dist_agree(int rc) {
    if (g.size == 1) return rc ? -1 : 0;
#ifdef TF_HAVE_MPI
    int mine = rc ? g.rank : g.size, first;
    MPI_Allreduce(&mine, &first, 1, MPI_INT, MPI_MIN, g.comm);
    if (first == g.size) return 0;
    char msg[1024] = "";
    if (g.rank == first) snprintf(msg, sizeof msg, "%s", tf_error());
    MPI_Bcast(msg, (int)sizeof msg, MPI_CHAR, first, g.comm);
    msg[sizeof msg - 1] = 0;
    return shared_error(first, msg);
#else
    return rc ? -1 : 0;
#endif
}

int tf_dist_any(int flag) {
    int any = flag != 0;
#ifdef TF_HAVE_MPI
    if (g.size > 1) MPI_Allreduce(&flag, &any, 1, MPI_INT, MPI_MAX, g.comm);
#endif
    return any != 0;
}

/* ---------------------------------------------------------------- broadcasts and gathers */

int tf_dist_bcast(void *buf, size_t bytes, int root) {
    if (g.size == 1) return 0;
    if (bytes > INT_MAX) return tf_set_error("dist: a broadcast of %zu bytes is too large", bytes);
#ifdef TF_HAVE_MPI
    MPI_Bcast(buf, (int)bytes, MPI_BYTE, root, g.comm);
#endif
    return 0;
}

int tf_dist_allgather(const void *send, size_t bytes, void *recv) {
    if (g.size == 1) return memmove(recv, send, bytes), 0;
    if (bytes > INT_MAX) return tf_set_error("dist: a gather of %zu bytes per rank is too large", bytes);
#ifdef TF_HAVE_MPI
    MPI_Allgather(send, (int)bytes, MPI_BYTE, recv, (int)bytes, MPI_BYTE, g.comm);
#endif
    return 0;
}

/* counts[j] elements of `elem` bytes from rank j, in rank order, into recv:
 * on every rank (root < 0) or on root alone. */
int tf_dist_gatherv(const void *send, void *recv, const size_t *counts, size_t elem, int root) {
    size_t total = 0;
    for (int j = 0; j < g.size; j++) total += counts[j];
    if (g.size == 1) return (root <= 0 && total ? memmove(recv, send, total * elem) : 0), 0;
    if (total > INT_MAX) return tf_set_error("dist: a gather of %zu values is too large", total);
#ifdef TF_HAVE_MPI
    int *c = malloc((size_t)g.size * sizeof *c), *d = malloc((size_t)g.size * sizeof *d);
    MPI_Datatype type;
    if (!c || !d) return free(c), free(d), tf_set_error("dist: out of memory");
    for (int j = 0, off = 0; j < g.size; j++) c[j] = (int)counts[j], d[j] = off, off += c[j];
    MPI_Type_contiguous((int)elem, MPI_BYTE, &type);
    MPI_Type_commit(&type);
    if (root < 0)
        MPI_Allgatherv(send, c[g.rank], type, recv, c, d, type, g.comm);
    else
        MPI_Gatherv(send, c[g.rank], type, recv, c, d, type, root, g.comm);
    MPI_Type_free(&type);
    free(c), free(d);
#endif
    return 0;
}

/* ---------------------------------------------------------------- the ordered sum */

/* Rank j owns elements [displs[j], displs[j] + counts[j]) of the vector: it
 * receives every rank's piece of them and adds the pieces in rank order onto
 * its running sum; the result is then gathered to every rank. Each element
 * is therefore summed as x_0 + x_1 + ... in rank order (then round order),
 * the order one process summing the same vectors one after another uses,
 * whatever MPI's own reductions would do. */
struct tf_dist_sum {
    size_t n;
    float *in;   /* the vector given (n), then the result */
    float *acc;  /* this rank's part of the running sum */
    float *recv; /* every rank's piece of that part, rank after rank */
    int *counts, *displs, *rcounts, *rdispls;
};

void tf_dist_sum_free(tf_dist_sum *s) {
    if (!s) return;
    free(s->in), free(s->acc), free(s->recv);
    free(s->counts), free(s->displs), free(s->rcounts), free(s->rdispls);
    free(s);
}

tf_dist_sum *tf_dist_sum_new(size_t n, const size_t *parts) {
    if (n > INT_MAX) return tf_set_error("dist: %zu gradients are more than one MPI call sends", n), NULL;
    tf_dist_sum *s = calloc(1, sizeof *s);
    size_t N = (size_t)g.size, mine = parts ? parts[g.rank] : n / N + ((size_t)g.rank < n % N);
    if (!s) return tf_set_error("dist: out of memory"), NULL;
    s->n = n;
    s->in = malloc((n ? n : 1) * sizeof *s->in); /* with one rank: the vector added next */
    s->acc = malloc((mine ? mine : 1) * sizeof *s->acc);
    s->recv = N > 1 ? malloc((mine ? mine * N : 1) * sizeof *s->recv) : malloc(1);
    s->counts = malloc(N * sizeof(int)), s->displs = malloc(N * sizeof(int));
    s->rcounts = malloc(N * sizeof(int)), s->rdispls = malloc(N * sizeof(int));
    if (!s->in || !s->acc || !s->recv || !s->counts || !s->displs || !s->rcounts || !s->rdispls) {
        tf_dist_sum_free(s);
        return tf_set_error("dist: out of memory for %zu gradients", n), NULL;
    }
    for (size_t j = 0, off = 0; j < N; j++) {
        s->counts[j] = (int)(parts ? parts[j] : n / N + (j < n % N)), s->displs[j] = (int)off;
        s->rcounts[j] = (int)mine, s->rdispls[j] = (int)(j * mine);
        off += (size_t)s->counts[j];
    }
    return s;
}

float *tf_dist_sum_input(tf_dist_sum *s) { return s->in; }

static void fold(float *acc, const float *x, size_t n, int first) {
    if (first)
        memcpy(acc, x, n * sizeof *x);
    else
        for (size_t i = 0; i < n; i++) acc[i] += x[i];
}

void tf_dist_sum_add(tf_dist_sum *s, int first) {
    if (g.size == 1) {
        fold(s->acc, s->in, s->n, first);
        return;
    }
#ifdef TF_HAVE_MPI
    size_t mine = (size_t)s->rcounts[0];
    MPI_Alltoallv(s->in, s->counts, s->displs, MPI_FLOAT, s->recv, s->rcounts, s->rdispls, MPI_FLOAT, g.comm);
    for (int j = 0; j < g.size; j++) fold(s->acc, s->recv + (size_t)j * mine, mine, first && j == 0);
#endif
}

float *tf_dist_sum_part(tf_dist_sum *s, size_t *off, size_t *len) {
    *off = (size_t)s->displs[g.rank], *len = (size_t)s->counts[g.rank];
    return s->acc;
}

const float *tf_dist_sum_result(tf_dist_sum *s) {
    if (g.size == 1) return s->acc;
#ifdef TF_HAVE_MPI
    MPI_Allgatherv(s->acc, s->rcounts[0], MPI_FLOAT, s->in, s->counts, s->displs, MPI_FLOAT, g.comm);
#endif
    return s->in;
}
